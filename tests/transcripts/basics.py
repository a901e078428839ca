"""The semantics contract as transcripts: plain Python data every executor runs.

A :class:`Transcript` is a spec (built with ``WindowSpecBuilder``), a list of
:class:`Step` (one batch each, or a flush) and, attributed to the step that
emits them, the expected panes and late rows. The expected values were worked
out BY HAND from Flink's window semantics and docs/semantics.md (the
micro-batch rule); the comment above each step says why. They were not
produced by running an executor.

Rules the expectations rely on (docs/semantics.md, Flink's WindowOperator):

* windows are ``[start, end)``, ``max_ts = end - 1``; tumbling ``start = ts -
  floor_mod(ts - offset, size)``; sliding windows start on multiples of the
  slide (plus offset);
* within a batch every element is checked for lateness against the
  watermark as it stood at the START of the batch: a window is late when
  ``max_ts + L <= wm``; an element in no (non-late) window goes to the late
  output when ``ts + L <= wm``, else (a sliding gap) it is counted unassigned;
* after the batch's elements are added the watermark becomes
  ``max(wm, max_seen_ts - delay - 1, explicit watermark)`` and every timer at
  or below it fires: the event-time trigger fires at ``max_ts``, the window is
  cleaned at ``max_ts + L``;
* timing: a count firing is EARLY when ``max_ts > wm_start`` else LATE; a
  firing at ``max_ts`` is ON_TIME when ``max_ts > wm_start`` else LATE; every
  firing of a global window is ON_TIME;
* at most one time-driven pane per window per batch (several late elements
  in one batch give ONE late pane); count triggers are exact (n elements);
* ``is_final`` is true only on the last pane of a window whose state is
  cleaned up in the same batch;
* discarding = ``PurgingTrigger``: a pane carries only what arrived since the
  previous pane;
* a flush is the watermark going to +infinity: every time window fires (if
  its trigger says so) and is cleaned; global windows never end.

``batching_invariant`` is set when the final results (last pane per (key,
window) after the final flush) cannot depend on how the rows are cut into
batches: nothing is late even with one row per batch, there is no explicit
watermark and no count trigger on a time window. Such a transcript may be
re-cut into batches of 1, 2, 3 and all (see ``transcripts.types.Cut``).

``step(..., pt=t)`` feeds the batch at processing time ``t`` (the injectable
clock); expected panes may name the windows they ``supersedes`` (merged
sessions) and a process function's ``rows``. The format is in
``transcripts/types.py``, the builders in ``transcripts/build.py``, the
transcripts of the full window model in ``transcripts/model.py``.

``reference_xfail`` names a known disagreement of the reference model with
the contract (the transcript states the contract, the reference run is
marked xfail with that reason).
"""
from __future__ import annotations

from transcripts.build import (CollectList, DistinctCount, L, P, WeightedSum, flush, r, sliding, spec, step,
                               transcript_list, tumbling)
from transcripts.types import Cut
from windowing.core.aggregates import Avg, Count, Max, Min, Sum, UserAggregate
from windowing.core.assigners import GlobalWindows
from windowing.core.records import EARLY, LATE, ON_TIME, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY
from windowing.core.triggers import CountTrigger

TRANSCRIPTS, transcript = transcript_list()


# -- tumbling: boundaries, negative time, offsets ------------------------------

transcript(
    "tumbling_window_boundaries", spec(tumbling(10)),
    # 0 (start) and 9 (end-1) are in [0,10); wm = 9 - 0 - 1 = 8 < max_ts 9: nothing fires.
    step(r(0, 1), r(9, 2), wm_after=8),
    # 10 (= end) opens [10,20) and moves wm to 9 = max_ts of [0,10): it fires ON_TIME;
    # L = 0 so it is cleaned in the same batch -> is_final.
    step(r(10, 4), wm_after=9, panes=[P("a", 0, 10, 0, ON_TIME, True, s=3, n=2)]),
    # [0,10) is late now (9 + 0 <= wm 9): the element goes to the late output.
    step(r(9, 8), late=[L(9)], metrics=dict(late_rows=1, accepted_rows=0)),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    doc="element at start, at end-1 and at end; an element at end-1 after the window fired is late", spark=Cut.STEPS)

transcript(
    "tumbling_negative_timestamps", spec(tumbling(10)),
    # -11 -> [-20,-10); -10 and -1 -> [-10,0); -1_000_000_000_005 -> [-1_000_000_000_010, -1_000_000_000_000)
    # (floor-mod, not Java's %). wm = -1 - 1 = -2: both windows with max_ts <= -2 fire.
    step(r(-11, 1), r(-10, 2), r(-1, 4), r(-1_000_000_000_005, 16), wm_after=-2, panes=[
        P("a", -1_000_000_000_010, -1_000_000_000_000, 0, ON_TIME, True, s=16, n=1),
        P("a", -20, -10, 0, ON_TIME, True, s=1, n=1)]),
    # wm = -1 = max_ts of [-10,0)
    step(r(0, 8), wm_after=-1, panes=[P("a", -10, 0, 0, ON_TIME, True, s=6, n=2)]),
    flush([P("a", 0, 10, 0, ON_TIME, True, s=8, n=1)]),
    doc="timestamps before 1970 fall in floor-aligned windows", spark=Cut.STEPS)

transcript(
    "tumbling_positive_offset", spec(tumbling(10, 3)),
    # windows start at 3 mod 10: -8 -> [-17,-7); -7 and 2 -> [-7,3); 3 -> [3,13). wm = 2.
    step(r(-8, 1), r(-7, 2), r(2, 4), r(3, 8), wm_after=2, panes=[
        P("a", -17, -7, 0, ON_TIME, True, s=1, n=1),
        P("a", -7, 3, 0, ON_TIME, True, s=6, n=2)]),
    flush([P("a", 3, 13, 0, ON_TIME, True, s=8, n=1)]),
    invariant=True, doc="offset 3 with negative timestamps", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "tumbling_negative_offset", spec(tumbling("10 ms", "-3 ms")),
    # offset -3: windows start at 7 mod 10: -4 -> [-13,-3); -3 and 6 -> [-3,7); 7 -> [7,17). wm = 6.
    step(r(-4, 1), r(-3, 2), r(6, 4), r(7, 8), wm_after=6, panes=[
        P("a", -13, -3, 0, ON_TIME, True, s=1, n=1),
        P("a", -3, 7, 0, ON_TIME, True, s=6, n=2)]),
    flush([P("a", 7, 17, 0, ON_TIME, True, s=8, n=1)]),
    invariant=True, doc="negative offset (given as duration strings)", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

# -- sliding --------------------------------------------------------------------

transcript(
    "sliding_basic", spec(sliding(10, 5)),
    # 1 -> [-5,5),[0,10); 6 -> [0,10),[5,15); 12 -> [5,15),[10,20). wm = 11.
    step(r(1, 1), r(6, 2), r(12, 4), wm_after=11, panes=[
        P("a", -5, 5, 0, ON_TIME, True, s=1, n=1),
        P("a", 0, 10, 0, ON_TIME, True, s=3, n=2)]),
    # 14 -> [5,15),[10,20); wm = 13 < 14: nothing fires.
    step(r(14, 8), wm_after=13),
    flush([P("a", 5, 15, 0, ON_TIME, True, s=14, n=3),
           P("a", 10, 20, 0, ON_TIME, True, s=12, n=2)]),
    invariant=True, doc="size 10, slide 5: every element in two windows", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "sliding_negative_offset_negative_timestamps", spec(sliding(10, 5, -2)),
    # starts are 3 mod 5: -4 -> [-7,3),[-12,-2); -2 -> [-2,8),[-7,3); 2 -> [-2,8),[-7,3). wm = 1.
    step(r(-4, 1), r(-2, 2), r(2, 4), wm_after=1, panes=[P("a", -12, -2, 0, ON_TIME, True, s=1, n=1)]),
    # 3 -> [3,13),[-2,8); wm = 2 = max_ts of [-7,3).
    step(r(3, 8), wm_after=2, panes=[P("a", -7, 3, 0, ON_TIME, True, s=7, n=3)]),
    flush([P("a", -2, 8, 0, ON_TIME, True, s=14, n=3),
           P("a", 3, 13, 0, ON_TIME, True, s=8, n=1)]),
    invariant=True, doc="sliding windows with offset -2 around zero", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "sliding_gaps_slide_greater_than_size", spec(sliding(5, 10)),
    # windows [0,5), [10,15), [-10,-5): 7 and -3 fall in gaps and are not late -> unassigned.
    step(r(3, 1), r(7, 2), r(12, 4), r(-3, 8), wm_after=11,
         panes=[P("a", 0, 5, 0, ON_TIME, True, s=1, n=1)],
         metrics=dict(accepted_rows=2, unassigned_rows=2, late_rows=0)),
    # wm_start 11: 6 is in a gap and late (6 + 0 <= 11) -> late output; 4's window [0,5) is late
    # -> late output; 19 is in a gap but not late -> unassigned, and it moves wm to 18.
    step(r(6, 16), r(4, 32), r(19, 64), wm_after=18, late=[L(6), L(4)],
         panes=[P("a", 10, 15, 0, ON_TIME, True, s=4, n=1)],
         metrics=dict(accepted_rows=0, unassigned_rows=1, late_rows=2)),
    flush(),
    doc="slide > size: elements in a gap are late output when late, else counted unassigned", spark=Cut.STEPS)

transcript(
    "sliding_element_late_for_one_of_its_windows", spec(sliding(10, 5)),
    step(r(12, 1), wm_after=11),
    # wm_start 11: 7 -> [5,15) (cleanup 14 > 11, kept) and [0,10) (cleanup 9 <= 11, skipped).
    # The element went into one window, so it is accepted and NOT in the late output.
    step(r(7, 2), wm_after=11, metrics=dict(accepted_rows=1, late_rows=0, unassigned_rows=0)),
    flush([P("a", 5, 15, 0, ON_TIME, True, s=3, n=2),
           P("a", 10, 20, 0, ON_TIME, True, s=1, n=1)]),
    doc="late for [0,10) only: counted in [5,15), [0,10) never appears", spark=Cut.STEPS)

transcript(
    "sliding_with_allowed_lateness", spec(sliding(10, 5), lateness=5),
    # 2 -> [-5,5),[0,10); 7 -> [0,10),[5,15); 16 -> [10,20),[15,25). wm = 15.
    # [-5,5) cleanup 9, [0,10) cleanup 14 <= 15: fired and cleaned (final); [5,15) cleanup 19: kept.
    step(r(2, 1), r(7, 2), r(16, 4), wm_after=15, panes=[
        P("a", -5, 5, 0, ON_TIME, True, s=1, n=1),
        P("a", 0, 10, 0, ON_TIME, True, s=3, n=2),
        P("a", 5, 15, 0, ON_TIME, False, s=2, n=1)]),
    # 8 -> [5,15) (LATE pane, accumulating), [0,10) is gone (late). 4 -> both windows late and
    # 4 + 5 <= 15 -> late output.
    step(r(8, 8), r(4, 16), wm_after=15, late=[L(4)],
         panes=[P("a", 5, 15, 1, LATE, False, s=10, n=2)]),
    # [5,15) is cleaned at 19 without a pane; [10,20) and [15,25) fire ON_TIME and are cleaned.
    flush([P("a", 10, 20, 0, ON_TIME, True, s=4, n=1),
           P("a", 15, 25, 0, ON_TIME, True, s=4, n=1)]),
    doc="sliding windows with allowed lateness: a late element refires the windows it is still in", spark=Cut.STEPS)

# -- watermark ------------------------------------------------------------------

transcript(
    "watermark_delay", spec(tumbling(10), delay="5 ms"),
    step(r(3, 1), r(12, 2), wm_after=6),           # wm = 12 - 5 - 1
    step(r(8, 4), wm_after=6),                      # 8 is behind max_seen but not late
    step(r(14, 8), wm_after=8),
    step(r(15, 16), wm_after=9, panes=[P("a", 0, 10, 0, ON_TIME, True, s=5, n=2)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=26, n=3)]),
    invariant=True, doc="bounded out-of-orderness: wm = max_seen - delay - 1", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "explicit_watermark_advances", spec(tumbling(10)),
    step(r(5, 1), wm_after=4),
    # no rows, explicit watermark 9 = max_ts of [0,10): it fires.
    step(wm=9, wm_after=9, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    # an explicit watermark below the current one is ignored; data moves it to 11.
    step(r(12, 2), wm=3, wm_after=11),
    # elements are checked against wm_start = 11, so 11 and 15 are not late although the
    # explicit watermark 25 of the same step is past their window.
    step(r(15, 4), r(11, 8), wm=25, wm_after=25,
         panes=[P("a", 10, 20, 0, ON_TIME, True, s=14, n=3)]),
    # the watermark never goes back (21 - 1 = 20 < 25).
    step(r(21, 16), wm_after=25),
    step(r(19, 32), late=[L(19)], wm_after=25),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=16, n=1)]),
    doc="explicit watermark advances: fire without data, never move back, apply after the batch", spark=Cut.STEPS)

transcript(
    "watermark_is_shared_across_keys", spec(tumbling(10)),
    step(r(2, 1, k="a"), r(4, 2, k="b"), wm_after=3),
    # c's element moves the one watermark of the operator: a's and b's windows fire.
    step(r(13, 4, k="c"), wm_after=12, panes=[
        P("a", 0, 10, 0, ON_TIME, True, s=1, n=1),
        P("b", 0, 10, 0, ON_TIME, True, s=2, n=1)]),
    step(r(8, 8, k="a"), late=[L(8, "a")]),
    flush([P("c", 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    doc="the watermark is per operator, not per key", spark=Cut.STEPS)

transcript(
    "lateness_checked_against_batch_start_watermark", spec(tumbling(10)),
    step(r(1, 1), wm_after=0),
    # 2 arrives with 25 in one batch: wm_start is 0, so 2 is not late; then wm = 24 fires [0,10).
    step(r(25, 2), r(2, 4), wm_after=24, panes=[P("a", 0, 10, 0, ON_TIME, True, s=5, n=2)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=2, n=1)]),
    doc="the micro-batch rule: lateness uses the watermark at the start of the batch",
    spark=Cut.STEPS, delta=Cut.STEPS)

# -- late data and allowed lateness ---------------------------------------------

transcript(
    "late_data_dropped_without_side_output", spec(tumbling(10), late_output=False),
    step(r(1, 1), r(25, 2), wm_after=24, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    # late, no side output configured: counted as dropped, no late row.
    step(r(3, 4), metrics=dict(dropped_late_rows=1, late_rows=0, accepted_rows=0)),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=2, n=1)]),
    doc="no late side output: late rows are counted as dropped", spark=Cut.STEPS)

transcript(
    "allowed_lateness_accumulating", spec(tumbling(10), lateness=10),
    # wm = 11: [0,10) fires ON_TIME; its cleanup is at 9 + 10 = 19, so it is not final.
    step(r(1, 1), r(5, 2), r(12, 4), wm_after=11, panes=[P("a", 0, 10, 0, ON_TIME, False, s=3, n=2)]),
    # late by 4 (within L): a LATE pane carrying the whole window (accumulating).
    step(r(7, 8), wm_after=11, panes=[P("a", 0, 10, 1, LATE, False, s=11, n=3)]),
    # wm = 22: [10,20) fires ON_TIME (cleanup 29: not final); [0,10) is cleaned at 19 with no pane.
    step(r(23, 16), wm_after=22, panes=[P("a", 10, 20, 0, ON_TIME, False, s=4, n=1)]),
    # 3: [0,10) is past cleanup (19 <= 22) -> late output; 15: LATE pane of [10,20).
    step(r(3, 32), r(15, 64), late=[L(3)], panes=[P("a", 10, 20, 1, LATE, False, s=68, n=2)]),
    # [10,20) is cleaned at 29 without a pane; [20,30) fires and is cleaned.
    flush([P("a", 20, 30, 0, ON_TIME, True, s=16, n=1)]),
    doc="allowed lateness: LATE panes until max_ts + L, then the late output", spark=Cut.STEPS)

transcript(
    "allowed_lateness_boundary", spec(tumbling(10), lateness=5),
    step(r(3, 1), r(12, 2), wm_after=11, panes=[P("a", 0, 10, 0, ON_TIME, False, s=1, n=1)]),
    step(r(5, 4), wm_after=11, panes=[P("a", 0, 10, 1, LATE, False, s=5, n=2)]),
    # wm_start 11: accepted; explicit wm 13 < cleanup 14: not final.
    step(r(9, 8), wm=13, wm_after=13, panes=[P("a", 0, 10, 2, LATE, False, s=13, n=3)]),
    # wm_start 13: 9 is late by 4 < L: accepted; wm 14 = cleanup time: the LATE pane is final.
    step(r(9, 16), wm=14, wm_after=14, panes=[P("a", 0, 10, 3, LATE, True, s=29, n=4)]),
    # wm_start 14: 9 is late by exactly L = 5 (9 + 5 <= 14): late output.
    step(r(9, 32), late=[L(9)], metrics=dict(late_rows=1, accepted_rows=0)),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=2, n=1)]),
    doc="late by L - 1 is a LATE pane; late by exactly L goes to the late output", spark=Cut.STEPS)

transcript(
    "several_late_elements_one_late_pane", spec(tumbling(10), lateness=100),
    step(r(1, 1), r(15, 2), wm_after=14, panes=[P("a", 0, 10, 0, ON_TIME, False, s=1, n=1)]),
    # three late elements for [0,10) in one batch: ONE late pane.
    step(r(2, 4), r(3, 8), r(4, 16), panes=[P("a", 0, 10, 1, LATE, False, s=29, n=4)]),
    # [0,10) is cleaned at 109 without a pane; [10,20) fires and is cleaned at 119.
    flush([P("a", 10, 20, 0, ON_TIME, True, s=2, n=1)]),
    doc="accumulating: the LATE pane carries the whole window", spark=Cut.STEPS)

transcript(
    "several_late_elements_one_late_pane_discarding", spec(tumbling(10), lateness=100, mode="discarding"),
    step(r(1, 1), r(15, 2), wm_after=14, panes=[P("a", 0, 10, 0, ON_TIME, False, s=1, n=1)]),
    # discarding: the LATE pane carries only the three late elements.
    step(r(2, 4), r(3, 8), r(4, 16), panes=[P("a", 0, 10, 1, LATE, False, s=28, n=3)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=2, n=1)]),
    doc="discarding (PurgingTrigger): each pane only what arrived since the previous one", spark=Cut.STEPS)

transcript(
    "first_pane_of_a_window_is_late", spec(tumbling(10), lateness=20),
    step(r(25, 1), wm_after=24),
    # [0,10) gets its first elements after wm passed its end (cleanup 29 > 24): pane 0 is LATE.
    step(r(5, 2), r(8, 4), panes=[P("a", 0, 10, 0, LATE, False, s=6, n=2)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=1, n=1)]),
    doc="a window whose first firing is after the watermark: pane_index 0, LATE", spark=Cut.STEPS)

transcript(
    "discarding_flush_emits_nothing_for_purged_windows",
    spec(tumbling(10), lateness=50, mode="discarding"),
    # wm = 10: a's and b's [0,10) fire (purged, kept until cleanup 59).
    step(r(1, 1, k="a"), r(2, 2, k="b"), r(11, 4, k="a"), wm_after=10, panes=[
        P("a", 0, 10, 0, ON_TIME, False, s=1, n=1),
        P("b", 0, 10, 0, ON_TIME, False, s=2, n=1)]),
    # the purged windows are cleaned with nothing to emit; a's [10,20) fires and is cleaned.
    flush([P("a", 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, doc="flush cleans purged windows silently", spark=Cut.STEPS | Cut.THREE)

# -- count triggers on time windows ---------------------------------------------

transcript(
    "count_trigger_on_tumbling_window", spec(tumbling(10), trigger=CountTrigger(2)),
    # 2nd element fires EARLY (max_ts 9 > wm_start); the counter restarts.
    step(r(1, 1), r(2, 2), r(3, 4), wm_after=2, panes=[P("a", 0, 10, 0, EARLY, False, s=3, n=2)]),
    step(r(4, 8), r(6, 16), wm_after=5, panes=[P("a", 0, 10, 1, EARLY, False, s=15, n=4)]),
    # 7 fires (accumulating: 6 elements); 8 starts a new count; 12 moves wm to 11 and [0,10) is
    # cleaned at 9 in this batch: its last pane is final, the pending element 8 is never emitted.
    step(r(7, 32), r(8, 64), r(12, 128), wm_after=11,
         panes=[P("a", 0, 10, 2, EARLY, True, s=63, n=6)]),
    # [10,20) holds one element: the count trigger never fires, cleanup emits nothing.
    flush(),
    doc="CountTrigger replaces the event-time trigger: time only cleans up", spark=Cut.STEPS)

transcript(
    "count_trigger_discarding_with_lateness",
    spec(tumbling(10), trigger=CountTrigger(2), mode="discarding", lateness=10),
    step(r(1, 1), r(2, 2), r(3, 4), r(14, 8), wm_after=13,
         panes=[P("a", 0, 10, 0, EARLY, False, s=3, n=2)]),
    # [0,10) is behind the watermark (9 <= 13) but not past cleanup (19): the count firing is LATE
    # and (discarding) holds 3 and 5 only.
    step(r(5, 16), panes=[P("a", 0, 10, 1, LATE, False, s=20, n=2)]),
    # wm 24: [0,10) cleaned at 19 with one uncounted element; nothing fires.
    step(r(6, 32), r(25, 64), wm_after=24),
    flush(),
    doc="PurgingTrigger(CountTrigger(2)) on a time window with allowed lateness", spark=Cut.STEPS)

# -- count windows and global windows -------------------------------------------

transcript(
    "count_window_tumbling", spec(count=(3,)),
    # sorted by event time: 10(2) 20(4) 30(1) | 40(8) 50(16) 60(32) | 70(64) kept.
    step(r(30, 1), r(10, 2), r(20, 4), r(40, 8), r(50, 16), r(60, 32), r(70, 64), r(35, 1000, k="b"),
         panes=[P("a", None, None, 0, ON_TIME, False, s=7, n=3),
                P("a", None, None, 1, ON_TIME, False, s=56, n=3)],
         metrics=dict(accepted_rows=8)),
    # global windows are never late: 5 counts although the watermark is at 69.
    step(r(5, 128), r(80, 256), panes=[P("a", None, None, 2, ON_TIME, False, s=448, n=3)],
         metrics=dict(accepted_rows=2, late_rows=0)),
    # equal timestamps keep arrival order: 1, 2, 4 fire, 8 is kept.
    step(r(90, 1), r(90, 2), r(90, 4), r(90, 8), panes=[P("a", None, None, 3, ON_TIME, False, s=7, n=3)]),
    # a flush does not end a global window: the remainders (a: 8, b: 1000) are never emitted.
    flush(),
    doc="count_window(3): 7 elements in one batch give two panes of 3 and keep 1", spark=Cut.STEPS)

transcript(
    "count_window_sliding", spec(count=(3, 2)),
    # fire every 2 elements over the last 3: [1,2], then [2,4,8] (1 evicted); 16 waits.
    step(r(1, 1), r(2, 2), r(3, 4), r(4, 8), r(5, 16),
         panes=[P("a", None, None, 0, ON_TIME, False, s=3, n=2),
                P("a", None, None, 1, ON_TIME, False, s=14, n=3)]),
    step(r(6, 32), panes=[P("a", None, None, 2, ON_TIME, False, s=56, n=3)]),
    flush(),
    invariant=True, doc="count_window(3, 2): CountEvictor(3) + CountTrigger(2)",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL, delta=Cut.STEPS | Cut.ONE | Cut.TWO)

transcript(
    "global_window_count_trigger_accumulating", spec(GlobalWindows(), trigger=CountTrigger(2), hi=Max("v"),
                                                     s=Sum("v"), n=Count()),
    step(r(1, 1), r(2, 2, k="a"), r(3, 4, k="b"), r(4, 8),
         panes=[P("a", None, None, 0, ON_TIME, False, hi=2, s=3, n=2)]),
    # no purge: panes carry everything so far.
    step(r(0, 16), r(5, 32, k="b"),
         panes=[P("a", None, None, 1, ON_TIME, False, hi=16, s=27, n=4),
                P("b", None, None, 0, ON_TIME, False, hi=32, s=36, n=2)]),
    flush(),
    invariant=True, doc="GlobalWindows + CountTrigger(2), accumulating",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL, delta=Cut.STEPS)

transcript(
    "global_window_never_fires", spec(GlobalWindows()),
    step(r(1, 1), r(100, 2, k="b"), metrics=dict(accepted_rows=2)),
    step(r(-5, 4), metrics=dict(accepted_rows=1, late_rows=0)),
    flush(),
    invariant=True, doc="GlobalWindows' default trigger never fires, not even on a flush", spark=Cut.STEPS | Cut.THREE)

# -- aggregates -------------------------------------------------------------------

transcript(
    "aggregates_over_two_columns_with_nulls",
    spec(tumbling(10), total=Sum("v"), n=Count(), n_v=Count("v"), lo=Min("v"), hi_w=Max("w"),
         mean_v=Avg("v"), mean_w=Avg("w"), sum_w=Sum("w")),
    step(r(1, 4, w=1.5), r(2, None, w=2.5), r(3, -2, w=None), r(4, 10, w=0.5),
         r(5, None, k="b", w=None)),
    flush([P("a", 0, 10, 0, ON_TIME, True, total=12, n=4, n_v=3, lo=-2, hi_w=2.5, mean_v=4.0,
             mean_w=1.5, sum_w=4.5),
           # every value null: sum/min/max/avg are null, Count() counts the row, Count(v) is 0.
           P("b", 0, 10, 0, ON_TIME, True, total=None, n=1, n_v=0, lo=None, hi_w=None, mean_v=None,
             mean_w=None, sum_w=None)]),
    invariant=True, doc="sum/count/min/max/avg skip nulls; all-null gives null", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "user_aggregates", spec(tumbling(10), lateness=10,
                            wsum=UserAggregate(WeightedSum(), ("v", "w"), "double"),
                            tags=UserAggregate(DistinctCount(), "tag", "bigint"), s=Sum("v")),
    step(r(1, 2, w=0.5, tag="x"), r(3, 4, w=0.25, tag="y"), r(5, None, w=1.0, tag="x"),
         r(12, 1, w=1.0, tag="z"), wm_after=11,
         panes=[P("a", 0, 10, 0, ON_TIME, False, wsum=2.0, tags=2, s=6)]),
    # a LATE pane continues from the kept accumulator.
    step(r(7, 10, w=0.1, tag="w"), panes=[P("a", 0, 10, 1, LATE, False, wsum=3.0, tags=3, s=16)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, wsum=1.0, tags=1, s=1)]),
    doc="UserAggregate over two columns (tuple input) and over one column", spark=Cut.STEPS)

transcript(
    "user_aggregate_panes_are_snapshots",
    spec(tumbling(10), trigger=CountTrigger(2), items=UserAggregate(CollectList(), "v", "array<bigint>")),
    step(r(1, 1), r(2, 2), r(3, 3), panes=[P("a", 0, 10, 0, EARLY, False, items=[1, 2])]),
    step(r(4, 4), r(12, 5), panes=[P("a", 0, 10, 1, EARLY, True, items=[1, 2, 3, 4])]),
    flush(),
    doc="an emitted pane must not change when later elements reach its window", spark=Cut.STEPS)

# -- input hygiene, keys, empty input -------------------------------------------------

transcript(
    "malformed_rows_quarantined", spec(tumbling(10)),
    step(r(1, 1), r(2, 2, k=None), r(None, 4), r(None, 8, k=None), r(3, 16, k="b"), wm_after=2,
         quarantined=[QUARANTINE_NULL_KEY, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY],
         metrics=dict(quarantined_rows=3, accepted_rows=2)),
    flush([P("a", 0, 10, 0, ON_TIME, True, s=1, n=1), P("b", 0, 10, 0, ON_TIME, True, s=16, n=1)]),
    invariant=True, doc="null key or null event time: quarantined, not counted, no watermark effect",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "multi_column_key", spec(tumbling(10), keys=("region", "user")),
    step(dict(region="eu", user="u1", ts=1, v=1), dict(region="eu", user="u2", ts=2, v=2),
         dict(region="us", user="u1", ts=3, v=4), dict(region="eu", user="u1", ts=4, v=8), wm_after=3),
    step(dict(region="us", user="u2", ts=11, v=16), dict(region="eu", user=None, ts=5, v=32),
         quarantined=[QUARANTINE_NULL_KEY], wm_after=10, panes=[
             P(("eu", "u1"), 0, 10, 0, ON_TIME, True, s=9, n=2),
             P(("eu", "u2"), 0, 10, 0, ON_TIME, True, s=2, n=1),
             P(("us", "u1"), 0, 10, 0, ON_TIME, True, s=4, n=1)]),
    flush([P(("us", "u2"), 10, 20, 0, ON_TIME, True, s=16, n=1)]),
    invariant=True, doc="key_by two columns; a null in either key column quarantines the row",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "empty_input", spec(tumbling(10)),
    step(), step(wm=100), flush(),
    invariant=True, doc="no rows at all: no panes, no late rows, metrics all zero",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "empty_batches_keep_state_and_watermark", spec(tumbling(10)),
    step(r(5, 1), wm_after=4),
    step(wm_after=4),
    step(wm_after=4),
    step(r(10, 2), wm_after=9, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=2, n=1)]),
    invariant=True, doc="empty batches change nothing", spark=Cut.STEPS | Cut.THREE)

transcript(
    "out_of_order_within_delay_several_keys", spec(tumbling(10), delay=10),
    step(r(5, 1), r(12, 2, k="b"), r(3, 4), wm_after=1),
    step(r(14, 8), r(9, 16, k="b"), wm_after=3),
    # wm = 21 - 11 = 10: both keys' [0,10) fire.
    step(r(21, 32), r(17, 64, k="b"), wm_after=10, panes=[
        P("a", 0, 10, 0, ON_TIME, True, s=5, n=2),
        P("b", 0, 10, 0, ON_TIME, True, s=16, n=1)]),
    step(r(19, 128), r(25, 256, k="b"), wm_after=14),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=136, n=2),
           P("a", 20, 30, 0, ON_TIME, True, s=32, n=1),
           P("b", 10, 20, 0, ON_TIME, True, s=66, n=2),
           P("b", 20, 30, 0, ON_TIME, True, s=256, n=1)]),
    invariant=True, doc="out of order but within the delay: nothing late however the stream is cut",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL)
