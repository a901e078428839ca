"""The rows a plan takes per accepted element: each form builds its own from a batch's accepted rows.

A plan names its form once (:attr:`windowing.spark.plans.registry.Plan.elements`, and its one-pass
form's :attr:`~windowing.spark.plans.registry.OnePass.elements`); the executor asks the form for the
rows, never which form it is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowing.core.spec import WindowSpec
from windowing.spark.input.columns import SEQ, SLICE, TS, WE, WS
from windowing.spark.input.prepare import live_window_end_above
from windowing.spark.plans.window_geometry import WindowGeometry


@dataclass(frozen=True)
class ElementSource:
    """A batch's accepted rows and what their element rows are built from: the key and value columns the
    plans aggregate, the batch input's columns the rows kept, the windows' geometry, and the spec and the
    watermark at the start of the batch (which windows are still live)."""

    accepted: DataFrame
    keys: tuple[str, ...]
    values: tuple[str, ...]
    input_columns: tuple[str, ...]
    geometry: WindowGeometry
    spec: WindowSpec
    wm_start_ms: int

    def with_window(self) -> DataFrame:
        """One row per element with its one window (no window geometry that slices gives more than one)."""
        return self.accepted.select(*self.keys, TS, SEQ, *self.values, WS, WE)


@dataclass(frozen=True)
class Elements:
    """One form of the rows a plan takes per accepted element (``select`` builds them)."""

    description: str
    select: Callable[[ElementSource], DataFrame]


def _per_window(s: ElementSource) -> DataFrame:
    if not s.geometry.slices:
        return s.with_window()
    windows = s.geometry.live_windows(F.col(TS), live_window_end_above(s.spec, s.wm_start_ms))
    return (s.accepted.select(*s.keys, TS, SEQ, *s.values, F.explode(windows).alias("__w"))
            .select(*s.keys, TS, SEQ, *s.values, F.col("__w." + WS).alias(WS), F.col("__w." + WE).alias(WE)))


def _slices(s: ElementSource) -> DataFrame:
    if not s.geometry.slices:
        return s.with_window()
    return s.accepted.select(*s.keys, TS, SEQ, *s.values, SLICE)


def _session(s: ElementSource) -> DataFrame:
    return s.accepted.select(*s.input_columns, TS, SEQ, WS, WE)


PER_WINDOW = Elements("one row per (element, live window)", _per_window)
"""Sliding windows give each element a row per live window (count triggers number elements per window)."""
SLICES = Elements("one row per element with its slice (sliding windows aggregate per slice first)", _slices)
"""Sliding windows keep one row per element with its ``__slice_ms``: the plan aggregates per slice before
building windows (:mod:`windowing.spark.plans.slicing`)."""
SESSION = Elements("one row per element with its own session window, the input's columns kept", _session)
"""The session plans keep the input columns the spec reads (a gap column, a trigger's)."""
