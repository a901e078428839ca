"""Spark's own windowed query, availableNow, as a process of its own (``bench_doors.py fresh``).

    python benchmarks/spark_stream_once.py RAW CHECKPOINT RESULTS

The query of the streaming benchmarks (:func:`bench_common.spark_windowed_stream`) on the session
``winjob`` would use (:func:`windowing.spark.runtime.spark_session.get_spark`, 4 shuffle partitions): what a
plain Spark script of the same job, started the same way, pays per arrival.
"""
from __future__ import annotations

import sys

from bench_common import spark_windowed_stream
from windowing.spark.runtime.spark_session import get_spark


def main() -> None:
    raw, checkpoint, results = sys.argv[1:4]
    spark = get_spark("spark_stream_once", shuffle_partitions=4)
    query = (spark_windowed_stream(spark, raw).writeStream.format("delta").outputMode("append")
             .option("checkpointLocation", checkpoint).option("path", results)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"query failed: {query.exception()}")


if __name__ == "__main__":
    main()
