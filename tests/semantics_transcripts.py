"""The semantics spec as transcripts: input steps and the panes / late rows each step emits.

Expected values are written from Flink's semantics and DESIGN.md section 2 (the
micro-batch rule), not produced by running an executor. Every executor runs
every transcript (see test_semantics_transcripts.py).

A step is ``Step(rows, watermark_ms=None)`` or ``FLUSH``. A pane is
``P(key, window_start_ms, values, pane_index, timing, is_final)`` (window end
follows from the spec; ``None`` for global windows). ``late`` lists ``(key, ts)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from windowing.core.aggregates import Avg, Count, Max, Min, Sum, UserAggregate
from windowing.core.assigners import GlobalWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.spec import WindowSpec, WindowSpecBuilder
from windowing.core.triggers import CountTrigger

FLUSH = "flush"


@dataclass(frozen=True)
class Step:
    rows: list
    watermark_ms: int | None = None


@dataclass(frozen=True)
class P:
    key: str
    start: int | None
    values: dict
    pane_index: int
    timing: str
    is_final: bool


@dataclass
class Transcript:
    name: str
    spec: WindowSpec
    steps: list
    panes: list            # per step: list of P
    late: list = None      # per step: list of (key, ts)
    batching_invariant: bool = False
    extra: dict = field(default_factory=dict)  # per step index: expected metrics fields

    def __post_init__(self):
        if self.late is None:
            self.late = [[] for _ in self.steps]
        assert len(self.panes) == len(self.steps) == len(self.late), self.name


def r(ts, v=1, k="a", **more):
    return dict(k=k, ts=ts, v=v, **more)


def spec(window, delay=0, lateness=0, aggs=None, mode=None, trigger=None, late=True):
    b = WindowSpecBuilder().key_by("k").event_time("ts", delay)
    b = b.window(window) if not isinstance(window, tuple) else b.count_window(*window)
    if trigger is not None:
        b = b.trigger(trigger)
    if mode == "discarding":
        b = b.discarding()
    b = b.allowed_lateness(lateness).side_output_late_data(late)
    return b.aggregate(**(aggs or dict(s=Sum("v"), n=Count())))


class Mean:
    """A user aggregate (Flink's AggregateFunction shape): the mean of non-null values."""

    def create_accumulator(self):
        return [0, 0]

    def add(self, value, acc):
        if value is not None:
            acc[0] += value
            acc[1] += 1
        return acc

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]

    def get_result(self, acc):
        return acc[0] / acc[1] if acc[1] else None


T10 = TumblingEventTimeWindows.of(10)

TRANSCRIPTS = [
    Transcript(
        "boundaries_start_end_minus_1_end", spec(T10),
        [Step([r(0, 1), r(9, 2), r(10, 4)]), FLUSH],
        # wm = 10 - 0 - 1 = 9 >= max_ts 9: [0,10) fires; L = 0 so it is cleaned at once (final).
        [[P("a", 0, dict(s=3, n=2), 0, "ON_TIME", True)], [P("a", 10, dict(s=4, n=1), 0, "ON_TIME", True)]],
        batching_invariant=True),
    Transcript(
        "negative_timestamps", spec(T10),
        [Step([r(-1, 1), r(-10, 2), r(-11, 4)]), FLUSH],
        # wm = -2: [-20,-10) (max -11) fires; [-10,0) (max -1) waits for the flush.
        [[P("a", -20, dict(s=4, n=1), 0, "ON_TIME", True)], [P("a", -10, dict(s=3, n=2), 0, "ON_TIME", True)]],
        batching_invariant=False),  # out of order: cut finer, elements become late
    Transcript(
        "positive_offset", spec(TumblingEventTimeWindows.of(10, 3)),
        [Step([r(2, 1), r(3, 2), r(-8, 4)]), FLUSH],
        # start = ts - floor_mod(ts - 3, 10): 2 -> -7, 3 -> 3, -8 -> -17.
        # wm = 2 >= max_ts of [-17,-7) and of [-7,3) (max 2): both fire.
        [[P("a", -17, dict(s=4, n=1), 0, "ON_TIME", True), P("a", -7, dict(s=1, n=1), 0, "ON_TIME", True)],
         [P("a", 3, dict(s=2, n=1), 0, "ON_TIME", True)]],
        batching_invariant=False),  # out of order: cut finer, elements become late
    Transcript(
        "negative_offset", spec(TumblingEventTimeWindows.of(10, -3)),
        [Step([r(6, 1), r(7, 2)]), FLUSH],
        # offset -3 aligns windows at ...,-3, 7, 17: 6 -> [-3,7), 7 -> [7,17); wm 6 fires [-3,7).
        [[P("a", -3, dict(s=1, n=1), 0, "ON_TIME", True)], [P("a", 7, dict(s=2, n=1), 0, "ON_TIME", True)]],
        batching_invariant=True),
    Transcript(
        "sliding_gap_unassigned_then_late", spec(SlidingEventTimeWindows.of(5, 8)),
        [Step([r(1, 1), r(6, 2), r(17, 4)]), Step([r(6, 8), r(2, 16)]), FLUSH],
        # Windows [0,5), [8,13), [16,21). ts 6 is in a gap: unassigned while not late;
        # in step 2 (wm 16) it is late (6 <= 16) and goes to the late table, as does ts 2.
        [[P("a", 0, dict(s=1, n=1), 0, "ON_TIME", True)], [], [P("a", 16, dict(s=4, n=1), 0, "ON_TIME", True)]],
        late=[[], [("a", 6), ("a", 2)], []], extra={0: dict(unassigned_rows=1)}),
    Transcript(
        "sliding_overlap", spec(SlidingEventTimeWindows.of(10, 5)),
        [Step([r(7, 1), r(12, 2)]), FLUSH],
        # 7 -> [5,15), [0,10); 12 -> [10,20), [5,15). wm 11 fires [0,10).
        [[P("a", 0, dict(s=1, n=1), 0, "ON_TIME", True)],
         [P("a", 5, dict(s=3, n=2), 0, "ON_TIME", True), P("a", 10, dict(s=2, n=1), 0, "ON_TIME", True)]],
        batching_invariant=True),
    Transcript(
        "lateness_boundary", spec(T10, lateness=4),
        [Step([r(13, 1)]), Step([r(9, 2)]), Step([r(14, 4)]), Step([r(8, 8)]), FLUSH],
        # wm 12: [0,10) has cleanup 13 > 12, so ts 9 is accepted and fires a LATE pane at once.
        # wm 13: cleanup of [0,10) (nothing new: no pane). ts 8 is then late by exactly L.
        [[], [P("a", 0, dict(s=2, n=1), 0, "LATE", False)], [], [],
         [P("a", 10, dict(s=5, n=2), 0, "ON_TIME", True)]],
        late=[[], [], [], [("a", 8)], []]),
    Transcript(
        "late_elements_in_one_batch_give_one_late_pane", spec(T10, lateness=100),
        [Step([r(1, 1), r(25, 2)]), Step([r(3, 4), r(5, 8)]), FLUSH],
        [[P("a", 0, dict(s=1, n=1), 0, "ON_TIME", False)], [P("a", 0, dict(s=13, n=3), 1, "LATE", False)],
         [P("a", 20, dict(s=2, n=1), 0, "ON_TIME", True)]]),
    Transcript(
        "discarding_late_pane_has_only_new_elements", spec(T10, lateness=100, mode="discarding"),
        [Step([r(1, 1), r(25, 2)]), Step([r(3, 4), r(5, 8)]), FLUSH],
        [[P("a", 0, dict(s=1, n=1), 0, "ON_TIME", False)], [P("a", 0, dict(s=12, n=2), 1, "LATE", False)],
         [P("a", 20, dict(s=2, n=1), 0, "ON_TIME", True)]]),
    Transcript(
        "watermark_delay_and_explicit_advance", spec(T10, delay=1000),
        [Step([r(5, 1)]), Step([], watermark_ms=9), FLUSH],
        [[], [P("a", 0, dict(s=1, n=1), 0, "ON_TIME", True)], []]),
    Transcript(
        "count_window_tumbling_exact", spec((3,), aggs=dict(s=Sum("v"))),
        [Step([r(4, 16), r(0, 1), r(6, 64), r(2, 4), r(1, 2), r(5, 32), r(3, 8)]), Step([r(8, 256), r(7, 128)]),
         FLUSH],
        # Ordered by event time: (1,2,4) and (8,16,32) fire, 64 is kept; then 64+128+256.
        [[P("a", None, dict(s=7), 0, "ON_TIME", False), P("a", None, dict(s=56), 1, "ON_TIME", False)],
         [P("a", None, dict(s=448), 2, "ON_TIME", False)], []]),
    Transcript(
        "count_window_sliding", spec((3, 2), aggs=dict(s=Sum("v"), n=Count())),
        [Step([r(0, 1), r(1, 2), r(2, 4), r(3, 8), r(4, 16)]), Step([r(5, 32)]), FLUSH],
        # Fires every 2 elements over the last 3: (1,2), (2,4,8), then (8,16,32).
        [[P("a", None, dict(s=3, n=2), 0, "ON_TIME", False), P("a", None, dict(s=14, n=3), 1, "ON_TIME", False)],
         [P("a", None, dict(s=56, n=3), 2, "ON_TIME", False)], []]),
    Transcript(
        "count_trigger_on_time_window_early_and_discarded_remainder",
        spec(T10, trigger=CountTrigger(2)),
        [Step([r(1, 1), r(2, 2), r(3, 4)]), FLUSH],
        # EARLY at 2 elements; the third is dropped at cleanup without a firing (Flink).
        [[P("a", 0, dict(s=3, n=2), 0, "EARLY", False)], []]),
    Transcript(
        "global_window_never_fires", spec(GlobalWindows()),
        [Step([r(1, 1), r(50, 2)]), FLUSH], [[], []], extra={0: dict(accepted_rows=2)}),
    Transcript(
        "several_aggregates_and_nulls",
        spec(T10, aggs=dict(lo=Min("v"), hi=Max("w"), mean=Avg("v"), cw=Count("w"), sw=Sum("w"))),
        [Step([r(1, 3, w=None), r(2, None, w=2.5), r(3, 5, w=-1.0)]), FLUSH],
        [[], [P("a", 0, dict(lo=3, hi=2.5, mean=4.0, cw=2, sw=1.5), 0, "ON_TIME", True)]],
        batching_invariant=True),
    Transcript(
        "user_aggregate", spec(T10, aggs=dict(m=UserAggregate(Mean(), ("v",), "double"), n=Count())),
        [Step([r(1, 1), r(2, 2), r(3, None)]), FLUSH],
        [[], [P("a", 0, dict(m=1.5, n=3), 0, "ON_TIME", True)]], batching_invariant=True),
    Transcript(
        "malformed_rows_are_quarantined", spec(T10),
        [Step([r(1, 1), r(2, 2, k=None), r(None, 4)]), FLUSH],
        [[], [P("a", 0, dict(s=1, n=1), 0, "ON_TIME", True)]], extra={0: dict(quarantined_rows=2, accepted_rows=1)}),
    Transcript("empty_input", spec(T10), [Step([]), FLUSH], [[], []]),
    Transcript(
        "keys_are_independent", spec(T10),
        [Step([r(1, 1, k="a"), r(2, 2, k="b"), r(11, 4, k="b")]), FLUSH],
        [[P("a", 0, dict(s=1, n=1), 0, "ON_TIME", True), P("b", 0, dict(s=2, n=1), 0, "ON_TIME", True)],
         [P("b", 10, dict(s=4, n=1), 0, "ON_TIME", True)]],
        batching_invariant=True),
]
