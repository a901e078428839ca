"""The per-key path's algorithm in plain Python: the reference model run one key at a time.

The per-key executor on Spark (windowing/spark/keyed/executor.py) runs the batch-wide part of a batch
(quarantine, de-duplication, watermark, clock) once and then each key alone with
``run_key_batch``, its state pickled between batches. :class:`SplitByKey` does the same split
over dict rows, so a mistake in the split shows up on every transcript without Spark (the
``model_per_key`` executor of the transcripts).
"""
from __future__ import annotations

import pickle

from windowing.core.records import BatchMetrics, BatchResult
from windowing.core.reference import EVENT, PROCESSING, ReferenceOperator, batch_clock, run_key_batch
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import tracker_for


class SplitByKey:
    """The keyed executor's algorithm over dict rows, with pickled per-key state."""

    def __init__(self, spec):
        self.spec = spec
        self.gate = ReferenceOperator(spec)    # only its row checks and de-duplication
        self.tracker = tracker_for(spec)
        self.clock_ms = MIN_TIMESTAMP_MS
        self.states: dict[tuple, bytes] = {}

    def process_batch(self, rows, batch_id, watermark_ms=None, processing_time_ms=None, flush=False):
        spec = self.spec
        result = BatchResult(batch_id, self.tracker.current_ms, self.tracker.current_ms)
        arrival = self.clock_ms
        if processing_time_ms is not None and processing_time_ms > arrival and not flush:
            arrival = processing_time_ms
        self.gate.current_processing_time_ms = arrival
        skew_reference = processing_time_ms if processing_time_ms is not None else MAX_TIMESTAMP_MS // 2
        elements = []
        for row in rows:
            element = self.gate._parse(dict(row), batch_id, result, skew_reference, arrival)
            if element is not None:
                elements.append(element)
        if spec.input.dedup_column is not None:
            elements = self.gate._drop_duplicates(elements, self.tracker.current_ms, result)
        elements.sort(key=lambda e: e[1])   # arrival order
        maxima: dict = {}
        for ts, seq, pt, source, key, row, _ in elements:
            event_ts = row.get(spec.event_time_column) if spec.event_time_column else None
            old_ts, old_pt = maxima.get(source, (None, MIN_TIMESTAMP_MS))
            maxima[source] = (event_ts if old_ts is None or (event_ts is not None and event_ts > old_ts) else old_ts,
                              max(old_pt, pt))
        tops: dict = {}
        for ts, seq, pt, source, key, row, _ in elements:
            event_ts = row.get(spec.event_time_column) if spec.event_time_column else None
            if event_ts is not None:
                tops.setdefault(source, []).append(event_ts)
        tops = {source: sorted(times, reverse=True)[:self.tracker.top_event_times_needed]
                for source, times in tops.items()}
        clock = batch_clock(self.tracker, self.clock_ms, batch_id, maxima, watermark_ms,
                            processing_time_ms, flush, min((e[2] for e in elements), default=None), tops)
        self.clock_ms = clock.processing_time_end_ms
        by_key: dict = {}
        for element in elements:
            by_key.setdefault(element[4], []).append(element[5])
        woken = set(by_key)
        for key, blob in self.states.items():
            state = pickle.loads(blob)
            due_event = state.next_timer_ms(EVENT)
            due_processing = state.next_timer_ms(PROCESSING)
            if (due_event is not None and due_event <= clock.watermark_end_ms) or \
                    (due_processing is not None and due_processing <= clock.processing_time_end_ms):
                woken.add(key)
        metrics = BatchMetrics(input_rows=len(rows), quarantined_rows=len(result.quarantined))
        for key in sorted(woken, key=repr):
            blob = self.states.pop(key, None)
            out, state = run_key_batch(spec, key, pickle.loads(blob) if blob else None, by_key.get(key, []), clock)
            assert not out.quarantined, out.quarantined
            if state is not None:
                self.states[key] = pickle.dumps(state)
            result.panes += out.panes
            result.late += out.late
            for name in ("accepted_rows", "late_rows", "dropped_late_rows", "unassigned_rows",
                         "panes_emitted", "windows_cleaned"):
                setattr(metrics, name, getattr(metrics, name) + getattr(out.metrics, name))
        result.metrics = metrics
        result.watermark_after_ms = clock.watermark_end_ms
        return result

    def flush(self, batch_id):
        return self.process_batch([], batch_id, watermark_ms=MAX_TIMESTAMP_MS, flush=True)

    def open_windows(self):
        return sorted(((key, w) for key, blob in self.states.items() for w in pickle.loads(blob).windows), key=repr)
