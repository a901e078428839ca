"""The transcripts of ``transcripts.py`` / ``transcripts_model.py`` for executors other than the model.

Each transcript says which executors may run it (``Transcript.executors``). Spark runs a
spec on a DataFrame plan when one covers it and on the per-key path (the reference model
per key, windowing/spark/keyed.py) otherwise; only features NO Spark path has are
MODEL_ONLY (their Spark runs are skipped, and a test checks that the dispatch refuses them).

CI time: every DataFrame-plan transcript runs on Spark; of the per-key ones, a set that
covers each feature's Spark-side code (KEYED_ON_SPARK) runs by default and the others are
skipped unless ``WINDOWING_ALL_SPARK_TRANSCRIPTS=1``: the per-key path runs the very model
that passes all of them, and ``test_reference_per_key.py`` checks, without Spark, that
splitting a batch by key changes nothing on every transcript.
"""
from __future__ import annotations

import os

import pytest

import transcripts_model  # noqa: F401  (registers the transcripts of the full window model)
from spark_adapter import SparkExecutor, infer_schema, keyed_time_windows_left
from test_transcripts_reference import run_transcript
from transcripts import SPARK_BATCH, TRANSCRIPTS
from windowing.spark.keyed import KeyedModelOperator

MODEL_ONLY_TRANSCRIPTS = [t for t in TRANSCRIPTS if SPARK_BATCH not in t.executors]
ALL_ON_SPARK = os.environ.get("WINDOWING_ALL_SPARK_TRANSCRIPTS") == "1"
KEYED_ON_SPARK = {
    "session_late_bridge_fires_merged_window_late",             # sessions, supersedes, LATE bridge
    "session_bridge_merges_accumulators",                       # user aggregates (array results) merged
    "session_dynamic_gap_from_column",                          # the gap column checked in Spark
    "session_user_trigger_merges_its_state",                    # a user trigger's on_merge of its state
    "user_trigger_state_survives_across_batches",               # user trigger state across batches
    "processing_time_from_ingestion_column",                    # per-row processing time, its quarantine
    "watermark_is_the_minimum_over_sources",                    # several sources, unknown source
    "watermark_idleness_advances_by_processing_time",           # idleness, late output
    "process_function_on_pandas_with_count_evictor",            # process function rows, evictor
    "delta_trigger_with_a_user_delta_function",                 # DeltaTrigger's user delta function
    "time_evictor_after_the_function",                          # an evictor after the function
    "non_keyed_windows",                                        # window_all
}


def _is_per_key(t) -> bool:
    from windowing.spark.dispatch import uses_dataframe_plan
    return not uses_dataframe_plan(t.spec)


def _spark_params():
    out = []
    for t in TRANSCRIPTS:
        marks = []
        if SPARK_BATCH not in t.executors:
            marks.append(pytest.mark.skip(reason="marked model-only"))
        elif not ALL_ON_SPARK and t.name not in KEYED_ON_SPARK and _is_per_key(t):
            marks.append(pytest.mark.skip(reason="per-key path: outside KEYED_ON_SPARK (set "
                                                 "WINDOWING_ALL_SPARK_TRANSCRIPTS=1 to run it)"))
        out.append(pytest.param(t, id=t.name, marks=marks))
    return out


def test_keyed_on_spark_names_per_key_transcripts():
    names = {t.name: t for t in TRANSCRIPTS}
    assert KEYED_ON_SPARK <= set(names)
    # a feature that gains a DataFrame plan (sessions, processing-time windows, idleness, several
    # sources, window_all) leaves the per-key path; its transcript then runs on the plan anyway, but
    # part of the set must stay per-key to test that path
    assert sum(_is_per_key(names[n]) for n in KEYED_ON_SPARK) >= 5


def test_dispatch_picks_a_path_for_every_transcript():
    pytest.importorskip("pyspark")
    from windowing.core.spec import WindowSpecBuilder
    from windowing.core.aggregates import Count
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.spark.dispatch import execution_path
    from windowing.spark.plans import plan_for
    paths = {t.name: execution_path(t.spec) for t in TRANSCRIPTS if SPARK_BATCH in t.executors}
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
        if SPARK_BATCH in t.executors and paths[t.name].startswith("per-key"):
            with pytest.raises(NotImplementedError, match="no DataFrame plan for"):
                plan_for(t.spec)
    # Output modes are the stores' business: an upsert spec takes the same path as its append twin.
    upsert = (WindowSpecBuilder().key_by("k").event_time("ts").window(TumblingEventTimeWindows.of(10))
              .output_mode("upsert").aggregate(n=Count()))
    assert execution_path(upsert) == "dataframe plan time"
    assert not MODEL_ONLY_TRANSCRIPTS   # every transcript has a Spark path


def _spark_time_windows_left(executor) -> list:
    """State rows (tuples: key columns, then window start) of time windows."""
    if isinstance(executor.operator, KeyedModelOperator):
        return keyed_time_windows_left(executor.operator)
    start = len(executor.spec.key_columns)
    return [row for row in executor.open_windows() if row[start] is not None]


@pytest.mark.spark
@pytest.mark.parametrize("transcript", _spark_params())
def test_transcript_on_spark(spark, transcript):
    rows = transcript.rows
    schema = infer_schema(transcript.spec, rows + [dict(k="a", ts=0, v=0, w=0.5)])
    run_transcript(transcript, SparkExecutor(spark, transcript.spec, schema),
                   time_windows_left=_spark_time_windows_left)
