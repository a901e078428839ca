"""The batch-wide part of a join on Spark: each side's rows checked and tagged, and the two-input clock.

:func:`tag_sides` turns a batch's left and right DataFrames into one frame of
tagged rows (``side``, ``join_key``, event time in ms, arrival order, the
original row as ``left_row`` or ``right_row``) with a quarantine reason per
row, in the model's order (:mod:`windowing.core.joins.intake`): a null key
column (``null_key``), a null event time (``null_event_time``), an event time
that is not an integer of epoch ms (``unparseable_event_time``; a timestamp
column is converted to ms, a string column is parsed as an integer).

:class:`JoinClock` is the driver's part: the processing-time clock and the
watermark (the minimum of the inputs', idle inputs left out), advanced from
each side's largest valid event time exactly as the reference model does,
and saved in the progress row as JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.functions import Projection
from windowing.core.joins.intake import idle_timeouts_ms
from windowing.core.joins.sides import LEFT, RIGHT, SIDES, Side
from windowing.core.records import QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY, QUARANTINE_UNPARSEABLE_EVENT_TIME
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import WatermarkTracker
from windowing.spark.joins.columns import JOIN_KEY, LEFT_ROW, ORDER, REASON, RIGHT_ROW, ROW_COLUMNS, SIDE, TS


def event_time_ms_sql(expression: str, data_type: T.DataType) -> str:
    """SQL text of an event time in epoch ms (the join's one reading of it, also usable as a Delta
    ``replaceWhere``): integers as they are, timestamps converted, other values parsed as an integer
    (null: unparseable, as the model has a value that is not an int)."""
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return f"unix_millis(CAST({expression} AS TIMESTAMP))"
    if isinstance(data_type, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return f"CAST({expression} AS BIGINT)"
    text = f"CAST({expression} AS STRING)"
    return f"(CASE WHEN {text} RLIKE '^-?[0-9]{{1,18}}$' THEN CAST({text} AS BIGINT) END)"


def event_time_ms(column: str, data_type: T.DataType) -> Column:
    """The event time in epoch ms of the column named ``column`` (:func:`event_time_ms_sql`)."""
    return F.expr(event_time_ms_sql(f"`{column}`", data_type))


@dataclass(frozen=True)
class SideSchemas:
    """The two inputs' row schemas and the join key's struct type (field names: the left key columns)."""

    left: T.StructType
    right: T.StructType
    key: T.StructType

    @classmethod
    def of(cls, spec, left: T.StructType, right: T.StructType) -> "SideSchemas":
        for side, schema, columns in ((LEFT, left, spec.left_key), (RIGHT, right, spec.right_key)):
            needed = list(columns) + [getattr(spec, side.name).event_time_column]
            missing = [c for c in needed if c not in schema.fieldNames()]
            if missing:
                raise ValueError(f"the {side.name} input has no column(s) {missing}; its columns: "
                                 f"{schema.fieldNames()}")
        key = T.StructType([T.StructField(name, left[name].dataType, True) for name in spec.left_key])
        return cls(left, right, key)

    def row_type(self, side: Side) -> T.StructType:
        return getattr(self, side.name)

    @property
    def whole_rows(self) -> dict[Side, T.StructType]:
        """Each side's whole input row."""
        return {side: self.row_type(side) for side in SIDES}

    def carried_rows(self, spec, output) -> dict[Side, T.StructType]:
        """The row each side's tagged rows carry through a plan that emits ``output``: a projection's columns of
        that side and the side's key columns (never none: Parquet stores no empty struct), in the input's order;
        the whole row for a join function. The late and quarantine tables always get whole rows."""
        if not isinstance(output, Projection):
            return self.whole_rows
        read = {LEFT: {column for column, _ in output.left} | set(spec.left_key),
                RIGHT: {column for column, _ in output.right} | set(spec.right_key)}
        return {side: T.StructType([f for f in self.row_type(side).fields if f.name in read[side]]) for side in SIDES}


def _tag(spec, side: Side, df: DataFrame, rows: dict[Side, T.StructType], schemas: SideSchemas) -> DataFrame:
    columns = {LEFT: spec.left_key, RIGHT: spec.right_key}[side]
    event_time = getattr(spec, side.name).event_time_column
    raw_ts = F.col(event_time)
    ts = event_time_ms(event_time, df.schema[event_time].dataType)
    any_null_key = F.lit(False)
    for c in columns:
        any_null_key = any_null_key | F.col(c).isNull()
    reason = (F.when(any_null_key, F.lit(QUARANTINE_NULL_KEY))
              .when(raw_ts.isNull(), F.lit(QUARANTINE_NULL_EVENT_TIME))
              .when(ts.isNull(), F.lit(QUARANTINE_UNPARSEABLE_EVENT_TIME)))
    key = F.struct(*[F.col(c).cast(f.dataType).alias(f.name) for c, f in zip(columns, schemas.key.fields)])
    row = F.struct(*[F.col(f"`{f.name}`") for f in rows[side].fields])
    own, other = ROW_COLUMNS[side], ROW_COLUMNS[side.other]
    return df.select(F.lit(side.name).alias(SIDE), key.alias(JOIN_KEY), ts.alias(TS),
                     F.monotonically_increasing_id().alias(ORDER), reason.alias(REASON), row.alias(own),
                     F.lit(None).cast(rows[side.other]).alias(other))


def tag_sides(spec, left: DataFrame, right: DataFrame, schemas: SideSchemas,
              rows: dict[Side, T.StructType] | None = None) -> DataFrame:
    """Both sides' rows as one frame of tagged rows (``REASON`` set on the rows to quarantine), each carrying
    the columns of its ``rows`` type (:meth:`SideSchemas.carried_rows`; the whole row when not given)."""
    rows = rows or schemas.whole_rows
    columns = [SIDE, JOIN_KEY, TS, ORDER, REASON, LEFT_ROW, RIGHT_ROW]
    return _tag(spec, LEFT, left, rows, schemas).select(*columns).unionByName(
        _tag(spec, RIGHT, right, rows, schemas).select(*columns))


@dataclass(frozen=True)
class SideCounts:
    """One side's part of a batch: its rows, its quarantined rows, its largest valid event time, and the
    valid rows each of the plan's row conditions holds for (:func:`side_counts`)."""

    input_rows: int = 0
    quarantined_rows: int = 0
    max_ts_ms: int | None = None
    plan_rows: dict[str, int] = field(default_factory=dict)


def side_counts(tagged: DataFrame, plan_conditions: dict[str, Column] | None = None) -> dict[Side, SideCounts]:
    """One small aggregate of the tagged rows: per side, rows, quarantined rows, largest valid event time,
    and per named condition of ``plan_conditions`` (a plan's per-row accounting) its valid rows."""
    valid = F.col(REASON).isNull()
    conditions = plan_conditions or {}
    rows = tagged.groupBy(SIDE).agg(
        F.count(F.lit(1)).alias("n"), F.count(REASON).alias("q"), F.max(F.when(valid, F.col(TS))).alias("m"),
        *[F.sum(F.when(valid & condition, 1).otherwise(0)).alias(f"__{name}") for name, condition in conditions.items()]
    ).collect()
    found = {r[SIDE]: SideCounts(r["n"], r["q"], r["m"], {name: int(r[f"__{name}"] or 0) for name in conditions})
             for r in rows}
    return {side: found.get(side.name, SideCounts(plan_rows=dict.fromkeys(conditions, 0))) for side in SIDES}


class JoinClock:
    """The operator's processing-time clock and two-input watermark, kept between batches.

    As :class:`windowing.core.joins.intake.JoinIntake` has them: one
    ``WatermarkTracker`` with the sources ``left`` and ``right`` and delay 0, fed
    each side's largest event time less that side's delay.
    """

    def __init__(self, spec, watermark_ms: int = MIN_TIMESTAMP_MS, saved: dict | None = None):
        self.spec = spec
        saved = saved or {}
        self.tracker = WatermarkTracker.restore(
            0, (LEFT.name, RIGHT.name), spec.idle_timeout_ms, watermark_ms, saved.get("tracker"),
            source_idle_timeouts_ms=idle_timeouts_ms({LEFT: spec.left, RIGHT: spec.right}, spec.idle_timeout_ms))
        self.clock_ms = saved.get("clock_ms", MIN_TIMESTAMP_MS)

    @property
    def watermark_ms(self) -> int:
        return self.tracker.current_ms

    def arrive(self, processing_time_ms: int | None) -> bool:
        """The batch arrives at ``processing_time_ms``: the clock moves (never back); True when it moved."""
        if processing_time_ms is not None and processing_time_ms > self.clock_ms:
            self.clock_ms = processing_time_ms
            self.tracker.note_processing_time(self.clock_ms)
            return True
        return False

    def advance(self, counts: dict[Side, SideCounts], flush: bool) -> int:
        """After the batch's rows: observe each side's largest valid event time; advance the watermark."""
        for side, count in counts.items():
            if count.max_ts_ms is not None:
                delay_ms = getattr(self.spec, side.name).max_out_of_orderness_ms
                self.tracker.observe(side.name, count.max_ts_ms - delay_ms, self.clock_ms)
        if flush:
            self.clock_ms = MAX_TIMESTAMP_MS
            self.tracker.note_processing_time(self.clock_ms)
        return self.tracker.advance(self.clock_ms, MAX_TIMESTAMP_MS if flush else None)

    def saved(self) -> dict:
        """What the progress row keeps (with the watermark in its own column)."""
        return {"tracker": self.tracker.snapshot(), "clock_ms": self.clock_ms}
