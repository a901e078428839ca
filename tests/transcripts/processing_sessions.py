"""Transcripts of processing-time session windows and of replayed processing times.

Same format and rules as ``basics.py`` / ``model.py`` (this module's ``TRANSCRIPTS``); the
expected values were worked out BY HAND from the rules below (the reasoning is in the comments),
then run on the reference model, the ``processing_time_session`` plan
(windowing/spark/plans/processing_session_window_plan.py), the ``processing_time`` plan
(windowing/spark/plans/processing_time_plan.py) and the per-key path.

Rules used (windowing/core/reference.py, triggers.py):

* an element's timestamp is its processing time: its ingestion time (a backfill) or the
  processing time of its batch (``step(..., pt=t)``); it opens ``[pt, pt + gap)``; windows of a key
  that intersect or touch merge (the batch's windows and the open sessions merge first);
* the ProcessingTimeTrigger fires a window when the clock reaches its ``max_ts``; its state is
  cleaned at the same time, so every pane is ON_TIME, final, index 0;
* phases of a batch that moves the clock: the timers strictly below the batch's EARLIEST
  processing time (the smaller of the batch's and its rows' ingestion times) fire first, then the
  rows join, then the clock moves to the latest processing time and every timer at or below it
  fires. A session that only touches a row's window but fired before the row is not merged;
* a row whose every window has ``max_ts`` at or below the clock after the first phase belongs to
  windows that fired and were cleaned already: it is late, reason
  ``processing_time_window_already_fired`` (processing time never goes back in Flink; this is the
  rule for replayed ingestion times: no window opens twice, no pane index 0 is repeated).
"""
from __future__ import annotations

from transcripts.build import P, flush, r, spec, step, transcript_list
from transcripts.model import GapFromGOrRaise
from transcripts.types import Cut, ExpectedLate
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import ProcessingTimeSessionWindows, TumblingProcessingTimeWindows
from windowing.core.records import LATE_PROCESSING_TIME_WINDOW_FIRED, ON_TIME
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import ProcessingTimeTrigger, PurgingTrigger


TRANSCRIPTS, transcript = transcript_list()


def replayed_late(ts: int, k: str = "a") -> ExpectedLate:
    """A replayed row whose processing-time windows fired and were cleaned before it came."""
    return ExpectedLate((k,), ts, LATE_PROCESSING_TIME_WINDOW_FIRED)


def by_ingestion(window):
    """Keyed by ``k``, processing time from the ``ingest`` column (event time ``ts`` is ignored)."""
    return (WindowSpecBuilder().key_by("k").event_time("ts").processing_time("ingest").window(window)
            .side_output_late_data(True).aggregate(s=Sum("v"), n=Count()))


PROCESSING_SESSION_TRANSCRIPTS = (
    "processing_time_sessions_in_a_stream",
    "purging_processing_time_sessions_with_a_gap_column",
    "processing_time_sessions_in_a_backfill_by_ingestion_time",
    "replayed_row_joins_its_session_before_the_clock_closes_it",
    "replayed_row_joins_its_window_before_the_clock_closes_it",
)

transcript(
    "processing_time_sessions_in_a_stream", spec(ProcessingTimeSessionWindows.with_gap(10)),
    # pt 0: a -> [0,10), b -> [0,10). Event times (100, 7) are ignored. Nothing is due (max_ts 9).
    step(r(100, 1), r(7, 2, k="b"), pt=0),
    # pt 6: a [6,16) intersects [0,10) -> [0,16), s 5, n 2. Nothing below 6 is due.
    step(r(50, 4), pt=6),
    # pt 10: the timers below 10 fire first: b's [0,10) (max_ts 9), ON_TIME, cleaned. Then b's row
    # opens [10,20): it only touches [0,10), which is gone: a new session. a's row [10,20)
    # intersects [0,16) -> [0,20), s 21, n 3 (max_ts 19 > 10: waits).
    step(r(1, 8, k="b"), r(2, 16), pt=10, panes=[P("b", 0, 10, 0, ON_TIME, True, s=2, n=1)]),
    # pt 19 (no rows): both sessions reach max_ts 19 after the (empty) batch.
    step(pt=19, panes=[P("a", 0, 20, 0, ON_TIME, True, s=21, n=3), P("b", 10, 20, 0, ON_TIME, True, s=8, n=1)]),
    # pt 25: a new session [25,35): nothing to merge with. The flush closes it.
    step(r(3, 32), pt=25),
    flush([P("a", 25, 35, 0, ON_TIME, True, s=32, n=1)]),
    doc="processing-time sessions: batches that merge a session, one that fires a touching session "
        "before its row, and one that opens a new session", spark=Cut.STEPS)

transcript(
    "purging_processing_time_sessions_with_a_gap_column",
    spec(ProcessingTimeSessionWindows.with_dynamic_gap("g"), trigger=PurgingTrigger(ProcessingTimeTrigger())),
    # gaps per row: pt 0 -> [0,5); pt 3 with gap 20 -> [3,23): they intersect -> [0,23), s 3, n 2.
    # A gap of 0 is quarantined.
    step(r(0, 1, g=5), pt=0),
    step(r(0, 2, g=20), r(0, 64, g=0), pt=3, quarantined=["invalid_session_gap"],
         metrics=dict(quarantined_rows=1, accepted_rows=1)),
    # pt 30: [0,23) (max_ts 22 < 30) fires before the row and is purged and cleaned; the row at 30
    # with gap 1 opens [30,31), whose max_ts 30 the clock reaches after the row: it fires too.
    step(r(0, 4, g=1), pt=30, panes=[P("a", 0, 23, 0, ON_TIME, True, s=3, n=2),
                                     P("a", 30, 31, 0, ON_TIME, True, s=4, n=1)]),
    flush(),
    doc="processing-time sessions with the gap from a column, in a PurgingTrigger", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "processing_time_sessions_with_a_gap_function",
    spec(ProcessingTimeSessionWindows.with_dynamic_gap(GapFromGOrRaise()), trigger=ProcessingTimeTrigger()),
    # The gap column's transcript above, with the gap from a Python function: the same panes. The
    # null-key row never reaches the function (it would raise on -99).
    step(r(0, 1, g=5), pt=0),
    step(r(0, 2, g=20), r(0, 64, g=0), r(0, 8, k=None, g=-99), pt=3,
         quarantined=["invalid_session_gap", "null_key"], metrics=dict(quarantined_rows=2, accepted_rows=1)),
    step(r(0, 4, g=1), pt=30, panes=[P("a", 0, 23, 0, ON_TIME, True, s=3, n=2),
                                     P("a", 30, 31, 0, ON_TIME, True, s=4, n=1)]),
    flush(),
    doc="processing-time sessions with the gap from a Python function", spark=Cut.STEPS)

transcript(
    "processing_time_sessions_in_a_backfill_by_ingestion_time",
    by_ingestion(ProcessingTimeSessionWindows.with_gap(10)),
    # a backfill replays recorded ingestion times (rows in ingestion order), one batch with no clock
    # of its own: a 0, 6, 10 -> [0,10), [6,16), [10,20) merge into [0,20), s 21, n 3; a 25 -> [25,35).
    # b 0 -> [0,10); b 12 -> [12,22) (12 > 10: no merge). The clock ends at 25: [0,20), b's [0,10)
    # and [12,22) fire; [25,35) waits for the flush. Any cut in ingestion order gives these panes.
    step(r(100, 1, ingest=0), r(7, 2, k="b", ingest=0), r(50, 4, ingest=6), r(2, 16, ingest=10),
         r(1, 8, k="b", ingest=12), r(3, 32, ingest=25),
         panes=[P("a", 0, 20, 0, ON_TIME, True, s=21, n=3), P("b", 0, 10, 0, ON_TIME, True, s=2, n=1),
                P("b", 12, 22, 0, ON_TIME, True, s=8, n=1)]),
    flush([P("a", 25, 35, 0, ON_TIME, True, s=32, n=1)]),
    invariant=True, doc="a backfill: processing-time sessions by recorded ingestion time",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL)

transcript(
    "replayed_row_joins_its_session_before_the_clock_closes_it",
    by_ingestion(ProcessingTimeSessionWindows.with_gap(10)),
    # pt 0: the row ingested at 0 opens [0,10).
    step(r(0, 1, ingest=0), pt=0),
    # the batch comes at pt 30 with a row ingested at 5: the timers below min(30, 5) = 5 fire first
    # (none: [0,10) ends at 9), the row's [5,15) merges with [0,10) -> [0,15), then the clock moves
    # to 30 and [0,15) fires ONCE with both rows (not [0,10) alone and then a fragment [5,15) with
    # pane index 0 again).
    step(r(0, 2, ingest=5), pt=30, panes=[P("a", 0, 15, 0, ON_TIME, True, s=3, n=2)]),
    # pt 40: the clock before the batch is 30; a row ingested at 12 ([12,22), max_ts 21 <= 30) belongs
    # to a session time that already closed: late. The row ingested at 35 opens [35,45).
    step(r(0, 4, ingest=12), r(0, 8, ingest=35), pt=40, late=[replayed_late(12)]),
    flush([P("a", 35, 45, 0, ON_TIME, True, s=8, n=1)]),
    doc="replayed ingestion times on processing-time sessions: a row older than the batch joins its "
        "session before the clock closes it; one older than an earlier batch's clock is late", spark=Cut.STEPS)

transcript(
    "replayed_row_joins_its_window_before_the_clock_closes_it",
    by_ingestion(TumblingProcessingTimeWindows.of(10)),
    # pt 3: [0,10) holds the row ingested at 3.
    step(r(0, 1, ingest=3), pt=3),
    # pt 20 with a row ingested at 8: timers below 8 fire first (none), the row joins [0,10), then
    # the clock moves to 20 and [0,10) fires once with both rows (before: [0,10) fired with 1 row,
    # the row reopened it and it fired again with pane index 0, overwriting an upsert sink's row).
    step(r(0, 2, ingest=8), pt=20, panes=[P("a", 0, 10, 0, ON_TIME, True, s=3, n=2)]),
    # pt 30: the clock before the batch is 20; ingested at 15 -> [10,20), max_ts 19 <= 20: the clock
    # closed that window in an earlier batch: late. Ingested at 25 -> [20,30), fires at 30.
    step(r(0, 4, ingest=15), r(0, 8, ingest=25), pt=30, late=[replayed_late(15)],
         panes=[P("a", 20, 30, 0, ON_TIME, True, s=8, n=1)]),
    flush(),
    doc="replayed ingestion times on tumbling processing-time windows: no window fires twice", spark=Cut.STEPS)
