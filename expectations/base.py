"""What every suite module builds: a GE suite, the Spark frame it validates, severities.

A suite module (one per kind of table) exposes ``checks(spark, job, scope)``
returning :class:`Check` objects: an ``ExpectationSuite`` defined in code and
the Spark DataFrame (read from the written Delta tables, sometimes reduced in
Spark to the few rows a check needs) that Great Expectations validates with
its Spark execution engine.

Severity is Great Expectations' own ``severity`` field: CRITICAL failures
fail the caller (``pipelines.quality.DataQualityError``), WARNING failures are
reported only. Bad raw input is a warning: the operator quarantines it; wrong
outputs, state or accounting are critical: they mean the product is wrong.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")  # no usage statistics leave the machine

import great_expectations as gx  # noqa: E402
from great_expectations.expectations.metadata_types import FailureSeverity  # noqa: E402

CRITICAL = FailureSeverity.CRITICAL
WARNING = FailureSeverity.WARNING

PASS_OR_FAIL, DETAILS = "BOOLEAN_ONLY", "SUMMARY"
"""GE result formats: whether each expectation holds (every suite's first run,
:func:`pipelines.quality._run_check`), and with the counts, observed values and samples that a
failure reports (a failed suite's second run)."""

_ROWS, _ROW_COUNT = "unexpected_rows_query.table", "unexpected_rows_query.row_count"

SPARK_NUMERIC_TYPES = ["ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType",
                       "DecimalType"]
SPARK_TIME_TYPES = ["TimestampType", "TimestampNTZType", "LongType", "IntegerType", "StringType"]


@dataclass(frozen=True)
class Scope:
    """What a validation run covers.

    Attributes:
        batch_id: only this batch's output rows (and, for window results, the
            earlier panes of the windows it touched); None: whole tables.
        now_ms: the processing time the raw event-time range is judged against.
        run_kind: "stream", "backfill", "reprocess" or "adhoc".
        raw: the raw rows to check (a stream's micro-batch, the rows a backfill
            fed); None: the whole raw table.
        reconcile: run the reconciliation of a complete backfill.
    """

    batch_id: int | None
    now_ms: int
    run_kind: str
    raw: Any = None
    reconcile: bool = False


@dataclass
class Check:
    """One GE validation: a suite, the table it speaks about, and the frame to validate.

    ``frame`` None means the table does not exist yet: the check is recorded
    as skipped with ``skip_reason``.
    """

    suite: gx.ExpectationSuite
    table: str
    frame: Any
    skip_reason: str | None = None
    notes: dict = field(default_factory=dict)


class UnexpectedRowsQuery(gx.expectations.UnexpectedRowsExpectation):
    """Great Expectations' SQL expectation (no row of ``unexpected_rows_query``), asked only whether it
    holds with one Spark query instead of two.

    GE's own computes the query's row count and a sample of its rows (each a Spark job) whatever
    the result format. With :data:`PASS_OR_FAIL` this one reads only the sample: an empty sample
    means no unexpected row. Other result formats get GE's count and sample.
    """

    def get_validation_dependencies(self, execution_engine=None, runtime_configuration=None):
        dependencies = super().get_validation_dependencies(execution_engine=execution_engine,
                                                           runtime_configuration=runtime_configuration)
        if dependencies.result_format.get("result_format") == PASS_OR_FAIL:
            dependencies.remove_metric_configuration(_ROW_COUNT)
        return dependencies

    def _validate(self, metrics: dict, runtime_configuration: dict | None = None, execution_engine=None):
        if _ROW_COUNT not in metrics:
            return {"success": not metrics[_ROWS]}
        return super()._validate(metrics, runtime_configuration=runtime_configuration,
                                 execution_engine=execution_engine)


def suite(name: str, expectations: list) -> gx.ExpectationSuite:
    return gx.ExpectationSuite(name=name, expectations=list(expectations))


def q(column: str) -> str:
    """A column name quoted for Spark SQL."""
    return "`" + column.replace("`", "``") + "`"


def read_delta(spark, path: str):
    """The Delta table at ``path``, or None when there is none yet."""
    from windowing.spark.lake import delta_lake_io
    if not delta_lake_io.table_exists(spark, path):
        return None
    return spark.read.format("delta").load(path)
