"""Nexmark: the queries as this project's jobs, streamed in arrivals and backfilled, checked against batch SQL.

    ./dev bench bench_nexmark.py                                    # 10M events, V1 and V2 shapes
    ./dev bench bench_nexmark.py --events 1000000 --arrival 250000 --shape V2 --queries q1 q7
    ./dev bench bench_nexmark.py --events 1000000 --arrival 250000 --shape V2 --queries q8   # the window join
    ./dev bench bench_nexmark.py --events 100000000 --backfill-only --backfill-rounds 2   # the large run

Per shape (V1: 10M events per second of event time; V2: 100K per second):

1. the generator writes the person, auction and bid tables in one pass (its events/s); q8 (a
   join job: ``winjob stream`` and ``winjob backfill`` run it like the others) reads persons and
   auctions, the other queries bids;
2. streaming: the same events land again in arrivals of ``--arrival`` events; after each arrival,
   every stage of every query runs ``winjob stream`` (availableNow: one micro-batch, state in
   Delta, exactly-once); a query's seconds are the sum over arrivals of its stages';
3. backfill: every stage runs ``winjob backfill`` (one pass, from no output) on the one-pass tables,
   ``--backfill-rounds`` times alternating with step 5 (the median of the rounds after the first);
4. Spark's own streaming (q5, q7, q8, q11, q12: :mod:`nexmark.spark_streaming`): after each arrival, beside
   ours (the two sides alternate which runs first), Spark's own ``availableNow`` queries of the same
   query, their state in Spark's state store, their answer in Delta;
5. Spark batch SQL: the query's reference SQL (Spark's ``window`` / ``session_window``) written to
   Delta, timed: what plain Spark takes for the same answer in one pass;
6. correctness: the streamed and the backfilled answers, and Spark's own streamed answer, against
   the reference SQL (windowed answers up to the last window the stream closed).

Wall seconds and CPU seconds (the Spark JVM plus this Python process, from /proc); events/s
counts all events (persons, auctions and bids, Nexmark's convention), per core divides by the
cores used (``local[2]``: 2). The published anchors (per core) are printed beside them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import tomllib
from pathlib import Path

from nexmark.config import NexmarkConfig
from nexmark.generator import arrivals, write_events
from nexmark.queries import QUERIES
from nexmark.spark_streaming import SPARK_STREAMING, stream_once
from pipelines.cli import main as winjob
from windowing.spark.runtime.spark_session import get_spark

CORES = 2
ANCHORS_PER_CORE = {   # events per second per core, published (see docs/nexmark.md)
    "Flink 1.13 (V1)": {"q5": 22.1e3, "q7": 12.3e3, "q8": 146e3, "q11": 39.7e3, "q12": 75.7e3},
    "Flink 2.0 (V2)": {"q5": 74.5e3, "q7": 22.9e3, "q8": 162e3, "q11": 46.1e3, "q12": 194e3},
    "Flink, 16 cores (Feldera)": {"q5": 41.4e3, "q7": 17.6e3, "q8": 131e3, "q11": 34.2e3, "q12": 125e3},
    "Feldera, 16 cores": {"q5": 412e3, "q7": 196e3, "q8": 415e3, "q12": 418e3},
}


def cpu_s(spark) -> float:
    """CPU seconds so far of the Spark JVM (driver and local executors) and this process."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + time.process_time()


def timed(spark, fn) -> tuple[float, float]:
    wall0, cpu0 = time.perf_counter(), cpu_s(spark)
    fn()
    return time.perf_counter() - wall0, cpu_s(spark) - cpu0


def run_stages(query, command: str, root: Path) -> None:
    for job_file in query.job_files:
        code = winjob([command, "--job", str(job_file), "--root", str(root)])
        if code != 0:
            raise SystemExit(f"winjob {command} --job {job_file} --root {root} exited with {code}")


def backfill_rounds(spark, query, root: Path, sql_out: str, rounds: int) -> tuple[tuple[float, float], ...]:
    """The query's one-pass backfill (every stage, from no output) and its batch SQL, ``rounds`` times, the two
    alternating which runs first; each side's (wall, CPU) seconds: the median over the rounds after the first
    (the first pays the JVM's warm-up for whichever runs first), or the one round."""
    def backfill():
        for job_file in query.job_files:   # a first backfill: no results, state or run record of an earlier round
            shutil.rmtree(root / tomllib.loads(job_file.read_text())["output"]["root"], ignore_errors=True)
        run_stages(query, "backfill", root)

    def sql():
        query.reference(spark, str(root / "nexmark")).write.format("delta").mode("overwrite").save(sql_out)

    times = {backfill: [], sql: []}
    for r in range(rounds):
        for side in ((backfill, sql) if r % 2 == 0 else (sql, backfill)):
            times[side].append(timed(spark, side))
    warm = slice(1, None) if rounds > 1 else slice(None)
    return tuple((statistics.median(w for w, _ in times[side][warm]), statistics.median(c for _, c in times[side][warm]))
                 for side in (backfill, sql))


def rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f}" if seconds > 0 else "-"


def bench_shape(spark, shape: str, args, folder: Path) -> list[dict]:
    config = NexmarkConfig.shape(shape, args.events, seed=args.seed)
    print(f"\n=== {shape}: {config.events:,} events at {config.rate_per_s:,}/s of event time, "
          f"span {config.span_ms / 1000:.1f} s", flush=True)
    fill_root, stream_root = folder / shape / "backfill", folder / shape / "stream"
    wall, cpu = timed(spark, lambda: write_events(spark, config, str(fill_root / "nexmark")))
    print(f"generator: {wall:.1f} s, {cpu:.1f} CPU s: {rate(config.events, wall)} events/s "
          f"({rate(config.events, cpu)} per CPU second); load average {os.getloadavg()[0]:.1f}", flush=True)
    queries = [QUERIES[name] for name in args.queries]
    stream = {q.name: [0.0, 0.0] for q in queries}
    spark_stream = {q.name: [0.0, 0.0] for q in queries if q.name in SPARK_STREAMING}
    spark_root = folder / shape / "spark_stream"
    for n, (first, end) in enumerate(() if args.backfill_only else arrivals(config, args.arrival)):
        write_events(spark, config, str(stream_root / "nexmark"), first, end)
        write_events(spark, config, str(spark_root / "nexmark"), first, end)
        for query in queries:
            sides = [(stream, lambda: run_stages(query, "stream", stream_root))]
            if query.name in spark_stream:
                sides.append((spark_stream, lambda: stream_once(spark, query.name, str(spark_root / "nexmark"),
                                                                str(spark_root / "output"))))
            for totals, run in (sides if n % 2 == 0 else sides[::-1]):
                wall, cpu = timed(spark, run)
                totals[query.name][0] += wall
                totals[query.name][1] += cpu
        print(f"arrival [{first:,}, {end:,}) streamed through {len(queries)} queries "
              f"({len(spark_stream)} also as Spark's own)", flush=True)
    rows = []
    for query in queries:
        sql_out = str(folder / shape / "spark_sql" / query.name)
        fill, spark_sql = backfill_rounds(spark, query, fill_root, sql_out, args.backfill_rounds)
        answers = {"backfill": (fill_root, fill_root / "output" / "nexmark" / query.name / "results")}
        if not args.backfill_only:
            answers["stream"] = (stream_root, stream_root / "output" / "nexmark" / query.name / "results")
        if query.name in spark_stream and not args.backfill_only:
            answers["spark_stream"] = (spark_root, spark_root / "output" / query.name / "answer")
        checks = {side: query.mismatches(spark, str(root / "nexmark"), str(results))
                  for side, (root, results) in answers.items()}
        # Ours must equal the reference; Spark's own may differ where Spark's semantics do (printed, not fatal).
        ok = _equal(checks["backfill"]) and ("stream" not in checks or _equal(checks["stream"])
                                             or _closed_nothing(query, checks["stream"]))
        row = {"shape": shape, "query": query.name, "events": config.events, "span_s": config.span_ms / 1000,
               **({} if args.backfill_only else {"stream_s": stream[query.name][0],
                                                  "stream_cpu_s": stream[query.name][1]}),
               "backfill_s": fill[0], "backfill_cpu_s": fill[1], "spark_sql_s": spark_sql[0],
               "spark_sql_cpu_s": spark_sql[1], "correct": ok,
               **({"spark_stream_s": spark_stream[query.name][0], "spark_stream_cpu_s": spark_stream[query.name][1]}
                  if query.name in spark_stream and not args.backfill_only else {}),
               "checks": {k: {x: v[x] for x in ("rows", "missing", "extra")} | {"closed_nothing": _closed_nothing(query, v)}
                          for k, v in checks.items()}}
        rows.append(row)
        own = (f"Spark's own stream {row['spark_stream_s']:.1f} s / {row['spark_stream_cpu_s']:.1f} CPU s "
               f"(ours / Spark's {row['stream_s'] / row['spark_stream_s']:.2f}x), " if "spark_stream_s" in row else "")
        streamed = (f"stream {row['stream_s']:.1f} s / {row['stream_cpu_s']:.1f} CPU s, " if "stream_s" in row
                    else "")
        print(f"{query.name}: {streamed}{own}"
              f"backfill {fill[0]:.1f} s / {fill[1]:.1f} CPU s, Spark SQL {spark_sql[0]:.1f} s / "
              f"{spark_sql[1]:.1f} CPU s; equal to the batch SQL: "
              + ", ".join(f"{side} {_verdict(row, side)}" for side in row["checks"])
              + ("" if ok else "; DIFFER: " + json.dumps(checks, default=str)), flush=True)
    return rows


def _equal(check: dict) -> bool:
    return check["missing"] == 0 and check["extra"] == 0


def _closed_nothing(query, check: dict) -> bool:
    """A stream of a windowed query that closed no window yet (a short event-time span): nothing to compare."""
    return query.windowed and check["rows"] == 0 and check.get("bound_ms") is None


def _verdict(row: dict, side: str) -> str:
    """Whether ``side``'s answer equals the reference SQL's (the reference itself: ``reference``)."""
    check = row["checks"].get(side)
    if check is None:
        return "reference"
    if check["closed_nothing"]:
        return "no window closed"
    return "yes" if _equal(check) else "NO"


def report(rows: list[dict]) -> None:
    print("\n| shape | query | events | event-time span | side | wall s | CPU s | events/s | per core "
          "| per CPU s | correct |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        for side, key in (("stream", "stream"), ("Spark's own stream", "spark_stream"), ("backfill", "backfill"),
                          ("Spark batch SQL", "spark_sql")):
            if f"{key}_s" not in r:
                continue
            wall, cpu = r[f"{key}_s"], r[f"{key}_cpu_s"]
            print(f"| {r['shape']} | {r['query']} | {r['events']:,} | {r['span_s']:.1f} s | {side} | {wall:.1f} | "
                  f"{cpu:.1f} | {rate(r['events'], wall)} | {rate(r['events'], wall * CORES)} | "
                  f"{rate(r['events'], cpu)} | {_verdict(r, key)} |")
    print("\nanchors, events/s per core:")
    for system, figures in ANCHORS_PER_CORE.items():
        print(f"  {system}: " + ", ".join(f"{q} {v:,.0f}" for q, v in figures.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--arrival", type=int, default=1_000_000, help="events per streaming arrival")
    parser.add_argument("--shape", nargs="+", default=["V1", "V2"], choices=["V1", "V2"])
    parser.add_argument("--queries", nargs="+", default=sorted(QUERIES), choices=sorted(QUERIES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the tables (printed folder)")
    parser.add_argument("--backfill-only", action="store_true",
                        help="no streaming (ours or Spark's own): the generator, the one-pass backfills and the "
                             "batch SQL only (the large runs)")
    parser.add_argument("--backfill-rounds", type=int, default=3,
                        help="rounds of each query's backfill and batch SQL, alternating which runs first (the "
                             "median of the rounds after the first is reported)")
    args = parser.parse_args()
    if args.backfill_rounds < 1:
        parser.error(f"--backfill-rounds must be at least 1, got {args.backfill_rounds}")
    spark = get_spark("bench_nexmark", conf={"spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    folder = Path(tempfile.mkdtemp(prefix="bench_nexmark_"))
    try:
        rows = [row for shape in args.shape for row in bench_shape(spark, shape, args, folder)]
        report(rows)
        out = Path(__file__).resolve().parent / "out"
        out.mkdir(exist_ok=True)
        (out / "nexmark.json").write_text(json.dumps(rows, indent=2))
        if not all(r["correct"] for r in rows):
            raise SystemExit("some answers differ from the batch SQL (see above)")
    finally:
        if args.keep:
            print(f"tables kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
