"""The DataFrame-plan executor: a batch as column expressions, joins and aggregations.

For every spec a DataFrame plan takes (:func:`windowing.spark.plans.registry.plan_for`): the plan is
chosen once, and what differs between plans is asked of its
:class:`~windowing.spark.plans.registry.Plan` object, never of its name.
A batch: classify the raw rows (accepted, late, unassigned, quarantined:
:func:`windowing.spark.input.prepare.classify`), advance the watermark and the clock
(:mod:`windowing.spark.input.batch_time`), read the state rows the batch can touch
(pinned to the versions the last committed batch recorded, pruned by
``end_bucket``), and run the plan: panes, late elements and state changes, all
lazy until :class:`windowing.spark.operator.protocol.WindowOperator` writes them.

A first batch that ends the input (watermark +infinity: a complete backfill in
one batch) on the time or session plan runs in one pass instead: no state is
read or written (:class:`_ClosingWork`).
"""
from __future__ import annotations

import time

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.records import LATE_BEYOND_ALLOWED_LATENESS, LATE_PROCESSING_TIME_WINDOW_FIRED, BatchMetrics
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import SINGLE_SOURCE
from windowing.spark.runtime.observed import observed_metrics
from windowing.spark.state.batch_work import BatchWork, Output, StateVersions
from windowing.spark.state.stores import StateWrite
from windowing.spark.plans.aggregates import compile_aggregates, partial_exprs
from windowing.spark.plans.base import BOOKKEEPING, PlanContext
from windowing.spark.plans.elements import ElementSource
from windowing.spark.plans.registry import BatchRange, PlanInputs, plan_for
from windowing.spark.input import batch_time
from windowing.spark.input.batch_settings import SMALL_BATCH_ROWS, ScopedSettings, runs_small, small_batch_settings
from windowing.spark.plans.processing_time_plan import replayed_late
from windowing.spark.input.columns import (ACCEPTED, END_BUCKET, EVENT_MS, LATE, PT, QUARANTINED, REASON, SEQ, SRC,
                                           STATUS, TS, UNASSIGNED, WE, WS, long_lit)
from windowing.spark.input.prepare import classify
from windowing.spark.plans.window_geometry import geometry_of
from windowing.spark.plans import trigger_rules


CLOSING_PLAN = "closing"

def _accounting_exprs(times_of_accepted: bool = True) -> list:
    """One aggregate row over a classified batch: rows per status and the batch's times.

    ``input`` and one count per status; ``max_ts``/``max_pt``: event and processing
    times of the valid (not quarantined) rows; with ``times_of_accepted`` also
    ``min_pt`` (valid rows) and ``min_accepted_ts``/``max_accepted_ts`` (the
    accepted elements' timestamps), which only the general path needs.
    """
    valid = F.col(STATUS) != QUARANTINED
    accepted = F.col(STATUS) == ACCEPTED
    exprs = [F.count(F.lit(1)).alias("input"),
             *[F.sum((F.col(STATUS) == s).cast("long")).alias(s) for s in (ACCEPTED, LATE, UNASSIGNED, QUARANTINED)],
             F.max(F.when(valid, F.col(EVENT_MS))).alias("max_ts"),
             F.max(F.when(valid, F.col(PT))).alias("max_pt")]
    if times_of_accepted:
        exprs += [F.min(F.when(valid, F.col(PT))).alias("min_pt"),
                  F.min(F.when(accepted, F.col(TS))).alias("min_accepted_ts"),
                  F.max(F.when(accepted, F.col(TS))).alias("max_accepted_ts")]
    return exprs


def default_bucket_ms(spec: WindowSpec) -> int:
    """Width of the state partitions by window end: 8 of the longest windows, at least one minute."""
    size = geometry_of(spec).longest_window_ms
    return max(60_000, 8 * size) if size else 60_000


class PlanExecutor:
    """Computes a batch with the DataFrame plan chosen once for the spec.

    Args:
        spark: the process's SparkSession (with Delta).
        spec: the window spec (one a DataFrame plan takes; ``plan_for`` refuses others).
        store: the operator's :class:`DeltaStore` or :class:`MemoryStore`.
        bucket_ms: width of the state partitions by window end.
    """

    def __init__(self, spark: SparkSession, spec: WindowSpec, store, bucket_ms: int | None = None):
        self.spark, self.spec, self.store = spark, spec, store
        self.plan = plan_for(spec)
        self.definition = self.plan.definition
        self.compiled = compile_aggregates(spec)
        self.bucket_ms = bucket_ms or default_bucket_ms(spec)
        # Global (and count) windows never end: their state is one partition, merged, not rewritten.
        self.geometry = geometry_of(spec)
        self.state_write = StateWrite.MERGE if self.geometry.never_ends else StateWrite.REWRITE_BUCKETS
        self._state_schemas: tuple | None = None
        """The last input schema and the state tables' schemas derived from it."""

    @property
    def sink_mode(self):
        """The results' output mode as the store writes them (chosen once: the spec's, bound by the operator)."""
        return self.store.sink_modes()["results"]

    def reset(self) -> None:
        """The plans keep no state beside the store's tables."""

    @property
    def fingerprint(self) -> str:
        """What progress records for this spec (salted for plans whose state layout has extra columns)."""
        return self.definition.fingerprint(self.spec)

    def _schemas(self, df: DataFrame):
        """The windows and buffers tables' schemas for batches of ``df``'s schema (derived once per input
        schema: the accumulators' types come from analysing an aggregate)."""
        if self._state_schemas is None or self._state_schemas[0] != df.schema:
            self._state_schemas = (df.schema, self._derive_schemas(df))
        return self._state_schemas[1]

    def _derive_schemas(self, df: DataFrame):
        keys = [df.schema[k] for k in self.spec.key_columns]
        # analysis only, no job; a Reduce's partial reads the elements' order columns, absent from the input
        ordered = df.withColumns({TS: F.lit(0).cast("long"), SEQ: F.lit(0).cast("long")})
        accs = ordered.groupBy().agg(*partial_exprs(self.compiled)).schema.fields
        long = lambda name: T.StructField(name, T.LongType(), True)  # noqa: E731
        windows = T.StructType(
            [T.StructField(k.name, k.dataType, True) for k in keys] + [long(WS), long(WE), long(END_BUCKET)]
            + [T.StructField(a.name, a.dataType, True) for a in accs]
            + [long(c) for c in BOOKKEEPING] + [long("last_batch_id")]
            + self.definition.state_fields())
        buffers = None
        if self.definition.reads_buffers:
            values = [df.schema[c] for c in self._value_columns()]
            buffers = T.StructType([T.StructField(k.name, k.dataType, True) for k in keys]
                                   + [long("elem_index"), long(TS), long(SEQ)]
                                   + [T.StructField(v.name, v.dataType, True) for v in values])
        return windows, buffers

    def _value_columns(self) -> list[str]:
        keys = set(self.spec.key_columns)
        return [c for c in self.spec.input_columns if c not in keys and c != self.spec.event_time_column]

    # ---------------------------------------------------------------- batch
    def compute(self, df: DataFrame, batch_id: int, last: dict | None, watermark_ms: int | None,
                processing_time_ms: int | None, seen_ids) -> BatchWork:
        if last is None and watermark_ms == MAX_TIMESTAMP_MS and self.definition.one_pass is not None \
                and seen_ids is None and self.spec.input.source_column is None:
            # Leaves no state: creates no state table (a later batch does).
            return _ClosingWork(self, df, batch_id, processing_time_ms)
        self.store.ensure_tables(*self._schemas(df))
        work = _PlanWork(self, df, batch_id)
        try:
            self._compute(work, df, batch_id, last, watermark_ms, processing_time_ms, seen_ids)
        except BaseException:
            work.close()
            raise
        return work

    def _compute(self, work: "_PlanWork", df: DataFrame, batch_id: int, last: dict | None,
                 watermark_ms: int | None, processing_time_ms: int | None, seen_ids) -> None:
        """Classify, advance time, read the relevant state and run the plan, into ``work``."""
        wm0 = last["watermark_ms"] if last else MIN_TIMESTAMP_MS
        now_ms = processing_time_ms if processing_time_ms is not None else int(time.time() * 1000)
        flush = watermark_ms == MAX_TIMESTAMP_MS
        if runs_small(self.spark, self.store.state_in_driver, last):
            work.settings = ScopedSettings(self.spark, df.sparkSession)
            work.settings.set(small_batch_settings(df.sparkSession))
        tracker, clock_before = batch_time.resume(self.spec, last)
        seen = seen_ids.visible(batch_id, wm0, df.schema[self.spec.input.dedup_column].dataType) if seen_ids else None
        every_column = classify(df, self.spec, wm0, now_ms, seen, geometry=self.geometry,
                                arrival_ms=batch_time.arrival_ms(clock_before, processing_time_ms, flush))
        classified = self._plan_rows(every_column, df).persist()
        work.cached.append(classified)
        whole = classified if self._caches_whole_rows else every_column
        stats = classified.agg(*_accounting_exprs()).first().asDict()
        if work.settings is not None and stats["input"] > SMALL_BATCH_ROWS:
            work.settings.restore()       # a large batch after small ones: the session's own settings
        tops = (None if flush else batch_time.top_event_times(
            self.spec, classified, EVENT_MS, SRC if self.spec.input.source_column is not None else None,
            F.col(STATUS) != QUARANTINED))
        times = batch_time.advance(self.spec, tracker, clock_before, batch_id,
                                   self._source_maxima(classified, stats), watermark_ms, processing_time_ms,
                                   flush, stats["min_pt"], tops)
        wm1 = times.watermark_end_ms
        metrics = work.metrics
        metrics.input_rows, metrics.accepted_rows = stats["input"], stats[ACCEPTED] or 0
        metrics.late_rows = (stats[LATE] or 0) if self.spec.late_output else 0
        metrics.dropped_late_rows = 0 if self.spec.late_output else (stats[LATE] or 0)
        metrics.unassigned_rows, metrics.quarantined_rows = stats[UNASSIGNED] or 0, stats[QUARANTINED] or 0
        if self.definition.clock_marks_replayed_late:
            classified, whole = self._mark_replayed_late(classified, whole, times, metrics, work.cached)

        ctx = PlanContext(self.spec, self.compiled, wm0, wm1, batch_id, self.bucket_ms)
        clock = trigger_rules.BatchClock.of(times)
        windows_pin, buffers_version = self.store.start_versions(last, buffers=self.definition.reads_buffers)
        state = self._relevant_state(self.store.read_windows(windows_pin), ctx, stats, clock, times)
        elements = self.definition.elements.select(self._element_source(classified, df, wm0))
        inputs = PlanInputs(ctx, self.plan, elements, state, clock, times,
                            self.store.read_buffers(buffers_version) if self.definition.reads_buffers else None,
                            tuple(self._value_columns()))
        out = self.definition.run(inputs)
        work.cached.extend(out.cached)
        out.account(metrics, self.spec.late_output)
        work.planned(wm0, classified, whole, times, out, windows_pin)

    @staticmethod
    def _observed_accounting(df: DataFrame, observation: Observation | None, panes_written: int | None,
                             arrival_ms: int) -> dict | None:
        """A closing batch's row accounting from what its results write observed, or None.

        The observation (see :func:`windowing.spark.plans.time_plans.closing_time_plan`)
        counted the elements the panes aggregate: the accepted rows. When they
        are all the input rows, no row was late, unassigned or quarantined, and
        the accounting needs no pass over the input: ``df.count()`` of a Delta
        table scan is answered from the table's log.

        None (the caller makes the pass) when there is no observation; when the
        write may not have computed the panes (``panes_written`` None: a replay
        found the results written, or the commit has no row count); when the
        metrics did not come; when the observed panes are not the rows written;
        or when some input rows were not accepted.
        """
        seen = observed_metrics(observation) if observation is not None and panes_written is not None else None
        if seen is None:
            return None
        elements = seen["elements"] or 0          # a sum over no panes is null
        if seen["panes"] != panes_written or elements != df.count():
            return None
        return {"input": elements, ACCEPTED: elements, LATE: 0, UNASSIGNED: 0, QUARANTINED: 0,
                "max_ts": seen["max_ts"], "max_pt": arrival_ms}

    # -------------------------------------------------------------- helpers
    @property
    def _caches_whole_rows(self) -> bool:
        """Whether a batch caches its classified rows with every input column.

        Otherwise it caches the columns the plans read, and the late and quarantined
        rows (every input column) come from classifying the input again, which finds
        the same status for every row: a row's status is a function of the row, the
        batch's watermark and clock. Not so when de-duplicating: the duplicates of an
        event id with equal event times are ranked by arrival sequence, which a second
        computation need not number alike, so those rows are cached whole.
        """
        return self.spec.input.dedup_column is not None

    def _plan_rows(self, classified: DataFrame, df: DataFrame) -> DataFrame:
        """The classified rows as a batch caches them (see :attr:`_caches_whole_rows`)."""
        if self._caches_whole_rows:
            return classified
        read = set(self.spec.required_columns)
        return classified.select(*[c for c in classified.columns if c in read or c not in df.columns])

    def _element_source(self, classified: DataFrame, df: DataFrame, wm0: int) -> ElementSource:
        """The batch's accepted rows, for the plan's form of element rows (:mod:`windowing.spark.plans.elements`)."""
        return ElementSource(classified.where(F.col(STATUS) == ACCEPTED), tuple(self.spec.key_columns),
                             tuple(self._value_columns()), tuple(c for c in df.columns if c in classified.columns),
                             self.geometry, self.spec, wm0)

    def _late_reason(self, times: "batch_time.BatchTime | None", wm0: int) -> tuple[str, int]:
        """Why a batch's rows are late and what they were judged against: beyond the allowed lateness
        at the watermark of the batch's start, or (the clock closes windows) a processing-time window
        that already fired, at the clock when the rows came (``times`` None: a one-pass first batch, whose rows
        come before any clock)."""
        if self.definition.clock_closes_windows:
            return LATE_PROCESSING_TIME_WINDOW_FIRED, MIN_TIMESTAMP_MS if times is None else times.clock_at_rows_ms
        return LATE_BEYOND_ALLOWED_LATENESS, wm0

    @staticmethod
    def _late_rows(df: DataFrame, late_elements: DataFrame, reason: tuple[str, int], batch_id: int) -> DataFrame:
        """The late table's rows: the input's columns, the element's time, the reason and what it was judged
        against."""
        text, judged_ms = reason
        return late_elements.select(*df.columns, F.col(TS).alias("event_time_ms"), F.lit(text).alias("reason"),
                                    long_lit(judged_ms).alias("watermark_ms"), long_lit(batch_id).alias("batch_id"))

    def _mark_replayed_late(self, classified: DataFrame, whole: DataFrame, times: "batch_time.BatchTime",
                            metrics: BatchMetrics, cached: list) -> tuple[DataFrame, DataFrame]:
        """Processing-time windows: rows whose windows the clock already closed become late
        (:func:`windowing.spark.plans.processing_time_plan.replayed_late`) in the cached rows and in
        ``whole`` (every input column); the metrics follow."""
        condition = replayed_late(self.spec, times)
        if condition is None:
            return classified, whole
        counts = classified.agg(F.sum(condition.cast("long")).alias("n"),
                                F.sum(((F.col(STATUS) == UNASSIGNED) & condition).cast("long")).alias("gap")).first()
        moved, from_gap = counts["n"] or 0, counts["gap"] or 0
        if not moved:
            return classified, whole
        mark = lambda frame: frame.withColumn(STATUS, F.when(condition, F.lit(LATE)).otherwise(F.col(STATUS)))  # noqa: E731
        marked = mark(classified).persist()
        cached.append(marked)
        whole = marked if whole is classified else mark(whole)
        metrics.accepted_rows -= moved - from_gap
        metrics.unassigned_rows -= from_gap
        if self.spec.late_output:
            metrics.late_rows += moved
        else:
            metrics.dropped_late_rows += moved
        return marked, whole

    @staticmethod
    def _quarantined_rows(df: DataFrame, classified: DataFrame, batch_id: int) -> DataFrame:
        return (classified.where(F.col(STATUS) == QUARANTINED)
                .select(*df.columns, F.col(REASON).alias("reason"), long_lit(batch_id).alias("batch_id")))

    def _source_maxima(self, classified: DataFrame, stats: dict) -> dict:
        """Source -> (largest event time, largest processing time) of the batch's non-quarantined rows."""
        if self.spec.input.source_column is None:
            valid_rows = stats["input"] - (stats[QUARANTINED] or 0)
            return {SINGLE_SOURCE: (stats["max_ts"], stats["max_pt"])} if valid_rows else {}
        valid = F.col(STATUS) != QUARANTINED
        rows = (classified.where(valid).groupBy(SRC)
                .agg(F.max(F.col(EVENT_MS)).alias("max_ts"), F.max(F.col(PT)).alias("max_pt")).collect())
        return {r[SRC]: (r["max_ts"], r["max_pt"]) for r in rows}

    def _state_by_end(self, state: DataFrame, ranges: list[tuple[int, int]], also=None) -> DataFrame:
        """State rows whose window end lies in one of ``ranges`` (inclusive), pruned by end bucket,
        or that meet ``also``."""
        cond = also
        if not ranges and cond is None:
            return state.where(F.lit(False))
        for lo, hi in ranges:
            lo, hi = max(lo, MIN_TIMESTAMP_MS), min(hi, MAX_TIMESTAMP_MS)
            b_lo, b_hi = lo // self.bucket_ms, hi // self.bucket_ms
            term = (F.col(END_BUCKET).between(long_lit(b_lo), long_lit(b_hi))
                    & F.col(WE).between(long_lit(lo), long_lit(hi)))
            cond = term if cond is None else cond | term
        return state.where(cond)

    def _relevant_state(self, state: DataFrame, ctx: PlanContext, stats: dict, clock: "trigger_rules.BatchClock",
                        times: "batch_time.BatchTime") -> DataFrame:
        """Only the state rows this batch can touch (the plan says which), pruned by end bucket."""
        batch_range = BatchRange(stats["min_accepted_ts"], stats["max_accepted_ts"], ctx.wm_start_ms, ctx.wm_end_ms,
                                 self.spec.allowed_lateness_ms, self.geometry.longest_window_ms,
                                 clock, times)
        rows = self.definition.state_rows(batch_range, self.plan)
        return state if rows is None else self._state_by_end(state, *rows)

    def ctx_keys(self) -> list[str]:
        return list(self.spec.key_columns) + [WS, WE, END_BUCKET]

class _PlanWork(BatchWork):
    """A batch of the general path: its panes, late and quarantined rows, and state changes."""

    def __init__(self, executor: PlanExecutor, df: DataFrame, batch_id: int):
        super().__init__()
        self.executor, self.df, self.batch_id = executor, df, batch_id
        self.plan_name = executor.plan.kind

    def planned(self, wm0: int, classified: DataFrame, whole: DataFrame, times: "batch_time.BatchTime", out,
                windows_pin) -> None:
        """What :meth:`PlanExecutor._compute` found: the watermark the last batch committed, the
        classified rows (as cached, and ``whole``: with every input column, for the late and
        quarantined rows), the batch's times, the plan's output and where it read the state (its pin)."""
        self.classified, self.times, self.out, self.read_pin = classified, times, out, windows_pin
        self.whole = whole
        self.watermark_start_ms, self.watermark_end_ms = wm0, times.watermark_end_ms
        self.max_seen_ms, self.time_state = times.max_seen_ms, times.time_state
        self.seen_rows = classified

    def results(self) -> Output:
        # Metrics that are only metrics cost no Spark job where the mode writes every pane: the
        # panes emitted are the rows the results commit recorded (an empty append records no
        # commit: 0). Counting first would compute the plan once more.
        return Output(*self.executor.sink_mode.results(self.out.panes, self.metrics, self.cached))

    def results_written(self, rows_written: int | None) -> None:
        self.executor.sink_mode.results_written(self.out.panes, rows_written, self.metrics)

    def late(self) -> Output | None:
        ex, df, wm0 = self.executor, self.df, self.watermark_start_ms
        if not ex.spec.late_output:
            return None
        # the session plans decide lateness after merging; the others at classification
        late = self.out.late_rows(self.whole, list(ex.spec.key_columns))
        return Output(ex._late_rows(df, late, ex._late_reason(self.times, wm0), self.batch_id),
                      self.metrics.late_rows)

    def quarantine(self) -> Output:
        return Output(self.executor._quarantined_rows(self.df, self.whole, self.batch_id),
                      self.metrics.quarantined_rows)

    def write_state(self) -> StateVersions:
        ex, out = self.executor, self.out
        windows = ex.store.write_windows(out.upserts, out.deletes, ex.ctx_keys(), self.batch_id,
                                         self.read_pin, ex.state_write,
                                         final=self.watermark_end_ms == MAX_TIMESTAMP_MS,
                                         input_rows=self.metrics.input_rows)
        if out.state_write_counts_cleaned:
            # The state rows a batch deletes are the windows it cleaned up; the store counted
            # them as it wrote (every delete matches a state row: the plans delete only rows they read).
            cleaned = ex.store.windows_deleted
            self.metrics.windows_cleaned = out.deletes.count() if cleaned is None else cleaned
        buffers_version = None
        if ex.definition.reads_buffers:
            buffers_version = ex.store.merge_buffers(out.buffer_inserts, out.buffer_deletes,
                                                     list(ex.spec.key_columns) + ["elem_index"], self.batch_id)
        return StateVersions(windows.version, buffers_version, windows.logged_from, windows.state_changes)


class _ClosingWork(BatchWork):
    """A first batch that ends at watermark +infinity (a complete backfill in one batch).

    Same results as the general path (it is the special case "empty state,
    every window closes"), computed in one pass over the input: no state
    join, no caching, no state write. The panes emitted are the rows the
    results write committed. The row accounting comes from that same pass
    where it can (see :meth:`PlanExecutor._observed_accounting`); otherwise it
    is one aggregate over the input afterwards. A batch that has late or
    quarantined rows reads its input once more to write them.
    """

    plan_name = CLOSING_PLAN

    def __init__(self, executor: PlanExecutor, df: DataFrame, batch_id: int, processing_time_ms: int | None):
        super().__init__()
        spec = executor.spec
        self.executor, self.df, self.batch_id, self.processing_time_ms = executor, df, batch_id, processing_time_ms
        self.watermark_start_ms, self.watermark_end_ms = MIN_TIMESTAMP_MS, MAX_TIMESTAMP_MS
        now_ms = processing_time_ms if processing_time_ms is not None else int(time.time() * 1000)
        self.arrival_ms = batch_time.arrival_ms(MIN_TIMESTAMP_MS, None, True)
        self.classified = classify(df, spec, MIN_TIMESTAMP_MS, now_ms, arrival_ms=self.arrival_ms,
                                   geometry=executor.geometry)
        ctx = PlanContext(spec, executor.compiled, MIN_TIMESTAMP_MS, MAX_TIMESTAMP_MS, batch_id, executor.bucket_ms)
        # An observation counts the input rows only where each element is in one pane and
        # every valid row has the same processing time (the batch's arrival).
        one_pass = executor.definition.one_pass
        self.observation = (Observation() if one_pass.observes_input and not executor.geometry.slices
                            and spec.input.ingestion_time_column is None else None)
        elements = one_pass.elements.select(executor._element_source(self.classified, df, MIN_TIMESTAMP_MS))
        self.panes = one_pass.run(ctx, elements, self.observation)

    def results(self) -> Output:
        # Every window closes in this batch, so every pane is final and an output mode's
        # filter keeps them all: the rows written are the panes emitted.
        return Output(self.panes, None)

    def results_written(self, rows_written: int | None) -> None:
        spec, panes_emitted = self.executor.spec, rows_written
        stats = self.executor._observed_accounting(self.df, self.observation, panes_emitted, self.arrival_ms)
        if stats is None:
            if panes_emitted is None:       # a replay, or a commit without metrics: count them again
                panes_emitted = self.panes.count()
            # A second, code-generated pass over the input. Observing the input rows during
            # the write instead costs more: CollectMetrics below the aggregate breaks whole-stage
            # code generation and makes every row compute its status and reason as strings.
            stats = self.classified.agg(*_accounting_exprs(times_of_accepted=False)).first().asDict()
        self.metrics = BatchMetrics(
            input_rows=stats["input"], accepted_rows=stats[ACCEPTED] or 0,
            late_rows=(stats[LATE] or 0) if spec.late_output else 0,
            dropped_late_rows=0 if spec.late_output else (stats[LATE] or 0),
            unassigned_rows=stats[UNASSIGNED] or 0, quarantined_rows=stats[QUARANTINED] or 0,
            panes_emitted=panes_emitted, windows_cleaned=0)
        valid_rows = self.metrics.input_rows - self.metrics.quarantined_rows
        times = batch_time.advance(spec, batch_time.new_tracker(spec), MIN_TIMESTAMP_MS, self.batch_id,
                                   {SINGLE_SOURCE: (stats["max_ts"], stats["max_pt"])} if valid_rows else {},
                                   watermark_ms=None, processing_time_ms=self.processing_time_ms, flush=True)
        self.max_seen_ms, self.time_state = times.max_seen_ms, times.time_state

    def late(self) -> Output | None:
        if not self.executor.spec.late_output:
            return None
        ex = self.executor
        late = self.classified.where(F.col(STATUS) == LATE)
        return Output(ex._late_rows(self.df, late, ex._late_reason(None, MIN_TIMESTAMP_MS), self.batch_id),
                      self.metrics.late_rows)

    def quarantine(self) -> Output:
        return Output(self.executor._quarantined_rows(self.df, self.classified, self.batch_id),
                      self.metrics.quarantined_rows)

    def write_state(self) -> StateVersions:
        return StateVersions(self.executor.store.windows_version())
