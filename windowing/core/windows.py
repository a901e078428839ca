"""Windows: half-open event-time intervals and the one global window."""
from __future__ import annotations

from dataclasses import dataclass

from windowing.core.time import MAX_TIMESTAMP_MS


@dataclass(frozen=True, order=True)
class TimeWindow:
    """The half-open interval ``[start_ms, end_ms)``.

    ``max_timestamp_ms = end_ms - 1`` is Flink's ``maxTimestamp``: the last
    event time that belongs to the window, and the watermark at which the
    event-time trigger fires it.
    """

    start_ms: int
    end_ms: int

    @property
    def max_timestamp_ms(self) -> int:
        return self.end_ms - 1

    @property
    def is_global(self) -> bool:
        return False

    def intersects(self, other: "TimeWindow") -> bool:
        """Flink's rule: windows that only touch also intersect (and merge)."""
        return self.start_ms <= other.end_ms and self.end_ms >= other.start_ms

    def cover(self, other: "TimeWindow") -> "TimeWindow":
        return TimeWindow(min(self.start_ms, other.start_ms), max(self.end_ms, other.end_ms))


@dataclass(frozen=True, order=True)
class GlobalWindow:
    """The single window of :class:`GlobalWindows`; it never ends.

    Its ``max_timestamp_ms`` is Long.MAX_VALUE as in Flink, so it has no
    cleanup time and fires only through its trigger. Outputs show it with a
    null window start and end.
    """

    @property
    def start_ms(self) -> None:
        return None

    @property
    def end_ms(self) -> None:
        return None

    @property
    def max_timestamp_ms(self) -> int:
        return MAX_TIMESTAMP_MS

    @property
    def is_global(self) -> bool:
        return True


GLOBAL_WINDOW = GlobalWindow()
Window = TimeWindow | GlobalWindow
