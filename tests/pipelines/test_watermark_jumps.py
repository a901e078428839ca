"""The ``watermark_jumps`` suite: a real Great Expectations validation of a stream's batches.

One row 12 hours ahead of the rest (inside a 1-day skew limit) moves Flink's watermark 12
hours: the batch's validation fails with a CRITICAL expectation naming the row's key, event
time and batch. Ordinary batches pass, and so does the same stream under a watermark
confirmed by two rows (the outlier moves nothing).
"""
from __future__ import annotations

import pytest

from pipelines.job import load_job

pytestmark = pytest.mark.spark

NOW_MS = 1_764_000_000_000           # processing time of the first batch
HOUR_MS = 3_600_000
SCHEMA = "user_id string, event_time bigint, amount bigint"


def _job(tmp_path, watermark: str = "", quality: str = ""):
    path = tmp_path / "job.toml"
    path.write_text(f"""
[job]
name = "jumps"
operator_id = "jumps"
[source]
path = "raw"
key = ["user_id"]
event_time = "event_time"
max_out_of_orderness = "10 seconds"
max_event_time_skew = "1 day"
{watermark}
[window]
type = "tumbling"
size = "1 minute"
allowed_lateness = "30 seconds"
[aggregates]
n = "count()"
[quality]
validate_runs = false
{quality}
""")
    return load_job(path, root=tmp_path)


def _batches():
    """(rows, processing time) of three batches 5 s apart; batch 1 carries the outlier."""
    return [
        ([("u1", NOW_MS - 5_000, 1), ("u2", NOW_MS - 3_000, 1), ("u3", NOW_MS - 1_000, 1)], NOW_MS),
        ([("u1", NOW_MS + 1_000, 1), ("u2", NOW_MS + 2_000, 1), ("u9", NOW_MS + 12 * HOUR_MS, 1),
          ("u3", NOW_MS + 4_000, 1)], NOW_MS + 5_000),
        ([("u1", NOW_MS + 6_000, 1), ("u2", NOW_MS + 8_000, 1)], NOW_MS + 10_000),
    ]


def _run(spark, job):
    """Run every batch; validate each with the watermark suite; returns (reports, validation outcome per batch)."""
    from pipelines.drivers import operator_for
    from pipelines.quality import DataQualityError, validate_job
    operator = operator_for(spark, job)
    reports, outcomes = [], []
    for batch_id, (rows, pt) in enumerate(_batches()):
        df = spark.createDataFrame(rows, SCHEMA)
        reports.append(operator.process_batch(df, batch_id, processing_time_ms=pt))
        try:
            outcomes.append(validate_job(spark, job, batch_id=batch_id, run_kind="stream", raw=df,
                                         suites=["watermark_jumps"], now_ms=pt))
        except DataQualityError as error:
            outcomes.append(error)
    return reports, outcomes


def test_one_row_far_ahead_fails_its_batch_naming_the_row(spark, tmp_path):
    from pipelines.quality import DataQualityError
    reports, outcomes = _run(spark, _job(tmp_path))
    assert reports[1].watermark_after_ms == NOW_MS + 12 * HOUR_MS - 10_000 - 1   # Flink's rule: hijacked
    assert reports[2].metrics.late_rows == 2                                  # the harm: on-time rows late
    assert not isinstance(outcomes[0], Exception) and outcomes[0].success
    error = outcomes[1]
    assert isinstance(error, DataQualityError)
    (failure,) = error.report.critical_failures
    assert failure.suite == "watermark_jumps"
    assert (f"batch 1's largest event time: user_id='u9' event_time_ms={NOW_MS + 12 * HOUR_MS} "
            f"(jump {12 * HOUR_MS - 4_000} ms)") in failure.detail, failure.detail
    # (the jump is measured against the batch's other rows: u3 at NOW + 4 s supports NOW + 4 s - 10 s - 1)
    assert "u9" in str(error)
    # batch 2 moved nothing (its rows are behind the hijacked watermark): it passes
    assert not isinstance(outcomes[2], Exception) and outcomes[2].success
    runs = {(r["batch_id"], r["suite"]): r for r in
            spark.read.format("delta").load(error.report.runs_table_path).collect()}
    assert runs[(1, "watermark_jumps")]["severity"] == "critical"


def test_a_watermark_confirmed_by_two_rows_is_not_moved_and_passes(spark, tmp_path):
    reports, outcomes = _run(spark, _job(tmp_path, watermark="watermark = { confirming_rows = 2 }"))
    assert reports[1].watermark_after_ms == NOW_MS + 4_000 - 10_000 - 1        # u3's: the second largest
    assert all(report.metrics.late_rows == 0 for report in reports)
    assert all(not isinstance(o, Exception) and o.success for o in outcomes), outcomes


def test_the_tolerance_comes_from_the_job(spark, tmp_path):
    """A 13-hour tolerance lets the 12-hour jump pass; whole-table validations skip the suite."""
    from pipelines.quality import validate_job
    job = _job(tmp_path, quality='max_watermark_jump = "13 hours"')
    _, outcomes = _run(spark, job)
    assert all(not isinstance(o, Exception) and o.success for o in outcomes), outcomes
    whole = validate_job(spark, job, run_kind="adhoc", suites=["watermark_jumps"])
    (result,) = whole.suites
    assert result.success is None and "needs one batch's raw rows" in result.skipped_reason
