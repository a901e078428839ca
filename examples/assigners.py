"""An example user window assigner that job files name by import path.

``[window] type = "examples.assigners:DayPartWindows"`` with
``assigner_args = { starts = ["00:00", "09:00", "12:00", "18:00"] }`` splits
every UTC day into parts of uneven length (night, morning, afternoon,
evening); it runs on the per-key path (the reference model per key).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Mapping

from windowing.core.time import floor_mod
from windowing.core.windows import TimeWindow

DAY_MS = 86_400_000
MINUTE_MS = 60_000


def _minute_of_day(text: Any) -> int:
    hours, _, minutes = str(text).partition(":")
    if not (hours.isdigit() and minutes.isdigit() and int(hours) < 24 and int(minutes) < 60):
        raise ValueError(f"DayPartWindows start {text!r} is not a time of day 'HH:MM'")
    return int(hours) * 60 + int(minutes)


@dataclass(frozen=True)
class DayPartWindows:
    """Event-time windows that split each UTC day at the times of ``starts`` ("HH:MM", increasing).

    An element at ``ts`` belongs to the one part that holds it: from the last
    start at or before its time of day to the next start (the last part of a
    day runs to the first start of the next day).
    """

    starts: tuple[str, ...] = ("00:00", "09:00", "12:00", "18:00")

    def __post_init__(self) -> None:
        object.__setattr__(self, "starts", tuple(self.starts))   # a TOML array arrives as a list
        minutes = [_minute_of_day(s) for s in self.starts]
        if not minutes or minutes != sorted(set(minutes)):
            raise ValueError(f"DayPartWindows starts must be increasing times of day, got {self.starts!r}")

    @property
    def is_event_time(self) -> bool:
        return True

    def assign(self, ts_ms: int, row: Mapping[str, Any] | None = None) -> tuple[TimeWindow, ...]:
        offsets = [_minute_of_day(s) * MINUTE_MS for s in self.starts]
        day = ts_ms - floor_mod(ts_ms, DAY_MS)
        part = bisect.bisect_right(offsets, ts_ms - day) - 1
        if part < 0:   # before the day's first start: the previous day's last part
            return (TimeWindow(day - DAY_MS + offsets[-1], day + offsets[0]),)
        end = day + offsets[part + 1] if part + 1 < len(offsets) else day + DAY_MS + offsets[0]
        return (TimeWindow(day + offsets[part], end),)
