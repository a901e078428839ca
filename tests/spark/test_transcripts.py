"""Every transcript on every executor it names, with every cut it names: one test, transcript x executor x cut.

The parameters come from the catalogue (``transcripts.TRANSCRIPTS``): each transcript says which
executors run it and which cuts apply (``transcripts/types.py``). An id reads
``<executor>-<cut>-<transcript>``, e.g. ``spark-cut2-keys_are_independent``; select an executor
with ``-k "reference-"`` or ``-m "not spark"`` (the model runs are pure Python and fast).

CI time: every transcript with a DataFrame plan runs on Spark step by step; of the per-key ones,
a set that covers each feature's Spark-side code declares Spark, the others are collected and
skipped unless ``WINDOWING_ALL_SPARK_TRANSCRIPTS=1`` (which also cuts the batching-invariant
ones into 1, 2 and all on Spark): the per-key path runs the very model that passes all of them,
and the ``model_per_key`` runs check, without Spark, that splitting a batch by key changes nothing.
Delta runs (a few Spark jobs and commits per batch) cover one transcript per plan kind
(``test_delta_streams.py`` checks that every kind has one) and a few cuts; a cut a transcript
declares on both runs on Delta only (:func:`on_delta_instead`). A re-cut whose batches are the
steps' own is folded into the steps run (``runner.distinct_cuts``): the id then names both, e.g.
``spark-steps+cutn-reduce_function``.
"""
from __future__ import annotations

import itertools
import os

import pytest

from suite_machine import lane_group
from transcripts import BY_NAME, TRANSCRIPTS
from transcripts.runner import distinct_cuts, folded_recuts, run_cut
from transcripts.split_by_key import SplitByKey
from transcripts.types import RECUTS, Cut, Executor, ExpectedPane, Transcript
from windowing.core.reference import ReferenceOperator

ALL_ON_SPARK = os.environ.get("WINDOWING_ALL_SPARK_TRANSCRIPTS") == "1"
DELTA_GROUP = "transcripts_delta"
"""Delta runs stay in one test process, as the other Delta state tests of the transcripts; on a large
machine they are dealt over a few lanes (suite_machine.lane_group)."""


def runs(transcript: Transcript) -> dict[Executor, Cut]:
    """What the transcript declares; with WINDOWING_ALL_SPARK_TRANSCRIPTS=1 every transcript also
    runs on Spark step by step, and a batching-invariant one without Spark cuts is cut into 1, 2 and all."""
    out = dict(transcript.runs)
    if ALL_ON_SPARK:
        spark = out.get(Executor.SPARK, Cut.NONE) | Cut.STEPS
        if transcript.batching_invariant and not spark & RECUTS:
            spark |= Cut.ONE | Cut.TWO | Cut.ALL
        out[Executor.SPARK] = spark
    return out


def _with_steps_run(transcript: Transcript, cuts: Cut) -> Cut:
    """``cuts`` with ``Cut.STEPS`` when one of its re-cuts feeds the steps' batches (it is folded into
    the steps run: ``runner.distinct_cuts``)."""
    return cuts | Cut.STEPS if folded_recuts(transcript, cuts) else cuts


def on_delta_instead(transcript: Transcript) -> Cut:
    """The Spark cuts the transcript also runs on Delta state: there they run the same plan on the
    same batches, with the Delta store's reads and commits besides, so the in-memory store's run of
    them would cover nothing more (``WINDOWING_ALL_SPARK_TRANSCRIPTS=1`` runs them anyway).

    A re-cut whose batches are the steps' counts as the steps run on either side, and when the steps
    run on Delta, the Spark re-cuts folded into them go along (the Delta steps run makes their checks)."""
    if ALL_ON_SPARK:
        return Cut.NONE
    declared = runs(transcript)
    spark = _with_steps_run(transcript, declared.get(Executor.SPARK, Cut.NONE))
    both = spark & _with_steps_run(transcript, declared.get(Executor.DELTA, Cut.NONE))
    return both | folded_recuts(transcript, spark) if Cut.STEPS in both else both


def planned_cuts(transcript: Transcript, executor: Executor) -> list[Cut]:
    """The runs of ``executor`` for ``transcript`` (``runner.distinct_cuts`` of what it declares), Spark's
    without those that run on Delta instead, Delta's with them."""
    declared = runs(transcript).get(executor, Cut.NONE)
    if executor is Executor.SPARK:
        declared &= ~on_delta_instead(transcript)
    elif executor is Executor.DELTA:
        declared |= on_delta_instead(transcript)
    return distinct_cuts(transcript, declared)


def _params():
    out = []
    delta_runs = itertools.count()
    for executor in Executor:
        for t in TRANSCRIPTS:
            cuts = planned_cuts(t, executor)
            declared = Cut.NONE
            for cut in cuts:
                declared |= cut
            if executor is Executor.SPARK and Cut.STEPS not in declared | on_delta_instead(t):
                cuts = [Cut.STEPS] + cuts   # collected and skipped: a per-key transcript outside the chosen set
            for cut in cuts:
                marks = [pytest.mark.spark] if executor.needs_spark else []
                if executor is Executor.DELTA:
                    marks.append(pytest.mark.xdist_group(lane_group(DELTA_GROUP, next(delta_runs))))
                if executor is Executor.SPARK and cut not in declared:
                    marks.append(pytest.mark.skip(reason="per-key path, not declared for Spark (set "
                                                         "WINDOWING_ALL_SPARK_TRANSCRIPTS=1 to run it)"))
                if executor is Executor.REFERENCE and t.reference_xfail:
                    marks.append(pytest.mark.xfail(reason=t.reference_xfail, strict=True))
                out.append(pytest.param(t, executor, cut, id=f"{executor.value}-{cut.label}-{t.name}", marks=marks))
    return out


# ------------------------------------------------------------------ executors

_roots = itertools.count()


def _schema(spec, transcript: Transcript) -> str:
    from spark_adapter import infer_schema
    rows = transcript.rows
    # A typing row for columns whose every value is null; a transcript with an ``id`` column types it as a string.
    typing = dict(k="a", ts=0, v=0, id="typing") if any("id" in row for row in rows) else dict(k="a", ts=0, v=0, w=0.5)
    return infer_schema(spec, rows + [typing])


def _spark_time_windows_left(executor) -> list:
    """State rows (tuples: key columns, then window start) of time windows, or the per-key path's windows."""
    from spark_adapter import keyed_time_windows_left
    from windowing.spark.operator.protocol import KeyedModelOperator
    if isinstance(executor.operator, KeyedModelOperator):
        return keyed_time_windows_left(executor.operator)
    start = len(executor.spec.key_columns)
    return [row for row in executor.open_windows() if row[start] is not None]


@pytest.mark.parametrize("transcript, executor, cut", _params())
def test_transcript(request, transcript, executor, cut):
    if executor is Executor.REFERENCE:
        run_cut(transcript, cut, ReferenceOperator)
    elif executor is Executor.MODEL_PER_KEY:
        run_cut(transcript, cut, SplitByKey)
    elif executor is Executor.SPARK:
        from spark_adapter import SparkExecutor
        spark = request.getfixturevalue("spark")
        run_cut(transcript, cut, lambda spec: SparkExecutor(spark, spec, _schema(spec, transcript)),
                time_windows_left=_spark_time_windows_left)
    elif executor is Executor.SPARK_PER_KEY:
        from spark_adapter import KeyedExecutor
        spark = request.getfixturevalue("spark")
        run_cut(transcript, cut, lambda spec: KeyedExecutor(spark, spec, _schema(spec, transcript)),
                time_windows_left=_spark_time_windows_left)
    else:
        from spark_adapter import DeltaExecutor
        spark, tmp_path = request.getfixturevalue("spark"), request.getfixturevalue("tmp_path")
        executors = []

        def on_delta(spec):
            root = str(tmp_path / f"root{next(_roots)}")
            executors.append(DeltaExecutor(spark, spec, _schema(spec, transcript), root))
            return executors[-1]

        run_cut(transcript, cut, on_delta, time_windows_left=DeltaExecutor.time_windows_left)
        if Cut.STEPS in cut:
            from spark_adapter import expected_plan_kind
            kind = expected_plan_kind(transcript.spec)
            assert kind in executors[0].plans_run, (kind, executors[0].plans_run)


# ------------------------------------------------------------------ the catalogue


def test_transcript_names_are_unique_and_enough():
    names = [t.name for t in TRANSCRIPTS]
    assert len(names) == len(set(names)) == len(BY_NAME)
    assert len(TRANSCRIPTS) >= 30


def test_expected_panes_are_well_formed():
    """Guards against typos in the hand-written expectations."""
    for t in TRANSCRIPTS:
        agg_names = {name for name, _ in t.spec.aggregates}
        seen_index: dict = {}
        for st in t.steps:
            for pane in st.panes:
                assert isinstance(pane, ExpectedPane)
                assert set(pane.values) == agg_names, (t.name, pane)
                assert len(pane.key) == len(t.spec.key_columns), (t.name, pane)
                ident = (pane.key, pane.window_start_ms, pane.window_end_ms)
                # A merged session continues from the highest pane index of the windows it absorbed.
                first = max([seen_index.get((pane.key, s, e), 0) for s, e in pane.supersedes], default=0)
                if pane.supersedes or ident not in seen_index:
                    assert pane.pane_index >= first, f"{t.name}: pane index of {ident} below its parts'"
                else:
                    assert pane.pane_index == seen_index[ident], f"{t.name}: pane indices of {ident} skip"
                seen_index[ident] = pane.pane_index + 1
                if t.spec.process_function is not None:
                    assert pane.rows is not None, (t.name, pane)
            for row in st.rows:
                assert set(t.spec.input_columns) <= set(row), (t.name, row)


def test_every_transcript_runs_on_the_reference_model_step_by_step():
    assert all(Cut.STEPS in t.runs[Executor.REFERENCE] for t in TRANSCRIPTS)


def test_recuts_are_declared_only_on_batching_invariant_transcripts():
    for t in TRANSCRIPTS:
        for executor, cuts in t.runs.items():
            assert t.batching_invariant or not cuts & RECUTS, (t.name, executor)
        if t.batching_invariant:
            assert t.steps and t.steps[-1].flush, f"{t.name} must end with a flush"


def test_every_transcript_with_a_dataframe_plan_runs_on_spark():
    """A transcript whose spec has a DataFrame plan declares Spark step by step, and enough per-key
    ones do too to test that path (a feature that gains a plan leaves the per-key path)."""
    pytest.importorskip("pyspark")
    from windowing.spark.operator.dispatch import uses_dataframe_plan
    undeclared = [t.name for t in TRANSCRIPTS if uses_dataframe_plan(t.spec) and Cut.STEPS not in t.spark]
    assert not undeclared, f"transcripts with a DataFrame plan not declared for Spark: {undeclared}"
    per_key = [t.name for t in TRANSCRIPTS if Cut.STEPS in t.spark and not uses_dataframe_plan(t.spec)]
    assert len(per_key) >= 5, per_key
    assert sum(bool(t.spark & RECUTS) for t in TRANSCRIPTS if uses_dataframe_plan(t.spec)) >= 10


def test_dispatch_picks_a_path_for_every_transcript():
    pytest.importorskip("pyspark")
    from windowing.core.aggregates import Count
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.core.spec import WindowSpecBuilder
    from windowing.spark.operator.dispatch import execution_path
    from windowing.spark.plans.registry import plan_for
    paths = {t.name: execution_path(t.spec) for t in TRANSCRIPTS}
    assert paths["tumbling_window_boundaries"] == "dataframe plan time"
    assert paths["user_trigger_state_survives_across_batches"].startswith(
        "per-key model (no DataFrame plan for trigger EveryTwoNegatives")
    assert paths["non_keyed_windows"] == "dataframe plan time"
    # processing-time windows, idleness, several sources and window_all run as DataFrame plans
    for name, kind in [("processing_time_tumbling_with_controlled_clock", "processing_time"),
                       ("processing_time_sliding", "processing_time"),
                       ("processing_time_from_ingestion_column", "processing_time"),
                       ("processing_time_window_in_a_stream", "processing_time"),
                       ("processing_time_window_in_a_backfill_by_ingestion_time", "processing_time"),
                       ("watermark_idleness_advances_by_processing_time", "time"),
                       ("watermark_is_the_minimum_over_sources", "time"),
                       ("idle_source_is_left_out_of_the_minimum", "time"),
                       ("slow_source_holds_the_watermark", "time"),
                       ("non_keyed_count_window", "count"),
                       ("non_keyed_sliding_count_window", "evicting_count"),
                       ("non_keyed_sessions", "session")]:
        assert paths[name] == f"dataframe plan {kind}", (name, paths[name])
    # processing-time sessions run on the session plan with the processing-time clock
    assert paths["processing_time_session"] == "dataframe plan processing_time_session"
    for t in TRANSCRIPTS:
        if paths[t.name].startswith("per-key"):
            with pytest.raises(NotImplementedError, match="no DataFrame plan for"):
                plan_for(t.spec)
    # Output modes are the stores' business: an upsert spec takes the same path as its append twin.
    upsert = (WindowSpecBuilder().key_by("k").event_time("ts").window(TumblingEventTimeWindows.of(10))
              .output_mode("upsert").aggregate(n=Count()))
    assert execution_path(upsert) == "dataframe plan time"
