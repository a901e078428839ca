"""One SparkSession per process, with Delta Lake and settings sized for the data.

Where the session runs is one setting: ``spark.master`` (``local[2]`` by default,
``spark://host:7077`` for a standalone cluster) or ``spark.remote`` (``sc://host:15002``,
a Spark Connect server). On a cluster, executors get the project's code as its wheel
(:func:`ship_code`); tables on an S3-compatible store need the S3A jars
(:func:`object_store_jars`) and the store's endpoint and keys, which come from the
job's ``[spark]`` table (``spark.hadoop.fs.s3a.*``) or the environment
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

from windowing.spark.runtime import py4j_calls

DELTA_MAVEN_COORDINATE = "io.delta:delta-spark_4.2_2.13:4.4.0"
_REPO_JARS = Path(__file__).resolve().parents[3] / ".jars"
"""The jars folder ./dev fills, at the repository's root (used when ``WINDOWING_JARS_DIR`` is unset)."""


def delta_jars() -> list[str]:
    """The Delta jars that ./dev copied from Maven Central (empty if none)."""
    folder = Path(os.environ.get("WINDOWING_JARS_DIR", _REPO_JARS))
    return sorted(str(p) for p in folder.glob("delta-*.jar")) if folder.is_dir() else []


QUICK_JIT_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
"""JVM options for a short local process: the JIT's quick tier (C1) only.

The optimizing tier (C2) compiles Spark's, Delta's and the generated code of every first
query: in a ``winjob stream`` process of one small batch it took half of the JVM's CPU time
(37 of 74 CPU seconds) and finished compiling only when the process was about to exit. A
short local process (a test, a soak's ``winjob`` run, a one-batch job on a busy machine) may set
``"spark.driver.extraJavaOptions" = "-XX:TieredStopAtLevel=1"`` in its ``[spark]`` table. Not
the default: a long local backfill runs its hot loops faster with C2.
"""


S3A_PREFIX = "spark.hadoop.fs.s3a."


def object_store_jars() -> list[str]:
    """The S3A jars: every jar in ``s3a/`` of the jars folder (hadoop-aws and the AWS SDK modules
    it loads, as ./dev copies them from Maven Central); empty if there is none."""
    folder = Path(os.environ.get("WINDOWING_JARS_DIR", _REPO_JARS)) / "s3a"
    return sorted(str(p) for p in folder.glob("*.jar")) if folder.is_dir() else []


def object_store_settings(conf: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """S3A settings for an S3-compatible endpoint named by ``AWS_ENDPOINT_URL`` (none without it).

    An endpoint other than AWS's needs path-style requests (``http://host:port/bucket/key``);
    ``http://`` turns TLS off. Settings already in ``conf`` win. Keys are not copied here:
    Spark passes ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` to S3A itself.
    """
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        return {}
    settings = {f"{S3A_PREFIX}endpoint": endpoint, f"{S3A_PREFIX}path.style.access": "true",
                f"{S3A_PREFIX}connection.ssl.enabled": str(endpoint.startswith("https://")).lower(),
                f"{S3A_PREFIX}endpoint.region": environ.get("AWS_REGION", "us-east-1")}
    return {k: v for k, v in settings.items() if k not in conf}


def is_local(master: str) -> bool:
    return master.startswith("local")


def ship_code(wheel: str | None = None) -> str | None:
    """The project's wheel as a file Spark puts on executors' Python path (None: none built).

    ``wheel`` defaults to ``WINDOWING_WHEEL`` (./dev builds it into dist/). PySpark adds
    only ``.zip``, ``.egg`` and ``.jar`` files of ``spark.submit.pyFiles`` to executors'
    ``sys.path``; a wheel of pure Python modules is a zip archive, so the same bytes go out
    under a ``.zip`` name.
    """
    wheel = wheel or os.environ.get("WINDOWING_WHEEL")
    if not wheel:
        return None
    if not Path(wheel).is_file():
        raise FileNotFoundError(f"WINDOWING_WHEEL={wheel!r} is not a file; build it with ./dev wheel "
                                f"or pip wheel --no-deps .")
    shipped = Path(tempfile.mkdtemp(prefix="windowing-code-")) / (Path(wheel).name + ".zip")
    shutil.copyfile(wheel, shipped)
    return str(shipped)


def get_spark(app_name: str = "spark-flink-windows", master: str | None = None,
              shuffle_partitions: int = 4, conf: Mapping[str, str] | None = None):
    """Return the process's SparkSession with Delta configured (creating it once).

    Delta comes from the local jars when ./dev fetched them, otherwise from
    ``spark.jars.packages`` (Ivy, Maven Central). ``conf`` overrides anything.
    ``master`` (else ``conf["spark.master"]``, else ``SPARK_MASTER``, else ``local[2]``)
    chooses where it runs; ``conf["spark.remote"]`` or ``SPARK_REMOTE`` makes it a
    Spark Connect client instead (see :func:`connect_session`).
    """
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    remote = conf.pop("spark.remote", None) or os.environ.get("SPARK_REMOTE")
    if remote:
        return connect_session(remote, app_name, shuffle_partitions, conf)
    active = SparkSession.getActiveSession()
    if active is not None:
        py4j_calls.install(active.sparkContext._gateway)
        return active
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    master = master or conf.pop("spark.master", None) or os.environ.get("SPARK_MASTER", "local[2]")
    builder = (SparkSession.builder.appName(app_name)
               .master(master)
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
    conf = {**object_store_settings(conf), **conf}
    s3a_jars = object_store_jars()
    if s3a_jars and any(k.startswith(S3A_PREFIX) for k in conf):
        # On the class path of the driver and of executors (a file every worker has at this
        # path, as on this machine's cluster; not shipped with each job).
        for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath"):
            conf[key] = os.pathsep.join([*s3a_jars, *filter(None, [conf.get(key)])])
    if not is_local(master) and "spark.submit.pyFiles" not in conf:
        code = ship_code()
        if code:
            conf["spark.submit.pyFiles"] = code
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    py4j_calls.install(spark.sparkContext._gateway)
    return spark


CONNECT_STATIC_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.", "spark.executor.",
                           "spark.submit.", "spark.ui.", "spark.master", "spark.hadoop.", "spark.sql.extensions",
                           "spark.sql.catalog.spark_catalog", "spark.databricks.delta.snapshotPartitions")


def connect_session(remote: str, app_name: str, shuffle_partitions: int, conf: Mapping[str, str]):
    """A Spark Connect session to ``remote`` (``sc://host:port``) with the job's SQL settings.

    The server owns the JVM: Delta's jars and extension, S3A and the executors' code are
    its settings (docs/cluster.md shows the command). Settings a running session cannot
    change (jars, memory, master, Hadoop) are left out here.
    """
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    runtime = {"spark.sql.shuffle.partitions": str(shuffle_partitions), "spark.sql.session.timeZone": "UTC",
               "spark.sql.execution.arrow.pyspark.enabled": "true", **conf}
    for key, value in runtime.items():
        if not key.startswith(CONNECT_STATIC_SETTINGS):
            spark.conf.set(key, value)
    return spark
