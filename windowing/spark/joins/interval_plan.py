"""The interval join as a DataFrame plan, its rows in a state table until the watermark passes their horizon.

One batch (the model's rule, :mod:`windowing.core.joins.interval_join`):

* a valid row with event time above the watermark at the start of the batch is
  accepted; the others are late (to the late table with their side, or dropped);
* pairs: the batch's accepted left rows with the right rows in state and the
  batch's accepted right rows, and the left rows in state with the batch's
  accepted right rows (each pair once), on ``join_key`` and
  ``lower <= r.ts - l.ts <= upper`` (bounds made inclusive); the pair's time is
  ``max(l.ts, r.ts)``;
* state ``interval``: one row per accepted row with ``expires_at_ms``
  (``l.ts + upper`` for a left row, ``r.ts - lower`` for a right one): rows whose
  horizon the new watermark reaches are deleted (all of them on a flush), the
  batch's others inserted, in one ``replaceWhere`` commit (no MERGE).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.sides import LEFT, RIGHT
from windowing.core.records import LATE_BEYOND_ALLOWED_LATENESS
from windowing.spark.joins.columns import (
    ACCEPTED, BATCH, BATCH_ID, EXPIRES, JOIN_KEY, LATE, LEFT_ROW, LEFT_TIME, ORDER,
    OUTPUT, PAIR_TIME, RIGHT_ROW, RIGHT_TIME, SIDE, TS, WATERMARK)
from windowing.spark.joins.intake import SideSchemas
from windowing.spark.joins.outputs import (PAIRS_STATISTICS, flatten_output, late_rows, late_schema, output_type,
                                          pairs_schema)
from windowing.spark.joins.pair_output import pair_output
from windowing.spark.joins.plan import BatchContext, PlanOutput, ReplaceWhere, StateTable

INTERVAL = "interval"


class IntervalJoinPlan:
    """The DataFrame plan of an :class:`~windowing.core.joins.spec.IntervalJoinSpec` (module docstring)."""

    name = INTERVAL

    def __init__(self, spec, schemas: SideSchemas):
        self.spec, self.schemas = spec, schemas
        self.output = output_type(spec.output, schemas)
        self.results_schema = pairs_schema(schemas.key, self.output)
        self.results_statistics = PAIRS_STATISTICS
        self.rows = schemas.carried_rows(spec, spec.output)
        self.state = StateTable(INTERVAL, T.StructType(
            [T.StructField(SIDE, T.StringType(), True), T.StructField(JOIN_KEY, schemas.key, True),
             T.StructField(TS, T.LongType(), True), T.StructField(BATCH, T.LongType(), True),
             T.StructField(ORDER, T.LongType(), True), T.StructField(LEFT_ROW, self.rows[LEFT], True),
             T.StructField(RIGHT_ROW, self.rows[RIGHT], True), T.StructField(EXPIRES, T.LongType(), True)]),
            (SIDE, BATCH, ORDER), statistics=(EXPIRES,))
        self.state_tables = (self.state,)

    def late_schema(self) -> T.StructType:
        return late_schema(self.schemas)

    observes_one_pass = False
    """A one-pass batch counts its rows before the plan (a pair holds two rows, a row may be in none)."""

    @staticmethod
    def row_conditions(watermark_start_ms: int) -> dict[str, Column]:
        """Per valid row: accepted (above the watermark at the start of the batch) or late; counted with the
        intake's aggregate."""
        return {ACCEPTED: F.col(TS) > watermark_start_ms, LATE: F.col(TS) <= watermark_start_ms}

    def compute(self, valid: DataFrame, state: dict[str, DataFrame], ctx: BatchContext,
                whole_valid: DataFrame) -> PlanOutput:
        spec, wm_start, wm_end = self.spec, ctx.watermark_start_ms, ctx.watermark_end_ms
        is_accepted = self.row_conditions(wm_start)[ACCEPTED]
        expires = (F.when(F.col(SIDE) == LEFT.name, F.col(TS) + spec.upper_bound_ms)
                   .otherwise(F.col(TS) - spec.lower_bound_ms))
        accepted = (valid.where(is_accepted).withColumn(BATCH, F.lit(ctx.batch_id).cast("long"))
                    .withColumn(EXPIRES, expires).select(*self.state.schema.fieldNames()))
        accepted = ctx.cached_if_reread(accepted)   # the pairs and the state's new rows
        late = late_rows(whole_valid.where(~is_accepted), LATE_BEYOND_ALLOWED_LATENESS, wm_start, ctx.batch_id)
        if not spec.late_output:
            late = late.limit(0)
        held = state[INTERVAL]
        side = F.col(SIDE)
        new_left, new_right = accepted.where(side == LEFT.name), accepted.where(side == RIGHT.name)
        old_left, old_right = held.where(side == LEFT.name), held.where(side == RIGHT.name)
        pairs = (self._pairs(new_left, old_right.unionByName(new_right), ctx)
                 .unionByName(self._pairs(old_left, new_right, ctx)))
        # Rows whose horizon the new watermark reached leave (all of them at the end of input).
        kept = accepted.where(F.lit(False) if ctx.flush else F.col(EXPIRES) > wm_end)
        changes = ReplaceWhere(kept, "true" if ctx.flush else f"`{EXPIRES}` <= {wm_end}")
        return PlanOutput(pairs, late, None, {} if ctx.state_stays_empty else {INTERVAL: changes}, [accepted])

    def _pairs(self, lefts: DataFrame, rights: DataFrame, ctx: BatchContext) -> DataFrame:
        l, r = lefts.alias("l"), rights.alias("r")
        gap = F.col(f"r.{TS}") - F.col(f"l.{TS}")
        joined = l.join(r, (F.col(f"l.{JOIN_KEY}") == F.col(f"r.{JOIN_KEY}"))
                        & gap.between(self.spec.lower_bound_ms, self.spec.upper_bound_ms))
        out = joined.select(
            F.col(f"l.{JOIN_KEY}").alias(JOIN_KEY), F.col(f"l.{TS}").alias(LEFT_TIME),
            F.col(f"r.{TS}").alias(RIGHT_TIME), F.greatest(F.col(f"l.{TS}"), F.col(f"r.{TS}")).alias(PAIR_TIME),
            pair_output(self.spec.output, self.output, F.col(f"l.{LEFT_ROW}"), F.col(f"r.{RIGHT_ROW}")).alias(OUTPUT),
            F.lit(ctx.watermark_start_ms).cast("long").alias(WATERMARK),
            F.lit(ctx.batch_id).cast("long").alias(BATCH_ID))
        return flatten_output(out.where(F.col(OUTPUT).isNotNull()), self.results_schema)
