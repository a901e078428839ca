"""Benchmark: our cumulating-window backfill (CUMULATE, by slices) vs the same windows from Spark's own functions.

    ./dev bench bench_cumulate.py [--events 5000000] [--keys 10000] [--max-size "60 minutes"] [--step "1 minute"]

Same data and sink as bench_windows.py (generated events over one day in a raw Delta table,
Delta output on both sides). Spark has no cumulating window, so its side builds them from its own
functions: the cycle is ``window(event_time, max_size)`` (a tumbling window), each row is exploded
into the windows of its cycle that end after it (``sequence`` of ends by ``step``), then
``groupBy(user_id, start, end).agg(sum, count)``. Ours: ``run_backfill(..., chunk="all")`` with
``CumulativeEventTimeWindows.of(max_size, step)``, the one-pass time plan (running sums of
per-slice partials per key and cycle). Rounds alternate which side runs first; each side's best
round counts. Prints wall and CPU seconds and the ratio Spark / ours, checks the results are
equal (exceptAll both ways) and writes benchmarks/out/bench_cumulate_<events>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from pyspark.sql import functions as F

from bench_windows import (DAY_MS, alternating_rounds, best_of, generate, our_backfill, round_reporter,
                          same_rows, timed)
from windowing import Count, CumulativeEventTimeWindows, Sum, WindowSpecBuilder
from windowing.core.time import parse_duration_ms
from windowing.spark.runtime.spark_session import get_spark

OUT = Path(__file__).resolve().parent / "out"


def spec(max_size: str, step: str):
    return (WindowSpecBuilder().key_by("user_id").event_time("event_time", max_out_of_orderness="10 seconds")
            .window(CumulativeEventTimeWindows.of(max_size, step)).aggregate(items=Sum("item_count"), n=Count()))


def spark_cumulate(spark, raw: str, max_size_ms: int, step_ms: int):
    """Cumulating windows with Spark's own functions: each row copied into the windows of its cycle
    that end after it, then grouped by window."""
    ts = F.unix_millis("event_time")
    start = F.unix_millis(F.col("cycle.start"))
    first_end = ts - F.pmod(ts, F.lit(step_ms)) + F.lit(step_ms)
    ends = F.sequence(first_end, start + F.lit(max_size_ms), F.lit(step_ms).cast("long"))
    return (spark.read.format("delta").load(raw)
            .withColumn("cycle", F.window("event_time", f"{max_size_ms} milliseconds"))
            .select("user_id", "item_count", start.alias("window_start_ms"), F.explode(ends).alias("window_end_ms"))
            .groupBy("user_id", "window_start_ms", "window_end_ms")
            .agg(F.sum("item_count").alias("items"), F.count(F.lit(1)).alias("n")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--max-size", default="60 minutes")
    parser.add_argument("--step", default="1 minute")
    parser.add_argument("--rounds", type=int, default=2, help="measure each side this many times (best counts)")
    parser.add_argument("--data", default=str(OUT / "cumulate"), help="scratch folder (deleted first)")
    args = parser.parse_args()
    data = Path(args.data).resolve()
    spark = get_spark("bench-cumulate", shuffle_partitions=8)
    raw = str(data / "raw")
    shutil.rmtree(data, ignore_errors=True)
    gen_s, _ = timed(lambda: generate(spark, raw, args.events, args.keys, DAY_MS))
    print(f"generated {args.events:,} events, {args.keys:,} keys, one day: {gen_s:.1f}s")
    max_size_ms, step_ms = parse_duration_ms(args.max_size, "max_size"), parse_duration_ms(args.step, "step")
    label = f"cumulate {args.max_size} / {args.step} sum+count"

    def spark_own(out):
        spark_cumulate(spark, raw, max_size_ms, step_ms).write.format("delta").mode("overwrite").save(out)

    def ours(out):
        our_backfill(spark, "bench_cumulate", spec(args.max_size, args.step), raw, out)

    rounds = alternating_rounds(spark, {"spark": spark_own, "ours": ours}, args.rounds, data,
                                round_reporter("Spark's functions"))
    (spark_s, spark_cpu), (ours_s, ours_cpu) = best_of(rounds, "spark"), best_of(rounds, "ours")
    theirs = spark.read.format("delta").load(str(data / "spark_0"))
    mine = spark.read.format("delta").load(str(data / "ours_0/results")).select(
        "user_id", "window_start_ms", "window_end_ms", "items", "n")
    windows = mine.count()
    equal = same_rows(theirs, mine)
    load = [round(x, 2) for x in os.getloadavg()]
    result = {"events": args.events, "keys": args.keys, "max_size": args.max_size, "step": args.step,
              "windows": windows, "rounds": rounds, "spark_functions_s": spark_s, "ours_backfill_s": ours_s,
              "speedup": round(spark_s / ours_s, 2), "spark_functions_cpu_s": spark_cpu,
              "ours_backfill_cpu_s": ours_cpu, "cpu_speedup": round(spark_cpu / ours_cpu, 2),
              "results_equal": equal, "load_average": load}
    print(f"{label} (best of {args.rounds}), {windows:,} windows: Spark's functions {spark_s:.1f}s / "
          f"{spark_cpu:.1f} CPU s, ours {ours_s:.1f}s / {ours_cpu:.1f} CPU s: ours is {spark_s / ours_s:.2f}x "
          f"faster wall, {spark_cpu / ours_cpu:.2f}x CPU, results equal: {equal}, load average {load}")
    OUT.mkdir(exist_ok=True)
    (OUT / f"bench_cumulate_{args.events}.json").write_text(json.dumps(result, indent=2))
    if not equal:
        raise SystemExit("the two sides' results differ")


if __name__ == "__main__":
    main()
