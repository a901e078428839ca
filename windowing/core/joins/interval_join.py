"""The reference model of the interval join: the executable specification.

Flink's ``IntervalJoinOperator`` in the micro-batch rule's terms. A pair
(l, r) with the same key joins when ``lower <= r.ts - l.ts <= upper``
(exclusive bounds move by 1 ms). One batch:

1. Each side's rows are checked (:mod:`windowing.core.joins.intake`); bad
   rows are quarantined with their side.
2. A row whose event time is at or below the watermark at the START of the
   batch is late (to the late output with its side, or counted as dropped):
   every pair it could make is behind the watermark. The other rows are
   accepted.
3. Each accepted row joins every row of the other side held in state and
   every accepted row of the other side in the same batch: a pair is
   emitted, once, in the batch in which its second row arrives; its time
   is ``max(l.ts, r.ts)``, above the watermark at the start of that batch.
4. The watermark becomes the minimum of the inputs' (idle inputs left out);
   then a left row leaves the state once ``l.ts + upper <= wm`` and a right
   row once ``r.ts - lower <= wm``: from then on every partner it could
   have would be late. A flush empties the state.

No windows, no triggers, no panes.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from windowing.core.joins.intake import JoinElement, JoinIntake
from windowing.core.joins.records import JoinBatchResult, JoinedPair, JoinLateElement
from windowing.core.joins.sides import LEFT, RIGHT, Side
from windowing.core.joins.spec import IntervalJoinSpec
from windowing.core.records import LATE_BEYOND_ALLOWED_LATENESS


class IntervalJoinOperator:
    """An interval join over Python dict rows of two inputs (event times in epoch ms)."""

    def __init__(self, spec: IntervalJoinSpec):
        if not isinstance(spec, IntervalJoinSpec):
            raise ValueError(f"IntervalJoinOperator needs an IntervalJoinSpec, got {spec!r}")
        self.spec = spec
        self._intake = JoinIntake.for_spec(spec)
        self._state: dict[Side, dict[tuple, list[JoinElement]]] = {LEFT: {}, RIGHT: {}}

    @property
    def current_watermark_ms(self) -> int:
        return self._intake.watermark_ms

    def process_batch(self, left_rows: Iterable[Mapping[str, Any]] = (), right_rows: Iterable[Mapping[str, Any]] = (),
                      batch_id: int = 0, processing_time_ms: int | None = None,
                      ends_input: bool = False) -> JoinBatchResult:
        """Process one batch of both inputs (either may be empty) and return the pairs it completed.

        ``ends_input``: the batch is the last of both inputs: after its rows the watermark goes
        to +infinity and the state is emptied, as in :meth:`flush`.
        """
        return self._run({LEFT: left_rows, RIGHT: right_rows}, batch_id, processing_time_ms, flush=ends_input)

    def flush(self, batch_id: int) -> JoinBatchResult:
        """End of both inputs: the watermark goes to +infinity and the state is emptied."""
        return self._run({}, batch_id, None, flush=True)

    def state_rows(self) -> dict[Side, list[tuple[tuple, int]]]:
        """Each side's rows in state, as sorted (key, event time) pairs."""
        return {side: sorted((key, e.timestamp_ms) for key, kept in by_key.items() for e in kept)
                for side, by_key in self._state.items()}

    def _run(self, rows, batch_id: int, processing_time_ms: int | None, flush: bool) -> JoinBatchResult:
        spec = self.spec
        wm_start = self._intake.watermark_ms
        result = JoinBatchResult(batch_id, wm_start, wm_start)
        elements = self._intake.arrive(rows, result, processing_time_ms)
        accepted = []
        for element in elements:
            metrics = result.metrics[element.side]
            if element.timestamp_ms > wm_start:
                accepted.append(element)
                metrics.accepted_rows += 1
            elif spec.late_output:
                result.late.append(JoinLateElement(element.side, element.key, element.timestamp_ms, element.row,
                                                   LATE_BEYOND_ALLOWED_LATENESS, wm_start, batch_id))
                metrics.late_rows += 1
            else:
                metrics.dropped_late_rows += 1
        pairs = []
        for element in sorted(accepted, key=lambda e: (e.timestamp_ms, e.arrival)):
            for partner in self._state[element.side.other].get(element.key, ()):
                left, right = (element, partner) if element.side == LEFT else (partner, element)
                if spec.matches(left.timestamp_ms, right.timestamp_ms):
                    pairs.append((left, right))
            self._state[element.side].setdefault(element.key, []).append(element)
        pairs.sort(key=lambda p: (max(p[0].timestamp_ms, p[1].timestamp_ms), p[0].arrival, p[1].arrival))
        for left, right in pairs:
            values = spec.output.row(left.row, right.row)
            if values is not None:
                result.pairs.append(JoinedPair(left.key, left.timestamp_ms, right.timestamp_ms,
                                               max(left.timestamp_ms, right.timestamp_ms), values, wm_start, batch_id))
        result.watermark_after_ms = self._intake.advance(elements, flush)
        self._expire(result.watermark_after_ms, flush)
        return result

    def _expire(self, watermark_ms: int, flush: bool) -> None:
        """Drop the rows no partner that is not late can join any more (all of them on a flush)."""
        expired = {LEFT: self.spec.left_expired, RIGHT: self.spec.right_expired}
        for side, by_key in self._state.items():
            for key in list(by_key):
                kept = [] if flush else [e for e in by_key[key] if not expired[side](e.timestamp_ms, watermark_ms)]
                if kept:
                    by_key[key] = kept
                else:
                    del by_key[key]
