"""Shared fixtures: ONE SparkSession (with Delta) for the whole test run; Hypothesis profiles.

Hypothesis profiles: the properties that run on Spark (every example is several Spark jobs, seconds
each) leave ``max_examples`` to the profile loaded here: ``ci`` (the default, 3 examples) or
``thorough`` (20), chosen with ``HYPOTHESIS_PROFILE=thorough``. The pure-model properties set their
own ``max_examples`` (hundreds, they take milliseconds) and no profile changes them.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_SPARK_PROPERTY = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
settings.register_profile("ci", max_examples=3, **_SPARK_PROPERTY)
settings.register_profile("thorough", max_examples=20, **_SPARK_PROPERTY)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# pytest-xdist runs tests in execnet workers whose __main__ has neither __spec__ nor __file__.
# PySpark's Connect package (Great Expectations imports it) takes that for a doctest run and
# calls sys.exit(0) on import; a __file__ tells it this is a normal program.
_main = sys.modules.get("__main__")
if _main is not None and getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
    _main.__file__ = "<pytest-xdist worker>"

# Spark's Python workers unpickle functions defined in test modules (user
# aggregates): they must be able to import them, like the driver does.
_TESTS = str(Path(__file__).resolve().parent)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_TESTS, os.environ.get("PYTHONPATH")) if p)


@pytest.fixture(scope="session")
def spark():
    from windowing.spark.session import get_spark
    import json
    conf = {"spark.default.parallelism": "2", **json.loads(os.environ.get("WINDOWING_TEST_SPARK_CONF", "{}"))}
    session = get_spark("tests", shuffle_partitions=2, conf=conf)
    yield session
    session.stop()
