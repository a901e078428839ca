"""What an operator emits: panes, late elements, quarantined rows, batch metrics."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EARLY = "EARLY"
ON_TIME = "ON_TIME"
LATE = "LATE"
TIMINGS = (EARLY, ON_TIME, LATE)

# Reasons written to the late-data and quarantine tables.
LATE_BEYOND_ALLOWED_LATENESS = "late_beyond_allowed_lateness"
# A row replayed with a processing (ingestion) time at or below the clock of an earlier
# batch: every window it belongs to already fired and was cleaned. Its late row records the
# processing-time clock it was judged against (in ``watermark_ms``).
LATE_PROCESSING_TIME_WINDOW_FIRED = "processing_time_window_already_fired"
QUARANTINE_NULL_KEY = "null_key"
QUARANTINE_NULL_EVENT_TIME = "null_event_time"
QUARANTINE_UNPARSEABLE_EVENT_TIME = "unparseable_event_time"
QUARANTINE_INVALID_SESSION_GAP = "invalid_session_gap"
QUARANTINE_UNKNOWN_SOURCE = "unknown_source"
QUARANTINE_INVALID_INGESTION_TIME = "invalid_ingestion_time"
# Event time further ahead of processing time than the spec's max_event_time_skew:
# quarantined so one bad clock cannot push the watermark forward and make good data late.
QUARANTINE_FAR_FUTURE_EVENT_TIME = "far_future_event_time"
# A value of the wrong type for its column (a number was declared). Spark input is typed,
# so there a wrongly typed COLUMN is a schema error; only row-typed input (the reference
# model's dicts) can carry a wrongly typed value.
QUARANTINE_WRONG_TYPE = "wrong_type"
QUARANTINE_VALUE_OUT_OF_BOUNDS = "value_out_of_bounds"
# A second row with an event id already seen within the de-duplication horizon.
QUARANTINE_DUPLICATE_EVENT = "duplicate_event"
LATE_REASONS = (LATE_BEYOND_ALLOWED_LATENESS, LATE_PROCESSING_TIME_WINDOW_FIRED)
QUARANTINE_REASONS = (QUARANTINE_NULL_KEY, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_UNPARSEABLE_EVENT_TIME,
                      QUARANTINE_INVALID_SESSION_GAP, QUARANTINE_UNKNOWN_SOURCE, QUARANTINE_INVALID_INGESTION_TIME,
                      QUARANTINE_FAR_FUTURE_EVENT_TIME, QUARANTINE_WRONG_TYPE, QUARANTINE_VALUE_OUT_OF_BOUNDS,
                      QUARANTINE_DUPLICATE_EVENT)


@dataclass(frozen=True)
class Pane:
    """One firing of one (key, window).

    ``timing`` is EARLY (fired before the watermark reached the window's
    end), ON_TIME (the firing when the watermark crossed the end, or a count
    firing of a global window), or LATE (fired for elements that arrived
    after the watermark passed the end, within allowed lateness).
    ``is_final`` is true when the window's state is cleaned up in the same
    batch right after this pane: no further pane of this window can follow.

    ``supersedes`` (merging windows: sessions) lists, as ``(start_ms,
    end_ms)`` pairs in order, the windows that were merged into this one
    since this window's previous pane and had emitted panes themselves. Those
    earlier panes describe sessions that no longer exist: an upsert sink
    deletes their rows, an append sink keeps them and this field says which
    rows this pane replaces. Empty for non-merging windows.

    ``rows`` is set for process window functions: the rows the function
    emitted for this firing (``values`` is then empty). None for aggregates.
    """

    key: tuple
    window_start_ms: int | None
    window_end_ms: int | None
    values: dict[str, Any]
    pane_index: int
    timing: str
    is_final: bool
    watermark_ms: int
    batch_id: int
    supersedes: tuple = ()
    rows: tuple | None = None


@dataclass(frozen=True)
class LateElement:
    key: tuple
    timestamp_ms: int
    row: dict[str, Any]
    reason: str
    watermark_ms: int
    batch_id: int


@dataclass(frozen=True)
class QuarantinedRow:
    row: dict[str, Any]
    reason: str
    batch_id: int


@dataclass
class BatchMetrics:
    """Row accounting of one batch: ``input_rows`` is the sum of the other row counts.

    ``accepted_rows``: added to at least one window. ``late_rows``: written to
    the late table. ``dropped_late_rows``: late with no late output configured.
    ``unassigned_rows``: in no window (a gap between sliding windows) and not
    late. ``quarantined_rows``: malformed.
    """

    input_rows: int = 0
    accepted_rows: int = 0
    late_rows: int = 0
    dropped_late_rows: int = 0
    unassigned_rows: int = 0
    quarantined_rows: int = 0
    panes_emitted: int = 0
    windows_cleaned: int = 0

    def accounted(self) -> bool:
        return self.input_rows == (self.accepted_rows + self.late_rows + self.dropped_late_rows
                                   + self.unassigned_rows + self.quarantined_rows)


@dataclass
class BatchResult:
    batch_id: int
    watermark_before_ms: int
    watermark_after_ms: int
    panes: list[Pane] = field(default_factory=list)
    late: list[LateElement] = field(default_factory=list)
    quarantined: list[QuarantinedRow] = field(default_factory=list)
    metrics: BatchMetrics = field(default_factory=BatchMetrics)
