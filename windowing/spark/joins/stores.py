"""Where a join operator keeps its state, outputs and progress: Delta tables, or memory (tests).

:class:`JoinDeltaStore`, under ``state_root/operator_id``:

* ``state/<table>``: each state table of the plan (per-key states, buffered rows);
* ``state_log/<table>``: the rows of state changes logged instead of written to the
  table (:mod:`windowing.spark.joins.state_pins`);
* ``progress``: one row per committed batch: the watermark, the clock and the
  watermark tracker (``time_state``), the state tables' Delta versions after the
  batch (``state_versions``) and the changes logged after them (``state_log``), the spec fingerprint and plan, both inputs'
  schemas, the per-side metrics, the writer, the input offsets a stream's batch read;
* ``claims``: who writes which batch (:mod:`windowing.spark.claims`);
* outputs (paths given or defaults ``results``, ``late``, ``quarantine``).

Exactly once, as the single-input operator (docs/state-and-exactly-once.md):
outputs are appended and state changes written once per ``(operator, batch)``
(a marker in each commit, checked before writing); a batch reads its state as
of the pins the last committed batch recorded (versions and logged changes); the progress row is the
commit point, and the first writer of a batch's progress row wins.
"""
from __future__ import annotations

import datetime
import uuid

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.spark.lake import delta_lake_io
from windowing.spark.lake.delta_lake_io import EmptyTable
from windowing.spark.lake.claims import ConcurrentWriterError, app_id, open_claim_log, release
from windowing.spark.joins.columns import DELETE_FLAG
from windowing.spark.joins.plan import StateTable
from windowing.spark.joins.state_pins import STATE_LOG, LoggedChange, TablePin, leave, pins_of
from windowing.spark.state.log import compact_after_batches

SOURCE_OFFSETS = "source_offsets"
"""The progress column of what a stream's batch read of each input (see ``PROGRESS_SCHEMA``)."""
PROGRESS_SCHEMA = T.StructType([T.StructField(name, dtype, True) for name, dtype in (
    ("batch_id", T.LongType()), ("watermark_ms", T.LongType()), ("time_state", T.StringType()),
    ("state_versions", T.StringType()), ("spec_fingerprint", T.StringType()), ("plan", T.StringType()),
    ("left_schema", T.StringType()), ("right_schema", T.StringType()), ("metrics", T.StringType()),
    ("processing_time_ms", T.LongType()), ("writer_id", T.StringType()), ("committed_at", T.TimestampType()),
    (SOURCE_OFFSETS, T.StringType()), (STATE_LOG, T.StringType()))])
"""``source_offsets``: what a stream's batch read of each input (JSON by side, :mod:`pipelines.stream_offsets`);
null when not told (a backfill). ``state_log``: the state changes logged after ``state_versions``
(:mod:`windowing.spark.joins.state_pins`). A progress table created without a column gains it on its next
commit."""
OUTPUTS = ("results", "late", "quarantine")


def progress_row(**values) -> dict:
    return {**dict.fromkeys(PROGRESS_SCHEMA.fieldNames()),
            "committed_at": datetime.datetime.now(datetime.timezone.utc), **values}


class JoinMemoryStore:
    """The tables as Python rows in memory: one writer, no crash to survive (the plans' semantics in tests)."""

    def __init__(self, spark: SparkSession, operator_id: str = "join"):
        self.spark, self.operator_id = spark, operator_id
        self.progress: list[dict] = []
        self.outputs: dict[str, list] = {name: [] for name in OUTPUTS}
        self._state: dict[str, tuple[StateTable, dict]] = {}

    def prepare(self, tables: tuple[StateTable, ...], outputs: dict[str, T.StructType],
                results_statistics: tuple[str, ...]) -> None:
        for table in tables:
            self._state.setdefault(table.name, (table, {}))

    def last_progress(self) -> dict | None:
        return self.progress[-1] if self.progress else None

    def claim(self, batch_id: int, writer_id: str) -> None:
        """One writer in memory: nothing to claim."""

    def release(self, writer_id: str) -> None:
        """One writer in memory: nothing to release."""

    def state_pins(self, tables: tuple[StateTable, ...], last: dict | None) -> dict[str, TablePin]:
        """Memory has no versions and logs nothing."""
        return {table.name: TablePin(None) for table in tables}

    def read_state(self, table: StateTable, pin: TablePin) -> DataFrame:
        rows = list(self._state[table.name][1].values())
        return self.spark.createDataFrame(rows, table.schema)

    def state_rows(self, name: str) -> list:
        return list(self._state[name][1].values())

    def write_output(self, kind: str, df: DataFrame, batch_id: int) -> bool:
        """Keep ``df``'s rows; True (always computed and kept)."""
        self.outputs[kind] += df.collect()
        return True

    def merge_state(self, table: StateTable, changes: DataFrame, batch_id: int, pin: TablePin) -> TablePin:
        rows = self._state[table.name][1]
        columns = table.schema.fieldNames()
        for change in changes.collect():
            key = tuple(change[k] for k in table.keys)
            if change[DELETE_FLAG]:
                rows.pop(key, None)
            else:
                rows[key] = tuple(change[c] for c in columns)
        return pin

    def replace_state(self, table: StateTable, inserts: DataFrame, delete_where: str, batch_id: int,
                      pin: TablePin, before: DataFrame, ends_input: bool) -> TablePin:
        rows = self._state[table.name][1]
        if rows:
            kept = leave(self.spark.createDataFrame(list(rows.values()), table.schema), delete_where).collect()
            rows.clear()
            for row in kept:
                rows[tuple(row[k] for k in table.keys)] = tuple(row)
        for row in inserts.collect():
            rows[tuple(row[k] for k in table.keys)] = tuple(row[c] for c in table.schema.fieldNames())
        return pin

    def drop_logs(self, table: StateTable, through_batch: int) -> None:
        """Memory logs nothing."""

    def commit_progress(self, row: dict) -> None:
        self.progress.append(row)


class JoinDeltaStore:
    """A join operator's tables in Delta (see the module docstring)."""

    def __init__(self, spark: SparkSession, operator_id: str, state_root: str, results_path: str | None = None,
                 late_path: str | None = None, quarantine_path: str | None = None):
        self.spark, self.operator_id = spark, operator_id
        self.base = f"{delta_lake_io.absolute(state_root).rstrip('/')}/{operator_id}"
        self.progress_path = f"{self.base}/progress"
        given = {"results": results_path, "late": late_path, "quarantine": quarantine_path}
        self.output_paths = {name: delta_lake_io.absolute(given[name] or f"{self.base}/{name}") for name in OUTPUTS}
        self.claims = open_claim_log(spark, operator_id, f"{self.base}/claims")
        self._generation: int | None = None
        self.source_offsets: str | None = None
        """What the driver records in the next progress row's ``source_offsets`` column (see ``PROGRESS_SCHEMA``)."""
        self._known_progress: tuple[tuple[str, int], dict | None] | None = None
        """The progress table's identity (id, version) and its newest row at that version, as this store last
        read or wrote it: while the table stays at that version, no read is needed."""

    @property
    def app_id(self) -> str:
        """The write markers' application id: the operator and its claim generation."""
        if self._generation is None:
            self._generation, _ = self.claims.read()
        return app_id(self.operator_id, self._generation)

    def state_path(self, name: str) -> str:
        return f"{self.base}/state/{name}"

    def state_log_path(self, name: str) -> str:
        return f"{self.base}/state_log/{name}"

    def prepare(self, tables: tuple[StateTable, ...], outputs: dict[str, T.StructType],
                results_statistics: tuple[str, ...]) -> None:
        """Create the state and output tables that do not exist yet (empty): the state tables and the results
        table with file statistics on the columns they are read by (``StateTable.statistics``,
        ``results_statistics``), the late and quarantine tables with Delta's default (the first 32 columns)."""
        statistics = {name: () for name in outputs} | {"results": results_statistics}
        delta_lake_io.create_empty_tables(self.spark, [
            *(EmptyTable(table.schema, self.state_path(table.name), list(table.partition_by),
                         delta_lake_io.statistics_properties(table.statistics)) for table in tables),
            *(EmptyTable(schema, self.output_paths[name], properties=delta_lake_io.statistics_properties(
                statistics[name])) for name, schema in outputs.items())])

    def reset(self) -> None:
        """Discard the state tables and the progress and start a new claim generation; the outputs stay
        (what the new generation writes is appended to them again: its write markers are its own)."""
        for path in (f"{self.base}/state", f"{self.base}/state_log", self.progress_path):
            delta_lake_io.delete_folder(self.spark, path)
        self._known_progress = None
        self._generation = self.claims.new_generation()

    def last_progress(self) -> dict | None:
        """The newest progress row; read from Delta only when the table moved since this store last saw it
        (from the newest commit's file when the log tells it plainly: :func:`delta_lake_io.newest_batch_row`)."""
        identity = delta_lake_io.table_identity(self.spark, self.progress_path)
        if identity is not None and self._known_progress is not None and self._known_progress[0] == identity:
            return self._known_progress[1]
        if identity is None and not delta_lake_io.table_exists(self.spark, self.progress_path):
            return None
        newest = delta_lake_io.newest_batch_row(self.spark, self.progress_path, self.app_id)
        rows = [newest] if newest is not None else (self.spark.read.format("delta").load(self.progress_path)
                                                    .orderBy(F.col("batch_id").desc()).limit(1).collect())
        last = rows[0].asDict() if rows else None
        self._known_progress = (identity, last) if identity is not None else None
        return last

    def claim(self, batch_id: int, writer_id: str) -> None:
        def committed() -> bool:
            last = self.last_progress()
            return last is not None and last["batch_id"] >= batch_id
        self._generation = self.claims.claim(batch_id, writer_id, committed)

    @staticmethod
    def release(writer_id: str) -> None:
        release(writer_id)

    def state_pins(self, tables: tuple[StateTable, ...], last: dict | None) -> dict[str, TablePin]:
        """Each table's pin as the progress row ``last`` records it; before any batch (``last`` None), the table
        as created."""
        return pins_of(last, [table.name for table in tables]) or {
            table.name: TablePin(delta_lake_io.version_before_marks(self.spark, self.state_path(table.name),
                                                                    self.app_id)) for table in tables}

    def read_state(self, table: StateTable, pin: TablePin) -> DataFrame:
        """The table's rows at ``pin``: the table at its version, its logged changes applied."""
        return pin.read(self.spark, delta_lake_io.read_as_of(self.spark, self.state_path(table.name), pin.version))

    def committed_state(self, table: StateTable) -> DataFrame:
        """The table's rows after the last committed batch (its logged changes applied)."""
        return self.read_state(table, self.state_pins((table,), self.last_progress())[table.name])

    def write_output(self, kind: str, df: DataFrame, batch_id: int) -> bool:
        """Append ``df`` once for the batch; False when an earlier attempt's write landed (``df`` not computed)."""
        return delta_lake_io.append(df, self.output_paths[kind], self.app_id, batch_id)

    def merge_state(self, table: StateTable, changes: DataFrame, batch_id: int, pin: TablePin) -> TablePin:
        """MERGE the change set into the table once for the batch (a merged table logs nothing)."""
        return TablePin(delta_lake_io.merge_once(self.spark, self.state_path(table.name), changes, list(table.keys),
                                                 self.app_id, batch_id))

    def replace_state(self, table: StateTable, inserts: DataFrame, delete_where: str, batch_id: int,
                      pin: TablePin, before: DataFrame, ends_input: bool) -> TablePin:
        """The rows matching ``delete_where`` leave the state, ``inserts`` come in: logged while ``pin`` holds
        fewer logged changes than ``spark.windowing.stateLogBatches`` and the input goes on; otherwise written to
        the table once for the batch, the logged changes with it (``before``: the state at ``pin``)."""
        path = self.state_path(table.name)
        if not ends_input and len(pin.logged) < compact_after_batches(self.spark):
            folder = f"{self.state_log_path(table.name)}/{batch_id}-{uuid.uuid4().hex}"
            inserts.write.mode("overwrite").parquet(folder)
            return pin.then(LoggedChange(batch_id, folder, delete_where))
        if pin.logged:      # compaction: the whole state after the batch, read from the pinned version
            inserts, delete_where = leave(before, delete_where).unionByName(inserts), "true"
        return TablePin(delta_lake_io.replace_where_once(self.spark, path, inserts, delete_where, self.app_id,
                                                         batch_id))

    def drop_logs(self, table: StateTable, through_batch: int) -> None:
        """Delete the logged changes of batches up to ``through_batch`` (after a compaction of it committed: no
        pin names them; an attempt that never committed left its folder, no pin ever named it)."""
        root = self.state_log_path(table.name)
        for name in delta_lake_io.folder_names(self.spark, root):
            batch = name.split("-", 1)[0]
            if batch.isdigit() and int(batch) <= through_batch:
                delta_lake_io.delete_folder(self.spark, f"{root}/{name}")

    def commit_progress(self, row: dict) -> None:
        """Append the progress row (the commit point); refuse when another writer's row of the batch came first."""
        path, batch_id, writer_id = self.progress_path, row["batch_id"], row["writer_id"]
        row = {**row, SOURCE_OFFSETS: row.get(SOURCE_OFFSETS) or self.source_offsets}
        before = delta_lake_io.latest_version(self.spark, path) if delta_lake_io.table_exists(self.spark, path) else -1
        frame = self.spark.createDataFrame([tuple(row.get(n) for n in PROGRESS_SCHEMA.fieldNames())], PROGRESS_SCHEMA)
        self._known_progress = None
        # mergeSchema: a progress table created before a column was added gains it on this commit.
        appended = delta_lake_io.append(frame, path, self.app_id, batch_id, merge_schema=True, writer_id=writer_id)
        if appended and delta_lake_io.first_writer(self.spark, path, self.app_id, batch_id, before) == writer_id:
            identity = delta_lake_io.table_identity(self.spark, path)
            if identity is not None and identity[1] == before + 1:   # this row is the newest: no other commit since
                self._known_progress = (identity, {n: row.get(n) for n in PROGRESS_SCHEMA.fieldNames()})
            release(writer_id)
            return
        if appended:    # lost the race: withdraw this writer's row
            from delta.tables import DeltaTable
            DeltaTable.forPath(self.spark, path).delete((F.col("batch_id") == batch_id)
                                                        & (F.col("writer_id") == writer_id))
        release(writer_id)
        raise ConcurrentWriterError(f"join operator {self.operator_id!r}: batch {batch_id} was committed by "
                                    f"another writer; this writer ({writer_id}) did not commit it")
