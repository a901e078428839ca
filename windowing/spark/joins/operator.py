"""The join operator: two inputs, one batch at a time, state in Delta, exactly once.

:class:`JoinOperator` runs a :class:`~windowing.core.joins.spec.WindowJoinSpec`
or :class:`~windowing.core.joins.spec.IntervalJoinSpec` with the plan chosen
for it (:mod:`windowing.spark.joins.plans`). One batch ``b``:

1. skip if progress has ``b``; claim ``b`` (another run's live claim stops this one);
2. tag both sides' rows, quarantine bad ones per side; advance the clock and the
   watermark on the driver (:mod:`windowing.spark.joins.intake`);
3. the plan computes results, late rows, per-side counts and state changes from
   the valid rows and the state read as of the last committed batch's versions;
4. write in order (fault-injection stages as the single-input operator's):
   ``before_outputs``, the outputs, ``after_outputs``, the state changes (written
   or logged: :mod:`windowing.spark.joins.state_pins`), ``before_progress``, the
   progress row (the commit point), ``after_progress``.

Every input row of either side is accounted for: ``input = accepted + late +
dropped_late + unassigned + quarantined`` per side, checked before the commit.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Callable

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.sides import SIDES, Side
from windowing.core.records import BatchMetrics
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.spark.joins.columns import ACCEPTED, BATCH_ID, LEFT_ROW, REASON, RIGHT_ROW, SIDE
from windowing.spark.joins.intake import JoinClock, SideCounts, SideSchemas, side_counts, tag_sides
from windowing.spark.joins.outputs import quarantine_schema
from windowing.spark.joins.plan import (
    OBSERVED_MAX_TS, OBSERVED_ROWS, BatchContext, PlanOutput, counts_of_conditions, stays_empty)
from windowing.spark.joins.plans import plan_for
from windowing.spark.joins.state_pins import progress_columns
from windowing.spark.joins.stores import JoinDeltaStore, progress_row
from windowing.spark.runtime.observed import observed_metrics


class JoinSpecMismatchError(RuntimeError):
    """The operator's state was written by another join spec (or plan, or input schemas)."""


@dataclass
class JoinBatchReport:
    """What one batch did: skipped (already committed), the watermarks, each side's accounting."""

    batch_id: int
    skipped: bool
    watermark_start_ms: int
    watermark_end_ms: int
    metrics: dict[Side, BatchMetrics] = field(default_factory=dict)
    seconds: float = 0.0
    plan: str | None = None


class JoinOperator:
    """A window join, co-group or interval join over two DataFrame inputs, batch by batch.

    Args:
        spark: the SparkSession (with Delta).
        spec: the join spec.
        store: a :class:`~windowing.spark.joins.stores.JoinDeltaStore` (or ``JoinMemoryStore`` in tests).
        per_key: run a window join on the per-key path even where it has a DataFrame plan.
        fault_injection: test hook called with each commit stage's name.
    """

    def __init__(self, spark: SparkSession, spec, store, per_key: bool = False,
                 fault_injection: Callable[[str], None] | None = None):
        self.spark, self.spec, self.store, self.per_key = spark, spec, store, per_key
        self.writer_id = uuid.uuid4().hex
        self._fault = fault_injection or (lambda stage: None)
        self.plan = None

    @classmethod
    def on_delta(cls, spark: SparkSession, spec, operator_id: str, state_root: str, results_path: str | None = None,
                 late_path: str | None = None, quarantine_path: str | None = None, **kwargs) -> "JoinOperator":
        store = JoinDeltaStore(spark, operator_id, state_root, results_path, late_path, quarantine_path)
        return cls(spark, spec, store, **kwargs)

    def _plan_for(self, schemas: SideSchemas, last: dict | None):
        if self.plan is None:
            self.plan = plan_for(self.spec, schemas, self.per_key)
            self.store.prepare(self.plan.state_tables, {"results": self.plan.results_schema,
                                                        "late": self.plan.late_schema(),
                                                        "quarantine": quarantine_schema(schemas)},
                               self.plan.results_statistics)
        if last is not None:
            written = (last["spec_fingerprint"], last["plan"], last["left_schema"], last["right_schema"])
            ours = (self._fingerprint(schemas), self.plan.name, schemas.left.json(), schemas.right.json())
            if written != ours:
                raise JoinSpecMismatchError(
                    f"join operator {self.store.operator_id!r}: its state was written by another spec, plan or "
                    f"input schemas ({written[1]!r} plan); use a new operator id or state root")
        return self.plan

    def _fingerprint(self, schemas: SideSchemas) -> str:
        """What the progress rows record of the spec: its fingerprint, and when the plan's rows carry fewer
        columns than the inputs' (:meth:`SideSchemas.carried_rows`), which they carry, so that state holding
        other rows (an earlier release kept whole rows) is refused by name instead of failing in a union."""
        if self.plan.rows == schemas.whole_rows:
            return self.spec.fingerprint()
        carried = ";".join(f"{side.name}:{','.join(self.plan.rows[side].fieldNames())}" for side in SIDES)
        return f"{self.spec.fingerprint()}+rows({carried})"

    def process_batch(self, left: DataFrame, right: DataFrame, batch_id: int,
                      processing_time_ms: int | None = None, ends_input: bool = False) -> JoinBatchReport:
        """Process one batch of both inputs exactly once.

        ``ends_input``: the batch is the last of both inputs: after its rows the watermark and
        the clock go to +infinity (every time window fires, the state empties but for windows
        that never end), as a :meth:`flush` after the batch would, in one batch.
        """
        started = time.monotonic()
        last = self.store.last_progress()
        if last is not None and batch_id <= last["batch_id"]:
            return JoinBatchReport(batch_id, True, last["watermark_ms"], last["watermark_ms"],
                                   seconds=time.monotonic() - started)
        schemas = SideSchemas.of(self.spec, left.schema, right.schema)
        plan = self._plan_for(schemas, last)
        self.store.claim(batch_id, self.writer_id)
        try:
            last = self.store.last_progress()
            self._fault("start")
            report = self._run(plan, schemas, left, right, batch_id, processing_time_ms, ends_input, last)
        finally:
            self.store.release(self.writer_id)
        report.seconds = time.monotonic() - started
        return report

    def flush(self, batch_id: int) -> JoinBatchReport:
        """End of both inputs: watermark and clock to +infinity; every window fires, the state empties."""
        last = self.store.last_progress()
        if last is None:
            raise RuntimeError(f"join operator {self.store.operator_id!r} has no committed batch to flush")
        empty = [self.spark.createDataFrame([], T.StructType.fromJson(json.loads(last[name])))
                 for name in ("left_schema", "right_schema")]
        return self.process_batch(*empty, batch_id, ends_input=True)

    def _run(self, plan, schemas: SideSchemas, left: DataFrame, right: DataFrame, batch_id: int,
             processing_time_ms: int | None, flush: bool, last: dict | None) -> JoinBatchReport:
        wm_start = last["watermark_ms"] if last is not None else JoinClock(self.spec).watermark_ms
        clock = JoinClock(self.spec, wm_start, json.loads(last["time_state"]) if last is not None else None)
        clock_before = clock.clock_ms
        one_pass = stays_empty(flush, last is None)
        tagged = tag_sides(self.spec, left, right, schemas, plan.rows)
        if not one_pass:
            # Read by the counts, the plan (more than once with state) and the outputs. A one-pass batch reads
            # its rows once in the plan: its counts read only the keys and event times, which costs less than
            # caching every row, or come from its results write (``observation``).
            tagged = tagged.cache()
        # The late and quarantine tables get whole rows: tagged again from the input when the plan's rows carry
        # less, read only by a batch that has late or quarantined rows (whether a row is late or quarantined
        # depends on the row and the watermark at the start of the batch alone).
        whole = tagged if plan.rows == schemas.whole_rows else tag_sides(self.spec, left, right, schemas)
        conditions = plan.row_conditions(wm_start)
        observation = Observation() if one_pass and plan.observes_one_pass else None
        try:
            clock.arrive(processing_time_ms)
            if observation is None:
                counts = side_counts(tagged, conditions)
                wm_end, clock_end = clock.advance(counts, flush), clock.clock_ms
            else:   # counted by the results write; the batch ends the input: both clocks go to +infinity
                counts, wm_end, clock_end = None, MAX_TIMESTAMP_MS, MAX_TIMESTAMP_MS
            ctx = BatchContext(batch_id, wm_start, wm_end, clock_before, processing_time_ms, clock_end, flush,
                               None if counts is None else any(c.input_rows > c.quarantined_rows
                                                               for c in counts.values()),
                               state_empty=last is None, observation=observation)
            pins = self.store.state_pins(plan.state_tables, last)
            state = {table.name: (self.spark.createDataFrame([], table.schema) if ctx.state_empty
                                  else self.store.read_state(table, pins[table.name])) for table in plan.state_tables}
            valid = tagged.where(F.col(REASON).isNull())
            out = plan.compute(valid, state, ctx, whole.where(F.col(REASON).isNull()))
            try:
                metrics = None if counts is None else self._metrics(counts, out)
                self._fault("before_outputs")
                written = self.store.write_output("results", out.results, batch_id)
                if counts is None:
                    counts = ((written and self._observed_counts(observation, left, right))
                              or side_counts(tagged, conditions))
                    if clock.advance(counts, flush) != wm_end:
                        raise AssertionError(f"join operator {self.store.operator_id!r}: a batch that ends the "
                                             f"input left the watermark below +infinity")
                    metrics = self._metrics(counts, out)
                # The late and quarantine tables exist (prepare): a batch with no such row writes none.
                if any(m.late_rows for m in metrics.values()):
                    self.store.write_output("late", out.late, batch_id)
                if any(m.quarantined_rows for m in metrics.values()):
                    self.store.write_output("quarantine", whole.where(F.col(REASON).isNotNull()).select(
                        SIDE, REASON, F.lit(batch_id).cast("long").alias(BATCH_ID), LEFT_ROW, RIGHT_ROW), batch_id)
                self._fault("after_outputs")
                after = {table.name: (out.changes[table.name].write(self.store, table, batch_id, pins[table.name],
                                                                    state[table.name], flush)
                                      if table.name in out.changes else pins[table.name])
                         for table in plan.state_tables}
                self._fault("before_progress")
                self.store.commit_progress(progress_row(
                    batch_id=batch_id, watermark_ms=wm_end, time_state=json.dumps(clock.saved()),
                    **progress_columns(after), spec_fingerprint=self._fingerprint(schemas), plan=plan.name,
                    left_schema=schemas.left.json(), right_schema=schemas.right.json(),
                    metrics=json.dumps({side.name: asdict(m) for side, m in metrics.items()}),
                    processing_time_ms=processing_time_ms, writer_id=self.writer_id))
                self._fault("after_progress")
                for table in plan.state_tables:
                    if pins[table.name].logged and not after[table.name].logged:   # compacted
                        self.store.drop_logs(table, batch_id)
            finally:
                out.release()
        finally:
            tagged.unpersist()
        return JoinBatchReport(batch_id, False, wm_start, wm_end, metrics, plan=plan.name)

    @staticmethod
    def _observed_counts(observation: Observation, left: DataFrame, right: DataFrame) -> dict[Side, SideCounts] | None:
        """A one-pass batch's counts from what its results write observed (:attr:`BatchContext.observation`), or
        None (the caller counts the input) when the metrics did not come or the fired panes do not hold every
        input row of a side (some were quarantined or unassigned). A Delta table's ``count()`` is answered from
        its log."""
        seen = observed_metrics(observation)
        if seen is None:
            return None
        counts = {}
        for side, frame in zip(SIDES, (left, right)):
            rows = seen[OBSERVED_ROWS[side]]
            if rows != frame.count():
                return None
            counts[side] = SideCounts(rows, 0, seen[OBSERVED_MAX_TS[side]], {ACCEPTED: rows})
        return counts

    def _metrics(self, counts: dict[Side, SideCounts], out: PlanOutput) -> dict[Side, BatchMetrics]:
        """Each side's accounting (the plan's counts, or those of its row conditions); raises when a row is not
        accounted for."""
        metrics = {}
        for side in SIDES:
            plan_counts = (out.counts[side] if out.counts is not None
                           else counts_of_conditions(counts[side].plan_rows, self.spec.late_output))
            m = BatchMetrics(input_rows=counts[side].input_rows, quarantined_rows=counts[side].quarantined_rows,
                             **plan_counts)
            if not m.accounted():
                raise AssertionError(f"join operator {self.store.operator_id!r}: {side.name} rows not accounted "
                                     f"for: {m}")
            metrics[side] = m
        return metrics
