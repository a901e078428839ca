"""Delta writes that are idempotent per (application id, batch id).

Every table write of a batch carries Delta's ``txnAppId`` / ``txnVersion``:
Delta records the pair in the table's log and silently skips a later write
with the same application id and a version that is not higher. A batch
replayed after a crash therefore writes each row once, whichever writes of the
crashed attempt already landed. MERGE takes the pair from the session
configuration.
"""
from __future__ import annotations

from contextlib import contextmanager

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"


def table_exists(spark: SparkSession, path: str) -> bool:
    return DeltaTable.isDeltaTable(spark, path)


def create_empty(spark: SparkSession, schema, path: str, partition_by: list[str] | None = None) -> None:
    """Create a Delta table with ``schema`` if none exists at ``path``."""
    if table_exists(spark, path):
        return
    writer = (spark.createDataFrame([], schema).write.format("delta").mode("ignore")
              .option("delta.enableDeletionVectors", "true"))
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(path)


def append(df: DataFrame, path: str, app_id: str, batch_id: int, merge_schema: bool = False) -> None:
    """Append idempotently; ``merge_schema`` adds new columns of ``df`` to the table (schema evolution)."""
    writer = (df.write.format("delta").mode("append")
              .option("txnAppId", app_id).option("txnVersion", str(batch_id)))
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
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
