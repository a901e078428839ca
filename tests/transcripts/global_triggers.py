"""Transcripts of the timer triggers on GLOBAL windows (the trigger plans' global-window case).

Same format and rules as ``basics.py`` / ``triggers.py`` (this module's ``TRANSCRIPTS``);
expected values worked out BY HAND from the rules below, the reasoning in the comments.

Rules used (windowing/core/triggers.py, reference.py; Flink's GlobalWindow):

* the global window's max_ts is Long.MAX: a timer there (the end-of-window part of an
  early/late trigger, a ``ProcessingTimeTrigger``'s timer) is due only when the watermark or
  the clock reaches +infinity, i.e. on a flush; the window is never late and never cleaned,
  so no pane is final, and every firing of a global window is ON_TIME;
* the watermark still advances with the event-time column (``wm = max_seen - delay - 1``):
  a ``ContinuousEventTimeTrigger`` registers the next multiple of its interval after the first
  element's timestamp, and each firing registers the next multiple after the CURRENT
  watermark, so it fires at every boundary the watermark passes, forever (a boundary passed
  with no new element fires too: the window still has its contents unless purged); several
  boundaries passed in one batch give one pane;
* on a flush a pending continuous timer and the timer at max_ts fire in one phase: one pane;
* early firings: every N elements (exact), or T of processing time after the first element
  since the last early firing; each early firing restarts both; the firing at max_ts (flush)
  deletes a pending early timer;
* ``pt=t``: timers below ``t`` fire before the batch's rows, timers at ``t`` after them.
"""
from __future__ import annotations

from transcripts.build import P, flush, r, spec, step, transcript_list
from transcripts.types import Cut
from windowing.core.assigners import GlobalWindows
from windowing.core.records import ON_TIME
from windowing.core.triggers import ContinuousEventTimeTrigger, EventTimeTrigger, ProcessingTimeTrigger


TRANSCRIPTS, transcript = transcript_list()

transcript(
    "continuous_event_time_on_global_window",
    spec(GlobalWindows(), trigger=ContinuousEventTimeTrigger(10)),
    # a: 3 registers the boundary after 3: 10. wm 6 < 10.
    step(r(3, 1), r(7, 2), wm_after=6),
    # a's timer is set: 12 registers nothing. b: 5 registers 10. wm 11: both 10s fire; the next
    # boundary after the watermark 11 is 20 for each.
    step(r(12, 4), r(5, 8, k="b"), wm_after=11, panes=[
        P("a", None, None, 0, ON_TIME, False, s=7, n=3), P("b", None, None, 0, ON_TIME, False, s=8, n=1)]),
    # wm 44 passes 20, 30 and 40: one pane each, next 50. b fires too, with no new element
    # (accumulating: its contents so far).
    step(r(45, 16), wm_after=44, panes=[
        P("a", None, None, 1, ON_TIME, False, s=23, n=4), P("b", None, None, 1, ON_TIME, False, s=8, n=1)]),
    # wm 45 < 50: nothing.
    step(r(46, 32), wm_after=45),
    # flush: 50 and max_ts (Long.MAX) fire in one phase: one pane each, not final (never cleaned).
    flush([P("a", None, None, 2, ON_TIME, False, s=55, n=5), P("b", None, None, 2, ON_TIME, False, s=8, n=1)]),
    invariant=True, doc="ContinuousEventTimeTrigger on GlobalWindows: every interval of event time, forever",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL)

transcript(
    "continuous_event_time_on_global_window_purging",
    spec(GlobalWindows(), trigger=ContinuousEventTimeTrigger(10), mode="discarding"),
    # 1 registers 10; wm 10: 10 fires (purges); next after 10: 20.
    step(r(1, 1), r(11, 2), wm_after=10, panes=[P("a", None, None, 0, ON_TIME, False, s=3, n=2)]),
    # wm 24: 20 fires with what came since the purge; next after 24: 30.
    step(r(15, 4), r(25, 8), wm_after=24, panes=[P("a", None, None, 1, ON_TIME, False, s=12, n=2)]),
    # flush: 30 and max_ts fire in one phase: one pane with 26 alone.
    step(r(26, 16), wm_after=25),
    flush([P("a", None, None, 2, ON_TIME, False, s=16, n=1)]),
    doc="PurgingTrigger(ContinuousEventTimeTrigger) on GlobalWindows: discarding panes", spark=Cut.STEPS)

transcript(
    "early_firings_on_global_window",
    spec(GlobalWindows(), trigger=EventTimeTrigger().with_early_firings(every_n_elements=3, every=10)),
    # clock 0: 1 schedules an early firing at 10; count 2.
    step(r(1, 1), r(2, 2), pt=0),
    # 3: count 3 -> fires (ON_TIME: a global window) and cancels 10; 4 schedules 5 + 10 = 15, count 1.
    step(r(3, 4), r(4, 8), pt=5, panes=[P("a", None, None, 0, ON_TIME, False, s=7, n=3)]),
    # pt 20, no rows: 15 < 20 fires before the batch (its end, Long.MAX, is ahead of every watermark).
    step(pt=20, panes=[P("a", None, None, 1, ON_TIME, False, s=15, n=4)]),
    # 5 schedules 31.
    step(r(5, 16), pt=21),
    # flush: the watermark reaches max_ts: the end-of-window firing (deletes the timer at 31; the
    # clock at +infinity fires nothing more). Not final: a global window is never cleaned.
    flush([P("a", None, None, 2, ON_TIME, False, s=31, n=5)]),
    invariant=True, doc="early firings every 3 elements or 10 ms of processing time on GlobalWindows",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL)

transcript(
    "processing_time_trigger_on_global_window_all",
    spec(GlobalWindows(), keys=(), trigger=ProcessingTimeTrigger(), mode="discarding"),
    # window_all: one global window over every key. Each element registers a processing-time
    # timer at max_ts (Long.MAX): no clock reaches it before the end of input.
    step(r(1, 1, k="a"), r(2, 2, k="b"), pt=10),
    step(r(3, 4, k="a"), pt=1_000_000),
    # flush: the clock goes to +infinity: the timer fires once, ON_TIME, not final.
    flush([P((), None, None, 0, ON_TIME, False, s=7, n=3)]),
    invariant=True, doc="ProcessingTimeTrigger on GlobalWindows (window_all, discarding): fires on the flush",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL, delta=Cut.STEPS)
