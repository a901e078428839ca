"""Join kinds: which (left, right) pairs a window join emits for one firing.

A window join is a co-group (Flink's ``JoinedStreams`` runs on
``CoGroupedStreams``): per key and firing window it gets the window's left
elements and right elements and emits pairs. The kinds are Flink SQL's window
join types; ``None`` stands for the missing side (its columns are null):

=========  ===============================================================
``inner``  every (l, r)
``left``   every (l, r); each l without an r as (l, None)
``right``  every (l, r); each r without an l as (None, r)
``full``   ``left`` and ``right`` together
``semi``   each l once, when the window has an r: (l, None)
``anti``   each l once, when the window has no r: (l, None)
=========  ===============================================================

Within one key and window every l matches every r (the key is the join
condition), so "without a partner" means "the other side is empty".
Pairs come left-major, each side in the order its rows entered the window
(by batch; within a batch by event time, then arrival).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class JoinKind:
    """One of the join kinds above; pick it with :func:`join_kind` or a module constant."""

    name: str
    keeps_unmatched_left: bool = False
    keeps_unmatched_right: bool = False
    left_only: bool = False       # semi and anti emit left rows only
    needs_match: bool = True      # semi: a left row needs a partner; anti: it needs none

    def pairs(self, lefts: Sequence[dict], rights: Sequence[dict]) -> list[tuple[dict | None, dict | None]]:
        """The (left, right) pairs of one firing; None is the missing side."""
        if self.left_only:
            return [(left, None) for left in lefts] if bool(rights) == self.needs_match else []
        if lefts and rights:
            return [(left, right) for left in lefts for right in rights]
        if lefts and self.keeps_unmatched_left:
            return [(left, None) for left in lefts]
        if rights and self.keeps_unmatched_right:
            return [(None, right) for right in rights]
        return []

    def __repr__(self) -> str:
        return self.name.upper()


INNER = JoinKind("inner")
LEFT_OUTER = JoinKind("left", keeps_unmatched_left=True)
RIGHT_OUTER = JoinKind("right", keeps_unmatched_right=True)
FULL_OUTER = JoinKind("full", keeps_unmatched_left=True, keeps_unmatched_right=True)
SEMI = JoinKind("semi", left_only=True, needs_match=True)
ANTI = JoinKind("anti", left_only=True, needs_match=False)
JOIN_KINDS = {kind.name: kind for kind in (INNER, LEFT_OUTER, RIGHT_OUTER, FULL_OUTER, SEMI, ANTI)}


def join_kind(how: "str | JoinKind") -> JoinKind:
    """The kind named ``how`` (``"inner"``, ``"left"``, ``"right"``, ``"full"``, ``"semi"``, ``"anti"``).

    Raises:
        ValueError: naming ``how`` and the valid names.
    """
    if isinstance(how, JoinKind):
        return how
    kind = JOIN_KINDS.get(how.lower()) if isinstance(how, str) else None
    if kind is None:
        raise ValueError(f"join how={how!r} is not a join kind; use one of {sorted(JOIN_KINDS)}")
    return kind
