"""The DAGs in dags/: integrity, and real ``dag.test()`` runs on embedded Spark and Delta.

``dag.test()`` runs the tasks in this process with a real Airflow metadata
database (SQLite in a temporary AIRFLOW_HOME), so the tasks reuse the test
run's SparkSession.
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
OWN_HOME = None
if "airflow" not in sys.modules:
    # Airflow reads its home when first imported: give this test run a database of its own
    # (removed when the module's tests are done, see ``airflow_home_removed``).
    OWN_HOME = os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="airflow-home-tests-")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
# Airflow's logging setup lets py4j's INFO messages through, even at interpreter exit.
logging.getLogger("py4j").setLevel(logging.WARNING)

pytestmark = [pytest.mark.airflow, pytest.mark.xdist_group("airflow_dags")]  # module-scoped fixtures: one test process
UTC = dt.timezone.utc
DAG_FILES = sorted((REPO / "dags").glob("*.py"))
DEMO = REPO / "jobs" / "purchases_per_minute.toml"
JOIN_JOB = REPO / "jobs" / "joins" / "clicks_orders.toml"


@pytest.fixture(scope="module", autouse=True)
def airflow_home_removed():
    """The temporary AIRFLOW_HOME this module made goes when its tests are done (it held only test runs)."""
    yield
    if OWN_HOME:
        shutil.rmtree(OWN_HOME, ignore_errors=True)


@pytest.fixture(scope="module")
def airflow_db():
    from airflow.utils import db
    db.initdb()
    yield


def dagbag():
    from airflow.dag_processing.dagbag import DagBag
    return DagBag(dag_folder=str(REPO / "dags"))


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    """Jobs' relative tables under a temporary folder; only the demo job gets DAGs (as shipped)."""
    monkeypatch.setenv("WINDOWING_DATA_ROOT", str(tmp_path))
    monkeypatch.setenv("WINDOWING_AIRFLOW_JOBS", str(DEMO))
    return tmp_path


@pytest.fixture
def quiet_job(data_root, monkeypatch) -> Path:
    """The demo job file with ``[quality] validate_runs = false`` and 1-hour backfill chunks; the only job with DAGs.

    For the runs whose point is what they write: the tasks then skip the Great
    Expectations validation that the drivers otherwise run after each batch (a
    deployment with the quality DAG sets it so; what the quality task validates is
    shown in ``test_quality_task_validates_what_a_streaming_run_wrote``; the drivers'
    own validation in test_quality.py and test_bad_input.py), and a
    backfill or reprocessing run of an hour is one batch instead of six chunks
    and a flush, each a round of Delta commits (chunking is tested with the
    drivers: test_pipelines.py, test_bad_input.py).
    """
    path = _quiet_job_file(data_root)
    monkeypatch.setenv("WINDOWING_AIRFLOW_JOBS", str(path))
    return path


def _quiet_job_file(folder: Path) -> Path:
    from job_files import demo_job_file
    return demo_job_file(folder, replace={'backfill_chunk = "10 minutes"': 'backfill_chunk = "1 hour"'})


def _use_root(patch, root: Path) -> None:
    """The DAGs' jobs (the quiet job file in ``root``) with their tables under ``root``."""
    patch.setenv("WINDOWING_DATA_ROOT", str(root))
    patch.setenv("WINDOWING_AIRFLOW_JOBS", str(root / "purchases_per_minute.toml"))


@pytest.fixture(scope="module")
def streamed(spark, airflow_db, tmp_path_factory):
    """The streaming DAG run by ``dag.test()`` before anything landed and after each of two arrivals
    (1,200 purchases), and the driver run on the same arrivals in another root (the twin).

    Shared by the tests that read a stream's tables without changing them: the streaming DAG's
    checks, the replay of its batches (into tables of its own) and the backfill DAG (it reads the
    raw table and writes the backfill tables). A test that changes the stream's tables works on a
    copy of the root (:func:`copy_of_streamed`).
    """
    from examples.demo import generate_purchases
    from pipelines.drivers import run_stream
    from pipelines.job import load_job
    root, twin_root = tmp_path_factory.mktemp("streamed"), tmp_path_factory.mktemp("twin")
    job_file = _quiet_job_file(root)
    job, twin = load_job(job_file, root=root), load_job(job_file, root=twin_root)
    rows = generate_purchases(n_events=1200)
    with pytest.MonkeyPatch.context() as patch:
        _use_root(patch, root)
        dag = dagbag().dags["purchases_per_minute_streaming"]
        runs = [dag.test()]   # nothing has landed yet: no raw table
        for arrival in (rows[:600], rows[600:]):
            _land(spark, job, arrival)
            runs.append(dag.test())
            _land(spark, twin, arrival)
            run_stream(spark, twin, validate=False)  # the baseline: its validation adds nothing here
    states = [(run.state, _task_state(run)) for run in runs]
    return SimpleNamespace(root=root, job_file=job_file, job=job, twin=twin, rows=rows, states=states)


@pytest.fixture
def on_streamed(streamed, monkeypatch):
    """The DAGs' job is the streamed root's (see :func:`streamed`)."""
    _use_root(monkeypatch, streamed.root)
    return streamed


@pytest.fixture
def copy_of_streamed(streamed, tmp_path, monkeypatch):
    """A copy of the streamed root for a test that changes its tables; the DAGs' job is the copy's.

    A copied folder holds the same Delta tables: their logs name data files relative to the table.
    """
    from pipelines.job import load_job
    root = tmp_path / "streamed"
    shutil.copytree(streamed.root, root)
    _use_root(monkeypatch, root)
    return SimpleNamespace(root=root, job=load_job(root / "purchases_per_minute.toml", root=root), rows=streamed.rows)


# ---------------------------------------------------------------- integrity
def test_dagbag_has_no_import_errors_and_every_dag_is_documented(monkeypatch):
    monkeypatch.delenv("WINDOWING_AIRFLOW_JOBS", raising=False)
    bag = dagbag()
    assert bag.import_errors == {}
    from pipelines.job import load_job
    names = {path.stem: load_job(path).name for path in (REPO / "jobs").glob("*.toml")}
    jobs = set(names.values())   # every job file gets its DAGs
    assert {"purchases_per_minute", "sensor_sliding", "custom_trigger"} <= jobs
    joins = {load_job(path).name for path in (REPO / "jobs" / "joins").glob("*.toml")}
    assert "clicks_orders" in joins
    # Every shipped job is named after its file: the DAG ids say which file they run.
    assert {stem: name for stem, name in names.items() if stem != name} == {}
    kinds = {"streaming", "backfill", "reprocess", "quality"}
    # A join job gets the same four DAGs.
    assert set(bag.dags) == {f"{j}_{k}" for j in jobs | joins for k in kinds}
    for dag_id, dag in bag.dags.items():
        assert dag.doc_md and len(dag.doc_md) > 100, dag_id
        assert dag.description and dag.description.startswith(dag_id.rsplit("_", 1)[0] + ": "), dag_id
        assert "windows of" in dag.doc_md and "Sum(" not in dag.doc_md and "Projection(" not in dag.doc_md, dag_id
        assert "data_docs/index.html](file://" in dag.doc_md
        if dag_id.rsplit("_", 1)[0] in joins:
            continue   # a join job's documentation: test_a_join_jobs_dags_say_what_they_run
        # The spec in words, not a Python repr; links to the Data Docs and the quality report.
        assert "Computes " in dag.doc_md and "quality_report.html](file://" in dag.doc_md
        assert dag.tags and "windowing" in dag.tags, dag_id
        assert dag.max_active_runs == 1, dag_id
        for t in dag.tasks:
            assert t.owner == "windowing", (dag_id, t.task_id)
            assert t.retries >= 1, (dag_id, t.task_id)
    streaming = bag.dags["purchases_per_minute_streaming"]
    assert streaming.catchup is False and streaming.timetable.expression == "*/5 * * * *"
    # The quality DAG is data-aware: scheduled on the three results assets of its job.
    quality = bag.dags["purchases_per_minute_quality"]
    uris = {asset.uri for asset in quality.timetable.asset_condition.objects}
    outlets = {bag.dags[f"purchases_per_minute_{k}"].tasks[0].outlets[0].uri
               for k in ("streaming", "backfill", "reprocess")}
    assert uris == outlets and len(uris) == 3
    assert {asset.name for asset in quality.timetable.asset_condition.objects} == {
        "purchases_per_minute.results", "purchases_per_minute.results_backfill", "purchases_per_minute.reprocessed"}
    demo_doc = streaming.doc_md
    assert ("Tumbling windows of 1 minute, per user_id; event time from `event_time`, up to 10 seconds out of "
            "order.") in demo_doc
    assert "items = sum(item_count)" in demo_doc and "item_count outside [1, 100] or null" in demo_doc


def test_a_join_jobs_dags_say_what_they_run(monkeypatch, tmp_path):
    """The join example's DAGs: a streaming run over both inputs, a backfill and a reprocessing DAG by range,
    a quality DAG on the three results assets, with the join in words (both inputs, keys, kind, window) and no
    report task."""
    monkeypatch.setenv("WINDOWING_DATA_ROOT", str(tmp_path))
    monkeypatch.setenv("WINDOWING_AIRFLOW_JOBS", str(JOIN_JOB))
    bag = dagbag()
    assert bag.import_errors == {}
    assert set(bag.dags) == {f"clicks_orders_{k}" for k in ("streaming", "backfill", "reprocess", "quality")}
    backfill, reprocess = bag.dags["clicks_orders_backfill"], bag.dags["clicks_orders_reprocess"]
    assert "Backfill of a join job" in backfill.doc_md and "quarantine_backfill" in backfill.doc_md
    assert "Reprocess a time range of a join job" in reprocess.doc_md
    assert reprocess.params.get_param("mode").schema["enum"] == ["range", "replay"]
    assert backfill.tasks[0].outlets[0].uri == "windowing://clicks_orders/results_backfill"
    streaming, quality = bag.dags["clicks_orders_streaming"], bag.dags["clicks_orders_quality"]
    assert streaming.description == (f"clicks_orders: process what landed in {tmp_path}/raw/clicks and "
                                     f"{tmp_path}/raw/orders, then stop (availableNow)")
    assert ("Joins the left input `raw/clicks` (key user; event time from `click_ms`, up to 5 seconds out of "
            "order) with the right input `raw/orders` (key buyer; event time from `order_ms`") in streaming.doc_md
    assert "An inner window join in tumbling windows of 1 minute" in streaming.doc_md
    assert "allowed lateness 1 minute" in streaming.doc_md and "left ['click_id', 'page']" in streaming.doc_md
    assert "quality_report.html" not in quality.doc_md and "no quality report task" in quality.doc_md
    assert quality.task_ids == ["validate"]
    assert [a.name for a in quality.timetable.asset_condition.objects] == [
        "clicks_orders.results", "clicks_orders.results_backfill", "clicks_orders.reprocessed"]
    assert streaming.tasks[0].outlets[0].uri == "windowing://clicks_orders/results"
    assert streaming.timetable.expression == "*/5 * * * *" and streaming.max_active_runs == 1


@pytest.fixture(scope="module")
def warm_airflow():
    """One parse of the DAGs folder, so that Airflow's own imports are not counted as a DAG file's cost."""
    dagbag()


@pytest.mark.parametrize("path", DAG_FILES, ids=[p.name for p in DAG_FILES])
def test_each_dag_file_parses_in_under_two_seconds(path, warm_airflow):
    from airflow.dag_processing.dagbag import DagBag
    started = time.perf_counter()
    bag = DagBag(dag_folder=str(path))
    elapsed = time.perf_counter() - started
    assert bag.import_errors == {} and bag.dags
    assert elapsed < 2.0, f"{path.name} took {elapsed:.2f}s to parse"


def test_parsing_the_dags_imports_no_spark():
    code = ("import sys\nfrom airflow.dag_processing.dagbag import DagBag\n"
            f"bag = DagBag(dag_folder={str(REPO / 'dags')!r})\n"
            "assert not bag.import_errors, bag.import_errors\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_bad_jobs_list_is_an_import_error_naming_it(monkeypatch):
    monkeypatch.setenv("WINDOWING_AIRFLOW_JOBS", "/nowhere/job.toml")
    errors = dagbag().import_errors
    assert errors and all("/nowhere/job.toml" in text for text in errors.values())


def test_the_airflow_benchmark_runs_spark_in_a_task_shaped_like_the_streaming_task(data_root, tmp_path,
                                                                                   monkeypatch):
    """``bench_doors.py airflow`` compares the streaming task with Spark's script through the same door: the
    DAGs folder it writes holds the product's streaming DAG and DAGs (Spark's side, the profiled runs)
    whose one task has the streaming task's id, operator, pool, retries and schedule."""
    from airflow.dag_processing.dagbag import DagBag
    from pipelines.airflow_local import STREAM_POOL
    from pipelines.job import load_job
    from pipelines.orchestration import STREAM_POOL_ENV
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    monkeypatch.setenv(STREAM_POOL_ENV, STREAM_POOL)            # as LocalAirflow sets it for every task
    from airflow_runs import PROFILED_DAG_ID, PROFILED_SPARK_DAG_ID, SPARK_DAG_ID, TASK_ID, write_dags_folder
    job = load_job(DEMO, root=data_root)
    folder = write_dags_folder(tmp_path / "dags", "/raw", "/checkpoint", "/results", job, str(DEMO))
    bag = DagBag(dag_folder=str(folder))
    assert bag.import_errors == {}
    counterparts = (SPARK_DAG_ID, PROFILED_DAG_ID, PROFILED_SPARK_DAG_ID)
    assert set(bag.dags) == {f"{job.name}_streaming", *counterparts}
    ours = bag.dags[f"{job.name}_streaming"]
    mine = ours.get_task(TASK_ID)
    for dag_id in counterparts:
        theirs = bag.dags[dag_id]
        assert ours.task_ids == theirs.task_ids == [TASK_ID], dag_id
        task = theirs.get_task(TASK_ID)
        assert type(task) is type(mine)
        assert (task.pool, task.retries, task.retry_delay) == (mine.pool, mine.retries, mine.retry_delay)
        assert (theirs.schedule, theirs.start_date, theirs.max_active_runs) == \
            (ours.schedule, ours.start_date, ours.max_active_runs)


# ---------------------------------------------------------------- Spark settings
def test_a_backfill_range_that_wrote_no_row_is_nothing_new():
    """The backfill tasks' skip: no row in any table raises NothingNewError with the message; one row does not."""
    from pipelines import orchestration
    with pytest.raises(orchestration.NothingNewError, match="job j: nothing to backfill"):
        orchestration.require_rows({"results": 0, "late": 0, "quarantine": 0}, "job j: nothing to backfill")
    orchestration.require_rows({"results": 0, "late": 1, "quarantine": 0}, "not raised")


def test_spark_settings_come_from_the_job_then_the_connection():
    from pipelines.job import load_job
    from pipelines.orchestration import spark_conf_for, spark_conf_from_connection
    job = load_job(REPO / "jobs" / "purchases_per_minute.toml")
    conf = spark_conf_for(job)
    assert conf["spark.sql.shuffle.partitions"] == "4"  # the job's [spark] wins over the task default
    assert conf["spark.driver.memory"] in ("1g", os.environ.get("SPARK_DRIVER_MEMORY"))
    assert "spark.master" not in conf  # embedded local Spark
    cluster = spark_conf_from_connection("spark-master", 7077, {"spark.executor.memory": "2g", "queue": "x"})
    assert cluster == {"spark.master": "spark://spark-master:7077", "spark.executor.memory": "2g"}
    assert spark_conf_from_connection("local[2]")["spark.master"] == "local[2]"
    assert spark_conf_from_connection("k8s://https://api:6443")["spark.master"] == "k8s://https://api:6443"
    merged = spark_conf_for(job, cluster)
    assert merged["spark.master"] == "spark://spark-master:7077"
    assert merged["spark.sql.shuffle.partitions"] == "4"
    with pytest.raises(ValueError, match="'spark_prod' has no host"):
        spark_conf_from_connection("", conn_id="spark_prod")


def test_a_job_names_its_spark_connection_and_bad_airflow_settings_are_refused(tmp_path):
    from pipelines.job import load_job
    text = (REPO / "jobs" / "purchases_per_minute.toml").read_text()
    text = text[:text.index("[airflow]")]  # the shipped settings, replaced below
    good = tmp_path / "good.toml"
    good.write_text(text + '\n[airflow]\nspark_conn_id = "spark_cluster"\nstream_schedule = "*/2 * * * *"\n')
    job = load_job(good)
    assert job.airflow.spark_conn_id == "spark_cluster" and job.airflow.stream_schedule == "*/2 * * * *"
    bad = tmp_path / "bad.toml"
    bad.write_text(text + '\n[airflow]\nstream_schedule = "every 5 minutes"\n')
    with pytest.raises(ValueError, match="'every 5 minutes' is not a cron expression"):
        load_job(bad)
    bad.write_text(text + '\n[airflow]\nschedule = "@daily"\n')
    with pytest.raises(ValueError, match=r"unknown keys \['schedule'\]"):
        load_job(bad)


# ---------------------------------------------------------------- dag.test() runs
def _land(spark, job, rows):
    from examples.demo import land
    land(spark, rows, job.source_path)


def _rows(spark, path, *columns):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def _task_state(run, task_id="stream"):
    return {ti.task_id: ti.state for ti in run.get_task_instances()}[task_id]


@pytest.mark.spark
@pytest.mark.slow
def test_streaming_dag_runs_the_stream_and_equals_the_driver(spark, on_streamed, caplog, capfd):
    """Two dag.test() runs with rows landing in between write what the driver writes, nothing twice."""
    job, twin = on_streamed.job, on_streamed.twin
    skipped, *arrivals = on_streamed.states
    assert skipped[1] == "skipped"  # nothing had landed yet: no raw table
    assert arrivals == [("success", "success")] * 2
    cols = ("user_id", "window_start_ms", "items", "purchases", "pane_index", "timing", "is_final", "batch_id")
    results = _rows(spark, job.results_path, *cols)
    assert results == _rows(spark, twin.results_path, *cols)
    assert len(results) > 100 and len({r[:2] + r[4:5] for r in results}) == len(results)  # no pane twice
    assert {r[-1] for r in results} == {0, 1}
    assert _rows(spark, job.quarantine_path, "event_id", "reason") == _rows(spark, twin.quarantine_path,
                                                                           "event_id", "reason")
    assert len(_rows(spark, job.quarantine_path, "event_id")) == 3
    # rows of the second arrival behind the first run's watermark: late, as the driver has them
    late = _rows(spark, job.late_path, "event_id")
    assert late and late == _rows(spark, twin.late_path, "event_id")
    # A third run with nothing new writes nothing and is skipped: no asset event, no quality run.
    before = len(results)
    capfd.readouterr()
    run = dagbag().dags["purchases_per_minute_streaming"].test()
    assert run.state == "success" and _task_state(run) == "skipped"
    captured = capfd.readouterr()
    said = caplog.text + captured.out + captured.err
    assert f"job purchases_per_minute: nothing new since batch 1 in {job.source_path}" in said
    assert len(_rows(spark, job.results_path, *cols)) == before
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    with create_session() as session:
        events = session.query(AssetEvent).filter(AssetEvent.source_run_id == run.run_id).count()
    assert events == 0
    # The job says validate_runs = false: the task left validation to the quality DAG.
    from pipelines.quality import runs_table_path
    assert not Path(runs_table_path(job)).exists()


@pytest.mark.spark
@pytest.mark.slow
def test_a_failed_streaming_run_retried_writes_no_duplicates(spark, airflow_db, data_root, quiet_job, tmp_path):
    """The run fails after the operator committed a batch (outputs written); the retry adds nothing twice."""
    from pipelines import orchestration
    from examples.demo import generate_purchases
    from pipelines.drivers import run_stream
    from pipelines.job import load_job
    job = load_job(quiet_job, root=data_root)
    twin = load_job(quiet_job, root=tmp_path / "twin")
    rows = generate_purchases(n_events=800)
    _land(spark, job, rows)
    _land(spark, twin, rows)

    def crash(report):
        raise RuntimeError("worker lost after the batch was committed")

    with pytest.raises(Exception, match="worker lost"):
        run_stream(spark, job, on_batch=crash)  # the checkpoint has not recorded the batch
    summary = orchestration.stream_run(quiet_job)  # the retry, as the DAG task runs it
    assert summary["skipped_batch_ids"] == [0] and summary["committed_batch_ids"] == []
    run_stream(spark, twin, validate=False)
    cols = ("user_id", "window_start_ms", "items", "purchases", "pane_index", "timing", "batch_id")
    assert _rows(spark, job.results_path, *cols) == _rows(spark, twin.results_path, *cols)
    assert len(_rows(spark, job.quarantine_path, "event_id")) == 3


def _valid_counts(rows, lo, hi):
    """Valid purchases (key and time set) with event time in [lo, hi)."""
    return sum(1 for r in rows if r[1] is not None and r[3] is not None and lo <= r[3] < hi)


@pytest.mark.spark
@pytest.mark.slow
def test_backfill_dag_per_interval_ad_hoc_range_and_rerun(spark, on_streamed):
    """On the streamed root: the backfill reads its raw table (1,200 purchases) and writes tables of its own."""
    from examples.demo import START
    from pipelines.orchestration import backfill_job
    job, rows = on_streamed.job, on_streamed.rows
    target = backfill_job(job)
    dag = dagbag().dags["purchases_per_minute_backfill"]
    cols = ("user_id", "window_start_ms", "window_end_ms", "purchases", "items", "pane_index", "timing")

    # Ad hoc: params start/end, windows ending in (09:00, 09:10].
    run = dag.test(logical_date=dt.datetime(2026, 11, 2, tzinfo=UTC),
                   run_conf={"start": "2026-11-01T09:00:00", "end": "2026-11-01T09:10:00"})
    assert run.state == "success"
    first = _rows(spark, target.results_path, *cols)
    assert {r[2] for r in first} <= {int((START + dt.timedelta(minutes=m)).timestamp() * 1000) for m in range(1, 11)}
    assert sum(r[3] for r in first) == _valid_counts(rows, START, START + dt.timedelta(minutes=10))

    # The data interval [09:00, 10:00) (what `airflow backfill create` runs): every window, each once.
    # (dag.test() takes the interval that ends at the given date; empty params: use the interval.)
    interval = {"start": "", "end": ""}
    run = dag.test(logical_date=dt.datetime(2026, 11, 1, 10, tzinfo=UTC), run_conf=interval)
    assert run.data_interval_start == dt.datetime(2026, 11, 1, 9, tzinfo=UTC)
    assert run.state == "success"
    full = _rows(spark, target.results_path, *cols)
    assert sum(r[3] for r in full) == _valid_counts(rows, START, START + dt.timedelta(hours=1)) == 1200
    assert len({r[:2] for r in full}) == len(full) and {r[6] for r in full} == {"ON_TIME"}
    assert set(first) <= set(full)

    # Rerun of the same interval (--reprocess-behavior completed): the same rows, nothing twice.
    assert dag.test(logical_date=dt.datetime(2026, 11, 1, 10, tzinfo=UTC), run_conf=interval).state == "success"
    assert _rows(spark, target.results_path, *cols) == full
    # An interval without data removes nothing of the others, and is skipped (no asset event).
    run = dag.test(logical_date=dt.datetime(2026, 11, 1, 12, tzinfo=UTC), run_conf=interval)
    assert run.state == "success" and _task_state(run, "backfill") == "skipped"
    assert _rows(spark, target.results_path, *cols) == full


@pytest.mark.spark
@pytest.mark.slow
def test_reprocess_dag_new_table_with_other_windows_and_in_place(spark, copy_of_streamed):
    """On a copy of the streamed root: the in-place run replaces a range of the stream's results."""
    from examples.demo import START
    job, rows = copy_of_streamed.job, copy_of_streamed.rows
    dag = dagbag().dags["purchases_per_minute_reprocess"]
    range_conf = {"start": "2026-11-01T09:05:00", "end": "2026-11-01T09:15:00"}
    lo, hi = START + dt.timedelta(minutes=5), START + dt.timedelta(minutes=15)
    lo_ms, hi_ms = (int(t.timestamp() * 1000) for t in (lo, hi))

    run = dag.test(run_conf={**range_conf, "window": {"size": "5 minutes"}, "into": "five_min"})
    assert run.state == "success"
    five = spark.read.format("delta").load(str(Path(job.results_path).parent / "results_five_min"))
    got = five.groupBy("window_start_ms", "window_end_ms").sum("purchases").collect()
    assert sorted((r[0], r[1]) for r in got) == [(lo_ms, lo_ms + 300_000), (lo_ms + 300_000, hi_ms)]
    assert sum(r[2] for r in got) == _valid_counts(rows, lo, hi)

    # In place: the stream's own results, range replaced in one commit, the rest untouched.
    from delta.tables import DeltaTable
    cols = ("user_id", "window_start_ms", "window_end_ms", "purchases", "pane_index", "timing")
    before = _rows(spark, job.results_path, *cols)
    version_before = DeltaTable.forPath(spark, job.results_path).history(1).first()["version"]
    run = dag.test(run_conf={**range_conf, "window": {}, "into": ""})
    assert run.state == "success"
    after = _rows(spark, job.results_path, *cols)
    assert DeltaTable.forPath(spark, job.results_path).history(1).first()["version"] == version_before + 1
    outside = lambda rs: [r for r in rs if not lo_ms < r[2] <= hi_ms]  # noqa: E731
    inside = [r for r in after if lo_ms < r[2] <= hi_ms]
    assert outside(after) == outside(before)
    assert sum(r[3] for r in inside) == _valid_counts(rows, lo, hi)
    assert len({r[:3] for r in inside}) == len(inside)  # one complete pane per window
    # Readers of the version before the replace still see the old rows of the range.
    old = spark.read.format("delta").option("versionAsOf", version_before).load(job.results_path)
    assert sorted(tuple(r) for r in old.select(*cols).collect()) == before


@pytest.mark.spark
@pytest.mark.slow
def test_reprocess_dag_replays_the_streams_batches_and_logs_the_diff(spark, on_streamed, caplog):
    """On the streamed root (two batches): batch 1 replayed into tables of its own."""
    job = on_streamed.job
    dag = dagbag().dags["purchases_per_minute_reprocess"]
    run = dag.test(run_conf={"mode": "replay", "into": "again", "from_batch": 1, "to_batch": 1, "window": {}})
    assert run.state == "success"
    replayed = Path(job.output_root) / "replay_again" / "results"
    stream = spark.read.format("delta").load(job.results_path).where("batch_id = 1")
    assert sorted(map(tuple, spark.read.format("delta").load(str(replayed)).collect())) == \
        sorted(map(tuple, stream.collect()))
    assert "no differences: the replay emitted the stream's panes" in caplog.text


@pytest.mark.spark
@pytest.mark.slow
def test_quality_task_validates_what_a_streaming_run_wrote(spark, airflow_db, data_root, quiet_job):
    pytest.importorskip("pipelines.quality")
    from pipelines import orchestration
    from examples.demo import generate_purchases
    from pipelines.job import load_job
    from pipelines.quality import read_runs, runs_table_path
    job = load_job(quiet_job, root=data_root)
    _land(spark, job, generate_purchases(n_events=600))
    # The job leaves validation to the quality DAG (as a deployment with that DAG sets it):
    # the runs recorded below are the quality task's own, not a second validation of the batch.
    summary = orchestration.stream_run(quiet_job)  # what the streaming task returns
    assert summary["committed_batch_ids"] == [0]
    assert not Path(runs_table_path(job)).exists()
    done = orchestration.quality_run([summary])
    assert done == [{"job": "purchases_per_minute", "kind": "stream", "batch_id": 0, "success": True}]
    # Once per batch: the same event again (a retried quality run) validates nothing twice.
    assert orchestration.quality_run([summary]) == []
    runs = read_runs(spark, job).collect()
    assert {(r["run_kind"], r["batch_id"]) for r in runs} == {("stream", 0)}
    assert {"window_results", "raw_events", "late_rows"} <= {r["suite"] for r in runs}
    assert not [r for r in runs if r["failed_critical"]]


def test_quality_run_skips_events_with_nothing_new(data_root):
    """A stream run that committed no batch (nothing arrived) gives the quality task nothing to validate."""
    from pipelines import orchestration
    events = [{"job_file": str(REPO / "jobs" / "purchases_per_minute.toml"), "kind": "stream", "committed_batch_ids": []},
              {}, {"unrelated": True}]
    assert orchestration.quality_run(events) == []


@pytest.mark.spark
@pytest.mark.slow
def test_a_join_jobs_streaming_dag_then_its_quality_dag(spark, airflow_db, tmp_path, monkeypatch, caplog, capfd):
    """The join example's streaming DAG by ``dag.test()``: skipped before its inputs exist, one batch over both
    inputs (the asset event's extra counts each side), skipped when nothing is new; then its quality DAG
    validates the tables with the join suites, its reprocessing DAG replays the batch (no difference), and a
    result row not found in its input fails the quality run."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    from examples.join_inputs import ARRIVALS, land
    from pipelines import orchestration
    from pipelines.job import load_job
    from pipelines.quality import DataQualityError
    monkeypatch.setenv("WINDOWING_DATA_ROOT", str(tmp_path))
    monkeypatch.setenv("WINDOWING_AIRFLOW_JOBS", str(JOIN_JOB))
    job = load_job(JOIN_JOB, root=tmp_path)
    bag = dagbag()
    streaming, quality = bag.dags["clicks_orders_streaming"], bag.dags["clicks_orders_quality"]
    run = streaming.test()
    assert run.state == "success" and _task_state(run) == "skipped"   # no input table yet
    _, clicks, orders = ARRIVALS[0]
    land(spark, clicks, orders, job.left_path, job.right_path)
    run = streaming.test()
    assert run.state == "success" and _task_state(run) == "success"
    with create_session() as session:
        extra = session.query(AssetEvent).filter(AssetEvent.source_run_id == run.run_id).one().extra
    results = spark.read.format("delta").load(job.results_path)
    assert extra["kind"] == "stream" and extra["job_file"] == str(JOIN_JOB)
    assert extra["committed_batch_ids"] == [0] and extra["skipped_batch_ids"] == []
    assert extra["input_rows"] == {"left": len(clicks), "right": len(orders)}
    assert extra["result_rows"] == results.count() > 0 and extra["results_path"] == job.results_path
    capfd.readouterr()
    run = streaming.test()
    captured = capfd.readouterr()
    assert run.state == "success" and _task_state(run) == "skipped"
    assert (f"job clicks_orders: nothing new in {job.left_path} or {job.right_path} since batch 0"
            in caplog.text + captured.out + captured.err)
    run = quality.test()   # by hand: the join tables as they are
    assert run.state == "success" and _task_state(run, "validate") == "success"
    run = bag.dags["clicks_orders_reprocess"].test(run_conf={"mode": "replay", "into": "again"})   # the batch again
    assert run.state == "success" and _task_state(run, "reprocess") == "success"
    with create_session() as session:
        replayed = session.query(AssetEvent).filter(AssetEvent.source_run_id == run.run_id).one().extra
    assert replayed["kind"] == "replay" and replayed["diff"]["empty"] and replayed["diff"]["results"]["replay"] == \
        extra["result_rows"]
    one = results.where("row_index IS NOT NULL").orderBy("window_start_ms", "pane_index", "row_index").first()
    DeltaTable.forPath(spark, job.results_path).update(
        (F.col("window_start_ms") == one["window_start_ms"]) & (F.col("pane_index") == one["pane_index"])
        & (F.col("row_index") == one["row_index"]) & (F.col("join_key") == F.struct(F.lit(one["join_key"]["user"])
                                                                                   .alias("user"))),
        {"window_start_ms": F.col("window_start_ms") + 3_600_000, "window_end_ms": F.col("window_end_ms") + 3_600_000})
    with pytest.raises(DataQualityError, match="join_result_sides: expect_result_rows_in_their_inputs"):
        orchestration.quality_run([extra])


@pytest.mark.spark
@pytest.mark.slow
def test_a_join_jobs_backfill_dag_replaces_its_interval_with_the_models_panes(spark, airflow_db, tmp_path,
                                                                            monkeypatch, caplog, capfd):
    """One data interval of the join example's backfill DAG by ``dag.test()``: ``results_backfill`` holds the
    panes of the windows ending in the interval, equal to the reference model's on the rows feeding them (one
    batch that ends the input); the asset event's extra is the run's summary; the quality run validates it. The
    reprocessing DAG of the same range with a window override writes that window's panes into new tables; with
    an unknown window key its task fails naming it, and writes nothing."""
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    from examples.join_inputs import ARRIVALS, T0, land
    from pipelines import orchestration
    from pipelines.job import load_job
    from pipelines.join_check import EndOfInput, in_range, model_outputs, result_rows
    monkeypatch.setenv("WINDOWING_DATA_ROOT", str(tmp_path))
    monkeypatch.setenv("WINDOWING_AIRFLOW_JOBS", str(JOIN_JOB))
    job = load_job(JOIN_JOB, root=tmp_path)
    clicks = [c for _, cs, _ in ARRIVALS for c in cs]
    orders = [o for _, _, os in ARRIVALS for o in os]
    land(spark, clicks, orders, job.left_path, job.right_path)
    start, end = T0, T0 + dt.timedelta(minutes=2)          # windows ending in (09:00, 09:02]
    run = dagbag().dags["clicks_orders_backfill"].test(
        logical_date=dt.datetime(2026, 11, 2, tzinfo=UTC),
        run_conf={"start": start.isoformat(), "end": end.isoformat()})
    assert run.state == "success" and _task_state(run, "backfill") == "success"
    start_ms, end_ms = (int(t.timestamp() * 1000) for t in (start, end))
    feeding = start_ms - 60_000                            # the window size before the start
    expected = in_range(job.spec, model_outputs(job.spec, [EndOfInput(
        [c for c in clicks if c["click_ms"] is None or feeding <= c["click_ms"] < end_ms],
        [o for o in orders if o["order_ms"] is None or feeding <= o["order_ms"] < end_ms])]).results,
        start_ms, end_ms)
    target = orchestration.backfill_job(job)
    assert target.results_path == f"{job.output_root}/results_backfill"
    assert result_rows(spark, job.spec, target.results_path) == expected != {}
    with create_session() as session:
        extra = session.query(AssetEvent).filter(AssetEvent.source_run_id == run.run_id).one().extra
    assert extra["kind"] == "backfill" and extra["results_path"] == target.results_path
    assert extra["rows"]["results"] == sum(expected.values()) and extra["rows"]["quarantine"] == 1   # c9
    assert orchestration.quality_run([extra]) == [
        {"job": "clicks_orders", "kind": "backfill", "batch_id": None, "success": True}]

    # The reprocessing DAG of the same range with 2-minute windows, into tables of its own: the model's panes of
    # that window on the rows feeding it; an unknown window key fails the task naming it, and writes nothing.
    reprocess = dagbag().dags["clicks_orders_reprocess"]
    wide = job.with_window({"size": "2 minutes"})
    run = reprocess.test(logical_date=dt.datetime(2026, 11, 3, tzinfo=UTC),
                         run_conf={"mode": "range", "start": start.isoformat(), "end": end.isoformat(),
                                   "into": "wide", "window": {"size": "2 minutes"}})
    assert run.state == "success" and _task_state(run, "reprocess") == "success"
    feeding = start_ms - 120_000
    expected = in_range(wide.spec, model_outputs(wide.spec, [EndOfInput(
        [c for c in clicks if c["click_ms"] is None or feeding <= c["click_ms"] < end_ms],
        [o for o in orders if o["order_ms"] is None or feeding <= o["order_ms"] < end_ms])]).results,
        start_ms, end_ms)
    assert result_rows(spark, wide.spec, f"{job.output_root}/results_wide") == expected != {}
    assert {we - ws for (_, _, ws, we, *_rest) in expected} == {120_000}
    with create_session() as session:
        extra = session.query(AssetEvent).filter(AssetEvent.source_run_id == run.run_id).one().extra
    assert extra["kind"] == "reprocess" and extra["window"] == {"size": "2 minutes"}
    capfd.readouterr()
    run = reprocess.test(logical_date=dt.datetime(2026, 11, 4, tzinfo=UTC),
                         run_conf={"mode": "range", "start": start.isoformat(), "end": end.isoformat(),
                                   "into": "other", "window": {"sise": "2 minutes"}})
    captured = capfd.readouterr()
    assert _task_state(run, "reprocess") == "failed"
    assert "window override has unknown keys ['sise']" in caplog.text + captured.out + captured.err
    assert not (Path(job.output_root) / "results_other").exists()
