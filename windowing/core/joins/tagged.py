"""The tagged union both inputs of a window join become (Flink's ``TaggedUnion``).

A window join runs the one-input window operator on the union of its inputs:
every element becomes a tagged element, a dict with the join key (the left
row's ``where`` columns or the right row's ``equal_to`` columns, as a tuple),
the event time, the side and the original row. The window operator keys,
assigns, triggers, evicts and merges sessions on these; when a window fires,
:class:`SplitSides` hands the co-group its left and right rows.

A user trigger, evictor or assigner of a join sees tagged elements (as a
user evictor of a Flink window join sees ``TaggedUnion`` values); the
built-in parts that read a row column (``DeltaTrigger``, ``DeltaEvictor``,
sessions with a gap column) are refused on joins.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from windowing.core.functions import ProcessContext
from windowing.core.joins.sides import LEFT, RIGHT, Side

KEY = "join_key"
"""The tagged element's join key: the tuple of the side's key column values."""
TIME = "join_time_ms"
"""The tagged element's event time (the side's event-time column, epoch ms)."""
SIDE = "side"
"""The tagged element's :class:`~windowing.core.joins.sides.Side`."""
ROW = "row"
"""The original row."""
ARRIVAL = "arrival"
"""The element's arrival number in the operator (both sides share one count)."""

FIRING = "firing"
"""The one column :class:`SplitSides` emits per firing: (context, lefts, rights)."""
FIRING_SCHEMA = f"{FIRING} binary"
"""Its schema, in the window spec's DDL form (only the name is read; the firing never leaves the model)."""


def tagged(side: Side, key: tuple, timestamp_ms: int, row: dict, arrival: int) -> dict[str, Any]:
    return {KEY: key, TIME: timestamp_ms, SIDE: side, ROW: row, ARRIVAL: arrival}


@dataclass(frozen=True)
class Firing:
    """One firing of a (key, window) of the tagged union, split by side (rows in (event time, arrival) order)."""

    context: ProcessContext
    lefts: list
    rights: list


@dataclass(frozen=True)
class SplitSides:
    """The process window function of the tagged union: one :class:`Firing` per firing window."""

    def process(self, key: tuple, context: ProcessContext, elements: list[dict]) -> list[dict]:
        lefts = [element[ROW] for element in elements if element[SIDE] == LEFT]
        rights = [element[ROW] for element in elements if element[SIDE] == RIGHT]
        return [{FIRING: Firing(context, lefts, rights)}]
