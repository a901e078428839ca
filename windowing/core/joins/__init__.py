"""Joins of two streams: window join, co-group and interval join (pure Python, no Spark).

* :mod:`sides`: the two inputs (:class:`JoinInput`) and their :class:`Side`;
  ``left.join(right)``, ``left.co_group(right)``, ``left.interval_join(right)``
  start the builders (:mod:`builders`).
* :mod:`kinds`: inner, left, right, full, semi and anti joins.
* :mod:`functions`: projections, join functions, co-group functions.
* :mod:`spec`: :class:`WindowJoinSpec`, :class:`IntervalJoinSpec` (frozen, validated).
* :mod:`tagged`: the tagged union a window join's window operator runs on.
* :mod:`intake`: per-side quarantine and the two-input watermark.
* :mod:`window_join`, :mod:`interval_join`: the reference models.
* :mod:`records`: what they emit.

The semantics are in docs/semantics.md ("Joins"); docs/joins.md is the design note.
"""
from windowing.core.joins.functions import CoGroupFunction, JoinFunction, Projection
from windowing.core.joins.interval_join import IntervalJoinOperator
from windowing.core.joins.kinds import ANTI, FULL_OUTER, INNER, JOIN_KINDS, LEFT_OUTER, RIGHT_OUTER, SEMI, JoinKind
from windowing.core.joins.records import JoinBatchResult, JoinedPair, JoinLateElement, JoinQuarantinedRow
from windowing.core.joins.sides import LEFT, RIGHT, JoinInput, Side
from windowing.core.joins.spec import IntervalJoinSpec, WindowJoinSpec
from windowing.core.joins.window_join import WindowJoinOperator

__all__ = ["ANTI", "CoGroupFunction", "FULL_OUTER", "INNER", "IntervalJoinOperator", "IntervalJoinSpec",
           "JOIN_KINDS", "JoinBatchResult", "JoinFunction", "JoinInput", "JoinKind", "JoinLateElement",
           "JoinQuarantinedRow", "JoinedPair", "LEFT", "LEFT_OUTER", "Projection", "RIGHT", "RIGHT_OUTER", "SEMI",
           "Side", "WindowJoinOperator", "WindowJoinSpec"]
