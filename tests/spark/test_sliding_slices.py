"""Sliding windows by slices (windowing/spark/plans/slicing.py) agree with the reference model.

Random sliding specs (slide below, equal to and above the size: gaps; offsets;
negative timestamps) run on Spark and on the reference model with the same
rows. The one-pass closing batch exercises both ways of building windows from
slices (running differences for Count/Sum/Avg of integers, slice explosion for
Min/Max/sums of doubles); the streaming batches exercise the per-slice partials
of the incremental time plan with lateness, late elements and both
accumulation modes. Cumulating windows (slices of one step) close a batch the same two ways:
running sums per cycle, or slice explosion.
"""
from __future__ import annotations

import random

import pytest

from spark_adapter import SparkExecutor, infer_schema
from windowing.core.aggregates import Avg, Count, Max, Min, Sum
from windowing.core.assigners import CumulativeEventTimeWindows, SlidingEventTimeWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import MAX_TIMESTAMP_MS

INVERTIBLE = dict(s=Sum("v"), n=Count(), nv=Count("v"), a=Avg("v"))
NOT_INVERTIBLE = dict(lo=Min("v"), hi=Max("v"), sw=Sum("w"), n=Count())


def _assigner(rng: random.Random, shape: str) -> SlidingEventTimeWindows:
    """``overlap``: slide < size; ``gaps``: slide > size; ``slices``: gcd(size, slide) < slide < size."""
    if shape == "overlap":
        size = rng.randint(2, 24)
        slide = rng.randint(1, size - 1)
    elif shape == "gaps":
        size = rng.randint(1, 12)
        slide = rng.randint(size + 1, 20)
    else:
        q = rng.randint(1, 3)
        slide = q * rng.choice([2, 3])
        size = slide * rng.randint(1, 3) + q
    return SlidingEventTimeWindows(size, slide, rng.randint(-slide + 1, slide - 1))


def _rows(rng: random.Random, n: int, lo: int = -60, hi: int = 60) -> list[dict]:
    return [dict(k=rng.choice("abc"), ts=rng.randint(lo, hi), v=rng.choice([None, -4, 0, 1, 2, 7, 30]),
                 w=rng.choice([None, 0.5, 1.25, -2.0])) for _ in range(n)]


def _norm(panes):
    def value(v):
        return round(v, 6) if isinstance(v, float) else v
    return sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted((k, value(v)) for k, v in p.values.items())),
                   p.pane_index, p.timing, p.is_final, p.watermark_ms) for p in panes)


def _schema(spec):
    return infer_schema(spec, [dict(k="a", ts=0, v=1, w=0.5)])


# ----------------------------------------------------------------- no Spark

@pytest.mark.parametrize("ts", [-61, -7, -1, 0, 1, 13, 59])
def test_slice_bounds_are_window_bounds(ts):
    """The identity the slice plans rest on: ts is in window s exactly when its slice is."""
    import math
    for size, slide, offset in [(5, 8, -3), (12, 4, 1), (6, 4, 0), (7, 7, 2), (9, 6, -5), (1, 3, 2)]:
        assigner = SlidingEventTimeWindows(size, slide, offset)
        q = math.gcd(size, slide)
        o = ts - (ts - offset) % q
        starts_from_slice = {s for s in range(o - size + q, o + 1) if (s - offset) % slide == 0}
        assert starts_from_slice == {w.start_ms for w in assigner.assign(ts)}, (size, slide, offset, ts)


# -------------------------------------------------------------------- Spark

@pytest.mark.spark
@pytest.mark.parametrize("seed", range(6))
def test_closing_batch_by_slices_agrees_with_reference(spark, seed):
    """A first batch that ends at +infinity (a whole backfill) on random sliding specs: every
    window shape with both the running-difference and the slice-explosion plan."""
    from windowing.spark.plans import slicing
    from windowing.spark.plans.aggregates import compile_aggregates

    rng = random.Random(seed)
    aggs = INVERTIBLE if seed % 2 == 0 else NOT_INVERTIBLE
    shape = ("overlap", "gaps", "slices")[seed % 3]
    spec = (WindowSpecBuilder().key_by("k").event_time("ts", rng.randint(0, 3)).window(_assigner(rng, shape))
            .side_output_late_data().aggregate(**aggs))
    rows = _rows(rng, rng.randint(15, 40))
    executor = SparkExecutor(spark, spec, _schema(spec))
    df = spark.createDataFrame([tuple(r.get(c) for c in executor.columns) for r in rows], executor.schema)
    assert slicing.invertible(compile_aggregates(spec), df.schema) == (seed % 2 == 0)

    report = executor.operator.process_batch(df, 0, watermark_ms=MAX_TIMESTAMP_MS)
    expected = ReferenceOperator(spec).process_batch(rows, 0, watermark_ms=MAX_TIMESTAMP_MS)
    got = executor._result(report)
    assert report.plan == "closing"
    assert expected.panes and _norm(got.panes) == _norm(expected.panes), spec.assigner
    assert (got.metrics.input_rows, got.metrics.accepted_rows, got.metrics.unassigned_rows,
            got.metrics.panes_emitted) == (expected.metrics.input_rows, expected.metrics.accepted_rows,
                                           expected.metrics.unassigned_rows, len(expected.panes))


@pytest.mark.spark
@pytest.mark.parametrize("seed", [20, 21])
def test_closing_batch_of_cumulating_windows_agrees_with_reference(spark, seed):
    """A whole backfill on random cumulating windows (offsets, negative times): running sums per
    cycle for Count/Sum/Avg of integers, slice explosion for the others."""
    from windowing.spark.plans import slicing
    from windowing.spark.plans.aggregates import compile_aggregates

    rng = random.Random(seed)
    aggs = INVERTIBLE if seed % 2 == 0 else NOT_INVERTIBLE
    step = rng.randint(1, 6)
    max_size = step * rng.randint(2, 5)
    spec = (WindowSpecBuilder().key_by("k").event_time("ts", rng.randint(0, 3))
            .window(CumulativeEventTimeWindows(max_size, step, rng.randint(-max_size + 1, max_size - 1)))
            .aggregate(**aggs))
    rows = _rows(rng, rng.randint(15, 40))
    executor = SparkExecutor(spark, spec, _schema(spec))
    df = spark.createDataFrame([tuple(r.get(c) for c in executor.columns) for r in rows], executor.schema)
    assert slicing.invertible(compile_aggregates(spec), df.schema) == (seed % 2 == 0)

    report = executor.operator.process_batch(df, 0, watermark_ms=MAX_TIMESTAMP_MS)
    expected = ReferenceOperator(spec).process_batch(rows, 0, watermark_ms=MAX_TIMESTAMP_MS)
    assert report.plan == "closing"
    assert expected.panes and _norm(executor._result(report).panes) == _norm(expected.panes), spec.assigner


@pytest.mark.spark
@pytest.mark.parametrize("seed,mode,shape", [(11, "accumulating", "overlap"), (12, "discarding", "gaps")])
def test_streaming_batches_by_slices_agree_with_reference(spark, seed, mode, shape):
    """Incremental time plan: slice partials merged into per-window state, late panes, late rows."""
    rng = random.Random(seed)
    builder = (WindowSpecBuilder().key_by("k").event_time("ts", 2).window(_assigner(rng, shape))
               .allowed_lateness(rng.randint(0, 6)).side_output_late_data())
    builder = builder.accumulating() if mode == "accumulating" else builder.discarding()
    spec = builder.aggregate(**(INVERTIBLE if seed % 2 else NOT_INVERTIBLE))
    reference, executor = ReferenceOperator(spec), SparkExecutor(spark, spec, _schema(spec))
    # Batches move forward in time but reach back, so some elements are late for some windows only.
    batches = [_rows(rng, 8, -40 + 20 * i, -10 + 20 * i) for i in range(3)]
    for batch_id, rows in enumerate(batches + [None]):
        if rows is None:
            expected, got = reference.flush(batch_id), executor.flush(batch_id)
        else:
            expected, got = reference.process_batch(rows, batch_id), executor.process_batch(rows, batch_id)
        assert _norm(got.panes) == _norm(expected.panes), (spec.assigner, batch_id)
        assert sorted((l.key, l.timestamp_ms) for l in got.late) == \
            sorted((l.key, l.timestamp_ms) for l in expected.late)
        assert (got.metrics.accepted_rows, got.metrics.late_rows, got.metrics.unassigned_rows) == \
            (expected.metrics.accepted_rows, expected.metrics.late_rows, expected.metrics.unassigned_rows)
    assert executor.open_windows() == []


@pytest.mark.spark
def test_count_trigger_on_sliding_windows_numbers_elements_per_live_window(spark):
    """The count plan keeps one row per (element, live window): a late element counts only in its live windows."""
    from windowing.core.triggers import CountTrigger

    spec = (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(SlidingEventTimeWindows(10, 5, 0))
            .trigger(CountTrigger(2)).allowed_lateness(3).side_output_late_data().aggregate(s=Sum("v"), n=Count()))
    reference, executor = ReferenceOperator(spec), SparkExecutor(spark, spec, _schema(spec))
    batches = [[dict(k="a", ts=t, v=t, w=None) for t in (1, 3, 6, 8, 12)],
               [dict(k="a", ts=t, v=t, w=None) for t in (4, 7, 2, 9)]]   # wm 11: [-5, 5) is gone, [0, 10) late but kept
    for batch_id, rows in enumerate(batches):
        expected, got = reference.process_batch(rows, batch_id), executor.process_batch(rows, batch_id)
        assert expected.panes and _norm(got.panes) == _norm(expected.panes), batch_id
        assert sorted(l.timestamp_ms for l in got.late) == sorted(l.timestamp_ms for l in expected.late)
