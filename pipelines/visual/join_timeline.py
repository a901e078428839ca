"""A join job's timeline, read from its Delta tables: both inputs' rows, the panes or pairs, late rows, the watermark.

The picture is :mod:`pipelines.visual.timeline`'s, per key (the join key's values
joined by ``", "``) and batch, with ``two_inputs`` set: each side's input rows
(``data-side``), the late rows per side (the late table records the side), the
quarantined rows per side, and

* a window join (or co-group): its panes, one per ``(key, window, pane index)``
  emitted, labelled with the number of output rows it holds (``rows=N``);
* an interval join: its pairs, an arc between the left and the right row's
  event times in the row of the batch that emitted it.

Arrival batch of an input row: exact where every batch recorded its source
offsets (a stream's, :mod:`pipelines.stream_offsets`): the batch whose recorded
files hold the row's file; otherwise the commit-time rule of
:func:`pipelines.visual.timeline_arrivals.arrival_batches`.
"""
from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.join_job import JoinJob
from pipelines.visual.timeline_arrivals import MAX_DRAWN_ROWS, arrival_batches, commit_times, key_text
from pipelines.visual.timeline_marks import (EVENT, LATE_ROW, MIN_MS, QUARANTINED_ROW, BatchRow, PairMark, PaneMark,
                                             RowMark, Timeline)
from windowing.core.joins.sides import SIDES
from windowing.spark.joins.columns import (BATCH_ID, EVENT_TIME, IS_FINAL, JOIN_KEY, LEFT_TIME, PANE_INDEX, REASON,
                                           RIGHT_TIME, ROW_COLUMNS, ROW_INDEX, SIDE, TIMING, WATERMARK, WE, WS)
from windowing.spark.joins.intake import event_time_ms_sql
from windowing.spark.joins.stores import SOURCE_OFFSETS, JoinDeltaStore
from windowing.spark.lake import delta_lake_io

TS, FILE = "__viz_ts", "__viz_file"
"""The columns a side's rows are read with: the event time (ms) and the data file holding the row."""
PAIR_COLUMNS = (JOIN_KEY, LEFT_TIME, RIGHT_TIME, WATERMARK, BATCH_ID)
"""The columns of a pair that are not its output values."""
EXAMPLE_KEYS = 5
"""How many of the job's keys a refused ``--key`` names as examples."""


def side_keys(job: JoinJob) -> dict[str, tuple[str, ...]]:
    """Each side's key columns, by side name."""
    return {"left": tuple(job.spec.left_key), "right": tuple(job.spec.right_key)}


def _key_column(columns: list[str]) -> F.Column:
    """A key as text in Spark (the value :func:`pipelines.visual.timeline_arrivals.key_text` gives a key with no
    null)."""
    return F.concat_ws(", ", *[F.col(c).cast("string") for c in columns])


def _batches(spark: SparkSession, job: JoinJob) -> tuple[tuple[BatchRow, ...], dict[int, str | None]]:
    """The committed batches (watermark before and after) and each batch's recorded ``source_offsets``."""
    store = JoinDeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path,
                           job.quarantine_path)
    if not delta_lake_io.table_exists(spark, store.progress_path):
        return (), {}
    progress = spark.read.format("delta").load(store.progress_path)
    offsets = F.col(SOURCE_OFFSETS) if SOURCE_OFFSETS in progress.columns else F.lit(None).cast("string")
    batches, recorded, wm = [], {}, MIN_MS
    for p in (progress.select(BATCH_ID, WATERMARK, "processing_time_ms", offsets.alias(SOURCE_OFFSETS))
              .orderBy(BATCH_ID).collect()):
        batches.append(BatchRow(p[BATCH_ID], wm, p[WATERMARK], p["processing_time_ms"], None))
        recorded[p[BATCH_ID]] = p[SOURCE_OFFSETS]
        wm = p[WATERMARK]
    return tuple(batches), recorded


def _files_by_batch(spark: SparkSession, side: str, path: str, recorded: dict[int, str | None]) -> dict[str, int] | None:
    """Data file name -> the batch that read it, from the recorded offsets; None when a batch recorded none."""
    from pipelines.replay_source import file_names
    from pipelines.stream_offsets import named_offsets_from_json
    if not recorded or any(text is None for text in recorded.values()):
        return None
    out: dict[str, int] = {}
    for batch_id, text in recorded.items():
        offsets = named_offsets_from_json(text).get(side)
        if offsets is not None:
            out.update(dict.fromkeys(file_names(spark, path, offsets, batch_id), batch_id))
    return out


def _input_rows(spark: SparkSession, job: JoinJob, side: str, batches: tuple[BatchRow, ...],
                recorded: dict[int, str | None], key: str | None, in_range,
                notes: list[str]) -> tuple[list[RowMark], int]:
    """A side's input rows with an event time in range (of ``key``), each in its arrival batch, at most
    :data:`~pipelines.visual.timeline_arrivals.MAX_DRAWN_ROWS` (``notes`` says when there were more); and how many
    rows no committed batch read yet."""
    path = job.input_paths[side]
    if not delta_lake_io.table_exists(spark, path):
        return [], 0
    keys = list(side_keys(job)[side])
    column = getattr(job.spec, side).event_time_column
    raw = spark.read.format("delta").load(path)
    raw = raw.select(*keys, F.expr(event_time_ms_sql(f"`{column}`", raw.schema[column].dataType)).alias(TS),
                     F.col("_metadata.file_path").alias(FILE))
    raw = raw.where(in_range(F.col(TS)) & F.col(TS).isNotNull())
    if key is not None:
        raw = raw.where(_key_column(keys) == F.lit(key))
    picked = raw.limit(MAX_DRAWN_ROWS + 1).collect()
    if len(picked) > MAX_DRAWN_ROWS:
        notes.append(f"Only the first {MAX_DRAWN_ROWS} {side} input rows are drawn.")
        picked = picked[:MAX_DRAWN_ROWS]
    names = [Path(r[FILE]).name for r in picked]
    by_file = _files_by_batch(spark, side, path, recorded)
    if by_file is not None:
        arrivals = [by_file.get(n) for n in names]
    else:
        commits = commit_times(path)
        arrivals = arrival_batches([commits.get(n) for n in names], [r[TS] for r in picked], batches)
    rows = [RowMark(key_text(r, keys), r[TS], b, EVENT, side=side) for r, b in zip(picked, arrivals) if b is not None]
    return rows, len(picked) - len(rows)


def _late_rows(spark: SparkSession, job: JoinJob, key: str | None, in_range) -> list[RowMark]:
    if not delta_lake_io.table_exists(spark, job.late_path):
        return []
    late = spark.read.format("delta").load(job.late_path)
    late = late.where(in_range(F.col(EVENT_TIME)) | F.col(EVENT_TIME).isNull())
    names = [f"{JOIN_KEY}.`{f}`" for f in late.schema[JOIN_KEY].dataType.fieldNames()]
    if key is not None:
        late = late.where(_key_column(names) == F.lit(key))
    return [RowMark(key_text(r[JOIN_KEY], list(r[JOIN_KEY].asDict())), r[EVENT_TIME], r[BATCH_ID], LATE_ROW,
                    r[REASON], r[SIDE]) for r in late.select(JOIN_KEY, EVENT_TIME, BATCH_ID, REASON, SIDE).collect()]


def _quarantined_rows(spark: SparkSession, job: JoinJob, key: str | None, in_range) -> list[RowMark]:
    if not delta_lake_io.table_exists(spark, job.quarantine_path):
        return []
    table = spark.read.format("delta").load(job.quarantine_path)
    rows = []
    for side in SIDES:
        row, keys = ROW_COLUMNS[side], list(side_keys(job)[side.name])
        column = getattr(job.spec, side.name).event_time_column
        data_type = table.schema[row].dataType[column].dataType
        frame = table.where(F.col(SIDE) == side.name).select(
            *[F.col(f"{row}.`{k}`").alias(k) for k in keys],
            F.expr(event_time_ms_sql(f"{row}.`{column}`", data_type)).alias(TS), BATCH_ID, REASON)
        frame = frame.where(in_range(F.col(TS)) | F.col(TS).isNull())
        if key is not None:
            frame = frame.where(_key_column(keys) == F.lit(key))
        rows += [RowMark(key_text(r, keys), r[TS], r[BATCH_ID], QUARANTINED_ROW, r[REASON], side.name)
                 for r in frame.collect()]
    return rows


def _results(spark: SparkSession, job: JoinJob, key: str | None, from_ms: int | None,
             to_ms: int | None) -> tuple[list[PaneMark], list[PairMark]]:
    """A window join's panes (one per key, window, pane index and batch) or an interval join's pairs."""
    if not delta_lake_io.table_exists(spark, job.results_path):
        return [], []
    results = spark.read.format("delta").load(job.results_path)
    names = [f"{JOIN_KEY}.`{f}`" for f in results.schema[JOIN_KEY].dataType.fieldNames()]
    if key is not None:
        results = results.where(_key_column(names) == F.lit(key))
    if LEFT_TIME in results.columns:    # an interval join's pairs
        if from_ms is not None:
            results = results.where(F.greatest(LEFT_TIME, RIGHT_TIME) >= F.lit(from_ms))
        if to_ms is not None:
            results = results.where(F.least(LEFT_TIME, RIGHT_TIME) < F.lit(to_ms))
        values = [c for c in results.columns if c not in PAIR_COLUMNS and c != "pair_time_ms"]
        return [], [PairMark(key_text(r[JOIN_KEY], list(r[JOIN_KEY].asDict())), r[LEFT_TIME], r[RIGHT_TIME],
                             r[BATCH_ID], ", ".join(f"{c}={r[c]}" for c in values)) for r in results.collect()]
    if from_ms is not None:
        results = results.where(F.col(WE).isNull() | (F.col(WE) > F.lit(from_ms)))
    if to_ms is not None:
        results = results.where(F.col(WS).isNull() | (F.col(WS) < F.lit(to_ms)))
    panes = (results.groupBy(JOIN_KEY, WS, WE, PANE_INDEX, TIMING, IS_FINAL, BATCH_ID)
             .agg(F.count(ROW_INDEX).alias("rows")).collect())
    return [PaneMark(key_text(r[JOIN_KEY], list(r[JOIN_KEY].asDict())), r[WS], r[WE], r[BATCH_ID], r[TIMING],
                     r[PANE_INDEX], bool(r[IS_FINAL]), f"rows={r['rows']}") for r in panes], []


def _example_keys(spark: SparkSession, job: JoinJob) -> list[str]:
    """A few keys of the left input (for the message refusing an unknown key)."""
    if not delta_lake_io.table_exists(spark, job.left_path):
        return []
    left = spark.read.format("delta").load(job.left_path)
    keys = list(side_keys(job)["left"])
    return sorted(r[0] for r in left.where(F.col(keys[0]).isNotNull()).select(_key_column(keys))
                  .distinct().limit(EXAMPLE_KEYS).collect())


def load_join_timeline(spark: SparkSession, job: JoinJob, key: str | None = None, from_ms: int | None = None,
                       to_ms: int | None = None) -> Timeline:
    """Read a join job's progress, inputs, results, late and quarantine tables into a :class:`Timeline`.

    Args:
        key: only this join key (its values joined by ``", "``).
        from_ms, to_ms: only rows with event time in ``[from_ms, to_ms)``, windows that overlap it,
            pairs with a row in it.

    Raises:
        ValueError: ``key`` is the key of no row, pane or pair of the job (naming it and some keys).
    """
    def in_range(ts) -> F.Column:
        return ((ts >= F.lit(from_ms)) if from_ms is not None else F.lit(True)) & \
               ((ts < F.lit(to_ms)) if to_ms is not None else F.lit(True))

    batches, recorded = _batches(spark, job)
    rows: list[RowMark] = []
    notes = ["A join job has no event_id column: late and quarantined rows are also drawn as input rows."]
    unread = 0
    for side in SIDES:
        side_rows, side_unread = _input_rows(spark, job, side.name, batches, recorded, key, in_range, notes)
        rows += side_rows
        unread += side_unread
    rows += _late_rows(spark, job, key, in_range) + _quarantined_rows(spark, job, key, in_range)
    panes, pairs = _results(spark, job, key, from_ms, to_ms)
    if key is not None and not (rows or panes or pairs):
        raise ValueError(f"--key {key!r}: job {job.name} has no input row, pane or pair of that key in range (a key "
                         f"is the join key's values joined by ', '; some keys: {_example_keys(spark, job)})")
    if unread:
        notes.append(f"{unread} input row(s) were added after the last committed batch and are not drawn.")
    panes.sort(key=lambda p: (p.key, p.batch_id, p.window_start_ms or 0, p.pane_index))
    pairs.sort(key=lambda p: (p.key, p.batch_id, p.left_time_ms, p.right_time_ms))
    return Timeline(job.name, batches, tuple(rows), tuple(panes), from_ms, to_ms, tuple(notes), tuple(pairs),
                    two_inputs=True)

