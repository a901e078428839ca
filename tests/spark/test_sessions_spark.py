"""Session windows on Spark with real Delta tables: output modes, exactly-once, the backfill driver.

The transcripts (``transcripts/model.py``) check the session plan's panes
batch by batch on a MemoryStore; here the results TABLE is checked: what a
sink of each output mode holds must be the model's ``sink_view`` of the panes
the reference model emits for the same batches.
"""
from __future__ import annotations

import datetime as dt

import pytest

from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import EventTimeSessionWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.sinks import sink_view
from windowing.core.spec import APPEND, FINAL, UPSERT, WindowSpecBuilder
from windowing.spark.operator.protocol import SparkWindowOperator

pytestmark = pytest.mark.spark

SCHEMA = "k string, ts long, v long"
# Two sessions of "a" fire ON_TIME; a late element bridges them (a LATE pane superseding both);
# "b" has a session that is extended after it fired (its next pane supersedes the first).
BATCHES = [
    [("a", 0, 1), ("a", 15, 2), ("b", 5, 1), ("a", 50, 4)],
    [("a", 8, 8), ("b", 14, 2)],
    [("a", 100, 16), ("b", 120, 1)],
]


def session_spec(mode: str):
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(EventTimeSessionWindows.with_gap(10))
            .allowed_lateness(100).side_output_late_data().output_mode(mode).aggregate(s=Sum("v"), n=Count()))


def model_sink(mode: str) -> list[tuple]:
    model = ReferenceOperator(session_spec(mode))
    panes = []
    for b, rows in enumerate(BATCHES):
        panes += model.process_batch([dict(k=k, ts=ts, v=v) for k, ts, v in rows], b).panes
    panes += model.flush(len(BATCHES)).panes
    assert any(p.supersedes for p in panes)   # the scenario does exercise merging of fired sessions
    return sorted((p.key[0], p.window_start_ms, p.window_end_ms, p.values["s"], p.values["n"], p.pane_index,
                   p.timing, p.is_final, [list(w) for w in p.supersedes]) for p in sink_view(mode, panes))


def table_rows(spark, path) -> list[tuple]:
    df = spark.read.format("delta").load(path)
    return sorted((r.k, r.window_start_ms, r.window_end_ms, r.s, r.n, r.pane_index, r.timing, r.is_final,
                   [[w.window_start_ms, w.window_end_ms] for w in r.supersedes]) for r in df.collect())


class Crash(Exception):
    pass


@pytest.mark.slow
def test_upsert_results_table_holds_current_sessions_and_a_replay_is_not_applied_twice(spark, tmp_path):
    """On real Delta: the upsert table is the model's upsert view (latest pane per session, the
    rows of superseded sessions deleted: no stale fragments). The run crashes after its MERGE of
    batch 1 and replays it: Delta skips the replayed MERGE (txnAppId/txnVersion)."""
    from delta.tables import DeltaTable
    root = str(tmp_path / "upsert")
    crashed = []

    def fault(stage):
        if stage == "before_progress" and current == 1 and not crashed:
            crashed.append(stage)
            raise Crash(stage)

    op = SparkWindowOperator.on_delta(spark, session_spec(UPSERT), "sessions", root, fault_injection=fault)
    for current, rows in enumerate(BATCHES):
        try:
            op.process_batch(spark.createDataFrame(rows, SCHEMA), current)
        except Crash:
            op = SparkWindowOperator.on_delta(spark, session_spec(UPSERT), "sessions", root)
            op.process_batch(spark.createDataFrame(rows, SCHEMA), current)
    op.flush(len(BATCHES))
    assert crashed
    assert table_rows(spark, op.store.results_path) == model_sink(UPSERT)
    merges = DeltaTable.forPath(spark, op.store.results_path).history().where("operation = 'MERGE'").count()
    assert merges == len(BATCHES) + 1   # one MERGE per batch and the flush; the replay added none
    assert spark.read.format("delta").load(f"{root}/sessions/windows").count() == 0   # all cleaned


@pytest.mark.parametrize("mode", [APPEND, FINAL])
def test_append_and_final_results_are_the_models_sink_view(spark, mode):
    """append keeps every pane with what it supersedes; final only final panes (MemoryStore,
    which applies the modes as DeltaStore does; the upsert test above runs on Delta)."""
    from spark_adapter import SparkExecutor
    executor = SparkExecutor(spark, session_spec(mode), "`k` string, `ts` bigint, `v` bigint")
    for b, rows in enumerate(BATCHES):
        executor.process_batch([dict(k=k, ts=ts, v=v) for k, ts, v in rows], b)
    executor.flush(len(BATCHES))
    got = sorted((r["k"], r["window_start_ms"], r["window_end_ms"], r["s"], r["n"], r["pane_index"], r["timing"],
                  r["is_final"], [[w["window_start_ms"], w["window_end_ms"]] for w in r["supersedes"]])
                 for r in executor.store.results_table)
    assert got == model_sink(mode)


SESSION_JOB = """
[job]
name = "purchase_sessions"
operator_id = "purchase_sessions"
backfill_chunk = "4 minutes"

[source]
path = "raw/purchases"
key = ["user_id"]
event_time = "event_time"
max_out_of_orderness = "10 seconds"

[window]
type = "session"
gap = "20 seconds"
allowed_lateness = "30 seconds"

[aggregates]
items = "sum(item_count)"
purchases = "count()"

[spark]
"spark.sql.shuffle.partitions" = "2"
"""


@pytest.mark.slow
def test_backfill_of_a_session_job_equals_the_model(spark, tmp_path):
    """A job file with ``type = "session"`` backfilled in event-time chunks (sessions crossing
    chunks merge through the Delta state) and in one pass; both give the model's sessions, and the
    data-quality suites (reconciliation included) pass on the chunked run."""
    from examples.demo import generate_purchases, land
    from pipelines.drivers import run_backfill
    from pipelines.job import load_job
    (tmp_path / "sessions.toml").write_text(SESSION_JOB)
    job = load_job(tmp_path / "sessions.toml", root=tmp_path)
    assert isinstance(job.spec.assigner, EventTimeSessionWindows) and job.spec.assigner.gap_ms == 20_000
    rows = generate_purchases(n_events=160, n_users=16, minutes=16, seed=5)
    land(spark, rows, job.source_path)

    chunked = run_backfill(spark, job)
    assert len(chunked) > 3 and {r.plan for r in chunked} == {"session"}
    one = job.with_operator("purchase_sessions_one", "one")
    assert [r.plan for r in run_backfill(spark, one, chunk="all", validate=False)] == ["closing"]

    model = ReferenceOperator(job.spec)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    millis = lambda t: None if t is None else (t - epoch) // dt.timedelta(milliseconds=1)  # noqa: E731
    panes = model.process_batch([dict(user_id=u, item_count=c, event_time=millis(t)) for _, u, c, t, _ in rows],
                                0).panes
    panes += model.flush(1).panes
    # A complete backfill: every session gets exactly one pane, ON_TIME (none merges after firing).
    expected = sorted((p.key[0], p.window_start_ms, p.window_end_ms, p.values["items"], p.values["purchases"],
                       p.timing) for p in panes)
    assert len(expected) > 20 and any(e[2] - e[1] > 20_000 for e in expected)   # merged sessions exist
    for target in (job, one):
        got = sorted((r.user_id, r.window_start_ms, r.window_end_ms, r.items, r.purchases, r.timing)
                     for r in spark.read.format("delta").load(target.results_path).collect())
        assert got == expected, target.operator_id
