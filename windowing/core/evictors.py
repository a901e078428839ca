"""Evictors: remove elements from a window's buffer around the window function.

As Flink's ``EvictingWindowOperator``: when a window fires, the evictor runs
on the window's elements BEFORE the window function (``do_evict_after=False``,
the default) or AFTER it (``do_evict_after=True``); either way the evicted
elements are gone from the window's buffer for good. An evictor before the
function changes this pane; one after only changes the next panes.

Elements are ``(timestamp_ms, seq, row)`` triples in (event time, arrival
sequence) order, oldest first. Windows with an evictor keep element buffers
instead of accumulators (docs/semantics.md, "Evictors and window functions").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Protocol, Sequence, runtime_checkable

from windowing.core.config_values import JobForm, as_flag, as_int, require
from windowing.core.time import parse_duration_ms
from windowing.core.triggers import DeltaFunction, _delta_config, _delta_function, _positive_int

Element = tuple  # (timestamp_ms, seq, row)

EVICT_AFTER = "evict_after"
"""The job-file key of every built-in evictor: run it after the window function."""


@runtime_checkable
class Evictor(Protocol):
    """What every evictor has (Flink's ``Evictor``); a user evictor implements it.

    * ``evict(elements)``: the elements that remain in the window, a list in
      the same (event time, arrival) order; ``elements`` are
      ``(timestamp_ms, seq, row)`` triples, oldest first, ``row`` a mapping
      of column to value. It must depend on the elements only.
    * ``do_evict_after``: False to run before the window function (this pane
      sees the remaining elements), True to run after it (the next panes do).
    * optional ``columns``: the input columns ``evict`` reads (checked against
      the input's schema).

    A user evictor must be a module-level frozen dataclass (or another
    picklable class with value equality and a stable repr); it runs on the
    per-key path (the reference model per key).
    """

    do_evict_after: bool

    def evict(self, elements: Sequence[Element]) -> list[Element]: ...


def _evict_after(table: Mapping[str, Any], name: str) -> bool:
    return as_flag(table.get(EVICT_AFTER, False), f"evictor {name!r} {EVICT_AFTER}")


@dataclass(frozen=True)
class CountEvictor:
    """Keep only the last ``max_count`` elements (Flink's ``CountEvictor``)."""

    job_form: ClassVar[JobForm] = JobForm("count", ("n", EVICT_AFTER), arg="n")

    max_count: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        _positive_int("CountEvictor max_count", self.max_count)

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> "CountEvictor":
        """``n``: keep the last n elements (``"count:100"``)."""
        require(table, "evictor 'count'", "n")
        return cls(as_int(table["n"], "evictor 'count' n"), _evict_after(table, "count"))

    def evict(self, elements: Sequence[Element]) -> list[Element]:
        """Return the elements that remain, in order (oldest first)."""
        return list(elements[-self.max_count:])


@dataclass(frozen=True)
class TimeEvictor:
    """Keep the elements of the last ``window_ms`` (Flink's ``TimeEvictor``).

    With ``max_ts`` the largest timestamp in the buffer, elements with
    ``timestamp <= max_ts - window_ms`` are evicted.
    """

    job_form: ClassVar[JobForm] = JobForm("time", ("duration", EVICT_AFTER), arg="duration")

    window_ms: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.window_ms, int) or isinstance(self.window_ms, bool) or self.window_ms <= 0:
            raise ValueError(f"TimeEvictor window_ms must be a positive number of milliseconds, "
                             f"got {self.window_ms!r}")

    @classmethod
    def of(cls, window: int | str, do_evict_after: bool = False) -> "TimeEvictor":
        return cls(parse_duration_ms(window, "window"), do_evict_after)

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> "TimeEvictor":
        """``duration``: keep the elements of the last duration (``"time:10 seconds"``)."""
        require(table, "evictor 'time'", "duration")
        return cls(parse_duration_ms(table["duration"], "evictor 'time' duration"), _evict_after(table, "time"))

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

    job_form: ClassVar[JobForm] = JobForm("delta", ("threshold", "column", EVICT_AFTER))

    threshold: float
    delta_fn: Any = None
    value_column: str | None = None
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, (int, float)) or isinstance(self.threshold, bool):
            raise ValueError(f"DeltaEvictor threshold must be a number, got {self.threshold!r}")
        object.__setattr__(self, "delta_fn", _delta_function(self.delta_fn, self.value_column, "DeltaEvictor"))

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> "DeltaEvictor":
        """``threshold`` and ``column``: evict elements whose column is that far from the newest one's."""
        return cls(**_delta_config(table, "evictor 'delta'"), do_evict_after=_evict_after(table, "delta"))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(getattr(self.delta_fn, "columns", ()))

    def evict(self, elements: Sequence[Element]) -> list[Element]:
        if not elements:
            return []
        last = elements[-1][2]
        fn: DeltaFunction = self.delta_fn
        return [e for e in elements if fn.delta(e[2], last) < self.threshold]


BUILTIN_EVICTORS = (CountEvictor, TimeEvictor, DeltaEvictor)
