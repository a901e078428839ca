"""The window state's rows at one committed position, kept in the driver between batches.

A stream runs batch after batch in one process, and each batch reads the
window state pinned to the version the last committed batch recorded: almost
always the version this process wrote a moment before. Reading that version
back from Delta builds a snapshot of it (log replay and file listing: several
Spark jobs a batch). While the state is small (at most
:data:`MAX_CACHED_STATE_ROWS` rows) the store keeps the rows instead, with the
position they equal, and a batch that pins that position reads them as a local
relation; Delta stays the record (every batch's changes reach the windows table
or its own progress row, :mod:`windowing.spark.state.log`, and a new process, a
replay or another writer's commit reads Delta).

The rows equal the state at their pin (:class:`windowing.spark.state.log.StatePin`:
a table version, plus the changes committed batches logged in their progress
rows) by construction: they are a read of that state, the rows of the state
before with one batch's logged changes applied (kept for the pin of the
progress row this writer commits), or the rows of the version before with one
batch's changes applied, kept only when that batch's own write is the one
commit between the two versions (:meth:`CachedState.after`).

Users build a new operator (and store) per run; what a store knew at one position of the
progress table is kept for the next store of the same operator in the process
(:class:`KeptProgress`, :func:`keep`, :func:`recall`), taken only while the progress table is
still at that position (same Delta table id and version). The driver holds at most one entry
per operator, so at most :data:`MAX_CACHED_STATE_ROWS` state rows per operator.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from windowing.spark.input.columns import DELETE_FLAG
from windowing.spark.state.log import StatePin

MAX_CACHED_STATE_ROWS = 50_000
"""Largest window state (rows) kept in the driver; a larger state is read from Delta each batch."""


def _changed_keys(keys_and_deletes) -> tuple[set, set]:
    """The keys a change set touches and those it deletes, from ``(key tuple, is delete)`` pairs."""
    changed, deleted = set(), set()
    for key, delete in keys_and_deletes:
        changed.add(key)
        if delete:
            deleted.add(key)
    return changed, deleted


def apply_changes(rows, names: list[str], changes: list, keys: list[str]) -> tuple[list, int]:
    """State ``rows`` (tuples in ``names`` order) after a change set, as a MERGE of it would leave
    them, and how many rows its deletes removed.

    ``changes`` are rows of the table's columns plus :data:`DELETE_FLAG`: a change replaces the
    row with its key (null-safe), a delete removes it, the others are inserted.
    """
    at = [names.index(k) for k in keys]
    changed, deleted_keys = _changed_keys((tuple(c[k] for k in keys), c[DELETE_FLAG]) for c in changes)
    upserts = [tuple(c[n] for n in names) for c in changes if not c[DELETE_FLAG]]
    kept, deleted = [], 0
    for row in rows:
        key = tuple(row[i] for i in at)
        if key in changed:
            deleted += key in deleted_keys
        else:
            kept.append(row)
    return kept + upserts, deleted


def apply_table_changes(rows: pa.Table, changes: pa.Table, keys: list[str]) -> tuple[pa.Table, int]:
    """:func:`apply_changes` on Arrow tables: ``rows`` (the state's columns) after ``changes``
    (those columns plus :data:`DELETE_FLAG`, and any others, ignored), and how many rows the
    deletes removed. Keys compare null-safe, as Python values; the other columns stay columnar."""
    def key_tuples(table: pa.Table) -> list[tuple]:
        return list(zip(*(table.column(k).to_pylist() for k in keys)))
    deleting = changes.column(DELETE_FLAG)
    changed, deleted_keys = _changed_keys(zip(key_tuples(changes), deleting.to_pylist()))
    state_keys = key_tuples(rows)
    kept = pa.array([key not in changed for key in state_keys], type=pa.bool_())
    deleted = sum(key in deleted_keys for key in state_keys)
    upserts = changes.filter(pc.invert(deleting)).select(rows.column_names).cast(rows.schema)
    return pa.concat_tables([rows.filter(kept), upserts]), deleted


def net_table_changes(changes: pa.Table, keys: list[str], batch_column: str) -> pa.Table:
    """Of change rows logged by several batches (``batch_column``: the batch of each), the last
    change of each key by batch: what MERGEs of the batches' change sets in batch order leave."""
    batches = changes.column(batch_column).to_pylist()
    newest: dict[tuple, int] = {}
    for i, key in enumerate(zip(*(changes.column(k).to_pylist() for k in keys))):
        if key not in newest or batches[i] >= batches[newest[key]]:
            newest[key] = i
    return changes.take(sorted(newest.values()))


@dataclass(frozen=True)
class Changes:
    """A batch's state changes applied to cached rows: what the write needs to know."""

    rows: pa.Table
    """Every state row after the changes (the table's schema order)."""
    deleted: int
    """State rows the changes deleted (deletes that matched a row)."""
    touched: frozenset
    """The ``end_bucket`` values of every changed or deleted row."""


@dataclass(frozen=True)
class CachedState:
    """The window state's rows at ``pin``: an Arrow table of ``schema``'s columns, as
    :meth:`DataFrame.toArrow` gives them (no Python object per row: a state of tens of thousands
    of rows moves between the JVM and the driver as Arrow batches).

    ``logged_rows`` and ``logged_buckets``: how many change rows the pin's logged batches hold
    and the ``end_bucket`` values they touched (what a compaction rewrites besides a batch's own).
    """

    pin: StatePin
    schema: T.StructType
    rows: pa.Table
    logged_rows: int = 0
    logged_buckets: frozenset = frozenset()

    def apply(self, changes: pa.Table, keys: list[str], bucket_column: str) -> Changes:
        """The rows after a change set (:func:`apply_table_changes`) and the buckets it touched."""
        rows, deleted = apply_table_changes(self.rows, changes, keys)
        # the bucket is part of the key: a change touches its own bucket only
        touched = frozenset(pc.unique(changes.column(bucket_column)).to_pylist()) if changes.num_rows else frozenset()
        return Changes(rows, deleted, touched)

    def after(self, changes: Changes, version_before: int, version_after: int, wrote: bool) -> "CachedState | None":
        """The cache for the version a batch's write produced (the logged changes folded in), or
        None when it cannot be known.

        Known only when this batch's write ran (not skipped as landed), the table was at this
        cache's version before it, and the write is the one commit after it.
        """
        if wrote and version_before == self.pin.version and version_after == self.pin.version + 1:
            return CachedState(StatePin(version_after), self.schema, changes.rows)
        return None

    def logged(self, changes: Changes, pin: StatePin, change_rows: int) -> "CachedState":
        """The cache after a batch logged ``change_rows`` changes (``pin``: the state its progress row records)."""
        return CachedState(pin, self.schema, changes.rows, self.logged_rows + change_rows,
                           self.logged_buckets | changes.touched)


@dataclass(frozen=True)
class KeptProgress:
    """What a store of one operator knew at one position of its progress table, kept for the next
    store of that operator in this process (the next ``run_stream`` call, the next scheduled run).

    ``table`` is the progress table's identity at that position: Delta's table id (a table
    deleted and created again, a state reset by another process, has another) and its version.
    The entry holds only when the table is still at that position: another process's commit
    moves the version and makes the entry useless, never wrong.
    """

    table: tuple[str, int]
    last: dict | None
    """The last committed progress row at that position (its logged changes left out)."""
    cached: CachedState | None
    """The window state's rows at the pin of ``last``, when they were kept in the driver."""
    cache_windows: bool
    """False once the state was found too large to keep in the driver."""


_KEPT: dict[str, KeptProgress] = {}


def keep(progress_path: str, kept: KeptProgress) -> None:
    """Remember what a store knew at ``kept.table`` for the next store of ``progress_path`` in this process.

    At most one entry per operator (the newest), so the driver holds at most
    :data:`MAX_CACHED_STATE_ROWS` state rows per operator this process ran.
    """
    _KEPT[progress_path] = kept


def recall(progress_path: str, table: tuple[str, int] | None) -> KeptProgress | None:
    """The entry of ``progress_path`` if the progress table is still at its position (``table``)."""
    kept = _KEPT.get(progress_path)
    if kept is None or table is None or kept.table != table:
        return None
    return kept


def forget(progress_path: str) -> None:
    _KEPT.pop(progress_path, None)


def forget_all() -> None:
    """Forget every operator's entry, as a new process starts (tests that stand for one)."""
    _KEPT.clear()
