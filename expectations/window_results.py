"""Suite ``window_results``: the panes the operator emitted (all CRITICAL).

* fixed time windows: ``window_end_ms - window_start_ms`` equals the spec's
  size (global/count windows: both bounds null);
* no two rows share (key, window, pane_index);
* pane indexes of a window are 0, 1, ... n-1 (consecutive, none missing; a
  merged session's first pane continues from its parts' indexes);
* sessions: at least as long as the gap;
* at most one ON_TIME pane per time window (count firings of global windows
  are all ON_TIME, so not there);
* ``timing`` is EARLY / ON_TIME / LATE; key, watermark and batch id not null;
* row counts (``Count()``) at least 1; aggregates within declared bounds
  (``[quality] result_bounds`` of the job, and Min/Max/Avg of a column with
  declared input bounds inherit them).

After a streaming batch (``batch_id`` given) the frame is every pane of the
windows that batch emitted for, so pane sequences are checked whole.
"""
from __future__ import annotations

import great_expectations as gx

from expectations.base import CRITICAL, Check, Scope, UnexpectedRowsQuery, q, read_delta, suite
from windowing.core.aggregates import Avg, Count, Max, Min
from windowing.core.assigners import GlobalWindows
from windowing.core.records import TIMINGS

SUITE = "window_results"
WS, WE = "window_start_ms", "window_end_ms"


class ExpectWindowLengthToMatchSpec(UnexpectedRowsQuery):
    """Every fixed time window is exactly as long as the spec says."""

    unexpected_rows_query: str = "SELECT * FROM {batch} WHERE window_end_ms - window_start_ms <> 0"
    description: str = "window_end_ms - window_start_ms equals the window size of the spec"


class ExpectGlobalWindowsToHaveNoBounds(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT * FROM {batch} WHERE window_start_ms IS NOT NULL "
                                  "OR window_end_ms IS NOT NULL")
    description: str = "global (count) windows have null window bounds"


class ExpectUniquePanePerWindow(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT 1 FROM {batch} WHERE FALSE"
    description: str = "no two rows share (key, window, pane_index)"


class ExpectConsecutivePaneIndexes(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT 1 FROM {batch} WHERE FALSE"
    description: str = "the pane indexes of each window are 0, 1, ..., n-1"


class ExpectAtMostOneOnTimePane(UnexpectedRowsQuery):
    unexpected_rows_query: str = "SELECT 1 FROM {batch} WHERE FALSE"
    description: str = "a time window has at most one ON_TIME pane"


def result_bounds(job) -> dict[str, tuple[float | None, float | None]]:
    """Declared bounds of output columns: the job's, then those inherited from input bounds."""
    bounds = {}
    inputs = job.spec.input.bounds_by_column
    for name, agg in job.spec.aggregates:
        if isinstance(agg, (Min, Max, Avg)) and agg.column in inputs:
            bounds[name] = inputs[agg.column]
    for name, lo, hi in job.result_bounds:
        bounds[name] = (lo, hi)
    return bounds


def expectations(job) -> list:
    spec = job.spec
    keys = ", ".join(q(k) for k in spec.key_columns)
    window = f"{keys}, {WS}, {WE}"
    found = []
    if isinstance(spec.assigner, GlobalWindows):
        found.append(ExpectGlobalWindowsToHaveNoBounds(severity=CRITICAL))
    elif spec.is_merging:
        # A session is at least its gap long (the static gap; a gap column: at least 1 ms).
        gap = spec.assigner.gap_ms or 1
        found.append(ExpectWindowLengthToMatchSpec(
            unexpected_rows_query=f"SELECT * FROM {{batch}} WHERE {WS} IS NULL OR {WE} IS NULL "
                                  f"OR {WE} - {WS} < {gap}",
            description=f"a session is at least its gap ({gap} ms) long", severity=CRITICAL))
    else:
        size = getattr(spec.assigner, "size_ms", None)
        if size is not None:   # a user assigner's windows have no one size
            found.append(ExpectWindowLengthToMatchSpec(
                unexpected_rows_query=f"SELECT * FROM {{batch}} WHERE {WS} IS NULL OR {WE} IS NULL "
                                      f"OR {WE} - {WS} <> {size}",
                description=f"window_end_ms - window_start_ms equals the window size {size} ms",
                severity=CRITICAL))
        found.append(ExpectAtMostOneOnTimePane(
            unexpected_rows_query=f"SELECT {window}, count(*) AS on_time_panes FROM {{batch}} "
                                  f"WHERE timing = 'ON_TIME' GROUP BY {window} HAVING count(*) > 1",
            severity=CRITICAL))
    found.append(ExpectUniquePanePerWindow(
        unexpected_rows_query=f"SELECT {window}, pane_index, count(*) AS copies FROM {{batch}} "
                              f"GROUP BY {window}, pane_index HAVING count(*) > 1", severity=CRITICAL))
    # A merged session's panes continue from the highest index of the sessions it merged,
    # so its first pane may have an index above 0; after that they are consecutive.
    first = "min(pane_index)" if spec.is_merging else "0"
    found.append(ExpectConsecutivePaneIndexes(
        unexpected_rows_query=f"SELECT {window}, count(DISTINCT pane_index) AS panes, min(pane_index) AS first, "
                              f"max(pane_index) AS last FROM {{batch}} GROUP BY {window} "
                              f"HAVING min(pane_index) <> {first} "
                              f"OR max(pane_index) - {first} <> count(DISTINCT pane_index) - 1",
        severity=CRITICAL))
    found.append(gx.expectations.ExpectColumnValuesToBeInSet(column="timing", value_set=list(TIMINGS),
                                                             severity=CRITICAL))
    for column in (*spec.key_columns, "timing", "pane_index", "is_final", "watermark_ms", "batch_id"):
        found.append(gx.expectations.ExpectColumnValuesToNotBeNull(column=column, severity=CRITICAL))
    for name, agg in spec.aggregates:
        if isinstance(agg, Count) and agg.column is None:
            found.append(gx.expectations.ExpectColumnValuesToBeBetween(column=name, min_value=1, severity=CRITICAL))
    for name, (lo, hi) in result_bounds(job).items():
        found.append(gx.expectations.ExpectColumnValuesToBeBetween(column=name, min_value=lo, max_value=hi,
                                                                   severity=CRITICAL))
    return found


def panes_of_touched_windows(results, keys: list[str], batch_id: int):
    """Every pane of the windows that got a pane in ``batch_id`` (null-safe on window bounds).

    A pane of one of those windows starts no earlier than the earliest of them and ends no later
    than the latest: with those bounds (one small aggregate over the batch's panes) the results
    table's file statistics on the window bounds skip the files of older windows, so a stream
    batch's check does not read the whole history of the table. Windows without bounds (global
    and count windows, whose panes span the stream's whole life) read every file.
    """
    from pyspark.sql import functions as F
    ident = [*keys, WS, WE]
    touched = results.where(F.col("batch_id") == batch_id).select(*ident).distinct()
    unbounded = (F.col(WS).isNull() | F.col(WE).isNull()).cast("int")
    first_start, last_end, any_unbounded = touched.agg(F.min(WS), F.max(WE), F.max(unbounded)).first()
    candidates = results
    if first_start is not None and not any_unbounded:
        candidates = results.where((F.col(WS) >= F.lit(first_start)) & (F.col(WE) <= F.lit(last_end)))
    cond = [F.col(f"a.{c}").eqNullSafe(F.col(f"t.{c}")) for c in ident]
    return candidates.alias("a").join(touched.alias("t"), cond, "left_semi")


def checks(spark, job, scope: Scope) -> list[Check]:
    results = read_delta(spark, job.results_path)
    built = suite(SUITE, expectations(job))
    if results is None:
        return [Check(built, job.results_path, None, skip_reason="results table does not exist")]
    if scope.batch_id is not None:
        results = panes_of_touched_windows(results, list(job.spec.key_columns), scope.batch_id)
    return [Check(built, job.results_path, results)]
