"""De-duplication state: the event ids an operator has seen recently.

A Delta table ``state_root/operator_id/seen_ids`` (or a list in memory for
the in-memory store) with one row per remembered id: the id, its event time
and the batch that first kept it. The horizon is event time behind the
watermark: an id kept with event time ``t`` stays visible while
``t > watermark_at_batch_start - horizon``.

Exactly once without a version in ``progress``: batch ``b`` reads the table
as of its version at the batch's start and sees only rows of batches ``< b``
that are still within the horizon; pruning deletes only rows that ``b`` cannot
see anyway. A replay of ``b`` after a crash therefore sees the same ids
whatever the crashed attempt wrote; its append of the kept ids lands once
(``delta_lake_io.append``).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.spec import WindowSpec
from windowing.spark.lake import delta_lake_io
from windowing.spark.input.columns import QUARANTINED, STATUS, TS, long_lit
from windowing.spark.runtime.local_frames import local_frame

SEEN_TS = "event_time_ms"
SEEN_BATCH = "batch_id"


class SeenIds:
    """The ids remembered for one operator's de-duplication.

    Args:
        spark: the SparkSession.
        spec: the window spec; its ``dedup_column`` and ``dedup_horizon_ms``.
        path: the Delta table's path, or None to keep the ids in memory.
        app_id: Delta transaction application id of the appends.
    """

    def __init__(self, spark: SparkSession, spec: WindowSpec, path: str | None, app_id: str):
        if spec.input.dedup_column is None:
            raise ValueError("SeenIds needs a spec with de-duplication (WindowSpecBuilder.deduplicate)")
        self.spark, self.spec, self.path, self.app_id = spark, spec, path, app_id
        self._memory: list[tuple] = []
        self._schema: T.StructType | None = None

    @classmethod
    def for_store(cls, spark: SparkSession, spec: WindowSpec, store) -> "SeenIds":
        """Beside the store's state tables (Delta), or in memory for a MemoryStore."""
        windows_path = getattr(store, "windows_path", None)
        path = windows_path.rsplit("/", 1)[0] + "/seen_ids" if windows_path else None
        return cls(spark, spec, path, f"{store.operator_id}__seen_ids")

    def _ensure(self, id_type: T.DataType) -> None:
        if self._schema is None:
            self._schema = T.StructType([T.StructField(self.spec.input.dedup_column, id_type, True),
                                         T.StructField(SEEN_TS, T.LongType(), False),
                                         T.StructField(SEEN_BATCH, T.LongType(), False)])
            if self.path is not None:
                delta_lake_io.create_empty(self.spark, self._schema, self.path)

    def _at_start(self) -> DataFrame:
        """Every remembered id as the table is now, pinned to its current version (a read later in
        the batch, after this batch's :meth:`record`, still sees this version)."""
        if self.path is None:
            return local_frame(self.spark, self._memory, self._schema)
        return delta_lake_io.read_as_of(self.spark, self.path, delta_lake_io.latest_version(self.spark, self.path))

    def visible(self, batch_id: int, wm_start_ms: int, id_type: T.DataType) -> DataFrame:
        """The ids batch ``batch_id`` must treat as seen: from earlier batches, within the horizon."""
        self._ensure(id_type)
        forget_at_or_below = wm_start_ms - self.spec.input.dedup_horizon_ms
        seen = self._at_start().where(F.col(SEEN_BATCH) < long_lit(batch_id))
        if forget_at_or_below >= -(2**63):
            seen = seen.where(F.col(SEEN_TS) > long_lit(forget_at_or_below))
        return seen.select(self.spec.input.dedup_column)

    def record(self, classified: DataFrame, batch_id: int, wm_start_ms: int) -> None:
        """Remember the ids this batch kept (every non-quarantined row with an id), then prune."""
        column = self.spec.input.dedup_column
        kept = (classified.where((F.col(STATUS) != QUARANTINED) & F.col(column).isNotNull())
                .select(F.col(column), F.col(TS).alias(SEEN_TS), long_lit(batch_id).alias(SEEN_BATCH)))
        forget_at_or_below = wm_start_ms - self.spec.input.dedup_horizon_ms
        if self.path is None:
            rows = [tuple(r) for r in kept.collect()]
            self._memory = [r for r in self._memory if r[2] != batch_id] + rows
            if forget_at_or_below >= -(2**63):
                self._memory = [r for r in self._memory if r[1] > forget_at_or_below]
            return
        delta_lake_io.append(delta_lake_io.conform(kept, self._schema), self.path, self.app_id, batch_id)
        if forget_at_or_below >= -(2**63):
            from delta.tables import DeltaTable
            # Only rows this batch already ignores: a replay of it sees the same ids.
            DeltaTable.forPath(self.spark, self.path).delete(F.col(SEEN_TS) <= long_lit(forget_at_or_below))
