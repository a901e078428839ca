"""Example user functions that job files can name by import path (``examples.triggers:Name``).

A job's ``[window] trigger = "examples.triggers:EveryNthLarge"`` with
``trigger_args = {n = 3, column = "item_count", threshold = 5}`` runs this
trigger on the per-key path (the reference model per key, its per-window
state kept in the Delta keyed state table between batches).
"""
from __future__ import annotations

from dataclasses import dataclass

from examples import CountAndColumn
from windowing.core.triggers import TriggerBase, TriggerResult


@dataclass(frozen=True)
class EveryNthLarge(CountAndColumn, TriggerBase):
    """Fire early on every ``n``-th element whose ``column`` is at least ``threshold``, and at the window's end.

    The count lives in the window's trigger state (``ctx.get_state``), so it
    survives across batches; the end-of-window firing is an event-time timer
    at the window's max timestamp, as :class:`EventTimeTrigger`'s.
    """

    n: int = 3
    column: str = "item_count"
    threshold: float = 5

    def on_element(self, value, timestamp_ms, window, ctx):
        if window.max_timestamp_ms <= ctx.current_watermark_ms:
            return TriggerResult.FIRE   # a late element within allowed lateness: a LATE pane, as EventTimeTrigger
        ctx.register_event_time_timer(window.max_timestamp_ms)
        amount = value.get(self.column)
        if amount is None or amount < self.threshold:
            return TriggerResult.CONTINUE
        seen = ctx.get_state("large", 0) + 1
        if seen >= self.n:
            ctx.set_state("large", 0)
            return TriggerResult.FIRE
        ctx.set_state("large", seen)
        return TriggerResult.CONTINUE

    def on_event_time(self, time_ms, window, ctx):
        return TriggerResult.FIRE if time_ms == window.max_timestamp_ms else TriggerResult.CONTINUE

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp_ms)
        ctx.clear_state("large")
