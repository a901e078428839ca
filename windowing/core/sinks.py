"""Output modes: what a sink holds, derived from the panes an operator emits.

* ``append``: every pane, in emission order (a log of firings). For merging
  (session) windows each pane's ``supersedes`` names the earlier windows
  whose panes it replaces, so a reader can tell current rows from stale ones.
* ``upsert``: one row per (key, window), the latest pane (Delta MERGE on the
  key and window); a pane that supersedes merged-away sessions deletes their
  rows, so the table holds the current sessions and no fragments.
* ``final``: only panes with ``is_final`` (the window's state was cleaned up
  right after it: no further pane can follow). Windows that never end (global
  windows) or whose last firing precedes cleanup by other batches only show
  up once their final pane exists.

A known limit of ``upsert``: if a merged session never fires again (a trigger
that does not fire at the window's end, e.g. a bare CountTrigger, and a
cleanup with a partial count), the rows of the sessions it swallowed stay.
"""
from __future__ import annotations

from typing import Iterable

from windowing.core.records import Pane
from windowing.core.spec import APPEND, FINAL, OUTPUT_MODES, UPSERT, WindowSpec


def sink_view(mode: str | WindowSpec, panes: Iterable[Pane]) -> list[Pane]:
    """The rows a sink of output ``mode`` holds after receiving ``panes`` in order.

    Args:
        mode: ``append``, ``upsert`` or ``final``, or a spec (its ``output_mode``).
        panes: every pane emitted, in batch order.

    Raises:
        ValueError: for an unknown mode, naming the valid ones.
    """
    if isinstance(mode, WindowSpec):
        mode = mode.output_mode
    if mode not in OUTPUT_MODES:
        raise ValueError(f"output mode {mode!r} is not one of {OUTPUT_MODES}")
    panes = list(panes)
    if mode == APPEND:
        return panes
    if mode == FINAL:
        return [p for p in panes if p.is_final]
    table: dict = {}
    for pane in panes:
        for start, end in pane.supersedes:
            table.pop((pane.key, start, end), None)
        table[(pane.key, pane.window_start_ms, pane.window_end_ms)] = pane
    assert mode == UPSERT
    return sorted(table.values(), key=lambda p: (repr(p.key), p.window_start_ms is not None, p.window_start_ms or 0,
                                                 p.window_end_ms or 0))
