"""Time in the engine: int64 epoch milliseconds, durations, floor-mod."""
from __future__ import annotations

import datetime as _dt
import re

MIN_TIMESTAMP_MS = -(2**63)
"""Flink's Long.MIN_VALUE: the watermark before any element was seen."""
MAX_TIMESTAMP_MS = 2**63 - 1
"""Flink's Long.MAX_VALUE: the watermark of a flush (end of input)."""

_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_DURATION = re.compile(r"^\s*(-?\d+)\s*([a-zA-Z]+)\s*$")


def parse_duration_ms(value: int | str | _dt.timedelta, name: str = "duration") -> int:
    """Return a duration in milliseconds.

    Accepts an int (already milliseconds), a ``datetime.timedelta`` or a string
    such as ``"5 minutes"``, ``"10s"`` or ``"250 ms"``.

    Raises:
        ValueError: naming ``name`` and the bad value when it cannot be parsed.
    """
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a duration, got the bool {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.timedelta):
        return value // _dt.timedelta(milliseconds=1)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and match.group(2).lower() in _UNITS_MS:
            return int(match.group(1)) * _UNITS_MS[match.group(2).lower()]
    raise ValueError(
        f"{name}={value!r} is not a duration; use milliseconds as an int, a "
        f"datetime.timedelta, or a string like '5 minutes', '10s', '250 ms' "
        f"(units: ms, s, m/min, h, d)")


def floor_mod(dividend: int, divisor: int) -> int:
    """Floor modulo (result has the sign of ``divisor``), unlike Java's ``%``.

    Python's ``%`` is already a floor-mod; the function exists so the formula
    in window assignment reads the same as in the docs and the Spark plans.
    """
    return dividend % divisor


def clamp_ms(value: int) -> int:
    """``value`` clamped to the int64 range, so that it fits a Spark ``long`` literal."""
    return max(MIN_TIMESTAMP_MS, min(MAX_TIMESTAMP_MS, value))


def saturating_add(a: int, b: int) -> int:
    """``a + b`` clamped to the int64 range (Flink guards cleanup time so)."""
    return clamp_ms(a + b)


def require_picklable(value, what: str) -> None:
    """Executors ship user functions to workers and persist specs: they must pickle.

    Raises:
        ValueError: naming ``what`` and the value, suggesting a module-level frozen dataclass.
    """
    import pickle
    try:
        pickle.dumps(value)
    except Exception as error:  # pickle raises several types (PicklingError, AttributeError, TypeError)
        raise ValueError(f"{what} {value!r} cannot be pickled ({error}); define it as a module-level class "
                         f"(a frozen dataclass), not a lambda or a local class") from None
