"""Transcripts of the built-in triggers on processing-time windows and sessions (not ProcessingTimeTrigger).

Same format and rules as ``basics.py`` / ``model.py`` (this module's ``TRANSCRIPTS``); the
expected values were worked out BY HAND from the rules below (the reasoning is in the comments),
then run on the reference model, the processing-time trigger plans
(windowing/spark/plans/processing_time_trigger_plan.py) and the per-key path.

Rules used (windowing/core/reference.py, triggers.py):

* an element's timestamp is its processing time: its ingestion time (a backfill) or the
  processing time of its batch (``step(..., pt=t)``); rows of a batch are taken in (processing
  time, arrival) order;
* the window is cleaned when the clock reaches its ``max_ts`` (a processing-time timer, in time
  order with the trigger's timers). A CountTrigger never fires on it: a partial count is dropped;
* CountTrigger(n) fires every n elements of the window (exact inside a batch); the pane is EARLY
  while ``max_ts`` is after the clock as the rows arrive (the batch's processing time, or the
  clock before the batch when it brings none), else ON_TIME;
* ContinuousProcessingTimeTrigger(i): the first element registers a timer at the next multiple of
  i after the clock, capped at ``max_ts``; each firing registers the next one after the clock
  (capped), so the last firing coincides with the cleanup: one pane. A timer firing is ON_TIME
  when it is at ``max_ts`` or the clock has passed ``max_ts``, else EARLY;
* phases of a batch that moves the clock: the timers strictly below the batch's EARLIEST
  processing time fire first (at most one pane per window), then the rows, then the clock moves
  to the latest processing time and every timer at or below it fires (at most one pane);
* a row whose every window has ``max_ts`` at or below the clock after the first phase is late,
  reason ``processing_time_window_already_fired``; a sliding row whose SOME windows closed joins
  the others;
* DeltaTrigger(t) remembers the window's first element and fires on an element whose value is
  more than t away from the remembered one (which it then becomes); timing as a count firing;
* EventTimeTrigger: each element registers an event-time timer at ``max_ts``, which fires when the
  watermark (from the event times) reaches it, after the rows and before the clock's cleanup of
  the same phase; the firing is EARLY or ON_TIME by the clock like any other;
* EarlyLateEventTimeTrigger: an element of a window whose ``max_ts`` is after the watermark at the
  start of the batch registers the end timer (event time), counts towards the early count (a
  firing restarts the early timer) and, when no early timer is pending, registers one at the
  clock as the rows arrive plus the interval (processing time). That timer fires (EARLY, the
  early count restarts) unless the watermark passed ``max_ts`` by then; it is ordered with the
  clock's cleanup timer at ``max_ts``: one after ``max_ts`` never fires (the window is gone), one
  AT ``max_ts`` is the cleanup timer itself (it fires, ON_TIME, then the window is cleaned). An
  element of a window whose ``max_ts`` the watermark has passed is late for the trigger: every
  ``late_every_n`` of them fire it (a count firing, timing by the clock; never LATE);
* ContinuousEventTimeTrigger(i): an element registers the end timer and, when no timer of the
  window is pending and its ``max_ts`` is after the watermark, one at the next multiple of i after
  the element's timestamp (its processing time), capped at ``max_ts``; the watermark fires them
  after the rows (each firing registers the next multiple after the watermark, capped); the
  clock's cleanup before the rows takes pending event-time timers away with the window;
* ``is_final``: the window's last pane in the batch that cleans it;
* sessions: a row opens ``[pt, pt + gap)``; the batch's windows and the open sessions that
  intersect or touch merge first (counters add, the earliest pending timer stays, the pane index
  continues from the highest part, a pane names the parts that had emitted as ``supersedes``);
  a session the clock closes before the rows is not there to merge with.
"""
from __future__ import annotations

from transcripts.build import P, flush, r, spec, step, transcript_list
from transcripts.processing_sessions import replayed_late
from transcripts.types import Cut
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import (ProcessingTimeSessionWindows, SlidingProcessingTimeWindows,
                                      TumblingProcessingTimeWindows)
from windowing.core.records import EARLY, ON_TIME
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger,
                                     DeltaTrigger, EarlyLateEventTimeTrigger, EventTimeTrigger, PurgingTrigger)


TRANSCRIPTS, transcript = transcript_list()


def by_ingestion(window, trigger):
    """Keyed by ``k``, processing time from the ``ingest`` column (event time ``ts`` is ignored)."""
    return (WindowSpecBuilder().key_by("k").event_time("ts").processing_time("ingest").window(window)
            .trigger(trigger).side_output_late_data(True).aggregate(s=Sum("v"), n=Count()))

PROCESSING_TRIGGER_TRANSCRIPTS = {
    "count_trigger_on_processing_time_tumbling_windows": "processing_time_count",
    "purging_count_trigger_on_processing_time_sliding_windows": "processing_time_count",
    "count_trigger_on_processing_time_windows_in_a_backfill": "processing_time_count",
    "continuous_processing_time_trigger_on_processing_time_tumbling_windows": "processing_time_continuous",
    "purging_continuous_trigger_on_sliding_windows_with_replayed_rows": "processing_time_continuous",
    "continuous_processing_time_trigger_in_a_backfill_by_ingestion_time": "processing_time_continuous",
    "delta_trigger_on_processing_time_tumbling_windows": "processing_time_delta",
    "event_time_trigger_on_processing_time_windows": "processing_time_event_time",
    "early_late_trigger_on_processing_time_tumbling_windows": "processing_time_early_late",
    "purging_continuous_event_time_trigger_on_processing_time_sliding_windows":
        "processing_time_continuous_event_time",
    "early_firing_timer_at_the_cleanup_time_of_a_processing_time_window": "processing_time_early_late",
    "event_time_trigger_on_processing_time_sessions": "processing_time_session_event_time",
    "purging_early_late_trigger_on_processing_time_sessions": "processing_time_session_early_late",
    "count_trigger_on_processing_time_sessions": "processing_time_session_count",
    "purging_continuous_trigger_on_processing_time_sessions_with_a_gap_column": "processing_time_session_continuous",
}
"""Transcript name -> the plan kind it runs on."""

transcript(
    "count_trigger_on_processing_time_tumbling_windows",
    spec(TumblingProcessingTimeWindows.of(10), trigger=CountTrigger(2)),
    # pt 3: every row is in [0,10) (event times ignored). a: 1, 2 fire (s 3, n 2), EARLY (max_ts 9 is
    # after the clock 3); 4 waits. b: 5 waits.
    step(r(100, 1), r(7, 2), r(50, 4), r(1, 5, k="b"), pt=3,
         panes=[P("a", 0, 10, 0, EARLY, False, s=3, n=2)], metrics=dict(accepted_rows=4)),
    # pt 9: a's 8 is its window's 2nd element since the firing: pane 1 with everything (accumulating),
    # ON_TIME (max_ts 9 is not after the clock 9). After the row the clock 9 reaches max_ts 9: both
    # windows are cleaned (b's partial count of 1 is dropped): a's pane is final.
    step(r(0, 8), pt=9, panes=[P("a", 0, 10, 1, ON_TIME, True, s=15, n=4)], metrics=dict(windows_cleaned=2)),
    # pt 15: [10,20): 16, 32 fire (EARLY); 64 waits.
    step(r(0, 16), r(0, 32), r(0, 64), pt=15, panes=[P("a", 10, 20, 0, EARLY, False, s=48, n=2)]),
    # pt 25: the cleanup timer at 19 fires before the batch (no rows): no pane, the 64 is dropped.
    step(pt=25, metrics=dict(windows_cleaned=1)),
    flush(),
    doc="CountTrigger(2) on processing-time tumbling windows: exact firings, cleanup by the clock", spark=Cut.STEPS)

transcript(
    "purging_count_trigger_on_processing_time_sliding_windows",
    spec(SlidingProcessingTimeWindows.of(10, 5), trigger=PurgingTrigger(CountTrigger(2))),
    # pt 7: windows [0,10) and [5,15), one element each.
    step(r(0, 1), pt=7),
    # pt 12: [0,10) is cleaned before the rows (max_ts 9 < 12), its 1 dropped. The rows join [5,15)
    # and [10,20): [5,15) fires at the 2 (s 1 + 2, purged; EARLY: 14 > 12), then holds 4; [10,20)
    # fires at the 4 (s 6).
    step(r(0, 2), r(0, 4), pt=12, panes=[P("a", 5, 15, 0, EARLY, False, s=3, n=2),
                                         P("a", 10, 20, 0, EARLY, False, s=6, n=2)],
         metrics=dict(windows_cleaned=1)),
    # pt 19: [5,15) is cleaned before the (empty) batch (its 4 dropped), [10,20) after it (empty).
    step(pt=19, metrics=dict(windows_cleaned=2)),
    flush(),
    doc="discarding CountTrigger(2) on processing-time sliding windows", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "count_trigger_on_processing_time_windows_in_a_backfill",
    by_ingestion(TumblingProcessingTimeWindows.of(50), CountTrigger(2)),
    # one batch with no clock of its own (the clock before it: -infinity): in ingestion order a's
    # 1, 4 fire (s 5), then 8, 32 (s 45, accumulating); b's 2, 16 fire (s 18), 64 waits. Every firing
    # is EARLY (max_ts 49 is after the clock) and no window closes before the flush (the clock ends
    # at 21), which drops b's 64: any cut in ingestion order gives these final panes.
    step(r(0, 1, ingest=1), r(0, 2, k="b", ingest=2), r(0, 4, ingest=3), r(0, 8, ingest=5),
         r(0, 16, k="b", ingest=8), r(0, 32, ingest=13), r(0, 64, k="b", ingest=21),
         panes=[P("a", 0, 50, 0, EARLY, False, s=5, n=2), P("a", 0, 50, 1, EARLY, False, s=45, n=4),
                P("b", 0, 50, 0, EARLY, False, s=18, n=2)]),
    flush(metrics=dict(windows_cleaned=2)),
    invariant=True, doc="a backfill: CountTrigger(2) on processing-time windows by recorded ingestion time",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.THREE | Cut.ALL)

transcript(
    "continuous_processing_time_trigger_on_processing_time_tumbling_windows",
    spec(TumblingProcessingTimeWindows.of(20), trigger=ContinuousProcessingTimeTrigger(5)),
    # pt 2: [0,20); the first element registers a timer at 5 (next multiple of 5 after 2).
    step(r(0, 1), pt=2),
    # pt 6: the timer at 5 fires before the row (pane 0, s 1, EARLY: 5 < max_ts 19 > clock 5) and
    # registers 10; then the row joins.
    step(r(0, 2), pt=6, panes=[P("a", 0, 20, 0, EARLY, False, s=1, n=1)]),
    # pt 13: the timer at 10 fires before the batch (s 3, EARLY) and registers the next multiple
    # after the clock 12: 15.
    step(pt=13, panes=[P("a", 0, 20, 1, EARLY, False, s=3, n=2)]),
    # pt 40: before the row the clock goes to 39: the timer at 15 fires (ON_TIME: max_ts 19 is behind
    # the clock), registers min(40, 19) = 19, which fires in the same phase (one pane) with the cleanup:
    # final. The row opens [40,60) with a timer at 45.
    step(r(0, 4), pt=40, panes=[P("a", 0, 20, 2, ON_TIME, True, s=3, n=2)], metrics=dict(windows_cleaned=1)),
    # the flush: the clock at +infinity: the timer at 45 fires ON_TIME, the window is cleaned.
    flush([P("a", 40, 60, 0, ON_TIME, True, s=4, n=1)]),
    doc="ContinuousProcessingTimeTrigger(5) on processing-time tumbling windows", spark=Cut.STEPS)

transcript(
    "purging_continuous_trigger_on_sliding_windows_with_replayed_rows",
    by_ingestion(SlidingProcessingTimeWindows.of(10, 5), PurgingTrigger(ContinuousProcessingTimeTrigger(4))),
    # pt 6, rows ingested at 1 ([-5,5), [0,10)) and 6 ([0,10), [5,15)). Nothing is due before 1.
    # Timers: the next multiple of 4 after the clock 6 is 8, capped at max_ts: [-5,5) at 4, the
    # others at 8. The clock ends at 6: [-5,5) fires at 4 = its max_ts (ON_TIME) and is cleaned.
    step(r(0, 1, ingest=1), r(0, 2, ingest=6), pt=6, panes=[P("a", -5, 5, 0, ON_TIME, True, s=1, n=1)],
         metrics=dict(windows_cleaned=1)),
    # pt 20, rows ingested at 3 and 12: nothing is due below 7 (the clock stays 6), so the 3 joins
    # [0,10) ([-5,5) is closed for it); the 12 joins [5,15) and [10,20) (timer: min(24, 19) = 19).
    # The clock ends at 20: [0,10) fires at 8 (s 1 + 2 + 4; ON_TIME: 9 is behind the clock) and its
    # max_ts 9 fires in the same phase, purged (one pane); [5,15) fires at 8 (s 10), [10,20) at 19.
    step(r(0, 4, ingest=3), r(0, 8, ingest=12), pt=20,
         panes=[P("a", 0, 10, 0, ON_TIME, True, s=7, n=3), P("a", 5, 15, 0, ON_TIME, True, s=10, n=2),
                P("a", 10, 20, 0, ON_TIME, True, s=8, n=1)], metrics=dict(windows_cleaned=3)),
    # pt 30, rows ingested at 14 and 25: the 14's windows [5,15) and [10,20) end at or below the clock
    # 20: late. The 25 opens [20,30) (timer 29 = its max_ts) and [25,35) (timer 32); the clock ends
    # at 30: [20,30) fires and is cleaned.
    step(r(0, 16, ingest=14), r(0, 32, ingest=25), pt=30, late=[replayed_late(14)],
         panes=[P("a", 20, 30, 0, ON_TIME, True, s=32, n=1)]),
    flush([P("a", 25, 35, 0, ON_TIME, True, s=32, n=1)]),
    doc="discarding ContinuousProcessingTimeTrigger(4) on processing-time sliding windows, with "
        "replayed ingestion times: one older than the batch joins its open window, one older than "
        "an earlier batch's clock is late", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "continuous_processing_time_trigger_in_a_backfill_by_ingestion_time",
    by_ingestion(TumblingProcessingTimeWindows.of(10), ContinuousProcessingTimeTrigger(4)),
    # one batch, no clock of its own: the first element of each window registers its first timer
    # at once (the clock is -infinity), each firing the next one after the clock (capped at max_ts),
    # so every window's last firing is at its max_ts, with all its rows: ON_TIME and final. The
    # clock ends at 17: [0,10) closes (s 1 + 2 + 4); [10,20) waits for the flush. The final panes
    # do not depend on the cut (ingestion times increase: no row is late).
    step(r(0, 1, ingest=1), r(0, 32, k="b", ingest=3), r(0, 2, ingest=4), r(0, 4, ingest=9),
         r(0, 8, ingest=11), r(0, 16, ingest=17),
         panes=[P("a", 0, 10, 0, ON_TIME, True, s=7, n=3), P("b", 0, 10, 0, ON_TIME, True, s=32, n=1),
                P("a", 10, 20, 0, EARLY, False, s=24, n=2)]),
    flush([P("a", 10, 20, 1, ON_TIME, True, s=24, n=2)]),
    invariant=True, doc="a backfill: ContinuousProcessingTimeTrigger(4) on processing-time windows by "
                        "recorded ingestion time", spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.THREE | Cut.ALL)

transcript(
    "count_trigger_on_processing_time_sessions",
    spec(ProcessingTimeSessionWindows.with_gap(10), trigger=CountTrigger(2)),
    # pt 0: a [0,10) and b [0,10), one element each.
    step(r(0, 1), r(0, 2, k="b"), pt=0),
    # pt 6: a's [6,16) merges with [0,10) -> [0,16); the counts add (1), the row makes 2: it fires
    # (s 5, EARLY: max_ts 15 is after the clock 6).
    step(r(0, 4), pt=6, panes=[P("a", 0, 16, 0, EARLY, False, s=5, n=2)]),
    # pt 12: b's [0,10) is cleaned before the rows (max_ts 9 < 12), its 1 dropped; b's row opens a
    # new [12,22). a's [12,22) extends [0,16) to [0,22) (count 1).
    step(r(0, 8), r(0, 16, k="b"), pt=12, metrics=dict(windows_cleaned=1)),
    # pt 18: a's [18,28) extends it to [0,28), count 2: fires pane 1 with everything (accumulating);
    # it supersedes [0,16), which had emitted pane 0.
    step(r(0, 32), pt=18, panes=[P("a", 0, 28, 1, EARLY, False, supersedes=[(0, 16)], s=45, n=4)]),
    # pt 40: both sessions are cleaned before the (empty) batch; b's partial count is dropped.
    step(pt=40, metrics=dict(windows_cleaned=2)),
    flush(),
    doc="CountTrigger(2) on processing-time sessions: counters add on merge, cleanup by the clock",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "purging_continuous_trigger_on_processing_time_sessions_with_a_gap_column",
    spec(ProcessingTimeSessionWindows.with_dynamic_gap("g"),
         trigger=PurgingTrigger(ContinuousProcessingTimeTrigger(5))),
    # pt 1: [1,11), timer at 5.
    step(r(0, 1, g=10), pt=1),
    # pt 7: the timer at 5 fires before the row (s 1, EARLY, purged) and registers min(10, max_ts 10);
    # the row's [7,10) lies inside [1,11): nothing is extended.
    step(r(0, 2, g=3), pt=7, panes=[P("a", 1, 11, 0, EARLY, False, s=1, n=1)]),
    # pt 20: before the row the timer at 10 = max_ts fires (s 2, ON_TIME) with the cleanup: final.
    # The row opens [20,25), timer min(25, 24) = 24.
    step(r(0, 4, g=5), pt=20, panes=[P("a", 1, 11, 1, ON_TIME, True, s=2, n=1)], metrics=dict(windows_cleaned=1)),
    # pt 23: [23,33) merges with [20,25) -> [20,33); the pending timer 24 carries over.
    step(r(0, 8, g=10), pt=23),
    # pt 30: the timer at 24 fires before the batch (s 12, EARLY: max_ts 32 > clock 29, purged) and
    # registers 30, which fires after it with nothing in the window: no pane; next: min(35, 32).
    step(pt=30, panes=[P("a", 20, 33, 0, EARLY, False, s=12, n=2)]),
    # the flush: the timer at 32 fires on an empty window (no pane), the session is cleaned.
    flush(metrics=dict(windows_cleaned=1)),
    doc="discarding ContinuousProcessingTimeTrigger(5) on processing-time sessions with the gap from a column",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "delta_trigger_on_processing_time_tumbling_windows",
    spec(TumblingProcessingTimeWindows.of(10), trigger=DeltaTrigger(2, value_column="v")),
    # pt 3: [0,10) remembers 1; 2 is 1 away (no); 5 is 4 away: fires (s 8, EARLY: 9 > clock 3) and is
    # remembered.
    step(r(0, 1), r(0, 2), r(0, 5), pt=3, panes=[P("a", 0, 10, 0, EARLY, False, s=8, n=3)]),
    # pt 9: 6 is 1 away from 5 (no), 9 is 4 away: fires (s 23, ON_TIME: max_ts 9 is not after the clock 9);
    # the clock reaches max_ts 9 after the rows: cleaned, the pane is final.
    step(r(0, 6), r(0, 9), pt=9, panes=[P("a", 0, 10, 1, ON_TIME, True, s=23, n=5)],
         metrics=dict(windows_cleaned=1)),
    # pt 12: [10,20) remembers 1; pt 25 cleans it before the (empty) batch with no pane.
    step(r(0, 1), pt=12),
    step(pt=25, metrics=dict(windows_cleaned=1)),
    flush(),
    doc="DeltaTrigger(2) with the built-in AbsoluteDifference on processing-time tumbling windows",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "event_time_trigger_on_processing_time_windows",
    spec(TumblingProcessingTimeWindows.of(10), trigger=EventTimeTrigger()),
    # pt 2: both rows in [0,10) (by processing time); event timer at 9; the watermark 5 - 1 = 4 < 9.
    step(r(5, 1), r(3, 2), pt=2, wm_after=4),
    # pt 6: the row joins; the watermark 19 reaches the timer at 9: fires (s 7), EARLY: max_ts 9 is
    # after the clock 6.
    step(r(20, 4), pt=6, wm_after=19, panes=[P("a", 0, 10, 0, EARLY, False, s=7, n=3)]),
    # pt 8: the row registers the timer at 9 again, the watermark 20 is past it: pane 1 (accumulating).
    step(r(21, 8), pt=8, wm_after=20, panes=[P("a", 0, 10, 1, EARLY, False, s=15, n=4)]),
    # pt 15: the clock cleans [0,10) before the row (no pane: its timer fired already). The row opens
    # [10,20), whose timer at 19 the watermark (20) has passed: fires EARLY (19 > clock 15).
    step(r(0, 16), pt=15, wm_after=20, panes=[P("a", 10, 20, 0, EARLY, False, s=16, n=1)],
         metrics=dict(windows_cleaned=1)),
    # pt 30: [10,20) is cleaned before the row; the row opens [30,40) (timer 39 > watermark 20).
    step(r(0, 32), pt=30, metrics=dict(windows_cleaned=1)),
    # the flush: the watermark reaches 39 first (event-time timers before processing-time ones):
    # ON_TIME (the clock is past max_ts), then the cleanup: final.
    flush([P("a", 30, 40, 0, ON_TIME, True, s=32, n=1)]),
    doc="the plain EventTimeTrigger on processing-time windows: the watermark fires, the clock cleans",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "early_late_trigger_on_processing_time_tumbling_windows",
    spec(TumblingProcessingTimeWindows.of(20),
         trigger=EarlyLateEventTimeTrigger(early_every_n=3, early_interval_ms=6, late_every_n=2)),
    # pt 2: both rows in [0,20) (by processing time): end timer 19, early timer 2 + 6 = 8, early count 2.
    # The watermark 0 - 1 = -1.
    step(r(0, 1), r(0, 2), pt=2),
    # pt 10: before the row the clock goes to 9: the early timer 8 fires (19 is after the watermark
    # -1): pane 0 (s 3), EARLY (19 is after the clock 9); the early count restarts. The row counts 1
    # and registers the early timer 16.
    step(r(1, 4), pt=10, panes=[P("a", 0, 20, 0, EARLY, False, s=3, n=2)]),
    # pt 15: nothing is due below 15. a's 8 and 16 make the early count 3: a count firing (s 31),
    # EARLY (19 after the clock 15); it deletes the early timer 16. b's row opens b's [0,20) with the
    # early timer 15 + 6 = 21, AFTER its max_ts 19.
    step(r(2, 8), r(3, 16), r(0, 5, k="b"), pt=15, panes=[P("a", 0, 20, 1, EARLY, False, s=31, n=5)]),
    # pt 17: a's row counts 1 and registers the early timer 23 (after max_ts 19 too).
    step(r(4, 32), pt=17),
    # pt 25: before the (empty) batch the clock goes to 24; processing-time timers in time order:
    # the cleanup timers at 19 come first (the watermark 3 never reached the end timers): both
    # windows are cleaned with their pending early timers (21, 23): no pane, a's 32 and b's 5 dropped.
    step(pt=25, metrics=dict(windows_cleaned=2)),
    # pt 33: [20,40): end timer 39, early timer 33 + 6 = 39: the cleanup timer's time.
    step(r(10, 64), pt=33),
    # pt 41: before the batch the clock goes to 40: the timer at 39 is the early timer AND the
    # cleanup: it fires (39 is after the watermark 9), ON_TIME (a timer at max_ts), then the window
    # is cleaned: final.
    step(pt=41, panes=[P("a", 20, 40, 0, ON_TIME, True, s=64, n=1)], metrics=dict(windows_cleaned=1)),
    # pt 45: [40,60), early timer 51; the watermark jumps to 99 and the end timer 59 fires after the
    # rows: pane 0 (s 3), EARLY (59 after the clock 45); the early timer is deleted.
    step(r(100, 1), r(100, 2), pt=45, wm_after=99, panes=[P("a", 40, 60, 0, EARLY, False, s=3, n=2)]),
    # pt 50: max_ts 59 is behind the watermark 99: the rows are late for the trigger: the 2nd one
    # fires (s 15, accumulating), EARLY by the clock 50; the 16 starts a new late count.
    step(r(0, 4), r(0, 8), r(0, 16), pt=50, panes=[P("a", 40, 60, 1, EARLY, False, s=15, n=4)]),
    # pt 105: the clock cleans [40,60) before the row (the 16 is dropped); the row opens [100,120)
    # (119 after the watermark 99): end timer 119, early timer 111.
    step(r(0, 32), pt=105, metrics=dict(windows_cleaned=1)),
    # the flush: the watermark reaches 119 first (event-time timers before processing-time ones):
    # ON_TIME (the clock is past max_ts), the early timer is deleted; then the cleanup: final.
    flush([P("a", 100, 120, 0, ON_TIME, True, s=32, n=1)], metrics=dict(windows_cleaned=1)),
    doc="EarlyLateEventTimeTrigger on processing-time windows: early timers ordered against the clock's "
        "cleanup, the watermark's end firing, late firings by count", spark=Cut.STEPS)

transcript(
    "purging_continuous_event_time_trigger_on_processing_time_sliding_windows",
    spec(SlidingProcessingTimeWindows.of(20, 10), trigger=PurgingTrigger(ContinuousEventTimeTrigger(5))),
    # pt 3: windows [-10,10) and [0,20); end timers 9, 19; the continuous timer at the multiple of 5
    # after the element's timestamp, its processing time 3: 5 (capped at max_ts: 5 both). Watermark 0.
    step(r(0, 1), r(1, 2), pt=3),
    # pt 6: the row joins both; the watermark 5 fires both timers at 5 (discarding: s 7 each), EARLY
    # (max_ts 9, 19 after the clock 6); next: the multiple after the watermark 5: 10, capped: 9 and 10.
    step(r(6, 4), pt=6, panes=[P("a", -10, 10, 0, EARLY, False, s=7, n=3),
                               P("a", 0, 20, 0, EARLY, False, s=7, n=3)]),
    # pt 8: the row joins both windows; the watermark stays 5: nothing fires.
    step(r(6, 16), pt=8),
    # pt 12: before the row the clock goes to 11 and cleans [-10,10) (its 16 and its timers 9 go: the
    # watermark will pass 9 after the rows, but no timer is left). The row joins [0,20) (s 16 + 8) and
    # opens [10,30) (timer at the multiple after 12: 15). The watermark 19 fires [0,20)'s timer 10
    # (s 24, EARLY: 19 after the clock 12; next min(20, 19) = 19, which fires in the same phase with
    # the end timer: one pane) and [10,30)'s 15 (s 8, EARLY; next 20).
    step(r(20, 8), pt=12, panes=[P("a", 0, 20, 1, EARLY, False, s=24, n=2),
                                 P("a", 10, 30, 0, EARLY, False, s=8, n=1)],
         metrics=dict(windows_cleaned=1)),
    # pt 25: the clock cleans [0,20) (empty) before the (empty) batch; [10,30)'s timer 20 waits for the
    # watermark (19).
    step(pt=25, metrics=dict(windows_cleaned=1)),
    # pt 26: the row joins [10,30) (29 after the clock 25) and opens [20,40) (timer 30). The watermark
    # stays 19.
    step(r(0, 32), pt=26),
    # the flush: the watermark fires [10,30)'s timer 20 and end 29 (one pane, ON_TIME: the clock is at
    # +infinity) and [20,40)'s 30 and 39; then the cleanups: final.
    flush([P("a", 10, 30, 1, ON_TIME, True, s=32, n=1), P("a", 20, 40, 0, ON_TIME, True, s=32, n=1)],
          metrics=dict(windows_cleaned=2)),
    doc="discarding ContinuousEventTimeTrigger(5) on processing-time sliding windows: timers by the "
        "watermark from the processing time, the clock's cleanup before the rows takes them away",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "early_firing_timer_at_the_cleanup_time_of_a_processing_time_window",
    spec(TumblingProcessingTimeWindows.of(10), trigger=EventTimeTrigger().with_early_firings(every="7 ms")),
    # pt 2: [0,10): end timer 9 (event time), early timer 2 + 7 = 9: the time of the cleanup timer, so
    # they are ONE processing-time timer. The watermark 49 fires the end timer after the row: pane 0,
    # EARLY (9 after the clock 2); the trigger deletes its early timer, which must not take the
    # cleanup along (Flink's would: the window would never be cleaned).
    step(r(50, 1), pt=2, wm_after=49, panes=[P("a", 0, 10, 0, EARLY, False, s=1, n=1)]),
    # pt 12: the cleanup timer 9 fires before the (empty) batch: the trigger expects no early timer
    # any more (no pane); the window is cleaned.
    step(pt=12, metrics=dict(windows_cleaned=1)),
    flush(),
    doc="an early-firing timer at max_ts of a processing-time window, deleted by the end firing: the "
        "cleanup timer stays (the model keeps the operator's cleanup timer)", spark=Cut.STEPS)

transcript(
    "event_time_trigger_on_processing_time_sessions",
    spec(ProcessingTimeSessionWindows.with_gap(10), trigger=EventTimeTrigger()),
    # pt 0: a's session [0,10) (by processing time), end timer 9 (event time); the watermark 5 - 1 = 4.
    step(r(5, 1), pt=0, wm_after=4),
    # pt 4: [4,14) merges with it: [0,14), end timer 13; the watermark 11 is below it.
    step(r(12, 2), pt=4, wm_after=11),
    # pt 6: [6,16) extends it to [0,16); the watermark 19 passes 15: pane 0 (s 7), EARLY (15 is
    # after the clock 6); nothing it merged had emitted.
    step(r(20, 4), pt=6, wm_after=19, panes=[P("a", 0, 16, 0, EARLY, False, s=7, n=3)]),
    # pt 10: [10,20) extends it to [0,20), whose max_ts 19 the watermark has reached already: the row
    # registers the end timer anyway, which fires after the rows: pane 1 (s 15, accumulating), EARLY
    # (19 after the clock 10); it supersedes [0,16), which had emitted.
    step(r(0, 8), pt=10, panes=[P("a", 0, 20, 1, EARLY, False, supersedes=[(0, 16)], s=15, n=4)]),
    # pt 25: the clock cleans [0,20) before the row (no pane: the end timer fired already). b's row
    # opens [25,35), end timer 34 (the watermark stays 19).
    step(r(0, 16, k="b"), pt=25, metrics=dict(windows_cleaned=1)),
    # pt 40: the clock cleans [25,35) before the (empty) batch: the watermark never reached 34, so
    # it never fired: b's 16 is dropped.
    step(pt=40, metrics=dict(windows_cleaned=1)),
    # pt 41: a's [41,51), end timer 50; the watermark 49 is below it.
    step(r(50, 32), pt=41, wm_after=49),
    # the flush: the watermark reaches 50 first: ON_TIME (the clock is past max_ts), then the cleanup.
    flush([P("a", 41, 51, 0, ON_TIME, True, s=32, n=1)], metrics=dict(windows_cleaned=1)),
    doc="the plain EventTimeTrigger on processing-time sessions: merging by processing time, the "
        "watermark fires, the clock cleans (a session it cleans first never fires)", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "purging_early_late_trigger_on_processing_time_sessions",
    spec(ProcessingTimeSessionWindows.with_gap(10),
         trigger=PurgingTrigger(EarlyLateEventTimeTrigger(early_interval_ms=4, late_every_n=2))),
    # pt 0: [0,10): end timer 9, early timer 0 + 4 = 4. Watermark -1.
    step(r(0, 1), pt=0),
    # pt 6: before the row the clock goes to 5: the early timer 4 fires on [0,10) as it is (9 after
    # the watermark -1): pane 0 (s 1), EARLY (9 after the clock 5), purged. Then the row's [6,16)
    # extends the session to [0,16): end timer 15, early timer 6 + 4 = 10.
    step(r(0, 2), pt=6, panes=[P("a", 0, 10, 0, EARLY, False, s=1, n=1)]),
    # pt 9: [9,19) extends it to [0,19): the pending early timer 10 carries over; end timer 18. The
    # watermark 29 passes 18 after the rows: pane 1 (s 2 + 4, discarding), EARLY (18 after the clock
    # 9), the pane index continuing from [0,10)'s; it supersedes [0,10), which emitted pane 0 before it
    # was merged away ([0,16) never emitted). The end firing deletes the early timer.
    step(r(30, 4), pt=9, wm_after=29, panes=[P("a", 0, 19, 1, EARLY, False, supersedes=[(0, 10)], s=6, n=2)]),
    # pt 12: [12,22) extends it to [0,22), whose max_ts 21 is behind the watermark 29: the rows are late
    # for the trigger: the 2nd fires (s 8 + 16, purged), EARLY by the clock 12.
    step(r(0, 8), r(0, 16), pt=12, panes=[P("a", 0, 22, 2, EARLY, False, supersedes=[(0, 19)], s=24, n=2)]),
    # pt 30: the clock cleans [0,22) before the (empty) batch: nothing left in it.
    step(pt=30, metrics=dict(windows_cleaned=1)),
    flush(),
    doc="discarding early/late firings on processing-time sessions: the pending early timer survives "
        "a merge, the watermark's end firing, late firings by count", spark=Cut.STEPS, delta=Cut.STEPS)
