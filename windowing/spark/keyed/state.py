"""The per-key path's state table: one row per key that keeps something, plus one operator row.

Schema (``state_root/operator_id/keyed_state`` as a Delta table, or rows in
memory beside a :class:`~windowing.spark.state.stores.MemoryStore`):

* the spec's key columns (for non-keyed windows, one constant column
  ``__all``), typed as in the input;
* ``scope``: ``"key"`` for a key's row, ``"operator"`` for the one row of the
  batch-wide state (the watermark tracker and the processing-time clock);
  its key columns are null;
* ``state``: the pickled :class:`windowing.core.reference.KeyState` (windows
  with their accumulators or element buffers, trigger state, timers), or
  the pickled batch-wide state;
* ``next_event_timer_ms`` / ``next_processing_timer_ms``: the key's earliest
  timers, so a batch wakes the keys that have no new rows but a timer due
  without unpickling anything (data skipping prunes files by them);
* ``last_batch_id``: the batch that wrote the row.

A key whose windows and timers are all gone has no row. Writes are one
MERGE per batch that lands once per batch (``delta_lake_io.run_once``), and
reads are AS OF the version fixed at the batch's start (:meth:`KeyedStateTable.start_version`):
the one recorded in the progress row of the last committed batch, or for the
first batch the table as created.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from windowing.spark.lake import delta_lake_io
from windowing.spark.runtime.local_frames import local_frame
from windowing.spark.state.cache import apply_changes
from windowing.spark.state.stores import merge_source

SCOPE, STATE = "scope", "state"
NEXT_EVENT_TIMER, NEXT_PROCESSING_TIMER = "next_event_timer_ms", "next_processing_timer_ms"
KEY_SCOPE, OPERATOR_SCOPE = "key", "operator"
ALL_KEY = "__all"
"""The constant key column of non-keyed windows (window_all)."""


def state_schema(key_fields: list[T.StructField]) -> T.StructType:
    return T.StructType(
        [T.StructField(f.name, f.dataType, True) for f in key_fields]
        + [T.StructField(SCOPE, T.StringType(), False), T.StructField(STATE, T.BinaryType(), True),
           T.StructField(NEXT_EVENT_TIMER, T.LongType(), True),
           T.StructField(NEXT_PROCESSING_TIMER, T.LongType(), True),
           T.StructField("last_batch_id", T.LongType(), False)])


class KeyedStateTable:
    """Read (as of a version) and MERGE the per-key state of one operator.

    Args:
        spark: the SparkSession.
        path: the Delta table's path, or None to keep the rows in memory.
        app_id: Delta transaction application id of the MERGEs.
    """

    def __init__(self, spark: SparkSession, path: str | None, app_id: str):
        self.spark, self.path, self.app_id = spark, path, app_id
        self.schema: T.StructType | None = None
        self._rows: list[tuple] = []
        self._version = 0

    @classmethod
    def for_store(cls, spark: SparkSession, store) -> "KeyedStateTable":
        """Beside the store's state tables (a DeltaStore), or in memory (a MemoryStore)."""
        windows_path = getattr(store, "windows_path", None)
        path = windows_path.rsplit("/", 1)[0] + "/keyed_state" if windows_path else None
        return cls(spark, path, store.operator_id)

    def ensure(self, schema: T.StructType) -> None:
        if self.schema is not None:
            return
        self.schema = schema
        if self.path is not None and not delta_lake_io.table_exists(self.spark, self.path):
            delta_lake_io.create_empty(self.spark, schema, self.path, properties={
                "delta.dataSkippingStatsColumns": f"{SCOPE},{NEXT_EVENT_TIMER},{NEXT_PROCESSING_TIMER}"})
        elif self.path is not None:
            existing = self.spark.read.format("delta").load(self.path).schema
            if [f.name for f in existing] != [f.name for f in schema]:
                raise ValueError(f"keyed state table {self.path} has columns {existing.names}; this operator "
                                 f"needs {schema.names}: the key columns changed. Use a new operator id or "
                                 f"reset the state.")

    def reset(self) -> None:
        self._rows, self._version, self.schema = [], 0, None
        if self.path is not None:
            jvm, conf = self.spark._jvm, self.spark._jsc.hadoopConfiguration()
            p = jvm.org.apache.hadoop.fs.Path(self.path)
            p.getFileSystem(conf).delete(p, True)

    def start_version(self, recorded: int | None) -> int | None:
        """The version a batch reads, fixed at its start (after :meth:`ensure`): ``recorded`` (the last
        committed batch's), else the table's version before any batch's MERGE (the table as created,
        without what a crashed attempt merged); None in memory (a read copies the rows)."""
        if recorded is not None or self.path is None:
            return recorded
        return delta_lake_io.version_before_marks(self.spark, self.path, self.app_id)

    def read(self, version: int | None) -> DataFrame:
        if self.path is None:
            return local_frame(self.spark, self._rows, self.schema)
        return delta_lake_io.read_as_of(self.spark, self.path, version)

    def merge(self, upserts: DataFrame, deletes: DataFrame, keys: list[str], batch_id: int) -> int:
        """Insert or replace ``upserts`` rows, delete ``deletes`` keys; returns the new version."""
        source = merge_source(upserts, deletes, self.schema)
        if self.path is None:
            self._rows, _ = apply_changes(self._rows, self.schema.names, source.collect(), keys)
            self._version += 1
            return self._version
        return delta_lake_io.merge_once(self.spark, self.path, source, keys, self.app_id, batch_id)

    def rows(self) -> list[tuple]:
        """Every row of the latest version (tests and ``winjob inspect``)."""
        if self.path is None:
            return list(self._rows)
        return [tuple(r) for r in self.spark.read.format("delta").load(self.path).collect()]
