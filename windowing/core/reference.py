"""The reference model of the window operator: the executable specification.

Element at a time, following Flink's ``WindowOperator`` (and
``EvictingWindowOperator``) for non-merging windows, with the micro-batch rule
of the design made explicit:

1. Malformed rows are quarantined, with the first reason that applies, in
   this order: null key, null event time, unparseable event time, event time
   further ahead of the processing time than ``max_event_time_skew``, a value
   of the wrong type for a numeric column, a value outside its declared
   bounds, a duplicate event id (the first row of an id in (event time,
   arrival) order is kept; ids seen in earlier batches are remembered while
   their event time is above ``watermark - horizon``, the watermark as it
   stood at the start of the batch). Quarantined rows never move the
   watermark.
2. The batch's elements are processed in (event time, arrival sequence) order.
   Each is assigned to windows; a window is *late* when its cleanup time
   ``max_ts + allowed_lateness <= wm`` where ``wm`` is the watermark as it
   stood at the START of the batch. Late windows are skipped; an element that
   was added to no window and is itself late (``ts + L <= wm``) goes to the
   late output; one in no window but not late (a sliding gap) is counted as
   unassigned.
3. For every window it was added to, the trigger's ``on_element`` runs and
   may fire (count triggers fire here, exactly every n elements).
4. The watermark advances to ``max(wm, max_seen_ts - delay - 1, explicit)``,
   then every event-time timer at or below it fires in timestamp order (the
   trigger's ``on_event_time``, then cleanup at ``max_ts + L``). Timers are a
   set per (key, window, time), as in Flink, so a window fires at most once
   per timer per batch.

With a batch of one element this is Flink's per-element behaviour.
"""
from __future__ import annotations

import copy
import heapq
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import time as _time

from windowing.core.records import (
    EARLY, LATE, LATE_BEYOND_ALLOWED_LATENESS, ON_TIME, QUARANTINE_DUPLICATE_EVENT, QUARANTINE_FAR_FUTURE_EVENT_TIME,
    QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY, QUARANTINE_UNPARSEABLE_EVENT_TIME,
    QUARANTINE_VALUE_OUT_OF_BOUNDS, QUARANTINE_WRONG_TYPE, BatchResult, LateElement, Pane, QuarantinedRow)
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS, saturating_add
from windowing.core.windows import Window


@dataclass
class _WindowState:
    """Contents and trigger state of one (key, window)."""

    accumulators: list | None = None   # incremental aggregates; None = no contents
    elements: list | None = None       # (ts, seq, row) buffer when an evictor is set
    pane_index: int = 0
    trigger_state: dict = field(default_factory=dict)


class _Context:
    """The TriggerContext of one (key, window) call."""

    def __init__(self, operator: "ReferenceOperator", key: tuple, window: Window, state: _WindowState):
        self._op, self._key, self._window, self._state = operator, key, window, state

    @property
    def current_watermark_ms(self) -> int:
        return self._op.current_watermark_ms

    def register_event_time_timer(self, time_ms: int) -> None:
        self._op._register_timer(time_ms, self._key, self._window)

    def delete_event_time_timer(self, time_ms: int) -> None:
        self._op._timers.discard((time_ms, self._key, self._window))

    def get_state(self, name: str, default: Any = None) -> Any:
        return self._state.trigger_state.get(name, default)

    def set_state(self, name: str, value: Any) -> None:
        self._state.trigger_state[name] = value

    def clear_state(self, name: str) -> None:
        self._state.trigger_state.pop(name, None)


class ReferenceOperator:
    """A keyed window operator over Python dict rows (event time in epoch ms).

    State survives across :meth:`process_batch` calls, like the Delta-backed
    state of the Spark executor.
    """

    def __init__(self, spec: WindowSpec):
        self.spec = spec
        self.current_watermark_ms = MIN_TIMESTAMP_MS
        self.max_seen_timestamp_ms: int | None = None
        self._windows: dict[tuple[tuple, Window], _WindowState] = {}
        self._timers: set[tuple[int, tuple, Window]] = set()
        self._heap: list = []
        self._next_seq = 0
        self._seen_ids: dict[Any, int] = {}   # event id -> event time, for de-duplication

    # ------------------------------------------------------------------ API
    def process_batch(self, rows: Iterable[Mapping[str, Any]], batch_id: int,
                      watermark_ms: int | None = None, processing_time_ms: int | None = None) -> BatchResult:
        """Process one batch of rows and return what it emitted.

        Args:
            rows: dicts with the spec's columns; the event-time column holds
                epoch milliseconds (int) or None.
            batch_id: recorded on every output row.
            watermark_ms: an explicit watermark advance (never moves it back).
            processing_time_ms: the batch's processing time, the reference of
                ``max_event_time_skew`` (default: the wall clock).
        """
        spec = self.spec
        if processing_time_ms is None:
            processing_time_ms = int(_time.time() * 1000)
        wm_start = self.current_watermark_ms
        result = BatchResult(batch_id, wm_start, wm_start)
        metrics = result.metrics
        self._cleaned_this_batch: set = set()
        elements = []
        for row in rows:
            metrics.input_rows += 1
            key = tuple(row[c] for c in spec.key_columns)
            ts = row[spec.event_time_column]
            if any(k is None for k in key):
                result.quarantined.append(QuarantinedRow(dict(row), QUARANTINE_NULL_KEY, batch_id))
            elif ts is None:
                result.quarantined.append(QuarantinedRow(dict(row), QUARANTINE_NULL_EVENT_TIME, batch_id))
            elif not isinstance(ts, int) or isinstance(ts, bool):
                result.quarantined.append(QuarantinedRow(dict(row), QUARANTINE_UNPARSEABLE_EVENT_TIME, batch_id))
            else:
                reason = self._value_problem(ts, row, processing_time_ms)
                if reason is not None:
                    result.quarantined.append(QuarantinedRow(dict(row), reason, batch_id))
                else:
                    elements.append((ts, self._next_seq, key, dict(row)))
                    self._next_seq += 1
        if spec.dedup_column is not None:
            elements = self._drop_duplicates(elements, wm_start, result)
        metrics.quarantined_rows = len(result.quarantined)

        for ts, seq, key, row in sorted(elements, key=lambda e: (e[0], e[1])):
            self._process_element(ts, seq, key, row, wm_start, result)
            if self.max_seen_timestamp_ms is None or ts > self.max_seen_timestamp_ms:
                self.max_seen_timestamp_ms = ts

        new_wm = wm_start
        if self.max_seen_timestamp_ms is not None:
            new_wm = max(new_wm, self.max_seen_timestamp_ms - spec.max_out_of_orderness_ms - 1)
        if watermark_ms is not None:
            new_wm = max(new_wm, watermark_ms)
        self.current_watermark_ms = new_wm
        self._fire_timers(wm_start, result)
        result.watermark_after_ms = new_wm
        self._mark_final_panes(result)
        metrics.panes_emitted = len(result.panes)
        metrics.windows_cleaned = len(self._cleaned_this_batch)
        return result

    def _value_problem(self, ts: int, row: Mapping[str, Any], processing_time_ms: int) -> str | None:
        """The quarantine reason of a row with a valid key and event time, or None."""
        spec = self.spec
        skew = spec.max_event_time_skew_ms
        if skew is not None and ts > processing_time_ms + skew:
            return QUARANTINE_FAR_FUTURE_EVENT_TIME
        for column in spec.numeric_columns:
            value = row.get(column)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                return QUARANTINE_WRONG_TYPE
        for column, (lo, hi) in spec.bounds_by_column.items():
            value = row.get(column)
            if value is not None and ((lo is not None and value < lo) or (hi is not None and value > hi)):
                return QUARANTINE_VALUE_OUT_OF_BOUNDS
        return None

    def _drop_duplicates(self, elements: list, wm_start: int, result: BatchResult) -> list:
        """Quarantine repeated event ids; remember the kept ones (null ids are never duplicates)."""
        column, horizon = self.spec.dedup_column, self.spec.dedup_horizon_ms
        forget_at_or_below = wm_start - horizon
        self._seen_ids = {i: t for i, t in self._seen_ids.items() if t > forget_at_or_below}
        kept = []
        for element in sorted(elements, key=lambda e: (e[0], e[1])):
            event_id = element[3].get(column)
            if event_id is not None and event_id in self._seen_ids:
                result.quarantined.append(QuarantinedRow(element[3], QUARANTINE_DUPLICATE_EVENT, result.batch_id))
                continue
            if event_id is not None:
                self._seen_ids[event_id] = element[0]
            kept.append(element)
        return kept

    def flush(self, batch_id: int) -> BatchResult:
        """End of input: advance the watermark to +infinity (fires and cleans every time window)."""
        return self.process_batch([], batch_id, watermark_ms=MAX_TIMESTAMP_MS)

    def open_windows(self) -> list[tuple[tuple, Window]]:
        return sorted(self._windows, key=repr)

    # ------------------------------------------------------------ internals
    def _cleanup_time(self, window: Window) -> int:
        if window.is_global:
            return MAX_TIMESTAMP_MS
        return saturating_add(window.max_timestamp_ms, self.spec.allowed_lateness_ms)

    def _process_element(self, ts, seq, key, row, wm_start, result) -> None:
        spec, metrics = self.spec, result.metrics
        added = False
        for window in spec.assigner.assign(ts):
            if spec.is_event_time and self._cleanup_time(window) <= wm_start:
                continue  # Flink: isWindowLate
            added = True
            state = self._windows.setdefault((key, window), _WindowState())
            self._add(state, ts, seq, row)
            trigger_result = spec.trigger.on_element(row, ts, window, _Context(self, key, window, state))
            if trigger_result.is_fire:
                timing = ON_TIME if window.is_global else (EARLY if window.max_timestamp_ms > wm_start else LATE)
                self._emit(key, window, state, timing, wm_start, result)
            if trigger_result.is_purge:
                self._purge(state)
            if spec.is_event_time and self._cleanup_time(window) != MAX_TIMESTAMP_MS:
                self._register_timer(self._cleanup_time(window), key, window)
        if added:
            metrics.accepted_rows += 1
        elif spec.is_event_time and saturating_add(ts, spec.allowed_lateness_ms) <= wm_start:
            if spec.late_output:
                result.late.append(LateElement(key, ts, row, LATE_BEYOND_ALLOWED_LATENESS, wm_start,
                                               result.batch_id))
                metrics.late_rows += 1
            else:
                metrics.dropped_late_rows += 1
        else:
            metrics.unassigned_rows += 1

    def _add(self, state: _WindowState, ts: int, seq: int, row: dict) -> None:
        if self.spec.evictor is not None:
            state.elements = (state.elements or []) + [(ts, seq, row)]
            return
        if state.accumulators is None:
            state.accumulators = [agg.create_accumulator() for _, agg in self.spec.aggregates]
        state.accumulators = [agg.add(row, acc) for (_, agg), acc in zip(self.spec.aggregates, state.accumulators)]

    def _purge(self, state: _WindowState) -> None:
        state.accumulators = None
        state.elements = None

    def _register_timer(self, time_ms: int, key: tuple, window: Window) -> None:
        timer = (time_ms, key, window)
        if timer not in self._timers:
            self._timers.add(timer)
            heapq.heappush(self._heap, (time_ms, repr(key), repr(window), key, window))

    def _fire_timers(self, wm_start: int, result: BatchResult) -> None:
        wm = self.current_watermark_ms
        while self._heap and self._heap[0][0] <= wm:
            time_ms, _, _, key, window = heapq.heappop(self._heap)
            if (time_ms, key, window) not in self._timers:
                continue  # deleted
            self._timers.discard((time_ms, key, window))
            state = self._windows.get((key, window))
            if state is None:
                continue
            trigger_result = self.spec.trigger.on_event_time(time_ms, window, _Context(self, key, window, state))
            if trigger_result.is_fire:
                if time_ms < window.max_timestamp_ms:
                    timing = EARLY
                else:
                    timing = ON_TIME if window.max_timestamp_ms > wm_start else LATE
                self._emit(key, window, state, timing, wm, result)
            if trigger_result.is_purge:
                self._purge(state)
            if self.spec.is_event_time and time_ms == self._cleanup_time(window):
                self.spec.trigger.clear(window, _Context(self, key, window, state))
                del self._windows[(key, window)]
                self._timers = {t for t in self._timers if not (t[1] == key and t[2] == window)}
                self._cleaned_this_batch.add((key, window))

    def _emit(self, key, window, state: _WindowState, timing: str, wm: int, result: BatchResult) -> None:
        if self.spec.evictor is not None:
            if not state.elements:
                return
            state.elements = self.spec.evictor.evict(state.elements)
            values = {}
            for name, agg in self.spec.aggregates:
                acc = agg.create_accumulator()
                for _, _, row in state.elements:
                    acc = agg.add(row, acc)
                values[name] = agg.get_result(acc)
        else:
            if state.accumulators is None:
                return  # Flink: no contents, nothing to emit
            values = {name: agg.get_result(acc)
                      for (name, agg), acc in zip(self.spec.aggregates, state.accumulators)}
        values = copy.deepcopy(values)  # a pane is a snapshot: later adds must not change it (Flink copies too)
        result.panes.append(Pane(key, window.start_ms, window.end_ms, values, state.pane_index, timing,
                                 False, wm, result.batch_id))
        state.pane_index += 1

    def _mark_final_panes(self, result: BatchResult) -> None:
        last_by_window: dict = {}
        for i, pane in enumerate(result.panes):
            last_by_window[(pane.key, pane.window_start_ms, pane.window_end_ms)] = i
        cleaned = {(key, w.start_ms, w.end_ms) for key, w in self._cleaned_this_batch}
        for ident, i in last_by_window.items():
            if ident in cleaned:
                pane = result.panes[i]
                result.panes[i] = Pane(**{**pane.__dict__, "is_final": True})
