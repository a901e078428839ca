"""The per-key path: the reference model run per key on Spark, its state in Delta.

For every spec that has no DataFrame plan (:func:`windowing.spark.plans.registry.plan_for`):
user triggers, evictors (except the sliding count window's ``CountEvictor``),
process functions and ``DeltaTrigger`` with a user delta function; and for an
operator whose state this path wrote (:func:`windowing.spark.operator.dispatch.written_per_key`).
Sessions, processing time, idleness, several sources and window_all have
DataFrame plans; ``docs/execution-paths.md`` lists every feature's path. One batch is

1. batch-wide, as column expressions: event time to ms, processing time
   (the batch's, or each row's ``ingestion_time_column``), quarantine reasons
   in the model's order, de-duplication (:mod:`windowing.spark.operator.dedup`);
2. one small aggregation per source (largest event time and processing time
   of the valid rows) from which the driver advances the watermark tracker
   and the clock exactly as the model does
   (:func:`windowing.core.reference.batch_clock`);
3. per key, ``rows.groupBy(keys).cogroup(state.groupBy(keys)).applyInArrow``:
   the key's rows (arrival order) and its pickled state go through
   :func:`windowing.core.reference.run_key_batch`; keys without rows take
   part only when one of their timers is due (``next_*_timer_ms`` columns);
4. the commit protocol of :class:`windowing.spark.operator.protocol.WindowOperator`: outputs by batch
   id, then the state MERGE, then the progress row.

Arrow (not pandas) carries the rows: ``to_pylist`` gives the model exact
Python ints and None (pandas would turn a nullable long column into floats).

Results table: the key columns, ``window_start_ms``, ``window_end_ms``,
the aggregate columns, ``pane_index``,
``timing``, ``is_final``, ``watermark_ms``, ``batch_id``; for merging
(session) specs ``supersedes`` (array of (window_start_ms, window_end_ms));
for a process function, instead of aggregate columns, ``row_index`` and the
columns of its declared ``output_schema``: one row per emitted row, and one
row with a null ``row_index`` for a firing that emitted none (so no pane
disappears).

Limits: a key's state (all its open windows, buffers and trigger state) is
unpickled in one task, so it must fit in that task's memory; window_all puts
everything in one task. A row quarantined by the model itself (a dynamic
session gap FUNCTION returning a bad gap) has already moved the watermark.
"""
from __future__ import annotations

import copy
import pickle
import time

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.spark.plans.aggregates import form_of
from windowing.core.assigners import GapFromColumn
from windowing.core.records import (
    LATE_BEYOND_ALLOWED_LATENESS, QUARANTINE_FAR_FUTURE_EVENT_TIME, QUARANTINE_INVALID_INGESTION_TIME,
    QUARANTINE_INVALID_SESSION_GAP, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY, QUARANTINE_UNKNOWN_SOURCE,
    QUARANTINE_UNPARSEABLE_EVENT_TIME, QUARANTINE_VALUE_OUT_OF_BOUNDS, BatchMetrics)
from windowing.core.reference import EVENT, PROCESSING, KeyBatchClock, batch_clock, run_key_batch
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import SINGLE_SOURCE, tracker_for
from windowing.spark.input import batch_time
from windowing.spark.keyed.state import (
    ALL_KEY, KEY_SCOPE, NEXT_EVENT_TIMER, NEXT_PROCESSING_TIMER, OPERATOR_SCOPE, SCOPE, STATE, KeyedStateTable,
    state_schema)
from windowing.spark.state.batch_work import BatchWork, Output, StateVersions
from windowing.spark.runtime.local_frames import local_frame
from windowing.spark.runtime.runner_rows import KIND, RunnerRow
from windowing.spark.input.columns import PT, QUARANTINED, REASON, SEQ, SRC, STATUS, TS, WE, WS, long_lit
from windowing.spark.input.prepare import _mark_duplicates, by_processing_time, event_time_ms, ingestion_time_ms, out_of_bounds

KEYED_PLAN = "keyed"
PANE, LATE_ROW, QUARANTINE_ROW, KEY_ROW = (RunnerRow("pane"), RunnerRow("late"), RunnerRow("quarantine"),
                                          RunnerRow("key"))
VALID = "valid"
_METRICS = ("accepted_rows", "late_rows", "dropped_late_rows", "unassigned_rows", "windows_cleaned")
SUPERSEDES_TYPE = T.ArrayType(T.StructType([T.StructField(WS, T.LongType(), True),
                                            T.StructField(WE, T.LongType(), True)]))


def group_keys(spec: WindowSpec) -> list[str]:
    """The columns a batch is grouped by: the key columns, or the constant ``__all`` of window_all."""
    return list(spec.key_columns) or [ALL_KEY]


def prepare_rows(df: DataFrame, spec: WindowSpec, arrival_clock_ms: int, skew_reference_ms: int,
                 seen_ids: DataFrame | None = None) -> DataFrame:
    """The batch-wide checks as columns: ``__ts_ms``, ``__pt_ms``, ``__source``, ``__seq``, ``__reason``, ``__status``.

    Quarantine reasons, first match wins, in the reference model's order:
    null key, null event time, unparseable event time, invalid ingestion
    time, unknown source, far-future event time, out-of-bounds value, invalid
    session gap from a column, duplicate event id. ``__status`` is
    ``quarantined`` or ``valid`` (the model decides accepted / late /
    unassigned per key).
    """
    out = df.withColumn(SEQ, F.monotonically_increasing_id())
    if not spec.key_columns:
        out = out.withColumn(ALL_KEY, F.lit(0).cast("long"))
    reason = None

    def when(cond: Column, text: str) -> None:
        nonlocal reason
        reason = F.when(cond, F.lit(text)) if reason is None else reason.when(cond, F.lit(text))

    key_null = F.lit(False)
    for key in spec.key_columns:
        key_null = key_null | F.col(key).isNull()
    when(key_null, QUARANTINE_NULL_KEY)
    if spec.event_time_column is not None:
        ts = event_time_ms(df, spec.event_time_column)
        when(F.col(spec.event_time_column).isNull(), QUARANTINE_NULL_EVENT_TIME)
        when(ts.isNull(), QUARANTINE_UNPARSEABLE_EVENT_TIME)
    else:
        ts = F.lit(None).cast("long")
    out = out.withColumn(TS, ts)
    if spec.input.ingestion_time_column is not None:
        pt = ingestion_time_ms(df, spec.input.ingestion_time_column)
        when(pt.isNull(), QUARANTINE_INVALID_INGESTION_TIME)
    else:
        pt = long_lit(arrival_clock_ms)
    out = out.withColumn(PT, pt)
    if spec.input.source_column is not None:
        source = F.col(spec.input.source_column).cast("string")
        when(source.isNull() | ~source.isin(*spec.input.sources), QUARANTINE_UNKNOWN_SOURCE)
    else:
        source = F.lit(SINGLE_SOURCE)
    out = out.withColumn(SRC, source)
    if spec.input.max_event_time_skew_ms is not None and spec.event_time_column is not None:
        newest_ok = max(MIN_TIMESTAMP_MS, min(MAX_TIMESTAMP_MS, skew_reference_ms + spec.input.max_event_time_skew_ms))
        when(F.col(TS) > long_lit(newest_ok), QUARANTINE_FAR_FUTURE_EVENT_TIME)
    if spec.input.value_bounds:
        when(out_of_bounds(spec.input), QUARANTINE_VALUE_OUT_OF_BOUNDS)   # the DataFrame plans' check
    gap = getattr(spec.assigner, "dynamic_gap", None)
    if isinstance(gap, GapFromColumn):
        dtype = df.schema[gap.column].dataType
        integral = isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType))
        bad_gap = (F.col(gap.column).isNull() | (F.col(gap.column) <= 0)) if integral else F.lit(True)
        when(bad_gap, QUARANTINE_INVALID_SESSION_GAP)
    out = out.withColumn(REASON, reason if reason is not None else F.lit(None).cast("string"))
    if spec.input.dedup_column is not None:
        out = _mark_duplicates(out, spec.input.dedup_column, seen_ids)
    return out.withColumn(STATUS, F.when(F.col(REASON).isNotNull(), F.lit(QUARANTINED)).otherwise(F.lit(VALID)))


def aggregate_fields(spec: WindowSpec, input_schema: T.StructType) -> list[T.StructField]:
    """The result columns of a spec's aggregates (or of its process function) and their types."""
    if spec.process_function is not None:
        declared = T._parse_datatype_string(spec.process_function.output_schema)
        return [T.StructField("row_index", T.IntegerType(), True)] + \
            [T.StructField(f.name, f.dataType, True) for f in declared.fields]
    return [T.StructField(name, form_of(agg).result_type(agg, input_schema), True) for name, agg in spec.aggregates]


def _python_value(value, dtype: T.DataType):
    """A model value as Arrow takes it for ``dtype`` (structs from tuples, arrays element-wise)."""
    if value is None:
        return None
    if isinstance(dtype, T.StructType) and isinstance(value, (tuple, list)):
        return {f.name: _python_value(v, f.dataType) for f, v in zip(dtype.fields, value)}
    if isinstance(dtype, T.ArrayType) and isinstance(value, (tuple, list)):
        return [_python_value(v, dtype.elementType) for v in value]
    return value


def _key_runner(spec: WindowSpec, clock: KeyBatchClock, keys: list[str], out_schema: T.StructType,
                result_fields: list[T.StructField]):
    """The function applyInArrow runs per key: (rows, state) -> panes, late/quarantined seqs, the new state."""
    from pyspark.sql.pandas.types import to_arrow_schema
    et_column = spec.event_time_column
    key_columns = list(spec.key_columns)
    arrow_schema = to_arrow_schema(out_schema)   # once, on the driver (it pickles with the function)

    def run(rows_table, state_table):
        import pyarrow as pa
        rows = rows_table.to_pylist()
        rows.sort(key=lambda r: r[SEQ])   # arrival order: the model orders (time, arrival)
        group = (rows[0] if rows else state_table.slice(0, 1).to_pylist()[0])
        group_value = {k: group[k] for k in keys}
        key = tuple(group[k] for k in key_columns)
        for row in rows:
            if et_column is not None:
                row[et_column] = row.pop(TS)
            if spec.input.ingestion_time_column is not None:
                row[spec.input.ingestion_time_column] = row.pop(PT)
        state = pickle.loads(state_table[STATE][0].as_py()) if state_table.num_rows else None
        result, new_state = run_key_batch(spec, key, state, rows, clock)
        out = []
        for pane in result.panes:
            base = PANE.make(group_value, **{WS: pane.window_start_ms, WE: pane.window_end_ms,
                                             "pane_index": pane.pane_index, "timing": pane.timing,
                                             "is_final": pane.is_final, "watermark_ms": pane.watermark_ms})
            if spec.is_merging:
                base["supersedes"] = [{WS: s, WE: e} for s, e in pane.supersedes]
            if spec.process_function is None:
                out.append(dict(base, **{f.name: _python_value(pane.values.get(f.name), f.dataType)
                                         for f in result_fields}))
                continue
            emitted = pane.rows or ()
            if not emitted:
                out.append(dict(base, row_index=None))
            for i, emitted_row in enumerate(emitted):
                out.append(dict(base, row_index=i, **{f.name: _python_value(emitted_row.get(f.name), f.dataType)
                                                      for f in result_fields[1:]}))
        for late in result.late:
            # the model's reason and what it judged the row against (the watermark, or the
            # processing-time clock for a replayed row of a closed processing-time window)
            out.append(LATE_ROW.make(group_value, **{SEQ: late.row[SEQ], REASON: late.reason,
                                                     "watermark_ms": late.watermark_ms}))
        for bad in result.quarantined:
            out.append(QUARANTINE_ROW.make(group_value, **{SEQ: bad.row[SEQ], REASON: bad.reason}))
        key_row = KEY_ROW.make(group_value, panes=len(result.panes),
                               **{f"__{m}": getattr(result.metrics, m) for m in _METRICS})
        if new_state is not None:
            key_row.update({STATE: pickle.dumps(new_state), NEXT_EVENT_TIMER: new_state.next_timer_ms(EVENT),
                            NEXT_PROCESSING_TIMER: new_state.next_timer_ms(PROCESSING)})
        out.append(key_row)
        return pa.Table.from_pylist(out, schema=arrow_schema)

    return run


class KeyedExecutor:
    """Computes a batch with the reference model per key; its state in a keyed state table.

    For every spec (the per-key path is where specs without a DataFrame plan
    run). The keyed state table goes beside the store's state tables; its
    operator row holds the watermark tracker and the clock.

    Args:
        spark: the process's SparkSession (with Delta).
        spec: the window spec.
        store: a :class:`DeltaStore` (outputs and progress) or a ``MemoryStore``.
    """

    plan = None

    def __init__(self, spark: SparkSession, spec: WindowSpec, store):
        self.spark, self.spec, self.store = spark, spec, store
        self.operator_id = store.operator_id
        self.state_table = KeyedStateTable.for_store(spark, store)
        self._operator_state: tuple[int, dict] | None = None   # (batch id, state) cached after a commit

    @property
    def fingerprint(self) -> str:
        return self.spec.fingerprint()

    def reset(self) -> None:
        self.state_table.reset()

    # ---------------------------------------------------------------- schemas
    def _state_schema(self, df: DataFrame) -> T.StructType:
        if self.spec.key_columns:
            return state_schema([df.schema[k] for k in self.spec.key_columns])
        return state_schema([T.StructField(ALL_KEY, T.LongType(), True)])

    def _out_schema(self, df: DataFrame, result_fields: list[T.StructField]) -> T.StructType:
        keys = self._state_schema(df).fields[:len(group_keys(self.spec))]
        long = lambda name: T.StructField(name, T.LongType(), True)  # noqa: E731
        fields = list(keys) + [T.StructField(KIND, T.StringType(), False), long(SEQ),
                               T.StructField(REASON, T.StringType(), True), long(WS), long(WE)]
        fields += result_fields
        fields += [long("pane_index"), T.StructField("timing", T.StringType(), True),
                   T.StructField("is_final", T.BooleanType(), True), long("watermark_ms")]
        if self.spec.is_merging:
            fields.append(T.StructField("supersedes", SUPERSEDES_TYPE, True))
        fields += [T.StructField(STATE, T.BinaryType(), True), long(NEXT_EVENT_TIMER), long(NEXT_PROCESSING_TIMER),
                   long("panes")] + [long(f"__{m}") for m in _METRICS]
        return T.StructType(fields)

    def _pane_columns(self, result_fields: list[T.StructField], batch_id: int) -> list[Column]:
        cols = [F.col(k) for k in self.spec.key_columns] + [
            F.col(WS), F.col(WE)] + [F.col(f.name) for f in result_fields]
        cols += [F.col("pane_index"), F.col("timing"), F.col("is_final"), F.col("watermark_ms"),
                 long_lit(batch_id).alias("batch_id")]
        if self.spec.is_merging:
            cols.append(F.col("supersedes"))
        return cols

    # ---------------------------------------------------------- batch state
    def _load_operator_state(self, last: dict | None, version: int | None) -> dict:
        """The watermark tracker and clock as the last committed batch left them."""
        if last is None:
            spec = self.spec
            return dict(tracker=tracker_for(spec), clock_ms=MIN_TIMESTAMP_MS)
        if self._operator_state and self._operator_state[0] == last["batch_id"]:
            return copy.deepcopy(self._operator_state[1])
        rows = (self.state_table.read(version).where(F.col(SCOPE) == OPERATOR_SCOPE)
                .select(STATE).collect())
        if not rows:
            raise RuntimeError(f"operator {self.operator_id!r}: the keyed state table has no operator row at "
                               f"version {version}; the state is damaged (reset it to start over)")
        return pickle.loads(rows[0][STATE])

    # ---------------------------------------------------------------- batch
    def compute(self, df: DataFrame, batch_id: int, last: dict | None, watermark_ms: int | None,
                processing_time_ms: int | None, seen_ids) -> "BatchWork":
        spec = self.spec
        flush = watermark_ms == MAX_TIMESTAMP_MS
        schema = self._state_schema(df)
        self.state_table.ensure(schema)
        version = self.state_table.start_version(last["windows_version"] if last else None)
        operator_state = self._load_operator_state(last, version)
        tracker, clock_before = operator_state["tracker"], operator_state["clock_ms"]
        wm0 = tracker.current_ms
        arrival = processing_time_ms if (processing_time_ms is not None and processing_time_ms > clock_before
                                         and not flush) else clock_before
        skew_reference = processing_time_ms if processing_time_ms is not None else int(time.time() * 1000)
        keys = group_keys(spec)
        work = _KeyedWork(self, df, batch_id, keys, schema)
        try:
            seen = seen_ids.visible(batch_id, wm0, df.schema[spec.input.dedup_column].dataType) if seen_ids else None
            prepared = prepare_rows(df, spec, arrival, skew_reference, seen).persist()
            work.cached.append(prepared)
            valid = F.col(STATUS) == VALID
            per_source = prepared.groupBy(SRC).agg(
                F.count(F.lit(1)).alias("n"), F.sum(valid.cast("long")).alias("valid"),
                F.max(F.when(valid, F.col(TS))).alias("max_ts"),
                F.max(F.when(valid, F.col(PT))).alias("max_pt"),
                F.min(F.when(valid, F.col(PT))).alias("min_pt")).collect()
            input_rows = sum(r["n"] for r in per_source)
            maxima = {r[SRC]: (r["max_ts"], r["max_pt"]) for r in per_source if r["valid"]}
            first_pt = min((r["min_pt"] for r in per_source if r["valid"]), default=None)
            tops = None if flush else batch_time.top_event_times(
                spec, prepared, TS, SRC if spec.input.source_column is not None else None, valid)
            clock = batch_clock(tracker, clock_before, batch_id, maxima, None if flush else watermark_ms,
                                processing_time_ms, flush, first_pt, tops)

            result_fields = aggregate_fields(spec, df.schema)
            out_schema = self._out_schema(df, result_fields)
            model_columns = [c for c in spec.required_columns
                             if c not in (spec.event_time_column, spec.input.ingestion_time_column)]
            rows = prepared.where(valid).select(*dict.fromkeys(keys + model_columns), SEQ, TS, PT)
            state = self.state_table.read(version).where(F.col(SCOPE) == KEY_SCOPE)
            due = (F.coalesce(F.col(NEXT_EVENT_TIMER) <= long_lit(clock.watermark_end_ms), F.lit(False))
                   | F.coalesce(F.col(NEXT_PROCESSING_TIMER) <= long_lit(clock.processing_time_end_ms), F.lit(False)))
            batch_keys = rows.select(*keys).distinct().withColumn("__has_rows", F.lit(True))
            state = (state.join(batch_keys, keys, "left").where(F.col("__has_rows").isNotNull() | due)
                     .select(*keys, STATE))
            runner = _key_runner(spec, clock, keys, out_schema, result_fields)
            out = (rows.groupBy(*keys).cogroup(state.groupBy(*keys)).applyInArrow(runner, out_schema)
                   .persist())
            work.cached.append(out)
            totals = out.agg(
                *[F.sum(F.col(f"__{m}")).alias(m) for m in _METRICS],
                F.sum(F.col("panes")).alias("panes"),
                F.sum(PANE.flag().cast("long")).alias("pane_rows"),
                F.sum(QUARANTINE_ROW.flag().cast("long")).alias("model_quarantined")).first()
            spark_quarantined = input_rows - sum(r["valid"] for r in per_source)
            work.metrics = BatchMetrics(input_rows=input_rows,
                                        quarantined_rows=spark_quarantined + (totals["model_quarantined"] or 0),
                                        panes_emitted=totals["panes"] or 0,
                                        **{m: totals[m] or 0 for m in _METRICS})
            work.computed(prepared, out, totals["pane_rows"] or 0, result_fields, clock, tracker)
        except BaseException:
            work.close()
            raise
        return work



class _KeyedWork(BatchWork):
    """A batch of the per-key path: the model's output rows per key, and the keyed state's changes."""

    plan_name = KEYED_PLAN

    def __init__(self, executor: KeyedExecutor, df: DataFrame, batch_id: int, keys: list[str],
                 state_schema_: T.StructType):
        super().__init__()
        self.executor, self.df, self.batch_id, self.keys, self.state_schema = (
            executor, df, batch_id, keys, state_schema_)

    def computed(self, prepared: DataFrame, out: DataFrame, pane_rows: int, result_fields: list[T.StructField],
                 clock, tracker) -> None:
        """What :meth:`KeyedExecutor.compute` found: the prepared rows, the model's output, the clock."""
        self.prepared, self.out, self.pane_rows, self.result_fields = prepared, out, pane_rows, result_fields
        self.clock, self.tracker = clock, tracker
        self.watermark_start_ms, self.watermark_end_ms = clock.watermark_start_ms, clock.watermark_end_ms
        self.max_seen_ms = max((s.max_seen_ms for s in tracker.sources.values() if s.max_seen_ms is not None),
                               default=None)
        self.seen_rows = prepared

    def results(self) -> Output:
        panes = (PANE.rows(self.out)
                 .select(*self.executor._pane_columns(self.result_fields, self.batch_id)))
        return Output(panes, self.pane_rows)

    def late(self) -> Output | None:
        spec, clock = self.executor.spec, self.clock
        if not spec.late_output:
            return None
        late_seqs = LATE_ROW.rows(self.out).select(
            SEQ, F.col(REASON).alias("__late_reason"), F.col("watermark_ms").alias("__late_wm"))
        late = (self.prepared.join(late_seqs, SEQ, "inner")
                .select(*self.df.columns,
                        # the model's element timestamp: the processing time for processing-time windows
                        F.col(PT if by_processing_time(spec) else TS).alias("event_time_ms"),
                        F.coalesce(F.col("__late_reason"), F.lit(LATE_BEYOND_ALLOWED_LATENESS)).alias("reason"),
                        F.coalesce(F.col("__late_wm"), long_lit(clock.watermark_start_ms)).alias("watermark_ms"),
                        long_lit(self.batch_id).alias("batch_id")))
        return Output(late, self.metrics.late_rows)

    def quarantine(self) -> Output:
        model_bad = QUARANTINE_ROW.rows(self.out).select(SEQ, F.col(REASON).alias("__model_reason"))
        quarantined = (self.prepared.join(model_bad, SEQ, "left")
                       .where(F.col(REASON).isNotNull() | F.col("__model_reason").isNotNull())
                       .select(*self.df.columns, F.coalesce(F.col(REASON), F.col("__model_reason")).alias("reason"),
                               long_lit(self.batch_id).alias("batch_id")))
        return Output(quarantined, self.metrics.quarantined_rows)

    def _operator_row_state(self) -> dict:
        return dict(tracker=self.tracker, clock_ms=self.clock.processing_time_end_ms)

    def write_state(self) -> StateVersions:
        ex, keys, batch_id = self.executor, self.keys, self.batch_id
        operator_row = local_frame(
            ex.spark, [tuple([None] * len(keys)) + (OPERATOR_SCOPE, pickle.dumps(self._operator_row_state()),
                                                     None, None, batch_id)], self.state_schema)
        key_rows = KEY_ROW.rows(self.out)
        upserts = (key_rows.where(F.col(STATE).isNotNull())
                   .select(*keys, F.lit(KEY_SCOPE).alias(SCOPE), STATE, NEXT_EVENT_TIMER, NEXT_PROCESSING_TIMER,
                           long_lit(batch_id).alias("last_batch_id"))
                   .unionByName(operator_row))
        deletes = key_rows.where(F.col(STATE).isNull()).select(*keys, F.lit(KEY_SCOPE).alias(SCOPE))
        return StateVersions(ex.state_table.merge(upserts, deletes, keys + [SCOPE], batch_id))

    def committed(self) -> None:
        self.executor._operator_state = (self.batch_id, copy.deepcopy(self._operator_row_state()))
