"""Suites ``state_windows`` and ``state_progress``: the operator's Delta state (CRITICAL).

Windows (the state the last committed batch left: the table as of the version it
recorded, with the changes logged since folded in, :mod:`windowing.spark.state.log`): no open
time window whose cleanup time ``window_end_ms - 1 + allowed_lateness`` is at
or below the committed watermark (it should have been cleaned up); fixed
windows have the spec's length; open sessions are at least the gap long and no two of
a key intersect or touch. Progress: batch ids unique, the watermark
never decreases from one batch to the next, and every batch's metrics close:
``input = accepted + late + dropped + unassigned + quarantined``. With a ``batch_id`` only that
batch's progress rows and the one before it (:func:`batch_and_previous`).
"""
from __future__ import annotations

import great_expectations as gx

from expectations.base import CRITICAL, Check, Scope, UnexpectedRowsQuery, read_delta, suite
from windowing.core.assigners import GlobalWindows

WINDOWS_SUITE = "state_windows"
PROGRESS_SUITE = "state_progress"
CLEANUP_DUE = "_cleanup_due"


class ExpectNoWindowPastCleanup(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch} WHERE _cleanup_due"
    description: str = "no open window's cleanup time is at or below the watermark"


class ExpectWatermarkNeverDecreases(UnexpectedRowsQuery):
    unexpected_rows_query: str = (
        "SELECT batch_id, watermark_ms, previous FROM (SELECT batch_id, watermark_ms, "
        "LAG(watermark_ms) OVER (ORDER BY batch_id) AS previous FROM {batch}) WHERE watermark_ms < previous")
    description: str = "the committed watermark never decreases from one batch to the next"


class ExpectBatchRowsAccounted(UnexpectedRowsQuery):
    unexpected_rows_query: str = (
        "SELECT batch_id, metrics FROM (SELECT batch_id, metrics, from_json(metrics, 'input_rows BIGINT, "
        "accepted_rows BIGINT, late_rows BIGINT, dropped_late_rows BIGINT, unassigned_rows BIGINT, "
        "quarantined_rows BIGINT') AS m FROM {batch}) WHERE m.input_rows <> m.accepted_rows + m.late_rows "
        "+ m.dropped_late_rows + m.unassigned_rows + m.quarantined_rows")
    description: str = "each batch: input = accepted + late + dropped + unassigned + quarantined rows"


def with_cleanup_due(windows, watermark_ms: int, allowed_lateness_ms: int):
    """Add ``_cleanup_due``: the window's cleanup time ``end - 1 + L`` is at or below the watermark."""
    from pyspark.sql import functions as F
    # Python ints, so the comparison cannot overflow: end - 1 + L <= wm  <=>  end <= wm + 1 - L.
    due_at_or_below = max(-(2**63), min(2**63 - 1, watermark_ms + 1 - allowed_lateness_ms))
    due = F.col("window_end_ms").isNotNull() & (F.col("window_end_ms") <= F.lit(due_at_or_below).cast("long"))
    return windows.withColumn(CLEANUP_DUE, due)


def window_expectations(job) -> list:
    found = [ExpectNoWindowPastCleanup(severity=CRITICAL)]
    if job.spec.is_merging:
        # Open sessions: at least the gap long (a gap column: at least 1 ms), and no two of a
        # key intersect or touch (they would have merged).
        gap = job.spec.assigner.gap_ms or 1
        keys = ", ".join(f"`{k}`" for k in job.spec.key_columns)
        found.append(UnexpectedRowsQuery(
            unexpected_rows_query=f"SELECT * FROM {{batch}} WHERE window_end_ms - window_start_ms < {gap}",
            description=f"open sessions are at least the gap ({gap} ms) long", severity=CRITICAL))
        found.append(UnexpectedRowsQuery(
            unexpected_rows_query=(
                f"SELECT * FROM (SELECT *, LAG(window_end_ms) OVER (PARTITION BY {keys} ORDER BY window_start_ms) "
                f"AS previous_end FROM {{batch}}) WHERE window_start_ms <= previous_end"),
            description="open sessions of a key neither intersect nor touch (merging left none)", severity=CRITICAL))
    elif getattr(job.spec.assigner, "size_ms", None) is not None:   # not global windows nor a user assigner
        size = job.spec.assigner.size_ms
        found.append(UnexpectedRowsQuery(
            unexpected_rows_query=f"SELECT * FROM {{batch}} WHERE window_end_ms - window_start_ms <> {size}",
            description=f"open windows are {size} ms long", severity=CRITICAL))
    return found


def progress_expectations() -> list:
    return [gx.expectations.ExpectColumnValuesToBeUnique(column="batch_id", severity=CRITICAL),
            gx.expectations.ExpectColumnValuesToNotBeNull(column="watermark_ms", severity=CRITICAL),
            ExpectWatermarkNeverDecreases(severity=CRITICAL),
            ExpectBatchRowsAccounted(severity=CRITICAL)]


def checks(spark, job, scope: Scope) -> list[Check]:
    from windowing.spark.lake import delta_lake_io
    from windowing.spark.state import log as state_log
    base = f"{job.state_root.rstrip('/')}/{job.operator_id}"
    progress = read_delta(spark, f"{base}/progress")
    if progress is None:
        return [Check(suite(WINDOWS_SUITE, window_expectations(job)), f"{base}/windows", None,
                      skip_reason="no committed batch"),
                Check(suite(PROGRESS_SUITE, progress_expectations()), f"{base}/progress", None,
                      skip_reason="no committed batch")]
    # No expectation reads the state changes a batch logged (JSON, some 300 KB for a batch of
    # 50,000 rows): the progress frame a validation caches leaves them out.
    progress = progress.drop(state_log.STATE_CHANGES)
    last = delta_lake_io.newest_rows(progress, "batch_id")
    found = []
    if last and delta_lake_io.table_exists(spark, f"{base}/windows"):
        wm, version = last[0]["watermark_ms"], last[0]["windows_version"]
        due_by, lateness = wm, job.spec.allowed_lateness_ms
        if not job.spec.is_event_time and not isinstance(job.spec.assigner, GlobalWindows):
            # Processing-time windows are cleaned when the processing-time clock (kept in the
            # progress row's time_state, windowing.spark.input.batch_time) reaches max_ts, with no lateness.
            import json
            saved = last[0].asDict().get("time_state")
            due_by, lateness = (json.loads(saved)["clock_ms"] if saved else -(2**63)), 0
        windows = state_log.read_state(spark, f"{base}/windows", f"{base}/progress",
                                       state_log.pin_of(last[0].asDict(), version), job.operator_id)
        found.append(Check(suite(WINDOWS_SUITE, window_expectations(job)), f"{base}/windows",
                           with_cleanup_due(windows, due_by, lateness),
                           notes={"watermark_ms": wm, "version": version}))
    if scope.batch_id is not None:
        progress = batch_and_previous(progress, scope.batch_id)
    found.append(Check(suite(PROGRESS_SUITE, progress_expectations()), f"{base}/progress", progress))
    return found


def batch_and_previous(progress, batch_id: int):
    """The progress rows of ``batch_id`` and of the committed batch before it: what one batch's
    validation checks (its id unique, its watermark not below the one before, its metrics closing).

    Selected by literal batch ids, which the progress table's file statistics skip by: a stream
    batch's check does not grow with the stream's history (the batch before a stream's batch ``b``
    is ``b - 1``; where ids skip, as a backfill's chunks do, an aggregate over the ids finds it).
    """
    from pyspark.sql import functions as F
    # A stream's batch ids follow one another: the batch before is found where file statistics skip to.
    if progress.where(F.col("batch_id") == batch_id - 1).limit(1).collect():
        previous = batch_id - 1
    else:
        previous = progress.where(F.col("batch_id") < batch_id).agg(F.max("batch_id")).first()[0]
    return progress.where(F.col("batch_id").isin([batch_id] if previous is None else [previous, batch_id]))
