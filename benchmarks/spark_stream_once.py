"""Spark's own windowed query, availableNow, as a process of its own or an Airflow task.

    python benchmarks/spark_stream_once.py RAW CHECKPOINT RESULTS

The query of the streaming benchmarks (:func:`bench_common.spark_windowed_stream`) on the session
``winjob`` would use (:func:`windowing.spark.runtime.spark_session.get_spark`, 4 shuffle partitions): what a
plain Spark script of the same job, started the same way, pays per arrival. ``bench_doors.py fresh``
runs this file as a new process; ``bench_doors.py airflow`` calls :func:`run_once` inside an Airflow
task, as the product's streaming task calls its driver.
"""
from __future__ import annotations

import sys

from bench_common import spark_windowed_stream
from windowing.spark.runtime.spark_session import get_spark

SHUFFLE_PARTITIONS = 4
"""As the benchmark job's ``[spark]`` table sets for ours."""


def run_once(raw: str, checkpoint: str, results: str) -> int:
    """Process what landed in the Delta table ``raw`` since the checkpoint, append the windows that closed to
    the Delta table ``results``, then stop (availableNow); returns the micro-batches run.

    Raises:
        RuntimeError: the query failed (its exception in the message).
    """
    spark = get_spark("spark_stream_once", shuffle_partitions=SHUFFLE_PARTITIONS)
    query = (spark_windowed_stream(spark, raw).writeStream.format("delta").outputMode("append")
             .option("checkpointLocation", checkpoint).option("path", results)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"query failed: {query.exception()}")
    return len(query.recentProgress)


def main() -> None:
    raw, checkpoint, results = sys.argv[1:4]
    try:
        run_once(raw, checkpoint, results)
    except RuntimeError as error:
        raise SystemExit(str(error)) from None


if __name__ == "__main__":
    main()
