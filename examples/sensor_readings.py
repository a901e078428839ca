"""Raw data for ``jobs/sensor_sliding.toml``: temperature readings of a few sensors, a few seconds out of order.

``./dev demo`` lands them in the demo's data root (``raw/sensor_readings``), so the
``sensor_sliding`` DAGs of ``./dev airflow`` have rows to stream and backfill.
"""
from __future__ import annotations

import datetime as dt
import random

from pyspark.sql import SparkSession
from pyspark.sql import types as T

SENSOR_JOB = "sensor_sliding.toml"
SCHEMA = T.StructType([T.StructField("sensor_id", T.StringType()), T.StructField("temperature", T.DoubleType()),
                       T.StructField("reading_time", T.TimestampType())])
START = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)


def generate_readings(n_sensors: int = 5, minutes: int = 60, every_s: int = 15, seed: int = 11) -> list[tuple]:
    """One reading per sensor every ``every_s`` seconds for ``minutes``, in arrival order (up to 20 s out of
    order): a daily-cycle-like drift per sensor plus noise, so the sliding averages move."""
    rng = random.Random(seed)
    rows = []
    for s in range(n_sensors):
        base = 18.0 + 2 * s
        for i in range(minutes * 60 // every_s):
            at = START + dt.timedelta(seconds=i * every_s + rng.uniform(0, every_s))
            temperature = round(base + 3 * (i / (minutes * 4)) + rng.gauss(0, 0.4), 2)
            rows.append((f"s{s:02d}", temperature, at, at + dt.timedelta(seconds=rng.uniform(0, 20))))
    return [row[:3] for row in sorted(rows, key=lambda r: r[3])]


def land_readings(spark: SparkSession, path: str, rows: list[tuple] | None = None) -> int:
    """Append ``rows`` (default :func:`generate_readings`) to the Delta table at ``path``; returns how many."""
    rows = generate_readings() if rows is None else rows
    spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(path)
    return len(rows)
