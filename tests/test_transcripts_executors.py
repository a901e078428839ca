"""The transcripts of ``transcripts.py`` / ``transcripts_model.py`` for executors other than the model.

Each transcript says which executors may run it (``Transcript.executors``). Features
without a Spark plan yet are MODEL_ONLY: the Spark runs of those are skipped with the
reason "no Spark plan yet", and a test checks that the Spark planner really refuses
them (so the day a plan exists, the transcript must be opened to Spark as well).
"""
from __future__ import annotations

import pytest

import transcripts_model  # noqa: F401  (registers the transcripts of the full window model)
from spark_adapter import SparkExecutor, infer_schema
from test_transcripts_reference import run_transcript
from transcripts import SPARK_BATCH, TRANSCRIPTS

MODEL_ONLY_TRANSCRIPTS = [t for t in TRANSCRIPTS if SPARK_BATCH not in t.executors]


def _spark_params():
    out = []
    for t in TRANSCRIPTS:
        marks = []
        if SPARK_BATCH not in t.executors:
            features = ", ".join(t.spec.model_only_features) or "marked model-only"
            marks.append(pytest.mark.skip(reason=f"no Spark plan yet: {features}"))
        out.append(pytest.param(t, id=t.name, marks=marks))
    return out


def test_model_only_transcripts_use_model_only_features():
    """A transcript is marked model-only exactly when its spec uses a feature Spark lacks."""
    assert len(MODEL_ONLY_TRANSCRIPTS) >= 20   # the event-time session transcripts left it for Spark
    for t in TRANSCRIPTS:
        assert bool(t.spec.model_only_features) == (SPARK_BATCH not in t.executors), \
            (t.name, t.spec.model_only_features, t.executors)


@pytest.mark.parametrize("transcript", [pytest.param(t, id=t.name) for t in MODEL_ONLY_TRANSCRIPTS])
def test_spark_planner_refuses_model_only_specs(transcript):
    pytest.importorskip("pyspark")
    from windowing.spark.plans import plan_for
    with pytest.raises(NotImplementedError, match="no Spark plan yet"):
        plan_for(transcript.spec)


def _spark_time_windows_left(executor) -> list:
    """State rows (tuples: key columns, then window start) of time windows."""
    start = len(executor.spec.key_columns)
    return [row for row in executor.open_windows() if row[start] is not None]


@pytest.mark.spark
@pytest.mark.parametrize("transcript", _spark_params())
def test_transcript_on_spark(spark, transcript):
    rows = transcript.rows
    schema = infer_schema(transcript.spec, rows + [dict(k="a", ts=0, v=0, w=0.5)])
    run_transcript(transcript, SparkExecutor(spark, transcript.spec, schema),
                   time_windows_left=_spark_time_windows_left)
