"""The exactly-once protocol with its Delta tables on an S3-compatible store (``s3a://``).

Each writer is a driver process of its own on ``local[2]`` (the store, not the cluster,
is what changes Delta's guarantees: its S3 LogStore has no atomic rename). A driver
SIGKILLed mid-batch (outputs written, progress row not) and then restarted must leave
the tables a run without a crash leaves; two drivers running one job on one root at
once must each either finish or fail cleanly, and the tables must stay correct.

Run as a script (``python tests/e2e/test_cluster_writers.py ROOT OUT [KILL_STAGE KILL_BATCH]``)
this file is the driver.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from suite_machine import services_group
from test_cluster import CLUSTER_TESTS, DRIVER_SETTINGS, Services

pytestmark = [CLUSTER_TESTS, pytest.mark.slow, pytest.mark.xdist_group(services_group(__file__))]

SCHEMA = "k string, ts long, v long"
BATCHES = [
    [("a", 1, 1), ("b", 4, 2), ("a", 9, 3)],
    [("a", 12, 4), ("b", 15, 5), ("a", 3, 6), (None, 5, 7)],      # a late pane for [0,10); a quarantined row
    [("b", 31, 8), ("a", 2, 9)],                                   # ts=2 is late beyond lateness: the late table
]
DRIVER_TIMEOUT_S = int(os.environ.get("WINDOWING_CLUSTER_TEST_TIMEOUT_S", "900"))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    services = Services(tmp_path_factory.mktemp("services"))
    try:
        exports = services.dev("store", "up").strip().splitlines()[-1]
        for pair in exports.removeprefix("export ").split():
            key, value = pair.split("=", 1)
            services.env[key] = value
        yield services
    finally:
        subprocess.run([str(Path(__file__).resolve().parents[2] / "dev"), "store", "down"], env=services.env,
                       capture_output=True, timeout=120)


def start_driver(env: dict, root: str, out: Path, *kill: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, root, str(out), *kill], env=env, cwd=out.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(driver: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = driver.communicate(timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        driver.kill()
        raise
    return driver.returncode, err


@pytest.fixture(scope="module")
def clean_run(store, tmp_path_factory):
    """One run on the store without a crash, started at once (it runs beside a test's first driver)."""
    folder = tmp_path_factory.mktemp("clean")
    root = f"s3a://{store.env['WINDOWING_S3_BUCKET']}/{uuid.uuid4().hex}"
    driver = start_driver(store.env, root, folder / "clean.json")
    result: dict = {}

    def tables() -> dict:
        if not result:
            code, err = finish(driver)
            assert code == 0, err[-5000:]
            result.update(json.loads((folder / "clean.json").read_text()))
        return result
    yield tables
    if driver.poll() is None:
        driver.kill()


def test_sigkill_after_outputs_then_restart_writes_every_row_once(store, clean_run, tmp_path):
    root = f"s3a://{store.env['WINDOWING_S3_BUCKET']}/{uuid.uuid4().hex}"
    code, err = finish(start_driver(store.env, root, tmp_path / "killed.json", "after_outputs", "1"))
    assert code == -signal.SIGKILL, f"the driver was to be killed, it ended with {code}:\n{err[-3000:]}"
    clean = clean_run()
    code, err = finish(start_driver(store.env, root, tmp_path / "restarted.json"))
    assert code == 0, err[-5000:]
    restarted = json.loads((tmp_path / "restarted.json").read_text())
    assert restarted["replayed_from"] == 1, "the restart did not resume at the killed batch"
    assert restarted["tables"] == clean["tables"]


def test_two_concurrent_runs_of_one_job_on_one_root_fail_cleanly_or_stay_correct(store, clean_run, tmp_path):
    """On S3 with Delta's default (single-driver) LogStore, claims are a Delta table: its commits, not
    claim files, keep the second run out."""
    assert clean_run()["claims_kind"] == "DeltaClaimLog"
    root = f"s3a://{store.env['WINDOWING_S3_BUCKET']}/{uuid.uuid4().hex}"
    drivers = [start_driver(store.env, root, tmp_path / f"run{i}.json") for i in range(2)]
    ended = [finish(d) for d in drivers]
    for code, err in ended:
        assert code in (0, 3), f"a run failed other than cleanly ({code}):\n{err[-5000:]}"
    assert any(code == 0 for code, _ in ended), [err[-2000:] for _, err in ended]
    # Whatever the race did, a run afterwards (resuming from the tables) must leave them correct.
    code, err = finish(start_driver(store.env, root, tmp_path / "after.json"))
    assert code == 0, err[-5000:]
    assert json.loads((tmp_path / "after.json").read_text())["tables"] == clean_run()["tables"]


# ---------------------------------------------------------------- the driver process
def drive(root: str, out: str, kill_stage: str | None = None, kill_batch: str | None = None) -> int:
    """Run BATCHES through one operator on ``root`` (resuming after its last committed batch).

    Exit code 3: another writer of the same operator won a commit (a clean failure).
    """
    from windowing.core.aggregates import Count, Sum
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.core.spec import WindowSpecBuilder
    from windowing.spark.operator.protocol import SparkWindowOperator
    from windowing.spark.runtime.spark_session import get_spark
    from windowing.spark import ConcurrentWriterError

    spec = (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .allowed_lateness(5).side_output_late_data().aggregate(s=Sum("v"), n=Count()))
    spark = get_spark("test-cluster-writers", master="local[2]", shuffle_partitions=2, conf=DRIVER_SETTINGS)
    current = {"batch": None}

    def fault(stage: str) -> None:
        if stage == kill_stage and str(current["batch"]) == kill_batch:
            os.kill(os.getpid(), signal.SIGKILL)

    op = SparkWindowOperator.on_delta(spark, spec, "op", root, fault_injection=fault)
    last = op.last_progress()
    replayed_from = 0 if last is None else int(last["batch_id"]) + 1
    try:
        for b, rows in enumerate(BATCHES):
            current["batch"] = b
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
        op.flush(len(BATCHES))
    except ConcurrentWriterError as error:
        print(f"another writer won: {error}", file=sys.stderr)
        return 3

    def rows(path: str) -> list:
        return sorted([list(r) for r in spark.read.format("delta").load(path).collect()], key=str)

    tables = {"results": rows(op.store.results_path), "late": rows(op.store.late_path),
              "quarantine": rows(op.store.quarantine_path), "open_windows": len(rows(op.store.windows_path)),
              "progress_batches": sorted(r[0] for r in spark.read.format("delta").load(op.store.progress_path)
                                         .select("batch_id").collect())}
    Path(out).write_text(json.dumps({"replayed_from": replayed_from, "tables": tables,
                                     "claims_kind": type(op.store.claims).__name__}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(drive(*sys.argv[1:]))
