"""Which plan runs a join: chosen once, from the spec, when the operator first sees both inputs' schemas."""
from __future__ import annotations

from windowing.core.joins.spec import IntervalJoinSpec, WindowJoinSpec
from windowing.spark.joins.intake import SideSchemas
from windowing.spark.joins.interval_plan import IntervalJoinPlan
from windowing.spark.joins.keyed_plan import KeyedJoinPlan
from windowing.spark.joins.window_plan import WindowJoinFramePlan


def plan_for(spec, schemas: SideSchemas, per_key: bool = False):
    """The interval join's plan; a window join's DataFrame plan where it has one (see
    :meth:`WindowJoinFramePlan.supports`), else (or with ``per_key``) the per-key path."""
    if isinstance(spec, IntervalJoinSpec):
        return IntervalJoinPlan(spec, schemas)
    if not isinstance(spec, WindowJoinSpec):
        raise ValueError(f"a join operator runs a WindowJoinSpec or an IntervalJoinSpec, got {spec!r}")
    if not per_key and WindowJoinFramePlan.supports(spec):
        return WindowJoinFramePlan(spec, schemas)
    return KeyedJoinPlan(spec, schemas)
