"""The batch plans: from accepted elements and the relevant window state to
panes and state changes, as DataFrame expressions.

The plans cover the built-in triggers (the planner in :func:`plan_for`
picks one; anything else is refused with a message that names it):

* ``time``: EventTimeTrigger / NeverTrigger (optionally purging). Partial
  aggregates per (key, window) are merged into the state with one full outer
  join; a window fires when the watermark crosses its end in this batch
  (ON_TIME) or when it received elements after its end (one LATE pane).
* ``count``: CountTrigger(n) (optionally purging), on time or global windows.
  Elements are numbered per window in (event time, sequence) order after the
  counter kept in state, so firings are exact: count-3 fed 7 elements fires
  twice and keeps 1. Panes are partial aggregates per group of n, combined
  with a running merge when accumulating.
* ``evicting count``: GlobalWindows + CountTrigger(slide) + CountEvictor(size)
  (sliding count windows). Elements live in the buffer table; firing point c
  aggregates elements (c - size, c].
* ``session``: event-time session windows (static gap or a gap column) with
  EventTimeTrigger, optionally purging: merging as gaps and islands over the
  batch's windows and the open sessions (:mod:`windowing.spark.plans.session_window_plan`).
* ``session_early_late``, ``session_continuous_event_time``,
  ``session_processing_time_trigger``, ``session_continuous_processing_time``,
  ``session_count``: event-time sessions with those triggers (optionally
  purging): the session merge around the trigger plans' phases, trigger
  state merged as the triggers' ``on_merge`` says
  (:mod:`windowing.spark.plans.session_window_trigger_plan`).
* ``early_late``, ``continuous_event_time``, ``processing_time``,
  ``continuous_processing_time``: the triggers with timers and trigger state
  on tumbling/sliding event-time windows and on global windows (one
  constant window per key, max_ts Long.MAX), optionally purging
  (:mod:`windowing.spark.plans.trigger_rules`). The plain EventTimeTrigger on
  global windows is ``early_late`` with neither early nor late firings.
* ``delta``: DeltaTrigger with the built-in AbsoluteDifference on time or
  global windows, optionally purging: a fold over each window's sorted
  elements finds the firings, emitted as the count firings of the trigger
  plans (:mod:`windowing.spark.plans.delta_trigger_rule`).
* ``processing_time``: tumbling and sliding processing-time windows with the
  ProcessingTimeTrigger, optionally purging: windows fire when the batch's
  processing-time clock passes their end (:mod:`windowing.spark.plans.processing_time_plan`).
* ``processing_time_count``, ``processing_time_continuous``: tumbling and
  sliding processing-time windows with CountTrigger or
  ContinuousProcessingTimeTrigger, optionally purging: the trigger plans'
  phases with the processing-time clock cleaning the windows
  (``processing_time_delta``: DeltaTrigger with the built-in
  AbsoluteDifference there; ``processing_time_event_time``: the plain
  EventTimeTrigger; ``processing_time_early_late``: EarlyLateEventTimeTrigger;
  ``processing_time_continuous_event_time``: ContinuousEventTimeTrigger; each
  optionally purging);
  ``processing_time_session_count``, ``processing_time_session_continuous``,
  ``processing_time_session_event_time``, ``processing_time_session_early_late``,
  ``processing_time_session_continuous_event_time``: those triggers but the
  DeltaTrigger (which cannot merge) on processing-time sessions (static gap or a
  gap column): the session trigger plan on that clock
  (:mod:`windowing.spark.plans.processing_time_trigger_plan`).
* ``processing_time_session``: processing-time session windows (static gap or
  a gap column) with the ProcessingTimeTrigger, optionally purging: the
  session plan's merging with the processing time in place of the event
  time and the clock in place of the watermark
  (:mod:`windowing.spark.plans.processing_session_window_plan`).

Every plan also runs without key columns (window_all: windows grouped by
window only). The watermark (idleness, several sources) and the clock they
use come from :mod:`windowing.spark.input.batch_time`.

Thresholds that involve the watermark are Python ints clamped to int64 (see
input/prepare.py) so no expression overflows.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from windowing.core.records import EARLY, LATE, ON_TIME
from windowing.spark.plans.aggregates import partial_exprs, running_exprs
from windowing.spark.plans.base import PlanContext, PlanOutput, TriggerPlan, merge_pair, window_partials
from windowing.spark.input.columns import END_BUCKET, SEQ, TS, WE, WS, long_lit

TIME_PLAN, COUNT_PLAN, EVICTING_COUNT_PLAN = "time", "count", "evicting_count"


def time_plan(ctx: PlanContext, plan: TriggerPlan, elements: DataFrame, state: DataFrame) -> PlanOutput:
    partials = window_partials(ctx, elements)
    joined = state.alias("s").join(partials.alias("b"), ctx.join_condition("s", "b"), "full_outer")
    j = joined.select(
        *[F.coalesce(F.col(f"s.{c}"), F.col(f"b.{c}")).alias(c) for c in ctx.window_keys],
        *merge_pair(ctx, "s", "b"),
        (F.coalesce(F.col("s.contents_count"), F.lit(0)) + F.coalesce(F.col("b.__b__n"), F.lit(0))).alias("contents_count"),
        F.coalesce(F.col("s.pane_index"), F.lit(0)).alias("__pane_index0"),
        F.coalesce(F.col("b.__b__n"), F.lit(0)).alias("__b_n"),
        F.col("s.pane_index").isNotNull().alias("__in_state"))
    wm0, wm1 = ctx.wm_start_ms, ctx.wm_end_ms
    if plan.fires_at_end:
        crossed = ctx.max_ts_above(wm0) & ctx.max_ts_at_or_below(wm1)
        late_elements = ctx.max_ts_at_or_below(wm0) & (F.col("__b_n") > 0)
        fire = F.coalesce((F.col("contents_count") > 0) & (crossed | late_elements), F.lit(False))
    else:
        fire = F.lit(False)
    cleaned = ctx.cleaned()   # a window cleaned by this batch: its pane, if it fires, is final
    j = j.withColumns({"__fire": fire, "is_final": cleaned, "__cleaned": cleaned}).persist()
    panes = (j.where("__fire")
             .withColumns({"pane_index": F.col("__pane_index0"),
                           "timing": F.when(ctx.max_ts_above(wm0), F.lit(ON_TIME)).otherwise(F.lit(LATE)),
                           "watermark_ms": long_lit(wm1)})
             .select(*ctx.pane_columns(), *ctx.pane_tail()))
    purged = F.col("__fire") & F.lit(plan.purge)
    upserts = (j.where(((F.col("__b_n") > 0) | F.col("__fire")) & ~F.col("__cleaned"))
               .select(*[F.col(c) for c in ctx.window_keys],
                       *[F.when(purged, F.lit(None)).otherwise(F.col(c)).alias(c) for c in ctx.acc_columns],
                       F.when(purged, F.lit(0)).otherwise(F.col("contents_count")).alias("contents_count"),
                       F.lit(0).alias("trigger_count"),
                       (F.col("__pane_index0") + F.col("__fire").cast("long")).alias("pane_index"),
                       F.lit(0).alias("elements_total"))
               .select(*ctx.state_columns()))
    deletes = j.where(F.col("__cleaned") & F.col("__in_state")).select(*ctx.window_keys, ctx.end_bucket().alias(END_BUCKET))
    return PlanOutput(panes, upserts, deletes, cached=[j])


def closing_time_plan(ctx: PlanContext, elements: DataFrame, observation: Observation | None = None) -> DataFrame:
    """Panes of a batch that starts with no state and in which every window closes.

    The one-pass form of :func:`time_plan` for its special case: no state to
    join and no state to keep (the watermark ends at +infinity, so every
    window the batch touches fires and is cleaned up in this batch). Each
    (key, window) with contents gives exactly one pane: pane index 0, final,
    ON_TIME (or LATE if its end was already behind the watermark at the start
    of the batch, which cannot happen for a first batch but keeps the rule).

    Families with slices build windows from per-slice partials as their geometry says
    (:meth:`windowing.spark.plans.window_geometry.WindowGeometry.closing_window_partials`; sliding
    windows by running differences or slice explosion).

    ``observation`` (one window per element only: each element is in exactly
    one pane) is filled when the panes are computed, from the aggregated rows:
    ``panes`` (how many), ``elements`` (the elements they aggregate, null for
    none) and ``max_ts`` (the largest element timestamp). It costs two hidden
    aggregates per window, not a pass over the elements.

    Raises:
        ValueError: an ``observation`` for a family that puts an element in several windows.
    """
    if ctx.geometry.slices:
        if observation is not None:
            raise ValueError("an observation of the panes counts elements only when each is in one window; "
                             f"{ctx.spec.assigner!r} puts an element in several")
        partials = ctx.geometry.closing_window_partials(ctx.compiled, list(ctx.spec.key_columns), elements)
    else:
        # One window per element: grouped by its start alone, the end derived afterwards.
        by_start = elements.groupBy(*ctx.spec.key_columns, WS)
        if observation is None:
            partials = by_start.agg(*partial_exprs(ctx.compiled))
        else:
            partials = (by_start.agg(*partial_exprs(ctx.compiled), F.count(F.lit(1)).alias("__elements"),
                                     F.max(TS).alias("__max_ts"))
                        .observe(observation, F.count(F.lit(1)).alias("panes"),
                                 F.sum("__elements").alias("elements"), F.max("__max_ts").alias("max_ts")))
        partials = partials.withColumn(WE, ctx.geometry.window_end(F.col(WS)))
    return (partials
            .withColumns({"pane_index": F.lit(0).cast("long"),
                          "timing": F.when(ctx.max_ts_above(ctx.wm_start_ms), F.lit(ON_TIME)).otherwise(F.lit(LATE)),
                          "is_final": F.lit(True), "watermark_ms": long_lit(ctx.wm_end_ms)})
            .select(*ctx.pane_columns(), *ctx.pane_tail()))


def count_plan(ctx: PlanContext, plan: TriggerPlan, elements: DataFrame, state: DataFrame) -> PlanOutput:
    n = plan.count
    counters = state.select(*ctx.window_keys, "trigger_count")
    numbered = (elements.alias("e").join(counters.alias("s"), ctx.join_condition("e", "s"), "left")
                .select(*[F.col(f"e.{c}") for c in elements.columns],
                        F.coalesce(F.col("s.trigger_count"), F.lit(0)).cast("long").alias("__c0")))
    order = Window.partitionBy(*ctx.window_keys).orderBy(TS, SEQ)
    numbered = numbered.withColumn("__g", F.floor((F.col("__c0") + F.row_number().over(order) - 1) / n).cast("long"))
    groups = numbered.groupBy(*ctx.window_keys, "__g").agg(*partial_exprs(ctx.compiled),
                                                         F.count(F.lit(1)).alias("__g_n"), F.first("__c0").alias("__c0"))
    per_window = Window.partitionBy(*ctx.window_keys)
    running = per_window.orderBy("__g").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    elements_in_window = F.sum("__g_n").over(per_window)
    groups = groups.select("*", elements_in_window.alias("__m"), F.max("__g").over(per_window).alias("__g_max"),
                           F.floor((F.col("__c0") + elements_in_window) / n).cast("long").alias("__k"),
                           *running_exprs(ctx.compiled, running))
    j = groups.alias("b").join(state.alias("s"), ctx.join_condition("b", "s"), "left").select(
        *[F.col(f"b.{c}") for c in groups.columns if c not in ctx.acc_columns],
        *[F.col(f"b.{c}").alias(f"__part__{c}") for c in ctx.acc_columns],
        *[F.col(f"s.{c}").alias(f"__state__{c}") for c in ctx.acc_columns],
        F.coalesce(F.col("s.pane_index"), F.lit(0)).alias("__pane_index0"),
        F.coalesce(F.col("s.contents_count"), F.lit(0)).alias("__contents0"),
        F.col("s.pane_index").isNotNull().alias("__in_state"))
    j = j.withColumn("__cleaned", ctx.cleaned()).persist()

    def merged(right_prefix: str) -> list[Column]:
        return [p.merge(F.col(f"__state__{p.column}"), F.col(f"{right_prefix}{p.column}")).alias(p.column)
                for agg in ctx.compiled for p in agg.parts]

    wm0 = ctx.wm_start_ms
    if ctx.geometry.never_ends:
        timing = F.lit(ON_TIME)
    else:
        timing = F.when(ctx.max_ts_above(wm0), F.lit(EARLY)).otherwise(F.lit(LATE))
    fired = j.where(F.col("__g") < F.col("__k"))
    if plan.purge:
        pane_accs = [F.when(F.col("__g") == 0, m).otherwise(F.col(f"__part__{m_name}")).alias(m_name)
                     for m, m_name in zip(merged("__part__"), ctx.acc_columns)]
    else:
        pane_accs = merged("__run__")
    panes = (fired.select(*ctx.window_keys, *pane_accs,
                          (F.col("__pane_index0") + F.col("__g")).alias("pane_index"),
                          timing.alias("timing"),
                          (F.col("__cleaned") & (F.col("__g") == F.col("__k") - 1)).alias("is_final"),
                          long_lit(wm0).alias("watermark_ms"))
             .select(*ctx.pane_columns(), *ctx.pane_tail()))
    last = j.where(F.col("__g") == F.col("__g_max"))
    if plan.purge:
        remainder = F.col("__g_max") == F.col("__k")   # the last group did not complete
        accs = [F.when(F.col("__k") == 0, m).when(remainder, F.col(f"__part__{name}")).otherwise(F.lit(None)).alias(name)
                for m, name in zip(merged("__run__"), ctx.acc_columns)]
        contents = F.when(F.col("__k") == 0, F.col("__contents0") + F.col("__m")) \
            .otherwise(F.col("__c0") + F.col("__m") - F.col("__k") * n)
    else:
        accs = merged("__run__")
        contents = F.col("__contents0") + F.col("__m")
    upserts = (last.where(~F.col("__cleaned"))
               .select(*ctx.window_keys, *accs, contents.alias("contents_count"),
                       F.pmod(F.col("__c0") + F.col("__m"), F.lit(n)).alias("trigger_count"),
                       (F.col("__pane_index0") + F.col("__k")).alias("pane_index"),
                       F.lit(0).alias("elements_total"))
               .select(*ctx.state_columns()))
    deletes = state.where(ctx.cleaned()).select(*ctx.window_keys, ctx.end_bucket().alias(END_BUCKET))
    return PlanOutput(panes, upserts, deletes, cached=[j])


def evicting_count_plan(ctx: PlanContext, plan: TriggerPlan, elements: DataFrame, state: DataFrame,
                        buffer: DataFrame, value_columns: list[str]) -> PlanOutput:
    slide, size = plan.count, plan.evictor_size
    keys = list(ctx.spec.key_columns)
    key_cond = lambda a, b: _and([F.col(f"{a}.{k}") == F.col(f"{b}.{k}") for k in keys])  # noqa: E731
    totals = state.select(*keys, F.col("elements_total").alias("__t0"), F.col("pane_index").alias("__p0"))
    order = Window.partitionBy(*keys).orderBy(TS, SEQ)
    fresh = (elements.alias("e").join(totals.alias("s"), key_cond("e", "s"), "left")
             .select(*[F.col(f"e.{c}") for c in keys + [TS, SEQ] + value_columns],
                     F.coalesce(F.col("s.__t0"), F.lit(0)).cast("long").alias("__t0"),
                     F.coalesce(F.col("s.__p0"), F.lit(0)).cast("long").alias("__p0")))
    fresh = fresh.withColumns({"elem_index": F.col("__t0") + F.row_number().over(order),
                               "__total": F.col("__t0") + F.count(F.lit(1)).over(Window.partitionBy(*keys))})
    # With no key columns (window_all) this is a global aggregation, which gives one row of nulls on an
    # empty batch: keep only keys that have elements.
    per_key = (fresh.groupBy(*keys).agg(F.first("__t0").alias("__t0"), F.first("__p0").alias("__p0"),
                                        F.first("__total").alias("__total"))
               .where(F.col("__total").isNotNull()))
    old = (buffer.alias("x").join(per_key.alias("pk"), key_cond("x", "pk"), "inner")
           .select(*[F.col(f"x.{c}") for c in keys + [TS, SEQ] + value_columns + ["elem_index"]],
                   F.col("pk.__t0"), F.col("pk.__p0"), F.col("pk.__total")))
    every = old.unionByName(fresh.select(*old.columns))
    first_fire = (F.floor(F.col("__t0") / slide) + 1) * slide
    last_fire = F.floor(F.col("__total") / slide) * slide
    lo = F.greatest(F.ceil(F.col("elem_index") / slide) * slide, first_fire)
    hi = F.floor(F.least(F.col("elem_index") + size - 1, last_fire) / slide) * slide
    contributions = (every.where(lo <= hi)
                     .withColumn("__fire_at", F.explode(F.sequence(lo.cast("long"), hi.cast("long"), long_lit(slide)))))
    # A firing's elements fold in buffer order (elem_index), as the model's evicting window does.
    panes = (contributions.groupBy(*keys, "__fire_at").agg(*partial_exprs(ctx.compiled, order=("elem_index",)),
                                                         F.first("__t0").alias("__t0"),
                                                         F.first("__p0").alias("__p0"))
             .withColumns({WS: F.lit(None).cast("long"), WE: F.lit(None).cast("long"),
                           "pane_index": F.col("__p0") + (F.col("__fire_at") - first_fire) / slide,
                           "timing": F.lit(ON_TIME), "is_final": F.lit(False),
                           "watermark_ms": long_lit(ctx.wm_start_ms)})
             .select(*ctx.pane_columns(), *ctx.pane_tail()))
    keep_above = last_fire - size
    buffer_inserts = fresh.where(F.col("elem_index") > keep_above).select(*keys, "elem_index", TS, SEQ, *value_columns)
    buffer_deletes = old.where(F.col("elem_index") <= keep_above).select(*keys, "elem_index")
    kept = every.where(F.col("elem_index") > keep_above).groupBy(*keys).agg(F.count(F.lit(1)).alias("__kept"))
    upserts = (per_key.join(kept, keys or F.lit(True), "left")   # window_all: one row each side
               .select(*keys, F.lit(None).cast("long").alias(WS), F.lit(None).cast("long").alias(WE),
                       *[F.lit(None).alias(c) for c in ctx.acc_columns],
                       F.coalesce(F.col("__kept"), F.lit(0)).alias("contents_count"),
                       F.pmod(F.col("__total"), F.lit(slide)).alias("trigger_count"),
                       (F.col("__p0") + (F.floor(F.col("__total") / slide) - F.floor(F.col("__t0") / slide))).alias("pane_index"),
                       F.col("__total").alias("elements_total"))
               .select(*ctx.state_columns()))
    deletes = state.where(F.lit(False)).select(*ctx.window_keys, ctx.end_bucket().alias(END_BUCKET))
    return PlanOutput(panes, upserts, deletes, buffer_inserts, buffer_deletes)


def _and(terms: list[Column]) -> Column:
    if not terms:
        return F.lit(True)   # no key columns (window_all): every row of the one key matches
    out = terms[0]
    for t in terms[1:]:
        out = out & t
    return out
