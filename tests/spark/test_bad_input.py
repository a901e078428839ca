"""Bad input: every kind has a tested outcome, and no row is lost.

Null or unparseable event time, null key, wrong types, missing or extra
columns, far-future event times (a poisoned watermark), values outside
declared bounds, duplicate event ids. The reference model and the Spark
executor decide the same quarantine reasons; a real stream with every kind of
bad row closes its row accounting.
"""
from __future__ import annotations

import datetime as dt
import time
from collections import Counter

import pytest
from pyspark.sql import functions as F

from pipelines.drivers import operator_for, run_backfill, run_stream
from pipelines.job import load_job
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import (EventTimeSessionWindows, ProcessingTimeSessionWindows, TumblingEventTimeWindows,
                                      TumblingProcessingTimeWindows)
from windowing.core.records import (
    QUARANTINE_DUPLICATE_EVENT, QUARANTINE_FAR_FUTURE_EVENT_TIME, QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY,
    QUARANTINE_UNPARSEABLE_EVENT_TIME, QUARANTINE_VALUE_OUT_OF_BOUNDS, QUARANTINE_WRONG_TYPE)
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import CountTrigger
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark.state.stores import MemoryStore

DAY_MS = 86_400_000


def _spec(skew=500, horizon=100, bounds=(0, 100)):
    builder = (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
               .side_output_late_data())
    if skew is not None:
        builder = builder.max_event_time_skew(skew)
    if horizon is not None:
        builder = builder.deduplicate("id", horizon)
    if bounds is not None:
        builder = builder.value_bounds("v", *bounds)
    return builder.aggregate(s=Sum("v"), n=Count())


def _accounting(metrics):
    """The row accounting of a batch (``windows_cleaned`` is counted differently by the two executors)."""
    return (metrics.input_rows, metrics.accepted_rows, metrics.late_rows, metrics.dropped_late_rows,
            metrics.unassigned_rows, metrics.quarantined_rows, metrics.panes_emitted)


def _row(id_, k, ts, v=1):
    return {"id": id_, "k": k, "ts": ts, "v": v}


# Processing time 1000 ms, skew 500 ms: event times above 1500 are far-future.
BATCHES = [
    [_row("a1", "x", 10), _row("a2", "x", 20), _row("a2", "y", 15, 5),       # a2 twice: the ts-15 one is kept
     _row("n1", None, 12), _row("n2", "x", None), _row("f1", "x", 5000),     # null key, null time, far future
     _row("b1", "y", 30, -1), _row("b2", "y", 31, 1000), _row("ok", "y", 50, 100),  # bounds are inclusive
     _row(None, "x", 33), _row(None, "x", 33)],                              # null ids are never duplicates
    [_row("a1", "x", 60), _row("c1", "x", 250), _row("c2", "y", 300, 7)],    # a1 again: duplicate
    [_row("a1", "x", 305), _row("c1", "y", 310), _row("d1", "x", 1501),      # a1 forgotten (10 <= 299 - 100),
     _row("d2", "x", 1500)],                                                  # c1 still seen; 1501 is far future
]
EXPECTED_REASONS = [
    {("a2", QUARANTINE_DUPLICATE_EVENT), ("n1", QUARANTINE_NULL_KEY), ("n2", QUARANTINE_NULL_EVENT_TIME),
     ("f1", QUARANTINE_FAR_FUTURE_EVENT_TIME), ("b1", QUARANTINE_VALUE_OUT_OF_BOUNDS),
     ("b2", QUARANTINE_VALUE_OUT_OF_BOUNDS)},
    {("a1", QUARANTINE_DUPLICATE_EVENT)},
    {("c1", QUARANTINE_DUPLICATE_EVENT), ("d1", QUARANTINE_FAR_FUTURE_EVENT_TIME)},
]


@pytest.mark.spark
def test_reference_and_spark_quarantine_the_same_rows_for_the_same_reasons(spark):
    spec = _spec()
    reference = ReferenceOperator(spec)
    store = MemoryStore(spark)
    operator = SparkWindowOperator(spark, spec, store)
    schema = "id string, k string, ts bigint, v bigint"
    for b, rows in enumerate(BATCHES):
        expected = reference.process_batch(rows, b, processing_time_ms=1000)
        df = spark.createDataFrame([(r["id"], r["k"], r["ts"], r["v"]) for r in rows], schema)
        report = operator.process_batch(df, b, processing_time_ms=1000)
        ref_reasons = sorted((q.row["id"], q.row["ts"], q.reason) for q in expected.quarantined)
        spark_reasons = sorted((r["id"], r["ts"], r["reason"]) for r in store.outputs["quarantine"]
                               if r["batch_id"] == b)
        assert spark_reasons == ref_reasons, b
        assert {(i, reason) for i, _, reason in ref_reasons} == EXPECTED_REASONS[b]
        assert _accounting(report.metrics) == _accounting(expected.metrics) and report.metrics.accounted()
        assert report.watermark_after_ms == expected.watermark_after_ms
        ref_panes = sorted((p.key, p.window_start_ms, p.values["s"], p.values["n"], p.timing) for p in expected.panes)
        spark_panes = sorted(((r["k"],), r["window_start_ms"], r["s"], r["n"], r["timing"])
                             for r in store.outputs["results"] if r["batch_id"] == b)
        assert spark_panes == ref_panes, b
    # The duplicate a2 kept its ts-15 row (key y, value 5): window [10, 20) of y sums 5.
    assert any(r["k"] == "y" and r["window_start_ms"] == 10 and r["s"] == 5 for r in store.outputs["results"])
    # Far-future rows never moved the watermark: it follows the good rows (max 1500 - 0 - 1).
    assert report.watermark_after_ms == 1499


# Columns no spec below reads: a batch caches only the columns its plan reads, and its late and
# quarantined rows must still carry every input column.
SET_ASIDE_SCHEMA = "k string, ts bigint, note string, extra bigint"
SET_ASIDE_BATCHES = [
    [("x", 100, "opens x", 1), ("y", 100, "opens y", 2)],
    [("x", 5, "late x", 3), (None, 50, "no key", 4), ("x", 200, "on time", 5), ("y", 3, "late y", 6),
     ("y", 4, "late y again", 7)],
]


@pytest.mark.spark
@pytest.mark.parametrize("plan, window", [
    ("time", lambda b: b.event_time("ts", 0).window(TumblingEventTimeWindows.of(10))),
    ("session", lambda b: b.event_time("ts", 0).window(EventTimeSessionWindows.with_gap(10))),
    ("session_count", lambda b: b.event_time("ts", 0).window(EventTimeSessionWindows.with_gap(10))
     .trigger(CountTrigger(2))),
    # rows whose processing-time window the clock closed before they came (a backfill's replay)
    ("processing_time", lambda b: b.processing_time("ts").window(TumblingProcessingTimeWindows.of(10))),
    ("processing_time_session", lambda b: b.processing_time("ts").window(ProcessingTimeSessionWindows.with_gap(10))),
])
def test_late_and_quarantined_rows_keep_the_input_columns_the_spec_does_not_read(spark, plan, window):
    spec = window(WindowSpecBuilder().key_by("k").side_output_late_data()).aggregate(n=Count())
    reference = ReferenceOperator(spec)
    store = MemoryStore(spark)
    operator = SparkWindowOperator(spark, spec, store)
    columns = ["k", "ts", "note", "extra"]
    for b, rows in enumerate(SET_ASIDE_BATCHES):
        expected = reference.process_batch([dict(zip(columns, r)) for r in rows], b, processing_time_ms=150 * (b + 1))
        report = operator.process_batch(spark.createDataFrame(rows, SET_ASIDE_SCHEMA), b,
                                        processing_time_ms=150 * (b + 1))
        assert report.plan == plan
        for kind, model_rows in (("late", expected.late), ("quarantine", expected.quarantined)):
            written = sorted(tuple(r[c] for c in columns) for r in store.outputs[kind] if r["batch_id"] == b)
            assert written == sorted(tuple(m.row[c] for c in columns) for m in model_rows), (kind, b)
    assert {r["note"] for r in store.outputs["late"]} == {"late x", "late y", "late y again"}
    assert [r["note"] for r in store.outputs["quarantine"]] == ["no key"]


def test_reference_quarantines_wrongly_typed_values():
    spec = _spec(skew=None, horizon=None, bounds=None)
    result = ReferenceOperator(spec).process_batch(
        [_row("w1", "x", 1, "3"), _row("w2", "x", 2, True), _row("w3", "x", 3, 2.5), _row("w4", "x", 4, None)], 0)
    assert sorted((q.row["id"], q.reason) for q in result.quarantined) == [
        ("w1", QUARANTINE_WRONG_TYPE), ("w2", QUARANTINE_WRONG_TYPE)]
    assert result.metrics.accepted_rows == 2 and result.metrics.accounted()


def test_spec_options_are_validated():
    with pytest.raises(ValueError, match="min 5 is above max 1"):
        _spec(bounds=(5, 1))
    with pytest.raises(ValueError, match="max_event_time_skew"):
        WindowSpecBuilder().max_event_time_skew("soon")
    with pytest.raises(ValueError, match="dedup_horizon"):
        WindowSpecBuilder().deduplicate("id", "forever")
    with pytest.raises(ValueError, match="positive"):
        _spec(horizon=0)


@pytest.mark.spark
def test_poisoned_watermark_one_row_a_year_ahead_does_not_make_the_stream_late(spark):
    """With the skew limit the year-ahead row is quarantined; without it, the next batch is all late."""
    now = 1_800_000_000_000
    first = [_row(f"g{i}", "x", now - 600_000 + i * 1000) for i in range(20)] + [_row("poison", "x", now + 365 * DAY_MS)]
    second = [_row(f"h{i}", "y", now - 300_000 + i * 1000) for i in range(20)]
    schema = "id string, k string, ts bigint, v bigint"
    frames = [spark.createDataFrame([tuple(r.values()) for r in rows], schema) for rows in (first, second)]
    outcomes = {}
    for name, skew in (("guarded", "1 day"), ("unguarded", None)):
        spec = (WindowSpecBuilder().key_by("k").event_time("ts", "5 seconds").window(TumblingEventTimeWindows.of(60_000))
                .max_event_time_skew(skew).side_output_late_data().aggregate(n=Count()))
        store = MemoryStore(spark)
        op = SparkWindowOperator(spark, spec, store)
        reports = [op.process_batch(df, b, processing_time_ms=now) for b, df in enumerate(frames)]
        outcomes[name] = (reports, store)
        reference = ReferenceOperator(spec)
        for b, rows in enumerate((first, second)):
            assert _accounting(reference.process_batch(rows, b, processing_time_ms=now).metrics) == \
                _accounting(reports[b].metrics)
    reports, store = outcomes["guarded"]
    assert [(r["id"], r["reason"]) for r in store.outputs["quarantine"]] == [("poison", "far_future_event_time")]
    assert reports[0].watermark_after_ms == now - 600_000 + 19_000 - 5000 - 1
    assert reports[1].metrics.late_rows == 0 and reports[1].metrics.accepted_rows == 20
    assert store.outputs["late"] == []
    reports, store = outcomes["unguarded"]   # the failure the limit prevents
    assert reports[1].metrics.late_rows == 20 and not store.outputs["quarantine"]


@pytest.mark.spark
def test_schema_drift_missing_column_is_an_error_extra_columns_are_carried(spark, tmp_path):
    spec = (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .side_output_late_data().aggregate(s=Sum("v")))
    op = SparkWindowOperator.on_delta(spark, spec, "drift", str(tmp_path / "state"))
    op.process_batch(spark.createDataFrame([("a", 100, 1)], "k string, ts bigint, v bigint"), 0)
    with pytest.raises(ValueError, match=r"column 'v' is not in the input; available columns: \['k', 'ts'\]"):
        op.process_batch(spark.createDataFrame([("a", 101)], "k string, ts bigint"), 1)
    with pytest.raises(ValueError, match=r"needs a numeric column but 'v' is string"):
        op.process_batch(spark.createDataFrame([("a", 101, "1")], "k string, ts bigint, v string"), 1)
    # A new column: late and quarantined rows keep it (their tables gain the column).
    drifted = spark.createDataFrame([("a", 5, 1, "web"), (None, 120, 2, "app"), ("b", 130, 3, "app")],
                                    "k string, ts bigint, v bigint, channel string")
    report = op.process_batch(drifted, 1)
    assert report.metrics.late_rows == 1 and report.metrics.quarantined_rows == 1
    late = spark.read.format("delta").load(op.store.late_path).collect()
    quarantine = spark.read.format("delta").load(op.store.quarantine_path).collect()
    assert [(r["ts"], r["channel"]) for r in late] == [(5, "web")]
    assert [(r["ts"], r["channel"], r["reason"]) for r in quarantine] == [(120, "app", "null_key")]


JOB_TOML = """
[job]
name = "bad_input"
operator_id = "bad_input_1m"
backfill_chunk = "5 minutes"

[source]
path = "raw/events"
key = ["user_id"]
event_time = "event_time"
max_out_of_orderness = "5 seconds"
event_id = "event_id"
dedup_horizon = "1 hour"
max_event_time_skew = "1 day"
[source.bounds]
item_count = { min = 1, max = 100 }

[window]
type = "tumbling"
size = "1 minute"
late_output = true

[aggregates]
purchases = "count()"
items = "sum(item_count)"

[spark]
"spark.sql.shuffle.partitions" = "2"
"""


def _generated_stream(base: dt.datetime):
    """Two arrivals with every kind of bad row; event time is a string, as from a JSON feed."""
    def at(seconds):
        return (base + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    good1 = [(f"g{i}", f"u{i % 4}", 1 + i % 5, at(i * 3)) for i in range(100)]          # minutes 0-5
    bad1 = [("n1", None, 1, at(10)), ("n2", None, 2, at(20)),                            # null key
            ("t1", "u1", 1, None), ("t2", "u2", 1, None),                                # null event time
            ("p1", "u1", 1, "yesterday-ish"), ("p2", "u2", 1, "2026-13-45 99:00"),       # unparseable
            ("f1", "u1", 1, at(365 * 86400)), ("f2", "u3", 1, at(40 * 86400)),           # far future
            ("o1", "u1", 0, at(30)), ("o2", "u2", 1000, at(31)),                         # out of bounds
            ("g1", "u1", 2, at(3)), ("g2", "u2", 3, at(6)), ("g3", "u3", 4, at(9))]      # duplicates in arrival
    good2 = [(f"h{i}", f"u{i % 4}", 1 + i % 3, at(300 + i * 3)) for i in range(100)]     # minutes 5-10
    bad2 = [(f"l{i}", "u0", 1, at(i)) for i in range(4)]                                 # late (minute 0)
    bad2 += [("g10", "u1", 1, at(30)), ("g11", "u2", 1, at(33)), ("h5", "u1", 1, at(315)),  # duplicates
             ("o3", "u3", -5, at(320))]                                                  # out of bounds
    return [good1 + bad1, good2 + bad2]


EXPECTED_QUARANTINE = {QUARANTINE_NULL_KEY: 2, QUARANTINE_NULL_EVENT_TIME: 2, QUARANTINE_UNPARSEABLE_EVENT_TIME: 2,
                       QUARANTINE_FAR_FUTURE_EVENT_TIME: 2, QUARANTINE_VALUE_OUT_OF_BOUNDS: 3,
                       QUARANTINE_DUPLICATE_EVENT: 6}


@pytest.mark.spark
@pytest.mark.slow
def test_row_accounting_for_a_stream_with_every_kind_of_bad_row(spark, tmp_path):
    (tmp_path / "job.toml").write_text(JOB_TOML)
    job = load_job(tmp_path / "job.toml", root=tmp_path)
    base = dt.datetime.fromtimestamp(time.time() - 3600, dt.timezone.utc).replace(tzinfo=None, microsecond=0)
    arrivals = _generated_stream(base)
    schema = "event_id string, user_id string, item_count bigint, event_time string"
    for rows in arrivals:
        spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(job.source_path)
        run_stream(spark, job)        # validated after each batch: bad raw rows are warnings, not failures
    flush = operator_for(spark, job).flush(batch_id=len(arrivals))
    assert flush.metrics.input_rows == 0

    raw = spark.read.format("delta").load(job.source_path).count()
    results = spark.read.format("delta").load(job.results_path)
    windowed = results.groupBy("user_id", "window_start_ms").agg(F.max_by("purchases", "pane_index").alias("n")) \
        .agg(F.sum("n")).first()[0]
    late = spark.read.format("delta").load(job.late_path)
    quarantine = spark.read.format("delta").load(job.quarantine_path)
    reasons = Counter(r["reason"] for r in quarantine.select("reason").collect())
    assert dict(reasons) == EXPECTED_QUARANTINE
    assert late.count() == 4 and {r["event_id"] for r in late.collect()} == {"l0", "l1", "l2", "l3"}
    assert raw == sum(len(a) for a in arrivals) == 221
    # raw = in windows + late + quarantined (the declared duplicates are quarantined rows)
    assert raw == windowed + late.count() + quarantine.count()
    assert windowed == 200      # every good row once; of each duplicated id exactly one copy

    # The same raw table as a complete backfill: the two far-future rows do not stretch its range
    # (10 minutes in 5-minute chunks, the last ending the input), and the reconciliation suite passes.
    # Only the reconciliation is validated here: it recomputes validity from the raw rows, so it is
    # the suite that every kind of bad row tests (the driver's validation of a backfill with all
    # suites is shown in test_quality.py).
    backfill = job.with_operator("bad_input_backfill", "backfill")
    reports = run_backfill(spark, backfill, validate=False)
    assert len(reports) == 2      # two chunks, the last ending the input
    assert sum(r.metrics.quarantined_rows for r in reports) == sum(EXPECTED_QUARANTINE.values())
    from pipelines.quality import read_runs, validate_job
    validate_job(spark, backfill, run_kind="backfill", suites=["reconciliation"])
    recon = read_runs(spark, backfill).where("suite = 'reconciliation'").collect()
    assert len(recon) == 1 and recon[0]["success"] is True and recon[0]["evaluated_expectations"] == 3
    stream_runs = read_runs(spark, job).where("run_kind = 'stream'").collect()
    assert {r["batch_id"] for r in stream_runs} == {0, 1}
    assert not [r for r in stream_runs if r["failed_critical"]]
    assert any(r["suite"] == "raw_events" and r["severity"] == "warning" for r in stream_runs)
