"""The join semantics as transcripts: two inputs per batch, and what each batch must emit.

Expectations were worked out BY HAND from Flink's semantics (``CoGroupedStreams`` /
``JoinedStreams`` as one window operator over the tagged union of both inputs; the
``IntervalJoinOperator``; Flink SQL's window join types) in the micro-batch rule's terms
(docs/semantics.md, "Joins"); the comment above each step says why. They were not produced by
running the model. These transcripts have their own runner (tests/core/test_join_transcripts.py):
the catalogue in ``transcripts/__init__.py`` is single-input.

Conventions: the left input has key column ``k`` and event time ``lt``; the right input key
``key`` and event time ``rt`` (``where("k").equal_to("key")``); every row has an ``id``. The
window join projects ``left={"id": "l"}, right={"id": "r"}``, so an expected pane lists its rows
as ``(l, r)`` pairs (None: the missing side), compared as multisets. The watermark is
``min(max_lt - delay_left - 1, max_rt - delay_right - 1)`` (-inf until both inputs sent a row,
unless one is idle).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from windowing.core.assigners import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.functions import ProcessContext
from windowing.core.joins import LEFT, RIGHT, IntervalJoinSpec, JoinInput, Side, WindowJoinSpec
from windowing.core.records import (
    EARLY, LATE, LATE_BEYOND_ALLOWED_LATENESS, ON_TIME, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY,
    QUARANTINE_UNPARSEABLE_EVENT_TIME)
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.triggers import EventTimeTrigger

LEFT_ID, RIGHT_ID = "l", "r"


# ------------------------------------------------------------------ the format


@dataclass(frozen=True)
class JoinPaneExpected:
    """A window join pane: ``rows`` are (l, r) id pairs (or (l,) for semi/anti, or co-group rows as tuples)."""

    key: str
    window_start_ms: int | None
    window_end_ms: int | None
    pane_index: int
    timing: str
    is_final: bool
    rows: tuple
    supersedes: tuple = ()


@dataclass(frozen=True)
class PairExpected:
    """An interval join pair: the ids and the pair's time ``max(l.ts, r.ts)``."""

    key: str
    left_id: str
    right_id: str
    timestamp_ms: int


@dataclass(frozen=True)
class LateExpected:
    side: Side
    key: str
    timestamp_ms: int
    reason: str = LATE_BEYOND_ALLOWED_LATENESS


@dataclass(frozen=True)
class JoinStep:
    """One batch of both inputs (or a flush) and what it must emit.

    ``metrics``: per side, a subset of ``BatchMetrics`` fields (every side's accounting and
    input count are always checked). ``state`` after the step: for interval joins, each side's
    event times in state ({side: [ts, ...]}); for window joins, the open windows as (key, start,
    end) triples. ``quarantined``: (side, reason) pairs, order-insensitive.
    """

    left: tuple = ()
    right: tuple = ()
    flush: bool = False
    pt: int | None = None
    panes: tuple = ()
    pairs: tuple = ()
    late: tuple = ()
    quarantined: tuple = ()
    metrics: dict = field(default_factory=dict)
    wm_after: int | None = None
    state: dict | None = None


@dataclass(frozen=True)
class JoinTranscript:
    name: str
    spec: WindowJoinSpec | IntervalJoinSpec
    steps: tuple
    doc: str = ""


def lr(ts: Any, id_: str, k: str | None = "a") -> dict:
    """A left row."""
    return {"k": k, "lt": ts, "id": id_}


def rr(ts: Any, id_: str, k: str | None = "a") -> dict:
    """A right row."""
    return {"key": k, "rt": ts, "id": id_}


def step(left=(), right=(), *, pt=None, panes=(), pairs=(), late=(), quarantined=(), metrics=None, wm_after=None,
         state=None) -> JoinStep:
    return JoinStep(tuple(left), tuple(right), False, pt, tuple(panes), tuple(pairs), tuple(late),
                    tuple(quarantined), dict(metrics or {}), wm_after, state)


def flush(panes=(), pairs=(), state=None) -> JoinStep:
    return JoinStep(flush=True, panes=tuple(panes), pairs=tuple(pairs), wm_after=MAX_TIMESTAMP_MS, state=state)


def P(key, start, end, idx, timing, final, *rows, supersedes=()) -> JoinPaneExpected:
    return JoinPaneExpected(key, start, end, idx, timing, final, tuple(rows), tuple(supersedes))


def inputs(delay_left: int = 0, delay_right: int = 0, idle_right=None) -> tuple[JoinInput, JoinInput]:
    return JoinInput.of("lt", delay_left), JoinInput.of("rt", delay_right, idle_timeout=idle_right)


def window_join(assigner, how="inner", delays=(0, 0), trigger=None, lateness=0, mode=None, idle=None,
                late_output=True) -> WindowJoinSpec:
    left, right = inputs(*delays)
    b = left.join(right, how).where("k").equal_to("key").window(assigner)
    if trigger is not None:
        b = b.trigger(trigger)
    if mode is not None:
        b = getattr(b, mode)()
    if idle is not None:
        b = b.watermark_idleness(idle)
    b = b.allowed_lateness(lateness).side_output_late_data(late_output)
    return b.project(left={"id": LEFT_ID}) if how in ("semi", "anti") else \
        b.project(left={"id": LEFT_ID}, right={"id": RIGHT_ID})


def interval_join(lower, upper, delays=(0, 0), lower_exclusive=False, upper_exclusive=False,
                  idle=None, idle_right=None) -> IntervalJoinSpec:
    left, right = inputs(*delays, idle_right=idle_right)
    b = left.interval_join(right).where("k").equal_to("key").between(lower, upper).side_output_late_data()
    if idle is not None:
        b = b.watermark_idleness(idle)
    if lower_exclusive:
        b = b.lower_bound_exclusive()
    if upper_exclusive:
        b = b.upper_bound_exclusive()
    return b.project(left={"id": LEFT_ID}, right={"id": RIGHT_ID})


@dataclass(frozen=True)
class CountSides:
    """A co-group function: per firing, how many rows each side has, and the window's start."""

    def co_group(self, key: tuple, window: ProcessContext, lefts: list, rights: list):
        return [{"lefts": len(lefts), "rights": len(rights), "start": window.window_start_ms}]


@dataclass(frozen=True)
class DropSome:
    """A pair join function: the pair's ids, but no row for a pair with the right row r3 or the left row l2."""

    def join(self, left, right):
        if (right and right["id"]) == "r3" or (left and left["id"]) == "l2":
            return None
        return {LEFT_ID: left and left["id"], RIGHT_ID: right and right["id"]}


JOIN_TRANSCRIPTS: list[JoinTranscript] = []


def transcript(name: str, spec, *steps: JoinStep, doc: str = "") -> None:
    JOIN_TRANSCRIPTS.append(JoinTranscript(name, spec, tuple(steps), doc))


# ------------------------------------------------------------------ window joins

transcript(
    "window_join_tumbling_early_and_late_panes",
    window_join(TumblingEventTimeWindows.of(10), lateness=10,
                trigger=EventTimeTrigger().with_early_firings(every_n_elements=3)),
    # The early count runs over both inputs' elements: l1, r1, l2 is the third -> EARLY pane of [0,10)
    # with every pair so far. wm = min(4-1, 2-1) = 1.
    step([lr(1, "l1"), lr(4, "l2")], [rr(2, "r1")], wm_after=1,
         panes=[P("a", 0, 10, 0, EARLY, False, ("l1", "r1"), ("l2", "r1"))]),
    # r2 joins [0,10) (count 1); l3, r3 open [10,20) (count 2). wm = min(14, 15) = 14 >= 9: [0,10) fires
    # ON_TIME with the whole window (accumulating); cleanup at 9 + 10 = 19, so not final.
    step([lr(15, "l3")], [rr(7, "r2"), rr(16, "r3")], wm_after=14,
         panes=[P("a", 0, 10, 1, ON_TIME, False, ("l1", "r1"), ("l1", "r2"), ("l2", "r1"), ("l2", "r2"))]),
    # l4 at 8: [0,10) is past its end but not its cleanup (19 > 14): a late element within allowed
    # lateness -> one LATE pane re-emitting every pair of the window.
    step([lr(8, "l4")], wm_after=14, metrics={LEFT: dict(accepted_rows=1)},
         panes=[P("a", 0, 10, 2, LATE, False, ("l1", "r1"), ("l1", "r2"), ("l2", "r1"), ("l2", "r2"),
                  ("l4", "r1"), ("l4", "r2"))]),
    # wm = min(24, 23) = 23: [10,20) fires ON_TIME (l3 x r3); [0,10) reaches cleanup (19) without a pane.
    step([lr(25, "l5")], [rr(24, "r5")], wm_after=23, panes=[P("a", 10, 20, 0, ON_TIME, False, ("l3", "r3"))],
         state=[("a", 10, 20), ("a", 20, 30)]),
    # l6 at 5 and r7 at 4 belong only to the cleaned [0,10): late rows, one per side, judged against 23.
    # r6 at 12 is within [10,20)'s lateness (cleanup 29): a LATE pane with the new pair.
    step([lr(5, "l6")], [rr(12, "r6"), rr(4, "r7")], wm_after=23,
         late=[LateExpected(LEFT, "a", 5), LateExpected(RIGHT, "a", 4)],
         metrics={LEFT: dict(late_rows=1, accepted_rows=0), RIGHT: dict(late_rows=1, accepted_rows=1)},
         panes=[P("a", 10, 20, 1, LATE, False, ("l3", "r3"), ("l3", "r6"))]),
    # End of input: [20,30) fires ON_TIME and is cleaned (final); [10,20) is cleaned without a pane.
    flush([P("a", 20, 30, 0, ON_TIME, True, ("l5", "r5"))], state=[]),
    doc="inner join, tumbling 10, early every 3 elements of either side, lateness 10, late rows per side")

transcript(
    "window_join_sliding",
    window_join(SlidingEventTimeWindows.of(10, 5)),
    # l1@3 -> [-5,5),[0,10); r1@7 -> [0,10),[5,15); r2@11 and l2@12 -> [5,15),[10,20).
    # wm = min(11, 10) = 10: [-5,5) fires with l1 alone (an inner join emits no row: an empty pane),
    # [0,10) with l1 x r1.
    step([lr(3, "l1"), lr(12, "l2")], [rr(7, "r1"), rr(11, "r2")], wm_after=10,
         panes=[P("a", -5, 5, 0, ON_TIME, True), P("a", 0, 10, 0, ON_TIME, True, ("l1", "r1"))]),
    # The pair (l2, r2) is in both windows that hold both rows.
    flush([P("a", 5, 15, 0, ON_TIME, True, ("l2", "r1"), ("l2", "r2")),
           P("a", 10, 20, 0, ON_TIME, True, ("l2", "r2"))]),
    doc="sliding 10/5: a pair is emitted once per window that holds both rows")

transcript(
    "window_join_sliding_gap_and_quarantine_per_side",
    window_join(SlidingEventTimeWindows.of(5, 10)),
    # size 5, slide 10: [0,5) holds 0..4; r1@7 is in the gap (no window, not late): unassigned.
    # Bad rows are quarantined with their side. wm = min(2-1, 7-1) = 1 (the gap row moves the watermark).
    step([lr(2, "l1"), lr(None, "bad1"), lr("x", "bad2")], [rr(7, "r1"), rr(3, "r2"), rr(4, "bad3", k=None)],
         wm_after=1,
         quarantined=[(LEFT, QUARANTINE_NULL_EVENT_TIME), (LEFT, QUARANTINE_UNPARSEABLE_EVENT_TIME),
                      (RIGHT, QUARANTINE_NULL_KEY)],
         metrics={LEFT: dict(accepted_rows=1, quarantined_rows=2),
                  RIGHT: dict(accepted_rows=1, unassigned_rows=1, quarantined_rows=1)}),
    flush([P("a", 0, 5, 0, ON_TIME, True, ("l1", "r2"))]),
    doc="a sliding gap row is unassigned; bad rows are quarantined with their side; accounting per side")

transcript(
    "window_join_sessions_merge_across_sides",
    window_join(EventTimeSessionWindows.with_gap(10)),
    # l1 -> [0,10); r1 -> [15,25): apart. wm = min(-1, 14) = -1.
    step([lr(0, "l1")], [rr(15, "r1")], wm_after=-1),
    # r2 -> [8,18) touches both: one session [0,25) of l1, r1, r2 (a right row bridges a left and a right
    # row). l2 -> [30,40). wm = min(29, 14) = 14 < 24: nothing fires.
    step([lr(30, "l2")], [rr(8, "r2")], wm_after=14, state=[("a", 0, 25), ("a", 30, 40)]),
    # r3 -> [40,50) touches [30,40): [30,50). wm = min(29, 39) = 29 >= 24: [0,25) fires: l1 pairs with both
    # right rows, r1 15 ms after it, through the merged session.
    step([], [rr(40, "r3")], wm_after=29,
         panes=[P("a", 0, 25, 0, ON_TIME, True, ("l1", "r1"), ("l1", "r2"))]),
    flush([P("a", 30, 50, 0, ON_TIME, True, ("l2", "r3"))]),
    doc="session windows merge across both inputs")

transcript(
    "window_join_session_merge_after_a_pane_supersedes_it",
    window_join(EventTimeSessionWindows.with_gap(10), lateness=20),
    # l1 -> [0,10), r1 -> [5,15): one session [0,15). l2 -> [30,40). wm = min(29, 4) = 4.
    step([lr(0, "l1"), lr(30, "l2")], [rr(5, "r1")], wm_after=4),
    # r2 -> [32,42): merges with [30,40) -> [30,42). wm = min(29, 31) = 29 >= 14: [0,15) fires ON_TIME
    # (cleanup 14 + 20 = 34 > 29: kept).
    step([], [rr(32, "r2")], wm_after=29, panes=[P("a", 0, 15, 0, ON_TIME, False, ("l1", "r1"))]),
    # The batch's windows merge first: l3 at 12 -> [12,22) touches the fired [0,15) (within its lateness);
    # r3 at 20 -> [20,30) touches [12,22) and [30,42). All merge into [0,42), which is not late, continues
    # [0,15)'s pane index and supersedes it. A merge is not a firing: wm = 29 < 41, nothing fires.
    step([lr(12, "l3")], [rr(20, "r3")], wm_after=29),
    flush([P("a", 0, 42, 1, ON_TIME, True, ("l1", "r1"), ("l1", "r2"), ("l1", "r3"), ("l2", "r1"), ("l2", "r2"),
             ("l2", "r3"), ("l3", "r1"), ("l3", "r2"), ("l3", "r3"), supersedes=[(0, 15)])]),
    doc="a late row of one side bridges a fired session and an open one: the merged session supersedes it")

_OUTER_ROWS = step([lr(1, "l1"), lr(5, "l4"), lr(2, "l2", k="b")],
                   [rr(3, "r1"), rr(6, "r3"), rr(4, "r2", k="c")], wm_after=4)
# key a: lefts l1, l4 and rights r1, r3; key b: l2 only; key c: r2 only. wm = min(5-1, 6-1) = 4.
_BOTH = (("l1", "r1"), ("l1", "r3"), ("l4", "r1"), ("l4", "r3"))

for how, a_rows, b_rows, c_rows in [
        ("inner", _BOTH, (), ()),
        ("left", _BOTH, (("l2", None),), ()),
        ("right", _BOTH, (), ((None, "r2"),)),
        ("full", _BOTH, (("l2", None),), ((None, "r2"),)),
        ("semi", (("l1",), ("l4",)), (), ()),
        ("anti", (), (("l2",),), ())]:
    transcript(
        f"window_join_{how}", window_join(TumblingEventTimeWindows.of(10), how=how),
        _OUTER_ROWS,
        # Every key with a row on either side fires once, at the flush; the join kind decides its rows.
        flush([P("a", 0, 10, 0, ON_TIME, True, *a_rows), P("b", 0, 10, 0, ON_TIME, True, *b_rows),
               P("c", 0, 10, 0, ON_TIME, True, *c_rows)]),
        doc=f"{how} window join: nulls for the missing side; semi and anti emit each left row once")

transcript(
    "co_group_called_per_key_and_window",
    inputs()[0].co_group(inputs()[1]).where("k").equal_to("key").window(TumblingEventTimeWindows.of(10))
    .apply(CountSides(), "lefts int, rights int, start bigint"),
    _OUTER_ROWS,
    # One call per key and window with a row on either side: (lefts, rights, window start).
    flush([P("a", 0, 10, 0, ON_TIME, True, (2, 2, 0)), P("b", 0, 10, 0, ON_TIME, True, (1, 0, 0)),
           P("c", 0, 10, 0, ON_TIME, True, (0, 1, 0))]),
    doc="co-group: called once per key and window in which either side has rows")

transcript(
    "window_join_function_drops_pairs",
    inputs()[0].join(inputs()[1], "full").where("k").equal_to("key").window(TumblingEventTimeWindows.of(10))
    .apply(DropSome(), f"{LEFT_ID} string, {RIGHT_ID} string"),
    _OUTER_ROWS,
    # A function's None is no row: key a keeps the pairs without r3; key b's only pair (l2, null) gives none,
    # so b's pane is a pane with no row; key c keeps its unmatched right row.
    flush([P("a", 0, 10, 0, ON_TIME, True, ("l1", "r1"), ("l4", "r1")), P("b", 0, 10, 0, ON_TIME, True),
           P("c", 0, 10, 0, ON_TIME, True, (None, "r2"))]),
    doc="a join function's pairs: the kind's pairs, each through the function; None drops the pair")

for mode, second, last in [
        # accumulating: each pane joins the whole window so far.
        ("accumulating", (("l1", "r1"), ("l1", "r2"), ("l2", "r1"), ("l2", "r2")),
         (("l1", "r1"), ("l1", "r2"), ("l2", "r1"), ("l2", "r2"), ("l3", "r1"), ("l3", "r2"))),
        # discarding: the window is purged at each firing; a pane joins only the rows that arrived since the
        # previous one: (l1, r2) and (l2, r1) are never emitted; the last pane holds l3 alone: no row.
        ("discarding", (("l2", "r2"),), ())]:
    transcript(
        f"window_join_{mode}",
        window_join(TumblingEventTimeWindows.of(10), mode=mode,
                    trigger=EventTimeTrigger().with_early_firings(every_n_elements=2)),
        # l1, r1: the second element fires EARLY. wm = min(0, 1) = 0.
        step([lr(1, "l1")], [rr(2, "r1")], wm_after=0, panes=[P("a", 0, 10, 0, EARLY, False, ("l1", "r1"))]),
        # l2, r2: EARLY again. wm = min(2, 3) = 2.
        step([lr(3, "l2")], [rr(4, "r2")], wm_after=2, panes=[P("a", 0, 10, 1, EARLY, False, *second)]),
        # l3: count 1. wm = min(4, 3) = 3.
        step([lr(5, "l3")], wm_after=3),
        flush([P("a", 0, 10, 2, ON_TIME, True, *last)]),
        doc=f"{mode} panes of a window join with early firings")

transcript(
    "window_join_idle_input",
    window_join(TumblingEventTimeWindows.of(10), idle="100 ms"),
    # The right input sent nothing yet and is not idle (100 ms from the first clock, 1000): wm stays -inf.
    step([lr(1, "l1"), lr(12, "l0")], pt=1000, wm_after=MIN_TIMESTAMP_MS),
    # wm = min(11, 1) = 1.
    step([], [rr(2, "r1")], pt=1050, wm_after=1),
    # The right input's last row came 150 ms ago: idle, left out: wm = the left's, 15; [0,10) fires.
    step([lr(16, "l2")], pt=1200, wm_after=15, panes=[P("a", 0, 10, 0, ON_TIME, True, ("l1", "r1"))]),
    # [10,20) holds left rows only: it fires, an inner join emits no row.
    flush([P("a", 10, 20, 0, ON_TIME, True)]),
    doc="the watermark is the minimum of the inputs', an idle input left out")

transcript(
    "window_join_early_firings_by_processing_time",
    window_join(TumblingEventTimeWindows.of(10), trigger=EventTimeTrigger().with_early_firings(every="100 ms")),
    # The first element of [0,10) at processing time 1000 sets the early timer to 1100. wm = min(0, 1) = 0.
    step([lr(1, "l1")], [rr(2, "r1")], pt=1000, wm_after=0),
    # The batch at 1150: the timer at 1100 came due before its rows: EARLY with the pairs so far (l2 not
    # in it); then l2 joins and restarts the timer (1250). wm = min(2, 1) = 1.
    step([lr(3, "l2")], pt=1150, wm_after=1, panes=[P("a", 0, 10, 0, EARLY, False, ("l1", "r1"))]),
    # End of input: ON_TIME with every pair (accumulating), cleaned; the early timer is deleted.
    flush([P("a", 0, 10, 1, ON_TIME, True, ("l1", "r1"), ("l2", "r1"))]),
    doc="early firings every 100 ms of processing time on a window join")

transcript(
    "window_join_count_window_over_both_inputs",
    inputs()[0].join(inputs()[1]).where("k").equal_to("key").count_window(3)
    .project(left={"id": LEFT_ID}, right={"id": RIGHT_ID}),
    # A count window counts the elements of both inputs per key, in (event time, arrival) order:
    # l1@1, r1@2, l2@3 fire and purge; r2@4 starts the next count. Global windows: every pane is ON_TIME,
    # never final; the watermark does not matter.
    step([lr(1, "l1"), lr(3, "l2")], [rr(2, "r1"), rr(4, "r2")],
         panes=[P("a", None, None, 0, ON_TIME, False, ("l1", "r1"), ("l2", "r1"))]),
    # l3@0 (behind the watermark, but a global window is never late) and r3@9: with r2, the second count of 3.
    step([lr(0, "l3")], [rr(9, "r3")], metrics={LEFT: dict(accepted_rows=1, late_rows=0)},
         panes=[P("a", None, None, 1, ON_TIME, False, ("l3", "r2"), ("l3", "r3"))]),
    # The flush fires nothing (the count trigger ignores time) and global windows are never cleaned.
    flush(),
    doc="count windows over the elements of both inputs")

transcript(
    "window_join_late_rows_dropped_without_a_late_output",
    window_join(TumblingEventTimeWindows.of(10), late_output=False),
    # wm = min(14, 15) = 14: [0,10) fires and is cleaned.
    step([lr(1, "l1"), lr(15, "l2")], [rr(2, "r1"), rr(16, "r2")], wm_after=14,
         panes=[P("a", 0, 10, 0, ON_TIME, True, ("l1", "r1"))]),
    # l3@5 and r3@8 are late; with no late output they are counted as dropped, per side.
    step([lr(5, "l3")], [rr(8, "r3"), rr(12, "r4")], wm_after=14,
         metrics={LEFT: dict(dropped_late_rows=1, late_rows=0), RIGHT: dict(dropped_late_rows=1, accepted_rows=1)}),
    flush([P("a", 10, 20, 0, ON_TIME, True, ("l2", "r2"), ("l2", "r4"))]),
    doc="late rows are counted as dropped, per side, without a late output")

# ------------------------------------------------------------------ interval joins

transcript(
    "interval_join_inclusive_bounds_and_cleanup",
    interval_join(-2, 3),
    # l1@10 joins r with 8 <= r.ts <= 13: r1@8 and r2@13 (the bounds), not r3@7 nor r4@14.
    # wm = min(9, 13) = 9. Cleanup: a left row goes at l.ts + 3 <= wm, a right one at r.ts + 2 <= wm:
    # r3 (9 <= 9) goes; a left row that could join it would be at <= 9, late.
    step([lr(10, "l1")], [rr(8, "r1"), rr(13, "r2"), rr(7, "r3"), rr(14, "r4")], wm_after=9,
         pairs=[PairExpected("a", "l1", "r1", 10), PairExpected("a", "l1", "r2", 13)],
         state={LEFT: [10], RIGHT: [8, 13, 14]}),
    # l2@12 joins r2@13 and r4@14 from the state. l3@9 and r5@9 are at the watermark (9): late, per side.
    # wm = min(11, 13) = 11: r1 (10 <= 11) goes.
    step([lr(12, "l2"), lr(9, "l3")], [rr(9, "r5")], wm_after=11,
         pairs=[PairExpected("a", "l2", "r2", 13), PairExpected("a", "l2", "r4", 14)],
         late=[LateExpected(LEFT, "a", 9), LateExpected(RIGHT, "a", 9)],
         metrics={LEFT: dict(accepted_rows=1, late_rows=1), RIGHT: dict(accepted_rows=0, late_rows=1)},
         state={LEFT: [10, 12], RIGHT: [13, 14]}),
    # r6@20 and l4@25 have no partner. wm = min(24, 19) = 19: l1 (13), l2 (15), r2 (15), r4 (16) go.
    step([lr(25, "l4")], [rr(20, "r6")], wm_after=19, state={LEFT: [25], RIGHT: [20]}),
    flush(state={LEFT: [], RIGHT: []}),
    doc="between(-2, 3): both bounds join; late rows per side; each row kept only while a partner can come")

transcript(
    "interval_join_row_behind_its_own_input_but_ahead_of_the_watermark",
    interval_join(0, 3),
    # wm = min(13 - 1, 20 - 1) = 12 (the left input lags). l1@10 stays: a right row at 13 = 10 + 3 would
    # be ahead of the watermark (13 > 12); it goes only at 10 + 3 <= wm.
    step([lr(10, "l1"), lr(13, "l2")], [rr(20, "r1")], wm_after=12, state={LEFT: [10, 13], RIGHT: [20]}),
    # r2@13 is 7 ms behind its own input's newest row but ahead of the operator's watermark (12): not late;
    # it joins l1 at the upper bound and l2 at the lower one.
    step([], [rr(13, "r2")], wm_after=12,
         pairs=[PairExpected("a", "l1", "r2", 13), PairExpected("a", "l2", "r2", 13)],
         metrics={RIGHT: dict(accepted_rows=1, late_rows=0)}, state={LEFT: [10, 13], RIGHT: [13, 20]}),
    flush(state={LEFT: [], RIGHT: []}),
    doc="lateness is judged against the operator's watermark (the minimum of the inputs'), not a row's own input")

transcript(
    "interval_join_exclusive_lower_bound",
    interval_join(-2, 3, lower_exclusive=True),
    # -2 excluded: only r2@13 joins l1@10. A right row now goes at r.ts + 1 <= wm (9): r3@7 and r1@8.
    step([lr(10, "l1")], [rr(8, "r1"), rr(13, "r2"), rr(7, "r3"), rr(14, "r4")], wm_after=9,
         pairs=[PairExpected("a", "l1", "r2", 13)], state={LEFT: [10], RIGHT: [13, 14]}),
    flush(state={LEFT: [], RIGHT: []}),
    doc="an exclusive lower bound")

transcript(
    "interval_join_exclusive_upper_bound",
    interval_join(-2, 3, upper_exclusive=True),
    # +3 excluded: only r1@8 joins l1@10. A left row goes at l.ts + 2 <= wm.
    step([lr(10, "l1")], [rr(8, "r1"), rr(13, "r2"), rr(7, "r3"), rr(14, "r4")], wm_after=9,
         pairs=[PairExpected("a", "l1", "r1", 10)], state={LEFT: [10], RIGHT: [8, 13, 14]}),
    flush(state={LEFT: [], RIGHT: []}),
    doc="an exclusive upper bound")

transcript(
    "interval_join_negative_bounds_and_keys",
    interval_join(-5, -1, delays=(0, 0)),
    # Right rows 1..5 ms before the left row join. r1@5, l1@8: -3 joins, at 8. Key b has no partner.
    # wm = min(7, 4) = 4. l1 goes at 8 - 1 <= wm; r1 at 5 + 5 <= wm: both kept.
    step([lr(8, "l1"), lr(8, "lb", k="b")], [rr(5, "r1")], wm_after=4,
         pairs=[PairExpected("a", "l1", "r1", 8)], state={LEFT: [8, 8], RIGHT: [5]}),
    # r2@20: no partner. wm = min(7, 19) = 7: l1 and lb (7 <= 7) go; a right row for them would be at
    # 3..7, at or below the watermark: late.
    step([], [rr(20, "r2")], wm_after=7, state={LEFT: [], RIGHT: [5, 20]}),
    # l2@9 joins r1@5 (-4) from the state, at 9. wm = min(8, 19) = 8: l2 (8) goes.
    step([lr(9, "l2")], wm_after=8, pairs=[PairExpected("a", "l2", "r1", 9)], state={LEFT: [], RIGHT: [5, 20]}),
    flush(state={LEFT: [], RIGHT: []}),
    doc="negative bounds: a left row leaves the state as soon as its partners would be late")


transcript(
    "interval_join_idle_input",
    # Only the right input has an idle timeout (its own); the left is never idle.
    interval_join(0, 5, idle_right="100 ms"),
    # l1@10 and r1@12 pair at 12. wm = min(9, 11) = 9.
    step([lr(10, "l1")], [rr(12, "r1")], pt=1000, wm_after=9, pairs=[PairExpected("a", "l1", "r1", 12)]),
    # The right input is idle (nothing for 200 ms): wm = the left's, 29. l1 (15) and r1 (12) leave the state.
    step([lr(30, "l2")], pt=1200, wm_after=29, state={LEFT: [30], RIGHT: []}),
    # The right input is back: r2@31 is ahead of the watermark and joins l2; r3@25 is late, although its
    # own input's watermark was 11: the watermark moved on without the idle input.
    step([], [rr(31, "r2"), rr(25, "r3")], pt=1250, wm_after=29, pairs=[PairExpected("a", "l2", "r2", 31)],
         late=[LateExpected(RIGHT, "a", 25)], state={LEFT: [30], RIGHT: [31]}),
    # The left input sent nothing for 200 ms, but has no idle timeout: it stays in. wm = min(29, 39) = 29
    # (with the right's 100 ms it would be idle and the watermark 39). r4@40 is 10 after l2: no pair.
    step([], [rr(40, "r4")], pt=1400, wm_after=29, state={LEFT: [30], RIGHT: [31, 40]}),
    flush(state={LEFT: [], RIGHT: []}),
    doc="an input idle by its own timeout is left out of the interval join's watermark, the other input "
        "(no timeout of its own) never is; the idle input's later rows are judged against it")

def by_name(name: str) -> JoinTranscript:
    """The join transcript called ``name`` (KeyError naming it when there is none)."""
    for t in JOIN_TRANSCRIPTS:
        if t.name == name:
            return t
    raise KeyError(f"no join transcript named {name!r}")
