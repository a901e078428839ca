"""The Spark forms of :meth:`windowing.core.joins.kinds.JoinKind.pairs`: one window's pairs.

Two forms of the same pairs in the same order. :func:`pairs_column`: a fired window's rows of each side,
collected into arrays in arrival rank, give its pairs as an array column with no join: both sides
present, every left with every right (left-major, so the pairs come in the order of the concatenated
ranks); one side alone, its rows with a null partner where the kind keeps unmatched rows; semi and anti,
the left rows when the right side is present or absent. :func:`joined_pane_row`: the same pairs read off
a full outer join of the two sides on the key and the window, each row carrying its place in its side's
rank (no collected arrays: for windows too many to group into arrays cheaply). The kind's flags decide,
as they do for the reference form.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.kinds import JoinKind
from windowing.spark.joins.columns import LEFT_ROW, RIGHT_ROW


def pair_type(left: T.StructType, right: T.StructType) -> T.StructType:
    """One pair: each side's row struct (null for a missing side)."""
    return T.StructType([T.StructField(LEFT_ROW, left, True), T.StructField(RIGHT_ROW, right, True)])


def pairs_column(kind: JoinKind, lefts: Column, rights: Column, left: T.StructType, right: T.StructType) -> Column:
    """The pairs of one window as ``array<pair_type>``; ``lefts`` and ``rights``: arrays of structs holding the
    side's row in ``LEFT_ROW`` / ``RIGHT_ROW``, in arrival rank."""
    null_left, null_right = F.lit(None).cast(left), F.lit(None).cast(right)
    lefts_alone = F.transform(lefts, lambda l: F.struct(l[LEFT_ROW].alias(LEFT_ROW), null_right.alias(RIGHT_ROW)))
    none = F.array().cast(T.ArrayType(pair_type(left, right)))
    has_right = F.size(rights) > 0
    if kind.left_only:
        return F.when(has_right if kind.needs_match else ~has_right, lefts_alone).otherwise(none)
    has_left = F.size(lefts) > 0
    every = F.flatten(F.transform(lefts, lambda l: F.transform(
        rights, lambda r: F.struct(l[LEFT_ROW].alias(LEFT_ROW), r[RIGHT_ROW].alias(RIGHT_ROW)))))
    pairs = F.when(has_left & has_right, every)
    if kind.keeps_unmatched_left:
        pairs = pairs.when(has_left, lefts_alone)
    if kind.keeps_unmatched_right:
        pairs = pairs.when(has_right, F.transform(
            rights, lambda r: F.struct(null_left.alias(LEFT_ROW), r[RIGHT_ROW].alias(RIGHT_ROW))))
    return pairs.otherwise(none)


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
    """The kind's pairs of a window read off its sides' full outer join (the same pairs, in the same order, as
    :func:`pairs_column`), with no arrays: ``left_ordinal`` / ``right_ordinal`` are each row's 0-based place in
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
