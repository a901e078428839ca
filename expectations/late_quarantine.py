"""Suites ``late_rows`` and ``quarantine_rows``: every set-aside row has a known reason (CRITICAL).

Late table: ``reason`` not null and one of the late reasons, ``event_time_ms``,
``watermark_ms`` and ``batch_id`` not null, and the row really was late:
``event_time_ms + allowed_lateness <= watermark_ms`` (the watermark at its
arrival). Quarantine table: ``reason`` not null and one of the quarantine
reasons, ``batch_id`` not null. With a ``batch_id`` only that batch's rows.
"""
from __future__ import annotations

import great_expectations as gx

from expectations.base import CRITICAL, Check, Scope, UnexpectedRowsQuery, read_delta, suite
from windowing.core.records import LATE_REASONS, QUARANTINE_REASONS

LATE_SUITE = "late_rows"
QUARANTINE_SUITE = "quarantine_rows"


class ExpectLateRowsToBeLate(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch} WHERE event_time_ms > watermark_ms"
    description: str = "a late row's event time plus the allowed lateness is at or below the watermark at arrival"


def late_expectations(job) -> list:
    lateness = job.spec.allowed_lateness_ms
    return [
        gx.expectations.ExpectColumnValuesToNotBeNull(column="reason", severity=CRITICAL),
        gx.expectations.ExpectColumnValuesToBeInSet(column="reason", value_set=list(LATE_REASONS), severity=CRITICAL),
        *[gx.expectations.ExpectColumnValuesToNotBeNull(column=c, severity=CRITICAL)
          for c in ("event_time_ms", "watermark_ms", "batch_id")],
        ExpectLateRowsToBeLate(
            unexpected_rows_query=f"SELECT * FROM {{batch}} WHERE event_time_ms + {lateness} > watermark_ms",
            severity=CRITICAL),
    ]


def quarantine_expectations(job) -> list:
    return [
        gx.expectations.ExpectColumnValuesToNotBeNull(column="reason", severity=CRITICAL),
        gx.expectations.ExpectColumnValuesToBeInSet(column="reason", value_set=list(QUARANTINE_REASONS),
                                                    severity=CRITICAL),
        gx.expectations.ExpectColumnValuesToNotBeNull(column="batch_id", severity=CRITICAL),
    ]


def checks(spark, job, scope: Scope) -> list[Check]:
    from pyspark.sql import functions as F
    found = []
    for name, path, build in ((LATE_SUITE, job.late_path, late_expectations),
                              (QUARANTINE_SUITE, job.quarantine_path, quarantine_expectations)):
        frame = read_delta(spark, path)
        if frame is None:
            found.append(Check(suite(name, build(job)), path, None, skip_reason="table does not exist"))
            continue
        if scope.batch_id is not None:
            frame = frame.where(F.col("batch_id") == scope.batch_id)
        found.append(Check(suite(name, build(job)), path, frame))
    return found
