"""Evictors: remove elements from a window's buffer around the window function.

As Flink's ``EvictingWindowOperator``: when a window fires, the evictor runs
on the window's elements BEFORE the window function (``do_evict_after=False``,
the default) or AFTER it (``do_evict_after=True``); either way the evicted
elements are gone from the window's buffer for good. An evictor before the
function changes this pane; one after only changes the next panes.

Elements are ``(timestamp_ms, seq, row)`` triples in (event time, arrival
sequence) order, oldest first. Windows with an evictor keep element buffers
instead of accumulators (DESIGN.md section 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from windowing.core.time import parse_duration_ms
from windowing.core.triggers import DeltaFunction, _delta_function

Element = tuple  # (timestamp_ms, seq, row)


@dataclass(frozen=True)
class CountEvictor:
    """Keep only the last ``max_count`` elements (Flink's ``CountEvictor``)."""

    max_count: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.max_count, int) or isinstance(self.max_count, bool) or self.max_count <= 0:
            raise ValueError(f"CountEvictor max_count must be a positive int, got {self.max_count!r}")

    def evict(self, elements: Sequence[Element]) -> list[Element]:
        """Return the elements that remain, in order (oldest first)."""
        return list(elements[-self.max_count:])


@dataclass(frozen=True)
class TimeEvictor:
    """Keep the elements of the last ``window_ms`` (Flink's ``TimeEvictor``).

    With ``max_ts`` the largest timestamp in the buffer, elements with
    ``timestamp <= max_ts - window_ms`` are evicted.
    """

    window_ms: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.window_ms, int) or isinstance(self.window_ms, bool) or self.window_ms <= 0:
            raise ValueError(f"TimeEvictor window_ms must be a positive number of milliseconds, "
                             f"got {self.window_ms!r}")

    @classmethod
    def of(cls, window: int | str, do_evict_after: bool = False) -> "TimeEvictor":
        return cls(parse_duration_ms(window, "window"), do_evict_after)

    def evict(self, elements: Sequence[Element]) -> list[Element]:
        if not elements:
            return []
        cutoff = max(ts for ts, _, _ in elements) - self.window_ms
        return [e for e in elements if e[0] > cutoff]


@dataclass(frozen=True)
class DeltaEvictor:
    """Evict elements too far from the newest one (Flink's ``DeltaEvictor``).

    With ``last`` the newest element of the buffer, every element with
    ``delta_fn.delta(element, last) >= threshold`` is evicted. ``delta_fn``
    defaults to ``AbsoluteDifference(value_column)``.
    """

    threshold: float
    delta_fn: Any = None
    value_column: str | None = None
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, (int, float)) or isinstance(self.threshold, bool):
            raise ValueError(f"DeltaEvictor threshold must be a number, got {self.threshold!r}")
        object.__setattr__(self, "delta_fn", _delta_function(self.delta_fn, self.value_column, "DeltaEvictor"))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(getattr(self.delta_fn, "columns", ()))

    def evict(self, elements: Sequence[Element]) -> list[Element]:
        if not elements:
            return []
        last = elements[-1][2]
        fn: DeltaFunction = self.delta_fn
        return [e for e in elements if fn.delta(e[2], last) < self.threshold]


EVICTORS = (CountEvictor, TimeEvictor, DeltaEvictor)
Evictor = CountEvictor | TimeEvictor | DeltaEvictor
