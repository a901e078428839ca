"""Join jobs: their job files, and `winjob stream` / `winjob backfill` of one on Delta against the reference model.

One set of tables for the module: the join example (``jobs/joins/clicks_orders.toml``) streamed in its two
arrivals and backfilled in one pass (``winjob demo --join``'s run), then read by every test.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from examples.join_inputs import ARRIVALS
from pipelines.job import load_job
from pipelines.join_job import JoinJob
from windowing.core.joins import IntervalJoinSpec, WindowJoinSpec
from windowing.core.triggers import EarlyLateEventTimeTrigger

pytestmark = pytest.mark.xdist_group("join_jobs")  # the module-scoped run: one test process
REPO = Path(__file__).resolve().parents[2]
JOB_FILE = REPO / "jobs" / "joins" / "clicks_orders.toml"

_SIDES = """
[job]
name = "j"
operator_id = "j"
[left]
path = "l"
key = "user"
event_time = "lt"
max_out_of_orderness = "2 seconds"
[right]
path = "r"
key = "buyer"
event_time = "rt"
idle_timeout = "30 seconds"
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "job.toml"
    path.write_text(text)
    return load_job(path, root=tmp_path)


def test_the_example_job_file_builds_the_window_join_spec(tmp_path):
    job = load_job(JOB_FILE, root=tmp_path)
    assert isinstance(job, JoinJob) and isinstance(job.spec, WindowJoinSpec)
    assert job.left_path == str(tmp_path / "raw" / "clicks") and job.right_path == str(tmp_path / "raw" / "orders")
    assert (job.spec.left_key, job.spec.right_key) == (("user",), ("buyer",))
    assert job.spec.left.max_out_of_orderness_ms == 5000 and job.spec.allowed_lateness_ms == 60_000
    assert job.spec.window.trigger == EarlyLateEventTimeTrigger(early_every_n=3)
    assert job.spec.output_columns == ("click_id", "page", "order_id", "amount") and job.spec.late_output


def test_an_interval_join_job_file_with_exclusive_bounds(tmp_path):
    job = _load(tmp_path, _SIDES + '[join]\nkind = "interval"\nlower = "-5 seconds"\nupper = "10 seconds"\n'
                                   'upper_exclusive = true\nleft_columns = ["user"]\nright_columns = {rt = "t"}\n'
                                   '[airflow]\nstream_schedule = "*/2 * * * *"\nretries = 1\n')
    assert isinstance(job.spec, IntervalJoinSpec)
    assert (job.airflow.stream_schedule, job.airflow.retries) == ("*/2 * * * *", 1)   # the DAGs' settings
    assert (job.spec.lower_bound_ms, job.spec.upper_bound_ms) == (-5000, 9999)
    assert (job.spec.left.idle_timeout_ms, job.spec.right.idle_timeout_ms) == (None, 30_000)
    assert job.spec.output_columns == ("user", "t")


@pytest.mark.parametrize("join, says", [
    ('kind = "cross"', "kind = 'cross' must be one of"),
    ('kind = "window"\nhow = "outer"\nleft_columns = ["user"]\n[join.window]\nsize = "1 minute"', "how='outer'"),
    ('kind = "window"\nleft_columns = ["user"]', "needs a [join.window] table"),
    ('kind = "window"\nleft_columns = ["user"]\n[join.window]\nsize = "1 minute"\nlatenes = "1 minute"',
     "[join.window] has unknown keys ['latenes']"),
    ('kind = "window"\nleft_columns = ["user"]\n[join.window]\nsize = "1 minute"\ntrigger = "nope"', "nope"),
    ('kind = "window"\n[join.window]\nsize = "1 minute"', "[join] needs an output"),
    ('kind = "interval"\nupper = "1 second"\nleft_columns = ["user"]', "needs ['lower']"),
    ('kind = "interval"\nlower = 0\nupper = 1\nhow = "left"\nleft_columns = ["user"]', "does not take ['how']"),
    ('kind = "interval"\nlower = 0\nupper = 1\nupper_exclusive = "yes"\nleft_columns = ["user"]',
     "[join] upper_exclusive must be true or false"),
    ('kind = "co_group"\n[join.window]\nsize = "1 minute"', "co_group' needs function"),
    ('kind = "window"\nfunction = "examples.nowhere:Fn"\noutput_schema = "a int"\n[join.window]\nsize = 60000',
     "cannot be imported"),
])
def test_a_bad_join_table_is_refused_naming_it(tmp_path, join, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        _load(tmp_path, _SIDES + "[join]\n" + join + "\n")


@pytest.mark.parametrize("edit, says", [
    (lambda t: t.replace('key = "buyer"', 'key = ["buyer", "shop"]'), "must name as many columns each"),
    (lambda t: t.replace('event_time = "rt"\n', ''), "[right] is missing ['event_time']"),
    (lambda t: t.replace('max_out_of_orderness = "2 seconds"', 'max_out_of_order = "2 seconds"'),
     "[left] has unknown keys ['max_out_of_order']"),
    (lambda t: t + "[window]\nsize = 1\n", "unknown: ['window']"),
    (lambda t: t.replace('idle_timeout = "30 seconds"', 'idle_timeout = "0 seconds"'),
     "[right] idle_timeout = '0 seconds' must be a positive duration"),
    (lambda t: t + '[airflow]\nschedule = "@daily"\n', "[airflow] has unknown keys ['schedule']"),
    (lambda t: t + '[airflow]\nstream_schedule = "often"\n', "stream_schedule = 'often' is not a cron expression"),
])
def test_a_bad_side_is_refused_naming_it(tmp_path, edit, says):
    join = '[join]\nkind = "interval"\nlower = 0\nupper = 1\nleft_columns = ["user"]\n'
    with pytest.raises(ValueError, match=re.escape(says)):
        _load(tmp_path, edit(_SIDES + join))


@pytest.fixture(scope="module")
def ran(spark, tmp_path_factory):
    """The example streamed in its two arrivals and backfilled in one pass (``winjob demo --join``'s run)."""
    from examples.join_demo import backfill_job, join_job, run_join_demo
    root = tmp_path_factory.mktemp("join_jobs")
    checked = run_join_demo(spark, root)
    job = join_job(root)
    return checked, job, backfill_job(job)


def test_stream_and_backfill_equal_the_reference_model(spark, ran):
    from pipelines.join_check import EndOfInput, final_pairs, model_outputs, table_outputs
    checked, job, backfill = ran
    batches = [(clicks, orders) for _, clicks, orders in ARRIVALS]
    stream = table_outputs(spark, job)
    assert stream.differences(model_outputs(job.spec, batches)) == []
    assert sorted(stream.metrics) == [0, 1]      # one micro-batch per arrival: both tables in one query
    one_pass = table_outputs(spark, backfill)
    assert one_pass.differences(model_outputs(job.spec, [EndOfInput(*(sum(s, []) for s in zip(*batches)))])) == []
    timings = Counter(timing for (_, _, _, _, _, timing, _, row) in stream.results if row is not None)
    assert set(timings) == {"EARLY", "ON_TIME", "LATE"}
    closed_ms = max(end for (_, _, _, end, *_rest) in stream.results)
    assert final_pairs(stream, closed_ms) == final_pairs(one_pass, closed_ms) != Counter()
    assert checked


def test_every_row_of_either_side_is_accounted_for(spark, ran):
    from pipelines.join_check import METRICS, table_outputs
    _, job, backfill = ran
    landed = {"left": sum(len(c) for _, c, _ in ARRIVALS), "right": sum(len(o) for _, _, o in ARRIVALS)}
    quarantine = Counter(r["side"] for r in spark.read.format("delta").load(job.quarantine_path).collect())
    late = Counter(r["side"] for r in spark.read.format("delta").load(job.late_path).collect())
    for which in (job, backfill):
        metrics = table_outputs(spark, which).metrics
        for side in ("left", "right"):
            m = {name: sum(batch[side][i] for batch in metrics.values()) for i, name in enumerate(METRICS)}
            assert m["input_rows"] == landed[side]
            assert m["input_rows"] == sum(v for k, v in m.items() if k != "input_rows")
            if which is job:
                assert (m["quarantined_rows"], m["late_rows"]) == (quarantine[side], late[side]) == (1, 1)


def test_late_rows_carry_their_side_and_row(spark, ran):
    _, job, _ = ran
    late = {r["side"]: r for r in spark.read.format("delta").load(job.late_path).collect()}
    assert set(late) == {"left", "right"}
    assert late["left"]["left_row"]["click_id"] == "c7" and late["left"]["right_row"] is None
    assert late["right"]["right_row"]["order_id"] == "o5" and late["right"]["left_row"] is None
    assert all(r["event_time_ms"] <= r["watermark_ms"] for r in late.values())


def test_a_backfill_refuses_the_state_a_stream_wrote(spark, ran):
    from pipelines.join_drivers import BACKFILL, claim_run
    _, job, _ = ran
    with pytest.raises(ValueError, match="written by a stream; this run is a backfill"):
        claim_run(spark, job, BACKFILL)


def _chunked(job: JoinJob) -> JoinJob:
    base = job.output_root
    return replace(job, operator_id=f"{job.operator_id}_chunked", results_path=f"{base}/results_chunked",
                   late_path=f"{base}/late_chunked", quarantine_path=f"{base}/quarantine_chunked",
                   checkpoint_path=f"{job.checkpoint_path}_chunked")


def test_a_chunked_backfill_equals_the_model_on_its_chunks_resumes_and_resets_keeping_its_outputs(spark, ran):
    from examples.join_inputs import T0_MS
    from pipelines.join_check import EndOfInput, final_pairs, model_outputs, table_outputs
    from pipelines.join_drivers import run_join_backfill
    from windowing.core.time import MAX_TIMESTAMP_MS
    _, job, one_pass = ran
    chunked = _chunked(job)
    reports = run_join_backfill(spark, chunked, chunk="2 minutes")
    # Both inputs span [-30 s, 205 s]: chunks [-30 s, 90 s) and [90 s, 210 s); the second ends the input.
    assert [r.batch_id for r in reports] == [0, 1] and reports[-1].watermark_end_ms == MAX_TIMESTAMP_MS
    cut_ms = T0_MS + 90_000
    clicks = [c for _, cs, _ in ARRIVALS for c in cs]
    orders = [o for _, _, os in ARRIVALS for o in os]

    def chunk(rows, column, first):
        return [r for r in rows if (r[column] is None and first) or (r[column] is not None
                                                                     and (r[column] < cut_ms) == first)]
    expected = model_outputs(job.spec, [(chunk(clicks, "click_ms", True), chunk(orders, "order_ms", True)),
                                        EndOfInput(chunk(clicks, "click_ms", False), chunk(orders, "order_ms", False))])
    written = table_outputs(spark, chunked)
    assert written.differences(expected) == []
    assert not written.late     # in event-time order no row of a later chunk is late
    assert final_pairs(written) == final_pairs(table_outputs(spark, one_pass)) != Counter()

    assert all(r.skipped for r in run_join_backfill(spark, chunked, chunk="2 minutes"))   # a rerun resumes
    with pytest.raises(ValueError, match=r"written by a backfill of \[.*\) in chunks of 120000 ms; this run is a "
                                         r"backfill of \[.*\) in chunks of 240000 ms"):
        run_join_backfill(spark, chunked, chunk="4 minutes")
    # A reset discards the state, not the outputs: the new generation's one chunk is appended to them.
    rows_before = spark.read.format("delta").load(chunked.results_path).count()
    again = run_join_backfill(spark, chunked, chunk="4 minutes", reset_state=True)
    assert [r.batch_id for r in again] == [0] and not again[0].skipped
    one_batch = model_outputs(job.spec, [EndOfInput(clicks, orders)])
    assert spark.read.format("delta").load(chunked.results_path).count() == rows_before + sum(
        one_batch.results.values())
    assert table_outputs(spark, chunked).metrics == one_batch.metrics     # the progress starts over


def test_the_join_suites_pass_on_the_tables_and_fail_on_a_doubled_row_or_a_lost_late_row(spark, ran):
    from expectations import join_results
    from expectations.base import Check, read_delta, suite
    from pipelines.join_quality import validate_join_job
    from pipelines.quality import _context, _run_check
    _, job, _ = ran
    results = validate_join_job(spark, job)
    assert {r.suite: r.success for r in results} == {name: True for name in join_results.SUITES}
    context = _context(job)
    table = spark.read.format("delta").load(job.results_path)
    doubled = _run_check(context, Check(suite(join_results.RESULTS_SUITE, join_results.results_expectations(job)),
                                        "(frame)", table.unionByName(table.where("row_index IS NOT NULL").limit(1))),
                         job.operator_id)
    assert doubled.success is False and [f.expectation_type for f in doubled.failed] == [
        "expect_no_row_twice_in_a_pane"]
    progress = read_delta(spark, str(Path(job.state_root) / job.operator_id / "progress"))
    lost = join_results.accounting_frame(spark, progress, None, read_delta(spark, job.quarantine_path))
    lost_late = _run_check(context, Check(suite(join_results.ACCOUNTING_SUITE, join_results.accounting_expectations()),
                                          "(frame)", lost), job.operator_id)
    assert lost_late.success is False and [f.expectation_type for f in lost_late.failed] == [
        "expect_late_table_to_match_progress"]


@dataclass(frozen=True)
class PairCount:
    """A co-group function: its output keeps no column of an input row."""

    def co_group(self, key, window, lefts, rights):
        return [{"n": len(lefts) * len(rights)}]


def test_a_result_or_late_row_not_in_its_input_fails_the_side_rows_suites(spark, ran, tmp_path):
    """The example's tables pass (above); copies with one result row's key and one late row's time altered by a
    Delta UPDATE fail, naming the expectation; a user function's results are not checked, and the check says so."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F
    from expectations import join_results
    from expectations.base import read_delta
    from pipelines.quality import _context, _run_check
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.core.joins import JoinInput
    _, job, _ = ran
    copies = {name: str(tmp_path / name) for name in ("results", "late")}
    for name, path in copies.items():
        shutil.copytree(getattr(job, f"{name}_path"), path)
    one = (spark.read.format("delta").load(copies["results"]).where("row_index IS NOT NULL")
           .orderBy("window_start_ms", "pane_index", "row_index").first())
    DeltaTable.forPath(spark, copies["results"]).update(
        (F.col("join_key") == F.struct(F.lit(one["join_key"]["user"]).alias("user")))
        & (F.col("window_start_ms") == one["window_start_ms"]) & (F.col("pane_index") == one["pane_index"])
        & (F.col("row_index") == one["row_index"]),
        {"join_key": F.struct(F.lit("nobody").alias("user"))})
    DeltaTable.forPath(spark, copies["late"]).update(F.col("side") == "right",
                                                     {"event_time_ms": F.col("event_time_ms") + 1})
    context = _context(job)
    altered = [_run_check(context, check, job.operator_id) for check in join_results.side_checks(
        spark, job, read_delta(spark, copies["results"]), read_delta(spark, copies["late"]))]
    assert [(r.suite, r.success, [f.expectation_type for f in r.failed]) for r in altered] == [
        ("join_result_sides", False, ["expect_result_rows_in_their_inputs"]),
        ("join_late_sides", False, ["expect_late_rows_in_their_inputs"])]
    co_group = (JoinInput("click_ms").co_group(JoinInput("order_ms")).where("user").equal_to("buyer")
                .window(TumblingEventTimeWindows.of("1 minute")).apply(PairCount(), "n bigint"))
    results, late = read_delta(spark, job.results_path), read_delta(spark, job.late_path)
    untraced, late_check = join_results.side_checks(spark, dataclasses.replace(job, spec=co_group), results, late)
    assert untraced.frame is None and "co-group function (PairCount)" in untraced.skip_reason
    assert late_check.frame is not None


def test_an_interval_pair_is_traced_by_its_key_and_both_times(spark):
    """An interval join's pairs: a pair whose right time (or key) no right row has is found missing, with its side;
    the projected column of a side is compared too."""
    from expectations.join_sides import results_not_found
    from windowing.core.joins import JoinInput
    spec = (JoinInput("lt").interval_join(JoinInput("rt")).where("user").equal_to("buyer")
            .between(0, 10_000).project(left=["page"], right=["amount"]))
    inputs = {"left": spark.createDataFrame([("u1", "home", 1_000)], "user string, page string, lt bigint"),
              "right": spark.createDataFrame([("u1", 5, 4_000)], "buyer string, amount bigint, rt bigint")}
    pairs = spark.createDataFrame(
        [(("u1",), 1_000, 4_000, 4_000, "home", 5, 0),      # both rows exist
         (("u1",), 1_000, 4_001, 4_001, "home", 5, 0),      # no right row at 4001
         (("u2",), 1_000, 4_000, 4_000, "home", 5, 1),      # no row of either side for u2
         (("u1",), 1_000, 4_000, 4_000, "cart", 5, 1)],     # the left row's page is not 'cart'
        "join_key struct<user: string>, left_time_ms bigint, right_time_ms bigint, pair_time_ms bigint, "
        "page string, amount bigint, batch_id bigint")
    missing = sorted((r["side"], r["join_key"], r["event_time_ms"]) for r in
                     results_not_found(spark, spec, pairs, inputs).collect())
    assert missing == [("left", '{"user":"u1"}', 1_000), ("left", '{"user":"u2"}', 1_000),
                       ("right", '{"user":"u1"}', 4_001), ("right", '{"user":"u2"}', 4_000)]


# ---------------------------------------------------------------- reprocessing a range
RANGE_S = (60, 120)
"""The range reprocessed below, in seconds after T0: it owns the window [60 s, 120 s) (u1's and u2's panes), the
quarantined click c9 (no user, at 100 s); not the stream's late rows (at -30 s and -20 s) nor the order o8 (no time)."""


def _copied(job: JoinJob, root: Path) -> JoinJob:
    """The stream's tables and state copied under ``root``: the job reprocessed in place there (the module's tables
    stay as the other tests read them)."""
    shutil.copytree(job.output_root, root)
    moved = {k: getattr(job, k).replace(job.output_root, str(root), 1)
             for k in ("state_root", "results_path", "late_path", "quarantine_path", "checkpoint_path")}
    return replace(job, **moved)


def _rows(frame) -> Counter:
    """A table's rows, each as sorted JSON (rows hold lists: not hashable as they are)."""
    return Counter(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in frame.collect())


def test_a_reprocessed_range_replaces_exactly_its_panes_in_place_or_into_new_tables(spark, ran, tmp_path):
    """In place: the range's panes equal the reference model's on the range's rows, every row outside the range is
    untouched, a rerun gives the same tables; into a name: the range's rows only, in ``results_<name>`` etc."""
    from examples.join_inputs import T0
    from pipelines.join_check import EndOfInput, in_range, model_outputs, result_rows
    from pipelines.join_reprocess import late_range_sql, output_job, quarantine_range_sql, reprocess_join_range
    _, stream, _ = ran
    job = _copied(stream, tmp_path / "copy")
    start, end = (T0 + dt.timedelta(seconds=s) for s in RANGE_S)
    start_ms, end_ms = (int(t.timestamp() * 1000) for t in (start, end))
    rows_from_ms = start_ms - 60_000           # the window size: the rows of [0 s, 120 s) feed the range
    clicks = [c for _, cs, _ in ARRIVALS for c in cs
              if c["click_ms"] is None or rows_from_ms <= c["click_ms"] < end_ms]
    orders = [o for _, _, os in ARRIVALS for o in os
              if o["order_ms"] is None or rows_from_ms <= o["order_ms"] < end_ms]
    expected = in_range(job.spec, model_outputs(job.spec, [EndOfInput(clicks, orders)]).results, start_ms, end_ms)
    assert expected and {r[3] for r in expected} == {end_ms}

    def outside(path: str, predicate: str) -> Counter:
        return _rows(spark.read.format("delta").load(path).where(f"NOT COALESCE(({predicate}), FALSE)"))

    tables = {"results": job.family.results_range_sql(start_ms, end_ms), "late": late_range_sql(start_ms, end_ms)}
    quarantine_schema = spark.read.format("delta").load(job.quarantine_path).schema
    tables["quarantine"] = quarantine_range_sql(job, quarantine_schema, start_ms, end_ms)
    before = {kind: outside(getattr(job, f"{kind}_path"), sql) for kind, sql in tables.items()}
    assert before["late"] and before["results"]   # rows the range must not touch
    assert before["quarantine"] and all('"order_id": "o8"' in row for row in before["quarantine"])   # no time

    report = reprocess_join_range(spark, job, start, end)
    assert in_range(job.spec, result_rows(spark, job.spec, job.results_path), start_ms, end_ms) == expected
    assert {kind: outside(getattr(job, f"{kind}_path"), sql) for kind, sql in tables.items()} == before
    assert report.rows == {"results": sum(expected.values()), "late": 0, "quarantine": 1}
    quarantined = spark.read.format("delta").load(job.quarantine_path).where(tables["quarantine"]).collect()
    assert [r["left_row"]["click_id"] for r in quarantined] == ["c9"]
    assert not (Path(job.state_root) / "_staging" / report.staging_operator_id).exists()
    contents = {kind: _rows(spark.read.format("delta").load(getattr(job, f"{kind}_path"))) for kind in tables}
    again = reprocess_join_range(spark, job, start, end)       # a rerun: the same tables
    assert again.staging_operator_id != report.staging_operator_id and again.rows == report.rows
    assert {kind: _rows(spark.read.format("delta").load(getattr(job, f"{kind}_path"))) for kind in tables} == contents

    into = output_job(job, "fixed")
    assert into.results_path == f"{job.output_root}/results_fixed"
    reprocess_join_range(spark, job, start, end, into=into)
    assert result_rows(spark, job.spec, into.results_path) == expected
    assert [r["left_row"]["click_id"] for r in spark.read.format("delta").load(into.quarantine_path).collect()] \
        == ["c9"]
    assert spark.read.format("delta").load(into.late_path).count() == 0   # no late row in a complete-mode range


def test_session_windows_and_bad_ranges_are_refused_and_an_interval_joins_reach_covers_its_bounds(tmp_path):
    from examples.join_inputs import T0
    from pipelines.join_reprocess import output_job, reach_ms, reprocess_join_range
    window = ('[join]\nkind = "window"\nleft_columns = ["user"]\n[join.window]\ntype = "session"\n'
              'gap = "30 seconds"\n')
    session = _load(tmp_path, _SIDES + window)
    with pytest.raises(ValueError, match="EventTimeSessionWindows windows have no time range to reprocess"):
        reprocess_join_range(None, session, T0, T0 + dt.timedelta(minutes=1))
    with pytest.raises(ValueError, match="reprocessing range is empty"):
        reprocess_join_range(None, session, T0, T0)
    with pytest.raises(ValueError, match="output name 'no/way'"):
        output_job(session, "no/way")
    interval = '[join]\nkind = "interval"\nlower = "{}"\nupper = "{}"\nleft_columns = ["user"]\n'
    assert reach_ms(_load(tmp_path, _SIDES + interval.format("-5 seconds", "10 seconds"))) == 10_000
    assert reach_ms(_load(tmp_path, _SIDES + interval.format("-20 seconds", "-3 seconds"))) == 20_000
    assert reach_ms(_load(tmp_path, _SIDES + interval.format("2 seconds", "4 seconds"))) == 4_000


def test_a_join_jobs_window_overrides_rebuild_its_spec_and_bad_ones_are_refused_naming_them(tmp_path):
    """``JoinJob.with_window``: keys of ``[join.window]`` replaced as a single-input job's ``[window]`` (a new type
    drops the old type's keys); an unknown key, or any override of an interval join, is refused naming it."""
    from windowing.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
    job = load_job(JOB_FILE, root=tmp_path)
    assert job.with_window({}) is job
    wide = job.with_window({"size": "2 minutes"})
    assert wide.spec.window.assigner == TumblingEventTimeWindows.of(120_000)
    assert wide.spec.window.trigger == job.spec.window.trigger and wide.definition["join"]["left_columns"] == [
        "click_id", "page"]
    sliding = wide.with_window({"type": "sliding", "size": "2 minutes", "slide": "1 minute"})
    assert sliding.spec.window.assigner == SlidingEventTimeWindows.of(120_000, 60_000)
    assert sliding.with_window({"type": "tumbling"}).definition["join"]["window"].get("slide") is None
    with pytest.raises(ValueError, match=r"window override has unknown keys \['sise'\]"):
        job.with_window({"sise": "2 minutes"})
    interval = '[join]\nkind = "interval"\nlower = "-5 seconds"\nupper = "10 seconds"\nleft_columns = ["user"]\n'
    with pytest.raises(ValueError, match=r"job j is an interval join: it has no \[join.window\] to override"):
        _load(tmp_path, _SIDES + interval).with_window({"size": "2 minutes"})


@pytest.mark.parametrize("command", [["reprocess", "--start", "2026-11-01T09:01", "--end", "2026-11-01T09:02"],
                                     ["replay", "--into", "wider"]])
def test_winjob_reprocess_or_replay_of_a_join_job_refuses_a_bad_window_override_before_spark_starts(tmp_path, capsys,
                                                                                                    command):
    from pipelines.cli import main
    code = main([command[0], "--job", str(JOB_FILE), "--root", str(tmp_path), *command[1:],
                 "--window", '{"size": "5 minutes", "slid": "1 minute"}'])
    assert code != 0 and "--window {'size': '5 minutes', 'slid': '1 minute'}: window override has unknown keys " \
        "['slid']" in capsys.readouterr().err


def _interval_spec():
    """The example's inputs in an interval join: right time - left time in [-10 s, 30 s], late rows kept."""
    from windowing.core.joins import JoinInput
    return (JoinInput("click_ms", 5000).interval_join(JoinInput("order_ms", 5000)).where("user").equal_to("buyer")
            .side_output_late_data(True).between(-10_000, 30_000).project(left=["click_id"], right=["order_id"]))


def test_an_interval_joins_range_holds_the_pairs_whose_time_is_in_it(spark, ran, tmp_path):
    """The example's inputs in an interval join (right time - left time in [-10 s, 30 s]): the range [60 s, 120 s)
    reads the rows from 30 s on (its reach) and holds exactly the model's pairs whose later row is in it, among them
    the click at 50 s with the order at 65 s."""
    from examples.join_inputs import T0
    from pipelines.join_check import EndOfInput, in_range, model_outputs, result_rows
    from pipelines.join_reprocess import reach_ms, reprocess_join_range
    _, stream, _ = ran
    spec = _interval_spec()
    base = str(tmp_path)
    job = replace(stream, operator_id="pairs", spec=spec, state_root=f"{base}/state", results_path=f"{base}/results",
                  late_path=f"{base}/late", quarantine_path=f"{base}/quarantine", checkpoint_path=f"{base}/cp")
    assert reach_ms(job) == 30_000
    start, end = (T0 + dt.timedelta(seconds=s) for s in RANGE_S)
    start_ms, end_ms = (int(t.timestamp() * 1000) for t in (start, end))
    clicks = [c for _, cs, _ in ARRIVALS for c in cs]
    orders = [o for _, _, os in ARRIVALS for o in os]
    every_pair = model_outputs(spec, [EndOfInput(clicks, orders)]).results   # all rows: the range's pairs are in
    expected = in_range(spec, every_pair, start_ms, end_ms)
    assert (0, ("u1",), start_ms - 10_000, start_ms + 5_000, ("c6", "o6")) in expected
    report = reprocess_join_range(spark, job, start, end)
    assert result_rows(spark, spec, job.results_path) == expected and report.rows["results"] == len(expected)
    from pipelines.visual.join_timeline import load_join_timeline
    pairs = load_join_timeline(spark, job, key="u1").pairs     # the timeline reads the pairs of the key
    assert sorted((p.left_time_ms, p.right_time_ms) for p in pairs) == sorted(
        (left, right) for (_, key, left, right, _) in expected.elements() if key == ("u1",))


# ---------------------------------------------------------------- replaying the stream
def test_a_replay_equals_the_stream_and_one_from_a_later_batch_only_on_its_batches(spark, ran):
    """Each stream batch recorded what it read of each side; the replay feeds exactly those rows (each batch's
    per-side accounting is the stream's) and writes the stream's tables. With 2-minute windows (``--window``) it
    writes the reference model's outputs of that spec on the same batches. From batch 1: batch 0 rebuilds the state
    only, and the replay's tables hold exactly the stream's rows of batch 1."""
    from pipelines.join_check import model_outputs, table_outputs
    from pipelines.join_replay import replay_join_job, replay_join_stream
    from pipelines.stream_offsets import named_offsets_from_json
    _, job, _ = ran
    progress = spark.read.format("delta").load(str(Path(job.state_root) / job.operator_id / "progress"))
    recorded = {r["batch_id"]: named_offsets_from_json(r["source_offsets"]) for r in progress.collect()}
    assert sorted(recorded) == [0, 1] and all(set(o) == {"left", "right"} for o in recorded.values())
    assert recorded[1]["left"].start == recorded[0]["left"].end          # batch 1 read on from batch 0's end
    assert recorded[0]["left"].end.reservoir_id != recorded[0]["right"].end.reservoir_id   # one table a side

    report = replay_join_stream(spark, job, "all", diff=True)
    assert (report.first_batch, report.from_batch, report.to_batch) == (0, 0, 1)
    assert report.diff.empty, report.diff.summary()
    assert f"{report.diff.results.stream_panes} result rows in the stream" in report.diff.summary()
    assert report.diff.results.stream_panes > 0 and (report.diff.late.replay_rows,
                                                     report.diff.quarantine.replay_rows) == (2, 2)
    replay = replay_join_job(job, "all")
    assert table_outputs(spark, replay).metrics == table_outputs(spark, job).metrics
    for kind in ("results", "late", "quarantine"):
        assert _rows(spark.read.format("delta").load(getattr(replay, f"{kind}_path"))) == _rows(
            spark.read.format("delta").load(getattr(job, f"{kind}_path")))

    # With 2-minute windows: the stream's batches on the overridden spec, the reference model's outputs of it.
    wide = replay_join_stream(spark, job, "wide", window={"size": "2 minutes"}, diff=True)
    wider = job.with_window({"size": "2 minutes"})
    assert table_outputs(spark, replay_join_job(wider, "wide")).differences(
        model_outputs(wider.spec, [(c, o) for _, c, o in ARRIVALS])) == []
    assert not wide.diff.empty and '"size": "2 minutes"' in wide.diff.summary()

    assert replay_join_stream(spark, job, "later", from_batch=1).from_batch == 1
    replay = replay_join_job(job, "later")
    for kind in ("results", "late", "quarantine"):
        assert _rows(spark.read.format("delta").load(getattr(replay, f"{kind}_path"))) == _rows(
            spark.read.format("delta").load(getattr(job, f"{kind}_path")).where("batch_id = 1")) != Counter()
    assert not (Path(job.output_root) / "replay_later" / "_warmup").exists()


def test_an_interval_join_stream_with_one_side_empty_at_first_replays_pair_for_pair(spark, ran, tmp_path):
    """The example's rows through an interval join job (inputs and outputs of its own), the orders of the first
    arrival held back to the second: batch 0 reads the clicks alone (the orders table is empty: the batch records
    an offset before its first file). The stream's pairs, late rows and accounting per batch are the reference model's; the replay of
    the recorded batches writes the same tables and its summary counts pairs; the timeline draws every order in the
    batch that read it, batch 1."""
    from examples.join_inputs import land
    from pipelines.join_check import model_outputs, table_outputs
    from pipelines.join_drivers import run_join_stream
    from pipelines.join_replay import replay_join_job, replay_join_stream
    from pipelines.visual.join_timeline import load_join_timeline
    _, stream, _ = ran
    base = str(tmp_path)
    job = replace(stream, operator_id="pairs", spec=_interval_spec(), left_path=f"{base}/raw/clicks",
                  right_path=f"{base}/raw/orders", state_root=f"{base}/state", results_path=f"{base}/out/results",
                  late_path=f"{base}/out/late", quarantine_path=f"{base}/out/quarantine", checkpoint_path=f"{base}/cp")
    (_, clicks_0, orders_0), (_, clicks_1, orders_1) = ARRIVALS
    batches = [(clicks_0, []), (clicks_1, orders_0 + orders_1)]
    for clicks, orders in batches:
        land(spark, clicks, orders, job.left_path, job.right_path)
        run_join_stream(spark, job)
    streamed = table_outputs(spark, job)
    assert streamed.differences(model_outputs(job.spec, batches)) == []
    assert sorted(streamed.metrics) == [0, 1] and streamed.results
    assert streamed.metrics[0]["right"][0] == 0 and streamed.metrics[1]["right"][0] == len(orders_0 + orders_1)

    report = replay_join_stream(spark, job, "all", diff=True)
    assert report.diff.empty, report.diff.summary()
    assert f"{sum(streamed.results.values())} pairs in the stream" in report.diff.summary()
    assert table_outputs(spark, replay_join_job(job, "all")).differences(streamed) == []

    drawn = load_join_timeline(spark, job, key="u1").rows
    orders = [m for m in drawn if m.side == "right" and m.kind == "event"]
    assert orders and {m.batch_id for m in orders} == {1}
    assert {m.batch_id for m in drawn if m.side == "left" and m.kind == "event"} == {0, 1}


def test_a_replay_refuses_a_backfills_batches_naming_the_batch(spark, ran):
    from pipelines.join_replay import replay_join_stream
    from pipelines.replay import ReplayRefused
    _, _, backfill = ran
    with pytest.raises(ReplayRefused, match=f"batch 0 of operator '{backfill.operator_id}' was written by a "
                                            f"backfill run, not a stream"):
        replay_join_stream(spark, backfill, "nope")


def test_a_progress_table_without_source_offsets_takes_new_rows_and_its_old_batch_refuses_a_replay(spark, tmp_path):
    """A join progress table written before the ``source_offsets`` column existed: the next commit adds the column
    (its old rows read null), the newest row is read back, and a replay names the batch without offsets."""
    from pyspark.sql import types as T
    from pipelines.join_drivers import STREAM, claim_run
    from pipelines.join_replay import replay_join_stream
    from pipelines.replay import ReplayRefused
    from windowing.spark.joins.stores import PROGRESS_SCHEMA, JoinDeltaStore, progress_row
    from windowing.spark.lake import delta_lake_io
    job = load_job(JOB_FILE, root=tmp_path)
    claim_run(spark, job, STREAM)
    store = JoinDeltaStore(spark, job.operator_id, job.state_root)
    old_schema = T.StructType([f for f in PROGRESS_SCHEMA.fields if f.name != "source_offsets"])
    old = progress_row(batch_id=0, watermark_ms=1_000, processing_time_ms=5, writer_id="old")
    delta_lake_io.append(spark.createDataFrame([tuple(old[n] for n in old_schema.fieldNames())], old_schema),
                         store.progress_path, store.app_id, 0)
    store.source_offsets = '{"left": null, "right": null}'
    store.commit_progress(progress_row(batch_id=1, watermark_ms=2_000, processing_time_ms=6, writer_id="new"))
    written = {r["batch_id"]: r["source_offsets"] for r in spark.read.format("delta").load(store.progress_path)
               .collect()}
    assert written == {0: None, 1: store.source_offsets}
    fresh = JoinDeltaStore(spark, job.operator_id, job.state_root).last_progress()
    assert (fresh["batch_id"], fresh["source_offsets"]) == (1, store.source_offsets)
    with pytest.raises(ReplayRefused, match=f"batch 0 of operator '{job.operator_id}' has no recorded source "
                                            f"offsets"):
        replay_join_stream(spark, job, "old")


# ---------------------------------------------------------------- the timeline
_MARK = re.compile(r'<(?:circle|rect|g)\b[^>]*>')


def _marks(svg: str, css_class: str) -> list[dict[str, str]]:
    """The attributes of every element of the class in the picture."""
    found = []
    for tag in _MARK.findall(svg):
        values = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        if values.get("class") == css_class:
            found.append(values)
    return found


def test_the_timeline_of_a_key_draws_both_sides_rows_its_panes_and_a_late_row_per_side(spark, ran, tmp_path,
                                                                                        capsys):
    """``winjob inspect --timeline --key u1``: each side's input rows in the batch that read them (the recorded
    offsets), its late order, one pane mark per pane the results table holds for u1, each labelled with its output
    rows; an unknown key is refused naming it and some keys."""
    from examples.join_inputs import T0_MS
    from pipelines.cli import main
    _, job, _ = ran
    root = Path(job.left_path).parents[1]
    assert load_job(JOB_FILE, root=root) == job
    out = tmp_path / "u1.svg"
    assert main(["inspect", "--job", str(JOB_FILE), "--root", str(root), "--timeline", "--key", "u1",
                 "--out", str(out)]) == 0
    picture = out.read_text()

    def landed(side: int, column: str, key: str) -> Counter:
        return Counter((str(batch), str(row[column])) for batch, arrival in enumerate(ARRIVALS)
                       for row in arrival[side] if row[key] == "u1")
    drawn = {side: Counter((m["data-batch"], m["data-event-time-ms"]) for m in _marks(picture, "event")
                           if m["data-side"] == side) for side in ("left", "right")}
    assert drawn == {"left": landed(1, "click_ms", "user"), "right": landed(2, "order_ms", "buyer")}
    assert [(m["data-side"], m["data-event-time-ms"]) for m in _marks(picture, "late-row")] == [
        ("right", str(T0_MS - 20_000))]      # the order o5, beyond the allowed lateness
    results = spark.read.format("delta").load(job.results_path).where("join_key.user = 'u1'")
    panes = results.groupBy("window_start_ms", "pane_index", "batch_id").count().collect()
    assert sum(len(_marks(picture, f"pane {t}")) for t in ("EARLY", "ON_TIME", "LATE")) == len(panes) > 0
    assert "EARLY pane 0 of [09:00:00, 09:01:00), batch 0: rows=2" in picture   # c1 and c2 with o1
    assert "left input row" in picture and "right input row" in picture
    assert "A join:" in out.with_suffix(".html").read_text()
    capsys.readouterr()
    assert main(["inspect", "--job", str(JOB_FILE), "--root", str(root), "--timeline", "--key", "nobody",
                 "--out", str(tmp_path / "nobody.svg")]) != 0
    assert re.search(r"--key 'nobody': job clicks_orders has no input row, pane or pair of that key .*some keys: "
                     r"\['u1', 'u2'", capsys.readouterr().err)
