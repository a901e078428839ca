"""The reference model of the window operator: the executable specification.

Element at a time, following Flink's ``WindowOperator`` (merging windows
through a ``MergingWindowSet``) and ``EvictingWindowOperator``, with the
micro-batch rule of the design made explicit. One batch
(``process_batch(rows, batch_id, watermark_ms=None, processing_time_ms=None)``):

0. Processing time first: when the batch brings a later processing time
   ``pt``, every processing-time timer strictly below the batch's EARLIEST
   processing time (``pt``, or an older ingestion time one of its valid rows
   replays: :func:`pre_rows_below_ms`) fires (those came due before the
   batch's rows arrived), then the clock is ``pt``. A processing-time window
   whose ``max_ts`` is at or below the clock after this phase fired and was
   cleaned: a row that belongs only to such windows is late (reason
   ``processing_time_window_already_fired``), as an event-time row is late
   against the watermark at the start of the batch.
1. Malformed rows are quarantined, with the first reason that applies, in
   this order: null key, null or non-int event time, a non-int ingestion
   time, an undeclared source, event time further ahead of the processing
   time than ``max_event_time_skew``, a value of the wrong type for a numeric
   column, a value outside its declared bounds, a dynamic session gap that is
   not a positive int, a duplicate event id (the first row of an id in (event
   time, arrival) order is kept; ids seen in earlier batches are remembered
   while their event time is above ``watermark - horizon``, the watermark as
   it stood at the start of the batch). Quarantined rows never move the
   watermark.
2. The batch's elements are processed in (timestamp, arrival sequence)
   order; the timestamp is the event time, or the processing time for
   processing-time assigners. Each is assigned to windows. For merging
   (session) assigners the new window is merged first with the key's open
   windows it intersects or touches (transitively, as Flink's
   ``MergingWindowSet``): the merged window's accumulators are the merge of
   the parts' (``AggregateFunction.merge``), its buffers their union, the
   trigger's ``on_merge`` runs on it, and the merged-away windows' trigger
   state and timers are cleared. ALL of the batch's windows merge first (so
   the result does not depend on the order of the batch's elements), then the
   elements are added to their merged windows. A window is *late* when its
   cleanup time ``max_ts + allowed_lateness <= wm`` where ``wm`` is the
   watermark as it stood at the START of the batch; late windows are skipped
   (merging comes first, so a late element that touches an open session, or
   another element of its batch that does, is NOT late: it joins it). An element added to no window that is itself late
   (``ts + L <= wm``) goes to the late output; one in no window but not late
   (a sliding gap) is counted as unassigned.
3. For every window the element was added to, the trigger's ``on_element``
   runs and may fire (count triggers fire here, exactly every n elements).
4. The processing-time clock moves to the latest row's processing time, the
   watermark advances (:mod:`windowing.core.watermarks`), then every timer
   at or below it fires in timestamp order: event-time timers, then
   processing-time timers, repeated while firings register due timers. A
   window emits at most ONE time-driven pane per timer phase: a later firing
   in the same phase only updates that pane's timing (nothing was added in
   between, so its contents are the same or were purged).
5. Cleanup: an event-time window at ``max_ts + L`` (event time), a
   processing-time window at ``max_ts`` (processing time); global windows
   never end.

With a batch of one element this is Flink's per-element behaviour. A flush
moves the watermark AND the processing time to +infinity, after the
(empty) batch: every time window fires if its trigger says so and is cleaned.
"""
from __future__ import annotations

import copy
import heapq
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

import time as _time

from windowing.core.aggregates import add_element
from windowing.core.assigners import GlobalWindows, InvalidGapError, merge_windows
from windowing.core.functions import ProcessContext
from windowing.core.records import (
    EARLY, LATE, LATE_BEYOND_ALLOWED_LATENESS, LATE_PROCESSING_TIME_WINDOW_FIRED, ON_TIME, QUARANTINE_INVALID_INGESTION_TIME,
    QUARANTINE_INVALID_SESSION_GAP, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY, QUARANTINE_UNKNOWN_SOURCE,
    QUARANTINE_UNPARSEABLE_EVENT_TIME, QUARANTINE_DUPLICATE_EVENT, QUARANTINE_FAR_FUTURE_EVENT_TIME,
    QUARANTINE_VALUE_OUT_OF_BOUNDS, QUARANTINE_WRONG_TYPE, BatchResult, LateElement, Pane, QuarantinedRow)
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS, saturating_add
from windowing.core.triggers import TriggerResult
from windowing.core.watermarks import SINGLE_SOURCE, WatermarkTracker, tracker_for
from windowing.core.windows import Window

EVENT, PROCESSING = "event", "processing"


@dataclass
class _WindowState:
    """Contents and trigger state of one (key, window)."""

    accumulators: list | None = None   # incremental aggregates; None = no contents
    elements: list | None = None       # (ts, seq, row) buffer when an evictor or process function is set
    pane_index: int = 0
    trigger_state: dict = field(default_factory=dict)
    superseded: tuple = ()             # windows merged into this one since its last pane (that had panes)
    emitted: bool = False              # this window (as it is now) emitted a pane


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Context:
    """The TriggerContext (and OnMergeContext) of one (key, window) call."""

    def __init__(self, operator: "ReferenceOperator", key: tuple, window: Window, state: _WindowState,
                 merged: list[_WindowState] | None = None):
        self._op, self._key, self._window, self._state = operator, key, window, state
        self._merged = merged or []

    @property
    def current_watermark_ms(self) -> int:
        return self._op.current_watermark_ms

    @property
    def current_processing_time_ms(self) -> int:
        return self._op.current_processing_time_ms

    def register_event_time_timer(self, time_ms: int) -> None:
        self._op._register_timer(EVENT, time_ms, self._key, self._window)

    def delete_event_time_timer(self, time_ms: int) -> None:
        if not self._is_cleanup_timer(EVENT, time_ms):
            self._op._timers[EVENT].discard((time_ms, self._key, self._window))

    def register_processing_time_timer(self, time_ms: int) -> None:
        self._op._register_timer(PROCESSING, time_ms, self._key, self._window)

    def delete_processing_time_timer(self, time_ms: int) -> None:
        if not self._is_cleanup_timer(PROCESSING, time_ms):
            self._op._timers[PROCESSING].discard((time_ms, self._key, self._window))

    def _is_cleanup_timer(self, domain: str, time_ms: int) -> bool:
        """The operator's own cleanup timer of the window, which a trigger cannot delete.

        A trigger timer at the cleanup time is the same timer (one per time, key and window, as in
        Flink's timer service). Flink lets a trigger delete it, and the window is then never
        cleaned (e.g. early firings on processing-time windows: an early timer at ``max_ts``
        deleted by the end-of-window firing). The contract is that a window's state is gone at its
        cleanup time, so the timer stays; it still fires the trigger, which ignores a timer it
        no longer expects.
        """
        own = EVENT if self._op.spec.is_event_time else PROCESSING
        return (domain == own and not self._window.is_global
                and time_ms == self._op._cleanup_time(self._window))

    def get_state(self, name: str, default: Any = None) -> Any:
        return self._state.trigger_state.get(name, default)

    def set_state(self, name: str, value: Any) -> None:
        self._state.trigger_state[name] = value

    def clear_state(self, name: str) -> None:
        self._state.trigger_state.pop(name, None)

    def merged_state_values(self, name: str) -> list:
        """``on_merge`` only: the values of state ``name`` in the windows being merged (those that have it)."""
        return [s.trigger_state[name] for s in self._merged if name in s.trigger_state]

    def merge_state(self, name: str, combine) -> None:
        """``on_merge`` only: set state ``name`` to the merged windows' values folded with ``combine``."""
        values = self.merged_state_values(name)
        if values:
            merged = values[0]
            for value in values[1:]:
                merged = combine(merged, value)
            self._state.trigger_state[name] = merged


class ReferenceOperator:
    """A window operator over Python dict rows (event time in epoch ms).

    Not fast and not meant to be: it is the oracle every executor is checked
    against. State lives in plain dicts; :meth:`open_windows` exposes it.
    """

    def __init__(self, spec: WindowSpec):
        self.spec = spec
        self._windows: dict[tuple[tuple, Window], _WindowState] = {}
        self._by_key: dict[tuple, set] = {}
        self._timers: dict[str, set] = {EVENT: set(), PROCESSING: set()}
        self._heaps: dict[str, list] = {EVENT: [], PROCESSING: []}
        self._next_seq = 0
        self._seen_ids: dict[Any, int] = {}   # event id -> event time, for de-duplication
        self.current_processing_time_ms = MIN_TIMESTAMP_MS
        self._pt_late_at_or_below_ms = MIN_TIMESTAMP_MS
        self._tracker = tracker_for(spec)
        self.max_seen_timestamp_ms: int | None = None
        self._phase_panes: dict | None = None

    @property
    def current_watermark_ms(self) -> int:
        return self._tracker.current_ms

    # ------------------------------------------------------------------ API
    def process_batch(self, rows: Iterable[Mapping[str, Any]], batch_id: int, watermark_ms: int | None = None,
                      processing_time_ms: int | None = None, *, ends_input: bool = False,
                      _clock_after_rows_ms: int | None = None, _first_row_pt_ms: int | None = None) -> BatchResult:
        """Process one batch of rows and return what it emitted.

        Args:
            rows: dicts with the spec's columns; the event-time column holds
                epoch milliseconds (int) or None.
            batch_id: recorded on every output row.
            watermark_ms: an explicit watermark advance (never moves it back).
            processing_time_ms: the processing time at which the batch
                arrives (the injectable clock; never moves back). Rows without
                an ingestion-time column get this processing time. It is also the
                reference of ``max_event_time_skew`` (default there: the wall clock).
            ends_input: the batch is the input's last: its rows are processed at the clock
                as it stood (the batch's processing time is not applied), then the watermark
                and the clock go to +infinity (every time window fires and is cleaned).
        """
        spec = self.spec
        if ends_input:
            watermark_ms = MAX_TIMESTAMP_MS
        # Far-future rows are judged against the batch's processing time (the wall clock
        # when the caller gives none); the model's own clock moves only when given one.
        skew_reference_ms = processing_time_ms if processing_time_ms is not None else int(_time.time() * 1000)
        wm_start = self.current_watermark_ms
        result = BatchResult(batch_id, wm_start, wm_start)
        metrics = result.metrics
        self._cleaned_this_batch: set = set()
        clock_before = self.current_processing_time_ms
        moves_clock = processing_time_ms is not None and processing_time_ms > clock_before and not ends_input
        arrival_ms = processing_time_ms if moves_clock else clock_before

        elements = []
        for row in rows:
            metrics.input_rows += 1
            element = self._parse(dict(row), batch_id, result, skew_reference_ms, arrival_ms)
            if element is not None:
                elements.append(element)
        if spec.input.dedup_column is not None:
            elements = self._drop_duplicates(elements, wm_start, result)
        metrics.quarantined_rows = len(result.quarantined)

        if moves_clock:
            # Timers due BEFORE the rows arrived fire first: those strictly below the batch's
            # earliest processing time (its own, or an older ingestion time a row replays; a
            # run of one key gets the whole batch's). Those at or after it fire after the rows.
            first_ms = pre_rows_below_ms(processing_time_ms,
                                         _first_row_pt_ms if _first_row_pt_ms is not None
                                         else min((e[2] for e in elements), default=None))
            self.current_processing_time_ms = max(clock_before, first_ms - 1)
            self._run_timer_phase(wm_start, result, domains=(PROCESSING,))
        # Processing-time windows whose end the clock has reached fired and were cleaned: a row
        # that belongs only to such windows is late (judged against the clock, as event-time
        # rows are against the watermark at the start of the batch).
        self._pt_late_at_or_below_ms = self.current_processing_time_ms
        if moves_clock:
            self._set_clock(processing_time_ms)

        ordered = sorted(elements, key=lambda e: (e[0], e[1]))
        if spec.is_merging:
            self._merge_batch(ordered, wm_start)
        for ts, seq, pt, source, key, row, windows in ordered:
            if spec.is_merging:
                windows = tuple(w for w in (self._session_of(key, window) for window in windows) if w is not None)
            self._process_element(ts, seq, key, row, windows, wm_start, result)
        for ts, seq, pt, source, key, row, windows in elements:
            event_ts = row[spec.event_time_column] if spec.event_time_column is not None else None
            self._tracker.observe(source, event_ts, pt)
            if event_ts is not None and (self.max_seen_timestamp_ms is None or event_ts > self.max_seen_timestamp_ms):
                self.max_seen_timestamp_ms = event_ts
        if elements:
            self._set_clock(max(e[2] for e in elements))
        if _clock_after_rows_ms is not None:
            # One key of a batch run alone (run_key_batch): the clock after the rows is the
            # whole batch's, which the key's own rows may not reach.
            self._set_clock(_clock_after_rows_ms)
        if ends_input:
            self._set_clock(MAX_TIMESTAMP_MS)
        self._tracker.advance(self.current_processing_time_ms, watermark_ms)
        self._run_timer_phase(wm_start, result, domains=(EVENT, PROCESSING))
        result.watermark_after_ms = self.current_watermark_ms
        self._mark_final_panes(result)
        metrics.panes_emitted = len(result.panes)
        metrics.windows_cleaned = len(self._cleaned_this_batch)
        return result

    def advance_processing_time(self, processing_time_ms: int, batch_id: int) -> BatchResult:
        """The clock moves to ``processing_time_ms`` with no data: due processing-time timers fire
        (and an idle source may move the watermark)."""
        return self.process_batch([], batch_id, processing_time_ms=processing_time_ms)

    def _value_problem(self, ts: int | None, row: Mapping[str, Any], processing_time_ms: int) -> str | None:
        """The quarantine reason of a row with a valid key and event time, or None."""
        spec = self.spec
        skew = spec.input.max_event_time_skew_ms
        if skew is not None and ts is not None and ts > processing_time_ms + skew:
            return QUARANTINE_FAR_FUTURE_EVENT_TIME
        for column in spec.numeric_columns:
            value = row.get(column)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                return QUARANTINE_WRONG_TYPE
        for column in spec.input.bounds_by_column:
            if spec.input.out_of_bounds(column, row.get(column)):
                return QUARANTINE_VALUE_OUT_OF_BOUNDS
        return None

    def _drop_duplicates(self, elements: list, wm_start: int, result: BatchResult) -> list:
        """Quarantine repeated event ids; remember the kept ones (null ids are never duplicates)."""
        column, horizon = self.spec.input.dedup_column, self.spec.input.dedup_horizon_ms
        forget_at_or_below = wm_start - horizon
        self._seen_ids = {i: t for i, t in self._seen_ids.items() if t > forget_at_or_below}
        kept = []
        for element in sorted(elements, key=lambda e: (e[0], e[1])):
            event_id = element[5].get(column)
            if event_id is not None and event_id in self._seen_ids:
                result.quarantined.append(QuarantinedRow(element[5], QUARANTINE_DUPLICATE_EVENT, result.batch_id))
                continue
            if event_id is not None:
                self._seen_ids[event_id] = element[0]
            kept.append(element)
        return kept

    def flush(self, batch_id: int) -> BatchResult:
        """End of input: watermark and processing time to +infinity (fires and cleans every time window)."""
        return self.process_batch([], batch_id, watermark_ms=MAX_TIMESTAMP_MS, ends_input=True)

    def open_windows(self) -> list[tuple[tuple, Window]]:
        return sorted(self._windows, key=repr)

    # ------------------------------------------------ one key's state (run_key_batch)
    def _import_key(self, key: tuple, state: "KeyState") -> None:
        for window, window_state in state.windows.items():
            self._windows[(key, window)] = window_state
            self._by_key.setdefault(key, set()).add(window)
        for domain, timers in state.timers.items():
            for time_ms, window in timers:
                self._register_timer(domain, time_ms, key, window)
        self._next_seq = state.next_seq

    def _export_key(self, key: tuple) -> "KeyState | None":
        windows = {w: self._windows[(key, w)] for w in sorted(self._by_key.get(key, ()), key=repr)}
        timers = {domain: sorted(((t, w) for t, k, w in self._timers[domain] if k == key), key=repr)
                  for domain in (EVENT, PROCESSING)}
        if not windows and not any(timers.values()):
            return None
        return KeyState(windows, timers, self._next_seq)

    # ---------------------------------------------------------- the elements
    def _set_clock(self, time_ms: int) -> None:
        self.current_processing_time_ms = max(self.current_processing_time_ms, time_ms)
        self._tracker.note_processing_time(self.current_processing_time_ms)

    def _parse(self, row: dict, batch_id: int, result: BatchResult, skew_reference_ms: int, arrival_ms: int):
        """An element tuple, or None after quarantining the row with its reason."""
        spec = self.spec

        def quarantine(reason):
            result.quarantined.append(QuarantinedRow(row, reason, batch_id))

        key = tuple(row.get(c) for c in spec.key_columns)
        if any(k is None for k in key):
            return quarantine(QUARANTINE_NULL_KEY)
        event_ts = None
        if spec.event_time_column is not None:
            event_ts = row.get(spec.event_time_column)
            if event_ts is None:
                return quarantine(QUARANTINE_NULL_EVENT_TIME)
            if not _is_int(event_ts):
                return quarantine(QUARANTINE_UNPARSEABLE_EVENT_TIME)
        pt = arrival_ms
        if spec.input.ingestion_time_column is not None:
            pt = row.get(spec.input.ingestion_time_column)
            if not _is_int(pt):
                return quarantine(QUARANTINE_INVALID_INGESTION_TIME)
        source = SINGLE_SOURCE
        if spec.input.source_column is not None:
            source = row.get(spec.input.source_column)
            if source not in spec.input.sources:
                return quarantine(QUARANTINE_UNKNOWN_SOURCE)
        problem = self._value_problem(event_ts, row, skew_reference_ms)
        if problem is not None:
            return quarantine(problem)
        ts = pt if self._by_pt else event_ts
        try:
            windows = spec.assigner.assign(ts, row)
        except InvalidGapError:
            return quarantine(QUARANTINE_INVALID_SESSION_GAP)
        seq = self._next_seq
        self._next_seq += 1
        return (ts, seq, pt, source, key, row, windows)

    @property
    def _by_pt(self) -> bool:
        """Processing-time assigners assign (and order) by processing time."""
        return not self.spec.is_event_time and not isinstance(self.spec.assigner, GlobalWindows)

    def _cleanup_time(self, window: Window) -> int:
        if window.is_global:
            return MAX_TIMESTAMP_MS
        if self.spec.is_event_time:
            return saturating_add(window.max_timestamp_ms, self.spec.allowed_lateness_ms)
        return window.max_timestamp_ms

    def _is_window_late(self, window: Window, wm_start: int) -> bool:
        if self._by_pt:
            return self._cleanup_time(window) <= self._pt_late_at_or_below_ms
        return self.spec.is_event_time and self._cleanup_time(window) <= wm_start

    def _process_element(self, ts, seq, key, row, windows, wm_start, result) -> None:
        spec, metrics = self.spec, result.metrics
        added = False
        for window in windows:
            if self._is_window_late(window, wm_start):
                continue  # Flink: isWindowLate
            added = True
            state = self._windows.get((key, window))
            if state is None:
                state = self._windows[(key, window)] = _WindowState()
                self._by_key.setdefault(key, set()).add(window)
            self._add(state, ts, seq, row)
            trigger_result = spec.trigger.on_element(row, ts, window, _Context(self, key, window, state))
            if trigger_result.is_fire:
                self._emit(key, window, state, self._timing(window, None, None, wm_start), wm_start, result)
            if trigger_result.is_purge:
                self._purge(state)
            cleanup = self._cleanup_time(window)
            if cleanup != MAX_TIMESTAMP_MS:
                self._register_timer(EVENT if spec.is_event_time else PROCESSING, cleanup, key, window)
        if added:
            metrics.accepted_rows += 1
        elif spec.is_event_time and saturating_add(ts, spec.allowed_lateness_ms) <= wm_start:
            self._late(key, ts, row, LATE_BEYOND_ALLOWED_LATENESS, wm_start, result)
        elif self._by_pt and ts <= self._pt_late_at_or_below_ms:
            self._late(key, ts, row, LATE_PROCESSING_TIME_WINDOW_FIRED, self._pt_late_at_or_below_ms, result)
        else:
            metrics.unassigned_rows += 1

    def _late(self, key, ts: int, row: dict, reason: str, judged_against_ms: int, result: BatchResult) -> None:
        """A row late for every window it belongs to: to the late output (with the watermark, or for
        processing-time windows the clock, it was judged against), or counted as dropped."""
        if self.spec.late_output:
            result.late.append(LateElement(key, ts, row, reason, judged_against_ms, result.batch_id))
            result.metrics.late_rows += 1
        else:
            result.metrics.dropped_late_rows += 1

    def _merge_batch(self, ordered_elements, wm_start: int) -> None:
        """Merge the batch's session windows with the open ones, before any element is added.

        Every element's window joins its key's window set (Flink adds a window
        to the MergingWindowSet before the late check), so elements of one
        batch that bridge each other or an open session merge whatever their
        order. Then the windows that are late after all merging (made of this
        batch's windows only: open ones are never late) are retired; their
        elements end up late.
        """
        keys = set()
        for _, _, _, _, key, _, windows in ordered_elements:
            keys.add(key)
            for window in windows:
                actual = self._merge_in(key, window, wm_start)
                if (key, actual) not in self._windows:
                    self._windows[(key, actual)] = _WindowState()
                    self._by_key.setdefault(key, set()).add(actual)
        for key in keys:
            for window in sorted(self._by_key.get(key, ())):
                if self._is_window_late(window, wm_start):
                    del self._windows[(key, window)]
                    self._by_key[key].discard(window)
                    self._delete_timers(key, window)

    def _session_of(self, key: tuple, window: Window) -> Window | None:
        """The key's open (merged) window that covers ``window``, if it was not retired as late."""
        for candidate in self._by_key.get(key, ()):
            if candidate.start_ms <= window.start_ms and window.end_ms <= candidate.end_ms:
                return candidate
        return None

    def _merge_in(self, key: tuple, new: Window, wm_start: int) -> Window:
        """Add ``new`` to the key's open (merging) windows; returns the window the element belongs to.

        Flink's ``MergingWindowSet.addWindow``: the group of open windows the
        new one intersects or touches (transitively) merges into their cover.
        A new window inside an existing one merges nothing.
        """
        open_windows = self._by_key.get(key, set())
        group = next(members for cover, members in merge_windows(open_windows | {new}) if new in members)
        existing = [w for w in group if w != new or w in open_windows]
        cover = group[0]
        for w in group[1:]:
            cover = cover.cover(w)
        if not existing:
            return new
        if len(existing) == 1 and existing[0] == cover:
            return cover  # inside an open window: nothing is extended
        states = [self._windows[(key, w)] for w in existing]
        merged = _WindowState(pane_index=max(s.pane_index for s in states))
        merged.superseded = tuple(sorted(
            {sup for s in states for sup in s.superseded}
            | {(w.start_ms, w.end_ms) for w, s in zip(existing, states) if s.emitted and w != cover}))
        accumulators = [s.accumulators for s in states if s.accumulators is not None]
        if accumulators:
            merged.accumulators = accumulators[0]
            for other in accumulators[1:]:
                merged.accumulators = [agg.merge(a, b) for (_, agg), a, b
                                       in zip(self.spec.aggregates, merged.accumulators, other)]
        buffers = [e for s in states for e in (s.elements or [])]
        if any(s.elements is not None for s in states):
            merged.elements = sorted(buffers, key=lambda e: (e[0], e[1]))
        self.spec.trigger.on_merge(cover, _Context(self, key, cover, merged, merged=states))
        for w, s in zip(existing, states):
            if w != cover:
                self.spec.trigger.clear(w, _Context(self, key, w, s))
            del self._windows[(key, w)]
            open_windows.discard(w)
            self._delete_timers(key, w, keep_if=w == cover)
        self._windows[(key, cover)] = merged
        self._by_key.setdefault(key, set()).add(cover)
        return cover

    def _add(self, state: _WindowState, ts: int, seq: int, row: dict) -> None:
        if self.spec.needs_buffers:
            state.elements = (state.elements or []) + [(ts, seq, row)]
            return
        if state.accumulators is None:
            state.accumulators = [agg.create_accumulator() for _, agg in self.spec.aggregates]
        state.accumulators = [add_element(agg, ts, seq, row, acc)
                              for (_, agg), acc in zip(self.spec.aggregates, state.accumulators)]

    def _purge(self, state: _WindowState) -> None:
        state.accumulators = None
        state.elements = None

    # ------------------------------------------------------------------ timers
    def _register_timer(self, domain: str, time_ms: int, key: tuple, window: Window) -> None:
        timer = (time_ms, key, window)
        if timer not in self._timers[domain]:
            self._timers[domain].add(timer)
            heapq.heappush(self._heaps[domain], (time_ms, repr(key), repr(window), key, window))

    def _delete_timers(self, key: tuple, window: Window, keep_if: bool = False) -> None:
        if keep_if:
            return
        for domain in (EVENT, PROCESSING):
            self._timers[domain] = {t for t in self._timers[domain] if not (t[1] == key and t[2] == window)}

    def _due(self, domain: str) -> bool:
        now = self.current_watermark_ms if domain == EVENT else self.current_processing_time_ms
        heap = self._heaps[domain]
        while heap and (heap[0][0], heap[0][3], heap[0][4]) not in self._timers[domain]:
            heapq.heappop(heap)  # deleted timers
        return bool(heap) and heap[0][0] <= now

    def _run_timer_phase(self, wm_start: int, result: BatchResult, domains: tuple[str, ...]) -> None:
        self._phase_panes = {}
        while any(self._due(d) for d in domains):
            for domain in domains:
                while self._due(domain):
                    time_ms, _, _, key, window = heapq.heappop(self._heaps[domain])
                    self._timers[domain].discard((time_ms, key, window))
                    self._fire_timer(domain, time_ms, key, window, wm_start, result)
        self._phase_panes = None

    def _fire_timer(self, domain, time_ms, key, window, wm_start, result) -> None:
        state = self._windows.get((key, window))
        if state is None:
            return
        ctx = _Context(self, key, window, state)
        if domain == EVENT:
            trigger_result = self.spec.trigger.on_event_time(time_ms, window, ctx)
        else:
            method = getattr(self.spec.trigger, "on_processing_time", None)
            trigger_result = method(time_ms, window, ctx) if method else TriggerResult.CONTINUE
        if trigger_result.is_fire:
            self._emit(key, window, state, self._timing(window, domain, time_ms, wm_start),
                       self.current_watermark_ms, result, time_driven=True)
        if trigger_result.is_purge:
            self._purge(state)
        own_domain = EVENT if self.spec.is_event_time else PROCESSING
        if domain == own_domain and not window.is_global and time_ms == self._cleanup_time(window):
            self.spec.trigger.clear(window, _Context(self, key, window, state))
            del self._windows[(key, window)]
            self._by_key[key].discard(window)
            self._delete_timers(key, window)
            self._cleaned_this_batch.add((key, window))

    def _timing(self, window: Window, domain: str | None, time_ms: int | None, wm_start: int) -> str:
        """EARLY / ON_TIME / LATE of a firing (domain None: fired by an element)."""
        if window.is_global:
            return ON_TIME
        if not self.spec.is_event_time:  # processing-time windows are never late
            if domain == PROCESSING and time_ms >= window.max_timestamp_ms:
                return ON_TIME
            return EARLY if window.max_timestamp_ms > self.current_processing_time_ms else ON_TIME
        if domain == EVENT:
            if time_ms < window.max_timestamp_ms:
                return EARLY
            return ON_TIME if window.max_timestamp_ms > wm_start else LATE
        reference_wm = wm_start if domain is None else self.current_watermark_ms
        return EARLY if window.max_timestamp_ms > reference_wm else LATE

    # ------------------------------------------------------------------ output
    def _emit(self, key, window, state: _WindowState, timing: str, wm: int, result: BatchResult,
              time_driven: bool = False) -> None:
        ident = (key, window)
        earlier = self._phase_panes.get(ident) if (time_driven and self._phase_panes is not None) else None
        contents = self._contents(key, window, state, timing)
        if earlier is not None:
            # A second time-driven firing in one phase: same contents (or purged); keep one pane.
            pane = result.panes[earlier]
            changes = dict(timing=timing, watermark_ms=wm)
            if contents is not None:
                changes["values"], changes["rows"] = contents
            result.panes[earlier] = replace(pane, **changes)
            return
        if contents is None:
            return  # Flink: no contents, nothing to emit
        values, rows = contents
        result.panes.append(Pane(key, window.start_ms, window.end_ms, values, state.pane_index, timing,
                                 False, wm, result.batch_id, supersedes=state.superseded, rows=rows))
        state.pane_index += 1
        state.superseded = ()
        state.emitted = True
        if time_driven and self._phase_panes is not None:
            self._phase_panes[ident] = len(result.panes) - 1

    def _contents(self, key, window, state: _WindowState, timing: str):
        """``(values, rows)`` of a firing, or None when the window has no contents.

        Evictors run here (before or after the function, as Flink's
        EvictingWindowOperator); what they evict leaves the buffer for good.
        """
        spec = self.spec
        if not spec.needs_buffers:
            if state.accumulators is None:
                return None
            values = {name: agg.get_result(acc) for (name, agg), acc in zip(spec.aggregates, state.accumulators)}
            return copy.deepcopy(values), None  # a snapshot: later adds must not change an emitted pane
        if not state.elements:
            return None
        evictor = spec.evictor
        if evictor is not None and not evictor.do_evict_after:
            state.elements = evictor.evict(state.elements)
        rows = [row for _, _, row in state.elements]
        if spec.process_function is not None:
            context = ProcessContext(window.start_ms, window.end_ms, self.current_watermark_ms,
                                     self.current_processing_time_ms, timing, state.pane_index)
            out = spec.process_function.run(key, context, copy.deepcopy(rows), spec.input_columns)
            values, emitted = {}, tuple(copy.deepcopy(out))
        else:
            values = {}
            for name, agg in spec.aggregates:
                acc = agg.create_accumulator()
                for ts, seq, row in state.elements:
                    acc = add_element(agg, ts, seq, row, acc)
                values[name] = copy.deepcopy(agg.get_result(acc))
            emitted = None
        if evictor is not None and evictor.do_evict_after:
            state.elements = evictor.evict(state.elements)
        return values, emitted

    def _mark_final_panes(self, result: BatchResult) -> None:
        last_by_window: dict = {}
        for i, pane in enumerate(result.panes):
            last_by_window[(pane.key, pane.window_start_ms, pane.window_end_ms)] = i
        cleaned = {(key, w.start_ms, w.end_ms) for key, w in self._cleaned_this_batch}
        for ident, i in last_by_window.items():
            if ident in cleaned:
                result.panes[i] = replace(result.panes[i], is_final=True)


# ------------------------------------------------------------ one key at a time
#
# An executor that runs the model per key (windowing/spark/keyed/executor.py) splits the
# operator in two: the batch-wide part (quarantine, de-duplication, the
# watermark and the processing-time clock) and the per-key part (windows,
# triggers, timers, evictors, functions). Keys never share windows or timers,
# so running the keys of a batch one by one, each with the batch-wide
# watermarks and clock, gives exactly the panes and late rows of one model run.


@dataclass(frozen=True)
class KeyBatchClock:
    """The batch-wide times one key's run of a batch needs.

    Attributes:
        batch_id: recorded on every pane.
        watermark_start_ms: the watermark at the start of the batch (lateness is judged against it).
        watermark_end_ms: the watermark after the batch's rows (every timer at or below it fires).
        processing_time_before_ms: the operator's clock before the batch.
        processing_time_ms: the batch's arrival processing time, as given to ``process_batch``.
        processing_time_end_ms: the clock after the batch's rows (the latest row's processing time
            over the WHOLE batch, not only this key's rows).
        flush: end of input: the clock goes to +infinity after the rows.
        first_row_processing_time_ms: the smallest processing time of the WHOLE batch's
            non-quarantined rows, or None (see :func:`pre_rows_below_ms`).
    """

    batch_id: int
    watermark_start_ms: int
    watermark_end_ms: int
    processing_time_before_ms: int
    processing_time_ms: int | None
    processing_time_end_ms: int
    flush: bool = False
    first_row_processing_time_ms: int | None = None

    def __post_init__(self) -> None:
        if self.watermark_end_ms < self.watermark_start_ms:
            raise ValueError(f"watermark_end_ms {self.watermark_end_ms} is below watermark_start_ms "
                             f"{self.watermark_start_ms}: a watermark never moves back")
        if self.processing_time_end_ms < self.processing_time_before_ms:
            raise ValueError(f"processing_time_end_ms {self.processing_time_end_ms} is below "
                             f"processing_time_before_ms {self.processing_time_before_ms}: the clock never moves back")


@dataclass
class KeyState:
    """Everything the model keeps for one key between batches (picklable).

    ``windows`` maps each open window to its contents and trigger state,
    ``timers`` each domain (``"event"``, ``"processing"``) to its sorted
    ``(time_ms, window)`` timers, ``next_seq`` continues the key's arrival
    sequence (it orders equal timestamps in element buffers).
    """

    windows: dict
    timers: dict
    next_seq: int = 0

    def next_timer_ms(self, domain: str) -> int | None:
        """The earliest timer of ``domain``, or None: a batch must wake the key once it is due."""
        timers = self.timers.get(domain) or ()
        return min((t for t, _ in timers), default=None)


def pre_rows_below_ms(processing_time_ms: int, first_row_pt_ms: int | None) -> int:
    """Processing-time timers strictly below this fire before a batch's rows (when the batch moves the clock).

    The rows of a batch are processed as of their own processing times: the clock stops just
    before the earliest of the batch's processing time and its valid rows' processing times
    (a replayed row's ingestion time may be older than the batch). In Flink processing time
    never goes back; this is the extension that keeps a replayed row out of a window the
    clock has not yet closed for it.

    Args:
        processing_time_ms: the batch's processing time (above the clock before the batch).
        first_row_pt_ms: the smallest processing time of the batch's non-quarantined rows, or None.
    """
    return processing_time_ms if first_row_pt_ms is None else min(processing_time_ms, first_row_pt_ms)


class _DrivenWatermark:
    """A watermark decided for the whole batch by the caller: the start value, then the end value."""

    def __init__(self, start_ms: int, end_ms: int):
        self.current_ms, self._end_ms = start_ms, end_ms

    def observe(self, source: str, event_time_ms: int | None, processing_time_ms: int) -> None:
        pass  # the batch-wide tracker saw every key's rows

    def note_processing_time(self, now_ms: int) -> None:
        pass

    def advance(self, now_ms: int, explicit_ms: int | None = None) -> int:
        self.current_ms = max(self.current_ms, self._end_ms)
        return self.current_ms


def batch_clock(tracker: WatermarkTracker, processing_time_before_ms: int, batch_id: int,
                source_maxima: Mapping[str, tuple[int | None, int]], watermark_ms: int | None = None,
                processing_time_ms: int | None = None, flush: bool = False,
                first_row_processing_time_ms: int | None = None,
                source_top_event_times_ms: Mapping[str, Sequence[int]] | None = None) -> KeyBatchClock:
    """The batch-wide part of :meth:`ReferenceOperator.process_batch`, from per-source maxima.

    Advances ``tracker`` (the operator's, kept between batches) exactly as
    the model does: the batch's arrival time moves the clock, every source
    that sent accepted-or-late rows is observed with its largest event time
    (its largest n when the strategy confirms with n rows) and processing
    time (the tracker keeps maxima, so these are all it needs), the clock moves to the latest row's processing time (+infinity
    on a flush), then the watermark advances.

    Args:
        tracker: the operator's watermark tracker (mutated).
        processing_time_before_ms: the operator's clock before the batch.
        source_maxima: source name -> (largest event time or None, largest processing time)
            of the batch's non-quarantined rows; sources without rows are left out.
        watermark_ms, processing_time_ms: as given to ``process_batch``.
        flush: end of input (watermark and clock to +infinity).
        first_row_processing_time_ms: the smallest processing time of the batch's non-quarantined rows.
        source_top_event_times_ms: source name -> the batch's largest event times of that source's
            non-quarantined rows, as many as ``tracker.top_event_times_needed`` (all of them when
            fewer); required when the watermark strategy confirms with more than one row.

    Raises:
        ValueError: the strategy needs several top event times and a source's are missing.
    """
    needed = tracker.top_event_times_needed
    missing = sorted(s for s, (max_ts, _) in source_maxima.items()
                     if max_ts is not None and s not in (source_top_event_times_ms or {}))
    if needed > 1 and missing and not flush:   # a flush moves the watermark to +infinity anyway
        raise ValueError(f"the watermark follows the {needed}th largest event time: batch_clock needs the "
                         f"largest {needed} event times of source(s) {missing} in source_top_event_times_ms")
    wm_start = tracker.current_ms
    clock = processing_time_before_ms
    if processing_time_ms is not None and processing_time_ms > clock and not flush:
        clock = processing_time_ms
        tracker.note_processing_time(clock)
    for source, (max_ts, max_pt) in source_maxima.items():
        tops = (source_top_event_times_ms or {}).get(source)
        if needed > 1 and tops is not None:
            tracker.observe_batch(source, tops, max_pt)
        else:
            tracker.observe(source, max_ts, max_pt)
    if source_maxima:
        clock = max(clock, max(pt for _, pt in source_maxima.values()))
        tracker.note_processing_time(clock)
    if flush:
        clock = MAX_TIMESTAMP_MS
        tracker.note_processing_time(clock)
        watermark_ms = MAX_TIMESTAMP_MS
    tracker.advance(clock, watermark_ms)
    return KeyBatchClock(batch_id, wm_start, tracker.current_ms, processing_time_before_ms, processing_time_ms,
                         clock, flush, first_row_processing_time_ms)


def run_key_batch(spec: WindowSpec, key: tuple, state: KeyState | None, rows: Iterable[Mapping[str, Any]],
                  clock: KeyBatchClock) -> tuple[BatchResult, KeyState | None]:
    """Run one key's part of a batch: the key's rows (in arrival order) against its state.

    The rows must be this key's rows that passed the batch-wide checks
    (quarantine, de-duplication); they are processed by the model with the
    batch's watermarks and clock. Returns what the key emitted (panes, late
    elements, its share of the metrics) and its new state, or None when the
    key keeps nothing (no window, no timer).
    """
    operator = ReferenceOperator(spec)
    operator._tracker = _DrivenWatermark(clock.watermark_start_ms, clock.watermark_end_ms)
    operator.current_processing_time_ms = clock.processing_time_before_ms
    if state is not None:
        operator._import_key(key, state)
    result = operator.process_batch(
        rows, clock.batch_id, processing_time_ms=None if clock.flush else clock.processing_time_ms,
        ends_input=clock.flush, _clock_after_rows_ms=clock.processing_time_end_ms,
        _first_row_pt_ms=clock.first_row_processing_time_ms)
    return result, operator._export_key(key)
