"""The raw rows one recorded micro-batch read, rebuilt from its Delta source offsets.

A batch read the data files between its start and end offset
(:mod:`pipelines.stream_offsets`) in the order Delta's streaming source walks the
table: first the files of the initial snapshot (when the stream started on an
existing table), sorted by modification time and path, then, version after
version, the files each commit added with ``dataChange`` (a compaction's
rewritten files are not new data), in the commit's order. This module walks the
same positions, taking the snapshot from Delta's log and each version's added
files from its commit file, and hands the files to Delta's own
``DeltaLog.createDataFrame``: the relation a micro-batch reads (Delta's file
index over exactly those files), so the rows, their partitions and their order
are the stream's.

The first batch (no start offset) read the initial snapshot. Its version is not
in the offsets; it is the table's version before the end offset's (the end offset
of a fully read snapshot points at the next version's start), or the end offset's
own version when the snapshot was split over batches. Should commits have landed
between the stream's start and its first batch, that batch read an older snapshot
and those commits' files: the same files (an append-only table's snapshot is the
union of its appends), grouped into partitions in another order.

Limits: the raw table's log must still hold the commit file of every version a
batch read (Delta removes them after ``delta.logRetentionDuration``, 30 days by
default), and the table must be append-only where the stream read it (a commit
that removes data fails the stream too).
"""
from __future__ import annotations

import json
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession

from pipelines.stream_offsets import BatchOffsets, SourceOffset
from windowing.spark.lake import delta_lake_io

BEFORE_ANY_FILE = -(2**63)
"""An index before every file of a version (Delta's own sentinels are negative too)."""


class ReplaySourceError(ValueError):
    """A batch's input cannot be rebuilt from the raw table (the message names the batch and why)."""


def batch_rows(spark: SparkSession, source_path: str, offsets: BatchOffsets, batch_id: int) -> DataFrame:
    """The rows batch ``batch_id`` of the stream read from the raw table at ``source_path``.

    Raises:
        ReplaySourceError: the offsets name another table (its id changed: the table was
            replaced), a commit file the batch read is gone, or a commit in the range removed data.
    """
    log = _delta_log(spark, source_path)
    table_id = str(log.tableId())
    for offset in (offsets.start, offsets.end):
        if offset is not None and offset.reservoir_id != table_id:
            raise ReplaySourceError(
                f"batch {batch_id}: the stream read table id {offset.reservoir_id} but {source_path} is table "
                f"{table_id} now (the raw table was replaced): its rows cannot be read again")
    files = _snapshot_files(spark, log, offsets) + _change_files(spark, log, source_path, offsets, batch_id)
    jvm = spark._jvm
    none = jvm.scala.Option.empty()
    snapshot = log.getSnapshotAt(offsets.end.version if offsets.end.index >= 0 or offsets.end.is_starting_version
                                 else max(offsets.end.version - 1, 0), none, none, False)
    frame = log.createDataFrame(snapshot, jvm.org.apache.spark.api.python.PythonUtils.toSeq(_java_list(spark, files)),
                                False, none)
    return DataFrame(frame, spark)


def file_names(spark: SparkSession, source_path: str, offsets: BatchOffsets, batch_id: int) -> list[str]:
    """The names of the data files the batch read, in Delta's reading order (for tests and messages)."""
    log = _delta_log(spark, source_path)
    files = _snapshot_files(spark, log, offsets) + _change_files(spark, log, source_path, offsets, batch_id)
    return [unquote(str(add.path()).rsplit("/", 1)[-1]) for add in files]


def _java_list(spark: SparkSession, items: list):
    result = spark._jvm.java.util.ArrayList()
    for item in items:
        result.add(item)
    return result


def _delta_log(spark: SparkSession, source_path: str):
    jvm = spark._jvm
    return jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, delta_lake_io.absolute(source_path))


def _snapshot_version(offsets: BatchOffsets) -> int | None:
    """The version of the initial snapshot the batch read from, or None if it read none of it."""
    if offsets.start is not None:
        return offsets.start.version if offsets.start.is_starting_version else None
    if offsets.end.is_starting_version:
        return offsets.end.version
    # A fully read snapshot's end offset points before the next version's first file.
    return offsets.end.version - 1 if offsets.end.version > 0 else None


def _snapshot_files(spark: SparkSession, log, offsets: BatchOffsets) -> list:
    """The initial snapshot's files the batch read (AddFile JVM objects), in Delta's order."""
    version = _snapshot_version(offsets)
    if version is None:
        return []
    low = offsets.start.index if offsets.start is not None else BEFORE_ANY_FILE
    high = offsets.end.index if (offsets.end.is_starting_version and offsets.end.version == version) else None
    none = spark._jvm.scala.Option.empty()
    snapshot = log.getSnapshotAt(version, none, none, False)
    then_by = spark._jvm.org.apache.spark.api.python.PythonUtils.toSeq(_java_list(spark, ["path"]))
    ordered = snapshot.allFiles().sort("modificationTime", then_by).collectAsList()
    return [add for index, add in enumerate(ordered) if index > low and (high is None or index <= high)]


def _change_files(spark: SparkSession, log, source_path: str, offsets: BatchOffsets, batch_id: int) -> list:
    """The files later commits added that the batch read (AddFile JVM objects), version by version."""
    end = offsets.end
    if end.is_starting_version:
        return []
    snapshot_version = _snapshot_version(offsets)
    if snapshot_version is not None:
        first = snapshot_version + 1
    else:
        first = offsets.start.version if offsets.start is not None else 0
    # An end offset before a version's first file (a negative index) reads nothing of that version.
    last = end.version if end.index >= 0 else end.version - 1
    after: SourceOffset | None = offsets.start if offsets.start is not None and not offsets.start.is_starting_version \
        else None
    jvm = spark._jvm
    store, conf, log_path = log.store(), log.newDeltaHadoopConf(), log.logPath()
    action = jvm.org.apache.spark.sql.delta.actions.Action
    files = []
    for version in range(first, last + 1):
        commit_file = jvm.org.apache.hadoop.fs.Path(log_path, f"{version:020d}.json")
        if not commit_file.getFileSystem(conf).exists(commit_file):
            raise ReplaySourceError(
                f"batch {batch_id}: the commit file of version {version} of {source_path} is gone (Delta cleans "
                f"up commit files after delta.logRetentionDuration): which files the batch read cannot be told")
        index = -1
        for line in store.read(commit_file, conf).mkString("\n").splitlines():
            if line.startswith('{"remove"') and json.loads(line)["remove"].get("dataChange", True):
                raise ReplaySourceError(
                    f"batch {batch_id}: version {version} of {source_path} removed data; a replay reads "
                    f"append-only raw tables (as the stream does without skipChangeCommits)")
            if not line.startswith('{"add"') or not json.loads(line)["add"].get("dataChange", True):
                continue
            index += 1
            position = (version, index)
            if after is not None and position <= after.position():
                continue
            if position <= end.position():
                files.append(action.fromJson(line))
    return files
