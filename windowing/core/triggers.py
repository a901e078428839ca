"""Triggers: per window, decide CONTINUE / FIRE / PURGE / FIRE_AND_PURGE.

A trigger object is a frozen description; it keeps no per-window state. The
state a trigger needs (a counter, the next timer) lives in the operator's
window state and is reached through :class:`TriggerContext`, exactly as
Flink's ``Trigger.TriggerContext`` partitions state by key and window.

The trigger protocol (Flink's ``Trigger``), which user triggers implement:

* ``on_element(value, timestamp_ms, window, ctx)``: an element was added to
  ``window``. ``timestamp_ms`` is the element's event time (its processing
  time for processing-time assigners).
* ``on_event_time(time_ms, window, ctx)``: an event-time timer fired.
* ``on_processing_time(time_ms, window, ctx)``: a processing-time timer fired.
* ``can_merge()`` / ``on_merge(window, ctx)``: merging (session) windows need
  a trigger that can merge; ``on_merge`` runs on the merged window, reads
  the merged-away windows' state with ``ctx.merged_state_values(name)`` or
  ``ctx.merge_state(name, combine)``, and registers the timers the merged
  window needs (the merged-away windows' timers are deleted by the operator).
* ``clear(window, ctx)``: the window is purged for good (cleanup time, or
  merged away): delete its timers and state.

Every result other than CONTINUE is one of the :class:`TriggerResult` values.
Subclass :class:`TriggerBase` to get Flink's defaults for the optional
methods. Example: a trigger that fires every 2 elements whose value is
negative, and at the end of the window (its state survives across batches,
so in the Spark executor it survives in Delta)::

    @dataclass(frozen=True)
    class EveryTwoNegatives(TriggerBase):
        def on_element(self, value, timestamp_ms, window, ctx):
            ctx.register_event_time_timer(window.max_timestamp_ms)
            if value["v"] >= 0:
                return TriggerResult.CONTINUE
            seen = ctx.get_state("negatives", 0) + 1
            if seen >= 2:
                ctx.set_state("negatives", 0)
                return TriggerResult.FIRE
            ctx.set_state("negatives", seen)
            return TriggerResult.CONTINUE

        def on_event_time(self, time_ms, window, ctx):
            return TriggerResult.FIRE if time_ms == window.max_timestamp_ms else TriggerResult.CONTINUE

        def can_merge(self):
            return True

        def on_merge(self, window, ctx):
            ctx.merge_state("negatives", lambda a, b: a + b)
            ctx.register_event_time_timer(window.max_timestamp_ms)

        def clear(self, window, ctx):
            ctx.delete_event_time_timer(window.max_timestamp_ms)
            ctx.clear_state("negatives")

Trigger state values must be picklable plain values (ints, strings, tuples,
dicts of those): executors persist them between batches.

Micro-batch notes (docs/semantics.md, "The micro-batch rule"):

* Flink's ``EventTimeTrigger.onElement`` returns FIRE at once when the
  window's end is already behind the watermark (a late element within
  allowed lateness). Here it registers the end-of-window timer instead; the
  operator fires every due timer once after the batch's elements are in, so a
  batch of several late elements gives ONE late pane, and a batch of one
  element behaves exactly like Flink.
* The continuous triggers register their next firing after the current
  watermark / processing time instead of every missed interval: the panes
  those missed intervals would give are identical (no element arrives in
  between) and the operator emits at most one time-driven pane per window
  per batch anyway.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Protocol, runtime_checkable

from windowing.core.config_values import JobForm, as_int, as_number, optional_duration_ms, require
from windowing.core.time import MAX_TIMESTAMP_MS, floor_mod, parse_duration_ms, require_picklable
from windowing.core.windows import Window


class TriggerResult(enum.Enum):
    CONTINUE = (False, False)
    FIRE = (True, False)
    PURGE = (False, True)
    FIRE_AND_PURGE = (True, True)

    @property
    def is_fire(self) -> bool:
        return self.value[0]

    @property
    def is_purge(self) -> bool:
        return self.value[1]


class TriggerContext(Protocol):
    """What a trigger may see and do for the (key, window) it is called for."""

    @property
    def current_watermark_ms(self) -> int: ...

    @property
    def current_processing_time_ms(self) -> int: ...

    def register_event_time_timer(self, time_ms: int) -> None: ...

    def delete_event_time_timer(self, time_ms: int) -> None: ...

    def register_processing_time_timer(self, time_ms: int) -> None: ...

    def delete_processing_time_timer(self, time_ms: int) -> None: ...

    def get_state(self, name: str, default: Any = None) -> Any: ...

    def set_state(self, name: str, value: Any) -> None: ...

    def clear_state(self, name: str) -> None: ...


class OnMergeContext(TriggerContext, Protocol):
    """The context of ``on_merge``: the merged window's, plus the merged-away windows' state."""

    def merged_state_values(self, name: str) -> list: ...

    def merge_state(self, name: str, combine: Callable[[Any, Any], Any]) -> None: ...


@runtime_checkable
class Trigger(Protocol):
    """The methods every trigger has; see the module docstring for the whole protocol."""

    def on_element(self, value: Any, timestamp_ms: int, window: Window, ctx: TriggerContext) -> TriggerResult: ...

    def on_event_time(self, time_ms: int, window: Window, ctx: TriggerContext) -> TriggerResult: ...

    def clear(self, window: Window, ctx: TriggerContext) -> None: ...


class TriggerBase:
    """Flink's defaults for the optional trigger methods (subclass it for a user trigger).

    A built-in trigger also says how job files name it (``job_form`` and
    ``from_config``; see :mod:`windowing.core.registry`): by default it takes
    no keys and is built without arguments.
    """

    @classmethod
    def from_config(cls, table: Mapping[str, Any]):
        return cls()

    def on_event_time(self, time_ms, window, ctx):
        return TriggerResult.CONTINUE

    def on_processing_time(self, time_ms, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window, ctx) -> None:
        raise NotImplementedError(f"{self!r} does not support merging windows")

    def clear(self, window, ctx) -> None:
        pass


def can_merge(trigger) -> bool:
    """Whether a (possibly user) trigger supports merging windows."""
    method = getattr(trigger, "can_merge", None)
    return bool(method()) if callable(method) else False


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def _next_boundary_after(now_ms: int, interval_ms: int) -> int | None:
    """The first multiple of ``interval_ms`` strictly after ``now_ms`` (None past int64)."""
    nxt = now_ms - floor_mod(now_ms, interval_ms) + interval_ms
    return nxt if nxt < MAX_TIMESTAMP_MS else None


@dataclass(frozen=True)
class EventTimeTrigger(TriggerBase):
    """Fire when the watermark passes the window's end (``wm >= max_timestamp``).

    The default trigger of event-time windows. Elements arriving after that
    (within allowed lateness) fire the window again as a LATE pane (one per
    batch). Build early/late firings with :meth:`with_early_firings` and
    :meth:`with_late_firings` (Flink SQL's ``AfterEndOfWindow``).
    """

    job_form: ClassVar[JobForm] = JobForm("event_time")

    def on_element(self, value, timestamp_ms, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp_ms)
        return TriggerResult.CONTINUE

    def on_event_time(self, time_ms, window, ctx):
        return TriggerResult.FIRE if time_ms == window.max_timestamp_ms else TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        # Flink: only a window still ahead of the watermark needs its end timer here; a late
        # merged window is fired by the element that merged it.
        if window.max_timestamp_ms > ctx.current_watermark_ms:
            ctx.register_event_time_timer(window.max_timestamp_ms)

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp_ms)

    def with_early_firings(self, every_n_elements: int | None = None,
                           every: int | str | None = None) -> "EarlyLateEventTimeTrigger":
        return EarlyLateEventTimeTrigger().with_early_firings(every_n_elements, every)

    def with_late_firings(self, every_n_elements: int) -> "EarlyLateEventTimeTrigger":
        return EarlyLateEventTimeTrigger().with_late_firings(every_n_elements)


@dataclass(frozen=True)
class EarlyLateEventTimeTrigger(TriggerBase):
    """Event-time trigger with early and late firings (Flink SQL ``AfterEndOfWindow``).

    * ON_TIME: fires when the watermark passes the window's end, as
      :class:`EventTimeTrigger`.
    * Early (before the end): every ``early_every_n`` elements (counted since
      the last early firing, exact as :class:`CountTrigger`), and/or
      ``early_interval_ms`` of processing time after the first element since
      the last early firing (a processing-time timer).
    * Late (after the end, within allowed lateness): every ``late_every_n``
      late elements, counted since the last late firing. Without late
      firings, late elements fire one LATE pane per batch, as
      :class:`EventTimeTrigger`.

    The early and the late counters are separate (Flink SQL shares one
    counter, so elements counted before the end shorten the first late
    count; the documentation promises "every N late elements", which is what
    this does). Both restart after the ON_TIME firing.
    """

    job_form: ClassVar[JobForm] = JobForm("early_late", ("early_every_n", "early_every", "late_every_n"))

    early_every_n: int | None = None
    early_interval_ms: int | None = None
    late_every_n: int | None = None

    def __post_init__(self) -> None:
        for name in ("early_every_n", "late_every_n"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        if self.early_interval_ms is not None:
            _positive_int("early_interval_ms", self.early_interval_ms)

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> "EarlyLateEventTimeTrigger":
        """``early_every_n``, ``early_every`` (a duration) and/or ``late_every_n``: at least one."""
        if not table:
            raise ValueError("trigger 'early_late' needs early_every_n, early_every and/or late_every_n")
        return cls(table.get("early_every_n"), optional_duration_ms(table, "early_every"), table.get("late_every_n"))

    def with_early_firings(self, every_n_elements: int | None = None,
                           every: int | str | None = None) -> "EarlyLateEventTimeTrigger":
        if every_n_elements is None and every is None:
            raise ValueError("with_early_firings needs every_n_elements=N or every='<duration>' (or both)")
        interval = None if every is None else parse_duration_ms(every, "every")
        return EarlyLateEventTimeTrigger(every_n_elements, interval, self.late_every_n)

    def with_late_firings(self, every_n_elements: int) -> "EarlyLateEventTimeTrigger":
        return EarlyLateEventTimeTrigger(self.early_every_n, self.early_interval_ms, every_n_elements)

    def on_element(self, value, timestamp_ms, window, ctx):
        if window.max_timestamp_ms <= ctx.current_watermark_ms:  # a late element
            if self.late_every_n is None:
                ctx.register_event_time_timer(window.max_timestamp_ms)  # one LATE pane per batch
                return TriggerResult.CONTINUE
            seen = ctx.get_state("late_count", 0) + 1
            if seen >= self.late_every_n:
                ctx.set_state("late_count", 0)
                return TriggerResult.FIRE
            ctx.set_state("late_count", seen)
            return TriggerResult.CONTINUE
        ctx.register_event_time_timer(window.max_timestamp_ms)
        result = TriggerResult.CONTINUE
        if self.early_interval_ms is not None and ctx.get_state("early_timer") is None:
            at = ctx.current_processing_time_ms + self.early_interval_ms
            if at < MAX_TIMESTAMP_MS:
                ctx.set_state("early_timer", at)
                ctx.register_processing_time_timer(at)
        if self.early_every_n is not None:
            seen = ctx.get_state("early_count", 0) + 1
            if seen >= self.early_every_n:
                seen = 0
                result = TriggerResult.FIRE
            ctx.set_state("early_count", seen)
        if result.is_fire:
            self._restart_early_timer(ctx)
        return result

    def on_event_time(self, time_ms, window, ctx):
        if time_ms != window.max_timestamp_ms:
            return TriggerResult.CONTINUE
        self._restart_early_timer(ctx)
        ctx.clear_state("early_count")
        return TriggerResult.FIRE

    def on_processing_time(self, time_ms, window, ctx):
        if ctx.get_state("early_timer") != time_ms:
            return TriggerResult.CONTINUE
        ctx.clear_state("early_timer")
        if window.max_timestamp_ms <= ctx.current_watermark_ms:
            return TriggerResult.CONTINUE  # the window's end passed: no more early firings
        ctx.clear_state("early_count")
        return TriggerResult.FIRE

    @staticmethod
    def _restart_early_timer(ctx):
        timer = ctx.get_state("early_timer")
        if timer is not None:
            ctx.delete_processing_time_timer(timer)
            ctx.clear_state("early_timer")

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.merge_state("early_count", lambda a, b: a + b)
        ctx.merge_state("late_count", lambda a, b: a + b)
        timers = [t for t in ctx.merged_state_values("early_timer") if t is not None]
        if timers:
            ctx.set_state("early_timer", min(timers))
            ctx.register_processing_time_timer(min(timers))
        if window.max_timestamp_ms > ctx.current_watermark_ms:
            ctx.register_event_time_timer(window.max_timestamp_ms)

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp_ms)
        self._restart_early_timer(ctx)
        ctx.clear_state("early_count")
        ctx.clear_state("late_count")


@dataclass(frozen=True)
class ProcessingTimeTrigger(TriggerBase):
    """Fire when processing time reaches the window's end (Flink's ``ProcessingTimeTrigger``).

    The default trigger of processing-time windows.
    """

    job_form: ClassVar[JobForm] = JobForm("processing_time")

    def on_element(self, value, timestamp_ms, window, ctx):
        ctx.register_processing_time_timer(window.max_timestamp_ms)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time_ms, window, ctx):
        return TriggerResult.FIRE if time_ms == window.max_timestamp_ms else TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        if window.max_timestamp_ms > ctx.current_processing_time_ms:
            ctx.register_processing_time_timer(window.max_timestamp_ms)

    def clear(self, window, ctx):
        ctx.delete_processing_time_timer(window.max_timestamp_ms)


INTERVAL_KEYS = ("interval",)


class _IntervalConfig:
    """The job-file form of the continuous triggers: ``interval = "1 minute"`` (or ``"<name>:1 minute"``)."""

    @classmethod
    def from_config(cls, table: Mapping[str, Any]):
        require(table, f"trigger {cls.job_form.name!r}", "interval")
        return cls.of(table["interval"])


@dataclass(frozen=True)
class ContinuousEventTimeTrigger(_IntervalConfig, TriggerBase):
    """Fire every ``interval_ms`` of event time, and at the window's end.

    Flink's ``ContinuousEventTimeTrigger``: the first element registers a
    timer at the next multiple of the interval (floor-aligned, so negative
    times work) but never after the window's end; each firing registers the
    next. A late element (window end behind the watermark) fires the window
    after the batch, like :class:`EventTimeTrigger`.
    """

    job_form: ClassVar[JobForm] = JobForm("continuous_event_time", INTERVAL_KEYS, arg="interval")

    interval_ms: int

    def __post_init__(self) -> None:
        _positive_int("interval_ms", self.interval_ms)

    @classmethod
    def of(cls, interval: int | str) -> "ContinuousEventTimeTrigger":
        return cls(parse_duration_ms(interval, "interval"))

    def on_element(self, value, timestamp_ms, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp_ms)
        if window.max_timestamp_ms > ctx.current_watermark_ms and ctx.get_state("next_fire") is None:
            # Flink: the boundary after the element's timestamp, even if the watermark is past it.
            self._register(_next_boundary_after(timestamp_ms, self.interval_ms), window, ctx)
        return TriggerResult.CONTINUE

    def _register_next(self, after_ms, window, ctx):
        self._register(_next_boundary_after(max(after_ms, ctx.current_watermark_ms), self.interval_ms),
                       window, ctx)

    def _register(self, nxt, window, ctx):
        if nxt is None:
            return
        nxt = min(nxt, window.max_timestamp_ms)
        ctx.set_state("next_fire", nxt)
        ctx.register_event_time_timer(nxt)

    def on_event_time(self, time_ms, window, ctx):
        if time_ms == window.max_timestamp_ms:
            ctx.clear_state("next_fire")
            return TriggerResult.FIRE
        if ctx.get_state("next_fire") == time_ms:
            ctx.clear_state("next_fire")
            self._register_next(time_ms, window, ctx)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        pending = [t for t in ctx.merged_state_values("next_fire") if t is not None]
        if pending:
            ctx.set_state("next_fire", min(pending))
            ctx.register_event_time_timer(min(pending))
        if window.max_timestamp_ms > ctx.current_watermark_ms:
            ctx.register_event_time_timer(window.max_timestamp_ms)

    def clear(self, window, ctx):
        nxt = ctx.get_state("next_fire")
        if nxt is not None:
            ctx.delete_event_time_timer(nxt)
        ctx.delete_event_time_timer(window.max_timestamp_ms)
        ctx.clear_state("next_fire")


@dataclass(frozen=True)
class ContinuousProcessingTimeTrigger(_IntervalConfig, TriggerBase):
    """Fire every ``interval_ms`` of processing time (Flink's ``ContinuousProcessingTimeTrigger``).

    The first element registers a timer at the next multiple of the interval
    after the current processing time (capped at the window's end); each
    firing registers the next.
    """

    job_form: ClassVar[JobForm] = JobForm("continuous_processing_time", INTERVAL_KEYS, arg="interval")

    interval_ms: int

    def __post_init__(self) -> None:
        _positive_int("interval_ms", self.interval_ms)

    @classmethod
    def of(cls, interval: int | str) -> "ContinuousProcessingTimeTrigger":
        return cls(parse_duration_ms(interval, "interval"))

    def on_element(self, value, timestamp_ms, window, ctx):
        if ctx.get_state("next_fire") is None:
            self._register_next(ctx.current_processing_time_ms, window, ctx)
        return TriggerResult.CONTINUE

    def _register_next(self, after_ms, window, ctx):
        nxt = _next_boundary_after(max(after_ms, ctx.current_processing_time_ms), self.interval_ms)
        if nxt is None:
            return
        nxt = min(nxt, window.max_timestamp_ms)
        ctx.set_state("next_fire", nxt)
        ctx.register_processing_time_timer(nxt)

    def on_processing_time(self, time_ms, window, ctx):
        if ctx.get_state("next_fire") != time_ms:
            return TriggerResult.CONTINUE
        ctx.clear_state("next_fire")
        if time_ms < window.max_timestamp_ms:
            self._register_next(time_ms, window, ctx)
        return TriggerResult.FIRE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        pending = [t for t in ctx.merged_state_values("next_fire") if t is not None]
        if pending:
            ctx.set_state("next_fire", min(pending))
            ctx.register_processing_time_timer(min(pending))

    def clear(self, window, ctx):
        nxt = ctx.get_state("next_fire")
        if nxt is not None:
            ctx.delete_processing_time_timer(nxt)
        ctx.clear_state("next_fire")


@runtime_checkable
class DeltaFunction(Protocol):
    """Flink's ``DeltaFunction``: a distance between two rows (a frozen, module-level object)."""

    def delta(self, old_row: Any, new_row: Any) -> float: ...


@dataclass(frozen=True)
class AbsoluteDifference:
    """``|new[column] - old[column]|``, the delta most jobs need."""

    column: str

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"AbsoluteDifference needs a column name, got {self.column!r}")

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def delta(self, old_row, new_row) -> float:
        return abs(new_row[self.column] - old_row[self.column])


def _delta_function(delta_fn: Any, value_column: str | None, owner: str) -> DeltaFunction:
    if delta_fn is None:
        if value_column is None:
            raise ValueError(f"{owner} needs delta_fn (an object with delta(old_row, new_row)) or value_column")
        return AbsoluteDifference(value_column)
    if not isinstance(delta_fn, DeltaFunction):
        raise ValueError(f"{owner} delta_fn must have delta(old_row, new_row), got {delta_fn!r}")
    require_picklable(delta_fn, f"{owner} delta_fn")
    return delta_fn


def _delta_config(table: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """The job-file keys of the delta trigger and evictor, ``threshold`` and ``column``, as their arguments."""
    require(table, owner, "threshold", "column")
    return {"threshold": as_number(table["threshold"], f"{owner} threshold"), "value_column": table["column"]}


@dataclass(frozen=True)
class DeltaTrigger(TriggerBase):
    """Fire when ``delta_fn(last fired element, element) > threshold`` (Flink's ``DeltaTrigger``).

    The first element of the window is remembered without firing; an element
    whose delta to the remembered one exceeds the threshold fires the window
    and becomes the remembered one. ``delta_fn`` defaults to
    ``AbsoluteDifference(value_column)``. It cannot merge (as in Flink).
    """

    job_form: ClassVar[JobForm] = JobForm("delta", ("threshold", "column"))

    threshold: float
    delta_fn: Any = None
    value_column: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, (int, float)) or isinstance(self.threshold, bool):
            raise ValueError(f"DeltaTrigger threshold must be a number, got {self.threshold!r}")
        object.__setattr__(self, "delta_fn", _delta_function(self.delta_fn, self.value_column, "DeltaTrigger"))

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> "DeltaTrigger":
        """``threshold`` and ``column``: fire when the column moved more than the threshold."""
        return cls(**_delta_config(table, "trigger 'delta'"))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(getattr(self.delta_fn, "columns", ()))

    def on_element(self, value, timestamp_ms, window, ctx):
        last = ctx.get_state("last_fired")
        if last is None:
            ctx.set_state("last_fired", dict(value))
            return TriggerResult.CONTINUE
        if self.delta_fn.delta(last, value) > self.threshold:
            ctx.set_state("last_fired", dict(value))
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def clear(self, window, ctx):
        ctx.clear_state("last_fired")


@dataclass(frozen=True)
class CountTrigger(TriggerBase):
    """Fire every ``count`` elements of the window (Flink's ``CountTrigger``).

    The counter restarts after each firing. Time alone never fires it: a time
    window with only a count trigger that is cleaned up with a partial count
    emits nothing for that remainder (as in Flink). On merge the counts add.
    """

    job_form: ClassVar[JobForm] = JobForm("count", ("n",), arg="n")

    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count <= 0:
            raise ValueError(f"CountTrigger count must be a positive int, got {self.count!r}")

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> "CountTrigger":
        """``n``: fire every n elements (``"count:3"``)."""
        require(table, "trigger 'count'", "n")
        return cls(as_int(table["n"], "trigger 'count' n"))

    def on_element(self, value, timestamp_ms, window, ctx):
        seen = ctx.get_state("count", 0) + 1
        if seen >= self.count:
            ctx.set_state("count", 0)
            return TriggerResult.FIRE
        ctx.set_state("count", seen)
        return TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.merge_state("count", lambda a, b: a + b)

    def clear(self, window, ctx):
        ctx.clear_state("count")


@dataclass(frozen=True)
class NeverTrigger(TriggerBase):
    """Never fires: the default trigger of :class:`GlobalWindows`."""

    def on_element(self, value, timestamp_ms, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        pass


@dataclass(frozen=True)
class PurgingTrigger(TriggerBase):
    """Turn every FIRE of ``nested`` into FIRE_AND_PURGE (discarding panes)."""

    nested: Any

    def __post_init__(self) -> None:
        if not isinstance(self.nested, Trigger):
            raise ValueError(f"PurgingTrigger needs a trigger to wrap, got {self.nested!r}")

    def on_element(self, value, timestamp_ms, window, ctx):
        return self._purging(self.nested.on_element(value, timestamp_ms, window, ctx))

    def on_event_time(self, time_ms, window, ctx):
        return self._purging(self.nested.on_event_time(time_ms, window, ctx))

    def on_processing_time(self, time_ms, window, ctx):
        method = getattr(self.nested, "on_processing_time", None)
        return self._purging(method(time_ms, window, ctx)) if method else TriggerResult.CONTINUE

    def can_merge(self):
        return can_merge(self.nested)

    def on_merge(self, window, ctx):
        self.nested.on_merge(window, ctx)

    def clear(self, window, ctx):
        self.nested.clear(window, ctx)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire else result


BUILTIN_TRIGGERS = (EventTimeTrigger, CountTrigger, NeverTrigger, PurgingTrigger, ProcessingTimeTrigger,
                    ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, DeltaTrigger,
                    EarlyLateEventTimeTrigger)
