"""The Spark executor: the window operator compiled to DataFrame plans, state in Delta.

The face of the package: the names a user or a driver needs, loaded on first use (so importing a
sub-package, or ``windowing.spark`` itself, starts no Spark). The parts live in sub-packages:
``operator`` (the batch protocol, the executor interface, de-duplication, the choice of a path),
``plans`` (the DataFrame plans and the parts' Spark forms), ``keyed`` (the per-key executor),
``input`` (a batch's input before windowing), ``state`` (stores, cache, state log), ``lake``
(Delta Lake I/O, claims, LogStores) and ``runtime`` (the SparkSession, py4j calls, local frames).
"""
from __future__ import annotations

import importlib

_FACE = {
    "make_operator": "windowing.spark.operator.dispatch",
    "operator_on_delta": "windowing.spark.operator.dispatch",
    "execution_path": "windowing.spark.operator.dispatch",
    "SparkWindowOperator": "windowing.spark.operator.protocol",
    "BatchReport": "windowing.spark.state.batch_work",
    "KeyedModelOperator": "windowing.spark.operator.protocol",
    "DeltaStore": "windowing.spark.state.stores",
    "MemoryStore": "windowing.spark.state.stores",
    "ConcurrentWriterError": "windowing.spark.lake.claims",
    "SpecMismatchError": "windowing.spark.state.stores",
    "get_spark": "windowing.spark.runtime.spark_session",
}

__all__ = sorted(_FACE)


def __getattr__(name):
    if name in _FACE:
        return getattr(importlib.import_module(_FACE[name]), name)
    raise AttributeError(f"module 'windowing.spark' has no attribute {name!r}")
