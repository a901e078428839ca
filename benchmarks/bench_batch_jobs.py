"""Spark jobs and CPU seconds per small streaming batch of the DataFrame-plan operator on Delta.

The job count does not depend on the machine's load, so it is the number to compare
between versions of the operator; CPU seconds (Spark JVM + Python driver) are noisier.
Every streaming batch pays this fixed cost, and so does every batch of the transcript
tests (streams cut into batches of 1, 2 and n rows).

    ./dev bench bench_batch_jobs.py                    # 2,000 rows per batch, 6 batches, then the call sites
    ./dev bench bench_batch_jobs.py --rows 2           # tiny batches, as the transcripts cut them
    ./dev bench bench_batch_jobs.py --late             # one late row per batch (late table written)

Prints per batch: Spark jobs, wall and CPU seconds; then, for one more batch, the jobs
grouped by the Python line that started them.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_windows import timed_cpu  # noqa: E402

from pyspark.sql import functions as F  # noqa: E402

from windowing import Count, Sum, TumblingEventTimeWindows, WindowSpecBuilder  # noqa: E402
from windowing.spark.operator.dispatch import operator_on_delta  # noqa: E402
from windowing.spark.runtime.spark_session import get_spark  # noqa: E402

BASE_MS = 1_793_491_200_000


def attribute_jobs(jobs) -> Counter:
    """Count the Spark jobs each step of a batch starts, by wrapping the operator's Spark and Delta calls.

    Nested steps count their own jobs; the enclosing step gets the rest. Returns the live counter.
    """
    import functools
    from pyspark.sql.classic.dataframe import DataFrame
    from windowing.spark.lake import delta_lake_io
    from windowing.spark.state import stores
    counts: Counter = Counter()
    stack: list[list] = []

    def wrap(owner, name: str, label: str, by_caller: bool = False) -> None:
        original = getattr(owner, name)
        import sys as _sys

        @functools.wraps(original)
        def wrapper(*a, **k):
            frame = [len(jobs()), 0]
            stack.append(frame)
            try:
                return original(*a, **k)
            finally:
                stack.pop()
                spent = len(jobs()) - frame[0]
                where = label
                if by_caller:
                    caller = _sys._getframe(1)
                    where = f"{label} ({Path(caller.f_code.co_filename).name}:{caller.f_lineno})"
                counts[where] += spent - frame[1]
                if stack:
                    stack[-1][1] += spent
        setattr(owner, name, wrapper)

    for name in ("count", "first", "collect", "persist", "isEmpty"):
        wrap(DataFrame, name, f"DataFrame.{name}", by_caller=True)
    for name in ("merge_once", "append", "latest_version", "committed_batch", "appended_rows", "create_empty",
                 "table_exists", "read_as_of"):
        wrap(delta_lake_io, name, f"delta_lake_io.{name}")
    for name in ("commit_progress", "write_output", "merge_windows", "last_progress", "ensure_tables"):
        wrap(stores.DeltaStore, name, f"DeltaStore.{name}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000, help="rows per batch")
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--late", action="store_true", help="add one late row to every batch after the first")
    parser.add_argument("--event-log", help="also write Spark's event log to this folder (job call stacks)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    args = parser.parse_args()
    conf = dict(kv.split("=", 1) for kv in args.conf)
    if args.event_log:
        conf.update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": args.event_log,
                     "spark.eventLog.compress": "false"})
    spark = get_spark("bench_batch_jobs", shuffle_partitions=4, conf=conf)
    root = tempfile.mkdtemp(prefix="bench_batch_jobs_")
    spec = (WindowSpecBuilder().key_by("user_id").event_time("event_time", 1000)
            .window(TumblingEventTimeWindows.of("1 minute")).allowed_lateness(60_000)
            .side_output_late_data()
            .aggregate(Sum("item_count"), Count()))
    op = operator_on_delta(spark, spec, "op", root)
    sc = spark.sparkContext
    tracker = sc.statusTracker()

    def jobs() -> list[int]:
        return sorted(tracker.getJobIdsForGroup())

    def batch(b: int):
        step_ms = max(1, 100_000 // args.rows)
        df = (spark.range(args.rows).withColumn("user_id", (F.col("id") % 50).cast("string"))
              .withColumn("event_time", F.timestamp_millis(F.lit(BASE_MS + b * 120_000) + F.col("id") * step_ms))
              .withColumn("item_count", F.lit(1)).drop("id"))
        if args.late and b > 0:
            late = spark.range(1).select(F.lit("late").alias("user_id"),
                                         F.timestamp_millis(F.lit(BASE_MS - 600_000)).alias("event_time"),
                                         F.lit(1).alias("item_count"))
            df = df.unionByName(late)
        return df

    totals = []
    for b in range(args.batches):
        df = batch(b)
        j0 = len(jobs())
        wall, cpu = timed_cpu(spark, lambda: op.process_batch(df, b))
        n = len(jobs()) - j0
        totals.append((n, wall, cpu))
        print(f"batch {b}: {n} jobs, {wall:.2f} s, {cpu:.2f} CPU s", flush=True)
    steady = totals[1:] or totals
    print(f"after the first batch, mean: {sum(t[0] for t in steady) / len(steady):.1f} jobs, "
          f"{sum(t[1] for t in steady) / len(steady):.2f} s, {sum(t[2] for t in steady) / len(steady):.2f} CPU s")

    steps = attribute_jobs(jobs)
    report = op.process_batch(batch(args.batches), args.batches)
    print(f"batch {args.batches}: {sum(steps.values())} jobs by step (metrics {report.metrics})")
    for step, n in steps.most_common():
        print(f"{n:3d}  {step}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
