"""Data quality with Great Expectations on real Spark + Delta tables.

One small pipeline (the demo job on 300 purchases: a stream in two arrivals,
validated after each batch, and a complete backfill, validated with the
reconciliation) is built once. Each expectation is then shown to pass on the
good tables and to fail on a copy broken in exactly the way it guards
against; the validation-runs table, Data Docs, DataQualityError and the CLI
are checked on the same tables.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from driver_calls import validations_asked
from expectations.base import CRITICAL, Check, UnexpectedRowsQuery, suite
from pipelines import quality
from pipelines.cli import main as winjob
from examples.demo import DEMO_JOB, START, generate_purchases, land
from pipelines.drivers import run_backfill, run_stream
from pipelines.job import load_job
from pipelines.quality import DEFAULT_SUITES, DataQualityError, check_frame, read_runs, validate_job
from windowing.spark.input.batch_settings import (ADAPTIVE, SHUFFLE_PARTITIONS, SMALL_BATCH_ROWS, SMALL_BATCH_SETTINGS,
                                            small_batch_settings, validates_small)

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("quality")]  # module-scoped fixtures: one test process


@pytest.fixture(scope="module")
def pipeline(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("quality")
    job = load_job(DEMO_JOB, root=root)
    rows = generate_purchases(n_events=300, n_users=6, minutes=6, seed=3)
    half = len(rows) // 2
    # Three purchases from the first seconds that arrive with the second half: late rows.
    late = [(f"late{i}", "u001", 1, START + dt.timedelta(seconds=1 + i), rows[-1][4]) for i in range(3)]
    rows = rows + late
    # The Spark settings the stream asks each batch's validation to run with.
    with validations_asked() as asked:
        for part in (rows[:half], rows[half:]):
            land(spark, part, job.source_path)
            run_stream(spark, job)                      # validates each batch (default)
    backfill = job.with_operator(job.operator_id + "_backfill", "backfill")
    run_backfill(spark, backfill)                   # validates, with the reconciliation
    return {"root": root, "job": job, "backfill": backfill, "raw_rows": len(rows), "stream_settings": asked}


def _read(spark, path):
    return spark.read.format("delta").load(path)


def _failed(result) -> set[tuple[str, str | None]]:
    return {(f.expectation_type, f.column) for f in result.failed}


def _assert_only(result, expectation_type: str, column: str | None = None):
    assert result.success is False, "the broken frame passed"
    failed = _failed(result)
    assert (expectation_type, column) in failed, failed
    assert all(t == expectation_type for t, _ in failed), f"more than the guarded expectation failed: {failed}"


# ------------------------------------------------------------- raw events
def _raw(spark, job, breaks=None):
    """The raw rows that are good (the demo also lands malformed ones), optionally broken, as the suite reads them."""
    from expectations.raw_events import EVENT_TIME_MS
    from windowing.spark.input.prepare import event_time_ms
    raw = _read(spark, job.source_path).where("user_id IS NOT NULL AND event_time IS NOT NULL")
    if breaks is not None:
        raw = breaks(raw)
    return raw.withColumn(EVENT_TIME_MS, event_time_ms(raw, "event_time"))


def _one_row(df, column, value):
    return df.withColumn(column, F.when(F.col("event_id") == "e00001", value).otherwise(F.col(column)))


RAW_BREAKS = {
    "null key": (lambda df: _one_row(df, "user_id", F.lit(None)), "expect_column_values_to_not_be_null", "user_id"),
    "null event time": (lambda df: _one_row(df, "event_time", F.lit(None)),
                        "expect_column_values_to_not_be_null", "event_time"),
    "event time a year ahead": (lambda df: _one_row(df, "event_time", F.current_timestamp() + F.expr("INTERVAL 365 DAYS")),
                                "expect_column_values_to_be_between", "_event_time_ms"),
    "duplicate event id": (lambda df: df.unionByName(df.where("event_id = 'e00001'")),
                           "expect_column_values_to_be_unique", "event_id"),
    "value out of bounds": (lambda df: _one_row(df, "item_count", F.lit(1000)),
                            "expect_column_values_to_be_between", "item_count"),
}


def test_raw_suite_passes_on_good_rows(spark, pipeline):
    result = check_frame(pipeline["job"], "raw_events", _raw(spark, pipeline["job"]))
    assert result.success, [f.describe() for f in result.failed]
    assert result.evaluated >= 10


@pytest.mark.parametrize("case", sorted(RAW_BREAKS))
def test_raw_suite_catches(spark, pipeline, case):
    breaks, expectation, column = RAW_BREAKS[case]
    result = check_frame(pipeline["job"], "raw_events", _raw(spark, pipeline["job"], breaks))
    _assert_only(result, expectation, column)
    assert all(f.severity == "warning" for f in result.failed)  # the operator quarantines such rows


def test_raw_suite_schema_checks_are_critical(spark, pipeline):
    job = pipeline["job"]
    result = check_frame(job, "raw_events", _raw(spark, job, lambda df: df.drop("item_count")))
    assert ("expect_column_to_exist", "item_count") in _failed(result)
    assert {f.severity for f in result.failed if f.expectation_type == "expect_column_to_exist"} == {"critical"}
    assert all(f.column == "item_count" for f in result.failed)   # checks of other columns still pass
    result = check_frame(job, "raw_events", _raw(spark, job, lambda df: df.withColumn(
        "item_count", F.col("item_count").cast("string"))))
    assert ("expect_column_values_to_be_in_type_list", "item_count") in _failed(result)
    assert all(f.column == "item_count" for f in result.failed)


# --------------------------------------------------------- window results
def _on_time_window(df):
    """(user_id, window_start_ms) of one window with exactly one pane, ON_TIME."""
    one = (df.groupBy("user_id", "window_start_ms").agg(F.count("*").alias("n"), F.max("timing").alias("t"))
           .where("n = 1 AND t = 'ON_TIME'").orderBy("user_id", "window_start_ms").first())
    return one["user_id"], one["window_start_ms"]


def _in(df, window):
    return (F.col("user_id") == window[0]) & (F.col("window_start_ms") == window[1])


def _new_pane(df, window, timing):
    row = df.where(_in(df, window))
    return df.unionByName(row.withColumn("pane_index", F.col("pane_index") + 1).withColumn("timing", F.lit(timing)))


RESULT_BREAKS = {
    "window one ms too long": (lambda df, w: df.withColumn(
        "window_end_ms", F.when(_in(df, w), F.col("window_end_ms") + 1).otherwise(F.col("window_end_ms"))),
        "expect_window_length_to_match_spec", None),
    "duplicate (key, window, pane)": (lambda df, w: df.unionByName(
        df.where(_in(df, w)).withColumn("timing", F.lit("LATE"))), "expect_unique_pane_per_window", None),
    "pane index gap": (lambda df, w: df.withColumn(
        "pane_index", F.when(_in(df, w), F.col("pane_index") + 1).otherwise(F.col("pane_index"))),
        "expect_consecutive_pane_indexes", None),
    "two ON_TIME panes": (lambda df, w: _new_pane(df, w, "ON_TIME"), "expect_at_most_one_on_time_pane", None),
    "unknown timing": (lambda df, w: df.withColumn(
        "timing", F.when(_in(df, w), F.lit("SOON")).otherwise(F.col("timing"))),
        "expect_column_values_to_be_in_set", "timing"),
    "null watermark": (lambda df, w: df.withColumn(
        "watermark_ms", F.when(_in(df, w), F.lit(None)).otherwise(F.col("watermark_ms"))),
        "expect_column_values_to_not_be_null", "watermark_ms"),
    "count of 0": (lambda df, w: df.withColumn(
        "purchases", F.when(_in(df, w), F.lit(0)).otherwise(F.col("purchases"))),
        "expect_column_values_to_be_between", "purchases"),
    "aggregate above its bound": (lambda df, w: df.withColumn(
        "max_items", F.when(_in(df, w), F.lit(500)).otherwise(F.col("max_items"))),
        "expect_column_values_to_be_between", "max_items"),
}


def test_results_suite_passes_on_stream_and_backfill(spark, pipeline):
    for job in (pipeline["job"], pipeline["backfill"]):
        result = check_frame(job, "window_results", _read(spark, job.results_path))
        assert result.success, [f.describe() for f in result.failed]


@pytest.mark.parametrize("case", sorted(RESULT_BREAKS))
def test_results_suite_catches(spark, pipeline, case):
    breaks, expectation, column = RESULT_BREAKS[case]
    df = _read(spark, pipeline["job"].results_path)
    result = check_frame(pipeline["job"], "window_results", breaks(df, _on_time_window(df)))
    _assert_only(result, expectation, column)
    assert all(f.severity == "critical" for f in result.failed)


def test_a_batchs_panes_are_found_without_reading_the_files_of_older_windows(spark, tmp_path):
    """A stream batch's window check reads every pane of the windows the batch emitted for, and
    not the results table's whole history: files whose windows all end before the batch's earliest
    window starts are skipped. Windows without bounds (global windows) are found in every file."""
    from expectations.window_results import panes_of_touched_windows
    path = str(tmp_path / "results")
    schema = "k string, window_start_ms long, window_end_ms long, pane_index int, batch_id long"
    minute = 60_000
    batches = {b: [("a", b * minute, (b + 1) * minute, 0, b), ("b", b * minute, (b + 1) * minute, 0, b)]
               for b in range(3)}
    batches[3] = [("a", minute, 2 * minute, 1, 3), ("a", 3 * minute, 4 * minute, 0, 3)]   # a late pane, a new window
    batches[4] = [("g", None, None, 0, 4)]
    batches[5] = [("g", None, None, 1, 5)]
    for rows in batches.values():
        spark.createDataFrame(rows, schema).coalesce(1).write.format("delta").mode("append").save(path)
    results = _read(spark, path)
    file_of = {r[0]: r[1] for r in results.select("batch_id", F.input_file_name()).collect()}

    found = panes_of_touched_windows(results, ["k"], 3)
    assert sorted(tuple(r) for r in found.collect()) == [
        ("a", minute, 2 * minute, 0, 1), ("a", minute, 2 * minute, 1, 3), ("a", 3 * minute, 4 * minute, 0, 3)]
    read = set(found.inputFiles())
    assert file_of[0] not in read and {file_of[1], file_of[3]} <= read

    unbounded = panes_of_touched_windows(results, ["k"], 5)
    assert sorted(tuple(r) for r in unbounded.collect()) == [("g", None, None, 0, 4), ("g", None, None, 1, 5)]
    assert set(unbounded.inputFiles()) == set(file_of.values())


# ---------------------------------------------------- late and quarantine
def test_late_and_quarantine_suites(spark, pipeline):
    job = pipeline["job"]
    late, quarantine = _read(spark, job.late_path), _read(spark, job.quarantine_path)
    assert late.count() > 0 and quarantine.count() > 0
    assert check_frame(job, "late_rows", late).success
    assert check_frame(job, "quarantine_rows", quarantine).success
    _assert_only(check_frame(job, "late_rows", late.withColumn("reason", F.lit(None).cast("string"))),
                 "expect_column_values_to_not_be_null", "reason")
    _assert_only(check_frame(job, "late_rows", late.withColumn("reason", F.lit("too_slow"))),
                 "expect_column_values_to_be_in_set", "reason")
    _assert_only(check_frame(job, "late_rows", late.withColumn("event_time_ms", F.col("watermark_ms"))),
                 "expect_late_rows_to_be_late")
    _assert_only(check_frame(job, "quarantine_rows", quarantine.withColumn("reason", F.lit(None).cast("string"))),
                 "expect_column_values_to_not_be_null", "reason")
    _assert_only(check_frame(job, "quarantine_rows", quarantine.withColumn("reason", F.lit("looked_odd"))),
                 "expect_column_values_to_be_in_set", "reason")


# ------------------------------------------------------------------ state
def test_state_suites(spark, pipeline):
    from expectations.state import with_cleanup_due
    job = pipeline["job"]
    base = f"{job.state_root}/{job.operator_id}"
    progress = _read(spark, f"{base}/progress")
    last = progress.orderBy(F.col("batch_id").desc()).first()
    from windowing.spark.state import log as state_log
    windows = state_log.committed_windows(spark, base, job.operator_id)    # logged changes folded in
    assert windows.count() > 0, "the stream should leave open windows"
    wm, lateness = last["watermark_ms"], job.spec.allowed_lateness_ms
    assert check_frame(job, "state_windows", with_cleanup_due(windows, wm, lateness)).success
    # A window whose cleanup time (end - 1 + L) is exactly the watermark should be gone.
    stale = windows.limit(1).withColumn("window_end_ms", F.lit(wm + 1 - lateness).cast("long")) \
        .withColumn("window_start_ms", F.col("window_end_ms") - 60_000)
    _assert_only(check_frame(job, "state_windows", with_cleanup_due(windows.unionByName(stale), wm, lateness)),
                 "expect_no_window_past_cleanup")
    # One ms later it is legitimately open.
    fresh = stale.withColumn("window_end_ms", F.col("window_end_ms") + 1) \
        .withColumn("window_start_ms", F.col("window_end_ms") - 60_000)
    assert check_frame(job, "state_windows", with_cleanup_due(windows.unionByName(fresh), wm, lateness)).success

    assert progress.count() >= 2 and check_frame(job, "state_progress", progress).success
    first = progress.orderBy("batch_id").first()["batch_id"]
    _assert_only(check_frame(job, "state_progress", progress.withColumn(
        "watermark_ms", F.when(F.col("batch_id") == first + 1, F.lit(-1)).otherwise(F.col("watermark_ms")))),
        "expect_watermark_never_decreases")
    _assert_only(check_frame(job, "state_progress", progress.withColumn(
        "metrics", F.regexp_replace("metrics", '"input_rows": ', '"input_rows": 1'))),
        "expect_batch_rows_accounted")
    _assert_only(check_frame(job, "state_progress", progress.unionByName(progress.limit(1))),
                 "expect_column_values_to_be_unique", "batch_id")


def test_the_progress_frame_of_the_state_suites_leaves_out_the_logged_state_changes(spark, pipeline):
    """The stream's progress rows log its state changes (JSON, hundreds of KB a row for a large
    batch) and no expectation reads them: the progress frame a validation caches leaves them out."""
    from expectations import state
    from expectations.base import Scope
    from windowing.spark.state.log import STATE_CHANGES
    job = pipeline["job"]
    progress = _read(spark, f"{job.state_root}/{job.operator_id}/progress")
    assert progress.where(F.col(STATE_CHANGES).isNotNull()).count() > 0, "the stream should log state changes"
    checks = {c.suite.name: c for c in state.checks(spark, job, Scope(batch_id=None, now_ms=0, run_kind="adhoc"))}
    validated = checks[state.PROGRESS_SUITE].frame
    assert STATE_CHANGES not in validated.columns
    assert sorted(validated.columns) == sorted(c for c in progress.columns if c != STATE_CHANGES)
    assert validated.count() == progress.count()


def test_a_batchs_progress_check_reads_its_row_and_the_one_before(spark, pipeline):
    """A batch's validation checks its own progress row against the committed batch before it (batch
    ids may skip: a backfill's chunks), not the whole history; every row of the batch is kept, so a
    second row of it still fails the uniqueness check."""
    from expectations import state
    from expectations.base import Scope
    rows = [(b, b * 10) for b in (0, 1, 2, 5, 7, 7)]
    progress = spark.createDataFrame(rows, "batch_id long, watermark_ms long")
    ids = lambda b: sorted(r["batch_id"] for r in state.batch_and_previous(progress, b).collect())  # noqa: E731
    assert ids(0) == [0] and ids(2) == [1, 2] and ids(5) == [2, 5] and ids(7) == [5, 7, 7]
    job = pipeline["job"]
    for batch_id, expected in ((0, [0]), (1, [0, 1])):
        checks = {c.suite.name: c for c in state.checks(spark, job, Scope(batch_id=batch_id, now_ms=0,
                                                                            run_kind="stream"))}
        assert sorted(r["batch_id"] for r in checks[state.PROGRESS_SUITE].frame.collect()) == expected


# ---------------------------------------------------------- reconciliation
def _counts(spark, **counts):
    return spark.createDataFrame([tuple(counts.values())], ", ".join(f"{k} bigint" for k in counts))


def test_reconciliation_suite(spark, pipeline):
    from expectations.reconciliation import valid_raw_rows, windowed_rows
    job = pipeline["backfill"]
    raw = _read(spark, job.source_path)
    valid = valid_raw_rows(raw, job, int(__import__("time").time() * 1000))
    windowed = windowed_rows(_read(spark, job.results_path), job)
    quarantined = _read(spark, job.quarantine_path).count()
    assert raw.count() == pipeline["raw_rows"] and valid == windowed == pipeline["raw_rows"] - quarantined
    good = dict(raw_rows=raw.count(), valid_raw_rows=valid, windowed_rows=windowed, late_rows=0,
                quarantined_rows=quarantined)
    assert check_frame(job, "reconciliation", _counts(spark, **good)).success
    _assert_only(check_frame(job, "reconciliation", _counts(spark, **{**good, "raw_rows": good["raw_rows"] + 1})),
                 "expect_every_raw_row_accounted")
    _assert_only(check_frame(job, "reconciliation", _counts(spark, **{**good, "valid_raw_rows": valid + 1})),
                 "expect_window_counts_to_equal_valid_raw_rows")
    _assert_only(check_frame(job, "reconciliation", _counts(spark, **{
        **good, "late_rows": 1, "quarantined_rows": quarantined - 1})), "expect_no_late_rows_in_complete_backfill")


def test_reconciliation_fails_when_a_window_result_is_lost(spark, pipeline, tmp_path):
    job = pipeline["backfill"]
    lost = job.__class__(**{**job.__dict__, "results_path": str(tmp_path / "results_missing_one")})
    results = _read(spark, job.results_path)
    results.exceptAll(results.limit(1)).write.format("delta").save(lost.results_path)
    with pytest.raises(DataQualityError) as error:
        validate_job(spark, lost, run_kind="backfill", suites=["reconciliation"])
    message = str(error.value)
    assert "reconciliation: expect_window_counts_to_equal_valid_raw_rows" in message
    assert "reconciliation: expect_every_raw_row_accounted" in message


# ------------------------------------------- runs table, Data Docs, errors
def test_validation_runs_table_and_data_docs(spark, pipeline):
    job = pipeline["job"]
    runs = read_runs(spark, job)
    stream_runs = runs.where("run_kind = 'stream' AND operator_id = 'purchases_1m'")
    # After each streaming batch: every default suite, on that batch.
    assert sorted(r["batch_id"] for r in stream_runs.select("batch_id").distinct().collect()) == [0, 1]
    assert stream_runs.select("suite").distinct().count() == len(DEFAULT_SUITES)
    backfill_runs = runs.where("operator_id = 'purchases_1m_backfill' AND run_kind = 'backfill'").collect()
    assert {r["suite"] for r in backfill_runs} >= {"reconciliation", "window_results", "raw_events"}
    # The fixture's backfill validated first; later tests (a lost window result) record failing runs too.
    recon = min((r for r in backfill_runs if r["suite"] == "reconciliation"), key=lambda r: r["validated_at"])
    assert recon["success"] is True and recon["evaluated_expectations"] == 3 and recon["failed_expectations"] == 0
    raw_run = min((r for r in backfill_runs if r["suite"] == "raw_events"), key=lambda r: r["validated_at"])
    # The demo data has null keys and null event times: warnings, recorded with their names.
    assert raw_run["success"] is False and raw_run["severity"] == "warning" and raw_run["failed_critical"] == 0
    assert "expect_column_values_to_not_be_null(user_id)" in raw_run["failed_expectation_names"]
    assert all(r["validated_at"] is not None and r["run_id"] for r in backfill_runs)

    docs = Path(job.output_root) / "data_docs"
    assert (docs / "index.html").is_file()
    pages = list((docs / "validations").rglob("*.html"))
    assert any("purchases_1m.window_results" in str(p) for p in pages)
    assert any("purchases_1m_backfill.reconciliation" in str(p) for p in pages)
    assert "purchases_1m.raw_events" in (docs / "index.html").read_text()


def test_a_validation_keeps_the_newest_results_in_the_gx_store_and_archives_the_others(spark, pipeline, tmp_path):
    """GE lists its whole results store each time it builds Data Docs: the store keeps the newest
    results, the older ones move to an archive beside it, unchanged, and Data Docs still build."""
    import dataclasses
    import shutil
    from pipelines import gx_results
    copy = tmp_path / "copy"
    shutil.copytree(pipeline["root"], copy)             # the fixture's tables and GE project, on their own
    job = dataclasses.replace(load_job(DEMO_JOB, root=copy), gx_results_kept=4)
    store = Path(quality.gx_project_dir(job)) / "gx" / "uncommitted" / "validations"
    before = {p.relative_to(store): p.read_bytes() for p in store.rglob("*.json")}
    assert len(before) > 4
    pages = Path(quality.data_docs_dir(job)) / "validations"
    index = Path(quality.data_docs_dir(job)) / "index.html"
    index.unlink()

    report = validate_job(spark, job, batch_id=1, run_kind="stream", suites=["late_rows", "quarantine_rows"])
    kept = {p.relative_to(store) for p in store.rglob("*.json")}
    archive = gx_results.archive_dir(store)
    archived = {p.relative_to(archive): p.read_bytes() for p in archive.rglob("*.json")}
    assert len(kept) == 4 + 2 and len(archived) == len(before) - 4
    assert set(archived) | kept == set(before) | kept and not set(archived) & kept
    assert all(before[path] == content for path, content in archived.items())     # moved, not rewritten
    assert index.is_file() and report.success
    # GE's index build drops the pages of results no longer in the store: the site has kept ones only
    paged = {p.relative_to(pages).with_suffix(".json") for p in pages.rglob("*.html")}
    assert len(paged) >= 2 and paged <= kept and not paged & set(archived)


def test_a_small_stream_batch_is_validated_with_the_small_batch_settings(spark, pipeline):
    """Each of the fixture's batches (150 rows, its state kept in the driver) is validated in the
    small-batch settings; a larger batch, or state not in the driver, or the opt-out is not."""
    assert pipeline["stream_settings"] == [(0, small_batch_settings(spark)), (1, small_batch_settings(spark))]
    assert validates_small(spark, True, SMALL_BATCH_ROWS) and not validates_small(spark, True, SMALL_BATCH_ROWS + 1)
    assert not validates_small(spark, False, 10) and not validates_small(spark, True, None)
    spark.conf.set(SMALL_BATCH_SETTINGS, "false")
    try:
        assert not validates_small(spark, True, 10)
    finally:
        spark.conf.unset(SMALL_BATCH_SETTINGS)


def test_a_validation_computes_its_frames_ahead_and_leaves_none_of_them_cached(spark, pipeline, monkeypatch):
    """The suites' frames are computed ahead of GE (pipelines/frames_ahead.py), each handed to its
    suite, and none stays cached after the validation, which finds what it found frame by frame."""
    def frames_cached() -> int:    # Delta keeps its own snapshot state cached; a frame is any other
        return sum(1 for info in spark.sparkContext._jsc.sc().getRDDStorageInfo()
                   if not info.name().startswith("Delta Table State"))
    taken, run_check = [], quality._run_check
    def recording(context, check, operator_id, run_id=None, frame=None):
        taken.append((check.suite.name, frame is not None and frame.is_cached))
        return run_check(context, check, operator_id, run_id, frame)
    monkeypatch.setattr(quality, "_run_check", recording)
    job = pipeline["job"]
    before = frames_cached()
    report = validate_job(spark, job, batch_id=1, run_kind="stream", raise_on_failure=False)
    assert frames_cached() <= before, "a frame of the validation stayed cached"
    assert [name for name, _ in taken] == [s.suite for s in report.suites]
    assert all(ahead for name, ahead in taken if name != "watermark_jumps"), taken   # skipped without raw rows
    assert {s.suite for s in report.suites if s.success is False} <= {"raw_events"}, report.summary()


def test_validation_runs_in_the_settings_it_is_given_and_puts_the_sessions_back(spark, pipeline, monkeypatch):
    seen, validate = [], quality._validate

    def observing(*args):
        seen.append((spark.conf.get(ADAPTIVE), spark.conf.get(SHUFFLE_PARTITIONS)))
        return validate(*args)
    monkeypatch.setattr(quality, "_validate", observing)
    before = (spark.conf.get(ADAPTIVE), spark.conf.get(SHUFFLE_PARTITIONS))
    report = validate_job(spark, pipeline["job"], batch_id=1, run_kind="stream", suites=["late_rows"],
                          settings={ADAPTIVE: "true", SHUFFLE_PARTITIONS: "3"})
    assert seen == [("true", "3")] and report.success
    assert (spark.conf.get(ADAPTIVE), spark.conf.get(SHUFFLE_PARTITIONS)) == before


def test_a_sql_check_asked_pass_or_fail_runs_once_and_its_failure_reports_the_count(spark, pipeline):
    """A suite first runs asking only pass or fail (each SQL check reads a sample of its rows); a
    query with rows fails there, and the suite's second run gives the failure its row count."""
    frame = spark.createDataFrame([(1,), (2,), (3,)], "x long")
    probes = [UnexpectedRowsQuery(unexpected_rows_query="SELECT * FROM {batch} WHERE x > 1", severity=CRITICAL),
              UnexpectedRowsQuery(unexpected_rows_query="SELECT * FROM {batch} WHERE x > 3", severity=CRITICAL)]
    job = pipeline["job"]
    result = quality._run_check(quality._context(job), Check(suite("sql_probe", probes), "(frame)", frame),
                                job.operator_id)
    assert result.evaluated == 2 and result.success is False
    assert [f.detail for f in result.failed] == ["observed 2"]


def test_critical_failure_raises_naming_expectations_warnings_do_not(spark, pipeline, tmp_path):
    job = pipeline["job"]
    report = validate_job(spark, job, suites=["raw_events", "late_rows"])   # warnings only
    assert report.success and report.warnings and not report.critical_failures

    broken = job.__class__(**{**job.__dict__, "late_path": str(tmp_path / "late_broken")})
    _read(spark, job.late_path).withColumn("reason", F.lit("whatever")).write.format("delta").save(broken.late_path)
    with pytest.raises(DataQualityError) as error:
        validate_job(spark, broken, suites=["late_rows"], run_kind="adhoc")
    assert "late_rows: expect_column_values_to_be_in_set column 'reason'" in str(error.value)
    assert error.value.report.data_docs_path.endswith("data_docs/index.html")
    last = read_runs(spark, broken).orderBy(F.col("validated_at").desc()).first()
    assert last["suite"] == "late_rows" and last["success"] is False and last["severity"] == "critical"


def test_cli_validate(spark, pipeline, tmp_path, capsys):
    root = str(pipeline["root"])
    assert winjob(["validate", "--job", str(DEMO_JOB), "--root", root, "--batch-id", "1"]) == 0
    out = capsys.readouterr().out
    assert "PASS window_results" in out and "Data Docs: " in out and "data_docs/index.html" in out
    assert winjob(["validate", "--job", str(DEMO_JOB), "--root", root, "--suite", "no_such_suite"]) == 2
    assert "no_such_suite" in capsys.readouterr().err
    # A job definition whose bounds the written results break: exit code 1, the failure named.
    strict = tmp_path / "strict.toml"
    strict.write_text(Path(DEMO_JOB).read_text().replace("max_items = { min = 1, max = 100 }",
                                                         "max_items = { min = 1, max = 2 }"))
    assert winjob(["validate", "--job", str(strict), "--root", root, "--suite", "window_results"]) == 1
    captured = capsys.readouterr()
    assert "FAIL window_results" in captured.out
    assert "expect_column_values_to_be_between column 'max_items'" in captured.err


def test_validate_runs_is_a_job_setting_and_must_be_a_boolean(tmp_path):
    """``[quality] validate_runs``: the drivers' default (true); a deployment whose quality DAG validates says false."""
    from job_files import demo_job_file
    assert load_job(DEMO_JOB).validate_runs is True
    assert load_job(demo_job_file(tmp_path)).validate_runs is False
    path = demo_job_file(tmp_path, replace={"validate_runs = false": 'validate_runs = "no"'})
    with pytest.raises(ValueError, match=r"\[quality\] validate_runs must be true or false, got 'no'"):
        load_job(path)


@pytest.mark.parametrize("value", ["0", '"200"', "2.5", "true"])
def test_gx_results_kept_is_a_job_setting_of_at_least_one(tmp_path, value):
    from job_files import demo_job_file
    assert load_job(DEMO_JOB).gx_results_kept == 200
    kept = demo_job_file(tmp_path, replace={"[quality]\n": "[quality]\ngx_results_kept = 30\n"})
    assert load_job(kept).gx_results_kept == 30
    path = demo_job_file(tmp_path, replace={"[quality]\n": f"[quality]\ngx_results_kept = {value}\n"})
    with pytest.raises(ValueError, match=r"\[quality\] gx_results_kept must be a whole number of at least 1, got "):
        load_job(path)


def test_a_validation_reads_the_gx_config_variables_once_and_the_next_validation_reads_them_again(tmp_path):
    """GX looks its project settings up over a hundred times a validation, each time parsing
    ``uncommitted/config_variables.yml``; a validation's context reads the file when it is made."""
    from job_files import demo_job_file
    job = load_job(demo_job_file(tmp_path), root=tmp_path)
    context = quality._context(job)
    variables = Path(context.root_directory) / "uncommitted" / "config_variables.yml"
    first = context.config_provider.get_values()["instance_id"]     # what each GX lookup substitutes from
    assert first and first in variables.read_text()
    variables.write_text(variables.read_text().replace(first, "another-instance"))
    assert context.config_provider.get_values()["instance_id"] == first, "the context parsed the file again"
    assert context.variables.data_docs_sites == quality._context(job).variables.data_docs_sites
    assert quality._context(job).config_provider.get_values()["instance_id"] == "another-instance"
