"""What a join operator emits: panes (window joins), pairs (interval joins), late and quarantined
rows with their side, and the row accounting of each side."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from windowing.core.joins.sides import LEFT, RIGHT, Side
from windowing.core.records import BatchMetrics, Pane


@dataclass(frozen=True)
class JoinLateElement:
    """A row of ``side`` that arrived too late (``reason``), judged against ``watermark_ms``."""

    side: Side
    key: tuple
    timestamp_ms: int
    row: dict[str, Any]
    reason: str
    watermark_ms: int
    batch_id: int


@dataclass(frozen=True)
class JoinQuarantinedRow:
    side: Side
    row: dict[str, Any]
    reason: str
    batch_id: int


@dataclass(frozen=True)
class JoinedPair:
    """One pair of an interval join.

    ``timestamp_ms`` is the pair's event time, ``max(left_timestamp_ms,
    right_timestamp_ms)``; ``values`` the output row; ``watermark_ms`` the
    watermark at the start of the batch that emitted it (the pair's time is
    above it).
    """

    key: tuple
    left_timestamp_ms: int
    right_timestamp_ms: int
    timestamp_ms: int
    values: dict[str, Any]
    watermark_ms: int
    batch_id: int


@dataclass
class JoinBatchResult:
    """One batch of a join.

    ``panes`` (window joins): one :class:`~windowing.core.records.Pane` per
    firing of a (key, window), its ``rows`` the output rows of the firing (none
    when, say, an inner join's window had one side only) and ``values`` empty.
    ``pairs`` (interval joins): the pairs the batch completed.
    ``metrics``: each side's row accounting (``input = accepted + late +
    dropped_late + unassigned + quarantined``; their ``panes_emitted`` and
    ``windows_cleaned`` stay 0: those are the operator's, ``len(panes)`` and
    ``windows_cleaned`` here).
    """

    batch_id: int
    watermark_before_ms: int
    watermark_after_ms: int
    panes: list[Pane] = field(default_factory=list)
    pairs: list[JoinedPair] = field(default_factory=list)
    late: list[JoinLateElement] = field(default_factory=list)
    quarantined: list[JoinQuarantinedRow] = field(default_factory=list)
    metrics: dict[Side, BatchMetrics] = field(default_factory=lambda: {LEFT: BatchMetrics(), RIGHT: BatchMetrics()})
    windows_cleaned: int = 0

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every output row of the batch (the panes' rows, or the pairs' values), in emission order."""
        if self.panes:
            return [dict(row) for pane in self.panes for row in (pane.rows or ())]
        return [dict(pair.values) for pair in self.pairs]

    def accounted(self) -> bool:
        return all(metrics.accounted() for metrics in self.metrics.values())
