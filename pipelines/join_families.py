"""The two join families as a join job's outputs show them: window joins emit panes, interval joins pairs.

Where a join job's outputs are read back, checked, replayed or replaced by range, the family decides what a
results row is and how a range owns it; it is chosen once from the spec (:func:`family_of`) and asked, so no
caller compares spec types.

* :data:`WINDOW_JOINS` (window joins and co-groups): a results row is a pane's output row (or the pane's one
  row with a null ``row_index`` when it has none), identified by the key, the window, the pane index and the
  row index; a time range ``[start, end)`` owns the panes of the windows with ``start < window_end <= end``,
  fed by the rows of both inputs from ``start - longest window`` on.
* :data:`INTERVAL_JOINS`: a results row is a pair, identified by the key and both rows' event times; a range
  owns the pairs whose time ``max(left, right)`` is in it, fed by the rows from ``start - max(0, upper,
  -lower)`` on (:mod:`pipelines.join_reprocess`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from windowing.core.joins import IntervalJoinOperator, IntervalJoinSpec, WindowJoinOperator, WindowJoinSpec
from windowing.core.joins.functions import ApplyJoin, Projection
from windowing.spark.joins.columns import (
    BATCH_ID, IS_FINAL, JOIN_KEY, LEFT_TIME, PAIR_TIME, PANE_INDEX, RIGHT_TIME, ROW_INDEX, TIMING, WE, WS)

_SIDE_TIMES = {"left": LEFT_TIME, "right": RIGHT_TIME}


@dataclass(frozen=True)
class WindowJoins:
    """Window joins and co-groups: panes of windows (module docstring)."""

    result_noun: str = "result rows"
    """What the results table's rows are called in summaries."""
    identity: tuple[str, ...] = (JOIN_KEY, WS, WE, PANE_INDEX, ROW_INDEX)
    """The results columns that identify a row when two runs' tables are compared."""
    range_words: str = "windows ending in"
    """How a reprocess names what a range owns (before the range)."""
    window_columns: tuple[str, str] | None = (WS, WE)
    """The results table's window bounds (None: the family has no windows)."""

    def reference(self, spec: WindowJoinSpec) -> WindowJoinOperator:
        """The pure-Python reference model of ``spec``."""
        return WindowJoinOperator(spec)

    def reference_results(self, spec: WindowJoinSpec, batch_id: int, result) -> Iterator[tuple]:
        """The model's results of one batch, each as :meth:`table_result` reads a results row."""
        columns = spec.output_columns
        for p in result.panes:
            head = (batch_id, p.key, p.window_start_ms, p.window_end_ms, p.pane_index, p.timing, p.is_final)
            rows = [tuple(r[c] for c in columns) for r in p.rows or ()]
            yield from (head + (row,) for row in rows or [None])

    def table_result(self, spec: WindowJoinSpec, row) -> tuple:
        """A results table row: (batch, key, window start, window end, pane, timing, final, output row or None)."""
        output = None if row[ROW_INDEX] is None else tuple(row[c] for c in spec.output_columns)
        return (row[BATCH_ID], tuple(row[JOIN_KEY]), row[WS], row[WE], row[PANE_INDEX], row[TIMING], row[IS_FINAL],
                output)

    def result_in_range(self, result: tuple, start_ms: int, end_ms: int) -> bool:
        """Whether the range ``[start, end)`` owns a result (:meth:`table_result`'s shape): its window ends in it."""
        return start_ms < result[3] <= end_ms

    def results_range_sql(self, start_ms: int, end_ms: int) -> str:
        """The range's results as a ``replaceWhere`` on the results table (a window operator's)."""
        from pipelines.reprocess import window_range_sql
        return window_range_sql(start_ms, end_ms)

    def reach_ms(self, spec: WindowJoinSpec, job_name: str) -> int:
        """How long before a range's start the rows feeding its results may lie: the longest window.

        Raises:
            ValueError: session, global or count windows (no fixed size), naming the assigner.
        """
        from windowing.spark.plans.window_geometry import longest_window_ms
        size = longest_window_ms(spec.window)
        if size is None:
            raise ValueError(f"join job {job_name}: {type(spec.window.assigner).__name__} windows have no time "
                             f"range to reprocess; only windows of a bounded size (tumbling, sliding, cumulating) "
                             f"or an interval join can be reprocessed by range")
        return size

    def describe(self, spec: WindowJoinSpec) -> str:
        """The join in one line."""
        return f"{type(spec.function).__name__} in {spec.window.assigner!r}"

    def projection(self, spec: WindowJoinSpec) -> Projection | None:
        """The spec's projection; None when a join or co-group function makes the output."""
        output = getattr(spec.function, "output", None)
        return output if isinstance(output, Projection) else None

    def untraceable(self, spec: WindowJoinSpec) -> str | None:
        """Why the results cannot be traced to input rows (a user function makes them); None when they can."""
        if self.projection(spec) is not None:
            return None
        output = getattr(spec.function, "output", spec.function)
        what = "a join function" if isinstance(output, ApplyJoin) else "a co-group function"
        return (f"not checked: the output is made by {what} ({type(output.function).__name__}), whose columns "
                f"cannot be traced to input rows")

    def side_time_column(self, side: str) -> str | None:
        """The results column holding ``side``'s row's event time (None: a pane keeps none)."""
        return None

    def names_side_rows(self, columns: tuple[str, ...]) -> bool:
        """Whether a results row names rows of a side whose projected output columns are ``columns``."""
        return bool(columns)   # a window join that emits nothing of a side (semi, anti) names none of its rows

    def results_expectations(self) -> list:
        """The results suite's expectations for this family."""
        from expectations.join_results import ExpectNoRowTwiceInAPane, ExpectOnePaneInfoPerPane
        from expectations.base import CRITICAL
        return [ExpectNoRowTwiceInAPane(severity=CRITICAL), ExpectOnePaneInfoPerPane(severity=CRITICAL)]


@dataclass(frozen=True)
class IntervalJoins:
    """Interval joins: pairs of rows whose event times are within the bounds (module docstring)."""

    result_noun: str = "pairs"
    identity: tuple[str, ...] = (JOIN_KEY, LEFT_TIME, RIGHT_TIME, PAIR_TIME)
    range_words: str = "pairs at"
    window_columns: tuple[str, str] | None = None

    def reference(self, spec: IntervalJoinSpec) -> IntervalJoinOperator:
        return IntervalJoinOperator(spec)

    def reference_results(self, spec: IntervalJoinSpec, batch_id: int, result) -> Iterator[tuple]:
        columns = spec.output_columns
        for p in result.pairs:
            yield batch_id, p.key, p.left_timestamp_ms, p.right_timestamp_ms, tuple(p.values[c] for c in columns)

    def table_result(self, spec: IntervalJoinSpec, row) -> tuple:
        """A results table row: (batch, key, left time, right time, output row)."""
        return (row[BATCH_ID], tuple(row[JOIN_KEY]), row[LEFT_TIME], row[RIGHT_TIME],
                tuple(row[c] for c in spec.output_columns))

    def result_in_range(self, result: tuple, start_ms: int, end_ms: int) -> bool:
        """Whether the range ``[start, end)`` owns a pair: its time, the later row's, is in it."""
        return start_ms <= max(result[2], result[3]) < end_ms

    def results_range_sql(self, start_ms: int, end_ms: int) -> str:
        return f"{PAIR_TIME} >= {start_ms} AND {PAIR_TIME} < {end_ms}"

    def reach_ms(self, spec: IntervalJoinSpec, job_name: str) -> int:
        """``max(0, upper, -lower)`` (inclusive bounds): how far the earlier row of a pair lies before the later."""
        return max(0, spec.upper_bound_ms, -spec.lower_bound_ms)

    def describe(self, spec: IntervalJoinSpec) -> str:
        return f"interval join, right time - left time in [{spec.lower_bound_ms}, {spec.upper_bound_ms}] ms"

    def projection(self, spec: IntervalJoinSpec) -> Projection | None:
        return spec.output if isinstance(spec.output, Projection) else None

    def untraceable(self, spec: IntervalJoinSpec) -> str | None:
        return None   # every pair keeps its key and both event times

    def side_time_column(self, side: str) -> str | None:
        return _SIDE_TIMES[side]

    def names_side_rows(self, columns: tuple[str, ...]) -> bool:
        return True   # every pair names one row of each side

    def results_expectations(self) -> list:
        from expectations.join_results import ExpectPairTimeIsTheLaterTime
        from expectations.base import CRITICAL
        return [ExpectPairTimeIsTheLaterTime(severity=CRITICAL)]


WINDOW_JOINS = WindowJoins()
INTERVAL_JOINS = IntervalJoins()
JoinFamily = WindowJoins | IntervalJoins
_FAMILIES: dict[type, Any] = {WindowJoinSpec: WINDOW_JOINS, IntervalJoinSpec: INTERVAL_JOINS}


def family_of(spec) -> JoinFamily:
    """The family of a join spec.

    Raises:
        ValueError: ``spec`` is not a join spec, naming its type.
    """
    try:
        return _FAMILIES[type(spec)]
    except KeyError:
        raise ValueError(f"not a join spec: {type(spec).__name__} (a WindowJoinSpec or an IntervalJoinSpec "
                         f"is)") from None
