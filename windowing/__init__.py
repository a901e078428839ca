"""Flink's window semantics on Spark DataFrames, with window state in Delta Lake.

The public names, importable from ``windowing``. The Spark-side names are
imported lazily so that the pure core stays usable without pyspark. On Spark,
``operator_on_delta`` / ``make_operator`` pick a DataFrame plan when one covers
the spec and the per-key path (``KeyedModelOperator``) otherwise, so every
spec the reference model runs also runs on Spark.
"""
from windowing.core.aggregates import (
    AggregateFunction, Avg, Collect, Count, First, Last, Max, Min, Reduce, ReduceFunction, Sum, UserAggregate)
from windowing.core.assigners import (
    CumulativeEventTimeWindows, EventTimeSessionWindows, GapFromColumn, GlobalWindows, ProcessingTimeSessionWindows,
    SessionGapExtractor,
    SlidingEventTimeWindows, SlidingProcessingTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows,
    WindowAssigner)
from windowing.core.evictors import CountEvictor, DeltaEvictor, Evictor, TimeEvictor
from windowing.core.functions import Process, ProcessContext, ProcessWindowFunction
from windowing.core.reference import ReferenceOperator
from windowing.core.sinks import sink_view
from windowing.core.spec import APPEND, FINAL, UPSERT, WindowSpec, WindowSpecBuilder
from windowing.core.triggers import (
    AbsoluteDifference, ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger, DeltaFunction,
    DeltaTrigger, EarlyLateEventTimeTrigger, EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, PurgingTrigger,
    Trigger, TriggerBase, TriggerResult)
from windowing.core.joins import (
    ANTI, FULL_OUTER, INNER, LEFT_OUTER, RIGHT_OUTER, SEMI, CoGroupFunction, IntervalJoinOperator, IntervalJoinSpec,
    JoinFunction, JoinInput, WindowJoinOperator, WindowJoinSpec)

_SPARK_NAMES = {"SparkWindowOperator", "get_spark", "DeltaStore", "MemoryStore", "KeyedModelOperator",
                "make_operator", "operator_on_delta", "execution_path"}


def __getattr__(name):
    if name in _SPARK_NAMES:
        import importlib
        return getattr(importlib.import_module("windowing.spark"), name)
    raise AttributeError(f"module 'windowing' has no attribute {name!r}")


__all__ = ["APPEND", "AbsoluteDifference", "AggregateFunction", "Avg", "Collect", "ContinuousEventTimeTrigger",
           "ContinuousProcessingTimeTrigger", "Count", "CountEvictor", "CountTrigger", "CumulativeEventTimeWindows",
           "DeltaEvictor",
           "DeltaFunction", "DeltaTrigger", "EarlyLateEventTimeTrigger", "EventTimeSessionWindows", "Evictor",
           "EventTimeTrigger", "FINAL", "First", "GapFromColumn", "GlobalWindows", "Last", "Max", "Min", "NeverTrigger", "Process",
           "ProcessContext", "ProcessWindowFunction", "ProcessingTimeSessionWindows", "ProcessingTimeTrigger",
           "PurgingTrigger", "Reduce", "ReduceFunction", "ReferenceOperator", "SessionGapExtractor",
           "SlidingEventTimeWindows", "SlidingProcessingTimeWindows", "Sum", "TimeEvictor", "Trigger", "TriggerBase",
           "TriggerResult", "TumblingEventTimeWindows", "TumblingProcessingTimeWindows", "UPSERT", "UserAggregate",
           "WindowAssigner", "WindowSpec", "WindowSpecBuilder", "sink_view", *_SPARK_NAMES]
__all__ += ["ANTI", "CoGroupFunction", "FULL_OUTER", "INNER", "IntervalJoinOperator", "IntervalJoinSpec", "JoinFunction",
            "JoinInput", "LEFT_OUTER", "RIGHT_OUTER", "SEMI", "WindowJoinOperator", "WindowJoinSpec"]
