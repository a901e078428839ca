"""The Spark executor (DataFrame plans) agrees with the reference model.

Random streams over several specs, fed batch by batch to both, compared batch
by batch: panes (all pane info), late rows and row accounting.
"""
from __future__ import annotations

import random

import pytest

from transcripts.first_rules import Mean
from spark_adapter import SparkExecutor, infer_schema
from windowing.core.aggregates import Avg, Count, Max, Min, Sum, UserAggregate
from windowing.core.assigners import (SlidingEventTimeWindows, SlidingProcessingTimeWindows, TumblingEventTimeWindows,
                                      TumblingProcessingTimeWindows)
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import CountTrigger

pytestmark = [pytest.mark.spark, pytest.mark.production_spark]


def B():
    return WindowSpecBuilder().key_by("k")


SPECS = {
    "tumbling_lateness_user_agg": B().event_time("ts", 0).window(TumblingEventTimeWindows.of(10)).allowed_lateness(5)
    .side_output_late_data().aggregate(s=Sum("v"), n=Count(), a=Avg("v"), u=UserAggregate(Mean(), ("v",), "double")),
    "sliding_gaps_discarding": B().event_time("ts", 2).window(SlidingEventTimeWindows.of(5, 8, -3)).discarding()
    .side_output_late_data().aggregate(s=Sum("v"), lo=Min("v"), hi=Max("w")),
    "sliding_overlap_no_late_output": B().event_time("ts", 1).window(SlidingEventTimeWindows.of(12, 4, 1))
    .allowed_lateness(3).aggregate(n=Count("w"), s=Sum("w")),
    "count_tumbling": B().event_time("ts").count_window(3).aggregate(s=Sum("v"), n=Count()),
    "count_sliding": B().event_time("ts").count_window(3, 2).aggregate(s=Sum("v"), n=Count()),
    "time_window_count_trigger": B().event_time("ts", 1).window(TumblingEventTimeWindows.of(20))
    .trigger(CountTrigger(2)).allowed_lateness(4).accumulating().side_output_late_data().aggregate(s=Sum("v")),
    "time_window_count_trigger_discarding": B().event_time("ts", 1).window(TumblingEventTimeWindows.of(20))
    .trigger(CountTrigger(2)).discarding().side_output_late_data().aggregate(s=Sum("v"), a=Avg("v")),
}


def _norm_panes(panes):
    def value(v):
        return round(v, 6) if isinstance(v, float) else v
    return sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted((k, value(v)) for k, v in p.values.items())),
                   p.pane_index, p.timing, p.is_final, p.watermark_ms) for p in panes)


def _random_batches(seed: int):
    rng = random.Random(seed)
    batches = []
    for _ in range(4):
        batch = []
        for _ in range(rng.randint(0, 7)):
            batch.append(dict(k=rng.choice(["a", "b"]) if rng.random() > 0.05 else None,
                              ts=rng.randint(-40, 70) if rng.random() > 0.05 else None,
                              v=rng.randint(-5, 9), w=rng.choice([None, 1.5, 2.0, -3.25])))
        batches.append(batch)
    return batches


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spark_plans_agree_with_reference(spark, name):
    spec = SPECS[name]
    for seed in (1, 2):
        batches = _random_batches(seed * 100 + len(name))
        reference = ReferenceOperator(spec)
        executor = SparkExecutor(spark, spec, infer_schema(spec, [r for b in batches for r in b] + [
            dict(k="a", ts=0, v=0, w=0.5)]))
        for batch_id, rows in enumerate(batches + [None]):
            if rows is None:
                expected, got = reference.flush(batch_id), executor.flush(batch_id)
            else:
                expected, got = reference.process_batch(rows, batch_id), executor.process_batch(rows, batch_id)
            assert _norm_panes(got.panes) == _norm_panes(expected.panes), (name, seed, batch_id, rows)
            assert sorted((l.key, l.timestamp_ms, l.reason, l.watermark_ms) for l in got.late) == \
                sorted((l.key, l.timestamp_ms, l.reason, l.watermark_ms) for l in expected.late)
            assert got.metrics.accounted(), got.metrics
            assert (got.metrics.input_rows, got.metrics.accepted_rows, got.metrics.late_rows,
                    got.metrics.quarantined_rows, got.metrics.unassigned_rows, got.metrics.dropped_late_rows) == \
                (expected.metrics.input_rows, expected.metrics.accepted_rows, expected.metrics.late_rows,
                 expected.metrics.quarantined_rows, expected.metrics.unassigned_rows,
                 expected.metrics.dropped_late_rows)
        if not name.startswith("count_"):
            assert executor.open_windows() == [], "time windows must leave no state after the flush"


def _one_closing_batch(spark, spec, rows: list[dict], typing_rows: list[dict] = ()):
    """The reference model and the Spark operator on one first batch that ends the input (the operator's watermark
    +infinity, which also takes the processing-time clock there: the model's ``ends_input``); the Spark operator
    must run it as the one-pass ``closing`` plan. Returns the model's result, the operator's and its executor."""
    expected = ReferenceOperator(spec).process_batch(rows, 0, watermark_ms=2**63 - 1, ends_input=True)
    executor = SparkExecutor(spark, spec, infer_schema(spec, rows + list(typing_rows)))
    report = executor.operator.process_batch(
        spark.createDataFrame([tuple(r.get(c) for c in executor.columns) for r in rows], executor.schema),
        0, watermark_ms=2**63 - 1)
    assert report.plan == "closing"
    return expected, executor._result(report), executor


@pytest.mark.parametrize("name", ["tumbling_lateness_user_agg", "sliding_gaps_discarding",
                                  "sliding_overlap_no_late_output"])
def test_one_pass_closing_batch_agrees_with_reference(spark, name):
    """A first batch that ends at watermark +infinity (a complete backfill in one batch)
    runs the one-pass plan and emits what the reference model emits."""
    spec = SPECS[name]
    rows = [r for b in _random_batches(7 + len(name)) for r in b] + [dict(k="b", ts=-41, v=3, w=None)]
    expected, got, executor = _one_closing_batch(spark, spec, rows, [dict(k="a", ts=0, v=0, w=0.5)])
    assert expected.panes and _norm_panes(got.panes) == _norm_panes(expected.panes)
    assert all(p.is_final and p.pane_index == 0 for p in got.panes)
    assert got.metrics.accounted(), got.metrics
    assert (got.metrics.input_rows, got.metrics.accepted_rows, got.metrics.quarantined_rows,
            got.metrics.unassigned_rows, got.metrics.panes_emitted) == \
        (expected.metrics.input_rows, expected.metrics.accepted_rows, expected.metrics.quarantined_rows,
         expected.metrics.unassigned_rows, len(expected.panes))
    assert executor.open_windows() == []


@pytest.mark.parametrize("assigner", [TumblingProcessingTimeWindows.of(10), SlidingProcessingTimeWindows.of(5, 8)],
                         ids=["tumbling", "sliding_gaps"])
def test_one_pass_closing_batch_of_processing_time_windows_agrees_with_reference(spark, assigner):
    """Processing-time windows over the rows' recorded ingestion times (a backfill's): a first batch that ends the
    input runs the one-pass plan, closes every window and emits what the reference model emits; a row in a gap
    between sliding windows is unassigned, a row without a key quarantined, none late."""
    spec = (B().event_time("ts", 0).processing_time("pt").window(assigner).side_output_late_data()
            .aggregate(s=Sum("v"), n=Count()))
    rng = random.Random(5)
    rows = [dict(k=rng.choice(["a", "b"]), ts=rng.randint(-40, 70), v=rng.randint(-5, 9), w=1.5,
                 pt=rng.randint(0, 60)) for _ in range(30)] + [dict(k=None, ts=3, v=1, w=None, pt=4)]
    expected, got, executor = _one_closing_batch(spark, spec, rows)
    assert expected.panes and _norm_panes(got.panes) == _norm_panes(expected.panes)
    assert sum(p.values["n"] for p in got.panes) == expected.metrics.accepted_rows   # every row in a pane
    assert not got.late and not expected.late
    assert (got.metrics.input_rows, got.metrics.accepted_rows, got.metrics.quarantined_rows,
            got.metrics.unassigned_rows) == (expected.metrics.input_rows, expected.metrics.accepted_rows,
                                             expected.metrics.quarantined_rows, expected.metrics.unassigned_rows)
    assert got.metrics.accounted() and expected.metrics.quarantined_rows == 1
    assert (expected.metrics.unassigned_rows > 0) == isinstance(assigner, SlidingProcessingTimeWindows)
    assert executor.open_windows() == []


@pytest.mark.parametrize("dirty", [False, True])
def test_one_pass_accounting_comes_from_the_results_write_when_every_row_is_accepted(spark, monkeypatch, dirty):
    """Tumbling windows, one closing batch: when every input row is in a pane, the row
    accounting and the largest event time come from what the results write observed (no
    second pass); one quarantined row sends it back to the pass. Both agree with the model."""
    from windowing.spark.plans.executor import PlanExecutor
    spec = SPECS["tumbling_lateness_user_agg"]
    rng = random.Random(11)
    rows = [dict(k=rng.choice("abc"), ts=rng.randint(-35, 60), v=rng.randint(-5, 9), w=1.5) for _ in range(25)]
    if dirty:
        rows.append(dict(k=None, ts=99, v=1, w=1.5))   # quarantined: its event time must not count
    observed = []
    original = PlanExecutor._observed_accounting

    def spy(*args):
        observed.append(original(*args))
        return observed[-1]
    monkeypatch.setattr(PlanExecutor, "_observed_accounting", staticmethod(spy))
    expected = ReferenceOperator(spec)
    expected_result = expected.process_batch(rows, 0, watermark_ms=2**63 - 1)
    executor = SparkExecutor(spark, spec, infer_schema(spec, rows))
    report = executor.operator.process_batch(
        spark.createDataFrame([tuple(r.get(c) for c in executor.columns) for r in rows], executor.schema),
        0, watermark_ms=2**63 - 1)
    assert report.plan == "closing"
    assert len(observed) == 1 and (observed[0] is None) == dirty
    got = executor._result(report)
    assert _norm_panes(got.panes) == _norm_panes(expected_result.panes)
    m, e = got.metrics, expected_result.metrics
    assert (m.input_rows, m.accepted_rows, m.quarantined_rows, m.late_rows, m.unassigned_rows, m.panes_emitted) == \
        (e.input_rows, e.accepted_rows, e.quarantined_rows, e.late_rows, e.unassigned_rows, len(expected_result.panes))
    assert executor.operator.last_progress()["max_seen_ms"] == expected.max_seen_timestamp_ms == \
        max(r["ts"] for r in rows if r["k"] is not None)


def test_batching_does_not_change_final_results_on_spark(spark):
    """Nothing late: one batch, batches of 1 and of 2 give the same final panes.

    (Cuts of 1, 2 and all: a cut between 2 and all, such as 5, would run the same plans again.)"""
    spec = B().event_time("ts", 100).window(SlidingEventTimeWindows.of(10, 5)).aggregate(s=Sum("v"), n=Count())
    rng = random.Random(5)
    rows = [dict(k=rng.choice("ab"), ts=t, v=rng.randint(0, 9)) for t in sorted(rng.sample(range(-30, 60), 10))]
    schema = infer_schema(spec, rows)

    def final(size):
        ex = SparkExecutor(spark, spec, schema)
        panes, b = [], 0
        for i in range(0, len(rows), size):
            panes += ex.process_batch(rows[i:i + size], b).panes
            b += 1
        panes += ex.flush(b).panes
        last = {}
        for p in panes:
            ident = (p.key, p.window_start_ms)
            if ident not in last or p.pane_index > last[ident].pane_index:
                last[ident] = p
        return sorted((k, p.values["s"], p.values["n"]) for k, p in last.items())

    one = final(len(rows))
    assert one and all(final(size) == one for size in (1, 2))
