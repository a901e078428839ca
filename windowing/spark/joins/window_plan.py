"""The window join's DataFrame plan: the event-time trigger on tumbling and sliding windows, no lateness.

For a join or co-group whose trigger is the plain ``EventTimeTrigger``, with no
evictor, no allowed lateness and a tumbling or sliding event-time assigner
(:meth:`WindowJoinFramePlan.supports`), every window fires once, ON_TIME and
final, when the watermark passes its end. One batch:

* each valid row is assigned its windows (a sliding window every ``slide``
  covering ``size``); windows whose end the watermark at the start of the batch
  has passed are dropped; a row with windows but none left is late, a row
  with no window (a gap between sliding windows) unassigned, the others accepted;
* state ``buffers``: one row per (accepted row, live window);
* the windows whose ``end - 1`` is at or below the new watermark fire: their
  buffered left and right rows join on (``join_key``, window) with the join
  kind's Spark join (``JoinKind.spark_join``: ``inner``, ``left_outer``,
  ``right_outer``, ``full_outer``, ``left_semi``, ``left_anti``), each pair through the projection (or the join
  function); a fired window with no output row gives one row with a null
  ``row_index`` (the pane is not lost); the fired windows' buffers are deleted
  by their window end (a ``replaceWhere`` commit with the new rows, no MERGE).

Everything else (early and late firings, lateness, sessions, count windows,
evictors, co-group functions) runs on the per-key path (:mod:`keyed_plan`).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.joins.functions import PairJoin
from windowing.core.joins.sides import LEFT, RIGHT
from windowing.core.records import LATE_BEYOND_ALLOWED_LATENESS, ON_TIME
from windowing.core.triggers import EventTimeTrigger
from windowing.spark.joins.columns import (
    ACCEPTED, BATCH, BATCH_ID, DROPPED_LATE, IS_FINAL, JOIN_KEY, LATE, LEFT_ROW, ORDER, OUTPUT,
    PANE_INDEX, RIGHT_ROW, ROW_INDEX, SIDE, SUPERSEDES, TIMING, TS, UNASSIGNED, WATERMARK, WE, WS)
from windowing.spark.joins.intake import SideSchemas
from windowing.spark.joins.outputs import (
    SUPERSEDES_TYPE, flatten_output, late_rows, late_schema, output_type, results_schema)
from windowing.spark.joins.pair_output import pair_output
from windowing.spark.joins.plan import BatchContext, PlanOutput, ReplaceWhere, StateTable

BUFFERS = "buffers"
_LIVE = "__live"


def _geometry(assigner) -> tuple[int, int, int]:
    """(size, slide, offset) in ms: a tumbling window slides by its size."""
    if isinstance(assigner, TumblingEventTimeWindows):
        return assigner.size_ms, assigner.size_ms, assigner.offset_ms
    return assigner.size_ms, assigner.slide_ms, assigner.offset_ms


class WindowJoinFramePlan:
    """The DataFrame plan of a window join (module docstring)."""

    name = "window_frames"

    @staticmethod
    def supports(spec) -> bool:
        window = spec.window
        return (isinstance(spec.function, PairJoin) and window.trigger == EventTimeTrigger()
                and window.evictor is None and window.allowed_lateness_ms == 0
                and type(window.assigner) in (TumblingEventTimeWindows, SlidingEventTimeWindows))

    def __init__(self, spec, schemas: SideSchemas):
        self.spec, self.schemas = spec, schemas
        self.kind, self.output_fn = spec.function.kind, spec.function.output
        self.output = output_type(self.output_fn, schemas)
        self.results_schema = results_schema(schemas.key, self.output)
        self.state = StateTable(BUFFERS, T.StructType(
            [T.StructField(JOIN_KEY, schemas.key, True), T.StructField(WS, T.LongType(), True),
             T.StructField(WE, T.LongType(), True), T.StructField(SIDE, T.StringType(), True),
             T.StructField(TS, T.LongType(), True), T.StructField(BATCH, T.LongType(), True),
             T.StructField(ORDER, T.LongType(), True), T.StructField(LEFT_ROW, schemas.left, True),
             T.StructField(RIGHT_ROW, schemas.right, True)]), (SIDE, BATCH, ORDER, WS))
        self.state_tables = (self.state,)

    def late_schema(self) -> T.StructType:
        return late_schema(self.schemas)

    def _assigned(self, valid: DataFrame, ctx: BatchContext) -> DataFrame:
        size, slide, _ = _geometry(self.spec.window.assigner)
        last_start = self._latest_window_start()
        count = -(-size // slide)
        return (valid.withColumn(BATCH, F.lit(ctx.batch_id).cast("long"))
                .withColumn("__k", F.explode(F.sequence(F.lit(0), F.lit(count - 1))))
                .withColumn(WS, (last_start - F.col("__k") * slide).cast("long"))
                .withColumn(WE, (F.col(WS) + size).cast("long"))
                .where(F.col(WS) > F.col(TS) - size).drop("__k")
                .withColumn(_LIVE, F.col(WE) - 1 > ctx.watermark_start_ms))

    def _latest_window_start(self) -> Column:
        """The start of the latest window that can hold the row (the one starting at or before its time)."""
        _, slide, offset = _geometry(self.spec.window.assigner)
        return F.col(TS) - F.pmod(F.col(TS) - offset, F.lit(slide))

    def row_conditions(self, watermark_start_ms: int) -> dict[str, Column]:
        """Per valid row: accepted (a window of it has not ended at the watermark at the start of the batch),
        late (it is in windows, all ended) or unassigned (in no window: a gap between sliding windows).

        The latest window that can hold the row decides both: the row is in a window when that one
        reaches it, and late when that one ended. Counted with the intake's aggregate."""
        size, _, _ = _geometry(self.spec.window.assigner)
        latest = self._latest_window_start()
        in_window = latest > F.col(TS) - size
        live = latest + (size - 1) > watermark_start_ms
        return {ACCEPTED: in_window & live, LATE: in_window & ~live, UNASSIGNED: ~in_window}

    def compute(self, valid: DataFrame, state: dict[str, DataFrame], ctx: BatchContext) -> PlanOutput:
        assigned = self._assigned(valid, ctx).cache()
        late_output = self.spec.late_output
        counts = {}
        for side in (LEFT, RIGHT):
            rows = ctx.plan_rows[side]
            counts[side] = {ACCEPTED: rows[ACCEPTED], LATE: rows[LATE] if late_output else 0,
                            DROPPED_LATE: 0 if late_output else rows[LATE], UNASSIGNED: rows[UNASSIGNED]}
        late = late_rows(valid.where(self.row_conditions(ctx.watermark_start_ms)[LATE]),
                         LATE_BEYOND_ALLOWED_LATENESS, ctx.watermark_start_ms, ctx.batch_id)
        if not late_output:
            late = late.limit(0)
        columns = self.state.schema.fieldNames()
        new = assigned.where(F.col(_LIVE)).select(*columns)
        fires = F.col(WE) - 1 <= ctx.watermark_end_ms
        fired = state[BUFFERS].unionByName(new).where(fires).cache()
        results = self._panes(fired, ctx)
        # The fired windows' buffered rows leave (every row at or below the new watermark's windows).
        changes = ReplaceWhere(new.where(~fires), f"`{WE}` - 1 <= {ctx.watermark_end_ms}")
        return PlanOutput(results, late, counts, {} if ctx.state_stays_empty else {BUFFERS: changes},
                          [assigned, fired])

    def _panes(self, fired: DataFrame, ctx: BatchContext) -> DataFrame:
        side = F.col(SIDE)
        lefts = fired.where(side == LEFT.name).alias("l")
        rights = fired.where(side == RIGHT.name).alias("r")
        on = [F.col(f"l.{c}") == F.col(f"r.{c}") for c in (JOIN_KEY, WS, WE)]
        joined = lefts.join(rights, on[0] & on[1] & on[2], self.kind.spark_join)
        if self.kind.left_only:
            null_right = F.lit(None).cast(self.schemas.right)
            pairs = joined.select(*[F.col(f"l.{c}").alias(c) for c in (JOIN_KEY, WS, WE)],
                                  pair_output(self.output_fn, self.output, F.col(f"l.{LEFT_ROW}"), null_right)
                                  .alias(OUTPUT), F.struct(F.col(f"l.{TS}"), F.col(f"l.{BATCH}"),
                                                           F.col(f"l.{ORDER}")).alias("__rank"))
        else:
            pairs = joined.select(
                *[F.coalesce(F.col(f"l.{c}"), F.col(f"r.{c}")).alias(c) for c in (JOIN_KEY, WS, WE)],
                pair_output(self.output_fn, self.output, F.col(f"l.{LEFT_ROW}"), F.col(f"r.{RIGHT_ROW}")).alias(OUTPUT),
                F.struct(*[F.col(f"{s}.{c}") for s in ("l", "r") for c in (TS, BATCH, ORDER)]).alias("__rank"))
        pairs = pairs.where(F.col(OUTPUT).isNotNull())
        by_window = Window.partitionBy(JOIN_KEY, WS, WE).orderBy("__rank")
        rows = pairs.withColumn(ROW_INDEX, (F.row_number().over(by_window) - 1).cast("int")).drop("__rank")
        windows = fired.select(JOIN_KEY, WS, WE).distinct()
        empty = (windows.join(rows.select(JOIN_KEY, WS, WE), [JOIN_KEY, WS, WE], "left_anti")
                 .withColumn(OUTPUT, F.lit(None).cast(self.output)).withColumn(ROW_INDEX, F.lit(None).cast("int")))
        panes = (rows.unionByName(empty)
                 .withColumn(PANE_INDEX, F.lit(0)).withColumn(TIMING, F.lit(ON_TIME))
                 .withColumn(IS_FINAL, F.lit(True)).withColumn(SUPERSEDES, F.array().cast(SUPERSEDES_TYPE))
                 .withColumn(WATERMARK, F.lit(ctx.watermark_end_ms).cast("long"))
                 .withColumn(BATCH_ID, F.lit(ctx.batch_id).cast("long")))
        return flatten_output(panes, self.results_schema)
