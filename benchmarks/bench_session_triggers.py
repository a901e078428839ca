"""Benchmark: sessions with early firings on their DataFrame plan vs the same spec on the per-key path.

    ./dev bench bench_session_triggers.py [--events 200000] [--keys 1000] [--span-minutes 60] [--batches 4]
                                          [--only plan|per_key]

Data: ``bench_windows.py``'s generator, by default 200k events of 1k users over one hour (about
one click every 18 s per user, so 30-second sessions merge a lot, also across batches). Spec:
event-time sessions with a 30 s gap, sum + count, 10 s out-of-orderness, 30 s allowed lateness,
``EventTimeTrigger().with_early_firings(every_n_elements=3, every="20 seconds")
.with_late_firings(every_n_elements=2)``. The input is cut into ``--batches`` event-time batches,
each given a processing time 15 s after the previous one, then flushed; both runs on fresh
Delta state, after a warm-up run of each on a small slice (JIT, code generation):

1. the ``session_early_late`` DataFrame plan (``SparkWindowOperator``);
2. the same spec on the per-key path (``KeyedModelOperator``: the reference model per key).

Prints wall and JVM CPU seconds, events/second, the Spark jobs each batch ran (a job is an
action: each costs a scheduling round and a pass over its inputs) and the ratio, checks that both
wrote the same panes (all pane info, ``supersedes`` included), and writes
benchmarks/out/bench_session_triggers.json. ``--only`` runs one side (no ratio, no comparison).
"""
from __future__ import annotations

import argparse
import json
import shutil

from pyspark.sql import functions as F

from bench_windows import OUT, START_MS, generate, timed_cpu
from windowing import Count, EventTimeSessionWindows, EventTimeTrigger, Sum, WindowSpecBuilder
from windowing.spark.operator.protocol import KeyedModelOperator
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.runtime.spark_session import get_spark
from windowing.spark.state.stores import DeltaStore

PT_STEP_MS = 15_000


def spec():
    trigger = (EventTimeTrigger().with_early_firings(every_n_elements=3, every="20 seconds")
               .with_late_firings(every_n_elements=2))
    return (WindowSpecBuilder().key_by("user_id").event_time("event_time", max_out_of_orderness="10 seconds")
            .window(EventTimeSessionWindows.with_gap("30 seconds")).trigger(trigger).allowed_lateness("30 seconds")
            .side_output_late_data().aggregate(items=Sum("item_count"), n=Count()))


def run(spark, operator, raw, batches, span_ms):
    """Feed the raw table in ``batches`` event-time slices (processing time 15 s apart), then flush."""
    df = spark.read.format("delta").load(raw)
    ms = F.unix_millis("event_time")
    step = span_ms // batches + 1
    tracker = spark.sparkContext.statusTracker()
    reports, jobs = [], []

    def counted(call):
        before = len(tracker.getJobIdsForGroup())
        report = call()
        jobs.append(len(tracker.getJobIdsForGroup()) - before)
        return report

    for b in range(batches):
        lo, hi = START_MS + b * step, START_MS + (b + 1) * step
        part = df.where((ms >= lo) & (ms < hi)) if b < batches - 1 else df.where(ms >= lo)
        reports.append(counted(lambda: operator.process_batch(part, b, processing_time_ms=START_MS + b * PT_STEP_MS)))
    reports.append(counted(lambda: operator.flush(batches)))
    return sum(r.metrics.panes_emitted for r in reports), reports, jobs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--span-minutes", type=int, default=60)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--only", choices=["plan", "per_key"], default=None)
    args = parser.parse_args()
    span_ms = args.span_minutes * 60_000
    data = OUT / "session_triggers_data"
    shutil.rmtree(data, ignore_errors=True)
    spark = get_spark("bench_session_triggers", shuffle_partitions=8)
    raw = str(data / "raw")
    generate(spark, raw, args.events, args.keys, span_ms)
    print(f"generated {args.events:,} events, {args.keys:,} keys over {args.span_minutes} min; "
          f"{args.batches} batches + flush")
    runs = {
        "session_early_late_dataframe_plan": lambda root: SparkWindowOperator.on_delta(spark, spec(), "op", root),
        "session_early_late_per_key_path": lambda root: KeyedModelOperator(spark, spec(), DeltaStore(spark, "op", root)),
    }
    if args.only:
        keep = {"plan": "session_early_late_dataframe_plan", "per_key": "session_early_late_per_key_path"}[args.only]
        runs = {keep: runs[keep]}
    result = {"events": args.events, "keys": args.keys, "span_minutes": args.span_minutes, "batches": args.batches}
    warm = str(data / "warmup_raw")
    (spark.read.format("delta").load(raw).where(F.unix_millis("event_time") < START_MS + span_ms // 50)
     .write.format("delta").save(warm))
    for name, make in runs.items():
        run(spark, make(str(data / f"warmup_{name}")), warm, 1, span_ms // 50)
    for name, make in runs.items():
        root = str(data / name)
        holder = {}
        wall, cpu = timed_cpu(spark, lambda: holder.update(out=run(spark, make(root), raw, args.batches, span_ms)))
        panes, reports, jobs = holder["out"]
        result[name] = {"seconds": round(wall, 2), "cpu_s": round(cpu, 2), "events_per_s": round(args.events / wall),
                        "panes": panes, "batch_seconds": [round(r.seconds, 1) for r in reports],
                        "jobs_per_batch": jobs, "plan": reports[0].plan}
        print(f"{name}: {wall:.1f}s ({cpu:.1f} CPU s), {args.events / wall:,.0f} events/s, {panes:,} panes; "
              f"batches {[round(r.seconds, 1) for r in reports]}, Spark jobs {jobs} (plan {reports[0].plan})")
    if len(runs) < 2:
        OUT.mkdir(exist_ok=True)
        (OUT / f"bench_session_triggers_{args.only}.json").write_text(json.dumps(result, indent=2))
        return
    plan_s = result["session_early_late_dataframe_plan"]["seconds"]
    result["ratio_per_key_to_plan"] = round(result["session_early_late_per_key_path"]["seconds"] / plan_s, 2)
    cols = ["user_id", "window_start_ms", "window_end_ms", "pane_index", "timing", "is_final", "items", "n",
            "watermark_ms", "batch_id"]

    def panes(name):
        frame = spark.read.format("delta").load(str(data / f"{name}/op/results"))
        return frame.select(*cols, F.to_json(F.coalesce("supersedes", F.array())).alias("supersedes"))

    a, b = panes("session_early_late_dataframe_plan"), panes("session_early_late_per_key_path")
    result["same_panes"] = a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0
    print(f"per-key path / DataFrame plan: {result['ratio_per_key_to_plan']}x; same panes: {result['same_panes']}")
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_session_triggers.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
