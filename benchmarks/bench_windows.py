"""Benchmark: our tumbling-window backfill vs Spark's own groupBy(window(...)), same data, same run.

    ./dev bench bench_windows.py [--events 5000000] [--keys 10000] [--chunk all|"6 hours"]
                                 [--data s3a://bucket/prefix] [--master spark://host:7077]

Both read the same raw Delta table and write a Delta table. Prints seconds and the ratio
ours / Spark, checks that the results are equal, and writes benchmarks/out/bench_windows.json.
Also measures one streaming batch of --batch-events against a small and a large number of
open windows (state scaling).

The tables go under --data (a local folder, benchmarks/out/data by default, or a URI such
as ``s3a://bucket/prefix`` with the store's endpoint and keys in the environment, see
docs/cluster.md); the session runs on --master (else SPARK_MASTER, else local[2]). CPU
seconds are the driver's JVM and Python only: on a cluster the executors' CPU is not in them.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

from pyspark.sql import functions as F

from bench_common import jvm_cpu_s, memory_line

from windowing import Count, Sum, TumblingEventTimeWindows, WindowSpecBuilder
from pipelines.drivers import run_backfill
from pipelines.job import Job
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.runtime.spark_session import get_spark

OUT = Path(__file__).resolve().parent / "out"
DAY_MS = 86_400_000
START_MS = 1_793_491_200_000  # 2026-11-01T00:00Z


def under(base: str, name: str) -> str:
    """``name`` under a folder or URI ``base``."""
    return f"{str(base).rstrip('/')}/{name}"


def clear(spark, base: str) -> None:
    """Delete the folder or URI ``base`` and everything under it (through Hadoop for a URI)."""
    if "://" not in base:
        shutil.rmtree(base, ignore_errors=True)
        return
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(base)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)


def generate(spark, path, events, keys, span_ms, seed=1):
    df = (spark.range(events)
          .withColumn("user_id", F.concat(F.lit("u"), (F.rand(seed) * keys).cast("long").cast("string")))
          .withColumn("ts_ms", (F.lit(START_MS) + (F.col("id") * span_ms / events).cast("long")
                                + (F.rand(seed + 1) * 5000).cast("long")))
          .withColumn("event_time", F.timestamp_millis("ts_ms"))
          .withColumn("item_count", (F.rand(seed + 2) * 5 + 1).cast("long"))
          .select("user_id", "event_time", "item_count"))
    df.write.format("delta").mode("overwrite").save(path)


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def timed_cpu(spark, fn):
    """(wall seconds, JVM CPU seconds) of ``fn()``, plus the Python driver's own CPU seconds."""
    cpu0, py0 = jvm_cpu_s(spark), time.process_time()
    wall, _ = timed(fn)
    return wall, jvm_cpu_s(spark) - cpu0 + time.process_time() - py0


def alternating_rounds(spark, sides: dict, rounds: int, folder: Path, report) -> list[dict]:
    """Run each side once per round, alternating which goes first (the first job of a JVM pays
    JIT warm-up); side ``name`` writes under ``folder/<name>_<round>``. ``report(round, times)``
    prints a round. Returns per round: wall and CPU seconds of each side (``<name>``, ``<name>_cpu``).
    """
    order, out = list(sides.items()), []
    for r in range(rounds):
        times = {}
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            wall, cpu = timed_cpu(spark, lambda: fn(under(folder, f"{name}_{r}")))
            times[name], times[f"{name}_cpu"] = round(wall, 2), round(cpu, 2)
        out.append(times)
        report(r, times)
    return out


def our_backfill(spark, name: str, spec, raw: str, out: str, chunk: str = "all") -> None:
    """The product's backfill driver, as ``winjob backfill --chunk <chunk>`` runs it, on fresh state and
    outputs under ``out`` (validation off: it is benchmarked on its own terms); prints each batch."""
    job = Job(name=name, operator_id=name, spec=spec, source_path=raw, state_root=f"{out}/state",
              results_path=f"{out}/results", late_path=f"{out}/late", quarantine_path=f"{out}/quarantine",
              checkpoint_path=f"{out}/checkpoint")
    for report in run_backfill(spark, job, chunk=chunk, validate=False):
        print(f"  batch {report.batch_id} ({report.plan} plan): {report.metrics.input_rows:,} rows, "
              f"{report.metrics.panes_emitted:,} panes, {report.seconds:.1f}s")


def round_reporter(spark_side: str):
    """``report(round, times)`` for :func:`alternating_rounds`: both sides' wall and CPU seconds and the ratios
    ours / Spark's (``spark_side`` names Spark's query in the line)."""
    def report(r: int, t: dict) -> None:
        print(f"round {r + 1}: {spark_side} {t['spark']:.1f}s ({t['spark_cpu']:.1f} CPU s), "
              f"ours {t['ours']:.1f}s ({t['ours_cpu']:.1f} CPU s), ratio {t['ours'] / t['spark']:.2f}x "
              f"wall, {t['ours_cpu'] / t['spark_cpu']:.2f}x CPU")
    return report


def best_of(rounds: list[dict], name: str) -> tuple[float, float]:
    """A side's best wall and best CPU seconds over the rounds."""
    return min(t[name] for t in rounds), min(t[f"{name}_cpu"] for t in rounds)


def same_rows(a, b) -> bool:
    """Whether two DataFrames hold the same rows (as multisets)."""
    return a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


def spec(lateness="0 seconds"):
    return (WindowSpecBuilder().key_by("user_id").event_time("event_time", max_out_of_orderness="10 seconds")
            .window(TumblingEventTimeWindows.of("1 minute")).allowed_lateness(lateness)
            .aggregate(items=Sum("item_count"), n=Count()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--chunk", default="all",
                        help="backfill chunk: 'all' (one pass, the default) or a duration such as '6 hours'")
    parser.add_argument("--batch-events", type=int, default=50_000)
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--rounds", type=int, default=2, help="measure each side this many times (best counts)")
    parser.add_argument("--data", default=str(OUT / "data"),
                        help="where the tables go: a local folder or a URI such as s3a://bucket/prefix")
    parser.add_argument("--master", default=None, help="Spark master (default: SPARK_MASTER, else local[2])")
    args = parser.parse_args()
    spark = get_spark("bench", master=args.master, shuffle_partitions=8)
    data = args.data
    clear(spark, data)
    print(f"master {spark.sparkContext.master}, tables under {data}")
    raw = under(data, "raw")
    gen_s, _ = timed(lambda: generate(spark, raw, args.events, args.keys, DAY_MS))
    print(f"generated {args.events:,} events, {args.keys:,} keys, one day: {gen_s:.1f}s")

    def spark_own(out):
        (spark.read.format("delta").load(raw)
         .groupBy("user_id", F.window("event_time", "1 minute"))
         .agg(F.sum("item_count").alias("items"), F.count(F.lit(1)).alias("n"))
         .select("user_id", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                 "items", "n")
         .write.format("delta").mode("overwrite").save(out))

    def ours(out):
        our_backfill(spark, "bench", spec(), raw, out, chunk=args.chunk)

    rounds = alternating_rounds(spark, {"spark": spark_own, "ours": ours}, args.rounds, data,
                                round_reporter("Spark window()"))
    (spark_s, spark_cpu), (ours_s, ours_cpu) = best_of(rounds, "spark"), best_of(rounds, "ours")
    theirs = spark.read.format("delta").load(under(data, "spark_0")).select(
        "user_id", F.unix_millis("window_start").alias("window_start_ms"), "items", "n")
    mine = spark.read.format("delta").load(under(data, "ours_0/results")).select("user_id", "window_start_ms", "items", "n")
    equal = same_rows(theirs, mine)
    result = {"master": spark.sparkContext.master, "data": data, "events": args.events, "keys": args.keys, "chunk": args.chunk, "rounds": rounds,
              "spark_window_s": round(spark_s, 2), "ours_backfill_s": round(ours_s, 2),
              "ratio": round(ours_s / spark_s, 2), "spark_window_cpu_s": spark_cpu, "ours_backfill_cpu_s": ours_cpu,
              "cpu_ratio": round(ours_cpu / spark_cpu, 2), "results_equal": equal,
              **paired_ratios(rounds)}
    print(f"tumbling 1 min sum+count (best of {args.rounds}): Spark window() {spark_s:.1f}s / {spark_cpu:.1f} CPU s, "
          f"ours {ours_s:.1f}s / {ours_cpu:.1f} CPU s, ratio {ours_s / spark_s:.2f}x wall, "
          f"{ours_cpu / spark_cpu:.2f}x CPU, results equal: {equal}")
    if "median_round_cpu_ratio" in result:
        print(f"median over rounds 2-{args.rounds} of each round's ratio: {result['median_round_ratio']:.2f}x wall, "
              f"{result['median_round_cpu_ratio']:.2f}x CPU")

    if not args.skip_scaling:
        result["state_scaling"] = state_scaling(spark, data, args)
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_windows.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


def paired_ratios(rounds: list[dict]) -> dict:
    """The median of each round's ours/Spark ratio, leaving out the first round (JIT warm-up).

    Both sides of a round run minutes apart at most, so a round's ratio shares
    that moment's machine load; the median of those is steadier than the ratio of
    two bests taken from different rounds. Empty with fewer than 3 rounds.
    """
    warm = rounds[1:]
    if len(warm) < 2:
        return {}
    return {"median_round_ratio": round(statistics.median(r["ours"] / r["spark"] for r in warm), 2),
            "median_round_cpu_ratio": round(statistics.median(r["ours_cpu"] / r["spark_cpu"] for r in warm), 2)}


def state_scaling(spark, data, args):
    """One batch of --batch-events against few vs many open windows (allowed lateness keeps them open)."""
    out = {}
    for label, windows_per_key in (("small", 10), ("large", 500)):
        keys = args.keys
        root = under(data, f"scaling_{label}")
        op = SparkWindowOperator.on_delta(spark, spec(lateness="30 days"), "scale", root,
                                          results_path=f"{root}/results")
        span = windows_per_key * 60_000
        build = (spark.range(keys * windows_per_key)
                 .select(F.concat(F.lit("u"), (F.col("id") % keys).cast("string")).alias("user_id"),
                         F.timestamp_millis(F.lit(START_MS) + (F.col("id") / keys).cast("long") * 60_000)
                         .alias("event_time"), F.lit(1).cast("long").alias("item_count")))
        build_s, _ = timed(lambda: op.process_batch(build, 0))
        batch = (spark.range(args.batch_events)
                 .select(F.concat(F.lit("u"), (F.col("id") % keys).cast("string")).alias("user_id"),
                         F.timestamp_millis(F.lit(START_MS + span) + (F.col("id") % 120_000))
                         .alias("event_time"), F.lit(1).cast("long").alias("item_count")))
        batch_s, report = timed(lambda: op.process_batch(batch, 1))
        open_windows = spark.read.format("delta").load(f"{root}/scale/windows").count()
        out[label] = {"open_windows_before": keys * windows_per_key, "open_windows_after": open_windows,
                      "build_s": round(build_s, 1), "batch_s": round(batch_s, 2)}
        print(f"state scaling {label}: {keys * windows_per_key:,} open windows, one batch of "
              f"{args.batch_events:,} events: {batch_s:.1f}s (build {build_s:.1f}s); {memory_line(spark)}")
    out["ratio"] = round(out["large"]["batch_s"] / out["small"]["batch_s"], 2)
    print(f"state scaling ratio large/small: {out['ratio']}x")
    return out


if __name__ == "__main__":
    main()
