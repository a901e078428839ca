"""Stateless stages: a job file with a ``[transform]`` table instead of a window.

A transform job runs one SQL query over each micro-batch of its source table (the view
``input``) and appends what it returns to its results table: a projection, a filter, a join
with other Delta tables (``[transform.tables]``, each a view read at its current version when
the batch runs), or a second stage over another job's results (its source is that job's
results table; every pane of a window lands in one commit of that table, and a micro-batch
reads whole commits, so a batch sees all of a window's panes together). No state is kept.

* ``winjob stream``: Structured Streaming over the source table; each batch's rows are appended
  once per (operator id, batch id) (:func:`windowing.spark.lake.delta_lake_io.append`): a replayed batch
  writes nothing twice.
* ``winjob backfill``: the query over the whole source table, one pass, replacing the results
  table in one commit (``batch_id`` 0); rerunning it gives the same table.

Every output row carries ``batch_id``. Rows the query filters out are its semantics, not losses;
each batch is logged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

INPUT_VIEW = "input"
BATCH_ID = "batch_id"
from pipelines.job import TRANSFORM_SECTION as TRANSFORM  # noqa: E402  (defined once, with the job files)
_TRANSFORM_KEYS = {"sql", "tables"}


@dataclass(frozen=True)
class TransformJob:
    """A stateless stage, validated; paths are absolute.

    Attributes:
        sql: the query over the view ``input`` (and the views of ``tables``).
        tables: further views: name -> Delta table path.
    """

    name: str
    operator_id: str
    source_path: str
    sql: str
    results_path: str
    checkpoint_path: str
    tables: dict = field(default_factory=dict)
    spark_conf: dict = field(default_factory=dict)
    source_file: str | None = None
    definition: dict = field(default_factory=dict, compare=False, repr=False)

    def views(self, spark: SparkSession, batch: DataFrame) -> None:
        """Register ``input`` (the batch) and the job's other tables as temporary views."""
        batch.createOrReplaceTempView(INPUT_VIEW)
        for name, path in self.tables.items():
            spark.read.format("delta").load(path).createOrReplaceTempView(name)


def is_transform(data: dict) -> bool:
    """Whether parsed job-file tables describe a stateless stage."""
    return TRANSFORM in data


def transform_job(data: dict, path: Path, resolve) -> TransformJob:
    """The :class:`TransformJob` of a job file's tables (``resolve`` makes a path absolute).

    Raises:
        ValueError: naming the missing or unknown key and what is valid.
    """
    job, source, transform, out = (data.get("job", {}), data.get("source", {}), data[TRANSFORM],
                                   data.get("output", {}))
    for section, keys in (("job", ("name", "operator_id")), ("source", ("path",)), (TRANSFORM, ("sql",))):
        missing = [k for k in keys if k not in data.get(section, {})]
        if missing:
            raise ValueError(f"job definition {path}: [{section}] is missing {missing}")
    unknown = sorted(set(transform) - _TRANSFORM_KEYS)
    if unknown:
        raise ValueError(f"job definition {path}: [transform] has unknown keys {unknown}; valid: "
                         f"{sorted(_TRANSFORM_KEYS)}")
    others = sorted(set(data) & {"window", "aggregates", "process"})
    if others:
        raise ValueError(f"job definition {path}: a [transform] job has no {others} (it keeps no window state)")
    tables = transform.get("tables", {})
    if not isinstance(tables, dict) or not all(isinstance(v, str) for v in tables.values()) \
            or INPUT_VIEW in tables:
        raise ValueError(f"job definition {path}: [transform.tables] must map view names (not {INPUT_VIEW!r}) "
                         f"to table paths, got {tables!r}")
    base = out.get("root", f"output/{job['name']}")
    return TransformJob(name=job["name"], operator_id=job["operator_id"], source_path=resolve(source["path"]),
                        sql=str(transform["sql"]), results_path=resolve(out.get("results", f"{base}/results")),
                        checkpoint_path=resolve(out.get("checkpoint", f"{base}/checkpoint")),
                        tables={name: resolve(p) for name, p in tables.items()},
                        spark_conf={str(k): str(v) for k, v in data.get("spark", {}).items()},
                        source_file=str(path.resolve()), definition=data)


def run_stream(spark: SparkSession, job: TransformJob, processing_time: str | None = None,
               timeout_s: float | None = None) -> list[dict]:
    """Each micro-batch of the source through the query, appended once; returns per batch its counts."""
    from pipelines.drivers import log, require_raw_table
    from windowing.spark.lake import delta_lake_io
    require_raw_table(spark, job)
    batches: list[dict] = []

    def each_batch(df: DataFrame, batch_id: int) -> None:
        job.views(df.sparkSession, df)
        out = df.sparkSession.sql(job.sql).withColumn(BATCH_ID, F.lit(batch_id).cast("long"))
        written = delta_lake_io.append(out, job.results_path, job.operator_id, batch_id)
        batches.append({"batch_id": batch_id, "written": written})
        log(f"{job.name} batch {batch_id}: " + ("appended" if written else "already committed, skipped"))

    writer = (spark.readStream.format("delta").load(job.source_path).writeStream.foreachBatch(each_batch)
              .option("checkpointLocation", job.checkpoint_path))
    writer = writer.trigger(processingTime=processing_time) if processing_time else writer.trigger(availableNow=True)
    query = writer.start()
    try:
        query.awaitTermination(timeout_s) if (processing_time and timeout_s is not None) else query.awaitTermination()
    finally:
        if query.isActive:
            query.stop()
    failure = query.exception()
    if failure:
        raise RuntimeError(f"streaming job {job.name} failed: {failure}") from failure
    return batches


def run_backfill(spark: SparkSession, job: TransformJob) -> DataFrame:
    """The query over the whole source table in one pass; the results table replaced in one commit."""
    from pipelines.drivers import log, require_raw_table
    require_raw_table(spark, job)
    job.views(spark, spark.read.format("delta").load(job.source_path))
    out = spark.sql(job.sql).withColumn(BATCH_ID, F.lit(0).cast("long"))
    out.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(job.results_path)
    log(f"{job.name} backfill: the whole source in one pass, results replaced")
    return out
