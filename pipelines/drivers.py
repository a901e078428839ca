"""One operator, two drivers: Structured Streaming (foreachBatch) and a backfill.

Both build the same operator from a :class:`Job` (the one
:func:`windowing.spark.operator.dispatch.operator_on_delta` picks for its spec: a
DataFrame plan or the per-key model); only how batches are cut differs. Batch ids are deterministic (the stream's own ids,
or the chunk number), so a rerun after a failure skips what was committed and
replays the rest exactly once.

Each progress row records which run wrote it (``run``: ``{"kind": "stream"}``, or a
backfill's range and chunk). A stream's batch ids and a backfill's chunk numbers
would mean different rows under the same ids, so one operator's state belongs to
one kind of run: a backfill refuses an operator whose state a stream (or a
backfill of another range) wrote, and a stream refuses one that a backfill wrote,
unless the state is reset. A backfill resumes (or, finished, skips) only its own
range.
"""
from __future__ import annotations

import datetime as dt
import json
import time
from typing import Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import fault_hook, logs, stream_offsets
from pipelines.job import Job
from windowing.core.time import MAX_TIMESTAMP_MS, parse_duration_ms
from windowing.spark.input.batch_settings import small_batch_settings, validates_small
from windowing.spark import BatchReport, ConcurrentWriterError, SparkWindowOperator, operator_on_delta
from windowing.spark.input.prepare import by_processing_time

STREAM_RUN = {"kind": "stream"}
"""The ``run`` a stream records in its progress rows."""
SPARK_CHECKPOINT_CONFLICTS = ("Multiple streaming jobs detected",           # CONCURRENT_STREAM_LOG_UPDATE
                              "Multiple streaming queries are concurrently using",   # a checkpoint file written first
                              "Another instance of this query was just started")     # CONCURRENT_QUERY
"""Spark's messages when another query on the same checkpoint created it or wrote its offset or commit log first."""


RAW_SUITE = "raw_events"
WHOLE_RANGE = "all"
"""A backfill chunk that is the whole range: one batch, flushed in the same batch."""


def log(message: str) -> None:
    """A summary line of a run, to the ``pipelines`` logger at INFO (see :mod:`pipelines.logs`)."""
    logs.info(message)


class StreamRun(list):
    """The reports of a stream run's batches, and the last batch committed before the run (None: none)."""

    def __init__(self, reports=(), last_batch_before: int | None = None):
        super().__init__(reports)
        self.last_batch_before = last_batch_before

    @property
    def nothing_new(self) -> bool:
        """No batch ran: nothing had arrived since ``last_batch_before``."""
        return not self

    def nothing_new_line(self, job: "Job") -> str:
        since = "the stream started" if self.last_batch_before is None else f"batch {self.last_batch_before}"
        return f"job {job.name}: nothing new since {since} in {job.source_path}"


def operator_for(spark: SparkSession, job: Job, reset_state: bool = False,
                 fault_injection: Callable[[str], None] | None = None):
    """The job's operator: a :class:`SparkWindowOperator` (DataFrame plan) or a ``KeyedModelOperator``.

    ``fault_injection``: test hook, called with a stage name at each step of a batch's commit. Without
    one, ``WINJOB_FAULT`` set (fault soaks only, :mod:`pipelines.fault_hook`) makes the process kill
    itself where it says.
    """
    return operator_on_delta(spark, job.spec, job.operator_id, job.state_root,
                             results_path=job.results_path, late_path=job.late_path,
                             quarantine_path=job.quarantine_path, reset_state=reset_state,
                             fault_injection=fault_injection or fault_hook.from_environment())


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def format_epoch_ms(ms: int) -> str:
    """Any epoch-ms instant as UTC text: ``+inf``/``-inf`` at the ends of time, the number where no date fits.

    Python dates span the years 1 to 9999; an event time outside them (a row dated year 0, a
    watermark just before year 1) is shown as ``<ms> ms since epoch``.
    """
    if ms >= MAX_TIMESTAMP_MS:
        return "+inf"
    if ms <= -(2**63):
        return "-inf"
    try:
        at = _EPOCH + dt.timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms since epoch"
    return f"{at.year:04d}-{at:%m-%d %H:%M:%S}.{at.microsecond // 1000:03d}"   # %Y drops zeros before 1000


def claim_state(operator, job: Job, run: dict) -> dict | None:
    """Record ``run`` in the progress rows the operator writes; refuse state another kind of run wrote.

    The operator's last progress row says which run wrote it. Equal ``run``: resume
    (a backfill of the same range and chunks, or the same stream). No row: fresh
    state, or rows that did not record a run. Otherwise the ids would collide (see
    the module docstring): raises ValueError naming both runs and the ways out.
    """
    last = operator.last_progress()
    previous = json.loads(last["run"]) if last is not None and last.get("run") else None
    if previous is not None and previous != run:   # rows of releases that did not record it: unknown
        wrote = _run_text(previous)
        raise ValueError(
            f"job {job.name}: operator {job.operator_id!r} holds state written by {wrote} (batches up to "
            f"{last['batch_id']}); this run is {_run_text(run)}, which would reuse those batch ids for other "
            f"rows (committed ids are skipped) or count rows twice. Use a job with another operator id, pass "
            f"--reset-state (reset_state=True) to recompute from scratch, or `winjob reprocess` to recompute "
            f"a range.")
    operator.store.run = json.dumps(run, sort_keys=True)
    return last


def _run_text(run: dict) -> str:
    if run.get("kind") != "backfill":
        return "a stream"
    if run.get("start_ms") is None:
        return "a one-batch backfill of the whole table"
    return (f"a backfill of [{run['start_ms']}, {run['end_ms']}) ms by {run['column']} in chunks of "
            f"{run['chunk_ms']} ms")


def describe(report: BatchReport) -> str:
    """One line on a batch: its rows by outcome, panes, watermark and time (or that it was skipped)."""
    if report.skipped:
        return f"batch {report.batch_id}: already committed, skipped"
    m = report.metrics
    return (f"batch {report.batch_id} [{report.plan}]: {m.input_rows} rows -> {m.accepted_rows} in windows, {m.late_rows} late, "
            f"{m.quarantined_rows} quarantined, {m.unassigned_rows} unassigned; {m.panes_emitted} panes; "
            f"watermark {format_epoch_ms(report.watermark_after_ms)}; {report.seconds:.1f}s")


def require_raw_table(spark: SparkSession | None, job: Job) -> None:
    """Raise :class:`pipelines.errors.InputError` unless the job's raw table is a Delta table.

    ``spark`` None: only what the local file system tells (no Spark needed).
    """
    from pipelines.errors import require_delta_table
    require_delta_table(spark, job.source_path, "raw table", job.name,
                        f"land raw rows there first, or fix [source] path in {job.source_file or 'the job file'}")


def run_stream(spark: SparkSession, job: Job, available_now: bool = True, processing_time: str | None = None,
               timeout_s: float | None = None, on_batch: Callable[[BatchReport], None] | None = None,
               reset_state: bool = False, validate: bool | None = None,
               fault_injection: Callable[[str], None] | None = None) -> StreamRun:
    """Run the job as a Structured Streaming query over the raw Delta table.

    Returns the reports of the batches that ran (a :class:`StreamRun`: none when
    nothing had arrived, which the run logs as "nothing new since batch N").

    Args:
        available_now: process everything that has arrived, then stop (for
            scheduled incremental runs).
        processing_time: e.g. ``"30 seconds"``: a long-running query with
            micro-batches at that interval (stops after ``timeout_s`` if given).
        validate: validate every committed batch exactly once
            (:func:`pipelines.quality.validate_job` on that batch's output rows
            and its raw rows, a static DataFrame, never the streaming one):
            after a batch commits; a batch that Spark replays after a crash
            (committed, not yet validated) when it comes again, with its raw
            rows; any other committed batch without a recorded validation run
            (the ``validation_runs`` table) at the next batch and at the end of
            the run, without its raw rows (they are not known then). A CRITICAL
            failure stops the query and is raised as ``DataQualityError`` (the
            batch stays committed, for inspection). None (default): the job's
            ``[quality] validate_runs`` (true unless the job says otherwise).
        fault_injection: test hook, see :func:`operator_for`.

    Raises:
        pipelines.errors.InputError: the raw table is missing or not a Delta table.
        pipelines.quality.DataQualityError: a CRITICAL expectation failed.
        RuntimeError: the streaming query failed (the cause is chained).
    """
    validate = job.validate_runs if validate is None else validate
    require_raw_table(spark, job)
    operator = operator_for(spark, job, reset_state, fault_injection)
    last = claim_state(operator, job, STREAM_RUN)
    reports = StreamRun(last_batch_before=None if last is None else last["batch_id"])
    quality_errors: list[Exception] = []
    writer_errors: list[ConcurrentWriterError] = []
    ledger = _ValidationLedger(spark, job) if validate else None

    source_ends: dict = {}    # the end offset of each batch of this run, read once

    def each_batch(df, batch_id: int) -> None:
        # The progress row records what the batch read (for `winjob replay`); no Spark job.
        offsets = stream_offsets.batch_offsets(spark, job.checkpoint_path, batch_id, source_ends)
        operator.store.source_offsets = offsets.to_json() if offsets is not None else None
        try:
            report = operator.process_batch(df, batch_id, processing_time_ms=int(time.time() * 1000))
        except ConcurrentWriterError as error:
            writer_errors.append(error)
            raise
        reports.append(report)
        log(describe(report))
        if ledger is not None:
            from pipelines.quality import DataQualityError
            try:
                ledger.committed(batch_id)
                small = validates_small(spark, operator.store.state_in_driver, report.metrics.input_rows)
                ledger.validate(batch_id, raw=df, settings=small_batch_settings(spark) if small else None)
                ledger.catch_up(before=batch_id)
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
    try:
        query = writer.start()
    except Exception as error:     # noqa: BLE001 - another run's query may have created the checkpoint first
        if checkpoint_conflict(str(error)):
            raise _checkpoint_taken(job) from error
        raise
    try:
        if timeout_s is not None and processing_time:
            query.awaitTermination(timeout_s)
        else:
            query.awaitTermination()
    except Exception:   # noqa: BLE001 - the query's own exception is raised below, with its cause
        pass
    finally:
        if query.isActive:
            query.stop()
    if writer_errors:
        raise writer_errors[0]
    if quality_errors:
        raise quality_errors[0]
    failure = query.exception()
    if failure:
        if checkpoint_conflict(str(failure)):
            raise _checkpoint_taken(job) from failure
        raise RuntimeError(f"streaming job {job.name} failed: {failure}") from failure
    if ledger is not None:
        ledger.catch_up()
    if reports.nothing_new:
        log(reports.nothing_new_line(job))
    return reports


def checkpoint_conflict(error_text: str) -> bool:
    """Whether a streaming query's error says that another query uses the same checkpoint."""
    return any(marker in error_text for marker in SPARK_CHECKPOINT_CONFLICTS)


def _checkpoint_taken(job: Job) -> ConcurrentWriterError:
    return ConcurrentWriterError(
        f"job {job.name}: another run is using the checkpoint {job.checkpoint_path} (Spark found it created or "
        f"the same batch planned by another query); this run stopped. Two runs must not write one operator at "
        f"the same time.")


class _ValidationLedger:
    """Which committed stream batches of a job have a recorded validation run; validates the others once.

    Read once from the progress and ``validation_runs`` tables when the run
    starts, then kept up to date by the run itself (no Spark job per batch).
    """

    def __init__(self, spark: SparkSession, job: Job):
        from pipelines.quality import stream_batches
        self.spark, self.job = spark, job
        self.known, self.pending = stream_batches(spark, job)
        self.done: set[int] = set()

    def committed(self, batch_id: int) -> None:
        """``batch_id`` is committed now: if it was not at the start of the run, it needs a validation."""
        if batch_id not in self.known:
            self.known.add(batch_id)
            self.pending.add(batch_id)

    def validate(self, batch_id: int, raw=None, settings: dict[str, str] | None = None) -> None:
        """Validate ``batch_id`` if it is committed and not validated yet (``raw``: its raw rows, if known;
        ``settings``: Spark settings to validate with, see :func:`pipelines.quality.validate_job`)."""
        if batch_id not in self.pending:
            return
        from pipelines.quality import DEFAULT_SUITES, validate_job
        self.pending.discard(batch_id)
        self.done.add(batch_id)
        # Without its raw rows (not known after a restart) the raw suite would check the whole table.
        suites = DEFAULT_SUITES if raw is not None else [s for s in DEFAULT_SUITES if s != RAW_SUITE]
        result = validate_job(self.spark, self.job, batch_id=batch_id, run_kind="stream", raw=raw, suites=suites,
                              settings=settings)
        log(f"batch {batch_id}: {result.one_line()}" + ("" if raw is not None else " (raw rows not known: raw suite not run)"))

    def catch_up(self, before: int | None = None) -> None:
        """Validate the committed batches (below ``before``) that no run validated yet."""
        for batch_id in sorted(b for b in self.pending if before is None or b < before):
            self.validate(batch_id)


def epoch_ms(value: dt.datetime) -> int:
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
                 chunk: str | None = None, reset_state: bool = False, validate: bool | None = None,
                 fault_injection: Callable[[str], None] | None = None) -> list[BatchReport]:
    """Run the job over ``[start, end)`` of the raw table in event-time chunks, the last one ending the input.

    "Complete" mode: chunks are cut by event time, so with a watermark delay
    nothing is late and every window gets its result with perfect knowledge.
    ``chunk`` (default: the job's ``backfill_chunk``) is a duration, or
    ``"all"``: the whole range as ONE batch whose watermark ends at +infinity
    (the flush fused in), which runs in one pass over the input with no window
    state written; Spark spills the aggregation as needed. Duration chunks
    commit one by one (a failed backfill resumes after the last committed
    chunk); the last chunk that holds rows ends the input (its watermark goes
    to +infinity: every window fires and is cleaned in that batch). Only the
    chunks that hold rows are visited (found with one aggregate; chunk 0
    always): a chunk's batch id is its index in the range. A separate flush,
    batch id the number of chunks in the range, runs only when the committed
    watermark is not +infinity at the end (a last chunk committed by a run
    that flushed apart).
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
    afterwards, including the reconciliation suite (also when this run resumed
    an interrupted backfill: it reconciles all the chunks' rows; not when a
    stream fed the operator first); a CRITICAL failure raises
    ``pipelines.quality.DataQualityError``.

    Raises:
        ValueError: processing-time windows without an ``ingestion_time_column``,
            a bad chunk, an empty range.
        pipelines.errors.InputError: the raw table is missing or not a Delta table.
    """
    validate = job.validate_runs if validate is None else validate
    spec = job.spec
    by_ingestion = by_processing_time(spec)
    if by_ingestion and spec.input.ingestion_time_column is None:
        raise ValueError(f"job {job.name}: a backfill of processing-time windows ({spec.assigner!r}) needs the "
                         f"recorded ingestion time of each row: set [source] ingestion_time_column")
    # With recorded ingestion times the rows carry the clock (batch_pt below is None); a batch time
    # of "now" would move the clock past every window (and make every source idle) at the first chunk.
    chunk_text = chunk or job.backfill_chunk
    chunk_ms = None if str(chunk_text).strip().lower() == WHOLE_RANGE else parse_duration_ms(chunk_text, "chunk")
    if chunk_ms is not None and chunk_ms <= 0:
        raise ValueError(f"chunk must be a positive duration or {WHOLE_RANGE!r}, got {chunk_text!r}")
    require_raw_table(spark, job)
    raw = spark.read.format("delta").load(job.source_path)
    chunk_column = spec.input.ingestion_time_column if by_ingestion else spec.event_time_column
    ms = F.expr(event_time_ms_sql(chunk_column, dict(raw.dtypes)[chunk_column]))
    now_ms = int(time.time() * 1000)
    batch_pt = None if spec.input.ingestion_time_column is not None else now_ms
    skew = spec.input.max_event_time_skew_ms
    far_future = (ms > F.lit(now_ms + skew).cast("long")) if (skew is not None and not by_ingestion) \
        else F.lit(False)
    automatic = start is None or end is None
    outside = ms.isNull() | (far_future if automatic else F.lit(False))
    if chunk_ms is None and start is None and end is None:
        # The whole table in one batch: no range to compute, no extra scan. Rows with no,
        # unparseable or far-future event time are in it too: the operator quarantines them.
        operator = operator_for(spark, job, reset_state, fault_injection)
        fresh = operator.last_progress() is None
        claim_state(operator, job, {"kind": "backfill", "start_ms": None})
        report = operator.process_batch(raw, 0, watermark_ms=MAX_TIMESTAMP_MS, processing_time_ms=batch_pt)
        log("backfill chunk 1/1 (the whole table): " + describe(report))
        reports = [report]
        fed = raw
    else:
        # Bounds in epoch ms computed by Spark: collected timestamps would come back as
        # naive datetimes in the Python process's local time zone.
        chunks = None
        if start is None and end is None:
            # The range and the chunks that hold rows in one aggregate (one pass over the table).
            bounds, chunks = range_and_chunks(raw.where(~far_future), ms, chunk_ms)
        else:
            bounds = raw.where(~far_future).agg(F.min(ms), F.max(ms)).first() if automatic else (None, None)
        if automatic and bounds[0] is None:
            raise ValueError(f"the raw table {job.source_path} has no rows with an "
                             f"{'ingestion' if by_ingestion else 'event'} time ({chunk_column})")
        start_ms = bounds[0] if start is None else epoch_ms(start)
        end_ms = bounds[1] + 1 if end is None else epoch_ms(end)
        if end_ms <= start_ms:
            raise ValueError(f"backfill range is empty: start {start or start_ms} is not before end {end or end_ms}")
        operator = operator_for(spark, job, reset_state, fault_injection)
        fresh = operator.last_progress() is None
        if chunk_ms is None:
            chunk_ms = end_ms - start_ms
        claim_state(operator, job, {"kind": "backfill", "start_ms": start_ms, "end_ms": end_ms,
                                    "chunk_ms": chunk_ms, "column": chunk_column})
        n_chunks = -(-(end_ms - start_ms) // chunk_ms)
        in_range = (ms >= start_ms) & (ms < end_ms) & (~far_future if automatic else F.lit(True))
        if chunks is None:
            chunks = chunk_range(raw.where(in_range), ms, start_ms, chunk_ms)
        reports = []
        progress = ChunkProgress(len(chunks), n_chunks)
        for i in chunks:
            lo, hi = start_ms + i * chunk_ms, min(end_ms, start_ms + (i + 1) * chunk_ms)
            rows = raw.where((ms >= lo) & (ms < hi) & ~far_future) if automatic else raw.where((ms >= lo) & (ms < hi))
            if i == 0:
                rows = rows.unionByName(raw.where(outside))  # null, unparseable or far-future event time
            # The last chunk that holds rows also ends the input (watermark to +infinity).
            report = operator.process_batch(rows, i, watermark_ms=MAX_TIMESTAMP_MS if i == chunks[-1] else None,
                                            processing_time_ms=batch_pt)
            reports.append(report)
            log(progress.line(i, lo, hi) + describe(report))
        if operator.last_progress()["watermark_ms"] != MAX_TIMESTAMP_MS:
            # A run that committed its last chunk without ending the input (so it wrote no flush there).
            report = operator.flush(n_chunks, processing_time_ms=batch_pt)
            reports.append(report)
            log("backfill flush " + describe(report))
        # every row fed: in range, or with no/unparseable/far-future time
        fed = raw if automatic else raw.where(((ms >= start_ms) & (ms < end_ms)) | outside)
    if validate:
        from pipelines.quality import DEFAULT_SUITES, validate_job
        # The reconciliation (raw = windows + late + quarantine) holds for outputs that backfill
        # chunks wrote from the start (this run's, or an interrupted run's that this one resumed),
        # not for an operator that a stream fed first.
        reconcile = fresh or not stream_fed(spark, job)
        suites = list(DEFAULT_SUITES) + (["reconciliation"] if reconcile else [])
        if not reconcile:
            log(f"backfill continued the operator a stream fed ({job.checkpoint_path}): reconciliation skipped")
        result = validate_job(spark, job, run_kind="backfill", raw=fed, now_ms=now_ms, suites=suites)
        log(f"backfill {result.one_line()}; Data Docs {result.data_docs_path}")
    return reports


def chunk_range(rows, ms, start_ms: int, chunk_ms: int) -> list[int]:
    """The indexes of the chunks ``[start + i * chunk, start + (i + 1) * chunk)`` that hold ``rows``, with 0.

    One aggregate over the rows' times. A backfill visits only these: one row
    dated far in the past must not make it walk millions of empty chunks.
    Chunk 0 is always visited: it carries the rows with no time.
    """
    index = F.floor((ms - F.lit(start_ms)) / F.lit(chunk_ms)).cast("long").alias("chunk")
    found = {r["chunk"] for r in rows.select(index).where(F.col("chunk").isNotNull()).distinct().collect()}
    return sorted(found | {0})


def range_and_chunks(rows, ms, chunk_ms: int) -> tuple[tuple[int | None, int | None], list[int] | None]:
    """``((first, last) time of rows, the chunks that hold rows)`` with chunks of ``chunk_ms`` cut from
    the first time, as :func:`chunk_range` gives them (None: no row has a time), in one aggregate.

    The rows are grouped in cells of ``chunk_ms`` from time 0, each with its first and last time. A
    cell, as wide as a chunk, meets at most two chunks: the rows below the chunk boundary inside it
    are in one, the others in the next, so its first and last rows name the chunks it holds rows of.
    """
    cell = (ms - F.pmod(ms, F.lit(chunk_ms).cast("long"))).alias("cell")
    cells = (rows.where(ms.isNotNull()).groupBy(cell)
             .agg(F.min(ms).alias("lo"), F.max(ms).alias("hi")).collect())
    if not cells:
        return (None, None), None
    first, last = min(c["lo"] for c in cells), max(c["hi"] for c in cells)
    found = {(c[edge] - first) // chunk_ms for c in cells for edge in ("lo", "hi")}
    return (first, last), sorted(found | {0})


class ChunkProgress:
    """The progress line of a chunked backfill: chunk k of the n that hold rows, and an estimate of the time left."""

    def __init__(self, visited: int, in_range: int):
        self.visited, self.in_range, self.done = visited, in_range, 0
        self.started = time.monotonic()

    def line(self, index: int, lo_ms: int, hi_ms: int) -> str:
        self.done += 1
        elapsed = time.monotonic() - self.started
        left = elapsed / self.done * (self.visited - self.done)
        skipped = (f" ({self.in_range - self.visited} empty chunks of {self.in_range} not visited)"
                   if self.done == 1 and self.in_range > self.visited else "")
        return (f"backfill chunk {self.done}/{self.visited}{skipped}, eta {left:.0f}s, "
                f"[{format_epoch_ms(lo_ms)}, {format_epoch_ms(hi_ms)}): ")


def stream_fed(spark: SparkSession, job: Job) -> bool:
    """Whether a stream of the job committed a micro-batch (its checkpoint has a commit)."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    commits = jvm.org.apache.hadoop.fs.Path(f"{job.checkpoint_path.rstrip('/')}/commits")
    fs = commits.getFileSystem(conf)
    return bool(fs.exists(commits)) and len(fs.listStatus(commits)) > 0
