"""Python rows as a DataFrame that Spark plans as a local relation (no RDD scan, no Python worker)."""
from __future__ import annotations

import datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

_ARROW_EXACT = (T.LongType, T.IntegerType, T.ShortType, T.ByteType, T.DoubleType, T.FloatType, T.StringType,
                T.BooleanType, T.BinaryType, T.DecimalType)


def _arrow_exact(field: T.StructField, values: list) -> bool:
    if isinstance(field.dataType, T.TimestampType):
        return all(v is None or (isinstance(v, datetime.datetime) and v.utcoffset() is not None) for v in values)
    return isinstance(field.dataType, _ARROW_EXACT)


def local_frame(spark: SparkSession, rows: list, schema: T.StructType) -> DataFrame:
    """A DataFrame of Python rows (tuples in ``schema``'s order) that Spark plans as a local relation.

    ``createDataFrame`` of a list builds an RDD scan: every query on it schedules
    tasks for it (a Python worker unpickles its rows), and its size is unknown, so no
    join broadcasts it. Through Arrow the rows become a local relation (a simple
    aggregate of one took 91 ms instead of 173). Only for columns Arrow converts
    exactly: flat ones, and timestamps whose every value knows its time zone (the
    progress and claim rows' commit times); naive datetimes, dates and nested types
    take the list path (naive datetimes are read in the process's time zone there).
    """
    if not all(_arrow_exact(f, [r[i] for r in rows]) for i, f in enumerate(schema.fields)):
        return spark.createDataFrame(rows, schema)
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    arrow_schema = to_arrow_schema(schema, timezone="UTC")   # timestamps: instants, labelled UTC
    columns = list(zip(*rows)) if rows else [()] * len(schema.fields)
    table = pa.Table.from_arrays([pa.array(list(c), type=t) for c, t in zip(columns, arrow_schema.types)],
                                 schema=arrow_schema)
    return spark.createDataFrame(table, schema)


def arrow_frame(spark: SparkSession, table, schema: T.StructType) -> DataFrame:
    """An Arrow table (``pyarrow.Table`` of ``schema``'s columns, e.g. from :meth:`DataFrame.toArrow`)
    as a DataFrame of ``schema`` that Spark plans as a local relation; no Python object per row."""
    if table.num_rows == 0:
        table = table.schema.empty_table()    # one empty chunk per column: PySpark refuses a column of none
    return spark.createDataFrame(table, schema)
