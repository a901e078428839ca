"""The last built-in triggers on DataFrame plans: EventTimeTrigger on GlobalWindows and
DeltaTrigger with the built-in AbsoluteDifference delta (transcripts/delta_triggers.py).

The transcripts run on Spark in ``test_transcripts.py`` (step by step, and the batching-invariant
ones cut into 1 and 2); here: which path they take, and random streams against the reference model.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_adapter import SparkExecutor, infer_schema
from transcripts import TRANSCRIPTS
from transcripts.build import sliding, spec, tumbling
from transcripts.delta_triggers import SquaredDifference
from windowing.core.assigners import GlobalWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.triggers import DeltaTrigger, EventTimeTrigger, PurgingTrigger

BY_NAME = {t.name: t for t in TRANSCRIPTS}
PLANFILL_TRANSCRIPTS = {
    "event_time_trigger_on_global_window": "early_late",
    "event_time_trigger_on_global_window_all_purging_after_the_end": "early_late",
    "delta_trigger_on_tumbling_windows_across_batches": "delta",
    "delta_trigger_on_global_window_purging_doubles": "delta",
    "delta_trigger_on_global_window_in_event_time_order": "delta",
    "delta_trigger": "delta",   # the model's transcript (transcripts/model.py)
}


# ------------------------------------------------------------------ no Spark session


def test_delta_and_global_event_time_transcripts_take_the_dataframe_plan():
    from windowing.spark.operator.dispatch import execution_path
    for name, kind in PLANFILL_TRANSCRIPTS.items():
        assert execution_path(BY_NAME[name].spec) == f"dataframe plan {kind}", name


def test_event_time_trigger_on_global_windows_is_the_early_late_plan_without_firings():
    from windowing.spark.plans.registry import plan_for
    plan = plan_for(spec(GlobalWindows(), trigger=EventTimeTrigger(), mode="discarding"))
    assert (plan.kind, plan.purge, type(plan.trigger)) == ("early_late", True, EventTimeTrigger)
    assert isinstance(spec(GlobalWindows(), trigger=EventTimeTrigger(), mode="discarding").trigger, PurgingTrigger)


def test_a_user_subclass_of_the_event_time_trigger_stays_per_key():
    from windowing.spark.operator.dispatch import execution_path

    class MyEventTime(EventTimeTrigger):
        pass

    assert execution_path(spec(GlobalWindows(), trigger=MyEventTime())).startswith(
        "per-key model (no DataFrame plan for trigger")


def test_a_user_delta_function_stays_per_key_and_says_it_is_user_code():
    from windowing.spark.operator.dispatch import execution_path
    path = execution_path(BY_NAME["delta_trigger_with_a_user_delta_function"].spec)
    assert path.startswith("per-key model (no DataFrame plan for trigger DeltaTrigger"), path
    assert "delta function SquaredDifference is user code" in path, path


def test_delta_plan_salts_the_fingerprint():
    from windowing.spark.plans.registry import plan_for
    s = BY_NAME["delta_trigger"].spec
    assert plan_for(s).kind == "delta"
    assert plan_for(s).definition.fingerprint(s) != s.fingerprint()


# ------------------------------------------------------------------------- Spark

def _norm(result):
    panes = sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted(p.values.items())), p.pane_index,
                    p.timing, bool(p.is_final), p.watermark_ms) for p in result.panes)
    late = sorted((tuple(x.key), x.timestamp_ms) for x in result.late)
    return panes, late


_row = st.fixed_dictionaries({"k": st.sampled_from(["a", "b"]), "ts": st.integers(-5, 60), "v": st.integers(-9, 9)})


@pytest.mark.spark
@given(window=st.sampled_from(["tumbling", "sliding", "global"]), mode=st.sampled_from(["accumulating", "discarding"]),
       threshold=st.sampled_from([0, 2, 3.5]), lateness=st.sampled_from([0, 15]), delay=st.sampled_from([0, 3]),
       batches=st.lists(st.lists(_row, max_size=5), min_size=1, max_size=3))
def test_random_streams_delta_plan_matches_model(spark, window, mode, threshold, lateness, delay, batches):
    """Random rows (ties in event time included): every batch's panes (all pane info) and late rows agree."""
    assigner = {"tumbling": tumbling(20), "sliding": sliding(20, 10), "global": GlobalWindows()}[window]
    s = spec(assigner, delay=delay, lateness=lateness, trigger=DeltaTrigger(threshold, value_column="v"), mode=mode)
    model = ReferenceOperator(s)
    spark_run = SparkExecutor(spark, s, "`k` string, `ts` bigint, `v` bigint")
    assert type(spark_run.operator).__name__ == "SparkWindowOperator"
    for b, rows in enumerate(batches):
        assert _norm(spark_run.process_batch(rows, b)) == _norm(model.process_batch(rows, b)), (b, rows)
    assert _norm(spark_run.flush(len(batches))) == _norm(model.flush(len(batches)))
    assert not spark_run.time_windows_left()



@pytest.mark.spark
def test_a_null_in_the_delta_column_stops_the_batch_naming_it(spark):
    """The model cannot take a delta of a null (TypeError); the plan says which column and element."""
    s = spec(GlobalWindows(), trigger=DeltaTrigger(1, value_column="v"))
    run = SparkExecutor(spark, s, "`k` string, `ts` bigint, `v` bigint")
    with pytest.raises(Exception, match="AbsoluteDifference column 'v' is null in the element at event time 7 ms"):
        run.process_batch([{"k": "a", "ts": 3, "v": 1}, {"k": "a", "ts": 7, "v": None}], 0)
    assert run.operator.last_progress() is None   # nothing committed
