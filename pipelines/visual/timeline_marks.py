"""What a timeline shows: the batches, the input rows, the panes and a join's pairs, for some keys.

The readers (:mod:`pipelines.visual.job_timeline`, :mod:`pipelines.visual.join_timeline`)
fill a :class:`Timeline` from a job's tables; :mod:`pipelines.visual.timeline` draws it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pipelines.visual.colours import TIMING

MIN_MS, MAX_MS = -(2**63), 2**63 - 1
"""The engine's infinities (a watermark before any row, after the end of the input)."""
NULL_KEY = "(null key)"
"""The key text of rows whose key is null: they were quarantined, and get a panel of their own."""
TIMINGS = tuple(TIMING)
"""A pane's timings (EARLY, ON_TIME, LATE)."""
SIDES = ("left", "right")
"""A join's inputs (a row mark's ``side``)."""


@dataclass(frozen=True)
class BatchRow:
    """One committed batch: its watermark before and after, its processing time."""

    batch_id: int
    watermark_before_ms: int
    watermark_after_ms: int
    processing_time_ms: int | None
    max_seen_ms: int | None


@dataclass(frozen=True)
class RowMark:
    """An input row drawn at (event time, arrival batch). ``kind``: event, late-row or quarantined-row;
    ``side``: a join's input (``left`` or ``right``), None for a single-input job."""

    key: str
    event_time_ms: int | None
    batch_id: int
    kind: str
    reason: str | None = None
    side: str | None = None

    def __post_init__(self):
        if self.kind not in ROW_KINDS:
            raise ValueError(f"row mark kind {self.kind!r} is not one of {ROW_KINDS}")
        if self.side is not None and self.side not in SIDES:
            raise ValueError(f"row mark side {self.side!r} is not one of {SIDES}")


EVENT, LATE_ROW, QUARANTINED_ROW = "event", "late-row", "quarantined-row"
ROW_KINDS = (EVENT, LATE_ROW, QUARANTINED_ROW)


@dataclass(frozen=True)
class PaneMark:
    """A pane of the results table."""

    key: str
    window_start_ms: int | None
    window_end_ms: int | None
    batch_id: int
    timing: str
    pane_index: int
    is_final: bool
    values: str
    supersedes: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        if self.timing not in TIMINGS:
            raise ValueError(f"pane timing {self.timing!r} is not one of {TIMINGS}")


@dataclass(frozen=True)
class PairMark:
    """An interval join's pair: the left and the right row's event times, the batch that emitted it."""

    key: str
    left_time_ms: int
    right_time_ms: int
    batch_id: int
    values: str


@dataclass(frozen=True)
class Timeline:
    """What the picture shows: batches, input rows and panes (a join: and pairs), for some keys and an event-time
    range. ``two_inputs``: a join's picture (its legend tells the sides apart)."""

    job: str
    batches: tuple[BatchRow, ...]
    rows: tuple[RowMark, ...]
    panes: tuple[PaneMark, ...]
    from_ms: int | None = None
    to_ms: int | None = None
    notes: tuple[str, ...] = field(default=())
    pairs: tuple[PairMark, ...] = ()
    two_inputs: bool = False

    def keys(self) -> list[str]:
        return sorted({r.key for r in self.rows} | {p.key for p in self.panes} | {p.key for p in self.pairs})
