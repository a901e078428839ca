"""The progress table's commit point on real Delta tables: racing writers, leftovers, relative roots.

The operator's contract (crashes and replays, skips, spec refusal, cleanup, two writers) runs
against both executors in ``test_operator_contract.py``.
"""
from __future__ import annotations

import datetime

import pytest

from racing import REFUSED, race
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.lake import delta_lake_io
from windowing.spark.state.stores import PROGRESS_SCHEMA, DeltaStore

pytestmark = pytest.mark.spark

SCHEMA = "k string, ts long, v long"
BATCHES = [
    [("a", 1, 1), ("b", 4, 2), ("a", 9, 3)],
    [("a", 12, 4), ("b", 15, 5), ("a", 3, 6), (None, 5, 7)],      # a LATE pane for [0,10); a quarantined row
    [("b", 31, 8), ("a", 2, 9)],                                   # ts=2 is late beyond lateness -> late table
]


def spec(lateness=5):
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .allowed_lateness(lateness).side_output_late_data().aggregate(s=Sum("v"), n=Count()))


def _progress_row(batch_id: int, writer_id: str) -> dict:
    return dict(batch_id=batch_id, watermark_ms=batch_id, max_seen_ms=batch_id, spec_fingerprint="f",
                spec_description="d", input_schema="{}", writer_id=writer_id, metrics="{}",
                committed_at=datetime.datetime.now(datetime.timezone.utc))


def test_of_two_writers_racing_on_each_batch_exactly_one_commits_it(spark, tmp_path):
    """Two stores of one operator commit the same batches at the same moment (threads released together).

    Whichever wins each race, exactly one of them commits each batch, the
    other is told, and the table keeps one progress row per batch: the winner's.
    """
    root, batches = str(tmp_path / "s"), range(6)
    stores = {name: DeltaStore(spark, "op", root) for name in ("w1", "w2")}

    def prepare(name, batch_id):
        row = _progress_row(batch_id, name)
        return lambda: stores[name].commit_progress(row) or "committed"

    outcomes = race(stores, batches, prepare)
    progress = spark.read.format("delta").load(stores["w1"].progress_path)
    rows = {r["batch_id"]: r["writer_id"] for r in progress.collect()}
    assert progress.count() == len(batches)
    for batch_id in batches:
        results = sorted(outcomes[name][batch_id] for name in stores)
        assert results == ["committed", REFUSED], (batch_id, outcomes)
        assert outcomes[rows[batch_id]][batch_id] == "committed"
    assert DeltaStore(spark, "op", root).last_progress()["writer_id"] == rows[batches[-1]]


def test_a_losing_writers_row_left_behind_does_not_count(spark, tmp_path):
    """A writer that lost a race and stopped before withdrawing its row: the batch's first commit counts."""
    root = str(tmp_path / "s")
    store = DeltaStore(spark, "op", root)
    store.commit_progress(_progress_row(0, "first"))
    store.commit_progress(_progress_row(1, "first"))
    late = dict(_progress_row(1, "second"), committed_at=datetime.datetime(2000, 1, 1))   # a clock far behind
    (spark.createDataFrame([tuple(late.get(f.name) for f in PROGRESS_SCHEMA.fields)], PROGRESS_SCHEMA)
     .write.format("delta").mode("append").option("userMetadata", delta_lake_io.marker("op", 1, "second"))
     .save(store.progress_path))
    assert DeltaStore(spark, "op", root).last_progress()["writer_id"] == "first"


def test_relative_state_root_works(spark, tmp_path, monkeypatch):
    """A job's tables may be given relative to the working directory (as in job TOML files)."""
    monkeypatch.chdir(tmp_path)
    op = SparkWindowOperator.on_delta(spark, spec(), "op", "relative/state", results_path="relative/results")
    op.process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0)
    assert op.process_batch(spark.createDataFrame(BATCHES[1], SCHEMA), 1).watermark_after_ms == 14
    results = spark.read.format("delta").load(str(tmp_path / "relative/results"))
    assert sorted(tuple(r) for r in results.select("k", "window_start_ms").collect())[0] == ("a", 0)
