"""The ``processing_time`` plan: tumbling and sliding processing-time windows with the
ProcessingTimeTrigger (optionally purging), as DataFrame expressions.

An element's timestamp is its processing time (``prepare.classify``: the
row's ingestion time, else the batch's arrival time), so nothing is ever
late. A window ``[start, end)`` fires and is cleaned up when the
processing-time clock reaches ``max_ts = end - 1`` (the trigger's timer and
the cleanup timer coincide), so each window emits exactly one pane: index
0, ON_TIME, final. Per batch, as the reference model runs it
(:class:`windowing.spark.batch_time.BatchTime`):

1. when the batch brings a later processing time ``pt``, the open windows
   with ``max_ts < pt`` (``end <= pt``) fire first, with the watermark as
   it stood at the start of the batch, before the batch's rows arrive;
2. the rows join their windows (a row with an old ingestion time may reopen
   a window step 1 just closed: it starts a new window state, pane index 0);
3. after the rows, every window with ``max_ts <= clock_end`` fires with the
   batch's final watermark and is cleaned.

In the one case where a window fires in both phases of a batch (step 2
reopened it), the first pane is not final and the second is: ``is_final``
marks the last pane of a window that is cleaned in the batch.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowing.core.records import ON_TIME
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.spark.batch_time import BatchTime
from windowing.spark.plans import (END_BUCKET, PROCESSING_TIME_PLAN, PlanContext, PlanOutput, TriggerPlan,  # noqa: F401
                                   _merge_pair, window_partials)
from windowing.spark.prepare import WE, long_lit


def _clamp(value: int) -> int:
    return max(MIN_TIMESTAMP_MS, min(MAX_TIMESTAMP_MS, value))


class ProcessingTimeOutput(PlanOutput):
    """A :class:`PlanOutput` that also counts the windows cleaned (opened and closed in one batch included)."""

    def __init__(self, *args, cleaned: DataFrame, **kwargs):
        super().__init__(*args, **kwargs)
        self.cleaned = cleaned


def state_end_ranges(times: BatchTime) -> list[tuple[int, int]]:
    """Window ends (inclusive ranges) of the open windows a batch fires: ``max_ts`` in ``(clock_before, clock_end]``.

    Open windows all end after the clock before the batch (a window whose
    ``max_ts`` the clock reached was fired and cleaned then).
    """
    if times.clock_end_ms <= times.clock_before_ms:
        return []
    return [(_clamp(times.clock_before_ms + 2), _clamp(times.clock_end_ms + 1))]


def processing_time_plan(ctx: PlanContext, plan: TriggerPlan, elements: DataFrame, state: DataFrame,
                         times: BatchTime) -> ProcessingTimeOutput:
    """Panes and state changes of one batch (see the module docstring for the rule)."""
    partials = window_partials(ctx, elements)
    joined = state.alias("s").join(partials.alias("b"), ctx.join_condition("s", "b"), "full_outer")
    accs = ctx.acc_columns
    j = joined.select(
        *[F.coalesce(F.col(f"s.{c}"), F.col(f"b.{c}")).alias(c) for c in ctx.window_keys],
        *_merge_pair(ctx, "s", "b"),
        *[F.col(f"s.{c}").alias(f"__s__{c}") for c in accs],
        *[F.col(f"b.{c}").alias(f"__b__{c}") for c in accs],
        (F.coalesce(F.col("s.contents_count"), F.lit(0)) + F.coalesce(F.col("b.__b__n"), F.lit(0)))
        .alias("contents_count"),
        F.coalesce(F.col("s.contents_count"), F.lit(0)).alias("__s_n"),
        F.coalesce(F.col("s.pane_index"), F.lit(0)).alias("__pane_index0"),
        F.coalesce(F.col("b.__b__n"), F.lit(0)).alias("__b_n"),
        F.col("s.pane_index").isNotNull().alias("__in_state"))
    if times.early_phase_below_ms is not None:
        # max_ts < pt  <=>  end <= pt
        early = F.col("__in_state") & (F.col("__s_n") > 0) & (F.col(WE) <= long_lit(times.early_phase_below_ms))
    else:
        early = F.lit(False)
    closes = F.coalesce(F.col(WE) <= long_lit(_clamp(times.clock_end_ms + 1)), F.lit(False))
    j = (j.withColumn("__early", F.coalesce(early, F.lit(False))).withColumn("__closes", closes)
         .withColumn("__fire", F.col("__closes")
                     & F.when(F.col("__early"), F.col("__b_n") > 0).otherwise(F.col("contents_count") > 0))
         .persist())
    early_panes = (j.where("__early")
                   .select(*ctx.window_keys, *[F.col(f"__s__{c}").alias(c) for c in accs],
                           F.col("__pane_index0").alias("pane_index"), F.lit(ON_TIME).alias("timing"),
                           (~F.col("__fire")).alias("is_final"), long_lit(ctx.wm_start_ms).alias("watermark_ms")))
    main_panes = (j.where("__fire")
                  .select(*ctx.window_keys,
                          *[F.when(F.col("__early"), F.col(f"__b__{c}")).otherwise(F.col(c)).alias(c) for c in accs],
                          F.when(F.col("__early"), F.lit(0)).otherwise(F.col("__pane_index0")).alias("pane_index"),
                          F.lit(ON_TIME).alias("timing"), F.lit(True).alias("is_final"),
                          long_lit(ctx.wm_end_ms).alias("watermark_ms")))
    panes = early_panes.unionByName(main_panes).select(*ctx.pane_columns(), *ctx.pane_tail())
    upserts = (j.where((F.col("__b_n") > 0) & ~F.col("__closes"))
               .select(*ctx.window_keys, *accs, "contents_count", F.lit(0).alias("trigger_count"),
                       F.col("__pane_index0").alias("pane_index"), F.lit(0).alias("elements_total"))
               .select(*ctx.state_columns()))
    deletes = j.where(F.col("__closes") & F.col("__in_state")).select(*ctx.window_keys,
                                                                       ctx.end_bucket().alias(END_BUCKET))
    return ProcessingTimeOutput(panes, upserts, deletes, cached=[j], cleaned=j.where("__closes"))
