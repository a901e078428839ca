"""Join specs: the builders give frozen, validated specs; bad values fail early, named (pure Python)."""
from __future__ import annotations

import pickle
import re
from dataclasses import dataclass

import pytest

from windowing import (
    CountTrigger, DeltaTrigger, EventTimeSessionWindows, GlobalWindows, PurgingTrigger, TimeEvictor,
    TumblingEventTimeWindows, TumblingProcessingTimeWindows)
from windowing.core.joins import (
    ANTI, FULL_OUTER, INNER, LEFT, LEFT_OUTER, RIGHT, RIGHT_OUTER, SEMI, IntervalJoinOperator, IntervalJoinSpec,
    JoinInput, WindowJoinOperator, WindowJoinSpec)
from windowing.core.joins.kinds import join_kind

CLICKS = JoinInput.of("click_time", "5 seconds")
ORDERS = JoinInput.of("order_time", "10 seconds")


def joined(how="inner"):
    return CLICKS.join(ORDERS, how).where("user").equal_to("buyer")


@dataclass(frozen=True)
class Concat:
    def join(self, left, right):
        return {"pair": f"{left and left['id']}+{right and right['id']}"}


@dataclass(frozen=True)
class Sizes:
    def co_group(self, key, window, lefts, rights):
        return [{"n": len(lefts) + len(rights)}]


@dataclass(frozen=True)
class WrongColumns:
    def join(self, left, right):
        return {"other": 1}


def test_a_window_join_spec_holds_what_was_built():
    spec = (joined("left").window(TumblingEventTimeWindows.of("1 minute")).allowed_lateness("30 s")
            .side_output_late_data().watermark_idleness("1 min").discarding()
            .project(left=("user", "page"), right={"order_id": "order"}))
    assert isinstance(spec, WindowJoinSpec)
    assert (spec.left, spec.right) == (JoinInput("click_time", 5000), JoinInput("order_time", 10_000))
    assert (spec.left_key, spec.right_key) == (("user",), ("buyer",))
    assert spec.function.kind is LEFT_OUTER
    assert spec.output_columns == ("user", "page", "order")
    assert spec.allowed_lateness_ms == 30_000 and spec.late_output and spec.idle_timeout_ms == 60_000
    assert isinstance(spec.window.trigger, PurgingTrigger)   # discarding
    assert pickle.loads(pickle.dumps(spec)) == spec           # executors ship and persist specs


def test_an_interval_join_spec_holds_its_bounds():
    spec = (CLICKS.interval_join(ORDERS).where("user").equal_to("buyer").between("-2 s", "1 min")
            .upper_bound_exclusive().apply(Concat(), "pair string"))
    assert isinstance(spec, IntervalJoinSpec)
    assert (spec.lower_bound_ms, spec.upper_bound_ms) == (-2000, 59_999)
    assert spec.matches(10_000, 8000) and not spec.matches(10_000, 70_000) and spec.matches(10_000, 69_999)
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_join_kinds_by_name():
    assert [join_kind(n) for n in ("inner", "LEFT", "right", "full", "semi", "anti")] == \
        [INNER, LEFT_OUTER, RIGHT_OUTER, FULL_OUTER, SEMI, ANTI]
    assert LEFT.other == RIGHT and RIGHT.other == LEFT
    assert pickle.loads(pickle.dumps(LEFT)) == LEFT


@pytest.mark.parametrize("make, message", [
    (lambda: JoinInput.of("t", -1), "max_out_of_orderness must be >= 0 ms, got -1"),
    (lambda: JoinInput.of("", 0), "event_time column must be a column name, got ''"),
    (lambda: CLICKS.join(ORDERS, "outer"), "how='outer' is not a join kind; use one of"),
    (lambda: CLICKS.join(ORDERS).equal_to("b"), "call where(left columns) before equal_to"),
    (lambda: CLICKS.join(ORDERS).where("a").window(GlobalWindows()), "call where(left columns).equal_to"),
    (lambda: CLICKS.join(ORDERS).where("a", "b").equal_to("c").window(GlobalWindows()).project(left=("a",)),
     "where('a', 'b') and equal_to('c',) must name as many columns each"),
    (lambda: joined().trigger(CountTrigger(2)), "call window(assigner) before trigger"),
    (lambda: joined().window(TumblingProcessingTimeWindows.of(10)).project(left=("a",)),
     "is a processing-time assigner"),
    (lambda: joined().window(EventTimeSessionWindows.with_dynamic_gap("gap_ms")).project(left=("a",)),
     "reads the row column(s) ['gap_ms']"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).trigger(DeltaTrigger(1, value_column="v"))
     .project(left=("a",)), "reads the row column(s) ['v']"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).project(left=("id",), right=("id",)),
     "project() output names repeat: ['id']"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).project(), "needs at least one column"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).project(left="id"), "takes tuples of column names"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).project(left={"id": "pane_index"}),
     "output column 'pane_index' clashes"),
    (lambda: joined("semi").window(TumblingEventTimeWindows.of(10)).project(left=("a",), right=("b",)),
     "a semi join emits left rows only; project() right columns ['b']"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).apply(lambda l, r: {}, "a int"),
     "must define join(left, right)"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).apply(Concat(), ""), "output_schema must be a DDL"),
    (lambda: CLICKS.co_group(ORDERS).where("a").equal_to("b").window(GlobalWindows()).apply(Concat(), "x int"),
     "must define co_group(key, window, lefts, rights)"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).trigger(PurgingTrigger(CountTrigger(2)))
     .accumulating().project(left=("a",)), "accumulating() conflicts with trigger"),
    (lambda: joined().window(TumblingEventTimeWindows.of(10)).allowed_lateness(-5).project(left=("a",)),
     "allowed_lateness must be >= 0 ms, got -5"),
    (lambda: CLICKS.interval_join(ORDERS).where("a").equal_to("b").between(5, 1).project(left=("a",)),
     "between(5, 1): the lower bound must be at or below the upper bound"),
    (lambda: CLICKS.interval_join(ORDERS).where("a").equal_to("b").between(3, 3).lower_bound_exclusive()
     .project(left=("a",)), "between(3, 3) with an exclusive lower and an inclusive upper bound admits no"),
    (lambda: CLICKS.interval_join(ORDERS).where("a").equal_to("b").project(left=("a",)),
     "call between(lower, upper) before"),
    (lambda: CLICKS.interval_join(ORDERS).where("a").equal_to("b").between(0, 1).watermark_idleness(0)
     .project(left=("a",)), "watermark idleness must be a positive number of ms, got 0"),
])
def test_invalid_join_specs_name_the_bad_value(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_a_join_function_must_emit_its_output_columns():
    spec = joined().window(TumblingEventTimeWindows.of(10)).apply(WrongColumns(), "pair string")
    operator = WindowJoinOperator(spec)
    operator.process_batch([{"user": "u", "click_time": 1, "id": "c"}], [{"buyer": "u", "order_time": 2, "id": "o"}])
    with pytest.raises(ValueError, match=re.escape("emitted {'other': 1}; its columns must be exactly the output "
                                                   "columns ['pair']")):
        operator.flush(1)


def test_apply_and_co_group_functions_run():
    rows_left = [{"user": "u", "click_time": 1, "id": "c1"}, {"user": "v", "click_time": 2, "id": "c2"}]
    rows_right = [{"buyer": "u", "order_time": 3, "id": "o1"}]
    full = WindowJoinOperator(joined("full").window(TumblingEventTimeWindows.of(10)).apply(Concat(), "pair string"))
    full.process_batch(rows_left, rows_right)
    assert sorted(full.flush(1).rows, key=repr) == [{"pair": "c1+o1"}, {"pair": "c2+None"}]
    grouped = WindowJoinOperator(CLICKS.co_group(ORDERS).where("user").equal_to("buyer")
                                 .window(TumblingEventTimeWindows.of(10)).evictor(TimeEvictor.of(2)).apply(Sizes(), "n int"))
    grouped.process_batch(rows_left, rows_right)
    # The evictor keeps the elements within 2 ms of the window's newest (of either side): u keeps o1@3 only.
    assert sorted(grouped.flush(1).rows, key=repr) == [{"n": 1}, {"n": 1}]
    interval = IntervalJoinOperator(CLICKS.interval_join(ORDERS).where("user").equal_to("buyer").between(0, 5)
                                    .apply(Concat(), "pair string"))
    assert interval.process_batch(rows_left, rows_right).rows == [{"pair": "c1+o1"}]


def test_fingerprints_are_stable_and_tell_specs_apart():
    def window_join(lateness):
        return (joined().window(TumblingEventTimeWindows.of(10)).allowed_lateness(lateness)
                .apply(Concat(), "pair string"))

    def interval(exclusive):
        built = CLICKS.interval_join(ORDERS).where("user").equal_to("buyer").between(-5, 5)
        return (built.upper_bound_exclusive() if exclusive else built).project(left=("a",))

    assert window_join(0).fingerprint() == window_join(0).fingerprint()
    assert window_join(0).fingerprint() != window_join(1).fingerprint()
    assert interval(False).fingerprint() == interval(False).fingerprint()
    assert interval(False).fingerprint() != interval(True).fingerprint()
    assert re.fullmatch(r"[0-9a-f]{16}", window_join(0).fingerprint())
