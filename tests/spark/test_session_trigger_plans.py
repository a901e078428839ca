"""The session trigger plans (windowing/spark/plans/session_window_trigger_plan.py): dispatch, fingerprints,
random session streams against the reference model, per-key state, and a crash
and replay on real Delta.

The transcripts (tests/transcripts/session_triggers.py) run on the plan in ``test_transcripts.py``
(step by step, and the batching-invariant ones cut into 1, 2 and all).
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_adapter import SparkExecutor
from transcripts import TRANSCRIPTS
from transcripts.build import spec
from transcripts.session_triggers import SESSION_TRIGGER_TRANSCRIPTS, session
from windowing.core.reference import ReferenceOperator
from windowing.core.triggers import (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger,
                                     EventTimeTrigger, ProcessingTimeTrigger)

BY_NAME = {t.name: t for t in TRANSCRIPTS}


# ------------------------------------------------------------------ no Spark session


def test_session_trigger_transcripts_take_a_session_trigger_plan():
    from windowing.spark.operator.dispatch import execution_path
    paths = {name: execution_path(BY_NAME[name].spec) for name in SESSION_TRIGGER_TRANSCRIPTS}
    assert paths == {
        "session_early_counters_add_on_merge": "dataframe plan session_early_late",
        "session_late_bridge_with_late_firings_every_2": "dataframe plan session_early_late",
        "session_early_firings_discarding_across_a_merge": "dataframe plan session_early_late",
        "session_early_timer_is_the_earliest_of_the_parts": "dataframe plan session_early_late",
        "session_continuous_event_time_while_it_grows": "dataframe plan session_continuous_event_time",
        "session_count_trigger_counts_add_on_merge": "dataframe plan session_count",
        "session_processing_time_trigger": "dataframe plan session_processing_time_trigger",
        "session_early_firings_and_late_bridge": "dataframe plan session_early_late",
    }


def test_the_second_example_runs_on_the_plan():
    from examples.sessions_demo import sessions_spec
    from windowing.spark.operator.dispatch import execution_path
    assert execution_path(sessions_spec()) == "dataframe plan session_early_late"


def test_what_stays_per_key_on_sessions_says_why():
    from windowing.core.evictors import CountEvictor
    from windowing.core.triggers import DeltaTrigger
    from windowing.spark.operator.dispatch import execution_path

    class MyCount(CountTrigger):   # a user subclass is a user trigger
        pass

    path = execution_path(spec(session(10), trigger=MyCount(2)))
    assert path.startswith("per-key model (no DataFrame plan for trigger ") and \
        path.endswith("MyCount(count=2) on session windows)")
    with pytest.raises(ValueError):   # DeltaTrigger cannot merge: refused when the spec is built
        spec(session(10), trigger=DeltaTrigger(1.0, value_column="v"))
    assert "evictor on session windows" in execution_path(
        spec(session(10), trigger=CountTrigger(2), evictor=CountEvictor(2)))


def test_session_trigger_fingerprints_are_salted_and_the_others_keep_theirs():
    from windowing.spark.plans.registry import PLANS, TriggerRule, WindowFamily, plan_for
    session_trigger_plan_kinds = {plan.name for (family, _), plan in PLANS.items()
                                  if family is WindowFamily.SESSION and plan.rules is not None}
    assert session_trigger_plan_kinds == {"session_early_late", "session_continuous_event_time",
                                          "session_processing_time_trigger", "session_continuous_processing_time",
                                          "session_count"}
    on_time_windows = PLANS[(WindowFamily.TIME, TriggerRule.EARLY_LATE)]
    salted = {}
    for t in TRANSCRIPTS:
        try:
            plan = plan_for(t.spec)
        except NotImplementedError:
            continue
        kind = plan.kind
        fingerprint = plan.definition.fingerprint(t.spec)   # what the operator records
        if kind in session_trigger_plan_kinds:
            salted[t.name] = fingerprint
            assert fingerprint not in (t.spec.fingerprint(), on_time_windows.fingerprint(t.spec)), t.name
        elif kind in ("time", "count", "evicting_count", "session"):
            assert fingerprint == t.spec.fingerprint(), t.name   # specs that had a plan keep their fingerprint
    assert set(SESSION_TRIGGER_TRANSCRIPTS) <= set(salted)
    assert plan_for(BY_NAME["session_late_bridge_fires_merged_window_late"].spec).kind == "session"


# ------------------------------------------------------------------------- Spark

TRIGGERS = {
    "early2_late2": EventTimeTrigger().with_early_firings(every_n_elements=2).with_late_firings(every_n_elements=2),
    "early3_or_7ms": EventTimeTrigger().with_early_firings(every_n_elements=3, every=7),
    "early_every_5ms": EventTimeTrigger().with_early_firings(every=5),
    "continuous_event_7": ContinuousEventTimeTrigger(7),
    "processing_time": ProcessingTimeTrigger(),
    "continuous_processing_6": ContinuousProcessingTimeTrigger(6),
    "count_2": CountTrigger(2),
}


def _norm(result):
    panes = sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted(p.values.items())), p.pane_index,
                    p.timing, bool(p.is_final), p.watermark_ms, tuple(p.supersedes or ())) for p in result.panes)
    late = sorted((tuple(x.key), x.timestamp_ms) for x in result.late)
    return panes, late


_row = st.fixed_dictionaries({"k": st.sampled_from(["a", "b"]), "ts": st.integers(0, 60), "v": st.integers(1, 9)})
_batch = st.tuples(st.lists(_row, max_size=4), st.integers(0, 12))


@pytest.mark.spark
# max_examples: the Hypothesis profile of tests/conftest.py (few on CI: each example is Spark jobs)
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trigger=st.sampled_from(sorted(TRIGGERS)), gap=st.sampled_from([4, 9]),
       mode=st.sampled_from(["accumulating", "discarding"]), lateness=st.sampled_from([0, 20]),
       delay=st.sampled_from([0, 5]), batches=st.lists(_batch, min_size=1, max_size=3))
def test_random_session_streams_plan_matches_model(spark, trigger, gap, mode, lateness, delay, batches):
    """Random session streams with a processing-time clock: every batch's panes (all pane info,
    supersedes included) and late rows agree with the model's; nothing is left after the flush."""
    s = spec(session(gap), delay=delay, lateness=lateness, trigger=TRIGGERS[trigger], mode=mode)
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
def test_per_key_state_of_a_session_trigger_spec_resumes_per_key(spark, tmp_path):
    """A session spec with early firings that ran per key before it had a plan keeps running per
    key on its Delta state (and the plan refuses that state: another layout, another fingerprint)."""
    from windowing.spark.operator.dispatch import operator_on_delta
    from windowing.spark.operator.protocol import KeyedModelOperator
    from windowing.spark import SparkWindowOperator, SpecMismatchError
    s = BY_NAME["session_early_firings_and_late_bridge"].spec
    root = str(tmp_path / "state")
    schema = "k string, ts bigint, v bigint"
    KeyedModelOperator.on_delta(spark, s, "op", root).process_batch(
        spark.createDataFrame([("a", 0, 1), ("a", 3, 2)], schema), 0)
    resumed = operator_on_delta(spark, s, "op", root)
    assert isinstance(resumed, KeyedModelOperator)
    assert resumed.process_batch(spark.createDataFrame([("a", 20, 4), ("a", 60, 8)], schema), 1).plan == "keyed"
    with pytest.raises(SpecMismatchError, match="reset_state=True"):
        SparkWindowOperator.on_delta(spark, s, "op", root)


@pytest.mark.spark
def test_on_delta_with_a_crash_and_replay(spark, tmp_path):
    """Early firings (count and processing time) and late firings on sessions with Delta state: a
    crash before progress and a new operator replaying the batch give the model's panes exactly
    once, supersedes included (trigger state and merged sessions come back from Delta)."""
    from spark_adapter import model_pane_rows, pane_rows, run_with_a_crash_and_replay
    s = spec(session(10), lateness=30, trigger=EventTimeTrigger().with_early_firings(
        every_n_elements=2, every=10).with_late_firings(every_n_elements=2))
    batches = [([("a", 0, 1), ("a", 3, 2), ("b", 12, 3)], 0),
               ([("a", 20, 4), ("b", 15, 5)], 5),
               ([("b", 40, 6), ("a", 50, 7)], 12),        # b's early timer (10) fires before these rows
               ([("a", 11, 8), ("a", 14, 9), ("b", 41, 10)], 20)]   # a late bridge of a's sessions
    op, expected = run_with_a_crash_and_replay(spark, s, batches, "k string, ts bigint, v bigint",
                                               str(tmp_path / "state"), crash_batch=3, operator_id="sessions")
    want = model_pane_rows(expected, ("s", "n"), supersedes=True)
    assert pane_rows(spark, op, ("s", "n"), supersedes=True) == want
    assert {p[4] for p in want} >= {"EARLY", "ON_TIME", "LATE"} and any(p[10] for p in want)
    assert spark.read.format("delta").load(op.store.windows_path).count() == 0
