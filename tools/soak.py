"""A fault soak of the ``winjob`` CLI: SIGKILLs at random points, concurrent runs, and a clean run to compare.

What one soak does (``docs/fault-soak.md`` is the user's guide):

1. Generates the demo's purchases (:func:`examples.demo.generate_purchases`: out-of-order
   and late rows, malformed rows) and writes two copies of the demo job under each of two
   roots, ``clean`` and ``soak``: a streaming job and a chunked-backfill job (its own
   operator, outputs and raw table, which holds every row at once).
2. The clean run: in this process, on its SparkSession, in a thread of its own, no fault: the
   chunked backfill, then every arrival landed and streamed (``availableNow``) one after the other.
3. The class-data archive (:meth:`Soak._class_data_archive`), while the clean run goes on: one
   ``winjob stream`` on a root of its own writes the classes its JVM loaded, which every later
   process maps instead of loading them.
4. The soak, as ``winjob`` subprocesses on the ``soak`` root: the backfill killed with
   SIGKILL ``backfill_kills`` times and restarted until it exits 0, in a thread of its own;
   beside it the stream, one arrival at a time, killed ``stream_kills`` times (plus any kill
   the backfill could not place) and restarted until it exits 0 (or, for an arrival whose
   batch Spark had planned before its last kill, until the next arrival's runs replay it:
   :meth:`Soak._stream_phase`); then ``concurrent_pairs`` times: one more arrival landed and
   two ``winjob stream`` runs of the job started together.
5. Checks: every table of both operators (results, late, quarantine, windows as the
   committed state with the changes logged in progress rows folded in, buffers,
   progress) holds the clean run's rows, as multisets, after dropping only the columns
   that record when or by which process a batch ran (:data:`RUN_VARYING_COLUMNS`); no
   table holds two rows with one natural key; each run of a concurrent pair exits 0, or 4
   with an error that names the concurrent writer (:data:`CONCURRENT_WRITER_ERROR`).

Kill points come from ``pipelines.fault_hook`` (``WINJOB_FAULT``): a commit stage
(``stage:<name>:<n>``) or a delay after the operator is built (``delay:<s>``), drawn from
a ``random.Random(seed)``: the same seed draws the same plans (timing still varies, so a
delay kill lands where the machine's speed puts it).
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.errors import ExitCode
from pipelines.fault_hook import FAULT_ENV, STAGES, FaultPlan

REPO = Path(__file__).resolve().parents[1]
DEMO_JOB = REPO / "jobs" / "purchases_per_minute.toml"
STREAM, BACKFILL, PAIR = "stream", "backfill", "concurrent"
KILLED_RC = -signal.SIGKILL
TIMED_OUT_RC = -1000
"""The return code recorded for a run the soak killed because it outlived ``run_timeout_s``."""
CONFLICT_RC = int(ExitCode.CONFLICT)
"""``winjob``'s exit code for a run that lost a batch to another run (:class:`pipelines.errors.ExitCode`)."""
LAST_STAGE = "after_progress"
"""After a kill here the batch is committed: a restart skips it, so no later stage kill of that batch fires."""

CONCURRENT_WRITER_ERROR = re.compile(r"ConcurrentWriterError|another writer|another run|Two runs must not write")
"""What the error of a run that lost a concurrent race must name (with exit code :data:`CONFLICT_RC`)."""

RUN_VARYING_COLUMNS = {
    "progress": ("committed_at", "writer_id", "processing_time_ms", "windows_version", "buffers_version",
                 "source_offsets"),
}
"""Columns that legitimately differ between two correct runs, per table, ignored by the comparison.

``committed_at`` and ``processing_time_ms`` are wall-clock times of the run; ``writer_id`` is a
random id per process; ``windows_version`` and ``buffers_version`` are positions in the state
tables' Delta logs, which count every commit a table saw (a retried creation, a claim) and not
its contents: the contents are compared table by table. ``source_offsets`` name the raw table's
id and positions in its log, which differ between the clean root's raw table and the soak
root's. ``time_state`` is compared without its processing-time stamps (:func:`_without_clock`).
Nothing of results, late, quarantine or window state is ignored.
"""
TIME_STATE = "time_state"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
CLASS_ARCHIVE = "winjob-classes.jsa"
"""The class-data archive in the work folder (:meth:`Soak._class_data_archive`)."""
ARCHIVE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class SoakConfig:
    """One soak's size and randomness.

    Args:
        seed: draws the data's arrival split, every kill plan and the pairs' start gaps.
        stream_kills: kills of ``winjob stream`` over the arrivals.
        backfill_kills: kills of ``winjob backfill --chunk``.
        concurrent_pairs: pairs of concurrent ``winjob stream`` runs (one arrival each).
        arrivals: arrivals streamed under kills (each becomes one batch).
        events: purchases generated (the demo's generator; about 2% arrive minutes late).
        minutes: event-time span of the purchases.
        backfill_chunk: the backfill's event-time chunk.
        stream_delay_max_s: a stream delay kill comes 0 to this many seconds after the operator is built.
        backfill_delay_max_s: the same for a backfill.
        delay_share: the share of kills placed by a delay (the rest at a commit stage).
        run_timeout_s: a run still alive after this long is killed and counted as a failure.
        failed_restarts: restarts without a kill after a run failed by itself before the soak gives up.
        spark_conf: more ``[spark]`` settings of both jobs, as (key, value) pairs: the CI soak gives
            its processes the SQL settings of the test session that runs the clean run.
        class_data_sharing: the soak's ``winjob`` processes map the classes they load from an
            archive (the JVM's class data sharing) that one ``winjob stream`` run writes at the start
            (:meth:`Soak._class_data_archive`); they skip most class loading and verification.
    """

    seed: int
    stream_kills: int = 5
    backfill_kills: int = 5
    concurrent_pairs: int = 1
    arrivals: int = 3
    events: int = 400
    minutes: int = 8
    backfill_chunk: str = "2 minutes"
    stream_delay_max_s: float = 12.0
    backfill_delay_max_s: float = 20.0
    delay_share: float = 0.4
    run_timeout_s: float = 900.0
    failed_restarts: int = 2
    spark_conf: tuple[tuple[str, str], ...] = ()
    class_data_sharing: bool = True

    def __post_init__(self) -> None:
        for name in ("stream_kills", "backfill_kills", "concurrent_pairs", "failed_restarts"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, got {getattr(self, name)}")
        for name in ("arrivals", "events", "minutes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be 1 or more, got {getattr(self, name)}")
        if not 0.0 <= self.delay_share <= 1.0:
            raise ValueError(f"delay_share must be in [0, 1], got {self.delay_share}")
        for name in ("stream_delay_max_s", "backfill_delay_max_s", "run_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    @property
    def kills(self) -> int:
        return self.stream_kills + self.backfill_kills


@dataclass(frozen=True)
class RunRecord:
    """One ``winjob`` process of the soak."""

    phase: str
    step: str
    fault: FaultPlan | None
    rc: int
    seconds: float
    log: Path
    tail: str

    @property
    def killed(self) -> bool:
        """Died by its planned fault (a SIGKILL nobody planned is a failure like any other)."""
        return self.rc == KILLED_RC and self.fault is not None

    def line(self) -> str:
        fault = self.fault.env_value() if self.fault else "none"
        outcome = "KILLED" if self.killed else f"rc {self.rc}"
        error = f"  | {self.tail}" if self.rc not in (0, KILLED_RC) else ""
        return f"{self.phase:<10} {self.step:<14} fault {fault:<28} {outcome:<7} {self.seconds:6.1f}s{error}"


@dataclass(frozen=True)
class TableDiff:
    """A soak table against the clean run's: rows missing, rows extra, natural keys held twice."""

    name: str
    clean_rows: int
    soak_rows: int
    missing: tuple
    extra: tuple
    duplicate_keys: tuple

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.duplicate_keys)

    def line(self) -> str:
        status = "equal" if self.equal else "DIFFERS"
        text = f"{self.name:<34} clean {self.clean_rows:5d}  soak {self.soak_rows:5d}  {status}"
        if not self.equal:
            text += (f"  (missing {len(self.missing)}, extra {len(self.extra)}, "
                     f"duplicate keys {len(self.duplicate_keys)})")
            for label, rows in (("missing", self.missing), ("extra", self.extra),
                                ("duplicate key", self.duplicate_keys)):
                text += "".join(f"\n      {label}: {row}" for row in rows[:3])
        return text


@dataclass
class SoakReport:
    """What a soak did and found; :attr:`passed` is the verdict."""

    config: SoakConfig
    workdir: Path
    runs: list[RunRecord] = field(default_factory=list)
    tables: list[TableDiff] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    clean_counts: dict[str, int] = field(default_factory=dict)

    @property
    def kills(self) -> int:
        return sum(r.killed for r in self.runs)

    @property
    def passed(self) -> bool:
        return not self.failures and bool(self.tables) and all(t.equal for t in self.tables)

    def summary(self) -> str:
        c = self.config
        lines = [f"fault soak seed {c.seed}: {self.kills} kills fired ({c.stream_kills} stream + "
                 f"{c.backfill_kills} backfill planned), {c.concurrent_pairs} concurrent pairs, "
                 f"{len(self.runs)} winjob runs; work in {self.workdir}",
                 f"replay: ./dev python tools/fault_soak.py --seed {c.seed} --stream-kills {c.stream_kills} "
                 f"--backfill-kills {c.backfill_kills} --concurrent-pairs {c.concurrent_pairs} "
                 f"--arrivals {c.arrivals} --events {c.events} --minutes {c.minutes} "
                 f"--chunk '{c.backfill_chunk}' --delay-share {c.delay_share}",
                 "clean run: " + ", ".join(f"{k} {v}" for k, v in self.clean_counts.items()), "runs:"]
        lines += ["  " + r.line() for r in self.runs]
        lines += ["tables (soak vs clean):"] + ["  " + t.line() for t in self.tables]
        lines += ["failures:"] + [f"  {f}" for f in self.failures] if self.failures else []
        lines.append(f"RESULT: {'PASS' if self.passed else 'FAIL'} (seed {c.seed})")
        return "\n".join(lines)


# ---------------------------------------------------------------- job files and data
def write_jobs(root: Path, spark_conf: tuple[tuple[str, str], ...] = (), java_options: str = "") -> tuple[Path, Path]:
    """The demo job as a stream job and a chunked-backfill job under ``root`` (no per-run validation).

    ``spark_conf``: settings added to both jobs' ``[spark]`` table; ``java_options`` go after
    its ``spark.driver.extraJavaOptions``.
    """
    root.mkdir(parents=True, exist_ok=True)
    text = DEMO_JOB.read_text()
    if java_options:
        conf = dict(spark_conf)
        conf[DRIVER_JAVA_OPTIONS] = " ".join(filter(None, [conf.get(DRIVER_JAVA_OPTIONS), java_options]))
        spark_conf = tuple(conf.items())
    spark_lines = "".join(f"\n{json.dumps(key)} = {json.dumps(value)}" for key, value in spark_conf)
    common = {"[quality]": "[quality]\nvalidate_runs = false",
              '"spark.sql.shuffle.partitions" = "4"': '"spark.sql.shuffle.partitions" = "2"' + spark_lines}
    backfill = {'operator_id = "purchases_1m"': 'operator_id = "purchases_1m_backfill"',
                'root = "output/purchases_per_minute"': 'root = "output/purchases_per_minute_backfill"',
                'path = "raw/purchases"': 'path = "raw/purchases_all"'}
    paths = []
    for name, changes in (("stream.toml", common), ("backfill.toml", {**common, **backfill})):
        job_text = text
        for old, new in changes.items():
            if job_text.count(old) != 1:
                raise ValueError(f"{DEMO_JOB} no longer has exactly one {old!r}: update tools/soak.py")
            job_text = job_text.replace(old, new)
        (root / name).write_text(job_text)
        paths.append(root / name)
    return paths[0], paths[1]


def arrivals_of(config: SoakConfig) -> list[list[tuple]]:
    """The purchases cut into ``arrivals + concurrent_pairs`` parts by ingestion time.

    The demo's rows plus two that are late whatever the seed (a purchase of the
    first minute that arrives after 60% and after 90% of the span): the
    delayed purchases of the generator are late only where the cuts put them
    after the watermark passed their window. Each cut lies within a quarter of
    a part's size of the even split (seeded), so every part has rows.
    """
    import datetime as dt
    from examples.demo import START, generate_purchases
    rows = generate_purchases(n_events=config.events, n_users=max(4, config.events // 25),
                              minutes=config.minutes, seed=config.seed)
    span = dt.timedelta(minutes=config.minutes)
    rows += [(f"late{share}", "u000", 1, START + dt.timedelta(seconds=5), START + span * share / 100)
             for share in (60, 90)]
    rows.sort(key=lambda row: row[4])
    parts = config.arrivals + config.concurrent_pairs
    rng = random.Random(f"{config.seed}:arrivals")
    size = len(rows) / parts
    cuts = [round(size * i + rng.uniform(-size / 4, size / 4)) for i in range(1, parts)]
    bounds = [0, *cuts, len(rows)]
    return [rows[a:b] for a, b in zip(bounds, bounds[1:])]


# ---------------------------------------------------------------- running winjob
def winjob_command() -> list[str]:
    """The ``winjob`` entry point of this environment (the module when no script is installed)."""
    script = Path(sys.executable).parent / "winjob"
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]


def winjob_env(fault: FaultPlan | None) -> dict[str, str]:
    """This process's environment as ``./dev`` sets it, with this repository first and ``WINJOB_FAULT``."""
    env = dict(os.environ)
    env.pop(FAULT_ENV, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if (REPO / ".jars").is_dir():
        env.setdefault("WINDOWING_JARS_DIR", str(REPO / ".jars"))
    if fault is not None:
        env[FAULT_ENV] = fault.env_value()
    return env


class Runner:
    """Starts ``winjob`` processes in their own process groups and records each as a :class:`RunRecord`."""

    def __init__(self, report: SoakReport, log_dir: Path, timeout_s: float):
        self.report, self.log_dir, self.timeout_s = report, log_dir, timeout_s
        log_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()   # the backfill's runs start from a thread of their own

    def start(self, args: list[str], fault: FaultPlan | None, name: str) -> tuple[subprocess.Popen, Path, float]:
        with self._lock:
            log = self.log_dir / f"{len(list(self.log_dir.iterdir())):03d}-{name}.log"
            log.touch()
        handle = log.open("w")
        handle.write(f"$ {FAULT_ENV}={fault.env_value() if fault else ''} winjob {' '.join(args)}\n")
        handle.flush()
        process = subprocess.Popen(winjob_command() + args, env=winjob_env(fault), cwd=REPO, stdout=handle,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        handle.close()
        return process, log, time.monotonic()

    def finish(self, process: subprocess.Popen, log: Path, started: float, phase: str, step: str,
               fault: FaultPlan | None) -> RunRecord:
        try:
            rc = process.wait(timeout=max(1.0, self.timeout_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            process.wait()
            self.report.failures.append(f"{phase} {step}: still running after {self.timeout_s:.0f}s, killed "
                                        f"(log {log})")
            rc = TIMED_OUT_RC
        _kill_group(process.pid)  # the JVM of a process that died first
        record = RunRecord(phase, step, fault, rc, time.monotonic() - started, log, _tail(log))
        self.report.runs.append(record)
        print(record.line(), flush=True)
        return record

    def run(self, args: list[str], fault: FaultPlan | None, phase: str, step: str) -> RunRecord:
        process, log, started = self.start(args, fault, phase)
        return self.finish(process, log, started, phase, step, fault)


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(log: Path) -> str:
    """The run's error in one line: the CLI's ``winjob ...:`` line, else the first exception line, else the last."""
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    mine = [line for line in lines if line.startswith("winjob ")]
    errors = [line for line in lines if re.search(r"(Error|Exception)\b.*:", line) and not line.startswith("at ")]
    text = mine[-1] if mine else errors[0] if errors else lines[-1] if lines else ""
    return text[:400]


# ---------------------------------------------------------------- the soak
class Soak:
    """One soak (see the module docstring); :meth:`run` returns its :class:`SoakReport`."""

    def __init__(self, spark, config: SoakConfig, workdir: Path):
        self.spark, self.config, self.workdir = spark, config, Path(workdir).resolve()
        # The harness's own reads and writes (landing, progress checks) run while the clean run
        # uses ``spark`` in another thread: a session of their own keeps the clean run's
        # session settings (set while a batch runs) out of them.
        self.io = spark.newSession()
        self.rng = random.Random(config.seed)
        self.backfill_rng = random.Random(f"{config.seed}:backfill")   # the backfill draws in its own thread
        self.backfill_carry: int | None = None      # kills the backfill could not place, once it finished
        self.backfill_thread: threading.Thread | None = None
        self.clean_backfill_done = threading.Event()
        self.report = SoakReport(config, self.workdir)
        self.runner = Runner(self.report, self.workdir / "logs", config.run_timeout_s)
        self.parts = arrivals_of(config)

    # The two roots and their jobs.
    def _jobs(self, name: str, java_options: str = ""):
        from pipelines.job import load_job
        root = self.workdir / name
        spark_conf = self.config.spark_conf
        if self.config.class_data_sharing:
            # Classes of a jar that ``spark.jars`` adds are loaded by Spark's own class loader, which
            # the archive does not hold: on the driver's class path Delta's classes are archived too.
            from windowing.spark.runtime.spark_session import delta_jars
            spark_conf += (("spark.driver.extraClassPath", os.pathsep.join(delta_jars())),)
        stream_file, backfill_file = write_jobs(root, spark_conf, java_options)
        return root, stream_file, backfill_file, load_job(stream_file, root=root), load_job(backfill_file, root=root)

    def run(self) -> SoakReport:
        """The clean run (a thread of this process) beside the soak's processes; then the comparison.

        The clean root and the soak root share no table, and the backfill and the stream of the soak
        root share none either (operators, outputs and raw tables of their own): the backfill's runs
        go on in a thread of their own while the stream's run.
        """
        print(f"fault soak: seed {self.config.seed}, work in {self.workdir}", flush=True)
        archive = self.workdir / CLASS_ARCHIVE
        java_options = f"-XX:SharedArchiveFile={archive}" if self.config.class_data_sharing else ""
        clean = self._jobs("clean")
        soak = self._jobs("soak", java_options)
        from examples.demo import land
        everything = [row for part in self.parts for row in part]
        for _, _, _, _, backfill_job in (clean, soak):
            land(self.io, everything, backfill_job.source_path)
        errors: list[BaseException] = []
        clean_thread = threading.Thread(target=self._in_thread, args=(errors, self._clean_run, *clean),
                                        name="soak-clean-run")
        clean_thread.start()
        try:
            if self.config.class_data_sharing:
                self._class_data_archive(archive)
            self.backfill_thread = threading.Thread(target=self._in_thread, args=(errors, self._backfill_phase,
                                                                                  *soak), name="soak-backfill")
            self.backfill_thread.start()
            self._stream_phase(*soak)
            self._pairs_phase(*soak)
        finally:
            if self.backfill_thread is not None:
                self.backfill_thread.join()
            clean_thread.join()
        if errors:
            raise errors[0]
        self._compare(clean, soak)
        return self.report

    def _in_thread(self, errors: list[BaseException], target, *args) -> None:
        try:
            target(*args)
        except BaseException as error:  # noqa: BLE001 - raised again by run() once every thread is done
            errors.append(error)
            self.clean_backfill_done.set()

    def _class_data_archive(self, archive: Path) -> None:
        """One ``winjob stream`` of the first arrival on a root of its own writes the JVM's class-data archive.

        The JVM writes the classes it loaded when it exits (``-XX:ArchiveClassesAtExit``); the
        soak's processes then map them (``-XX:SharedArchiveFile``, same class path), which saves
        a quarter of a process's CPU time. Without the archive (an older JVM, a failed run) the
        processes load their classes as usual: the soak checks the same things either way.
        """
        from examples.demo import land
        root, stream_file, _, stream_job, _ = self._jobs("archive", f"-XX:ArchiveClassesAtExit={archive}")
        land(self.io, self.parts[0], stream_job.source_path)
        process, log, started = self.runner.start(["stream", "--job", str(stream_file), "--root", str(root)],
                                                  None, "archive")
        try:
            rc = process.wait(timeout=ARCHIVE_TIMEOUT_S)
            # The JVM writes the archive after the Python driver exits: wait for the process group.
            while time.monotonic() - started < ARCHIVE_TIMEOUT_S and _group_alive(process.pid):
                time.sleep(0.2)
        except subprocess.TimeoutExpired:
            rc = TIMED_OUT_RC
        _kill_group(process.pid)
        size = f"{archive.stat().st_size / 2**20:.0f} MB" if archive.is_file() else "none (processes load classes)"
        print(f"class-data archive: {size}, rc {rc}, {time.monotonic() - started:.0f}s (log {log})", flush=True)

    def _clean_run(self, root, stream_file, backfill_file, stream_job, backfill_job) -> None:
        """No faults, in this process: the chunked backfill (its batch count plans the soak's
        backfill kills), then each arrival landed and streamed."""
        from examples.demo import land
        from pipelines.drivers import run_backfill, run_stream
        started = time.monotonic()
        run_backfill(self.spark, backfill_job, chunk=self.config.backfill_chunk, validate=False)
        self.report.clean_counts["backfill batches"] = _count(self.spark, _progress(backfill_job))
        self.clean_backfill_done.set()
        for part in self.parts:
            land(self.spark, part, stream_job.source_path)
            run_stream(self.spark, stream_job, available_now=True, validate=False)
        for label, path in (("results", stream_job.results_path), ("late", stream_job.late_path),
                            ("quarantine", stream_job.quarantine_path),
                            ("backfill results", backfill_job.results_path)):
            self.report.clean_counts[label] = _count(self.spark, path)
        print(f"clean run: {time.monotonic() - started:.0f}s, " +
              ", ".join(f"{k} {v}" for k, v in self.report.clean_counts.items()), flush=True)

    def _draw(self, stages: tuple[str, ...], occurrences: int, delay_max_s: float,
              allow_delay: bool, rng: random.Random | None = None) -> FaultPlan:
        rng = rng or self.rng
        if allow_delay and rng.random() < self.config.delay_share:
            return FaultPlan(delay_s=round(rng.uniform(0.0, delay_max_s), 3))
        return FaultPlan(stage=rng.choice(stages), occurrence=rng.randint(1, max(1, occurrences)))

    def _until_done(self, phase: str, step: str, args: list[str], plan_next, handed_on=None) -> bool:
        """Run ``args`` until a run exits 0: each run under ``plan_next()``'s fault (None: no fault).

        A run that fails by itself is a failure of the soak (the run after a crash must
        repair what the crash left); it is restarted ``failed_restarts`` times without a
        fault, as an operator would, to see whether the step finishes at all. True when it finished.
        ``handed_on()``, checked after each kill: True when the next step's runs will finish this
        one's work (then no run here finishes it; see :meth:`_stream_phase`).
        """
        failed = 0
        attempt = 0
        while True:
            attempt += 1
            fault = plan_next() if failed == 0 else None
            record = self.runner.run(args, fault, phase, f"{step} run {attempt}")
            if record.rc == 0:
                return True
            if record.killed:
                if handed_on is not None and handed_on():
                    return True
                continue
            failed += 1
            self.report.failures.append(f"{phase} {step} run {attempt}: failed by itself: rc {record.rc}: "
                                        f"{record.tail} (log {record.log})")
            if failed > self.config.failed_restarts:
                self.report.failures.append(f"{phase} {step}: never finished ({failed} runs failed by themselves)")
                return False

    def _backfill_phase(self, root, stream_file, backfill_file, stream_job, backfill_job) -> None:
        """The chunked backfill, killed ``backfill_kills`` times; sets :attr:`backfill_carry`, the
        kills it could not place (the stream's last arrival takes them)."""
        self.clean_backfill_done.wait()
        total = self.report.clean_counts.get("backfill batches")
        if total is None:
            return  # the clean run failed; run() raises its error
        args = ["backfill", "--job", str(backfill_file), "--root", str(root), "--chunk", self.config.backfill_chunk]

        def plan_next() -> FaultPlan | None:
            fired = sum(r.killed for r in self.report.runs if r.phase == BACKFILL)
            kills_left = self.config.backfill_kills - fired
            remaining = total - (_last_batch(self.io, _progress(backfill_job)) + 1)
            if kills_left <= 0 or remaining <= 0:
                return None
            # A kill at the n-th batch commits n - 1 batches (n after the progress commit): while
            # kills are left, one batch stays uncommitted, so a stage kill at the first batch still fires.
            stages = STAGES if kills_left == 1 else tuple(s for s in STAGES if s != LAST_STAGE)
            occurrences = min(3, remaining)
            return self._draw(stages, occurrences, self.config.backfill_delay_max_s,
                              allow_delay=remaining > kills_left, rng=self.backfill_rng)

        try:
            self._until_done(BACKFILL, "chunked", args, plan_next)
        finally:
            fired = sum(r.killed for r in self.report.runs if r.phase == BACKFILL)
            self.backfill_carry = max(0, self.config.backfill_kills - fired)

    def _backfill_kills_to_carry(self, wait: bool) -> int:
        """The kills the backfill could not place; 0 while it runs unless ``wait`` (then it waits for it)."""
        if self.backfill_thread is not None and wait:
            self.backfill_thread.join()
        return self.backfill_carry or 0

    def _stream_phase(self, root, stream_file, backfill_file, stream_job, backfill_job) -> None:
        """Each arrival landed, then ``winjob stream`` killed its share of the kills and restarted until done.

        An arrival other than the last needs no run of its own after its last kill when Spark had
        logged its batch's offsets by then: the next arrival lands and its first run replays that
        batch from the offset log (exactly the rows of this arrival, as in the clean run) before it
        plans the next one. Without the offsets (a delay kill before Spark planned the batch) a run
        without a fault finishes the arrival first, so that no batch holds two arrivals. The last
        arrival also places the kills the backfill could not (it waits for the backfill's runs to
        end before its run without a fault).
        """
        from examples.demo import land
        arrivals = self.config.arrivals
        quota = [self.config.stream_kills // arrivals + (i < self.config.stream_kills % arrivals)
                 for i in range(arrivals)]
        args = ["stream", "--job", str(stream_file), "--root", str(root)]
        carry = 0
        for i in range(arrivals):
            land(self.io, self.parts[i], stream_job.source_path)
            own, last = quota[i] + carry, i == arrivals - 1
            fired_before = sum(r.killed for r in self.report.runs if r.phase == STREAM)

            def wanted(wait: bool = False) -> int:
                return own + (self._backfill_kills_to_carry(wait) if last else 0)

            def plan_next() -> FaultPlan | None:
                fired = sum(r.killed for r in self.report.runs if r.phase == STREAM) - fired_before
                want = wanted()
                if fired >= want and last:
                    want = wanted(wait=True)
                if fired >= want:
                    return None
                # A kill after the progress commit ends this batch's stage kills: only as its last kill
                # (in the last arrival, once the backfill can no longer hand it more).
                final = fired == want - 1 and not (last and self.backfill_carry is None)
                stages = STAGES if final else tuple(s for s in STAGES if s != LAST_STAGE)
                # The last arrival places every kill left: only stage kills are sure to fire.
                return self._draw(stages, 1, self.config.stream_delay_max_s, allow_delay=not last)

            def handed_on() -> bool:
                fired = sum(r.killed for r in self.report.runs if r.phase == STREAM) - fired_before
                return not last and fired >= own and _offsets_logged(stream_job, batch_id=i)

            if not self._until_done(STREAM, f"arrival {i + 1}", args, plan_next, handed_on):
                return
            carry = own - (sum(r.killed for r in self.report.runs if r.phase == STREAM) - fired_before)

    def _pairs_phase(self, root, stream_file, backfill_file, stream_job, backfill_job) -> None:
        """One more arrival per pair; two ``winjob stream`` runs of the job at once; then the checks."""
        from examples.demo import land
        args = ["stream", "--job", str(stream_file), "--root", str(root)]
        for p in range(self.config.concurrent_pairs):
            land(self.io, self.parts[self.config.arrivals + p], stream_job.source_path)
            gap_s = round(self.rng.uniform(0.0, 3.0), 2)
            first = self.runner.start(args, None, PAIR)
            time.sleep(gap_s)
            second = self.runner.start(args, None, PAIR)
            records = [self.runner.finish(*first, PAIR, f"pair {p + 1} A", None),
                       self.runner.finish(*second, PAIR, f"pair {p + 1} B (+{gap_s}s)", None)]
            for record in records:
                if record.rc == 0:
                    continue
                if record.rc != CONFLICT_RC or not CONCURRENT_WRITER_ERROR.search(record.log.read_text()):
                    self.report.failures.append(
                        f"concurrent pair {p + 1}: a run failed without a concurrent-writer error (exit {CONFLICT_RC} naming "
                        f"it): rc {record.rc}: {record.tail} (log {record.log})")
            for name, path, keys in self._tables(stream_job):
                duplicates = _duplicate_keys(self.io, path, keys)
                if duplicates:
                    self.report.failures.append(f"concurrent pair {p + 1}: {name} holds {len(duplicates)} "
                                                f"duplicate keys right after the pair, e.g. {duplicates[0]}")
            if all(r.rc != 0 for r in records):
                self._until_done(PAIR, f"pair {p + 1} rerun", args, lambda: None)

    # ---------------------------------------------------------------- comparison
    def _tables(self, job) -> list[tuple[str, str, list[str] | None]]:
        """(name, path, natural key or None for the whole row) of every table of a job's operator."""
        keys = list(job.spec.key_columns)
        base = f"{job.state_root}/{job.operator_id}"
        return [(f"{job.operator_id}/results", job.results_path, keys + ["window_start_ms", "window_end_ms",
                                                                          "pane_index"]),
                (f"{job.operator_id}/late", job.late_path, None),
                (f"{job.operator_id}/quarantine", job.quarantine_path, None),
                (f"{job.operator_id}/windows", f"{base}/windows", keys + ["window_start_ms", "window_end_ms"]),
                (f"{job.operator_id}/buffers", f"{base}/buffers", None),
                (f"{job.operator_id}/progress", f"{base}/progress", ["batch_id"])]

    def _compare(self, clean, soak) -> None:
        for clean_job, soak_job in ((clean[3], soak[3]), (clean[4], soak[4])):
            for (name, clean_path, keys), (_, soak_path, _) in zip(self._tables(clean_job), self._tables(soak_job)):
                kind = name.rsplit("/", 1)[1]
                clean_rows = _rows(self.spark, clean_path, kind)
                soak_rows = _rows(self.spark, soak_path, kind)
                if clean_rows is None and soak_rows is None:
                    continue
                clean_rows, soak_rows = clean_rows or Counter(), soak_rows or Counter()
                self.report.tables.append(TableDiff(
                    name, sum(clean_rows.values()), sum(soak_rows.values()),
                    tuple(sorted((clean_rows - soak_rows).elements(), key=repr)),
                    tuple(sorted((soak_rows - clean_rows).elements(), key=repr)),
                    tuple(_duplicate_keys(self.spark, soak_path, keys))))


def _progress(job) -> str:
    return f"{job.state_root}/{job.operator_id}/progress"


def _offsets_logged(job, batch_id: int) -> bool:
    """Whether the stream's checkpoint holds the planned offsets of ``batch_id`` (a restart replays them)."""
    return (Path(job.checkpoint_path) / "offsets" / str(batch_id)).is_file()


def _exists(spark, path: str) -> bool:
    from windowing.spark.lake import delta_lake_io
    try:
        return delta_lake_io.table_exists(spark, path)
    except Exception:  # noqa: BLE001 - a wedged folder is for the comparison to report, not to crash on
        return False


def _count(spark, path: str) -> int:
    return spark.read.format("delta").load(path).count() if _exists(spark, path) else 0


def _last_batch(spark, path: str) -> int:
    """The highest batch id in a progress table; -1 when there is none (or no table)."""
    if not _exists(spark, path):
        return -1
    from pyspark.sql import functions as F
    value = spark.read.format("delta").load(path).agg(F.max("batch_id")).first()[0]
    return -1 if value is None else int(value)


def _without_clock(text: str | None) -> str | None:
    """``time_state`` without its processing-time stamps (the batch's wall clock); the watermark part stays."""
    if not text:
        return text
    state = json.loads(text)
    state.pop("clock_ms", None)
    tracker = state.get("tracker") or {}
    tracker.pop("first_pt_ms", None)
    tracker["sources"] = {name: value[0] for name, value in (tracker.get("sources") or {}).items()}
    return json.dumps(state, sort_keys=True)


def _rows(spark, path: str, kind: str) -> Counter | None:
    """The table's rows as a multiset of tuples (columns sorted by name, run-varying ones dropped); None: no table."""
    if not _exists(spark, path):
        return None
    if kind == "windows":          # the committed state: changes logged in progress rows folded in
        from windowing.spark.state import log as state_log
        df = state_log.committed_windows(spark, path.rsplit("/", 1)[0])
    else:
        df = spark.read.format("delta").load(path).drop(*RUN_VARYING_COLUMNS.get(kind, ()))
    columns = sorted(df.columns)
    rows = [r.asDict() for r in df.select(*columns).collect()]
    if TIME_STATE in columns:
        for row in rows:
            row[TIME_STATE] = _without_clock(row[TIME_STATE])
    return Counter(tuple((c, row[c]) for c in columns) for row in rows)


def _duplicate_keys(spark, path: str, keys: list[str] | None) -> list:
    """Natural keys (the whole row when ``keys`` is None) that occur more than once in the table."""
    if not _exists(spark, path):
        return []
    from pyspark.sql import functions as F
    df = spark.read.format("delta").load(path)
    columns = keys or df.columns
    return [tuple(r) for r in df.groupBy(*columns).count().where(F.col("count") > 1).limit(20).collect()]
