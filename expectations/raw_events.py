"""Suite ``raw_events``: the input as it landed, before the operator.

Schema (CRITICAL: the operator cannot run without its columns): every column
the spec needs exists, with a usable type. Content (WARNING: the operator
quarantines such rows, so they are made visible, not fatal): non-null key and
event time, event time within a sane range of processing time
(``[now - raw_max_age, now + max_event_time_skew]``), unique event ids when
the source has ids, values within the spec's declared bounds.

The event time is turned into epoch ms in Spark (column ``_event_time_ms``),
so the range check is one numeric comparison whatever the source type.
"""
from __future__ import annotations

import great_expectations as gx

from expectations.base import CRITICAL, SPARK_NUMERIC_TYPES, SPARK_TIME_TYPES, WARNING, Check, Scope, read_delta, suite

SUITE = "raw_events"
EVENT_TIME_MS = "_event_time_ms"
DEFAULT_SKEW_MS = 86_400_000  # when the spec sets no limit, a day ahead is already suspicious


def _utc(ms: int) -> str:
    """Epoch ms as a UTC date and time (how Data Docs show the event-time range)."""
    import datetime as dt
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def expectations(job, columns: list[str], now_ms: int) -> list:
    spec = job.spec
    found = []
    for column in spec.required_columns:
        found.append(gx.expectations.ExpectColumnToExist(column=column, severity=CRITICAL))
    found.append(gx.expectations.ExpectColumnValuesToBeInTypeList(
        column=spec.event_time_column, type_list=SPARK_TIME_TYPES, severity=CRITICAL))
    for column in spec.numeric_columns:
        found.append(gx.expectations.ExpectColumnValuesToBeInTypeList(
            column=column, type_list=SPARK_NUMERIC_TYPES, severity=CRITICAL))
    for column in spec.key_columns:
        found.append(gx.expectations.ExpectColumnValuesToNotBeNull(column=column, severity=WARNING))
    found.append(gx.expectations.ExpectColumnValuesToNotBeNull(column=spec.event_time_column, severity=WARNING))
    skew = spec.input.max_event_time_skew_ms if spec.input.max_event_time_skew_ms is not None else DEFAULT_SKEW_MS
    found.append(gx.expectations.ExpectColumnValuesToBeBetween(
        column=EVENT_TIME_MS, min_value=now_ms - job.raw_max_age_ms, max_value=now_ms + skew, severity=WARNING,
        notes=f"event time in epoch ms, within [processing time - {job.raw_max_age_ms} ms, + {skew} ms]",
        description=(f"{spec.event_time_column} (as epoch ms) is between {_utc(now_ms - job.raw_max_age_ms)} "
                     f"and {_utc(now_ms + skew)} UTC")))
    id_column = job.event_id_column or spec.input.dedup_column
    if id_column and id_column in columns:
        found.append(gx.expectations.ExpectColumnValuesToBeUnique(column=id_column, severity=WARNING))
    for column, lo, hi in spec.input.value_bounds:
        found.append(gx.expectations.ExpectColumnValuesToBeBetween(
            column=column, min_value=lo, max_value=hi, severity=WARNING))
    return found


def checks(spark, job, scope: Scope) -> list[Check]:
    from pyspark.sql import functions as F
    from windowing.spark.input.prepare import event_time_ms
    raw = scope.raw if scope.raw is not None else read_delta(spark, job.source_path)
    if raw is None:
        return [Check(suite(SUITE, []), job.source_path, None, skip_reason="raw table does not exist")]
    if job.spec.event_time_column in raw.columns:
        raw = raw.withColumn(EVENT_TIME_MS, event_time_ms(raw, job.spec.event_time_column))
    else:
        raw = raw.withColumn(EVENT_TIME_MS, F.lit(None).cast("long"))
    return [Check(suite(SUITE, expectations(job, raw.columns, scope.now_ms)), job.source_path, raw)]
