"""Processing-time sessions as a DataFrame plan (windowing/spark/plans/processing_session_window_plan.py) and
replayed processing times (the model's phase rule, reference.py ``pre_rows_below_ms``).

The transcripts (tests/transcripts/processing_sessions.py) run on the plans in
``test_transcripts.py`` (step by step, the batching-invariant one also cut into 1, 2 and 3);
here: the replayed ones on the per-key path with the clock in the late rows, and a job that
streams and backfills processing-time sessions.
"""
from __future__ import annotations

import pytest

from transcripts import TRANSCRIPTS
from transcripts.processing_sessions import PROCESSING_SESSION_TRANSCRIPTS
from windowing.core.aggregates import Count
from windowing.core.assigners import ProcessingTimeSessionWindows
from windowing.core.records import LATE_PROCESSING_TIME_WINDOW_FIRED
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.triggers import (ContinuousProcessingTimeTrigger, EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger,
                                     PurgingTrigger)

BY_NAME = {t.name: t for t in TRANSCRIPTS}
REPLAYED = ("replayed_row_joins_its_session_before_the_clock_closes_it",
            "replayed_row_joins_its_window_before_the_clock_closes_it")


# ------------------------------------------------------------------ no Spark session


def test_processing_time_transcripts_take_a_dataframe_plan():
    pytest.importorskip("pyspark")
    from windowing.spark.operator.dispatch import execution_path
    paths = {name: execution_path(BY_NAME[name].spec) for name in PROCESSING_SESSION_TRANSCRIPTS}
    assert paths == {
        "processing_time_sessions_in_a_stream": "dataframe plan processing_time_session",
        "purging_processing_time_sessions_with_a_gap_column": "dataframe plan processing_time_session",
        "processing_time_sessions_in_a_backfill_by_ingestion_time": "dataframe plan processing_time_session",
        "replayed_row_joins_its_session_before_the_clock_closes_it": "dataframe plan processing_time_session",
        "replayed_row_joins_its_window_before_the_clock_closes_it": "dataframe plan processing_time",
    }
    assert execution_path(BY_NAME["processing_time_session"].spec) == "dataframe plan processing_time_session"


class GapOfTwo:
    """A session gap computed by Python code (module level: gap extractors must pickle)."""

    columns = ()

    def gap_ms(self, row):
        return 2


def _sessions(trigger=None, gap=None):
    b = WindowSpecBuilder().key_by("k").window(gap or ProcessingTimeSessionWindows.with_gap(5))
    return (b.trigger(trigger) if trigger is not None else b).aggregate(n=Count())


def test_what_stays_per_key_on_processing_time_sessions_says_why():
    pytest.importorskip("pyspark")
    from windowing.spark.operator.dispatch import execution_path

    class MyTrigger(ProcessingTimeTrigger):   # a user subclass is a user trigger
        pass

    assert execution_path(_sessions(PurgingTrigger(ProcessingTimeTrigger()))) == \
        "dataframe plan processing_time_session"
    path = execution_path(_sessions(MyTrigger()))
    assert path.startswith("per-key model (no DataFrame plan for trigger ") and \
        "MyTrigger() on processing-time session windows (their plans take ProcessingTimeTrigger, " in path
    assert execution_path(_sessions(ContinuousProcessingTimeTrigger(10))) == \
        "dataframe plan processing_time_session_continuous"   # processing_trigger_plan.py
    assert execution_path(_sessions(EventTimeTrigger())) == \
        "dataframe plan processing_time_session_event_time"   # processing_trigger_plan.py
    assert execution_path(_sessions(NeverTrigger())).startswith(
        "per-key model (no DataFrame plan for trigger NeverTrigger() on processing-time session windows")
    assert execution_path(_sessions(gap=ProcessingTimeSessionWindows.with_dynamic_gap(GapOfTwo()))) == \
        "dataframe plan processing_time_session"


def test_processing_time_session_fingerprint_is_salted():
    pytest.importorskip("pyspark")
    from windowing.spark.plans.registry import plan_for

    def state_fingerprint(spec):   # what the operator records
        return plan_for(spec).definition.fingerprint(spec)
    spec = _sessions()
    assert state_fingerprint(spec) != spec.fingerprint()          # per-key state is refused, not misread
    assert state_fingerprint(spec) == state_fingerprint(_sessions())
    assert state_fingerprint(spec) != state_fingerprint(_sessions(gap=ProcessingTimeSessionWindows.with_gap(6)))


def test_a_replayed_late_row_records_the_clock_it_was_judged_against():
    op = ReferenceOperator(BY_NAME[REPLAYED[0]].spec)
    op.process_batch([dict(k="a", ts=0, v=1, ingest=0)], 0, processing_time_ms=0)
    op.process_batch([dict(k="a", ts=0, v=2, ingest=5)], 1, processing_time_ms=30)
    late = op.process_batch([dict(k="a", ts=0, v=4, ingest=12)], 2, processing_time_ms=40).late
    assert [(x.timestamp_ms, x.reason, x.watermark_ms) for x in late] == [(12, LATE_PROCESSING_TIME_WINDOW_FIRED, 30)]


def test_rows_older_than_the_batch_join_before_the_early_timers():
    """Without the replay rule, phase 1 fired [0,10) at the batch's time 30 and the row ingested at 5
    reopened a fragment: two panes of index 0 for one session's rows."""
    op = ReferenceOperator(BY_NAME[REPLAYED[0]].spec)
    op.process_batch([dict(k="a", ts=0, v=1, ingest=0)], 0, processing_time_ms=0)
    panes = op.process_batch([dict(k="a", ts=0, v=2, ingest=5), dict(k="b", ts=0, v=8, ingest=29)], 1,
                             processing_time_ms=30).panes
    got = sorted((p.key, p.window_start_ms, p.window_end_ms, p.pane_index, p.values["s"]) for p in panes)
    assert got == [(("a",), 0, 15, 0, 3)]   # b's [29,39) is still open at 30


# ------------------------------------------------------------------------- Spark


def _schema(t):
    from spark_adapter import infer_schema
    return infer_schema(t.spec, t.rows + [dict(k="a", ts=0, v=0, w=0.5)])


@pytest.mark.spark
@pytest.mark.parametrize("name", REPLAYED)
def test_replayed_rows_on_the_per_key_path_agree_with_the_model(spark, name):
    """The per-key path runs the model per key with the batch-wide clock (the earliest row's
    processing time included): same panes and late rows, the late rows with the clock."""
    from spark_adapter import SparkExecutor
    from transcripts.runner import check_step, run_steps
    from windowing.spark.operator.protocol import KeyedModelOperator
    t = BY_NAME[name]
    executor = SparkExecutor(spark, t.spec, _schema(t))
    executor.operator = KeyedModelOperator(spark, t.spec, executor.store)
    results = run_steps(t, executor)
    problems = [p for i, res in enumerate(results) for p in check_step(t, i, res)]
    assert not problems, "\n".join(problems)
    model = run_steps(t, ReferenceOperator(t.spec))
    assert [[(x.key, x.timestamp_ms, x.reason, x.watermark_ms) for x in res.late] for res in results] == \
        [[(x.key, x.timestamp_ms, x.reason, x.watermark_ms) for x in res.late] for res in model]


MINUTE = 60_000
T0 = 1_767_225_600_000   # 2026-01-01T00:00:00Z


@pytest.mark.spark
@pytest.mark.slow
def test_processing_time_session_job_as_stream_and_backfill(spark, tmp_path):
    """A job file with ``type = "session_processing_time"`` by recorded ingestion time: the stream and
    the backfill (chunks by ingestion time, a session merged across chunks through Delta) give the
    model's sessions."""
    from pyspark.sql import functions as F
    from pipelines.drivers import run_backfill, run_stream
    from pipelines.job import load_job

    path = tmp_path / "pt_sessions.toml"
    path.write_text('[job]\nname = "pt_sessions"\noperator_id = "pt_sessions"\nbackfill_chunk = "10 minutes"\n'
                    '[source]\npath = "raw/pt_sessions"\nevent_time = "ts"\nkey = "k"\n'
                    'ingestion_time_column = "ingested_at"\n'
                    '[window]\ntype = "session_processing_time"\ngap = "2 minutes"\n'
                    '[aggregates]\ns = "sum(v)"\nn = "count()"\n')
    job = load_job(path, root=tmp_path)
    assert isinstance(job.spec.assigner, ProcessingTimeSessionWindows)
    # ingestion minutes: a 0, 1, 2.5 -> one session; 10, 11 -> one; 30 alone. b 0.5 alone; 9 and 10.5
    # merge across the backfill's 10-minute chunk boundary; 20 alone. Event times are scattered.
    minutes = [("a", 0), ("a", 1), ("a", 2.5), ("a", 10), ("a", 11), ("a", 30),
               ("b", 0.5), ("b", 9), ("b", 10.5), ("b", 20)]
    rows = [(k, T0 - i * 7919, 2 ** i, T0 + int(m * MINUTE)) for i, (k, m) in enumerate(minutes)]
    spark.createDataFrame(rows + [("a", T0, 1 << 20, None)], "k string, ts long, v long, ingested_at long") \
        .write.format("delta").save(job.source_path)

    model = ReferenceOperator(job.spec)
    panes = model.process_batch([dict(k=k, ts=ts, v=v, ingested_at=at) for k, ts, v, at in rows], 0).panes
    panes += model.flush(1).panes
    want = sorted((p.key[0], p.window_start_ms, p.window_end_ms, p.values["s"], p.values["n"]) for p in panes)
    assert len(want) == 6

    def final_windows(results_path):
        df = spark.read.format("delta").load(results_path)
        assert df.groupBy("k", "window_start_ms").count().where(F.col("count") > 1).count() == 0  # one pane each
        return sorted(tuple(r) for r in df.select("k", "window_start_ms", "window_end_ms", "s", "n").collect())

    stream = run_stream(spark, job, validate=False)
    assert [r.plan for r in stream if not r.skipped] == ["processing_time_session"]
    assert final_windows(job.results_path) == want

    backfill_job = job.with_operator("pt_sessions_backfill", "pt_sessions_backfill")
    backfill = run_backfill(spark, backfill_job, validate=False)
    assert {r.plan for r in backfill} == {"processing_time_session"} and len(backfill) == 4   # 4 chunks, the last ending the input
    assert sum(r.metrics.late_rows for r in backfill) == 0
    assert sum(r.metrics.quarantined_rows for r in backfill) == 1
    assert backfill[0].metrics.panes_emitted == 2          # a [0, 4.5 min) and b [0.5, 2.5 min) close in chunk 1
    assert final_windows(backfill_job.results_path) == want
