"""Reprocessing: recompute the windows of a time range, possibly with another window spec.

A range ``[start, end)`` owns the windows whose max timestamp (``end - 1``)
lies in it, i.e. ``start < window_end <= end``. Every window therefore belongs
to exactly one range, whatever the ranges are, and all its elements have event
times in ``[start - size, end)``: a range can be computed once its end has
passed, without data from later ranges.

How (complete mode, like the backfill): the job, with the window overrides
applied, runs on a fresh operator of its own (its own state and its own
application id in the write markers) over the raw rows of ``[start - size, end)`` in event-time chunks,
the last ending the input. Its outputs land in a staging folder under the job's state root.
Only then are the range's rows of the staging tables written into the target
tables, each in ONE Delta commit with ``replaceWhere`` (results: the window-end
range; late rows: their event time; quarantined rows: their parseable event
time). Readers see the old rows of the range until that commit, and the new
ones from it on; a failure before it leaves the target untouched. Rerunning a
range recomputes it from scratch and replaces it again, so reruns are
idempotent (Airflow retries, ``airflow backfill create --reprocess-behavior
completed``).

Rows with a null or unparseable event time are in no range: the streaming job
quarantines them, reprocessing leaves them where they are.
"""
from __future__ import annotations

import datetime as dt
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.utils import AnalysisException

from pipelines.drivers import epoch_ms, event_time_ms_sql, log, run_backfill
from pipelines.job import Job
from windowing.spark.lake import delta_lake_io
from windowing.spark.plans.window_geometry import longest_window_ms


@dataclass(frozen=True)
class ReprocessReport:
    """What one reprocessing run replaced.

    Attributes:
        start_ms / end_ms: the range; windows with ``start_ms < window_end_ms <= end_ms``.
        results_path / late_path / quarantine_path: the target tables.
        rows: rows written per target table (``results``, ``late``, ``quarantine``).
        results_version: the Delta version of the results commit that replaced the range
            (None when there was no results table and nothing to write).
        staging_operator_id: the fresh operator that computed the range.
        spec: the window spec used (after overrides).
    """

    start_ms: int
    end_ms: int
    results_path: str
    late_path: str
    quarantine_path: str
    rows: dict
    results_version: int | None
    staging_operator_id: str
    spec: str


def new_output_job(job: Job, name: str) -> Job:
    """The job writing to new tables beside its own: ``results_<name>``, ``late_<name>``, ...

    Raises:
        ValueError: if ``name`` is not letters, digits and ``_``.
    """
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"output name {name!r} must be letters, digits or '_' (it becomes a table folder)")
    return job.with_operator(f"{job.operator_id}_{name}", name)


def window_range_sql(start_ms: int, end_ms: int) -> str:
    """The ``replaceWhere`` of a range on a results table: windows whose max timestamp is in it."""
    return f"window_end_ms > {start_ms} AND window_end_ms <= {end_ms}"


def reprocess_range(spark: SparkSession, job: Job, start: dt.datetime, end: dt.datetime, *,
                    into: Job | None = None, window: dict | None = None, chunk: str | None = None,
                    staging_root: str | None = None) -> ReprocessReport:
    """Recompute the windows of ``[start, end)`` and replace that range in ``into``'s tables.

    Args:
        job: the job whose raw table and spec are used.
        start / end: the range (naive datetimes are UTC); windows with
            ``start < window_end <= end`` are recomputed.
        into: the job whose output tables receive the range (default: ``job``
            itself, i.e. replace in place); see :func:`new_output_job`.
        window: overrides of the ``[window]`` table, e.g. ``{"size": "5 minutes"}``.
        chunk: event-time chunk of the computation (default: the job's backfill chunk).
        staging_root: where the fresh operator keeps state and outputs
            (default ``<state_root>/_staging``); removed afterwards when local.

    Raises:
        ValueError: an empty range, a window override that is not valid, a
            count or global window (they have no time range), or target tables
            whose schema does not fit the new results (e.g. other aggregates:
            write into a new output table instead).
    """
    start_ms, end_ms = epoch_ms(start), epoch_ms(end)
    if end_ms <= start_ms:
        raise ValueError(f"reprocessing range is empty: start {start.isoformat()} is not before end {end.isoformat()}")
    variant = job.with_window(window)
    size_ms = longest_window_ms(variant.spec)
    if size_ms is None:
        raise ValueError(f"job {job.name}: {type(variant.spec.assigner).__name__} windows have no time range to "
                         f"reprocess; only windows of a bounded size (tumbling, sliding, cumulating) can be "
                         f"reprocessed by range")
    target = into or job
    staging_id = f"{job.operator_id}_r{start_ms}_{end_ms}_{uuid.uuid4().hex[:8]}"
    base = f"{staging_root or job.state_root + '/_staging'}/{staging_id}"
    staging = variant.with_outputs(staging_id, f"{base}/state", f"{base}/results", f"{base}/late",
                                   f"{base}/quarantine")
    log(f"reprocess {job.name} windows ending in ({_iso(start_ms)}, {_iso(end_ms)}] with "
        f"{variant.spec.describe()} -> {target.results_path} (staging {base})")
    # Every element of a window ending in (start, end] has ts in [start - size, end); chunks
    # only need to cover the rows actually there (complete mode: the cut does not matter).
    raw = _read(spark, job.source_path)
    ms = F.expr(event_time_ms_sql(job.spec.event_time_column, dict(raw.dtypes)[job.spec.event_time_column]))
    lo, hi = raw.where((ms >= start_ms - size_ms) & (ms < end_ms)).agg(F.min(ms), F.max(ms)).first()
    if lo is None:
        return _clear_range(spark, job, target, start_ms, end_ms, staging_id, variant)
    try:
        run_backfill(spark, staging, _utc(lo), _utc(hi + 1), chunk or job.backfill_chunk)
        rows, version = {}, None
        results = _read(spark, staging.results_path).where(window_range_sql(start_ms, end_ms))
        rows["results"], version = _replace(spark, results, target.results_path, window_range_sql(start_ms, end_ms))
        if delta_lake_io.table_exists(spark, staging.late_path):
            late_sql = f"event_time_ms >= {start_ms} AND event_time_ms < {end_ms}"
            late = _read(spark, staging.late_path).where(late_sql)
            rows["late"], _ = _replace(spark, late, target.late_path, late_sql)
        quarantine = _read(spark, staging.quarantine_path)
        column = job.spec.event_time_column
        q_ms = event_time_ms_sql(column, dict(quarantine.dtypes)[column])
        q_sql = f"{q_ms} >= {start_ms} AND {q_ms} < {end_ms}"
        rows["quarantine"], _ = _replace(spark, quarantine.where(q_sql), target.quarantine_path, q_sql)
    finally:
        _remove_local(base)
    log(f"reprocess {job.name}: replaced the range in {target.results_path} (version {version}): {rows}")
    return ReprocessReport(start_ms, end_ms, target.results_path, target.late_path, target.quarantine_path,
                           rows, version, staging_id, variant.spec.describe())


def _clear_range(spark: SparkSession, job: Job, target: Job, start_ms: int, end_ms: int, staging_id: str,
                 variant: Job) -> ReprocessReport:
    """No raw row can feed a window of the range: remove the range from the existing target tables."""
    log(f"reprocess {job.name}: no raw rows for windows ending in ({_iso(start_ms)}, {_iso(end_ms)}]")
    rows, version = {"results": 0, "late": 0, "quarantine": 0}, None
    for kind, path, predicate in (("results", target.results_path, window_range_sql(start_ms, end_ms)),
                                  ("late", target.late_path, f"event_time_ms >= {start_ms} AND event_time_ms < {end_ms}")):
        if delta_lake_io.table_exists(spark, path):
            empty = spark.createDataFrame([], _read(spark, path).schema)
            _, v = _replace(spark, empty, path, predicate)
            version = v if kind == "results" else version
    return ReprocessReport(start_ms, end_ms, target.results_path, target.late_path, target.quarantine_path,
                           rows, version, staging_id, variant.spec.describe())


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def _read(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)


def _replace(spark: SparkSession, rows: DataFrame, path: str, predicate: str) -> tuple[int, int]:
    """Replace the rows matching ``predicate`` by ``rows`` in one commit; returns (rows, version)."""
    rows = rows.persist()
    try:
        n = rows.count()
        if delta_lake_io.table_exists(spark, path):
            existing = _read(spark, path).schema
            if [(f.name, f.dataType) for f in existing.fields] != [(f.name, f.dataType) for f in rows.schema.fields]:
                raise ValueError(
                    f"cannot replace a range of {path}: its columns {existing.simpleString()} differ from the "
                    f"reprocessed rows' {rows.schema.simpleString()}; write into a new output table instead")
        try:
            rows.write.format("delta").mode("overwrite").option("replaceWhere", predicate).save(path)
        except AnalysisException as error:
            raise ValueError(f"cannot replace the range {predicate!r} of {path}: {error}") from None
        return n, delta_lake_io.latest_version(spark, path)
    finally:
        rows.unpersist()


def _remove_local(path: str) -> None:
    """Delete a staging folder on the local file system (other file systems keep it for their lifecycle rules)."""
    local = path[len("file:"):] if path.startswith("file:") else path
    if "://" not in local:
        shutil.rmtree(Path(local), ignore_errors=True)


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")

