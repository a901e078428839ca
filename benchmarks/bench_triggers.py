"""Benchmark: an early-firing trigger on its DataFrame plan vs the same spec on the per-key path.

    ./dev bench bench_triggers.py [--events 1000000] [--keys 10000] [--batches 4]

Same data as ``bench_windows.py`` (its generator: by default 1M events, 10k keys, one day),
tumbling 1-minute windows, sum + count, 10 s out-of-orderness, 30 s allowed lateness, and
``EventTimeTrigger().with_early_firings(every_n_elements=3, every="20 seconds")
.with_late_firings(every_n_elements=2)``. The input is cut into ``--batches`` event-time
batches, each given a processing time 15 s after the previous one, then flushed; both runs
on fresh Delta state, after a warm-up run of each on a small slice (JIT, code generation):

1. the ``early_late`` DataFrame plan (``SparkWindowOperator``);
2. the same spec on the per-key path (``KeyedModelOperator``: the reference model per key).

Prints wall and JVM CPU seconds, events/second and the ratio, checks that both wrote the
same panes (all pane info), and writes benchmarks/out/bench_triggers.json.
"""
from __future__ import annotations

import argparse
import json
import shutil

from pyspark.sql import functions as F

import bench_keyed
from bench_windows import DAY_MS, OUT, START_MS, generate, timed_cpu
from windowing import Count, EventTimeTrigger, Sum, TumblingEventTimeWindows, WindowSpecBuilder
from windowing.spark.operator.protocol import KeyedModelOperator
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.state.stores import DeltaStore
from windowing.spark.runtime.spark_session import get_spark

PT_STEP_MS = 15_000


def spec():
    trigger = (EventTimeTrigger().with_early_firings(every_n_elements=3, every="20 seconds")
               .with_late_firings(every_n_elements=2))
    return (WindowSpecBuilder().key_by("user_id").event_time("event_time", max_out_of_orderness="10 seconds")
            .window(TumblingEventTimeWindows.of("1 minute")).trigger(trigger).allowed_lateness("30 seconds")
            .side_output_late_data().aggregate(items=Sum("item_count"), n=Count()))


def run(spark, operator, raw, batches):
    """Feed the raw table in ``batches`` event-time slices (processing time 15 s apart), then flush."""
    return bench_keyed.run(spark, operator, raw, batches, processing_time_step_ms=PT_STEP_MS)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()
    data = OUT / "triggers_data"
    shutil.rmtree(data, ignore_errors=True)
    spark = get_spark("bench_triggers", shuffle_partitions=8)
    raw = str(data / "raw")
    generate(spark, raw, args.events, args.keys, DAY_MS)
    print(f"generated {args.events:,} events, {args.keys:,} keys, one day; {args.batches} batches + flush")
    runs = {
        "early_late_dataframe_plan": lambda root: SparkWindowOperator.on_delta(spark, spec(), "op", root),
        "early_late_per_key_path": lambda root: KeyedModelOperator(spark, spec(), DeltaStore(spark, "op", root)),
    }
    result = {"events": args.events, "keys": args.keys, "batches": args.batches}
    # The first Spark jobs of a JVM pay JIT and code-generation warm-up: both paths run once on a
    # small slice (the first 2% of the day, one batch + flush) before anything is timed.
    warm = str(data / "warmup_raw")
    (spark.read.format("delta").load(raw).where(F.unix_millis("event_time") < START_MS + DAY_MS // 50)
     .write.format("delta").save(warm))
    for name, make in runs.items():
        run(spark, make(str(data / f"warmup_{name}")), warm, 1)
    for name, make in runs.items():
        root = str(data / name)
        holder = {}
        wall, cpu = timed_cpu(spark, lambda: holder.update(out=run(spark, make(root), raw, args.batches)))
        panes, reports = holder["out"]
        result[name] = {"seconds": round(wall, 2), "cpu_s": round(cpu, 2), "events_per_s": round(args.events / wall),
                        "panes": panes, "batch_seconds": [round(r.seconds, 1) for r in reports],
                        "plan": reports[0].plan}
        print(f"{name}: {wall:.1f}s ({cpu:.1f} CPU s), {args.events / wall:,.0f} events/s, {panes:,} panes; "
              f"batches {[round(r.seconds, 1) for r in reports]} (plan {reports[0].plan})")
    plan_s = result["early_late_dataframe_plan"]["seconds"]
    result["ratio_per_key_to_plan"] = round(result["early_late_per_key_path"]["seconds"] / plan_s, 2)
    cols = ["user_id", "window_start_ms", "pane_index", "timing", "is_final", "items", "n", "watermark_ms", "batch_id"]
    a = spark.read.format("delta").load(str(data / "early_late_dataframe_plan/op/results")).select(*cols)
    b = spark.read.format("delta").load(str(data / "early_late_per_key_path/op/results")).select(*cols)
    result["same_panes"] = a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0
    print(f"per-key path / DataFrame plan: {result['ratio_per_key_to_plan']}x; same panes: {result['same_panes']}")
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_triggers.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
