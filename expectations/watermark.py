"""Suite ``watermark_jumps``: no batch moved the watermark far ahead on the strength of one row (CRITICAL).

Checked per committed batch ``b`` of a stream, from the progress table (the
watermarks ``wm_prev`` before and ``wm_b`` after the batch, and the batch's
processing time: ``processing_time_ms``, else ``committed_at``) and the
batch's raw rows (``Scope.raw``). Let ``t1`` be the largest event time of the
batch's rows (rows without a key or an event time, and rows beyond the spec's
event-time skew, are left out: the operator quarantines them) and ``t2`` the
largest of the OTHER rows (``t1`` again when two rows share it). What the
rest of the batch supports is

    ``supported = max(wm_prev + (pt_b - pt_prev), t2 - delay - 1)``

(the earlier watermark may move with processing time, as a quiet stream's
would; the other rows may move it as far as Flink's rule takes them), and the
jump is ``wm_b - supported``. A jump above the tolerance (``[quality]
max_watermark_jump``; default ``max_out_of_orderness + allowed_lateness``:
beyond it, rows as recent as the rest of the batch are late for their
windows) is an error naming the row(s) at ``t1``: the expectation's
description carries their key columns, event time, batch and the jump (the
validated frame has the watermarks too).

A first batch whose only row has an event time cannot be judged (no other
row, no earlier watermark), nor a flush (watermark +infinity). The check
needs one batch's raw rows: a validation of whole tables (``batch_id`` None or
no ``raw``) skips it, and so does a job with explicit watermarks (no row
moves its watermark).
"""
from __future__ import annotations

from expectations.base import CRITICAL, Check, Scope, UnexpectedRowsQuery, read_delta, suite
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import ExplicitWatermarks

SUITE = "watermark_jumps"
JUMP_MS = "watermark_jump_ms"


def tolerance_ms(job) -> int:
    """The largest watermark jump one row may cause: the job's ``[quality] max_watermark_jump``, else
    the spec's ``max_out_of_orderness + allowed_lateness``."""
    if job.max_watermark_jump_ms is not None:
        return job.max_watermark_jump_ms
    return job.spec.max_out_of_orderness_ms + job.spec.allowed_lateness_ms


def expectations(job, largest: str = "") -> list:
    """The suite's one expectation; ``largest`` names the batch's largest-event-time row(s) and the
    jump they caused (what a failure reports)."""
    limit = tolerance_ms(job)
    return [UnexpectedRowsQuery(
        unexpected_rows_query=f"SELECT * FROM {{batch}} WHERE {JUMP_MS} > {limit}",
        description=(f"no single row moves the watermark more than {limit} ms beyond what the rest of its "
                     f"batch and the processing time support" + (f"; {largest}" if largest else "")),
        severity=CRITICAL)]


def describe_rows(job, rows) -> str:
    """``batch b's largest event time: user_id='u9' event_time_ms=... (jump ... ms)``, for up to 3 rows."""
    if not rows:
        return ""
    keys = job.spec.key_columns
    named = ", ".join(" ".join(f"{k}={row[k]!r}" for k in keys) + f" event_time_ms={row['event_time_ms']}"
                      for row in rows)
    return f"batch {rows[0]['batch_id']}'s largest event time: {named} (jump {rows[0][JUMP_MS]} ms)"


def _clamp(value: int) -> int:
    return max(MIN_TIMESTAMP_MS, min(MAX_TIMESTAMP_MS, value))


def _processing_time_ms(progress_row) -> int | None:
    if progress_row["processing_time_ms"] is not None:
        return progress_row["processing_time_ms"]
    committed = progress_row["committed_at"]
    return None if committed is None else int(committed.timestamp() * 1000)


def jump_rows(spark, job, batch_id: int, raw):
    """The row(s) at the batch's largest event time with the jump they caused, or None when the
    batch is not committed.

    Columns (what a failure names first, first): the key columns, ``event_time_ms``, ``batch_id``,
    :data:`JUMP_MS`, ``watermark_before_ms``, ``watermark_after_ms``, ``supported_watermark_ms``.
    """
    from pyspark.sql import functions as F
    from windowing.spark.input.prepare import event_time_ms
    spec = job.spec
    base = f"{job.state_root.rstrip('/')}/{job.operator_id}"
    progress = read_delta(spark, f"{base}/progress")
    if progress is None:
        return None
    rows = (progress.where(F.col("batch_id") <= batch_id).orderBy(F.col("batch_id").desc()).limit(2)
            .select("batch_id", "watermark_ms", "processing_time_ms", "committed_at").collect())
    if not rows or rows[0]["batch_id"] != batch_id:
        return None
    current, previous = rows[0], (rows[1] if len(rows) > 1 else None)
    wm_after = current["watermark_ms"]
    wm_before = previous["watermark_ms"] if previous is not None else MIN_TIMESTAMP_MS

    ts = event_time_ms(raw, spec.event_time_column)
    counted = raw.withColumn("event_time_ms", ts).where(F.col("event_time_ms").isNotNull())
    for key in spec.key_columns:
        counted = counted.where(F.col(key).isNotNull())
    pt_after = _processing_time_ms(current)
    if spec.input.max_event_time_skew_ms is not None and pt_after is not None:
        counted = counted.where(F.col("event_time_ms") <= F.lit(_clamp(pt_after + spec.input.max_event_time_skew_ms)))
    top = [r[0] for r in counted.select("event_time_ms").orderBy(F.col("event_time_ms").desc()).limit(2).collect()]

    supported = wm_after     # nothing to judge: no jump
    if top and wm_after < MAX_TIMESTAMP_MS:
        pt_before = _processing_time_ms(previous) if previous is not None else None
        elapsed = max(0, pt_after - pt_before) if pt_after is not None and pt_before is not None else 0
        candidates = []
        if wm_before > MIN_TIMESTAMP_MS:
            candidates.append(_clamp(wm_before + elapsed))
        if len(top) > 1:
            candidates.append(_clamp(top[1] - spec.max_out_of_orderness_ms - 1))
        if candidates:
            supported = max(candidates)
    jump = max(0, wm_after - supported)
    largest = top[0] if top else None
    return (counted.where(F.col("event_time_ms") == F.lit(largest).cast("long"))
            .select(*[F.col(k) for k in spec.key_columns], "event_time_ms",
                    F.lit(batch_id).cast("long").alias("batch_id"),
                    F.lit(jump).cast("long").alias(JUMP_MS),
                    F.lit(wm_before).cast("long").alias("watermark_before_ms"),
                    F.lit(wm_after).cast("long").alias("watermark_after_ms"),
                    F.lit(supported).cast("long").alias("supported_watermark_ms")))


def checks(spark, job, scope: Scope) -> list[Check]:
    table = f"{job.state_root.rstrip('/')}/{job.operator_id}/progress"
    empty = suite(SUITE, expectations(job))
    if scope.batch_id is None or scope.raw is None:
        return [Check(empty, table, None, skip_reason="needs one batch's raw rows (a stream's batch validation)")]
    if job.spec.event_time_column is None:
        return [Check(empty, table, None, skip_reason="processing-time job: no event-time watermark")]
    if isinstance(job.spec.input.watermark_strategy, ExplicitWatermarks):
        return [Check(empty, table, None, skip_reason="explicit watermarks: rows do not move the watermark")]
    frame = jump_rows(spark, job, scope.batch_id, scope.raw)
    if frame is None:
        return [Check(empty, table, None, skip_reason=f"batch {scope.batch_id} is not committed")]
    largest = describe_rows(job, frame.limit(3).collect())
    return [Check(suite(SUITE, expectations(job, largest)), table, frame)]
