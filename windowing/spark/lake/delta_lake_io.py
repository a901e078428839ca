"""Delta writes that land once per (application id, batch id).

A batch replayed after a crash must write each row once, whichever writes of
the crashed attempt already landed. Two mechanisms give that:

* Output and state writes (appends and MERGEs) carry a marker in the
  commit's ``userMetadata`` (``{"windowing_app_id": ..., "batch_id": ...}``).
  Before writing, :func:`committed_batch` reads the newest commits of the
  table's log (a few small JSON files, no Spark job) for the newest marker of
  the application; a batch at or below it has landed and is skipped. This is
  Delta's own ``txnAppId``/``txnVersion`` rule, checked cheaply: Delta 4.4
  answers ``txnVersion`` by reconstructing the whole snapshot state (a Spark
  job, about 2 CPU s per write on a small table), which cost every batch 4-5
  such jobs.
* The progress row, the batch's commit point, is appended the same way, with
  the writer's id in its marker, and checked after the commit:
  :func:`first_writer` reads the commits that landed since the version the
  writer started from and names the writer whose commit of the batch came
  first. Delta writes each log version once, so every writer of a race sees
  the same order: exactly one of them finds itself first. (Delta's own
  ``txnAppId`` check costs the commit a snapshot reconstruction, 0.9 CPU s of
  every streaming batch.)

Delta's ``txn`` actions written by earlier releases of this package count as
markers too, so existing tables resume without a gap.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from windowing.spark.input.columns import DELETE_FLAG

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
REPLACE_WHERE_CHECK_CONF = "spark.databricks.delta.replaceWhere.constraintCheck.enabled"
"""Delta refuses a ``replaceWhere`` write with a row outside its predicate unless this is false."""
MARKER_APP, MARKER_BATCH, MARKER_WRITER = "windowing_app_id", "batch_id", "writer_id"


def absolute(path: str) -> str:
    """A local path made absolute against the Python process's working directory (URIs unchanged).

    Spark would resolve a relative path against the JVM's start directory instead.
    """
    return path if "://" in path or path.startswith("file:") else os.path.abspath(path)


def delete_folder(spark: SparkSession, path: str) -> None:
    """Delete the folder at ``path`` (local or a URI) and everything under it, through Hadoop's file system."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(absolute(path))
    hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(hadoop_path, True)


def folder_names(spark: SparkSession, path: str) -> list[str]:
    """The names of the entries in the folder at ``path`` (none when it does not exist), through Hadoop's file
    system."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(absolute(path))
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(hadoop_path):
        return []
    return [status.getPath().getName() for status in fs.listStatus(hadoop_path)]


def table_exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds a Delta table now.

    Delta's own check answers from the session's cached view of the table's log, which
    stays "no table" after another process's (or thread's) creation lands; a folder whose
    log holds a commit is therefore asked again with the log read anew. A log that does
    not read as a table is no table. On Spark Connect, Delta's answer stands.
    """
    if DeltaTable.isDeltaTable(spark, path):
        return True
    if not hasattr(spark, "_jvm"):
        return False            # Spark Connect: no JVM in this process to read the log with
    if not has_commit(spark, path):
        return False
    try:
        return latest_version(spark, path) >= 0
    except Exception:  # noqa: BLE001 - a log this release cannot read
        return False


DEFAULT_PROPERTIES = {"delta.enableDeletionVectors": "true"}
"""Table properties of every table the product creates."""


def statistics_properties(columns: Sequence[str]) -> dict[str, str]:
    """Table properties that keep file statistics on ``columns`` only (none: Delta's default, the first 32)."""
    return {"delta.dataSkippingStatsColumns": ",".join(columns)} if columns else {}


def create_empty(spark: SparkSession, schema, path: str, partition_by: list[str] | None = None,
                 properties: dict[str, str] | None = None) -> None:
    """Create a Delta table with ``schema`` (and table ``properties``) if none exists at ``path``.

    A metadata-only commit (no Spark job writing an empty DataFrame). Safe against
    the two ways a creation can meet a folder that is not (yet) a table:

    * another process creates the same table at the same moment: one creates it,
      the other finds it created and uses it;
    * a creation that crashed left a ``_delta_log`` without a commit (or data files
      without a log): the folder was never a table, so it is created anew (by an
      empty append, which Delta accepts there). A folder whose log holds a commit
      is never touched.
    """
    if table_exists(spark, path):
        return
    path = absolute(path)   # the table builder reads a relative location as a table name
    builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(schema)
    for key, value in {**DEFAULT_PROPERTIES, **(properties or {})}.items():
        builder = builder.property(key, value)
    if partition_by:
        builder = builder.partitionedBy(*partition_by)
    try:
        builder.execute()
    except Exception:  # noqa: BLE001 - decided by what the folder holds now
        # The commit first: another writer's creation can land between two looks at the folder.
        if has_commit(spark, path):
            if table_exists(spark, path):
                return              # another writer created it meanwhile
            raise                   # a table this release cannot read: never touch it
        _create_by_empty_append(spark, schema, path, partition_by, properties)


@dataclass(frozen=True)
class EmptyTable:
    """A table for :func:`create_empty_tables`: :func:`create_empty`'s arguments."""
    schema: object
    path: str
    partition_by: list[str] | None = None
    properties: dict[str, str] = field(default_factory=dict)


def create_empty_tables(spark: SparkSession, tables: Sequence[EmptyTable]) -> None:
    """:func:`create_empty` for each of ``tables``, their metadata commits run side by side.

    A table's creation is a Delta commit of metadata only, whose time is the
    driver's (log listing, protocol checks, the commit file), not a Spark job's;
    several run in parallel threads in about the time of one. Returns when all
    exist; the first failure is raised. Called between writes, so no ``userMetadata``
    marker of a write (:func:`run_once`) is in the session's configuration.
    """
    if len(tables) <= 1 or not hasattr(spark, "_jvm"):
        for table in tables:
            create_empty(spark, table.schema, table.path, table.partition_by, table.properties)
        return
    with ThreadPoolExecutor(max_workers=len(tables), thread_name_prefix="create-empty") as pool:
        done = [pool.submit(create_empty, spark, t.schema, t.path, t.partition_by, t.properties) for t in tables]
        for future in done:
            future.result()


def has_commit(spark: SparkSession, path: str) -> bool:
    """Whether the folder's ``_delta_log`` holds a commit or checkpoint (then it is a table, readable or not)."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    log_path = jvm.org.apache.hadoop.fs.Path(absolute(path).rstrip("/") + "/_delta_log")
    fs = log_path.getFileSystem(conf)
    if not fs.exists(log_path):
        return False
    for status in fs.listStatus(log_path):
        name = status.getPath().getName()
        if name == "_last_checkpoint" or (name[:20].isdigit() and (name.endswith(".json")
                                                                   or ".checkpoint" in name)):
            return True
    return False


def _create_by_empty_append(spark: SparkSession, schema, path: str, partition_by: list[str] | None,
                            properties: dict[str, str] | None) -> None:
    writer = spark.createDataFrame([], schema).write.format("delta").mode("append")
    for key, value in {**DEFAULT_PROPERTIES, **(properties or {})}.items():
        writer = writer.option(key, value)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    try:
        writer.save(path)
    except Exception:  # noqa: BLE001 - another creator won the race: its table serves
        if not table_exists(spark, path):
            raise


def append(df: DataFrame, path: str, app_id: str, batch_id: int, merge_schema: bool = False,
           properties: dict[str, str] | None = None, writer_id: str | None = None) -> bool:
    """Append ``df`` once for ``(app_id, batch_id)``; False when that batch already landed (nothing written).

    The marker check of :func:`committed_batch` decides. ``merge_schema`` adds
    new columns of ``df`` to the table (schema evolution). A missing table is
    created by this write, in the same commit, with the default table
    properties and ``properties``. ``writer_id`` goes into the marker (for
    :func:`first_writer`).
    """
    spark = df.sparkSession
    exists = table_exists(spark, path)
    if exists and landed(spark, path, app_id, batch_id):
        return False
    writer = df.write.format("delta").mode("append").option("userMetadata", marker(app_id, batch_id, writer_id))
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    if not exists:
        for key, value in {**DEFAULT_PROPERTIES, **(properties or {})}.items():
            writer = writer.option(key, value)
    writer.save(path)
    return True


def run_once(spark: SparkSession, path: str, app_id: str, batch_id: int, write: Callable[[], None]) -> bool:
    """Run ``write`` (one DML statement on the table at ``path``, e.g. a MERGE) once for ``(app_id, batch_id)``.

    Returns False, without running it, when that batch already landed. The
    statement's commit carries the marker (through the session's
    ``userMetadata`` configuration, set only while it runs).
    """
    if landed(spark, path, app_id, batch_id):
        return False
    spark.conf.set(USER_METADATA_CONF, marker(app_id, batch_id))
    try:
        write()
    finally:
        spark.conf.unset(USER_METADATA_CONF)
    return True


def replace_where_once(spark: SparkSession, path: str, inserts: DataFrame, delete_where: str, app_id: str,
                       batch_id: int) -> int:
    """In ONE commit, once for ``(app_id, batch_id)``: the rows matching ``delete_where`` (SQL on the table's
    columns) leave the table and ``inserts`` are appended; returns the table's version.

    A Delta ``replaceWhere`` overwrite: the files holding matching rows are rewritten without them,
    with no join against the table (a MERGE joins the change set with it). The inserted rows need
    not match the predicate (Delta's constraint check is off for this write only).
    """
    if not landed(spark, path, app_id, batch_id):
        session = inserts.sparkSession   # a streaming micro-batch's frame has a session of its own
        session.conf.set(REPLACE_WHERE_CHECK_CONF, "false")
        try:
            (inserts.write.format("delta").mode("overwrite").option("replaceWhere", delete_where)
             .option("userMetadata", marker(app_id, batch_id)).save(path))
        finally:
            session.conf.unset(REPLACE_WHERE_CHECK_CONF)
    return latest_version(spark, path)


def merge_once(spark: SparkSession, path: str, source: DataFrame, keys: list[str], app_id: str, batch_id: int,
               update: bool = True) -> int:
    """MERGE a change set into the table at ``path`` once for ``(app_id, batch_id)``; returns the table's version.

    As :func:`merge_once_ran`, without telling whether this call wrote it.
    """
    return merge_once_ran(spark, path, source, keys, app_id, batch_id, update)[1]


def merge_once_ran(spark: SparkSession, path: str, source: DataFrame, keys: list[str], app_id: str,
                   batch_id: int, update: bool = True) -> tuple[bool, int]:
    """MERGE a change set into the table at ``path`` once for ``(app_id, batch_id)``.

    Returns whether this call ran the MERGE (False: the batch had landed) and the
    table's version afterwards.

    ``source`` has the table's columns plus a boolean ``__delete``: rows
    flagged with it delete the matching row, the others insert it, or replace
    it when ``update``. Rows match on ``keys`` with null-safe equality.
    Insert-only (``update`` False): a row that would insert over an existing
    row fails the MERGE (nothing of it lands) with a :class:`MergeCollisionError`
    naming the table, the application, the batch and the key.

    Raises:
        MergeCollisionError: an insert-only MERGE met a row with one of its keys.
    """
    target = DeltaTable.forPath(spark, path)
    values = {name: f"s.`{name}`" for name in source.columns if name != DELETE_FLAG}
    cond = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
    merge = target.alias("t").merge(source.alias("s"), cond).whenMatchedDelete(condition=f"s.`{DELETE_FLAG}`")
    if update:
        merge = merge.whenMatchedUpdate(set=values)
    else:
        column = next(iter(values))
        merge = merge.whenMatchedUpdate(set={column: _collision_error(path, keys, app_id, batch_id)
                                             .cast(source.schema[column].dataType)})
    merge = merge.whenNotMatchedInsert(condition=f"NOT s.`{DELETE_FLAG}`", values=values)
    try:
        ran = run_once(spark, path, app_id, batch_id, merge.execute)
    except Exception as error:  # noqa: BLE001 - only the collision raised above is translated
        if _COLLISION not in str(error):
            raise
        detail = str(error)[str(error).index(_COLLISION):].splitlines()[0].split(" SQLSTATE")[0].rstrip(". ")
        raise MergeCollisionError(detail) from None
    return ran, latest_version(spark, path)


_COLLISION = "insert-only MERGE into "


class MergeCollisionError(RuntimeError):
    """An insert-only MERGE found a row with the key of a row it inserts (it would have dropped it)."""


def _collision_error(path: str, keys: list[str], app_id: str, batch_id: int):
    """A column that fails the query with a message naming the table, application, batch and key."""
    from pyspark.sql import functions as F
    key_text = F.concat_ws(", ", *[F.concat(F.lit(f"{k}="), F.coalesce(F.col(f"s.`{k}`").cast("string"),
                                                                           F.lit("null"))) for k in keys])
    return F.raise_error(F.concat(
        F.lit(f"{_COLLISION}{path} by operator {app_id!r}, batch {int(batch_id)}: the table already has "
              f"a row with key "), key_text,
        F.lit(" (an insert-only table never replaces a row; the state it was derived from was not "
              "the state this batch started from)")))


def version_before_marks(spark: SparkSession, path: str, app_id: str) -> int:
    """The version of the table at ``path`` before the oldest commit ``app_id`` marked for a batch.

    The table's newest version when the log holds no such commit (or the
    older commits were cleaned up before one was found). For a state table no
    committed batch recorded a version of, this is the version a batch must
    read: the table as created, without what a crashed attempt merged.

    Raises:
        RuntimeError: the table's first commit is already marked (no version before it).
    """
    newest, before = None, None
    for version, commit_json in _commits_newest_first(spark, path):
        newest = version if newest is None else newest
        if commit_json is None:
            break
        if _batch_in_commit(commit_json, app_id) is not None:
            before = version - 1
    if before is None:
        return newest
    if before < 0:
        raise RuntimeError(f"table {path}: its first commit is a batch of {app_id!r}; there is no version "
                           f"of it before that batch to read")
    return before


def marker(app_id: str, batch_id: int, writer_id: str | None = None) -> str:
    """The ``userMetadata`` of a commit written by ``app_id`` for ``batch_id`` (by ``writer_id``)."""
    mark = {MARKER_APP: app_id, MARKER_BATCH: int(batch_id)}
    if writer_id is not None:
        mark[MARKER_WRITER] = writer_id
    return json.dumps(mark, sort_keys=True)


def landed(spark: SparkSession, path: str, app_id: str, batch_id: int) -> bool:
    """Whether ``app_id``'s write of ``batch_id`` (or of a later batch) has landed in the table at ``path``."""
    newest = committed_batch(spark, path, app_id)
    return newest is not None and newest >= batch_id


def committed_batch(spark: SparkSession, path: str, app_id: str) -> int | None:
    """The highest batch id ``app_id`` committed to the table at ``path``; None if it never wrote it.

    Reads the log's commit files from the newest backwards and stops at the
    first commit of ``app_id`` (a marker, or a Delta ``txn`` action of an older
    release): one small file for a table only this application writes. When
    the log's older commits have been cleaned up before one is found, Delta's
    own record (the snapshot's set transactions) answers, at the cost of a
    Spark job.
    """
    batch, _ = newest_marked_commit(spark, path, app_id)
    if batch is None:                            # cleaned up after a checkpoint
        return _from_delta_record(_snapshot(spark, path), app_id)
    return None if batch == -1 else batch


def appended_rows(spark: SparkSession, path: str, app_id: str, batch_id: int) -> int | None:
    """How many rows the append that ``app_id`` ran for ``batch_id`` wrote (its commit's ``numOutputRows``).

    Free where counting the appended DataFrame would compute it again: the
    commit file is read, newest first, and the search stops at the first commit of ``app_id``.
    Call it after :func:`append` wrote ``batch_id``: if the application's newest commit is
    of an earlier batch, the append wrote no rows (Delta records no empty commit), so 0.
    None when it cannot be told (see :func:`merge_deleted_rows`).
    """
    return _rows_of_batch(spark, path, app_id, batch_id, "numOutputRows")


def merge_deleted_rows(spark: SparkSession, path: str, app_id: str, batch_id: int) -> int | None:
    """How many target rows the MERGE that ``app_id`` ran for ``batch_id`` deleted (its commit's
    ``numTargetRowsDeleted``), read from the log like :func:`appended_rows`.

    Call it after :func:`merge_once` for ``batch_id``: if the application's newest
    commit is of an earlier batch (or it never wrote the table), that MERGE changed
    nothing (Delta records no empty commit), so 0. None when it cannot be told (a newer
    batch's commit, a commit without metrics, or the log cleaned up before a commit of
    the application was found).
    """
    return _rows_of_batch(spark, path, app_id, batch_id, "numTargetRowsDeleted")


def _rows_of_batch(spark: SparkSession, path: str, app_id: str, batch_id: int, metric: str) -> int | None:
    batch, metrics = newest_marked_commit(spark, path, app_id)
    if batch is None or batch > batch_id:
        return None
    if batch < batch_id:
        return 0
    rows = metrics.get(metric)
    return int(rows) if rows is not None else None


def newest_marked_commit(spark: SparkSession, path: str, app_id: str) -> tuple[int | None, dict]:
    """``(batch id, operationMetrics)`` of the newest commit ``app_id`` marked in the table at ``path``.

    ``(-1, {})`` when the whole log holds no commit of ``app_id``; ``(None, {})``
    when the log's older commits were cleaned up before one was found. Reads commit
    files only (no Spark job).
    """
    for _, commit_json in _commits_newest_first(spark, path):
        if commit_json is None:
            return None, {}
        batch = _batch_in_commit(commit_json, app_id)
        if batch is not None:
            return batch, dict(_commit_info(commit_json).get("operationMetrics") or {})
    return -1, {}


def first_writer(spark: SparkSession, path: str, app_id: str, batch_id: int, after_version: int) -> str | None:
    """The writer id in the first commit after ``after_version`` that ``app_id`` marked for ``batch_id``.

    None when no such commit carries a writer id (or the log's commits after
    ``after_version`` were cleaned up). Reads commit files only (no Spark job).
    """
    first = None
    for version, commit_json in _commits_newest_first(spark, path):
        if version <= after_version or commit_json is None:
            break
        mark = _marker_in_commit(commit_json)
        if mark and mark.get(MARKER_APP) == app_id and mark.get(MARKER_BATCH) == batch_id:
            first = mark.get(MARKER_WRITER)
    return first


def markers_newest_first(spark: SparkSession, path: str):
    """Yield ``(version, marker dict or None)`` of the table's commits from the newest down (see :func:`marker`).

    The walk ends at a version whose commit file was cleaned up after a checkpoint.
    Reads commit files only (no Spark job).
    """
    for version, commit_json in _commits_newest_first(spark, path):
        if commit_json is None:
            return
        yield version, _marker_in_commit(commit_json)


def _snapshot(spark: SparkSession, path: str):
    """The table's DeltaLog and its current snapshot (JVM objects; no Spark job)."""
    jvm = spark._jvm
    none = jvm.scala.Option.empty()
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, absolute(path))
    return log.update(False, none, none)


def _commits_newest_first(spark: SparkSession, path: str):
    """Yield ``(version, text of its commit file)`` from the newest version down; the text is
    None (and the walk ends) at a version whose file was cleaned up after a checkpoint."""
    if not hasattr(spark, "_jvm"):
        yield from _commits_from_history(spark, path)
        return
    snapshot = _snapshot(spark, path)
    log = snapshot.deltaLog()
    store, conf, log_path = log.store(), log.newDeltaHadoopConf(), log.logPath()
    jvm = spark._jvm
    for version in range(int(snapshot.version()), -1, -1):
        commit_file = jvm.org.apache.hadoop.fs.Path(log_path, f"{version:020d}.json")
        if not commit_file.getFileSystem(conf).exists(commit_file):
            yield version, None
            return
        yield version, store.read(commit_file, conf).mkString("\n")


def _commits_from_history(spark: SparkSession, path: str):
    """:func:`_commits_newest_first` for a session without a JVM in this process (Spark Connect).

    Delta's public history (one Spark job per call) gives each version's commit info; the
    text yielded holds only that (``txn`` actions of tables written by earlier releases are
    not in the history).
    """
    history = (DeltaTable.forPath(spark, absolute(path)).history()
               .select("version", "userMetadata", "operationMetrics").collect())
    versions = {int(row["version"]): row for row in history}
    for version in range(max(versions, default=-1), -1, -1):
        row = versions.get(version)
        if row is None:
            yield version, None
            return
        info = {"userMetadata": row["userMetadata"], "operationMetrics": dict(row["operationMetrics"] or {})}
        yield version, json.dumps({"commitInfo": info})


def _commit_info(commit_json: str) -> dict:
    for line in commit_json.splitlines():
        if line.startswith('{"commitInfo"'):
            return json.loads(line)["commitInfo"]
    return {}


def _marker_in_commit(commit_json: str) -> dict | None:
    """The marker in one commit file's text (see :func:`marker`), else None."""
    metadata = _commit_info(commit_json).get("userMetadata")
    try:
        mark = json.loads(metadata) if metadata else None
    except ValueError:
        return None                           # someone else's free-text metadata
    return mark if isinstance(mark, dict) and MARKER_APP in mark else None


def _batch_in_commit(commit_json: str, app_id: str) -> int | None:
    """The batch id of ``app_id``'s marker (or Delta ``txn`` action) in one commit file's text, else None."""
    mark = _marker_in_commit(commit_json)
    if mark is not None and mark.get(MARKER_APP) == app_id:
        return int(mark[MARKER_BATCH])
    for line in commit_json.splitlines():
        if line.startswith('{"txn"'):
            txn = json.loads(line)["txn"]
            if txn.get("appId") == app_id:
                return int(txn["version"])
    return None


def _from_delta_record(snapshot, app_id: str) -> int | None:
    version = snapshot.transactions().get(app_id)
    return None if version.isEmpty() else int(version.get())


def latest_version(spark: SparkSession, path: str) -> int:
    """The table's newest committed version.

    Read from Delta's transaction log in the JVM (milliseconds); the public
    ``history()`` route runs a Spark job (about a second) and stays as the
    fallback should the internal call change in another Delta release.
    """
    try:
        jvm = spark._jvm
        none = jvm.scala.Option.empty()
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
        return int(log.update(False, none, none).version())
    except Exception:  # noqa: BLE001 - any failure of the internal route: use the public one
        return DeltaTable.forPath(spark, path).history(1).select("version").first()[0]


def table_identity(spark: SparkSession, path: str) -> tuple[str, int] | None:
    """``(table id, newest version)`` of the Delta table at ``path`` from its log in the JVM (no Spark
    job), or None: no table there, or no JVM in this process (Spark Connect), or the log cannot tell.

    The id is Delta's, fixed when the table is created: a table deleted and created again at the
    same path has another id, so equal identities mean the same table at the same version.
    """
    if not hasattr(spark, "_jvm"):
        return None
    try:
        snapshot = _snapshot(spark, path)
        version = int(snapshot.version())
        return None if version < 0 else (str(snapshot.metadata().id()), version)
    except Exception:  # noqa: BLE001 - a log this release cannot read: nothing is known
        return None


def newest_rows(table: DataFrame, column: str) -> list:
    """The rows of a Delta table's ``table`` (a read of it, perhaps with columns dropped) whose
    ``column`` holds its largest value, without reading every file.

    Delta answers the maximum from the file statistics in its log, and the filter on that value
    reads only the files whose statistics can hold it: the cost follows the log, not the number of
    files (a progress table gains one a batch; sorting them all opened every file). Should the
    statistics name a value no row has, the rows are sorted instead.
    """
    from pyspark.sql import functions as F
    newest = table.agg(F.max(column)).first()[0]
    if newest is None:
        return []
    rows = table.where(F.col(column) == F.lit(newest)).collect()
    if rows:
        return rows
    top = table.orderBy(F.col(column).desc()).limit(1).collect()
    return table.where(F.col(column) == F.lit(top[0][column])).collect() if top else []


def read_as_of(spark: SparkSession, path: str, version: int | None) -> DataFrame:
    """The table's rows at ``version`` (None: the newest), read from the newest version that has
    the same rows (:func:`same_rows_version`): a compaction and a ``VACUUM`` after the version a
    batch pinned leave the rows readable from the compacted files."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", same_rows_version(spark, path, version))
    return reader.load(path)


def same_rows_version(spark: SparkSession, path: str, version: int) -> int:
    """The newest version of the table at ``path`` that holds the rows of ``version``.

    ``version`` itself, or a later one reached only through commits that change no row: a
    compaction (``OPTIMIZE``, auto compaction, a rewrite written with ``dataChange = false``:
    every file it adds or removes is marked ``dataChange: false``) or a commit of commit
    information alone (``VACUUM``'s). The walk stops before the first other commit (rows
    written or removed, a schema, property or protocol change, an action it does not know)
    and gives ``version`` when a newer commit file is gone from the log. Reads commit files
    only (no Spark job); a session without a JVM in this process (Spark Connect) gets ``version``.
    """
    if not hasattr(spark, "_jvm") or int(_snapshot(spark, path).version()) == version:
        return version          # the newest version (a pin almost always is): no commit file to read
    newer = []
    for newer_version, commit_json in _commits_newest_first(spark, path):
        if newer_version <= version:
            break
        if commit_json is None:
            return version
        newer.append(commit_json)
    same = version
    for commit_json in reversed(newer):
        if not _changes_no_rows(commit_json):
            break
        same += 1
    return same


EMPTY_CHECK_COMMITS = 8
"""Most commit files :func:`schema_if_empty` reads before it gives up (a table as created has one)."""


def schema_if_empty(spark: SparkSession, path: str, version: int):
    """The table's schema at ``version`` when no commit up to ``version`` added a data file (the table
    holds no row there: a state table as created), else None.

    Reads at most :data:`EMPTY_CHECK_COMMITS` commit files (no Spark job), newest first; None when
    the log holds more commits than that, or a commit up to ``version`` was cleaned up after a
    checkpoint, or on a session without a JVM in this process (Spark Connect: its history does
    not list the files a commit added).
    """
    from pyspark.sql import types as T
    if not hasattr(spark, "_jvm") or version >= EMPTY_CHECK_COMMITS:
        return None               # the commits 0 .. version are more than it reads
    schema_json = None
    for read, (commit_version, commit_json) in enumerate(_commits_newest_first(spark, path)):
        if read >= EMPTY_CHECK_COMMITS or commit_json is None:
            return None
        if commit_version > version:
            continue
        for line in commit_json.splitlines():
            if line.startswith('{"add"'):
                return None
            if schema_json is None and line.startswith('{"metaData"'):
                schema_json = json.loads(line)["metaData"]["schemaString"]
    return None if schema_json is None else T.StructType.fromJson(json.loads(schema_json))


def _changes_no_rows(commit_json: str) -> bool:
    """Whether a commit file's actions are commit information and files added or removed with
    ``dataChange: false`` only."""
    for line in commit_json.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)          # one action a line: {"<kind>": {...}}
        if len(action) != 1:
            return False
        (kind, body), = action.items()
        if not (kind == "commitInfo" or (kind in ("add", "remove") and body.get("dataChange") is False)):
            return False
    return True


def conform(df: DataFrame, schema) -> DataFrame:
    """Select and cast ``df``'s columns to a table's schema (untyped nulls included).

    Only columns of another type are cast; ``df`` itself comes back when it has the
    table's columns in order with their types. (Each cast is several py4j calls and a
    state table has dozens of columns: on small streaming batches that was a visible
    share of the driver's time per batch.)
    """
    from pyspark.sql import functions as F
    have = {f.name: f.dataType for f in df.schema.fields}
    if df.columns == schema.names and all(have[f.name] == f.dataType for f in schema.fields):
        return df
    return df.select(*[f.name if have.get(f.name) == f.dataType else cast_to(F.col(f.name), f.dataType).alias(f.name)
                       for f in schema.fields])


def cast_to(column, data_type):
    """``column.cast(data_type)`` in one py4j call for atomic types (their DDL name).

    Casting to a ``DataType`` object first converts the type through the JVM (several
    calls); nested types, whose DDL names would need quoting, still go that way.
    """
    from pyspark.sql import types as T
    if isinstance(data_type, (T.StructType, T.ArrayType, T.MapType, T.UserDefinedType)):
        return column.cast(data_type)
    return column.cast(data_type.simpleString())


@dataclass(frozen=True)
class BatchFiles:
    """The data files each batch of one application appended to a table, and the table's schema."""

    schema: object
    """The table's schema (a ``StructType``) at its newest version."""
    files: dict[int, list[str]]
    """Batch id -> the absolute paths of the files its one commit added."""


def batch_files(spark: SparkSession, path: str, app_id: str, from_batch: int | None = None) -> BatchFiles | None:
    """The files ``app_id``'s batches ``from_batch`` .. newest appended to the table at ``path``
    (``from_batch`` None: the newest batch only), read from the commit files (no Spark job).

    Given only when the log tells them plainly: walking from the newest commit down to the first
    commit of a batch below ``from_batch`` (or the table's first version), every commit either
    changes nothing (a table's creation, a property change) or is one append of ``app_id``'s, one
    per batch, that removes nothing. A delete, a compaction, a second commit of one batch (a
    writer that lost a race), another application's rows, a cleaned-up commit file, a table with
    column mapping, partitions or deletion vectors on its files, or a session without a JVM in this process
    (Spark Connect) give None: the caller reads the table through Delta instead. Files a commit
    added stay what that commit wrote, so reading them gives each batch's rows exactly.
    """
    if not hasattr(spark, "_jvm"):
        return None
    snapshot = _snapshot(spark, path)
    if int(snapshot.version()) < 0:
        return None
    metadata = snapshot.metadata()
    configuration = metadata.configuration()
    if metadata.partitionColumns().nonEmpty():
        return None                   # partition values are not in the files
    if configuration.contains("delta.columnMapping.mode") \
            and str(configuration.apply("delta.columnMapping.mode")) != "none":
        return None
    root = absolute(path).rstrip("/")
    files: dict[int, list[str]] = {}
    newest: int | None = None
    for _, commit_json in _commits_newest_first(spark, path):
        if commit_json is None:
            return None
        adds, plain = [], True
        for line in commit_json.splitlines():
            if line.startswith('{"add"'):
                add = json.loads(line)["add"]
                plain = plain and add.get("deletionVector") is None
                adds.append(add["path"])
            elif line.startswith(('{"remove"', '{"cdc"')):
                plain = False
        mark = _marker_in_commit(commit_json)
        if not plain:
            return None
        if mark is None or mark.get(MARKER_APP) != app_id:
            if adds:
                return None           # rows of another writer
            continue                  # a commit that changes no row
        batch = int(mark[MARKER_BATCH])
        newest = batch if newest is None else newest
        lowest = newest if from_batch is None else from_batch
        if batch < lowest:
            break
        if batch in files:
            return None               # two commits of one batch
        files[batch] = [_file_uri(root, p) for p in adds]
    from pyspark.sql import types as T
    schema = T.StructType.fromJson(json.loads(metadata.schemaString()))
    return BatchFiles(schema, files)


def _file_uri(root: str, add_path: str) -> str:
    """An add action's path (a URI-encoded path relative to the table, or an absolute URI) as a
    path the Parquet reader takes."""
    from urllib.parse import unquote
    return add_path if "://" in add_path else f"{root}/{unquote(add_path)}"


def newest_batch_row(spark: SparkSession, path: str, app_id: str, drop: Sequence[str] = ()):
    """The row ``app_id``'s newest batch appended to the table at ``path`` (its columns but
    ``drop``), read from the one file its commit added (one Spark job, no replay of the log); None
    when the log does not tell it plainly (:func:`batch_files`) or that commit did not add one row:
    the caller reads the table through Delta instead."""
    found = batch_files(spark, path, app_id)
    if found is None or len(found.files) != 1:
        return None
    rows = read_batch_files(spark, found, found.files).drop(*drop).collect()
    return rows[0] if len(rows) == 1 else None


def read_batch_files(spark: SparkSession, found: BatchFiles, batches) -> DataFrame:
    """The rows the ``batches`` (ids among ``found.files``) appended, with the table's schema (a
    column a file lacks reads as null), read straight from their Parquet files."""
    paths = [p for b in batches for p in found.files[b]]
    if not paths:
        return spark.createDataFrame([], found.schema)
    return spark.read.schema(found.schema).parquet(*paths)


def appended_values(spark: SparkSession, path: str, column: str) -> set | None:
    """The values of ``column`` in the table at ``path``, read from its commit files' file statistics (no
    Spark job): every commit from version 0 on only added files, each file's statistics give the column
    one value (its minimum equals its maximum, nulls aside: no null allowed). None when the log does not
    tell it so plainly (a file removed, a commit file cleaned up, statistics missing): read the table."""
    values: set = set()
    for version, commit_json in _commits_newest_first(spark, path):
        if commit_json is None:
            return None
        for line in commit_json.splitlines():
            if line.startswith('{"remove"'):
                return None
            if not line.startswith('{"add"'):
                continue
            stats = json.loads(json.loads(line)["add"].get("stats") or "{}")
            low, high = (stats.get(k, {}).get(column) for k in ("minValues", "maxValues"))
            if low is None or low != high or stats.get("nullCount", {}).get(column):
                return None
            values.add(low)
    return values
