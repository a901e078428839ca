"""The ``processing_time`` plan: tumbling and sliding processing-time windows with the
ProcessingTimeTrigger (optionally purging), as DataFrame expressions.

An element's timestamp is its processing time (``prepare.classify``: the
row's ingestion time, else the batch's arrival time). A window
``[start, end)`` fires and is cleaned up when the processing-time clock
reaches ``max_ts = end - 1`` (the trigger's timer and the cleanup timer
coincide), so each window emits exactly one pane: index 0, ON_TIME, final.
Per batch, as the reference model runs it
(:class:`windowing.spark.input.batch_time.BatchTime`):

1. when the batch moves the clock, the open windows whose ``max_ts`` is
   below the batch's EARLIEST processing time (``early_phase_below_ms``: the
   smaller of the batch's processing time and its rows' ingestion times) fire
   first, with the watermark as it stood at the start of the batch;
2. the rows join their windows. A row all of whose windows end at or below
   the clock after step 1 (``clock_at_rows_ms``) belongs to windows the clock
   already closed (a replayed ingestion time older than an earlier batch's
   clock): it is late (:func:`replayed_late`), reason
   ``processing_time_window_already_fired``, so no window opens twice;
3. after the rows, every window with ``max_ts <= clock_end`` fires with the
   batch's final watermark and is cleaned.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from windowing.core.records import ON_TIME
from windowing.core.time import MIN_TIMESTAMP_MS, clamp_ms as _clamp
from windowing.spark.input.batch_time import BatchTime
from windowing.spark.plans.base import PlanContext, PlanOutput, TriggerPlan, merge_pair, window_partials
from windowing.spark.plans.window_geometry import geometry_of
from windowing.spark.input.columns import ACCEPTED, END_BUCKET, STATUS, TS, UNASSIGNED, WE, long_lit

PROCESSING_TIME_PLAN = "processing_time"


def state_end_ranges(times: BatchTime) -> list[tuple[int, int]]:
    """Window ends (inclusive ranges) of the open windows a batch fires: ``max_ts`` in ``(clock_before, clock_end]``.

    Open windows all end after the clock before the batch (a window whose
    ``max_ts`` the clock reached was fired and cleaned then).
    """
    if times.clock_end_ms <= times.clock_before_ms:
        return []
    return [(_clamp(times.clock_before_ms + 2), _clamp(times.clock_end_ms + 1))]


def replayed_late(spec, times: BatchTime) -> Column | None:
    """Rows that step 2 sends to the late output (see the module docstring), or None when none can be.

    Accepted rows whose every window has ``max_ts`` at or below ``clock_at_rows_ms``, and rows in
    no window (a sliding gap) whose processing time is at or below it, as the model judges them.
    """
    at_rows = times.clock_at_rows_ms
    if at_rows == MIN_TIMESTAMP_MS:
        return None
    live_end_above = _clamp(at_rows + 1)
    live = geometry_of(spec).in_live_window(live_end_above)
    return (((F.col(STATUS) == ACCEPTED) & ~live)
            | ((F.col(STATUS) == UNASSIGNED) & (F.col(TS) <= long_lit(at_rows))))


def processing_time_plan(ctx: PlanContext, plan: TriggerPlan, elements: DataFrame, state: DataFrame,
                         times: BatchTime) -> PlanOutput:
    """Panes and state changes of one batch (see the module docstring for the rule).

    ``elements`` are the accepted rows without the :func:`replayed_late` ones: none of them falls
    in a window that step 1 fires.
    """
    partials = window_partials(ctx, elements, live_end_above=_clamp(times.clock_at_rows_ms + 1))
    joined = state.alias("s").join(partials.alias("b"), ctx.join_condition("s", "b"), "full_outer")
    accs = ctx.acc_columns
    j = joined.select(
        *[F.coalesce(F.col(f"s.{c}"), F.col(f"b.{c}")).alias(c) for c in ctx.window_keys],
        *merge_pair(ctx, "s", "b"),
        (F.coalesce(F.col("s.contents_count"), F.lit(0)) + F.coalesce(F.col("b.__b__n"), F.lit(0)))
        .alias("contents_count"),
        F.coalesce(F.col("s.pane_index"), F.lit(0)).alias("__pane_index0"),
        F.coalesce(F.col("b.__b__n"), F.lit(0)).alias("__b_n"),
        F.col("s.pane_index").isNotNull().alias("__in_state"))
    if times.early_phase_below_ms is not None:
        # max_ts < the batch's earliest processing time  <=>  end <= it
        early = F.col(WE) <= long_lit(times.early_phase_below_ms)
    else:
        early = F.lit(False)
    closes = F.coalesce(F.col(WE) <= long_lit(_clamp(times.clock_end_ms + 1)), F.lit(False))
    j = (j.withColumns({"__early": F.coalesce(early, F.lit(False)), "__closes": closes,
                        "__fire": closes & (F.col("contents_count") > 0)})
         .persist())
    panes = (j.where("__fire")
             .select(*ctx.window_keys, *accs, F.col("__pane_index0").alias("pane_index"),
                     F.lit(ON_TIME).alias("timing"), F.lit(True).alias("is_final"),
                     F.when(F.col("__early"), long_lit(ctx.wm_start_ms)).otherwise(long_lit(ctx.wm_end_ms))
                     .alias("watermark_ms"))
             .select(*ctx.pane_columns(), *ctx.pane_tail()))
    upserts = (j.where((F.col("__b_n") > 0) & ~F.col("__closes"))
               .select(*ctx.window_keys, *accs, "contents_count", F.lit(0).alias("trigger_count"),
                       F.col("__pane_index0").alias("pane_index"), F.lit(0).alias("elements_total"))
               .select(*ctx.state_columns()))
    deletes = j.where(F.col("__closes") & F.col("__in_state")).select(*ctx.window_keys,
                                                                       ctx.end_bucket().alias(END_BUCKET))
    # ``cleaned``: every window cleaned, those opened and closed in this batch included
    return PlanOutput(panes, upserts, deletes, cached=[j], cleaned=j.where("__closes"))
