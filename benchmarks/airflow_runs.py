"""A real local Airflow that runs the product's streaming task and Spark's own script as tasks of its DAGs.

What ``bench_doors.py airflow`` measures through: ``airflow standalone`` started by
:class:`pipelines.airflow_local.LocalAirflow` (scheduler, DAG processor, API server, LocalExecutor,
the streaming pool of one slot) on a DAGs folder of the benchmark's own, which holds:

* ``streaming.py``: a link to the product's ``dags/streaming.py``, as shipped (its DAG
  ``<job>_streaming`` for the one job ``WINDOWING_AIRFLOW_JOBS`` names; its task calls
  :func:`pipelines.orchestration.stream_run` inside the task process). The product's other DAGs
  stay out: the quality DAG would run a validation after each of our runs.
* ``spark_stream_once_dag.py`` (:func:`spark_dag_text`): the DAG :data:`SPARK_DAG_ID` whose one
  task, :data:`TASK_ID` like the product's, calls ``spark_stream_once.run_once`` (Spark's
  availableNow query of the same windows) inside the task process, with the product task's
  operator (``@task``), pool, retries and schedule.
* the profiled DAGs of ``--phases`` (:func:`profiled_dags`): the same two tasks with their
  steps timed inside the task process.

Runs are triggered, read and unpaused through the REST API (``/api/v2``, a token of the
generated admin password); durations come from Airflow's own records of the run and the task
instance. The processes Airflow started are stopped by PID (:meth:`LocalAirflow.stop`).
"""
from __future__ import annotations

import datetime as dt
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pipelines.airflow_local import STREAM_POOL, LocalAirflow, free_port

HERE = Path(__file__).resolve().parent
PRODUCT_DAG_FILE = HERE.parent / "dags" / "streaming.py"
SPARK_DAG_ID = "spark_stream_once"
SPARK_DAG_FILE = "spark_stream_once_dag.py"
PROFILED_DAG_ID = "bench_doors_streaming_profiled"
PROFILED_SPARK_DAG_ID = "spark_stream_once_profiled"
TASK_ID = "stream"
"""The task of both DAGs: the product's streaming task is the function ``stream``."""
READY_TIMEOUT_S = 480
RUN_TIMEOUT_S = 900
POLL_S = 0.5
"""Seconds between two reads of a run's state: the resolution of the bench's wall time."""
STALL_CHECK_S = 15
"""Seconds between two looks at the scheduler's heartbeat (:meth:`LocalAirflow.watch`)."""
PARSE_ONCE_S = 3600
"""The DAG files do not change during a benchmark: parsed once, not every 30 s (a process each time)."""
HTTP_TIMEOUT_S = 60

TASK_DAG = '''\
"""{doc} (a DAG file written by benchmarks/airflow_runs.py)."""
from __future__ import annotations

import datetime as dt
import sys

from airflow.sdk import DAG, task

BENCHMARKS = {benchmarks!r}

with DAG(dag_id={dag_id!r}, schedule={schedule!r}, start_date=dt.datetime.fromisoformat({start!r}),
         catchup=False, max_active_runs=1, tags=["benchmark"],
         default_args={{"owner": "windowing", "retries": {retries},
                       "retry_delay": dt.timedelta(seconds={retry_delay_s})}},
         description={doc!r}):

    @task(pool={pool!r})
    def {task_id}():
        """{doc}."""
        sys.path.insert(0, BENCHMARKS)
        from {module} import {function}
        return {function}(*{args!r})

    {task_id}()
'''
"""A DAG of one ``@task`` that calls ``module.function(*args)`` of benchmarks/ in the task process."""


def task_dag_text(dag_id: str, doc: str, call: tuple[str, str, tuple], job) -> str:
    """The DAG file of ``dag_id`` whose task :data:`TASK_ID` calls ``call`` = (module, function, args), with the
    pool, retries and schedule of ``job``'s streaming DAG (``job``: a :class:`pipelines.job.Job`)."""
    module, function, args = call
    return TASK_DAG.format(doc=doc, benchmarks=str(HERE), dag_id=dag_id, schedule=job.airflow.stream_schedule,
                           start=job.airflow.start.isoformat(), retries=job.airflow.retries,
                           retry_delay_s=job.airflow.retry_delay_s, pool=STREAM_POOL, task_id=TASK_ID,
                           module=module, function=function, args=tuple(args))


def spark_dag_text(raw: str, checkpoint: str, results: str, job) -> str:
    """The DAG file of Spark's side: ``spark_stream_once.run_once(raw, checkpoint, results)``."""
    return task_dag_text(SPARK_DAG_ID, "Spark's own windowed query, availableNow, in the task process",
                         ("spark_stream_once", "run_once", (raw, checkpoint, results)), job)


def profiled_dags(job_file: str, raw: str, checkpoint: str, results: str, job) -> dict[str, str]:
    """The DAG files of the ``--phases`` runs by file name: :data:`PROFILED_DAG_ID` (the product's streaming
    run with its steps timed) and :data:`PROFILED_SPARK_DAG_ID` (Spark's side, its session timed apart)."""
    return {"streaming_profiled_dag.py": task_dag_text(
                PROFILED_DAG_ID, "The product's streaming run with its steps timed, in the task process",
                ("airflow_runs", "profiled_stream_run", (job_file,)), job),
            "spark_stream_once_profiled_dag.py": task_dag_text(
                PROFILED_SPARK_DAG_ID, "Spark's own query with its session timed apart, in the task process",
                ("airflow_runs", "profiled_spark_run", (raw, checkpoint, results)), job)}


def profiled_stream_run(job_file: str) -> dict:
    """:func:`pipelines.orchestration.stream_run` of ``job_file`` with its steps timed (the task of
    :data:`PROFILED_DAG_ID`): the seconds of the task's Spark session, of the run, and the step lines of
    ``bench_doors.driver_profiler`` (Spark jobs and seconds each step spends itself)."""
    from bench_doors import driver_profiler
    from pipelines import orchestration
    started = time.monotonic()
    spark = orchestration.spark_for(orchestration.load(job_file))
    session_s = time.monotonic() - started
    profiler = driver_profiler(spark)
    profiler.wrap(orchestration, "_require_source", "orchestration: the raw table exists")
    started = time.monotonic()
    orchestration.stream_run(job_file)
    return {"session_s": session_s, "run_s": time.monotonic() - started, "steps": profiler.lines()}


def profiled_spark_run(raw: str, checkpoint: str, results: str) -> dict:
    """``spark_stream_once.run_once`` with the task's Spark session timed apart (the task of
    :data:`PROFILED_SPARK_DAG_ID`): the seconds of the session and of the query."""
    from spark_stream_once import SHUFFLE_PARTITIONS, run_once
    from windowing.spark.runtime.spark_session import get_spark
    started = time.monotonic()
    get_spark("spark_stream_once", shuffle_partitions=SHUFFLE_PARTITIONS)
    session_s = time.monotonic() - started
    started = time.monotonic()
    run_once(raw, checkpoint, results)
    return {"session_s": session_s, "run_s": time.monotonic() - started}


def write_dags_folder(folder: Path, raw: str, checkpoint: str, results: str, job, job_file: str) -> Path:
    """``folder`` with the product's streaming DAG file (linked), Spark's side's DAG file and the files of
    the profiled DAGs (:func:`profiled_dags`); returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PRODUCT_DAG_FILE.name).symlink_to(PRODUCT_DAG_FILE)
    (folder / SPARK_DAG_FILE).write_text(spark_dag_text(raw, checkpoint, results, job))
    for name, text in profiled_dags(job_file, raw, checkpoint, results, job).items():
        (folder / name).write_text(text)
    return folder


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one ISO timestamp of the REST API to another; None when either is missing."""
    if not start or not end:
        return None
    return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds()


@dataclass
class RunTimes:
    """One DAG run as Airflow recorded it, and as the benchmark saw it.

    Attributes:
        task_s: the task instance's start to end (its process: DAG file, task, Spark, exit).
        run_s: the DAG run's queued to end (scheduling, the task, the run's closing).
        wall_s: the benchmark's trigger call to its first read of the run's success.
        tries: the task's try number (1 unless a try failed and was retried).
    """

    task_s: float
    run_s: float
    wall_s: float
    tries: int

    def as_row(self) -> dict:
        return {"task_s": self.task_s, "run_s": self.run_s, "wall_s": self.wall_s, "tries": self.tries}


class AirflowRuns:
    """A started local Airflow on a DAGs folder: trigger a DAG, wait for its run, read its times."""

    def __init__(self, home: Path, dags_folder: Path, env: dict[str, str]):
        self.airflow = LocalAirflow(home, port=free_port(), dags_folder=dags_folder,
                                    env_overrides={"AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL":
                                                   str(PARSE_ONCE_S), **env})
        self._token: str | None = None

    def start(self, dag_ids: list[str]) -> None:
        """Start Airflow, wait until it is healthy and has parsed ``dag_ids``, and unpause them."""
        self.airflow.start()
        self.airflow.wait_ready(READY_TIMEOUT_S)
        deadline = time.monotonic() + READY_TIMEOUT_S
        for dag_id in dag_ids:
            while self._get(f"/api/v2/dags/{dag_id}") is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"DAG {dag_id} never parsed:\n{self.import_errors()}\n{self.airflow.log_tail()}")
                time.sleep(2)
            self._call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def stop(self) -> list[int]:
        """Stop every process this Airflow started (by PID); returns those PIDs."""
        return self.airflow.stop()

    def run(self, dag_id: str, run_id: str) -> RunTimes:
        """Trigger one run of ``dag_id``, wait until it succeeded, and return its times.

        Raises:
            RuntimeError: the run failed or did not end within ``RUN_TIMEOUT_S``, its task did not
                succeed (e.g. skipped), or Airflow exited.
        """
        started = time.monotonic()
        self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"dag_run_id": run_id, "logical_date": None})
        run = self._wait_for_end(dag_id, run_id)
        wall_s = time.monotonic() - started
        task = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{TASK_ID}")
        if run["state"] != "success" or task["state"] != "success":
            raise RuntimeError(f"{dag_id} run {run_id}: run {run['state']}, task {task['state']}:\n"
                               f"{self.task_log(dag_id, run_id, task.get('try_number') or 1)}")
        return RunTimes(task_s=seconds_between(task["start_date"], task["end_date"]),
                        run_s=seconds_between(run["queued_at"], run["end_date"]), wall_s=wall_s,
                        tries=task["try_number"])

    def _wait_for_end(self, dag_id: str, run_id: str) -> dict:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        next_watch = time.monotonic() + STALL_CHECK_S
        while time.monotonic() < deadline:
            run = self._get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
            if run is not None and run["state"] in ("success", "failed"):
                return run
            if self.airflow.process.poll() is not None:
                raise RuntimeError(f"airflow standalone exited:\n{self.airflow.log_tail()}")
            if time.monotonic() > next_watch:
                if self.airflow.watch():        # a deadlocked scheduler restarted: this run's times include it
                    print(f"  Airflow restarted: {self.airflow.restarts[-1]}", flush=True)
                next_watch = time.monotonic() + STALL_CHECK_S
            time.sleep(POLL_S)
        raise RuntimeError(f"{dag_id} run {run_id} not done after {RUN_TIMEOUT_S} s")

    def returned(self, dag_id: str, run_id: str):
        """What the task of a run returned (its XCom ``return_value``)."""
        entry = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{TASK_ID}"
                                  "/xcomEntries/return_value")
        value = entry["value"]
        return json.loads(value) if isinstance(value, str) else value

    def task_log(self, dag_id: str, run_id: str, attempt: int, lines: int = 30) -> str:
        """The last events of a task attempt's log file."""
        path = (self.airflow.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={TASK_ID}"
                / f"attempt={attempt}.log")
        if not path.exists():
            return f"(no log at {path})"
        events = []
        for line in path.read_text(errors="replace").splitlines()[-lines:]:
            try:
                record = json.loads(line)
                events.append(f"{record.get('timestamp', '')} {record.get('level', '')} {record.get('event', '')}")
            except ValueError:
                events.append(line)
        return "\n".join(events)

    def import_errors(self) -> str:
        errors = self._get("/api/v2/importErrors") or {}
        return "\n".join(f"{e.get('filename')}: {e.get('stack_trace')}" for e in errors.get("import_errors", []))

    def _get(self, path: str) -> dict | None:
        """GET ``path``; None when it is not found (yet)."""
        try:
            return self._call("GET", path)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        headers = {"Authorization": f"Bearer {self.token()}", "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.airflow.url + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            return json.loads(response.read())

    def token(self) -> str:
        """A REST API token of the admin user (its password is the one ``airflow standalone`` generated)."""
        if self._token is None:
            password = json.loads(self.airflow.password_file.read_text())["admin"]
            request = urllib.request.Request(f"{self.airflow.url}/auth/token", method="POST",
                                             data=json.dumps({"username": "admin", "password": password}).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
                self._token = json.loads(response.read())["access_token"]
        return self._token
