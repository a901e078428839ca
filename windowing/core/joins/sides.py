"""The two inputs of a join: which side a row came from, and how each side is timed.

A join reads two streams, each with its own event-time column and its own
bounded out-of-orderness (Flink: each input has its own ``WatermarkStrategy``).
:class:`JoinInput` describes one; ``left.join(right)``, ``left.co_group(right)``
and ``left.interval_join(right)`` start the builders of
:mod:`windowing.core.joins.builders`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from windowing.core.time import parse_duration_ms

if TYPE_CHECKING:  # the builders import this module
    from windowing.core.joins.builders import CoGroupedStreams, IntervalJoined, JoinedStreams
    from windowing.core.joins.kinds import JoinKind


@dataclass(frozen=True)
class Side:
    """One side of a join: ``LEFT`` (the first input) or ``RIGHT`` (the second).

    ``name`` is what the late and quarantine outputs record in their ``side`` column.
    """

    name: str

    @property
    def other(self) -> "Side":
        return RIGHT if self == LEFT else LEFT

    def __repr__(self) -> str:
        return self.name.upper()


LEFT = Side("left")
RIGHT = Side("right")
SIDES = (LEFT, RIGHT)


@dataclass(frozen=True)
class JoinInput:
    """How one input of a join is timed.

    Attributes:
        event_time_column: the column of the row's event time (epoch ms; an int).
        max_out_of_orderness_ms: this input's watermark delay:
            ``wm_side = max_seen_ts_side - delay - 1``.
        idle_timeout_ms: this input, with no row for this long (processing time), is idle and
            left out of the join's watermark; None: the join's ``watermark_idleness`` applies.
    """

    event_time_column: str
    max_out_of_orderness_ms: int = 0
    idle_timeout_ms: int | None = None

    def __repr__(self) -> str:
        # Without an idle timeout of its own, as before there was one: a join spec's fingerprint
        # (which includes this repr) stays the same for the state its operator already wrote.
        idle = f", idle_timeout_ms={self.idle_timeout_ms!r}" if self.idle_timeout_ms is not None else ""
        return (f"JoinInput(event_time_column={self.event_time_column!r}, "
                f"max_out_of_orderness_ms={self.max_out_of_orderness_ms!r}{idle})")

    def __post_init__(self) -> None:
        if not isinstance(self.event_time_column, str) or not self.event_time_column:
            raise ValueError(f"a join input's event_time column must be a column name, "
                             f"got {self.event_time_column!r}")
        delay = self.max_out_of_orderness_ms
        if not isinstance(delay, int) or isinstance(delay, bool) or delay < 0:
            raise ValueError(f"a join input's max_out_of_orderness must be >= 0 ms, got {delay!r}")
        idle = self.idle_timeout_ms
        if idle is not None and (not isinstance(idle, int) or isinstance(idle, bool) or idle <= 0):
            raise ValueError(f"a join input's idle timeout must be a positive number of ms, got {idle!r}")

    @classmethod
    def of(cls, event_time_column: str, max_out_of_orderness: int | str = 0,
           idle_timeout: int | str | None = None) -> "JoinInput":
        """``JoinInput.of("click_time", max_out_of_orderness="5 seconds", idle_timeout="1 minute")``."""
        return cls(event_time_column, parse_duration_ms(max_out_of_orderness, "max_out_of_orderness"),
                   None if idle_timeout is None else parse_duration_ms(idle_timeout, "idle_timeout"))

    def join(self, other: "JoinInput", how: "str | JoinKind" = "inner") -> "JoinedStreams":
        """A window join with ``other`` (Flink's ``join``; ``how`` as Flink SQL's window join)."""
        from windowing.core.joins.builders import JoinedStreams
        from windowing.core.joins.kinds import join_kind
        return JoinedStreams(self, other, kind=join_kind(how))

    def co_group(self, other: "JoinInput") -> "CoGroupedStreams":
        """A window co-group with ``other``: a function of both sides' elements per key and window."""
        from windowing.core.joins.builders import CoGroupedStreams
        return CoGroupedStreams(self, other)

    def interval_join(self, other: "JoinInput") -> "IntervalJoined":
        """An interval join with ``other`` (Flink's ``intervalJoin``)."""
        from windowing.core.joins.builders import IntervalJoined
        return IntervalJoined(self, other)
