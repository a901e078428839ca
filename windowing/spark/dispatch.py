"""Which Spark path runs a window spec: a DataFrame plan, or the per-key model.

The built-in triggers the planner knows (:func:`windowing.spark.plans.plan_for`)
run as DataFrame plans: column expressions, joins and aggregations, no Python
per row; so do event-time sessions with the built-in triggers (event time,
early/late, continuous, processing time, count), the timer triggers (early/late,
continuous, processing time) and the plain event-time trigger on global windows
as on time windows, DeltaTrigger with the built-in AbsoluteDifference,
processing-time tumbling and sliding windows with their ProcessingTimeTrigger
(``processing_time``), CountTrigger or ContinuousProcessingTimeTrigger
(``processing_time_count``, ``processing_time_continuous``), DeltaTrigger with
the built-in AbsoluteDifference (``processing_time_delta``), the plain
EventTimeTrigger (``processing_time_event_time``), early/late firings
(``processing_time_early_late``) or ContinuousEventTimeTrigger
(``processing_time_continuous_event_time``), processing-time
sessions (static gap or a gap column, optionally purging) with the same
triggers but the DeltaTrigger, which cannot merge (``processing_time_session``,
``processing_time_session_count``, ``processing_time_session_continuous``,
``processing_time_session_event_time``, ``processing_time_session_early_late``,
``processing_time_session_continuous_event_time``), session gaps from a Python function
(a UDF computes each row's gap, then the session plans run), idleness, several
watermark sources and window_all; aggregates include user aggregates and reduce
functions (a reduce function must be associative, need not be commutative: the
plans fold in the model's order, see :mod:`windowing.spark.aggregates`).
Everything else (user triggers, evictors other than the sliding count
window's, process functions, DeltaTrigger with a user delta function)
runs on the per-key path
(:class:`windowing.spark.keyed.KeyedModelOperator`): the reference model per
key in ``applyInArrow``, its state in Delta. Both operators have the same
interface and the same commit protocol.
"""
from __future__ import annotations

from pyspark.sql import SparkSession

from windowing.core.spec import WindowSpec
from windowing.spark.keyed import KeyedModelOperator
from windowing.spark.operator import SparkWindowOperator
from windowing.spark.plans import plan_for
from windowing.spark.stores import delta_store

DATAFRAME_PLAN, PER_KEY_MODEL = "dataframe plan", "per-key model"


def _refuse_model_only(spec: WindowSpec) -> None:
    if spec.model_only_features:
        raise NotImplementedError(f"no Spark path yet for {', '.join(spec.model_only_features)} "
                                  f"(reference model only)")


def execution_path(spec: WindowSpec) -> str:
    """``"dataframe plan <kind>"`` or ``"per-key model (<why no plan>)"``.

    Raises:
        NotImplementedError: for a spec that no Spark path runs (``spec.model_only_features``).
    """
    _refuse_model_only(spec)
    try:
        return f"{DATAFRAME_PLAN} {plan_for(spec).kind}"
    except NotImplementedError as refusal:
        return f"{PER_KEY_MODEL} ({refusal})"


def uses_dataframe_plan(spec: WindowSpec) -> bool:
    return execution_path(spec).startswith(DATAFRAME_PLAN)


def written_per_key(spark: SparkSession, store) -> bool:
    """Whether ``store``'s committed state was written by the per-key path (its keyed state table exists).

    A spec that ran per key before a DataFrame plan took it over (window_all,
    processing time, idleness, several sources, sessions with early/late,
    continuous, processing-time or count triggers, processing-time sessions,
    reduce functions) keeps its state there: the plan operator could not read
    it, so such an operator stays on the per-key path until its state is reset.
    """
    windows_path = getattr(store, "windows_path", None)
    if windows_path is None or store.last_progress() is None:
        return False
    from windowing.spark import delta_io
    return delta_io.table_exists(spark, windows_path.rsplit("/", 1)[0] + "/keyed_state")


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
