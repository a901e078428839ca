"""The demo job on a Spark standalone cluster with its tables on an S3-compatible store.

The module starts what it needs through ``./dev`` (a master and one worker from the
installed PySpark, the S3 server ``./dev store`` chooses), each on free ports with its own services
folder, and stops exactly those processes by PID at the end. Each run is a separate
driver process (a session is per process, and the suite's own session is local): the
same arrivals streamed in two ``availableNow`` runs, a one-pass and a chunked backfill, then
``winjob reprocess``, ``validate`` and ``inspect`` (the CLI's ``main`` in the driver process, so
on its session), once on the cluster with ``s3a://`` tables and once on ``local[2]`` with local
tables. The results must be the same rows.

An Airflow ``dag.test()`` run of the streaming DAG reaches the cluster through the job's
``spark_conn_id`` connection (given to Airflow as an ``AIRFLOW_CONN_*`` variable), on the raw table
the cluster's driver landed.

They run in the default ``./dev test``; ``WINDOWING_CLUSTER_TESTS=0`` skips the cluster and
object-store modules.

Run as a script (``python tests/e2e/test_cluster.py run|airflow JOB ROOT MASTER OUT``) this
file is those drivers.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import TEST_SQL_SETTINGS
from suite_machine import services_group

REPO = Path(__file__).resolve().parents[2]
DEV = REPO / "dev"
DEMO_JOB = REPO / "jobs" / "purchases_per_minute.toml"
ARRIVALS = 2
RESULT_COLUMNS = ("user_id", "window_start_ms", "window_end_ms", "items", "purchases", "max_items",
                  "pane_index", "timing", "is_final")
DRIVER_TIMEOUT_S = int(os.environ.get("WINDOWING_CLUSTER_TEST_TIMEOUT_S", "900"))

# The cluster and object-store modules start a cluster, a store and driver processes of their own
# (see docs/cluster.md); WINDOWING_CLUSTER_TESTS=0 skips them.
CLUSTER_TESTS = pytest.mark.skipif(os.environ.get("WINDOWING_CLUSTER_TESTS") == "0",
                                   reason="WINDOWING_CLUSTER_TESTS=0 skips the cluster and object-store modules")
TABLES = ("stream", "one_pass_backfill", "chunked_backfill")
"""The tables each driver writes."""
REPROCESS = ("--start", "2026-11-01T09:01:00", "--end", "2026-11-01T09:05:00", "--window", '{"size": "2 minutes"}',
             "--into", "coarse")
"""``winjob reprocess`` arguments: two-minute windows of four minutes of the demo's purchases, into new tables."""
VALIDATE_SUITES = ("window_results", "row_accounting")
DRIVER_SETTINGS = {
    # Short JVMs on small data: the JIT's quick tier only (windowing.spark.runtime.spark_session.QUICK_JIT_JAVA_OPTIONS),
    # in the driver and the executors, and the test session's SQL settings (no code generation, no
    # adaptive execution, no inferred filters; WINDOWING_TEST_PRODUCTION_SPARK=1 keeps production's).
    # Both runs of a comparison get the same settings.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    **({} if os.environ.get("WINDOWING_TEST_PRODUCTION_SPARK") == "1" else {
        **TEST_SQL_SETTINGS, "spark.sql.shuffle.partitions": "2"}),
}
"""Spark settings of the test's driver processes (and, through the Airflow connection, of the DAG's task)."""
SETUP_TIMEOUT_S = 1800   # a fresh clone's first ./dev store up or cluster up installs the server, jars, wheel
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(services_group(__file__)), CLUSTER_TESTS]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Services:
    """The cluster and the store of this module, started and stopped through ./dev."""

    def __init__(self, folder: Path):
        s3_port, master_port = free_port(), free_port()
        self.env = {**os.environ, "WINDOWING_SERVICES_DIR": str(folder), "WINDOWING_S3_PORT": str(s3_port),
                    "SPARK_MASTER_PORT": str(master_port), "SPARK_MASTER_WEBUI_PORT": str(free_port()),
                    "WINDOWING_WORKER_CORES": "2", "WINDOWING_WORKER_MEMORY": "2g"}
        self.master = f"spark://127.0.0.1:{master_port}"

    def dev(self, *args: str, timeout_s: float = SETUP_TIMEOUT_S) -> str:
        done = subprocess.run([str(DEV), *args], env=self.env, capture_output=True, text=True, timeout=timeout_s)
        assert done.returncode == 0, f"./dev {' '.join(args)} failed:\n{done.stderr[-3000:]}"
        return done.stdout

    def up(self) -> None:
        exports = self.dev("store", "up").strip().splitlines()[-1]
        for pair in exports.removeprefix("export ").split():
            key, value = pair.split("=", 1)
            self.env[key] = value
        self.dev("cluster", "up")
        # Executors get the wheel a user installs (./dev test names it; a bare pytest asks ./dev).
        self.env.setdefault("WINDOWING_WHEEL", self.dev("wheel").strip().splitlines()[-1])

    def down(self) -> None:
        for what in ("cluster", "store"):
            subprocess.run([str(DEV), what, "down"], env=self.env, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    services = Services(tmp_path_factory.mktemp("services"))
    try:
        services.up()
        yield services
    finally:
        services.down()


def test_job_paths_under_an_object_store_root_stay_uris(tmp_path):
    from pipelines.job import load_job, parent_of, resolve_path
    from pipelines.orchestration import asset_uri
    job = load_job(DEMO_JOB, root="s3a://bucket/prefix/")
    assert job.source_path == "s3a://bucket/prefix/raw/purchases"
    assert job.results_path == "s3a://bucket/prefix/output/purchases_per_minute/results"
    assert job.output_root == "s3a://bucket/prefix/output/purchases_per_minute"
    assert job.with_operator("x", "backfill").results_path.startswith("s3a://bucket/prefix/output/")
    assert asset_uri(job, "stream") == "windowing://purchases_per_minute/results"   # named, root-free
    assert resolve_path(tmp_path, "s3a://other/t") == "s3a://other/t"
    assert resolve_path(tmp_path, "raw") == str(tmp_path.resolve() / "raw")
    assert parent_of("s3a://b/a/results") == "s3a://b/a" and parent_of("/x/y/results") == "/x/y"
    from pipelines.quality import data_docs_dir
    assert data_docs_dir(job) == str(Path("output", job.name, "data_docs"))  # a local folder


def start_driver(env: dict, job: Path, root: str, master: str, out: Path, command: str = "run") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, command, str(job), root, master, str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=out.parent)


def result_of(driver: subprocess.Popen, out: Path) -> dict:
    try:
        _, err = driver.communicate(timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        driver.kill()
        raise
    assert driver.returncode == 0, f"driver {driver.args[2:]} failed:\n{err[-5000:]}"
    return json.loads(out.read_text())


def run_driver(env: dict, job: Path, root: str, master: str, out: Path, command: str = "run") -> dict:
    return result_of(start_driver(env, job, root, master, out, command), out)


@pytest.fixture(scope="module")
def runs(services, tmp_path_factory) -> dict:
    """The demo's runs on the cluster with ``s3a://`` tables and on ``local[2]`` with local tables,
    side by side (each a driver process of its own); what each found in its tables."""
    folder = tmp_path_factory.mktemp("runs")
    root = f"s3a://{services.env['WINDOWING_S3_BUCKET']}/{uuid.uuid4().hex}"
    local_env = {k: v for k, v in services.env.items() if not k.startswith("AWS_")}
    on_cluster = start_driver(services.env, DEMO_JOB, root, services.master, folder / "cluster.json")
    on_local = start_driver(local_env, DEMO_JOB, str(folder / "local"), "local[2]", folder / "local.json")
    return {"root": root, "remote": result_of(on_cluster, folder / "cluster.json"),
            "local": result_of(on_local, folder / "local.json")}


def test_stream_and_backfill_on_the_cluster_with_s3a_tables_equal_a_local_run(services, runs):
    bucket = services.env["WINDOWING_S3_BUCKET"]
    remote, local = runs["remote"], runs["local"]
    assert remote["where"]["master"] == services.master
    assert remote["where"]["results"].startswith(f"s3a://{bucket}/")
    assert remote["where"]["executors"] >= 1, "no executor ran the cluster's tasks"
    assert remote["stream_batches"] >= ARRIVALS
    assert set(remote) >= set(TABLES) and set(local) >= set(TABLES)
    for table in TABLES:
        assert remote[table]["rows"], f"{table}: no result rows"
        assert remote[table] == local[table], f"{table}: the cluster's rows differ from the local run's"
    # Nothing lost: every raw row is in a result, a window not fired yet (the stream's last
    # minutes; the backfills end with every window fired), the late table or the quarantine table.
    for table in TABLES:
        counted = remote[table]
        assert counted["purchases"] + counted["unfired"] + counted["late"] + counted["quarantine"] \
            == remote["raw_rows"], table
    assert remote["stream"]["unfired"] > 0 and remote["one_pass_backfill"]["unfired"] == 0


def test_winjob_reprocess_validate_and_inspect_on_the_cluster_equal_a_local_run(services, runs):
    remote, local = runs["remote"]["winjob"], runs["local"]["winjob"]
    for command in ("reprocess", "validate", "inspect"):
        assert remote[command]["code"] == 0, f"winjob {command} on the cluster: {remote[command]}"
    # reprocess: the range's two-minute windows, in new tables on the store, the same rows as locally
    assert remote["reprocess"]["results_path"].startswith(runs["root"] + "/")
    assert remote["reprocess"]["rows"]["results"] > 0 and remote["reprocess_rows"]
    assert {w[2] - w[1] for w in remote["reprocess_rows"]} == {120_000}
    assert remote["reprocess_rows"] == local["reprocess_rows"]
    assert remote["reprocess"]["rows"] == local["reprocess"]["rows"]
    # validate: the same suites ran, with the same outcome, on the same counts
    assert [s[0] for s in remote["validate"]["suites"]] == ["PASS"] * len(VALIDATE_SUITES)
    assert remote["validate"]["suites"] == local["validate"]["suites"]
    # inspect: the tables it found on the store and their sizes, the last batch and watermark
    assert remote["inspect"]["tables"]["results"]["path"].startswith(runs["root"] + "/")
    assert remote["inspect"]["summary"] == local["inspect"]["summary"]
    assert remote["inspect"]["summary"]["tables"]["raw"] == runs["remote"]["raw_rows"]


def test_airflow_streaming_dag_reaches_the_cluster_through_its_spark_connection(services, runs, tmp_path):
    host, port = services.master.removeprefix("spark://").split(":")
    env = {**services.env, "AIRFLOW_HOME": str(tmp_path / "airflow-home"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
           # The connection carries the master and the store's endpoint; the keys stay in the environment.
           "AIRFLOW_CONN_SPARK_CLUSTER": json.dumps({
               "conn_type": "generic", "host": f"spark://{host}", "port": int(port),
               "extra": {"spark.hadoop.fs.s3a.endpoint": services.env["AWS_ENDPOINT_URL"],
                         "spark.hadoop.fs.s3a.path.style.access": "true",
                         "spark.hadoop.fs.s3a.endpoint.region": "us-east-1", **DRIVER_SETTINGS}})}
    env.pop("AWS_ENDPOINT_URL")
    # The raw table the cluster's driver landed; the DAG's outputs in a folder of their own.
    result = run_driver(env, DEMO_JOB, runs["root"], "airflow", tmp_path / "airflow.json", command="airflow")
    assert result["master"] == services.master
    assert result["state"] == "success" and result["task_state"] == "success"
    assert result["results_path"].startswith(f"{runs['root']}/airflow/")
    # The DAG's stream read the whole raw table on the store: every raw row is accounted for.
    counted = result["table"]
    assert counted["rows"] and counted["purchases"] + counted["unfired"] + counted["late"] + counted["quarantine"] \
        == runs["remote"]["raw_rows"]


# ---------------------------------------------------------------- the driver process
def _rows(spark, path: str) -> list[list]:
    from examples.demo import latest_panes
    frame = latest_panes(spark, path).select(*RESULT_COLUMNS).orderBy("user_id", "window_start_ms")
    return [list(r) for r in frame.collect()]


def _unfired_purchases(spark, job) -> int:
    """Purchases held in window state whose windows have not fired yet (a stream run's last minutes;
    a one-pass backfill keeps no window state)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F
    from windowing.spark.state import log as state_log
    keys, windows = ["user_id", "window_start_ms"], f"{job.state_root}/{job.operator_id}/windows"
    if not DeltaTable.isDeltaTable(spark, windows):
        return 0
    fired = spark.read.format("delta").load(job.results_path).select(*keys).distinct()
    state = state_log.committed_windows(spark, windows.rsplit("/", 1)[0], job.operator_id)
    return state.join(fired, keys, "left_anti").agg(F.sum("acc__purchases__count")).first()[0] or 0


def _table(spark, job) -> dict:
    from pyspark.sql import functions as F
    rows = _rows(spark, job.results_path)
    count = lambda path: spark.read.format("delta").load(path).count()  # noqa: E731
    return {"rows": rows, "purchases": sum(r[RESULT_COLUMNS.index("purchases")] for r in rows),
            "unfired": _unfired_purchases(spark, job),
            "late": count(job.late_path), "quarantine": count(job.quarantine_path),
            "max_watermark_ms": spark.read.format("delta").load(f"{job.state_root}/{job.operator_id}/progress")
            .agg(F.max("watermark_ms")).first()[0]}


def winjob(job_file: str, root: str, master: str, *argv: str) -> tuple[int, str]:
    """One ``winjob`` command run by the CLI's ``main`` in this process (so on this process's
    session, which has ``master``) with ``--job``, ``--root`` and ``--master``; its exit code and output."""
    from pipelines.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--job", job_file, "--root", root, "--master", master])
    return code, out.getvalue()


def run_winjob_commands(spark, job, job_file: str, root: str, master: str) -> dict:
    """``winjob reprocess`` (into new tables), ``validate`` and ``inspect`` on the job's tables."""
    from pipelines.reprocess import new_output_job
    code, out = winjob(job_file, root, master, "reprocess", *REPROCESS)
    report = json.loads(out) if code == 0 else {"output": out}
    coarse = new_output_job(job, REPROCESS[REPROCESS.index("--into") + 1])
    reprocess_rows = [list(r) for r in spark.read.format("delta").load(coarse.results_path)
                      .select("user_id", "window_start_ms", "window_end_ms", "items", "purchases", "is_final")
                      .orderBy("user_id", "window_start_ms").collect()] if code == 0 else []

    suites = [a for name in VALIDATE_SUITES for a in ("--suite", name)]
    validate_code, out = winjob(job_file, root, master, "validate", "--run-kind", "stream", *suites)
    # "  PASS window_results   12/12 expectations met  [path]": outcome, suite and counts, not the path
    outcomes = [line.split()[:3] for line in out.splitlines() if line.split()[:1] in (["PASS"], ["WARN"], ["FAIL"])]
    validate_output = out if validate_code else ""

    inspect_code, out = winjob(job_file, root, master, "inspect")
    info = json.loads(out) if inspect_code == 0 else {"output": out}
    summary = {"last_batch_id": info.get("last_batch_id"), "watermark_ms": info.get("watermark_ms"),
               "tables": {name: t["rows"] for name, t in info.get("tables", {}).items()}}
    return {"reprocess": {"code": code, **{k: report.get(k) for k in ("results_path", "rows", "output")}},
            "reprocess_rows": reprocess_rows,
            "validate": {"code": validate_code, "suites": outcomes, "output": validate_output},
            "inspect": {"code": inspect_code, "tables": info.get("tables", {}), "summary": summary}}


def drive(job_file: str, root: str, master: str, out: str) -> None:
    """Stream the demo's purchases in ARRIVALS runs, backfill them in one pass and chunked, then
    run ``winjob reprocess``, ``validate`` and ``inspect``."""
    from examples.demo import generate_purchases, land
    from pipelines.drivers import run_backfill, run_stream
    from pipelines.job import load_job
    from windowing.spark.runtime.spark_session import get_spark

    job = load_job(job_file, root=root)
    spark = get_spark("test-cluster", master=master, conf={**job.spark_conf, **DRIVER_SETTINGS})
    rows = generate_purchases(n_events=300, minutes=6)
    per = -(-len(rows) // ARRIVALS)
    batches = 0
    for a in range(ARRIVALS):
        land(spark, rows[a * per:(a + 1) * per], job.source_path)
        batches += len(run_stream(spark, job, available_now=True, validate=False))
    jobs = {"stream": job}
    for table, chunk in (("one_pass_backfill", "all"), ("chunked_backfill", "3 minutes")):
        jobs[table] = job.with_operator(f"{job.operator_id}_{table}", table)
        run_backfill(spark, jobs[table], chunk=chunk, validate=False)
    commands = run_winjob_commands(spark, job, job_file, root, master)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - (0 if master.startswith("local") else 1)
    Path(out).write_text(json.dumps({
        "where": {"master": spark.sparkContext.master, "results": job.results_path, "executors": executors},
        "raw_rows": len(rows), "stream_batches": batches, "winjob": commands,
        **{table: _table(spark, table_job) for table, table_job in jobs.items()}}, default=str))
    spark.stop()


def drive_airflow(job_file: str, root: str, _master: str, out: str) -> None:
    """One ``dag.test()`` of the streaming DAG of a job whose ``spark_conn_id`` names the cluster,
    on the raw table under ``root``, with its outputs under ``root/airflow``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/: the helpers
    from job_files import demo_job_file
    folder = Path(out).parent
    job_path = demo_job_file(folder, replace={'# spark_conn_id = "spark_cluster"': 'spark_conn_id = "spark_cluster"',
                                              'root = "output/': 'root = "airflow/'})
    os.environ["WINDOWING_DATA_ROOT"], os.environ["WINDOWING_AIRFLOW_JOBS"] = root, str(job_path)
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils import db
    from pipelines.job import load_job

    from pyspark.sql import SparkSession

    db.initdb()
    job = load_job(job_path, root=root)
    dag = DagBag(dag_folder=str(REPO / "dags")).dags[f"{job.name}_streaming"]
    run = dag.test()                            # the task makes the session, from the connection
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    spark = SparkSession.getActiveSession()
    Path(out).write_text(json.dumps({
        "master": spark.sparkContext.master, "state": str(run.state), "task_state": str(states["stream"]),
        "results_path": job.results_path, "table": _table(spark, job)}, default=str))


COMMANDS = {"run": drive, "airflow": drive_airflow}

if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(COMMANDS)} JOB ROOT MASTER OUT")
    COMMANDS[sys.argv[1]](*sys.argv[2:])
