"""Delta state and the exactly-once commit protocol, on real Delta tables."""
from __future__ import annotations

import datetime
import threading

import pytest

from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.spark.operator import SparkWindowOperator, SpecMismatchError
from windowing.spark import delta_io
from windowing.spark.stores import PROGRESS_SCHEMA, ConcurrentWriterError, DeltaStore

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("delta_protocol")]  # module-scoped fixtures: one test process

SCHEMA = "k string, ts long, v long"
BATCHES = [
    [("a", 1, 1), ("b", 4, 2), ("a", 9, 3)],
    [("a", 12, 4), ("b", 15, 5), ("a", 3, 6), (None, 5, 7)],      # a LATE pane for [0,10); a quarantined row
    [("b", 31, 8), ("a", 2, 9)],                                   # ts=2 is late beyond lateness -> late table
]


def spec(lateness=5):
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .allowed_lateness(lateness).side_output_late_data().aggregate(s=Sum("v"), n=Count()))


def rows_of(spark, path, drop=()):
    df = spark.read.format("delta").load(path)
    return sorted(tuple(r) for r in df.drop(*drop).collect())


class Crash(Exception):
    pass


def run(spark, root, crash_stage=None, crash_batch=None):
    def fault(stage):
        if stage == crash_stage and current["batch"] == crash_batch:
            raise Crash(stage)
    current = {"batch": None}
    op = SparkWindowOperator.on_delta(spark, spec(), "op", root, fault_injection=fault)
    for b, rows in enumerate(BATCHES):
        current["batch"] = b
        try:
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
        except Crash:
            # The process dies; a new one starts from the Delta tables and replays batch b.
            op = SparkWindowOperator.on_delta(spark, spec(), "op", root)
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
    op.flush(len(BATCHES))
    return op


@pytest.fixture(scope="module")
def clean(spark, tmp_path_factory):
    """One run of BATCHES without a crash (read only by the tests that compare with it)."""
    return run(spark, str(tmp_path_factory.mktemp("clean")))


@pytest.mark.parametrize("stage", ["after_outputs", "before_progress"])
def test_replay_after_crash_writes_every_row_exactly_once(spark, tmp_path, stage, clean):
    crashed = run(spark, str(tmp_path / "crashed"), crash_stage=stage, crash_batch=1)
    for table in ("results_path", "late_path", "quarantine_path"):
        expected = rows_of(spark, getattr(clean.store, table))
        assert expected, table
        assert rows_of(spark, getattr(crashed.store, table)) == expected, table
    # The crashed batch wrote its outputs before dying: the replay must not duplicate them.
    panes = spark.read.format("delta").load(crashed.store.results_path)
    assert panes.groupBy("k", "window_start_ms", "pane_index").count().where("count > 1").count() == 0


def test_no_state_rows_remain_after_cleanup(spark, clean):
    op = clean
    assert spark.read.format("delta").load(op.store.windows_path).count() == 0
    progress = spark.read.format("delta").load(op.store.progress_path).orderBy("batch_id").collect()
    assert [r.batch_id for r in progress] == [0, 1, 2, 3]
    assert progress[-1].watermark_ms == 2**63 - 1


def test_committed_batch_is_skipped_and_resume_keeps_state(spark, tmp_path):
    root = str(tmp_path / "s")
    op = SparkWindowOperator.on_delta(spark, spec(), "op", root)
    op.process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0)
    again = SparkWindowOperator.on_delta(spark, spec(), "op", root)
    assert again.process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0).skipped
    report = again.process_batch(spark.createDataFrame(BATCHES[1], SCHEMA), 1)
    assert report.watermark_before_ms == 8 and report.watermark_after_ms == 14
    panes = (spark.read.format("delta").load(again.store.results_path)
             .select("k", "window_start_ms", "s", "pane_index", "timing").orderBy("k").collect())
    # [0,10) of a: 1 and 3 from batch 0 (kept in Delta across the restart) and 6 from batch 1.
    assert [tuple(p) for p in panes] == [("a", 0, 10, 0, "ON_TIME"), ("b", 0, 2, 0, "ON_TIME")]


def test_different_spec_is_refused_unless_reset(spark, tmp_path):
    root = str(tmp_path / "s")
    SparkWindowOperator.on_delta(spark, spec(), "op", root).process_batch(
        spark.createDataFrame(BATCHES[0], SCHEMA), 0)
    with pytest.raises(SpecMismatchError, match="reset_state=True"):
        SparkWindowOperator.on_delta(spark, spec(lateness=7), "op", root)
    fresh = SparkWindowOperator.on_delta(spark, spec(lateness=7), "op", root, reset_state=True)
    assert fresh.last_progress() is None


def test_two_writers_of_one_operator_do_not_both_succeed(spark, tmp_path):
    root = str(tmp_path / "s")
    first = SparkWindowOperator.on_delta(spark, spec(), "op", root)
    second = SparkWindowOperator.on_delta(spark, spec(), "op", root)
    df = spark.createDataFrame(BATCHES[0], SCHEMA)
    first.process_batch(df, 0)
    with pytest.raises(ConcurrentWriterError, match="batch 0"):
        second.process_batch(df, 0)
    assert spark.read.format("delta").load(first.store.progress_path).count() == 1


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
    barrier, outcomes = threading.Barrier(2), {name: {} for name in stores}

    def writer(name):
        for batch_id in batches:
            barrier.wait()
            try:
                stores[name].commit_progress(_progress_row(batch_id, name))
                outcomes[name][batch_id] = "committed"
            except ConcurrentWriterError:
                outcomes[name][batch_id] = "refused"
            except Exception as error:      # noqa: BLE001 - reported by the assertion below
                outcomes[name][batch_id] = repr(error)

    threads = [threading.Thread(target=writer, args=(name,)) for name in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    progress = spark.read.format("delta").load(stores["w1"].progress_path)
    rows = {r["batch_id"]: r["writer_id"] for r in progress.collect()}
    assert progress.count() == len(batches)
    for batch_id in batches:
        results = sorted(outcomes[name][batch_id] for name in stores)
        assert results == ["committed", "refused"], (batch_id, outcomes)
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
     .write.format("delta").mode("append").option("userMetadata", delta_io.marker("op", 1, "second"))
     .save(store.progress_path))
    assert DeltaStore(spark, "op", root).last_progress()["writer_id"] == "first"


def test_relative_state_root_works(spark, tmp_path, monkeypatch):
    """A job's tables may be given relative to the working directory (as in job TOML files)."""
    monkeypatch.chdir(tmp_path)
    op = SparkWindowOperator.on_delta(spark, spec(), "op", "relative/state", results_path="relative/results")
    op.process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0)
    assert op.process_batch(spark.createDataFrame(BATCHES[1], SCHEMA), 1).watermark_after_ms == 14
    assert rows_of(spark, str(tmp_path / "relative/results"), drop=("batch_id",))[0][:2] == ("a", 0)
