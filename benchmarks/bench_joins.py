"""Join jobs through the doors users run, against Spark's own joins of the same tables.

    ./dev bench bench_joins.py backfill --kind window --rows 200000 --keys 2000     # winjob backfill vs a batch join
    ./dev bench bench_joins.py backfill --kind interval --rows 200000 --keys 2000
    ./dev bench bench_joins.py stream --kind window --rows 20000 --keys 1000          # winjob stream per arrival
    ./dev bench bench_joins.py stream --kind interval --rows 20000 --keys 1000

Two raw Delta tables: clicks (``user``, ``click_ms``, ``click_id``) and orders (``buyer``,
``order_ms``, ``order_id``), ``--rows`` rows each per arrival over ``--span-minutes`` of event
time, in event-time order (no late rows: Spark's joins and ours would drop different ones).
The job file (written to the run's folder) joins them by user:

* ``--kind window``: a window join on tumbling 1-minute windows, the event-time trigger (one
  final pane per window: the DataFrame plan). Spark's own: both sides' ``window(ts, "1 minute")``
  and an equi-join on the key and the window (batch; streaming with 0 s watermarks on both sides,
  the window equality bounding its state).
* ``--kind interval``: an interval join, an order 0 to 30 s after the click. Spark's own: an
  inner join on the key with ``order_ts BETWEEN click_ts AND click_ts + 30 seconds`` (streaming:
  0 s watermarks on both sides, the time range bounding its state).

``backfill``: ``winjob backfill`` (:func:`pipelines.cli.main` in this process: the command's own
code path) against Spark's batch join written to Delta, on the same tables, each round anew.
``stream``: ``--arrivals`` arrivals appended to both inputs; after each, ``winjob stream``
(availableNow) against Spark's stream-stream join (availableNow, its checkpoint kept), the sides
alternating which runs first. Printed: each side's seconds per round or arrival, the medians of
the rounds after the first, the ratio ours / Spark's, and whether the pairs are equal (ours: the
windows the watermark closed; Spark's: its pairs in those windows), the load average.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from pyspark.sql import functions as F

from bench_common import commit_line, load_line, memory_line
from pipelines.cli import main as winjob
from windowing.spark.joins.columns import JOIN_KEY, LEFT_TIME, RIGHT_TIME, ROW_INDEX, WE, WS
from windowing.spark.runtime.spark_session import get_spark

BASE_MS = 1_793_491_200_000
WINDOW_MS = 60_000
INTERVAL_UPPER_MS = 30_000

JOB = """[job]
name = "bench_join"
operator_id = "bench_join"

[left]
path = "raw/clicks"
key = "user"
event_time = "click_ms"
max_out_of_orderness = "0 ms"

[right]
path = "raw/orders"
key = "buyer"
event_time = "order_ms"
max_out_of_orderness = "0 ms"

[join]
left_columns = ["click_id"]
right_columns = ["order_id"]
late_output = true
{kind}

[output]
root = "out"

[spark]
"spark.sql.shuffle.partitions" = "4"
"""
KINDS = {
    "window": 'kind = "window"\nhow = "inner"\n\n[join.window]\ntype = "tumbling"\nsize = "1 minute"',
    "interval": f'kind = "interval"\nlower = "0 ms"\nupper = "{INTERVAL_UPPER_MS} ms"',
}


def append_arrival(spark, root: Path, arrival: int, rows: int, keys: int, span_ms: int) -> None:
    """Append arrival ``arrival``: ``rows`` clicks and ``rows`` orders of ``keys`` users over ``span_ms``."""
    step_ms = max(1, span_ms // rows)
    start = BASE_MS + arrival * span_ms
    ids = spark.range(rows)
    user = F.concat(F.lit("u"), (F.col("id") % keys).cast("string"))
    (ids.select(user.alias("user"), (F.lit(start) + F.col("id") * step_ms).alias("click_ms"),
                F.concat(F.lit(f"c{arrival}-"), F.col("id").cast("string")).alias("click_id"))
     .write.format("delta").mode("append").save(str(root / "raw" / "clicks")))
    # An order comes 0-40 s after its user's clicks (some beyond the interval's 30 s), in event-time order.
    (ids.select(user.alias("user"), (F.lit(start) + F.col("id") * step_ms + 7_000).alias("order_ms"),
                F.concat(F.lit(f"o{arrival}-"), F.col("id").cast("string")).alias("order_id"))
     .select(F.col("user").alias("buyer"), "order_ms", "order_id")
     .write.format("delta").mode("append").save(str(root / "raw" / "orders")))


def _sides(reader, root: Path):
    clicks = reader.format("delta").load(str(root / "raw" / "clicks")) \
        .withColumn("click_ts", F.timestamp_millis("click_ms"))
    orders = reader.format("delta").load(str(root / "raw" / "orders")) \
        .withColumn("order_ts", F.timestamp_millis("order_ms"))
    return clicks, orders


def spark_join(clicks, orders, kind: str, streaming: bool):
    """Spark's own join of the two sides, as ``(user, start_ms, end_ms, click_id, order_id)`` for a window
    join and ``(user, click_ms, order_ms, click_id, order_id)`` for an interval join."""
    if streaming:
        clicks, orders = clicks.withWatermark("click_ts", "0 seconds"), orders.withWatermark("order_ts", "0 seconds")
    if kind == "window":
        c = clicks.withColumn("w", F.window("click_ts", "1 minute"))
        o = orders.withColumn("ow", F.window("order_ts", "1 minute"))
        return (c.join(o, (c["user"] == o["buyer"]) & (c["w"] == o["ow"]))
                .select("user", F.unix_millis(F.col("w.start")).alias("start_ms"),
                        F.unix_millis(F.col("w.end")).alias("end_ms"), "click_id", "order_id"))
    return (clicks.join(orders, (clicks["user"] == orders["buyer"]) & (orders["order_ts"] >= clicks["click_ts"])
                        & (orders["order_ts"] <= clicks["click_ts"] + F.expr(f"INTERVAL {INTERVAL_UPPER_MS // 1000} SECONDS")))
            .select("user", "click_ms", "order_ms", "click_id", "order_id"))


def our_pairs(spark, root: Path, kind: str) -> Counter:
    out = spark.read.format("delta").load(str(root / "out" / "results"))
    key = F.col(JOIN_KEY).getField(out.schema[JOIN_KEY].dataType.fieldNames()[0])
    if kind == "window":
        rows = out.where(F.col(ROW_INDEX).isNotNull()).select(key, WS, WE, "click_id", "order_id")
    else:
        rows = out.select(key, LEFT_TIME, RIGHT_TIME, "click_id", "order_id")
    return Counter(tuple(r) for r in rows.collect())


def their_pairs(spark, path: str) -> Counter:
    return Counter(tuple(r) for r in spark.read.format("delta").load(path).collect())


def checked(ours: Counter, theirs: Counter, kind: str) -> str:
    """Equal pairs? For a stream, only ours' closed windows (window join) or pair times (interval) are compared."""
    if not ours:
        return "ours emitted nothing"
    bound = max(k[2] for k in ours)   # the window end, or the right element's time, reached
    theirs = Counter({k: n for k, n in theirs.items() if k[2] <= bound})
    ours = Counter({k: n for k, n in ours.items() if k[2] <= bound})
    return "equal" if ours == theirs else f"DIFFER ({sum((ours - theirs).values())} only ours, " \
                                          f"{sum((theirs - ours).values())} only Spark's)"


def bench_backfill(spark, args, folder: Path) -> None:
    root = folder / "tables"
    append_arrival(spark, root, 0, args.rows, args.keys, args.span_minutes * 60_000)
    job = root / "job.toml"
    job.write_text(JOB.format(kind=KINDS[args.kind]))
    rounds = []
    for r in range(args.rounds):
        times = {}
        for side in (("ours", "spark") if r % 2 == 0 else ("spark", "ours")):
            if side == "ours":
                shutil.rmtree(root / "out", ignore_errors=True)       # outputs and state: a first backfill
                started = time.perf_counter()
                assert winjob(["backfill", "--job", str(job), "--root", str(root)]) == 0
            else:
                started = time.perf_counter()
                clicks, orders = _sides(spark.read, root)
                spark_join(clicks, orders, args.kind, False).write.format("delta").mode("overwrite") \
                    .save(str(folder / "spark_out"))
            times[side] = time.perf_counter() - started
        rounds.append(times)
        print(f"round {r + 1}: ours {times['ours']:.2f} s, Spark's {times['spark']:.2f} s "
              f"({times['ours'] / times['spark']:.2f}x)", flush=True)
    verdict = checked(our_pairs(spark, root, args.kind), their_pairs(spark, str(folder / "spark_out")), args.kind)
    report(rounds, verdict, f"backfill, {args.kind} join, {args.rows:,} rows a side, {args.keys:,} keys")


def bench_stream(spark, args, folder: Path) -> None:
    ours_root, their_root = folder / "ours", folder / "spark"
    job = ours_root / "job.toml"
    ours_root.mkdir(parents=True)
    job.write_text(JOB.format(kind=KINDS[args.kind]))
    rounds = []
    for a in range(args.arrivals):
        for root in (ours_root, their_root):
            append_arrival(spark, root, a, args.rows, args.keys, args.span_minutes * 60_000)
        times = {}
        for side in (("ours", "spark") if a % 2 == 0 else ("spark", "ours")):
            started = time.perf_counter()
            if side == "ours":
                assert winjob(["stream", "--job", str(job), "--root", str(ours_root)]) == 0
            else:
                clicks, orders = _sides(spark.readStream, their_root)
                (spark_join(clicks, orders, args.kind, True).writeStream.format("delta").outputMode("append")
                 .trigger(availableNow=True).option("checkpointLocation", str(their_root / "_checkpoint"))
                 .start(str(their_root / "out")).awaitTermination())
            times[side] = time.perf_counter() - started
        rounds.append(times)
        print(f"arrival {a + 1}: ours {times['ours']:.2f} s, Spark's {times['spark']:.2f} s "
              f"({times['ours'] / times['spark']:.2f}x)", flush=True)
    verdict = checked(our_pairs(spark, ours_root, args.kind), their_pairs(spark, str(their_root / "out")), args.kind)
    report(rounds, verdict, f"stream, {args.kind} join, {args.rows:,} rows a side per arrival, {args.keys:,} keys")


def report(rounds: list[dict], verdict: str, what: str) -> None:
    warm = rounds[1:] or rounds
    ours, theirs = (statistics.median(r[s] for r in warm) for s in ("ours", "spark"))
    ratios = statistics.median(r["ours"] / r["spark"] for r in warm)
    print(f"\n{what}: medians after the first round: ours {ours:.2f} s, Spark's {theirs:.2f} s; "
          f"ratio (median of rounds) {ratios:.2f}x; pairs {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("door", choices=["backfill", "stream"])
    parser.add_argument("--kind", choices=sorted(KINDS), default="window")
    parser.add_argument("--rows", type=int, default=200_000, help="rows per side (per arrival when streaming)")
    parser.add_argument("--keys", type=int, default=2_000)
    parser.add_argument("--span-minutes", type=int, default=60, help="event time per arrival")
    parser.add_argument("--rounds", type=int, default=3, help="backfill rounds")
    parser.add_argument("--arrivals", type=int, default=4, help="streaming arrivals")
    args = parser.parse_args()
    spark = get_spark("bench_joins", conf={"spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    folder = Path(tempfile.mkdtemp(prefix="bench_joins_"))
    print(commit_line(), load_line("start"), sep="\n", flush=True)
    try:
        (bench_backfill if args.door == "backfill" else bench_stream)(spark, args, folder)
    finally:
        print(memory_line(spark), load_line("end"), sep="\n")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
