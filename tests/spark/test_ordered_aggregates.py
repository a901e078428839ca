"""First, Last and Collect: their accumulators, job files, Sum overflow, and the transcripts on Delta state.

The transcripts are in ``transcripts/ordered_aggregates.py``; ``test_transcripts.py`` runs each
on the model, on Spark step by step (in-memory state), re-cut into batches of 1, 2 and all when
it is batching-invariant, and three on the per-key path; here each runs on Delta state with
Collect as an array column of the results table.
"""
from __future__ import annotations

import pytest

from spark_adapter import infer_schema
from transcripts.ordered_aggregates import ORDERED_TRANSCRIPTS, OVERFLOW_TRANSCRIPTS
from windowing.core.aggregates import Collect, First, Last

ALL = ORDERED_TRANSCRIPTS + OVERFLOW_TRANSCRIPTS


def _params(transcripts):
    return [pytest.param(t, id=t.name) for t in transcripts]


def _schema(transcript) -> str:
    return infer_schema(transcript.spec, transcript.rows + [dict(k="a", ts=0, v=0, id="typing")])


def test_model_accumulators_merge_in_either_order():
    """A merge (sessions) places elements by (event time, sequence), whichever accumulator comes first."""
    row = lambda v: {"id": v}  # noqa: E731
    a = b = None
    for agg in (First("id"), Last("id")):
        a = agg.add_element(5, 0, row("x"), agg.add_element(1, 1, row("y"), None))
        b = agg.add_element(3, 2, row("z"), None)
        assert agg.get_result(agg.merge(a, b)) == agg.get_result(agg.merge(b, a))
    c = Collect("id")
    a = c.add_element(5, 0, row("x"), c.add_element(1, 1, row("y"), c.create_accumulator()))
    b = c.add_element(3, 2, row("z"), c.add_element(1, 3, row(None), c.create_accumulator()))
    assert c.get_result(c.merge(a, b)) == c.get_result(c.merge(b, a)) == ["y", "z", "x"]


@pytest.mark.parametrize("aggregate", [First, Last, Collect])
def test_column_name_is_required(aggregate):
    with pytest.raises(ValueError, match="needs a column name"):
        aggregate("")


# ------------------------------------------------------------------ Spark

def _delta_panes(spark, results_path: str, spec) -> dict:
    """batch id -> sorted (key, start, end, pane index, timing, is_final, values) of the results table."""
    out: dict = {}
    names = [n for n, _ in spec.aggregates]
    for row in spark.read.format("delta").load(results_path).collect():
        values = tuple((n, list(row[n]) if isinstance(row[n], list) else row[n]) for n in names)
        out.setdefault(row["batch_id"], []).append(
            (tuple(row[k] for k in spec.key_columns), row["window_start_ms"], row["window_end_ms"],
             row["pane_index"], row["timing"], row["is_final"], values))
    return {b: sorted(panes, key=repr) for b, panes in out.items()}


def _expected(step_panes, spec) -> list:
    names = [n for n, _ in spec.aggregates]
    return sorted(((p.key, p.window_start_ms, p.window_end_ms, p.pane_index, p.timing, p.is_final,
                    tuple((n, p.values[n]) for n in names)) for p in step_panes), key=repr)


@pytest.mark.spark
@pytest.mark.parametrize("transcript", _params(ALL))
def test_on_delta_state_step_by_step(spark, tmp_path, transcript):
    """Every step is a batch on Delta state (state read back from the tables), Collect as an array column."""
    from pyspark.sql.types import DataType
    from windowing.spark.operator.dispatch import operator_on_delta
    from windowing.spark.runtime.local_frames import local_frame
    schema = _schema(transcript)
    struct = DataType.fromDDL(schema)
    columns = [f.name for f in struct.fields]
    results = str(tmp_path / "results")
    op = operator_on_delta(spark, transcript.spec, "ordered", str(tmp_path / "state"), results_path=results)
    for b, st in enumerate(transcript.steps):
        if st.flush:
            op.flush(b)
        else:
            op.process_batch(local_frame(spark, [tuple(r.get(c) for c in columns) for r in st.rows], struct), b)
    got = _delta_panes(spark, results, transcript.spec)
    for b, st in enumerate(transcript.steps):
        assert got.get(b, []) == _expected(st.panes, transcript.spec), (transcript.name, b)


def test_job_files_name_the_ordered_aggregates():
    from pipelines.job import parse_aggregate
    assert parse_aggregate("a", "first(event_id)") == First("event_id")
    assert parse_aggregate("b", " last( event_id ) ") == Last("event_id")
    assert parse_aggregate("c", "collect(event_id)") == Collect("event_id")
    with pytest.raises(ValueError, match="collect"):
        parse_aggregate("d", "collect_set(event_id)")


def test_model_sum_overflow_is_null_and_stays_null():
    from windowing.core.aggregates import Sum
    s = Sum("v")
    acc = s.add({"v": 2 ** 63 - 1}, None)
    assert s.get_result(acc) == 2 ** 63 - 1
    acc = s.add({"v": 5}, acc)
    assert s.get_result(acc) is None
    assert s.get_result(s.add({"v": -(2 ** 63 - 1)}, acc)) is None     # a later value does not bring it back
    assert s.get_result(s.merge(s.add({"v": -3}, None), s.add({"v": 4}, None))) == 1
    assert s.get_result(s.add({"v": 0.5}, s.add({"v": -1.5}, None))) == -1.0   # doubles never overflow


@pytest.mark.spark
def test_sliding_windows_closed_in_one_pass_apply_the_overflow_rule(spark):
    """Running differences (the one-pass sliding path) and slice explosion agree with the model."""
    from pyspark.sql import functions as F
    from transcripts.build import sliding, spec
    from windowing.spark.plans.aggregates import compile_aggregates
    from windowing.spark.input.columns import SEQ, TS, WS
    from windowing.spark.plans.slicing import (
        SLICE, exploded_window_partials, invertible, running_window_partials, slice_partials, slice_start)
    big = 2 ** 63 - 1
    window_spec = spec(sliding(10, 5))
    assigner, compiled = window_spec.assigner, compile_aggregates(window_spec)
    elements = (spark.createDataFrame([("a", 1, big), ("a", 7, 5), ("a", 3, -1)], "k string, ts long, v long")
                .withColumn(TS, F.col("ts")).withColumn(SEQ, F.monotonically_increasing_id())
                .withColumn(SLICE, slice_start(assigner, F.col("ts"))))
    assert invertible(compiled, elements.schema)
    want = {-5: (big - 1, 2), 0: (None, 3), 5: (5, 1)}   # [0,10): positives big + 5 leave int64
    for partials in (running_window_partials(assigner, compiled, ["k"], elements),
                     exploded_window_partials(assigner, compiled, ["k"], slice_partials(compiled, ["k"], elements))):
        got = {r[WS]: (r["s"], r["n"]) for r in partials.select(WS, *[a.result() for a in compiled]).collect()}
        assert got == want
