"""The per-key path in the drivers: a job with a user trigger, streamed and backfilled on real Delta."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pipelines.job import load_job

pytestmark = [pytest.mark.spark, pytest.mark.production_spark]

START = dt.datetime(2026, 11, 1, 9, 0, 0)
JOB = Path(__file__).resolve().parents[2] / "jobs" / "custom_trigger.toml"


def _row(i: int, user: str, items: int, second: int) -> tuple:
    at = START + dt.timedelta(seconds=second)
    return (f"e{i}", user, items, at, at)


def test_job_with_user_trigger_streams_and_backfills_to_the_same_results(spark, tmp_path, capsys):
    from pipelines.cli import main as winjob
    from examples.demo import land, latest_panes
    from pipelines.drivers import run_backfill, run_stream
    job = load_job(JOB, root=tmp_path)
    # u1's three large purchases (>= 5 items) of [09:00, 09:01) arrive in two stream batches: the
    # EARLY pane of the third needs the count that the first batch left in the Delta keyed state.
    arrivals = [
        [_row(0, "u1", 7, 1), _row(1, "u2", 1, 2), _row(2, "u2", 9, 3)],
        [_row(3, "u1", 2, 10), _row(4, "u1", 6, 20), _row(5, "u2", 3, 30), _row(6, "u1", 8, 40),
         _row(7, "u2", 5, 50)],
        # the watermark passes 09:02:30: [09:00, 09:01) and [09:01, 09:02) close (30 s allowed lateness)
        [_row(8, "u1", 1, 75), _row(9, "u2", 2, 100), _row(10, "u1", 3, 200)],
    ]
    reports = []
    for rows in arrivals:
        land(spark, rows, job.source_path)
        reports += run_stream(spark, job, validate=False)
    assert {r.plan for r in reports} == {"keyed"} and len(reports) == 3
    results = spark.read.format("delta").load(job.results_path)
    early = results.where("user_id = 'u1' AND timing = 'EARLY'").collect()
    assert [(r.window_start_ms, r.purchases, r.items, r.batch_id) for r in early] == \
        [(int(START.replace(tzinfo=dt.timezone.utc).timestamp() * 1000), 4, 23, reports[1].batch_id)]

    backfill = job.with_operator("large_backfill", "backfill")
    backfill_reports = run_backfill(spark, backfill, validate=False)
    assert [r.plan for r in backfill_reports] == ["keyed"]
    cols = ["user_id", "window_start_ms", "window_end_ms", "items", "purchases", "timing", "is_final"]
    streamed = latest_panes(spark, job.results_path).where("is_final").select(*cols)
    backfilled = latest_panes(spark, backfill.results_path).select(*cols)
    # the stream closed [09:00, 09:01) and [09:01, 09:02) of both users; u1's [09:03, 09:04) is still open
    assert streamed.count() == 4
    assert streamed.exceptAll(backfilled).count() == 0
    assert backfilled.groupBy().sum("purchases").first()[0] == 11   # every row, in the backfill's final panes
    # the same EARLY firing in the backfill (one batch): the trigger's count is exact within a batch
    assert backfill_reports[0].metrics.panes_emitted == backfilled.count() + 1

    assert winjob(["inspect", "--job", str(JOB), "--root", str(tmp_path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["execution_path"].startswith("per-key model (no DataFrame plan for trigger EveryNthLarge")
    assert info["tables"]["keyed state (per-key path)"]["rows"] >= 2   # operator row + open keys
