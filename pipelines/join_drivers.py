"""The drivers of a join job: a stream over both Delta inputs in one query, and a backfill.

Both run one :class:`~windowing.spark.joins.operator.JoinOperator` on Delta state
(exactly once per batch id: a rerun after a failure skips what was committed):

* :func:`run_join_stream`: one Structured Streaming query reads both inputs
  (``availableNow``: everything that has arrived, then stop); each micro-batch's
  rows of either side go to the operator as that batch (the stream's own batch id);
* :func:`run_join_backfill`: both inputs in one batch that ends the input (every
  window fires, the state empties), or a range of event time in chunks, the last
  one ending the input.

A stream's batch ids and a backfill's would mean other rows under the same ids,
so one operator's state belongs to one run (recorded in the ``run`` table beside
its progress: the stream, the one-pass backfill, or a backfill's range and
chunk): another run is refused unless the state is reset.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import fault_hook, logs, stream_offsets
from pipelines.join_job import JoinJob
from windowing.core.joins.sides import SIDES
from windowing.core.time import MAX_TIMESTAMP_MS, parse_duration_ms
from windowing.spark.joins.columns import LEFT_ROW, RIGHT_ROW, SIDE
from windowing.spark.joins.intake import event_time_ms
from windowing.spark.joins.operator import JoinBatchReport, JoinOperator
from windowing.spark.joins.stores import JoinDeltaStore
from windowing.spark.lake import delta_lake_io

STREAM, BACKFILL = "stream", "backfill"
"""The runs an operator's state can belong to: a stream, a one-pass backfill (a ranged backfill: its
:func:`backfill_run` text)."""
RUN_KIND = "kind"
"""The run table's one column: which run wrote the operator's state (one row per claim generation)."""
_ROWS = {"left": LEFT_ROW, "right": RIGHT_ROW}


def describe(report: JoinBatchReport) -> str:
    """One line on a batch: each side's rows by outcome, the watermark, the time (or that it was skipped)."""
    from pipelines.drivers import format_epoch_ms
    if report.skipped:
        return f"join batch {report.batch_id}: already committed, skipped"
    sides = "; ".join(f"{side.name} {m.input_rows} rows -> {m.accepted_rows} accepted, {m.late_rows} late, "
                      f"{m.dropped_late_rows} dropped late, {m.unassigned_rows} unassigned, "
                      f"{m.quarantined_rows} quarantined" for side, m in report.metrics.items())
    return (f"join batch {report.batch_id} [{report.plan}]: {sides}; watermark "
            f"{format_epoch_ms(report.watermark_end_ms)}; {report.seconds:.1f}s")


def require_inputs(spark: SparkSession | None, job: JoinJob) -> None:
    """Raise :class:`pipelines.errors.InputError` unless both inputs are Delta tables (``spark`` None: files only)."""
    from pipelines.errors import require_delta_table
    for side, path in job.input_paths.items():
        require_delta_table(spark, path, f"{side} input table", job.name,
                            f"land its rows there first, or fix [{side}] path in {job.source_file or 'the job file'}")


def run_path(job: JoinJob) -> str:
    """The table recording which kind of run writes the operator's state (:func:`claim_run`)."""
    return f"{delta_lake_io.absolute(job.state_root).rstrip('/')}/{job.operator_id}/run"


def reset(spark: SparkSession, job: JoinJob) -> None:
    """Discard the operator's state, progress and run record and the stream's checkpoint; start a new generation.

    The outputs stay, as a single-input job's do (they may be user-named tables read by others):
    what the new generation computes is appended to them again, never skipped as written by the
    discarded state's batches (the write markers carry the generation).
    """
    store = JoinDeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path,
                           job.quarantine_path)
    store.reset()
    for path in (run_path(job), job.checkpoint_path):
        delta_lake_io.delete_folder(spark, path)


def run_kinds(spark: SparkSession, job: JoinJob) -> set[str]:
    """The runs recorded as writing the operator's state (empty: none yet), read from the run table's log
    when it tells them plainly (:func:`delta_lake_io.appended_values`), else from the table."""
    path = run_path(job)
    if not delta_lake_io.table_exists(spark, path):
        return set()
    kinds = delta_lake_io.appended_values(spark, path, RUN_KIND)
    return kinds if kinds is not None else {row[RUN_KIND] for row in spark.read.format("delta").load(path).collect()}


def claim_run(spark: SparkSession, job: JoinJob, kind: str) -> None:
    """Record that ``kind`` of run writes the operator's state; refuse state the other kind wrote."""
    kinds = run_kinds(spark, job)
    if kinds and kinds != {kind}:
        raise ValueError(f"job {job.name}: join operator {job.operator_id!r} holds state written by a "
                         f"{sorted(kinds)[0]}; this run is a {kind}, which would reuse its batch ids for other "
                         f"rows (committed ids are skipped). Use another operator id or pass --reset-state "
                         f"(reset_state=True) to recompute from scratch")
    if kinds:
        return
    path = run_path(job)
    spark.createDataFrame([(kind,)], f"{RUN_KIND} string").write.format("delta").mode("append").save(path)


def operator_for(spark: SparkSession, job: JoinJob, kind: str, reset_state: bool = False,
                 fault_injection: Callable[[str], None] | None = None) -> JoinOperator:
    """The job's join operator on Delta, its state claimed for ``kind`` of run (reset first if asked)."""
    if reset_state:
        reset(spark, job)
    claim_run(spark, job, kind)
    return JoinOperator.on_delta(spark, job.spec, job.operator_id, job.state_root, results_path=job.results_path,
                                 late_path=job.late_path, quarantine_path=job.quarantine_path,
                                 fault_injection=fault_injection or fault_hook.from_environment())


def _both_sides(spark: SparkSession, job: JoinJob) -> DataFrame:
    """One streaming DataFrame of both inputs: ``SIDE`` and each row as a struct in its side's column.

    The union is in :data:`~windowing.core.joins.sides.SIDES` order: the checkpoint's offset log
    holds the sides' offsets in that order (:func:`pipelines.stream_offsets.read_offsets`)."""
    schemas = {side: spark.read.format("delta").load(path).schema for side, path in job.input_paths.items()}
    frames = []
    for side, path in job.input_paths.items():
        stream = spark.readStream.format("delta").load(path)
        columns = {name: F.lit(None).cast(schemas[other]) for other, name in _ROWS.items() if other != side}
        columns[_ROWS[side]] = F.struct(*[F.col(f"`{c}`") for c in stream.columns])
        frames.append(stream.select(F.lit(side).alias(SIDE), *[columns[n].alias(n) for n in _ROWS.values()]))
    return frames[0].unionByName(frames[1])


def run_join_stream(spark: SparkSession, job: JoinJob, reset_state: bool = False,
                    fault_injection: Callable[[str], None] | None = None) -> list[JoinBatchReport]:
    """Stream both inputs (``availableNow``) through the join operator; the reports of the batches that ran.

    Raises:
        pipelines.errors.InputError: an input table is missing or not a Delta table.
        RuntimeError: the streaming query failed (the cause is chained).
    """
    require_inputs(spark, job)
    operator = operator_for(spark, job, STREAM, reset_state, fault_injection)
    reports: list[JoinBatchReport] = []
    failures: list[BaseException] = []

    source_ends: dict = {}    # the end offsets of each batch of this run, read once

    def each_batch(df: DataFrame, batch_id: int) -> None:
        # The progress row records what the batch read of each side (for `winjob replay`); no Spark job.
        read = stream_offsets.sources_batch_offsets(spark, job.checkpoint_path, batch_id, len(SIDES), source_ends)
        operator.store.source_offsets = (stream_offsets.named_offsets_json(
            {side.name: offsets for side, offsets in zip(SIDES, read)}) if read is not None else None)
        try:
            df = df.persist()
            try:
                sides = [df.where(F.col(SIDE) == side.name).select(f"{_ROWS[side.name]}.*") for side in SIDES]
                report = operator.process_batch(*sides, batch_id, processing_time_ms=int(time.time() * 1000))
            finally:
                df.unpersist()
            reports.append(report)
            logs.info(f"job {job.name}: " + describe(report))
        except BaseException as error:   # the query's own error wraps it in Java text; keep the original
            failures.append(error)
            raise

    query = (_both_sides(spark, job).writeStream.foreachBatch(each_batch)
             .option("checkpointLocation", job.checkpoint_path).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    except Exception as error:  # noqa: BLE001 - re-raised with the batch's own failure
        if failures:
            raise failures[0] from error
        raise RuntimeError(f"streaming join job {job.name} failed: {error}") from error
    if not reports:
        logs.info(f"job {job.name}: nothing new in {job.left_path} or {job.right_path}")
    return reports


def backfill_run(start_ms: int, end_ms: int, chunk_ms: int) -> str:
    """The run record of a backfill of ``[start, end)`` in chunks (refused state names it)."""
    from pipelines.drivers import format_epoch_ms
    return (f"backfill of [{format_epoch_ms(start_ms)}, {format_epoch_ms(end_ms)}) in chunks of {chunk_ms} ms")


def run_join_backfill(spark: SparkSession, job: JoinJob, start: dt.datetime | None = None,
                      end: dt.datetime | None = None, chunk: str | None = None, reset_state: bool = False,
                      fault_injection: Callable[[str], None] | None = None) -> list[JoinBatchReport]:
    """Backfill both inputs; a rerun resumes (committed batches are skipped).

    Without ``start``, ``end`` and ``chunk``: both whole tables as ONE batch (id 0) that ends the
    input: after its rows the watermark goes to +infinity, every window fires and the state empties
    in that batch. With them: the rows of either side whose event time is in ``[start, end)``
    (either bound missing: the first or last event time of both inputs) in event-time chunks of
    ``chunk`` (default: the whole range), batch id the chunk's index; only chunks that hold rows
    run, and the last of them ends the input. Chunks in event-time order are "complete": no row of
    a later chunk is late against the watermark an earlier one left. Rows of either side with a
    null or unparseable event time go with the first chunk run (which quarantines them). A
    separate flush (batch id: the number of chunks in the range) runs only when the committed
    watermark is not +infinity at the end (a run that committed its last batch without ending
    the input).

    Raises:
        pipelines.errors.InputError: an input table is missing or not a Delta table.
        ValueError: a bad chunk, an empty range, inputs with no event time, or state another run wrote.
    """
    from pipelines.drivers import ChunkProgress, chunk_range, epoch_ms, range_and_chunks
    require_inputs(spark, job)
    inputs = {side: spark.read.format("delta").load(path) for side, path in job.input_paths.items()}
    batch_pt = int(time.time() * 1000)
    if start is None and end is None and chunk is None:
        operator = operator_for(spark, job, BACKFILL, reset_state, fault_injection)
        reports = [operator.process_batch(inputs["left"], inputs["right"], 0, processing_time_ms=batch_pt,
                                          ends_input=True)]
        logs.info(f"job {job.name}: backfill (both whole inputs, one batch) " + describe(reports[0]))
        return _flush_if_open(operator, job, 1, reports)
    chunk_ms = parse_duration_ms(chunk, "chunk") if chunk is not None else None
    if chunk_ms is not None and chunk_ms <= 0:
        raise ValueError(f"chunk must be a positive duration, got {chunk!r}")
    times = {side: event_time_ms(column, inputs[side].schema[column].dataType)
             for side, column in _event_time_columns(job).items()}
    both = inputs["left"].select(times["left"].alias("ms")).unionByName(
        inputs["right"].select(times["right"].alias("ms")))
    ms = F.col("ms")
    chunks = None
    if start is None or end is None:
        if chunk_ms is not None and start is None and end is None:
            bounds, chunks = range_and_chunks(both, ms, chunk_ms)
        else:
            bounds = both.agg(F.min(ms), F.max(ms)).first()
        if bounds[0] is None:
            raise ValueError(f"job {job.name}: neither input has a row with an event time "
                             f"({job.left_path}, {job.right_path})")
    start_ms = epoch_ms(start) if start is not None else bounds[0]
    end_ms = epoch_ms(end) if end is not None else bounds[1] + 1
    if end_ms <= start_ms:
        raise ValueError(f"backfill range is empty: start {start or start_ms} is not before end {end or end_ms}")
    chunk_ms = chunk_ms or end_ms - start_ms
    if chunks is None:
        chunks = chunk_range(both.where((ms >= start_ms) & (ms < end_ms)), ms, start_ms, chunk_ms)
    operator = operator_for(spark, job, backfill_run(start_ms, end_ms, chunk_ms), reset_state, fault_injection)
    n_chunks = -(-(end_ms - start_ms) // chunk_ms)
    progress, reports = ChunkProgress(len(chunks), n_chunks), []
    for i in chunks:
        lo, hi = start_ms + i * chunk_ms, min(end_ms, start_ms + (i + 1) * chunk_ms)
        rows = {side: frame.where((times[side] >= lo) & (times[side] < hi) | (times[side].isNull() if i == chunks[0]
                                                                             else F.lit(False)))
                for side, frame in inputs.items()}
        report = operator.process_batch(rows["left"], rows["right"], i, processing_time_ms=batch_pt,
                                        ends_input=i == chunks[-1])
        reports.append(report)
        logs.info(f"job {job.name}: " + progress.line(i, lo, hi) + describe(report))
    return _flush_if_open(operator, job, n_chunks, reports)


def _event_time_columns(job: JoinJob) -> dict[str, str]:
    return {side.name: getattr(job.spec, side.name).event_time_column for side in SIDES}


def _flush_if_open(operator: JoinOperator, job: JoinJob, batch_id: int,
                   reports: list[JoinBatchReport]) -> list[JoinBatchReport]:
    """Flush as ``batch_id`` when the last committed batch did not end the input; the reports."""
    if operator.store.last_progress()["watermark_ms"] != MAX_TIMESTAMP_MS:
        reports.append(operator.flush(batch_id))
        logs.info(f"job {job.name}: backfill flush " + describe(reports[-1]))
    return reports


def metrics_of(report: JoinBatchReport) -> dict[str, dict]:
    """A report's per-side accounting as plain dicts (``{"left": {...}, "right": {...}}``)."""
    return {side.name: asdict(m) for side, m in report.metrics.items()}


JOIN_COMMANDS = ("stream", "backfill", "reprocess", "replay", "inspect", "validate")


def inspect(spark: SparkSession, job: JoinJob) -> dict:
    """The last committed batch (watermark, per-side metrics) and the row count of each table of a join job."""
    import json
    operator = JoinOperator.on_delta(spark, job.spec, job.operator_id, job.state_root, results_path=job.results_path,
                                     late_path=job.late_path, quarantine_path=job.quarantine_path)
    last = operator.store.last_progress()
    info = {"job": job.name, "operator_id": job.operator_id, "kind": type(job.spec).__name__,
            "last_batch_id": last["batch_id"] if last else None,
            "watermark_ms": last["watermark_ms"] if last else None,
            "last_batch_metrics": json.loads(last["metrics"]) if last else None, "tables": {}}
    for name, path in (*((f"{side} input", p) for side, p in job.input_paths.items()),
                       ("progress", operator.store.progress_path), ("results", job.results_path),
                       ("late", job.late_path), ("quarantine", job.quarantine_path)):
        if delta_lake_io.table_exists(spark, path):
            info["tables"][name] = {"path": path, "rows": spark.read.format("delta").load(path).count()}
    return info


def run_command(spark_of: Callable[[], SparkSession], job: JoinJob, args) -> int:
    """``winjob stream|backfill|reprocess|replay|inspect|validate`` of a join job (``spark_of``: starts the session
    when needed); ``reprocess`` and ``replay`` print their report as JSON (:mod:`pipelines.join_reprocess`,
    :mod:`pipelines.join_replay`; ``replay --diff`` the differences too), ``inspect --timeline`` writes the
    picture (:mod:`pipelines.visual.join_timeline`)."""
    import json
    from pipelines.errors import ExitCode, JobError
    if args.command not in JOIN_COMMANDS:
        raise JobError(f"{args.job} is a join job: it runs with {', '.join(JOIN_COMMANDS)}")
    if args.command in ("reprocess", "replay") and getattr(args, "window", None):
        try:
            job.with_window(args.window)   # a bad override is told before Spark starts
        except ValueError as error:
            raise JobError(f"{args.job}: --window {args.window}: {error}") from None
    if args.command in ("stream", "backfill", "reprocess", "replay"):
        require_inputs(None, job)   # a missing input table is told before Spark starts
    spark = spark_of()
    if args.command == "stream":
        if getattr(args, "processing_time", None):
            raise JobError("a join job streams availableNow (each run: what has arrived); --processing-time is "
                           "not supported for it")
        run_join_stream(spark, job, reset_state=args.reset_state)
    elif args.command == "backfill":
        run_join_backfill(spark, job, args.start, args.end, args.chunk, reset_state=args.reset_state)
    elif args.command == "reprocess":
        from pipelines.join_reprocess import output_job, reprocess_join_range
        into = output_job(job, args.into) if args.into else None
        report = reprocess_join_range(spark, job, args.start, args.end, into=into, window=args.window,
                                      chunk=args.chunk)
        print(json.dumps(report.__dict__, indent=2))
    elif args.command == "replay":
        from pipelines.join_replay import replay_join_stream
        report = replay_join_stream(spark, job, args.into, args.from_batch, args.to_batch, diff=args.diff,
                                    window=args.window)
        print(json.dumps(report.as_dict(), indent=2))
        if report.diff is not None:
            print(report.diff.summary())
    elif args.command == "validate":
        from pipelines.join_quality import validate_join_job
        results = validate_join_job(spark, job)
        for result in results:
            state = "skipped" if result.success is None else "passed" if result.success else "FAILED"
            print(f"{result.suite}: {state} ({result.evaluated} expectations)"
                  + "".join(f"\n  {f.expectation_type}: {f.detail}" for f in result.failed))
        if any(result.failed_critical for result in results):
            return ExitCode.DATA_QUALITY
    elif getattr(args, "timeline", False):
        from pipelines.visual.join_timeline import load_join_timeline
        from pipelines.visual.timeline import DEFAULT_MAX_KEYS, write_timeline
        timeline = load_join_timeline(spark, job, key=args.key,
                                      from_ms=int(args.from_time.timestamp() * 1000) if args.from_time else None,
                                      to_ms=int(args.to_time.timestamp() * 1000) if args.to_time else None)
        for path in write_timeline(timeline, args.out, DEFAULT_MAX_KEYS if args.max_keys is None else args.max_keys):
            print(path)
    else:
        print(json.dumps(inspect(spark, job), indent=2, default=str))
    return ExitCode.OK
