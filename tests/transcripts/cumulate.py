"""Cumulating windows (Flink SQL's CUMULATE): windows that grow by a step from a common start.

``CumulativeEventTimeWindows.of(max_size, step)``: for the start ``s = ts - floor_mod(ts - offset,
max_size)`` an element at ``ts`` is in every window ``[s, s + k * step)`` (``k = 1 .. max_size /
step``) that ends after ``ts``. Each window is an ordinary time window for the operator: it fires
at its ``max_ts = end - 1``, is late when ``max_ts + L <= wm`` at the batch's start, and is cleaned
at ``max_ts + L`` (the rules of ``transcripts/basics.py``). The expected values are worked out by
hand below. Spark runs them as the time plans (slices of one step); the first also on the per-key
path and on Delta state.
"""
from __future__ import annotations

from transcripts.build import L, P, flush, r, spec, step, transcript_list
from transcripts.types import Cut
from windowing.core.assigners import CumulativeEventTimeWindows
from windowing.core.records import EARLY, LATE, ON_TIME
from windowing.core.triggers import EarlyLateEventTimeTrigger

TRANSCRIPTS, transcript = transcript_list()


def cumulate(max_size, step_size, offset=0):
    return CumulativeEventTimeWindows.of(max_size, step_size, offset)


transcript(
    "cumulate_windows_grow_by_step_and_fire_on_time", spec(cumulate(30, 10)),
    # 1 -> [0,10),[0,20),[0,30); 12 -> [0,20),[0,30). wm = 11 >= 9: [0,10) fires ON_TIME and,
    # L = 0, is cleaned (final).
    step(r(1, 1), r(12, 2), wm_after=11, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    # 25 -> [0,30) only (its first window ends at 30). wm = 24 >= 19: [0,20) fires with 1 and 12.
    step(r(25, 4), wm_after=24, panes=[P("a", 0, 20, 0, ON_TIME, True, s=3, n=2)]),
    # 31 starts the next cycle: [30,40),[30,50),[30,60). wm = 30 >= 29: [0,30) fires with all three.
    step(r(31, 8), wm_after=30, panes=[P("a", 0, 30, 0, ON_TIME, True, s=7, n=3)]),
    flush([P("a", 30, 40, 0, ON_TIME, True, s=8, n=1),
           P("a", 30, 50, 0, ON_TIME, True, s=8, n=1),
           P("a", 30, 60, 0, ON_TIME, True, s=8, n=1)]),
    invariant=True, doc="max size 30, step 10: each element in the windows of its cycle that end after it",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL, spark_per_key=Cut.STEPS)

transcript(
    "cumulate_offset_and_negative_time", spec(cumulate(20, 5, 3)),
    # cycles start at 3 mod 20: -4 -> start -17, ends -12, -7, -2, 3 above -4: [-17,-2),[-17,3);
    # 3 -> start 3: [3,8),[3,13),[3,18),[3,23). wm = 2 >= -3: [-17,-2) fires; [-17,3) (max_ts 2) too.
    step(r(-4, 1), r(3, 2), wm_after=2, panes=[
        P("a", -17, -2, 0, ON_TIME, True, s=1, n=1),
        P("a", -17, 3, 0, ON_TIME, True, s=1, n=1)]),
    flush([P("a", 3, 8, 0, ON_TIME, True, s=2, n=1), P("a", 3, 13, 0, ON_TIME, True, s=2, n=1),
           P("a", 3, 18, 0, ON_TIME, True, s=2, n=1), P("a", 3, 23, 0, ON_TIME, True, s=2, n=1)]),
    invariant=True, doc="offset 3 and timestamps before 0: cycles aligned on the offset", spark=Cut.STEPS)

transcript(
    "cumulate_late_panes_within_allowed_lateness", spec(cumulate(30, 10), lateness=10),
    # 5 -> [0,10),[0,20),[0,30); 22 -> [0,30). wm = 21: [0,10) fires and is cleaned at 9 + 10 = 19
    # (final); [0,20) fires ON_TIME, its cleanup 29 is later (not final).
    step(r(5, 1), r(22, 2), wm_after=21, panes=[
        P("a", 0, 10, 0, ON_TIME, True, s=1, n=1),
        P("a", 0, 20, 0, ON_TIME, False, s=1, n=1)]),
    # 15 -> [0,20),[0,30): [0,20) is late by 2 < L at the batch's start (19 + 10 > 21): a LATE pane
    # with the whole window (accumulating); [0,30) (max_ts 29 > 21) does not fire.
    step(r(15, 4), wm_after=21, panes=[P("a", 0, 20, 1, LATE, False, s=5, n=2)]),
    # 3 -> [0,10) is gone (19 <= 21), [0,20) and [0,30) take it; 40 -> [30,50),[30,60) (40 is the
    # end of [30,40), not in it). wm = 39: [0,20) fires LATE and is cleaned (29 <= 39, final); [0,30)
    # fires ON_TIME (29 > 21) and is cleaned at 39 (final).
    step(r(3, 8), r(40, 16), wm_after=39, panes=[
        P("a", 0, 20, 2, LATE, True, s=13, n=3),
        P("a", 0, 30, 0, ON_TIME, True, s=15, n=4)]),
    # 2: every window of its cycle is past cleanup (39 <= 39) and 2 + 10 <= 39: the late output.
    step(r(2, 32), wm_after=39, late=[L(2)], metrics=dict(late_rows=1, accepted_rows=0)),
    # [30,50) and [30,60) fire and are cleaned.
    flush([P("a", 30, 50, 0, ON_TIME, True, s=16, n=1), P("a", 30, 60, 0, ON_TIME, True, s=16, n=1)]),
    doc="allowed lateness: a late element refires the cumulating windows it is still in", spark=Cut.STEPS)

transcript(
    "cumulate_early_firings_every_two_elements", spec(cumulate(20, 10), delay=100,
                                                       trigger=EarlyLateEventTimeTrigger(early_every_n=2)),
    # wm = 15 - 100 - 1 = -86: nothing is due. In (ts, seq) order [0,10) gets 1, 2: an EARLY pane
    # at its second element; [0,20) gets 1, 2, 15: an EARLY pane at the second (s = 3), then one more.
    step(r(1, 1), r(2, 2), r(15, 4), wm_after=-86, panes=[
        P("a", 0, 10, 0, EARLY, False, s=3, n=2),
        P("a", 0, 20, 0, EARLY, False, s=3, n=2)]),
    # the flush: both windows fire ON_TIME with everything they hold and are cleaned.
    flush([P("a", 0, 10, 1, ON_TIME, True, s=3, n=2), P("a", 0, 20, 1, ON_TIME, True, s=7, n=3)]),
    doc="early panes every 2 elements per cumulating window, then the on-time pane", spark=Cut.STEPS)
