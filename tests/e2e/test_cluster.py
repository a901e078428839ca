"""The demo job on a Spark standalone cluster with its tables on an S3-compatible store.

The module starts what it needs through ``./dev`` (a master and one worker from the
installed PySpark, the S3 server ``./dev store`` chooses), each on free ports with its own services
folder, and stops exactly those processes by PID at the end. Each run is a separate
driver process (a session is per process, and the suite's own session is local): the
same arrivals streamed in several ``availableNow`` runs, then a one-pass backfill (and,
with WINDOWING_CLUSTER_TESTS=1, a chunked one), once on the cluster with ``s3a://`` tables and once on ``local[2]`` with
local tables. The results must be the same rows.

An Airflow ``dag.test()`` run of the streaming DAG reaches the cluster through the job's
``spark_conn_id`` connection (given to Airflow as an ``AIRFLOW_CONN_*`` variable).

Run as a script (``python tests/e2e/test_cluster.py run|airflow JOB ROOT MASTER OUT``) this
file is those drivers.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEV = REPO / "dev"
DEMO_JOB = REPO / "jobs" / "demo.toml"
ARRIVALS = 2
RESULT_COLUMNS = ("user_id", "window_start_ms", "window_end_ms", "items", "purchases", "max_items",
                  "pane_index", "timing", "is_final")
DRIVER_TIMEOUT_S = int(os.environ.get("WINDOWING_CLUSTER_TEST_TIMEOUT_S", "900"))

# The cluster and object-store tests start a cluster, a store and driver processes of their own;
# they run with WINDOWING_CLUSTER_TESTS=1 (./dev test then also fetches the S3A jars, installs the
# store and builds the wheel). See docs/cluster.md.
FULL_CLUSTER_TESTS = pytest.mark.skipif(os.environ.get("WINDOWING_CLUSTER_TESTS") != "1",
                                        reason="with WINDOWING_CLUSTER_TESTS=1 (docs/cluster.md)")
TABLES = ("stream", "one_pass_backfill", "chunked_backfill")
"""The tables each driver writes."""
SETUP_TIMEOUT_S = 1800   # a fresh clone's first ./dev store up or cluster up installs the server, jars, wheel
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_block(size: int) -> int:
    """A port p with p .. p+size-1 and their +10000 (SeaweedFS's gRPC ports) free."""
    for _ in range(50):
        base = free_port()
        if base + size + 10000 >= 65535:
            continue
        ports = [base + i for i in range(size)] + [base + 10000 + i for i in range(size)]
        try:
            for port in ports:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no block of free ports found")


class Services:
    """The cluster and the store of this module, started and stopped through ./dev."""

    def __init__(self, folder: Path):
        s3_port, master_port = free_port_block(4), free_port()
        self.env = {**os.environ, "WINDOWING_SERVICES_DIR": str(folder), "WINDOWING_S3_PORT": str(s3_port),
                    "SPARK_MASTER_PORT": str(master_port), "SPARK_MASTER_WEBUI_PORT": str(free_port_block(2)),
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
    assert asset_uri(job, "stream") == job.results_path
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


@FULL_CLUSTER_TESTS
def test_stream_and_backfill_on_the_cluster_with_s3a_tables_equal_a_local_run(services, tmp_path):
    bucket = services.env["WINDOWING_S3_BUCKET"]
    local_env = {k: v for k, v in services.env.items() if not k.startswith("AWS_")}
    on_cluster = start_driver(services.env, DEMO_JOB, f"s3a://{bucket}/{uuid.uuid4().hex}", services.master,
                              tmp_path / "cluster.json")
    on_local = start_driver(local_env, DEMO_JOB, str(tmp_path / "local"), "local[2]", tmp_path / "local.json")
    remote, local = result_of(on_cluster, tmp_path / "cluster.json"), result_of(on_local, tmp_path / "local.json")

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


@FULL_CLUSTER_TESTS
def test_airflow_streaming_dag_reaches_the_cluster_through_its_spark_connection(services, tmp_path):
    bucket = services.env["WINDOWING_S3_BUCKET"]
    host, port = services.master.removeprefix("spark://").split(":")
    env = {**services.env, "AIRFLOW_HOME": str(tmp_path / "airflow-home"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
           # The connection carries the master and the store's endpoint; the keys stay in the environment.
           "AIRFLOW_CONN_SPARK_CLUSTER": json.dumps({
               "conn_type": "generic", "host": f"spark://{host}", "port": int(port),
               "extra": {"spark.hadoop.fs.s3a.endpoint": services.env["AWS_ENDPOINT_URL"],
                         "spark.hadoop.fs.s3a.path.style.access": "true",
                         "spark.hadoop.fs.s3a.endpoint.region": "us-east-1"}})}
    env.pop("AWS_ENDPOINT_URL")
    root = f"s3a://{bucket}/{uuid.uuid4().hex}"
    run_driver(services.env, DEMO_JOB, root, "local[2]", tmp_path / "land.json", command="land")
    result = run_driver(env, DEMO_JOB, root, "airflow", tmp_path / "airflow.json", command="airflow")
    assert result["master"] == services.master
    assert result["state"] == "success" and result["task_state"] == "success"
    assert result["results"] > 0 and result["results_path"].startswith(f"s3a://{bucket}/")


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
    keys, windows = ["user_id", "window_start_ms"], f"{job.state_root}/{job.operator_id}/windows"
    if not DeltaTable.isDeltaTable(spark, windows):
        return 0
    fired = spark.read.format("delta").load(job.results_path).select(*keys).distinct()
    state = spark.read.format("delta").load(windows)
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


def drive(job_file: str, root: str, master: str, out: str) -> None:
    """Stream the demo's purchases in ARRIVALS runs, then backfill in one pass (and chunked)."""
    from examples.demo import generate_purchases, land
    from pipelines.drivers import run_backfill, run_stream
    from pipelines.job import load_job
    from windowing.spark.session import get_spark

    job = load_job(job_file, root=root)
    spark = get_spark("test-cluster", master=master, conf=job.spark_conf)
    rows = generate_purchases(n_events=300, minutes=6)
    per = -(-len(rows) // ARRIVALS)
    batches = 0
    for a in range(ARRIVALS):
        land(spark, rows[a * per:(a + 1) * per], job.source_path)
        batches += len(run_stream(spark, job, available_now=True, validate=False))
    jobs = {"stream": job}
    for table, chunk in (("one_pass_backfill", "all"), ("chunked_backfill", "2 minutes")):
        if table in TABLES:
            jobs[table] = job.with_operator(f"{job.operator_id}_{table}", table)
            run_backfill(spark, jobs[table], chunk=chunk, validate=False)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - (0 if master.startswith("local") else 1)
    Path(out).write_text(json.dumps({
        "where": {"master": spark.sparkContext.master, "results": job.results_path, "executors": executors},
        "raw_rows": len(rows), "stream_batches": batches,
        **{table: _table(spark, table_job) for table, table_job in jobs.items()}}, default=str))
    spark.stop()


def drive_airflow(job_file: str, root: str, _master: str, out: str) -> None:
    """One ``dag.test()`` of the streaming DAG of a job whose ``spark_conn_id`` names the cluster."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/: the helpers
    from job_files import demo_job_file
    folder = Path(out).parent
    job_path = demo_job_file(folder, replace={"# spark_conn_id = \"spark_cluster\"": "spark_conn_id = \"spark_cluster\""})
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
        "results_path": job.results_path,
        "results": spark.read.format("delta").load(job.results_path).count()}))


def drive_land(job_file: str, root: str, master: str, out: str) -> None:
    """Land a few minutes of the demo's purchases in the job's raw table."""
    from examples.demo import generate_purchases, land
    from pipelines.job import load_job
    from windowing.spark.session import get_spark
    job = load_job(job_file, root=root)
    spark = get_spark("test-cluster-land", master=master, conf=job.spark_conf)
    rows = generate_purchases(n_events=300, minutes=5)
    land(spark, rows, job.source_path)
    Path(out).write_text(json.dumps({"landed": len(rows)}))
    spark.stop()


COMMANDS = {"run": drive, "airflow": drive_airflow, "land": drive_land}

if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(COMMANDS)} JOB ROOT MASTER OUT")
    COMMANDS[sys.argv[1]](*sys.argv[2:])
