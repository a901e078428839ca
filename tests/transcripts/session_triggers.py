"""Transcripts of the built-in timer and count triggers on event-time SESSION windows.

Same format and rules as ``basics.py`` / ``triggers.py`` (this module's ``TRANSCRIPTS``); the
expected values were worked out BY HAND from the rules below (the reasoning is in the comments),
then run on the reference model and on the session trigger plans
(windowing/spark/plans/session_window_trigger_plan.py).

Rules used (windowing/core/triggers.py and reference.py, Flink's MergingWindowSet):

* a batch's element windows merge first (with each other and with the key's open sessions);
  windows that intersect OR touch merge; the merged window's state is the merge of its parts';
* ``on_merge``: early and late counters (and CountTrigger's count) ADD; the pending early-firing
  timer and the next continuous firing are the EARLIEST of the parts'; the parts' own timers
  are deleted; an end-of-window timer is registered when the merged window is still ahead of
  the watermark (ProcessingTimeTrigger: ahead of the clock). ``on_merge`` never fires: a merged
  counter at or above n fires with the next element;
* a merged window's pane index continues from the highest of its parts'; its first pane names
  the parts that had emitted panes (``supersedes``);
* processing-time timers due before a batch's rows fire on the sessions as they were, before
  the merge;
* count firings: EARLY when the window's end is ahead of the watermark at the batch's start,
  else LATE; time-driven firings as in ``triggers.py``.
"""
from __future__ import annotations

from transcripts.build import L, P, flush, r, spec, step, transcript_list
from transcripts.types import Cut
from windowing.core.assigners import EventTimeSessionWindows
from windowing.core.records import EARLY, LATE, ON_TIME
from windowing.core.triggers import (ContinuousEventTimeTrigger, CountTrigger, EventTimeTrigger, NeverTrigger,
                                     ProcessingTimeTrigger)


TRANSCRIPTS, transcript = transcript_list()


def session(gap):
    return EventTimeSessionWindows.with_gap(gap)


transcript(
    "session_early_counters_add_on_merge",
    spec(session(10), delay=100, trigger=EventTimeTrigger().with_early_firings(every_n_elements=3)),
    # delay 100: the watermark (max ts - 101) stays far behind. [0,10) and [20,30): early count 1 each.
    step(r(0, 1), r(20, 2), wm_after=-81),
    # 2 -> [2,12) extends [0,10) to [0,12): count 1 (merged) + 1 = 2, no firing.
    step(r(2, 4), wm_after=-81),
    # 11 -> [11,21) bridges [0,12) and [20,30) (touching at 20 merges): [0,30), count 2 + 1 = 3 from
    # on_merge (no firing there); the element makes 4 >= 3: EARLY with all four, counter 0.
    step(r(11, 8), wm_after=-81, panes=[P("a", 0, 30, 0, EARLY, False, s=15, n=4)]),
    # 40 and 41 merge into [40,51) within the batch: count 2.
    step(r(40, 16), r(41, 32), wm_after=-60),
    flush([P("a", 0, 30, 1, ON_TIME, True, s=15, n=4), P("a", 40, 51, 0, ON_TIME, True, s=48, n=2)]),
    invariant=True, doc="early counts of sessions add up when a bridging element merges them",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL)

transcript(
    "session_late_bridge_with_late_firings_every_2",
    spec(session(10), lateness=100,
         trigger=EventTimeTrigger().with_early_firings(every_n_elements=2).with_late_firings(every_n_elements=2)),
    # 0 and 3 merge into [0,13) in the batch: 2 elements -> EARLY. wm 2.
    step(r(0, 1), r(3, 2), wm_after=2, panes=[P("a", 0, 13, 0, EARLY, False, s=3, n=2)]),
    # wm 59: [0,13) and [20,30) reach their ends: ON_TIME (cleanup 112, 129: kept); their early
    # counters are cleared. [60,70) waits.
    step(r(20, 4), r(60, 8), wm_after=59, panes=[
        P("a", 0, 13, 1, ON_TIME, False, s=3, n=2), P("a", 20, 30, 0, ON_TIME, False, s=4, n=1)]),
    # 11 -> [11,21) bridges both: [0,30), end 29 behind the watermark: a late element for it (cleanup
    # 129 > 59: not dropped). Late counters 0 + 0, the element makes 1 < 2: no pane. The merged
    # window keeps pane index max(2, 1) = 2 and supersedes both parts (both emitted).
    step(r(11, 16), wm_after=59),
    # 25 -> [25,35) extends it to [0,35) (still behind the watermark): late count 1 + 1 = 2: LATE,
    # the merged window's first pane: supersedes the two ([0,30) itself never emitted).
    step(r(25, 32), wm_after=59, panes=[P("a", 0, 35, 2, LATE, False, supersedes=[(0, 13), (20, 30)], s=55, n=5)]),
    # 5 falls inside [0,35): late count 1, no pane.
    step(r(5, 64), wm_after=59),
    # flush: [0,35) has no end timer (late firings are by count) and its late count is 1: cleaned
    # without a pane; [60,70) ON_TIME.
    flush([P("a", 60, 70, 0, ON_TIME, True, s=8, n=1)]),
    doc="a late element bridges two fired sessions; late firings every 2 late elements count across merges",
    spark=Cut.STEPS)

transcript(
    "session_early_firings_discarding_across_a_merge",
    spec(session(10), delay=100, trigger=EventTimeTrigger().with_early_firings(every_n_elements=2), mode="discarding"),
    # 0 and 1 -> [0,11): 2 elements -> EARLY, purged. [20,30): count 1.
    step(r(0, 1), r(1, 2), r(20, 4), wm_after=-81, panes=[P("a", 0, 11, 0, EARLY, False, s=3, n=2)]),
    # 10 -> [10,20) overlaps [0,11) and touches [20,30): [0,30). Counts 0 + 1, the element makes 2:
    # EARLY with what was not purged (20) and 10; pane index max(1, 0) = 1; supersedes [0,11).
    step(r(10, 8), wm_after=-81, panes=[P("a", 0, 30, 1, EARLY, False, supersedes=[(0, 11)], s=12, n=2)]),
    # 5 inside [0,30): count 1.
    step(r(5, 16), wm_after=-81),
    flush([P("a", 0, 30, 2, ON_TIME, True, s=16, n=1)]),
    doc="discarding early firings on sessions: a merge keeps only what was not purged", spark=Cut.STEPS)

transcript(
    "session_early_timer_is_the_earliest_of_the_parts",
    spec(session(10), delay=100, trigger=EventTimeTrigger().with_early_firings(every="10 ms")),
    # clock 0: [0,10) schedules an early firing at 10.
    step(r(0, 1), pt=0),
    # clock 5: [20,30) schedules 15.
    step(r(20, 2), pt=5),
    # 10 bridges them: [0,30) takes the earliest timer, 10; the parts' timers are deleted.
    step(r(10, 4), pt=8),
    # pt 12: 10 fires before the (empty) batch: EARLY, nothing superseded (no part had emitted).
    step(pt=12, panes=[P("a", 0, 30, 0, EARLY, False, s=7, n=3)]),
    # pt 20: 15 belonged to a merged-away window: nothing fires.
    step(pt=20),
    # 25 -> [25,35) extends the session to [0,35); its timer was cleared by the firing: 25 schedules 31.
    step(r(25, 8), pt=21),
    # flush: the end fires ON_TIME (and cancels 31); [0,35)'s first pane supersedes [0,30).
    flush([P("a", 0, 35, 1, ON_TIME, True, supersedes=[(0, 30)], s=15, n=4)]),
    doc="a merged session's early-firing timer is the earliest of its parts'", spark=Cut.STEPS)

transcript(
    "session_continuous_event_time_while_it_grows",
    spec(session(10), trigger=ContinuousEventTimeTrigger(5)),
    # [1,11): next firing min(5, 10) = 5. wm 0.
    step(r(1, 1), wm_after=0),
    # 7 -> [1,17): on_merge keeps 5 (and the end timer 16). wm 6: 5 fires EARLY; next after the
    # watermark: 10.
    step(r(7, 2), wm_after=6, panes=[P("a", 1, 17, 0, EARLY, False, s=3, n=2)]),
    # 12 -> [1,22), next firing 10. wm 11: 10 fires EARLY (next 15); supersedes [1,17), which emitted.
    step(r(12, 4), wm_after=11, panes=[P("a", 1, 22, 1, EARLY, False, supersedes=[(1, 17)], s=7, n=3)]),
    # 30 opens [30,40) (next firing 35). wm 29: [1,22)'s 15 fires, the next, min(30, 21) = 21, is its
    # end, due in the same phase: one ON_TIME pane; cleaned (L = 0): final.
    step(r(30, 8), wm_after=29, panes=[P("a", 1, 22, 2, ON_TIME, True, s=7, n=3)]),
    flush([P("a", 30, 40, 0, ON_TIME, True, s=8, n=1)]),
    doc="continuous event-time firings on a session that grows across batches", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "session_count_trigger_counts_add_on_merge",
    spec(session(10), delay=100, trigger=CountTrigger(3)),
    # [0,11) and [20,31): 2 elements each, no firing.
    step(r(0, 1), r(1, 2), r(20, 4), r(21, 8), wm_after=-80),
    # 10 -> [10,20) bridges both: [0,31), count 2 + 2 = 4 (on_merge does not fire); the element
    # makes 5 >= 3: EARLY with all five, counter 0.
    step(r(10, 16), wm_after=-80, panes=[P("a", 0, 31, 0, EARLY, False, s=31, n=5)]),
    # 2 and 3 inside: count 2.
    step(r(2, 32), r(3, 64), wm_after=-80),
    # 4: count 3: EARLY.
    step(r(4, 128), wm_after=-80, panes=[P("a", 0, 31, 1, EARLY, False, s=255, n=8)]),
    # flush: time never fires a count trigger: cleaned without a pane.
    flush(),
    doc="CountTrigger on sessions: counts add on merge, a merged count at n fires with the next element",
    spark=Cut.STEPS)

transcript(
    "session_processing_time_trigger",
    spec(session(10), lateness=100, trigger=ProcessingTimeTrigger()),
    # [100,110): processing-time timer at 109; clock 10.
    step(r(100, 1), pt=10),
    # 105 -> [100,115): on_merge registers 114 (ahead of the clock); 109 goes with [100,110).
    step(r(105, 2), pt=20),
    # pt 112: nothing below 112 is pending (109 was deleted).
    step(pt=112),
    # pt 120: 114 fires before the rows: EARLY (114 > wm 104). 130 opens [130,140); wm 129.
    step(r(130, 4), pt=120, panes=[P("a", 100, 115, 0, EARLY, False, s=3, n=2)]),
    # 110 -> [110,120) extends [100,115) to [100,120), behind the watermark (late but within
    # lateness); the element registers 119, behind the clock: fires after the rows: LATE.
    step(r(110, 8), pt=125, panes=[P("a", 100, 120, 1, LATE, False, supersedes=[(100, 115)], s=11, n=3)]),
    # flush: event-time cleanup runs before processing-time timers: both sessions end without a pane.
    flush(),
    doc="ProcessingTimeTrigger on event-time sessions: merged-away timers are deleted",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "never_trigger_on_sessions_cleans_without_firing",
    spec(session(10), lateness=5, trigger=NeverTrigger()),
    # 0 and 3 merge into [0,13); nothing fires. wm 3 - 1 = 2.
    step(r(0, 1), r(3, 2), wm_after=2, metrics=dict(accepted_rows=2)),
    # 30 opens [30,40). wm 29 passes [0,13)'s cleanup time 12 + 5 = 17: cleaned without a pane.
    step(r(30, 4), wm_after=29, metrics=dict(accepted_rows=1)),
    # 5 opens [5,15) alone ([0,13) is gone): its cleanup time 14 + 5 = 19 is behind the watermark at
    # the start of the batch (29): late. 25 opens [25,35), which merges with [30,40) into [25,40)
    # (cleanup 44): accepted. The watermark stays at 29.
    step(r(5, 8), r(25, 16), wm_after=29, late=[L(5)], metrics=dict(accepted_rows=1, late_rows=1)),
    # flush: [25,40) is cleaned at +infinity without a pane.
    flush(),
    doc="NeverTrigger on event-time sessions: sessions merge and are cleaned, nothing fires",
    spark=Cut.STEPS)

SESSION_TRIGGER_TRANSCRIPTS = [
    "session_early_counters_add_on_merge", "session_late_bridge_with_late_firings_every_2",
    "session_early_firings_discarding_across_a_merge", "session_early_timer_is_the_earliest_of_the_parts",
    "session_continuous_event_time_while_it_grows", "session_count_trigger_counts_add_on_merge",
    "session_processing_time_trigger", "session_early_firings_and_late_bridge"]
"""Every session transcript a session trigger plan runs (the last one is in model.py)."""
