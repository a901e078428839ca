"""Suites of a join job's tables (CRITICAL): ``join_results`` and ``join_accounting``.

* ``join_results``: the results table has no output row twice in a pane: one row per
  (``join_key``, window, ``pane_index``, ``row_index``) of a window join or co-group; and a
  pane's rows agree on its timing and finality. An interval join's pairs: every pair's time
  is ``max(left_time_ms, right_time_ms)``.
* ``join_accounting``: per committed batch and side, the progress row's accounting adds up
  (``input = accepted + late + dropped_late + unassigned + quarantined``), and the late and
  quarantine tables hold as many rows of that batch and side as it recorded.

The frames are reduced in Spark (and the few progress rows in Python); Great Expectations
validates them with its Spark execution engine. :func:`pipelines.join_quality.validate_join_job`
runs them.
"""
from __future__ import annotations

import json

from expectations.base import CRITICAL, Check, UnexpectedRowsQuery, read_delta, suite

RESULTS_SUITE, ACCOUNTING_SUITE = "join_results", "join_accounting"
SUITES = (RESULTS_SUITE, ACCOUNTING_SUITE)
_SIDE_COUNTS = ("input_rows", "accepted_rows", "late_rows", "dropped_late_rows", "unassigned_rows",
                "quarantined_rows")


class ExpectNoRowTwiceInAPane(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT join_key, window_start_ms, window_end_ms, pane_index, row_index, "
                                  "count(*) AS copies FROM {batch} GROUP BY join_key, window_start_ms, "
                                  "window_end_ms, pane_index, row_index HAVING count(*) > 1")
    description: str = "no output row twice in a pane (per join key, window, pane and row index)"


class ExpectOnePaneInfoPerPane(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT join_key, window_start_ms, window_end_ms, pane_index FROM {batch} "
                                  "GROUP BY join_key, window_start_ms, window_end_ms, pane_index "
                                  "HAVING count(DISTINCT timing) > 1 OR count(DISTINCT is_final) > 1 "
                                  "OR count(DISTINCT batch_id) > 1")
    description: str = "a pane's rows come from one batch and agree on its timing and finality"


class ExpectPairTimeIsTheLaterTime(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT join_key, left_time_ms, right_time_ms, pair_time_ms FROM {batch} "
                                  "WHERE pair_time_ms <> greatest(left_time_ms, right_time_ms)")
    description: str = "an interval join pair's time is the later of its two rows' times"


class ExpectEachSideAccountedFor(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT * FROM {batch} WHERE input_rows <> accepted_rows + late_rows + "
                                  "dropped_late_rows + unassigned_rows + quarantined_rows")
    description: str = "each side's rows of a batch: input = accepted + late + dropped late + unassigned + quarantined"


class ExpectLateTableToMatchProgress(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch} WHERE late_table_rows <> late_rows"
    description: str = "the late table holds as many rows of each batch and side as its progress row recorded"


class ExpectQuarantineTableToMatchProgress(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch} WHERE quarantine_table_rows <> quarantined_rows"
    description: str = "the quarantine table holds as many rows of each batch and side as its progress row recorded"


def results_expectations(job) -> list:
    from windowing.core.joins import IntervalJoinSpec
    if isinstance(job.spec, IntervalJoinSpec):
        return [ExpectPairTimeIsTheLaterTime(severity=CRITICAL)]
    return [ExpectNoRowTwiceInAPane(severity=CRITICAL), ExpectOnePaneInfoPerPane(severity=CRITICAL)]


def accounting_expectations() -> list:
    return [ExpectEachSideAccountedFor(severity=CRITICAL), ExpectLateTableToMatchProgress(severity=CRITICAL),
            ExpectQuarantineTableToMatchProgress(severity=CRITICAL)]


def accounting_frame(spark, progress, late, quarantine):
    """One row per committed batch and side: the progress row's accounting, and that batch's and side's rows in
    the late and quarantine tables."""
    from pyspark.sql import functions as F
    rows = [(r["batch_id"], side, *(m[name] for name in _SIDE_COUNTS))
            for r in progress.select("batch_id", "metrics").collect()
            for side, m in json.loads(r["metrics"]).items()]
    schema = "batch_id long, side string, " + ", ".join(f"{name} long" for name in _SIDE_COUNTS)
    frame = spark.createDataFrame(rows, schema)
    for name, table in (("late_table_rows", late), ("quarantine_table_rows", quarantine)):
        counts = (table.groupBy("batch_id", "side").agg(F.count(F.lit(1)).alias(name)) if table is not None
                  else spark.createDataFrame([], f"batch_id long, side string, {name} long"))
        frame = frame.join(counts, ["batch_id", "side"], "left").fillna(0, [name])
    return frame


def checks(spark, job) -> list[Check]:
    """The join suites' checks of ``job``'s tables (a check whose table is missing is skipped)."""
    from windowing.spark.lake import delta_lake_io
    results = read_delta(spark, job.results_path)
    store_base = f"{delta_lake_io.absolute(job.state_root).rstrip('/')}/{job.operator_id}/progress"
    progress = read_delta(spark, store_base)
    accounting = None if progress is None else accounting_frame(
        spark, progress, read_delta(spark, job.late_path), read_delta(spark, job.quarantine_path))
    return [Check(suite(RESULTS_SUITE, results_expectations(job)), job.results_path, results,
                  None if results is not None else "no results table yet"),
            Check(suite(ACCOUNTING_SUITE, accounting_expectations()), store_base, accounting,
                  None if accounting is not None else "no progress table yet")]
