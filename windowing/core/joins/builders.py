"""The fluent join builders: every call returns a new frozen builder; the last one validates.

Window join (Flink's ``JoinedStreams``)::

    left.join(right, how="inner").where(*left_cols).equal_to(*right_cols).window(assigner)
        (or .count_window(size[, slide])) [.trigger(t)] [.evictor(e)] [.allowed_lateness(d)] [.side_output_late_data()]
        [.accumulating() | .discarding()] [.watermark_idleness(d)]
        .apply(join_function, output_schema) | .project(left=..., right=...)

Co-group (Flink's ``CoGroupedStreams``): ``left.co_group(right)`` with the same
calls, then ``.apply(co_group_function, output_schema)``.

Interval join (Flink's ``KeyedStream.intervalJoin``)::

    left.interval_join(right).where(...).equal_to(...).between(lower, upper)
        [.lower_bound_exclusive()] [.upper_bound_exclusive()] [.side_output_late_data()]
        [.watermark_idleness(d)] .apply(join_function, output_schema) | .project(left=..., right=...)

The window part (assigner, trigger, evictor, lateness, accumulation) is built
by :class:`~windowing.core.spec.WindowSpecBuilder` on the tagged union, so its
defaults and checks are the window operator's own.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from windowing.core.assigners import WindowAssigner
from windowing.core.evictors import Evictor
from windowing.core.joins.functions import ApplyJoin, CoGroup, PairJoin, Projection
from windowing.core.joins.kinds import INNER, JoinKind
from windowing.core.joins.sides import JoinInput
from windowing.core.joins.spec import IntervalJoinSpec, WindowJoinSpec
from windowing.core.joins.tagged import FIRING_SCHEMA, KEY, TIME, SplitSides
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import parse_duration_ms
from windowing.core.triggers import Trigger


@dataclass(frozen=True)
class _KeyedInputs:
    """Two inputs and their key columns: ``where`` (left) and ``equal_to`` (right)."""

    left: JoinInput
    right: JoinInput
    _left_key: tuple[str, ...] | None = None
    _right_key: tuple[str, ...] | None = None
    _idle_ms: int | None = None
    _late_output: bool = False

    def where(self, *columns: str):
        """The left input's key columns."""
        return replace(self, _left_key=tuple(columns))

    def equal_to(self, *columns: str):
        """The right input's key columns (the i-th equals the i-th ``where`` column)."""
        if self._left_key is None:
            raise ValueError("call where(left columns) before equal_to(right columns)")
        return replace(self, _right_key=tuple(columns))

    def side_output_late_data(self, enabled: bool = True):
        """Late rows of either input go to the late output with their side (else: counted as dropped)."""
        return replace(self, _late_output=enabled)

    def watermark_idleness(self, timeout: int | str):
        """An input with no row for ``timeout`` of processing time is idle: left out of the watermark."""
        return replace(self, _idle_ms=parse_duration_ms(timeout, "idle timeout"))

    def _keys(self, before: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if self._left_key is None or self._right_key is None:
            raise ValueError(f"call where(left columns).equal_to(right columns) before {before}")
        return self._left_key, self._right_key


@dataclass(frozen=True)
class _Windowed(_KeyedInputs):
    """The window part of a window join or co-group."""

    _window: WindowSpecBuilder | None = None

    def window(self, assigner: WindowAssigner):
        """The assigner both inputs' elements are assigned by (tumbling, sliding, session, global)."""
        self._keys("window(...)")
        return replace(self, _window=WindowSpecBuilder().key_by(KEY).event_time(TIME).explicit_watermarks()
                       .side_output_late_data().window(assigner))

    def count_window(self, size: int, slide: int | None = None):
        """Flink's ``countWindow`` over the elements of both inputs together (per key): tumbling (fire and
        purge every ``size`` elements) or sliding (the last ``size`` elements, every ``slide``)."""
        self._keys("count_window(...)")
        return replace(self, _window=WindowSpecBuilder().key_by(KEY).event_time(TIME).explicit_watermarks()
                       .side_output_late_data().count_window(size, slide))

    def _with(self, call: str, *args: Any):
        if self._window is None:
            raise ValueError(f"call window(assigner) before {call}(...)")
        return replace(self, _window=getattr(self._window, call)(*args))

    def trigger(self, trigger: Trigger):
        return self._with("trigger", trigger)

    def evictor(self, evictor: Evictor):
        return self._with("evictor", evictor)

    def allowed_lateness(self, lateness: int | str):
        return self._with("allowed_lateness", lateness)

    def accumulating(self):
        """Every pane re-emits the whole window's output (the default)."""
        return self._with("accumulating")

    def discarding(self):
        """Each pane joins only what arrived since the previous pane (the window is purged at each firing)."""
        return self._with("discarding")

    def _build(self, function: PairJoin | CoGroup) -> WindowJoinSpec:
        left_key, right_key = self._keys("apply(...)")
        if self._window is None:
            raise ValueError("call window(assigner) before apply(...) or project(...)")
        return WindowJoinSpec(self.left, self.right, left_key, right_key,
                              self._window.process(SplitSides(), FIRING_SCHEMA), function,
                              late_output=self._late_output, idle_timeout_ms=self._idle_ms)


@dataclass(frozen=True)
class JoinedStreams(_Windowed):
    """``left.join(right, how)``: pairs of each firing window, by join kind."""

    kind: JoinKind = INNER

    def apply(self, function: Any, output_schema: str) -> WindowJoinSpec:
        """``function.join(left, right)`` makes each pair's output row (None: no row)."""
        return self._build(PairJoin(self.kind, ApplyJoin(function, output_schema)))

    def project(self, left: Sequence[str] | Mapping[str, str] = (),
                right: Sequence[str] | Mapping[str, str] = ()) -> WindowJoinSpec:
        """Each pair's output row: the named columns of each side (a mapping renames them)."""
        return self._build(PairJoin(self.kind, Projection.of(left, right)))


@dataclass(frozen=True)
class CoGroupedStreams(_Windowed):
    """``left.co_group(right)``: a function of both sides' rows per key and firing window."""

    def apply(self, function: Any, output_schema: str) -> WindowJoinSpec:
        """``function.co_group(key, window, lefts, rights)`` returns the firing's output rows."""
        return self._build(CoGroup(function, output_schema))


@dataclass(frozen=True)
class IntervalJoined(_KeyedInputs):
    """``left.interval_join(right)``: pairs whose time difference is within bounds."""

    _bounds: tuple[int, int] | None = None
    _lower_inclusive: bool = True
    _upper_inclusive: bool = True

    def between(self, lower: int | str, upper: int | str) -> "IntervalJoined":
        """Join (l, r) when ``l.ts + lower <= r.ts <= l.ts + upper`` (durations; negative ones allowed)."""
        self._keys("between(...)")
        return replace(self, _bounds=(parse_duration_ms(lower, "lower bound"),
                                      parse_duration_ms(upper, "upper bound")))

    def lower_bound_exclusive(self) -> "IntervalJoined":
        return replace(self, _lower_inclusive=False)

    def upper_bound_exclusive(self) -> "IntervalJoined":
        return replace(self, _upper_inclusive=False)

    def apply(self, function: Any, output_schema: str) -> IntervalJoinSpec:
        return self._build(ApplyJoin(function, output_schema))

    def project(self, left: Sequence[str] | Mapping[str, str] = (),
                right: Sequence[str] | Mapping[str, str] = ()) -> IntervalJoinSpec:
        return self._build(Projection.of(left, right))

    def _build(self, output: Projection | ApplyJoin) -> IntervalJoinSpec:
        left_key, right_key = self._keys("apply(...)")
        if self._bounds is None:
            raise ValueError("call between(lower, upper) before apply(...) or project(...)")
        return IntervalJoinSpec(self.left, self.right, left_key, right_key, *self._bounds, output,
                                lower_inclusive=self._lower_inclusive, upper_inclusive=self._upper_inclusive,
                                late_output=self._late_output, idle_timeout_ms=self._idle_ms)
