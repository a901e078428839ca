"""The two drivers and the CLI on real Spark Structured Streaming and Delta."""
from __future__ import annotations

import json

import pytest

from pipelines.cli import main as winjob
from pipelines.job import load_job

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.production_spark]


@pytest.mark.xdist_group("demo")     # shares the process's demo run (tests/conftest.py) with the browser checks
def test_demo_stream_and_backfill_agree_and_account_for_every_row(spark, demo_run, capsys):
    summary, root = demo_run["summary"], demo_run["root"]
    assert summary["compared"] > 100
    assert summary["differ"] == 0
    assert summary["late"] > 0 and summary["quarantined"] == 3
    # Complete backfill: every valid raw row is counted in a final window.
    assert summary["backfill_total"] == summary["raw"] - summary["quarantined"]
    out = demo_run["out"]
    assert "Late rows" in out and "0 differ" in out

    # inspect reads the stream's tables; a rerun of the stream finds nothing new.
    job = load_job("jobs/purchases_per_minute.toml", root=root)
    assert winjob(["inspect", "--job", "jobs/purchases_per_minute.toml", "--root", str(root)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["tables"]["raw"]["rows"] == summary["raw"]
    assert info["tables"]["late"]["rows"] == summary["late"]
    assert info["last_batch_id"] == 2 and info["watermark_ms"] > 0
    results_before = spark.read.format("delta").load(job.results_path).count()
    assert winjob(["stream", "--job", "jobs/purchases_per_minute.toml", "--root", str(root)]) == 0
    assert spark.read.format("delta").load(job.results_path).count() == results_before
    assert "nothing new since batch 2" in capsys.readouterr().err

    # Every shipped job finds its raw table under the demo's root (the data root of ./dev airflow).
    from pathlib import Path
    from windowing.spark.lake import delta_lake_io
    for path in sorted(Path("jobs").glob("*.toml")):
        source = load_job(path, root=root).source_path
        assert delta_lake_io.table_exists(spark, source), (path, source)
        assert spark.read.format("delta").load(source).count() > 100, (path, source)


@pytest.fixture(scope="module")
def backfilled(spark, tmp_path_factory, production_settings):
    """600 purchases landed, and a chunked backfill of them (10-minute chunks, the last ending the input).

    The demo job without the drivers' own validation: what is checked with it is what backfills write.
    """
    from examples.demo import generate_purchases, land
    from job_files import demo_job_file
    from pipelines.drivers import run_backfill
    folder = tmp_path_factory.mktemp("backfilled")
    job_file = demo_job_file(folder)
    root = folder / "demo"
    job = load_job(job_file, root=root).with_operator("purchases_1m_backfill", "backfill")
    rows = generate_purchases(n_events=600)
    land(spark, rows, job.source_path)
    with production_settings(spark):   # as the module's tests run
        reports = run_backfill(spark, job)
    return {"job_file": job_file, "root": root, "job": job, "rows": rows, "reports": reports}


# The tests on the module's backfill run in one test process (a module-scoped fixture).
@pytest.mark.xdist_group("pipelines_backfilled")
def test_backfill_rerun_is_idempotent(spark, backfilled):
    """A completed chunked backfill run again skips every chunk and writes nothing; the CLI runs one too."""
    from pipelines.drivers import run_backfill
    job_file, root, job, rows, first = (backfilled[k] for k in ("job_file", "root", "job", "rows", "reports"))
    assert len(first) >= 2 and not any(r.skipped for r in first)   # 10-minute chunks
    before = sorted(tuple(r) for r in spark.read.format("delta").load(job.results_path).collect())
    assert len(before) > 100
    assert winjob(["backfill", "--job", str(job_file), "--root", str(root)]) == 0  # the job's own operator
    reports = run_backfill(spark, job)
    assert len(reports) == len(first) and all(r.skipped for r in reports)
    assert sorted(tuple(r) for r in spark.read.format("delta").load(job.results_path).collect()) == before
    stream_job = load_job(job_file, root=root)   # what the CLI backfill wrote: every valid purchase once
    assert spark.read.format("delta").load(stream_job.results_path).groupBy().sum("purchases").first()[0] == len(rows) - 3


def test_cli_reports_bad_job_definitions(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[job]\nname="x"\noperator_id="x"\n[source]\npath="raw"\nkey="k"\nevent_time="ts"\n'
                   '[window]\ntype="tumbling"\nsize="-5 minutes"\n[aggregates]\nt="sum(v)"\n')
    assert winjob(["inspect", "--job", str(bad)]) == 2
    assert "size_ms must be a positive number of milliseconds, got -300000" in capsys.readouterr().err
    bad.write_text(bad.read_text().replace('"-5 minutes"', '"5 minutes"').replace('"sum(v)"', '"median(v)"'))
    assert winjob(["inspect", "--job", str(bad)]) == 2
    assert "median(v)" in capsys.readouterr().err


def test_long_running_stream_with_processing_time_trigger(spark, tmp_path):
    """A processing-time trigger keeps the query running; rows landing meanwhile are processed.

    The second half lands after the query has processed the first, and the query is
    stopped (as an operator stops it) once every row has been processed: no fixed wait.
    """
    import threading
    import time

    from examples.demo import generate_purchases, land
    from pipelines.drivers import run_stream
    job = load_job("jobs/purchases_per_minute.toml", root=tmp_path)
    rows = generate_purchases(n_events=300, n_users=5, minutes=5)
    land(spark, rows[:150], job.source_path)
    seen, first_done, all_done = [], threading.Event(), threading.Event()

    def on_batch(report):
        seen.append(report)
        if report.metrics.input_rows:
            first_done.set()
        if sum(r.metrics.input_rows for r in seen) == len(rows):
            all_done.set()

    def operator():
        """Lands the second half while the query runs, then stops the query between two batches."""
        if not first_done.wait(300):
            return
        land(spark, rows[150:], job.source_path)
        if not all_done.wait(300):
            return
        query, = spark.streams.active
        while query.status["isTriggerActive"]:   # the last batch commits to the checkpoint first
            time.sleep(0.2)
        query.stop()

    thread = threading.Thread(target=operator, daemon=True)
    thread.start()
    # validate=False: per-batch data quality is tested in test_quality.py. The timeout only bounds a
    # run that never sees every row (the thread above stops the query once it has).
    reports = run_stream(spark, job, processing_time="3 seconds", timeout_s=300, on_batch=on_batch,
                         validate=False)
    thread.join(60)
    processed = [r for r in reports if not r.skipped and r.metrics.input_rows]
    assert len(processed) >= 2, [r.metrics for r in reports]
    assert sum(r.metrics.input_rows for r in reports) == len(rows)
    assert seen == reports


@pytest.mark.xdist_group("pipelines_backfilled")
def test_backfill_in_one_pass_equals_chunked_backfill(spark, backfilled):
    """chunk='all' (one batch, flush fused, one-pass plan) gives the final results of a
    chunked backfill (the module's), quarantines the same rows, and keeps no window state."""
    from pyspark.sql import functions as F

    from examples.demo import latest_panes
    from pipelines.drivers import run_backfill
    rows, chunked, chunked_reports = backfilled["rows"], backfilled["job"], backfilled["reports"]
    one = chunked.with_operator("one_pass", "one_pass")
    # validate=False: the comparison is the check here (validation is tested in test_quality.py)
    one_reports = run_backfill(spark, one, chunk="all", validate=False)
    assert [r.plan for r in one_reports] == ["closing"]
    assert len(chunked_reports) >= 2 and all(r.plan == "time" for r in chunked_reports)
    cols = ["user_id", "window_start_ms", "window_end_ms", "items", "purchases", "max_items"]
    a = latest_panes(spark, one.results_path).select(*cols)
    b = latest_panes(spark, chunked.results_path).select(*cols)
    assert a.count() > 50 and a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0
    assert a.agg(F.sum("purchases")).first()[0] == len(rows) - 3
    m = one_reports[0].metrics
    assert (m.input_rows, m.accepted_rows, m.quarantined_rows, m.late_rows) == (len(rows), len(rows) - 3, 3, 0)
    assert m.panes_emitted == a.count()
    assert spark.read.format("delta").load(one.quarantine_path).count() == 3
    assert spark.read.format("delta").load(one.late_path).count() == 0
    from windowing.spark.lake import delta_lake_io
    assert not delta_lake_io.table_exists(spark, f"{one.state_root}/{one.operator_id}/windows")   # keeps no state
    assert all(r.skipped for r in run_backfill(spark, one, chunk="all", validate=False))   # rerun: nothing written twice
    assert spark.read.format("delta").load(one.results_path).count() == m.panes_emitted


@pytest.mark.xdist_group("pipelines_backfilled")
def test_last_chunk_ends_the_input_and_a_run_resumed_without_that_flushes_apart(spark, backfilled, monkeypatch):
    """The module's chunked backfill ended its input in its last chunk (no flush batch). A run whose
    chunks were all committed without ending the input (a run that stopped before its separate flush)
    is finished by a rerun with the flush alone: the same final panes."""
    from examples.demo import latest_panes
    from pipelines.drivers import run_backfill
    from windowing.core.time import MAX_TIMESTAMP_MS
    from windowing.spark.operator.protocol import WindowOperator
    chunked, reports = backfilled["job"], backfilled["reports"]
    assert reports[-1].watermark_after_ms == MAX_TIMESTAMP_MS and reports[-1].plan == "time"
    assert all(r.watermark_after_ms < MAX_TIMESTAMP_MS for r in reports[:-1])
    assert [r.batch_id for r in reports] == sorted({r.batch_id for r in reports})   # chunk ids only: no flush id

    apart = chunked.with_operator("flushed_apart", "flushed_apart")
    process_batch = WindowOperator.process_batch

    def chunk_without_end(self, df, batch_id, watermark_ms=None, processing_time_ms=None):
        return process_batch(self, df, batch_id, None, processing_time_ms)

    def stop(self, batch_id, processing_time_ms=None):
        raise RuntimeError("stopped before the flush")
    monkeypatch.setattr(WindowOperator, "process_batch", chunk_without_end)
    monkeypatch.setattr(WindowOperator, "flush", stop)
    with pytest.raises(RuntimeError, match="before the flush"):
        run_backfill(spark, apart, validate=False)
    monkeypatch.undo()
    resumed = run_backfill(spark, apart, validate=False)
    assert all(r.skipped for r in resumed[:-1]) and not resumed[-1].skipped
    assert resumed[-1].batch_id > reports[-1].batch_id and resumed[-1].watermark_after_ms == MAX_TIMESTAMP_MS
    cols = ["user_id", "window_start_ms", "window_end_ms", "items", "purchases", "max_items"]
    a = latest_panes(spark, apart.results_path).select(*cols)
    b = latest_panes(spark, chunked.results_path).select(*cols)
    assert a.count() > 50 and a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0
