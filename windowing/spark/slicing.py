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

from windowing.core.aggregates import Avg, Collect, Count, First, Last, Max, Min, Reduce, Sum, UserAggregate
from windowing.core.assigners import SlidingEventTimeWindows, SlidingProcessingTimeWindows
from windowing.core.time import MIN_TIMESTAMP_MS
from windowing.spark.aggregates import (
    ORDER_TS, SUM_NEGATIVE, SUM_POSITIVE, CompiledAggregate, _user_udfs, ordered_values, partial_exprs, sum_merge_all)
from windowing.spark.columns import WE, WS, long_lit

SLICE = "__slice_ms"
CONTENTS = "__b__n"      # elements per slice / window (the time plan's batch count column)
_POS, _NEXT = "__pos", "__next_pos"
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_EXACT = "decimal(38,0)"   # sums of int64 values that cannot overflow


def is_sliding(spec) -> bool:
    """Sliding windows on event time or processing time (the same slices, on the element's timestamp)."""
    return isinstance(spec.assigner, (SlidingEventTimeWindows, SlidingProcessingTimeWindows))


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


def _rollup(agg: CompiledAggregate, column: str) -> Column:
    """Aggregate expression merging a group of accumulator values of ``agg`` (nulls mean "empty")."""
    kind = agg.aggregate
    if isinstance(kind, Sum):
        return sum_merge_all(F.col(column))
    if isinstance(kind, (Count, Avg)):
        return F.sum(column)
    if isinstance(kind, Min):
        return F.min(column)
    if isinstance(kind, Max):
        return F.max(column)
    if isinstance(kind, UserAggregate):
        return _user_udfs(kind).fold(F.collect_list(column))
    # Slices cover disjoint time ranges: no two slices' elements tie on event time.
    if isinstance(kind, First):
        return F.min_by(column, F.col(column)[ORDER_TS])
    if isinstance(kind, Last):
        return F.max_by(column, F.col(column)[ORDER_TS])
    if isinstance(kind, Collect):
        return F.flatten(ordered_values(F.col(column), (SLICE,)))
    if isinstance(kind, Reduce):
        # Slices cover disjoint time ranges and each slice's partial folded its elements in
        # (event time, sequence) order: folding the slices in slice order folds the window's
        # elements in that order (a reduce need not commute).
        return _user_udfs(kind).fold(ordered_values(F.col(column), (SLICE,)))
    raise ValueError(f"aggregate {kind!r} has no Spark merge")


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
            .agg(*[_rollup(agg, c).alias(c) for agg in compiled for c in agg.columns],
                 F.sum(CONTENTS).alias(CONTENTS))
            .withColumn(WE, F.col(WS) + long_lit(size)))


# ------------------------------------------------------- running differences

def invertible(compiled: list[CompiledAggregate], schema: T.StructType) -> bool:
    """Whether every aggregate can be windowed exactly by differences of integer running sums."""
    def integral(column: str) -> bool:
        return isinstance(schema[column].dataType, _INTEGRAL)
    for agg in compiled:
        kind = agg.aggregate
        if isinstance(kind, Count):
            continue
        if isinstance(kind, (Sum, Avg)) and integral(kind.column):
            continue
        return False
    return True


def _invertible_parts(compiled: list[CompiledAggregate]) -> list[tuple[str, Column]]:
    """(name, per-slice integer partial) pairs whose window sums rebuild every accumulator column."""
    parts = [(CONTENTS, F.count(F.lit(1)))]
    for agg in compiled:
        kind = agg.aggregate
        if isinstance(kind, Count):
            parts.append((agg.columns[0], F.count(F.lit(1)) if kind.column is None else F.count(kind.column)))
        else:
            # Sum or Avg of an integral column: exact sums of the positive and of the negative values
            # (decimal, so no running sum can overflow; a Sum's part beyond int64 is then null), and how
            # many values were not null.
            value = F.col(kind.column).cast(_EXACT)
            parts.append((f"__inv__{agg.name}__pos", F.coalesce(F.sum(F.when(value >= 0, value)), F.lit(0).cast(_EXACT))))
            parts.append((f"__inv__{agg.name}__neg", F.coalesce(F.sum(F.when(value < 0, value)), F.lit(0).cast(_EXACT))))
            parts.append((f"__inv__{agg.name}__nn", F.count(kind.column)))
    return parts


def _accumulators_from_sums(compiled: list[CompiledAggregate]) -> list[Column]:
    """Accumulator columns (as the time plan names them) from the window sums of :func:`_invertible_parts`."""
    out = []
    for agg in compiled:
        kind = agg.aggregate
        if isinstance(kind, Count):
            out.append(F.col(agg.columns[0]))
            continue
        pos, neg = F.col(f"__inv__{agg.name}__pos"), F.col(f"__inv__{agg.name}__neg")
        nn = F.col(f"__inv__{agg.name}__nn")
        if isinstance(kind, Sum):   # as aggregates.sum_partial builds it: a part beyond int64 is null
            out.append(F.when(nn > 0, F.struct(F.when(pos <= F.lit(2 ** 63 - 1), pos.cast("long")).alias(SUM_POSITIVE),
                                               F.when(neg >= F.lit(-(2 ** 63)), neg.cast("long")).alias(SUM_NEGATIVE)))
                       .alias(agg.columns[0]))
        else:  # Avg: (double sum, count), as partial_exprs builds it
            out.append(F.when(nn > 0, (pos + neg).cast("double")).alias(agg.columns[0]))
            out.append(nn.alias(agg.columns[1]))
    return out


def running_window_partials(assigner: SlidingEventTimeWindows, compiled: list[CompiledAggregate], keys: list[str],
                            elements: DataFrame) -> DataFrame:
    """Per (key, window) accumulators of every window with an element, by running differences.

    See the module docstring. ``elements`` has the key columns, the value
    columns and ``__slice_ms``; the result has the keys, ``window_start_ms``,
    ``window_end_ms``, the accumulator columns and ``__b__n``.
    """
    size, slide, q, offset = assigner.size_ms, assigner.slide_ms, slice_ms(assigner), assigner.offset_ms
    parts = _invertible_parts(compiled)
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
    return windows.select(*keys, WS, (F.col(WS) + long_lit(size)).alias(WE), *_accumulators_from_sums(compiled),
                          F.col(CONTENTS))


def closing_window_partials(assigner: SlidingEventTimeWindows, compiled: list[CompiledAggregate], keys: list[str],
                            elements: DataFrame) -> DataFrame:
    """Every window with an element, for a batch that closes all of them (no state, every window live).

    Running differences when the aggregates allow it, else slice explosion.
    """
    if invertible(compiled, elements.schema):
        return running_window_partials(assigner, compiled, keys, elements)
    return exploded_window_partials(assigner, compiled, keys, slice_partials(compiled, keys, elements))
