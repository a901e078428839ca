"""Benchmark: our sliding-window backfill (by slices) vs Spark's groupBy(window(ts, size, slide)).

    ./dev bench bench_sliding.py [--events 5000000] [--keys 10000] [--size "60 minutes"] [--slide "1 minute"]
    ./dev bench bench_sliding.py --events 1000000 --alternatives      # also time each way of building windows

Same data and sink as bench_windows.py (generated events over one day in a raw Delta table,
Delta output on both sides). Rounds alternate which side runs first; each side's best round
counts. Prints wall and CPU seconds, the ratio Spark / ours (the target: ours >= 4x faster),
checks the results are equal (exceptAll both ways) and writes benchmarks/out/bench_sliding_<events>.json.

``--alternatives`` times, on the same data to a ``noop`` sink (no Delta write), the three ways
to get sliding-window sums and counts: every element copied into its windows (the plan before
slicing), slice partials copied into their windows (slice explosion), and running differences
of slice partials (what the one-pass backfill uses for Count/Sum/Avg of integers).
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from pyspark.sql import functions as F

from bench_windows import (DAY_MS, alternating_rounds, best_of, generate, our_backfill, round_reporter,
                          same_rows, timed, timed_cpu)
from windowing import Count, SlidingEventTimeWindows, Sum, WindowSpecBuilder
from windowing.core.time import parse_duration_ms
from windowing.spark.plans import slicing
from windowing.spark.plans.aggregates import compile_aggregates, partial_exprs
from windowing.spark.input.columns import TS, WE, WS
from windowing.spark.input.prepare import event_time_ms
from windowing.spark.plans.window_geometry import geometry_of
from windowing.spark.runtime.spark_session import get_spark

OUT = Path(__file__).resolve().parent / "out"


def spec(size: str, slide: str):
    return (WindowSpecBuilder().key_by("user_id").event_time("event_time", max_out_of_orderness="10 seconds")
            .window(SlidingEventTimeWindows.of(size, slide)).aggregate(items=Sum("item_count"), n=Count()))


def alternatives(spark, raw: str, window_spec, repeats: int = 2) -> dict:
    """Seconds (wall, CPU) of each way to build the windows, to a noop sink, on the same input (best of ``repeats``)."""
    assigner, compiled, keys = window_spec.assigner, compile_aggregates(window_spec), ["user_id"]
    source = spark.read.format("delta").load(raw)
    elements = (source.withColumn(TS, event_time_ms(source, "event_time"))
                .withColumn(slicing.SLICE, slicing.slice_start(assigner, F.col(TS))))

    def per_element():
        exploded = (elements.select(*keys, "item_count", F.explode(geometry_of(window_spec).windows(F.col(TS))).alias("w"))
                    .select(*keys, "item_count", F.col("w." + WS).alias(WS), F.col("w." + WE).alias(WE)))
        return exploded.groupBy(*keys, WS, WE).agg(*partial_exprs(compiled))

    def slice_explosion():
        slices = slicing.slice_partials(compiled, keys, elements)
        return slicing.exploded_window_partials(assigner, compiled, keys, slices)

    def running_differences():
        return slicing.running_window_partials(assigner, compiled, keys, elements)

    out = {}
    for name, build in (("per_element", per_element), ("slice_explosion", slice_explosion),
                        ("running_differences", running_differences)):
        best = None
        for _ in range(repeats):
            wall, cpu = timed_cpu(spark, lambda: build().write.format("noop").mode("overwrite").save())
            best = (wall, cpu) if best is None or wall < best[0] else best
        out[name] = {"wall_s": round(best[0], 2), "cpu_s": round(best[1], 2)}
        print(f"  {name}: {best[0]:.1f}s wall, {best[1]:.1f} CPU s (noop sink, best of {repeats})")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--size", default="60 minutes")
    parser.add_argument("--slide", default="1 minute")
    parser.add_argument("--rounds", type=int, default=2, help="measure each side this many times (best counts)")
    parser.add_argument("--alternatives", action="store_true", help="also time each way of building the windows")
    parser.add_argument("--alternatives-only", action="store_true",
                        help="only time the ways of building the windows (reuses the raw table of an earlier run)")
    parser.add_argument("--data", default=str(OUT / "sliding"), help="scratch folder (deleted first)")
    args = parser.parse_args()
    data = Path(args.data).resolve()
    spark = get_spark("bench-sliding", shuffle_partitions=8)
    raw = str(data / "raw")
    if args.alternatives_only and (data / "raw" / "_delta_log").exists():
        print(json.dumps({"alternatives_noop_sink": alternatives(spark, raw, spec(args.size, args.slide), 1)}))
        return
    shutil.rmtree(data, ignore_errors=True)
    gen_s, _ = timed(lambda: generate(spark, raw, args.events, args.keys, DAY_MS))
    print(f"generated {args.events:,} events, {args.keys:,} keys, one day: {gen_s:.1f}s")
    size_ms, slide_ms = parse_duration_ms(args.size, "size"), parse_duration_ms(args.slide, "slide")
    label = f"sliding {args.size} / {args.slide} sum+count"

    def spark_own(out):
        (spark.read.format("delta").load(raw)
         .groupBy("user_id", F.window("event_time", f"{size_ms} milliseconds", f"{slide_ms} milliseconds"))
         .agg(F.sum("item_count").alias("items"), F.count(F.lit(1)).alias("n"))
         .select("user_id", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                 "items", "n")
         .write.format("delta").mode("overwrite").save(out))

    def ours(out):
        our_backfill(spark, "bench_sliding", spec(args.size, args.slide), raw, out)

    rounds = alternating_rounds(spark, {"spark": spark_own, "ours": ours}, args.rounds, data,
                                round_reporter("Spark window()"))
    (spark_s, spark_cpu), (ours_s, ours_cpu) = best_of(rounds, "spark"), best_of(rounds, "ours")
    theirs = spark.read.format("delta").load(str(data / "spark_0")).select(
        "user_id", F.unix_millis("window_start").alias("window_start_ms"), "items", "n")
    mine = spark.read.format("delta").load(str(data / "ours_0/results")).select("user_id", "window_start_ms", "items", "n")
    windows = mine.count()
    equal = same_rows(theirs, mine)
    result = {"events": args.events, "keys": args.keys, "size": args.size, "slide": args.slide, "windows": windows,
              "rounds": rounds, "spark_window_s": spark_s, "ours_backfill_s": ours_s,
              "speedup": round(spark_s / ours_s, 2), "spark_window_cpu_s": spark_cpu, "ours_backfill_cpu_s": ours_cpu,
              "cpu_speedup": round(spark_cpu / ours_cpu, 2), "results_equal": equal}
    print(f"{label} (best of {args.rounds}), {windows:,} windows: Spark window() {spark_s:.1f}s / "
          f"{spark_cpu:.1f} CPU s, ours {ours_s:.1f}s / {ours_cpu:.1f} CPU s: ours is {spark_s / ours_s:.2f}x faster "
          f"wall, {spark_cpu / ours_cpu:.2f}x CPU (target >= 4x), results equal: {equal}")
    if args.alternatives:
        result["alternatives_noop_sink"] = alternatives(spark, raw, spec(args.size, args.slide))
    OUT.mkdir(exist_ok=True)
    (OUT / f"bench_sliding_{args.events}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
