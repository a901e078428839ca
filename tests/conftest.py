"""Shared fixtures: ONE SparkSession (with Delta) for the whole test run."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from windowing.spark.session import get_spark
    session = get_spark("tests", shuffle_partitions=2, conf={"spark.default.parallelism": "2"})
    yield session
    session.stop()
