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

import pytest

import transcripts_model  # noqa: F401  (registers the model's transcripts, so the filter below sees all)
from spark_adapter import SparkExecutor, infer_schema
from test_transcripts_reference import INVARIANT, check_batching_invariance
from transcripts import SPARK_BATCH

pytestmark = pytest.mark.spark

SPARK_INVARIANT = [t for t in INVARIANT if SPARK_BATCH in t.executors]


def test_enough_spark_invariant_transcripts():
    assert len(SPARK_INVARIANT) >= 10


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in SPARK_INVARIANT])
def test_spark_executor_batching_invariance(spark, transcript):
    schema = infer_schema(transcript.spec, transcript.rows + [dict(k="a", ts=0, v=0, w=0.5)])
    check_batching_invariance(transcript, lambda spec: SparkExecutor(spark, spec, schema), sizes=(3, None))
