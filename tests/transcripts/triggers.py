"""Transcripts of the built-in triggers with timers and trigger state (the trigger plans of
``windowing/spark/plans/trigger_rules.py``).

Same format and rules as ``basics.py`` / ``model.py`` (this module's ``TRANSCRIPTS``); expected
values worked out BY HAND from the rules below, the reasoning in the comments. They cover what
the older transcripts leave out: counters and timers that carry across batches, continuous
boundaries that fall in different batches, sliding windows, discarding mode, and the processing-
time triggers on event-time windows.

Rules used (windowing/core/triggers.py, reference.py):

* EarlyLateEventTimeTrigger: the first element since the last early firing schedules one at
  ``clock + T``; every early firing (count or timer) clears the early count and that timer;
  late elements (window end behind the watermark at the batch's start) count separately;
* ContinuousEventTimeTrigger: the first element of a window (no pending timer) registers
  ``min(next multiple of the interval after its timestamp, max_ts)``; a firing registers the
  next multiple after the CURRENT watermark (capped at max_ts); several firings in one batch
  give one pane with the last firing's timing;
* ProcessingTimeTrigger on an event-time window: every element registers a processing-time
  timer at the window's max_ts; a firing is EARLY while max_ts is ahead of the watermark,
  else LATE; cleanup is by event time and runs before processing-time timers, so a flush
  cleans these windows without firing;
* ContinuousProcessingTimeTrigger: the first element registers ``min(next multiple after the
  clock, max_ts)``; a firing below max_ts registers the next after the clock;
* ``pt=t``: timers below ``t`` fire before the batch's rows (with the old watermark), timers
  at ``t`` after them.
"""
from __future__ import annotations

from transcripts.build import P, flush, r, sliding, spec, step, transcript_list, tumbling
from transcripts.types import Cut
from windowing.core.records import EARLY, LATE, ON_TIME
from windowing.core.triggers import (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, EventTimeTrigger,
                                     ProcessingTimeTrigger)


TRANSCRIPTS, transcript = transcript_list()

EARLY2_LATE2 = EventTimeTrigger().with_early_firings(every_n_elements=2).with_late_firings(every_n_elements=2)

transcript(
    "early_late_counters_on_sliding_windows_discarding",
    spec(sliding(20, 10), lateness=20, trigger=EARLY2_LATE2, mode="discarding"),
    # [-10,10): 1, 3 -> early count 2: EARLY (purged). [0,20): 1, 3 fire the same way, 12 counts 1.
    # [10,30): 12 counts 1. wm 11: [-10,10) reaches its end: ON_TIME finds no contents (purged): no pane.
    step(r(1, 1), r(3, 2), r(12, 4), wm_after=11, panes=[
        P("a", -10, 10, 0, EARLY, False, s=3, n=2), P("a", 0, 20, 0, EARLY, False, s=3, n=2)]),
    # wm0 11: 5 and 6 are late for [-10,10) (end 9 <= 11, cleanup 29 > 11): late count 2 -> LATE pane of
    # just them. [0,20): early count 1 + (5) = 2 -> EARLY with 12 and 5; 6 counts 1. [10,30): 12 + 25
    # -> EARLY. [20,40): 25 counts 1. wm 24: [0,20) ON_TIME with 6 alone (purged before).
    step(r(5, 8), r(6, 16), r(25, 32), wm_after=24, panes=[
        P("a", -10, 10, 1, LATE, False, s=24, n=2), P("a", 0, 20, 1, EARLY, False, s=12, n=2),
        P("a", 0, 20, 2, ON_TIME, False, s=16, n=1), P("a", 10, 30, 0, EARLY, False, s=36, n=2)]),
    # 7 is late for [-10,10) and [0,20) (both live until 29 / 39): late count 1 each, no firing.
    step(r(7, 64), wm_after=24),
    # flush: [-10,10) and [0,20) are cleaned with their late remainder unfired; [10,30) reaches its end
    # with nothing since its purge; [20,40) fires ON_TIME and is cleaned.
    flush([P("a", 20, 40, 0, ON_TIME, True, s=32, n=1)]),
    doc="early and late counters per sliding window, across batches, discarding panes", spark=Cut.STEPS)

transcript(
    "continuous_event_time_boundaries_in_different_batches",
    spec(tumbling(100), lateness=50, trigger=ContinuousEventTimeTrigger(25)),
    # 10: [0,100) registers min(25, 99) = 25. wm 9.
    step(r(10, 1), wm_after=9),
    # the timer is set: 20 registers nothing. wm 19 < 25.
    step(r(20, 2), wm_after=19),
    # wm 59: 25 fires EARLY; the next boundary after the watermark: 75.
    step(r(60, 4), wm_after=59, panes=[P("a", 0, 100, 0, EARLY, False, s=7, n=3)]),
    # 30 joins [0,100) (timer already set); 140 opens [100,200) with a timer at 150. wm 139: 75 fires
    # (next: min(150, 99) = 99), then 99: one pane, ON_TIME. Cleanup at 149: kept.
    step(r(30, 8), r(140, 16), wm_after=139, panes=[P("a", 0, 100, 1, ON_TIME, False, s=15, n=4)]),
    # 50 is late (99 <= 139) but within lateness: the end timer fires again after the batch: LATE.
    step(r(50, 32), wm_after=139, panes=[P("a", 0, 100, 2, LATE, False, s=47, n=5)]),
    # wm 159: [100,200)'s 150 fires EARLY (next 175); [0,100) is cleaned (149) without a pane.
    step(r(160, 64), wm_after=159, panes=[P("a", 100, 200, 0, EARLY, False, s=80, n=2)]),
    # flush: 175 (EARLY) and 199 (ON_TIME) in one phase: one ON_TIME pane, final.
    flush([P("a", 100, 200, 1, ON_TIME, True, s=80, n=2)]),
    doc="continuous event-time firings whose interval boundaries are crossed by different batches", spark=Cut.STEPS)

transcript(
    "processing_time_trigger_on_event_time_windows",
    spec(tumbling(100), lateness=100, trigger=ProcessingTimeTrigger()),
    # [0,100) registers a processing-time timer at 99; the clock is 50.
    step(r(10, 1), pt=50),
    # pt 99: nothing below 99 is due before the rows; after them 99 fires: EARLY (99 > wm 19).
    step(r(20, 2), pt=99, panes=[P("a", 0, 100, 0, EARLY, False, s=3, n=2)]),
    # 30 registers 99 again, already behind the clock 120: fires after the batch.
    step(r(30, 4), pt=120, panes=[P("a", 0, 100, 1, EARLY, False, s=7, n=3)]),
    # 150 opens [100,200) (timer 199); wm 149 passes [0,100)'s end, cleanup at 199: kept, no firing.
    step(r(150, 8), pt=130, wm_after=149),
    # 40 is late for [0,100) (99 <= 149) but within lateness: its timer 99 <= 140 fires: LATE.
    step(r(40, 16), pt=140, panes=[P("a", 0, 100, 2, LATE, False, s=23, n=4)]),
    # pt 250: [100,200)'s 199 fires before the (empty) batch: EARLY (199 > wm 149).
    step(pt=250, panes=[P("a", 100, 200, 0, EARLY, False, s=8, n=1)]),
    # flush: cleanup (event time) runs before processing-time timers: both windows end without a pane.
    flush(),
    doc="ProcessingTimeTrigger on event-time windows: the clock fires the window's end", spark=Cut.STEPS)

transcript(
    "continuous_processing_time_trigger_on_event_time_windows",
    spec(tumbling(100), trigger=ContinuousProcessingTimeTrigger(30)),
    # clock 5: [0,100) registers min(30, 99) = 30.
    step(r(10, 1), pt=5),
    # pt 30: the timer at 30 is not below 30; after the rows it fires: EARLY (99 > wm 19); next 60.
    step(r(20, 2), pt=30, panes=[P("a", 0, 100, 0, EARLY, False, s=3, n=2)]),
    # pt 100: 60 fires before the (empty) batch; the next, min(120, 99) = 99, is due in the same
    # phase: one EARLY pane; nothing after max_ts.
    step(pt=100, panes=[P("a", 0, 100, 1, EARLY, False, s=3, n=2)]),
    # 50 finds no timer: registers min(120, 99) = 99, behind the clock 110: fires after the rows.
    step(r(50, 4), pt=110, panes=[P("a", 0, 100, 2, EARLY, False, s=7, n=3)]),
    # wm 129 cleans [0,100) (event-time cleanup first); [100,200) registers 120 at clock 115.
    step(r(130, 8), pt=115, wm_after=129),
    # flush: [100,200) is cleaned before its processing-time timer: no pane.
    flush(),
    doc="ContinuousProcessingTimeTrigger on event-time windows", spark=Cut.STEPS)

transcript(
    "early_count_and_interval_firings_restart_each_other",
    spec(tumbling(100), trigger=EventTimeTrigger().with_early_firings(every_n_elements=3, every="10 ms"),
         mode="discarding"),
    # clock 0: 1 schedules an early firing at 10; count 2.
    step(r(1, 1), r(2, 2), pt=0),
    # 3: count 3 -> EARLY (purged), which also cancels the timer at 10: nothing fires at pt 10.
    step(r(3, 4), pt=10, panes=[P("a", 0, 100, 0, EARLY, False, s=7, n=3)]),
    # 4 schedules 12 + 10 = 22; count 1.
    step(r(4, 8), pt=12),
    # 5, 6: count 3 -> EARLY (cancels 22, which would otherwise fire after these rows).
    step(r(5, 16), r(6, 32), pt=22, panes=[P("a", 0, 100, 1, EARLY, False, s=56, n=3)]),
    # 7 schedules 40.
    step(r(7, 64), pt=30),
    # pt 40: 40 is not below 40; after the row it fires: EARLY with 7 and 8 (count cleared).
    step(r(8, 128), pt=40, panes=[P("a", 0, 100, 2, EARLY, False, s=192, n=2)]),
    # 9 schedules 55.
    step(r(9, 256), pt=45),
    # pt 60, no rows: 55 fires before the batch.
    step(pt=60, panes=[P("a", 0, 100, 3, EARLY, False, s=256, n=1)]),
    # 10 schedules 71; 150 opens [100,200) (timer 71). wm 149: [0,100) ON_TIME with 10 alone, cleaned.
    step(r(10, 1024), r(150, 512), pt=61, wm_after=149, panes=[P("a", 0, 100, 4, ON_TIME, True, s=1024, n=1)]),
    # flush: event time first: [100,200) ON_TIME and cleaned (its early timer goes with it).
    flush([P("a", 100, 200, 0, ON_TIME, True, s=512, n=1)]),
    doc="early firings every 3 elements or 10 ms of processing time; each firing restarts both", spark=Cut.STEPS)

transcript(
    "early_count_firings_on_sliding_windows",
    spec(sliding(20, 10), delay=5, trigger=EventTimeTrigger().with_early_firings(every_n_elements=2)),
    # [-10,10) and [0,20): 1, 4 -> EARLY each; 9 counts 1. wm 9 - 6 = 3.
    step(r(1, 1), r(4, 2), r(9, 4), wm_after=3, panes=[
        P("a", -10, 10, 0, EARLY, False, s=3, n=2), P("a", 0, 20, 0, EARLY, False, s=3, n=2)]),
    # [0,20): 9 + 13 -> EARLY (accumulating: all five so far... four: 1, 4, 9, 13); 18 counts 1.
    # [10,30): 13, 18 -> EARLY; 26 counts 1. [20,40): 26 counts 1. wm 20: [-10,10) and [0,20) reach
    # their ends: ON_TIME, cleaned (L = 0).
    step(r(13, 8), r(18, 16), r(26, 32), wm_after=20, panes=[
        P("a", 0, 20, 1, EARLY, False, s=15, n=4), P("a", 10, 30, 0, EARLY, False, s=24, n=2),
        P("a", -10, 10, 1, ON_TIME, True, s=7, n=3), P("a", 0, 20, 2, ON_TIME, True, s=31, n=5)]),
    flush([P("a", 10, 30, 1, ON_TIME, True, s=56, n=3), P("a", 20, 40, 0, ON_TIME, True, s=32, n=1)]),
    invariant=True, doc="early firings every 2 elements on sliding windows; final panes do not depend on cuts",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL)

transcript(
    "continuous_event_time_on_sliding_windows",
    spec(sliding(20, 10), trigger=ContinuousEventTimeTrigger(5)),
    # [-10,10) and [0,20) register 5 (after ts 1). wm 6: both fire EARLY; next: min(10, 9) = 9 and 10.
    step(r(1, 1), r(7, 2), wm_after=6, panes=[
        P("a", -10, 10, 0, EARLY, False, s=3, n=2), P("a", 0, 20, 0, EARLY, False, s=3, n=2)]),
    # [10,30) registers 15, [20,40) 25. wm 20: [-10,10)'s 9 is its end: ON_TIME, cleaned; [0,20): 10
    # fires, then its end 19: one ON_TIME pane, cleaned; [10,30): 15 fires EARLY, next 25.
    step(r(12, 4), r(21, 8), wm_after=20, panes=[
        P("a", -10, 10, 1, ON_TIME, True, s=3, n=2), P("a", 0, 20, 1, ON_TIME, True, s=7, n=3),
        P("a", 10, 30, 0, EARLY, False, s=12, n=2)]),
    # flush: each remaining window's pending timer and its end fire in one phase: one ON_TIME pane.
    flush([P("a", 10, 30, 1, ON_TIME, True, s=12, n=2), P("a", 20, 40, 0, ON_TIME, True, s=8, n=1)]),
    invariant=True, doc="continuous event-time firings on sliding windows; final panes do not depend on cuts",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL, delta=Cut.TWO)
