"""What an operator meets: validation of every committed batch, row accounting, far-past rows, exit codes.

Real Spark, Delta, Great Expectations and the real ``winjob`` entry point
(a subprocess) on the demo job. One stream root is built by the module
fixture: two arrivals, the second run failing at a fault stage after its
batch committed, then a rerun. The tests then break copies of its tables.
"""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from driver_calls import validations_asked
from job_files import demo_job_file
from pipelines.cli import main as winjob
from examples.demo import generate_purchases, land
from pipelines.drivers import chunk_range, describe, range_and_chunks, run_backfill, run_stream
from pipelines.errors import ExitCode
from pipelines.job import load_job
from pipelines.quality import DataQualityError, read_runs, validate_job
from windowing.core.records import BatchMetrics
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.spark.operator.protocol import BatchReport

pytestmark = [pytest.mark.xdist_group("operations")]

YEAR_ONE = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)


class Fault(Exception):
    """Raised by the fault hook: the run dies at that stage."""


def _fault_at(stage: str, batch_after: int):
    """A fault hook raising at ``stage`` of the first batch after ``batch_after`` batches passed it."""
    seen = []

    def hook(name: str) -> None:
        if name == stage:
            seen.append(name)
            if len(seen) == batch_after + 1:
                raise Fault(f"fault at {stage}")
    return hook


def test_describe_shows_any_watermark():
    """A row dated year 1 puts the watermark before any date Python has: the line still prints."""
    far_past_ms = int((YEAR_ONE - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)).total_seconds() * 1000)
    report = BatchReport(0, False, -(2**63), far_past_ms - 10_001, BatchMetrics(input_rows=1, accepted_rows=1), 0.1,
                         "time")
    assert f"watermark {far_past_ms - 10_001} ms since epoch" in describe(report)
    report.watermark_after_ms = far_past_ms
    assert "watermark 0001-01-01 00:00:00.000" in describe(report)


# ------------------------------------------------------------------ stream
@pytest.fixture(scope="module")
def stream_root(spark, tmp_path_factory):
    """A validated stream of two arrivals whose second run fails after its batch committed, then reruns."""
    root = tmp_path_factory.mktemp("operations")
    job_file = demo_job_file(root, validate_runs=True)
    job = load_job(job_file, root=root)
    rows = generate_purchases(n_events=240, n_users=5, minutes=6, seed=11)
    # Three purchases from the first seconds that arrive with the second half: late rows.
    late = [(f"late{i}", "u001", 1, rows[0][3], rows[-1][4]) for i in range(3)]
    half = len(rows) // 2
    land(spark, rows[:half], job.source_path)
    run_stream(spark, job)
    land(spark, rows[half:] + late, job.source_path)
    with pytest.raises(Exception) as failure:
        run_stream(spark, job, fault_injection=_fault_at("after_progress", 0))
    assert "fault at after_progress" in str(failure.value)
    with validations_asked() as asked:
        rerun = run_stream(spark, job)
    return {"root": root, "job_file": job_file, "job": job, "rerun": rerun, "rerun_validations": asked}


@pytest.mark.spark
def test_a_batch_committed_before_a_crash_is_validated_by_the_next_run(spark, stream_root):
    job = stream_root["job"]
    assert [r.skipped for r in stream_root["rerun"]] == [True], "the rerun replays the committed batch"
    progress = spark.read.format("delta").load(f"{job.state_root}/{job.operator_id}/progress")
    committed = sorted(r["batch_id"] for r in progress.collect())
    assert committed == [0, 1]
    runs = read_runs(spark, job).where("run_kind = 'stream'")
    per_batch = {r["batch_id"]: r["runs"] for r in
                 runs.groupBy("batch_id").agg(F.countDistinct("run_id").alias("runs")).collect()}
    assert per_batch == {0: 1, 1: 1}, "each committed batch validated exactly once"
    replayed = runs.where("batch_id = 1").collect()
    suites = {r["suite"] for r in replayed}
    assert {"raw_events", "row_accounting"} <= suites, "the replay validates with the batch's raw rows"
    assert all(r["failed_critical"] == 0 for r in replayed)
    # The replayed batch is validated with the small-batch settings: the new run read the operator's
    # small committed state into the driver when it opened its tables.
    assert stream_root["rerun_validations"] == [(1, {"spark.sql.adaptive.enabled": "false",
                                                     "spark.sql.shuffle.partitions": "2"})]
    # A run with nothing new validates nothing again.
    run_stream(spark, job)
    assert read_runs(spark, job).where("run_kind = 'stream'").select("run_id").distinct().count() == 2


def _copy_with(spark, job, tmp_path, kind: str, change):
    """The job with its ``kind`` table (results/late/quarantine) replaced by a changed copy."""
    path = str(tmp_path / f"{kind}_copy")
    change(spark.read.format("delta").load(getattr(job, f"{kind}_path"))).write.format("delta").save(path)
    return job.__class__(**{**job.__dict__, f"{kind}_path": path})


@pytest.mark.spark
def test_row_accounting_names_the_batch_that_lost_result_rows(spark, stream_root, tmp_path):
    job = stream_root["job"]
    results = spark.read.format("delta").load(job.results_path)
    assert results.count() > 20
    gone = results.orderBy(F.col("batch_id").desc(), "user_id", "window_start_ms").limit(20).persist()
    batches = sorted(r["batch_id"] for r in gone.select("batch_id").distinct().collect())
    lost = _copy_with(spark, job, tmp_path, "results", lambda df: df.exceptAll(gone))
    assert validate_job(spark, job, suites=["row_accounting"]).success
    with pytest.raises(DataQualityError) as error:
        validate_job(spark, lost, suites=["row_accounting"])
    assert "row_accounting: expect_result_rows_to_match_panes_emitted" in str(error.value)
    named = f"in batch {batches[0]}" if len(batches) == 1 else f"in batches {', '.join(map(str, batches))}"
    assert named in str(error.value), (named, str(error.value))


@pytest.mark.spark
def test_cli_validate_fails_on_duplicated_late_rows_naming_the_batch(spark, stream_root, capsys):
    job = stream_root["job"]
    late = spark.read.format("delta").load(job.late_path)
    batch = late.groupBy("batch_id").count().orderBy(F.col("count").desc()).first()["batch_id"]
    assert late.where(F.col("batch_id") == batch).count() >= 3
    # Five late rows written twice, straight into the job's late table.
    late.where(F.col("batch_id") == batch).limit(3).unionByName(late.where(F.col("batch_id") == batch).limit(2)) \
        .write.format("delta").mode("append").save(job.late_path)
    code = winjob(["validate", "--job", str(stream_root["job_file"]), "--root", str(stream_root["root"]),
                   "--suite", "row_accounting"])
    captured = capsys.readouterr()
    assert code == ExitCode.DATA_QUALITY
    assert "FAIL row_accounting" in captured.out
    assert "expect_late_rows_to_match_progress" in captured.err and f"in batch {batch}" in captured.err


# ---------------------------------------------------------------- backfill
@pytest.mark.spark
def test_far_past_row_resumed_backfill_visits_rows_and_reconciles(spark, tmp_path):
    """One row dated year 1: the backfill visits the chunks with rows only; after a crash the rerun
    resumes and still reconciles every row of the whole backfill."""
    job_file = demo_job_file(tmp_path, validate_runs=True)
    job = load_job(job_file, root=tmp_path).with_operator("purchases_1m_backfill", "backfill")
    rows = generate_purchases(n_events=120, n_users=4, minutes=25, seed=5)
    rows.append(("ancient", "u000", 2, YEAR_ONE, YEAR_ONE))
    land(spark, rows, job.source_path)
    with pytest.raises(Fault):
        run_backfill(spark, job, fault_injection=_fault_at("after_progress", 1))
    reports = run_backfill(spark, job)
    visited = [r.batch_id for r in reports]
    # year 1 .. now in 10-minute chunks: chunk 0 (the year-1 row), the three of the 25 minutes (the
    # last one ends the input: no flush batch)
    assert len(visited) == 4 and visited[0] == 0 and visited[-1] > 100_000_000
    assert [r.skipped for r in reports] == [True, True, False, False]
    assert reports[-1].watermark_after_ms == MAX_TIMESTAMP_MS
    results = spark.read.format("delta").load(job.results_path)
    assert results.agg(F.sum("purchases")).first()[0] == len(rows) - 3      # every valid row, the year-1 one too
    recon = read_runs(spark, job).where("suite = 'reconciliation'").collect()
    assert len(recon) == 1 and recon[0]["success"] is True
    accounting = read_runs(spark, job).where("suite = 'row_accounting'").collect()
    assert len(accounting) == 1 and accounting[0]["success"] is True


@pytest.mark.spark
def test_the_range_and_its_chunks_in_one_aggregate_are_those_of_the_two_passes(spark):
    """Times on and beside chunk and cell boundaries, a gap of empty chunks, a row before 1970, a null."""
    chunk_ms = 600_000
    first = -1_234_567
    times = [first, first + chunk_ms - 1, first + chunk_ms, first + 2 * chunk_ms + 5, 0, chunk_ms - 1, chunk_ms,
             first + 9 * chunk_ms, first + 9 * chunk_ms + chunk_ms // 2, 7 * chunk_ms, 7 * chunk_ms - 1, None]
    rows = spark.createDataFrame([(t,) for t in times], "ms long")
    ms = F.col("ms")
    (lo, hi), chunks = range_and_chunks(rows, ms, chunk_ms)
    valid = [t for t in times if t is not None]
    assert (lo, hi) == (min(valid), max(valid))
    assert chunks == chunk_range(rows.where(ms.isNotNull()), ms, lo, chunk_ms)
    assert chunks == sorted({(t - lo) // chunk_ms for t in valid})
    assert range_and_chunks(rows.where(F.lit(False)), ms, chunk_ms) == ((None, None), None)


# --------------------------------------------------------------------- CLI
def _winjob(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """The real ``winjob`` entry point in a new process (the installed console script)."""
    script = Path(sys.executable).with_name("winjob")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]
    # A short process on a few rows: its JVM (if it starts one) with the C1 compiler alone, about half the CPU.
    tool_options = " ".join(filter(None, [os.environ.get("JAVA_TOOL_OPTIONS"), "-XX:TieredStopAtLevel=1"]))
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, JAVA_TOOL_OPTIONS=tool_options))


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr and "\tat " not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("winjob ")]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def test_cli_bad_job_value_is_a_job_error(tmp_path):
    job_file = demo_job_file(tmp_path, replace={'size = "1 minute"': 'size = "one minute"'})
    done = _winjob("stream", "--job", str(job_file), "--root", str(tmp_path))
    assert done.returncode == ExitCode.JOB
    line = _one_error_line(done.stderr)
    assert str(job_file) in line and "one minute" in line


def test_cli_missing_raw_table_and_non_delta_folder_are_input_errors(tmp_path):
    job_file = demo_job_file(tmp_path)
    done = _winjob("stream", "--job", str(job_file), "--root", str(tmp_path))
    assert done.returncode == ExitCode.INPUT
    line = _one_error_line(done.stderr)
    assert f"{tmp_path}/raw/purchases does not exist" in line and "[source] path" in line
    folder = tmp_path / "raw" / "purchases"
    folder.mkdir(parents=True)
    (folder / "part-0.csv").write_text("event_id,user_id\n")
    done = _winjob("backfill", "--job", str(job_file), "--root", str(tmp_path))
    assert done.returncode == ExitCode.INPUT
    assert "is not a Delta table (it has no _delta_log)" in _one_error_line(done.stderr)
    assert "DELTA_SCHEMA_NOT_SET" not in done.stderr
    verbose = _winjob("backfill", "--job", str(job_file), "--root", str(tmp_path), "--verbose")
    assert verbose.returncode == ExitCode.INPUT and "Traceback" in verbose.stderr   # the trace, on request


@pytest.mark.spark
@pytest.mark.slow
def test_cli_corrupt_parquet_file_is_an_input_error(spark, tmp_path):
    job_file = demo_job_file(tmp_path)
    job = load_job(job_file, root=tmp_path)
    land(spark, generate_purchases(n_events=60, n_users=3, minutes=3), job.source_path)
    victim = sorted(Path(job.source_path).glob("*.parquet"))[0]
    victim.write_bytes(b"not a parquet file")
    done = _winjob("backfill", "--job", str(job_file), "--root", str(tmp_path))
    assert done.returncode == ExitCode.INPUT, done.stderr[-3000:]
    line = _one_error_line(done.stderr)
    assert victim.name in line and "missing or corrupt" in line
