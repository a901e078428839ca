"""Exact replay of a stream (pipelines/replay.py) on real Spark, Delta and Structured Streaming.

One stream of the demo job with early firings (every third element of a window)
runs three times over rows that arrive in three parts (the second part in two
commits): three micro-batches with early, on-time and late panes, late rows and
quarantined rows. The replays must write the stream's rows; a replay with another
window spec must write what a fresh operator of that spec writes when fed the
same arrivals directly (the oracle: the rows each batch got, known to the test,
and the processing times the stream recorded), not read back through the offsets.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import main as winjob
from examples.demo import RAW_SCHEMA, generate_purchases, land
from pipelines.job import load_job

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("replay")]  # module-scoped fixtures

EARLY_EVERY_THIRD = {'late_output = true': 'late_output = true\ntrigger = { type = "early_late", early_every_n = 3 }'}
OTHER_WINDOW = {"size": "2 minutes"}
TABLES = ("results", "late", "quarantine")


@pytest.fixture(scope="module")
def streamed(spark, tmp_path_factory):
    """The stream of three batches: ``(job, job file, root, rows fed per batch)``."""
    from job_files import demo_job_file
    from pipelines.drivers import run_stream
    root = tmp_path_factory.mktemp("replay")
    job_file = demo_job_file(root, replace=EARLY_EVERY_THIRD)
    job = load_job(job_file, root=root)
    rows = generate_purchases(n_events=450)   # in arrival order
    parts = [rows[:150], rows[150:230], rows[230:300], rows[300:]]
    land(spark, parts[0], job.source_path)
    run_stream(spark, job, validate=False)
    land(spark, parts[1], job.source_path)   # two commits, one batch
    land(spark, parts[2], job.source_path)
    run_stream(spark, job, validate=False)
    land(spark, parts[3], job.source_path)
    run_stream(spark, job, validate=False)
    return job, job_file, root, [parts[0], parts[1] + parts[2], parts[3]]


def _rows(spark, path, batches=None):
    df = spark.read.format("delta").load(path)
    if batches is not None:
        df = df.where(df.batch_id.between(*batches))
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _progress(spark, job):
    from windowing.spark.state.stores import DeltaStore
    store = DeltaStore(spark, job.operator_id, job.state_root)
    return {r["batch_id"]: r.asDict() for r in spark.read.format("delta").load(store.progress_path).collect()}


def test_the_stream_has_three_batches_with_early_panes_late_and_quarantined_rows(spark, streamed):
    job, _, _, fed = streamed
    progress = _progress(spark, job)
    assert sorted(progress) == [0, 1, 2]
    assert [json.loads(progress[b]["metrics"])["input_rows"] for b in (0, 1, 2)] == [len(p) for p in fed]
    timings = {r[0] for r in spark.read.format("delta").load(job.results_path).select("timing").distinct().collect()}
    assert {"EARLY", "ON_TIME"} <= timings
    assert len(_rows(spark, job.late_path)) > 0 and len(_rows(spark, job.quarantine_path)) > 0
    assert all(progress[b]["source_offsets"] for b in progress)


def test_each_batch_reads_exactly_the_files_its_commits_added(spark, streamed):
    from pipelines.replay import recorded_batches, plan_replay
    from pipelines.replay_source import batch_rows, file_names
    job, _, _, fed = streamed
    batches, _, _ = plan_replay(job, recorded_batches(spark, job), None, None)
    log = Path(job.source_path, "_delta_log")
    added = [[json.loads(line)["add"]["path"] for line in (log / f"{v:020d}.json").read_text().splitlines()
              if line.startswith('{"add"')] for v in range(4)]
    assert [sorted(file_names(spark, job.source_path, b.offsets, b.batch_id)) for b in batches] == \
        [sorted(added[0]), sorted(added[1] + added[2]), sorted(added[3])]
    for batch, rows in zip(batches, fed):
        got = batch_rows(spark, job.source_path, batch.offsets, batch.batch_id)
        landed = spark.createDataFrame(rows, RAW_SCHEMA)
        assert got.count() == len(rows)
        assert got.exceptAll(landed).count() == 0 and landed.exceptAll(got).count() == 0


@pytest.mark.parametrize("from_batch", [0, 1], ids=["whole", "from-the-middle"])
def test_a_replay_writes_the_streams_rows_row_for_row(spark, streamed, from_batch):
    from pipelines.replay import replay_stream
    job, _, _, _ = streamed
    report = replay_stream(spark, job, f"same_{from_batch}", from_batch=from_batch, diff=True)
    assert (report.from_batch, report.to_batch, report.first_batch) == (from_batch, 2, 0)
    for kind in TABLES:
        replayed = _rows(spark, getattr(report, f"{kind}_path"))
        assert replayed == _rows(spark, getattr(job, f"{kind}_path"), (from_batch, 2)), kind
        assert replayed and {r[-1] for r in replayed} <= set(range(from_batch, 3)), kind   # batch_id is last
    assert report.diff.empty, report.diff.summary()
    assert "no differences" in report.diff.summary()
    assert not Path(report.results_path).parent.joinpath("_warmup").exists()
    replay_job_progress = _progress(spark, load_replay(job, f"same_{from_batch}"))
    stream_progress = _progress(spark, job)
    for b in range(3):   # every batch again, with the stream's time and the same counts
        for column in ("watermark_ms", "max_seen_ms", "processing_time_ms", "metrics", "source_offsets"):
            same = json.loads(stream_progress[b][column]) if column == "metrics" else stream_progress[b][column]
            got = json.loads(replay_job_progress[b][column]) if column == "metrics" else replay_job_progress[b][column]
            if column == "metrics":
                same, got = _counts(same), _counts(got)
            assert got == same, (b, column)


def load_replay(job, name, window=None):
    from pipelines.replay import replay_job
    return replay_job(job, name, window)


def _counts(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k.endswith("_rows") or k.startswith("panes")}


def test_a_replay_with_another_window_equals_a_fresh_operator_fed_the_same_arrivals(spark, streamed):
    from pipelines.drivers import operator_for
    from pipelines.replay import replay_stream
    job, _, root, fed = streamed
    report = replay_stream(spark, job, "two_min", window=OTHER_WINDOW, diff=True)
    # The oracle: the new spec's operator, fed each batch's rows as the test landed them.
    oracle_root = str(Path(root) / "oracle")
    variant = job.with_window(OTHER_WINDOW)
    oracle = variant.with_outputs("oracle", f"{oracle_root}/state", f"{oracle_root}/results",
                                  f"{oracle_root}/late", f"{oracle_root}/quarantine")
    operator = operator_for(spark, oracle)
    progress = _progress(spark, job)
    for batch_id, rows in enumerate(fed):
        operator.process_batch(spark.createDataFrame(rows, RAW_SCHEMA), batch_id,
                               processing_time_ms=progress[batch_id]["processing_time_ms"])
    for kind in TABLES:
        assert _rows(spark, getattr(report, f"{kind}_path")) == _rows(spark, getattr(oracle, f"{kind}_path")), kind
    # The diff: the oracle's panes against the stream's, matched by key, window and pane index.
    columns = ("user_id", "window_start_ms", "window_end_ms", "pane_index")
    stream = _panes(spark, job.results_path, columns)
    new = _panes(spark, oracle.results_path, columns)
    added, removed = set(new) - set(stream), set(stream) - set(new)
    changed = {p for p in set(new) & set(stream) if new[p] != stream[p]}
    d = report.diff.results
    assert (d.added, d.removed, d.changed) == (len(added), len(removed), len(changed))
    assert d.added > 0 and d.removed > 0 and not report.diff.empty
    summary = report.diff.summary()
    assert f"{d.added} added, {d.changed} changed, {d.removed} removed" in summary
    assert "the stream's: " in summary and "TumblingEventTimeWindows(size_ms=120000" in summary


def _panes(spark, path, identity):
    df = spark.read.format("delta").load(path)
    values = [c for c in df.columns if c not in identity]
    return {tuple(r[c] for c in identity): tuple(r[c] for c in values) for r in df.collect()}


def test_cli_replay_with_diff_prints_the_summary(spark, streamed, capsys):
    job, job_file, root, _ = streamed
    code = winjob(["replay", "--job", str(job_file), "--root", str(root), "--into", "cli", "--from-batch", "2",
                   "--to-batch", "2", "--diff"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out[:out.index("\n}\n") + 2])["diff"]["empty"] is True
    assert "batches 2..2" in out and "no differences" in out


def test_cli_refuses_a_range_outside_the_stream_with_exit_2(spark, streamed, capsys):
    job, job_file, root, _ = streamed
    code = winjob(["replay", "--job", str(job_file), "--root", str(root), "--into", "bad", "--from-batch", "2",
                   "--to-batch", "5"])
    assert code == 2
    assert "batches 2..5 are not within the stream's committed batches 0..2" in capsys.readouterr().err


def test_replay_refuses_a_root_without_recorded_offsets(spark, streamed, tmp_path, capsys):
    """A stream whose progress rows did not record offsets (a root of an earlier release): refused, naming the batch.

    On a copy of the module's stream root (a copied folder holds the same Delta tables and checkpoint).
    """
    import shutil

    from delta.tables import DeltaTable
    from pipelines.replay import ReplayRefused, replay_stream
    from windowing.spark.state.stores import DeltaStore
    _, _, streamed_root, _ = streamed
    root = tmp_path / "old"
    shutil.copytree(streamed_root, root)
    job_file = root / "purchases_per_minute.toml"
    job = load_job(job_file, root=root)
    progress = DeltaStore(spark, job.operator_id, job.state_root).progress_path
    DeltaTable.forPath(spark, progress).update(set={"source_offsets": "CAST(NULL AS STRING)"})
    with pytest.raises(ReplayRefused, match=r"batch 0 of operator 'purchases_1m' has no recorded source offsets"):
        replay_stream(spark, job, "old")
    code = winjob(["replay", "--job", str(job_file), "--root", str(root), "--into", "old"])
    assert code == 2 and "has no recorded source offsets" in capsys.readouterr().err


def test_the_summary_shows_a_changed_pane_column_by_column():
    from pipelines.replay_diff import PanesDiff, ReplayDiff, RowsDiff
    before = {"user_id": "u1", "window_start_ms": 0, "window_end_ms": 60_000, "items": 4, "purchases": 2,
              "pane_index": 0, "timing": "EARLY", "batch_id": 1}
    after = {**before, "items": 7, "purchases": 3}
    diff = ReplayDiff(0, 1, "spec A", "spec B", PanesDiff(1, 1, 0, 0, 1, 0, [("changed", before, after)]),
                      RowsDiff("late", 0, 0, 0, 0), RowsDiff("quarantine", 2, 1, 1, 0, [("stream", {"reason": "x"})]))
    assert diff.summary().splitlines() == [
        "replay versus stream, batches 0..1, spec spec B (the stream's: spec A)",
        "results: 1 panes in the stream, 1 in the replay: 0 equal, 0 added, 1 changed, 0 removed",
        "  changed  user_id=u1 window [1970-01-01 00:00:00.000, 1970-01-01 00:01:00.000) pane 0: "
        "items 4 -> 7, purchases 2 -> 3",
        "late: 0 rows in the stream, 0 in the replay: no differences",
        "quarantine: 2 rows in the stream, 1 in the replay: 1 only in the stream, 0 only in the replay",
        "  only in the stream: reason=x"]
    assert not diff.empty and diff.as_dict()["results"]["changed"] == 1


def test_a_replay_of_the_per_key_path_writes_the_streams_rows(spark, tmp_path):
    """A user trigger (jobs/custom_trigger.toml) runs on the per-key path, where a key's rows fire in
    arrival order: the replay's rows must arrive as the stream's did."""
    from pipelines.drivers import run_stream
    from pipelines.replay import replay_stream
    text = (Path(__file__).resolve().parents[2] / "jobs" / "custom_trigger.toml").read_text()
    job_file = tmp_path / "custom_trigger.toml"
    job_file.write_text(text + "\n[quality]\nvalidate_runs = false\n")
    job = load_job(job_file, root=tmp_path)
    rows = generate_purchases(n_events=240)
    land(spark, rows[:120], job.source_path)
    run_stream(spark, job, validate=False)
    land(spark, rows[120:], job.source_path)
    run_stream(spark, job, validate=False)
    report = replay_stream(spark, job, "keyed", diff=True)
    assert (report.from_batch, report.to_batch) == (0, 1)
    assert report.diff.empty, report.diff.summary()
    for kind in TABLES:
        assert _rows(spark, getattr(report, f"{kind}_path")) == _rows(spark, getattr(job, f"{kind}_path")), kind
    assert report.diff.results.stream_panes > 0
