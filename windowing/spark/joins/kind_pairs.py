"""The Spark form of :meth:`windowing.core.joins.kinds.JoinKind.pairs`: one window's pairs read off a join.

A full outer join of a fired window's two sides on the key and the window gives, for a window with rows
on both sides, every (left, right); for a window with one side only, that side's rows alone. Each
joined row carries its place in its side's rank within the window. :func:`joined_pane_row` reads each
joined row as the kind makes the window's pairs: every pair (left-major: the index is
``left * rights + right``), each left row once (semi, anti, the unmatched lefts of left and full
joins), each right row once (the unmatched rights of right and full joins), or nothing (one row of
the pane with a null index). The kind's flags decide, as they do for the reference form.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.kinds import JoinKind


@dataclass(frozen=True)
class JoinedPaneRow:
    """What one row of a full outer join of a fired window's two sides (on the key and the window) is in its
    pane, as columns: ``keep`` (it is one of the pane's results rows), ``row_index`` (its place in the pane's
    pair order; null on the one row of a pane that emits nothing) and the pair's ``left`` and ``right`` rows
    (null for a missing side)."""

    keep: Column
    row_index: Column
    left: Column
    right: Column


def joined_pane_row(kind: JoinKind, left_row: Column, right_row: Column, left_ordinal: Column,
                    right_ordinal: Column, right_count: Column, left: T.StructType,
                    right: T.StructType) -> JoinedPaneRow:
    """The kind's pairs of a window read off its sides' full outer join (the pairs of
    :meth:`JoinKind.pairs`, in its order): ``left_ordinal`` / ``right_ordinal`` are each row's 0-based place in
    its side's arrival rank within the window (null: the side has no row there), ``right_count`` the window's
    right rows.

    A window with rows on both sides joins into every (l, r); with one side only, into that side's rows
    alone. From those, the kind emits every pair (index ``l * rights + r``), each left row once (the row
    of the first right), each right row once, or nothing (one row per pane, with a null index)."""
    has_left, has_right = left_ordinal.isNotNull(), right_ordinal.isNotNull()
    first_left, first_right = F.coalesce(left_ordinal, F.lit(0)) == 0, F.coalesce(right_ordinal, F.lit(0)) == 0
    null_left, null_right = F.lit(None).cast(left), F.lit(None).cast(right)
    pairs = (F.lit(True), left_ordinal * right_count + right_ordinal, left_row, right_row)
    lefts = (first_right, left_ordinal, left_row, null_right)
    rights = (first_left, right_ordinal, null_left, right_row)
    nothing = (first_left & first_right, F.lit(None).cast("long"), null_left, null_right)
    if kind.left_only:
        both, left_alone = (lefts, nothing) if kind.needs_match else (nothing, lefts)
    else:
        both, left_alone = pairs, lefts if kind.keeps_unmatched_left else nothing
    right_alone = rights if kind.keeps_unmatched_right else nothing
    fields = [F.when(has_left & has_right, b).when(has_left, l).otherwise(r)
              for b, l, r in zip(both, left_alone, right_alone)]
    return JoinedPaneRow(*fields)
