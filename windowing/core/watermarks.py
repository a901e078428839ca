"""The operator's watermark: its strategy, several sources, idleness.

A :class:`WatermarkStrategy` (a frozen dataclass on the spec) decides where
a source's watermark comes from:

* :class:`EventTimeWatermarks` (the default, ``confirming_rows = 1``):
  bounded out-of-orderness, ``wm_s = max_seen_ts_s - delay - 1`` (Flink's
  ``WatermarkStrategy.forBoundedOutOfOrderness``). With ``confirming_rows =
  n > 1`` the watermark follows the n-th largest event time the source has
  sent instead of the largest: it passes a time only once ``n`` rows at or
  beyond ``time + delay + 1`` arrived, so fewer than ``n`` outlying rows
  (a device clock hours ahead) cannot move it. ``MIN`` until the source
  sent ``n`` elements.
* :class:`ExplicitWatermarks`: the elements never move the watermark; only
  an explicit ``process_batch(watermark_ms=...)`` and the end-of-input flush
  do (Flink's ``WatermarkStrategy.noWatermarks()`` with watermarks emitted by
  hand).

Per source ``s`` (a single unnamed source unless the spec declares several),
with event-time watermarks:

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
Without idleness, with one source and ``confirming_rows = 1`` this is exactly
``max(wm, max_seen_ts - delay - 1)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS

SINGLE_SOURCE = ""


@dataclass(frozen=True)
class WatermarkStrategy:
    """Where the operator's watermark comes from (see the module docstring)."""

    @property
    def top_event_times_needed(self) -> int:
        """How many of a source's largest event times the watermark depends on (1: the maximum)."""
        return 1


@dataclass(frozen=True)
class EventTimeWatermarks(WatermarkStrategy):
    """The watermark follows the event times: ``wm_s = t_n - delay - 1``.

    Attributes:
        confirming_rows: ``n``; ``t_n`` is the n-th largest event time the
            source has sent (rows with equal event times count one each).
            1 is Flink's rule (the largest); ``n > 1`` keeps up to ``n - 1``
            outlying rows from advancing the watermark, at the price of
            waiting for ``n`` rows before the first watermark.
    """

    confirming_rows: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.confirming_rows, bool) or not isinstance(self.confirming_rows, int) \
                or self.confirming_rows < 1:
            raise ValueError(f"confirming_rows must be an int >= 1 (1 is Flink's watermark from the largest "
                             f"event time), got {self.confirming_rows!r}")

    @property
    def top_event_times_needed(self) -> int:
        return self.confirming_rows


@dataclass(frozen=True)
class ExplicitWatermarks(WatermarkStrategy):
    """Elements never move the watermark: only explicit ``watermark_ms`` calls and the flush do
    (Flink's ``WatermarkStrategy.noWatermarks()`` plus watermarks emitted by hand)."""


WATERMARK_STRATEGIES = (EventTimeWatermarks, ExplicitWatermarks)
DEFAULT_WATERMARK_STRATEGY = EventTimeWatermarks()


@dataclass
class _Source:
    max_seen_ms: int | None = None
    last_arrival_pt_ms: int | None = None
    top_ms: tuple = ()   # the largest event times, descending, when the strategy needs more than one


def tracker_for(spec: Any) -> "WatermarkTracker":
    """A fresh tracker for a :class:`~windowing.core.spec.WindowSpec` (its delay, sources, idleness, strategy)."""
    return WatermarkTracker(spec.max_out_of_orderness_ms, spec.input.sources or (SINGLE_SOURCE,), spec.input.idle_timeout_ms,
                            spec.input.watermark_strategy)


class WatermarkTracker:
    """Tracks per-source progress and computes the operator's watermark."""

    # Trackers pickled before strategies (per-source idle timeouts) existed resume with Flink's rule (one timeout).
    strategy: WatermarkStrategy = DEFAULT_WATERMARK_STRATEGY
    source_idle_timeouts_ms: dict[str, int | None] | None = None

    def __init__(self, delay_ms: int, sources: tuple[str, ...] = (SINGLE_SOURCE,),
                 idle_timeout_ms: int | None = None, strategy: WatermarkStrategy = DEFAULT_WATERMARK_STRATEGY,
                 source_idle_timeouts_ms: Mapping[str, int | None] | None = None):
        """``idle_timeout_ms``: every source's idle timeout (None: never idle), unless
        ``source_idle_timeouts_ms`` gives a source its own (None there: that source is never idle)."""
        self.delay_ms = delay_ms
        self.idle_timeout_ms = idle_timeout_ms
        self.source_idle_timeouts_ms = dict(source_idle_timeouts_ms) if source_idle_timeouts_ms else None
        self.strategy = strategy
        self.sources = {name: _Source() for name in (sources or (SINGLE_SOURCE,))}
        self.current_ms = MIN_TIMESTAMP_MS
        self._first_pt_ms: int | None = None

    @property
    def top_event_times_needed(self) -> int:
        """How many of each source's largest event times of a batch the tracker must observe."""
        return self.strategy.top_event_times_needed

    def observe(self, source: str, event_time_ms: int | None, processing_time_ms: int) -> None:
        """An element of ``source`` arrived (its event time may be None for processing-time jobs)."""
        state = self.sources[source]
        if event_time_ms is not None and (state.max_seen_ms is None or event_time_ms > state.max_seen_ms):
            state.max_seen_ms = event_time_ms
        needed = self.top_event_times_needed
        if event_time_ms is not None and needed > 1:
            state.top_ms = tuple(sorted(state.top_ms + (event_time_ms,), reverse=True)[:needed])
        state.last_arrival_pt_ms = processing_time_ms if state.last_arrival_pt_ms is None \
            else max(state.last_arrival_pt_ms, processing_time_ms)

    def observe_batch(self, source: str, top_event_times_ms: Iterable[int], processing_time_ms: int) -> None:
        """A batch of ``source`` arrived: its largest event times (at least
        :attr:`top_event_times_needed` of them when it has that many rows)."""
        for event_time_ms in top_event_times_ms:
            self.observe(source, event_time_ms, processing_time_ms)

    def note_processing_time(self, now_ms: int) -> None:
        if self._first_pt_ms is None and MIN_TIMESTAMP_MS < now_ms < MAX_TIMESTAMP_MS:
            self._first_pt_ms = now_ms

    def _confirmed_ms(self, state: _Source) -> int | None:
        """The event time the source's watermark follows (its n-th largest), or None before n rows."""
        needed = self.top_event_times_needed
        if needed == 1:
            return state.max_seen_ms
        return state.top_ms[needed - 1] if len(state.top_ms) >= needed else None

    def source_watermark(self, name: str) -> int:
        confirmed = self._confirmed_ms(self.sources[name])
        if confirmed is None:
            return MIN_TIMESTAMP_MS
        return max(MIN_TIMESTAMP_MS, confirmed - self.delay_ms - 1)

    def idle_timeout_of(self, name: str) -> int | None:
        """The source's idle timeout (None: never idle)."""
        own = self.source_idle_timeouts_ms
        return own.get(name, self.idle_timeout_ms) if own is not None else self.idle_timeout_ms

    def is_idle(self, name: str, now_ms: int) -> bool:
        timeout_ms = self.idle_timeout_of(name)
        if timeout_ms is None:
            return False
        since = self.sources[name].last_arrival_pt_ms
        if since is None:
            since = self._first_pt_ms
        return since is not None and now_ms - since >= timeout_ms

    def snapshot(self) -> dict:
        """The tracker's progress as plain JSON-able data (see :meth:`restore`).

        ``current_ms`` is left out: the operator keeps the watermark in a column of its own.
        """
        keep_top = self.top_event_times_needed > 1
        return {"first_pt_ms": self._first_pt_ms,
                "sources": {name: [s.max_seen_ms, s.last_arrival_pt_ms] + ([list(s.top_ms)] if keep_top else [])
                            for name, s in self.sources.items()}}

    @classmethod
    def restore(cls, delay_ms: int, sources: tuple[str, ...], idle_timeout_ms: int | None, current_ms: int,
                snapshot: dict | None, max_seen_ms: int | None = None,
                strategy: WatermarkStrategy = DEFAULT_WATERMARK_STRATEGY,
                source_idle_timeouts_ms: Mapping[str, int | None] | None = None) -> "WatermarkTracker":
        """A tracker as :meth:`snapshot` saved it, at watermark ``current_ms``.

        Without a snapshot (progress written before snapshots existed, by an
        operator with one source and no idleness) the single source resumes
        from ``max_seen_ms``, which is all such an operator's watermark needs.

        Raises:
            ValueError: the snapshot names sources other than ``sources`` (the
                declared sources changed, which also changes the spec fingerprint).
        """
        tracker = cls(delay_ms, sources, idle_timeout_ms, strategy, source_idle_timeouts_ms)
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
        for name, (max_seen, last_arrival, *top) in saved.items():
            tracker.sources[name] = _Source(max_seen, last_arrival, tuple(top[0]) if top else ())
        return tracker

    def advance(self, now_ms: int, explicit_ms: int | None = None) -> int:
        """Recompute the watermark at processing time ``now_ms``; returns it (never decreasing).

        With :class:`ExplicitWatermarks` only ``explicit_ms`` moves it.
        """
        if isinstance(self.strategy, ExplicitWatermarks):
            if explicit_ms is not None:
                self.current_ms = max(self.current_ms, explicit_ms)
            return self.current_ms
        active = [self.source_watermark(n) for n in self.sources if not self.is_idle(n, now_ms)]
        if active:
            candidate = min(active)
        else:
            advanced = [min(MAX_TIMESTAMP_MS, self.source_watermark(n) + (now_ms - s.last_arrival_pt_ms))
                        for n, s in self.sources.items() if self._confirmed_ms(s) is not None]
            candidate = max(advanced) if advanced else MIN_TIMESTAMP_MS
        new = max(self.current_ms, candidate)
        if explicit_ms is not None:
            new = max(new, explicit_ms)
        self.current_ms = new
        return new
