"""One operator, two drivers: Structured Streaming (foreachBatch) and a backfill.

Both build the same :class:`SparkWindowOperator` from a :class:`Job`; only how
batches are cut differs. Batch ids are deterministic (the stream's own ids,
or the chunk number), so a rerun after a failure skips what was committed and
replays the rest exactly once.
"""
from __future__ import annotations

import datetime as dt
import sys
import time
from typing import Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.job import Job
from windowing.core.time import parse_duration_ms
from windowing.spark.operator import BatchReport, SparkWindowOperator


def log(message: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def operator_for(spark: SparkSession, job: Job, reset_state: bool = False) -> SparkWindowOperator:
    return SparkWindowOperator.on_delta(spark, job.spec, job.operator_id, job.state_root,
                                        results_path=job.results_path, late_path=job.late_path,
                                        quarantine_path=job.quarantine_path, reset_state=reset_state)


def describe(report: BatchReport) -> str:
    if report.skipped:
        return f"batch {report.batch_id}: already committed, skipped"
    m = report.metrics
    wm = report.watermark_after_ms
    if wm >= 2**63 - 1:
        wm_text = "+inf"
    elif wm <= -(2**63):
        wm_text = "-inf"
    else:
        wm_text = dt.datetime.fromtimestamp(wm / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return (f"batch {report.batch_id}: {m.input_rows} rows -> {m.accepted_rows} in windows, {m.late_rows} late, "
            f"{m.quarantined_rows} quarantined, {m.unassigned_rows} unassigned; {m.panes_emitted} panes; "
            f"watermark {wm_text}; {report.seconds:.1f}s")


def run_stream(spark: SparkSession, job: Job, available_now: bool = True, processing_time: str | None = None,
               timeout_s: float | None = None, on_batch: Callable[[BatchReport], None] | None = None,
               reset_state: bool = False, validate: bool = True) -> list[BatchReport]:
    """Run the job as a Structured Streaming query over the raw Delta table.

    Args:
        available_now: process everything that has arrived, then stop (for
            scheduled incremental runs).
        processing_time: e.g. ``"30 seconds"``: a long-running query with
            micro-batches at that interval (stops after ``timeout_s`` if given).
        validate: after each committed batch, validate that batch's output
            rows and its raw rows (:func:`pipelines.quality.validate_job`, a
            static DataFrame, never the streaming one). A CRITICAL failure
            stops the query and is raised as ``DataQualityError`` (the batch
            stays committed, for inspection).
    """
    operator = operator_for(spark, job, reset_state)
    reports: list[BatchReport] = []
    quality_errors: list[Exception] = []

    def each_batch(df, batch_id: int) -> None:
        report = operator.process_batch(df, batch_id, processing_time_ms=int(time.time() * 1000))
        reports.append(report)
        log(describe(report))
        if validate and not report.skipped:
            from pipelines.quality import DataQualityError, validate_job
            try:
                result = validate_job(spark, job, batch_id=batch_id, run_kind="stream", raw=df)
                log(f"batch {batch_id}: data quality {'passed' if not result.warnings else 'passed with warnings'}"
                    f" ({len(result.warnings)} warnings); Data Docs {result.data_docs_path}")
            except DataQualityError as error:
                quality_errors.append(error)
                raise
        if on_batch:
            on_batch(report)

    stream = spark.readStream.format("delta").load(job.source_path)
    writer = stream.writeStream.foreachBatch(each_batch).option("checkpointLocation", job.checkpoint_path)
    if processing_time:
        writer = writer.trigger(processingTime=processing_time)
    elif available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    try:
        if timeout_s is not None and processing_time:
            query.awaitTermination(timeout_s)
        else:
            query.awaitTermination()
    finally:
        if query.isActive:
            query.stop()
    if quality_errors:
        raise quality_errors[0]
    if query.exception():
        raise RuntimeError(f"streaming job {job.name} failed: {query.exception()}")
    return reports


def _epoch_ms(value: dt.datetime) -> int:
    """Epoch ms of a datetime; a naive one is taken as UTC."""
    return int(value.replace(tzinfo=value.tzinfo or dt.timezone.utc).timestamp() * 1000)


def run_backfill(spark: SparkSession, job: Job, start: dt.datetime | None = None, end: dt.datetime | None = None,
                 chunk: str | None = None, reset_state: bool = False, validate: bool = True) -> list[BatchReport]:
    """Run the job over ``[start, end)`` of the raw table in event-time chunks, then flush.

    "Complete" mode: chunks are cut by event time, so with a watermark delay
    nothing is late and every window gets its result with perfect knowledge.
    Rows whose event time is null or unparseable are in no range: they are fed
    with the first chunk, which quarantines them. Without an explicit range,
    rows further ahead of now than the spec's ``max_event_time_skew`` do not
    stretch the range either (a year-ahead row would mean a year of chunks):
    they too go with the first chunk, which quarantines them. Rerunning
    resumes: committed chunks are skipped.

    With ``validate`` (default), the outputs and the rows fed are validated
    afterwards, including the reconciliation suite; a CRITICAL failure raises
    ``pipelines.quality.DataQualityError``.
    """
    chunk_ms = parse_duration_ms(chunk or job.backfill_chunk, "chunk")
    if chunk_ms <= 0:
        raise ValueError(f"chunk must be positive, got {chunk!r}")
    raw = spark.read.format("delta").load(job.source_path)
    et = F.col(job.spec.event_time_column)
    et_type = dict(raw.dtypes)[job.spec.event_time_column]
    if et_type in ("bigint", "int"):
        ts = F.timestamp_millis(et.cast("long"))
    elif et_type == "string":
        ts = F.expr(f"try_to_timestamp(`{job.spec.event_time_column}`)")
    else:
        ts = et.cast("timestamp")
    ms = F.unix_millis(ts)
    now_ms = int(time.time() * 1000)
    skew = job.spec.max_event_time_skew_ms
    far_future = (ms > F.lit(now_ms + skew).cast("long")) if skew is not None else F.lit(False)
    automatic = start is None or end is None
    # Bounds in epoch ms computed by Spark: collected timestamps would come back as
    # naive datetimes in the Python process's local time zone.
    bounds = raw.where(~far_future).agg(F.min(ms), F.max(ms)).first() if automatic else (None, None)
    if (start is None or end is None) and bounds[0] is None:
        raise ValueError(f"the raw table {job.source_path} has no rows with an event time")
    start_ms = bounds[0] if start is None else _epoch_ms(start)
    end_ms = bounds[1] + 1 if end is None else _epoch_ms(end)
    if end_ms <= start_ms:
        raise ValueError(f"backfill range is empty: start {start or start_ms} is not before end {end or end_ms}")
    operator = operator_for(spark, job, reset_state)
    # The reconciliation (raw = windows + late + quarantine) only holds for outputs this
    # backfill wrote from the start, not for an operator that a stream already fed.
    fresh = operator.last_progress() is None
    n_chunks = -(-(end_ms - start_ms) // chunk_ms)
    reports = []
    outside = ts.isNull() | (far_future if automatic else F.lit(False))
    for i in range(n_chunks):
        lo, hi = start_ms + i * chunk_ms, min(end_ms, start_ms + (i + 1) * chunk_ms)
        rows = raw.where((ms >= lo) & (ms < hi) & ~far_future) if automatic else raw.where((ms >= lo) & (ms < hi))
        if i == 0:
            rows = rows.unionByName(raw.where(outside))
        report = operator.process_batch(rows, i, processing_time_ms=now_ms)
        reports.append(report)
        log(f"backfill {i + 1}/{n_chunks} " + describe(report))
    report = operator.flush(n_chunks, processing_time_ms=now_ms)
    reports.append(report)
    log("backfill flush " + describe(report))
    if validate:
        from pipelines.quality import DEFAULT_SUITES, validate_job
        fed = raw.where(((ms >= start_ms) & (ms < end_ms)) | outside)
        if automatic:
            fed = raw  # every row: in range, or with no/unparseable/far-future time
        suites = list(DEFAULT_SUITES) + (["reconciliation"] if fresh else [])
        if not fresh:
            log("backfill resumed an operator with earlier batches: reconciliation skipped")
        result = validate_job(spark, job, run_kind="backfill", raw=fed, now_ms=now_ms, suites=suites)
        log(f"backfill data quality: {len(result.warnings)} warnings; Data Docs {result.data_docs_path}")
    return reports
