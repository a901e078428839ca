"""Shared fixtures: ONE SparkSession (with Delta) for the whole test run."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Spark's Python workers unpickle functions defined in test modules (user
# aggregates): they must be able to import them, like the driver does.
_TESTS = str(Path(__file__).resolve().parent)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_TESTS, os.environ.get("PYTHONPATH")) if p)


@pytest.fixture(scope="session")
def spark():
    from windowing.spark.session import get_spark
    session = get_spark("tests", shuffle_partitions=2, conf={"spark.default.parallelism": "2"})
    yield session
    session.stop()
