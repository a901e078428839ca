"""The reference model of the window join and co-group: the executable specification.

As Flink builds ``JoinedStreams`` on ``CoGroupedStreams`` and those on one
window operator over the union of both inputs, this operator runs the
one-input reference model (:class:`~windowing.core.reference.ReferenceOperator`)
on the tagged union (:mod:`windowing.core.joins.tagged`). One batch:

1. Each side's rows are checked (:mod:`windowing.core.joins.intake`); bad
   rows are quarantined with their side.
2. Both sides' valid elements go to the window operator as one batch: the
   same assigner assigns them, session windows merge across both sides, and
   lateness is judged against the watermark as it stood at the START of the
   batch (the micro-batch rule).
3. The watermark becomes the minimum of the inputs' watermarks (idle inputs
   left out), every due timer fires: a firing (key, window) hands its left
   and right rows to the join kind (pairs, through the projection or the
   join function) or to the co-group function; a window whose sides are
   both empty never fires.
4. A pane carries the firing's output rows with the pane info of the
   window operator (timing, index, final, supersedes). Accumulating: every
   pane re-emits the output of the whole window so far. Discarding: the
   window is purged at each firing, so a pane joins only the rows of either
   side that arrived since the previous pane (a pair of an earlier row with
   a later one is never emitted, as in Flink).

Late rows (every window they belong to is past its cleanup time) go to the
late output with their side, or are counted as dropped; a row in no window
that is not late (a gap between sliding windows) is counted unassigned.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

from windowing.core.joins.intake import JoinElement, JoinIntake
from windowing.core.joins.records import JoinBatchResult, JoinLateElement
from windowing.core.joins.sides import LEFT, RIGHT
from windowing.core.joins.spec import WindowJoinSpec
from windowing.core.joins.tagged import ARRIVAL, FIRING, KEY, ROW, SIDE, tagged
from windowing.core.records import BatchResult, Pane
from windowing.core.reference import ReferenceOperator


class WindowJoinOperator:
    """A window join (or co-group) over Python dict rows of two inputs (event times in epoch ms)."""

    def __init__(self, spec: WindowJoinSpec):
        if not isinstance(spec, WindowJoinSpec):
            raise ValueError(f"WindowJoinOperator needs a WindowJoinSpec, got {spec!r}")
        self.spec = spec
        self._intake = JoinIntake.for_spec(spec)
        self._windows = ReferenceOperator(spec.window)

    @property
    def current_watermark_ms(self) -> int:
        return self._intake.watermark_ms

    def process_batch(self, left_rows: Iterable[Mapping[str, Any]] = (), right_rows: Iterable[Mapping[str, Any]] = (),
                      batch_id: int = 0, processing_time_ms: int | None = None,
                      ends_input: bool = False) -> JoinBatchResult:
        """Process one batch of both inputs (either may be empty) and return what it emitted.

        ``processing_time_ms``: the clock at which the batch arrives (never moves back); it
        drives processing-time triggers and idleness. ``ends_input``: the batch is the last
        of both inputs: after its rows (late judged as in any batch) the watermark and the
        clock go to +infinity, as in :meth:`flush`, so every time window fires in this batch.
        """
        return self._run({LEFT: left_rows, RIGHT: right_rows}, batch_id, processing_time_ms, flush=ends_input)

    def flush(self, batch_id: int) -> JoinBatchResult:
        """End of both inputs: the watermark goes to +infinity; every time window fires and is cleaned."""
        return self._run({}, batch_id, None, flush=True)

    def open_windows(self) -> list[tuple[tuple, Any]]:
        """The (key, window) pairs that hold state, key unwrapped from the tagged union's."""
        return [(key[0], window) for key, window in self._windows.open_windows()]

    def _run(self, rows, batch_id: int, processing_time_ms: int | None, flush: bool) -> JoinBatchResult:
        wm_start = self._intake.watermark_ms
        result = JoinBatchResult(batch_id, wm_start, wm_start)
        elements = self._intake.arrive(rows, result, processing_time_ms)
        wm_end = self._intake.advance(elements, flush)
        union = [tagged(e.side, e.key, e.timestamp_ms, e.row, e.arrival) for e in elements]
        fired = self._windows.process_batch(union, batch_id, watermark_ms=wm_end,
                                            processing_time_ms=processing_time_ms, ends_input=flush)
        result.watermark_after_ms = wm_end
        result.panes = [join_pane(self.spec, pane) for pane in fired.panes]
        result.windows_cleaned = fired.metrics.windows_cleaned
        self._account(elements, fired, result)
        return result

    def _account(self, elements: list[JoinElement], fired: BatchResult, result: JoinBatchResult) -> None:
        """Late rows to the late output (or dropped), and each side's accepted and unassigned rows."""
        late_arrivals = set()
        for late in fired.late:
            side, metrics = late.row[SIDE], result.metrics[late.row[SIDE]]
            late_arrivals.add(late.row[ARRIVAL])
            if self.spec.late_output:
                result.late.append(JoinLateElement(side, late.row[KEY], late.timestamp_ms, late.row[ROW],
                                                   late.reason, late.watermark_ms, late.batch_id))
                metrics.late_rows += 1
            else:
                metrics.dropped_late_rows += 1
        assigner = self.spec.window.assigner
        for element in elements:
            if element.arrival in late_arrivals:
                continue
            metrics = result.metrics[element.side]
            if assigner.assign(element.timestamp_ms, element.row):
                metrics.accepted_rows += 1
            else:
                metrics.unassigned_rows += 1
        accepted = sum(m.accepted_rows for m in result.metrics.values())
        if accepted != fired.metrics.accepted_rows:
            raise AssertionError(f"join accounting: {accepted} rows counted accepted per side, the window "
                                 f"operator accepted {fired.metrics.accepted_rows}")


def join_pane(spec: WindowJoinSpec, pane: Pane) -> Pane:
    """A pane of the tagged union's window operator as the join's: the key unwrapped, the firing's
    rows split by side and turned into output rows by the spec's function (kind or co-group)."""
    firing = pane.rows[0][FIRING]
    key = pane.key[0]
    rows = spec.function.firing_rows(key, firing.context, firing.lefts, firing.rights)
    return replace(pane, key=key, values={}, rows=tuple(rows))
