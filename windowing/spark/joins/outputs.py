"""The schemas of a join's tables: results (window join panes), pairs (interval join), late, quarantine."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.functions import Projection
from windowing.spark.joins.columns import (
    BATCH_ID, EVENT_TIME, IS_FINAL, JOIN_KEY, LEFT_ROW, LEFT_TIME, OUTPUT, PAIR_TIME, PANE_INDEX, REASON,
    RIGHT_ROW, RIGHT_TIME, ROW_INDEX, SIDE, SUPERSEDES, TIMING, TS, WATERMARK, WE, WS)
from windowing.spark.joins.intake import SideSchemas

RESULTS_STATISTICS = (WS, WE, BATCH_ID)
"""The columns of a window join's results table that Delta keeps file statistics on: those its readers select
rows by (a range of windows, a batch's panes). Not the key or the output columns: every write is
hash-partitioned by key and window, so each file spans nearly every value, and their minima and maxima (string
comparisons on every row) would cost every write and skip nothing."""
PAIRS_STATISTICS = (PAIR_TIME, BATCH_ID)
"""The same for an interval join's pairs table: the pair's time and the batch."""
SUPERSEDES_TYPE = T.ArrayType(T.StructType([T.StructField(WS, T.LongType(), True),
                                            T.StructField(WE, T.LongType(), True)]))


def output_type(output, schemas: SideSchemas) -> T.StructType:
    """The output row's struct: a projection's columns with their input types, or the declared output schema."""
    if isinstance(output, Projection):
        fields = [T.StructField(name, schemas.left[source].dataType, True) for source, name in output.left]
        fields += [T.StructField(name, schemas.right[source].dataType, True) for source, name in output.right]
        return T.StructType(fields)
    parsed = T._parse_datatype_string(output.output_schema)
    return T.StructType([T.StructField(f.name, f.dataType, True) for f in parsed.fields])


def _check_names(out: T.StructType, taken: list[str]) -> None:
    clash = sorted(set(out.fieldNames()) & set(taken))
    if clash:
        raise ValueError(f"the join's output columns {clash} are also columns the results table adds; rename them")


def results_schema(key: T.StructType, out: T.StructType) -> T.StructType:
    """A window join's results: one row per output row of a pane (and one with a null ``row_index`` for a
    pane that emitted none), the pane info, the output columns, the watermark and the batch."""
    head = [T.StructField(JOIN_KEY, key, True), T.StructField(WS, T.LongType(), True),
            T.StructField(WE, T.LongType(), True), T.StructField(PANE_INDEX, T.IntegerType(), True),
            T.StructField(TIMING, T.StringType(), True), T.StructField(IS_FINAL, T.BooleanType(), True),
            T.StructField(SUPERSEDES, SUPERSEDES_TYPE, True), T.StructField(ROW_INDEX, T.IntegerType(), True)]
    tail = [T.StructField(WATERMARK, T.LongType(), True), T.StructField(BATCH_ID, T.LongType(), True)]
    _check_names(out, [f.name for f in head + tail])
    return T.StructType(head + list(out.fields) + tail)


def pairs_schema(key: T.StructType, out: T.StructType) -> T.StructType:
    """An interval join's pairs: the key, both event times and the pair's, the output columns, the watermark
    at the start of the batch that emitted the pair, the batch."""
    head = [T.StructField(JOIN_KEY, key, True), T.StructField(LEFT_TIME, T.LongType(), True),
            T.StructField(RIGHT_TIME, T.LongType(), True), T.StructField(PAIR_TIME, T.LongType(), True)]
    tail = [T.StructField(WATERMARK, T.LongType(), True), T.StructField(BATCH_ID, T.LongType(), True)]
    _check_names(out, [f.name for f in head + tail])
    return T.StructType(head + list(out.fields) + tail)


def late_schema(schemas: SideSchemas) -> T.StructType:
    return T.StructType([T.StructField(SIDE, T.StringType(), True), T.StructField(JOIN_KEY, schemas.key, True),
                         T.StructField(EVENT_TIME, T.LongType(), True), T.StructField(REASON, T.StringType(), True),
                         T.StructField(WATERMARK, T.LongType(), True), T.StructField(BATCH_ID, T.LongType(), True),
                         T.StructField(LEFT_ROW, schemas.left, True), T.StructField(RIGHT_ROW, schemas.right, True)])


def quarantine_schema(schemas: SideSchemas) -> T.StructType:
    return T.StructType([T.StructField(SIDE, T.StringType(), True), T.StructField(REASON, T.StringType(), True),
                         T.StructField(BATCH_ID, T.LongType(), True),
                         T.StructField(LEFT_ROW, schemas.left, True), T.StructField(RIGHT_ROW, schemas.right, True)])


def late_rows(tagged: DataFrame, reason, watermark_ms: int, batch_id: int) -> DataFrame:
    """Tagged rows as late-table rows (``reason``: a column or a literal)."""
    return tagged.select(SIDE, JOIN_KEY, F.col(TS).alias(EVENT_TIME), F.lit(reason).alias(REASON)
                         if isinstance(reason, str) else reason.alias(REASON),
                         F.lit(watermark_ms).cast("long").alias(WATERMARK), F.lit(batch_id).cast("long")
                         .alias(BATCH_ID), LEFT_ROW, RIGHT_ROW)


def flatten_output(df: DataFrame, schema: T.StructType) -> DataFrame:
    """``df`` with its ``OUTPUT`` struct spread into the output columns, in ``schema``'s column order."""
    out_fields = [f.name for f in df.schema[OUTPUT].dataType.fields]
    return df.select(*[F.col(f"{OUTPUT}.`{name}`").alias(name) if name in out_fields and name not in df.columns
                       else F.col(name) for name in schema.fieldNames()])
