"""The window operator: one batch at a time, state in Delta, exactly once.

One class, :class:`WindowOperator`, owns the batch protocol below for both
executors (the contract: :mod:`windowing.spark.state.batch_work`): the DataFrame plans
(:class:`SparkWindowOperator`) and the reference model per key
(:class:`KeyedModelOperator`), which only compute a
batch's outputs and state changes.

Tables of an operator (``operator_id``) under ``state_root/operator_id``:

* ``windows``: one row per open (key, window), partitioned by ``end_bucket``
  (window end // bucket) so that reads and writes touch only the buckets a
  batch can affect (a batch rewrites the buckets it touched; global and count
  windows, one bucket, are merged: :class:`windowing.spark.state.stores.StateWrite`).
* ``buffers``: elements of sliding count windows (evictor).
* ``progress``: one row per committed batch: watermark, max seen event time,
  processing time, the state tables' Delta versions, the spec fingerprint, and
  ``time_state`` (the clock and the watermark tracker's per-source progress
  as JSON, see :mod:`windowing.spark.input.batch_time`; null in rows written before it).

Outputs (paths given by the caller): ``results`` (panes), ``late`` (late
elements with reason and watermark) and ``quarantine`` (malformed rows).

Commit protocol for batch ``b``: skip if progress has ``b``; claim ``b`` for this
writer (:mod:`windowing.spark.lake.claims`: another run's live claim stops this one
before it writes anything); read state AS OF the versions fixed at the batch's
start (``store.start_versions``: those the last committed batch recorded, or a
table's version before any batch's commit); compute; write outputs and
state once per ``(operator_id, b)`` (``delta_lake_io``: a marker in each commit,
checked before writing); write progress last, marked with this writer's id,
then check that the first commit of ``b``'s progress row is this writer's
(:meth:`windowing.spark.state.stores.DeltaStore.commit_progress`). The protocol and
what a replay does: ``docs/state-and-exactly-once.md``.
"""
from __future__ import annotations

import datetime
import json
import time
import uuid
from dataclasses import asdict
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.spark.operator.dedup import SeenIds
from windowing.spark.state.batch_work import BatchReport, BatchWork, Executor
from windowing.spark.keyed.executor import KeyedExecutor
from windowing.spark.keyed.state import KEY_SCOPE, SCOPE
from windowing.spark.plans.executor import PlanExecutor
from windowing.spark.input.prepare import simple_types
from windowing.spark.runtime.local_frames import local_frame
from windowing.spark.state.stores import bind_output_mode, check_fingerprint, delta_store


class WindowOperator:
    """Runs a :class:`WindowSpec` batch by batch, exactly once, with the executor it is given.

    Args:
        spark: the process's SparkSession (with Delta).
        spec: the window spec.
        store: a :class:`DeltaStore` (the product) or :class:`MemoryStore` (tests).
        executor: computes each batch (:class:`windowing.spark.state.batch_work.Executor`).
        reset_state: discard existing state (and progress) of this operator
            instead of refusing a spec that differs from the one that wrote it.
        fault_injection: test hook called with a stage name at each commit step:
            ``start``, ``before_outputs``, ``after_outputs``, ``before_progress``, ``after_progress``.
    """

    def __init__(self, spark: SparkSession, spec: WindowSpec, store, executor: Executor,
                 reset_state: bool = False, fault_injection: Callable[[str], None] | None = None):
        self.spark, self.spec, self.store, self.executor = spark, spec, store, executor
        self.operator_id = store.operator_id
        self.plan = executor.plan
        bind_output_mode(store, spec.output_mode)
        self.writer_id = uuid.uuid4().hex
        self._fault = fault_injection or (lambda stage: None)
        self.seen_ids = SeenIds.for_store(spark, spec, store) if spec.input.dedup_column else None
        if reset_state:
            store.reset()
            executor.reset()
        check_fingerprint(store, spec, self.fingerprint)

    @classmethod
    def on_delta(cls, spark: SparkSession, spec: WindowSpec, operator_id: str, state_root: str,
                 results_path: str | None = None, late_path: str | None = None,
                 quarantine_path: str | None = None, **kwargs) -> "WindowOperator":
        """The operator on a :class:`DeltaStore` under ``state_root/operator_id``; ``kwargs`` as the
        constructor's."""
        store = delta_store(spark, spec, operator_id, state_root, results_path, late_path, quarantine_path)
        return cls(spark, spec, store, **kwargs)

    @property
    def fingerprint(self) -> str:
        """What progress records for this spec (the executor's: its state layout is part of it)."""
        return self.executor.fingerprint

    def last_progress(self) -> dict | None:
        return self.store.last_progress()

    def process_batch(self, df: DataFrame, batch_id: int, watermark_ms: int | None = None,
                      processing_time_ms: int | None = None) -> BatchReport:
        """Process one micro-batch (or backfill chunk) exactly once.

        Args:
            df: the batch's raw rows (a static DataFrame).
            batch_id: increasing id; a batch already committed is skipped.
            watermark_ms: explicit watermark advance (never moves it back).
            processing_time_ms: the batch's processing time (the injectable clock): it moves the
                clock (never back), is the processing time of rows without an ingestion time, and
                the reference of ``max_event_time_skew`` (default: the wall clock). Processing-time
                windows without an ingestion-time column need it. ``watermark_ms`` +infinity ends
                the input: the clock goes to +infinity too.
        """
        started = time.monotonic()
        self.spec.check_schema(simple_types(df))
        last = self.last_progress()
        if last and batch_id <= last["batch_id"]:
            wm = last["watermark_ms"]
            return BatchReport(batch_id, True, wm, wm, seconds=time.monotonic() - started)
        self.store.claim(batch_id, self.writer_id)      # before any write; raises ConcurrentWriterError
        last = self.last_progress()                     # as the claim found it (another run may have committed)
        try:
            self._fault("start")
            work = self.executor.compute(df, batch_id, last, watermark_ms, processing_time_ms, self.seen_ids)
            try:
                self._write(work, df, batch_id, processing_time_ms)
            finally:
                work.close()
        finally:
            self.store.release(self.writer_id)
        return BatchReport(batch_id, False, work.watermark_start_ms, work.watermark_end_ms, work.metrics,
                           time.monotonic() - started, work.plan_name)

    def _write(self, work: BatchWork, df: DataFrame, batch_id: int, processing_time_ms: int | None) -> None:
        """The protocol's writes, in order: outputs, seen ids, state, progress (the commit point)."""
        self._fault("before_outputs")
        results = work.results()
        work.results_written(self.store.write_output("results", results.frame, results.rows, batch_id))
        late = work.late()
        self.store.write_set_aside({**({"late": late} if late is not None else {}), "quarantine": work.quarantine()},
                                   batch_id)
        self._fault("after_outputs")
        if self.seen_ids and work.seen_rows is not None:
            self.seen_ids.record(work.seen_rows, batch_id, work.watermark_start_ms)
        versions = work.write_state()
        self._fault("before_progress")
        self.store.commit_progress(dict(
            batch_id=batch_id, watermark_ms=work.watermark_end_ms, max_seen_ms=work.max_seen_ms,
            processing_time_ms=processing_time_ms, time_state=work.time_state,
            windows_version=versions.windows, buffers_version=versions.buffers,
            windows_logged_from=versions.windows_logged_from, state_changes=versions.state_changes,
            spec_fingerprint=self.fingerprint, spec_description=self.spec.describe(),
            input_schema=df.schema.json(), writer_id=self.writer_id, metrics=json.dumps(asdict(work.metrics)),
            committed_at=datetime.datetime.now(datetime.timezone.utc)))
        work.committed()
        self._fault("after_progress")

    def flush(self, batch_id: int, processing_time_ms: int | None = None) -> BatchReport:
        """End of input: watermark and clock to +infinity; every time window fires and is cleaned."""
        last = self.last_progress()
        if last is None:
            raise RuntimeError(f"operator {self.operator_id!r} has no committed batch to flush")
        schema = T.StructType.fromJson(json.loads(last["input_schema"]))
        empty = local_frame(self.spark, [], schema)
        return self.process_batch(empty, batch_id, watermark_ms=MAX_TIMESTAMP_MS,
                                  processing_time_ms=processing_time_ms)


class SparkWindowOperator(WindowOperator):
    """The window operator on the DataFrame plans (:class:`windowing.spark.plans.executor.PlanExecutor`).

    ``bucket_ms``: width of the state partitions by window end (default
    :func:`windowing.spark.plans.executor.default_bucket_ms`); other arguments as
    :class:`WindowOperator`'s.
    """

    def __init__(self, spark: SparkSession, spec: WindowSpec, store, reset_state: bool = False,
                 bucket_ms: int | None = None, fault_injection: Callable[[str], None] | None = None):
        super().__init__(spark, spec, store, PlanExecutor(spark, spec, store, bucket_ms),
                         reset_state=reset_state, fault_injection=fault_injection)


class KeyedModelOperator(WindowOperator):
    """The window operator on the per-key path (:class:`windowing.spark.keyed.executor.KeyedExecutor`);
    arguments as :class:`WindowOperator`'s (a ``bucket_ms`` is ignored: no plan partitions state by
    window end)."""

    def __init__(self, spark: SparkSession, spec: WindowSpec, store, reset_state: bool = False,
                 fault_injection: Callable[[str], None] | None = None, **_ignored):
        super().__init__(spark, spec, store, KeyedExecutor(spark, spec, store),
                         reset_state=reset_state, fault_injection=fault_injection)
        self.state_table = self.executor.state_table

    def open_keys(self) -> list[tuple]:
        """The keyed state rows of the latest version (key scope only)."""
        if self.state_table.schema is None:
            return []
        scope = self.state_table.schema.names.index(SCOPE)
        return [r for r in self.state_table.rows() if r[scope] == KEY_SCOPE]
