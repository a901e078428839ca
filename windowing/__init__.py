"""Flink's window semantics on Spark DataFrames, with window state in Delta Lake.

The public names, importable from ``windowing``. The Spark-side names are
imported lazily so that the pure core stays usable without pyspark.
"""
from windowing.core.aggregates import AggregateFunction, Avg, Count, Max, Min, Sum, UserAggregate
from windowing.core.assigners import GlobalWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.evictors import CountEvictor
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpec, WindowSpecBuilder
from windowing.core.triggers import CountTrigger, EventTimeTrigger, NeverTrigger, PurgingTrigger, TriggerResult

_SPARK_NAMES = {"SparkWindowOperator": "windowing.spark.operator", "get_spark": "windowing.spark.session",
                "DeltaStore": "windowing.spark.stores", "MemoryStore": "windowing.spark.stores"}


def __getattr__(name):
    if name in _SPARK_NAMES:
        import importlib
        return getattr(importlib.import_module(_SPARK_NAMES[name]), name)
    raise AttributeError(f"module 'windowing' has no attribute {name!r}")


__all__ = ["AggregateFunction", "Avg", "Count", "CountEvictor", "CountTrigger", "EventTimeTrigger",
           "GlobalWindows", "Max", "Min", "NeverTrigger", "PurgingTrigger", "ReferenceOperator",
           "SlidingEventTimeWindows", "Sum", "TriggerResult", "TumblingEventTimeWindows", "UserAggregate",
           "WindowSpec", "WindowSpecBuilder", *_SPARK_NAMES]
