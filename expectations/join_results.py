"""Suites of a join job's tables (CRITICAL): ``join_results`` and ``join_accounting``.

* ``join_results``: the results table has no output row twice in a pane: one row per
  (``join_key``, window, ``pane_index``, ``row_index``) of a window join or co-group; and a
  pane's rows agree on its timing and finality. An interval join's pairs: every pair's time
  is ``max(left_time_ms, right_time_ms)``.
* ``join_accounting``: per committed batch and side, the progress row's accounting adds up
  (``input = accepted + late + dropped_late + unassigned + quarantined``), and the late and
  quarantine tables hold as many rows of that batch and side as it recorded.
* ``join_result_sides``: every side row a results row names exists in that side's input table
  (key, event time, projected columns: :mod:`expectations.join_sides`); skipped, saying why,
  when a user function makes the output.
* ``join_late_sides``: every late row (side, key, event time) exists in its side's input table.

The frames are reduced in Spark (and the few progress rows in Python); Great Expectations
validates them with its Spark execution engine. :func:`pipelines.join_quality.validate_join_job`
runs them.
"""
from __future__ import annotations

import json

from expectations.base import CRITICAL, Check, UnexpectedRowsQuery, read_delta, suite

RESULTS_SUITE, ACCOUNTING_SUITE = "join_results", "join_accounting"
RESULT_SIDES_SUITE, LATE_SIDES_SUITE = "join_result_sides", "join_late_sides"
SUITES = (RESULTS_SUITE, ACCOUNTING_SUITE, RESULT_SIDES_SUITE, LATE_SIDES_SUITE)
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


class ExpectResultRowsInTheirInputs(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch}"   # the frame holds only the rows not found
    description: str = ("every side row a results row names (key, event time, projected columns) is a row of "
                        "that side's input table")


class ExpectLateRowsInTheirInputs(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT * FROM {batch}"   # the frame holds only the rows not found
    description: str = "every late row (side, key, event time) is a row of its side's input table"


def results_expectations(job) -> list:
    """The results suite's expectations of the job's join family (:mod:`pipelines.join_families`)."""
    return job.family.results_expectations()


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


def side_checks(spark, job, results, late) -> list[Check]:
    """The ``join_result_sides`` and ``join_late_sides`` checks: frames of the output rows not found in their
    side's input (skipped: a missing table, or results a user function made)."""
    from expectations import join_sides
    inputs = {side: read_delta(spark, path) for side, path in job.input_paths.items()}
    missing_input = next((f"no {side} input table {job.input_paths[side]}" for side, frame in inputs.items()
                          if frame is None), None)

    def check(name, expectation, table, path, not_found, no_table):
        reason = missing_input or (no_table if table is None else None)
        frame = None if reason else not_found(spark, job.spec, table, inputs)
        reason = reason or (join_sides.untraceable(job.spec) if frame is None else None)
        return Check(suite(name, [expectation(severity=CRITICAL)]), path, frame, reason)

    return [check(RESULT_SIDES_SUITE, ExpectResultRowsInTheirInputs, results, job.results_path,
                  join_sides.results_not_found, "no results table yet"),
            check(LATE_SIDES_SUITE, ExpectLateRowsInTheirInputs, late, job.late_path, join_sides.late_not_found,
                  "no late table yet")]


def checks(spark, job) -> list[Check]:
    """The join suites' checks of ``job``'s tables (a check whose table is missing is skipped)."""
    from windowing.spark.lake import delta_lake_io
    results = read_delta(spark, job.results_path)
    late = read_delta(spark, job.late_path)
    store_base = f"{delta_lake_io.absolute(job.state_root).rstrip('/')}/{job.operator_id}/progress"
    progress = read_delta(spark, store_base)
    accounting = None if progress is None else accounting_frame(
        spark, progress, late, read_delta(spark, job.quarantine_path))
    return [Check(suite(RESULTS_SUITE, results_expectations(job)), job.results_path, results,
                  None if results is not None else "no results table yet"),
            Check(suite(ACCOUNTING_SUITE, accounting_expectations()), store_base, accounting,
                  None if accounting is not None else "no progress table yet"),
            *side_checks(spark, job, results, late)]
