"""What every DataFrame plan shares: the chosen plan, the batch's context, the plan's output.

A plan module imports this module (and :mod:`windowing.spark.input.prepare`,
:mod:`windowing.spark.plans.aggregates`), never another plan module's planner: the
planner and the registry (:mod:`windowing.spark.plans.registry`) import the
plan modules, not the other way round.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS, clamp_ms as _clamp
from windowing.spark.plans.aggregates import CompiledAggregate, accumulator_columns, partial_exprs
from windowing.spark.plans import slicing
from windowing.spark.input.columns import END_BUCKET, LATE, STATUS, WE, WS, long_lit
from windowing.spark.input.prepare import live_window_end_above
from windowing.spark.plans.window_geometry import WindowGeometry, geometry_of

BOOKKEEPING = ("contents_count", "trigger_count", "pane_index", "elements_total")
"""The window state's counters, after the key, window and accumulator columns."""


@dataclass(frozen=True)
class TriggerPlan:
    """A spec's plan with the parameters its trigger gives it, chosen once (``plan_registry.plan_for``).

    ``kind`` names the plan in reports (``BatchReport.plan``, ``execution_path``); nothing compares it.
    """
    kind: str
    count: int | None = None       # CountTrigger n / slide
    fires_at_end: bool = False      # EventTimeTrigger
    purge: bool = False
    evictor_size: int | None = None
    trigger: Any = None             # the (non-purging) trigger the rule set reads
    rules: Any = None
    """The trigger's rule set (a :class:`windowing.spark.plans.trigger_rules.TriggerRules` subclass) on the
    trigger plans, else None."""
    definition: Any = field(default=None, compare=False)
    """The :class:`windowing.spark.plans.registry.Plan` chosen (how the executor runs it)."""


@dataclass
class PlanContext:
    spec: WindowSpec
    compiled: list[CompiledAggregate]
    wm_start_ms: int
    wm_end_ms: int
    batch_id: int
    bucket_ms: int

    @property
    def geometry(self) -> WindowGeometry:
        """The spec's window geometry (which windows a row belongs to)."""
        return geometry_of(self.spec)

    @property
    def window_keys(self) -> list[str]:
        return list(self.spec.key_columns) + [WS, WE]

    @property
    def acc_columns(self) -> list[str]:
        return accumulator_columns(self.compiled)

    def join_condition(self, left: str, right: str) -> Column:
        cond = None
        for column in self.window_keys:
            term = F.col(f"{left}.{column}").eqNullSafe(F.col(f"{right}.{column}"))
            cond = term if cond is None else cond & term
        return cond

    # Conditions on the window end, written without int64 overflow.
    def max_ts_above(self, wm: int) -> Column:
        return F.col(WE) > long_lit(_clamp(wm + 1))

    def max_ts_at_or_below(self, wm: int) -> Column:
        return F.col(WE) <= long_lit(_clamp(wm + 1))

    def cleaned(self) -> Column:
        """Cleanup time ``end - 1 + L`` at or below the new watermark (time windows only)."""
        if self.geometry.never_ends:
            return F.lit(False)
        return F.coalesce(F.col(WE) <= long_lit(_clamp(self.wm_end_ms - self.spec.allowed_lateness_ms + 1)),
                          F.lit(False))

    def end_bucket(self) -> Column:
        return F.coalesce(F.floor(F.col(WE) / F.lit(self.bucket_ms)).cast("long"), long_lit(MAX_TIMESTAMP_MS))

    def pane_columns(self, acc_prefix: str = "") -> list[Column]:
        keys = [F.col(c) for c in self.spec.key_columns]
        return keys + [F.col(WS), F.col(WE)] + [agg.result(acc_prefix) for agg in self.compiled]

    def pane_tail(self) -> list[Column]:
        return [F.col("pane_index").cast("long").alias("pane_index"), F.col("timing"),
                F.col("is_final").cast("boolean").alias("is_final"),
                F.col("watermark_ms").cast("long").alias("watermark_ms"),
                long_lit(self.batch_id).alias("batch_id")]

    def state_columns(self) -> list[Column]:
        return [F.col(c) for c in self.window_keys] + [self.end_bucket().alias(END_BUCKET)] + \
            [F.col(c) for c in self.acc_columns] + \
            [F.col(c).cast("long").alias(c) for c in BOOKKEEPING] + [long_lit(self.batch_id).alias("last_batch_id")]


@dataclass
class PlanOutput:
    """What a plan that decides lateness at classification computed for one batch (a session plan's
    output, which decides it after merging, is :class:`~windowing.spark.plans.session_window_plan.SessionOutput`).
    Both answer :meth:`account`, :meth:`late_rows` and :attr:`state_write_counts_cleaned` for the executor."""

    panes: DataFrame
    upserts: DataFrame           # complete state rows to insert or replace
    deletes: DataFrame           # window keys + end_bucket of state rows to delete
    buffer_inserts: DataFrame | None = None
    buffer_deletes: DataFrame | None = None
    cached: list = field(default_factory=list)  # intermediates persisted for this batch
    # Every window cleaned in this batch, when the plan counts them itself (processing-time windows:
    # one opened and closed in the same batch never reaches the state table's deletes)
    cleaned: DataFrame | None = None

    def account(self, metrics, late_output: bool) -> None:
        """The plan's part of the batch's metrics: the windows it cleaned, when it counts them itself (the
        classification already counted the late rows)."""
        if self.cleaned is not None:
            metrics.windows_cleaned = self.cleaned.count()

    @staticmethod
    def late_rows(whole: DataFrame, keys: list[str]) -> DataFrame:
        """The batch's late rows of ``whole`` (the classified input, every column): those classified late."""
        return whole.where(F.col(STATUS) == LATE)

    @property
    def state_write_counts_cleaned(self) -> bool:
        """Whether the windows cleaned are the state rows the state write deletes (counted as it writes)."""
        return self.cleaned is None


def merge_pair(ctx: PlanContext, left: str, right: str, right_prefix: str = "") -> list[Column]:
    return [p.merge(F.col(f"{left}.{p.column}"), F.col(f"{right}.{right_prefix}{p.column}")).alias(p.column)
            for agg in ctx.compiled for p in agg.parts]


def window_partials(ctx: PlanContext, elements: DataFrame, live_end_above: int | None = None) -> DataFrame:
    """The batch's partial accumulators per (key, window), with the element count ``__b__n``.

    A family with slices (sliding, cumulating windows) aggregates per (key, slice) first, then its
    geometry builds the partials of its live windows from the slice partials (not from each
    element; see :mod:`windowing.spark.plans.slicing`): those whose end is above ``live_end_above``
    (default: the event-time rule, :func:`windowing.spark.input.prepare.live_window_end_above`).
    """
    if ctx.geometry.slices:
        keys = list(ctx.spec.key_columns)
        slices = slicing.slice_partials(ctx.compiled, keys, elements)
        if live_end_above is None:
            live_end_above = live_window_end_above(ctx.spec, ctx.wm_start_ms)
        return ctx.geometry.window_partials(ctx.compiled, keys, slices, live_end_above)
    return elements.groupBy(*ctx.window_keys).agg(*partial_exprs(ctx.compiled), F.count(F.lit(1)).alias("__b__n"))
