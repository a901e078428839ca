"""Hypothesis properties of the join reference models (pure Python).

* Window join: on streams in which no row is late (each input's rows arrive at most its
  out-of-orderness apart), the final panes do not depend on how the rows are cut into batches,
  and they equal a brute-force join (every pair of each key's rows in each window, sessions
  merged over both inputs' rows).
* Window join split by key: running each key's tagged rows through ``run_key_batch`` (the
  per-key path's algorithm) with the batch-wide watermark of the join's intake gives the same
  panes as the join operator, on any arrival order and cut.
* Interval join: on ANY arrival order and cut, the pairs emitted are exactly the brute-force pairs
  of the rows that were not late, each once; after every batch no row is kept whose partners
  would all be late.
"""
from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from windowing.core.assigners import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.joins import LEFT, RIGHT, IntervalJoinOperator, JoinInput, WindowJoinOperator
from windowing.core.joins.intake import JoinIntake
from windowing.core.joins.records import JoinBatchResult
from windowing.core.joins.tagged import tagged
from windowing.core.joins.window_join import join_pane
from windowing.core.reference import KeyBatchClock, run_key_batch
from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.triggers import EventTimeTrigger

SETTINGS = settings(max_examples=150, deadline=None)
GAP_MS = 5
ASSIGNERS = {"tumbling": TumblingEventTimeWindows.of(10), "sliding": SlidingEventTimeWindows.of(10, 4),
             "session": EventTimeSessionWindows.with_gap(GAP_MS)}


def _row(side, key, ts, id_):
    return {"k": key, "lt": ts, "id": id_} if side == LEFT else {"key": key, "rt": ts, "id": id_}


@st.composite
def streams(draw, ordered: bool):
    """(rows in arrival order as (side, row), left delay, right delay, batch sizes).

    ``ordered``: each input's rows arrive sorted by ``ts + jitter`` with jitter within that input's
    delay, so no row is ever late; otherwise the arrival order is arbitrary.
    """
    delays = {LEFT: draw(st.integers(0, 8), label="left delay"), RIGHT: draw(st.integers(0, 8), label="right delay")}
    events = draw(st.lists(st.tuples(st.sampled_from((LEFT, RIGHT)), st.sampled_from("ab"), st.integers(0, 40)),
                           max_size=30), label="events")
    rows = [(side, _row(side, key, ts, f"{side.name[0]}{i}")) for i, (side, key, ts) in enumerate(events)]
    if ordered:
        jitter = [draw(st.integers(0, delays[side])) for side, _ in rows]
        per_side = {side: sorted((r for r in zip(rows, jitter) if r[0][0] == side),
                                 key=lambda rj: _ts(rj[0][1]) + rj[1]) for side in (LEFT, RIGHT)}
        picks = draw(st.permutations([side for side, _ in rows]))   # how the two inputs interleave
        rows = [per_side[side].pop(0)[0] for side in picks]
    else:
        rows = draw(st.permutations(rows))
    cuts = draw(st.lists(st.integers(1, 6), max_size=12), label="batch sizes")
    return rows, delays, cuts


def _ts(row):
    return row["lt"] if "lt" in row else row["rt"]


def _batches(rows, cuts):
    i = 0
    for size in cuts:
        yield rows[i:i + size]
        i += size
    if i < len(rows):
        yield rows[i:]


def _run(operator, rows, cuts, last_ends_input=False):
    """Feed the rows in batches, then flush (``last_ends_input``: the last batch ends the input instead, when
    there is one); returns every batch's result."""
    results = []
    batches = list(_batches(rows, cuts))
    for batch_id, batch in enumerate(batches):
        results.append(operator.process_batch([r for s, r in batch if s == LEFT], [r for s, r in batch if s == RIGHT],
                                              batch_id, ends_input=last_ends_input and batch_id == len(batches) - 1))
    if not (last_ends_input and batches):
        results.append(operator.flush(len(results)))
    assert results[-1].watermark_after_ms == MAX_TIMESTAMP_MS
    for result in results:
        assert result.accounted(), result.metrics
    return results


def _window_join(assigner, how, delays):
    left, right = JoinInput.of("lt", delays[LEFT]), JoinInput.of("rt", delays[RIGHT])
    return (left.join(right, how).where("k").equal_to("key").window(assigner).side_output_late_data()
            .project(left={"id": "l"}, right={"id": "r"}))


def _final_panes(results):
    return Counter((p.key, p.window_start_ms, p.window_end_ms, p.timing, p.is_final,
                    tuple(sorted(((row["l"], row["r"]) for row in p.rows), key=repr)))
                   for result in results for p in result.panes)


def _windows_of(assigner_name, rows_of_key):
    """Brute force: each window of a key and the rows in it (sessions: runs of rows < gap apart... touching)."""
    if assigner_name != "session":
        windows = {}
        for side, row in rows_of_key:
            for window in ASSIGNERS[assigner_name].assign(_ts(row)):
                windows.setdefault((window.start_ms, window.end_ms), []).append((side, row))
        return windows
    sessions, current = {}, None
    for side, row in sorted(rows_of_key, key=lambda sr: _ts(sr[1])):
        ts = _ts(row)
        if current is not None and ts <= current[1]:        # [ts, ts+gap) touches the session: it merges
            current = (current[0], max(current[1], ts + GAP_MS), current[2] + [(side, row)])
        else:
            if current is not None:
                sessions[(current[0], current[1])] = current[2]
            current = (ts, ts + GAP_MS, [(side, row)])
    if current is not None:
        sessions[(current[0], current[1])] = current[2]
    return sessions


def _brute_force_panes(assigner_name, how, rows):
    panes = Counter()
    for key in "ab":
        for (start, end), members in _windows_of(assigner_name, [(s, r) for s, r in rows
                                                                   if r.get("k", r.get("key")) == key]).items():
            lefts = [r["id"] for s, r in members if s == LEFT]
            rights = [r["id"] for s, r in members if s == RIGHT]
            pairs = [(l, r) for l in lefts for r in rights]
            if how == "full" and not rights:
                pairs = [(l, None) for l in lefts]
            if how == "full" and not lefts:
                pairs = [(None, r) for r in rights]
            panes[((key,), start, end, "ON_TIME", True, tuple(sorted(pairs, key=repr)))] += 1
    return panes


@SETTINGS
@given(stream=streams(ordered=True), assigner_name=st.sampled_from(sorted(ASSIGNERS)),
       how=st.sampled_from(["inner", "full"]), last_ends_input=st.booleans())
def test_window_join_final_panes_do_not_depend_on_cuts(stream, assigner_name, how, last_ends_input):
    """Also when the last batch ends the input (a backfill's one pass: all rows in one batch that ends it)."""
    rows, delays, cuts = stream
    spec = _window_join(ASSIGNERS[assigner_name], how, delays)
    cut = _run(WindowJoinOperator(spec), rows, cuts, last_ends_input)
    whole = _run(WindowJoinOperator(spec), rows, [len(rows)], last_ends_input=True)
    assert not any(result.late for result in cut + whole)
    assert _final_panes(cut) == _final_panes(whole) == _brute_force_panes(assigner_name, how, rows)


def _interval_join(delays, lower, upper, lower_exclusive, upper_exclusive):
    left, right = JoinInput.of("lt", delays[LEFT]), JoinInput.of("rt", delays[RIGHT])
    b = left.interval_join(right).where("k").equal_to("key").between(lower, upper).side_output_late_data()
    b = b.lower_bound_exclusive() if lower_exclusive else b
    b = b.upper_bound_exclusive() if upper_exclusive else b
    return b.project(left={"id": "l"}, right={"id": "r"})


@st.composite
def bounds(draw):
    lower = draw(st.integers(-10, 10))
    upper = draw(st.integers(lower, lower + 12))
    lower_exclusive, upper_exclusive = draw(st.booleans()), draw(st.booleans())
    if lower_exclusive + upper_exclusive > upper - lower:
        lower_exclusive = upper_exclusive = False   # an empty interval is refused
    return lower, upper, lower_exclusive, upper_exclusive


@SETTINGS
@given(stream=streams(ordered=False), bound=bounds())
def test_interval_join_emits_every_pair_of_the_rows_not_late_once(stream, bound):
    rows, delays, cuts = stream
    spec = _interval_join(delays, *bound)
    operator = IntervalJoinOperator(spec)
    results = []
    for batch_id, batch in enumerate(_batches(rows, cuts)):
        result = operator.process_batch([r for s, r in batch if s == LEFT], [r for s, r in batch if s == RIGHT],
                                        batch_id)
        assert result.accounted(), result.metrics
        wm = result.watermark_after_ms
        state = operator.state_rows()
        assert all(not spec.left_expired(ts, wm) for _, ts in state[LEFT]), (wm, state)
        assert all(not spec.right_expired(ts, wm) for _, ts in state[RIGHT]), (wm, state)
        assert all(pair.timestamp_ms > result.watermark_before_ms for pair in result.pairs)
        results.append(result)
    results.append(operator.flush(len(results)))
    assert operator.state_rows() == {LEFT: [], RIGHT: []}
    late_ids = {late.row["id"] for result in results for late in result.late}
    kept = [(s, r) for s, r in rows if r["id"] not in late_ids]
    lefts = [r for s, r in kept if s == LEFT]
    rights = [r for s, r in kept if s == RIGHT]
    lower, upper, lower_exclusive, upper_exclusive = bound
    expected = Counter((l["id"], r["id"]) for l in lefts for r in rights if l["k"] == r["key"]
                       and (lower < r["rt"] - l["lt"] if lower_exclusive else lower <= r["rt"] - l["lt"])
                       and (r["rt"] - l["lt"] < upper if upper_exclusive else r["rt"] - l["lt"] <= upper))
    emitted = Counter((pair.values["l"], pair.values["r"]) for result in results for pair in result.pairs)
    assert emitted == expected


@SETTINGS
@given(stream=streams(ordered=True), bound=bounds())
def test_interval_join_without_late_rows_does_not_depend_on_cuts(stream, bound):
    """Also when the whole input is one batch that ends it (a backfill's one pass)."""
    rows, delays, cuts = stream
    spec = _interval_join(delays, *bound)
    cut = _run(IntervalJoinOperator(spec), rows, cuts)
    whole = _run(IntervalJoinOperator(spec), rows, [len(rows)], last_ends_input=True)
    assert not any(result.late for result in cut + whole)

    def pairs(results):
        return Counter((p.key, p.values["l"], p.values["r"], p.timestamp_ms) for r in results for p in r.pairs)
    assert pairs(cut) == pairs(whole)


def _split_by_key_panes(spec, rows, cuts):
    """The window join as the per-key path would run it: the intake batch-wide, the window part per key."""
    intake = JoinIntake.for_spec(spec)
    states, panes = {}, []
    batches = [(batch, False) for batch in _batches(rows, cuts)] + [([], True)]
    for batch_id, (batch, flush) in enumerate(batches):
        wm_start = intake.watermark_ms
        result = JoinBatchResult(batch_id, wm_start, wm_start)
        elements = intake.arrive({LEFT: [r for s, r in batch if s == LEFT], RIGHT: [r for s, r in batch if s == RIGHT]},
                                 result, None)
        wm_end = intake.advance(elements, flush)
        clock = KeyBatchClock(batch_id, wm_start, wm_end, MIN_TIMESTAMP_MS, None,
                              MAX_TIMESTAMP_MS if flush else MIN_TIMESTAMP_MS, flush)
        for key in sorted(set(states) | {e.key for e in elements}):
            key_rows = [tagged(e.side, e.key, e.timestamp_ms, e.row, e.arrival) for e in elements if e.key == key]
            fired, state = run_key_batch(spec.window, (key,), states.get(key), key_rows, clock)
            states[key] = state
            panes += [(batch_id, join_pane(spec, pane)) for pane in fired.panes]
            if state is None:
                del states[key]
    return panes


def _pane_row(batch_id, p):
    return (batch_id, p.key, p.window_start_ms, p.window_end_ms, p.pane_index, p.timing, p.is_final, p.supersedes,
            tuple(sorted(((row["l"], row["r"]) for row in p.rows), key=repr)))


@settings(max_examples=60, deadline=None)
@given(stream=streams(ordered=False), assigner_name=st.sampled_from(sorted(ASSIGNERS)),
       how=st.sampled_from(["inner", "left", "full"]), early=st.booleans(), lateness=st.sampled_from([0, 6]))
def test_window_join_split_by_key_gives_the_same_panes(stream, assigner_name, how, early, lateness):
    rows, delays, cuts = stream
    left, right = JoinInput.of("lt", delays[LEFT]), JoinInput.of("rt", delays[RIGHT])
    builder = left.join(right, how).where("k").equal_to("key").window(ASSIGNERS[assigner_name])
    if early:
        builder = builder.trigger(EventTimeTrigger().with_early_firings(every_n_elements=2))
    spec = builder.allowed_lateness(lateness).side_output_late_data().project(left={"id": "l"}, right={"id": "r"})
    whole = _run(WindowJoinOperator(spec), rows, cuts)
    expected = Counter(_pane_row(result.batch_id, p) for result in whole for p in result.panes)
    assert Counter(_pane_row(b, p) for b, p in _split_by_key_panes(spec, rows, cuts)) == expected
