"""Join specs: frozen, validated descriptions of a window join (or co-group) and an interval join.

Built with the fluent builders of :mod:`windowing.core.joins.builders`::

    clicks = JoinInput.of("click_time", max_out_of_orderness="5 seconds")
    orders = JoinInput.of("order_time", max_out_of_orderness="10 seconds")
    spec = (clicks.join(orders, how="left").where("user_id").equal_to("buyer")
            .window(TumblingEventTimeWindows.of("1 minute")).allowed_lateness("30 seconds")
            .side_output_late_data().project(left=("user_id", "page"), right=("order_id",)))
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, fields
from typing import Any

from windowing.core.assigners import GlobalWindows
from windowing.core.functions import Process
from windowing.core.joins.functions import ApplyJoin, CoGroup, PairJoin, Projection
from windowing.core.joins.sides import JoinInput
from windowing.core.joins.tagged import KEY, TIME, SplitSides
from windowing.core.spec import RESERVED_OUTPUT_COLUMNS, WindowSpec
from windowing.core.watermarks import ExplicitWatermarks


def _check_keys(left_key: Any, right_key: Any) -> None:
    for name, key in (("where", left_key), ("equal_to", right_key)):
        if not isinstance(key, tuple) or not key or not all(isinstance(c, str) and c for c in key):
            raise ValueError(f"{name}(...) needs one or more column names, got {key!r}")
    if len(left_key) != len(right_key):
        raise ValueError(f"where{left_key!r} and equal_to{right_key!r} must name as many columns each: "
                         f"the i-th left column equals the i-th right column")


def _check_inputs(left: Any, right: Any) -> None:
    for name, side in (("left", left), ("right", right)):
        if not isinstance(side, JoinInput):
            raise ValueError(f"the {name} input must be a JoinInput, got {side!r}")


def _check_idle(idle_timeout_ms: Any) -> None:
    if idle_timeout_ms is not None and (not isinstance(idle_timeout_ms, int) or isinstance(idle_timeout_ms, bool)
                                        or idle_timeout_ms <= 0):
        raise ValueError(f"watermark idleness must be a positive number of ms, got {idle_timeout_ms!r}")


def _check_output_columns(columns: tuple[str, ...]) -> None:
    for name in columns:
        if name in RESERVED_OUTPUT_COLUMNS or name.startswith("__"):
            raise ValueError(f"output column {name!r} clashes with a column the join's outputs carry; rename it "
                             f"(reserved: {sorted(RESERVED_OUTPUT_COLUMNS)} and names starting '__')")


def _fingerprint(spec: Any, **shown: str) -> str:
    """A stable hash of a join spec's settings (``shown`` replaces a field's repr; object addresses dropped)."""
    parts = [f"{f.name}={shown.get(f.name, repr(getattr(spec, f.name)))}" for f in fields(spec)]
    stable = re.sub(r" at 0x[0-9a-fA-F]+", "", f"{type(spec).__name__}({', '.join(parts)})")
    return hashlib.sha256(stable.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class WindowJoinSpec:
    """A window join or co-group: both inputs in the same windows, a function per firing.

    Attributes:
        left, right: how each input is timed (:class:`~windowing.core.joins.sides.JoinInput`).
        left_key, right_key: the ``where`` and ``equal_to`` columns (as many each).
        window: the window part, a :class:`~windowing.core.spec.WindowSpec` over
            the tagged union of both inputs (see :mod:`windowing.core.joins.tagged`):
            its assigner, trigger (with discarding, a ``PurgingTrigger``), evictor
            and allowed lateness are the join's. Its watermark is explicit: the
            join drives it with the minimum of the inputs' watermarks.
        function: :class:`~windowing.core.joins.functions.PairJoin` (a join kind and its
            projection or join function) or :class:`~windowing.core.joins.functions.CoGroup`.
        late_output: late rows go to the late output with their side (else they
            are counted as dropped).
        idle_timeout_ms: an input with no row for this long (processing time) is idle
            and left out of the watermark; None: never idle.
    """

    left: JoinInput
    right: JoinInput
    left_key: tuple[str, ...]
    right_key: tuple[str, ...]
    window: WindowSpec
    function: PairJoin | CoGroup
    late_output: bool = False
    idle_timeout_ms: int | None = None

    def __post_init__(self) -> None:
        _check_inputs(self.left, self.right)
        _check_keys(self.left_key, self.right_key)
        _check_idle(self.idle_timeout_ms)
        window = self.window
        if not isinstance(window, WindowSpec):
            raise ValueError(f"a window join's window must be a WindowSpec, got {window!r}")
        if (window.key_columns != (KEY,) or window.event_time_column != TIME
                or not isinstance(window.input.watermark_strategy, ExplicitWatermarks)
                or not isinstance(window.process_function, Process)
                or not isinstance(window.process_function.function, SplitSides)):
            raise ValueError(f"a window join's window spec must run on the tagged union (key {KEY!r}, time "
                             f"{TIME!r}, explicit watermarks, SplitSides); build it with left.join(right)...")
        if not window.assigner.is_event_time and not isinstance(window.assigner, GlobalWindows):
            raise ValueError(f"joins run on the inputs' event times; {window.assigner!r} is a processing-time "
                             f"assigner: use an event-time one or GlobalWindows()")
        for what, part in (("assigner", window.assigner), ("trigger", window.trigger),
                           ("nested trigger", getattr(window.trigger, "nested", None)), ("evictor", window.evictor)):
            columns = tuple(getattr(part, "columns", ()) or ())
            if columns:
                raise ValueError(f"the join's {what} {part!r} reads the row column(s) {list(columns)}; on a join it "
                                 f"would see tagged elements of either input, so it is not supported")
        if not isinstance(self.function, (PairJoin, CoGroup)):
            raise ValueError(f"a window join's function must be a PairJoin or a CoGroup, got {self.function!r}")
        _check_output_columns(self.function.output_columns)
        if not isinstance(self.late_output, bool):
            raise ValueError(f"late_output must be a bool, got {self.late_output!r}")

    @property
    def output_columns(self) -> tuple[str, ...]:
        return self.function.output_columns

    def fingerprint(self) -> str:
        """A stable hash of the join's semantics (the window part by its own fingerprint); a resumed
        join must present the same one."""
        return _fingerprint(self, window=self.window.fingerprint())

    @property
    def allowed_lateness_ms(self) -> int:
        return self.window.allowed_lateness_ms


@dataclass(frozen=True)
class IntervalJoinSpec:
    """An interval join: pairs with the same key and ``l.ts + lower <= r.ts <= l.ts + upper``.

    Attributes:
        left, right, left_key, right_key, late_output, idle_timeout_ms: as on
            :class:`WindowJoinSpec`.
        lower_ms, upper_ms: the bounds of ``r.ts - l.ts`` (either may be negative).
        lower_inclusive, upper_inclusive: whether a pair exactly at a bound joins
            (Flink's default: both inclusive).
        output: the pair's :class:`~windowing.core.joins.functions.Projection` or
            :class:`~windowing.core.joins.functions.ApplyJoin`.
    """

    left: JoinInput
    right: JoinInput
    left_key: tuple[str, ...]
    right_key: tuple[str, ...]
    lower_ms: int
    upper_ms: int
    output: Projection | ApplyJoin
    lower_inclusive: bool = True
    upper_inclusive: bool = True
    late_output: bool = False
    idle_timeout_ms: int | None = None

    def __post_init__(self) -> None:
        _check_inputs(self.left, self.right)
        _check_keys(self.left_key, self.right_key)
        _check_idle(self.idle_timeout_ms)
        for name in ("lower_ms", "upper_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"interval join {name} must be an int of ms, got {value!r}")
        for name in ("lower_inclusive", "upper_inclusive", "late_output"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"interval join {name} must be a bool, got {getattr(self, name)!r}")
        if self.lower_ms > self.upper_ms:
            raise ValueError(f"between({self.lower_ms}, {self.upper_ms}): the lower bound must be at or below "
                             f"the upper bound")
        if self.lower_bound_ms > self.upper_bound_ms:
            raise ValueError(f"between({self.lower_ms}, {self.upper_ms}) with "
                             f"{'an exclusive' if not self.lower_inclusive else 'an inclusive'} lower and "
                             f"{'an exclusive' if not self.upper_inclusive else 'an inclusive'} upper bound "
                             f"admits no time difference; widen it or make a bound inclusive")
        if not isinstance(self.output, (Projection, ApplyJoin)):
            raise ValueError(f"an interval join's output must be a Projection or ApplyJoin, got {self.output!r}")
        _check_output_columns(self.output.output_columns)

    @property
    def lower_bound_ms(self) -> int:
        """The smallest ``r.ts - l.ts`` that joins (the bound made inclusive: +1 ms when exclusive)."""
        return self.lower_ms if self.lower_inclusive else self.lower_ms + 1

    @property
    def upper_bound_ms(self) -> int:
        """The largest ``r.ts - l.ts`` that joins (the bound made inclusive: -1 ms when exclusive)."""
        return self.upper_ms if self.upper_inclusive else self.upper_ms - 1

    def matches(self, left_ts_ms: int, right_ts_ms: int) -> bool:
        return self.lower_bound_ms <= right_ts_ms - left_ts_ms <= self.upper_bound_ms

    def left_expired(self, left_ts_ms: int, watermark_ms: int) -> bool:
        """No right row that is not late (``ts > watermark``) can still join this left row."""
        return left_ts_ms + self.upper_bound_ms <= watermark_ms

    def right_expired(self, right_ts_ms: int, watermark_ms: int) -> bool:
        """No left row that is not late can still join this right row."""
        return right_ts_ms - self.lower_bound_ms <= watermark_ms

    @property
    def output_columns(self) -> tuple[str, ...]:
        return self.output.output_columns

    def fingerprint(self) -> str:
        """A stable hash of the join's semantics; a resumed join must present the same one."""
        return _fingerprint(self)
