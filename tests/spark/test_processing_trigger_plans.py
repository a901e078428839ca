"""The built-in triggers on processing-time windows as DataFrame plans (CountTrigger,
ContinuousProcessingTimeTrigger, DeltaTrigger, the event-time triggers: plain, early/late, continuous)
(windowing/spark/plans/processing_time_trigger_plan.py; transcripts in transcripts/processing_triggers.py).

The transcripts run on Spark in ``test_transcripts.py`` (step by step, and the batching-invariant
ones cut into 1 and 2); here: which path they take, the salted fingerprint, and random streams
against the reference model.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_adapter import SparkExecutor, assert_plan_refuses_per_key_state
from transcripts import TRANSCRIPTS
from transcripts.processing_triggers import PROCESSING_TRIGGER_TRANSCRIPTS
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import (ProcessingTimeSessionWindows, SlidingProcessingTimeWindows,
                                      TumblingProcessingTimeWindows)
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger,
                                     DeltaTrigger, EarlyLateEventTimeTrigger, EventTimeTrigger, PurgingTrigger)

BY_NAME = {t.name: t for t in TRANSCRIPTS}


# ------------------------------------------------------------------ no Spark session


def test_processing_trigger_transcripts_take_their_dataframe_plan():
    from windowing.spark.operator.dispatch import execution_path
    for name, kind in PROCESSING_TRIGGER_TRANSCRIPTS.items():
        assert execution_path(BY_NAME[name].spec) == f"dataframe plan {kind}", name


def test_a_user_subclass_of_the_count_trigger_stays_per_key():
    from windowing.spark.operator.dispatch import execution_path

    class MyCount(CountTrigger):
        pass

    s = (WindowSpecBuilder().key_by("k").window(TumblingProcessingTimeWindows.of(10)).trigger(MyCount(2))
         .aggregate(n=Count()))
    path = execution_path(s)
    assert path.startswith("per-key model (no DataFrame plan for trigger "), path
    assert "MyCount(count=2) on processing-time windows" in path, path


def test_processing_trigger_plans_salt_the_fingerprint():
    from windowing.spark.plans.registry import PLANS, TriggerRule, WindowFamily, plan_for
    s = BY_NAME["count_trigger_on_processing_time_tumbling_windows"].spec
    fingerprint = plan_for(s).definition.fingerprint(s)   # what the operator records
    assert fingerprint != s.fingerprint()
    # not the layout of the same rule set on event-time windows or sessions either
    for family in (WindowFamily.TIME, WindowFamily.SESSION):
        other = PLANS.get((family, TriggerRule.EARLY_LATE))
        assert fingerprint != other.fingerprint(s)


def test_the_delta_trigger_cannot_merge_so_sessions_refuse_it():
    """No plan needed: the spec refuses a DeltaTrigger on processing-time sessions (it cannot merge)."""
    with pytest.raises(ValueError, match="cannot merge"):
        (WindowSpecBuilder().key_by("k").window(ProcessingTimeSessionWindows.with_gap(5))
         .trigger(DeltaTrigger(1, value_column="v")).aggregate(n=Count()))


# ------------------------------------------------------------------------- Spark

def _norm(result):
    panes = sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted(p.values.items())), p.pane_index,
                    p.timing, bool(p.is_final), p.watermark_ms, tuple(sorted(map(tuple, p.supersedes))))
                   for p in result.panes)
    late = sorted((tuple(x.key), x.timestamp_ms, x.reason, x.watermark_ms) for x in result.late)
    m = result.metrics
    return panes, late, (m.accepted_rows, m.late_rows, m.unassigned_rows, m.windows_cleaned)


# event times move the watermark (the EventTimeTrigger's clock; the other triggers must ignore it)
_row = st.fixed_dictionaries({"k": st.sampled_from(["a", "b"]), "ts": st.integers(0, 80), "v": st.integers(-9, 9),
                              "ingest": st.integers(0, 60), "g": st.integers(1, 15)})
_batch = st.tuples(st.lists(_row, max_size=4), st.integers(0, 70))


@pytest.mark.spark
@given(window=st.sampled_from(["tumbling", "sliding", "sliding_gaps"]),
       trigger=st.sampled_from(["count", "continuous", "delta", "event_time", "early_late", "early_timer",
                                "continuous_event_time"]), purge=st.booleans(),
       by_ingestion=st.booleans(),
       batches=st.lists(_batch, min_size=1, max_size=3))
def test_random_streams_processing_trigger_plan_matches_model(spark, window, trigger, purge, by_ingestion,
                                                               batches):
    """Random rows and clocks (replayed ingestion times older than the clock included): every batch's
    panes (all pane info), late rows (reason, clock) and row/window accounting agree with the model."""
    assigner = {"tumbling": TumblingProcessingTimeWindows.of(20), "sliding": SlidingProcessingTimeWindows.of(20, 10),
                "sliding_gaps": SlidingProcessingTimeWindows.of(10, 15)}[window]
    t = {"count": CountTrigger(2), "continuous": ContinuousProcessingTimeTrigger(7),
         "delta": DeltaTrigger(3, value_column="v"), "event_time": EventTimeTrigger(),
         # early timers that may lie after max_ts (interval 7 on windows of 10 and 20), counts both ways
         "early_late": EarlyLateEventTimeTrigger(early_every_n=2, early_interval_ms=7, late_every_n=2),
         "early_timer": EarlyLateEventTimeTrigger(early_interval_ms=4),
         "continuous_event_time": ContinuousEventTimeTrigger(6)}[trigger]
    b = WindowSpecBuilder().key_by("k").event_time("ts")
    if by_ingestion:
        b = b.processing_time("ingest")
    s = (b.window(assigner).trigger(PurgingTrigger(t) if purge else t).side_output_late_data(True)
         .aggregate(s=Sum("v"), n=Count()))
    _check_against_model(spark, s, batches)


def _check_against_model(spark, s, batches) -> None:
    model = ReferenceOperator(s)
    spark_run = SparkExecutor(spark, s, "`k` string, `ts` bigint, `v` bigint, `ingest` bigint, `g` bigint")
    assert type(spark_run.operator).__name__ == "SparkWindowOperator"
    clock = 0
    for i, (rows, advance) in enumerate(batches):
        clock += advance   # a batch's processing time never moves back
        assert (_norm(spark_run.process_batch(rows, i, processing_time_ms=clock))
                == _norm(model.process_batch(rows, i, processing_time_ms=clock))), (i, rows, clock)
    assert _norm(spark_run.flush(len(batches))) == _norm(model.flush(len(batches)))
    assert not spark_run.time_windows_left()


@pytest.mark.spark
@given(gap=st.sampled_from(["static", "column"]),
       trigger=st.sampled_from(["count", "continuous", "event_time", "early_late", "continuous_event_time"]),
       purge=st.booleans(), by_ingestion=st.booleans(), batches=st.lists(_batch, min_size=1, max_size=3))
def test_random_streams_processing_session_trigger_plan_matches_model(spark, gap, trigger, purge, by_ingestion,
                                                                       batches):
    """Processing-time sessions (merging across batches, sessions the clock closes before a row that
    touches them, replayed rows whose sessions closed): every batch agrees with the model."""
    assigner = ProcessingTimeSessionWindows.with_gap(8) if gap == "static" \
        else ProcessingTimeSessionWindows.with_dynamic_gap("g")
    t = {"count": CountTrigger(2), "continuous": ContinuousProcessingTimeTrigger(7), "event_time": EventTimeTrigger(),
         "early_late": EarlyLateEventTimeTrigger(early_every_n=2, early_interval_ms=7, late_every_n=2),
         "continuous_event_time": ContinuousEventTimeTrigger(6)}[trigger]
    b = WindowSpecBuilder().key_by("k").event_time("ts")
    if by_ingestion:
        b = b.processing_time("ingest")
    s = (b.window(assigner).trigger(PurgingTrigger(t) if purge else t).side_output_late_data(True)
         .aggregate(s=Sum("v"), n=Count()))
    _check_against_model(spark, s, batches)


@pytest.mark.spark
@pytest.mark.parametrize("name", ["count_trigger_on_processing_time_tumbling_windows",
                                  "count_trigger_on_processing_time_sessions"])
def test_per_key_state_is_refused_by_the_plan(spark, name):
    """These specs ran per key before they had a plan: state the per-key path wrote has another
    layout, so the plan refuses it (the salted fingerprint) and names the way out."""
    assert_plan_refuses_per_key_state(spark, BY_NAME[name].spec, processing_time_ms=3)


@pytest.mark.spark
def test_sessions_on_delta_with_a_crash_and_replay(spark, tmp_path):
    """Discarding continuous firings on processing-time sessions on real Delta tables: a crash before
    progress and a new operator replaying the batch give the model's panes exactly once (the clock,
    the pending timers and the merged sessions come back from Delta)."""
    from spark_adapter import model_pane_rows, pane_rows, run_with_a_crash_and_replay
    s = BY_NAME["purging_continuous_trigger_on_processing_time_sessions_with_a_gap_column"].spec
    batches = [([("a", 0, 1, 10), ("b", 0, 2, 4)], 1),
               ([("a", 0, 4, 3), ("b", 0, 8, 6)], 7),     # before the rows: a's timer (5) fires, b's [1,5) closes
               ([("a", 0, 16, 5)], 20),                   # a closes before its row, which opens [20,25)
               ([("a", 0, 32, 10), ("b", 0, 64, 2)], 23)]
    op, expected = run_with_a_crash_and_replay(spark, s, batches, "k string, ts bigint, v bigint, g bigint",
                                               str(tmp_path / "state"), crash_batch=2, operator_id="ptsessions")
    want = model_pane_rows(expected, ("s", "n"))
    assert pane_rows(spark, op, ("s", "n")) == want
    assert {p[4] for p in want} >= {"EARLY", "ON_TIME"} and len(want) >= 4
    assert spark.read.format("delta").load(op.store.windows_path).count() == 0
