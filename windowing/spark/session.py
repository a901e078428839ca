"""One SparkSession per process, with Delta Lake and settings sized for the data."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

DELTA_MAVEN_COORDINATE = "io.delta:delta-spark_4.2_2.13:4.4.0"
_REPO_JARS = Path(__file__).resolve().parents[2] / ".jars"


def delta_jars() -> list[str]:
    """The Delta jars that ./dev copied from Maven Central (empty if none)."""
    folder = Path(os.environ.get("WINDOWING_JARS_DIR", _REPO_JARS))
    return sorted(str(p) for p in folder.glob("delta-*.jar")) if folder.is_dir() else []


def get_spark(app_name: str = "spark-flink-windows", master: str | None = None,
              shuffle_partitions: int = 4, conf: Mapping[str, str] | None = None):
    """Return the process's SparkSession with Delta configured (creating it once).

    Delta comes from the local jars when ./dev fetched them, otherwise from
    ``spark.jars.packages`` (Ivy, Maven Central). ``conf`` overrides anything.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.appName(app_name)
               .master(master or os.environ.get("SPARK_MASTER", "local[2]"))
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.databricks.delta.snapshotPartitions", "2")
               # Delta 4.4 stores a table's whole file list in each commit's checksum file for
               # readers that use it; this release's readers never do (Snapshot.allFiles always
               # replays the log). Computing it costs every first commit to a table a Spark job
               # (0.05-0.15 CPU s each; a backfill creates three tables).
               .config("spark.databricks.delta.allFilesInCrc.enabled", "false")
               .config("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               # PySpark otherwise records the Python call site of every DataFrame function and
               # Column operator in the JVM for error messages: five py4j calls around each one,
               # two thirds of all py4j calls a streaming batch's plan building makes.
               .config("spark.python.sql.dataFrameDebugging.enabled", "false")
               .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "4g")))
    jars = delta_jars()
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    else:
        builder = builder.config("spark.jars.packages", DELTA_MAVEN_COORDINATE)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
