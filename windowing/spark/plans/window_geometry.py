"""Each built-in window family's assignment geometry on Spark: which windows a row belongs to.

One :class:`WindowGeometry` per assigner class, chosen once per spec (:func:`geometry_of`); the
input preparation and the plans ask it instead of testing the assigner's type:

* :class:`TumblingGeometry`: one window per element, as plain ``window_start_ms`` /
  ``window_end_ms`` columns (event or processing time);
* :class:`SlidingGeometry`: several windows per element: the element carries its slice
  (``__slice_ms``, :mod:`windowing.spark.plans.slicing`) and the plans build windows from slice partials;
* :class:`CumulateGeometry`: the windows of a cycle that grow by a step (Flink SQL's ``CUMULATE``):
  slices of one step, each slice partial copied into the windows of its cycle that end after it;
* :class:`GlobalGeometry`: one window per key with null bounds, ``max_ts`` Long.MAX: it never
  ends, is never late and never cleaned up;
* :class:`SessionGeometry`: every element opens ``[ts, ts + gap)`` (a static gap, a gap column or a
  gap function's column); whether it is late depends on what it merges with, so the session plans
  decide.

A new time window family on the DataFrame path is one class here (its windows of a row, its live
windows, and for a family that puts an element in several windows its slices and how slice partials
become window partials), its reference form in ``windowing.core.assigners`` and its window family in
``windowing.spark.plans.registry``.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from windowing.core.assigners import (
    CumulativeEventTimeWindows, EventTimeSessionWindows, GlobalWindows, ProcessingTimeSessionWindows,
    SlidingEventTimeWindows, SlidingProcessingTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows)
from windowing.core.time import MAX_TIMESTAMP_MS, floor_mod
from windowing.spark.plans import slicing
from windowing.spark.plans.aggregates import CompiledAggregate
from windowing.spark.input.columns import GAP, SLICE, TS, WE, WS, long_lit
from windowing.spark.input.prepare import has_gap_function


class WindowGeometry:
    """How a window family assigns a row's windows, as column expressions.

    The default is one window per element (:meth:`window`), in plain window columns.
    """

    slices = False
    """An element may be in several windows: it carries its slice instead of window columns, and a
    plan that needs one row per window explodes :meth:`windows`."""
    never_ends = False
    """One window per key with null bounds whose ``max_ts`` is Long.MAX: never late, never cleaned up."""

    def __init__(self, spec):
        self.spec, self.assigner = spec, spec.assigner

    @property
    def longest_window_ms(self) -> int | None:
        """The size of the family's longest window: an element's windows end at most this long after
        it (state reads, state partition width, reprocessing ranges). None: no fixed size (global
        windows, sessions)."""
        return None

    def window(self, ts: Column) -> tuple[Column, Column]:
        """(start, end) of the one window of an element at ``ts``."""
        raise ValueError(f"{self.assigner!r} may assign several windows; use windows()")

    def window_end(self, start: Column | None) -> Column:
        """The end of the window starting at ``start``: the expression :meth:`window` uses, so a plan
        may group by the start alone and derive the end afterwards (one grouping key fewer)."""
        raise ValueError(f"{self.assigner!r} has no single window end")

    def windows(self, ts: Column) -> Column:
        """The element's windows: an array of (window_start_ms, window_end_ms) structs."""
        start, end = self.window(ts)
        return F.array(F.struct(start.alias(WS), end.alias(WE)))

    def assign(self, out: DataFrame, live_end_above: int | None,
               element_late: Column) -> tuple[DataFrame, Column, Column]:
        """Give the classified rows their window columns.

        Args:
            out: the rows with their time in ``__ts_ms``.
            live_end_above: a window is live iff its end is above this (None: every window is).
            element_late: the element is late by its own time (``ts + L <= wm``).

        Returns:
            ``(rows, in a live window, late)``: the rows with their window (or slice) columns, whether
            each is in a live window, and whether one that is in none is late (else unassigned).
        """
        # One window per element: plain columns. Higher-order array functions
        # are interpreted, not code-generated, and cost more than the whole aggregation.
        start, end = self.window(F.col(TS))
        out = out.withColumns({WS: start, WE: end})
        in_live_window = F.lit(True) if live_end_above is None else F.col(WE) > long_lit(live_end_above)
        return out, in_live_window, element_late

    def in_live_window(self, live_end_above: int) -> Column:
        """On an assigned row: whether it has a window whose end is above ``live_end_above``."""
        return F.col(WE) > long_lit(live_end_above)

    def live_windows(self, ts: Column, live_end_above: int | None) -> Column:
        """The element's windows whose end is above ``live_end_above`` (None: all of them), as
        :meth:`windows` gives them."""
        windows = self.windows(ts)
        if live_end_above is None:
            return windows
        return F.filter(windows, lambda w: w[WE] > long_lit(live_end_above))

    # Families with slices (``slices``): elements aggregate per (key, slice), windows come from slice partials.
    def slice_start(self, ts: Column) -> Column:
        """The start of the slice holding ``ts``: every window bound is a slice bound."""
        raise ValueError(f"{self.assigner!r} assigns one window per element; it has no slices")

    def window_partials(self, compiled: list[CompiledAggregate], keys: list[str], slices: DataFrame,
                        live_end_above: int | None) -> DataFrame:
        """Per (key, window) partials from per (key, slice) partials (:func:`slicing.slice_partials`):
        every window whose end is above ``live_end_above`` (None: every window) gets the partials of
        its slices, rolled up; the element count ``__b__n`` is summed."""
        raise ValueError(f"{self.assigner!r} assigns one window per element; it has no slices")

    def closing_window_partials(self, compiled: list[CompiledAggregate], keys: list[str],
                                elements: DataFrame) -> DataFrame:
        """Per (key, window) partials of every window with an element, for a batch that closes them all
        (no state, every window live); ``elements`` carry their slice."""
        return self.window_partials(compiled, keys, slicing.slice_partials(compiled, keys, elements), None)


class TumblingGeometry(WindowGeometry):
    """Tumbling windows: ``start = ts - floor_mod(ts - offset, size)`` (event or processing time)."""

    def window(self, ts: Column) -> tuple[Column, Column]:
        a = self.assigner
        start = ts - F.pmod(ts - long_lit(a.offset_ms), long_lit(a.size_ms))
        return start, self.window_end(start)

    def window_end(self, start: Column | None) -> Column:
        return start + long_lit(self.assigner.size_ms)

    @property
    def longest_window_ms(self) -> int:
        return self.assigner.size_ms


class GlobalGeometry(WindowGeometry):
    """The global window: one per key, null start and end."""

    never_ends = True

    def window(self, ts: Column) -> tuple[Column, Column]:
        return F.lit(None).cast("long"), self.window_end(None)

    def window_end(self, start: Column | None) -> Column:
        return F.lit(None).cast("long")


class SlidingGeometry(WindowGeometry):
    """Sliding windows: every window ``[start, start + size)`` holding ``ts``, starts aligned to the
    slide; the element carries its slice (:mod:`windowing.spark.plans.slicing`)."""

    slices = True

    def windows(self, ts: Column) -> Column:
        a = self.assigner
        size, slide = a.size_ms, a.slide_ms
        last_start = ts - F.pmod(ts - long_lit(a.offset_ms), long_lit(slide))
        count = -(-size // slide)  # ceil: the most windows an element can be in
        starts = F.transform(F.sequence(F.lit(0).cast("long"), long_lit(count - 1)),
                             lambda i: last_start - i * long_lit(slide))
        starts = F.filter(starts, lambda s: s > ts - long_lit(size))
        return F.transform(starts, lambda s: F.struct(s.alias(WS), (s + long_lit(size)).alias(WE)))

    def assign(self, out, live_end_above, element_late):
        # The slice of each element and two comparisons decide whether it has a live window;
        # the windows themselves are built later from slice partials.
        out = out.withColumn(SLICE, slicing.slice_start(self.assigner, F.col(TS)))
        return out, slicing.in_live_window(self.assigner, F.col(TS), live_end_above), element_late

    def in_live_window(self, live_end_above: int) -> Column:
        return slicing.in_live_window(self.assigner, F.col(TS), live_end_above)

    @property
    def longest_window_ms(self) -> int:
        return self.assigner.size_ms

    def slice_start(self, ts):
        return slicing.slice_start(self.assigner, ts)

    def window_partials(self, compiled, keys, slices, live_end_above):
        return slicing.exploded_window_partials(self.assigner, compiled, keys, slices, live_end_above)

    def closing_window_partials(self, compiled, keys, elements):
        # Running differences where the aggregates allow them, else slice explosion.
        return slicing.closing_window_partials(self.assigner, compiled, keys, elements)


class CumulateGeometry(WindowGeometry):
    """Cumulating windows (Flink SQL's ``CUMULATE``): the cycle ``[s, s + max_size)`` starts at
    ``s = ts - floor_mod(ts - offset, max_size)`` and holds the windows ``[s, s + k * step)``; an
    element is in those that end after it. Slices are one step wide (every window end is a slice
    bound): slice ``o`` is in the windows of its cycle ending in ``[o + step, s + max_size]``."""

    slices = True

    @property
    def longest_window_ms(self) -> int:
        return self.assigner.max_size_ms

    def cycle_start(self, ts: Column) -> Column:
        a = self.assigner
        return ts - F.pmod(ts - long_lit(a.offset_ms), long_lit(a.max_size_ms))

    def slice_start(self, ts: Column) -> Column:
        a = self.assigner
        return ts - F.pmod(ts - long_lit(a.offset_ms), long_lit(a.step_ms))

    def windows(self, ts: Column) -> Column:
        start, step = self.cycle_start(ts), long_lit(self.assigner.step_ms)
        ends = F.sequence(self.slice_start(ts) + step, start + long_lit(self.assigner.max_size_ms), step)
        return F.transform(ends, lambda end: F.struct(start.alias(WS), end.alias(WE)))

    def assign(self, out, live_end_above, element_late):
        # Every element is in a window (its cycle's largest); it has a live one iff that one is live.
        return out.withColumn(SLICE, self.slice_start(F.col(TS))), self._live(F.col(TS), live_end_above), element_late

    def in_live_window(self, live_end_above: int) -> Column:
        return self._live(F.col(TS), live_end_above)

    def _live(self, ts: Column, live_end_above: int | None) -> Column:
        if live_end_above is None:
            return F.lit(True)
        return self.cycle_start(ts) + long_lit(self.assigner.max_size_ms) > long_lit(live_end_above)

    def window_partials(self, compiled, keys, slices, live_end_above):
        a = self.assigner
        step = long_lit(a.step_ms)
        o = F.col(SLICE)
        start = self.cycle_start(o)
        last_end, first_end = start + long_lit(a.max_size_ms), o + step
        if live_end_above is not None:
            # the lowest window end above live_end_above (ends lie on the step grid)
            live_end = live_end_above - floor_mod(live_end_above - a.offset_ms, a.step_ms) + a.step_ms
            if live_end > MAX_TIMESTAMP_MS:
                slices = slices.where(F.lit(False))
            else:
                first_end = F.greatest(first_end, long_lit(live_end))
        accs = [c for agg in compiled for c in agg.columns]
        exploded = (slices.where(first_end <= last_end)
                    .select(*keys, SLICE, *accs, slicing.CONTENTS, start.alias(WS),
                            F.explode(F.sequence(first_end, last_end, step)).alias(WE)))
        return (exploded.groupBy(*keys, WS, WE)
                .agg(*[agg.form.rollup(agg.aggregate, c).alias(c) for agg in compiled for c in agg.columns],
                     F.sum(slicing.CONTENTS).alias(slicing.CONTENTS)))

    def closing_window_partials(self, compiled, keys, elements):
        """Every window with an element. Count, Sum and Avg of integers: running sums of the slice
        partials per (key, cycle) in slice order; the sum through slice ``o`` is the content of every
        window ending in ``[o + step, next occupied slice]`` (or the cycle's end), so no partial is
        copied before an aggregation. Other aggregates: slice explosion."""
        if not slicing.invertible(compiled, elements.schema):
            return super().closing_window_partials(compiled, keys, elements)
        a, step = self.assigner, long_lit(self.assigner.step_ms)
        parts = slicing.invertible_parts(compiled)
        names = [name for name, _ in parts]
        slices = (elements.groupBy(*keys, SLICE).agg(*[expr.alias(name) for name, expr in parts])
                  .withColumn(WS, self.cycle_start(F.col(SLICE))))
        by_cycle = Window.partitionBy(*keys, WS).orderBy(SLICE)
        upto = by_cycle.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        last_end = F.coalesce(F.lead(SLICE).over(by_cycle), F.col(WS) + long_lit(a.max_size_ms))
        runs = slices.select(*keys, WS, *[F.sum(name).over(upto).alias(name) for name in names],
                             F.sequence(F.col(SLICE) + step, last_end, step).alias(WE))
        return (runs.withColumn(WE, F.explode(WE))
                .select(*keys, WS, WE, *slicing.accumulators_from_sums(compiled), F.col(slicing.CONTENTS)))


class SessionGeometry(WindowGeometry):
    """Session windows (event or processing time): each element opens ``[ts, ts + gap)``."""

    def window(self, ts: Column) -> tuple[Column, Column]:
        return ts, ts + session_gap_ms(self.spec)

    def assign(self, out, live_end_above, element_late):
        # Whether a session window is late depends on what it merges with, so the session plan
        # decides (windowing.spark.plans.session_window_plan); here every valid row is provisionally accepted.
        start, end = self.window(F.col(TS))
        return out.withColumns({WS: start, WE: end}), F.lit(True), F.lit(False)


_GEOMETRIES: dict[type, type[WindowGeometry]] = {
    TumblingEventTimeWindows: TumblingGeometry, TumblingProcessingTimeWindows: TumblingGeometry,
    SlidingEventTimeWindows: SlidingGeometry, SlidingProcessingTimeWindows: SlidingGeometry,
    CumulativeEventTimeWindows: CumulateGeometry,
    GlobalWindows: GlobalGeometry,
    EventTimeSessionWindows: SessionGeometry, ProcessingTimeSessionWindows: SessionGeometry,
}
"""Assigner class -> its geometry on Spark (a subclass of a built-in assigner takes its base's)."""


def geometry_class(assigner_class: type) -> type[WindowGeometry] | None:
    """The geometry of an assigner class (or of its nearest built-in base class), else None."""
    return next((_GEOMETRIES[c] for c in assigner_class.__mro__ if c in _GEOMETRIES), None)


def geometry_of(spec) -> WindowGeometry:
    """The Spark geometry of ``spec``'s assigner.

    Raises:
        ValueError: for an assigner without one (a user assigner runs on the per-key path), naming it
            and the assigners that have one.
    """
    cls = geometry_class(type(spec.assigner))
    if cls is None:
        raise ValueError(f"no Spark window assignment for {spec.assigner!r}; these assigners have one: "
                         f"{', '.join(sorted(c.__name__ for c in _GEOMETRIES))}")
    return cls(spec)


def longest_window_ms(spec) -> int | None:
    """The longest window of ``spec``'s window family (:attr:`WindowGeometry.longest_window_ms`); None
    for a family without a fixed size or an assigner without a geometry (a user assigner)."""
    cls = geometry_class(type(spec.assigner))
    return None if cls is None else cls(spec).longest_window_ms


def session_gap_ms(spec) -> Column:
    """The session gap of each row: the static gap, or the gap column (event- and processing-time
    sessions); a gap function's value is in ``__gap_ms`` (``prepare.gap_function_column``)."""
    assigner = spec.assigner
    if assigner.dynamic_gap is None:
        return long_lit(assigner.gap_ms)
    if has_gap_function(spec):
        return F.col(GAP)
    return F.col(assigner.dynamic_gap.column).cast("long")
