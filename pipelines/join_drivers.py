"""The drivers of a join job: a stream over both Delta inputs in one query, and a one-pass backfill.

Both run one :class:`~windowing.spark.joins.operator.JoinOperator` on Delta state
(exactly once per batch id: a rerun after a failure skips what was committed):

* :func:`run_join_stream`: one Structured Streaming query reads both inputs
  (``availableNow``: everything that has arrived, then stop); each micro-batch's
  rows of either side go to the operator as that batch (the stream's own batch id);
* :func:`run_join_backfill`: both whole tables as batch 0, then the end-of-input
  flush as batch 1 (every window fires, the state empties).

A stream's batch ids and a backfill's would mean other rows under the same ids,
so one operator's state belongs to one kind of run (recorded in the ``run``
table beside its progress): the other kind is refused unless the state is reset.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import fault_hook, logs
from pipelines.join_job import JoinJob
from windowing.core.joins.sides import SIDES
from windowing.spark.joins.columns import LEFT_ROW, RIGHT_ROW, SIDE
from windowing.spark.joins.operator import JoinBatchReport, JoinOperator
from windowing.spark.lake import delta_lake_io

STREAM, BACKFILL = "stream", "backfill"
"""The kinds of run an operator's state can belong to."""
BACKFILL_ROWS_BATCH, BACKFILL_FLUSH_BATCH = 0, 1
"""A backfill's two batches: both inputs whole, then the end-of-input flush."""
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


def _run_path(job: JoinJob) -> str:
    return f"{delta_lake_io.absolute(job.state_root).rstrip('/')}/{job.operator_id}/run"


def reset(spark: SparkSession, job: JoinJob) -> None:
    """Discard the operator's state, progress, outputs and the stream's checkpoint."""
    for path in (f"{job.state_root.rstrip('/')}/{job.operator_id}", job.results_path, job.late_path,
                 job.quarantine_path, job.checkpoint_path):
        delta_lake_io.delete_folder(spark, path)


def claim_run(spark: SparkSession, job: JoinJob, kind: str) -> None:
    """Record that ``kind`` of run writes the operator's state; refuse state the other kind wrote."""
    path = _run_path(job)
    if delta_lake_io.table_exists(spark, path):
        kinds = {row["kind"] for row in spark.read.format("delta").load(path).collect()}
        if kinds and kinds != {kind}:
            raise ValueError(f"job {job.name}: join operator {job.operator_id!r} holds state written by a "
                             f"{sorted(kinds)[0]}; this run is a {kind}, which would reuse its batch ids for other "
                             f"rows. Use another operator id or pass --reset-state (reset_state=True)")
        if kinds:
            return
    spark.createDataFrame([(kind,)], "kind string").write.format("delta").mode("append").save(path)


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
    """One streaming DataFrame of both inputs: ``SIDE`` and each row as a struct in its side's column."""
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

    def each_batch(df: DataFrame, batch_id: int) -> None:
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


def run_join_backfill(spark: SparkSession, job: JoinJob, reset_state: bool = False,
                      fault_injection: Callable[[str], None] | None = None) -> list[JoinBatchReport]:
    """Both whole inputs as one batch, then the flush; a rerun resumes (committed batches are skipped).

    Raises:
        pipelines.errors.InputError: an input table is missing or not a Delta table.
    """
    require_inputs(spark, job)
    operator = operator_for(spark, job, BACKFILL, reset_state, fault_injection)
    left, right = (spark.read.format("delta").load(path) for path in (job.left_path, job.right_path))
    reports = [operator.process_batch(left, right, BACKFILL_ROWS_BATCH, processing_time_ms=int(time.time() * 1000)),
               operator.flush(BACKFILL_FLUSH_BATCH)]
    for report in reports:
        logs.info(f"job {job.name}: backfill " + describe(report))
    return reports


def metrics_of(report: JoinBatchReport) -> dict[str, dict]:
    """A report's per-side accounting as plain dicts (``{"left": {...}, "right": {...}}``)."""
    return {side.name: asdict(m) for side, m in report.metrics.items()}


JOIN_COMMANDS = ("stream", "backfill", "inspect", "validate")


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
    """``winjob stream|backfill|inspect|validate`` of a join job (``spark_of``: starts the session when needed)."""
    import json
    from pipelines.errors import ExitCode, JobError
    if args.command not in JOIN_COMMANDS:
        raise JobError(f"{args.job} is a join job: it runs with {', '.join(JOIN_COMMANDS)}")
    if args.command in ("stream", "backfill"):
        require_inputs(None, job)   # a missing input table is told before Spark starts
    spark = spark_of()
    if args.command == "stream":
        if getattr(args, "processing_time", None):
            raise JobError("a join job streams availableNow (each run: what has arrived); --processing-time is "
                           "not supported for it")
        run_join_stream(spark, job, reset_state=args.reset_state)
    elif args.command == "backfill":
        if args.start or args.end or args.chunk:
            raise JobError("a join job backfills its whole inputs in one pass; --start, --end and --chunk are "
                           "not supported for it")
        run_join_backfill(spark, job, reset_state=args.reset_state)
    elif args.command == "validate":
        from pipelines.join_quality import validate_join_job
        results = validate_join_job(spark, job)
        for result in results:
            state = "skipped" if result.success is None else "passed" if result.success else "FAILED"
            print(f"{result.suite}: {state} ({result.evaluated} expectations)"
                  + "".join(f"\n  {f.expectation_type}: {f.detail}" for f in result.failed))
        if any(result.failed_critical for result in results):
            return ExitCode.DATA_QUALITY
    else:
        print(json.dumps(inspect(spark, job), indent=2, default=str))
    return ExitCode.OK
