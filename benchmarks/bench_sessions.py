"""Benchmark: our session-window backfill vs Spark's groupBy(session_window(...)), same data, same run.

    ./dev bench bench_sessions.py [--events 5000000] [--keys 10000] [--gap "30 seconds"] [--chunk all|"6 hours"]

The data is ``bench_windows.py``'s (same generator: --events over one day, --keys users,
up to 5 s of jitter). Both sides read the same raw Delta table and write a Delta table:

1. Spark's own: ``groupBy("user_id", session_window("event_time", gap)).agg(sum, count)``.
2. Ours: ``pipelines.drivers.run_backfill`` (what ``winjob backfill`` runs) of event-time
   sessions with the same gap, sum + count, on fresh state and outputs. With ``--chunk all``
   (default) the backfill is one batch whose watermark ends at +infinity: the one-pass session
   plan (``session_plan.closing_session_plan``).

After ``--warmup`` unmeasured rounds of both sides (default 1: the first jobs of a JVM pay JIT
compilation), rounds alternate which side runs first; the ratio uses each side's best round, in wall and in
CPU seconds (JVM + Python driver, steadier on a shared machine). Checks that the sessions are
equal and writes ``benchmarks/out/bench_sessions.json``.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from pyspark.sql import functions as F

from bench_windows import (DAY_MS, OUT, alternating_rounds, best_of, generate, our_backfill, round_reporter,
                          same_rows, timed, timed_cpu)
from windowing import Count, EventTimeSessionWindows, Sum, WindowSpecBuilder
from windowing.core.time import parse_duration_ms
from windowing.spark.runtime.spark_session import get_spark


def session_spec(gap: str):
    return (WindowSpecBuilder().key_by("user_id").event_time("event_time", max_out_of_orderness="10 seconds")
            .window(EventTimeSessionWindows.with_gap(gap)).aggregate(items=Sum("item_count"), n=Count()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--gap", default="30 seconds")
    parser.add_argument("--chunk", default="all",
                        help="backfill chunk: 'all' (one pass, the default) or a duration such as '6 hours'")
    parser.add_argument("--rounds", type=int, default=2, help="measure each side this many times (best counts)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="unmeasured rounds of both sides first (the first jobs of a JVM pay JIT compilation)")
    args = parser.parse_args()
    gap_ms = parse_duration_ms(args.gap, "gap")
    data = OUT / "sessions_data"
    shutil.rmtree(data, ignore_errors=True)
    spark = get_spark("bench_sessions", shuffle_partitions=8)
    raw = str(data / "raw")
    gen_s, _ = timed(lambda: generate(spark, raw, args.events, args.keys, DAY_MS))
    print(f"generated {args.events:,} events, {args.keys:,} keys, one day: {gen_s:.1f}s")

    def spark_own(out):
        (spark.read.format("delta").load(raw)
         .groupBy("user_id", F.session_window("event_time", f"{gap_ms // 1000} seconds" if gap_ms % 1000 == 0
                                              else f"{gap_ms} milliseconds"))
         .agg(F.sum("item_count").alias("items"), F.count(F.lit(1)).alias("n"))
         .select("user_id", F.col("session_window.start").alias("window_start"),
                 F.col("session_window.end").alias("window_end"), "items", "n")
         .write.format("delta").mode("overwrite").save(out))

    def ours(out):
        our_backfill(spark, "bench_sessions", session_spec(args.gap), raw, out, chunk=args.chunk)

    for w in range(args.warmup):
        for name, fn in (("spark", spark_own), ("ours", ours)):
            wall, cpu = timed_cpu(spark, lambda: fn(str(data / f"warmup_{name}_{w}")))
            print(f"warm-up {w + 1}: {name} {wall:.1f}s ({cpu:.1f} CPU s)")

    rounds = alternating_rounds(spark, {"spark": spark_own, "ours": ours}, args.rounds, data,
                                round_reporter("Spark session_window()"))
    (spark_s, spark_cpu), (ours_s, ours_cpu) = best_of(rounds, "spark"), best_of(rounds, "ours")
    theirs = spark.read.format("delta").load(str(data / "spark_0")).select(
        "user_id", F.unix_millis("window_start").alias("window_start_ms"),
        F.unix_millis("window_end").alias("window_end_ms"), "items", "n")
    mine = spark.read.format("delta").load(str(data / "ours_0/results")).select(
        "user_id", "window_start_ms", "window_end_ms", "items", "n")
    sessions = mine.count()
    equal = same_rows(theirs, mine)
    result = {"events": args.events, "keys": args.keys, "gap": args.gap, "chunk": args.chunk,
              "warmup_rounds": args.warmup, "rounds": rounds,
              "sessions": sessions, "spark_session_window_s": round(spark_s, 2), "ours_backfill_s": round(ours_s, 2),
              "ratio": round(ours_s / spark_s, 2), "spark_session_window_cpu_s": spark_cpu,
              "ours_backfill_cpu_s": ours_cpu, "cpu_ratio": round(ours_cpu / spark_cpu, 2), "results_equal": equal}
    print(f"sessions gap {args.gap} sum+count (best of {args.rounds}, {sessions:,} sessions): "
          f"Spark session_window() {spark_s:.1f}s / {spark_cpu:.1f} CPU s, ours {ours_s:.1f}s / {ours_cpu:.1f} CPU s, "
          f"ratio {ours_s / spark_s:.2f}x wall, {ours_cpu / spark_cpu:.2f}x CPU, results equal: {equal}")
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_sessions.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
