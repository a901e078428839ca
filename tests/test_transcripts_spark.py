"""Batching invariance of the ``transcripts.py`` transcripts on the Spark executor.

(``test_transcripts_executors.py`` runs each transcript step by step on Spark.)
Here the batching-invariant transcripts that Spark can run are re-cut into
batches of 3 and into all rows in one batch, then flushed, and the final
results compared with the transcript's (cuts of 1 and 2 run on Spark in
``test_semantics_transcripts.py`` and ``test_spark_vs_reference.py``; here they
would double the suite's Spark time). A one-batch cut of a first batch also
exercises the one-pass plan (flush fused into the batch) when nothing is left
for a later batch.
"""
from __future__ import annotations

import os

import pytest

import transcripts_model  # noqa: F401  (registers the model's transcripts, so the filter below sees all)
from spark_adapter import SparkExecutor, infer_schema
from test_transcripts_reference import INVARIANT, check_batching_invariance
from transcripts import SPARK_BATCH
from windowing.spark.dispatch import uses_dataframe_plan

pytestmark = pytest.mark.spark

# Per-key path (the model per key): sessions merging with a reduce function cut into batches of 1,
# 2 and all (merging across batches is where cuts matter) and a process function cut into 3 and
# all; the split's invariance on every invariant transcript is checked without Spark in
# test_reference_per_key.py. WINDOWING_ALL_SPARK_TRANSCRIPTS=1 runs every one on Spark.
KEYED_INVARIANT_SIZES = {"reduce_function_on_merging_sessions": (1, 2, None),
                         "process_function_emits_rows": (3, None)}
ALL_ON_SPARK = os.environ.get("WINDOWING_ALL_SPARK_TRANSCRIPTS") == "1"
SPARK_INVARIANT = [t for t in INVARIANT if SPARK_BATCH in t.executors and uses_dataframe_plan(t.spec)]
KEYED_INVARIANT = [t for t in INVARIANT if SPARK_BATCH in t.executors and not uses_dataframe_plan(t.spec)
                   and (ALL_ON_SPARK or t.name in KEYED_INVARIANT_SIZES)]


def test_enough_spark_invariant_transcripts():
    assert len(SPARK_INVARIANT) >= 10
    assert set(KEYED_INVARIANT_SIZES) <= {t.name for t in KEYED_INVARIANT}


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in KEYED_INVARIANT])
def test_per_key_path_batching_invariance(spark, transcript):
    schema = infer_schema(transcript.spec, transcript.rows + [dict(k="a", ts=0, v=0, w=0.5)])
    check_batching_invariance(transcript, lambda spec: SparkExecutor(spark, spec, schema),
                              sizes=KEYED_INVARIANT_SIZES.get(transcript.name, (1, 2, None)))


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in SPARK_INVARIANT])
def test_spark_executor_batching_invariance(spark, transcript):
    schema = infer_schema(transcript.spec, transcript.rows + [dict(k="a", ts=0, v=0, w=0.5)])
    check_batching_invariance(transcript, lambda spec: SparkExecutor(spark, spec, schema), sizes=(3, None))
