"""Delta writes that are idempotent per (application id, batch id).

Every table write of a batch carries Delta's ``txnAppId`` / ``txnVersion``:
Delta records the pair in the table's log and silently skips a later write
with the same application id and a version that is not higher. A batch
replayed after a crash therefore writes each row once, whichever writes of the
crashed attempt already landed. MERGE takes the pair from the session
configuration.
"""
from __future__ import annotations

import os

from contextlib import contextmanager

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"


def absolute(path: str) -> str:
    """A local path made absolute against the Python process's working directory (URIs unchanged).

    Spark would resolve a relative path against the JVM's start directory instead.
    """
    return path if "://" in path or path.startswith("file:") else os.path.abspath(path)


def table_exists(spark: SparkSession, path: str) -> bool:
    return DeltaTable.isDeltaTable(spark, path)


DEFAULT_PROPERTIES = {"delta.enableDeletionVectors": "true"}
"""Table properties of every table the product creates."""


def create_empty(spark: SparkSession, schema, path: str, partition_by: list[str] | None = None,
                 properties: dict[str, str] | None = None) -> None:
    """Create a Delta table with ``schema`` (and table ``properties``) if none exists at ``path``.

    A metadata-only commit (no Spark job writing an empty DataFrame).
    """
    if table_exists(spark, path):
        return
    path = absolute(path)   # the table builder reads a relative location as a table name
    builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(schema)
    for key, value in {**DEFAULT_PROPERTIES, **(properties or {})}.items():
        builder = builder.property(key, value)
    if partition_by:
        builder = builder.partitionedBy(*partition_by)
    builder.execute()


def append(df: DataFrame, path: str, app_id: str, batch_id: int, merge_schema: bool = False,
           properties: dict[str, str] | None = None) -> None:
    """Append idempotently; ``merge_schema`` adds new columns of ``df`` to the table (schema evolution).

    A missing table is created by this write, in the same commit, with the
    default table properties and ``properties`` (saves a separate creating
    commit).
    """
    writer = (df.write.format("delta").mode("append")
              .option("txnAppId", app_id).option("txnVersion", str(batch_id)))
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    if not table_exists(df.sparkSession, path):
        for key, value in {**DEFAULT_PROPERTIES, **(properties or {})}.items():
            writer = writer.option(key, value)
    writer.save(path)


@contextmanager
def txn(spark: SparkSession, app_id: str, batch_id: int):
    """Make the DML statements inside (MERGE) idempotent for ``(app_id, batch_id)``."""
    spark.conf.set(TXN_APP_ID_CONF, app_id)
    spark.conf.set(TXN_VERSION_CONF, str(batch_id))
    try:
        yield
    finally:
        spark.conf.unset(TXN_APP_ID_CONF)
        spark.conf.unset(TXN_VERSION_CONF)


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


def read_as_of(spark: SparkSession, path: str, version: int | None) -> DataFrame:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(path)


def conform(df: DataFrame, schema) -> DataFrame:
    """Select and cast ``df``'s columns to a table's schema (untyped nulls included)."""
    from pyspark.sql import functions as F
    return df.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])
