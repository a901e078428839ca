"""Writers and roots an operator can trust: table creation that crashed, concurrent runs, resets, backfill ids.

On real Delta tables, real threads and real processes.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pyspark.sql import types as T

from pipelines.errors import ExitCode
from racing import REFUSED, race
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.spark.lake import delta_lake_io
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark import ConcurrentWriterError

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("writers")]

SCHEMA = "id long, k string, ts long, v long"
BATCHES = [
    [(1, "a", 1, 1), (2, "b", 4, 2), (3, "a", 9, 3)],
    [(4, "a", 12, 4), (5, "b", 15, 5), (6, "a", 3, 6), (7, None, 5, 7)],   # a LATE pane; a quarantined row
    [(8, "b", 31, 8), (9, "a", 2, 9), (8, "b", 31, 8)],                    # ts=2: late table; id 8 again: a duplicate
]
OUTPUTS = ("results_path", "late_path", "quarantine_path")
# The JVMs of short winjob processes on a few rows: the C1 compiler alone (about half the CPU).
C1_ONLY = " ".join(filter(None, [os.environ.get("JAVA_TOOL_OPTIONS"), "-XX:TieredStopAtLevel=1"]))


def spec():
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .allowed_lateness(5).side_output_late_data().deduplicate("id", 100).aggregate(s=Sum("v"), n=Count()))


def rows_of(spark, path):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def run_batches(spark, root, batches=BATCHES, operator=None):
    op = operator or SparkWindowOperator.on_delta(spark, spec(), "op", root)
    for b, rows in enumerate(batches):
        op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
    return op


@pytest.fixture(scope="module")
def first_batch_root(spark, tmp_path_factory):
    """A root where one operator has written batch 0 (its tables created), to be copied by :func:`after_first_batch`."""
    root = tmp_path_factory.mktemp("first_batch") / "s"
    run_batches(spark, str(root), BATCHES[:1])
    return root


def after_first_batch(first_batch_root, folder):
    """A root of its own where batch 0 is committed: a copy of ``first_batch_root`` (a Delta table's log
    names its files relative to the table, so the copied folder holds the same tables)."""
    root = Path(folder) / "s"
    shutil.copytree(first_batch_root, root)
    return str(root)


@pytest.fixture(scope="module")
def clean(spark, tmp_path_factory):
    op = run_batches(spark, str(tmp_path_factory.mktemp("clean")))
    return {table: rows_of(spark, getattr(op.store, table)) for table in OUTPUTS}


# ------------------------------------------------------------------ table creation that crashed
def test_a_root_whose_tables_were_left_half_created_is_repaired_by_the_next_run(spark, tmp_path, clean):
    """A crash while a table is first created leaves its folder with an empty ``_delta_log``; a crash
    before the first claim file was written, an empty claims folder."""
    root = tmp_path / "s"
    for table in ("windows", "progress", "claims", "seen_ids", "results", "late", "quarantine"):
        (root / "op" / table / "_delta_log").mkdir(parents=True)
    (root / "op" / "claims" / "_claims" / "_delta_log").mkdir(parents=True)
    (root / "op" / "results" / "part-00000-left-over.parquet").write_text("not parquet")  # an append that died
    op = run_batches(spark, str(root))
    assert {table: rows_of(spark, getattr(op.store, table)) for table in OUTPUTS} == clean
    assert [r.batch_id for r in spark.read.format("delta").load(op.store.progress_path).collect()] != []


def test_create_empty_repairs_a_log_without_commit_and_never_touches_a_table(spark, tmp_path):
    schema = T.StructType([T.StructField("k", T.StringType()), T.StructField("end_bucket", T.LongType())])
    empty_log = tmp_path / "empty_log"
    (empty_log / "_delta_log").mkdir(parents=True)
    delta_lake_io.create_empty(spark, schema, str(empty_log), ["end_bucket"])
    table = spark.read.format("delta").load(str(empty_log))
    assert table.schema.names == ["k", "end_bucket"] and table.count() == 0
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{empty_log}`").first()
    assert detail.partitionColumns == ["end_bucket"]
    assert detail.properties.get("delta.enableDeletionVectors") == "true"

    stray = tmp_path / "stray"
    (stray / "_delta_log").mkdir(parents=True)
    (stray / "part-00000.parquet").write_text("a data file of a write that never committed")
    delta_lake_io.create_empty(spark, schema, str(stray))
    assert spark.read.format("delta").load(str(stray)).count() == 0

    # A log that holds a commit is a table, even one this release cannot read: never touched.
    broken = tmp_path / "broken"
    (broken / "_delta_log").mkdir(parents=True)
    commit = broken / "_delta_log" / "00000000000000000000.json"
    commit.write_text("{not json")
    with pytest.raises(Exception):
        delta_lake_io.create_empty(spark, schema, str(broken))
    assert commit.read_text() == "{not json"


def test_two_creators_of_one_table_both_succeed(spark, tmp_path):
    schema = T.StructType([T.StructField("k", T.StringType())])
    for round_ in range(3):
        path = str(tmp_path / f"t{round_}")
        barrier, errors = threading.Barrier(2), []

        def create():
            barrier.wait()
            try:
                delta_lake_io.create_empty(spark, schema, path)
            except Exception as error:  # noqa: BLE001 - reported by the assertion
                errors.append(error)
        threads = [threading.Thread(target=create) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and spark.read.format("delta").load(path).schema.names == ["k"]


def test_a_table_another_process_created_after_this_session_looked_is_found(spark, tmp_path):
    """The session looked at a folder while another creator had only begun (a ``_delta_log``, no
    commit); that creator's commit then lands outside this JVM (a commit file, as another process
    writes it). Delta's cached view still says "no table": ``table_exists`` must not, and a
    creation here must use the landed table, neither refuse it nor commit again."""
    schema = T.StructType([T.StructField("k", T.StringType())])
    made, racing = tmp_path / "made", tmp_path / "racing"
    delta_lake_io.create_empty(spark, schema, str(made))
    (racing / "_delta_log").mkdir(parents=True)
    assert not delta_lake_io.table_exists(spark, str(racing))          # the session's view: no commit yet
    commits = sorted(p.name for p in (made / "_delta_log").glob("*.json"))
    for name in commits:
        shutil.copy(made / "_delta_log" / name, racing / "_delta_log" / name)

    assert delta_lake_io.table_exists(spark, str(racing))
    delta_lake_io.create_empty(spark, schema, str(racing))
    assert sorted(p.name for p in (racing / "_delta_log").glob("*.json")) == commits
    assert spark.read.format("delta").load(str(racing)).schema.names == ["k"]


def test_keyed_state_table_left_half_created_is_repaired(spark, tmp_path):
    from windowing.spark.keyed.state import KeyedStateTable, state_schema
    path = tmp_path / "keyed_state"
    (path / "_delta_log").mkdir(parents=True)
    table = KeyedStateTable(spark, str(path), "op")
    table.ensure(state_schema([T.StructField("k", T.StringType())]))
    assert table.rows() == []


# ------------------------------------------------------------------ concurrent writers
def test_of_two_operators_racing_on_each_batch_exactly_one_writes_it(spark, tmp_path, clean):
    """Two runs of one operator on one root, released together on every batch (three rounds).

    Exactly one writes each batch; the other raises ConcurrentWriterError before
    writing anything; the outputs equal one run's, no row doubled.
    """
    root = str(tmp_path / "s")
    ops = {name: SparkWindowOperator.on_delta(spark, spec(), "op", root) for name in ("w1", "w2")}

    def prepare(name, b):
        df = spark.createDataFrame(BATCHES[b], SCHEMA)
        return lambda: "skipped" if ops[name].process_batch(df, b).skipped else "committed"

    outcomes = race(ops, range(len(BATCHES)), prepare)
    for b in range(len(BATCHES)):
        assert sorted(outcomes[name][b] for name in ops) == ["committed", REFUSED], (b, outcomes)
    assert {table: rows_of(spark, getattr(ops["w1"].store, table)) for table in OUTPUTS} == clean
    progress = spark.read.format("delta").load(ops["w1"].store.progress_path)
    assert sorted(r.batch_id for r in progress.collect()) == [0, 1, 2]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _claim_as(store, batch_id, writer_id, pid, monkeypatch):
    """A claim of ``batch_id`` written as process ``pid`` would (a run that then crashed or still runs)."""
    from windowing.spark.lake import claims
    with monkeypatch.context() as patch:
        patch.setattr(claims.os, "getpid", lambda: pid)
        store.claims._append(batch_id, 0, writer_id, None)


def test_a_live_runs_batch_is_refused_and_a_dead_runs_batch_is_taken_over(spark, tmp_path, clean, monkeypatch,
                                                                         first_batch_root):
    root = after_first_batch(first_batch_root, tmp_path)
    op = SparkWindowOperator.on_delta(spark, spec(), "op", root)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        _claim_as(op.store, 1, "other-run", live.pid, monkeypatch)
        second = SparkWindowOperator.on_delta(spark, spec(), "op", root)
        with pytest.raises(ConcurrentWriterError, match=rf"batch 1 is being written by writer other-run .*"
                                                        rf"process {live.pid}"):
            second.process_batch(spark.createDataFrame(BATCHES[1], SCHEMA), 1)
        assert spark.read.format("delta").load(op.store.progress_path).count() == 1
    finally:
        live.kill()
        live.wait()
    # The claimant is gone now: the next run takes its batch over.
    third = SparkWindowOperator.on_delta(spark, spec(), "op", root)
    run_batches(spark, root, BATCHES, operator=third)
    assert {table: rows_of(spark, getattr(third.store, table)) for table in OUTPUTS} == clean

    # A claim of a process that ended before the batch committed: taken over at once.
    root2 = after_first_batch(first_batch_root, tmp_path / "second")
    op2 = SparkWindowOperator.on_delta(spark, spec(), "op", root2)
    _claim_as(op2.store, 1, "crashed-run", _dead_pid(), monkeypatch)
    run_batches(spark, root2, BATCHES, operator=SparkWindowOperator.on_delta(spark, spec(), "op", root2))
    assert {table: rows_of(spark, getattr(op2.store, table)) for table in OUTPUTS} == clean


@pytest.mark.parametrize("stage", ["start", "after_outputs", "before_progress"])
def test_a_batch_that_crashed_in_this_process_is_taken_over_by_the_next_operator(spark, tmp_path, clean, stage,
                                                                                  first_batch_root):
    """On a root where batch 0 is committed: batch 1 crashes at ``stage``; a new operator takes it over."""
    class Crash(Exception):
        pass

    def fault(at):
        if at == stage and state["batch"] == 1:
            raise Crash(at)
    state = {"batch": None}
    root = after_first_batch(first_batch_root, tmp_path)
    op = SparkWindowOperator.on_delta(spark, spec(), "op", root, fault_injection=fault)
    for b, rows in enumerate(BATCHES[1:], start=1):
        state["batch"] = b
        try:
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
        except Crash:
            op = SparkWindowOperator.on_delta(spark, spec(), "op", root)
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
    assert {table: rows_of(spark, getattr(op.store, table)) for table in OUTPUTS} == clean


# ------------------------------------------------------------------ resets and the drivers' batch ids
@pytest.fixture(scope="module")
def demo_raw(spark, tmp_path_factory):
    """The demo's raw table with 300 purchases over 6 minutes, to be copied by :func:`demo`."""
    from examples.demo import generate_purchases, land
    path = tmp_path_factory.mktemp("demo_raw") / "purchases"
    land(spark, generate_purchases(n_events=300, minutes=6), str(path))
    return path


@pytest.fixture()
def demo(tmp_path, demo_raw):
    """The demo job (without the drivers' own validation) in a root of its own, its raw table a copy of ``demo_raw``."""
    from job_files import demo_job_file
    from pipelines.job import load_job
    job_file = demo_job_file(tmp_path)
    root = tmp_path / "demo"
    job = load_job(job_file, root=root)
    shutil.copytree(demo_raw, job.source_path)
    return job_file, root, job


def _results(spark, job):
    return spark.read.format("delta").load(job.results_path)


def test_a_backfill_with_reset_state_writes_what_it_recomputes(spark, demo, capsys):
    from pipelines.cli import main as winjob
    from pipelines.drivers import run_backfill
    from pipelines.job import load_job
    job_file, root, job = demo
    run_backfill(spark, job, chunk="2 minutes")
    one_minute = _results(spark, job).count()
    assert one_minute > 0
    job_file.write_text(job_file.read_text().replace('size = "1 minute"', 'size = "2 minutes"'))
    assert winjob(["backfill", "--job", str(job_file), "--root", str(root), "--chunk", "2 minutes"]) == 2
    assert "--reset-state" in capsys.readouterr().err            # another spec: refused, nothing written
    assert winjob(["backfill", "--job", str(job_file), "--root", str(root), "--chunk", "2 minutes",
                   "--reset-state"]) == 0
    two_minutes = _results(spark, job).where("window_end_ms - window_start_ms = 120000")
    assert two_minutes.count() > 0
    total = two_minutes.groupBy().sum("purchases").first()[0]
    job2 = load_job(job_file, root=root)
    assert total == _results(spark, job2).where("window_end_ms - window_start_ms = 60000") \
        .groupBy().sum("purchases").first()[0]                  # every valid purchase in both generations
    # A rerun of the reset backfill resumes the new generation: nothing written twice.
    assert all(r.skipped for r in run_backfill(spark, job2, chunk="2 minutes"))
    assert _results(spark, job2).count() == one_minute + two_minutes.count()


def test_a_stream_with_a_new_checkpoint_and_reset_state_writes_what_it_recomputes(spark, demo):
    from pipelines.drivers import run_stream
    _, _, job = demo
    first = run_stream(spark, job)
    before = _results(spark, job).count()
    assert before > 0 and not any(r.skipped for r in first)
    fresh = dataclasses.replace(job, checkpoint_path=job.checkpoint_path + "_new")
    again = run_stream(spark, fresh, reset_state=True)
    assert [r.batch_id for r in again] == [0] and not again[0].skipped
    assert again[0].metrics.panes_emitted > 0
    assert _results(spark, job).count() == before + again[0].metrics.panes_emitted


def test_backfill_and_stream_refuse_each_others_state(spark, demo, capsys):
    from pipelines.cli import main as winjob
    from pipelines.drivers import run_backfill, run_stream
    job_file, root, job = demo
    run_stream(spark, job)
    before = sorted(tuple(r) for r in _results(spark, job).collect())
    with pytest.raises(ValueError, match="written by a stream .*this run is a backfill"):
        run_backfill(spark, job)
    assert winjob(["backfill", "--job", str(job_file), "--root", str(root)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("winjob backfill:")]
    assert len(err) == 1 and "--reset-state" in err[0]
    assert sorted(tuple(r) for r in _results(spark, job).collect()) == before
    backfill = job.with_operator("purchases_backfill", "backfill")
    run_backfill(spark, backfill)   # the job's 10-minute chunks: one chunk of the 6 minutes, which ends the input
    with pytest.raises(ValueError, match="written by a backfill of .*this run is a stream"):
        run_stream(spark, dataclasses.replace(backfill, checkpoint_path=str(Path(job.checkpoint_path) / "b")))
    with pytest.raises(ValueError, match="this run is a backfill of"):                  # another range of chunks
        run_backfill(spark, backfill, chunk="3 minutes")


def test_two_stream_processes_on_one_root_never_both_land_a_batch(spark, demo):
    """Two ``winjob stream`` processes started together: one lands the batch, the other fails with one line."""
    job_file, root, job = demo
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                      os.environ.get("PYTHONPATH", "")]),
               JAVA_TOOL_OPTIONS=C1_ONLY)
    command = [sys.executable, "-m", "pipelines.cli", "stream", "--job", str(job_file), "--root", str(root)]
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    outcomes = []
    for run in runs:
        _, err = run.communicate(timeout=600)
        outcomes.append((run.returncode, err))
    codes = sorted(code for code, _ in outcomes)
    # What each run said (its log lines and its last line), without Spark's own logging.
    said = [(code, [line for line in err.splitlines() if line.startswith(("winjob", "["))]) for code, err in outcomes]
    results = _results(spark, job)
    duplicates = results.groupBy("user_id", "window_start_ms", "pane_index").count().where("count > 1").count()
    assert duplicates == 0, outcomes
    assert results.count() > 0
    for table in (job.late_path, job.quarantine_path):
        rows = spark.read.format("delta").load(table)
        assert rows.count() == rows.distinct().count(), table
    progress = spark.read.format("delta").load(f"{job.state_root}/{job.operator_id}/progress")
    assert progress.count() == progress.select("batch_id").distinct().count()
    if codes != [0, 0]:          # both may succeed when one finished before the other began
        assert codes == [0, ExitCode.CONFLICT], said
        loser = next(err for code, err in outcomes if code == ExitCode.CONFLICT)
        last = [line for line in loser.strip().splitlines() if line.startswith("winjob stream:")]
        assert len(last) == 1 and ("being written by" in last[0] or "another run" in last[0]
                                   or "already committed" in last[0]), loser[-2000:]


def test_a_claim_on_another_host_is_taken_over_only_when_the_operator_names_its_writer(monkeypatch):
    from windowing.spark.lake.claims import TAKE_OVER_ENV, Claim, is_running
    remote = Claim("w-remote", "some-other-host", 4242, "123", None)
    monkeypatch.delenv(TAKE_OVER_ENV, raising=False)
    assert is_running(remote)                              # cannot be told: never taken over by itself
    monkeypatch.setenv(TAKE_OVER_ENV, "w-someone-else")
    assert is_running(remote)                              # another writer named: still refused
    monkeypatch.setenv(TAKE_OVER_ENV, "w-remote")
    assert not is_running(remote)


@pytest.mark.parametrize("condition", ["CONCURRENT_STREAM_LOG_UPDATE", "CONCURRENT_QUERY", "_LEGACY_ERROR_TEMP_2207"])
def test_spark_messages_of_a_shared_checkpoint_read_as_a_conflict(condition):
    """The texts Spark's installed jars give these error conditions are the ones the stream driver maps to exit 4."""
    import glob
    import json
    import zipfile

    import pyspark
    from pipelines.drivers import checkpoint_conflict
    jar, = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-common-utils_*.jar"))
    with zipfile.ZipFile(jar) as archive:
        conditions = json.loads(archive.read("error/error-conditions.json"))
    message = " ".join(conditions[condition]["message"])
    assert checkpoint_conflict(message), message
    assert not checkpoint_conflict("DELTA_TABLE_NOT_FOUND: table not found")
