"""A pair's output row on Spark: a projection as column expressions, a join function as a Python UDF."""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.functions import PairJoin, Projection
from windowing.spark.joins.columns import LEFT_ROW, RIGHT_ROW


def pair_output(output, out_type: T.StructType, left: Column, right: Column) -> Column:
    """The output struct of the pair (``left``, ``right``: the sides' row structs, null for a missing side);
    null when a join function returns None for the pair (no row)."""
    if isinstance(output, Projection):
        return F.struct(*[left[source].alias(name) for source, name in output.left],
                        *[right[source].alias(name) for source, name in output.right])
    return F.udf(lambda left_row, right_row: _call(output, out_type, left_row, right_row), out_type)(left, right)


def window_outputs(function: PairJoin, out_type: T.StructType, lefts: Column, rights: Column) -> Column:
    """One fired window's output structs of a join function, in pair order, leaving out the pairs it gives no
    row for: one Python call per window with both sides' rows (``lefts``, ``rights``: arrays of structs holding
    the row in ``LEFT_ROW`` / ``RIGHT_ROW``, in rank), pairing them by the kind's reference form
    (:meth:`JoinKind.pairs`). (A projection's pairs come from a join instead: :mod:`kind_pairs`.)"""
    output = function.output

    def call(left_rows, right_rows):
        pairs = function.kind.pairs([r[LEFT_ROW] for r in left_rows or ()], [r[RIGHT_ROW] for r in right_rows or ()])
        outputs = (_call(output, out_type, left_row, right_row) for left_row, right_row in pairs)
        return [values for values in outputs if values is not None]

    return F.udf(call, T.ArrayType(out_type))(lefts, rights)


def _call(output, out_type: T.StructType, left_row, right_row) -> tuple | None:
    as_dict = (lambda row: None if row is None else row.asDict(recursive=True))
    values = output.row(as_dict(left_row), as_dict(right_row))
    return None if values is None else tuple(values[name] for name in out_type.fieldNames())
