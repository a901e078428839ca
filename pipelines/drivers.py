"""One operator, two drivers: Structured Streaming (foreachBatch) and a backfill.

Both build the same operator from a :class:`Job` (the one
:func:`windowing.spark.dispatch.operator_on_delta` picks for its spec: a
DataFrame plan or the per-key model); only how batches are cut differs. Batch ids are deterministic (the stream's own ids,
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

from pipelines import fault_hook
from pipelines.job import Job
from windowing.core.time import MAX_TIMESTAMP_MS, parse_duration_ms
from windowing.spark.dispatch import operator_on_delta
from windowing.spark.operator import BatchReport, SparkWindowOperator
from windowing.spark.prepare import by_processing_time


WHOLE_RANGE = "all"
"""A backfill chunk that is the whole range: one batch, flushed in the same batch."""


def log(message: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def operator_for(spark: SparkSession, job: Job, reset_state: bool = False):
    """The job's operator: a :class:`SparkWindowOperator` (DataFrame plan) or a ``KeyedModelOperator``.

    ``WINJOB_FAULT`` set (fault soaks only, :mod:`pipelines.fault_hook`): the process kills itself where it says.
    """
    return operator_on_delta(spark, job.spec, job.operator_id, job.state_root,
                             results_path=job.results_path, late_path=job.late_path,
                             quarantine_path=job.quarantine_path, reset_state=reset_state,
                             fault_injection=fault_hook.from_environment())


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
    return (f"batch {report.batch_id} [{report.plan}]: {m.input_rows} rows -> {m.accepted_rows} in windows, {m.late_rows} late, "
            f"{m.quarantined_rows} quarantined, {m.unassigned_rows} unassigned; {m.panes_emitted} panes; "
            f"watermark {wm_text}; {report.seconds:.1f}s")


def run_stream(spark: SparkSession, job: Job, available_now: bool = True, processing_time: str | None = None,
               timeout_s: float | None = None, on_batch: Callable[[BatchReport], None] | None = None,
               reset_state: bool = False, validate: bool | None = None) -> list[BatchReport]:
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
            stays committed, for inspection). None (default): the job's
            ``[quality] validate_runs`` (true unless the job says otherwise).
    """
    validate = job.validate_runs if validate is None else validate
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


def event_time_ms_sql(column: str, type_name: str) -> str:
    """A SQL expression for a raw event-time column in epoch ms (null if null or unparseable).

    The same reading of event time as the operator's: a long/int column is
    epoch ms, a string is parsed as a timestamp, anything else is cast to one.
    Returned as SQL text so that it can also serve as a Delta ``replaceWhere``.
    """
    quoted = f"`{column}`"
    if type_name in ("bigint", "int"):
        return f"CAST({quoted} AS BIGINT)"
    if type_name == "string":
        return f"unix_millis(try_to_timestamp({quoted}))"
    return f"unix_millis(CAST({quoted} AS TIMESTAMP))"


def run_backfill(spark: SparkSession, job: Job, start: dt.datetime | None = None, end: dt.datetime | None = None,
                 chunk: str | None = None, reset_state: bool = False, validate: bool | None = None
                 ) -> list[BatchReport]:
    """Run the job over ``[start, end)`` of the raw table in event-time chunks, then flush.

    "Complete" mode: chunks are cut by event time, so with a watermark delay
    nothing is late and every window gets its result with perfect knowledge.
    ``chunk`` (default: the job's ``backfill_chunk``) is a duration, or
    ``"all"``: the whole range as ONE batch whose watermark ends at +infinity
    (the flush fused in), which runs in one pass over the input with no window
    state written; Spark spills the aggregation as needed. Duration chunks
    commit one by one (a failed backfill resumes after the last committed
    chunk) and then flush.
    Rows whose event time is null or unparseable are in no range: they are fed
    with the first chunk, which quarantines them. Without an explicit range,
    rows further ahead of now than the spec's ``max_event_time_skew`` do not
    stretch the range either (a year-ahead row would mean a year of chunks):
    they too go with the first chunk, which quarantines them. Rerunning
    resumes: committed chunks are skipped.

    Processing time: when the spec names an ``ingestion_time_column``, that
    column is each row's processing time and the batches carry no clock of
    their own, so idleness and processing-time windows replay as the stream
    ran. Processing-time windows need that column ("in a backfill, processing
    time is the recorded ingestion time"): their chunks (and ``start``/``end``)
    are cut by ingestion time instead of event time, so the clock moves
    forward chunk by chunk as it did in the stream.

    With ``validate`` (default: the job's ``[quality] validate_runs``, true
    unless the job says otherwise), the outputs and the rows fed are validated
    afterwards, including the reconciliation suite; a CRITICAL failure raises
    ``pipelines.quality.DataQualityError``.

    Raises:
        ValueError: processing-time windows without an ``ingestion_time_column``,
            a bad chunk, an empty range.
    """
    validate = job.validate_runs if validate is None else validate
    spec = job.spec
    by_ingestion = by_processing_time(spec)
    if by_ingestion and spec.ingestion_time_column is None:
        raise ValueError(f"job {job.name}: a backfill of processing-time windows ({spec.assigner!r}) needs the "
                         f"recorded ingestion time of each row: set [source] ingestion_time_column")
    # With recorded ingestion times the rows carry the clock (batch_pt below is None); a batch time
    # of "now" would move the clock past every window (and make every source idle) at the first chunk.
    chunk_text = chunk or job.backfill_chunk
    chunk_ms = None if str(chunk_text).strip().lower() == WHOLE_RANGE else parse_duration_ms(chunk_text, "chunk")
    if chunk_ms is not None and chunk_ms <= 0:
        raise ValueError(f"chunk must be a positive duration or {WHOLE_RANGE!r}, got {chunk_text!r}")
    raw = spark.read.format("delta").load(job.source_path)
    chunk_column = spec.ingestion_time_column if by_ingestion else spec.event_time_column
    ms = F.expr(event_time_ms_sql(chunk_column, dict(raw.dtypes)[chunk_column]))
    now_ms = int(time.time() * 1000)
    batch_pt = None if spec.ingestion_time_column is not None else now_ms
    skew = spec.max_event_time_skew_ms
    far_future = (ms > F.lit(now_ms + skew).cast("long")) if (skew is not None and not by_ingestion) \
        else F.lit(False)
    automatic = start is None or end is None
    outside = ms.isNull() | (far_future if automatic else F.lit(False))
    if chunk_ms is None and start is None and end is None:
        # The whole table in one batch: no range to compute, no extra scan. Rows with no,
        # unparseable or far-future event time are in it too: the operator quarantines them.
        operator = operator_for(spark, job, reset_state)
        fresh = operator.last_progress() is None
        report = operator.process_batch(raw, 0, watermark_ms=MAX_TIMESTAMP_MS, processing_time_ms=batch_pt)
        log("backfill 1/1 " + describe(report))
        reports = [report]
        fed = raw
    else:
        # Bounds in epoch ms computed by Spark: collected timestamps would come back as
        # naive datetimes in the Python process's local time zone.
        bounds = raw.where(~far_future).agg(F.min(ms), F.max(ms)).first() if automatic else (None, None)
        if automatic and bounds[0] is None:
            raise ValueError(f"the raw table {job.source_path} has no rows with an "
                             f"{'ingestion' if by_ingestion else 'event'} time ({chunk_column})")
        start_ms = bounds[0] if start is None else _epoch_ms(start)
        end_ms = bounds[1] + 1 if end is None else _epoch_ms(end)
        if end_ms <= start_ms:
            raise ValueError(f"backfill range is empty: start {start or start_ms} is not before end {end or end_ms}")
        operator = operator_for(spark, job, reset_state)
        # The reconciliation (raw = windows + late + quarantine) only holds for outputs this
        # backfill wrote from the start, not for an operator that a stream already fed.
        fresh = operator.last_progress() is None
        if chunk_ms is None:
            chunk_ms = end_ms - start_ms
        n_chunks = -(-(end_ms - start_ms) // chunk_ms)
        reports = []
        for i in range(n_chunks):
            lo, hi = start_ms + i * chunk_ms, min(end_ms, start_ms + (i + 1) * chunk_ms)
            rows = raw.where((ms >= lo) & (ms < hi) & ~far_future) if automatic else raw.where((ms >= lo) & (ms < hi))
            if i == 0:
                rows = rows.unionByName(raw.where(outside))  # null, unparseable or far-future event time
            # One chunk covers the closed range: it is also the flush (watermark to +infinity).
            report = operator.process_batch(rows, i, watermark_ms=MAX_TIMESTAMP_MS if n_chunks == 1 else None,
                                            processing_time_ms=batch_pt)
            reports.append(report)
            log(f"backfill {i + 1}/{n_chunks} " + describe(report))
        if n_chunks > 1:
            report = operator.flush(n_chunks, processing_time_ms=batch_pt)
            reports.append(report)
            log("backfill flush " + describe(report))
        # every row fed: in range, or with no/unparseable/far-future time
        fed = raw if automatic else raw.where(((ms >= start_ms) & (ms < end_ms)) | outside)
    if validate:
        from pipelines.quality import DEFAULT_SUITES, validate_job
        suites = list(DEFAULT_SUITES) + (["reconciliation"] if fresh else [])
        if not fresh:
            log("backfill resumed an operator with earlier batches: reconciliation skipped")
        result = validate_job(spark, job, run_kind="backfill", raw=fed, now_ms=now_ms, suites=suites)
        log(f"backfill data quality: {len(result.warnings)} warnings; Data Docs {result.data_docs_path}")
    return reports
