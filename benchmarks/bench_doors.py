"""The entry points users run, each against Spark's own query of the same windows on the same data.

    ./dev bench bench_doors.py stream --rows 600 --keys 100             # run_stream availableNow per arrival
    ./dev bench bench_doors.py stream --rows 50000 --keys 10000
    ./dev bench bench_doors.py stream --rows 150 --keys 50 --validate   # a run that validates (GX)
    ./dev bench bench_doors.py stream --phases                          # then where one run's time goes
    ./dev bench bench_doors.py processing --rows 600 --keys 100         # one long-running query, per micro-batch
    ./dev bench bench_doors.py fresh --rows 600 --keys 100              # `winjob stream`: a new process per arrival
    ./dev bench bench_doors.py fresh --rounds 3 --phases                # then where a new process's run goes
    ./dev bench bench_doors.py airflow --rows 600 --keys 100 --rounds 4 # the Airflow streaming task, real scheduler
    ./dev bench bench_doors.py airflow --rounds 2 --phases              # then one more arrival, each side by step
    ./dev bench bench_doors.py backfill --window tumbling --chunk all   # `winjob backfill`, one pass
    ./dev bench bench_doors.py backfill --window tumbling --chunk "10 minutes"
    ./dev bench bench_doors.py backfill --window sessions --chunk all --events 200000 --keys 1000
    ./dev bench bench_doors.py backfill --window sessions --chunk "10 minutes"
    ./dev bench bench_doors.py backfill --chunk "10 minutes" --phases  # then where one run's time goes

The job: tumbling 1-minute windows per user, 10 s out of orderness, sum, count and max of
``item_count``, accumulating, late rows to the late table, results in Delta. Spark's own query:
the raw Delta table, ``withWatermark("event_time", "10 seconds")``,
``groupBy(window(event_time, "1 minute"), user_id)`` with the same aggregates, appended to a Delta
table. Each round appends one arrival (``--rows`` rows of ``--keys`` users over two minutes of
event time, a little out of order) and then runs both sides, alternating which goes first:

* ``stream``: :func:`pipelines.drivers.run_stream` (``available_now=True``, validation off unless
  ``--validate``) once per arrival in this process, a new call each time (nothing held between
  calls but what the product keeps itself) against Spark's availableNow query, one per arrival,
  started anew each time in the same process.
* ``processing``: one ``run_stream(processing_time=...)`` running while the arrivals land, against
  Spark's query with the same ``processingTime`` trigger (each side on its own copy of the raw
  table, one side after the other); per arrival, the seconds of the micro-batches it caused (Spark
  runs two: the data batch and the eviction batch the advanced watermark triggers).
* ``fresh``: ``winjob stream --job J --root R`` as a new process per arrival (the Airflow streaming
  task's shape) against ``python benchmarks/spark_stream_once.py`` (Spark's query, availableNow,
  in the same kind of new process).
* ``airflow``: the product's streaming DAG (``dags/streaming.py`` as shipped, its task calling
  :func:`pipelines.orchestration.stream_run` in the task process) triggered once per arrival on a
  real local Airflow (:mod:`airflow_runs`: ``airflow standalone``, LocalExecutor, the streaming
  pool) against a DAG of the same shape whose task calls ``spark_stream_once.run_once`` (Spark's
  availableNow query) in its task process. Per run: the task instance's seconds (start to end, as
  Airflow recorded them: the task process, the DAG file, Spark's session, the run), the DAG run's
  (queued to end) and the benchmark's wall seconds from the trigger call to the run's success.
  The processes Airflow started are stopped by PID at the end. ``--phases``: one more arrival
  through profiled DAGs of the same shape: each task's seconds split into its Spark session, its
  run and the task process's own, and our run by step (:func:`driver_profiler` in the task).

* ``backfill``: ``winjob backfill --job J --root R --chunk C`` (:func:`pipelines.cli.main` in this
  process: the command's own code path, without the interpreter's and the JVM's start, which
  ``fresh`` measures) on ``--events`` rows of ``--keys`` users over ``--span-minutes`` of event
  time, against Spark's own batch query of the same windows on the same raw Delta table, written
  to a Delta table. ``--window tumbling`` runs the demo's job file (``jobs/purchases_per_minute.toml``:
  1-minute windows, sum, count and max; its validation off: validation is measured by ``stream
  --validate``) against ``groupBy(window(event_time, "1 minute"), user_id)``; ``--window sessions``
  a sessions job file (30-second gap, the same aggregates) against ``groupBy(session_window(...),
  user_id)``. ``--chunk all`` is the one-pass backfill against one query. With a duration, ours
  runs chunk by chunk (then its flush) and, for tumbling windows, Spark's side runs one query per
  chunk of the same event-time range (appended to its table; the chunks start at the first event,
  on a window boundary, so no window is split); a chunked session has no batch equivalent in
  Spark (a session may span chunks), so Spark's side stays the one query and the per-chunk line
  shows Spark's seconds divided by our chunks. Each round writes fresh outputs on both sides.

Prints per round each side's wall seconds (and ours' batch seconds, Spark jobs); then the medians
of the rounds after the first (the first round of a JVM pays JIT compilation), the ratios ours /
Spark's (median of the rounds' ratios and ratio of the sums), whether every window Spark emitted
is among our final panes with equal values, the driver's peak RSS and JVM heap, and the load
average at start and end. ``bench_windows.py`` (tumbling) and ``bench_sessions.py`` (sessions)
measure :func:`pipelines.drivers.run_backfill` on millions of events with a hand-built job.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pyspark.sql import functions as F

from bench_common import (BASE_MS, StepProfiler, alternate, append_round, commit_line, compare_windows, load_line, memory_line,
                          median_ratio, our_final_results, spark_jobs_so_far, spark_results, spark_windowed_stream,
                          sum_ratio, wrap_operator_steps)

HERE = Path(__file__).resolve().parent
SIDES = ["spark", "ours"]

SOURCE_TOML = """\
[source]
path = "{raw}"
key = ["user_id"]
event_time = "event_time"
max_out_of_orderness = "10 seconds"
"""
"""The raw purchases as every benchmark job reads them."""

JOB_TOML = """
[job]
name = "bench_doors"
operator_id = "doors"

""" + SOURCE_TOML + """
[window]
type = "tumbling"
size = "1 minute"
mode = "accumulating"
late_output = true

[aggregates]
items = "sum(item_count)"
n = "count()"
max_items = "max(item_count)"

[quality]
validate_runs = {validate}
result_bounds = {{ items = {{ min = 1 }}, n = {{ min = 1 }} }}

[output]
root = "{out}"

[spark]
"spark.sql.shuffle.partitions" = "4"
"""


AIRFLOW_TOML = """
[airflow]
start_date = "2100-01-01"
"""
"""The job's DAGs run only when triggered: with a start date ahead the scheduler makes no run of its own."""


def write_job(root: Path, raw: str, out: str, validate: bool, extra: str = "") -> Path:
    """The benchmark's job file ``<root>/<out>.toml`` on the raw table ``raw``; ``extra``: TOML tables appended."""
    path = root / f"{out}.toml"
    path.write_text(JOB_TOML.format(raw=raw, out=out, validate=str(validate).lower()) + extra)
    return path


def summary(rounds: list[dict], keys: list[str], label: str) -> None:
    warm = rounds[1:] or rounds
    print(f"\n{label}; medians of rounds 1-{len(rounds) - 1} (round 0 warms up):")
    for side in SIDES:
        print(f"  {side:5s}: " + ", ".join(f"{key} {statistics.median(r[side][key] for r in warm):.2f}"
                                          for key in keys if key in warm[0][side]))
    for key in keys:
        if all(key in r["spark"] and key in r["ours"] for r in warm):
            print(f"  ratio ours / Spark's {key}: median of rounds {median_ratio(warm, key):.2f}x, "
                  f"ratio of the sums {sum_ratio(warm, key):.2f}x")


def check_results(spark, theirs_path: str, ours_path: str) -> str:
    windows, differ = compare_windows(spark_results(spark, theirs_path), our_final_results(spark, ours_path))
    return f"results: {windows} windows in Spark's output, {differ} of them missing or different in ours"


def spark_available_now(spark, raw: str, out: Path) -> dict:
    before, started = spark_jobs_so_far(spark), time.monotonic()
    query = (spark_windowed_stream(spark, raw).writeStream.format("delta").outputMode("append")
             .option("checkpointLocation", str(out / "spark_checkpoint")).option("path", str(out / "spark_results"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"Spark's query failed: {query.exception()}")
    batch_s = sum(p["durationMs"]["triggerExecution"] for p in query.recentProgress) / 1000
    return {"wall_s": time.monotonic() - started, "batch_s": batch_s, "jobs": spark_jobs_so_far(spark) - before}


def driver_profiler(spark) -> StepProfiler:
    """Wrap the steps of a ``run_stream`` call: the driver's own and the operator's."""
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter
    from pipelines import drivers, stream_offsets
    profiler = StepProfiler(spark)
    profiler.wrap(drivers, "run_stream", "run_stream (the rest)")
    profiler.wrap_all(drivers, ("require_raw_table", "operator_for", "claim_state"), "drivers")
    profiler.wrap(drivers._ValidationLedger, "__init__", "validation ledger (read)")
    profiler.wrap(drivers._ValidationLedger, "validate", "validation (GX)")
    profiler.wrap(stream_offsets, "batch_offsets", "stream_offsets.batch_offsets")
    profiler.wrap(DataStreamWriter, "start", "query start")
    profiler.wrap(StreamingQuery, "awaitTermination", "query run (Spark's own: offsets, commit log)")
    profiler.wrap(StreamingQuery, "stop", "query stop")
    wrap_operator_steps(profiler)
    return profiler


def backfill_profiler(spark) -> StepProfiler:
    """Wrap the steps of a ``winjob backfill`` run: the command's, the driver's and the operator's."""
    from pipelines import cli, drivers, job as job_module
    from windowing.spark.operator import protocol
    profiler = StepProfiler(spark)
    profiler.wrap(cli, "main", "cli.main (the rest)")
    profiler.wrap(cli, "_load", "cli: the job file")
    profiler.wrap(cli, "_spark", "cli: the Spark session")
    profiler.wrap_all(drivers, ("require_raw_table", "operator_for", "claim_state", "chunk_range"), "drivers")
    profiler.wrap(protocol.WindowOperator, "flush", "WindowOperator.flush (the rest)")
    wrap_operator_steps(profiler)
    return profiler


def stream_door(spark, root: Path, args) -> None:
    from pipelines.drivers import run_stream
    from pipelines.job import load_job
    raw = str(root / "raw")
    job = load_job(write_job(root, raw, "ours", args.validate), root=root)

    def ours() -> dict:
        before, started = spark_jobs_so_far(spark), time.monotonic()
        reports = run_stream(spark, job, available_now=True, validate=args.validate)
        return {"wall_s": time.monotonic() - started, "batch_s": sum(r.seconds for r in reports),
                "jobs": spark_jobs_so_far(spark) - before}
    sides = {"spark": lambda: spark_available_now(spark, raw, root), "ours": ours}
    rounds = []
    for r in range(args.rounds):
        append_round(spark, raw, r, args.rows, args.keys)
        row = {name: sides[name]() for name in alternate(r, SIDES)}
        rounds.append(row)
        print(f"round {r}: " + "; ".join(f"{n} wall {row[n]['wall_s']:.2f} s (batches {row[n]['batch_s']:.2f} s, "
                                         f"{row[n]['jobs']} jobs)" for n in SIDES), flush=True)
    summary(rounds, ["wall_s", "batch_s", "jobs"],
            f"run_stream availableNow per arrival, {args.rows} rows / {args.keys} keys"
            + (", validating" if args.validate else ""))
    print("  " + check_results(spark, str(root / "spark_results"), job.results_path))
    print("  " + memory_line(spark))
    if args.phases:
        profiler = driver_profiler(spark)
        append_round(spark, raw, args.rounds, args.rows, args.keys)
        sides["spark"]()
        profiler.reset()
        started = time.monotonic()
        sides["ours"]()
        print(f"\nours, one more run_stream call by step ({time.monotonic() - started:.2f} s wall):")
        print("\n".join(profiler.lines()))


def processing_door(spark, root: Path, args) -> None:
    from pipelines.drivers import run_stream
    from pipelines.job import load_job
    interval_s = float(args.interval.split()[0])
    results = {}
    per_side: dict[str, list[dict]] = {}
    for side in (SIDES if args.spark_first else SIDES[::-1]):
        raw = str(root / f"raw_{side}")
        append_round(spark, raw, 0, args.rows, args.keys)       # the table exists before the query starts
        if side == "spark":
            query = (spark_windowed_stream(spark, raw).writeStream.format("delta").outputMode("append")
                     .option("checkpointLocation", str(root / "spark_checkpoint"))
                     .option("path", str(root / "spark_results")).trigger(processingTime=args.interval).start())
            results["spark"] = str(root / "spark_results")
            stop = query.stop
        else:
            job = load_job(write_job(root, raw, "ours", False), root=root)
            results["ours"] = job.results_path
            failure: list[BaseException] = []

            def run() -> None:
                try:
                    run_stream(spark, job, processing_time=args.interval, timeout_s=3600, validate=False)
                except BaseException as error:    # noqa: BLE001 - reported by the main thread
                    failure.append(error)
            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            while not spark.streams.active:
                if failure:
                    raise RuntimeError("run_stream failed") from failure[0]
                time.sleep(0.1)
            query = spark.streams.active[0]

            def stop() -> None:
                query.stop()
                thread.join()
        seen: set[int] = set()
        arrivals = []
        for r in range(args.rounds + 1):
            if r:
                append_round(spark, raw, r, args.rows, args.keys)
            deadline = time.monotonic() + 120
            while not any(p["numInputRows"] > 0 and p["batchId"] not in seen for p in query.recentProgress):
                if time.monotonic() > deadline or query.exception():
                    raise RuntimeError(f"{side}: arrival {r} not processed: {query.exception()}")
                time.sleep(0.1)
            time.sleep(2 * interval_s + 1)       # the batches the arrival caused (Spark: the eviction batch too)
            new = [p for p in query.recentProgress if p["batchId"] not in seen]
            seen.update(p["batchId"] for p in new)
            arrivals.append({"batch_s": sum(p["durationMs"]["triggerExecution"] for p in new) / 1000,
                             "batches": len({p["batchId"] for p in new})})
            print(f"{side} arrival {r}: {arrivals[-1]['batch_s']:.2f} s in {arrivals[-1]['batches']} micro-batches",
                  flush=True)
        stop()
        per_side[side] = arrivals
    rounds = [{side: per_side[side][r] for side in SIDES} for r in range(args.rounds + 1)]
    summary(rounds, ["batch_s", "batches"], f"long-running stream (processingTime {args.interval}), "
                                            f"{args.rows} rows / {args.keys} keys per arrival")
    print("  " + check_results(spark, results["spark"], results["ours"]))
    print("  " + memory_line(spark))


SPARK_ONCE = HERE / "spark_stream_once.py"
REPO = HERE.parent
DEMO_JOB = REPO / "jobs" / "purchases_per_minute.toml"
BACKFILL_START_MS = BASE_MS
"""The first event's time: on a minute boundary, so the backfill's chunks (cut from the first event)
split no tumbling window."""
SESSION_GAP = "30 seconds"
SESSIONS_JOB_TOML = """
[job]
name = "bench_sessions_backfill"
operator_id = "bench_sessions_backfill"

""" + SOURCE_TOML + """
[window]
type = "session"
gap = "{gap}"

[aggregates]
items = "sum(item_count)"
purchases = "count()"
max_items = "max(item_count)"

[quality]
validate_runs = false

[output]
root = "out"

[spark]
"spark.sql.shuffle.partitions" = "4"
"""
AGGREGATES = ("items", "purchases", "max_items")


def backfill_raw(spark, raw: str, events: int, keys: int, span_ms: int) -> None:
    """``events`` purchases of ``keys`` users spread over ``span_ms`` of event time from
    :data:`BACKFILL_START_MS` (the first exactly there), with ids and item counts within the demo's bounds."""
    step = span_ms / events
    (spark.range(events)
     .select(F.concat(F.lit("u"), F.pmod(F.hash("id"), F.lit(keys)).cast("string")).alias("user_id"),
             F.timestamp_millis(F.lit(BACKFILL_START_MS) + (F.col("id") * step).cast("long")).alias("event_time"),
             ((F.col("id") * 13) % 20 + 1).cast("int").alias("item_count"),
             F.concat(F.lit("e"), F.col("id").cast("string")).alias("event_id"))
     .write.format("delta").mode("overwrite").save(raw))


def backfill_job_file(folder: Path, raw: str, window: str) -> Path:
    """The job file of ``window``: the demo's (its raw table ``raw``, validation off) or the sessions one."""
    if window == "sessions":
        text = SESSIONS_JOB_TOML.format(raw=raw, gap=SESSION_GAP)
    else:
        text = DEMO_JOB.read_text()
        for old, new in (('path = "raw/purchases"', f'path = "{raw}"'),
                         ("[quality]", "[quality]\nvalidate_runs = false")):
            assert old in text, f"{old!r} is not in {DEMO_JOB}"
            text = text.replace(old, new, 1)
    path = folder / f"bench_{window}.toml"
    path.write_text(text)
    return path


def spark_window_query(rows, window: str):
    """Spark's own batch query of the job's windows on ``rows``, as (user_id, start, end, aggregates)."""
    group = F.window("event_time", "1 minute") if window == "tumbling" else F.session_window("event_time", SESSION_GAP)
    return (rows.groupBy("user_id", group.alias("w"))
            .agg(F.sum("item_count").cast("long").alias("items"), F.count(F.lit(1)).alias("purchases"),
                 F.max("item_count").cast("long").alias("max_items"))
            .select("user_id", F.unix_millis("w.start").alias("window_start_ms"),
                    F.unix_millis("w.end").alias("window_end_ms"), *AGGREGATES))


def backfill_door(spark, root: Path, args) -> None:
    from pipelines import cli, drivers
    from pipelines.job import load_job
    from windowing.core.time import parse_duration_ms
    raw = str(root / "raw")
    span_ms = args.span_minutes * 60_000
    backfill_raw(spark, raw, args.events, args.keys, span_ms)
    job_file = backfill_job_file(root, raw, args.window)
    one_pass = args.chunk.strip().lower() == "all"
    chunk_ms = None if one_pass else parse_duration_ms(args.chunk, "chunk")
    n_chunks = 1 if one_pass else -(-span_ms // chunk_ms)
    spark_chunked = not one_pass and args.window == "tumbling"
    reports: list = []
    backfill = drivers.run_backfill

    def recorded(*a, **kw):
        reports[:] = backfill(*a, **kw)
        return reports
    drivers.run_backfill = recorded          # the CLI imports it when it runs: its reports are kept here

    def ours(r: int) -> dict:
        out = root / f"ours_{r}"
        started = time.monotonic()
        code = cli.main(["backfill", "--job", str(job_file), "--root", str(out), "--chunk", args.chunk])
        wall_s = time.monotonic() - started
        if code != 0:
            raise RuntimeError(f"winjob backfill exited {code}")
        chunks = [rep.seconds for rep in reports[:n_chunks]] if not one_pass else [reports[0].seconds]
        flush = [rep.seconds for rep in reports[n_chunks:]]
        return {"wall_s": wall_s, "chunk_s": statistics.median(chunks), "flush_s": sum(flush),
                "results": load_job(job_file, root=out).results_path}

    def theirs(r: int) -> dict:
        out = str(root / f"spark_{r}")
        source = spark.read.format("delta").load(raw)
        started = time.monotonic()
        if spark_chunked:
            chunks = []
            for i in range(n_chunks):
                lo, hi = BACKFILL_START_MS + i * chunk_ms, BACKFILL_START_MS + (i + 1) * chunk_ms
                began = time.monotonic()
                rows = source.where((F.unix_millis("event_time") >= lo) & (F.unix_millis("event_time") < hi))
                spark_window_query(rows, args.window).write.format("delta").mode("append").save(out)
                chunks.append(time.monotonic() - began)
        else:
            spark_window_query(source, args.window).write.format("delta").mode("overwrite").save(out)
        wall_s = time.monotonic() - started
        return {"wall_s": wall_s, "chunk_s": statistics.median(chunks) if spark_chunked else wall_s / n_chunks,
                "results": out}
    sides = {"spark": theirs, "ours": ours}
    rounds = []
    for r in range(args.rounds):
        row = {name: sides[name](r) for name in alternate(r, SIDES)}
        rounds.append(row)
        print(f"round {r}: spark {row['spark']['wall_s']:.2f} s (per chunk {row['spark']['chunk_s']:.2f} s); "
              f"ours {row['ours']['wall_s']:.2f} s (per chunk {row['ours']['chunk_s']:.2f} s"
              + (f", flush {row['ours']['flush_s']:.2f} s" if not one_pass else "") + ")", flush=True)
    what = "one pass" if one_pass else f"chunks of {args.chunk} ({n_chunks} chunks" + (
        ", Spark: one query per chunk)" if spark_chunked else ", Spark: one query, its seconds / chunks per chunk)")
    summary(rounds, ["wall_s", "chunk_s"], f"winjob backfill, {args.window}, {what}, {args.events} events / "
                                           f"{args.keys} keys over {args.span_minutes} min")
    if args.phases:
        profiler = backfill_profiler(spark)
        started = time.monotonic()
        ours(args.rounds)
        print(f"\nours, one more `winjob backfill` by step ({time.monotonic() - started:.2f} s wall, "
              f"{len(reports)} batches):")
        print("\n".join(profiler.lines()))
    drivers.run_backfill = backfill
    columns = ["user_id", "window_start_ms", "window_end_ms", *AGGREGATES]
    mine = spark.read.format("delta").load(rounds[0]["ours"]["results"]).where("is_final").select(*columns)
    theirs_rows = spark.read.format("delta").load(rounds[0]["spark"]["results"]).select(*columns)
    missing, extra = theirs_rows.exceptAll(mine).count(), mine.exceptAll(theirs_rows).count()
    print(f"  results: {theirs_rows.count()} windows in Spark's output; {missing} missing or different in our "
          f"final panes, {extra} of ours not in Spark's")
    print("  " + memory_line(spark))


def fresh_door(spark, root: Path, args) -> None:
    raw = str(root / "raw")
    job_file = write_job(root, raw, "ours", args.validate)
    winjob = Path(sys.executable).with_name("winjob")
    commands = {"ours": [str(winjob), "stream", "--job", str(job_file), "--root", str(root)],
                "spark": [sys.executable, str(SPARK_ONCE), raw, str(root / "spark_checkpoint"),
                          str(root / "spark_results")]}

    def run(side: str) -> dict:
        started = time.monotonic()
        done = subprocess.run(commands[side], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{side}: exit {done.returncode}: {done.stderr[-2000:]}")
        return {"wall_s": time.monotonic() - started}
    rounds = []
    for r in range(args.rounds):
        append_round(spark, raw, r, args.rows, args.keys)
        row = {name: run(name) for name in alternate(r, SIDES)}
        rounds.append(row)
        print(f"round {r}: " + "; ".join(f"{n} {row[n]['wall_s']:.2f} s" for n in SIDES), flush=True)
    summary(rounds, ["wall_s"], f"a new process per arrival, {args.rows} rows / {args.keys} keys")
    from pipelines.job import load_job
    print("  " + check_results(spark, str(root / "spark_results"), load_job(job_file, root=root).results_path))
    if args.phases:
        append_round(spark, raw, args.rounds, args.rows, args.keys)
        run("spark")
        profiled = [sys.executable, str(Path(__file__).resolve()), PROFILED_WINJOB, *commands["ours"][1:]]
        done = subprocess.run(profiled, capture_output=True, text=True)
        print(f"\nours, one more `winjob stream` in a new process by step:\n{done.stdout}", flush=True)
        if done.returncode != 0:
            raise RuntimeError(f"profiled winjob: exit {done.returncode}: {done.stderr[-2000:]}")


PROFILED_WINJOB = "profiled-winjob"
"""The first argument that makes this script a ``winjob`` process whose steps are profiled."""


def profiled_winjob(argv: list[str]) -> int:
    """Run ``winjob argv`` in this (new) process with the run's steps profiled; print the profile.

    The session is started first with the job's settings (what the command would start itself),
    so that its start is reported apart from the run's steps.
    """
    from pipelines.cli import main as winjob
    from pipelines.job import load_job
    from windowing.spark.runtime.spark_session import get_spark
    started = time.monotonic()
    job = load_job(Path(argv[argv.index("--job") + 1]), root=Path(argv[argv.index("--root") + 1]))
    spark = get_spark("winjob", conf=job.spark_conf)
    spark.sparkContext.setLogLevel("OFF")
    session_s = time.monotonic() - started
    profiler = driver_profiler(spark)
    from pipelines import cli
    profiler.wrap(cli, "main", "cli.main (the rest)")
    started = time.monotonic()
    code = winjob(argv)
    print(f"session start {session_s:.2f} s; the run {time.monotonic() - started:.2f} s wall:")
    print("\n".join(profiler.lines()))
    return code


def airflow_door(spark, root: Path, args) -> None:
    from airflow_runs import PROFILED_DAG_ID, PROFILED_SPARK_DAG_ID, SPARK_DAG_ID, AirflowRuns, write_dags_folder
    from pipelines.job import load_job
    raw = str(root / "raw")
    job_file = write_job(root, raw, "ours", False, AIRFLOW_TOML)
    job = load_job(job_file, root=root)
    spark_results = str(root / "spark_results")
    dags = write_dags_folder(root / "dags", raw, str(root / "spark_checkpoint"), spark_results, job, str(job_file))
    dag_ids = {"ours": f"{job.name}_streaming", "spark": SPARK_DAG_ID}
    profiled = {"ours": PROFILED_DAG_ID, "spark": PROFILED_SPARK_DAG_ID}
    runs = AirflowRuns(root / "airflow-home", dags, {"WINDOWING_DATA_ROOT": str(root),
                                                      "WINDOWING_AIRFLOW_JOBS": str(job_file)})
    rounds = []
    try:
        runs.start(list(dag_ids.values()) + (list(profiled.values()) if args.phases else []))
        print(f"Airflow ready at {runs.airflow.url} ({len(runs.airflow.started_pids())} processes)", flush=True)
        for r in range(args.rounds):
            append_round(spark, raw, r, args.rows, args.keys)
            row = {name: runs.run(dag_ids[name], f"{name}_{r}").as_row() for name in alternate(r, SIDES)}
            rounds.append(row)
            print(f"round {r}: " + "; ".join(f"{n} task {row[n]['task_s']:.2f} s, run {row[n]['run_s']:.2f} s, "
                                             f"wall {row[n]['wall_s']:.2f} s" + (f", try {row[n]['tries']}"
                                                                                 if row[n]["tries"] != 1 else "")
                                             for n in SIDES), flush=True)
        if args.phases:
            phases = airflow_phases(spark, runs, profiled, raw, args)
    finally:
        stopped = runs.stop()
        print(f"stopped the {len(stopped)} processes Airflow had started", flush=True)
    summary(rounds, ["task_s", "run_s", "wall_s"],
            f"Airflow streaming task per arrival (real scheduler), {args.rows} rows / {args.keys} keys")
    if runs.airflow.restarts:
        print(f"  Airflow restarted {len(runs.airflow.restarts)} times: {runs.airflow.restarts}")
    print("  " + check_results(spark, spark_results, job.results_path))
    if args.phases:
        print("\n".join(phases))


def airflow_phases(spark, runs, profiled: dict[str, str], raw: str, args) -> list[str]:
    """One more arrival, then each side's run through its profiled DAG (Spark's first): the task's seconds,
    its Spark session's, its run's, and ours by step. The lines to print."""
    append_round(spark, raw, args.rounds, args.rows, args.keys)
    lines = ["\none more arrival through the profiled DAGs (a new task process each):"]
    for side in SIDES:
        times = runs.run(profiled[side], f"{side}_phases")
        parts = runs.returned(profiled[side], f"{side}_phases")
        rest_s = times.task_s - parts["session_s"] - parts["run_s"]
        lines.append(f"  {side:5s}: task {times.task_s:.2f} s = Spark session {parts['session_s']:.2f} s + "
                     f"run {parts['run_s']:.2f} s + the task process's own {rest_s:.2f} s")
        lines += ["    " + line for line in parts.get("steps", [])]
    return lines


def main() -> None:
    if sys.argv[1:2] == [PROFILED_WINJOB]:
        raise SystemExit(profiled_winjob(sys.argv[2:]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("door", choices=["stream", "processing", "fresh", "airflow", "backfill"])
    parser.add_argument("--rows", type=int, default=600, help="rows per arrival")
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8, help="arrivals (the first is a warm-up)")
    parser.add_argument("--validate", action="store_true", help="our runs validate (Great Expectations)")
    parser.add_argument("--phases", action="store_true",
                        help="stream, fresh, backfill, airflow: then one more run of ours by step")
    parser.add_argument("--interval", default="3 seconds", help="processing: the processingTime trigger")
    parser.add_argument("--spark-first", action="store_true", help="processing: Spark's side runs first")
    parser.add_argument("--window", choices=["tumbling", "sessions"], default="tumbling",
                        help="backfill: the demo's job file (tumbling) or a sessions job file")
    parser.add_argument("--chunk", default="all", help="backfill: 'all' (one pass) or a duration such as '10 minutes'")
    parser.add_argument("--events", type=int, default=200_000, help="backfill: rows of the raw table")
    parser.add_argument("--span-minutes", type=int, default=60, help="backfill: event time the rows cover")
    args = parser.parse_args()
    print(commit_line())
    print(load_line("at start"), flush=True)
    from windowing.spark.runtime.spark_session import get_spark
    spark = get_spark("bench_doors", shuffle_partitions=4)
    spark.sparkContext.setLogLevel("ERROR")
    root = Path(tempfile.mkdtemp(prefix="bench_doors_"))
    try:
        {"stream": stream_door, "processing": processing_door, "fresh": fresh_door,
         "airflow": airflow_door, "backfill": backfill_door}[args.door](spark, root, args)
    finally:
        print(load_line("at end"))
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
