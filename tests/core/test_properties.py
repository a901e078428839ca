"""Hypothesis properties of the core: window assigners and batching invariance.

Assigner properties are checked against brute force (walk every candidate
start in ``(ts - size, ts]``), not against the formulas the assigners use.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowing.core.aggregates import Avg, Count, Max, Min, Sum
from windowing.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.windows import TimeWindow

SETTINGS = settings(max_examples=100, deadline=None)

timestamps = st.one_of(st.integers(-10**6, 10**6), st.integers(-2**50, 2**50))
sizes = st.integers(1, 300)


def aligned_starts(ts: int, size: int, every: int, offset: int) -> list[int]:
    """Brute force: starts s = offset (mod every) with s <= ts < s + size, newest first."""
    return [s for s in range(ts, ts - size, -1) if (s - offset) % every == 0]


# --------------------------------------------------------------------- tumbling


@SETTINGS
@given(ts=timestamps, size=sizes, data=st.data())
def test_tumbling_exactly_one_window_aligned_to_offset(ts, size, data):
    offset = data.draw(st.integers(-(size - 1), size - 1), label="offset")
    windows = TumblingEventTimeWindows(size, offset).assign(ts)
    assert len(windows) == 1
    (w,) = windows
    assert w.start_ms <= ts < w.end_ms
    assert w.end_ms - w.start_ms == size
    assert (w.start_ms - offset) % size == 0
    assert [w.start_ms] == aligned_starts(ts, size, size, offset)


def test_tumbling_examples_before_1970():
    assert TumblingEventTimeWindows(10).assign(-1) == (TimeWindow(-10, 0),)
    assert TumblingEventTimeWindows(10).assign(-10) == (TimeWindow(-10, 0),)
    assert TumblingEventTimeWindows(10).assign(-11) == (TimeWindow(-20, -10),)
    assert TumblingEventTimeWindows(10, 3).assign(-1) == (TimeWindow(-7, 3),)
    assert TumblingEventTimeWindows(10, -3).assign(-4) == (TimeWindow(-13, -3),)
    day = 86_400_000
    assert TumblingEventTimeWindows.of("1 day").assign(-1) == (TimeWindow(-day, 0),)


# ---------------------------------------------------------------------- sliding


@SETTINGS
@given(ts=timestamps, size=sizes, slide=sizes, data=st.data())
def test_sliding_windows_contain_ts_and_are_all_aligned_starts(ts, size, slide, data):
    offset = data.draw(st.integers(-(slide - 1), slide - 1), label="offset")
    windows = SlidingEventTimeWindows(size, slide, offset).assign(ts)
    for w in windows:
        assert w.start_ms <= ts < w.end_ms
        assert w.end_ms - w.start_ms == size
        assert (w.start_ms - offset) % slide == 0
    starts = [w.start_ms for w in windows]
    assert len(set(starts)) == len(starts)
    assert sorted(starts) == sorted(aligned_starts(ts, size, slide, offset))
    assert len(windows) == len(aligned_starts(ts, size, slide, offset))
    if size % slide == 0:
        assert len(windows) == size // slide
    if slide > size:
        # gaps: at most one window; none exactly when ts is in a gap
        assert len(windows) <= 1
        in_gap = (ts - offset) % slide >= size
        assert (len(windows) == 0) == in_gap


def test_sliding_gap_examples():
    gaps = SlidingEventTimeWindows(5, 10)
    assert gaps.assign(3) == (TimeWindow(0, 5),)
    assert gaps.assign(5) == ()
    assert gaps.assign(9) == ()
    assert gaps.assign(-6) == (TimeWindow(-10, -5),)
    assert gaps.assign(-5) == ()
    assert set(SlidingEventTimeWindows(10, 5, -2).assign(-4)) == {TimeWindow(-7, 3), TimeWindow(-12, -2)}


# ------------------------------------------------------------ invalid parameters


@SETTINGS
@given(bad=st.integers(-10**6, 0))
def test_non_positive_sizes_and_slides_are_refused(bad):
    with pytest.raises(ValueError, match=str(bad)):
        TumblingEventTimeWindows(bad)
    with pytest.raises(ValueError, match=str(bad)):
        SlidingEventTimeWindows(bad, 5)
    with pytest.raises(ValueError, match=str(bad)):
        SlidingEventTimeWindows(10, bad)


@SETTINGS
@given(size=sizes, data=st.data())
def test_offsets_outside_the_size_or_slide_are_refused(size, data):
    sign = data.draw(st.sampled_from([1, -1]), label="sign")
    offset = sign * data.draw(st.integers(size, size + 10**6), label="|offset|")
    with pytest.raises(ValueError, match=str(offset)):
        TumblingEventTimeWindows(size, offset)
    with pytest.raises(ValueError, match=str(offset)):
        SlidingEventTimeWindows(size + 1000, size, offset)


@pytest.mark.parametrize("bad", [1.5, "10", None, True])
def test_non_int_sizes_are_refused(bad):
    with pytest.raises(ValueError, match="size_ms"):
        TumblingEventTimeWindows(bad)
    with pytest.raises(ValueError, match="slide_ms"):
        SlidingEventTimeWindows(10, bad)


@pytest.mark.parametrize("text", ["ten seconds", "5 fortnights", "", "1.5 s"])
def test_unparseable_durations_are_refused(text):
    with pytest.raises(ValueError, match="size"):
        TumblingEventTimeWindows.of(text)


# ---------------------------------------------------------- batching invariance

AGGS = dict(s=Sum("v"), n=Count(), lo=Min("v"), hi=Max("v"), mean=Avg("v"))

assigners = st.one_of(
    st.builds(lambda size, off: TumblingEventTimeWindows(size, off % size),
              st.integers(1, 40), st.integers(0, 1000)),
    st.builds(lambda size, slide, off: SlidingEventTimeWindows(size, slide, off % slide),
              st.integers(1, 40), st.integers(1, 40), st.integers(0, 1000)),
)
streams = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(-100, 100),
              st.one_of(st.none(), st.integers(-50, 50))),
    min_size=0, max_size=40)


def _run(spec, batches):
    op = ReferenceOperator(spec)
    results = [op.process_batch(batch, b) for b, batch in enumerate(batches)]
    results.append(op.flush(len(batches)))
    assert not [w for _, w in op.open_windows() if not w.is_global]
    for res in results:
        assert res.metrics.accounted()
        assert not res.late and res.metrics.late_rows == 0 and res.metrics.dropped_late_rows == 0
    return results


def _final(results) -> dict:
    final = {}
    for res in results:
        for pane in sorted(res.panes, key=lambda p: p.pane_index):
            final[(pane.key, pane.window_start_ms, pane.window_end_ms)] = pane
    return final


def _cut(rows, sizes):
    batches, i = [], 0
    for size in sizes:
        if i >= len(rows):
            break
        batches.append(rows[i:i + size])
        i += size
    if i < len(rows):
        batches.append(rows[i:])
    return batches


def _close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


@settings(max_examples=100, deadline=None)
@given(assigner=assigners, stream=streams, cuts=st.lists(st.integers(1, 6), max_size=40),
       late_by=st.sampled_from(["lateness", "delay"]))
def test_batching_does_not_change_final_results_when_nothing_is_late(assigner, stream, cuts, late_by):
    """Out-of-order streams; either the delay or the allowed lateness covers the whole disorder.

    With a large delay nothing is even behind the watermark, so the last
    pane of every window must agree in values, timing and is_final. With a
    large allowed lateness, out-of-order elements refire windows as LATE
    panes depending on the cut, so only the final values must agree.
    """
    span = 400  # > max timestamp spread (200) + max window size (40)
    b = WindowSpecBuilder().key_by("k").event_time("ts", span if late_by == "delay" else 0)
    spec = (b.window(assigner).allowed_lateness(span if late_by == "lateness" else 0)
            .side_output_late_data().aggregate(**AGGS))
    rows = [dict(k=k, ts=ts, v=v) for k, ts, v in stream]
    whole = _final(_run(spec, [rows] if rows else []))
    cut = _final(_run(spec, _cut(rows, cuts)))
    assert set(whole) == set(cut)
    for ident, pane in whole.items():
        other = cut[ident]
        assert all(_close(pane.values[n], other.values[n]) for n in AGGS), (ident, pane, other)
        if late_by == "delay":
            assert (pane.timing, pane.is_final) == (other.timing, other.is_final), (ident, pane, other)
    # every element that fell in a window is in the final panes (Count() adds up)
    expected_count = sum(len(assigner.assign(ts)) for _, ts, _ in stream)
    assert sum(p.values["n"] for p in whole.values()) == expected_count
