"""The window state kept in the driver between batches equals the Delta table it stands for.

A stream reads its state from the rows it wrote the batch before when they are the version
the last commit recorded (:mod:`windowing.spark.state_cache`); otherwise from Delta. Each
test compares a run that keeps the state in the driver with one that reads every batch
from Delta, table by table, and checks that the cache is dropped when another writer's
version, a replay or a reset comes between.
"""
from __future__ import annotations

import json

import pytest
from pyspark.sql import types as T

from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import GlobalWindows, TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import CountTrigger, PurgingTrigger
from windowing.spark import delta_io, stores
from windowing.spark.operator import SparkWindowOperator
from windowing.spark.state_cache import DELETE_FLAG, CachedState

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("state_cache")]

SCHEMA = "k string, ts bigint, v bigint"
# Windows of 10 ms, 5 ms allowed lateness: windows fire, fire late, are cleaned; one row too late.
BATCHES = [
    [("a", 1, 1), ("b", 2, 10), ("a", 12, 2)],
    [("a", 8, 4), ("b", 25, 20), ("c", 31, 100)],
    [("a", 3, 8), ("b", 14, 40), ("c", 44, 200)],     # a@3 is beyond the lateness: late table
    [("a", 52, 16), ("b", 47, 80)],
    [("c", 70, 300)],
]


def tumbling_spec():
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .allowed_lateness(5).side_output_late_data().aggregate(s=Sum("v"), n=Count()))


def global_count_spec():
    # global windows: the state is one bucket, written by MERGE
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(GlobalWindows())
            .trigger(PurgingTrigger(CountTrigger(2))).aggregate(s=Sum("v"), n=Count()))


def _tables(spark, op) -> dict:
    store = op.store
    out = {}
    for name, path in (("results", store.results_path), ("late", store.late_path), ("windows", store.windows_path)):
        if delta_io.table_exists(spark, path):
            out[name] = sorted(map(repr, (tuple(r) for r in spark.read.format("delta").load(path).collect())))
    progress = spark.read.format("delta").load(store.progress_path).orderBy("batch_id").collect()
    out["progress"] = [(r.batch_id, r.watermark_ms, json.loads(r.metrics)) for r in progress]
    return out


def _run(spark, root, spec, batches, in_driver: bool, monkeypatch):
    with monkeypatch.context() as patch:
        if not in_driver:
            patch.setattr(stores, "MAX_CACHED_STATE_ROWS", -1)     # no state is small enough
        op = SparkWindowOperator.on_delta(spark, spec, "op", str(root))
        for b, rows in enumerate(batches):
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            cached = op.store._cached
            if in_driver:
                assert cached is not None and cached.version == op.last_progress()["windows_version"]
            else:
                assert cached is None
    return op


@pytest.fixture(scope="module")
def tumbling_alone(spark, tmp_path_factory):
    """The tables of one operator running every batch of the tumbling spec with its state kept."""
    with pytest.MonkeyPatch.context() as patch:
        op = _run(spark, tmp_path_factory.mktemp("alone"), tumbling_spec(), BATCHES, True, patch)
    windows = spark.read.format("delta").load(op.store.windows_path)
    assert sorted(map(tuple, windows.collect())) == sorted(op.store._cached.rows)
    return _tables(spark, op)


def test_state_kept_in_the_driver_gives_the_tables_of_reading_delta(spark, tmp_path, monkeypatch, tumbling_alone):
    read = _run(spark, tmp_path / "read", tumbling_spec(), BATCHES, False, monkeypatch)
    assert _tables(spark, read) == tumbling_alone


def test_global_windows_kept_in_the_driver_merge_as_reading_delta(spark, tmp_path, monkeypatch):
    kept = _run(spark, tmp_path / "kept", global_count_spec(), BATCHES, True, monkeypatch)
    read = _run(spark, tmp_path / "read", global_count_spec(), BATCHES, False, monkeypatch)
    assert _tables(spark, kept) == _tables(spark, read)
    windows = spark.read.format("delta").load(kept.store.windows_path)
    assert sorted(map(tuple, windows.collect())) == sorted(kept.store._cached.rows)


def test_another_writers_version_is_read_from_delta(spark, tmp_path, tumbling_alone):
    """A writes batches 0-1, B (another store on the root) batch 2, A batch 3 onwards: A's kept
    rows are of a version B's commit followed; A must read B's version from Delta."""
    spec = tumbling_spec()
    a = SparkWindowOperator.on_delta(spark, spec, "op", str(tmp_path / "two"))
    for b in (0, 1):
        a.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    stale = a.store._cached
    b_op = SparkWindowOperator.on_delta(spark, spec, "op", str(tmp_path / "two"))
    b_op.process_batch(spark.createDataFrame(BATCHES[2], SCHEMA), 2)
    a.store._loaded = False                 # A learns of B's commit as a restarted stream would
    for b in (3, 4):
        a.process_batch(spark.createDataFrame(BATCHES[b], SCHEMA), b)
    assert a.store._cached.version > stale.version + 1
    assert _tables(spark, a) == tumbling_alone


def test_a_replayed_batch_drops_the_kept_rows(spark, tmp_path, tumbling_alone):
    """A batch that dies after its state write and is replayed by the same operator finds the
    write landed: what it keeps cannot be known, so the next batch reads Delta."""
    spec = tumbling_spec()
    armed = []

    def die_once(stage: str) -> None:
        if stage == "before_progress" and armed:
            armed.clear()
            raise RuntimeError("killed")
    op = SparkWindowOperator.on_delta(spark, spec, "op", str(tmp_path / "replay"), fault_injection=die_once)
    for b, rows in enumerate(BATCHES):
        if b == 2:
            armed.append(True)
            with pytest.raises(RuntimeError, match="killed"):
                op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            assert op.store._cached is not None                       # of the version the batch wrote...
            assert op.store._cached.version != op.last_progress()["windows_version"]   # ...not the committed one
        op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
        if b == 2:
            assert op.store._cached is None        # the replay found its state write landed
    assert _tables(spark, op) == tumbling_alone


def test_small_batches_run_without_adaptive_execution_and_restore_the_session(spark, tmp_path):
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        seen = []
        op = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", str(tmp_path),
                                          fault_injection=lambda stage: seen.append(
                                              (stage, spark.conf.get("spark.sql.adaptive.enabled"))))
        for b, rows in enumerate(BATCHES[:3]):
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
        adaptive = {stage: value for stage, value in seen[-5:]}
        assert seen[0] == ("start", "true")                  # the first batch: the session's settings
        assert adaptive["after_outputs"] == "false"          # later ones: small
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "false")


def test_applying_changes_replaces_deletes_and_inserts_by_key():
    schema = T.StructType([T.StructField(n, T.LongType()) for n in ("k", "end_bucket", "s")])
    cached = CachedState(4, schema, ((1, 0, 10), (2, 0, 20), (3, 1, 30)))
    changes = cached.apply([{"k": 1, "end_bucket": 0, "s": 11, DELETE_FLAG: False},
                            {"k": 3, "end_bucket": 1, "s": None, DELETE_FLAG: True},
                            {"k": 9, "end_bucket": 2, "s": None, DELETE_FLAG: True},     # matches nothing
                            {"k": 4, "end_bucket": 2, "s": 40, DELETE_FLAG: False}], ["k", "end_bucket"], "end_bucket")
    assert sorted(changes.rows) == [(1, 0, 11), (2, 0, 20), (4, 2, 40)]
    assert changes.deleted == 1 and changes.touched == {0, 1, 2}
    assert cached.after(changes, 4, 5, wrote=True) == CachedState(5, schema, changes.rows)
    assert cached.after(changes, 4, 5, wrote=False) is None      # the write was a replay's
    assert cached.after(changes, 4, 6, wrote=True) is None       # another commit came between
    assert cached.after(changes, 5, 6, wrote=True) is None       # the table had moved on before it


def test_small_batch_settings_reach_the_streaming_querys_own_session(spark, tmp_path):
    """In ``foreachBatch`` the batch's DataFrame belongs to the query's clone of the session:
    the small-batch settings must be set (and put back) there too."""
    raw = str(tmp_path / "raw")
    for rows in BATCHES[:3]:
        spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append").save(raw)
    seen, current = [], {}
    op = SparkWindowOperator.on_delta(spark, tumbling_spec(), "op", str(tmp_path / "state"),
                                      fault_injection=lambda stage: seen.append(
                                          (stage, current["session"].conf.get("spark.sql.adaptive.enabled"))))

    def each_batch(df, batch_id):
        current["session"] = df.sparkSession
        op.process_batch(df, batch_id)
        seen.append(("after_batch", df.sparkSession.conf.get("spark.sql.adaptive.enabled")))

    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        query = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(raw).writeStream
                 .foreachBatch(each_batch).option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "false")
    assert current["session"] is not spark                      # the query's own session
    outputs = [value for stage, value in seen if stage == "after_outputs"]
    assert outputs == ["true", "false", "false"]                 # the first batch: the session's settings
    assert {value for stage, value in seen if stage == "after_batch"} == {"true"}
