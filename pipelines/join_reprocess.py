"""Reprocessing a join job: recompute the results of a time range and replace that range in its tables.

The single-input rule (:mod:`pipelines.reprocess`) carried over to the two inputs of a join:

* a window join or co-group on event-time windows of a bounded size (tumbling,
  sliding, cumulating): the range ``[start, end)`` owns the panes of the windows
  with ``start < window_end_ms <= end``. A window holds the rows of either side
  with event times in ``[window_end - size, window_end)``, so the range's windows
  are fed by the rows in ``[start - size, end)`` (``size``: the longest window);
* an interval join: the range owns the pairs with ``start <= pair_time_ms < end``.
  A left row at ``l`` and a right row at ``r`` pair when ``lower <= r - l <= upper``
  and the pair's time is ``max(l, r)``. The later row is in ``[start, end)``; the
  earlier one is at most ``upper`` before it (a left row, when ``r >= l``) or
  ``-lower`` before it (a right row, when ``l >= r``). So the range's pairs are fed
  by the rows in ``[start - reach, end)`` with ``reach = max(0, upper, -lower)``
  (the bounds made inclusive);
* session windows have no fixed size, global and count windows no time range:
  they are refused, naming the assigner.

With window overrides (``window``: keys of ``[join.window]``, as a single-input
reprocess takes keys of ``[window]``) the range is recomputed with that window; an
interval join has none and is refused.

How (complete mode, as the single-input reprocess): the job runs on a FRESH
operator of its own (its own operator id, its state under
``<state_root>/_staging/<id>``, so its write markers carry its own application
id) over the rows of both inputs in ``[rows' start, end)`` with
:func:`pipelines.join_drivers.run_join_backfill` (event-time chunks, the last
ending the input, so no row is late), into staging tables. Only then is the
range replaced in each target table, in ONE Delta ``replaceWhere`` commit per
table:

* results: the window-end range (window joins) or the pair-time range (interval joins);
* late rows: ``event_time_ms`` in ``[start, end)``; a complete-mode run has none,
  so the range's late rows of a stream go: their rows are now in the panes;
* quarantined rows: the rows whose own side's event time (``left_row.<left
  event_time>`` or ``right_row.<right event_time>``, read as the join reads it) is
  in ``[start, end)``. A quarantined row with a null or unparseable event time
  belongs to no range: it stays where it is (a reprocess neither removes nor
  copies it).

Readers see the old rows of the range until the commit. A rerun recomputes the
range from scratch and replaces it again (idempotent). The staging folder is
removed afterwards (on a local file system).
"""
from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import replace

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from pipelines.drivers import epoch_ms, log
from pipelines.join_job import JoinJob
from pipelines.reprocess import ReprocessReport, _iso, _read, _remove_local, _replace, _utc
from windowing.spark.joins.columns import EVENT_TIME, LEFT_ROW, RIGHT_ROW, SIDE
from windowing.spark.joins.intake import event_time_ms, event_time_ms_sql
from windowing.spark.lake import delta_lake_io

STAGING_FOLDER = "_staging"
"""The folder under the job's state root where a reprocessing operator keeps its state and outputs."""
TABLES = ("results", "late", "quarantine")
"""The target tables a reprocess replaces the range in, in this order."""
_ROW_COLUMNS = {"left": LEFT_ROW, "right": RIGHT_ROW}


def output_job(job: JoinJob, name: str) -> JoinJob:
    """The join writing to ``results_<name>``, ``late_<name>``, ``quarantine_<name>`` beside its own tables.

    Raises:
        ValueError: if ``name`` is not letters, digits and ``_``.
    """
    from pipelines.reprocess import new_output_job
    return new_output_job(job, name)


def reach_ms(job: JoinJob) -> int:
    """How long before a range's start the rows feeding the range's results may lie.

    A window join: its longest window; an interval join: ``max(0, upper, -lower)``
    (inclusive bounds). See the module docstring.

    Raises:
        ValueError: session, global or count windows (no fixed size), naming the assigner.
    """
    return job.family.reach_ms(job.spec, job.name)


def late_range_sql(start_ms: int, end_ms: int) -> str:
    """The ``replaceWhere`` of a range on a join's late table: the late rows' event times in ``[start, end)``."""
    return f"{EVENT_TIME} >= {start_ms} AND {EVENT_TIME} < {end_ms}"


def quarantine_range_sql(job: JoinJob, schema: T.StructType, start_ms: int, end_ms: int) -> str:
    """The ``replaceWhere`` of a range on a join's quarantine table (``schema``): the rows whose own side's
    event time is in ``[start, end)``; a row without a parseable one is in no range."""
    times = []
    for side, column in (("left", job.spec.left.event_time_column), ("right", job.spec.right.event_time_column)):
        row = _ROW_COLUMNS[side]
        data_type = schema[row].dataType[column].dataType
        times.append(f"WHEN {SIDE} = '{side}' THEN {event_time_ms_sql(f'`{row}`.`{column}`', data_type)}")
    ms = f"(CASE {' '.join(times)} END)"
    return f"{ms} >= {start_ms} AND {ms} < {end_ms}"


def describe(job: JoinJob) -> str:
    """The join a reprocess ran, in one line (the report's ``spec``)."""
    return job.family.describe(job.spec)


def reprocess_join_range(spark: SparkSession, job: JoinJob, start: dt.datetime, end: dt.datetime, *,
                         into: JoinJob | None = None, window: dict | None = None, chunk: str | None = None,
                         staging_root: str | None = None) -> ReprocessReport:
    """Recompute the join's results of ``[start, end)`` and replace that range in ``into``'s tables.

    Args:
        job: the join job whose inputs and spec are used.
        start / end: the range (naive datetimes are UTC): the windows with
            ``start < window_end <= end``, or the pairs with ``start <= pair_time < end``.
        into: the job whose tables receive the range (default: ``job`` itself, in
            place); :func:`output_job` names new tables beside the job's.
        window: overrides of the ``[join.window]`` table (:meth:`JoinJob.with_window`), e.g.
            ``{"size": "5 minutes"}``: the range is recomputed with that window.
        chunk: event-time chunk of the computation (default: the whole range, one batch).
        staging_root: where the fresh operator keeps state and outputs
            (default ``<state_root>/_staging``); removed afterwards when local.

    Returns:
        A :class:`pipelines.reprocess.ReprocessReport` (``rows`` per target table;
        ``spec``: :func:`describe`).

    Raises:
        ValueError: an empty range, windows without a time range (naming the
            assigner), a window override that is not valid (or an interval join's), or target
            tables whose columns differ from the recomputed rows'.
        pipelines.errors.InputError: an input table is missing or not a Delta table.
    """
    from pipelines.join_drivers import require_inputs, run_join_backfill
    target = into or job
    job = job.with_window(window)
    start_ms, end_ms = epoch_ms(start), epoch_ms(end)
    if end_ms <= start_ms:
        raise ValueError(f"reprocessing range is empty: start {start.isoformat()} is not before end {end.isoformat()}")
    rows_start_ms = start_ms - reach_ms(job)
    require_inputs(spark, job)
    staging_id = f"{job.operator_id}_r{start_ms}_{end_ms}_{uuid.uuid4().hex[:8]}"
    base = f"{staging_root or job.state_root.rstrip('/') + '/' + STAGING_FOLDER}/{staging_id}"
    staging = replace(job, operator_id=staging_id, state_root=f"{base}/state", results_path=f"{base}/results",
                      late_path=f"{base}/late", quarantine_path=f"{base}/quarantine",
                      checkpoint_path=f"{base}/checkpoint")
    log(f"reprocess {job.name}: {job.family.range_words} [{_iso(start_ms)}, {_iso(end_ms)}) from the rows of both "
        f"inputs since {_iso(rows_start_ms)} -> {target.results_path} (staging {base})")
    try:
        if _has_rows(spark, job, rows_start_ms, end_ms):
            run_join_backfill(spark, staging, _utc(rows_start_ms), _utc(end_ms), chunk)
        rows, version = _replace_range(spark, job, staging, target, start_ms, end_ms)
    finally:
        _remove_local(base)
    log(f"reprocess {job.name}: replaced the range in {target.results_path} (version {version}): {rows}")
    return ReprocessReport(start_ms, end_ms, target.results_path, target.late_path, target.quarantine_path,
                           rows, version, staging_id, describe(job))


def _has_rows(spark: SparkSession, job: JoinJob, start_ms: int, end_ms: int) -> bool:
    """Whether either input has a row with an event time in ``[start, end)``."""
    for side, path in job.input_paths.items():
        frame = _read(spark, path)
        column = getattr(job.spec, side).event_time_column
        ms = event_time_ms(column, frame.schema[column].dataType)
        if frame.where((ms >= start_ms) & (ms < end_ms)).limit(1).count():
            return True
    return False


def _replace_range(spark: SparkSession, job: JoinJob, staging: JoinJob, target: JoinJob, start_ms: int,
                   end_ms: int) -> tuple[dict, int | None]:
    """Each target table's range replaced by the staging table's rows of it (none: the range emptied).

    A table that neither the staging run nor the target has is left alone (0 rows).
    Returns the rows written per table and the results commit's version.
    """
    range_sql = {"results": lambda schema: job.family.results_range_sql(start_ms, end_ms),
                 "late": lambda schema: late_range_sql(start_ms, end_ms),
                 "quarantine": lambda schema: quarantine_range_sql(job, schema, start_ms, end_ms)}
    rows, version = {}, None
    for kind in TABLES:
        staged, path = getattr(staging, f"{kind}_path"), getattr(target, f"{kind}_path")
        recomputed = delta_lake_io.table_exists(spark, staged)
        if not recomputed and not delta_lake_io.table_exists(spark, path):
            rows[kind] = 0
            continue
        frame = _read(spark, staged if recomputed else path)
        predicate = range_sql[kind](frame.schema)
        if not recomputed:
            frame = spark.createDataFrame([], frame.schema)   # the recomputation wrote none: the range empties
        rows[kind], written = _replace(spark, frame.where(predicate), path, predicate)
        version = written if kind == "results" else version
    return rows, version
