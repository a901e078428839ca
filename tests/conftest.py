"""Shared fixtures: ONE SparkSession (with Delta) for the whole test run; Hypothesis profiles.

Spark settings: the test session runs Spark's expressions interpreted (no whole-stage or
expression code generation) and without adaptive query execution. Test batches are a few rows:
compiling generated Java for every new plan shape cost about a fifth of a Spark transcript
test's time, and AQE submits every shuffle stage of a query as a job of its own and re-plans
between them (a batch of a trigger plan ran about 3 times as many jobs; alternating in one process,
AQE off took 6-15% less wall time and 14-17% less CPU). The optimizer does not infer filters from
constraints (each optimization of the plans' wide projections re-derives every constraint of every
operator; a filter it would add only saves work on large inputs), and each query's plan is
described to Spark's status listener in the simple form, not the formatted one (it runs on every
Spark action). Tests marked ``production_spark`` (the end-to-end pipelines and the plan-vs-model
comparisons) switch all of these back to production's, and ``WINDOWING_TEST_PRODUCTION_SPARK=1``
runs the whole suite with them.

Hypothesis profiles: the properties that run on Spark (every example is several Spark jobs, seconds
each) leave ``max_examples`` to the profile loaded here: ``ci`` (the default, 3 examples) or
``thorough`` (20), chosen with ``HYPOTHESIS_PROFILE=thorough``. The pure-model properties set their
own ``max_examples`` (hundreds, they take milliseconds) and no profile changes them.
"""
from __future__ import annotations

import contextlib
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

# Tests by layer: core/ (the model, pure Python), spark/ (plans, stores, Delta state), pipelines/
# (jobs, drivers, CLI, quality) and e2e/ (Airflow, cluster, fault soak, the demos). Helpers
# (spark_adapter, job_files, the transcripts package) and test modules are imported as top-level
# modules: tests/ and each layer folder go on sys.path, and on PYTHONPATH, because Spark's
# Python workers unpickle functions defined in test modules (user aggregates) and must import
# them like the driver does.
_TESTS = Path(__file__).resolve().parent
LAYERS = ("core", "spark", "pipelines", "e2e")
_IMPORTABLE = [str(_TESTS)] + [str(_TESTS / layer) for layer in LAYERS]
for _path in reversed(_IMPORTABLE):
    if _path not in sys.path:
        sys.path.insert(0, _path)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [p for p in _IMPORTABLE if p not in os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


TIER4_DEFAULT_THRESHOLDS = {"Tier4InvocationThreshold": 5000, "Tier4MinInvocationThreshold": 600,
                            "Tier4CompileThreshold": 15000, "Tier4BackEdgeThreshold": 40000}
"""The JVM's (JDK 17) thresholds for compiling a method with the optimizing tier (C2)."""
TIER4_THRESHOLD_SCALE = 4
TEST_JAVA_OPTIONS = " ".join(["-XX:+UseParallelGC"] + [f"-XX:{flag}={default * TIER4_THRESHOLD_SCALE}"
                                                      for flag, default in TIER4_DEFAULT_THRESHOLDS.items()])
"""JVM options of a test process's Spark session: the parallel collector, and the optimizing JIT tier
(C2) only for methods run four times as often as the JVM's default asks.

Both test processes keep the two cores busy, so the suite's length follows its CPU time, and a test
JVM spends about a quarter of it in the JIT's compiler threads and a tenth in G1's collector threads
(each read per thread from ``/proc``; docs/testing.md). The JIT's default tiers stay: a test process
lives for the whole run, long enough for compiled code to repay its compilation, and the quick tier
alone made the whole suite slower. Options in ``WINDOWING_TEST_SPARK_CONF``'s
``spark.driver.extraJavaOptions`` (a flight recording, say) come after these and win."""


@pytest.fixture(scope="session")
def spark():
    from windowing.spark.runtime.spark_session import get_spark
    import json
    extra = json.loads(os.environ.get("WINDOWING_TEST_SPARK_CONF", "{}"))
    java_options = " ".join(filter(None, [TEST_JAVA_OPTIONS, extra.pop("spark.driver.extraJavaOptions", "")]))
    conf = {"spark.default.parallelism": "2", "spark.driver.extraJavaOptions": java_options,
            **({} if os.environ.get("WINDOWING_TEST_PRODUCTION_SPARK") == "1" else TEST_SQL_SETTINGS),
            **extra}
    session = get_spark("tests", shuffle_partitions=2, conf=conf)
    yield session
    session.stop()


# SQL settings a test can change at run time: the test session's, and production's.
TEST_SQL_SETTINGS = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                  "spark.sql.adaptive.enabled": "false", "spark.sql.constraintPropagation.enabled": "false",
                  "spark.sql.ui.explainMode": "simple"}
_PRODUCTION = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK",
               "spark.sql.adaptive.enabled": "true", "spark.sql.constraintPropagation.enabled": "true",
               "spark.sql.ui.explainMode": "formatted"}
"""``TEST_SQL_SETTINGS``: also those of the Spark processes that tests start (the cluster test's drivers,
the fault soak's ``winjob`` runs); ``_PRODUCTION``: production's value of each."""


@contextlib.contextmanager
def _settings(session, settings: dict):
    """``settings`` (SQL settings) on ``session`` while open; then each as before (unset if it was)."""
    before = {key: session.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, value)


def _production_settings(session):
    """Production's code generation and adaptive query execution on ``session`` while open; then as before."""
    return _settings(session, _PRODUCTION)


@pytest.fixture
def session_settings(spark):
    """``with session_settings({key: value, ...}):`` those SQL settings on the test session for the block."""
    return lambda settings: _settings(spark, settings)


@pytest.fixture(autouse=True)
def _production_spark_where_marked(request):
    """Tests marked ``production_spark`` run with code generation and adaptive query execution on."""
    if request.node.get_closest_marker("production_spark") is None:
        yield
        return
    with _production_settings(request.getfixturevalue("spark")):
        yield


@pytest.fixture(scope="session")
def production_settings():
    """``with production_settings(spark):`` production's Spark settings, for the module-scoped set-up
    of tests marked ``production_spark`` (made before the marker switches them on for each test)."""
    return _production_settings


@pytest.fixture(scope="session")
def demo_run(spark, tmp_path_factory):
    """The demo (``examples/demo.py``, 3 arrivals) run once per test process, with production's Spark
    settings: ``{"root", "summary", "out"}`` (its folder, what it returned, what it printed).

    Its tests share it and are in the ``xdist_group`` ``demo`` (one process): the end-to-end demo
    test and the browser checks of its pictures. A test may read the folder and run what leaves its
    tables as they are (a stream with nothing new); it may not change them.
    """
    import io
    from examples.demo import run_demo
    root = tmp_path_factory.mktemp("demo_run") / "demo"
    printed = io.StringIO()
    with _production_settings(spark), contextlib.redirect_stdout(printed):
        summary = run_demo(spark, str(root), arrivals=3)
    return {"root": root, "summary": summary, "out": printed.getvalue()}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup``: the tests of one ``xdist_group`` run in one test process.

    pytest-xdist (3.8) marks a grouped test by appending ``@<group>`` to ``item._nodeid``, which
    pytest 9 no longer reads (a node's id is ``item._id``): without this, the scheduler saw no
    groups, spread a module's tests over both processes, and each process ran the module's
    module-scoped set-up (a cluster, an Airflow stream) again.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import coerce_node_id
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and not item.nodeid.endswith("@" + "_".join(names)):
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")
