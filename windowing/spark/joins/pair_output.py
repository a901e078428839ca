"""A pair's output row on Spark: a projection as column expressions, a join function as a Python UDF."""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.functions import Projection


def pair_output(output, out_type: T.StructType, left: Column, right: Column) -> Column:
    """The output struct of the pair (``left``, ``right``: the sides' row structs, null for a missing side);
    null when a join function returns None for the pair (no row)."""
    if isinstance(output, Projection):
        return F.struct(*[left[source].alias(name) for source, name in output.left],
                        *[right[source].alias(name) for source, name in output.right])

    def call(left_row, right_row):
        as_dict = (lambda row: None if row is None else row.asDict(recursive=True))
        values = output.row(as_dict(left_row), as_dict(right_row))
        return None if values is None else tuple(values[name] for name in out_type.fieldNames())

    return F.udf(call, out_type)(left, right)
