"""Jobs with processing-time windows, idleness, several sources and window_all, end to end.

The job TOML reaches every one of these features; each job runs as a stream
(Structured Streaming, foreachBatch) and as a backfill on real Delta tables,
on a DataFrame plan, and both give the same final windows.
"""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.drivers import run_backfill, run_stream
from pipelines.job import load_job

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MINUTE = 60_000
T0 = 1_767_225_600_000   # 2026-01-01T00:00:00Z


def _job_file(tmp_path, name: str, source: str, window: str, aggregates: str = 's = "sum(v)"\nn = "count()"'):
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[job]\nname = "{name}"\noperator_id = "{name}"\nbackfill_chunk = "10 minutes"\n'
                    f'[source]\npath = "raw/{name}"\nevent_time = "ts"\n{source}\n'
                    f'[window]\n{window}\n[aggregates]\n{aggregates}\n')
    return path


def _land(spark, rows, path, schema):
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(path)


def _final_windows(spark, path, keys):
    """(keys..., window_start_ms, window_end_ms, s, n) of each window's last pane."""
    df = spark.read.format("delta").load(path)
    last = df.groupBy(*keys, "window_start_ms", "window_end_ms").agg(F.max("pane_index").alias("pane_index"))
    return sorted(tuple(r) for r in df.join(last, [*keys, "window_start_ms", "window_end_ms", "pane_index"])
                  .select(*keys, "window_start_ms", "window_end_ms", "s", "n").collect())


def test_processing_time_job_as_stream_and_backfill(spark, tmp_path):
    """Tumbling processing-time windows by recorded ingestion time: the stream's windows are the backfill's."""
    path = _job_file(tmp_path, "pt_job", 'key = "k"\ningestion_time_column = "ingested_at"',
                     'type = "tumbling_processing_time"\nsize = "5 minutes"')
    stream_job = load_job(path, root=tmp_path)
    # event times are scattered (processing time ignores them); ingestion times span 22 minutes
    rows = [(k, T0 - (i * 7919) % (3 * MINUTE), i, T0 + i * 20_000) for i in range(66) for k in ("a", "b")]
    rows.append(("a", T0, 1000, None))   # no ingestion time: quarantined
    _land(spark, rows, stream_job.source_path, "k string, ts long, v long, ingested_at long")
    assert stream_job.spec.input.ingestion_time_column == "ingested_at"

    stream = run_stream(spark, stream_job, validate=False)
    assert [r.plan for r in stream if not r.skipped] == ["processing_time"]
    backfill_job = stream_job.with_operator("pt_backfill", "pt_backfill")
    # validated: the Great Expectations suites, reconciliation included, hold for processing-time windows
    backfill = run_backfill(spark, backfill_job, chunk="15 minutes")
    assert len(backfill) == 2 and {r.plan for r in backfill} == {"processing_time"}   # 2 chunks, the last ends the input
    # chunks cut by ingestion time: the clock moves chunk by chunk, so windows fire along the way
    assert 0 < backfill[0].metrics.panes_emitted < backfill[0].metrics.accepted_rows
    assert sum(r.metrics.quarantined_rows for r in backfill) == 1

    want = []
    for start in range(T0, T0 + 25 * MINUTE, 5 * MINUTE):
        vs = [i for i in range(66) if start <= T0 + i * 20_000 < start + 5 * MINUTE]
        want += [(k, start, start + 5 * MINUTE, sum(vs), len(vs)) for k in ("a", "b") if vs]
    assert _final_windows(spark, stream_job.results_path, ["k"]) == sorted(want)
    assert _final_windows(spark, backfill_job.results_path, ["k"]) == sorted(want)
    quarantine = spark.read.format("delta").load(backfill_job.quarantine_path).collect()
    assert [r["reason"] for r in quarantine] == ["invalid_ingestion_time"]


def test_processing_time_backfill_needs_ingestion_times(spark, tmp_path):
    path = _job_file(tmp_path, "pt_no_ingest", 'key = "k"', 'type = "sliding_processing_time"\nsize = "10 minutes"\n'
                                                          'slide = "5 minutes"')
    job = load_job(path, root=tmp_path)
    with pytest.raises(ValueError, match="needs the recorded ingestion time of each row: set \\[source\\] "
                                         "ingestion_time_column"):
        run_backfill(spark, job, validate=False)


def test_window_all_with_sources_and_idleness_as_stream_and_backfill(spark, tmp_path):
    """key = [] (window_all), two sources and an idle timeout: a stream in two runs, then a backfill.

    The stream's rows take the wall clock of their batch as processing time; with a 1 ms idle
    timeout a source that sent nothing in a later batch is idle there, deterministically.
    """
    path = _job_file(tmp_path, "feeds", 'key = []\nmax_out_of_orderness = "1 minute"\nidle_timeout = "1 ms"\n'
                                        'source_column = "feed"\nsources = ["north", "south"]',
                     'type = "tumbling"\nsize = "2 minutes"')
    job = load_job(path, root=tmp_path)
    assert job.spec.key_columns == () and job.spec.input.sources == ("north", "south")
    assert job.spec.input.idle_timeout_ms == 1
    schema = "feed string, ts long, v long"
    north = [("north", T0 + i * 30_000, i) for i in range(20)]          # 0:00 .. 9:30
    south = [("south", T0 + i * 30_000, 100 + i) for i in range(6)]     # 0:00 .. 2:30, then silent
    _land(spark, north[:10] + south, job.source_path, schema)
    first = run_stream(spark, job, validate=False)
    # the slow source (south, 2:30) holds the watermark at 1:29.999: no window closes
    assert [r.plan for r in first] == ["time"]
    assert first[0].watermark_after_ms == T0 + 150_000 - MINUTE - 1 and first[0].metrics.panes_emitted == 0
    _land(spark, north[10:] + [("west", T0, 1)], job.source_path, schema)
    second = run_stream(spark, job, validate=False)
    # south sent nothing in this batch: idle, left out; north alone moves the watermark to 8:29.999
    assert second[0].watermark_after_ms == T0 + 19 * 30_000 - MINUTE - 1
    assert second[0].metrics.quarantined_rows == 1 and second[0].metrics.late_rows == 0   # an undeclared source
    stream_windows = _final_windows(spark, job.results_path, [])
    assert [w[:2] for w in stream_windows] == [(T0 + i * 2 * MINUTE, T0 + (i + 1) * 2 * MINUTE) for i in range(4)]

    backfill_job = job.with_operator("feeds_backfill", "feeds_backfill")
    reports = run_backfill(spark, backfill_job, chunk="all", validate=False)   # one batch, flushed
    assert {r.plan for r in reports} == {"time"} and sum(r.metrics.late_rows for r in reports) == 0
    backfill_windows = _final_windows(spark, backfill_job.results_path, [])
    assert len(backfill_windows) == 5 and set(stream_windows) <= set(backfill_windows)
    assert sum(w[2] for w in backfill_windows) == sum(range(20)) + sum(range(100, 106))
    assert sum(r.metrics.quarantined_rows for r in reports) == 1
    assert spark.read.format("delta").load(backfill_job.results_path).columns[:2] == \
        ["window_start_ms", "window_end_ms"]   # window_all: no key columns in the output


def test_state_written_per_key_stays_per_key_until_reset(spark, tmp_path):
    """A window_all job started when window_all ran per key resumes there (the plan could not read its
    state); a reset moves it to the DataFrame plan for good."""
    from windowing.core.aggregates import Count
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.core.spec import WindowSpecBuilder
    from windowing.spark.operator.dispatch import execution_path, operator_on_delta
    from windowing.spark.operator.protocol import KeyedModelOperator
    from windowing.spark.operator.protocol import SparkWindowOperator
    spec = WindowSpecBuilder().window_all().event_time("ts").window(TumblingEventTimeWindows.of(10)).aggregate(n=Count())
    assert execution_path(spec) == "dataframe plan time"
    root = str(tmp_path / "state")
    rows = spark.createDataFrame([(1, 1), (12, 2)], "ts long, v long")
    KeyedModelOperator.on_delta(spark, spec, "op", root).process_batch(rows, 0)
    resumed = operator_on_delta(spark, spec, "op", root)
    assert isinstance(resumed, KeyedModelOperator)
    assert resumed.process_batch(rows, 1).plan == "keyed"
    fresh = operator_on_delta(spark, spec, "op", root, reset_state=True)
    assert isinstance(fresh, SparkWindowOperator) and fresh.last_progress() is None
    assert fresh.process_batch(rows, 0).plan == "time"
    assert isinstance(operator_on_delta(spark, spec, "op", root), SparkWindowOperator)   # keyed state gone


@pytest.mark.parametrize("source, window, message", [
    ('key = "k"\nsource_column = "feed"', 'type = "tumbling"\nsize = "1 minute"',
     "source_column and sources go together"),
    ('key = "k"\nsource_column = "feed"\nsources = []', 'type = "tumbling"\nsize = "1 minute"',
     "sources must be a non-empty list of source names, got \\[\\]"),
    ('key = "k"\nidle_timeout = "0 ms"', 'type = "tumbling"\nsize = "1 minute"',
     "idle timeout must be a positive number of ms, got 0"),
    ('key = "k"', 'type = "tumbling_event"\nsize = "1 minute"',
     "window type 'tumbling_event' is not one of .*'tumbling_processing_time', 'sliding_processing_time'"),
])
def test_job_files_name_bad_watermark_and_processing_time_settings(tmp_path, source, window, message):
    with pytest.raises(ValueError, match=message):
        load_job(_job_file(tmp_path, "bad", source, window), root=tmp_path)
