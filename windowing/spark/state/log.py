"""Window state changes logged in the progress rows, folded into the windows table every few batches.

A streaming batch of a small state changes a few hundred windows. Writing them to
the ``windows`` table each batch is a Delta commit of its own, and a rewrite of
the touched buckets first has Delta replay the table's log to find the files it
replaces: the most expensive step of a small batch. While the state is kept in
the driver (:mod:`windowing.spark.state.cache`) a batch can instead put its
changes into its own progress row (column :data:`STATE_CHANGES`, written in the
same commit that commits the batch) and leave the windows table as it was.

The window state after a committed batch ``b`` is then:

    the windows table AS OF ``windows_version`` (the progress row of ``b``)
    + the changes logged by the committed batches ``windows_logged_from`` .. ``b``, in batch order

(:class:`StatePin` names that position; :func:`pin_of` reads it from a progress
row; :func:`read_state` folds it). ``windows_logged_from`` is null when nothing
is logged: the table at ``windows_version`` is the state, as for every batch of
an operator that never logs.

Every :data:`COMPACT_AFTER_BATCHES` logged batches, when the logged changes
reach :data:`COMPACT_AFTER_ROWS` rows, and always at the end of the input
(watermark +infinity), a batch *compacts* instead: it rewrites the buckets that
the logged changes and its own touched, from the rows in the driver, as one
write marked with its batch id (a replay finds it written). The windows table
then equals the state again. :func:`compact_after_batches` reads the session
setting :data:`LOG_BATCHES_SETTING` (``0``: never log, write the table every batch).

Readers that want the open windows of the last committed batch (``winjob
inspect``, the ``state_windows`` suite, tests) use :func:`committed_windows`,
which folds the logged changes; the windows table alone may be up to
:data:`COMPACT_AFTER_BATCHES` batches behind.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.spark.lake import delta_lake_io
from windowing.spark.input.columns import DELETE_FLAG, END_BUCKET, WE, WS

STATE_CHANGES = "state_changes"
"""Progress column: the batch's state changes as a JSON array of change rows (windows columns + ``__delete``)."""
LOGGED_FROM = "windows_logged_from"
"""Progress column: the first batch whose logged changes the windows table at ``windows_version`` lacks."""
LOG_FIELDS = [T.StructField(LOGGED_FROM, T.LongType(), True), T.StructField(STATE_CHANGES, T.StringType(), True)]
"""The progress table's columns of the state log (nullable: null when the batch logged nothing)."""

COMPACT_AFTER_BATCHES = 10
"""Default number of batches whose changes stay logged before one batch compacts them into the table."""
COMPACT_AFTER_ROWS = 200_000
"""Logged change rows (all logged batches together) past which the next batch compacts.

It bounds what a reader without the state in the driver (a new process, another writer,
:func:`committed_windows`) parses and folds besides the table. Four times the largest state kept
in the driver: batches that each change most of such a state still log several batches between
compactions, each of which rewrites the touched buckets (about a second at 50,000 rows)."""
LOG_BATCHES_SETTING = "spark.windowing.stateLogBatches"
"""Session setting: batches logged before a compaction (default :data:`COMPACT_AFTER_BATCHES`; 0: never log)."""

LOG_BATCH = "__log_batch"
"""Column of :func:`logged_changes`: the batch that logged the change row."""
_RANK = "__log_rank"


@dataclass(frozen=True)
class StatePin:
    """Where a batch reads its window state: the windows table at ``version``, plus the changes logged
    by the committed batches ``logged_from`` .. ``through_batch`` (none when ``logged_from`` is None).

    ``through_writer`` is the writer whose progress row of ``through_batch`` committed, so that
    state kept in the driver after logging a batch matches only the row this writer committed.
    """

    version: int | None
    logged_from: int | None = None
    through_batch: int | None = None
    through_writer: str | None = None

    @property
    def logs(self) -> bool:
        return self.logged_from is not None


def pin_of(progress_row: dict | None, version: int | None) -> StatePin:
    """The state pin a committed progress row records (``version``: its windows version, as resolved)."""
    row = progress_row or {}
    logged_from = row.get(LOGGED_FROM)
    if logged_from is None:
        return StatePin(version)
    return StatePin(version, int(logged_from), int(row["batch_id"]), row.get("writer_id"))


def compact_after_batches(spark: SparkSession) -> int:
    """Batches logged before a compaction (the session's :data:`LOG_BATCHES_SETTING`); 0: never log.

    Raises:
        ValueError: the setting is not a whole number >= 0.
    """
    text = spark.conf.get(LOG_BATCHES_SETTING, str(COMPACT_AFTER_BATCHES))
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{LOG_BATCHES_SETTING} = {text!r}: give a whole number of batches >= 0 "
                         f"(0 writes the windows table every batch)")
    return value


def state_keys(schema: T.StructType) -> list[str]:
    """The key of a windows row: the key columns (those before ``window_start_ms``), the window, its bucket."""
    return [*schema.names[:schema.names.index(WS)], WS, WE, END_BUCKET]


def change_schema(windows_schema: T.StructType) -> T.StructType:
    """A logged change row: the windows table's columns and the delete flag."""
    return T.StructType([*windows_schema.fields, T.StructField(DELETE_FLAG, T.BooleanType(), True)])


def logged_changes(spark: SparkSession, progress_path: str, pin: StatePin, windows_schema: T.StructType,
                   operator_id: str) -> DataFrame:
    """The change rows the committed batches of ``pin`` logged, with their batch id in ``__log_batch``.

    One progress row per batch: when a writer that lost a race left its row behind, the
    row of the batch's first commit counts (as for the last progress row).
    """
    found = delta_lake_io.batch_files(spark, progress_path, operator_id, pin.logged_from)
    if found is not None and pin.through_batch in found.files:
        # One commit per batch, each batch's row read from the file its commit added.
        rows = delta_lake_io.read_batch_files(
            spark, found, [b for b in found.files if pin.logged_from <= b <= pin.through_batch])
    else:
        rows = _first_writers_rows(spark, progress_path, pin, operator_id)
    changes = F.from_json(F.col(STATE_CHANGES), T.ArrayType(change_schema(windows_schema)))
    return (rows.where(F.col(STATE_CHANGES).isNotNull())
            .select(F.col("batch_id").alias(LOG_BATCH), F.explode(changes).alias("__c"))
            .select(LOG_BATCH, "__c.*"))


def _first_writers_rows(spark: SparkSession, progress_path: str, pin: StatePin, operator_id: str) -> DataFrame:
    """The progress rows of the pin's logged batches read through Delta, one per batch (its first writer's)."""
    rows = (spark.read.format("delta").load(progress_path)
            .where(F.col("batch_id").between(pin.logged_from, pin.through_batch)))
    writers = rows.select("batch_id", "writer_id").collect()
    by_batch: dict[int, set] = {}
    for row in writers:
        by_batch.setdefault(row["batch_id"], set()).add(row["writer_id"])
    for batch_id, ids in by_batch.items():
        if len(ids) > 1:
            first = delta_lake_io.first_writer(spark, progress_path, operator_id, batch_id, -1)
            rows = rows.where((F.col("batch_id") != batch_id) | (F.col("writer_id") == first))
    return rows


def net_changes(changes: DataFrame, keys: list[str]) -> DataFrame:
    """The last change of each key (by ``__log_batch``), without the batch column: what a MERGE of
    every logged change set in batch order leaves."""
    newest = Window.partitionBy(*[F.col(f"`{k}`") for k in keys]).orderBy(F.col(LOG_BATCH).desc())
    return changes.withColumn(_RANK, F.row_number().over(newest)).where(F.col(_RANK) == 1).drop(_RANK, LOG_BATCH)


def overlay(base: DataFrame, top: DataFrame, keys: list[str]) -> DataFrame:
    """``top``'s rows and those of ``base`` whose key (null-safe) ``top`` does not have."""
    kept = base.alias("b").join(top.alias("t"), [F.col(f"b.`{k}`").eqNullSafe(F.col(f"t.`{k}`")) for k in keys],
                                "left_anti")
    return kept.unionByName(top)


def fold(table: DataFrame, net: DataFrame, keys: list[str]) -> DataFrame:
    """The table's rows with the net changes applied: a changed key's row replaced or deleted."""
    rows = overlay(table.withColumn(DELETE_FLAG, F.lit(False)), net, keys)
    return rows.where(~F.col(DELETE_FLAG)).drop(DELETE_FLAG)


def read_state(spark: SparkSession, windows_path: str, progress_path: str, pin: StatePin,
               operator_id: str) -> DataFrame:
    """The window state at ``pin``: the table at its version with the logged changes folded in."""
    table = delta_lake_io.read_as_of(spark, windows_path, pin.version)
    if not pin.logs:
        return table
    keys = state_keys(table.schema)
    net = net_changes(logged_changes(spark, progress_path, pin, table.schema, operator_id), keys)
    return fold(table, delta_lake_io.conform(net, change_schema(table.schema)), keys)


def committed_windows(spark: SparkSession, base: str, operator_id: str | None = None) -> DataFrame | None:
    """The open windows after the last committed batch of the operator at ``base``
    (``<state_root>/<operator_id>``), logged changes folded in; None without a windows table.

    Without a progress row: the table as it is.
    """
    windows_path, progress_path = f"{base}/windows", f"{base}/progress"
    if not delta_lake_io.table_exists(spark, windows_path):
        return None
    if not delta_lake_io.table_exists(spark, progress_path):
        return spark.read.format("delta").load(windows_path)
    last = delta_lake_io.newest_rows(spark.read.format("delta").load(progress_path).drop(STATE_CHANGES), "batch_id")
    if not last:
        return spark.read.format("delta").load(windows_path)
    row = last[0].asDict()
    pin = pin_of(row, row.get("windows_version"))
    return read_state(spark, windows_path, progress_path, pin, operator_id or base.rstrip("/").rsplit("/", 1)[1])
