"""Hypothesis properties of session windows in the reference model.

Checked against brute force (connected components of the elements' ``[ts, ts + gap)``
intervals, where touching intervals connect), not against the merging code.
"""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from windowing.core.aggregates import Count, Max, Min, Sum
from windowing.core.assigners import EventTimeSessionWindows, merge_windows
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.windows import TimeWindow

SETTINGS = settings(max_examples=100, deadline=None)


def components(intervals: list[tuple[int, int, object]]) -> list[tuple[int, int, list]]:
    """Brute force: union-find over every pair of intervals that intersect or touch."""
    parent = list(range(len(intervals)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, (s1, e1, _) in enumerate(intervals):
        for j, (s2, e2, _) in enumerate(intervals):
            if i < j and s1 <= e2 and e1 >= s2:
                parent[find(i)] = find(j)
    groups: dict = {}
    for i, (s, e, payload) in enumerate(intervals):
        groups.setdefault(find(i), []).append((s, e, payload))
    return [(min(s for s, _, _ in g), max(e for _, e, _ in g), [p for _, _, p in g]) for g in groups.values()]


windows_st = st.lists(st.tuples(st.integers(-1000, 1000), st.integers(1, 200)), min_size=1, max_size=25)


@SETTINGS
@given(windows=windows_st)
def test_merge_windows_groups_connected_windows(windows):
    ws = {TimeWindow(s, s + length) for s, length in windows}
    got = sorted((cover.start_ms, cover.end_ms, sorted(members)) for cover, members in merge_windows(ws))
    want = sorted((s, e, sorted(TimeWindow(a, b) for a, b, _ in [(w.start_ms, w.end_ms, None) for w in ms]))
                  for s, e, ms in components([(w.start_ms, w.end_ms, w) for w in ws]))
    assert got == want


@SETTINGS
@given(ts=st.integers(-2**50, 2**50), gap=st.integers(1, 10**6))
def test_session_assigner_opens_ts_to_ts_plus_gap(ts, gap):
    (w,) = EventTimeSessionWindows.with_gap(gap).assign(ts)
    assert (w.start_ms, w.end_ms) == (ts, ts + gap)
    (d,) = EventTimeSessionWindows.with_dynamic_gap("g").assign(ts, {"g": gap})
    assert d == w


def _spec(gap, dynamic, delay):
    assigner = EventTimeSessionWindows.with_dynamic_gap("g") if dynamic else EventTimeSessionWindows.with_gap(gap)
    return (WindowSpecBuilder().key_by("k").event_time("ts", delay).window(assigner).side_output_late_data()
            .aggregate(s=Sum("v"), n=Count(), lo=Min("ts"), hi=Max("ts")))


def _expected_sessions(rows, gap, dynamic):
    out = set()
    for key in {r["k"] for r in rows}:
        mine = [r for r in rows if r["k"] == key]
        intervals = [(r["ts"], r["ts"] + (r["g"] if dynamic else gap), r) for r in mine]
        for start, end, members in components(intervals):
            out.add((key, start, end, sum(m["v"] for m in members), len(members),
                     min(m["ts"] for m in members), max(m["ts"] for m in members)))
    return out


def _final(results):
    last = {}
    for res in results:
        for p in res.panes:
            last[(p.key, p.window_start_ms, p.window_end_ms)] = p
    return last


def _as_sessions(final):
    return {(k[0], s, e, p.values["s"], p.values["n"], p.values["lo"], p.values["hi"]) for (k, s, e), p in final.items()}


@st.composite
def in_order_streams(draw):
    """Rows where every event time is above (max seen so far - delay): nothing is ever late,
    whatever the batch cut (a fired session can then never be touched again)."""
    gap = draw(st.integers(1, 50))
    delay = draw(st.integers(0, 40))
    dynamic = draw(st.booleans())
    n = draw(st.integers(1, 30))
    ts = draw(st.integers(-500, 500))
    rows, max_seen = [], None
    for i in range(n):
        if max_seen is not None:
            ts = max_seen - delay + 1 + draw(st.integers(0, 3 * gap))
        max_seen = ts if max_seen is None else max(max_seen, ts)
        rows.append(dict(k=draw(st.sampled_from("ab")), ts=ts, v=draw(st.integers(-5, 5)),
                         g=draw(st.integers(1, 60))))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, n - 1)), max_size=n)))
    return gap, delay, dynamic, rows, cuts


def _run(spec, batches):
    op = ReferenceOperator(spec)
    results = [op.process_batch([dict(r) for r in b], i) for i, b in enumerate(batches)]
    results.append(op.flush(len(batches)))
    assert not op.open_windows()
    return results


@SETTINGS
@given(stream=in_order_streams())
def test_sessions_do_not_depend_on_batch_cuts_when_nothing_is_late(stream):
    gap, delay, dynamic, rows, cuts = stream
    spec = _spec(gap, dynamic, delay)
    bounds = [0, *cuts, len(rows)]
    batches = [rows[a:b] for a, b in zip(bounds, bounds[1:]) if a < b]
    whole = _run(spec, [rows])
    cut = _run(spec, batches)
    assert all(not r.late and r.metrics.accounted() for r in whole + cut)
    want = _expected_sessions(rows, gap, dynamic)
    assert _as_sessions(_final(whole)) == want
    assert _as_sessions(_final(cut)) == want
    # every final pane is ON_TIME and final, whatever the cut
    assert all(p.timing == "ON_TIME" and p.is_final for p in _final(cut).values())


@SETTINGS
@given(rows=st.lists(st.tuples(st.sampled_from("ab"), st.integers(-100, 100), st.integers(-5, 5)),
                     min_size=1, max_size=30), gap=st.integers(1, 30), seed=st.integers(0, 2**16),
       delay=st.integers(0, 300))
def test_sessions_do_not_depend_on_element_order_within_a_batch(rows, gap, seed, delay):
    """Two batches with arbitrary (also late) elements: shuffling within each batch changes nothing."""
    rows = [dict(k=k, ts=ts, v=v, g=gap) for k, ts, v in rows]
    half = len(rows) // 2
    spec = _spec(gap, False, delay)
    shuffled = [list(rows[:half]), list(rows[half:])]
    rnd = random.Random(seed)
    for b in shuffled:
        rnd.shuffle(b)

    def outputs(batches):
        results = _run(spec, batches)
        return ([sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted(p.values.items())), p.pane_index,
                         p.timing, p.is_final, p.supersedes) for p in res.panes) for res in results],
                [sorted((x.key, x.timestamp_ms) for x in res.late) for res in results])

    assert outputs([rows[:half], rows[half:]]) == outputs(shuffled)


@SETTINGS
@given(pt=st.integers(-2**40, 2**40), size=st.integers(1, 500), data=st.data())
def test_processing_time_assigners_contain_the_processing_time(pt, size, data):
    from windowing.core.assigners import SlidingProcessingTimeWindows, TumblingProcessingTimeWindows
    slide = data.draw(st.integers(1, 500), label="slide")
    (w,) = TumblingProcessingTimeWindows(size).assign(pt)
    assert w.start_ms <= pt < w.end_ms and w.start_ms % size == 0
    starts = [x.start_ms for x in SlidingProcessingTimeWindows(size, slide).assign(pt)]
    assert starts == [s for s in range(pt, pt - size, -1) if s % slide == 0]
    assert not TumblingProcessingTimeWindows(size).is_event_time


@SETTINGS
@given(stream=in_order_streams(), every=st.integers(1, 4))
def test_upsert_view_of_sessions_with_early_firings_is_the_brute_force_sessions(stream, every):
    """Early firings emit panes of sessions that later merge; the upsert view (superseded panes removed)
    must end up holding exactly the brute-force sessions, whatever the batch cut."""
    from windowing.core.sinks import sink_view
    from windowing.core.triggers import EventTimeTrigger
    gap, delay, dynamic, rows, cuts = stream
    assigner = EventTimeSessionWindows.with_dynamic_gap("g") if dynamic else EventTimeSessionWindows.with_gap(gap)
    spec = (WindowSpecBuilder().key_by("k").event_time("ts", delay).window(assigner)
            .trigger(EventTimeTrigger().with_early_firings(every_n_elements=every)).output_mode("upsert")
            .aggregate(s=Sum("v"), n=Count(), lo=Min("ts"), hi=Max("ts")))
    bounds = [0, *cuts, len(rows)]
    batches = [rows[a:b] for a, b in zip(bounds, bounds[1:]) if a < b]
    panes = [p for res in _run(spec, batches) for p in res.panes]
    view = sink_view(spec, panes)
    got = {(p.key[0], p.window_start_ms, p.window_end_ms, p.values["s"], p.values["n"], p.values["lo"],
            p.values["hi"]) for p in view}
    assert got == _expected_sessions(rows, gap, dynamic)
    assert all(p.timing == "ON_TIME" and p.is_final for p in view)
