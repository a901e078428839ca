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

from dataclasses import dataclass
from typing import Iterable

from windowing.core.records import Pane
from windowing.core.spec import APPEND, FINAL, OUTPUT_MODES, UPSERT, WindowSpec


@dataclass(frozen=True)
class OutputMode:
    """One output mode: which panes its sink keeps and how many rows a write of panes writes.

    Attributes:
        name: the spec's ``output_mode`` value.
        writes_every_pane: a write of panes writes each of them (so the rows written are the panes
            emitted); otherwise the sink keeps only some (``final``: those with ``is_final``) and
            the panes emitted are counted apart.
        latest_per_window: the sink holds one row per (key, window), the latest pane, and a pane's
            ``supersedes`` removes the windows it names (``upsert``); otherwise every written pane.
    """

    name: str
    writes_every_pane: bool
    latest_per_window: bool = False

    def written(self, panes: list[Pane]) -> list[Pane]:
        """The panes of one write that reach the sink."""
        return panes if self.writes_every_pane else [p for p in panes if p.is_final]

    def holds(self, panes: list[Pane]) -> list[Pane]:
        """What the sink holds after receiving ``panes`` in order."""
        if not self.latest_per_window:
            return self.written(panes)
        table: dict = {}
        for pane in panes:
            for start, end in pane.supersedes:
                table.pop((pane.key, start, end), None)
            table[(pane.key, pane.window_start_ms, pane.window_end_ms)] = pane
        return sorted(table.values(), key=lambda p: (repr(p.key), p.window_start_ms is not None,
                                                     p.window_start_ms or 0, p.window_end_ms or 0))


MODES = {APPEND: OutputMode(APPEND, writes_every_pane=True), UPSERT: OutputMode(UPSERT, writes_every_pane=True, latest_per_window=True),
         FINAL: OutputMode(FINAL, writes_every_pane=False)}
"""The output modes by name (``WindowSpec.output_mode``)."""


def output_mode(mode: str | None) -> OutputMode:
    """The output mode named ``mode`` (None: ``append``, a store's default).

    Raises:
        ValueError: for an unknown name, naming the valid ones.
    """
    if mode is None:
        return MODES[APPEND]
    if mode not in MODES:
        raise ValueError(f"output mode {mode!r} is not one of {OUTPUT_MODES}")
    return MODES[mode]


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
    if mode is None:
        raise ValueError(f"output mode None is not one of {OUTPUT_MODES}")
    return output_mode(mode).holds(list(panes))
