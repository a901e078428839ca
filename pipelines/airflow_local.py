"""A local Airflow for the project's DAGs: ``./dev airflow`` (``python -m pipelines.airflow_local``).

Runs ``airflow standalone`` (scheduler, DAG processor, API server with the UI,
triggerer; LocalExecutor) with:

* ``AIRFLOW_HOME`` = ``airflow-home/`` of the repository (git-ignored), a
  SQLite metadata database in it;
* the DAGs folder = ``dags/``; example DAGs off; new DAGs unpaused;
* parallelism sized for a 2-core machine: 3 task processes at once (each Spark
  task is a process with its own JVM, driver memory 1g), of which the
  streaming tasks of all jobs share one (the pool ``windowing_streams``, one
  slot), so two stay free for quality, backfill and reprocessing runs;
* task tokens that outlive a long queue (``[execution_api]
  jwt_expiration_time``: a task queued longer than the token's lifetime would
  fail before it runs with "Invalid auth token"), and task calls to the
  execution API that outwait the API server's start (``[workers]
  execution_api_retries``);
* a watch on the scheduler: Airflow 3.3's LocalExecutor can deadlock the
  scheduler's loop (a deadlock reported upstream: the process stays alive, its
  heartbeat stops, no task is scheduled again); :meth:`LocalAirflow.watch`
  restarts Airflow when the scheduler's heartbeat is older than
  ``SCHEDULER_STALL_S`` and writes the stalled process's kernel wait to the
  log first. Tasks it interrupts are retried (their jobs commit exactly once);
* the task environment Spark needs (``PYSPARK_PYTHON``, ``SPARK_LOCAL_IP``,
  the repository on ``PYTHONPATH``), relative job tables under
  ``WINDOWING_DATA_ROOT`` (default: ``demo-output/``, where ``./dev demo``
  writes, :data:`pipelines.orchestration.DEFAULT_DATA_ROOT`).

Ctrl-C (or SIGTERM) stops exactly the processes it started: the standalone
process group and every descendant, by PID, SIGTERM first, then SIGKILL.
The class :class:`LocalAirflow` is also what the end-to-end test uses.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.orchestration import DEFAULT_DATA_ROOT

REPO = Path(__file__).resolve().parents[1]
STREAM_POOL = "windowing_streams"
STREAM_POOL_SLOTS = 1
TASK_TOKEN_LIFETIME_S = 24 * 3600
"""Lifetime of a task's execution API token: longer than any queue of a busy local machine."""
SCHEDULER_STALL_S = 180
"""A scheduler whose heartbeat (every 5 s) is older than this is deadlocked: its loop has stopped."""
TASK_API_RETRIES = 10
"""Attempts of a task's call to the execution API (Airflow's default 5 gave up within 15 s while the
API server started on a loaded machine)."""


def free_port() -> int:
    """A TCP port that is free now on localhost (others may run an Airflow on 8080)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LocalAirflow:
    """One local Airflow (``airflow standalone``) in its own ``AIRFLOW_HOME``.

    Attributes:
        home: the AIRFLOW_HOME folder (created).
        port: the API server's port (UI and REST API at ``http://localhost:<port>``).
        parallelism: task processes at once (core.parallelism and per DAG); the
            streaming tasks take at most ``STREAM_POOL_SLOTS`` of them.
        dags_folder: the DAG files; default the repository's ``dags/``.
        env_overrides: extra environment of every Airflow process and task
            (e.g. ``WINDOWING_DATA_ROOT``, ``WINDOWING_AIRFLOW_JOBS``).
    """

    home: Path
    port: int = 8080
    parallelism: int = 3
    dags_folder: Path = REPO / "dags"
    env_overrides: dict = field(default_factory=dict)
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    log_server_ports: tuple[int, int] = (0, 0)
    restarts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home = Path(self.home).resolve()
        if self.log_server_ports == (0, 0):
            # The scheduler's and triggerer's log servers default to fixed ports (8793, 8794),
            # which another Airflow on the machine may hold.
            self.log_server_ports = (free_port(), free_port())
        if not 0 < self.port < 65536:
            raise ValueError(f"port {self.port} is not a TCP port (1..65535)")
        if self.parallelism < 1:
            raise ValueError(f"parallelism {self.parallelism} must be at least 1")

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def password_file(self) -> Path:
        return self.home / "simple_auth_manager_passwords.json.generated"

    def _jwt_secret(self) -> str:
        # All components must sign and check task tokens with one secret; keep it with the home.
        path = self.home / ".jwt_secret"
        if not path.exists():
            path.write_text(secrets.token_urlsafe(32))
            path.chmod(0o600)
        return path.read_text().strip()

    def env(self) -> dict[str, str]:
        """The environment of every Airflow process (and so of every task)."""
        self.home.mkdir(parents=True, exist_ok=True)
        venv_bin = str(Path(sys.executable).parent)
        env = dict(os.environ)
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(Path(self.dags_folder).resolve()),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": str(self.parallelism),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": self._jwt_secret(),
            # A busy 2-core machine answers slowly while Spark tasks start: wait, do not fail the task.
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
            # The first tasks are queued while the API server still starts: a task whose calls all found
            # it closed failed its first try ("Connection refused"). Retries wait 2 s, 4 s, ... up to 90 s.
            "AIRFLOW__WORKERS__EXECUTION_API_RETRIES": str(TASK_API_RETRIES),
            "AIRFLOW__WORKERS__EXECUTION_API_RETRY_WAIT_MIN": "2",
            # A task's token is made when it is queued: it must outlive the queue, not only the run.
            "AIRFLOW__EXECUTION_API__JWT_EXPIRATION_TIME": str(TASK_TOKEN_LIFETIME_S),
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self.log_server_ports[0]),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(self.log_server_ports[1]),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            "SPARK_DRIVER_MEMORY": os.environ.get("SPARK_DRIVER_MEMORY", "1g"),
            "WINDOWING_DATA_ROOT": os.environ.get("WINDOWING_DATA_ROOT") or str(DEFAULT_DATA_ROOT),
            "WINDOWING_AIRFLOW_STREAM_POOL": STREAM_POOL,
            "WINDOWING_JARS_DIR": os.environ.get("WINDOWING_JARS_DIR", str(REPO / ".jars")),
        })
        env.update({k: str(v) for k, v in self.env_overrides.items()})
        return env

    def airflow_cmd(self) -> list[str]:
        candidate = Path(sys.executable).parent / "airflow"
        return [str(candidate) if candidate.exists() else "airflow"]

    def cli(self, *args: str, timeout_s: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        """Run an ``airflow`` CLI command against this instance (its home and database)."""
        result = subprocess.run(self.airflow_cmd() + list(args), env=self.env(), capture_output=True, text=True,
                                timeout=timeout_s)
        if check and result.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n"
                               f"{result.stderr}")
        return result

    def start(self) -> None:
        """Start ``airflow standalone`` in a new process group, output to ``<home>/standalone.log``."""
        if self.process is not None:
            raise RuntimeError(f"Airflow in {self.home} is already started (pid {self.process.pid})")
        self.log_path = self.home / "standalone.log"
        env = self.env()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.airflow_cmd() + ["standalone"], env=env, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, cwd=str(self.home))

    def create_pools(self) -> None:
        """The pool of the streaming tasks (``STREAM_POOL_SLOTS`` slots); call when the database exists."""
        self.cli("pools", "set", STREAM_POOL, str(STREAM_POOL_SLOTS),
                 "streaming tasks of every job: the other task slots stay free for quality and backfill runs")

    def health(self) -> dict | None:
        """The API server's health document, or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=5) as response:
                return json.loads(response.read())
        except (OSError, ValueError):
            return None

    def wait_ready(self, timeout_s: float = 300) -> dict:
        """Wait until the API server answers and the scheduler and DAG processor are healthy.

        Raises:
            RuntimeError: the standalone process exited, or ``timeout_s`` passed
                (the message ends with the log's last lines).
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"airflow standalone exited with {self.process.returncode}:\n{self.log_tail()}")
            doc = self.health()
            if doc and all(doc.get(part, {}).get("status") == "healthy"
                           for part in ("metadatabase", "scheduler", "dag_processor")):
                self.create_pools()
                return doc
            time.sleep(3)
        raise RuntimeError(f"Airflow at {self.url} not healthy after {timeout_s:.0f}s:\n{self.log_tail()}")

    def scheduler_heartbeat_age_s(self) -> float | None:
        """Seconds since the running scheduler's last heartbeat, or None when no scheduler runs yet.

        Read from the metadata database (read-only): no Airflow import, no CLI process.
        """
        import sqlite3
        from contextlib import closing
        db = self.home / "airflow.db"
        if not db.exists():
            return None
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as conn:
                row = conn.execute("SELECT (julianday('now') - julianday(MAX(latest_heartbeat))) * 86400.0 "
                                   "FROM job WHERE job_type = 'SchedulerJob' AND state = 'running'").fetchone()
        except sqlite3.OperationalError:  # locked by a writer, or the tables are not created yet
            return None
        return None if row is None or row[0] is None else float(row[0])

    def watch(self, stall_s: float = SCHEDULER_STALL_S) -> bool:
        """Restart Airflow if its scheduler is deadlocked (heartbeat older than ``stall_s``); True if it did.

        Call it while waiting on runs. The reason, with the stalled scheduler's kernel wait
        (``/proc/<pid>/wchan`` and ``syscall``), goes to the log and to :attr:`restarts`.
        """
        age_s = self.scheduler_heartbeat_age_s()
        if self.process is None or age_s is None or age_s <= stall_s:
            return False
        waits = "; ".join(f"pid {pid}: {wait}" for pid, wait in self._scheduler_waits())
        reason = f"scheduler heartbeat {age_s:.0f}s old (limit {stall_s:.0f}s); kernel wait: {waits or 'unknown'}"
        with open(self.log_path, "a") as log:
            log.write(f"[local-airflow] restarting: {reason}\n")
        self.restarts.append(reason)
        self.stop()
        self.start()
        self.wait_ready()
        return True

    def scheduler_pids(self) -> list[int]:
        """The PIDs of the running ``airflow scheduler`` processes this instance started."""
        import psutil
        pids = []
        for pid in self.started_pids():
            try:
                if "scheduler" in psutil.Process(pid).cmdline():
                    pids.append(pid)
            except psutil.Error:
                continue
        return pids

    def _scheduler_waits(self) -> list[tuple[int, str]]:
        waits = []
        for pid in self.scheduler_pids():
            proc = Path("/proc") / str(pid)
            try:
                waits.append((pid, f"{(proc / 'wchan').read_text().strip()} "
                                   f"[{(proc / 'syscall').read_text().strip()[:60]}]"))
            except OSError:
                continue
        return waits

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path or not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def started_pids(self) -> list[int]:
        """The standalone process and all its descendants that are alive now."""
        import psutil
        if self.process is None:
            return []
        try:
            root = psutil.Process(self.process.pid)
            return [root.pid] + [child.pid for child in root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def stop(self, timeout_s: float = 30) -> list[int]:
        """Stop the processes this instance started (by PID, children included); returns those PIDs.

        SIGTERM to the process group and to every descendant found (some
        Airflow children start sessions of their own), then SIGKILL whatever is
        still alive after ``timeout_s``.
        """
        import psutil
        if self.process is None:
            return []
        pids = self.started_pids()
        procs = []
        for pid in pids:
            try:
                procs.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # the group is ours: start_new_session=True
        except ProcessLookupError:
            pass
        for proc in procs:
            try:
                proc.terminate()
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(procs, timeout=timeout_s)
        for proc in alive:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=10)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait(timeout=10)
        self.process = None
        return pids


def login_info(airflow: LocalAirflow) -> str:
    return (f"Airflow UI: {airflow.url}  (user: admin; password in {airflow.password_file})\n"
            f"DAGs: {airflow.dags_folder}; data root: {airflow.env()['WINDOWING_DATA_ROOT']}; "
            f"log: {airflow.log_path}\nStop with Ctrl-C.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev airflow", description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", default=str(REPO / "airflow-home"), help="AIRFLOW_HOME (default: airflow-home/)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("AIRFLOW_PORT", "8080")))
    parser.add_argument("--parallelism", type=int, default=3,
                        help=f"task processes at once (default 3, of which streaming tasks take {STREAM_POOL_SLOTS})")
    args = parser.parse_args(argv)
    airflow = LocalAirflow(Path(args.home), port=args.port, parallelism=args.parallelism)
    stopping = {"signal": None}

    def on_signal(signum, frame):
        stopping["signal"] = signum
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    airflow.start()
    print(f"[airflow] starting airflow standalone (pid {airflow.process.pid}) in {airflow.home}; "
          f"log: {airflow.log_path}", flush=True)
    try:
        airflow.wait_ready()
        print("[airflow] ready.\n" + login_info(airflow), flush=True)
        while airflow.process.poll() is None:
            if airflow.watch():
                print(f"[airflow] restarted: {airflow.restarts[-1]}", flush=True)
            time.sleep(5)
        print(f"[airflow] airflow standalone exited with {airflow.process.returncode}:\n{airflow.log_tail()}")
        return 1
    except KeyboardInterrupt:
        print("\n[airflow] stopping ...", flush=True)
        return 0
    except RuntimeError as error:
        print(f"[airflow] {error}", file=sys.stderr)
        return 1
    finally:
        pids = airflow.stop()
        print(f"[airflow] stopped {len(pids)} processes it had started (pids {pids[:8]}{'...' if len(pids) > 8 else ''})",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
