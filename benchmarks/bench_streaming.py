"""Streaming micro-batches: Spark's own windowed query against the operator, batch by batch.

One raw Delta table of appends; each round appends one batch of rows, then each side runs
an ``availableNow`` query over the raw table that picks that batch up as one micro-batch
(alternating which side goes first):

* Spark: ``readStream`` -> ``withWatermark("event_time", "10 seconds")`` ->
  ``groupBy(window(event_time, "1 minute"), user_id).agg(sum, count, max)`` -> Delta append;
* ours: ``readStream`` -> ``foreachBatch`` -> :meth:`SparkWindowOperator.process_batch`
  (tumbling 1 minute, 10 s out of orderness, accumulating, late output on; what
  ``pipelines.drivers.run_stream`` runs, without its validation).

    ./dev bench bench_streaming.py --rows 600 --keys 100 --rounds 8
    ./dev bench bench_streaming.py --rows 50000 --keys 10000 --rounds 12
    ./dev bench bench_streaming.py --phases        # also our jobs and seconds per step of one batch

Prints per round each side's micro-batch seconds (the query's ``triggerExecution``), the
query's wall seconds (start to stop) and its Spark jobs (the query's job group plus the jobs
started from the ``foreachBatch`` callback); then the medians of the rounds after the first
(a warm-up: the first query of a JVM pays JIT compilation) and ours / Spark's ratios: the median
of the rounds' ratios, and the ratio of the rounds' sums (what a stream pays over many batches,
the batches that compact the logged state changes included: run enough rounds to include some).

A side's batch seconds of a round are those of every micro-batch its query ran for that
round's rows. Spark's windowed query runs two: the one that reads the rows and updates its
state store, and then a micro-batch without input that the advanced watermark triggers, which
evicts the closed windows from the state store and appends them to the results (its append
mode emits a window only after the watermark passed its end, and the watermark a batch
computes applies from the next one). Ours runs one: the operator advances the watermark and
fires the closed windows in the batch that read the rows. Both sides have then written the
same windows (checked at the end). The line ``data batch`` gives the first micro-batch alone.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench_common import (StepProfiler, append_round, compare_windows, our_final_results, spark_results,
                          spark_windowed_stream, wrap_operator_steps)
from windowing import Count, Max, Sum, TumblingEventTimeWindows, WindowSpecBuilder
from windowing.spark.operator.dispatch import operator_on_delta
from windowing.spark.runtime.spark_session import get_spark


def jobs_counter(spark):
    """A function returning how many Spark jobs ran so far in the groups a streaming query uses."""
    tracker = spark.sparkContext.statusTracker()

    def count(group: str | None) -> int:
        return len(tracker.getJobIdsForGroup(None)) + (len(tracker.getJobIdsForGroup(group)) if group else 0)
    return count


def run_query(spark, writer, count_jobs) -> dict:
    """Start an ``availableNow`` query, wait for it; its batch seconds, wall seconds and Spark jobs."""
    before = count_jobs(None)     # one side at a time: every job from here on is this query's
    started = time.monotonic()
    query = writer.trigger(availableNow=True).start()
    group = str(query.runId)
    query.awaitTermination()
    wall = time.monotonic() - started
    batches = list(query.recentProgress)
    data = [p for p in batches if p["numInputRows"] > 0]
    exception = query.exception()
    if exception is not None:
        raise RuntimeError(f"query failed: {exception}")
    def seconds(progress: list) -> float:
        return sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000
    return {"batch_s": seconds(batches), "data_batch_s": seconds(data), "wall_s": wall,
            "jobs": count_jobs(group) - before, "batches": len(batches)}


def spark_side(spark, raw: str, out: Path, count_jobs) -> dict:
    writer = (spark_windowed_stream(spark, raw).writeStream.format("delta").outputMode("append")
              .option("checkpointLocation", str(out / "spark_checkpoint")).option("path", str(out / "spark_results")))
    return run_query(spark, writer, count_jobs)


def our_side(spark, raw: str, out: Path, operator, count_jobs) -> dict:
    def each_batch(df, batch_id: int) -> None:
        operator.process_batch(df, batch_id, processing_time_ms=int(time.time() * 1000))
    writer = (spark.readStream.format("delta").load(raw).writeStream.foreachBatch(each_batch)
              .option("checkpointLocation", str(out / "ours_checkpoint")))
    return run_query(spark, writer, count_jobs)


def compare_results(spark, out: Path, operator) -> str:
    """Whether every window Spark's query emitted is one of our final panes with the same values."""
    windows, differ = compare_windows(spark_results(spark, str(out / "spark_results")),
                                      our_final_results(spark, operator.store.results_path,
                                                        ("sum_item_count", "count", "max_item_count")))
    return f"{windows} windows in Spark's output, {differ} of them missing or different in ours"


def profile_steps(spark) -> StepProfiler:
    """Wrap the operator's Spark and Delta calls: jobs and seconds each step spends itself.
    Off unless ``--phases``."""
    profiler = StepProfiler(spark)
    wrap_operator_steps(profiler)
    return profiler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600, help="rows per micro-batch")
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6, help="micro-batches per side (the first is a warm-up)")
    parser.add_argument("--phases", action="store_true", help="then our jobs and seconds per step of one batch")
    args = parser.parse_args()
    spark = get_spark("bench_streaming", shuffle_partitions=4)
    spark.sparkContext.setLogLevel("ERROR")
    root = Path(tempfile.mkdtemp(prefix="bench_streaming_"))
    raw = str(root / "raw")
    count_jobs = jobs_counter(spark)
    spec = (WindowSpecBuilder().key_by("user_id").event_time("event_time", "10 seconds")
            .window(TumblingEventTimeWindows.of("1 minute")).accumulating().side_output_late_data()
            .aggregate(Sum("item_count"), Count(), Max("item_count")))
    operator = operator_on_delta(spark, spec, "bench", str(root / "state"))
    sides = {"spark": lambda: spark_side(spark, raw, root, count_jobs),
             "ours": lambda: our_side(spark, raw, root, operator, count_jobs)}
    rounds = []
    for r in range(args.rounds):
        append_round(spark, raw, r, args.rows, args.keys)
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        row = {name: sides[name]() for name in order}
        rounds.append(row)
        print(f"round {r}{' (warm-up)' if r == 0 else ''}: " + "; ".join(
            f"{name} batch {row[name]['batch_s']:.2f} s ({row[name]['batches']} micro-batches, data batch "
            f"{row[name]['data_batch_s']:.2f} s), wall {row[name]['wall_s']:.2f} s, "
            f"{row[name]['jobs']} jobs" for name in sides), flush=True)
    warm = rounds[1:] or rounds

    def median(side: str, key: str) -> float:
        return statistics.median(r[side][key] for r in warm)
    print(f"\n{args.rows} rows, {args.keys} keys per batch; medians of rounds 1-{len(rounds) - 1}:")
    for side in sides:
        print(f"  {side:5s}: batch {median(side, 'batch_s'):.2f} s (data batch {median(side, 'data_batch_s'):.2f} s), "
              f"wall {median(side, 'wall_s'):.2f} s, {median(side, 'jobs'):.0f} Spark jobs per round")
    print(f"  ratio ours / Spark: batch {statistics.median(r['ours']['batch_s'] / r['spark']['batch_s'] for r in warm):.2f}x, "
          f"wall {statistics.median(r['ours']['wall_s'] / r['spark']['wall_s'] for r in warm):.2f}x")

    def total(side: str, key: str) -> float:
        return sum(r[side][key] for r in warm)
    # What a stream pays over many batches: the batches that compact the logged state changes
    # (more jobs, see each round's line) cost more than those that log them.
    print(f"  ratio of the sums of rounds 1-{len(rounds) - 1}: "
          f"batch {total('ours', 'batch_s') / total('spark', 'batch_s'):.2f}x, "
          f"wall {total('ours', 'wall_s') / total('spark', 'wall_s'):.2f}x")
    print(f"  the data batch alone (Spark's eviction batch left out): median ratio "
          f"{statistics.median(r['ours']['data_batch_s'] / r['spark']['data_batch_s'] for r in warm):.2f}x, "
          f"ratio of the sums {total('ours', 'data_batch_s') / total('spark', 'data_batch_s'):.2f}x")

    print(f"  results: {compare_results(spark, root, operator)}")

    if args.phases:
        profiler = profile_steps(spark)
        append_round(spark, raw, args.rounds, args.rows, args.keys)
        sides["ours"]()
        print("\nours, one more batch by step: " + "\n".join(profiler.lines()))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
