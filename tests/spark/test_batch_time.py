"""The plan operator's clock and watermark: saved between batches, equal to the model's.

Pure-Python parts (the tracker's snapshot) run without Spark; the rest on a
MemoryStore (semantics) and once on real Delta (a progress table written
before the ``time_state`` column existed still resumes).
"""
from __future__ import annotations

import json

import pytest

from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows, TumblingProcessingTimeWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import MIN_TIMESTAMP_MS
from windowing.core.watermarks import WatermarkTracker


def test_tracker_snapshot_restores_the_same_progress():
    tracker = WatermarkTracker(5, ("s1", "s2"), idle_timeout_ms=100)
    tracker.note_processing_time(10)
    tracker.observe("s1", 50, 10)
    tracker.advance(10)
    saved = json.loads(json.dumps(tracker.snapshot()))   # what the progress row keeps
    again = WatermarkTracker.restore(5, ("s1", "s2"), 100, tracker.current_ms, saved)
    # s2 never sent anything: it holds the watermark until it is idle (100 ms after the first clock, 10)
    for twin in (tracker, again):
        assert twin.advance(60) == MIN_TIMESTAMP_MS
        twin.observe("s2", 20, 70)
        assert twin.advance(70) == 14          # min(44, 14)
        assert twin.advance(175) == 44 + 165   # both idle: s1 advanced by 175 - 10


def test_tracker_restore_refuses_other_sources_and_resumes_old_rows():
    tracker = WatermarkTracker(0, ("s1", "s2"))
    with pytest.raises(ValueError, match=r"saved watermark state has sources \['s1', 's2'\], the spec declares "
                                         r"\['s1', 's3'\]"):
        WatermarkTracker.restore(0, ("s1", "s3"), None, MIN_TIMESTAMP_MS, tracker.snapshot())
    old = WatermarkTracker.restore(3, ("",), None, 6, None, max_seen_ms=10)   # a progress row without snapshot
    old.observe("", 8, 0)
    assert old.advance(0) == 6                 # max_seen stays 10: 10 - 3 - 1
    old.observe("", 20, 0)
    assert old.advance(0) == 16


def _rows(spark, rows):
    return spark.createDataFrame(rows, "k string, ts long, v long")


@pytest.mark.spark
def test_processing_time_panes_carry_the_models_watermark(spark):
    """Panes fired before the batch's rows carry the watermark at the start of the batch, the others
    the watermark after it (the transcripts compare everything else of a pane)."""
    from windowing.spark.operator.dispatch import make_operator
    from windowing.spark.state.stores import MemoryStore
    spec = (WindowSpecBuilder().key_by("k").event_time("ts", 2).window(TumblingProcessingTimeWindows.of(10))
            .aggregate(s=Sum("v"), n=Count()))
    batches = [([("a", 100, 1), ("b", 7, 2)], 3), ([("a", 150, 4)], 12), ([("b", 160, 8)], 19)]
    model = ReferenceOperator(spec)
    store = MemoryStore(spark)
    operator = make_operator(spark, spec, store)
    for b, (rows, pt) in enumerate(batches):
        want = model.process_batch([dict(k=k, ts=ts, v=v) for k, ts, v in rows], b, processing_time_ms=pt)
        report = operator.process_batch(_rows(spark, rows), b, processing_time_ms=pt)
        assert report.plan == "processing_time"
        assert (report.watermark_before_ms, report.watermark_after_ms) == (want.watermark_before_ms,
                                                                          want.watermark_after_ms)
        got = sorted((r["k"], r["window_start_ms"], r["pane_index"], r["is_final"], r["watermark_ms"], r["s"])
                     for r in store.outputs["results"] if r["batch_id"] == b)
        assert got == sorted((p.key[0], p.window_start_ms, p.pane_index, p.is_final, p.watermark_ms, p.values["s"])
                             for p in want.panes), b
    # batch 1 fired [0,10) before its row (watermark 97 at its start); batch 2 fired [10,20) at its own
    # processing time 19 = max_ts, after its row (watermark 157)
    assert [r["watermark_ms"] for r in store.outputs["results"]] == [97, 97, 157, 157]
    state = json.loads(store.last_progress()["time_state"])
    assert state["clock_ms"] == 19 and state["tracker"]["sources"] == {"": [160, 19]}


@pytest.mark.spark
def test_processing_time_windows_need_a_clock(spark):
    from windowing.spark.operator.dispatch import make_operator
    from windowing.spark.state.stores import MemoryStore
    spec = (WindowSpecBuilder().key_by("k").event_time("ts").window(TumblingProcessingTimeWindows.of(10))
            .aggregate(n=Count()))
    operator = make_operator(spark, spec, MemoryStore(spark))
    with pytest.raises(ValueError, match="assigns by processing time but the batch has none .*give process_batch "
                                         "a processing_time_ms, or name an ingestion_time_column"):
        operator.process_batch(_rows(spark, [("a", 1, 1)]), 0)


@pytest.mark.spark
def test_progress_written_before_time_state_still_resumes(spark, tmp_path):
    """An existing state root (progress without ``time_state``) resumes with the same watermark and
    gains the column on its next commit."""
    from pyspark.sql import functions as F

    from windowing.spark.operator.protocol import SparkWindowOperator
    spec = (WindowSpecBuilder().key_by("k").event_time("ts", 1).window(TumblingEventTimeWindows.of(10))
            .side_output_late_data().aggregate(s=Sum("v")))
    root = str(tmp_path / "state")
    first = SparkWindowOperator.on_delta(spark, spec, "op", root)
    first.process_batch(_rows(spark, [("a", 5, 1), ("a", 12, 2)]), 0)
    progress = first.store.progress_path
    old = spark.read.format("delta").load(progress).drop("time_state")
    old.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(progress)
    assert "time_state" not in spark.read.format("delta").load(progress).columns

    resumed = SparkWindowOperator.on_delta(spark, spec, "op", root)
    assert resumed.last_progress()["watermark_ms"] == 10 and "time_state" not in resumed.last_progress()
    report = resumed.process_batch(_rows(spark, [("a", 9, 4), ("a", 11, 8)]), 1)   # 9 is late; 11 < max seen 12
    assert (report.watermark_before_ms, report.watermark_after_ms) == (10, 10)
    assert report.metrics.late_rows == 1
    rows = spark.read.format("delta").load(progress).orderBy("batch_id").select("batch_id", "time_state").collect()
    assert rows[0]["time_state"] is None and json.loads(rows[1]["time_state"])["tracker"]["sources"][""][0] == 12
    results = spark.read.format("delta").load(resumed.store.results_path)
    assert results.where(F.col("window_start_ms") == 0).select("s").first()[0] == 1


# ------------------------------------------------------------ property: the plans' clock is the model's

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ROW = st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.integers(-50, 400), st.one_of(st.none(), st.integers(0, 600)))
_BATCH = st.tuples(st.lists(_ROW, max_size=4), st.one_of(st.none(), st.integers(0, 700)),
                   st.one_of(st.none(), st.integers(-100, 500)))


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(_BATCH, min_size=1, max_size=6), idle=st.one_of(st.none(), st.integers(1, 200)),
       delay=st.integers(0, 20), by_ingestion=st.booleans(), flush_at_end=st.booleans())
def test_batch_time_advances_like_the_model(batches, idle, delay, by_ingestion, flush_at_end):
    """Random batches of several sources (an undeclared one among them), idleness, ingestion times,
    explicit watermarks and processing times: ``batch_time`` (resumed from its JSON after every batch, as
    the plan operator resumes from its progress row) gives the model's watermark and clock."""
    from windowing.spark.input import batch_time
    builder = (WindowSpecBuilder().key_by("k").event_time("ts", delay).window(TumblingEventTimeWindows.of(10))
               .watermark_sources("src", "s1", "s2"))
    if idle is not None:
        builder = builder.watermark_idleness(idle)
    if by_ingestion:
        builder = builder.processing_time("ingest")
    spec = builder.aggregate(n=Count())
    model = ReferenceOperator(spec)
    last = None
    steps = [(rows, pt, wm, False) for rows, pt, wm in batches] + ([([], None, None, True)] if flush_at_end else [])
    for b, (rows, pt, wm, flush) in enumerate(steps):
        if flush:
            want = model.flush(b)
        else:
            want = model.process_batch([dict(k="a", src=s, ts=ts, v=1, ingest=i) for s, ts, i in rows], b,
                                       watermark_ms=wm, processing_time_ms=pt)
        tracker, clock_before = batch_time.resume(spec, last)
        arrival = batch_time.arrival_ms(clock_before, pt, flush)
        maxima: dict = {}
        for s, ts, ingest in rows:
            row_pt = ingest if by_ingestion else arrival
            if s not in spec.input.sources or row_pt is None:
                continue   # quarantined: unknown source, or no ingestion time
            old = maxima.get(s)
            maxima[s] = (ts, row_pt) if old is None else (max(old[0], ts), max(old[1], row_pt))
        times = batch_time.advance(spec, tracker, clock_before, b, maxima, None if flush else wm, pt, flush)
        assert (times.watermark_start_ms, times.watermark_end_ms) == (want.watermark_before_ms,
                                                                      want.watermark_after_ms), b
        assert times.clock_end_ms == model.current_processing_time_ms, b
        last = dict(watermark_ms=times.watermark_end_ms, max_seen_ms=times.max_seen_ms,
                    processing_time_ms=pt, time_state=times.time_state)
