"""OPTIMIZE and VACUUM of the state tables between runs, on real Delta tables.

A resumed operator reads its window state at the version the last committed batch pinned.
A compaction (``OPTIMIZE``) commits a newer version with the same rows in other files, and a
``VACUUM`` then deletes the pinned version's files. The state read follows the pin forward
through commits that change no row (:func:`windowing.spark.lake.delta_lake_io.same_rows_version`), so the
next run reads the compacted files and writes what a run without the maintenance writes.
"""
from __future__ import annotations

import os

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.spark.lake import delta_lake_io
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.state.log import LOG_BATCHES_SETTING

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("state_maintenance")]

SCHEMA = "k string, ts bigint, v bigint"
BATCHES = [
    [(k, ts, 1) for k in "abcdef" for ts in (0, 3)],
    [(k, ts, 2) for k in "abcdef" for ts in (5, 12)],
    [(k, ts, 4) for k in "abcdef" for ts in (14, 25)],
    [(k, ts, 8) for k in "abcd" for ts in (27, 40)],
]
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
LISTING_TASKS = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
"""VACUUM lists the table's folders in this many tasks (default 10,000: 20-40 s on a tiny table here)."""


def spec():
    return (WindowSpecBuilder().key_by("k").event_time("ts", 2).window(TumblingEventTimeWindows.of(10))
            .aggregate(s=Sum("v"), n=Count()))


def run(spark, root, batches, first_batch: int = 0) -> SparkWindowOperator:
    """A new operator (state read from Delta: nothing kept in the driver yet) fed ``batches``."""
    op = SparkWindowOperator.on_delta(spark, spec(), "op", str(root), bucket_ms=20)
    for b, rows in enumerate(batches, start=first_batch):
        op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
    return op


def results(spark, op) -> list[str]:
    return sorted(map(repr, (tuple(r) for r in spark.read.format("delta").load(op.store.results_path).collect())))


def compact_and_vacuum(spark, session_settings, path: str, version: int) -> int:
    """``OPTIMIZE`` the table, then ``VACUUM`` it keeping no old file; how many of ``version``'s files are gone."""
    files = spark.read.format("delta").option("versionAsOf", version).load(path).inputFiles()
    table = DeltaTable.forPath(spark, path)
    table.optimize().executeCompaction()
    with session_settings({RETENTION_CHECK: "false", LISTING_TASKS: "2"}):
        table.vacuum(0)
    return sum(not os.path.exists(f.removeprefix("file:")) for f in files)


@pytest.fixture(scope="module")
def clean_run(spark, tmp_path_factory):
    """The results and the open windows of one run of every batch, without maintenance."""
    op = run(spark, tmp_path_factory.mktemp("clean"), BATCHES)
    return results(spark, op), sorted(op.store.open_windows())


@pytest.mark.parametrize("logged_batches", ["0", "1"], ids=["written-every-batch", "logged"])
def test_state_tables_compacted_and_vacuumed_between_runs_give_a_clean_runs_results(spark, tmp_path, clean_run,
                                                                                    session_settings, logged_batches):
    with session_settings({LOG_BATCHES_SETTING: logged_batches}):
        first = run(spark, tmp_path, BATCHES[:2])
        store = first.store
        pinned = store.start_versions(first.last_progress(), buffers=False)[0].version
        files = len(spark.read.format("delta").load(store.windows_path).inputFiles())
        gone = compact_and_vacuum(spark, session_settings, store.windows_path, pinned)
        assert gone > 0                                     # the pinned version's files
        assert len(spark.read.format("delta").load(store.windows_path).inputFiles()) < files
        progress_version = delta_lake_io.latest_version(spark, store.progress_path)
        compact_and_vacuum(spark, session_settings, store.progress_path, progress_version)
        resumed = run(spark, tmp_path, BATCHES[2:], first_batch=2)
        assert (results(spark, resumed), sorted(resumed.store.open_windows())) == clean_run


def _tiny(spark, path: str, rows: range, mode: str = "append", **options) -> None:
    writer = spark.range(rows.start, rows.stop, numPartitions=2).withColumn("v", F.col("id") * 2).write
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.format("delta").mode(mode).save(path)


def test_the_same_rows_version_follows_compactions_and_stops_at_the_first_change(spark, tmp_path, session_settings):
    path = str(tmp_path / "t")
    _tiny(spark, path, range(0, 10))
    _tiny(spark, path, range(10, 20))                                              # v1: rows added
    assert delta_lake_io.same_rows_version(spark, path, 1) == 1                         # the newest: itself
    DeltaTable.forPath(spark, path).optimize().executeCompaction()                 # v2: compaction
    with session_settings({RETENTION_CHECK: "false", LISTING_TASKS: "2"}):
        DeltaTable.forPath(spark, path).vacuum(0)                                  # commit info only, if any
    same = delta_lake_io.same_rows_version(spark, path, 1)
    assert same == delta_lake_io.latest_version(spark, path) >= 2
    rows = sorted(tuple(r) for r in delta_lake_io.read_as_of(spark, path, 1).collect())
    assert rows == [(i, 2 * i) for i in range(20)]                                 # v1's files are gone
    assert delta_lake_io.same_rows_version(spark, path, 0) == 0                         # v1 added rows: stop
    _tiny(spark, path, range(0, 20), mode="overwrite", dataChange="false")         # a rewrite marked unchanged
    assert delta_lake_io.same_rows_version(spark, path, 1) == delta_lake_io.latest_version(spark, path)
    DeltaTable.forPath(spark, path).delete(F.col("id") == 3)                       # rows removed
    changed = delta_lake_io.latest_version(spark, path)
    assert delta_lake_io.same_rows_version(spark, path, 1) == changed - 1
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.appendOnly' = 'false')")
    assert delta_lake_io.same_rows_version(spark, path, changed) == changed             # a metadata change: stop
