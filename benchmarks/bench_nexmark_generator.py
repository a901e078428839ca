"""The Nexmark generator alone: where its time goes, and one generator against another.

    ./dev bench bench_nexmark_generator.py split --events 10000000 --shape V1       # the breakdown
    ./dev bench bench_nexmark_generator.py compare --events 10000000 --other /tmp/old_generator.py
    ./dev bench bench_nexmark_generator.py compare --events 10000000 --arrival 1000000 --other /tmp/old_generator.py

``split`` times, per table, the columns to Spark's ``noop`` sink (generation alone), the same
rows to plain Parquet with Spark's defaults and with the raw tables' Parquet settings (plus
encoding and compression), to a Delta table made as :func:`write_events` makes it (plus Delta's
file statistics and the commit), then
:func:`nexmark.generator.write_events` (the three Delta tables as the benchmark writes them),
then a q0-like scan of the written tables (every column of every row read back, to ``noop``).

``compare`` alternates :func:`write_events` of this tree's generator with another generator
module (a file, e.g. an older commit's ``nexmark/generator.py`` saved by ``git show``) for
``--rounds`` rounds each, in one Spark session, and prints each side's median and the ratio; with
``--arrival N`` each round lands the events in arrivals of N (one :func:`write_events` each, as a
streaming run does), into tables that the first arrival creates.

Every figure: wall seconds, CPU seconds (Spark JVM plus this process), events/s wall, per core
(``local[2]``: wall x 2) and per CPU second, and the load average at its start.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_common import jvm_cpu_s

from nexmark import generator
from nexmark.config import NexmarkConfig
from windowing.spark.lake.delta_lake_io import create_empty
from windowing.spark.runtime.spark_session import get_spark

CORES = 2
RAW_OPTIONS = {k: v for k, v in generator.RAW_TABLE_PROPERTIES.items() if k.startswith("parquet.")}
"""The raw tables' Parquet settings as a plain Parquet write's options (Delta passes table properties)."""


def timed(spark, fn) -> dict:
    load = os.getloadavg()[0]
    wall0, cpu0 = time.perf_counter(), jvm_cpu_s(spark) + time.process_time()
    fn()
    return {"wall": time.perf_counter() - wall0, "cpu": jvm_cpu_s(spark) + time.process_time() - cpu0, "load": load}


def line(label: str, events: int, t: dict) -> str:
    return (f"{label:<40} {t['wall']:7.2f} s {t['cpu']:7.2f} CPU s  {events / t['wall']:>12,.0f} events/s  "
            f"{events / t['wall'] / CORES:>11,.0f} per core  {events / t['cpu']:>11,.0f} per CPU s  "
            f"load {t['load']:.1f}")


def load_module(path: str):
    name = f"other_generator_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def split(spark, config: NexmarkConfig, folder: Path, rounds: int) -> None:
    for r in range(rounds):
        print(f"-- round {r + 1}", flush=True)
        for event_type in generator.EVENT_TYPES:
            frame = event_type.frame(spark, config, ingested_at=dt.datetime.now(dt.timezone.utc))
            print(line(f"{event_type.name}: noop", config.events,
                       timed(spark, lambda: frame.write.format("noop").mode("overwrite").save())), flush=True)
            for name, options in (("parquet, Spark's defaults", {}), ("parquet, raw tables' options", RAW_OPTIONS)):
                out = folder / f"parquet_{r}" / event_type.name / name[9:12]
                print(line(f"{event_type.name}: {name}", config.events,
                           timed(spark, lambda: frame.write.format("parquet").options(**options).save(str(out)))),
                      flush=True)
            out = str(folder / f"delta_{r}" / event_type.name)
            create_empty(spark, frame.schema, out, properties=generator.RAW_TABLE_PROPERTIES)
            print(line(f"{event_type.name}: delta (raw table)", config.events,
                       timed(spark, lambda: frame.write.format("delta").mode("append").save(out))), flush=True)
        root = str(folder / f"events_{r}")
        print(line("write_events (3 Delta tables)", config.events,
                   timed(spark, lambda: generator.write_events(spark, config, root))), flush=True)
        for event_type in generator.EVENT_TYPES:
            path = generator.table_path(root, event_type)
            print(line(f"{event_type.name}: scan every column", config.events,
                       timed(spark, lambda: spark.read.format("delta").load(path)
                             .write.format("noop").mode("overwrite").save())), flush=True)
        shutil.rmtree(folder, ignore_errors=True)


def compare(spark, config: NexmarkConfig, folder: Path, rounds: int, other_path: str, arrival: int) -> None:
    sides = {"this tree": generator, f"other ({other_path})": load_module(other_path)}
    results: dict[str, list[dict]] = {name: [] for name in sides}
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for name in order:
            root = str(folder / f"{r}_{len(results[name])}_{order.index(name)}")
            module = sides[name]
            t = timed(spark, lambda: [module.write_events(spark, config, root, first, end)
                                      for first, end in generator.arrivals(config, arrival)])
            results[name].append(t)
            print(line(f"round {r + 1} {name[:28]}", config.events, t), flush=True)
            shutil.rmtree(root, ignore_errors=True)
    medians = {}
    for name, runs in results.items():
        medians[name] = {k: statistics.median(t[k] for t in runs) for k in ("wall", "cpu", "load")}
        print(line(f"median {name[:33]}", config.events, medians[name]))
    this, other = medians["this tree"], medians[f"other ({other_path})"]
    print(f"ratio other / this tree: wall {other['wall'] / this['wall']:.2f}x, CPU {other['cpu'] / this['cpu']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["split", "compare"])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--shape", default="V1", choices=["V1", "V2"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--other", help="compare: the other generator module's file")
    parser.add_argument("--arrival", type=int, help="compare: write the events in arrivals of this many "
                        "(default: one pass)")
    args = parser.parse_args()
    spark = get_spark("bench_nexmark_generator")
    config = NexmarkConfig.shape(args.shape, args.events)
    print(f"{args.shape}: {config.events:,} events, {CORES} cores", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="bench_nexmark_generator_"))
    try:
        if args.mode == "split":
            split(spark, config, folder, args.rounds)
        else:
            if not args.other:
                raise SystemExit("compare needs --other <generator module file>")
            compare(spark, config, folder, args.rounds, args.other, args.arrival or config.events)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
