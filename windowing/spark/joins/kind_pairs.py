"""The Spark form of :meth:`windowing.core.joins.kinds.JoinKind.pairs`: one window's pairs as an array column.

A fired window's rows of each side, collected into arrays in arrival rank, give its pairs with no join:
both sides present, every left with every right (left-major, so the pairs come in the order of the
concatenated ranks); one side alone, its rows with a null partner where the kind keeps unmatched rows;
semi and anti, the left rows when the right side is present or absent. The kind's flags decide, as they
do for the reference form.
"""
from __future__ import annotations

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
