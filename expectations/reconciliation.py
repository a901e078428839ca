"""Suite ``reconciliation``: a complete backfill accounts for every raw row (CRITICAL).

For tumbling event-time windows (or event-time sessions with a static gap: a
complete backfill merges no session that has fired) with a row count (``Count()``) and the
event-time trigger, after a complete backfill (flushed):

* the sum of the windows' final counts equals the number of VALID raw rows,
  where validity is recomputed here from the raw rows and the spec's rules
  (key and event time present and parseable, not beyond the event-time skew,
  values within bounds, first occurrence of an event id), independently of the
  operator's own classification;
* every raw row is in a window, the late table or the quarantine table:
  ``raw = windowed + late + quarantined`` (declared duplicates are
  quarantined rows with reason ``duplicate_event``);
* a complete backfill has no late rows.

The counting runs in Spark; Great Expectations validates the one-row result.
"""
from __future__ import annotations

from expectations.base import CRITICAL, Check, Scope, UnexpectedRowsQuery, read_delta, suite
from windowing.core.aggregates import Count
from windowing.core.assigners import EventTimeSessionWindows, TumblingEventTimeWindows
from windowing.core.triggers import EventTimeTrigger, PurgingTrigger

SUITE = "reconciliation"


class ExpectWindowCountsToEqualValidRawRows(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch} WHERE windowed_rows <> valid_raw_rows"
    description: str = "sum of final tumbling-window counts = valid raw rows (recomputed from the raw table)"


class ExpectEveryRawRowAccounted(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT * FROM {batch} "
                                  "WHERE raw_rows <> windowed_rows + late_rows + quarantined_rows")
    description: str = "raw rows = rows in windows + late rows + quarantined rows (duplicates included)"


class ExpectNoLateRowsInCompleteBackfill(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch} WHERE late_rows <> 0"
    description: str = "a complete backfill (chunks cut by event time) makes no row late"


def applicable(job) -> str | None:
    """None when the reconciliation applies to the job, else why not."""
    spec = job.spec
    static_sessions = isinstance(spec.assigner, EventTimeSessionWindows) and spec.assigner.gap_ms is not None
    if not isinstance(spec.assigner, TumblingEventTimeWindows) and not static_sessions:
        return "reconciliation needs tumbling windows or sessions with a static gap (each row in exactly one window)"
    trigger = spec.trigger.nested if isinstance(spec.trigger, PurgingTrigger) else spec.trigger
    if not isinstance(trigger, EventTimeTrigger):
        return "reconciliation needs the event-time trigger"
    if count_column(job) is None:
        return "reconciliation needs a row count aggregate, e.g. n = 'count()'"
    return None


def count_column(job) -> str | None:
    for name, agg in job.spec.aggregates:
        if isinstance(agg, Count) and agg.column is None:
            return name
    return None


def valid_raw_rows(raw, job, now_ms: int) -> int:
    """Raw rows the spec accepts, recomputed from its rules (not from the operator's output)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from windowing.spark.input.prepare import event_time_ms
    spec = job.spec
    ts = event_time_ms(raw, spec.event_time_column)
    ok = ts.isNotNull()
    for key in spec.key_columns:
        ok = ok & F.col(key).isNotNull()
    if spec.input.max_event_time_skew_ms is not None:
        ok = ok & (ts <= F.lit(now_ms + spec.input.max_event_time_skew_ms).cast("long"))
    for column, lo, hi in spec.input.value_bounds:
        value = F.col(column)
        if column not in spec.input.nullable_bounded:   # a null bounded value is out of bounds
            ok = ok & value.isNotNull()
        if lo is not None:
            ok = ok & (value.isNull() | (value >= F.lit(lo)))
        if hi is not None:
            ok = ok & (value.isNull() | (value <= F.lit(hi)))
    valid = raw.where(ok)
    if spec.input.dedup_column is not None:
        # One per id (null ids are never duplicates); a complete backfill sees every id.
        first = F.row_number().over(Window.partitionBy(spec.input.dedup_column).orderBy(ts))
        valid = valid.withColumn("_n", first).where(F.col(spec.input.dedup_column).isNull() | (F.col("_n") == 1))
    return valid.count()


def windowed_rows(results, job) -> int:
    """Rows in the windows' final results: the last pane (accumulating) or all panes (discarding)."""
    from pyspark.sql import functions as F
    name = count_column(job)
    ident = [*job.spec.key_columns, "window_start_ms", "window_end_ms"]
    if isinstance(job.spec.trigger, PurgingTrigger):
        return results.agg(F.coalesce(F.sum(name), F.lit(0))).first()[0]
    last = results.groupBy(*ident).agg(F.max_by(name, "pane_index").alias(name))
    return last.agg(F.coalesce(F.sum(name), F.lit(0))).first()[0]


def expectations() -> list:
    return [ExpectWindowCountsToEqualValidRawRows(severity=CRITICAL),
            ExpectEveryRawRowAccounted(severity=CRITICAL),
            ExpectNoLateRowsInCompleteBackfill(severity=CRITICAL)]


def checks(spark, job, scope: Scope) -> list[Check]:
    built = suite(SUITE, expectations())
    why_not = applicable(job)
    if why_not:
        return [Check(built, job.results_path, None, skip_reason=why_not)]
    raw = scope.raw if scope.raw is not None else read_delta(spark, job.source_path)
    results, late, quarantine = (read_delta(spark, p) for p in (job.results_path, job.late_path, job.quarantine_path))
    if raw is None or results is None:
        return [Check(built, job.results_path, None, skip_reason="raw or results table does not exist")]
    counts = {
        "raw_rows": raw.count(),
        "valid_raw_rows": valid_raw_rows(raw, job, scope.now_ms),
        "windowed_rows": windowed_rows(results, job),
        "late_rows": late.count() if late is not None else 0,
        "quarantined_rows": quarantine.count() if quarantine is not None else 0,
    }
    frame = spark.createDataFrame([tuple(int(v) for v in counts.values())],
                                  ", ".join(f"{k} bigint" for k in counts))
    return [Check(built, job.results_path, frame, notes=counts)]
