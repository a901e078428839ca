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
* the windows whose ``end - 1`` is at or below the new watermark fire. A
  projection: each side's buffered rows are ranked within their (``join_key``,
  window) in the model's order (:data:`RANK`), the two sides joined full outer on the key and the
  window, and each joined row read as a pair of the join kind, a side's row
  alone, or the one row of a pane with no output (:func:`kind_pairs.joined_pane_row`):
  the plan of Spark's own equi-join on the window, with a rank on each side.
  A join function: the buffered rows are grouped once by (``join_key``,
  window), each side's rows collected in arrival rank, and the function
  called once per window on the kind's pairs of the two arrays. A fired
  window with no output row gives one row with a null ``row_index`` (the pane
  is not lost); the fired windows' buffers are deleted by their window end (a
  ``replaceWhere`` commit with the new rows, no MERGE).

A one-pass batch on tumbling windows (:attr:`WindowJoinFramePlan.observes_one_pass`) observes, on
its fired panes, each side's rows and their largest event time (:attr:`BatchContext.observation`):
the operator's accounting when they are every input row.

Everything else (early and late firings, lateness, sessions, count windows,
evictors, co-group functions) runs on the per-key path (:mod:`keyed_plan`).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.joins.functions import PairJoin, Projection
from windowing.core.joins.sides import LEFT, RIGHT, SIDES
from windowing.core.records import LATE_BEYOND_ALLOWED_LATENESS, ON_TIME
from windowing.core.triggers import EventTimeTrigger
from windowing.spark.joins.columns import (
    ACCEPTED, BATCH, BATCH_ID, IS_FINAL, JOIN_KEY, LATE, LEFT_ROW, ORDER, OUTPUT,
    PANE_INDEX, RIGHT_ROW, ROW_COLUMNS, ROW_INDEX, SIDE, SUPERSEDES, TIMING, TS, UNASSIGNED, WATERMARK, WE, WS)
from windowing.spark.joins.intake import SideSchemas
from windowing.spark.joins.outputs import (
    RESULTS_STATISTICS, SUPERSEDES_TYPE, flatten_output, late_rows, late_schema, output_type, results_schema)
from windowing.spark.joins.kind_pairs import joined_pane_row
from windowing.spark.joins.pair_output import pair_output, window_outputs
from windowing.spark.joins.plan import BatchContext, PlanOutput, ReplaceWhere, StateTable, observed_sides

BUFFERS = "buffers"
_LIVE = "__live"
_LEFT_ORDINAL, _RIGHT_ORDINAL, _RIGHTS = "__left_ordinal", "__right_ordinal", "__rights"
_SIDE_TS = {LEFT: "__left_ts_ms", RIGHT: "__right_ts_ms"}
RANK = (BATCH, TS, ORDER)
"""A side's rows in a window, in the reference model's order: as they were added to the window (by batch),
within a batch by event time, then arrival (unique per side)."""


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
        self.output = output_type(spec.function.output, schemas)
        self.results_schema = results_schema(schemas.key, self.output)
        self.results_statistics = RESULTS_STATISTICS
        self.rows = schemas.carried_rows(spec, spec.function.output)
        self.state = StateTable(BUFFERS, T.StructType(
            [T.StructField(JOIN_KEY, schemas.key, True), T.StructField(WS, T.LongType(), True),
             T.StructField(WE, T.LongType(), True), T.StructField(SIDE, T.StringType(), True),
             T.StructField(TS, T.LongType(), True), T.StructField(BATCH, T.LongType(), True),
             T.StructField(ORDER, T.LongType(), True), T.StructField(LEFT_ROW, self.rows[LEFT], True),
             T.StructField(RIGHT_ROW, self.rows[RIGHT], True)]), (SIDE, BATCH, ORDER, WS), statistics=(WS, WE))
        self.state_tables = (self.state,)
        self._panes = self._joined_panes if isinstance(spec.function.output, Projection) else self._collected_panes

    def late_schema(self) -> T.StructType:
        return late_schema(self.schemas)

    @property
    def observes_one_pass(self) -> bool:
        """Whether a one-pass batch's results can observe its accounting (:attr:`BatchContext.observation`):
        when windows neither overlap nor leave gaps (slide = size), every valid row is in exactly one pane, so
        the rows of the fired panes are every valid row exactly when none was unassigned or quarantined."""
        size, slide, _ = _geometry(self.spec.window.assigner)
        return size == slide

    def _assigned(self, valid: DataFrame, ctx: BatchContext) -> DataFrame:
        size, slide, _ = _geometry(self.spec.window.assigner)
        last_start = self._latest_window_start()
        count = -(-size // slide)
        # The k-th latest window that can hold the row (a tumbling window: the one).
        k = F.explode(F.sequence(F.lit(0), F.lit(count - 1))) if count > 1 else F.lit(0)
        return (valid.withColumn(BATCH, F.lit(ctx.batch_id).cast("long"))
                .withColumn("__k", k)
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

    def compute(self, valid: DataFrame, state: dict[str, DataFrame], ctx: BatchContext,
                whole_valid: DataFrame) -> PlanOutput:
        assigned = self._assigned(valid, ctx)
        assigned = ctx.cached_if_reread(assigned)   # the fired windows and the state's new rows
        late = late_rows(whole_valid.where(self.row_conditions(ctx.watermark_start_ms)[LATE]),
                         LATE_BEYOND_ALLOWED_LATENESS, ctx.watermark_start_ms, ctx.batch_id)
        if not self.spec.late_output:
            late = late.limit(0)
        columns = self.state.schema.fieldNames()
        new = assigned.where(F.col(_LIVE)).select(*columns)
        fires = F.col(WE) - 1 <= ctx.watermark_end_ms
        results = self._panes(state[BUFFERS].unionByName(new).where(fires), ctx)
        # The fired windows' buffered rows leave (every row at or below the new watermark's windows).
        changes = ReplaceWhere(new.where(~fires), f"`{WE}` - 1 <= {ctx.watermark_end_ms}")
        return PlanOutput(results, late, None, {} if ctx.state_stays_empty else {BUFFERS: changes}, [assigned])

    def _joined_panes(self, fired: DataFrame, ctx: BatchContext) -> DataFrame:
        """One pane per fired (key, window) of a projection: each side's rows ranked in their window, the sides
        joined full outer on the key and the window, each joined row read as its pane's pair, side row or empty
        pane (:func:`kind_pairs.joined_pane_row`), and projected."""
        window = [JOIN_KEY, WS, WE]
        in_window = Window.partitionBy(*window)
        by_rank = in_window.orderBy(*RANK)

        observed = ctx.observation is not None

        def ranked(side, row: str, ordinal: str, *more: Column) -> DataFrame:
            if observed:   # the row's event time, for the observation
                more = (*more, F.col(TS).alias(_SIDE_TS[side]))
            return fired.where(F.col(SIDE) == side.name).select(
                *window, row, (F.row_number().over(by_rank) - 1).alias(ordinal), *more)

        lefts = ranked(LEFT, LEFT_ROW, _LEFT_ORDINAL)
        rights = ranked(RIGHT, RIGHT_ROW, _RIGHT_ORDINAL, F.count(F.lit(1)).over(in_window).alias(_RIGHTS))
        row = joined_pane_row(self.spec.function.kind, F.col(LEFT_ROW), F.col(RIGHT_ROW), F.col(_LEFT_ORDINAL),
                              F.col(_RIGHT_ORDINAL), F.col(_RIGHTS), self.rows[LEFT], self.rows[RIGHT])
        joined = lefts.join(rights, window, "full")
        if observed:
            # Each row of a side once: on its joined row with the other side's first row, or with none.
            ordinals = {LEFT: F.col(_LEFT_ORDINAL), RIGHT: F.col(_RIGHT_ORDINAL)}
            once = {side: ordinals[side].isNotNull() & (F.coalesce(ordinals[side.other], F.lit(0)) == 0)
                    for side in SIDES}
            joined = joined.observe(ctx.observation, *observed_sides(
                {side: F.when(once[side], 1) for side in SIDES}, {side: F.col(_SIDE_TS[side]) for side in SIDES}))
        panes = joined.where(row.keep).select(
            *window, row.row_index.alias(ROW_INDEX),
            pair_output(self.spec.function.output, self.output, row.left, row.right).alias(OUTPUT))
        return self._results(panes, ctx)

    def _collected_panes(self, fired: DataFrame, ctx: BatchContext) -> DataFrame:
        """One pane per fired (key, window) of a join function: its rows grouped once, the function called on the
        pairs of the two sides' arrays (:func:`pair_output.window_outputs`), one results row per output in rank
        order, or one with a null ``row_index`` when the pane has none."""
        def ranked(side, row: str) -> Column:
            entry = F.when(F.col(SIDE) == side.name, F.struct(TS, BATCH, ORDER, row))
            return F.array_sort(F.collect_list(entry), _by_rank).alias(row)

        windows = fired.groupBy(JOIN_KEY, WS, WE).agg(ranked(LEFT, LEFT_ROW), ranked(RIGHT, RIGHT_ROW))
        if ctx.observation is not None:   # one row per pane: each side's rows and largest event time
            rows = {side: F.col(ROW_COLUMNS[side]) for side in SIDES}
            windows = windows.observe(ctx.observation, *observed_sides(
                {side: F.size(rows[side]) for side in SIDES}, {side: F.array_max(rows[side][TS]) for side in SIDES}))
        outputs = window_outputs(self.spec.function, self.output, F.col(LEFT_ROW), F.col(RIGHT_ROW))
        # The outputs first, exploded after: a join function's Python UDF cannot run inside the generator.
        panes = (windows.select(JOIN_KEY, WS, WE, outputs.alias(OUTPUT))
                 .select(JOIN_KEY, WS, WE, F.posexplode_outer(OUTPUT).alias(ROW_INDEX, OUTPUT)))
        return self._results(panes, ctx)

    def _results(self, panes: DataFrame, ctx: BatchContext) -> DataFrame:
        """``(join_key, window, row_index, output)`` rows as results rows: each pane ON_TIME, final, the first."""
        return flatten_output(panes.select(
            JOIN_KEY, WS, WE, F.lit(0).alias(PANE_INDEX), F.lit(ON_TIME).alias(TIMING), F.lit(True).alias(IS_FINAL),
            F.array().cast(SUPERSEDES_TYPE).alias(SUPERSEDES), F.col(ROW_INDEX).cast("int").alias(ROW_INDEX), OUTPUT,
            F.lit(ctx.watermark_end_ms).cast("long").alias(WATERMARK),
            F.lit(ctx.batch_id).cast("long").alias(BATCH_ID)), self.results_schema)


def _by_rank(a: Column, b: Column) -> Column:
    """:data:`RANK` as an array_sort comparator."""
    rank_a, rank_b = (F.struct(*[x[name] for name in RANK]) for x in (a, b))
    return F.when(rank_a < rank_b, -1).when(rank_a > rank_b, 1).otherwise(0)
