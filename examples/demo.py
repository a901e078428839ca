"""The demo: a purchase stream with out-of-order and late events, run as a
stream in several arrivals and as a backfill, with the results side by side."""
from __future__ import annotations

import datetime as dt
import random
import shutil
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipelines.drivers import log, run_backfill, run_stream
from pipelines.job import Job, load_job

REPO = Path(__file__).resolve().parents[1]
DEMO_JOB = REPO / "jobs" / "purchases_per_minute.toml"
RAW_SCHEMA = T.StructType([
    T.StructField("event_id", T.StringType()), T.StructField("user_id", T.StringType()),
    T.StructField("item_count", T.LongType()), T.StructField("event_time", T.TimestampType()),
    T.StructField("ingestion_time", T.TimestampType())])
START = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)


def generate_purchases(n_events: int = 2400, n_users: int = 30, minutes: int = 20, seed: int = 7) -> list[tuple]:
    """Purchases over ``minutes`` of event time: mostly a few seconds out of
    order, ~2% delayed by minutes (late beyond the allowed lateness), and a few
    malformed rows (null user, null event time)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_events):
        event = START + dt.timedelta(milliseconds=rng.randrange(minutes * 60_000))
        delay = dt.timedelta(seconds=rng.uniform(0, 12))
        if rng.random() < 0.02:
            delay = dt.timedelta(minutes=rng.uniform(2, 6))
        rows.append((f"e{i:05d}", f"u{rng.randrange(n_users):03d}", rng.randint(1, 5), event, event + delay))
    rows.append(("bad1", None, 2, START + dt.timedelta(minutes=3), START + dt.timedelta(minutes=3)))
    rows.append(("bad2", "u001", 1, None, START + dt.timedelta(minutes=7)))
    rows.append(("bad3", None, 4, None, START + dt.timedelta(minutes=12)))
    return sorted(rows, key=lambda r: r[4])


def land(spark: SparkSession, rows: list[tuple], path: str) -> None:
    spark.createDataFrame(rows, RAW_SCHEMA).write.format("delta").mode("append").save(path)


def latest_panes(spark: SparkSession, path: str):
    from pyspark.sql import Window
    df = spark.read.format("delta").load(path)
    last = Window.partitionBy("user_id", "window_start_ms").orderBy(F.col("pane_index").desc())
    return df.withColumn("__r", F.row_number().over(last)).where("__r = 1").drop("__r")


def run_demo(spark: SparkSession, root: str, arrivals: int = 4) -> dict:
    root_path = Path(root).resolve()
    shutil.rmtree(root_path, ignore_errors=True)
    job: Job = load_job(DEMO_JOB, root=root_path)
    rows = generate_purchases()
    log(f"demo: {len(rows)} purchase events for {job.name}; landing them in {arrivals} arrivals "
        f"into {job.source_path}")
    per = -(-len(rows) // arrivals)
    for a in range(arrivals):
        land(spark, rows[a * per:(a + 1) * per], job.source_path)
        log(f"arrival {a + 1}/{arrivals}: {len(rows[a * per:(a + 1) * per])} rows landed; streaming job "
            f"(availableNow) processes them")
        # Validated once below, on the whole tables: per-batch validation (run_stream's default)
        # would check the same rows again after every arrival.
        run_stream(spark, job, available_now=True, validate=False)

    backfill_job = job.with_operator(job.operator_id + "_backfill", "backfill")
    log("backfill (complete mode) over the same range, event-time chunks, same operator")
    run_backfill(spark, backfill_job, validate=False)  # validated below, with the stream's tables

    stream = latest_panes(spark, job.results_path)
    backfill = latest_panes(spark, backfill_job.results_path)
    print("\nStream results (latest pane per window, first 12 windows):")
    stream.orderBy("window_start_ms", "user_id").select(
        "user_id", F.timestamp_millis("window_start_ms").alias("window_start"),
        F.timestamp_millis("window_end_ms").alias("window_end"), "items", "purchases", "max_items", "pane_index", "timing",
        "is_final", "batch_id").show(12, truncate=False)
    late = spark.read.format("delta").load(job.late_path)
    print(f"Late rows (beyond the allowed lateness; kept, not lost): {late.count()}")
    late.select("event_id", "user_id", "event_time", "ingestion_time", "reason", "watermark_ms", "batch_id") \
        .orderBy("event_time").show(8, truncate=False)
    quarantine = spark.read.format("delta").load(job.quarantine_path)
    print(f"Quarantined rows: {quarantine.count()}")
    quarantine.select("event_id", "user_id", "event_time", "reason").show(truncate=False)

    # Compare where nothing was late: the windows the stream has closed
    # (cleanup passed) and that lost no element to the late table.
    stream_wm = spark.read.format("delta").load(f"{job.state_root}/{job.operator_id}/progress") \
        .agg(F.max("watermark_ms")).first()[0]
    lateness = job.spec.allowed_lateness_ms
    late_windows = late.select("user_id", (F.col("event_time_ms") - F.pmod("event_time_ms", 60_000))
                               .alias("window_start_ms")).distinct()
    closed = stream.where(F.col("window_end_ms") - 1 + lateness <= stream_wm) \
        .join(late_windows, ["user_id", "window_start_ms"], "left_anti")
    cols = ["user_id", "window_start_ms", "items", "purchases", "max_items"]
    compared = closed.count()
    differ = closed.select(*cols).exceptAll(backfill.select(*cols).join(closed.select("user_id", "window_start_ms"),
                                                                       ["user_id", "window_start_ms"])).count()
    stream_total = stream.agg(F.sum("purchases")).first()[0]
    backfill_total = backfill.agg(F.sum("purchases")).first()[0]
    print(f"Stream vs backfill on {compared} windows the stream closed with nothing late: {differ} differ.")
    print(f"Purchases counted: stream {stream_total} (+{late.count()} late rows, {quarantine.count()} quarantined); "
          f"backfill {backfill_total} (nothing late in complete mode).")
    print(f"Tables are under {root_path}; inspect with: ./dev winjob inspect --job {DEMO_JOB} --root {root_path}")

    # Data quality of what the demo wrote, once at the end: the stream's tables (every
    # batch's outputs and the whole raw table) and the backfill's (with the
    # reconciliation: every raw row accounted for).
    from pipelines.quality import validate_job
    print("\nData quality (Great Expectations), of the stream's tables after its last batch and of the backfill's:")
    stream_report = validate_job(spark, job, run_kind="adhoc")
    print(stream_report.summary())
    backfill_report = validate_job(spark, backfill_job, run_kind="backfill")
    print(backfill_report.summary())
    from pipelines.visual.report import write_report
    report_page = write_report(spark, job)
    print(f"\nData Docs report: {stream_report.data_docs_path}")
    print(f"Data quality over time: {report_page}")
    print(f"Timeline of the windows: ./dev winjob inspect --job {DEMO_JOB} --root {root_path} --timeline "
          f"--out {root_path / 'timeline.svg'}")
    # The other jobs of jobs/ read from the same data root (./dev airflow uses it too): custom_trigger
    # reads the purchases above; the sensor job gets readings of its own.
    from examples.sensor_readings import SENSOR_JOB, land_readings
    sensors = load_job(REPO / "jobs" / SENSOR_JOB, root=root_path)
    log(f"demo: {land_readings(spark, sensors.source_path)} sensor readings landed in {sensors.source_path} "
        f"for jobs/{SENSOR_JOB}")
    print(f"Validate again with: ./dev winjob validate --job {DEMO_JOB} --root {root_path}")
    return {"compared": compared, "differ": differ, "late": late.count(), "quarantined": quarantine.count(),
            "stream_total": stream_total, "backfill_total": backfill_total, "raw": len(rows),
            "quality": {"stream": stream_report, "backfill": backfill_report},
            "data_docs": stream_report.data_docs_path, "quality_report": str(report_page)}
