"""Which Spark path runs a window spec: a DataFrame plan, or the per-key model.

A spec runs as a DataFrame plan (column expressions, joins and aggregations,
no Python per row but user code) when :func:`windowing.spark.plans.registry.plan_for`
finds one: the built-in assigners and triggers, sessions, processing time,
idleness, several watermark sources, window_all, user aggregates and reduce
functions. Everything else (user assigners, user triggers, evictors other than
the sliding count window's, process functions, DeltaTrigger with a user delta function)
runs on the per-key path (:class:`windowing.spark.operator.protocol.KeyedModelOperator`):
the reference model per key in ``applyInArrow``, its state in Delta. Both
operators have the same interface and the same commit protocol.
``docs/execution_paths.py`` prints the path of each feature.
"""
from __future__ import annotations

from pyspark.sql import SparkSession

from windowing.core.spec import WindowSpec
from windowing.spark.operator.protocol import KeyedModelOperator, SparkWindowOperator
from windowing.spark.plans.registry import plan_for
from windowing.spark.state.stores import delta_store

DATAFRAME_PLAN, PER_KEY_MODEL = "dataframe plan", "per-key model"


def execution_path(spec: WindowSpec) -> str:
    """``"dataframe plan <kind>"`` or ``"per-key model (<why no plan>)"``: every spec has a Spark path."""
    try:
        return f"{DATAFRAME_PLAN} {plan_for(spec).kind}"
    except NotImplementedError as refusal:
        return f"{PER_KEY_MODEL} ({refusal})"


def uses_dataframe_plan(spec: WindowSpec) -> bool:
    """Whether a DataFrame plan takes ``spec`` (the registry decides; :func:`execution_path` only words it)."""
    try:
        plan_for(spec)
    except NotImplementedError:
        return False
    return True


def written_per_key(spark: SparkSession, store) -> bool:
    """Whether ``store``'s committed state was written by the per-key path (its keyed state table exists).

    State the per-key path wrote (for a spec that had no DataFrame plan in the
    release that wrote it) has another layout than a plan's: the plan operator
    could not read it, so such an operator stays on the per-key path until its
    state is reset.
    """
    windows_path = getattr(store, "windows_path", None)
    if windows_path is None or store.last_progress() is None:
        return False
    from windowing.spark.lake import delta_lake_io
    return delta_lake_io.table_exists(spark, windows_path.rsplit("/", 1)[0] + "/keyed_state")


def make_operator(spark: SparkSession, spec: WindowSpec, store, **kwargs):
    """A :class:`SparkWindowOperator` when a DataFrame plan takes the spec, else a :class:`KeyedModelOperator`.

    State the per-key path wrote stays on that path (:func:`written_per_key`) unless ``reset_state`` is set.
    ``kwargs`` go to the operator (``reset_state``, ``fault_injection``; ``bucket_ms`` only matters to plans).
    """
    if uses_dataframe_plan(spec) and (kwargs.get("reset_state") or not written_per_key(spark, store)):
        return SparkWindowOperator(spark, spec, store, **kwargs)
    kwargs.pop("bucket_ms", None)
    return KeyedModelOperator(spark, spec, store, **kwargs)


def operator_on_delta(spark: SparkSession, spec: WindowSpec, operator_id: str, state_root: str,
                      results_path: str | None = None, late_path: str | None = None,
                      quarantine_path: str | None = None, **kwargs):
    """:func:`make_operator` on a :class:`DeltaStore` under ``state_root/operator_id``."""
    store = delta_store(spark, spec, operator_id, state_root, results_path, late_path, quarantine_path)
    return make_operator(spark, spec, store, **kwargs)
