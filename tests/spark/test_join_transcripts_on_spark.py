"""The join transcripts (tests/transcripts/joins.py) on the Spark join operator, cut into batches several ways.

Each run checks every batch against the reference model on the same batches (tests/join_spark_runner.py):
panes or pairs, late and quarantined rows with their side, the watermark and each side's accounting.
State in memory (the Delta store's protocol is tested in test_join_state_on_delta.py). Cuts:

* ``steps``: one batch per step, as written (a flush is a batch of its own);
* ``sides_apart``: each step's left rows, then its right rows, in two batches;
* ``halves``: each step's rows of both sides cut in two halves.

In the two re-cuts a final flush is folded into the batch before it, which ends the input (as a
backfill's last batch does): rows and the end of input in one batch, against the model's.

Every transcript runs as written and in one other cut (alternating, to keep the suite cheap); two
window joins with a DataFrame plan also run on the per-key path.
"""
from __future__ import annotations

import random

import pytest

from join_spark_runner import FLUSH, Batch, last_ends_input, run_batches, side_schema
from transcripts.joins import JOIN_TRANSCRIPTS, JoinTranscript, by_name, lr, rr, window_join
from windowing.core.assigners import SlidingEventTimeWindows
from windowing.core.joins import IntervalJoinSpec
from windowing.spark.joins.operator import JoinOperator
from windowing.spark.joins.stores import JoinMemoryStore
from windowing.spark.joins.window_plan import WindowJoinFramePlan


def _steps(t: JoinTranscript):
    return [FLUSH if s.flush else Batch(list(s.left), list(s.right), s.pt) for s in t.steps]


def _sides_apart(t: JoinTranscript):
    out = []
    for s in t.steps:
        out += [FLUSH] if s.flush else [Batch(list(s.left), [], s.pt), Batch([], list(s.right), s.pt)]
    return last_ends_input(out)


def _halves(t: JoinTranscript):
    out = []
    for s in t.steps:
        if s.flush:
            out.append(FLUSH)
            continue
        lh, rh = (len(s.left) + 1) // 2, (len(s.right) + 1) // 2
        out += [Batch(list(s.left[:lh]), list(s.right[:rh]), s.pt), Batch(list(s.left[lh:]), list(s.right[rh:]), s.pt)]
    return last_ends_input(out)


CUTS = {"steps": _steps, "sides_apart": _sides_apart, "halves": _halves}


PER_KEY_TOO = ("window_join_sliding", "window_join_full")
"""Window joins with a DataFrame plan that also run on the per-key path (the model per key covers the rest)."""


def _cases():
    # Every transcript as written; every other one cut a second way too (the two cuts in turn):
    # a cut exercises the plan's carrying of state across batches, which any transcript shows.
    for i, t in enumerate(JOIN_TRANSCRIPTS):
        cuts = ("steps",) + ((("sides_apart", "halves")[i // 2 % 2],) if i % 2 == 0 else ())
        for cut in cuts:
            yield pytest.param(t, cut, False, id=f"{cut}-{t.name}")
        if t.name in PER_KEY_TOO:
            yield pytest.param(t, "steps", True, id=f"per_key-steps-{t.name}")


@pytest.mark.parametrize("transcript, cut, per_key", list(_cases()))
def test_join_transcript_on_spark(spark, transcript, cut, per_key):
    rows = [s for s in transcript.steps if not s.flush]
    left_schema = side_schema([r for s in rows for r in s.left] or [{"k": "a", "lt": 0, "id": "x"}])
    right_schema = side_schema([r for s in rows for r in s.right] or [{"key": "a", "rt": 0, "id": "x"}])
    operator = JoinOperator(spark, transcript.spec, JoinMemoryStore(spark), per_key=per_key)
    run_batches(spark, transcript.spec, CUTS[cut](transcript), operator, left_schema, right_schema)
    expected_plan = ("interval" if isinstance(transcript.spec, IntervalJoinSpec)
                     else "keyed" if per_key or not WindowJoinFramePlan.supports(transcript.spec) else "window_frames")
    assert operator.plan.name == expected_plan


@pytest.mark.parametrize("how", ["inner", "full", "anti"])
def test_many_rows_a_window_out_of_order_on_the_frame_plan(spark, how):
    """Several rows of each side per key and sliding window, arriving out of event-time order over four
    batches (some late), the last ending the input: every pane's rows in the model's order (left-major,
    each side by event time then arrival), empty panes, late rows and accounting as the model has them."""
    rng = random.Random(7)
    batches, n = [], 0
    for b in range(4):
        sides = []
        for make, prefix in ((lr, "l"), (rr, "r")):
            rows = []
            for _ in range(rng.randint(4, 9)):
                n += 1   # event times mostly ahead, some behind the watermark (late), ties included
                rows.append(make(rng.randint(max(0, 12 * b - 14), 12 * b + 14), f"{prefix}{n}", rng.choice("abc")))
            sides.append(rows)
        batches.append(Batch(*sides, ends_input=b == 3))
    spec = window_join(SlidingEventTimeWindows.of(10, 5), how=how, delays=(3, 3))
    assert WindowJoinFramePlan.supports(spec)
    operator = JoinOperator(spark, spec, JoinMemoryStore(spark))
    run_batches(spark, spec, batches, operator, side_schema([lr(0, "x")]), side_schema([rr(0, "x")]))
    assert operator.plan.name == "window_frames"


@pytest.mark.parametrize("case", ["inner_projection", "full_projection_with_quarantined_rows", "join_function"])
def test_a_one_pass_batch_takes_its_accounting_from_its_results_write_or_counts_when_rows_miss_the_panes(
        spark, monkeypatch, case):
    """A first batch that ends the input on tumbling windows (a whole backfill in one batch): every valid row
    is in one fired pane, so the operator counts each side's rows from what the results write observed
    instead of a pass over the input before it, for a projection and a join function; with quarantined rows
    the panes miss some input rows, and the intake's count decides. Panes, quarantined rows, watermark and
    accounting as the model's in all three."""
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.spark.joins import operator as operator_module
    rng = random.Random(11)
    sides = []
    for make, prefix in ((lr, "l"), (rr, "r")):
        rows = [make(rng.randint(0, 60), f"{prefix}{i}", rng.choice("abc")) for i in range(rng.randint(15, 25))]
        if case == "full_projection_with_quarantined_rows":
            rows += [make(rng.randint(0, 60), f"{prefix}-null-key", None), make(None, f"{prefix}-null-time")]
        sides.append(rows)
    spec = (by_name("window_join_function_drops_pairs").spec if case == "join_function"
            else window_join(TumblingEventTimeWindows.of(10), how="full" if "full" in case else "inner"))
    counted = []
    original = operator_module.side_counts
    monkeypatch.setattr(operator_module, "side_counts", lambda *args: counted.append(args) or original(*args))
    operator = JoinOperator(spark, spec, JoinMemoryStore(spark))
    run_batches(spark, spec, [Batch(*sides, ends_input=True)], operator,
                side_schema([lr(0, "x")]), side_schema([rr(0, "x")]))
    assert operator.plan.name == "window_frames" and operator.plan.observes_one_pass
    assert len(counted) == (1 if "quarantined" in case else 0)
