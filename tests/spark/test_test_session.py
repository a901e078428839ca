"""The test session's Spark settings (tests/conftest.py) and the in-memory store's frames.

Test settings unless a test is marked.
"""
from __future__ import annotations

import contextlib
import os

import pytest

from windowing.spark.input.prepare import count_each

pytestmark = pytest.mark.spark


@contextlib.contextmanager
def py4j_commands():
    """The py4j commands this process sends while open, each as its kind (``c`` a call, ``i`` a
    constructor, ``r`` a reflection lookup) or, for a memory command, its subcommand (``d`` a delete)."""
    from py4j import clientserver
    sent: list[str] = []
    send = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        kind, rest = command.split("\n", 1)
        sent.append(rest.split("\n", 1)[0] if kind == "m" else kind)
        return send(self, command)
    clientserver.ClientServerConnection.send_command = counting
    try:
        yield sent
    finally:
        clientserver.ClientServerConnection.send_command = send


def _inferred_filters(spark) -> int:
    """How many filters on ``= 1`` the optimizer leaves in a join whose one side alone is filtered:
    2 when it infers the other side's filter from the join's constraints, 1 when it does not."""
    left = spark.range(4).where("id = 1")
    right = spark.range(4).withColumnRenamed("id", "j")
    return left.join(right, left.id == right.j)._jdf.queryExecution().optimizedPlan().toString().count(" = 1)")


def _listener_plan_description(spark) -> str:
    """The plan description Spark's status listener got for the session's newest query."""
    spark.range(3).selectExpr("id + 1 AS x").collect()
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    return executions.apply(executions.size() - 1).physicalPlanDescription()


def test_unmarked_tests_run_interpreted_without_adaptive_execution(spark):
    if os.environ.get("WINDOWING_TEST_PRODUCTION_SPARK") == "1":
        pytest.skip("WINDOWING_TEST_PRODUCTION_SPARK=1: the whole suite runs with production's settings")
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
    plan = spark.range(4).selectExpr("id % 2 AS k").groupBy("k").count()._jdf.queryExecution() \
        .executedPlan().toString()
    assert "AdaptiveSparkPlan" not in plan and "WholeStageCodegen" not in plan
    assert _inferred_filters(spark) == 1
    assert "(1) Range" not in _listener_plan_description(spark)


@pytest.mark.production_spark
def test_marked_tests_run_with_code_generation_and_adaptive_execution(spark):
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    plan = spark.range(3).selectExpr("id + 1 AS x")._jdf.queryExecution().executedPlan().toString()
    assert "WholeStageCodegen" in plan or "*(" in plan
    shuffled = spark.range(4).selectExpr("id % 2 AS k").groupBy("k").count()
    assert "AdaptiveSparkPlan" in shuffled._jdf.queryExecution().executedPlan().toString()
    assert _inferred_filters(spark) == 2
    assert "(1) Range" in _listener_plan_description(spark)


def test_count_each_counts_every_frame(spark):
    df = spark.range(10)
    assert count_each({"even": df.where("id % 2 = 0"), "none": df.where("id < 0"), "all": df}) == \
        {"even": 5, "none": 0, "all": 10}
    assert count_each({}) == {}


def test_memory_store_frames_are_local_relations_for_flat_columns(spark):
    import decimal
    import datetime as dt
    from pyspark.sql import types as T
    from windowing.spark.runtime.local_frames import local_frame
    flat = T.StructType([T.StructField("k", T.StringType()), T.StructField("n", T.LongType()),
                         T.StructField("x", T.DoubleType()), T.StructField("ok", T.BooleanType()),
                         T.StructField("d", T.DecimalType(10, 2))])
    rows = [("a", 2**62, 0.5, True, decimal.Decimal("1.25")), (None, None, None, None, None)]
    frame = local_frame(spark, rows, flat)
    assert "LocalTableScan" in frame._jdf.queryExecution().executedPlan().toString()
    assert frame.schema == flat and [tuple(r) for r in frame.collect()] == rows
    empty = local_frame(spark, [], flat)
    assert empty.schema == flat and empty.count() == 0
    # A timestamp column keeps createDataFrame's list path (its time-zone reading of Python datetimes).
    timed = T.StructType([T.StructField("t", T.TimestampType())])
    when = dt.datetime(2026, 11, 1, 9, 30)
    frame = local_frame(spark, [(when,)], timed)
    assert frame.collect()[0]["t"] == when
    assert "LocalTableScan" not in frame._jdf.queryExecution().executedPlan().toString()
    # Datetimes that know their time zone (the progress and claim rows' commit times) are instants:
    # a local relation, read back as the same instant.
    aware = [dt.datetime(2026, 11, 1, 9, 30, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2))), None]
    frame = local_frame(spark, [(t,) for t in aware], timed)
    assert "LocalTableScan" in frame._jdf.queryExecution().executedPlan().toString()
    assert frame.selectExpr("unix_micros(t) AS us").collect() == \
        [(1_793_518_200_123_456,), (None,)]


def test_the_test_jvm_runs_the_parallel_collector_with_the_test_java_options(spark):
    """The test session's JVM got ``TEST_JAVA_OPTIONS`` (checked, because a session started before the
    options reach it would silently keep G1 and the default thresholds)."""
    from conftest import TEST_JAVA_OPTIONS
    jvm = spark._jvm.java.lang.management.ManagementFactory
    arguments = list(jvm.getRuntimeMXBean().getInputArguments())
    assert set(TEST_JAVA_OPTIONS.split()) <= set(arguments), arguments
    collectors = {bean.getName() for bean in jvm.getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}, collectors


def test_a_jobs_driver_java_options_reach_the_driver_jvm(tmp_path):
    """``spark.driver.extraJavaOptions`` in a job's ``[spark]`` table (how a short local run asks for the
    quick JIT tier) reaches the JVM ``get_spark`` starts: checked in a process of its own."""
    import subprocess
    import sys
    from windowing.spark.runtime.spark_session import QUICK_JIT_JAVA_OPTIONS
    script = ("from windowing.spark.runtime.spark_session import get_spark\n"
              f"s = get_spark('jit', conf={{'spark.driver.extraJavaOptions': {QUICK_JIT_JAVA_OPTIONS!r}}})\n"
              "print(list(s._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()))\n"
              "s.stop()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    assert QUICK_JIT_JAVA_OPTIONS in done.stdout


def test_a_column_function_is_resolved_in_the_jvm_once_then_only_called(spark):
    """``F.col`` and friends send one py4j command each once resolved (``py4j_calls``), and build
    the same columns: the JVM method is the same."""
    from pyspark.sql import functions as F

    from windowing.spark.runtime import py4j_calls
    assert py4j_calls.install(spark.sparkContext._gateway)["lookups"]
    F.col("warm"), F.lit(0)             # resolved once per gateway
    with py4j_commands() as sent:
        column = F.col("id") + F.lit(1)
    assert "r" not in sent, sent        # no reflection lookups
    assert sent.count("c") == 3, sent   # col, lit, plus
    assert [row[0] for row in spark.range(3).select(column.alias("x")).collect()] == [1, 2, 3]


def test_a_list_goes_to_the_jvm_ten_elements_a_call(spark):
    """A Python list reaches Java as the same ``ArrayList`` (elements, order, nested lists, nulls), with
    a call per ten elements instead of one per element (``py4j_calls``)."""
    from pyspark.sql import functions as F

    from windowing.spark.runtime import py4j_calls
    assert py4j_calls.install(spark.sparkContext._gateway)["lists"]
    jvm = spark.sparkContext._jvm
    columns = [F.col(f"c{i}")._jc for i in range(23)]
    with py4j_commands() as sent:
        seq = jvm.PythonUtils.toSeq(columns)
    assert seq.mkString(",") == ",".join(f"c{i}" for i in range(23))
    assert sent.count("c") + sent.count("i") <= 7, sent     # ArrayList, 3 x List.of, 2 x addAll, toSeq
    assert jvm.PythonUtils.toSeq([1, None, "x", [2, 3], []]).mkString("|") == "1|null|x|[2, 3]|[]"
    frame = spark.range(2).select(*[F.lit(i).alias(f"v{i}") for i in range(12)])
    assert frame.columns == [f"v{i}" for i in range(12)] and frame.first()["v11"] == 11


def test_released_jvm_objects_leave_the_gateway_in_batches(spark):
    """Proxies Python drops are deleted from the gateway's bindings together (``py4j_calls``): the
    table does not grow with the columns a plan builds, live objects stay usable, and a release sends
    no delete command of its own."""
    import gc
    import time

    from pyspark.sql import functions as F

    from windowing.spark.runtime import py4j_calls
    gateway = spark.sparkContext._gateway
    assert py4j_calls.install(gateway)["releases"] and py4j_calls.install(gateway)["releases"]   # idempotent
    bindings = gateway.java_gateway_server.getGateway().getBindings()
    kept = F.col("kept") + F.lit(1)
    before = bindings.size()
    with py4j_commands() as sent:
        for i in range(4 * py4j_calls.RELEASE_BATCH):
            F.col(f"c{i}")                     # dropped at once
        gc.collect()
        deadline = time.monotonic() + 30
        while bindings.size() > before + py4j_calls.RELEASE_BATCH + 8 and time.monotonic() < deadline:
            time.sleep(0.1)                    # py4j's finalizer thread drains its queue
    assert bindings.size() <= before + py4j_calls.RELEASE_BATCH + 8, (before, bindings.size())
    assert sent.count("d") == 0, "released one by one"
    assert [r.x for r in spark.range(2).withColumnRenamed("id", "kept").select(kept.alias("x")).collect()] == [1, 2]


def test_the_jars_dev_fetched_are_found_without_the_jars_variable(monkeypatch):
    """A process started outside ./dev (an Airflow task, a plain script) finds the Delta and S3A
    jars in the repository's .jars folder."""
    from pathlib import Path

    from windowing.spark.runtime.spark_session import delta_jars, object_store_jars
    jars = Path(__file__).resolve().parents[2] / ".jars"
    expected_delta = sorted(str(p) for p in jars.glob("delta-*.jar"))
    if not expected_delta:
        pytest.skip("./dev has not fetched the jars into .jars")
    monkeypatch.delenv("WINDOWING_JARS_DIR", raising=False)
    assert delta_jars() == expected_delta
    assert object_store_jars() == sorted(str(p) for p in (jars / "s3a").glob("*.jar"))
