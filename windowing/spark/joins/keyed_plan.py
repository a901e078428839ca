"""The per-key path of a window join or co-group: the reference model run per join key, its state in a table.

For every window join (any assigner, trigger, evictor, lateness, accumulation;
sessions merge across both sides; co-group functions). Per batch,
``rows.groupBy(join_key).cogroup(state.groupBy(join_key)).applyInArrow`` hands
each key's tagged rows (left rows first, each side in arrival order, as the
model numbers them) and its pickled state to
:func:`windowing.core.reference.run_key_batch` on the join's window spec (the
window operator on the tagged union), with the batch's watermarks and clock
from :class:`~windowing.spark.joins.intake.JoinClock`; keys without rows take
part only when a timer of theirs is due. Each firing becomes the join's pane
(:func:`windowing.core.joins.window_join.join_pane`); late rows go back to
their side; each row is counted accepted, late (or dropped) or unassigned.

State table ``keyed``: ``join_key``, the pickled state, the key's earliest
event-time and processing-time timers.
"""
from __future__ import annotations

import pickle

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.functions import PairJoin
from windowing.core.joins.sides import LEFT, RIGHT
from windowing.core.joins.tagged import ARRIVAL, ROW, SIDE as TAG_SIDE, TIME, tagged
from windowing.core.joins.window_join import join_pane
from windowing.core.reference import EVENT, PROCESSING, KeyBatchClock, run_key_batch
from windowing.spark.joins.columns import (
    ACCEPTED, BATCH_ID, DELETE_FLAG, DROPPED_LATE, EVENT_TIME, IS_FINAL, JOIN_KEY, LATE, LEFT_ROW, NEXT_EVENT_TIMER,
    NEXT_PROCESSING_TIMER, ORDER, OUTPUT, PANE_INDEX, PLAN_COUNTS, REASON, RIGHT_ROW, ROW_COLUMNS, ROW_INDEX, SIDE,
    STATE, SUPERSEDES, TIMING, TS, UNASSIGNED, WATERMARK, WE, WS)
from windowing.spark.joins.intake import SideSchemas
from windowing.spark.joins.outputs import (
    RESULTS_STATISTICS, SUPERSEDES_TYPE, flatten_output, late_schema, output_type, results_schema)
from windowing.spark.joins.plan import BatchContext, KeyedChanges, PlanOutput, StateTable, counts_by_side
from windowing.spark.runtime.runner_rows import KIND, RunnerRow

KEYED = "keyed"
PANE_ROW, LATE_ROW, COUNT_ROW, STATE_ROW = (RunnerRow("pane"), RunnerRow("late"), RunnerRow("count"),
                                            RunnerRow("state"))
_SIDES = {LEFT.name: LEFT, RIGHT.name: RIGHT}


def _state_schema(key: T.StructType) -> T.StructType:
    return T.StructType([T.StructField(JOIN_KEY, key, True), T.StructField(STATE, T.BinaryType(), True),
                         T.StructField(NEXT_EVENT_TIMER, T.LongType(), True),
                         T.StructField(NEXT_PROCESSING_TIMER, T.LongType(), True)])


class KeyedJoinPlan:
    """The per-key path of a :class:`~windowing.core.joins.spec.WindowJoinSpec` (see the module docstring)."""

    name = KEYED

    def __init__(self, spec, schemas: SideSchemas):
        self.spec, self.schemas = spec, schemas
        self.output = output_type(spec.function.output if isinstance(spec.function, PairJoin) else spec.function,
                                  schemas)
        self.results_schema = results_schema(schemas.key, self.output)
        self.results_statistics = RESULTS_STATISTICS
        self.rows = schemas.whole_rows     # a key's model run gets its rows whole (join functions, late rows)
        self.state = StateTable(KEYED, _state_schema(schemas.key), (JOIN_KEY,),
                                statistics=(JOIN_KEY, NEXT_EVENT_TIMER, NEXT_PROCESSING_TIMER))
        self.state_tables = (self.state,)
        self._runner_schema = T.StructType(
            [T.StructField(KIND, T.StringType(), True), T.StructField(JOIN_KEY, schemas.key, True),
             T.StructField(WS, T.LongType(), True), T.StructField(WE, T.LongType(), True),
             T.StructField(PANE_INDEX, T.IntegerType(), True), T.StructField(TIMING, T.StringType(), True),
             T.StructField(IS_FINAL, T.BooleanType(), True), T.StructField(SUPERSEDES, SUPERSEDES_TYPE, True),
             T.StructField(ROW_INDEX, T.IntegerType(), True), T.StructField(OUTPUT, self.output, True),
             T.StructField(WATERMARK, T.LongType(), True), T.StructField(SIDE, T.StringType(), True),
             T.StructField(TS, T.LongType(), True), T.StructField(REASON, T.StringType(), True),
             T.StructField(LEFT_ROW, schemas.left, True), T.StructField(RIGHT_ROW, schemas.right, True)]
            + [T.StructField(name, T.LongType(), True) for name in PLAN_COUNTS]
            + [T.StructField(f.name, f.dataType, True) for f in self.state.schema.fields[1:]])

    observes_one_pass = False
    """The per-key path counts rows in each key's run of the model."""

    @staticmethod
    def row_conditions(watermark_start_ms: int) -> None:
        """None: a row's accounting comes from its key's run of the model (merging, lateness, evictors)."""
        return None

    def compute(self, valid: DataFrame, state: dict[str, DataFrame], ctx: BatchContext,
                whole_valid: DataFrame) -> PlanOutput:
        """``valid`` carries whole rows (:attr:`rows`), so ``whole_valid`` is the same rows."""
        keyed_state = state[KEYED]
        if not ctx.flush:
            keys = valid.select(JOIN_KEY).distinct().withColumn("__has_rows", F.lit(True))
            due = ((F.col(NEXT_EVENT_TIMER) <= ctx.watermark_end_ms) | (F.col(NEXT_PROCESSING_TIMER) <= ctx.clock_end_ms))
            keyed_state = (keyed_state.join(keys, JOIN_KEY, "left")
                           .where(F.coalesce(F.col("__has_rows"), F.lit(False)) | F.coalesce(due, F.lit(False)))
                           .drop("__has_rows"))
        clock = KeyBatchClock(ctx.batch_id, ctx.watermark_start_ms, ctx.watermark_end_ms, ctx.clock_before_ms,
                              None if ctx.flush else ctx.processing_time_ms, ctx.clock_end_ms, ctx.flush,
                              ctx.clock_end_ms if ctx.has_rows and not ctx.flush else None)
        out = (valid.groupBy(JOIN_KEY).cogroup(keyed_state.groupBy(JOIN_KEY))
               .applyInArrow(_key_runner(self.spec, clock, self._runner_schema), self._runner_schema)).cache()
        results = flatten_output(PANE_ROW.rows(out).withColumn(BATCH_ID, F.lit(ctx.batch_id).cast("long")),
                                 self.results_schema)
        late = LATE_ROW.rows(out).select(
            SIDE, JOIN_KEY, F.col(TS).alias(EVENT_TIME), REASON, WATERMARK,
            F.lit(ctx.batch_id).cast("long").alias(BATCH_ID), LEFT_ROW, RIGHT_ROW)
        counts = counts_by_side(COUNT_ROW.rows(out).groupBy(SIDE)
                                .agg(*[F.sum(name).alias(name) for name in PLAN_COUNTS]).collect())
        touched = STATE_ROW.rows(out).select(
            JOIN_KEY, STATE, NEXT_EVENT_TIMER, NEXT_PROCESSING_TIMER, F.col(STATE).isNull().alias(DELETE_FLAG))
        return PlanOutput(results, late, counts, {KEYED: KeyedChanges(touched)}, [out])

    def late_schema(self) -> T.StructType:
        return late_schema(self.schemas)


def _key_runner(spec, clock: KeyBatchClock, out_schema: T.StructType):
    """The function applyInArrow runs per key: (tagged rows, state) -> panes, late rows, counts, the new state."""
    from pyspark.sql.pandas.types import to_arrow_schema
    arrow_schema = to_arrow_schema(out_schema)
    window, late_output, assigner = spec.window, spec.late_output, spec.window.assigner

    def run(rows_table, state_table):
        import pyarrow as pa
        rows = rows_table.to_pylist()
        group = rows[0] if rows else state_table.slice(0, 1).to_pylist()[0]
        key_struct = group[JOIN_KEY]
        key = tuple(key_struct.values())
        rows.sort(key=lambda r: (r[SIDE] != LEFT.name, r[ORDER]))    # the model's arrival order
        elements = [tagged(_SIDES[r[SIDE]], key, r[TS], r[ROW_COLUMNS[_SIDES[r[SIDE]]]], i)
                    for i, r in enumerate(rows)]
        state = pickle.loads(state_table[STATE][0].as_py()) if state_table.num_rows else None
        result, new_state = run_key_batch(window, (key,), state, elements, clock)
        out = []
        for fired in result.panes:
            pane = join_pane(spec, fired)
            base = PANE_ROW.make({JOIN_KEY: key_struct, WS: pane.window_start_ms, WE: pane.window_end_ms,
                                  PANE_INDEX: pane.pane_index, TIMING: pane.timing, IS_FINAL: pane.is_final,
                                  SUPERSEDES: [{WS: s, WE: e} for s, e in pane.supersedes],
                                  WATERMARK: pane.watermark_ms})
            if not pane.rows:
                out.append(dict(base, **{ROW_INDEX: None}))
            for i, row in enumerate(pane.rows):
                out.append(dict(base, **{ROW_INDEX: i, OUTPUT: dict(row)}))
        counts = {side: dict.fromkeys(PLAN_COUNTS, 0) for side in _SIDES}
        late_arrivals = set()
        for late in result.late:
            element, side = late.row, late.row[TAG_SIDE]
            late_arrivals.add(element[ARRIVAL])
            if late_output:
                counts[side.name][LATE] += 1
                out.append(LATE_ROW.make({JOIN_KEY: key_struct, SIDE: side.name, TS: late.timestamp_ms,
                                          REASON: late.reason, WATERMARK: late.watermark_ms,
                                          ROW_COLUMNS[side]: element[ROW]}))
            else:
                counts[side.name][DROPPED_LATE] += 1
        for element in elements:
            if element[ARRIVAL] not in late_arrivals:
                name = ACCEPTED if assigner.assign(element[TIME], element[ROW]) else UNASSIGNED
                counts[element[TAG_SIDE].name][name] += 1
        out += [COUNT_ROW.make(count, **{SIDE: side}) for side, count in counts.items()]
        out.append(STATE_ROW.make({JOIN_KEY: key_struct,
                                   STATE: None if new_state is None else pickle.dumps(new_state),
                                   NEXT_EVENT_TIMER: None if new_state is None else new_state.next_timer_ms(EVENT),
                                   NEXT_PROCESSING_TIMER: None if new_state is None
                                   else new_state.next_timer_ms(PROCESSING)}))
        return pa.Table.from_pylist(out, schema=arrow_schema)

    return run
