"""Sliding event-time windows by slices (panes), as DataFrame expressions.

A sliding assigner ``(size, slide, offset)`` cuts time into slices of
``q = gcd(size, slide)`` aligned with the offset: slice ``o`` is
``[o, o + q)`` with ``o = ts - floor_mod(ts - offset, q)``. Every window
start ``s`` (``s = offset (mod slide)``) and end ``s + size`` lies on a slice
boundary, so an element is in window ``s`` exactly when its slice is:
``s <= o < s + size``, i.e. ``s`` in ``[o - size + q, o]``. Elements are
therefore aggregated once per (key, slice) and windows are built from slice
partials, never by copying each element into ``size / slide`` windows (Flink
SQL's slicing). Two ways to build windows from slices:

* **Running differences** (:func:`closing_window_partials`, invertible
  aggregates only: Count, Sum and Avg of integral columns). Slice ``o``
  contributes ``+partial`` at window start ``o - size + q`` and ``-partial``
  at ``o + q``. Per key, a running sum of these deltas in start order is the
  aggregate of every window starting between two consecutive delta positions
  ``[x, x')``; each such stretch with elements yields the grid starts in it.
  Cost: one sort of 2 rows per occupied slice plus one row per output window.
  Only integer arithmetic, so the differences are exact (a prefix sum that
  overflows int64 raises an error under ANSI mode rather than giving a wrong
  sum).
* **Slice explosion** (:func:`exploded_window_partials`): each slice partial
  is copied into its ``size / slide`` windows (at most ``ceil(size/slide)``)
  and merged per window (a Reduce's slices in slice order). Used for Min, Max,
  user aggregates, reduce functions, sums of floating
  point columns (where a difference would not be exact), and by the
  incremental time plan, which merges window partials into per-window state.

Nothing here runs Python per row except user aggregates' pandas UDFs.
"""
from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.assigners import SlidingEventTimeWindows
from windowing.core.time import MIN_TIMESTAMP_MS
from windowing.spark.plans.aggregates import CompiledAggregate, partial_exprs
from windowing.spark.input.columns import SLICE, WE, WS, long_lit

CONTENTS = "__b__n"      # elements per slice / window (the time plan's batch count column)
_POS, _NEXT = "__pos", "__next_pos"


def slice_ms(assigner: SlidingEventTimeWindows) -> int:
    """The slice width ``gcd(size, slide)``: the coarsest grid holding every window bound."""
    return math.gcd(assigner.size_ms, assigner.slide_ms)


def slice_start(assigner: SlidingEventTimeWindows, ts: Column) -> Column:
    """Start of the slice holding ``ts`` (true floor-mod, so negative times and offsets work)."""
    return ts - F.pmod(ts - long_lit(assigner.offset_ms), long_lit(slice_ms(assigner)))


def last_window_start(assigner: SlidingEventTimeWindows, ts: Column) -> Column:
    """The latest window start at or before ``ts`` (the element's window with the largest end, if any)."""
    return ts - F.pmod(ts - long_lit(assigner.offset_ms), long_lit(assigner.slide_ms))


def in_some_window(assigner: SlidingEventTimeWindows, ts: Column) -> Column:
    """False exactly for elements in a gap between windows (only possible when slide > size)."""
    if assigner.slide_ms <= assigner.size_ms:
        return F.lit(True)
    return F.pmod(ts - long_lit(assigner.offset_ms), long_lit(assigner.slide_ms)) < long_lit(assigner.size_ms)


def in_live_window(assigner: SlidingEventTimeWindows, ts: Column, live_end_above: int | None) -> Column:
    """Whether ``ts`` is in at least one window whose end is above ``live_end_above`` (None: any window).

    The element's windows end at most at ``last_window_start + size``, so it
    has a live window iff it has a window at all and that last one is live:
    two column comparisons instead of building and filtering a window array.
    """
    inside = in_some_window(assigner, ts)
    if live_end_above is None:
        return inside
    return inside & (last_window_start(assigner, ts) + long_lit(assigner.size_ms) > long_lit(live_end_above))


# ------------------------------------------------------------------ slices

def slice_partials(compiled: list[CompiledAggregate], keys: list[str], elements: DataFrame) -> DataFrame:
    """One row per (key, slice) with the accumulator columns and the element count ``__b__n``."""
    return elements.groupBy(*keys, SLICE).agg(*partial_exprs(compiled), F.count(F.lit(1)).alias(CONTENTS))


def exploded_window_partials(assigner: SlidingEventTimeWindows, compiled: list[CompiledAggregate], keys: list[str],
                             slices: DataFrame, live_end_above: int | None = None) -> DataFrame:
    """Per (key, window) partials by copying each slice partial into its (live) windows and merging.

    Slice ``o`` is in the windows starting at the grid points of
    ``[o - size + q, o]``: from ``last = o - floor_mod(o - offset, slide)``
    down by ``slide``; a window is live when its end is above ``live_end_above``.
    """
    size, slide, q = assigner.size_ms, assigner.slide_ms, slice_ms(assigner)
    o = F.col(SLICE)
    last = last_window_start(assigner, o)
    lowest = o - long_lit(size - q)
    if live_end_above is not None and live_end_above - size + 1 > MIN_TIMESTAMP_MS:
        lowest = F.greatest(lowest, long_lit(live_end_above - size + 1))   # end = start + size > live_end_above
    first = lowest + F.pmod(last - lowest, long_lit(slide))               # the lowest grid start >= lowest
    accs = [c for agg in compiled for c in agg.columns]
    exploded = (slices.where(last >= lowest)
                .select(*keys, SLICE, *accs, CONTENTS, F.explode(F.sequence(first, last, long_lit(slide))).alias(WS)))
    return (exploded.groupBy(*keys, WS)
            .agg(*[agg.form.rollup(agg.aggregate, c).alias(c) for agg in compiled for c in agg.columns],
                 F.sum(CONTENTS).alias(CONTENTS))
            .withColumn(WE, F.col(WS) + long_lit(size)))


# ------------------------------------------------------- running differences

def invertible(compiled: list[CompiledAggregate], schema: T.StructType) -> bool:
    """Whether every aggregate can be windowed exactly by differences of integer running sums."""
    return all(agg.form.invertible(agg.aggregate, schema) for agg in compiled)


def invertible_parts(compiled: list[CompiledAggregate]) -> list[tuple[str, Column]]:
    """(name, per-slice integer partial) pairs whose window sums rebuild every accumulator column."""
    return [(CONTENTS, F.count(F.lit(1)))] + [part for agg in compiled for part in agg.form.sums(agg)]


def accumulators_from_sums(compiled: list[CompiledAggregate]) -> list[Column]:
    """Accumulator columns (as the time plan names them) from the window sums of :func:`invertible_parts`."""
    return [column for agg in compiled for column in agg.form.from_sums(agg)]


def running_window_partials(assigner: SlidingEventTimeWindows, compiled: list[CompiledAggregate], keys: list[str],
                            elements: DataFrame) -> DataFrame:
    """Per (key, window) accumulators of every window with an element, by running differences.

    See the module docstring. ``elements`` has the key columns, the value
    columns and ``__slice_ms``; the result has the keys, ``window_start_ms``,
    ``window_end_ms``, the accumulator columns and ``__b__n``.
    """
    size, slide, q, offset = assigner.size_ms, assigner.slide_ms, slice_ms(assigner), assigner.offset_ms
    parts = invertible_parts(compiled)
    names = [name for name, _ in parts]
    slices = elements.groupBy(*keys, SLICE).agg(*[expr.alias(name) for name, expr in parts])
    delta = F.explode(F.array(
        F.struct(*[(F.col(SLICE) - long_lit(size - q)).alias(_POS)] + [F.col(n).alias(n) for n in names]),
        F.struct(*[(F.col(SLICE) + long_lit(q)).alias(_POS)] + [(-F.col(n)).alias(n) for n in names])))
    deltas = slices.select(*keys, delta.alias("__d")).select(*keys, "__d.*")
    by_key = Window.partitionBy(*keys).orderBy(_POS)
    # RANGE frame: rows at one position (peers) all see the sum including every delta at that position.
    upto = by_key.rangeBetween(Window.unboundedPreceding, Window.currentRow)
    runs = deltas.select(*keys, _POS, *[F.sum(n).over(upto).alias(n) for n in names],
                         F.lead(_POS).over(by_key).alias(_NEXT))
    # Keep the last row of each position: its lead is the next distinct position.
    stretches = runs.where((F.col(CONTENTS) > 0) & (F.col(_NEXT) != F.col(_POS)))
    first = F.col(_POS) + F.pmod(long_lit(offset) - F.col(_POS), long_lit(slide))   # first grid start >= pos
    windows = (stretches.where(first < F.col(_NEXT))
               .select(*keys, *names, F.explode(F.sequence(first, F.col(_NEXT) - long_lit(1), long_lit(slide)))
                       .alias(WS)))
    return windows.select(*keys, WS, (F.col(WS) + long_lit(size)).alias(WE), *accumulators_from_sums(compiled),
                          F.col(CONTENTS))


def closing_window_partials(assigner: SlidingEventTimeWindows, compiled: list[CompiledAggregate], keys: list[str],
                            elements: DataFrame) -> DataFrame:
    """Every window with an element, for a batch that closes all of them (no state, every window live).

    Running differences when the aggregates allow it, else slice explosion.
    """
    if invertible(compiled, elements.schema):
        return running_window_partials(assigner, compiled, keys, elements)
    return exploded_window_partials(assigner, compiled, keys, slice_partials(compiled, keys, elements))
