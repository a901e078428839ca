"""The rows of a join's outputs that no row of their side's input table explains (Spark anti-joins).

A side row is identified by what the outputs keep of it:

* an interval join's pair: the join key and that side's event time (``left_time_ms`` or
  ``right_time_ms``), with the side's projected columns when the output is a projection;
* a window join's output row (projection only): the join key, the side's projected columns
  (compared null-safe) and, for event-time windows, an event time in ``[window_start_ms,
  window_end_ms)``; rows whose projected columns of that side are all null (the unmatched side
  of an outer join) and empty panes (null ``row_index``) name no row of that side;
* a late row: its side, the join key and ``event_time_ms``.

A user function's output (a window join's ``apply``, a co-group) keeps no column that can be
traced to an input row: :func:`untraceable` says so and the results are not checked.

Each frame has the columns :data:`COLUMNS`: one row per output row not found in its side's input.
"""
from __future__ import annotations

COLUMNS = "side string, join_key string, event_time_ms long, window_start_ms long, batch_id long"
"""The columns of a frame of rows not found (``event_time_ms`` null where the output keeps none)."""
_KEY, _TIME, _OUT = "__key_{}", "__time_ms", "__column_{}"
_SIDES = ("left", "right")


def untraceable(spec) -> str | None:
    """Why the results rows cannot be traced to input rows (a user function's output); None when they can."""
    from pipelines.join_families import family_of
    return family_of(spec).untraceable(spec)


def _side_rows(frame, spec, side: str, columns: tuple[tuple[str, str], ...]):
    """A side's input rows as the compared columns: key, event time (ms), projected columns."""
    from windowing.spark.joins.intake import event_time_ms
    keys = spec.left_key if side == "left" else spec.right_key
    time_column = getattr(spec, side).event_time_column
    return frame.select(*[frame[k].alias(_KEY.format(i)) for i, k in enumerate(keys)],
                        event_time_ms(time_column, frame.schema[time_column].dataType).alias(_TIME),
                        *[frame[source].alias(_OUT.format(i)) for i, (source, _) in enumerate(columns)])


def _not_found(facts, rows, key_count: int, column_count: int, time_match):
    """``facts`` rows with no row of ``rows`` equal on the keys and columns (null-safe) and ``time_match``."""
    from functools import reduce
    f, i = facts.alias("f"), rows.alias("i")
    conditions = [f[_KEY.format(n)].eqNullSafe(i[_KEY.format(n)]) for n in range(key_count)]
    conditions += [f[_OUT.format(n)].eqNullSafe(i[_OUT.format(n)]) for n in range(column_count)]
    conditions.append(time_match(f, i))
    return f.join(i, reduce(lambda a, b: a & b, conditions), "left_anti")


def _keys(frame, spec):
    return [frame["join_key"][k].alias(_KEY.format(i)) for i, k in enumerate(spec.left_key)]


def results_not_found(spark, spec, results, inputs: dict):
    """The results rows whose side rows are not in that side's input (:data:`COLUMNS`); None if untraceable.

    ``inputs``: each side's input DataFrame (a side whose table is missing finds no row).
    """
    from functools import reduce

    from pyspark.sql import functions as F

    from pipelines.join_families import family_of
    family = family_of(spec)
    if family.untraceable(spec):
        return None
    projection = family.projection(spec)
    event_time_windows = (family.window_columns is not None
                          and bool(getattr(spec.window.assigner, "is_event_time", False)))
    frames = []
    for side in _SIDES:
        columns = tuple(getattr(projection, side)) if projection else ()
        if not family.names_side_rows(columns):
            continue   # a window join that emits nothing of this side (e.g. semi, anti: left rows only)
        facts, side_time = results, family.side_time_column(side)
        if side_time is None:   # a pane's output row names a side row where that side's columns are not all null
            some_column = reduce(lambda a, b: a | b, [F.col(f"`{name}`").isNotNull() for _, name in columns])
            facts = facts.where(F.col("row_index").isNotNull() & some_column)
        window = family.window_columns
        facts = facts.select(_keys(facts, spec) + [
            (F.col(side_time) if side_time else F.lit(None).cast("long")).alias(_TIME),
            *[F.col(f"`{name}`").alias(_OUT.format(i)) for i, (_, name) in enumerate(columns)],
            F.to_json("join_key").alias("join_key"),
            (F.col(window[0]) if window else F.lit(None).cast("long")).alias("window_start_ms"),
            (F.col(window[1]) if window else F.lit(None).cast("long")).alias("__window_end_ms"),
            F.col("batch_id")])
        if side_time:
            def time_match(f, i):
                return f[_TIME] == i[_TIME]
        elif event_time_windows:
            def time_match(f, i):
                return (i[_TIME] >= f["window_start_ms"]) & (i[_TIME] < f["__window_end_ms"])
        else:
            def time_match(f, i):
                return F.lit(True)
        rows = _side_rows(inputs[side], spec, side, columns)
        missing = _not_found(facts, rows, len(spec.left_key), len(columns), time_match)
        frames.append(missing.select(F.lit(side).alias("side"), "join_key", F.col(_TIME).alias("event_time_ms"),
                                     "window_start_ms", "batch_id"))
    return _union(spark, frames)


def late_not_found(spark, spec, late, inputs: dict):
    """The late rows whose (side, key, event time) is not a row of that side's input (:data:`COLUMNS`)."""
    from pyspark.sql import functions as F
    frames = []
    for side in _SIDES:
        facts = late.where(F.col("side") == side).select(
            _keys(late, spec) + [F.col("event_time_ms").alias(_TIME), F.to_json("join_key").alias("join_key"),
                                 F.col("batch_id")])
        missing = _not_found(facts, _side_rows(inputs[side], spec, side, ()), len(spec.left_key), 0,
                             lambda f, i: f[_TIME] == i[_TIME])
        frames.append(missing.select(F.lit(side).alias("side"), "join_key", F.col(_TIME).alias("event_time_ms"),
                                     F.lit(None).cast("long").alias("window_start_ms"), "batch_id"))
    return _union(spark, frames)


def _union(spark, frames: list):
    if not frames:
        return spark.createDataFrame([], COLUMNS)
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out
