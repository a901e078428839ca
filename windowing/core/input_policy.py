"""The input policy: how a windowed operator reads its input, apart from the window semantics.

As Flink keeps the ``WatermarkStrategy`` (and the source's idleness) apart
from the window operator, a :class:`~windowing.core.spec.WindowSpec` holds
one :class:`InputPolicy`: where processing time and the watermark come from
(ingestion-time column, idleness, several sources, the watermark strategy)
and which rows are quarantined before any window sees them (event times too
far ahead, values out of bounds, repeated event ids). The event-time column
and the watermark delay stay on the spec: its fingerprint has always held them.
"""
from __future__ import annotations

from dataclasses import dataclass

from windowing.core.watermarks import (
    DEFAULT_WATERMARK_STRATEGY, WATERMARK_STRATEGIES, ExplicitWatermarks, WatermarkStrategy)


@dataclass(frozen=True)
class InputPolicy:
    """How rows are timed, watermarked and checked before windowing; validated when built.

    Attributes:
        ingestion_time_column: a long column of each row's recorded
            ingestion time (epoch ms), used as the row's processing time (a
            backfill replays processing time this way); without it a row's
            processing time is the operator's clock when its batch arrived.
        idle_timeout_ms: watermark idleness: a source that sent no element
            for this long (processing time) is idle; see
            :class:`~windowing.core.watermarks.WatermarkTracker`.
        source_column: the column naming the source of each row when
            several sources feed the operator; the watermark is the minimum
            over ``sources`` (idle ones excluded).
        sources: the declared sources (required with ``source_column``).
        max_event_time_skew_ms: quarantine (``far_future_event_time``) rows
            whose event time is more than this ahead of the batch's processing
            time, so they cannot push the watermark forward; None: no limit.
        value_bounds: ``(column, min, max)`` triples (either bound may be
            None); a value outside ``[min, max]`` is quarantined
            (``value_out_of_bounds``), and so is a null one unless the column
            is in ``nullable_bounded``: a bound says what a valid value is, and
            a missing value is not one (a null would otherwise be counted in
            the window and skipped by its sums unseen).
        nullable_bounded: bounded columns whose nulls pass the bounds check
            (a job's ``nullable = true``).
        dedup_column: an event-id column; a row whose id was already seen in
            this batch or within ``dedup_horizon_ms`` is quarantined
            (``duplicate_event``). None: no de-duplication.
        dedup_horizon_ms: how far behind the watermark (in event time) seen
            ids are remembered: an id seen with event time ``t`` is forgotten
            once ``t <= watermark - horizon``.
        watermark_strategy: where the watermark comes from: the event times
            (:class:`~windowing.core.watermarks.EventTimeWatermarks`, the
            default, optionally confirmed by several rows) or explicit
            watermarks only (:class:`~windowing.core.watermarks.ExplicitWatermarks`).
    """

    ingestion_time_column: str | None = None
    idle_timeout_ms: int | None = None
    source_column: str | None = None
    sources: tuple[str, ...] = ()
    max_event_time_skew_ms: int | None = None
    value_bounds: tuple[tuple[str, float | None, float | None], ...] = ()
    nullable_bounded: tuple[str, ...] = ()
    dedup_column: str | None = None
    dedup_horizon_ms: int | None = None
    watermark_strategy: WatermarkStrategy = DEFAULT_WATERMARK_STRATEGY

    def __post_init__(self) -> None:
        if self.idle_timeout_ms is not None and (not isinstance(self.idle_timeout_ms, int)
                                                 or self.idle_timeout_ms <= 0):
            raise ValueError(f"idle timeout must be a positive number of ms, got {self.idle_timeout_ms!r}")
        if (self.source_column is None) != (not self.sources):
            raise ValueError(f"watermark sources need both a source column and the declared sources, got "
                             f"source_column={self.source_column!r}, sources={self.sources!r}")
        if len(set(self.sources)) != len(self.sources):
            raise ValueError(f"declared sources repeat: {self.sources!r}")
        self._validate_checks()
        self._validate_watermark_strategy()

    def _validate_watermark_strategy(self) -> None:
        strategy = self.watermark_strategy
        if not isinstance(strategy, WATERMARK_STRATEGIES):
            raise ValueError(f"watermark strategy {strategy!r} is not one of "
                             f"{[s.__name__ for s in WATERMARK_STRATEGIES]}")
        if isinstance(strategy, ExplicitWatermarks) and self.idle_timeout_ms is not None:
            raise ValueError(f"explicit watermarks do not advance by idleness; remove the idle timeout "
                             f"({self.idle_timeout_ms} ms) or use EventTimeWatermarks()")

    def _validate_checks(self) -> None:
        skew = self.max_event_time_skew_ms
        if skew is not None and (not isinstance(skew, int) or isinstance(skew, bool) or skew < 0):
            raise ValueError(f"max_event_time_skew must be a duration >= 0 (or None for no limit), got {skew!r}")
        bounded = [b[0] for b in self.value_bounds]
        for bound in self.value_bounds:
            if not (isinstance(bound, tuple) and len(bound) == 3 and isinstance(bound[0], str) and bound[0]):
                raise ValueError(f"value_bounds entries must be (column, min, max), got {bound!r}")
            column, lo, hi = bound
            for value in (lo, hi):
                if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                    raise ValueError(f"value bounds of {column!r} must be numbers or None, got {value!r}")
            if lo is None and hi is None:
                raise ValueError(f"value bounds of {column!r} need a min, a max or both")
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"value bounds of {column!r}: min {lo!r} is above max {hi!r}")
        unbounded = sorted(set(self.nullable_bounded) - set(bounded))
        if unbounded:
            raise ValueError(f"nullable columns {unbounded} have no value bounds; nullable applies to a bounded "
                             f"column (bounded: {sorted(bounded)})")
        repeated = sorted({c for c in bounded if bounded.count(c) > 1})
        if repeated:
            raise ValueError(f"value bounds declared twice for {repeated}; declare one (min, max) per column")
        if (self.dedup_column is None) != (self.dedup_horizon_ms is None):
            raise ValueError(f"de-duplication needs both an event-id column and a horizon, got column "
                             f"{self.dedup_column!r} and horizon {self.dedup_horizon_ms!r}")
        if self.dedup_column is not None:
            if not isinstance(self.dedup_column, str) or not self.dedup_column:
                raise ValueError(f"the de-duplication column must be a column name, got {self.dedup_column!r}")
            if not isinstance(self.dedup_horizon_ms, int) or self.dedup_horizon_ms <= 0:
                raise ValueError(f"the de-duplication horizon must be a positive duration, "
                                 f"got {self.dedup_horizon_ms!r}")

    @property
    def timing_columns(self) -> tuple[str, ...]:
        """The columns the operator reads to time rows: the ingestion-time and source columns."""
        return tuple(c for c in (self.ingestion_time_column, self.source_column) if c is not None)

    @property
    def checked_columns(self) -> tuple[str, ...]:
        """The columns only the input checks read: bounded columns and the event-id column."""
        cols = [column for column, _, _ in self.value_bounds]
        if self.dedup_column is not None:
            cols.append(self.dedup_column)
        return tuple(dict.fromkeys(cols))

    @property
    def bounds_by_column(self) -> dict[str, tuple[float | None, float | None]]:
        return {column: (lo, hi) for column, lo, hi in self.value_bounds}

    def out_of_bounds(self, column: str, value) -> bool:
        """Whether ``value`` of the bounded ``column`` is quarantined as ``value_out_of_bounds``: outside
        ``[min, max]``, or null in a column that is not in ``nullable_bounded``. The reference model's form
        of the check; the Spark paths build theirs from the same fields (``windowing.spark.input.prepare.out_of_bounds``)."""
        lo, hi = self.bounds_by_column[column]
        if value is None:
            return column not in self.nullable_bounded
        return (lo is not None and value < lo) or (hi is not None and value > hi)


DEFAULT_INPUT_POLICY = InputPolicy()
