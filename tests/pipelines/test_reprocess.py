"""Reprocessing a time range (pipelines/reprocess.py) and its CLI, on real Spark and Delta."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pipelines.cli import main as winjob
from examples.demo import START, generate_purchases, land
from pipelines.job import load_job

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "jobs" / "purchases_per_minute.toml"
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("reprocess")]  # module-scoped fixtures: one test process


@pytest.fixture(scope="module")
def streamed(spark, tmp_path_factory):
    """The demo job's raw table (600 purchases over 20 minutes) after one streaming run, and its root folder.

    Shared by the module's tests: none of them changes what the stream wrote (a failed
    reprocessing leaves it untouched, the others are refused or write new tables).
    """
    from pipelines.drivers import run_stream
    root = tmp_path_factory.mktemp("reprocess")
    job = load_job(DEMO, root=root)
    rows = generate_purchases(n_events=600)
    land(spark, rows, job.source_path)
    run_stream(spark, job, validate=False)
    return job, rows, root


def _table(spark, path):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _version(spark, path):
    from delta.tables import DeltaTable
    return DeltaTable.forPath(spark, path).history(1).first()["version"]


def test_a_failure_before_the_replace_leaves_the_results_untouched(spark, streamed, monkeypatch, tmp_path):
    from job_files import demo_job_file
    from pipelines import reprocess
    _, _, root = streamed
    # The demo job without the drivers' own validation of the staged outputs (the point here is
    # what the failure leaves; the CLI test below reprocesses with validation as shipped).
    job = load_job(demo_job_file(tmp_path), root=root)
    before, version = _table(spark, job.results_path), _version(spark, job.results_path)
    real = reprocess.run_backfill

    def computes_then_dies(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("executor lost after the staging tables were written")

    monkeypatch.setattr(reprocess, "run_backfill", computes_then_dies)
    with pytest.raises(RuntimeError, match="executor lost"):
        reprocess.reprocess_range(spark, job, START, START + dt.timedelta(minutes=10), window={"size": "2 minutes"})
    assert _version(spark, job.results_path) == version and _table(spark, job.results_path) == before
    assert not list(Path(job.state_root, "_staging").glob("*"))  # the staging folder is removed


def test_reprocess_refuses_ranges_and_windows_it_cannot_do(spark, streamed):
    from pipelines.reprocess import new_output_job, reprocess_range
    job, _, _ = streamed
    with pytest.raises(ValueError, match="range is empty"):
        reprocess_range(spark, job, START, START)
    with pytest.raises(ValueError, match="GlobalWindows windows have no time range"):
        reprocess_range(spark, job, START, START + dt.timedelta(minutes=5), window={"type": "count", "size": 10, "mode": "discarding"})
    with pytest.raises(ValueError, match=r"unknown keys \['length'\]"):
        reprocess_range(spark, job, START, START + dt.timedelta(minutes=5), window={"length": "5 minutes"})
    with pytest.raises(ValueError, match="'five-min' must be letters, digits or '_'"):
        new_output_job(job, "five-min")


def test_cli_reprocess_into_a_new_table_with_sliding_windows(spark, streamed, capsys):
    job, rows, root = streamed
    args = ["reprocess", "--job", str(DEMO), "--root", str(root), "--start", "2026-11-01T09:00",
            "--end", "2026-11-01T09:10", "--window", '{"type": "sliding", "size": "2 minutes", "slide": "1 minute"}',
            "--into", "sliding"]
    assert winjob(args) == 0
    report = json.loads(capsys.readouterr().out)
    sliding = spark.read.format("delta").load(report["results_path"])
    assert report["results_path"].endswith("results_sliding") and report["rows"]["results"] == sliding.count()
    got = {r[0]: r[1] for r in sliding.groupBy("window_end_ms").sum("purchases").collect()}
    start_ms = int(START.timestamp() * 1000)
    assert sorted(got) == [start_ms + 60_000 * k for k in range(1, 11)]
    # Each 2-minute window counts the valid purchases of its two minutes, the first one only its own.
    valid = [int(r[3].timestamp() * 1000) for r in rows if r[1] is not None and r[3] is not None]
    for end_ms, purchases in got.items():
        assert purchases == sum(1 for t in valid if end_ms - 120_000 <= t < end_ms)
    assert winjob(["reprocess", "--job", str(DEMO), "--root", str(root), "--start", "2026-11-01T09:00",
                   "--end", "2026-11-01T09:10", "--window", '{"type": "count", "size": 5, "mode": "discarding"}']) == 2
    assert "have no time range" in capsys.readouterr().err
