"""The plan operator's batch-wide times: the processing-time clock and the watermark.

They advance exactly as the reference model advances them
(:func:`windowing.core.reference.batch_clock` over a
:class:`~windowing.core.watermarks.WatermarkTracker`): the batch's arrival
processing time moves the clock, every source with non-quarantined rows is
observed with its largest event time and processing time, the clock moves to
the latest row's processing time (+infinity on a flush), then the watermark
advances (per-source minimum, idle sources left out or advancing by
processing time).

Between batches the progress row keeps ``watermark_ms`` and ``max_seen_ms``
as before and, in the nullable ``time_state`` column, a JSON object
``{"clock_ms": ..., "tracker": <WatermarkTracker.snapshot()>}``. A progress
row without it (written before the column existed, by an operator with one
source and no idleness) resumes from ``watermark_ms`` and ``max_seen_ms``
with the clock at the batch's recorded ``processing_time_ms``.

When the watermark strategy confirms with ``n > 1`` rows
(:class:`~windowing.core.watermarks.EventTimeWatermarks`), each source's
``n`` largest event times of the batch are collected too
(:func:`top_event_times`: ``n`` rows per source reach the driver) and the
snapshot keeps each source's ``n`` largest event times so far.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from windowing.core.reference import batch_clock, pre_rows_below_ms
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import SINGLE_SOURCE, WatermarkTracker, tracker_for

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

TIME_STATE = "time_state"


@dataclass(frozen=True)
class BatchTime:
    """The times one batch runs with.

    Attributes:
        watermark_start_ms: the watermark at the start of the batch (lateness is judged against it).
        watermark_end_ms: the watermark after the batch's rows.
        clock_before_ms: the processing-time clock before the batch.
        arrival_ms: the processing time of rows without an ingestion time: the batch's processing
            time when it moves the clock forward, else the clock before the batch.
        clock_end_ms: the clock after the batch's rows (+infinity on a flush); every processing-time
            timer at or below it fires after the rows.
        early_phase_below_ms: processing-time timers strictly below this fire BEFORE the batch's rows
            (the batch brought a later processing time; the earliest of it and the rows' processing
            times, :func:`windowing.core.reference.pre_rows_below_ms`); None when no such phase runs.
        max_seen_ms: the largest event time seen by any source so far, or None.
        time_state: the JSON the progress row keeps for the next batch.
    """

    watermark_start_ms: int
    watermark_end_ms: int
    clock_before_ms: int
    arrival_ms: int
    clock_end_ms: int
    early_phase_below_ms: int | None
    max_seen_ms: int | None
    time_state: str

    @property
    def clock_at_rows_ms(self) -> int:
        """The clock after the timers before the rows: processing-time windows whose end is at or
        below it fired and were cleaned, so a row that belongs only to such windows is late."""
        if self.early_phase_below_ms is None:
            return self.clock_before_ms
        return max(self.clock_before_ms, self.early_phase_below_ms - 1)

    def __post_init__(self) -> None:
        if self.watermark_end_ms < self.watermark_start_ms:
            raise ValueError(f"watermark_end_ms {self.watermark_end_ms} is below watermark_start_ms "
                             f"{self.watermark_start_ms}: a watermark never moves back")
        if self.clock_end_ms < self.clock_before_ms:
            raise ValueError(f"clock_end_ms {self.clock_end_ms} is below clock_before_ms "
                             f"{self.clock_before_ms}: the clock never moves back")


def new_tracker(spec: WindowSpec) -> WatermarkTracker:
    return tracker_for(spec)


def top_event_times(spec: WindowSpec, rows: "DataFrame", event_time_column: str, source_column: str | None,
                    valid: "Column") -> dict[str, list[int]] | None:
    """Each source's largest event times among the ``valid`` rows, as many as the strategy needs.

    None when the strategy follows the largest event time alone (the batch's maxima suffice).
    One Spark job: per source a top-n (``orderBy ... limit``, computed per partition, then merged).

    Args:
        rows: the batch's classified rows.
        event_time_column: the column of each row's event time in epoch ms.
        source_column: the column naming each row's source, or None for a single source.
        valid: which rows count (the non-quarantined ones).
    """
    from functools import reduce

    from pyspark.sql import functions as F
    needed = spec.input.watermark_strategy.top_event_times_needed
    if needed == 1:
        return None
    counted = rows.where(valid & F.col(event_time_column).isNotNull())
    names = spec.input.sources if source_column is not None else (SINGLE_SOURCE,)
    parts = [(counted.where(F.col(source_column) == F.lit(name)) if source_column is not None else counted)
             .select(F.lit(name).alias("__source"), F.col(event_time_column).alias("__ts"))
             .orderBy(F.col("__ts").desc()).limit(needed) for name in names]
    found: dict[str, list[int]] = {}
    for row in reduce(lambda a, b: a.unionByName(b), parts).collect():
        found.setdefault(row["__source"], []).append(row["__ts"])
    return found


def resume(spec: WindowSpec, last: Mapping | None) -> tuple[WatermarkTracker, int]:
    """The watermark tracker and the clock as the last committed batch left them (fresh without one)."""
    if last is None:
        return new_tracker(spec), MIN_TIMESTAMP_MS
    saved = last.get(TIME_STATE)
    state = json.loads(saved) if saved else None
    tracker = WatermarkTracker.restore(spec.max_out_of_orderness_ms, spec.input.sources or (SINGLE_SOURCE,),
                                       spec.input.idle_timeout_ms, last["watermark_ms"],
                                       state["tracker"] if state else None, last.get("max_seen_ms"),
                                       spec.input.watermark_strategy)
    if state is not None:
        return tracker, state["clock_ms"]
    recorded = last.get("processing_time_ms")
    return tracker, recorded if recorded is not None else MIN_TIMESTAMP_MS


def arrival_ms(clock_before_ms: int, processing_time_ms: int | None, flush: bool) -> int:
    """The processing time of a row without an ingestion time (the model's clock when the rows arrive)."""
    if processing_time_ms is not None and processing_time_ms > clock_before_ms and not flush:
        return processing_time_ms
    return clock_before_ms


def advance(spec: WindowSpec, tracker: WatermarkTracker, clock_before_ms: int, batch_id: int,
            source_maxima: Mapping[str, tuple[int | None, int]], watermark_ms: int | None,
            processing_time_ms: int | None, flush: bool, first_row_processing_time_ms: int | None = None,
            source_top_event_times_ms: Mapping[str, list[int]] | None = None) -> BatchTime:
    """Advance ``tracker`` (mutated) over one batch; returns the batch's times.

    Args:
        source_maxima: source -> (largest event time or None, largest processing time) of the
            batch's non-quarantined rows; sources without such rows are left out.
        watermark_ms: an explicit watermark (never moves it back); ignored on a flush.
        processing_time_ms: the batch's processing time as given to ``process_batch``.
        flush: end of input: watermark and clock go to +infinity.
        first_row_processing_time_ms: the smallest processing time of the batch's non-quarantined rows.
        source_top_event_times_ms: each source's largest event times (:func:`top_event_times`).
    """
    clock = batch_clock(tracker, clock_before_ms, batch_id, source_maxima,
                        None if flush else (None if watermark_ms is None else min(watermark_ms, MAX_TIMESTAMP_MS)),
                        processing_time_ms, flush, source_top_event_times_ms=source_top_event_times_ms)
    # Never below the clock: timers at or below it fired in earlier batches.
    early = (max(clock_before_ms + 1, pre_rows_below_ms(processing_time_ms, first_row_processing_time_ms))
             if (processing_time_ms is not None and processing_time_ms > clock_before_ms and not flush) else None)
    max_seen = max((s.max_seen_ms for s in tracker.sources.values() if s.max_seen_ms is not None), default=None)
    state = json.dumps({"clock_ms": clock.processing_time_end_ms, "tracker": tracker.snapshot()})
    return BatchTime(clock.watermark_start_ms, clock.watermark_end_ms, clock_before_ms,
                     arrival_ms(clock_before_ms, processing_time_ms, flush), clock.processing_time_end_ms,
                     early, max_seen, state)
