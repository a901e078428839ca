"""The last built-in triggers on DataFrame plans: EventTimeTrigger on GlobalWindows and
DeltaTrigger with the built-in AbsoluteDifference delta (transcripts_planfill.py).

The transcripts run step by step on Spark in ``test_transcripts_executors.py`` (they take a plan, so
they run there by default); here: which path they take, cuts of 1 and 2 of the batching-invariant
ones, and random streams against the reference model.
"""
from __future__ import annotations

import pytest

import transcripts_model  # noqa: F401  (registers every transcript, these included)
from spark_adapter import SparkExecutor, infer_schema
from test_transcripts_reference import check_batching_invariance
from transcripts import TRANSCRIPTS, spec
from windowing.core.assigners import GlobalWindows
from windowing.core.triggers import EventTimeTrigger, PurgingTrigger

BY_NAME = {t.name: t for t in TRANSCRIPTS}
PLANFILL_TRANSCRIPTS = {
    "event_time_trigger_on_global_window": "early_late",
    "event_time_trigger_on_global_window_all_purging_after_the_end": "early_late",
}


# ------------------------------------------------------------------ no Spark session


def test_planfill_transcripts_take_the_dataframe_plan():
    from windowing.spark.dispatch import execution_path
    for name, kind in PLANFILL_TRANSCRIPTS.items():
        assert execution_path(BY_NAME[name].spec) == f"dataframe plan {kind}", name


def test_event_time_trigger_on_global_windows_is_the_early_late_plan_without_firings():
    from windowing.spark.plans import plan_for
    plan = plan_for(spec(GlobalWindows(), trigger=EventTimeTrigger(), mode="discarding"))
    assert (plan.kind, plan.purge, type(plan.trigger)) == ("early_late", True, EventTimeTrigger)
    assert isinstance(spec(GlobalWindows(), trigger=EventTimeTrigger(), mode="discarding").trigger, PurgingTrigger)


def test_a_user_subclass_of_the_event_time_trigger_stays_per_key():
    from windowing.spark.dispatch import execution_path

    class MyEventTime(EventTimeTrigger):
        pass

    assert execution_path(spec(GlobalWindows(), trigger=MyEventTime())).startswith(
        "per-key model (no DataFrame plan for trigger")


# ------------------------------------------------------------------------- Spark

INVARIANT = [BY_NAME[n] for n in PLANFILL_TRANSCRIPTS if BY_NAME[n].batching_invariant]


@pytest.mark.spark
@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in INVARIANT])
def test_cuts_of_one_and_two_on_the_plan(spark, transcript):
    schema = infer_schema(transcript.spec, transcript.rows)
    check_batching_invariance(transcript, lambda s: SparkExecutor(spark, s, schema), sizes=(1, 2))
