"""Reduce functions on the DataFrame plans, against the reference model.

A reduce function must be associative but need not be commutative, so a plan
must fold in exactly the model's order: within a batch the elements of a
window in (event time, arrival sequence) order, across batches the state's
value first, on a session merge the parts in window order, sliding windows'
slices in time order, running folds (early and count firings) group by group.
String concatenation shows any other order in its result. Each scenario runs
as given and cut into batches of 1 and 2; every batch's panes (all pane
info) and late rows must be the model's.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transcripts.build import sliding, spec, tumbling
from windowing.core.aggregates import Count, Reduce
from windowing.core.assigners import EventTimeSessionWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.triggers import CountTrigger, EarlyLateEventTimeTrigger

SCHEMA = "`k` string, `ts` bigint, `w` string"


@dataclass(frozen=True)
class Concat:
    """Associative, not commutative: ``reduce(a, b) = a + b``."""

    def reduce(self, a, b):
        return a + b


@dataclass(frozen=True)
class KeepLater:
    """Flink's common "keep the later value": ``reduce(a, b) = b``."""

    def reduce(self, a, b):
        return b


def _reduce_spec(window, reduce_fn=Concat(), **kwargs):
    return spec(window, r=Reduce(reduce_fn, "w", "string", "r"), n=Count(), **kwargs)


def _row(k, ts, w):
    return {"k": k, "ts": ts, "w": w}


# Out of order inside each batch, a tie in event time (c then d at 3: arrival order decides),
# an element of an earlier time in a later batch (b at 2), a null value (skipped, as the model does).
BATCHES = [
    [_row("a", 5, "e"), _row("a", 1, "a"), _row("a", 3, "c"), _row("b", 2, "B"), _row("a", 3, "d")],
    [_row("a", 8, "h"), _row("a", 2, "b"), _row("a", 12, "m"), _row("b", 11, "N"), _row("b", 4, None)],
    [_row("a", 9, "i"), _row("a", 20, "t"), _row("b", 13, "O")],
]
# Sessions (gap 10): [0,10) and [20,30) open; the next batch's 10 touches both: one session whose
# value is the parts' in window order, then the batch's elements in event-time order (w at 5, y at 10).
SESSION_BATCHES = [
    [_row("a", 20, "z"), _row("a", 0, "x"), _row("b", 3, "P")],
    [_row("a", 10, "y"), _row("a", 5, "w"), _row("b", 1, "Q")],
    [_row("a", 45, "q"), _row("a", 41, "p")],
]


def _norm(result):
    panes = sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted(p.values.items())), p.pane_index,
                    p.timing, bool(p.is_final), p.watermark_ms) for p in result.panes)
    late = sorted((tuple(x.key), x.timestamp_ms) for x in result.late)
    return panes, late


def _cuts(batches, size):
    if size is None:
        return batches
    rows = [row for batch in batches for row in batch]
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def _run_against_model(spark, s, batches, plan_kind: str):
    """Every batch's panes and late rows on the plan are the model's; returns the model's final panes."""
    from spark_adapter import SparkExecutor
    from windowing.spark.operator.dispatch import execution_path
    assert execution_path(s) == f"dataframe plan {plan_kind}"
    model, plan = ReferenceOperator(s), SparkExecutor(spark, s, SCHEMA)
    assert type(plan.operator).__name__ == "SparkWindowOperator"
    finals = {}
    for b, rows in enumerate(batches + [None]):
        want = model.process_batch(rows, b) if rows is not None else model.flush(b)
        got = plan.process_batch(rows, b) if rows is not None else plan.flush(b)
        assert _norm(got) == _norm(want), (b, rows)
        finals.update({(p.key, p.window_start_ms, p.window_end_ms): p.values["r"] for p in want.panes})
    assert not plan.time_windows_left()
    return finals


# ------------------------------------------------------------------ no Spark session


def test_reduce_specs_take_the_dataframe_plans():
    from windowing.spark.operator.dispatch import execution_path
    from windowing.spark.plans.registry import unplanned_features
    cases = [(_reduce_spec(tumbling(10)), "time"), (_reduce_spec(sliding(10, 5)), "time"),
             (_reduce_spec(EventTimeSessionWindows.with_gap(10)), "session"),
             (_reduce_spec(tumbling(10), trigger=EarlyLateEventTimeTrigger(early_every_n=2)), "early_late"),
             (_reduce_spec(tumbling(10), trigger=CountTrigger(2)), "count"),
             (_reduce_spec(None, count=(4, 2)), "evicting_count")]
    for s, kind in cases:
        assert "reduce functions" not in unplanned_features(s)
        assert execution_path(s) == f"dataframe plan {kind}", s


# ------------------------------------------------------------------------- Spark

CUTS = [pytest.param(None, id="as-given"), pytest.param(1, id="cut-1"), pytest.param(2, id="cut-2")]


@pytest.mark.spark
@pytest.mark.parametrize("size", CUTS)
def test_tumbling_concat_across_batches_out_of_order(spark, size):
    finals = _run_against_model(spark, _reduce_spec(tumbling(10), delay=6), _cuts(BATCHES, size), "time")
    if size is None:
        # the state's value first ("acde": batch 0 in event-time order), then each batch's in order
        assert finals[(("a",), 0, 10)] == "acdebhi"
        assert finals[(("b",), 0, 10)] == "B"   # the null adds nothing


@pytest.mark.spark
@pytest.mark.parametrize("size", CUTS)
def test_sliding_concat_folds_slices_in_time_order(spark, size):
    finals = _run_against_model(spark, _reduce_spec(sliding(10, 5), delay=6), _cuts(BATCHES, size), "time")
    if size is None:
        assert finals[(("a",), 0, 10)] == "acdebhi"
        assert finals[(("a",), 5, 15)] == "ehmi"   # e (batch 0), h and m (batch 1), i (batch 2)


@pytest.mark.spark
@pytest.mark.parametrize("size", CUTS)
def test_session_bridge_reduces_the_parts_in_window_order(spark, size):
    s = _reduce_spec(EventTimeSessionWindows.with_gap(10), delay=100)
    finals = _run_against_model(spark, s, _cuts(SESSION_BATCHES, size), "session")
    if size is None:
        # the parts [0,10) "x" and [20,30) "z" in window order, then the batch's w (5) and y (10)
        assert finals[(("a",), 0, 30)] == "xzwy"
        assert finals[(("a",), 41, 55)] == "pq"


@pytest.mark.spark
@pytest.mark.parametrize("size, mode", [pytest.param(None, "accumulating", id="as-given-accumulating"),
                                          pytest.param(1, "discarding", id="cut-1-discarding"),
                                          pytest.param(2, "accumulating", id="cut-2-accumulating")])
def test_early_firings_fold_the_groups_in_order(spark, size, mode):
    s = _reduce_spec(tumbling(10), delay=6, mode=mode, trigger=EarlyLateEventTimeTrigger(early_every_n=2))
    _run_against_model(spark, s, _cuts(BATCHES, size), "early_late")


@pytest.mark.spark
def test_count_trigger_and_keep_the_later_value(spark):
    """CountTrigger's running fold over groups of 2, with Flink's "keep the later value" reduce."""
    s = _reduce_spec(tumbling(10), KeepLater(), delay=6, trigger=CountTrigger(2))
    _run_against_model(spark, s, BATCHES, "count")


@pytest.mark.spark
def test_sliding_count_window_folds_in_buffer_order(spark):
    """count_window(4, 2): a firing folds the last 4 elements in buffer (arrival across batches) order."""
    from spark_adapter import SparkExecutor
    s = _reduce_spec(None, count=(4, 2))
    model, plan = ReferenceOperator(s), SparkExecutor(spark, s, SCHEMA)
    for b, rows in enumerate(BATCHES):
        assert _norm(plan.process_batch(rows, b)) == _norm(model.process_batch(rows, b)), (b, rows)


_letters = st.sampled_from(["a", "b", "c", "d", None])
_rows = st.fixed_dictionaries({"k": st.sampled_from(["a", "b"]), "ts": st.integers(-5, 40), "w": _letters})


@pytest.mark.spark
@given(window=st.sampled_from(["tumbling", "sliding", "session", "early"]), delay=st.sampled_from([0, 8]),
       batches=st.lists(st.lists(_rows, max_size=5), min_size=1, max_size=3))
def test_random_streams_reduce_plans_match_the_model(spark, window, delay, batches):
    """Random rows (ties, nulls, late rows): every batch's panes and late rows agree with the model."""
    assigner = {"tumbling": tumbling(10), "sliding": sliding(10, 5), "early": tumbling(10),
                "session": EventTimeSessionWindows.with_gap(6)}[window]
    trigger = EarlyLateEventTimeTrigger(early_every_n=2) if window == "early" else None
    kind = {"session": "session", "early": "early_late"}.get(window, "time")
    _run_against_model(spark, _reduce_spec(assigner, delay=delay, trigger=trigger), batches, kind)
