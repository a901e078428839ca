"""Benchmark: a user trigger on the per-key path vs the built-in event-time trigger on the DataFrame plan.

    ./dev bench bench_keyed.py [--events 1000000] [--keys 10000] [--batches 4]

Same data as ``bench_windows.py`` (its generator; by default 1M events, 10k keys, one
day), tumbling 1-minute windows, sum + count. Three runs, each on fresh state and
outputs, the input cut into ``--batches`` event-time batches then flushed (a stream's
shape: state carried across batches in Delta):

1. the built-in EventTimeTrigger on the DataFrame plan (``SparkWindowOperator``);
2. the same spec forced onto the per-key path (``KeyedModelOperator``): the cost of
   the path itself, same results;
3. a user trigger (``examples.triggers.EveryNthLarge``: early panes every 3rd large
   purchase, plus the on-time pane) on the per-key path.

Prints events/second of each and the ratios, checks that 1 and 2 give the same final
panes, and writes benchmarks/out/bench_keyed.json.
"""
from __future__ import annotations

import argparse
import json
import shutil

from pyspark.sql import functions as F

from bench_windows import DAY_MS, OUT, START_MS, generate, timed_cpu
from examples.triggers import EveryNthLarge
from windowing import Count, Sum, TumblingEventTimeWindows, WindowSpecBuilder
from windowing.spark.operator.protocol import KeyedModelOperator
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.runtime.spark_session import get_spark
from windowing.spark.state.stores import DeltaStore


def spec(trigger=None):
    builder = (WindowSpecBuilder().key_by("user_id").event_time("event_time", max_out_of_orderness="10 seconds")
               .window(TumblingEventTimeWindows.of("1 minute")))
    if trigger is not None:
        builder = builder.trigger(trigger)
    return builder.aggregate(items=Sum("item_count"), n=Count())


def run(spark, operator, raw, batches, processing_time_step_ms=None):
    """Feed the raw table in ``batches`` event-time slices, then flush; returns (panes, reports).

    With ``processing_time_step_ms`` the batches carry processing times that far apart.
    """
    df = spark.read.format("delta").load(raw)
    ms = F.unix_millis("event_time")
    step = DAY_MS // batches + 1
    reports = []
    for b in range(batches):
        lo, hi = START_MS + b * step, START_MS + (b + 1) * step
        part = df.where((ms >= lo) & (ms < hi)) if b < batches - 1 else df.where(ms >= lo)
        pt = None if processing_time_step_ms is None else START_MS + b * processing_time_step_ms
        reports.append(operator.process_batch(part, b, processing_time_ms=pt))
    reports.append(operator.flush(batches))
    return sum(r.metrics.panes_emitted for r in reports), reports


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()
    data = OUT / "keyed_data"
    shutil.rmtree(data, ignore_errors=True)
    spark = get_spark("bench_keyed", shuffle_partitions=8)
    raw = str(data / "raw")
    generate(spark, raw, args.events, args.keys, DAY_MS)
    print(f"generated {args.events:,} events, {args.keys:,} keys, one day; {args.batches} batches + flush")

    runs = {
        "builtin_dataframe_plan": lambda root: SparkWindowOperator.on_delta(spark, spec(), "op", root),
        "builtin_per_key_path": lambda root: KeyedModelOperator(spark, spec(), DeltaStore(spark, "op", root)),
        "user_trigger_per_key_path": lambda root: KeyedModelOperator(
            spark, spec(EveryNthLarge(n=3, column="item_count", threshold=5)), DeltaStore(spark, "op", root)),
    }
    result = {"events": args.events, "keys": args.keys, "batches": args.batches}
    for name, make in runs.items():
        root = str(data / name)
        holder = {}
        wall, cpu = timed_cpu(spark, lambda: holder.update(out=run(spark, make(root), raw, args.batches)))
        panes, reports = holder["out"]
        result[name] = {"seconds": round(wall, 2), "cpu_s": round(cpu, 2), "events_per_s": round(args.events / wall),
                        "panes": panes, "batch_seconds": [round(r.seconds, 1) for r in reports]}
        print(f"{name}: {wall:.1f}s ({cpu:.1f} CPU s), {args.events / wall:,.0f} events/s, {panes:,} panes; "
              f"batches {[round(r.seconds, 1) for r in reports]}")
    plan_s = result["builtin_dataframe_plan"]["seconds"]
    result["ratio_user_trigger_per_key_to_builtin_plan"] = round(result["user_trigger_per_key_path"]["seconds"] / plan_s, 2)
    result["ratio_builtin_per_key_to_builtin_plan"] = round(result["builtin_per_key_path"]["seconds"] / plan_s, 2)
    cols = ["user_id", "window_start_ms", "items", "n"]
    a = spark.read.format("delta").load(str(data / "builtin_dataframe_plan/op/results")).select(*cols)
    b = spark.read.format("delta").load(str(data / "builtin_per_key_path/op/results")).select(*cols)
    result["per_key_equals_plan"] = a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0
    print(f"per-key path / DataFrame plan (EventTimeTrigger): {result['ratio_builtin_per_key_to_builtin_plan']}x; "
          f"user trigger (per-key) / built-in (plan): {result['ratio_user_trigger_per_key_to_builtin_plan']}x; "
          f"same results: {result['per_key_equals_plan']}")
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_keyed.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
