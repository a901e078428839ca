"""What the Airflow DAGs call for a join job (two Delta inputs, ``[left]``/``[right]``/``[join]``).

:mod:`pipelines.orchestration` picks this module once per loaded job
(:func:`pipelines.orchestration.runner`); the functions here keep the contract of
its single-input ones:

* :func:`stream_run`: one ``availableNow`` run of
  :func:`pipelines.join_drivers.run_join_stream`; a missing input table raises
  ``SourceNotReadyError``, a run in which no batch ran ``NothingNewError``;
  otherwise a JSON-able summary (the results asset event's extra);
* :func:`backfill_run`: one interval (or an ad-hoc range) recomputed on a fresh
  operator by :func:`pipelines.join_reprocess.reprocess_join_range` into the
  backfill tables (``results_backfill``, ``late_backfill``,
  ``quarantine_backfill``: :func:`pipelines.orchestration.backfill_job`), replacing
  exactly its range; no row of either input feeding the range raises ``NothingNewError``;
* :func:`reprocess_run`: a range recomputed in place or into ``results_<into>`` etc.;
* :func:`quality_run`: the join suites (:func:`pipelines.join_quality.validate_join_job`)
  on the tables a run's summary names; a failed CRITICAL expectation
  raises :class:`pipelines.quality.DataQualityError`;
* :func:`spec_in_words`: the join in sentences, for the DAG docs.

Join jobs have streaming, backfill, reprocessing and quality DAGs (:data:`KINDS`);
a reprocessing run takes no ``window`` overrides (refused naming them). Nothing
here imports pyspark at module level (DAG files import it at parse time).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pipelines.join_job import JoinJob

KINDS = ("stream", "backfill", "reprocess")
"""The kinds of run the DAGs make for a join job (``pipelines.orchestration.KINDS`` for a single-input one)."""
REPORT_PAGE = False
"""Whether the quality DAG rebuilds the data-quality-over-time page: that page reads a single-input job's tables."""
TABLE_KEYS = ("operator_id", "state_root", "results_path", "late_path", "quarantine_path")
"""The summary keys naming the tables a run wrote (the quality run validates those)."""


def input_tables(job: JoinJob) -> list[str]:
    """The Delta tables a run reads: the left input, then the right."""
    return [job.left_path, job.right_path]


def _store(spark, job: JoinJob):
    from windowing.spark.joins.stores import JoinDeltaStore
    return JoinDeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path, job.quarantine_path)


def _last_batch(spark, job: JoinJob) -> int | None:
    """The newest committed batch id of the join operator (None: no batch yet), from its last progress row."""
    last = _store(spark, job).last_progress()
    return None if last is None else last["batch_id"]


def nothing_new_line(job: JoinJob, last_batch: int | None) -> str:
    """``job J: nothing new in <left> or <right> since batch N`` (``before the first batch`` without one)."""
    since = f"since batch {last_batch}" if last_batch is not None else "before the first batch"
    return f"job {job.name}: nothing new in {job.left_path} or {job.right_path} {since}"


def _result_rows(spark, job: JoinJob, batch_ids: list[int]) -> int | None:
    """The results table's rows that ``batch_ids`` appended, from their commits' row counts (no Spark job);
    None when a commit does not tell."""
    from windowing.spark.lake import delta_lake_io
    store = _store(spark, job)
    counts = [delta_lake_io.appended_rows(spark, job.results_path, store.app_id, b) for b in batch_ids]
    return None if None in counts else sum(counts)


def stream_run(spark, job: JoinJob, job_file: str | Path) -> dict:
    """One scheduled streaming run of a join job (``availableNow``), not validated (the quality DAG does).

    Returns:
        ``job_file``, ``kind`` "stream", the tables (:data:`TABLE_KEYS`, ``left_path``, ``right_path``),
        ``committed_batch_ids`` and ``skipped_batch_ids`` (committed by an earlier attempt),
        ``input_rows`` per side and ``result_rows`` (the rows the committed batches appended to the results, read
        from their commits; None when a commit does not tell).

    Raises:
        pipelines.orchestration.SourceNotReadyError: an input table does not exist yet (naming the side).
        pipelines.orchestration.NothingNewError: no batch ran (:func:`nothing_new_line`).
    """
    from pipelines import logs
    from pipelines.join_drivers import run_join_stream
    from pipelines.orchestration import NothingNewError
    _require_inputs(spark, job)
    reports = run_join_stream(spark, job)
    if not reports:
        message = nothing_new_line(job, _last_batch(spark, job))
        logs.info(message)
        raise NothingNewError(message)
    committed = [r.batch_id for r in reports if not r.skipped]
    input_rows = {side: 0 for side in job.input_paths}
    for report in reports:
        if not report.skipped:
            for side, metrics in report.metrics.items():
                input_rows[side.name] += metrics.input_rows
    return {"job_file": str(job_file), "kind": "stream", **{k: getattr(job, k) for k in TABLE_KEYS},
            "left_path": job.left_path, "right_path": job.right_path,
            "committed_batch_ids": committed, "skipped_batch_ids": [r.batch_id for r in reports if r.skipped],
            "input_rows": input_rows, "result_rows": _result_rows(spark, job, committed)}


def _require_inputs(spark, job: JoinJob) -> None:
    """Raise ``SourceNotReadyError`` naming the side whose input table does not exist yet."""
    from pipelines.orchestration import SourceNotReadyError
    from windowing.spark.lake import delta_lake_io
    for side, path in job.input_paths.items():
        if not delta_lake_io.table_exists(spark, path):
            raise SourceNotReadyError(f"job {job.name}: {side} input table {path} does not exist yet")


def _range_summary(job_file: str | Path, kind: str, target: JoinJob, start, end, report) -> dict:
    return {"job_file": str(job_file), "kind": kind, **{k: getattr(target, k) for k in TABLE_KEYS},
            "left_path": target.left_path, "right_path": target.right_path, "start": start.isoformat(),
            "end": end.isoformat(), "rows": report.rows, "results_version": report.results_version,
            "spec": report.spec}


def backfill_run(spark, job: JoinJob, job_file: str | Path, start, end, chunk: str | None = None) -> dict:
    """Recompute the range ``[start, end)`` (aware datetimes) into the join's backfill tables.

    Each interval is an independent complete-mode computation on a fresh operator
    (:mod:`pipelines.join_reprocess`) that replaces exactly its range of
    ``results_backfill``, ``late_backfill`` and ``quarantine_backfill``: intervals
    share no state, may run in any order, and a rerun replaces the range with the same rows.

    Returns:
        ``job_file``, ``kind`` "backfill", the backfill tables (:data:`TABLE_KEYS`, ``left_path``,
        ``right_path``), ``start``, ``end`` (ISO), ``rows`` per table, ``results_version``, ``spec``.

    Raises:
        pipelines.orchestration.SourceNotReadyError: an input table does not exist yet (naming the side).
        pipelines.orchestration.NothingNewError: the range's results, late and quarantined rows are all empty.
    """
    from pipelines.join_reprocess import reprocess_join_range
    from pipelines.orchestration import backfill_job, require_rows
    _require_inputs(spark, job)
    target = backfill_job(job)
    report = reprocess_join_range(spark, job, start, end, into=target, chunk=chunk)
    require_rows(report.rows, f"job {job.name}: no row of {job.left_path} or {job.right_path} gives a result, "
                              f"late or quarantined row in [{start.isoformat()}, {end.isoformat()}): nothing to backfill")
    return _range_summary(job_file, "backfill", target, start, end, report)


def reprocess_run(spark, job: JoinJob, job_file: str | Path, start, end, window: Mapping[str, Any] | None = None,
                  into: str | None = None, chunk: str | None = None) -> dict:
    """Recompute ``[start, end)`` (aware datetimes) in place, or into ``results_<into>``, ... when named.

    ``window``: overrides of the ``[join.window]`` table (the range recomputed with that window).

    Raises:
        ValueError: a bad ``window`` override (or one of an interval join), a bad ``into`` name,
            windows without a time range (naming the assigner).
        pipelines.orchestration.SourceNotReadyError: an input table does not exist yet.
    """
    from pipelines.join_reprocess import output_job, reprocess_join_range
    _require_inputs(spark, job)
    target = output_job(job, into) if into else job
    report = reprocess_join_range(spark, job, start, end, into=target, window=dict(window or {}), chunk=chunk)
    return {**_range_summary(job_file, "reprocess", target, start, end, report), "window": dict(window or {})}


def replay_run(spark, job: JoinJob, job_file: str | Path, into: str, from_batch: int | None = None,
               to_batch: int | None = None, window: Mapping[str, Any] | None = None) -> dict:
    """Replay the join stream's recorded batches into ``replay_<into>`` tables (with ``window`` overrides of
    ``[join.window]``) and compare with the stream (:mod:`pipelines.join_replay`); the summary of the
    differences goes to the log and into the returned summary.

    Raises:
        pipelines.replay.ReplayRefused: a batch without recorded offsets, a range outside the stream.
        ValueError: a bad ``window`` override (or one of an interval join), naming it.
    """
    from pipelines import logs
    from pipelines.join_replay import replay_join_stream
    _require_inputs(spark, job)
    report = replay_join_stream(spark, job, into, from_batch, to_batch, diff=True, window=dict(window or {}))
    summary = report.diff.summary()
    logs.info(summary)
    return {"job_file": str(job_file), "kind": "replay", **report.as_dict(), "window": dict(window or {}),
            "diff_summary": summary}


BY_HAND = "by_hand"
"""The summary key of a quality run triggered by hand: validate the tables whatever batches ran."""


def event_by_hand(job: JoinJob, job_file: str | Path) -> dict:
    """The summary a quality run triggered by hand validates: the stream's tables as they are."""
    return {"job_file": str(job_file), "kind": "stream", BY_HAND: True, **{k: getattr(job, k) for k in TABLE_KEYS}}


def quality_run(spark, job: JoinJob, extra: Mapping[str, Any]) -> list[dict]:
    """Validate the join tables a run's summary (``extra``) names, as a whole.

    A stream summary without a committed or skipped batch gives nothing to validate (``[]``), unless it
    is :func:`event_by_hand`'s; a backfill or reprocess summary without a row written neither. The
    tables of a range run have no progress of their own (their operator is the staging one, removed):
    the accounting suite is skipped for them, the others run.

    Raises:
        ValueError: the summary's kind is not one a join job's DAGs produce.
        pipelines.quality.DataQualityError: a CRITICAL expectation failed, naming each.
    """
    from dataclasses import replace
    kind = extra.get("kind", "stream")
    if kind not in KINDS:
        raise ValueError(f"job {job.name}: a join job's runs are {list(KINDS)}, not {kind!r}")
    ran = (any((extra.get("rows") or {}).values()) if kind != "stream"
           else extra.get("committed_batch_ids") or extra.get("skipped_batch_ids") or extra.get(BY_HAND))
    if not ran:
        return []
    from pipelines.join_quality import validate_join_job
    from pipelines.quality import DataQualityError, ValidationReport
    target = replace(job, **{k: extra[k] for k in TABLE_KEYS if k in extra})
    results = validate_join_job(spark, target)
    if all(r.success is None for r in results):
        return []   # no table to validate yet (a run by hand before the first batch)
    report = ValidationReport(run_id=f"{job.name}.{kind}", job=job.name, run_kind=kind, batch_id=None,
                              suites=results)
    if report.critical_failures:
        raise DataQualityError(f"job {job.name}: critical expectations failed on the join tables: "
                               + "; ".join(f"{f.suite}: {f.expectation_type} ({f.detail})"
                                           for f in report.critical_failures), report)
    return [{"job": job.name, "kind": kind, "batch_id": None,
             "success": all(r.success is not False for r in results)}]


def spec_in_words(job: JoinJob) -> str:
    """The join as sentences, from the job file's tables: both inputs, keys, kind/how, window or interval bounds."""
    d = job.definition
    left, right, join = d.get("left", {}), d.get("right", {}), d.get("join", {})

    def side(name: str, table: dict) -> str:
        keys = table.get("key", [])
        keys = [keys] if isinstance(keys, str) else list(keys)
        return (f"the {name} input `{table.get('path')}` (key {', '.join(keys)}; event time from "
                f"`{table.get('event_time')}`, up to {table.get('max_out_of_orderness', '0 ms')} out of order)")

    kind = join.get("kind")
    if kind == "interval":
        what = (f"An interval join: each left row with the right rows of its key whose time minus the left row's "
                f"is in {'(' if join.get('lower_exclusive') else '['}{join.get('lower')}, {join.get('upper')}"
                f"{')' if join.get('upper_exclusive') else ']'}.")
    else:
        from pipelines.orchestration import trigger_words, window_in_words
        window = join.get("window", {})
        how = "a co-group" if kind == "co_group" else f"an {join.get('how', 'inner')} window join"
        what = (f"{how[0].upper()}{how[1:]} in {window_in_words(window)}, firing "
                f"{trigger_words(window.get('trigger'), window.get('trigger_args'))}; allowed lateness "
                f"{window.get('allowed_lateness', 'none')}; {window.get('mode', 'accumulating')} panes.")
    if "function" in join:
        output = f"Each output row is made by {join['function']} ({join.get('output_schema')})."
    else:
        output = ("Output columns: " + "; ".join(f"{s} {join[f'{s}_columns']}" for s in ("left", "right")
                                                  if join.get(f"{s}_columns")) + ".")
    late = ("Rows too late go to the late table with their side." if join.get("late_output", True)
            else "Rows too late are counted and dropped.")
    return " ".join([f"Joins {side('left', left)} with {side('right', right)}.", what, output, late])
