"""The ``processing_time_session`` plan: processing-time session windows with the
ProcessingTimeTrigger (optionally purging), as DataFrame expressions.

It is the session plan (:func:`windowing.spark.plans.session_window_plan.session_plan`:
gaps and islands, ``supersedes``, the session state columns) run on the
processing-time clock instead of the watermark, in the reference model's
phases (:class:`windowing.spark.input.batch_time.BatchTime` gives the clock):

1. An element's timestamp is its processing time (``prepare.classify``: its
   ingestion time, else the batch's arrival time); it opens ``[pt, pt + gap)``.
2. Before the rows: when the batch moves the clock, the open sessions whose
   ``max_ts`` is below the batch's earliest processing time
   (``early_phase_below_ms``) fire AS THEY ARE (ON_TIME, final, with the
   watermark at the start of the batch) and are cleaned: a row that only
   touches such a session starts a new one, as in the model.
3. The rows: the batch's windows and the remaining open sessions merge
   (windows that intersect or touch); an island made of this batch's windows
   only whose ``max_ts`` is at or below the clock after step 2
   (``clock_at_rows_ms``) is late (its windows fired and were cleaned in an
   earlier batch): its rows go to the late output with reason
   ``processing_time_window_already_fired``. Nothing else is ever late.
4. After the rows: the clock moves to ``clock_end_ms``; every session whose
   ``max_ts`` it reached fires (ON_TIME, final) and is cleaned (the trigger's
   timer and the cleanup timer coincide at ``max_ts``).

A session fires once and is cleaned at once, so no pane of a processing-time
session supersedes another and every pane has index 0; the state columns
are the session plan's all the same. The state fingerprint is salted
(:data:`STATE_LAYOUT`) so state the per-key path wrote for the same
spec (which ran it before) is refused, not misread.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowing.core.records import ON_TIME
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.spark.input.batch_time import BatchTime
from windowing.spark.input.columns import END_BUCKET, SUPERSEDES, WE, long_lit
from windowing.spark.plans.session_window_plan import SessionClock, SessionOutput, _clamp, _empty_supersedes, session_plan

PROCESSING_TIME_SESSION_PLAN = "processing_time_session"
STATE_LAYOUT = "processing-time-session-state-v1"
"""Salt of the state fingerprint of specs on this plan."""


def processing_time_session_plan(ctx, plan, elements: DataFrame, state: DataFrame,
                                 times: BatchTime) -> SessionOutput:
    """Panes and state changes of one batch of processing-time sessions (see the module docstring).

    Args:
        ctx: the batch's :class:`~windowing.spark.plans.base.PlanContext` (watermarks for the panes).
        plan: the spec's ``TriggerPlan`` (``purge``).
        elements: accepted rows with every input column, ``__ts_ms`` (the processing time),
            ``__seq`` and their own window ``[window_start_ms, window_end_ms)``.
        state: the open sessions the batch may touch (:func:`relevant_end_ranges`).
        times: the batch's clock.
    """

    at_rows = times.clock_at_rows_ms
    fired_before = F.col(WE) <= long_lit(_clamp(at_rows + 1))   # max_ts <= the clock before the rows
    before_rows = state.where(fired_before).persist()
    phase1_panes = (before_rows
                    .withColumns({"timing": F.lit(ON_TIME), "is_final": F.lit(True),
                                  "watermark_ms": long_lit(ctx.wm_start_ms)})
                    .select(*ctx.pane_columns(), *ctx.pane_tail(),
                            F.coalesce(F.col(SUPERSEDES), _empty_supersedes()).alias(SUPERSEDES)))
    out = session_plan(ctx, plan, elements, state.where(~fired_before),
                       SessionClock(at_rows, times.clock_end_ms, 0))
    deletes = out.deletes.unionByName(before_rows.select(*ctx.window_keys, ctx.end_bucket().alias(END_BUCKET)))
    return SessionOutput(phase1_panes.unionByName(out.panes), out.upserts, deletes, out.late_spans,
                         out.late_count, out.cleaned_count + before_rows.count(), cached=[before_rows, *out.cached])


def relevant_end_ranges(times: BatchTime, min_accepted_ts: int | None) -> list[tuple[int, int]]:
    """Window ends (inclusive ranges) of the open sessions a batch can touch.

    Those an element window may touch or bridge (end at or after the smallest accepted
    processing time) and those the clock closes (``max_ts`` in ``(clock_before, clock_end]``;
    every open session ends after the clock before the batch).
    """
    ranges = []
    if min_accepted_ts is not None:
        ranges.append((min_accepted_ts, MAX_TIMESTAMP_MS))
    if times.clock_end_ms > times.clock_before_ms:
        ranges.append((_clamp(times.clock_before_ms + 2), _clamp(times.clock_end_ms + 1)))
    return ranges
