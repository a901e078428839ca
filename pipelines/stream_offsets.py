"""The Delta source offsets a stream's micro-batch read, from its checkpoint's offset log.

Structured Streaming writes ``<checkpoint>/offsets/<batch_id>`` before it runs the
batch: a version line, the batch's metadata, then one offset per source. A Delta
source's offset names a position in the raw table's log: ``reservoirVersion`` (a
table version), ``index`` (the position of a data file among the version's added
files; negative: before the first, Delta's sentinels) and ``isStartingVersion``
(the position is inside the table's initial snapshot, read before any later
version). Batch ``b`` read every file after the end offset of batch ``b - 1`` up
to and including its own end offset.

The stream driver records both offsets in the batch's progress row (the
``source_offsets`` column, :attr:`windowing.spark.state.stores.DeltaStore.source_offsets`);
:mod:`pipelines.replay_source` turns them back into the batch's rows.
Reading them costs two small file reads per batch, no Spark job.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import SparkSession

OFFSET_LOG_VERSION = "v1"
"""The first line of an offset log file this module reads."""
SOURCE_OFFSET_LINE = 2
"""The line of the (only) source's offset in an offset log file: after the version and the metadata."""


@dataclass(frozen=True)
class SourceOffset:
    """One Delta source offset (see the module docstring).

    Attributes:
        reservoir_id: the raw table's id (its ``metaData.id``); another id means another table.
        version: the table version the position is in.
        index: the position among the version's added data files (negative: before the first).
        is_starting_version: the position is inside the initial snapshot of ``version``.
    """

    reservoir_id: str
    version: int
    index: int
    is_starting_version: bool

    @classmethod
    def from_json(cls, value: dict) -> "SourceOffset":
        """An offset as Delta writes it in the offset log (``reservoirVersion``, ``index``, ...)."""
        return cls(str(value["reservoirId"]), int(value["reservoirVersion"]), int(value["index"]),
                   bool(value["isStartingVersion"]))

    def position(self) -> tuple[int, int]:
        """``(version, index)``: positions compare in the order Delta reads the files."""
        return self.version, self.index


@dataclass(frozen=True)
class BatchOffsets:
    """What one micro-batch read: the files after ``start`` (None: from the start) up to ``end``."""

    start: SourceOffset | None
    end: SourceOffset

    def to_json(self) -> str:
        """The text recorded in the progress row's ``source_offsets`` column."""
        def as_dict(offset: SourceOffset | None) -> dict | None:
            if offset is None:
                return None
            return {"reservoirId": offset.reservoir_id, "reservoirVersion": offset.version,
                    "index": offset.index, "isStartingVersion": offset.is_starting_version}
        return json.dumps({"start": as_dict(self.start), "end": as_dict(self.end)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "BatchOffsets":
        value = json.loads(text)
        start = value.get("start")
        return cls(SourceOffset.from_json(start) if start else None, SourceOffset.from_json(value["end"]))


def read_offset(spark: SparkSession, checkpoint_path: str, batch_id: int) -> SourceOffset | None:
    """The Delta source's end offset of ``batch_id`` in the checkpoint's offset log; None if not there.

    Also None in a session without a JVM in this process (Spark Connect): the offset log is
    then not read, and replay refuses the batch.

    Raises:
        ValueError: the file is not an offset log of one Delta source (another format version,
            another source), naming the file.
    """
    jvm = _jvm(spark)
    if jvm is None:
        return None
    conf = spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(f"{checkpoint_path.rstrip('/')}/offsets/{batch_id}")
    fs = path.getFileSystem(conf)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()
    lines = text.splitlines()
    if len(lines) != SOURCE_OFFSET_LINE + 1 or lines[0] != OFFSET_LOG_VERSION:
        raise ValueError(f"{path.toString()} is not the offset log of a stream with one Delta source "
                         f"(expected {OFFSET_LOG_VERSION!r}, the metadata and one offset; got {len(lines)} lines)")
    try:
        return SourceOffset.from_json(json.loads(lines[SOURCE_OFFSET_LINE]))
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path.toString()}: the source offset is not a Delta source's ({error})") from None


def batch_offsets(spark: SparkSession, checkpoint_path: str, batch_id: int,
                  known_ends: dict[int, SourceOffset] | None = None) -> BatchOffsets | None:
    """The offsets ``batch_id`` of the stream read: the previous batch's end offset and its own.

    Batch 0 starts at None (the table's beginning). None when the checkpoint lacks the
    batch's offset or its predecessor's (Spark keeps the last 100 at least): what the batch
    read is then not known, and nothing is recorded. ``known_ends``: end offsets already read
    by batch id (a run's earlier batches); the batch's own end is added to it, so a run reads
    each offset file once.
    """
    known_ends = {} if known_ends is None else known_ends
    end = read_offset(spark, checkpoint_path, batch_id)
    if end is None:
        return None
    known_ends[batch_id] = end
    if batch_id == 0:
        return BatchOffsets(None, end)
    start = known_ends.get(batch_id - 1) or read_offset(spark, checkpoint_path, batch_id - 1)
    return None if start is None else BatchOffsets(start, end)


def _jvm(spark: SparkSession):
    """The session's JVM gateway, or None for a Spark Connect session (no JVM in this process)."""
    try:
        return spark._jvm
    except Exception:  # noqa: BLE001 - Spark Connect raises its own error types for the attribute
        return None
