"""The differences between a stream's outputs and a replay's, for a range of batches, as a readable summary.

Panes are matched by identity: the key columns, the window bounds and the pane
index (a join's result rows or pairs: their identity columns, given as a
:class:`ResultIdentity`). A pane of one side only is *added* (the replay emitted it, the stream did
not) or *removed* (the stream emitted it, the replay did not); a pane of both
sides whose other columns differ (aggregates, timing, the batch that fired it,
the watermark) is *changed*. Late and quarantined rows are compared as whole
rows (a multiset each): rows only in the stream, rows only in the replay.
Only rows of batches ``from_batch`` to ``to_batch`` (their ``batch_id`` column)
take part, on both sides.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.drivers import format_epoch_ms
from windowing.spark.lake import delta_lake_io
from windowing.spark.input.columns import WE, WS
from windowing.spark.state.output_modes import result_keys

EXAMPLES_PER_KIND = 5
"""How many panes or rows of each kind of difference the summary shows."""
PANE_ID = "__pane"


@dataclass(frozen=True)
class RowsDiff:
    """Late or quarantined rows of the range: counts per side and some rows found on one side only."""

    table: str
    stream_rows: int
    replay_rows: int
    only_in_stream: int
    only_in_replay: int
    examples: list[tuple[str, dict]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.only_in_stream == 0 and self.only_in_replay == 0


@dataclass(frozen=True)
class ResultIdentity:
    """What identifies a results row when the stream's and the replay's tables are compared, and what the rows
    are called in the summary."""

    columns: tuple[str, ...] = ()
    """The identifying columns (empty: a window operator's key columns, window bounds and pane index)."""
    noun: str = "panes"


WINDOW_PANES = ResultIdentity()
"""A window operator's results: panes, identified by key, window and pane index."""


@dataclass(frozen=True)
class PanesDiff:
    """Panes of the range: counts per side, equal, added, changed and removed panes, and examples."""

    stream_panes: int
    replay_panes: int
    equal: int
    added: int
    changed: int
    removed: int
    examples: list[tuple[str, dict | None, dict | None]] = field(default_factory=list)
    """``(kind, stream's pane or None, replay's pane or None)``."""
    identity: ResultIdentity = WINDOW_PANES
    """What identifies a results row, and what the rows are called."""

    @property
    def empty(self) -> bool:
        return self.added == 0 and self.changed == 0 and self.removed == 0


@dataclass(frozen=True)
class ReplayDiff:
    """Stream versus replay over batches ``from_batch`` to ``to_batch``."""

    from_batch: int
    to_batch: int
    stream_spec: str
    replay_spec: str
    results: PanesDiff
    late: RowsDiff
    quarantine: RowsDiff

    @property
    def empty(self) -> bool:
        return self.results.empty and self.late.empty and self.quarantine.empty

    def as_dict(self) -> dict:
        """Counts only (for logs and Airflow task results)."""
        r = self.results
        return {"from_batch": self.from_batch, "to_batch": self.to_batch, "empty": self.empty,
                "results": {"stream": r.stream_panes, "replay": r.replay_panes, "equal": r.equal,
                            "added": r.added, "changed": r.changed, "removed": r.removed},
                **{d.table: {"stream": d.stream_rows, "replay": d.replay_rows, "only_in_stream": d.only_in_stream,
                             "only_in_replay": d.only_in_replay} for d in (self.late, self.quarantine)}}

    def summary(self) -> str:
        """The differences as text: one line per table, then example panes and rows."""
        spec = (f"spec {self.replay_spec}" if self.replay_spec == self.stream_spec
                else f"spec {self.replay_spec} (the stream's: {self.stream_spec})")
        lines = [f"replay versus stream, batches {self.from_batch}..{self.to_batch}, {spec}"]
        r = self.results
        lines.append(f"results: {r.stream_panes} {r.identity.noun} in the stream, {r.replay_panes} in the replay: "
                     f"{r.equal} equal, {r.added} added, {r.changed} changed, {r.removed} removed")
        for kind, before, after in r.examples:
            lines.append(f"  {kind:<8} {_pane_text(kind, before, after, r.identity.columns)}")
        for rows in (self.late, self.quarantine):
            lines.append(f"{rows.table}: {rows.stream_rows} rows in the stream, {rows.replay_rows} in the replay: "
                         + ("no differences" if rows.empty else
                            f"{rows.only_in_stream} only in the stream, {rows.only_in_replay} only in the replay"))
            for side, row in rows.examples:
                lines.append(f"  only in the {side}: {_values(row)}")
        if self.empty:
            lines.append(f"no differences: the replay emitted the stream's {r.identity.noun}, late rows and "
                         f"quarantined rows")
        return "\n".join(lines)


def compare(spark: SparkSession, stream_paths: dict[str, str], replay_paths: dict[str, str], from_batch: int,
            to_batch: int, stream_spec: str, replay_spec: str, identity: ResultIdentity = WINDOW_PANES) -> ReplayDiff:
    """Compare the ``results``, ``late`` and ``quarantine`` tables of the stream and the replay over the range.

    A table missing on one side counts as empty there. ``identity``: what identifies a results row
    (default: a window operator's panes).
    """
    def rows(path: str) -> DataFrame | None:
        if not delta_lake_io.table_exists(spark, path):
            return None
        df = spark.read.format("delta").load(path)
        return df.where((F.col("batch_id") >= from_batch) & (F.col("batch_id") <= to_batch))

    results = _panes(*(rows(p["results"]) for p in (stream_paths, replay_paths)), identity=identity)
    late = _rows("late", *(rows(p["late"]) for p in (stream_paths, replay_paths)))
    quarantine = _rows("quarantine", *(rows(p["quarantine"]) for p in (stream_paths, replay_paths)))
    return ReplayDiff(from_batch, to_batch, stream_spec, replay_spec, results, late, quarantine)


def _aligned(stream: DataFrame | None, replay: DataFrame | None) -> tuple[DataFrame, DataFrame] | None:
    """Both sides on the columns they share, in the stream's order; an absent side as no rows."""
    if stream is None and replay is None:
        return None
    stream = stream if stream is not None else replay.limit(0)
    replay = replay if replay is not None else stream.limit(0)
    common = [c for c in stream.columns if c in replay.columns]
    return stream.select(*common), replay.select(*common)


def _rows(table: str, stream: DataFrame | None, replay: DataFrame | None) -> RowsDiff:
    aligned = _aligned(stream, replay)
    if aligned is None:
        return RowsDiff(table, 0, 0, 0, 0)
    stream, replay = aligned
    only_stream, only_replay = stream.exceptAll(replay), replay.exceptAll(stream)
    examples = ([("stream", r.asDict()) for r in only_stream.limit(EXAMPLES_PER_KIND).collect()]
                + [("replay", r.asDict()) for r in only_replay.limit(EXAMPLES_PER_KIND).collect()])
    return RowsDiff(table, stream.count(), replay.count(), only_stream.count(), only_replay.count(), examples)


_IN_STREAM, _IN_REPLAY = "__in_stream", "__in_replay"


def _panes(stream: DataFrame | None, replay: DataFrame | None, identity: ResultIdentity = WINDOW_PANES) -> PanesDiff:
    aligned = _aligned(stream, replay)
    if aligned is None:
        return PanesDiff(0, 0, 0, 0, 0, 0, identity=identity)
    stream, replay = aligned
    columns = list(identity.columns) or [*result_keys(stream), WS, WE, "pane_index"]
    pane_id = F.to_json(F.struct(*columns))   # null-safe: a null key is part of the text
    only_stream = stream.exceptAll(replay).withColumn(PANE_ID, pane_id).persist()
    only_replay = replay.exceptAll(stream).withColumn(PANE_ID, pane_id).persist()
    try:
        ids_stream = only_stream.select(PANE_ID).distinct()
        ids_replay = only_replay.select(PANE_ID).distinct()
        changed_ids = ids_stream.join(ids_replay, PANE_ID)
        removed_ids = ids_stream.join(ids_replay, PANE_ID, "left_anti")
        added_ids = ids_replay.join(ids_stream, PANE_ID, "left_anti")
        # The three kinds counted in one pass over the panes that differ.
        sides = (ids_stream.withColumn(_IN_STREAM, F.lit(True))
                 .join(ids_replay.withColumn(_IN_REPLAY, F.lit(True)), PANE_ID, "full"))
        both = F.col(_IN_STREAM).isNotNull() & F.col(_IN_REPLAY).isNotNull()
        kinds = sides.agg(F.count(F.when(both, 1)).alias("changed"),
                          F.count(F.when(F.col(_IN_REPLAY).isNull(), 1)).alias("removed"),
                          F.count(F.when(F.col(_IN_STREAM).isNull(), 1)).alias("added")).first()
        changed, removed, added = kinds["changed"], kinds["removed"], kinds["added"]
        stream_count, replay_count = stream.count(), replay.count()
        examples: list[tuple[str, dict | None, dict | None]] = []
        for kind, ids in (("added", added_ids), ("changed", changed_ids), ("removed", removed_ids)):
            chosen = [r[PANE_ID] for r in ids.orderBy(PANE_ID).limit(EXAMPLES_PER_KIND).collect()]
            before = _by_id(only_stream, chosen)
            after = _by_id(only_replay, chosen)
            examples += [(kind, before.get(i), after.get(i)) for i in chosen]
        return PanesDiff(stream_count, replay_count, stream_count - only_stream.count(), added, changed, removed,
                         examples, identity)
    finally:
        only_stream.unpersist()
        only_replay.unpersist()


def _by_id(rows: DataFrame, ids: list[str]) -> dict[str, dict]:
    if not ids:
        return {}
    return {r[PANE_ID]: {k: v for k, v in r.asDict().items() if k != PANE_ID}
            for r in rows.where(F.col(PANE_ID).isin(ids)).collect()}


def _pane_text(kind: str, before: dict | None, after: dict | None, identity: tuple[str, ...] = ()) -> str:
    pane = after or before or {}
    keys = list(pane)[:_key_count(pane)]
    if WS in pane and WE in pane:
        head = (" ".join(f"{k}={pane[k]}" for k in keys) + f" window [{format_epoch_ms(pane[WS])}, "
                f"{format_epoch_ms(pane[WE])}) pane {pane['pane_index']}")
        named = (*keys, WS, WE, "pane_index")
    else:   # an interval join's pair: its identity columns as they are
        head, named = _values({k: pane.get(k) for k in identity}), identity
    if kind == "changed" and before and after:
        changes = [f"{k} {before[k]} -> {after[k]}" for k in after if k in before and before[k] != after[k]]
        return f"{head}: {', '.join(changes)}"
    shown = {k: v for k, v in pane.items() if k not in named}
    return f"{head}: {_values(shown)}"


def _key_count(pane: dict) -> int:
    """How many key columns a pane dict has: those before ``window_start_ms``."""
    return list(pane).index(WS) if WS in pane else 0


def _values(row: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in row.items())
