"""The Delta source offsets a stream's micro-batch read, from its checkpoint's offset log.

Structured Streaming writes ``<checkpoint>/offsets/<batch_id>`` before it runs the
batch: a version line, the batch's metadata, then one offset per source. A Delta
source's offset names a position in the raw table's log: ``reservoirVersion`` (a
table version), ``index`` (the position of a data file among the version's added
files; negative: before the first, Delta's sentinels) and ``isStartingVersion``
(the position is inside the table's initial snapshot, read before any later
version). Batch ``b`` read every file after the end offset of batch ``b - 1`` up
to and including its own end offset.

A query over several sources (a join's left and right input, unioned in one
query) writes one offset line per source, in the order the query's plan names
them; :func:`read_offsets` reads them all, by source index. A source that had
no data yet when the batch was planned has ``-`` for its offset (None here).

The stream driver records both offsets in the batch's progress row (the
``source_offsets`` column, :attr:`windowing.spark.state.stores.DeltaStore.source_offsets`;
a join's, by side: :func:`named_offsets_json`);
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
"""The line of the first source's offset in an offset log file: after the version and the metadata."""
NO_OFFSET = "-"
"""The offset line of a source that had no data yet when the batch was planned."""


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

    def as_dict(self) -> dict:
        """The offsets as JSON values (``start``: None when the batch read from the table's beginning)."""
        def offset_dict(offset: SourceOffset | None) -> dict | None:
            if offset is None:
                return None
            return {"reservoirId": offset.reservoir_id, "reservoirVersion": offset.version,
                    "index": offset.index, "isStartingVersion": offset.is_starting_version}
        return {"start": offset_dict(self.start), "end": offset_dict(self.end)}

    def to_json(self) -> str:
        """The text recorded in the progress row's ``source_offsets`` column."""
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, value: dict) -> "BatchOffsets":
        start = value.get("start")
        return cls(SourceOffset.from_json(start) if start else None, SourceOffset.from_json(value["end"]))

    @classmethod
    def from_json(cls, text: str) -> "BatchOffsets":
        return cls.from_dict(json.loads(text))


def named_offsets_json(offsets: dict[str, BatchOffsets | None]) -> str:
    """The ``source_offsets`` text of a batch of a query over several sources, by source name (None: the source
    had no data yet, the batch read none of it)."""
    return json.dumps({name: o.as_dict() if o is not None else None for name, o in offsets.items()}, sort_keys=True)


def named_offsets_from_json(text: str) -> dict[str, BatchOffsets | None]:
    """The offsets :func:`named_offsets_json` wrote, by source name."""
    return {name: BatchOffsets.from_dict(o) if o is not None else None for name, o in json.loads(text).items()}


def read_offset(spark: SparkSession, checkpoint_path: str, batch_id: int) -> SourceOffset | None:
    """The end offset of ``batch_id`` of a stream over one Delta source; None if not there (see :func:`read_offsets`).

    Raises:
        ValueError: the file is not an offset log of one Delta source, naming the file.
    """
    offsets = read_offsets(spark, checkpoint_path, batch_id, 1)
    return None if offsets is None else offsets[0]


def read_offsets(spark: SparkSession, checkpoint_path: str, batch_id: int,
                 sources: int) -> tuple[SourceOffset | None, ...] | None:
    """The end offset of each of the ``sources`` Delta sources of ``batch_id`` in the checkpoint's offset log, by
    source index (None: that source had no data yet); None if the batch's file is not there.

    Also None in a session without a JVM in this process (Spark Connect): the offset log is
    then not read, and replay refuses the batch.

    Raises:
        ValueError: the file is not an offset log of ``sources`` Delta sources (another format version,
            another number or kind of source), naming the file.
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
    if len(lines) != SOURCE_OFFSET_LINE + sources or lines[0] != OFFSET_LOG_VERSION:
        raise ValueError(f"{path.toString()} is not the offset log of a stream with {sources} Delta source(s) "
                         f"(expected {OFFSET_LOG_VERSION!r}, the metadata and {sources} offset line(s); got "
                         f"{len(lines)} lines)")
    offsets = []
    for index, line in enumerate(lines[SOURCE_OFFSET_LINE:]):
        try:
            offsets.append(None if line.strip() == NO_OFFSET else SourceOffset.from_json(json.loads(line)))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path.toString()}: the offset of source {index} is not a Delta source's "
                             f"({error})") from None
    return tuple(offsets)


def batch_offsets(spark: SparkSession, checkpoint_path: str, batch_id: int,
                  known_ends: dict[int, tuple] | None = None) -> BatchOffsets | None:
    """The offsets ``batch_id`` of a stream over one Delta source read (see :func:`sources_batch_offsets`)."""
    offsets = sources_batch_offsets(spark, checkpoint_path, batch_id, 1, known_ends)
    return None if offsets is None else offsets[0]


def sources_batch_offsets(spark: SparkSession, checkpoint_path: str, batch_id: int, sources: int,
                          known_ends: dict[int, tuple] | None = None) -> tuple[BatchOffsets | None, ...] | None:
    """The offsets ``batch_id`` of the stream read from each of its ``sources`` sources, by source index: the
    previous batch's end offset and its own (a source with no end offset yet: None, it read nothing).

    Batch 0 starts at None (the table's beginning), as does a source the previous batch had no
    offset for. None when the checkpoint lacks the batch's offsets or its predecessor's (Spark
    keeps the last 100 at least): what the batch read is then not known, and nothing is
    recorded. ``known_ends``: end offsets already read by batch id (a run's earlier batches);
    the batch's own are added to it, so a run reads each offset file once.
    """
    known_ends = {} if known_ends is None else known_ends
    ends = read_offsets(spark, checkpoint_path, batch_id, sources)
    if ends is None:
        return None
    known_ends[batch_id] = ends
    starts = (None,) * sources if batch_id == 0 else (known_ends.get(batch_id - 1)
                                                      or read_offsets(spark, checkpoint_path, batch_id - 1, sources))
    if starts is None:
        return None
    return tuple(None if end is None else BatchOffsets(start, end) for start, end in zip(starts, ends))


def _jvm(spark: SparkSession):
    """The session's JVM gateway, or None for a Spark Connect session (no JVM in this process)."""
    try:
        return spark._jvm
    except Exception:  # noqa: BLE001 - Spark Connect raises its own error types for the attribute
        return None
