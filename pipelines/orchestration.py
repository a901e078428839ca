"""What the Airflow DAGs call: one function per task, each a thin wrapper of a driver.

The DAG files in ``dags/`` only declare schedules and call these functions, so
everything here runs (and is tested) without a scheduler. Nothing here imports
pyspark or Airflow at module level: DAG files import this module at parse time.

Which jobs get DAGs: the files named by ``WINDOWING_AIRFLOW_JOBS`` (paths or
globs separated by ``os.pathsep``; relative ones are in the repository), by
default every ``jobs/*.toml`` and ``jobs/joins/*.toml`` of the repository. A join
job (two inputs, ``[left]``/``[right]``/``[join]``) gets the same DAGs;
:func:`runner` hands its tasks to :mod:`pipelines.join_orchestration`.
Relative table paths of a job resolve against ``WINDOWING_DATA_ROOT``, by
default :data:`DEFAULT_DATA_ROOT`: ``demo-output/`` of the repository, the folder
``./dev demo`` writes, so that the DAGs of ``./dev airflow`` find the demo's raw
tables with no variable set.

Validation happens once per run's outputs, in the ``<job>_quality`` DAG: the
streaming and backfill tasks do not validate inline (whatever the job's
``[quality] validate_runs``, which is for the CLI drivers), and the quality task
validates only the stream batches that have no recorded validation run yet (a
batch that ``winjob stream`` validated is not validated again). A run that
committed nothing (no new batch, a backfill interval without rows) raises
:class:`NothingNewError`: the DAGs turn it into a skipped task, so no asset
event and no quality run follow.

Spark settings of a task, later ones winning: the task defaults below (small
driver, since every Airflow task is a new process with its own JVM), the job's
``[spark]`` table, then the Airflow connection named by ``[airflow]
spark_conn_id`` (host and port give ``spark.master``; ``spark.*`` extras are
settings), so the same DAG runs on embedded local Spark or on a cluster.
"""
from __future__ import annotations

import datetime as dt
import glob
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from pipelines import logs  # noqa: F401 - imported first: Great Expectations logs at INFO while it is imported
from pipelines.job import Job, is_uri, load_job, parent_of

REPO = Path(__file__).resolve().parents[1]
JOBS_ENV = "WINDOWING_AIRFLOW_JOBS"
ROOT_ENV = "WINDOWING_DATA_ROOT"
DEFAULT_DATA_ROOT = REPO / "demo-output"
"""Where relative tables of a job resolve when ``WINDOWING_DATA_ROOT`` is not set: the demo's folder."""
STREAM_POOL_ENV = "WINDOWING_AIRFLOW_STREAM_POOL"
"""An Airflow pool for the streaming tasks (``./dev airflow`` makes one of 1 slot); unset: the default pool."""
TASK_SPARK_DEFAULTS = {"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2"}
KINDS = ("stream", "backfill", "reprocess")
DEFAULT_JOBS = ("jobs/*.toml", "jobs/joins/*.toml")
"""The job files that get DAGs when ``WINDOWING_AIRFLOW_JOBS`` is not set (in the repository)."""


class SourceNotReadyError(RuntimeError):
    """The job's raw table does not exist yet (nothing has landed)."""


class NothingNewError(RuntimeError):
    """The run committed nothing (no new batch, no row in the interval): the message says since when."""


def require_rows(rows: Mapping[str, int], message: str) -> None:
    """Log ``message`` and raise :class:`NothingNewError` with it when no table got a row (``rows`` per table)."""
    if not any(rows.values()):
        logs.info(message)
        raise NothingNewError(message)


def job_files() -> list[Path]:
    """The job definitions that get DAGs, sorted; an entry that matches nothing is an error."""
    spec = os.environ.get(JOBS_ENV) or os.pathsep.join(str(REPO / pattern) for pattern in DEFAULT_JOBS)
    files: list[Path] = []
    for pattern in filter(None, spec.split(os.pathsep)):
        # Relative entries name files of the repository, whatever the process's folder.
        pattern = pattern if os.path.isabs(pattern) else str(REPO / pattern)
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches or not all(Path(m).is_file() for m in matches):
            raise FileNotFoundError(f"{JOBS_ENV} entry {pattern!r} names no job file")
        files.extend(Path(m).resolve() for m in matches)
    return sorted(set(files))


def data_root() -> str:
    """``WINDOWING_DATA_ROOT``, or :data:`DEFAULT_DATA_ROOT` when it is not set."""
    return os.environ.get(ROOT_ENV) or str(DEFAULT_DATA_ROOT)


def load(job_file: str | Path) -> Job:
    """A job definition with its tables resolved against :func:`data_root`."""
    return load_job(job_file, root=data_root())


def stream_pool() -> str:
    """The pool of the streaming tasks: ``WINDOWING_AIRFLOW_STREAM_POOL``, else Airflow's default pool."""
    return os.environ.get(STREAM_POOL_ENV) or "default_pool"


def airflow_jobs() -> list[Job]:
    """Every job that gets DAGs (cheap: reads TOML files, imports no Spark); join jobs are
    :class:`~pipelines.join_job.JoinJob` objects (see :func:`runner`)."""
    return [load(path) for path in job_files()]


def runner(job):
    """What runs a join job's tasks: :mod:`pipelines.join_orchestration`; None for a single-input job,
    whose tasks are this module's. The one place the DAGs' functions tell the job types apart."""
    from pipelines.join_job import JoinJob
    if isinstance(job, JoinJob):
        from pipelines import join_orchestration
        return join_orchestration
    return None


def kinds_of(job) -> tuple[str, ...]:
    """The kinds of run (:data:`KINDS`) that get a DAG and an asset for ``job`` (a join job's: its runner's)."""
    join = runner(job)
    return join.KINDS if join else KINDS


def input_tables(job) -> list[str]:
    """The Delta tables a job's runs read: its raw table, or a join job's left and right inputs."""
    join = runner(job)
    return join.input_tables(job) if join else [job.source_path]


def has_report_page(job) -> bool:
    """Whether the quality DAG rebuilds the job's data-quality-over-time page (not for a join job)."""
    join = runner(job)
    return join.REPORT_PAGE if join else True


def backfill_job(job: Job) -> Job:
    """Where backfills write: ``results_backfill``, ``late_backfill``, ... beside the stream's tables
    (a join job too: :meth:`pipelines.join_job.JoinJob.with_operator`)."""
    return job.with_operator(f"{job.operator_id}_backfill", "backfill")


ASSET_TABLES = {"stream": "results", "backfill": "results_backfill", "reprocess": "reprocessed"}
"""The table each kind of run updates, as named in its Airflow Asset (``<job>.results``, ...)."""


def asset_name(job: Job, kind: str) -> str:
    """The name of the Asset that runs of ``kind`` update: ``<job>.results``, ``<job>.results_backfill``,
    ``<job>.reprocessed``."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {KINDS}")
    return f"{job.name}.{ASSET_TABLES[kind]}"


def asset_uri(job: Job, kind: str) -> str:
    """The Asset's URI: ``windowing://<job>/<table>``, the same whatever ``WINDOWING_DATA_ROOT`` is.

    Airflow binds an active asset's name to one URI; a table path would change
    with the data root. Each asset event's extra names the tables that run wrote
    (a reprocessing run chooses its tables), and :func:`asset_table` the path.
    """
    return f"windowing://{job.name}/{asset_name(job, kind).rsplit('.', 1)[1]}"


def asset_table(job: Job, kind: str) -> str:
    """The path (or URI) of the table behind :func:`asset_name` for this data root."""
    if kind == "stream":
        return job.results_path
    if kind == "backfill":
        return backfill_job(job).results_path
    # Reprocessing writes to tables chosen per run: the asset stands for all of them.
    return parent_of(job.results_path) + "/reprocessed"


def asset(job: Job, kind: str):
    """The Airflow Asset runs of ``kind`` update (imports Airflow: for DAG files)."""
    from airflow.sdk import Asset
    return Asset(name=asset_name(job, kind), uri=asset_uri(job, kind), group="windowing",
                 extra={"table": asset_table(job, kind)})


# ------------------------------------------------------------------ Spark
def spark_conf_from_connection(host: str | None, port: int | None = None, extra: Mapping[str, Any] | None = None,
                               conn_id: str = "?") -> dict[str, str]:
    """Spark settings from an Airflow connection: ``spark.master`` and ``spark.*`` extras.

    ``host`` may be a full master URL (``spark://h``, ``local[2]``, ``yarn``,
    ``k8s://https://h``) or a bare host name, which means a standalone master
    (``spark://host``); ``port`` is appended when given.

    Raises:
        ValueError: naming the connection when it has no host.
    """
    if not host:
        raise ValueError(f"Airflow connection {conn_id!r} has no host; set it to the Spark master, e.g. "
                         f"spark://spark-master (port 7077) or local[2]")
    master = host if ("://" in host or host.startswith(("local", "yarn"))) else f"spark://{host}"
    if port:
        master = f"{master}:{port}"
    conf = {"spark.master": master}
    conf.update({str(k): str(v) for k, v in (extra or {}).items() if str(k).startswith("spark.")})
    return conf


def connection_conf(conn_id: str) -> dict[str, str]:
    """Spark settings from the Airflow connection ``conn_id`` (only inside Airflow)."""
    from airflow.sdk import Connection
    try:
        conn = Connection.get(conn_id)
    except Exception as error:  # Airflow raises its own not-found type, which differs by context
        raise ValueError(f"Airflow connection {conn_id!r} (named by [airflow] spark_conn_id) cannot be "
                         f"read: {error}") from None
    return spark_conf_from_connection(conn.host, conn.port, conn.extra_dejson, conn_id)


def spark_conf_for(job: Job, connection: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Spark settings of a task running ``job``: defaults < ``[spark]`` < connection."""
    conf = dict(TASK_SPARK_DEFAULTS)
    if os.environ.get("SPARK_DRIVER_MEMORY"):
        conf["spark.driver.memory"] = os.environ["SPARK_DRIVER_MEMORY"]
    conf.update(job.spark_conf)
    if connection is None and job.airflow.spark_conn_id:
        connection = connection_conf(job.airflow.spark_conn_id)
    conf.update(connection or {})
    return conf


def spark_for(job: Job, connection: Mapping[str, str] | None = None):
    """The task process's SparkSession (the active one if any, e.g. under ``dag.test()`` in tests).

    A JVM started here writes its stderr (Spark's banner, log4j) to stdout, which
    a task log shows as INFO, not ERROR (:func:`pipelines.logs.jvm_output_to_stdout`).
    """
    from pyspark.sql import SparkSession
    from pipelines import logs
    from windowing.spark import get_spark
    conf = spark_conf_for(job, connection)
    logs.quiet_libraries()

    def session():
        return get_spark(f"airflow-{job.name}", master=conf.get("spark.master"),
                         shuffle_partitions=int(conf["spark.sql.shuffle.partitions"]), conf=conf)
    if SparkSession.getActiveSession() is not None:
        return session()
    with logs.jvm_output_to_stdout():
        return session()


# ------------------------------------------------------------------ tasks
def _require_source(spark, job: Job) -> None:
    from windowing.spark.lake import delta_lake_io
    if not delta_lake_io.table_exists(spark, job.source_path):
        raise SourceNotReadyError(f"job {job.name}: raw table {job.source_path} does not exist yet")


def _tables(job: Job) -> dict[str, str]:
    return {"operator_id": job.operator_id, "state_root": job.state_root, "results_path": job.results_path,
            "late_path": job.late_path, "quarantine_path": job.quarantine_path}


def stream_run(job_file: str | Path, connection: Mapping[str, str] | None = None) -> dict:
    """One scheduled streaming run: ``availableNow`` (process what arrived, then stop).

    A retry after a failure resumes from the checkpoint: the batch that failed
    gets the same id, and batches the operator already committed are skipped,
    so no output row is written twice.

    The run does not validate (the quality DAG does, see the module docstring).

    Returns:
        A JSON-able summary: batch ids committed by this run, skipped ones,
        row counts, and the tables written.

    A join job runs :func:`pipelines.join_orchestration.stream_run` (both inputs, the
    same contract; its summary has ``input_rows`` per side and ``result_rows``).

    Raises:
        SourceNotReadyError: the raw table (of a join job: an input table) does not exist yet.
        NothingNewError: no batch ran: nothing arrived since the last one
            ("nothing new since batch N").
    """
    job = load(job_file)
    spark = spark_for(job, connection)
    join = runner(job)
    if join:
        return join.stream_run(spark, job, job_file)
    from pipelines.drivers import run_stream
    _require_source(spark, job)
    from pipelines.errors import raw_schema_checked
    with raw_schema_checked(spark, job):
        reports = run_stream(spark, job, available_now=True, validate=False)
    if reports.nothing_new:
        raise NothingNewError(reports.nothing_new_line(job))
    return {"job_file": str(job_file), "kind": "stream", **_tables(job),
            "committed_batch_ids": [r.batch_id for r in reports if not r.skipped],
            "skipped_batch_ids": [r.batch_id for r in reports if r.skipped],
            "input_rows": sum(r.metrics.input_rows for r in reports if not r.skipped),
            "panes": sum(r.metrics.panes_emitted for r in reports if not r.skipped)}


def parse_time(value: str | dt.datetime, name: str) -> dt.datetime:
    """An aware datetime from an ISO string or datetime (naive means UTC)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{name} = {value!r} is not an ISO date/time such as 2026-11-01T09:00:00") from None
    if not isinstance(value, dt.datetime):
        raise ValueError(f"{name} = {value!r} is not a date/time")
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def backfill_run(job_file: str | Path, start: str | dt.datetime, end: str | dt.datetime,
                 connection: Mapping[str, str] | None = None, chunk: str | None = None) -> dict:
    """Backfill the windows whose max timestamp is in ``[start, end)`` into the backfill tables.

    One Airflow interval (or an ad-hoc range) is one independent complete-mode
    computation on a fresh operator (see :mod:`pipelines.reprocess`), replacing
    exactly its range of ``results_backfill``: intervals never share operator
    state or batch ids, may run in any order, and a rerun
    (``--reprocess-behavior completed``, a retry) replaces the range with the
    same rows.

    The run does not validate (the quality DAG does, see the module docstring).

    A join job runs :func:`pipelines.join_orchestration.backfill_run` (both inputs, the same contract).

    Raises:
        SourceNotReadyError: the raw table (of a join job: an input table) does not exist yet.
        NothingNewError: no raw row feeds a window of the interval.
    """
    job = load(job_file)
    start_t, end_t = parse_time(start, "start"), parse_time(end, "end")
    spark = spark_for(job, connection)
    join = runner(job)
    if join:
        return join.backfill_run(spark, job, job_file, start_t, end_t, chunk)
    job = replace(job, validate_runs=False)
    from pipelines.reprocess import reprocess_range
    _require_source(spark, job)
    target = backfill_job(job)
    report = reprocess_range(spark, job, start_t, end_t, into=target, chunk=chunk)
    require_rows(report.rows, f"job {job.name}: no raw rows for windows ending in ({start_t.isoformat()}, "
                              f"{end_t.isoformat()}]: nothing to backfill")
    return {"job_file": str(job_file), "kind": "backfill", **_tables(target), "start": start_t.isoformat(),
            "end": end_t.isoformat(), "rows": report.rows, "results_version": report.results_version}


def reprocess_run(job_file: str | Path, start: str | dt.datetime, end: str | dt.datetime,
                  window: Mapping[str, Any] | None = None, into: str | None = None,
                  connection: Mapping[str, str] | None = None, chunk: str | None = None) -> dict:
    """Recompute ``[start, end)`` with a possibly changed ``[window]`` table.

    Args:
        window: overrides of the job's ``[window]`` table (``{}``: unchanged).
        into: empty/None replaces the range in the job's own tables (one
            ``replaceWhere`` commit each; readers see the old rows until then);
            a name writes ``results_<name>``, ``late_<name>``, ... instead.

    A join job runs :func:`pipelines.join_orchestration.reprocess_run` (``window`` overrides refused).
    """
    job = load(job_file)
    start_t, end_t = parse_time(start, "start"), parse_time(end, "end")
    spark = spark_for(job, connection)
    join = runner(job)
    if join:
        return join.reprocess_run(spark, job, job_file, start_t, end_t, window, into, chunk)
    job = replace(job, validate_runs=False)   # the quality DAG validates the run
    from pipelines.reprocess import new_output_job, reprocess_range
    target = new_output_job(job, into) if into else job
    report = reprocess_range(spark, job, start_t, end_t, into=target, window=dict(window or {}), chunk=chunk)
    return {"job_file": str(job_file), "kind": "reprocess", **_tables(target), "start": start_t.isoformat(),
            "end": end_t.isoformat(), "window": dict(window or {}), "rows": report.rows,
            "results_version": report.results_version, "spec": report.spec}


def replay_run(job_file: str | Path, into: str, from_batch: int | None = None, to_batch: int | None = None,
               window: Mapping[str, Any] | None = None, connection: Mapping[str, str] | None = None) -> dict:
    """Replay the stream's recorded batches into ``replay_<into>`` tables and compare with the stream.

    See :mod:`pipelines.replay` (a join job: :func:`pipelines.join_orchestration.replay_run`). The
    differences' summary goes to the task log and, with its counts, into the returned summary.

    Raises:
        pipelines.replay.ReplayRefused: a batch without recorded offsets, a range outside the stream.
    """
    job = load(job_file)
    spark = spark_for(job, connection)
    join = runner(job)
    if join:
        return join.replay_run(spark, job, job_file, into, from_batch, to_batch, window)
    from pipelines.drivers import log
    from pipelines.replay import replay_stream
    _require_source(spark, job)
    report = replay_stream(spark, job, into, from_batch, to_batch, window=dict(window or {}), diff=True)
    summary = report.diff.summary()
    log(summary)
    return {"job_file": str(job_file), "kind": "replay", **report.as_dict(), "window": dict(window or {}),
            "diff_summary": summary}


def quality_run(events: list[Mapping[str, Any]], connection: Mapping[str, str] | None = None) -> list[dict]:
    """Run the expectation suites on the tables named by asset events of the DAG runs.

    Each event's extra is the summary a stream/backfill/reprocess task returned.
    A stream run is validated batch by batch: the batches it committed (or found
    committed by an earlier attempt) that have no recorded validation run yet;
    backfill and reprocessing runs as a whole (an interval backfill without the
    whole-table reconciliation).

    A join job's event: :func:`pipelines.join_orchestration.quality_run` (the join suites).

    Raises:
        DataQualityError: from :func:`pipelines.quality.validate_job`, naming
            the failed critical expectations.
    """
    done: list[dict] = []
    for extra in events:
        if not extra or "job_file" not in extra:
            continue
        job = load(extra["job_file"])
        join = runner(job)
        if join:   # a join job's tables, validated as a whole with the join suites
            done.extend(join.quality_run(spark_for(job, connection), job, extra))
            continue
        target = replace(job, **{k: extra[k] for k in ("operator_id", "state_root", "results_path", "late_path",
                                                       "quarantine_path") if k in extra})
        kind = extra.get("kind", "adhoc")
        if kind == "stream":
            batch_ids = sorted(set(extra.get("committed_batch_ids", [])) | set(extra.get("skipped_batch_ids", [])))
            if batch_ids:
                from pipelines.quality import stream_batches
                _, unvalidated = stream_batches(spark_for(job, connection), target)
                validated = [b for b in batch_ids if b not in unvalidated]
                if validated:
                    from pipelines.drivers import log
                    log(f"job {job.name}: batches {validated} already validated, not validated again")
                batch_ids = [b for b in batch_ids if b in unvalidated]
        else:
            batch_ids = [None]
        # An interval backfill replaced one range of its results: the reconciliation
        # (every row of the WHOLE raw table accounted for) would fail on every interval
        # but the last, so such a run gets the default suites only.
        suites = None
        if kind == "backfill" and "start" in extra:
            from pipelines.quality import DEFAULT_SUITES
            suites = list(DEFAULT_SUITES)
        for batch_id in batch_ids:
            from pipelines.quality import validate_job  # imported only when there is something to check
            from pipelines import logs
            logs.quiet_libraries()   # again: Great Expectations sets INFO on some of its loggers when imported
            report = validate_job(spark_for(job, connection), target, batch_id=batch_id, run_kind=kind,
                                  suites=suites)
            done.append({"job": job.name, "kind": kind, "batch_id": batch_id,
                         "success": bool(getattr(report, "success", True))})
    return done


def events_by_hand(job_file: str | Path) -> list[dict]:
    """What a quality run triggered by hand (no asset event) validates: a join job's tables as they are
    (:func:`pipelines.join_orchestration.event_by_hand`); nothing for a single-input job."""
    job = load(job_file)
    join = runner(job)
    return [join.event_by_hand(job, job_file)] if join else []


def default_args(job: Job) -> dict[str, Any]:
    """Owner and retries of every task of a job's DAGs (from its ``[airflow]`` table)."""
    return {"owner": "windowing", "retries": job.airflow.retries,
            "retry_delay": dt.timedelta(seconds=job.airflow.retry_delay_s)}


def job_doc(job: Job) -> str:
    """The part of a DAG's documentation that describes the job: its spec in words, tables and pages."""
    docs = Path(_local_output_root(job)) / "data_docs"
    join = runner(job)
    words = join.spec_in_words(job) if join else spec_in_words(job)
    inputs = (f"* left input: `{job.left_path}`, right input: `{job.right_path}`\n" if join
              else f"* raw table: `{job.source_path}`\n")
    page = (f"* data quality over time: [{docs / QUALITY_REPORT}](file://{docs / QUALITY_REPORT}), rebuilt after "
            f"each quality run\n" if has_report_page(job) else "")
    return (f"#### Job `{job.name}`\n\n{words}\n\n"
            f"* job file: `{job.source_file}` (operator `{job.operator_id}`)\n"
            + inputs +
            f"* results: `{job.results_path}` (late rows: `{job.late_path}`, quarantined: `{job.quarantine_path}`)\n"
            f"* state: `{job.state_root}`\n"
            f"* Data Docs: [{docs / 'index.html'}](file://{docs / 'index.html'}), built by the quality DAG\n" + page)


QUALITY_REPORT = "quality_report.html"
"""The data-quality-over-time page beside the Data Docs index (``pipelines.visual.report``)."""


def _local_output_root(job: Job) -> str:
    # As pipelines.quality places Great Expectations files (imported here it would load GX at parse time).
    return str(Path("output", job.name).resolve()) if is_uri(job.output_root) else job.output_root


def spec_in_words(job: Job) -> str:
    """The job's window spec as sentences, from its job file's tables (for DAG docs and people)."""
    d = job.definition
    source, window = d.get("source", {}), d.get("window", {})
    keys = source.get("key", [])
    keys = [keys] if isinstance(keys, str) else list(keys)
    what = window_in_words(window)
    sentences = [f"{what[0].upper()}{what[1:]}, "
                 + (f"per {', '.join(keys)}" if keys else "over all rows (no key)")
                 + f"; event time from `{source.get('event_time')}`, up to "
                 f"{source.get('max_out_of_orderness', '0 ms')} out of order."]
    trigger = window.get("trigger")
    sentences.append(f"Fires {trigger_words(trigger, window.get('trigger_args'))}; allowed lateness "
                     f"{window.get('allowed_lateness', 'none')}; "
                     f"{window.get('mode', 'accumulating')} panes; "
                     + ("rows too late for every window go to the late table."
                        if window.get("late_output", True) else "rows too late for every window are counted and dropped."))
    if window.get("evictor"):
        sentences.append(f"Evictor: {window['evictor']}{_args_words(window.get('evictor_args'))}.")
    if d.get("process"):
        sentences.append(f"Each pane is computed by {d['process'].get('function')}.")
    else:
        sentences.append("Computes " + ", ".join(f"{name} = {text}" for name, text in d.get("aggregates", {}).items())
                         + ".")
    checks = [f"{column} outside [{b.get('min', '-inf')}, {b.get('max', '+inf')}]"
              + (" (null allowed)" if b.get("nullable") else " or null")
              for column, b in source.get("bounds", {}).items()]
    if source.get("max_event_time_skew"):
        checks.append(f"event time more than {source['max_event_time_skew']} ahead of processing time")
    if source.get("dedup_horizon"):
        checks.append(f"a repeated {source.get('event_id')} within {source['dedup_horizon']}")
    sentences.append("Quarantined: a null key or event time, an unparseable event time"
                     + "".join(f"; {c}" for c in checks) + ".")
    return " ".join(sentences)


def window_in_words(window: Mapping[str, Any]) -> str:
    """``tumbling windows of 1 minute`` and the like, from a ``[window]`` (or ``[join.window]``) table."""
    kind = window.get("type", "tumbling")
    if kind == "count":
        what = f"count windows of {window.get('size')} elements" + (
            f", sliding by {window['slide']}" if window.get("slide") else "")
    elif "session" in kind:
        gap = window.get("gap") or f"the gap in column {window.get('gap_column')}"
        what = f"{kind.replace('_', ' ')} windows closed by {gap} of silence"
    elif "sliding" in kind:
        what = f"{kind.replace('_', ' ')} windows of {window.get('size')}, one every {window.get('slide')}"
    elif ":" in str(kind):
        what = f"windows assigned by {kind}{_args_words(window.get('assigner_args'))}"
    else:
        what = f"{kind.replace('_', ' ')} windows of {window.get('size')}"
    return what


def trigger_words(trigger: Any, args: Any) -> str:
    """How a window fires, from its ``trigger`` and ``trigger_args`` keys."""
    if not trigger:
        return "once when the watermark passes the end of the window (and once per late row within the lateness)"
    if isinstance(trigger, dict):
        rest = ", ".join(f"{k} {v}" for k, v in trigger.items() if k != "type")
        return f"by the {trigger.get('type')} trigger" + (f" ({rest})" if rest else "")
    return f"by the trigger {trigger}{_args_words(args)}"


def _args_words(args: Any) -> str:
    """`` (n = 3, column = item_count)`` for a user part's arguments; empty without."""
    if not args:
        return ""
    return " (" + ", ".join(f"{k} = {v}" for k, v in args.items()) + ")" if isinstance(args, dict) else f" ({args})"
