"""Input preparation: event time to epoch ms, quarantine reasons, window assignment through the
spec's window geometry (the caller's :class:`windowing.spark.plans.window_geometry.WindowGeometry`).

Everything here is column expressions (no Python per row), except a session
gap FUNCTION (user code: :func:`gap_function_column`). The thresholds
that depend on the watermark are computed on the driver with Python ints, so
that no expression can overflow int64 under ANSI mode (the watermark starts at
Long.MIN_VALUE and a flush moves it to Long.MAX_VALUE).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.assigners import GlobalWindows
from windowing.core.records import (
    QUARANTINE_DUPLICATE_EVENT, QUARANTINE_FAR_FUTURE_EVENT_TIME, QUARANTINE_INVALID_INGESTION_TIME,
    QUARANTINE_INVALID_SESSION_GAP, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY, QUARANTINE_UNKNOWN_SOURCE,
    QUARANTINE_UNPARSEABLE_EVENT_TIME, QUARANTINE_VALUE_OUT_OF_BOUNDS)
from windowing.core.input_policy import InputPolicy
from windowing.core.watermarks import SINGLE_SOURCE
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS, clamp_ms as _clamp
from windowing.core.assigners import GapFromColumn
from windowing.spark.input.columns import (ACCEPTED, EVENT_MS, GAP, LATE, PT, QUARANTINED, REASON, SEQ, SRC, STATUS, TS,
                                           UNASSIGNED, long_lit)


def count_each(frames: dict[str, DataFrame]) -> dict[str, int]:
    """The number of rows of each DataFrame, counted by ONE query (a query per count costs a
    batch its planning and scheduling each time)."""
    if not frames:
        return {}
    tagged = [df.select(F.lit(name).alias("__frame")) for name, df in frames.items()]
    union = tagged[0]
    for df in tagged[1:]:
        union = union.unionByName(df)
    counted = {r["__frame"]: r["count"] for r in union.groupBy("__frame").count().collect()}
    return {name: counted.get(name, 0) for name in frames}


def simple_types(df: DataFrame) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in df.schema.fields}


def event_time_ms(df: DataFrame, column: str) -> Column:
    """Epoch milliseconds or null.

    ``unix_millis`` floors (``Math.floorDiv`` of the microseconds), so instants
    before 1970 with a sub-millisecond part land in the right millisecond, in
    integer arithmetic (no precision lost through doubles).
    """
    dtype = df.schema[column].dataType
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return F.unix_millis(F.col(column).cast("timestamp"))
    if isinstance(dtype, T.StringType):
        return F.unix_millis(F.expr(f"try_to_timestamp(`{column}`)"))
    return F.col(column).cast("long")


def ingestion_time_ms(df: DataFrame, column: str) -> Column:
    """A recorded ingestion time in epoch ms: long/int as is, timestamps converted, anything else null."""
    dtype = df.schema[column].dataType
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return F.unix_millis(F.col(column).cast("timestamp"))
    if isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return F.col(column).cast("long")
    return F.lit(None).cast("long")


def out_of_bounds(policy: InputPolicy) -> Column:
    """True for a row that the policy's value bounds quarantine (``value_out_of_bounds``): a value outside
    its column's ``[min, max]``, or a null one in a column not declared nullable. Both Spark paths (the
    DataFrame plans here, the per-key path in :mod:`windowing.spark.keyed.executor`) classify with it; the
    reference model with :meth:`InputPolicy.out_of_bounds`."""
    outside = F.lit(False)
    for column, lo, hi in policy.value_bounds:
        value = F.col(column)
        bad = value.isNull() if column not in policy.nullable_bounded else F.lit(False)
        if lo is not None:
            bad = bad | (value < F.lit(lo))
        if hi is not None:
            bad = bad | (value > F.lit(hi))
        outside = outside | F.coalesce(bad, F.lit(False))
    return outside


def by_processing_time(spec: WindowSpec) -> bool:
    """Processing-time assigners assign (and order) elements by their processing time."""
    return not spec.is_event_time and not isinstance(spec.assigner, GlobalWindows)


def classify(df: DataFrame, spec: WindowSpec, wm_start_ms: int, processing_time_ms: int | None = None,
             seen_ids: DataFrame | None = None, arrival_ms: int | None = None, *, geometry) -> DataFrame:
    """Add ``__ts_ms``, ``__seq``, the live windows and a status per input row.

    ``__ts_ms`` is the element's timestamp: its event time, or its processing
    time for processing-time assigners. Also ``__event_ms`` (the event time,
    null without an event-time column), ``__pt_ms`` (the row's processing
    time: its ``ingestion_time_column``, else ``arrival_ms``, the clock when
    the batch arrived) and ``__source`` (the watermark source: the
    ``source_column``, or the single unnamed source).

    Windows: ``geometry`` (the spec's window geometry) assigns them:
    ``window_start_ms``/``window_end_ms`` columns for families with one window
    per element (tumbling, global, sessions); for families with slices (sliding,
    cumulating) the element's slice ``__slice_ms`` and no window list: the
    geometry's ``live_windows`` gives one where a plan needs it.

    Status: quarantined (with ``__reason``), late (in no live window and
    ``ts + L <= wm``), unassigned (in no window, not late) or accepted.
    A window is live when its cleanup time ``end - 1 + L`` is above ``wm``.
    Quarantine reasons, first match wins (the reference model's order): null
    key, null event time, unparseable event time, a null or non-integer
    ingestion time, a source that is not declared, event time more than
    ``max_event_time_skew`` ahead of ``processing_time_ms``, a value outside
    its declared bounds, a duplicate event id (repeated within the batch in
    (event time, sequence) order, or present in ``seen_ids``: the ids that
    :mod:`windowing.spark.operator.dedup` still remembers, one column named like the
    spec's ``dedup_column``).
    """
    key_null = F.lit(False)
    for key in spec.key_columns:
        key_null = key_null | F.col(key).isNull()
    reason = F.when(key_null, F.lit(QUARANTINE_NULL_KEY))
    if spec.event_time_column is not None:
        ts = event_time_ms(df, spec.event_time_column)
        reason = (reason.when(F.col(spec.event_time_column).isNull(), F.lit(QUARANTINE_NULL_EVENT_TIME))
                  .when(ts.isNull(), F.lit(QUARANTINE_UNPARSEABLE_EVENT_TIME)))
    else:
        ts = F.lit(None).cast("long")
    if spec.input.ingestion_time_column is not None:
        pt = ingestion_time_ms(df, spec.input.ingestion_time_column)
        reason = reason.when(pt.isNull(), F.lit(QUARANTINE_INVALID_INGESTION_TIME))
    elif by_processing_time(spec) and (arrival_ms is None or arrival_ms == MIN_TIMESTAMP_MS):
        # The model would assign such rows to a window around Long.MIN_VALUE: refuse instead.
        raise ValueError(f"{spec.assigner!r} assigns by processing time but the batch has none "
                         f"(arrival_ms={arrival_ms!r}): give process_batch a processing_time_ms, or name an "
                         f"ingestion_time_column that records each row's processing time")
    else:
        pt = long_lit(arrival_ms if arrival_ms is not None else MIN_TIMESTAMP_MS)
    if spec.input.source_column is not None:
        source = F.col(spec.input.source_column).cast("string")
        reason = reason.when(source.isNull() | ~source.isin(*spec.input.sources), F.lit(QUARANTINE_UNKNOWN_SOURCE))
    else:
        source = F.lit(SINGLE_SOURCE)
    if spec.input.max_event_time_skew_ms is not None and spec.event_time_column is not None:
        if processing_time_ms is None:
            raise ValueError("max_event_time_skew is set: classify needs the batch's processing_time_ms")
        newest_ok = _clamp(processing_time_ms + spec.input.max_event_time_skew_ms)
        reason = reason.when(ts > long_lit(newest_ok), F.lit(QUARANTINE_FAR_FUTURE_EVENT_TIME))
    if spec.input.value_bounds:
        reason = reason.when(out_of_bounds(spec.input), F.lit(QUARANTINE_VALUE_OUT_OF_BOUNDS))
    if spec.is_merging:
        if has_gap_function(spec):
            # Only rows that passed every check above reach the function, as in the model.
            df = df.withColumn(GAP, gap_function_column(df, spec, reason.isNull(), ts, pt))
        reason = reason.when(~session_gap_valid(df, spec), F.lit(QUARANTINE_INVALID_SESSION_GAP))
    # One projection for the columns that read only the input (each DataFrame operation is analysed anew).
    out = df.withColumns({EVENT_MS: ts, PT: pt, SRC: source, TS: pt if by_processing_time(spec) else ts,
                          SEQ: F.monotonically_increasing_id(), REASON: reason})
    if spec.input.dedup_column is not None:
        out = _mark_duplicates(out, spec.input.dedup_column, seen_ids)
    lateness = spec.allowed_lateness_ms
    live_end_above = live_window_end_above(spec, wm_start_ms)
    if spec.is_event_time:
        late_at_or_below = wm_start_ms - lateness             # an element is late iff ts <= this
        element_late = (F.col(TS) <= long_lit(late_at_or_below)) if late_at_or_below >= MIN_TIMESTAMP_MS \
            else F.lit(False)
    else:
        element_late = F.lit(False)
    out, in_live_window, element_late = geometry.assign(out, live_end_above, element_late)
    status = (F.when(F.col(REASON).isNotNull(), F.lit(QUARANTINED))
              .when(in_live_window, F.lit(ACCEPTED))
              .when(element_late, F.lit(LATE))
              .otherwise(F.lit(UNASSIGNED)))
    return out.withColumn(STATUS, status)


def live_window_end_above(spec: WindowSpec, wm_start_ms: int) -> int | None:
    """A window is live (not yet cleaned up) iff its end is above this; None: every window is live.

    Cleanup time ``end - 1 + L`` above the watermark, clamped to int64.
    """
    if not spec.is_event_time:
        return None
    return _clamp(wm_start_ms - spec.allowed_lateness_ms + 1)


def gap_function_column(df: DataFrame, spec: WindowSpec, checked: Column, ts: Column, pt: Column) -> Column:
    """The gap a session gap function gives each row, as a long column (a Python UDF: user code).

    The function sees the row as the per-key path gives it to the reference
    model: every input column, the event-time column as epoch ms and the
    ingestion-time column as epoch ms. It is called only where ``checked``
    (the row passed the earlier quarantine checks; a Python UDF runs on every
    row of its input, so the guard is inside the UDF). A result that is not
    a positive int is null: :func:`session_gap_valid` quarantines the row
    with ``invalid_session_gap``, as the model does. An exception in the
    function fails the batch with the function's own error, as in the model.
    """
    extractor = spec.assigner.dynamic_gap
    fields = {c: F.col(c) for c in df.columns}
    if spec.event_time_column is not None:
        fields[spec.event_time_column] = ts
    if spec.input.ingestion_time_column is not None:
        fields[spec.input.ingestion_time_column] = pt

    def gap_ms(row, passed):
        if not passed:
            return None
        gap = extractor.gap_ms(row.asDict(recursive=True))
        valid = isinstance(gap, int) and not isinstance(gap, bool) and 0 < gap <= MAX_TIMESTAMP_MS
        return gap if valid else None

    row = F.struct(*[column.alias(name) for name, column in fields.items()])
    return F.udf(gap_ms, T.LongType())(row, F.coalesce(checked, F.lit(False)))


def session_gap_valid(df: DataFrame, spec: WindowSpec) -> Column:
    """A row's dynamic gap is a positive integer (the model quarantines anything else,
    floats included); a static gap is always valid."""
    gap = spec.assigner.dynamic_gap
    if gap is None:
        return F.lit(True)
    if has_gap_function(spec):
        return F.col(GAP).isNotNull()
    column = gap.column
    if not isinstance(df.schema[column].dataType, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return F.lit(False)
    return F.coalesce(F.col(column) > 0, F.lit(False))


def _mark_duplicates(out: DataFrame, id_column: str, seen_ids: DataFrame | None) -> DataFrame:
    """Set reason ``duplicate_event`` on every valid row but the first of its id, and on ids already seen."""
    event_id = F.col(id_column)
    candidate = F.col(REASON).isNull() & event_id.isNotNull()
    rank = F.row_number().over(Window.partitionBy(event_id, candidate).orderBy(F.col(TS), F.col(SEQ)))
    out = out.withColumn("__dup_rank", rank)
    seen_flag = F.lit(False)
    if seen_ids is not None:
        seen = seen_ids.select(F.col(id_column).alias("__seen_id")).distinct().withColumn("__seen", F.lit(True))
        out = out.join(seen, event_id.eqNullSafe(F.col("__seen_id")), "left")
        seen_flag = F.coalesce(F.col("__seen"), F.lit(False))
    duplicate = candidate & ((F.col("__dup_rank") > 1) | seen_flag)
    out = out.withColumn(REASON, F.when(duplicate, F.lit(QUARANTINE_DUPLICATE_EVENT)).otherwise(F.col(REASON)))
    return out.drop("__dup_rank", "__seen_id", "__seen")


def has_gap_function(spec) -> bool:
    """Session windows whose gap a Python function computes per row (not a gap column)."""
    gap = getattr(spec.assigner, "dynamic_gap", None)
    return gap is not None and not isinstance(gap, GapFromColumn)
