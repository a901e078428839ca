"""Hypothesis properties of the assigners and of batching on the reference model."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowing.core.aggregates import Count, Sum
import pytest

from windowing.core.assigners import CumulativeEventTimeWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder

TS = st.integers(-10**13, 10**13)


@st.composite
def tumbling(draw):
    size = draw(st.integers(1, 10**6))
    return TumblingEventTimeWindows(size, draw(st.integers(-size + 1, size - 1)))


@st.composite
def sliding(draw):
    size, slide = draw(st.integers(1, 5000)), draw(st.integers(1, 5000))
    return SlidingEventTimeWindows(size, slide, draw(st.integers(-slide + 1, slide - 1)))


@settings(max_examples=200, deadline=None)
@given(tumbling(), TS)
def test_tumbling_assigns_exactly_the_aligned_window_containing_ts(assigner, ts):
    (window,) = assigner.assign(ts)
    assert window.start_ms <= ts < window.end_ms
    assert window.end_ms - window.start_ms == assigner.size_ms
    assert (window.start_ms - assigner.offset_ms) % assigner.size_ms == 0


@settings(max_examples=200, deadline=None)
@given(sliding(), TS)
def test_sliding_assigns_every_aligned_window_containing_ts(assigner, ts):
    windows = assigner.assign(ts)
    for w in windows:
        assert w.start_ms <= ts < w.end_ms and w.end_ms - w.start_ms == assigner.size_ms
        assert (w.start_ms - assigner.offset_ms) % assigner.slide_ms == 0
    # Brute force: the aligned starts in (ts - size, ts].
    first = ts - assigner.size_ms + 1
    starts = [s for s in range(first, ts + 1) if (s - assigner.offset_ms) % assigner.slide_ms == 0]
    assert sorted(w.start_ms for w in windows) == starts
    if assigner.slide_ms <= assigner.size_ms:
        assert windows, "without gaps every element has a window"


@st.composite
def cumulative(draw):
    step = draw(st.integers(1, 500))
    max_size = step * draw(st.integers(1, 12))
    return CumulativeEventTimeWindows(max_size, step, draw(st.integers(-max_size + 1, max_size - 1)))


@settings(max_examples=200, deadline=None)
@given(cumulative(), TS)
def test_cumulative_assigns_every_growing_window_of_its_start_that_holds_ts(assigner, ts):
    windows = assigner.assign(ts)
    (start,) = {w.start_ms for w in windows}
    assert start <= ts < start + assigner.max_size_ms and (start - assigner.offset_ms) % assigner.max_size_ms == 0
    # Brute force: the ends start + k * step (k = 1 .. max_size / step) above ts.
    ends = [start + k * assigner.step_ms for k in range(1, assigner.max_size_ms // assigner.step_ms + 1)]
    assert [w.end_ms for w in windows] == [e for e in ends if e > ts]


def test_cumulative_windows_refuse_a_max_size_that_is_not_whole_steps():
    with pytest.raises(ValueError, match="max_size_ms=25 must be a whole number of steps"):
        CumulativeEventTimeWindows.of(25, 10)
    with pytest.raises(ValueError, match="offset"):
        CumulativeEventTimeWindows.of(30, 10, 30)
    assert CumulativeEventTimeWindows.of("1 minute", "10 seconds") == CumulativeEventTimeWindows(60_000, 10_000)


STREAM = st.lists(st.tuples(st.sampled_from("abc"), st.integers(-500, 500), st.integers(-9, 9)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(STREAM, st.lists(st.integers(1, 8), min_size=1, max_size=10),
       st.sampled_from([TumblingEventTimeWindows(50, 7), SlidingEventTimeWindows(60, 20, -5),
                        SlidingEventTimeWindows(20, 30)]))
def test_batching_does_not_change_final_results_when_nothing_is_late(events, cuts, assigner):
    # A watermark delay longer than the stream's span: nothing can be late.
    spec = (WindowSpecBuilder().key_by("k").event_time("ts", 2000).window(assigner)
            .aggregate(s=Sum("v"), n=Count()))
    rows = [dict(k=k, ts=ts, v=v) for k, ts, v in events]

    def final(sizes):
        op, panes, i, b = ReferenceOperator(spec), [], 0, 0
        while i < len(rows):
            size = sizes[b % len(sizes)]
            result = op.process_batch(rows[i:i + size], b)
            assert not result.late
            panes += result.panes
            i, b = i + size, b + 1
        panes += op.flush(b).panes
        last = {}
        for p in panes:
            last[(p.key, p.window_start_ms)] = max(last.get((p.key, p.window_start_ms), p), p,
                                                  key=lambda q: q.pane_index)
        return {k: p.values for k, p in last.items()}

    assert final(cuts) == final([max(1, len(rows))])


def test_a_job_file_names_cumulating_windows_by_size_and_step():
    pytest.importorskip("pyspark")
    from pipelines.job import build_spec
    source, aggregates = {"key": "user_id", "event_time": "ts"}, {"n": "count()"}
    spec = build_spec(source, {"type": "cumulate", "size": "1 hour", "step": "15 minutes"}, aggregates)
    assert spec.assigner == CumulativeEventTimeWindows(3_600_000, 900_000)
    with pytest.raises(ValueError, match="step"):
        build_spec(source, {"type": "cumulate", "size": "1 hour"}, aggregates)
    with pytest.raises(ValueError, match="does not take"):
        build_spec(source, {"type": "tumbling", "size": "1 hour", "step": "1 minute"}, aggregates)
