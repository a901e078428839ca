"""The trigger plans (windowing/spark/plans/trigger_rules.py): dispatch, fingerprints, job files,
random streams against the reference model, and a run on real Delta.

The transcripts of these triggers run on the plan in ``test_transcripts.py`` (step by step, and
the batching-invariant ones cut into 1, 2 and all); here: dispatch, fingerprints, job files and
random streams with a processing-time clock.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_adapter import SparkExecutor, assert_plan_refuses_per_key_state
from transcripts import TRANSCRIPTS
from transcripts.build import sliding, spec, tumbling
from windowing.core.assigners import GlobalWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.triggers import (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger,
                                     EventTimeTrigger, ProcessingTimeTrigger)

TRIGGER_TRANSCRIPTS = [
    "early_count_and_late_count_firings_use_separate_counters", "early_firings_every_processing_time_interval",
    "continuous_event_time_trigger", "continuous_event_time_trigger_purging",
    "early_late_counters_on_sliding_windows_discarding", "continuous_event_time_boundaries_in_different_batches",
    "processing_time_trigger_on_event_time_windows", "continuous_processing_time_trigger_on_event_time_windows",
    "early_count_and_interval_firings_restart_each_other", "early_count_firings_on_sliding_windows",
    "continuous_event_time_on_sliding_windows",
    # on global windows (transcripts/global_triggers.py, plus the model's processing-time one)
    "continuous_event_time_on_global_window", "continuous_event_time_on_global_window_purging",
    "early_firings_on_global_window", "processing_time_trigger_on_global_window_all",
    "continuous_processing_time_trigger_on_global_window"]
GLOBAL_TRIGGER_TRANSCRIPTS = {
    "continuous_event_time_on_global_window": "continuous_event_time",
    "continuous_event_time_on_global_window_purging": "continuous_event_time",
    "early_firings_on_global_window": "early_late",
    "processing_time_trigger_on_global_window_all": "processing_time_trigger",
    "continuous_processing_time_trigger_on_global_window": "continuous_processing_time"}
BY_NAME = {t.name: t for t in TRANSCRIPTS}


# ------------------------------------------------------------------ no Spark session


def test_trigger_transcripts_take_the_dataframe_plan():
    from windowing.spark.operator.dispatch import execution_path
    paths = {name: execution_path(BY_NAME[name].spec) for name in TRIGGER_TRANSCRIPTS}
    assert all(p.startswith("dataframe plan ") for p in paths.values()), paths
    assert paths["early_count_and_late_count_firings_use_separate_counters"] == "dataframe plan early_late"
    assert paths["continuous_event_time_trigger_purging"] == "dataframe plan continuous_event_time"
    assert paths["processing_time_trigger_on_event_time_windows"] == "dataframe plan processing_time_trigger"
    assert paths["continuous_processing_time_trigger_on_event_time_windows"] == \
        "dataframe plan continuous_processing_time"


def test_timer_triggers_on_global_windows_take_the_dataframe_plan():
    """Keyed and window_all, accumulating and discarding: the trigger plans, not the per-key path."""
    from windowing.core.assigners import GlobalWindows
    from windowing.spark.operator.dispatch import execution_path
    for name, kind in GLOBAL_TRIGGER_TRANSCRIPTS.items():
        assert isinstance(BY_NAME[name].spec.assigner, GlobalWindows), name
        assert execution_path(BY_NAME[name].spec) == f"dataframe plan {kind}", name
    assert not BY_NAME["processing_time_trigger_on_global_window_all"].spec.key_columns


def test_what_stays_on_the_per_key_path_says_why():
    from windowing.spark.operator.dispatch import execution_path
    # a DeltaTrigger with a user delta function: the function, user code, keeps it per key
    assert execution_path(BY_NAME["delta_trigger_with_a_user_delta_function"].spec).startswith(
        "per-key model (no DataFrame plan for trigger DeltaTrigger")
    assert execution_path(BY_NAME["user_trigger_state_survives_across_batches"].spec).startswith(
        "per-key model (no DataFrame plan for trigger EveryTwoNegatives")
    # sessions with early/late firings have a plan (test_session_trigger_plans.py)
    assert execution_path(BY_NAME["session_early_firings_and_late_bridge"].spec) == "dataframe plan session_early_late"


def test_fingerprints_change_only_for_specs_on_trigger_plans():
    from windowing.spark.plans.registry import PLANS, WindowFamily, plan_for
    trigger_plan_kinds = {plan.name for (family, _), plan in PLANS.items()
                          if family in (WindowFamily.TIME, WindowFamily.GLOBAL) and plan.rules is not None}
    assert trigger_plan_kinds == {"early_late", "continuous_event_time", "processing_time_trigger",
                                  "continuous_processing_time", "delta"}
    seen_kinds = set()
    for t in TRANSCRIPTS:
        try:
            plan = plan_for(t.spec)
        except NotImplementedError:
            continue
        kind = plan.kind
        seen_kinds.add(kind)
        fingerprint = plan.definition.fingerprint(t.spec)   # what the operator records
        if kind in trigger_plan_kinds or kind.startswith("session_"):   # session_*: session_trigger_plan
            assert fingerprint != t.spec.fingerprint(), t.name
            assert fingerprint == plan_for(t.spec).definition.fingerprint(t.spec)    # stable
        elif kind in ("time", "count", "evicting_count", "session"):
            assert fingerprint == t.spec.fingerprint(), t.name
    assert trigger_plan_kinds <= seen_kinds and "time" in seen_kinds and "count" in seen_kinds


def test_job_files_reach_the_builtin_triggers():
    from pipelines.job import build_spec
    from windowing.core.triggers import EarlyLateEventTimeTrigger, PurgingTrigger
    source = {"key": "k", "event_time": "ts"}

    def trigger(table, **window):
        return build_spec(source, {"type": "tumbling", "size": "1 minute", "trigger": table, **window},
                          {"n": "count()"}).trigger

    assert trigger({"type": "early_late", "early_every_n": 3, "early_every": "10 seconds", "late_every_n": 2}) == \
        EarlyLateEventTimeTrigger(3, 10_000, 2)
    assert trigger({"type": "early_late", "late_every_n": 1}, mode="discarding") == \
        PurgingTrigger(EarlyLateEventTimeTrigger(None, None, 1))
    assert trigger({"type": "continuous_event_time", "interval": "5 seconds"}) == ContinuousEventTimeTrigger(5000)
    assert trigger({"type": "processing_time"}) == ProcessingTimeTrigger()
    assert trigger({"type": "continuous_processing_time", "interval": 250}) == ContinuousProcessingTimeTrigger(250)
    with pytest.raises(ValueError, match="'early' is not one of"):
        trigger({"type": "early"})
    with pytest.raises(ValueError, match=r"does not take \['every'\]"):
        trigger({"type": "early_late", "every": "1 second"})
    with pytest.raises(ValueError, match="needs interval"):
        trigger({"type": "continuous_event_time"})
    with pytest.raises(ValueError, match="needs early_every_n"):
        trigger({"type": "early_late"})


# ------------------------------------------------------------------------- Spark

TRIGGERS = {
    "early2_late2": EventTimeTrigger().with_early_firings(every_n_elements=2).with_late_firings(every_n_elements=2),
    "early3_or_7ms": EventTimeTrigger().with_early_firings(every_n_elements=3, every=7),
    "early_every_5ms_late1": EventTimeTrigger().with_early_firings(every=5).with_late_firings(every_n_elements=1),
    "continuous_event_7": ContinuousEventTimeTrigger(7),
    "processing_time": ProcessingTimeTrigger(),
    "continuous_processing_6": ContinuousProcessingTimeTrigger(6),
}


def _norm(result):
    panes = sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted(p.values.items())), p.pane_index,
                    p.timing, bool(p.is_final), p.watermark_ms) for p in result.panes)
    late = sorted((tuple(x.key), x.timestamp_ms) for x in result.late)
    return panes, late


_row = st.fixed_dictionaries({"k": st.sampled_from(["a", "b"]), "ts": st.integers(-5, 60), "v": st.integers(1, 9)})
_batch = st.tuples(st.lists(_row, max_size=4), st.integers(0, 15))


@pytest.mark.spark
# max_examples: the Hypothesis profile of tests/conftest.py (few on CI: each example is Spark jobs)
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trigger=st.sampled_from(sorted(TRIGGERS)), window=st.sampled_from(["tumbling", "sliding", "global"]),
       mode=st.sampled_from(["accumulating", "discarding"]), lateness=st.sampled_from([0, 15]),
       delay=st.sampled_from([0, 3]), batches=st.lists(_batch, min_size=1, max_size=3))
def test_random_streams_plan_matches_model(spark, trigger, window, mode, lateness, delay, batches):
    """Random rows and processing-time steps: every batch's panes (all pane info) and late rows agree."""
    assigner = {"tumbling": tumbling(20), "sliding": sliding(20, 10), "global": GlobalWindows()}[window]
    s = spec(assigner, delay=delay, lateness=lateness, trigger=TRIGGERS[trigger], mode=mode)
    model = ReferenceOperator(s)
    spark_run = SparkExecutor(spark, s, "`k` string, `ts` bigint, `v` bigint")
    assert type(spark_run.operator).__name__ == "SparkWindowOperator"
    pt = 0
    for b, (rows, pt_step) in enumerate(batches):
        pt += pt_step
        want = model.process_batch(rows, b, processing_time_ms=pt)
        got = spark_run.process_batch(rows, b, processing_time_ms=pt)
        assert _norm(got) == _norm(want), (b, rows, pt)
    assert _norm(spark_run.flush(len(batches))) == _norm(model.flush(len(batches)))
    assert not spark_run.time_windows_left()


@pytest.mark.spark
def test_per_key_state_is_refused_by_the_plan(spark):
    """State the per-key path wrote for such a spec (before it had a plan) has another layout."""
    assert_plan_refuses_per_key_state(spark, BY_NAME["early_count_and_late_count_firings_use_separate_counters"].spec)


@pytest.mark.spark
def test_on_delta_with_a_crash_and_replay(spark, tmp_path):
    """Early firings by count and by processing time on real Delta tables: a crash before progress
    and a new operator replaying the batch give the model's panes exactly once (the clock and the
    trigger state come back from Delta)."""
    from spark_adapter import model_pane_rows, pane_rows, run_with_a_crash_and_replay
    s = spec(sliding(20, 10), lateness=15, mode="discarding",
             trigger=EventTimeTrigger().with_early_firings(every_n_elements=2, every=10).with_late_firings(
                 every_n_elements=2))
    batches = [([("a", 1, 1), ("a", 3, 2), ("b", 12, 3)], 0),
               ([("a", 14, 4)], 5),
               ([("b", 13, 5), ("a", 31, 6)], 12),        # b's timer (10) fired before these rows
               ([("a", 8, 7), ("a", 9, 8), ("b", 40, 9)], 20)]
    op, expected = run_with_a_crash_and_replay(spark, s, batches, "k string, ts bigint, v bigint",
                                               str(tmp_path / "state"), crash_batch=2, operator_id="early")
    want = model_pane_rows(expected, ("s", "n"))
    assert pane_rows(spark, op, ("s", "n")) == want
    assert {p[4] for p in want} >= {"EARLY", "ON_TIME"}
    assert spark.read.format("delta").load(op.store.windows_path).count() == 0
