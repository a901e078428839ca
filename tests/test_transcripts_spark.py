"""Batching invariance of the ``transcripts.py`` transcripts on the Spark executor.

(``test_transcripts_executors.py`` runs each transcript step by step on Spark.)
Here the batching-invariant transcripts that Spark can run are re-cut and
flushed, and the final results compared with the transcript's. A one-batch cut
of a first batch also exercises the one-pass plan (flush fused into the batch)
when nothing is left for a later batch.

Which cuts run (CI time: every cut is a few Spark batches, seconds each):

- every one: all rows in ONE batch (with the step-by-step run of
  ``test_transcripts_executors.py`` that makes the model, one batch and a stream);
- a cut into batches of 3, unless another test already cuts the transcript into
  batches of 1 and 2 on Spark (CUT_INTO_1_AND_2_ELSEWHERE: the ones whose state
  crosses batches in ways a cut changes: trigger counters and timers, session
  merges with trigger state, several sources, ingestion-time clocks). Those have
  cuts of 1, 2 and all; a cut of 3 between them adds nothing;
- a size that cuts the rows into the same batches as another size runs once
  (``check_batching_invariance``): with 3 rows or fewer, "3" is "all".

Cuts of 1 and 2 of the others run on Spark in ``test_semantics_transcripts.py``
and ``test_spark_vs_reference.py`` (other transcripts of the same features).
"""
from __future__ import annotations

import os

import pytest

import transcripts_model  # noqa: F401  (registers the model's transcripts, so the filter below sees all)
from spark_adapter import SparkExecutor, infer_schema
from test_transcripts_reference import INVARIANT, check_batching_invariance
from test_session_trigger_plans import INVARIANT as SESSION_TRIGGER_INVARIANT
from test_trigger_plans import INVARIANT_TRIGGER_TRANSCRIPTS
from transcripts import SPARK_BATCH
from windowing.spark.dispatch import uses_dataframe_plan

pytestmark = pytest.mark.spark

# Per-key path (the model per key): a process function cut into 3 and all; the split's invariance
# on every invariant transcript is checked without Spark in test_reference_per_key.py.
# WINDOWING_ALL_SPARK_TRANSCRIPTS=1 runs every one on Spark. (Reduce functions run on the plans
# now: test_reduce_plans.py cuts merging sessions with a reduce into batches of 1 and 2.)
KEYED_INVARIANT_SIZES = {"process_function_emits_rows": (3, None)}
ALL_ON_SPARK = os.environ.get("WINDOWING_ALL_SPARK_TRANSCRIPTS") == "1"
SPARK_INVARIANT = [t for t in INVARIANT if SPARK_BATCH in t.executors and uses_dataframe_plan(t.spec)]
KEYED_INVARIANT = [t for t in INVARIANT if SPARK_BATCH in t.executors and not uses_dataframe_plan(t.spec)
                   and (ALL_ON_SPARK or t.name in KEYED_INVARIANT_SIZES)]


# Cut into batches of 1 and 2 on Spark by these tests (so no cut of 3 here):
# test_trigger_plans.py::test_cuts_of_one_and_two_on_the_plan, test_session_trigger_plans.py (same name),
# test_batch_time.py::test_issue3_transcripts_cut_into_batches_of_1_and_2_on_the_plans and
# test_processing_sessions.py::test_backfill_transcript_cut_into_1_and_2_on_the_plan.
CUT_INTO_1_AND_2_ELSEWHERE = (
    {t.name for t in INVARIANT_TRIGGER_TRANSCRIPTS} | {t.name for t in SESSION_TRIGGER_INVARIANT}
    | {"slow_source_holds_the_watermark", "processing_time_window_in_a_backfill_by_ingestion_time",
       "processing_time_sessions_in_a_backfill_by_ingestion_time"})


def _plan_sizes(transcript) -> tuple:
    return (None,) if transcript.name in CUT_INTO_1_AND_2_ELSEWHERE else (3, None)


def test_enough_spark_invariant_transcripts():
    assert len(SPARK_INVARIANT) >= 10
    assert set(KEYED_INVARIANT_SIZES) <= {t.name for t in KEYED_INVARIANT}
    # every name left without its cut of 3 is an invariant transcript on a DataFrame plan here
    assert CUT_INTO_1_AND_2_ELSEWHERE <= {t.name for t in SPARK_INVARIANT}
    assert sum(_plan_sizes(t) == (3, None) for t in SPARK_INVARIANT) >= 10


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in KEYED_INVARIANT])
def test_per_key_path_batching_invariance(spark, transcript):
    schema = infer_schema(transcript.spec, transcript.rows + [dict(k="a", ts=0, v=0, w=0.5)])
    check_batching_invariance(transcript, lambda spec: SparkExecutor(spark, spec, schema),
                              sizes=KEYED_INVARIANT_SIZES.get(transcript.name, (1, 2, None)))


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in SPARK_INVARIANT])
def test_spark_executor_batching_invariance(spark, transcript):
    schema = infer_schema(transcript.spec, transcript.rows + [dict(k="a", ts=0, v=0, w=0.5)])
    check_batching_invariance(transcript, lambda spec: SparkExecutor(spark, spec, schema),
                              sizes=_plan_sizes(transcript))
