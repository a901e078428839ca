"""End to end with a real Airflow scheduler: ``airflow standalone`` in a temporary AIRFLOW_HOME.

The streaming DAG is triggered once and ``airflow backfill create`` makes one
run per hourly interval of the backfill DAG; every run must succeed, the
quality DAG must validate the stream's batch on the results asset, and the
Delta outputs must be exactly those of the drivers. The processes the test
started are stopped by PID (children included) whatever happens.

One streaming run, not two: every run is a task process with its own JVM (and
a quality run on its asset event), the most expensive thing here. A second
arrival resuming the stream's Delta state, late rows included, is checked with
two ``dag.test()`` runs in ``test_airflow_dags.py`` and across operators on
Delta in ``test_delta_protocol.py``; this test is about the real scheduler:
triggered runs, backfill runs per interval, asset-triggered quality runs.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sqlite3
import time
import warnings
from contextlib import closing
from pathlib import Path

import psutil
import pytest

from pipelines.airflow_local import SCHEDULER_STALL_S, LocalAirflow, free_port
from suite_machine import services_group

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "jobs" / "purchases_per_minute.toml"
pytestmark = [pytest.mark.airflow, pytest.mark.slow, pytest.mark.spark, pytest.mark.xdist_group(services_group(__file__))]
UTC = dt.timezone.utc

# Generous but bounded: a cold start on a busy 2-core machine takes a minute or two,
# and every Spark task is a new process with its own JVM.
READY_TIMEOUT_S = 480
RUN_TIMEOUT_S = 720
POLL_S = 2  # a SQLite read: polling often costs nothing
STALL_CHECK_S = 15  # the scheduler heartbeats every 5 s


def list_runs(airflow: LocalAirflow, dag_id: str) -> list[dict]:
    """The runs of ``dag_id`` (run_id, state, logical_date), read from the metadata database.

    A read-only SQLite query instead of ``airflow dags list-runs``: each CLI call is a new
    Python process importing Airflow, several CPU-seconds on a 2-core machine every poll.
    """
    rows = _query(airflow, "SELECT run_id, state, logical_date FROM dag_run WHERE dag_id = ?", dag_id)
    # Airflow's CLI prints ISO dates ("2026-11-01T09:00:00+00:00"); SQLite keeps "2026-11-01 09:00:00.000000".
    return [{"run_id": r[0], "state": r[1], "logical_date": (r[2] or "").replace(" ", "T")} for r in rows]


def dag_parsed(airflow: LocalAirflow, dag_id: str) -> bool:
    """The DAG processor has stored ``dag_id`` (serialized, not stale): it can be triggered."""
    return bool(_query(airflow, "SELECT 1 FROM dag d JOIN serialized_dag s ON s.dag_id = d.dag_id "
                                "WHERE d.dag_id = ? AND NOT d.is_stale", dag_id))


def _query(airflow: LocalAirflow, sql: str, *args) -> list[tuple]:
    db = airflow.home / "airflow.db"
    if not db.exists():
        return []
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as conn:
            return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # locked by a writer, or the tables are not created yet
        return []


def wait_for(airflow: LocalAirflow, dag_id: str, accept, what: str, timeout_s: float = RUN_TIMEOUT_S) -> list[dict]:
    """Poll the runs of ``dag_id`` until ``accept(runs)``; fail on a failed run or on the timeout."""
    deadline = time.monotonic() + timeout_s
    runs: list[dict] = []
    while time.monotonic() < deadline:
        runs = list_runs(airflow, dag_id)
        if accept(runs):
            return runs
        if airflow.watch():   # a deadlocked scheduler (an Airflow bug, see LocalAirflow.watch) restarted
            warnings.warn(f"Airflow restarted while waiting for {what}: {airflow.restarts[-1]}")
        if airflow.process.poll() is not None:
            pytest.fail(f"airflow standalone exited while waiting for {what}:\n{airflow.log_tail()}\n"
                        f"{task_report(airflow)}")
        time.sleep(POLL_S)
    pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}; runs: {runs}\n{task_report(airflow)}\n"
                f"scheduler heartbeat age: {airflow.scheduler_heartbeat_age_s()} s; restarts: {airflow.restarts}\n"
                f"{scheduler_lines(airflow)}\n{airflow.log_tail()}")


def scheduler_lines(airflow: LocalAirflow, lines: int = 30) -> str:
    """The scheduler's last lines of the standalone log (its tail is mostly the DAG processor's)."""
    if not airflow.log_path or not airflow.log_path.exists():
        return "(no log)"
    mine = [line for line in airflow.log_path.read_text(errors="replace").splitlines()
            if line.startswith(("scheduler", "[local-airflow]"))]
    return "\n".join(mine[-lines:])


def task_report(airflow: LocalAirflow, lines: int = 12) -> str:
    """What a failure needs to say: every task instance's state, and the last events of each attempt's log
    (the standalone log's tail is mostly the DAG processor's)."""
    rows = _query(airflow, "SELECT dag_id, run_id, task_id, state, try_number, start_date, end_date, pid "
                           "FROM task_instance ORDER BY start_date")
    out = ["task instances (dag, run, task, state, try, start, end, pid):"] + [f"  {row}" for row in rows]
    for log in sorted((airflow.home / "logs").glob("dag_id=*/run_id=*/task_id=*/attempt=*.log")):
        events = []
        for line in log.read_text(errors="replace").splitlines()[-lines:]:
            try:
                record = json.loads(line)
                event = f"{record.get('timestamp', '')} {record.get('level', '')} {record.get('event', '')}"
                events.append(f"    {event[:400]}")
            except ValueError:
                events.append(f"    {line[:400]}")
        out += [f"  {log.relative_to(airflow.home / 'logs')}:"] + events
    return "\n".join(out)


def task_log_records(airflow: LocalAirflow, dag_id: str, run_id: str, task_id: str) -> list[dict]:
    """The records of a task's first attempt log, as Airflow wrote them (one JSON object a line)."""
    path = airflow.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}" / "attempt=1.log"
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            records.append({"level": "?", "event": line})
    return records


def cli_writing(airflow: LocalAirflow, *args: str, attempts: int = 3):
    """An ``airflow`` CLI command that writes to the metadata database, again if SQLite was locked.

    On a busy machine the scheduler's transactions can hold SQLite's write lock longer than a
    CLI process waits for it; the CLI's transaction is then rolled back and can be repeated.
    """
    for attempt in range(attempts):
        result = airflow.cli(*args, check=False)
        if result.returncode == 0:
            return result
        if "database is locked" not in result.stdout + result.stderr or attempt == attempts - 1:
            pytest.fail(f"airflow {' '.join(args)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                        f"{result.stderr[-3000:]}")
        time.sleep(POLL_S)


def run_state(run_id: str):
    def accept(runs: list[dict]) -> bool:
        states = {r["run_id"]: r["state"] for r in runs}
        if states.get(run_id) == "failed":
            pytest.fail(f"run {run_id} failed")
        return states.get(run_id) == "success"
    return accept


def test_real_scheduler_streams_and_backfills_two_intervals(spark, tmp_path):
    from examples.demo import generate_purchases, land
    from pipelines.drivers import run_stream
    from pipelines.job import load_job
    from pipelines.orchestration import backfill_job

    data, twin_root = tmp_path / "data", tmp_path / "twin"
    job, twin = load_job(DEMO, root=data), load_job(DEMO, root=twin_root)
    rows = generate_purchases(n_events=1200, minutes=120)  # 09:00 to 11:00: two hourly intervals
    land(spark, rows, job.source_path)

    # The demo job as shipped, but one backfill chunk per hourly interval instead of six: each chunk is a
    # Delta commit round, slow on a busy 2-core machine; chunking itself is tested with the drivers.
    # The quality DAG is what validates the runs (as a deployment with that DAG would set it): the
    # streaming and backfill tasks do not validate the same outputs a second time. And the DAGs run
    # only what the test asks for: with the job's start date in 2100 the scheduler creates no
    # scheduled run (a streaming run every 5 minutes, the first at once taking the first arrival; a
    # backfill run of the latest hour, then a data-quality run of it, each a task process with its
    # own JVM), while triggered runs and `airflow backfill create` runs do not depend on it.
    from job_files import demo_job_file
    job_file = demo_job_file(tmp_path, replace={'backfill_chunk = "10 minutes"': 'backfill_chunk = "1 hour"',
                                                'start_date = "2026-01-01"': 'start_date = "2100-01-01"'})
    assert load_job(job_file).validate_runs is False
    airflow = LocalAirflow(tmp_path / "airflow-home", port=free_port(),
                           env_overrides={"WINDOWING_DATA_ROOT": str(data), "WINDOWING_AIRFLOW_JOBS": str(job_file),
                                          # the DAG files do not change during the test: parse them once, not
                                          # every 30 s (each parse is a process importing Airflow)
                                          "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
                                          # Every task is a short process with its own JVM on a few rows: with
                                          # the C1 compiler alone such a JVM uses about half the CPU (C2 compiles
                                          # for the long runs of production; the pytest JVMs keep it too).
                                          "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"})
    started: list[int] = []
    try:
        airflow.start()
        airflow.wait_ready(READY_TIMEOUT_S)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not all(dag_parsed(airflow, f"purchases_per_minute_{kind}") for kind in ("streaming", "backfill")):
            assert time.monotonic() < deadline, f"DAGs never parsed:\n{airflow.log_tail()}"
            time.sleep(POLL_S)
        started = airflow.started_pids()

        cli_writing(airflow, "dags", "trigger", "purchases_per_minute_streaming", "--run-id", "e2e_stream_1")
        # The backfill reads the raw table, complete already, and writes tables of its own: its two runs
        # need not wait for the streaming run (they take the next free task slot).
        cli_writing(airflow, "backfill", "create", "--dag-id", "purchases_per_minute_backfill",
                    "--from-date", "2026-11-01T09:00:00+00:00", "--to-date", "2026-11-01T10:00:00+00:00",
                    "--reprocess-behavior", "completed", "--max-active-runs", "1")
        stream_runs = wait_for(airflow, "purchases_per_minute_streaming", run_state("e2e_stream_1"),
                               "streaming run 1")
        stream_log = task_log_records(airflow, "purchases_per_minute_streaming", "e2e_stream_1", "stream")

        def two_backfill_runs(runs: list[dict]) -> bool:
            mine = [r for r in runs if r["run_id"].startswith("backfill__")]
            if any(r["state"] == "failed" for r in mine):
                pytest.fail(f"a backfill run failed: {mine}")
            return len(mine) == 2 and all(r["state"] == "success" for r in mine)

        backfill_runs = wait_for(airflow, "purchases_per_minute_backfill", two_backfill_runs, "two backfill runs",
                                 2 * RUN_TIMEOUT_S)
        # The quality DAG runs on the results assets; wait until one of its runs has validated the
        # first streaming run's batch (its runs may also be about the DAG's own scheduled backfill run).
        from pipelines.quality import read_runs, runs_table_path
        from windowing.spark.lake import delta_lake_io

        def first_batch_validated(runs: list[dict]) -> bool:
            if any(r["state"] == "failed" for r in runs):
                pytest.fail(f"a data-quality run failed: {runs}")
            return (any(r["state"] == "success" for r in runs)   # (a SQLite read; Spark only then)
                    and delta_lake_io.table_exists(spark, runs_table_path(job))
                    and read_runs(spark, job).where("run_kind = 'stream' AND batch_id = 0").count() > 0)

        wait_for(airflow, "purchases_per_minute_quality", first_batch_validated,
                 "a data-quality run validating streaming batch 0")

        # A deadlocked scheduler (its loop stopped, the process alive) is restarted by the watch: a
        # stopped scheduler process stands for it.
        assert not airflow.watch()
        stalled = airflow.scheduler_pids()
        assert stalled, "no scheduler process found"
        for pid in stalled:
            os.kill(pid, signal.SIGSTOP)
        restarts = len(airflow.restarts)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not airflow.watch(stall_s=STALL_CHECK_S):
            assert time.monotonic() < deadline, "the watch never restarted the stopped scheduler"
            time.sleep(POLL_S)
        assert len(airflow.restarts) == restarts + 1 and "heartbeat" in airflow.restarts[-1]
        assert not set(stalled) & set(airflow.started_pids())
        assert airflow.scheduler_heartbeat_age_s() < SCHEDULER_STALL_S
    finally:
        stopped = airflow.stop()
        leftovers = [pid for pid in set(stopped) | set(started) if psutil.pid_exists(pid)
                     and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        assert leftovers == [], f"processes the test started are still alive: {leftovers}"

    # The streaming task's log, as Airflow keeps it, reads: short, no ERROR line, the batch summary first.
    assert len(stream_log) < 40, "\n".join(f"{r.get('level')} {r.get('event')}" for r in stream_log)
    assert [r for r in stream_log if r.get("level") in ("error", "critical")] == []
    ours = [r for r in stream_log if r.get("logger") == "pipelines"]
    assert ours and ours[0]["level"] == "info" and ours[0]["event"].startswith("batch 0 ["), ours
    assert not [r for r in stream_log if str(r.get("logger", "")).startswith(("great_expectations", "py4j"))]

    # The quality DAG validated the first streaming run's batch with no critical failure.
    checked = read_runs(spark, job).where("run_kind = 'stream' AND batch_id = 0").collect()
    assert checked and not [r for r in checked if r["failed_critical"]]
    assert {r["suite"] for r in checked} >= {"window_results", "raw_events", "late_rows"}

    # Only the runs the test asked for: the triggered one and one backfill run per interval.
    assert [r["run_id"] for r in stream_runs] == ["e2e_stream_1"]   # no scheduled run took the arrival
    assert [r for r in backfill_runs if not r["run_id"].startswith("backfill__")] == []   # no scheduled run
    assert sorted(r["logical_date"][:16] for r in backfill_runs) == ["2026-11-01T09:00", "2026-11-01T10:00"]

    # The stream's outputs are exactly what the driver writes for the same arrival.
    land(spark, rows, twin.source_path)
    run_stream(spark, twin, validate=False)
    cols = ("user_id", "window_start_ms", "items", "purchases", "pane_index", "timing", "is_final", "batch_id")

    def table(path, *columns):
        return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())

    results = table(job.results_path, *cols)
    assert len(results) > 100 and results == table(twin.results_path, *cols)
    assert {r[-1] for r in results} == {0}
    assert len(table(job.quarantine_path, "event_id")) == 3

    # The backfill: every valid purchase of the two intervals counted once, one complete pane per window.
    backfill = table(backfill_job(job).results_path, "user_id", "window_end_ms", "purchases", "timing")
    assert sum(r[2] for r in backfill) == 1200
    assert len({r[:2] for r in backfill}) == len(backfill) and {r[3] for r in backfill} == {"ON_TIME"}
    ends = [r[1] for r in backfill]
    edge = int(dt.datetime(2026, 11, 1, 10, tzinfo=UTC).timestamp() * 1000)
    assert min(ends) > edge - 3_600_000 and max(ends) <= edge + 3_600_000
    assert any(e <= edge for e in ends) and any(e > edge for e in ends)
