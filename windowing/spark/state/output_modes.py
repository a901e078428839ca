"""Each output mode's Spark form: how a batch's panes reach the results table, and how they are counted.

The semantics of the modes are :mod:`windowing.core.sinks`'s (``append``, ``upsert``, ``final``);
here each is one object, chosen once per store (:func:`sink_mode`), that carries

* its write to Delta (:meth:`SinkMode.write_delta`) and to memory (:meth:`SinkMode.hold`), and
* its accounting of the panes a batch emitted (:meth:`SinkMode.results`,
  :meth:`SinkMode.results_written`): a mode whose write writes every pane counts the panes
  emitted from what the write reported; one that keeps only some counts them before the write.

The late and quarantine tables are appended whatever the mode (:data:`APPEND_MODE`).
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from windowing.core.sinks import OutputMode, output_mode
from windowing.core.spec import APPEND, FINAL, UPSERT
from windowing.spark.input.columns import SUPERSEDES, WE, WS
from windowing.spark.lake import delta_lake_io


@dataclass(frozen=True)
class OutputTable:
    """One output table of a store: where it is, its table properties, and whether a write may add
    columns (the late and quarantine rows carry the whole input row: when the source gains a column,
    the table gains it too instead of refusing the batch)."""

    name: str
    path: str
    properties: dict
    merge_schema: bool


def result_keys(panes: DataFrame) -> list[str]:
    """The key columns of a panes frame: the columns before ``window_start_ms``."""
    return panes.columns[:panes.columns.index(WS)]


def upsert_changes(panes: DataFrame) -> tuple[DataFrame, DataFrame]:
    """What an upsert sink does with a batch's panes: ``(rows to insert or replace, windows to delete)``.

    The latest pane (highest index) per (key, window) replaces the window's
    row; the windows that a pane ``supersedes`` are deleted, and a pane of a
    window that a later pane of the same batch superseded is not written.
    """
    keys = result_keys(panes)
    ident = [*keys, WS, WE]
    latest = (panes.withColumn("__rank", F.row_number().over(
        Window.partitionBy(*ident).orderBy(F.col("pane_index").desc()))).where("__rank = 1").drop("__rank"))
    if SUPERSEDES not in panes.columns:
        return latest, panes.select(*ident).where(F.lit(False))
    gone = (panes.select(*keys, F.explode(SUPERSEDES).alias("__w"))
            .select(*keys, F.col("__w." + WS).alias(WS), F.col("__w." + WE).alias(WE)).distinct())
    cond = None
    for c in ident:
        term = F.col(f"l.{c}").eqNullSafe(F.col(f"g.{c}"))
        cond = term if cond is None else cond & term
    latest = latest.alias("l").join(gone.alias("g"), cond, "left_anti")
    return latest, gone


class SinkMode:
    """An output mode on Spark: ``append``, the base, writes every pane by appending it."""

    def __init__(self, core: OutputMode):
        self.core = core

    @property
    def name(self) -> str:
        return self.core.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # The accounting of the panes a batch emitted (the executor's side of a results write).

    def results(self, panes: DataFrame, metrics, cached: list) -> tuple[DataFrame, int | None]:
        """The panes to hand to the results write and their count when known before it (None: the
        write counts them). A mode that writes every pane costs no job here."""
        return panes, None

    def results_written(self, panes: DataFrame, rows_written: int | None, metrics) -> None:
        """What the write reported: the rows it wrote (the panes emitted), or None (a replay found
        them written, or the commit has no count: count the panes again)."""
        metrics.panes_emitted = panes.count() if rows_written is None else rows_written

    # The write (the store's side).

    def write_delta(self, store, table: OutputTable, df: DataFrame, rows: int | None, batch_id: int) -> int | None:
        """Write a batch's rows to ``table`` once per (application id, batch id); see
        :meth:`windowing.spark.state.stores.DeltaStore.write_output` for ``rows`` and the result."""
        written = None
        if rows or rows is None:
            appended = delta_lake_io.append(df, table.path, store.app_id, batch_id, merge_schema=table.merge_schema,
                                            properties=table.properties)
            if rows is None and appended:
                written = delta_lake_io.appended_rows(store.spark, table.path, store.app_id, batch_id)
            store.output_ready(table)
        elif not store.is_output_ready(table):
            delta_lake_io.create_empty(store.spark, df.schema, table.path, properties=table.properties)  # readers find it
            store.output_ready(table)
        return written

    def hold(self, table: list[dict], written: list[dict], df: DataFrame) -> tuple[list[dict], int]:
        """The rows an in-memory table holds after a write of ``written`` (the rows of ``df``), and how
        many the write wrote."""
        return table + written, len(written)


class FinalMode(SinkMode):
    """``final``: only the final panes are written, so the panes emitted are counted before the write."""

    def results(self, panes: DataFrame, metrics, cached: list) -> tuple[DataFrame, int | None]:
        panes = panes.persist()
        cached.append(panes)
        metrics.panes_emitted = panes.count()
        return panes, metrics.panes_emitted

    def results_written(self, panes: DataFrame, rows_written: int | None, metrics) -> None:
        """Counted before the write."""

    def write_delta(self, store, table: OutputTable, df: DataFrame, rows: int | None, batch_id: int) -> int | None:
        return super().write_delta(store, table, df.where(F.col("is_final")), rows, batch_id)

    def hold(self, table: list[dict], written: list[dict], df: DataFrame) -> tuple[list[dict], int]:
        final = [r for r in written if r["is_final"]]
        return table + final, len(final)


class UpsertMode(SinkMode):
    """``upsert``: each batch's panes MERGEd on (key, window), the superseded windows deleted."""

    def write_delta(self, store, table: OutputTable, df: DataFrame, rows: int | None, batch_id: int) -> int | None:
        if not store.is_output_ready(table):
            delta_lake_io.create_empty(store.spark, df.schema, table.path, properties=table.properties)  # MERGE needs it
            store.output_ready(table)
        if not (rows or rows is None):
            return None
        # The panes feed both sides of the MERGE source (rows and superseded windows): computed once.
        df = df.persist()
        try:
            written = df.count() if rows is None else None
            if written != 0:          # a MERGE of nothing would still cost its Spark jobs
                upserts, deletes = upsert_changes(df)
                store.merge_output(table, upserts, deletes, [*result_keys(df), WS, WE], batch_id)
        finally:
            df.unpersist()
        return written

    def hold(self, table: list[dict], written: list[dict], df: DataFrame) -> tuple[list[dict], int]:
        keys = result_keys(df)
        ident = lambda r, ws, we: (tuple(r[k] for k in keys), ws, we)  # noqa: E731
        held = {ident(r, r[WS], r[WE]): r for r in table}
        for r in sorted(written, key=lambda r: r["pane_index"]):
            for w in r.get(SUPERSEDES) or ():
                held.pop(ident(r, w[WS], w[WE]), None)
            held[ident(r, r[WS], r[WE])] = r
        return list(held.values()), len(written)


_MODES = {APPEND: SinkMode, UPSERT: UpsertMode, FINAL: FinalMode}


def sink_mode(name: str | None) -> SinkMode | None:
    """The Spark form of the output mode ``name`` (None: not chosen yet).

    Raises:
        ValueError: for an unknown name, naming the valid ones.
    """
    if name is None:
        return None
    return _MODES[name](output_mode(name))


APPEND_MODE = sink_mode(APPEND)
"""The late and quarantine tables' mode, whatever the results' mode."""
