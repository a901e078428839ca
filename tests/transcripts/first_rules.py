"""The first rules of the semantics, each on a short input: every one runs on the model and on Spark.

Expected values are written from Flink's semantics and docs/semantics.md (the micro-batch
rule), not produced by running an executor; the comment above a step says why. Each runs step
by step on the reference model and on Spark; the batching-invariant ones are also cut into
batches of 1 and 2 on Spark (and, like every invariant transcript, into 1, 2, 3 and all on the
model).
"""
from __future__ import annotations

from transcripts.build import L, P, flush, r, sliding, spec, step, transcript_list, tumbling
from transcripts.types import Cut
from windowing.core.aggregates import Avg, Count, Max, Min, Sum, UserAggregate
from windowing.core.assigners import GlobalWindows
from windowing.core.records import EARLY, LATE, ON_TIME, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY
from windowing.core.triggers import CountTrigger

TRANSCRIPTS, transcript = transcript_list()

SPARK_CUTS = Cut.STEPS | Cut.ONE | Cut.TWO
"""Step by step on Spark, and cut into batches of 1 and 2."""


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


transcript(
    "boundaries_start_end_minus_1_end", spec(tumbling(10)),
    # wm = 10 - 0 - 1 = 9 >= max_ts 9: [0,10) fires; L = 0 so it is cleaned at once (final).
    step(r(0, 1), r(9, 2), r(10, 4), panes=[P("a", 0, 10, 0, ON_TIME, True, s=3, n=2)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, spark=SPARK_CUTS, doc="elements at a window's start, at end - 1 and at its end, in one batch")

transcript(
    "negative_timestamps", spec(tumbling(10)),
    # wm = -2: [-20,-10) (max -11) fires; [-10,0) (max -1) waits for the flush.
    step(r(-1, 1), r(-10, 2), r(-11, 4), panes=[P("a", -20, -10, 0, ON_TIME, True, s=4, n=1)]),
    flush([P("a", -10, 0, 0, ON_TIME, True, s=3, n=2)]),
    spark=Cut.STEPS, doc="out of order before 1970 (cut finer, elements become late)")

transcript(
    "positive_offset", spec(tumbling(10, 3)),
    # start = ts - floor_mod(ts - 3, 10): 2 -> -7, 3 -> 3, -8 -> -17.
    # wm = 2 >= max_ts of [-17,-7) and of [-7,3) (max 2): both fire.
    step(r(2, 1), r(3, 2), r(-8, 4), panes=[P("a", -17, -7, 0, ON_TIME, True, s=4, n=1),
                                            P("a", -7, 3, 0, ON_TIME, True, s=1, n=1)]),
    flush([P("a", 3, 13, 0, ON_TIME, True, s=2, n=1)]),
    spark=Cut.STEPS, doc="offset 3, out of order (cut finer, elements become late)")

transcript(
    "negative_offset", spec(tumbling(10, -3)),
    # offset -3 aligns windows at ..., -3, 7, 17: 6 -> [-3,7), 7 -> [7,17); wm 6 fires [-3,7).
    step(r(6, 1), r(7, 2), panes=[P("a", -3, 7, 0, ON_TIME, True, s=1, n=1)]),
    flush([P("a", 7, 17, 0, ON_TIME, True, s=2, n=1)]),
    invariant=True, spark=SPARK_CUTS, doc="offset -3")

transcript(
    "sliding_gap_unassigned_then_late", spec(sliding(5, 8)),
    # Windows [0,5), [8,13), [16,21). ts 6 is in a gap: unassigned while not late; wm 16 fires [0,5).
    step(r(1, 1), r(6, 2), r(17, 4), panes=[P("a", 0, 5, 0, ON_TIME, True, s=1, n=1)],
         metrics=dict(unassigned_rows=1)),
    # wm 16: ts 6 is late now (6 <= 16) and goes to the late output, as does ts 2 ([0,5) is cleaned).
    step(r(6, 8), r(2, 16), late=[L(6), L(2)]),
    flush([P("a", 16, 21, 0, ON_TIME, True, s=4, n=1)]),
    spark=Cut.STEPS, doc="slide > size: a gap element is unassigned, then late")

transcript(
    "sliding_overlap", spec(sliding(10, 5)),
    # 7 -> [5,15), [0,10); 12 -> [10,20), [5,15). wm 11 fires [0,10).
    step(r(7, 1), r(12, 2), panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    flush([P("a", 5, 15, 0, ON_TIME, True, s=3, n=2), P("a", 10, 20, 0, ON_TIME, True, s=2, n=1)]),
    invariant=True, spark=SPARK_CUTS, doc="size 10, slide 5")

transcript(
    "lateness_boundary", spec(tumbling(10), lateness=4),
    step(r(13, 1)),
    # wm 12: [0,10) has cleanup 13 > 12, so ts 9 is accepted and fires a LATE pane at once.
    step(r(9, 2), panes=[P("a", 0, 10, 0, LATE, False, s=2, n=1)]),
    # wm 13: cleanup of [0,10) (nothing new: no pane).
    step(r(14, 4)),
    # ts 8 is late by exactly L.
    step(r(8, 8), late=[L(8)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=5, n=2)]),
    spark=Cut.STEPS, doc="late within L gives a LATE pane; after the cleanup the late output")

transcript(
    "late_elements_in_one_batch_give_one_late_pane", spec(tumbling(10), lateness=100),
    step(r(1, 1), r(25, 2), panes=[P("a", 0, 10, 0, ON_TIME, False, s=1, n=1)]),
    step(r(3, 4), r(5, 8), panes=[P("a", 0, 10, 1, LATE, False, s=13, n=3)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=2, n=1)]),
    spark=Cut.STEPS, doc="two late elements in one batch: one LATE pane (accumulating)")

transcript(
    "discarding_late_pane_has_only_new_elements", spec(tumbling(10), lateness=100, mode="discarding"),
    step(r(1, 1), r(25, 2), panes=[P("a", 0, 10, 0, ON_TIME, False, s=1, n=1)]),
    step(r(3, 4), r(5, 8), panes=[P("a", 0, 10, 1, LATE, False, s=12, n=2)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=2, n=1)]),
    spark=Cut.STEPS, doc="discarding: the LATE pane holds only the late elements")

transcript(
    "watermark_delay_and_explicit_advance", spec(tumbling(10), delay=1000),
    step(r(5, 1)),
    # an explicit watermark 9 fires [0,10) with no new element.
    step(wm=9, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    flush(),
    spark=Cut.STEPS, doc="a delay holds the watermark back; an explicit watermark moves it")

transcript(
    "count_window_tumbling_exact", spec(count=(3,), s=Sum("v")),
    # Ordered by event time: (1,2,4) and (8,16,32) fire, 64 is kept; then 64+128+256.
    step(r(4, 16), r(0, 1), r(6, 64), r(2, 4), r(1, 2), r(5, 32), r(3, 8),
         panes=[P("a", None, None, 0, ON_TIME, False, s=7), P("a", None, None, 1, ON_TIME, False, s=56)]),
    step(r(8, 256), r(7, 128), panes=[P("a", None, None, 2, ON_TIME, False, s=448)]),
    flush(),
    spark=Cut.STEPS, doc="count_window(3) fires exactly every 3 elements, in event-time order")

transcript(
    "count_window_sliding_every_two_of_three", spec(count=(3, 2)),
    # Fires every 2 elements over the last 3: (1,2), (2,4,8), then (8,16,32).
    step(r(0, 1), r(1, 2), r(2, 4), r(3, 8), r(4, 16),
         panes=[P("a", None, None, 0, ON_TIME, False, s=3, n=2), P("a", None, None, 1, ON_TIME, False, s=14, n=3)]),
    step(r(5, 32), panes=[P("a", None, None, 2, ON_TIME, False, s=56, n=3)]),
    flush(),
    spark=Cut.STEPS, doc="count_window(3, 2)")

transcript(
    "count_trigger_on_time_window_early_and_discarded_remainder", spec(tumbling(10), trigger=CountTrigger(2)),
    # EARLY at 2 elements; the third is dropped at cleanup without a firing (Flink).
    step(r(1, 1), r(2, 2), r(3, 4), panes=[P("a", 0, 10, 0, EARLY, False, s=3, n=2)]),
    flush(),
    spark=Cut.STEPS, doc="CountTrigger(2) on a time window: the remainder is never emitted")

transcript(
    "global_window_never_fires_on_a_flush", spec(GlobalWindows()),
    step(r(1, 1), r(50, 2), metrics=dict(accepted_rows=2)),
    flush(),
    spark=Cut.STEPS, doc="GlobalWindows' default trigger never fires")

transcript(
    "several_aggregates_and_nulls",
    spec(tumbling(10), lo=Min("v"), hi=Max("w"), mean=Avg("v"), cw=Count("w"), sw=Sum("w")),
    step(r(1, 3, w=None), r(2, None, w=2.5), r(3, 5, w=-1.0)),
    flush([P("a", 0, 10, 0, ON_TIME, True, lo=3, hi=2.5, mean=4.0, cw=2, sw=1.5)]),
    invariant=True, spark=SPARK_CUTS, doc="min/max/avg/count/sum skip nulls")

transcript(
    "user_aggregate", spec(tumbling(10), m=UserAggregate(Mean(), ("v",), "double"), n=Count()),
    step(r(1, 1), r(2, 2), r(3, None)),
    flush([P("a", 0, 10, 0, ON_TIME, True, m=1.5, n=3)]),
    invariant=True, spark=SPARK_CUTS, doc="a user aggregate over one column (tuple input)")

transcript(
    "malformed_rows_are_quarantined", spec(tumbling(10)),
    step(r(1, 1), r(2, 2, k=None), r(None, 4), quarantined=[QUARANTINE_NULL_KEY, QUARANTINE_NULL_EVENT_TIME],
         metrics=dict(quarantined_rows=2, accepted_rows=1)),
    flush([P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    spark=Cut.STEPS, doc="a null key or event time is quarantined")

transcript(
    "empty_input_one_empty_batch", spec(tumbling(10)),
    step(), flush(),
    spark=Cut.STEPS, doc="an empty batch and a flush emit nothing")

transcript(
    "keys_are_independent", spec(tumbling(10)),
    step(r(1, 1, k="a"), r(2, 2, k="b"), r(11, 4, k="b"),
         panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1), P("b", 0, 10, 0, ON_TIME, True, s=2, n=1)]),
    flush([P("b", 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, spark=SPARK_CUTS, doc="one key's element moves the watermark for all keys")
