"""A single-input job's timeline, read from its progress, results, late, quarantine and raw tables.

The marks (:mod:`pipelines.visual.timeline_marks`) are drawn by
:mod:`pipelines.visual.timeline`; a raw row's arrival batch follows
:mod:`pipelines.visual.timeline_arrivals`.
"""
from __future__ import annotations

from pathlib import Path

from pipelines.visual.timeline_arrivals import MAX_DRAWN_ROWS, arrival_batches, commit_times, key_text
from pipelines.visual.timeline_marks import (EVENT, LATE_ROW, MIN_MS, QUARANTINED_ROW, BatchRow, PaneMark, RowMark,
                                             Timeline)

PANE_COLUMNS = ("window_start_ms", "window_end_ms", "timing", "pane_index", "is_final", "watermark_ms", "batch_id",
                "supersedes")
"""The results table's columns that are not a pane's key or values."""


def _values_text(row, names: list[str]) -> str:
    return ", ".join(f"{n}={row[n]}" for n in names if n in row)


def load_timeline(spark, job, key: str | None = None, from_ms: int | None = None, to_ms: int | None = None,
                  max_rows: int = MAX_DRAWN_ROWS) -> Timeline:
    """Read a job's progress, results, late, quarantine and raw tables into a :class:`Timeline`.

    Args:
        key: only this key (the key columns' values joined by ``", "``).
        from_ms, to_ms: only rows with event time in ``[from_ms, to_ms)`` and
            windows that overlap it (panes of global windows always).
        max_rows: at most this many raw rows are drawn (the picture says so).
    """
    from pyspark.sql import functions as F

    from pipelines.drivers import event_time_ms_sql
    from windowing.spark.lake import delta_lake_io
    from windowing.spark import DeltaStore

    store = DeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path, job.quarantine_path)
    keys = list(job.spec.key_columns)
    notes: list[str] = []
    batches: list[BatchRow] = []
    if delta_lake_io.table_exists(spark, store.progress_path):
        wm = MIN_MS
        for p in (spark.read.format("delta").load(store.progress_path)
                  .select("batch_id", "watermark_ms", "processing_time_ms", "max_seen_ms").orderBy("batch_id")
                  .collect()):
            batches.append(BatchRow(p["batch_id"], wm, p["watermark_ms"], p["processing_time_ms"], p["max_seen_ms"]))
            wm = p["watermark_ms"]
    batches_t = tuple(batches)

    def in_range(ts):
        return ((ts >= F.lit(from_ms)) if from_ms is not None else F.lit(True)) & \
               ((ts < F.lit(to_ms)) if to_ms is not None else F.lit(True))

    def with_key(df):
        if key is None:
            return df
        text_key = F.concat_ws(", ", *[F.col(c).cast("string") for c in keys]) if keys else F.lit("(all)")
        return df.where(text_key == F.lit(key))

    rows: list[RowMark] = []
    excluded = None
    for kind, path in ((LATE_ROW, job.late_path), (QUARANTINED_ROW, job.quarantine_path)):
        if not path or not delta_lake_io.table_exists(spark, path):
            continue
        df = with_key(spark.read.format("delta").load(path))
        if "event_time_ms" not in df.columns:
            df = df.withColumn("event_time_ms", F.expr(event_time_ms_sql(job.spec.event_time_column,
                                                                          dict(df.dtypes)[job.spec.event_time_column])))
        df = df.where(in_range(F.col("event_time_ms")) | F.col("event_time_ms").isNull())
        for r in df.select(*keys, "event_time_ms", "batch_id", "reason").collect():
            rows.append(RowMark(key_text(r, keys), r["event_time_ms"], r["batch_id"], kind, r["reason"]))
        if job.event_id_column and job.event_id_column in df.columns:
            ids = df.select(job.event_id_column)
            excluded = ids if excluded is None else excluded.unionByName(ids)
    if delta_lake_io.table_exists(spark, job.source_path):
        raw = with_key(spark.read.format("delta").load(job.source_path))
        ts = F.expr(event_time_ms_sql(job.spec.event_time_column, dict(raw.dtypes)[job.spec.event_time_column]))
        raw = raw.select("*", ts.alias("__viz_ts"), F.col("_metadata.file_path").alias("__viz_file"))
        raw = raw.where(in_range(F.col("__viz_ts")) & F.col("__viz_ts").isNotNull())
        if excluded is not None:
            raw = raw.join(excluded.distinct(), job.event_id_column, "left_anti")
        else:
            notes.append("The job has no event_id column: late and quarantined rows are also drawn as input rows.")
        picked = raw.select(*keys, "__viz_ts", "__viz_file").limit(max_rows + 1).collect()
        if len(picked) > max_rows:
            notes.append(f"Only the first {max_rows} input rows are drawn.")
            picked = picked[:max_rows]
        commits = commit_times(job.source_path)
        arrivals = arrival_batches([commits.get(Path(r["__viz_file"]).name) for r in picked],
                                   [r["__viz_ts"] for r in picked], batches_t)
        unread = 0
        for r, b in zip(picked, arrivals):
            if b is None:
                unread += 1
                continue
            rows.append(RowMark(key_text(r, keys), r["__viz_ts"], b, EVENT))
        if unread:
            notes.append(f"{unread} raw row(s) were added after the last committed batch and are not drawn.")
    panes: list[PaneMark] = []
    if job.results_path and delta_lake_io.table_exists(spark, job.results_path):
        results = with_key(spark.read.format("delta").load(job.results_path))
        if from_ms is not None:
            results = results.where(F.col("window_end_ms").isNull() | (F.col("window_end_ms") > F.lit(from_ms)))
        if to_ms is not None:
            results = results.where(F.col("window_start_ms").isNull() | (F.col("window_start_ms") < F.lit(to_ms)))
        names = [n for n, _ in job.spec.aggregates] or [c for c in results.columns
                                                        if c not in PANE_COLUMNS and c not in keys]
        for r in results.collect():
            d = r.asDict()
            superseded = tuple((s["window_start_ms"], s["window_end_ms"]) for s in (d.get("supersedes") or []))
            panes.append(PaneMark(key_text(d, keys), d["window_start_ms"], d["window_end_ms"], d["batch_id"],
                                  d["timing"], d["pane_index"], bool(d["is_final"]), _values_text(d, names),
                                  superseded))
    panes.sort(key=lambda p: (p.key, p.batch_id, p.window_start_ms or 0, p.pane_index))
    return Timeline(job.name, batches_t, tuple(rows), tuple(panes), from_ms, to_ms, tuple(notes))
