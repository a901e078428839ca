"""The operator's watermark: bounded out-of-orderness, several sources, idleness.

Per source ``s`` (a single unnamed source unless the spec declares several):

* ``wm_s = max_seen_ts_s - delay - 1`` (Flink's bounded out-of-orderness),
  ``MIN`` before the source sent any element;
* the source is *idle* when the spec has an idle timeout ``T`` and no element
  of it arrived for ``T`` of processing time: ``now - last_arrival_s >= T``
  (a source that never sent anything counts from the first processing time
  the operator saw);
* an idle source's watermark advances by processing time: it is
  ``wm_s + (now - last_arrival_s)``, as if its event time had kept pace
  with the clock since its last element.

The operator's watermark is the minimum of ``wm_s`` over the sources that
are not idle; when every source is idle it is the maximum of the idle
sources' advanced watermarks. It never decreases, and an explicit watermark
(``process_batch(watermark_ms=...)``, a flush) can only move it forward.
Without idleness and with one source this is exactly
``max(wm, max_seen_ts - delay - 1)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS

SINGLE_SOURCE = ""


@dataclass
class _Source:
    max_seen_ms: int | None = None
    last_arrival_pt_ms: int | None = None


class WatermarkTracker:
    """Tracks per-source progress and computes the operator's watermark."""

    def __init__(self, delay_ms: int, sources: tuple[str, ...] = (SINGLE_SOURCE,),
                 idle_timeout_ms: int | None = None):
        self.delay_ms = delay_ms
        self.idle_timeout_ms = idle_timeout_ms
        self.sources = {name: _Source() for name in (sources or (SINGLE_SOURCE,))}
        self.current_ms = MIN_TIMESTAMP_MS
        self._first_pt_ms: int | None = None

    def observe(self, source: str, event_time_ms: int | None, processing_time_ms: int) -> None:
        """An element of ``source`` arrived (its event time may be None for processing-time jobs)."""
        state = self.sources[source]
        if event_time_ms is not None and (state.max_seen_ms is None or event_time_ms > state.max_seen_ms):
            state.max_seen_ms = event_time_ms
        state.last_arrival_pt_ms = processing_time_ms if state.last_arrival_pt_ms is None \
            else max(state.last_arrival_pt_ms, processing_time_ms)

    def note_processing_time(self, now_ms: int) -> None:
        if self._first_pt_ms is None and MIN_TIMESTAMP_MS < now_ms < MAX_TIMESTAMP_MS:
            self._first_pt_ms = now_ms

    def source_watermark(self, name: str) -> int:
        state = self.sources[name]
        if state.max_seen_ms is None:
            return MIN_TIMESTAMP_MS
        return max(MIN_TIMESTAMP_MS, state.max_seen_ms - self.delay_ms - 1)

    def is_idle(self, name: str, now_ms: int) -> bool:
        if self.idle_timeout_ms is None:
            return False
        since = self.sources[name].last_arrival_pt_ms
        if since is None:
            since = self._first_pt_ms
        return since is not None and now_ms - since >= self.idle_timeout_ms

    def snapshot(self) -> dict:
        """The tracker's progress as plain JSON-able data (see :meth:`restore`).

        ``current_ms`` is left out: the operator keeps the watermark in a column of its own.
        """
        return {"first_pt_ms": self._first_pt_ms,
                "sources": {name: [s.max_seen_ms, s.last_arrival_pt_ms] for name, s in self.sources.items()}}

    @classmethod
    def restore(cls, delay_ms: int, sources: tuple[str, ...], idle_timeout_ms: int | None, current_ms: int,
                snapshot: dict | None, max_seen_ms: int | None = None) -> "WatermarkTracker":
        """A tracker as :meth:`snapshot` saved it, at watermark ``current_ms``.

        Without a snapshot (progress written before snapshots existed, by an
        operator with one source and no idleness) the single source resumes
        from ``max_seen_ms``, which is all such an operator's watermark needs.

        Raises:
            ValueError: the snapshot names sources other than ``sources`` (the
                declared sources changed, which also changes the spec fingerprint).
        """
        tracker = cls(delay_ms, sources, idle_timeout_ms)
        tracker.current_ms = current_ms
        if snapshot is None:
            only = next(iter(tracker.sources))
            if len(tracker.sources) == 1:
                tracker.sources[only].max_seen_ms = max_seen_ms
            return tracker
        saved = snapshot.get("sources", {})
        if set(saved) != set(tracker.sources):
            raise ValueError(f"the saved watermark state has sources {sorted(saved)}, the spec declares "
                             f"{sorted(tracker.sources)}")
        tracker._first_pt_ms = snapshot.get("first_pt_ms")
        for name, (max_seen, last_arrival) in saved.items():
            tracker.sources[name] = _Source(max_seen, last_arrival)
        return tracker

    def advance(self, now_ms: int, explicit_ms: int | None = None) -> int:
        """Recompute the watermark at processing time ``now_ms``; returns it (never decreasing)."""
        active = [self.source_watermark(n) for n in self.sources if not self.is_idle(n, now_ms)]
        if active:
            candidate = min(active)
        else:
            advanced = [min(MAX_TIMESTAMP_MS, self.source_watermark(n) + (now_ms - s.last_arrival_pt_ms))
                        for n, s in self.sources.items() if s.max_seen_ms is not None]
            candidate = max(advanced) if advanced else MIN_TIMESTAMP_MS
        new = max(self.current_ms, candidate)
        if explicit_ms is not None:
            new = max(new, explicit_ms)
        self.current_ms = new
        return new
