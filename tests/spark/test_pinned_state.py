"""Every batch reads state pinned to versions fixed at its start, on real Delta tables.

The first batch included: it reads the state tables as they were created, and a replay of a
first batch that crashed after its state MERGE does not see that MERGE. One test per path
(the DataFrame plans, the per-key path, de-duplication); and an insert-only MERGE that meets a
row it would overwrite fails, naming the table, the operator, the batch and the key.
"""
from __future__ import annotations

import json

import pytest

from transcripts.model import EveryTwoNegatives
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.spark.lake import delta_lake_io
from windowing.spark.operator.dispatch import operator_on_delta
from windowing.spark.operator.protocol import KeyedModelOperator
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.state.log import LOG_BATCHES_SETTING
from windowing.spark.plans.time_plans import EVICTING_COUNT_PLAN

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("pinned_state")]


@pytest.fixture(autouse=True)
def state_written_every_batch(spark):
    """These tests crash a batch after its state write: every batch writes the windows table
    (no logging in progress rows, :mod:`windowing.spark.state.log`; ``test_state_cache`` crashes
    batches that log)."""
    spark.conf.set(LOG_BATCHES_SETTING, "0")
    yield
    spark.conf.unset(LOG_BATCHES_SETTING)

SCHEMA = "k string, ts bigint, v bigint"
SLIDING_COUNT_BATCHES = [[("a", 0, 1)], [("a", 100, 2)], [("a", 200, 4)], [("a", 300, 8)]]


class Crash(Exception):
    pass


def sliding_count_spec():
    return WindowSpecBuilder().key_by("k").event_time("ts").count_window(4, 2).aggregate(s=Sum("v"), n=Count())


def keyed_spec():
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .trigger(EveryTwoNegatives()).allowed_lateness(5).side_output_late_data()
            .aggregate(s=Sum("v"), n=Count()))


def dedup_spec():
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .deduplicate("id", 1_000).aggregate(s=Sum("v"), n=Count()))


def test_sliding_count_windows_keep_every_element_across_batches_on_delta(spark, tmp_path):
    op = operator_on_delta(spark, sliding_count_spec(), "repro", str(tmp_path))
    assert op.plan.kind == EVICTING_COUNT_PLAN
    panes = {}
    for b, rows in enumerate(SLIDING_COUNT_BATCHES):
        op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
    for r in spark.read.format("delta").load(op.store.results_path).collect():
        panes[r.batch_id] = (r.s, r.n)
    assert panes == {1: (3, 2), 3: (15, 4)}
    buffers = sorted((r.elem_index, r.v) for r in spark.read.format("delta").load(op.store.buffers_path).collect())
    assert buffers == [(1, 1), (2, 2), (3, 4), (4, 8)]


def _tables(spark, op) -> dict:
    """What a run leaves: outputs, state tables and the progress rows (without writer ids and times)."""
    store = op.store
    paths = {"results": store.results_path, "late": store.late_path, "quarantine": store.quarantine_path}
    base = store.windows_path.rsplit("/", 1)[0]
    for name in ("windows", "buffers", "keyed_state", "seen_ids"):
        paths[name] = f"{base}/{name}"
    out = {}
    for name, path in paths.items():
        if delta_lake_io.table_exists(spark, path):
            out[name] = sorted(map(repr, (tuple(r) for r in spark.read.format("delta").load(path).collect())))
    progress = spark.read.format("delta").load(store.progress_path).orderBy("batch_id").collect()
    out["progress"] = [(r.batch_id, r.watermark_ms, r.max_seen_ms, json.loads(r.metrics)) for r in progress]
    return out


def _run(spark, root, spec, batches, schema, crash_batch=None, stage="before_progress"):
    """Run ``batches``; with ``crash_batch``, batch ``crash_batch`` dies at ``stage`` and a new
    operator replays it from the Delta tables."""
    current = {"batch": None}

    def fault(seen_stage):
        if seen_stage == stage and current["batch"] == crash_batch:
            raise Crash(seen_stage)

    op = operator_on_delta(spark, spec, "op", root, fault_injection=fault)
    for b, rows in enumerate(batches):
        current["batch"] = b
        try:
            op.process_batch(spark.createDataFrame(rows, schema), b)
        except Crash:
            current["batch"] = None
            op = operator_on_delta(spark, spec, "op", root, fault_injection=fault)
            assert not op.process_batch(spark.createDataFrame(rows, schema), b).skipped
    return op


def test_replay_of_a_first_batch_that_crashed_after_its_state_merge_equals_a_clean_run(spark, tmp_path):
    """The evicting count plan: windows and buffers both come from the pinned state."""
    batches = [[("a", 0, 1), ("a", 1, 2), ("b", 2, 3)], [("a", 100, 4), ("b", 101, 5), ("a", 102, 8)]]
    clean = _run(spark, str(tmp_path / "clean"), sliding_count_spec(), batches, SCHEMA)
    assert isinstance(clean, SparkWindowOperator) and clean.plan.kind == EVICTING_COUNT_PLAN
    crashed = _run(spark, str(tmp_path / "crashed"), sliding_count_spec(), batches, SCHEMA, crash_batch=0)
    want = _tables(spark, clean)
    assert want["results"] and want["windows"] and want["buffers"]
    assert _tables(spark, crashed) == want


def test_per_key_path_replay_of_a_crashed_first_batch_equals_a_clean_run(spark, tmp_path):
    batches = [[("a", 1, -1), ("b", 4, 2), ("a", 9, -3)], [("a", 12, -4), ("b", 15, 5), ("a", 3, -6)]]
    clean = _run(spark, str(tmp_path / "clean"), keyed_spec(), batches, SCHEMA)
    assert isinstance(clean, KeyedModelOperator)
    crashed = _run(spark, str(tmp_path / "crashed"), keyed_spec(), batches, SCHEMA, crash_batch=0)
    want = _tables(spark, clean)
    assert want["results"] and want["keyed_state"]
    assert _tables(spark, crashed) == want


def test_deduplicating_replay_of_a_crashed_first_batch_equals_a_clean_run(spark, tmp_path):
    schema = "k string, ts bigint, v bigint, id string"
    batches = [[("a", 1, 1, "x"), ("a", 2, 2, "y"), ("a", 3, 4, "x")], [("a", 4, 8, "y"), ("a", 12, 16, "z")]]
    clean = _run(spark, str(tmp_path / "clean"), dedup_spec(), batches, schema)
    crashed = _run(spark, str(tmp_path / "crashed"), dedup_spec(), batches, schema, crash_batch=0)
    want = _tables(spark, clean)
    assert want["seen_ids"] and len(want["quarantine"]) == 2      # x again, y again
    assert _tables(spark, crashed) == want


def test_an_insert_only_merge_that_meets_an_existing_row_fails_naming_table_operator_batch_and_key(
        spark, tmp_path):
    path = str(tmp_path / "buffers")
    rows = spark.createDataFrame([("a", 1, 10), ("b", 1, 20)], "k string, elem_index bigint, v bigint")
    delta_lake_io.append(rows, path, "op", 0)
    source = spark.createDataFrame([("a", 2, 30, False), ("b", 1, 99, False)],
                                   "k string, elem_index bigint, v bigint, __delete boolean")
    with pytest.raises(Exception) as failure:
        delta_lake_io.merge_once(spark, path, source, ["k", "elem_index"], "op", 7, update=False)
    message = str(failure.value)
    for part in (path, "'op'", "batch 7", "k=b", "elem_index=1"):
        assert part in message, (part, message)
    # nothing of the failed MERGE landed; a delete of a matching row is still a delete
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [("a", 1, 10), ("b", 1, 20)]
    deletes = spark.createDataFrame([("b", 1, None, True), ("c", 1, 5, False)],
                                    "k string, elem_index bigint, v bigint, __delete boolean")
    delta_lake_io.merge_once(spark, path, deletes, ["k", "elem_index"], "op", 8, update=False)
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [("a", 1, 10), ("c", 1, 5)]
