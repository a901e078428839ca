"""What both join operators do before joining: quarantine bad rows per side, and keep the watermark.

Per side, a row is quarantined with the first reason that applies: a null in
a key column (``null_key``), a null event time (``null_event_time``), an
event time that is not an int of epoch ms (``unparseable_event_time``).

The operator's watermark is the minimum of the inputs' watermarks, with
idleness as :class:`~windowing.core.watermarks.WatermarkTracker` has it for
several sources: each input is one source, ``wm_side = max_seen_ts_side -
delay_side - 1``. (The tracker has one delay for all its sources, so it is
given delay 0 and each input's event times less that input's delay: the
same watermark.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from windowing.core.joins.records import JoinBatchResult, JoinQuarantinedRow
from windowing.core.joins.sides import LEFT, RIGHT, JoinInput, Side
from windowing.core.records import QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY, QUARANTINE_UNPARSEABLE_EVENT_TIME
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import WatermarkTracker


@dataclass(frozen=True)
class JoinElement:
    """A valid row of one side: its key (tuple), event time and arrival number (shared by both sides)."""

    side: Side
    key: tuple
    timestamp_ms: int
    arrival: int
    row: dict


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def idle_timeouts_ms(inputs: Mapping[Side, JoinInput], join_idle_timeout_ms: int | None) -> dict[str, int | None]:
    """Each input's idle timeout by side name: its own, else the join's (None: never idle)."""
    return {side.name: (join_idle_timeout_ms if inputs[side].idle_timeout_ms is None else inputs[side].idle_timeout_ms)
            for side in (LEFT, RIGHT)}


class JoinIntake:
    """Quarantine, arrival numbering, processing-time clock and watermark of a two-input operator.

    Args:
        inputs: each side's :class:`~windowing.core.joins.sides.JoinInput`.
        keys: each side's key columns.
        idle_timeout_ms: the join's idle timeout, for an input without one of its own
            (:func:`idle_timeouts_ms`).
    """

    def __init__(self, inputs: Mapping[Side, JoinInput], keys: Mapping[Side, tuple[str, ...]],
                 idle_timeout_ms: int | None):
        self._inputs, self._keys = dict(inputs), dict(keys)
        self.tracker = WatermarkTracker(0, (LEFT.name, RIGHT.name), idle_timeout_ms,
                                        source_idle_timeouts_ms=idle_timeouts_ms(self._inputs, idle_timeout_ms))
        self.clock_ms = MIN_TIMESTAMP_MS
        self._next_arrival = 0

    @classmethod
    def for_spec(cls, spec: Any) -> "JoinIntake":
        """The intake of a join spec (window or interval join: its inputs, keys and idleness)."""
        return cls({LEFT: spec.left, RIGHT: spec.right}, {LEFT: spec.left_key, RIGHT: spec.right_key},
                   spec.idle_timeout_ms)

    @property
    def watermark_ms(self) -> int:
        return self.tracker.current_ms

    def arrive(self, rows: Mapping[Side, Iterable[Mapping[str, Any]]], result: JoinBatchResult,
               processing_time_ms: int | None) -> list[JoinElement]:
        """The batch's valid elements of both sides (left rows first, each side in arrival order).

        Counts ``input_rows`` and ``quarantined_rows`` per side; moves the clock to the
        batch's processing time (never back).
        """
        if processing_time_ms is not None and processing_time_ms > self.clock_ms:
            self.clock_ms = processing_time_ms
            self.tracker.note_processing_time(self.clock_ms)
        elements = []
        for side in (LEFT, RIGHT):
            metrics = result.metrics[side]
            for row in rows.get(side, ()):
                metrics.input_rows += 1
                element = self._element(side, dict(row), result)
                if element is None:
                    metrics.quarantined_rows += 1
                else:
                    elements.append(element)
        return elements

    def _element(self, side: Side, row: dict, result: JoinBatchResult) -> JoinElement | None:
        key = tuple(row.get(column) for column in self._keys[side])
        ts = row.get(self._inputs[side].event_time_column)
        reason = (QUARANTINE_NULL_KEY if any(k is None for k in key) else QUARANTINE_NULL_EVENT_TIME if ts is None
                  else QUARANTINE_UNPARSEABLE_EVENT_TIME if not _is_int(ts) else None)
        if reason is not None:
            result.quarantined.append(JoinQuarantinedRow(side, row, reason, result.batch_id))
            return None
        self._next_arrival += 1
        return JoinElement(side, key, ts, self._next_arrival - 1, row)

    def advance(self, elements: Iterable[JoinElement], flush: bool = False) -> int:
        """After the batch's elements: observe them, advance the watermark (to +infinity on a flush)."""
        for element in elements:
            delay_ms = self._inputs[element.side].max_out_of_orderness_ms
            self.tracker.observe(element.side.name, element.timestamp_ms - delay_ms, self.clock_ms)
        if flush:
            self.clock_ms = MAX_TIMESTAMP_MS
            self.tracker.note_processing_time(self.clock_ms)
        return self.tracker.advance(self.clock_ms, MAX_TIMESTAMP_MS if flush else None)
