"""Where an operator keeps its state and writes its outputs.

The results table follows the spec's output mode (:mod:`windowing.core.sinks`
states the semantics, :mod:`windowing.spark.state.output_modes` holds each mode's
write): ``append`` appends every pane; ``final`` appends only final panes; ``upsert``
MERGEs each batch's panes on (key, window), keeping the latest pane per window, and
deletes the rows of the sessions a pane ``supersedes`` (merged away), so no stale
fragment stays. Every write lands once
per (operator, batch) (``delta_lake_io``: a marker in the commit, checked before
writing), so a replayed batch is not applied twice.

:class:`DeltaStore` is the product: Delta tables with the idempotent commit
protocol (see operator/protocol.py). :class:`MemoryStore` keeps the same tables as
in-memory rows; the semantics transcripts use it to run the very same plans
many times quickly (Delta adds no semantics; its protocol has tests of its own).
"""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from delta.exceptions import (ConcurrentAppendException, ConcurrentWriteException, MetadataChangedException,
                              ProtocolChangedException)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.spark.lake import delta_lake_io
from windowing.spark.lake.delta_lake_io import EmptyTable
from windowing.spark.state import cache as state_cache
from windowing.spark.state import log as state_log
from windowing.spark.lake.claims import ConcurrentWriterError, app_id, open_claim_log, release
from windowing.spark.input.columns import DELETE_FLAG, END_BUCKET, WE, WS
from windowing.spark.runtime.local_frames import arrow_frame, local_frame
from windowing.spark.state.cache import (MAX_CACHED_STATE_ROWS, CachedState, apply_changes, apply_table_changes,
                                         net_table_changes)
from windowing.spark.state.log import LOG_FIELDS, STATE_CHANGES, StatePin
from windowing.spark.state.output_modes import APPEND_MODE, OutputTable, SinkMode, sink_mode

PROGRESS_SCHEMA = T.StructType([
    T.StructField("batch_id", T.LongType(), False),
    T.StructField("watermark_ms", T.LongType(), False),
    T.StructField("max_seen_ms", T.LongType(), True),
    T.StructField("processing_time_ms", T.LongType(), True),
    T.StructField("windows_version", T.LongType(), True),
    T.StructField("buffers_version", T.LongType(), True),
    T.StructField("spec_fingerprint", T.StringType(), False),
    T.StructField("spec_description", T.StringType(), False),
    T.StructField("input_schema", T.StringType(), False),
    T.StructField("writer_id", T.StringType(), False),
    T.StructField("metrics", T.StringType(), False),
    T.StructField("committed_at", T.TimestampType(), False),
    # Added later, nullable: rows written before it read as null (windowing.spark.input.batch_time).
    T.StructField("time_state", T.StringType(), True),
    # Which driver run wrote the batch (JSON, see DeltaStore.run); null when not told.
    T.StructField("run", T.StringType(), True),
    # The source offsets the batch read (JSON, see DeltaStore.source_offsets); null when not told.
    T.StructField("source_offsets", T.StringType(), True),
    # The window state changes logged in the row (windowing.spark.state.log); null when none.
    *LOG_FIELDS,
])
PROGRESS_PROPERTIES = delta_lake_io.statistics_properties(("batch_id",))
"""File statistics of the progress table: only ``batch_id`` (a batch's row); statistics of
all thirteen columns cost each commit 0.05-0.1 CPU s of code generation and skip nothing."""
RESULTS_PROPERTIES = delta_lake_io.statistics_properties((WS, WE, "batch_id"))
"""File statistics of the results table: only where they let a reader skip files, the window
bounds (a range of windows, reprocessing) and the batch id (a batch's panes). Not the keys: every
write is hash-partitioned by key and window, so each file spans nearly every key and their min/max
would skip nothing; computing them cost 6-12% of a one-pass backfill (string comparisons on every
row). A table Z-ordered by key needs key statistics: set the property (README "Outputs") before
OPTIMIZE ZORDER BY."""
SET_ASIDE_PROPERTIES = {"delta.dataSkippingNumIndexedCols": "-1"}
"""File statistics of the late and quarantine tables: every column. Their rows carry the whole
input row first and ``batch_id`` last; with Delta's default (the first 32 columns) an input of
more than 28 columns (30 for quarantine) left ``batch_id`` without statistics, and a batch's late
or quarantine check read every file the table had gained. The tables hold only late and bad rows:
statistics on each column cost little."""


_DELETED = "__deleted"
_CHANGE_JSON = "__change_json"


@dataclass(frozen=True)
class WindowsWrite:
    """What a batch's window-state write gives its progress row: the windows table's version, and
    the first logged batch and this batch's logged changes (JSON) when it logged instead of writing
    (:mod:`windowing.spark.state.log`)."""

    version: int | None
    logged_from: int | None = None
    state_changes: str | None = None


class StateWrite(enum.Enum):
    """How a batch's window state changes reach the windows table (chosen once per operator).

    ``REWRITE_BUCKETS``: windows that end (time and session windows). The
    ``end_bucket`` partitions a batch touched are rewritten whole from the
    state the batch read (its pinned version) with the batch's changes applied:
    one write (``replaceWhere`` on the partitions), no join against the table.
    A batch touches the partitions of the windows it fills or fires, which
    hold a few window sizes' worth of windows, not the whole state.

    ``MERGE``: windows that never end (global windows, count windows) all
    share one partition, the whole state: a MERGE rewrites only what changed.
    """

    REWRITE_BUCKETS = "rewrite_buckets"
    MERGE = "merge"


class SpecMismatchError(RuntimeError):
    """The state was written by a different window spec."""


def delta_store(spark: SparkSession, spec, operator_id: str, state_root: str, results_path: str | None = None,
                late_path: str | None = None, quarantine_path: str | None = None) -> "DeltaStore":
    """The :class:`DeltaStore` of an operator, in the spec's output mode; refuses a bad operator id."""
    if not operator_id or not operator_id.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"operator_id {operator_id!r} must be letters, digits, '-' or '_'")
    return DeltaStore(spark, operator_id, state_root, results_path, late_path, quarantine_path,
                      output_mode=spec.output_mode)


def check_fingerprint(store, spec, fingerprint: str | None = None) -> None:
    """Refuse to resume state that another spec wrote (naming both specs and the ways out).

    ``fingerprint``: what this operator records for ``spec`` (default ``spec.fingerprint()``;
    an operator whose state layout depends on its plan passes its own).
    """
    last = store.last_progress()
    fingerprint = fingerprint or spec.fingerprint()
    if last and last["spec_fingerprint"] != fingerprint:
        raise SpecMismatchError(
            f"operator {store.operator_id!r}: its state was written by spec "
            f"{last['spec_fingerprint']} ({last['spec_description']}); this job's spec is "
            f"{fingerprint} ({spec.describe()}). Resume with the original spec, use a new "
            f"operator id, or pass reset_state=True (CLI: --reset-state) to discard the state.")


def merge_source(upserts: DataFrame, deletes: DataFrame, schema: T.StructType) -> DataFrame:
    """One change set for a MERGE: ``upserts`` rows and ``deletes`` keys (other columns null), flagged ``__delete``."""
    present = set(deletes.columns)
    missing = {f.name: delta_lake_io.cast_to(F.lit(None), f.dataType) for f in schema.fields if f.name not in present}
    if missing:
        deletes = deletes.withColumns(missing)
    return (delta_lake_io.conform(upserts, schema).withColumn(DELETE_FLAG, F.lit(False))
            .unionByName(delta_lake_io.conform(deletes, schema).withColumn(DELETE_FLAG, F.lit(True))))


def bind_output_mode(store, mode: str) -> None:
    """Give ``store`` the spec's output mode, or refuse a store built for another one."""
    if store.mode is None:
        store.mode = sink_mode(mode)
    elif store.mode.name != mode:
        raise ValueError(f"the store writes output mode {store.mode.name!r} but the spec says "
                         f"{mode!r}; give the store the spec's mode")


class _OutputModeOwner:
    """A store's output mode: chosen once, from the constructor or the operator's spec."""

    mode: SinkMode | None

    @property
    def output_mode(self) -> str | None:
        """The name of the results table's output mode (None: not chosen yet)."""
        return None if self.mode is None else self.mode.name

    def sink_modes(self) -> dict[str, SinkMode]:
        """Each output's mode: the results follow the store's (``append`` until chosen); the late and
        quarantine rows are appended."""
        return {"results": self.mode or APPEND_MODE, "late": APPEND_MODE, "quarantine": APPEND_MODE}

    def write_set_aside(self, outputs: dict, batch_id: int) -> None:
        """Write a batch's set-aside rows: ``outputs`` maps ``late`` and ``quarantine`` to their
        :class:`windowing.spark.state.batch_work.Output`, each written as :meth:`write_output` does."""
        for kind, output in outputs.items():
            self.write_output(kind, output.frame, output.rows, batch_id)


class DeltaStore(_OutputModeOwner):
    """State and outputs of one operator as Delta tables.

    State under ``state_root/operator_id/{windows,buffers,progress,claims}``; outputs
    default to ``state_root/operator_id/{results,late,quarantine}``.

    Writers: a batch is claimed (:meth:`claim`, :mod:`windowing.spark.lake.claims`)
    before its first write; the outputs' write markers carry the operator's
    generation (:attr:`app_id`), which a :meth:`reset` advances.
    """

    def __init__(self, spark: SparkSession, operator_id: str, state_root: str, results_path: str | None = None,
                 late_path: str | None = None, quarantine_path: str | None = None, output_mode: str | None = None):
        self.spark, self.operator_id = spark, operator_id
        self.mode = sink_mode(output_mode)   # None: the operator sets its spec's mode
        base = f"{delta_lake_io.absolute(state_root).rstrip('/')}/{operator_id}"
        self.windows_path, self.buffers_path, self.progress_path = (
            f"{base}/windows", f"{base}/buffers", f"{base}/progress")
        self.results_path = delta_lake_io.absolute(results_path or f"{base}/results")
        self.late_path = delta_lake_io.absolute(late_path or f"{base}/late")
        self.quarantine_path = delta_lake_io.absolute(quarantine_path or f"{base}/quarantine")
        self._last: dict | None = None
        self._loaded = False
        self._tables_ready = False
        self._outputs_ready: set[str] = set()
        self._progress_version: int | None = None
        self._progress_table: tuple[str, int] | None = None
        """The progress table's identity (:func:`delta_lake_io.table_identity`) when :attr:`_last` was read."""
        self.windows_deleted: int | None = None
        """State rows deleted by the last :meth:`merge_windows` (None: unknown, count them)."""
        self.claims = open_claim_log(spark, operator_id, f"{base}/claims")   # files or a Delta table: claim_log_kind
        self._cached: CachedState | None = None
        """The windows table's rows at one version, while the state is small (:mod:`windowing.spark.state.cache`)."""
        self._cache_windows = True
        """False once the state was found too large to keep in the driver."""
        self._writer_id: str | None = None
        """The writer of the batch this store claimed last (the state it logs is pinned to its progress row)."""
        self._generation: int | None = None
        self.run: str | None = None
        """What the driver records in each progress row's ``run`` column (e.g. a backfill's range)."""
        self.source_offsets: str | None = None
        """What the driver records in the next progress row's ``source_offsets`` column: the input
        the batch read (a stream: its checkpoint's offsets, :mod:`pipelines.stream_offsets`)."""

    @property
    def app_id(self) -> str:
        """The application id of the outputs' write markers: the operator id and its generation."""
        if self._generation is None:
            self._generation, _ = self.claims.read()
        return app_id(self.operator_id, self._generation)

    def claim(self, batch_id: int, writer_id: str) -> None:
        """Make ``writer_id`` the one writer of ``batch_id`` before it writes anything (see
        :mod:`windowing.spark.lake.claims`); raises :class:`ConcurrentWriterError` if another run has it."""
        def committed() -> bool:
            self._loaded = False
            last = self.last_progress()
            return last is not None and last["batch_id"] >= batch_id
        self._generation = self.claims.claim(batch_id, writer_id, committed)
        self._writer_id = writer_id
        # Another writer may have committed batches since this store read its progress.
        if self._loaded and self._progress_version != self._current_progress_version() and committed():
            release(writer_id)
            raise ConcurrentWriterError(
                f"operator {self.operator_id!r}: batch {batch_id} was already committed by another writer; "
                f"this writer ({writer_id}) wrote nothing of it. Two runs must not write one operator at the "
                f"same time.")

    def _current_progress_version(self) -> int | None:
        if not delta_lake_io.table_exists(self.spark, self.progress_path):
            return None
        return delta_lake_io.latest_version(self.spark, self.progress_path)

    @staticmethod
    def release(writer_id: str) -> None:
        """``writer_id`` left its batch (committed or failed): a later run may take its claim over."""
        release(writer_id)

    def reset(self) -> None:
        """Discard the state (windows, buffers, progress, seen ids, keyed state) and start a new generation.

        The outputs stay (they may be user-named tables shared with other runs); what
        the new generation recomputes is written to them again, never skipped as
        written by the discarded state's batches.
        """
        base = self.windows_path.rsplit("/", 1)[0]
        seen_ids_path = base + "/seen_ids"         # windowing.spark.operator.dedup
        keyed_state_path = base + "/keyed_state"   # windowing.spark.keyed.state: the per-key path's state
        for path in (self.windows_path, self.buffers_path, self.progress_path, seen_ids_path, keyed_state_path):
            delta_lake_io.delete_folder(self.spark, path)
        self._last, self._loaded, self._tables_ready = None, False, False
        self._cached, self._cache_windows = None, True
        state_cache.forget(self.progress_path)
        self._generation = self.claims.new_generation()

    def last_progress(self) -> dict | None:
        """The progress row of the last committed batch (read once, then kept).

        What another store of this operator in this process knew at the progress table's current
        version is taken instead of a read (:func:`state_cache.recall`: the last row, and the
        window state's rows when kept in the driver); another process's commit since then moves
        the version, and the table is read.
        """
        if not self._loaded:
            self._last = None
            table = self._progress_table = delta_lake_io.table_identity(self.spark, self.progress_path)
            kept = state_cache.recall(self.progress_path, table)
            if kept is not None:
                self._progress_version = table[1]
                self._last = dict(kept.last) if kept.last is not None else None
                self._cached = kept.cached or self._cached
                self._cache_windows = self._cache_windows and kept.cache_windows
            else:
                self._progress_version = table[1] if table is not None else self._current_progress_version()
                if self._progress_version is not None:
                    self._last = self._read_last_progress()
            self._loaded = True
            self._keep()
        return self._last

    def _read_last_progress(self) -> dict | None:
        """The newest batch's progress row read from Delta: from the one file its commit added when
        the log tells it plainly (:func:`delta_lake_io.newest_batch_row`: one Spark job), else through
        a read of the table (its log replayed: a dozen jobs in a new process)."""
        newest = delta_lake_io.newest_batch_row(self.spark, self.progress_path, self.operator_id, [STATE_CHANGES])
        if newest is not None:
            return newest.asDict()
        progress = self.spark.read.format("delta").load(self.progress_path).drop(STATE_CHANGES)
        return self._committed(delta_lake_io.newest_rows(progress, "batch_id"))

    def _keep(self) -> None:
        """Leave what this store knows at :attr:`_progress_table` to the next store of the operator."""
        if self._progress_table is not None:
            state_cache.keep(self.progress_path, state_cache.KeptProgress(
                self._progress_table, self._last, self._cached, self._cache_windows))

    def _committed(self, rows: list) -> dict | None:
        """The progress row of the newest batch among ``rows`` (newest batch first).

        Two rows of one batch remain only when a writer that lost a race (see
        :meth:`commit_progress`) stopped before withdrawing its row: the row of
        the batch's first commit in the log counts (the earliest
        ``committed_at`` if the log no longer tells).
        """
        rows = [r.asDict() for r in rows if r["batch_id"] == rows[0]["batch_id"]] if rows else []
        if len(rows) > 1:
            first = delta_lake_io.first_writer(self.spark, self.progress_path, self.operator_id, rows[0]["batch_id"], -1)
            rows = [r for r in rows if r["writer_id"] == first] or sorted(rows, key=lambda r: r["committed_at"])
        return rows[0] if rows else None

    def ensure_tables(self, windows_schema, buffers_schema) -> None:
        """Create the state tables a DataFrame plan uses (once per store); a store that has not read
        the window state yet reads the last committed state now (kept in the driver when small), so
        that :attr:`state_in_driver` tells the first batch of a process whether it is small."""
        if self._tables_ready:
            return
        tables = [EmptyTable(windows_schema, self.windows_path, [END_BUCKET]),
                  EmptyTable(PROGRESS_SCHEMA, self.progress_path, properties=PROGRESS_PROPERTIES)]
        if buffers_schema is not None:
            tables.append(EmptyTable(buffers_schema, self.buffers_path))
        delta_lake_io.create_empty_tables(self.spark, tables)
        self._tables_ready = True
        last = self.last_progress()
        if self._cached is None and self._cache_windows and last is not None \
                and last.get("windows_version") is not None:
            self.read_windows(state_log.pin_of(last, last["windows_version"]))

    def start_versions(self, last: dict | None, buffers: bool) -> tuple[StatePin, int | None]:
        """Where a batch reads ``windows`` (a :class:`StatePin`: a version and the changes logged
        since) and the version of ``buffers`` (if ``buffers``), fixed at its start (after
        :meth:`ensure_tables`).

        Those the last committed batch recorded; for a table that no committed
        batch recorded (the first batch, or a table created after the last
        commit) its version before any batch's commit
        (:func:`delta_lake_io.version_before_marks`): never what a crashed attempt
        of this batch merged, never what this batch merges.
        """
        def pinned(recorded: int | None, path: str) -> int | None:
            if recorded is not None:
                return recorded
            if not delta_lake_io.table_exists(self.spark, path):
                return None
            return delta_lake_io.version_before_marks(self.spark, path, self.operator_id)
        last = last or {}
        return (state_log.pin_of(last, pinned(last.get("windows_version"), self.windows_path)),
                pinned(last.get("buffers_version"), self.buffers_path) if buffers else None)

    @property
    def state_in_driver(self) -> bool:
        """Whether the window state is kept in the driver (small; see :mod:`windowing.spark.state.cache`)."""
        return self._cached is not None

    def read_windows(self, pin: StatePin) -> DataFrame:
        """The window state at ``pin``: the rows kept in the driver when they are that state, else
        read from Delta, logged changes folded in (and kept, when the state is small; see
        :mod:`windowing.spark.state.cache`)."""
        cached = self._cached
        if cached is not None and cached.pin == pin:
            return arrow_frame(self.spark, cached.rows, cached.schema)
        if pin.version is None or not self._cache_windows:
            return state_log.read_state(self.spark, self.windows_path, self.progress_path, pin, self.operator_id)
        state = self._read_small_state(pin)
        if state is None:
            self._cache_windows, self._cached = False, None
            self._keep()
            return state_log.read_state(self.spark, self.windows_path, self.progress_path, pin, self.operator_id)
        self._cached = state
        self._keep()
        return arrow_frame(self.spark, state.rows, state.schema)

    def _read_small_state(self, pin: StatePin) -> CachedState | None:
        """The window state at ``pin`` read into the driver, or None when it holds more than
        :data:`MAX_CACHED_STATE_ROWS` rows.

        The table's rows at the pinned version (none, known without a read, for a table as
        created), then the logged changes read as rows and folded in here: the newest change of
        each key replaces or deletes its row.
        """
        schema = delta_lake_io.schema_if_empty(self.spark, self.windows_path, pin.version)
        if schema is not None:
            rows = empty_arrow_table(self.spark, schema)
        else:
            table = delta_lake_io.read_as_of(self.spark, self.windows_path, pin.version)
            schema, rows = table.schema, table.limit(MAX_CACHED_STATE_ROWS + 1).toArrow()
            if rows.num_rows > MAX_CACHED_STATE_ROWS:
                return None
        if not pin.logs:
            return CachedState(pin, schema, rows)
        changes = state_log.logged_changes(self.spark, self.progress_path, pin, schema, self.operator_id).toArrow()
        keys = state_log.state_keys(schema)
        rows, _ = apply_table_changes(rows, net_table_changes(changes, keys, state_log.LOG_BATCH), keys)
        if rows.num_rows > MAX_CACHED_STATE_ROWS:
            return None
        logged_buckets = frozenset(pc.unique(changes.column(END_BUCKET)).to_pylist()) if changes.num_rows else frozenset()
        return CachedState(pin, schema, rows, changes.num_rows, logged_buckets)

    def read_buffers(self, version):
        return delta_lake_io.read_as_of(self.spark, self.buffers_path, version)

    def _output_tables(self) -> dict[str, OutputTable]:
        return {"results": OutputTable("results", self.results_path, RESULTS_PROPERTIES, False),
                "late": OutputTable("late", self.late_path, SET_ASIDE_PROPERTIES, True),
                "quarantine": OutputTable("quarantine", self.quarantine_path, SET_ASIDE_PROPERTIES, True)}

    def write_output(self, kind: str, df: DataFrame, rows: int | None, batch_id: int) -> int | None:
        """Write a batch's ``results``, ``late`` or ``quarantine`` rows; an empty output only makes sure
        the table exists.

        ``results`` follow the output mode (see the module docstring); late and
        quarantine rows are appended. ``rows=None`` means the count is not
        known before the write: always write, and return how many rows of
        ``df`` the mode wrote (``final`` writes only the final panes), read from
        the append's commit or counted on the cached MERGE source; None when
        ``rows`` was given or the commit has no count.
        """
        return self.sink_modes()[kind].write_delta(self, self._output_tables()[kind], df, rows, batch_id)

    def write_set_aside(self, outputs: dict, batch_id: int) -> None:
        """As the base class's; the tables of the empty outputs that this store has not made sure of are
        created first, side by side (:func:`delta_lake_io.create_empty_tables`)."""
        tables = self._output_tables()
        missing = [tables[kind] for kind, output in outputs.items()
                   if output.rows == 0 and not self.is_output_ready(tables[kind])]
        delta_lake_io.create_empty_tables(self.spark, [
            EmptyTable(outputs[table.name].frame.schema, table.path, properties=table.properties) for table in missing])
        for table in missing:
            self.output_ready(table)
        super().write_set_aside(outputs, batch_id)

    def is_output_ready(self, table: OutputTable) -> bool:
        """Whether this store made sure ``table`` exists."""
        return table.name in self._outputs_ready

    def output_ready(self, table: OutputTable) -> None:
        self._outputs_ready.add(table.name)

    def merge_output(self, table: OutputTable, upserts: DataFrame, deletes: DataFrame, keys: list[str],
                     batch_id: int) -> None:
        """MERGE a batch's changes into an output table, once per (application id, batch id)."""
        self._merge(table.path, upserts, deletes, keys, batch_id, update=True, app=self.app_id)
        self.output_ready(table)

    def _merge(self, path: str, upserts: DataFrame, deletes: DataFrame, keys: list[str], batch_id: int,
               update: bool, app: str | None = None) -> int:
        from delta.tables import DeltaTable
        schema = DeltaTable.forPath(self.spark, path).toDF().schema
        return delta_lake_io.merge_once(self.spark, path, merge_source(upserts, deletes, schema), keys,
                                   app or self.operator_id, batch_id, update=update)

    def open_windows(self) -> list:
        """The open windows after the last committed batch (logged changes folded in), as tuples in
        the windows table's column order."""
        frame = state_log.committed_windows(self.spark, self.windows_path.rsplit("/", 1)[0], self.operator_id)
        return [] if frame is None else [tuple(r) for r in frame.collect()]

    def windows_version(self) -> int | None:
        """The current version of the windows table (for a batch that did not change it); None if none."""
        if not delta_lake_io.table_exists(self.spark, self.windows_path):
            return None
        return delta_lake_io.latest_version(self.spark, self.windows_path)

    def merge_windows(self, upserts, deletes, keys, batch_id) -> int:
        """MERGE a batch's state changes once; returns the windows table's version.

        Afterwards :attr:`windows_deleted` holds how many state rows the batch's MERGE
        deleted (read from its commit, no Spark job; None when the log cannot tell).
        """
        version = self._merge(self.windows_path, upserts, deletes, keys, batch_id, update=True)
        self.windows_deleted = delta_lake_io.merge_deleted_rows(self.spark, self.windows_path, self.operator_id, batch_id)
        return version

    def write_windows(self, upserts, deletes, keys, batch_id, pin: StatePin, how: StateWrite,
                      final: bool = False, input_rows: int | None = None) -> WindowsWrite:
        """Apply a batch's state changes once: logged in its progress row, or written to the windows
        table (see :class:`StateWrite` and :mod:`windowing.spark.state.log`).

        ``pin`` is where the batch read its state. ``final``: the batch ends the input (the
        table is brought up to date). ``input_rows``: the batch's input rows (None: unknown), which
        bound how many state rows it can change. Afterwards :attr:`windows_deleted` holds how many state rows
        the batch deleted (None when a replay found the change already written).
        """
        cached, self._cached = self._cached, None      # kept again only if this write's result is known
        if cached is not None and cached.pin == pin:
            written = self._write_windows_cached(cached, upserts, deletes, keys, batch_id, how, final, input_rows)
            if written is not None:
                return written
            self._cache_windows = False                # too many changes for the driver: written from Delta
        own_deletes = None
        if pin.logs:
            # The table lacks the logged changes: they go in with this batch's (which win on a key).
            own_deletes = deletes.count()
            upserts, deletes = self._with_logged(pin, upserts, deletes, keys)
        if how is StateWrite.MERGE:
            version = self.merge_windows(upserts, deletes, keys, batch_id)
            if own_deletes is not None and self.windows_deleted is not None:
                self.windows_deleted = own_deletes
            return WindowsWrite(version)
        path = self.windows_path
        self.windows_deleted = None
        # The bucket list and the rewrite both read the changes: computed once.
        upserts, deletes = upserts.persist(), deletes.persist()

        def rewrite() -> None:
            touched = (upserts.select(END_BUCKET, F.lit(0).alias(_DELETED))
                       .unionByName(deletes.select(END_BUCKET, F.lit(1).alias(_DELETED)))
                       .groupBy(END_BUCKET).agg(F.sum(_DELETED).alias(_DELETED)).collect())
            # Every delete names a state row the batch read (the plans delete only rows they read).
            self.windows_deleted = (sum(int(row[_DELETED]) for row in touched) if own_deletes is None
                                    else own_deletes)
            if not touched:
                return
            buckets = sorted(int(row[END_BUCKET]) for row in touched)
            old = delta_lake_io.read_as_of(self.spark, path, pin.version).where(F.col(END_BUCKET).isin(buckets))
            changed = upserts.select(*keys).unionByName(deletes.select(*keys))
            kept = old.alias("o").join(changed.alias("c"), [F.col(f"o.`{k}`").eqNullSafe(F.col(f"c.`{k}`"))
                                                            for k in keys], "left_anti")
            rows = kept.unionByName(delta_lake_io.conform(upserts, old.schema))
            (rows.write.format("delta").mode("overwrite")
             .option("replaceWhere", f"{END_BUCKET} IN ({', '.join(map(str, buckets))})").save(path))

        try:
            delta_lake_io.run_once(self.spark, path, self.operator_id, batch_id, rewrite)
        finally:
            upserts.unpersist()
            deletes.unpersist()
        return WindowsWrite(delta_lake_io.latest_version(self.spark, path))

    def _with_logged(self, pin: StatePin, upserts: DataFrame, deletes: DataFrame, keys: list[str]):
        """A batch's changes with the changes ``pin`` logged underneath: ``(upserts, deletes)`` that
        take the table at ``pin.version`` to the state after the batch."""
        schema = delta_lake_io.read_as_of(self.spark, self.windows_path, pin.version).schema
        logged = state_log.net_changes(
            state_log.logged_changes(self.spark, self.progress_path, pin, schema, self.operator_id), keys)
        batch = merge_source(upserts, deletes, schema)
        combined = state_log.overlay(delta_lake_io.conform(logged, batch.schema), batch, keys)
        return (combined.where(~F.col(DELETE_FLAG)).drop(DELETE_FLAG),
                combined.where(F.col(DELETE_FLAG)).select(*keys))

    def _write_windows_cached(self, cached: CachedState, upserts, deletes, keys, batch_id, how: StateWrite,
                              final: bool, input_rows: int | None) -> WindowsWrite | None:
        """:meth:`write_windows` from the rows kept in the driver: the changes are collected once
        (one job) and applied to the rows. Then either logged (their JSON goes into the progress
        row; the table is not written) or, to compact, the buckets the batch and the logged
        changes touched are rewritten from the rows (``MERGE`` without a log: the changes as
        a MERGE source), with no read of the table.

        None, having written nothing, when the batch changes more than
        :data:`MAX_CACHED_STATE_ROWS` rows (a large first batch): the caller writes from Delta.
        A state that grows past that size is written (not logged) and no longer kept.
        """
        path, pin = self.windows_path, cached.pin
        source = merge_source(upserts, deletes, cached.schema)
        columns = [F.col(f"`{c}`") for c in source.columns]
        with_json = source.select(*columns, F.to_json(F.struct(*columns)).alias(_CHANGE_JSON))
        if input_rows is None or input_rows > MAX_CACHED_STATE_ROWS:
            # A batch larger than the state the driver keeps may change more rows than that: a bounded
            # collect (it may take Spark a few jobs). A smaller batch changes at most the kept rows and
            # the windows of its own rows: one job.
            with_json = with_json.limit(MAX_CACHED_STATE_ROWS + 1)
        collected = with_json.toArrow()
        if collected.num_rows > MAX_CACHED_STATE_ROWS:
            return None
        changes = cached.apply(collected, keys, END_BUCKET)
        self.windows_deleted = changes.deleted
        before = delta_lake_io.latest_version(self.spark, path)
        fits = changes.rows.num_rows <= MAX_CACHED_STATE_ROWS
        if fits and self._logs(cached, batch_id, collected.num_rows, final, before):
            logged_from = pin.logged_from if pin.logs else batch_id
            if not collected.num_rows and not pin.logs:
                self._cached = cached
                return WindowsWrite(pin.version)
            logged = StatePin(pin.version, logged_from, batch_id, self._writer_id)
            self._cached = cached.logged(changes, logged, collected.num_rows)
            text = ("[" + ",".join(sorted(collected.column(_CHANGE_JSON).to_pylist())) + "]"
                    if collected.num_rows else None)
            return WindowsWrite(pin.version, logged_from, text)
        buckets = changes.touched | cached.logged_buckets
        if not buckets:
            self._cached = cached if before == pin.version else None
            return WindowsWrite(before)
        if how is StateWrite.MERGE and not pin.logs:
            frame = arrow_frame(self.spark, collected.drop_columns([_CHANGE_JSON]), source.schema)
            wrote, after = delta_lake_io.merge_once_ran(self.spark, path, frame, keys, self.operator_id, batch_id)
        else:
            bucket, ordered = changes.rows.column(END_BUCKET), sorted(buckets)
            rows = changes.rows.filter(pc.is_in(bucket, value_set=pa.array(ordered, bucket.type)))
            listed = ", ".join(map(str, ordered))

            def rewrite() -> None:
                (arrow_frame(self.spark, rows, cached.schema).write.format("delta").mode("overwrite")
                 .option("replaceWhere", f"{END_BUCKET} IN ({listed})").save(path))
            wrote = delta_lake_io.run_once(self.spark, path, self.operator_id, batch_id, rewrite)
            after = delta_lake_io.latest_version(self.spark, path)
        if not wrote:
            self.windows_deleted = None      # a replay: another attempt's write of the batch landed
        self._cached = cached.after(changes, before, after, wrote) if fits else None
        self._cache_windows = self._cache_windows and fits
        return WindowsWrite(after)

    def _logs(self, cached: CachedState, batch_id: int, change_rows: int, final: bool, table_version: int) -> bool:
        """Whether a batch logs its changes rather than write the table (:mod:`windowing.spark.state.log`):
        logging is on, the batch does not end the input, the table is at the pinned version (no
        attempt of this batch wrote it), and the logged batches and rows stay within the limits."""
        limit = state_log.compact_after_batches(self.spark)
        pin = cached.pin
        logged_batches = batch_id - pin.logged_from + 1 if pin.logs else 1
        return (limit > 0 and not final and table_version == pin.version and logged_batches <= limit
                and cached.logged_rows + change_rows <= state_log.COMPACT_AFTER_ROWS
                and not delta_lake_io.landed(self.spark, path=self.windows_path, app_id=self.operator_id,
                                        batch_id=batch_id))

    def merge_buffers(self, inserts, deletes, keys, batch_id) -> int:
        return self._merge(self.buffers_path, inserts, deletes, keys, batch_id, update=False)

    def commit_progress(self, row: dict) -> None:
        """Append the progress row last (creating the table); refuse if another writer committed the batch.

        The batch's commit point. Of writers racing on one batch exactly one
        succeeds: the one whose commit comes first in the table's log (see
        :func:`delta_lake_io.first_writer`). A writer that finds the batch committed
        before its own check, or another commit of it before its own, withdraws
        its row (if it wrote one) and raises :class:`ConcurrentWriterError`.
        """
        path, batch_id, writer_id = self.progress_path, row["batch_id"], row["writer_id"]
        row = {"run": self.run, "source_offsets": self.source_offsets, **row}
        before = delta_lake_io.latest_version(self.spark, path) if delta_lake_io.table_exists(self.spark, path) else -1
        frame = local_frame(self.spark, [tuple(row.get(f.name) for f in PROGRESS_SCHEMA.fields)], PROGRESS_SCHEMA)
        # mergeSchema: a progress table created before a column was added gains it on the next commit.
        append = functools.partial(delta_lake_io.append, frame, path, self.operator_id, batch_id, merge_schema=True,
                                   properties=PROGRESS_PROPERTIES, writer_id=writer_id)
        try:
            appended = append()
        except (ProtocolChangedException, MetadataChangedException, ConcurrentAppendException,
                ConcurrentWriteException):
            if before != -1:
                raise
            appended = append()     # another writer created the table first: check its batches, then append
        if appended and delta_lake_io.first_writer(self.spark, path, self.operator_id, batch_id, before) == writer_id:
            self._last = {**row, STATE_CHANGES: None}
            table = delta_lake_io.table_identity(self.spark, path)
            self._progress_version = table[1] if table is not None else self._current_progress_version()
            # Kept for the next store only when this row's commit is the table's newest (no commit of
            # another writer after it, which the row would not reflect).
            self._progress_table = table if table is not None and table[1] == before + 1 else None
            if self._progress_table is None:
                state_cache.forget(path)
            self._keep()
            release(writer_id)
            return
        if appended:      # lost a race: the batch's first commit is another writer's
            from delta.tables import DeltaTable
            DeltaTable.forPath(self.spark, path).delete(
                (F.col("batch_id") == batch_id) & (F.col("writer_id") == writer_id))
        self._loaded = False
        release(writer_id)
        raise ConcurrentWriterError(
            f"operator {self.operator_id!r}: batch {batch_id} was already committed by another "
            f"writer; this writer ({writer_id}) did not commit. Two jobs must not run one "
            f"operator's state at the same time.")


def empty_arrow_table(spark: SparkSession, schema: T.StructType) -> pa.Table:
    """No rows of ``schema`` as :meth:`DataFrame.toArrow` would give them."""
    from pyspark.sql.pandas.types import to_arrow_schema
    large = spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false").strip().lower() == "true"
    return to_arrow_schema(schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC",
                           prefers_large_types=large).empty_table()


class MemoryStore(_OutputModeOwner):
    """The same tables as Python rows in memory (for tests of the plans' semantics)."""

    def __init__(self, spark: SparkSession, operator_id: str = "memory", output_mode: str | None = None):
        self.spark, self.operator_id = spark, operator_id
        self.mode = sink_mode(output_mode)
        self.progress: list[dict] = []
        self.outputs: dict[str, list] = {"results": [], "late": [], "quarantine": []}
        """Every row written, in order (the results log, whatever the output mode)."""
        self.held: dict[str, list] = {"results": [], "late": [], "quarantine": []}
        """What each table holds under its mode (as DeltaStore's): the results table's mode is the store's."""
        self._windows = self._buffers = None
        self._schemas: dict = {}
        self.windows_deleted: int | None = None
        """State rows deleted by the last :meth:`merge_windows`."""

    def reset(self) -> None:
        self.__init__(self.spark, self.operator_id, self.output_mode)

    def claim(self, batch_id: int, writer_id: str) -> None:
        """One writer in memory: nothing to claim."""

    def release(self, writer_id: str) -> None:
        """One writer in memory: nothing to release."""

    def last_progress(self):
        return self.progress[-1] if self.progress else None

    def ensure_tables(self, windows_schema, buffers_schema) -> None:
        if "windows" not in self._schemas:
            self._schemas = {"windows": windows_schema, "buffers": buffers_schema}
            self._windows, self._buffers = [], []

    def _frame(self, rows, kind):
        return local_frame(self.spark, rows, self._schemas[kind])

    state_in_driver = True
    """The rows are in the driver."""

    def start_versions(self, last: dict | None, buffers: bool) -> tuple[None, None]:
        """No versions: a read copies the rows as they are (a snapshot taken at the batch's start)."""
        return None, None

    def read_windows(self, version):
        return self._frame(self._windows, "windows")

    def read_buffers(self, version):
        return self._frame(self._buffers, "buffers")

    def write_output(self, kind, df, rows, batch_id) -> int | None:
        if not (rows or rows is None):
            return None
        written = [r.asDict() for r in df.collect()]
        self.outputs[kind].extend(written)
        self.held[kind], count = self.sink_modes()[kind].hold(self.held[kind], written, df)
        return count if rows is None else None

    @property
    def results_table(self) -> list[dict]:
        """What the results table holds under the output mode."""
        return self.held["results"]

    def _apply(self, rows, upserts, deletes, keys, kind):
        schema = self._schemas[kind]
        return apply_changes(rows, schema.names, merge_source(upserts, deletes, schema).collect(), keys)

    def windows_version(self) -> int:
        return len(self.progress) + 1

    def merge_windows(self, upserts, deletes, keys, batch_id) -> int:
        self._windows, self.windows_deleted = self._apply(self._windows, upserts, deletes, keys, "windows")
        return len(self.progress) + 1

    def write_windows(self, upserts, deletes, keys, batch_id, pin, how: StateWrite,
                      final: bool = False, input_rows: int | None = None) -> WindowsWrite:
        """In memory every way of writing is the same: the changes applied to the rows."""
        return WindowsWrite(self.merge_windows(upserts, deletes, keys, batch_id))

    def merge_buffers(self, inserts, deletes, keys, batch_id) -> int:
        self._buffers, _ = self._apply(self._buffers, inserts, deletes, keys, "buffers")
        return len(self.progress) + 1

    def commit_progress(self, row: dict) -> None:
        self.progress.append(row)

    def open_windows(self) -> list:
        return list(self._windows or [])   # None: no batch created the table (a one-pass batch keeps no state)
