"""Triggers: per window, decide CONTINUE / FIRE / PURGE / FIRE_AND_PURGE.

A trigger object is a frozen description; it keeps no per-window state. The
state a trigger needs (a counter, the next timer) lives in the operator's
window state and is reached through :class:`TriggerContext`, exactly as
Flink's ``Trigger.TriggerContext`` partitions state by key and window.

Micro-batch note: Flink's ``EventTimeTrigger.onElement`` returns FIRE at once
when the window's end is already behind the watermark (a late element within
allowed lateness). Here it registers the end-of-window timer instead; the
operator fires every due timer once after the batch's elements are in, so a
batch of several late elements gives ONE late pane, and a batch of one element
behaves exactly like Flink.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

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

    def register_event_time_timer(self, time_ms: int) -> None: ...

    def delete_event_time_timer(self, time_ms: int) -> None: ...

    def get_state(self, name: str, default: Any = None) -> Any: ...

    def set_state(self, name: str, value: Any) -> None: ...

    def clear_state(self, name: str) -> None: ...


@runtime_checkable
class Trigger(Protocol):
    """The trigger protocol (Flink's ``Trigger``); user triggers implement it."""

    def on_element(self, value: Any, timestamp_ms: int, window: Window, ctx: TriggerContext) -> TriggerResult: ...

    def on_event_time(self, time_ms: int, window: Window, ctx: TriggerContext) -> TriggerResult: ...

    def clear(self, window: Window, ctx: TriggerContext) -> None: ...


@dataclass(frozen=True)
class EventTimeTrigger:
    """Fire when the watermark passes the window's end (``wm >= max_timestamp``).

    The default trigger of event-time windows. Elements arriving after that
    (within allowed lateness) fire the window again as a LATE pane.
    """

    def on_element(self, value, timestamp_ms, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp_ms)
        return TriggerResult.CONTINUE

    def on_event_time(self, time_ms, window, ctx):
        return TriggerResult.FIRE if time_ms == window.max_timestamp_ms else TriggerResult.CONTINUE

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp_ms)


@dataclass(frozen=True)
class CountTrigger:
    """Fire every ``count`` elements of the window (Flink's ``CountTrigger``).

    The counter restarts after each firing. Time alone never fires it: a time
    window with only a count trigger that is cleaned up with a partial count
    emits nothing for that remainder (as in Flink); the operator counts such
    windows in its metrics.
    """

    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count <= 0:
            raise ValueError(f"CountTrigger count must be a positive int, got {self.count!r}")

    def on_element(self, value, timestamp_ms, window, ctx):
        seen = ctx.get_state("count", 0) + 1
        if seen >= self.count:
            ctx.set_state("count", 0)
            return TriggerResult.FIRE
        ctx.set_state("count", seen)
        return TriggerResult.CONTINUE

    def on_event_time(self, time_ms, window, ctx):
        return TriggerResult.CONTINUE

    def clear(self, window, ctx):
        ctx.clear_state("count")


@dataclass(frozen=True)
class NeverTrigger:
    """Never fires: the default trigger of :class:`GlobalWindows`."""

    def on_element(self, value, timestamp_ms, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time_ms, window, ctx):
        return TriggerResult.CONTINUE

    def clear(self, window, ctx):
        pass


@dataclass(frozen=True)
class PurgingTrigger:
    """Turn every FIRE of ``nested`` into FIRE_AND_PURGE (discarding panes)."""

    nested: Any

    def __post_init__(self) -> None:
        if not isinstance(self.nested, Trigger):
            raise ValueError(f"PurgingTrigger needs a trigger to wrap, got {self.nested!r}")

    def on_element(self, value, timestamp_ms, window, ctx):
        return self._purging(self.nested.on_element(value, timestamp_ms, window, ctx))

    def on_event_time(self, time_ms, window, ctx):
        return self._purging(self.nested.on_event_time(time_ms, window, ctx))

    def clear(self, window, ctx):
        self.nested.clear(window, ctx)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire else result


BUILTIN_TRIGGERS = (EventTimeTrigger, CountTrigger, NeverTrigger, PurgingTrigger)
