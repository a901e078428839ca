"""The transcripts of ``transcripts.py`` run by the Spark executor (DataFrame plans).

The same runner and expectations as ``test_transcripts_reference.py``: each
transcript step by step (one batch per step, explicit watermarks included),
and the batching-invariant ones re-cut into batches of 1, 2, 3 and all rows
in one batch, final results compared with the transcript's.
"""
from __future__ import annotations

import pytest

from spark_adapter import SparkExecutor, infer_schema
from test_transcripts_reference import INVARIANT, check_batching_invariance, run_transcript
from transcripts import TRANSCRIPTS

pytestmark = pytest.mark.spark


def _executor(spark, transcript):
    rows = transcript.rows + [dict(k="a", ts=0, v=0, w=0.5)]
    schema = infer_schema(transcript.spec, rows)
    return lambda spec: SparkExecutor(spark, spec, schema)


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in TRANSCRIPTS])
def test_spark_executor(spark, transcript):
    make = _executor(spark, transcript)
    run_transcript(transcript, make(transcript.spec), time_windows_left=SparkExecutor.time_windows_left)


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in INVARIANT])
def test_spark_executor_batching_invariance(spark, transcript):
    check_batching_invariance(transcript, _executor(spark, transcript), sizes=(1, 2, 3, None))
