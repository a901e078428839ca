"""Window assigners: which windows an element with timestamp ``ts`` belongs to.

Formulas (all integer milliseconds, floor-mod so that timestamps before 1970
and negative offsets are right):

* tumbling: ``start = ts - floor_mod(ts - offset, size)``, window ``[start, start + size)``.
* sliding: ``last_start = ts - floor_mod(ts - offset, slide)``; the windows are
  ``[s, s + size)`` for ``s = last_start, last_start - slide, ...`` while
  ``s > ts - size``. With ``slide > size`` an element may fall in a gap and
  belong to no window.
* global: the one :data:`GLOBAL_WINDOW`.
"""
from __future__ import annotations

from dataclasses import dataclass

from windowing.core.time import floor_mod, parse_duration_ms
from windowing.core.windows import GLOBAL_WINDOW, GlobalWindow, TimeWindow


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive number of milliseconds, got {value!r}")


def _offset_within(name: str, offset_ms: int, bound_name: str, bound_ms: int) -> None:
    if not isinstance(offset_ms, int) or abs(offset_ms) >= bound_ms:
        raise ValueError(
            f"{name}={offset_ms!r} is invalid: it must satisfy "
            f"-{bound_name} < offset < {bound_name}, i.e. |offset| < {bound_ms} ms")


@dataclass(frozen=True)
class TumblingEventTimeWindows:
    """Fixed-size, non-overlapping event-time windows (Flink's ``TumblingEventTimeWindows``)."""

    size_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _positive("size_ms", self.size_ms)
        _offset_within("offset_ms", self.offset_ms, "size", self.size_ms)

    @classmethod
    def of(cls, size: int | str, offset: int | str = 0) -> "TumblingEventTimeWindows":
        return cls(parse_duration_ms(size, "size"), parse_duration_ms(offset, "offset"))

    @property
    def is_event_time(self) -> bool:
        return True

    def assign(self, ts_ms: int) -> tuple[TimeWindow, ...]:
        start = ts_ms - floor_mod(ts_ms - self.offset_ms, self.size_ms)
        return (TimeWindow(start, start + self.size_ms),)


@dataclass(frozen=True)
class SlidingEventTimeWindows:
    """Windows of ``size_ms`` starting every ``slide_ms`` (Flink's ``SlidingEventTimeWindows``)."""

    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _positive("size_ms", self.size_ms)
        _positive("slide_ms", self.slide_ms)
        _offset_within("offset_ms", self.offset_ms, "slide", self.slide_ms)

    @classmethod
    def of(cls, size: int | str, slide: int | str, offset: int | str = 0) -> "SlidingEventTimeWindows":
        return cls(parse_duration_ms(size, "size"), parse_duration_ms(slide, "slide"),
                   parse_duration_ms(offset, "offset"))

    @property
    def is_event_time(self) -> bool:
        return True

    def assign(self, ts_ms: int) -> tuple[TimeWindow, ...]:
        last_start = ts_ms - floor_mod(ts_ms - self.offset_ms, self.slide_ms)
        windows = []
        start = last_start
        while start > ts_ms - self.size_ms:
            windows.append(TimeWindow(start, start + self.size_ms))
            start -= self.slide_ms
        return tuple(windows)


@dataclass(frozen=True)
class GlobalWindows:
    """All elements of a key in one window that never ends (fires only by its trigger)."""

    @property
    def is_event_time(self) -> bool:
        # Flink: GlobalWindows.isEventTime() is false, so no element is ever late.
        return False

    def assign(self, ts_ms: int) -> tuple[GlobalWindow, ...]:
        return (GLOBAL_WINDOW,)


WindowAssigner = TumblingEventTimeWindows | SlidingEventTimeWindows | GlobalWindows
