"""The join operator on Delta state: a crash at each commit stage, then a replay, gives a clean run's tables.

One window join on the per-key path (its state a table of pickled per-key states, MERGEd), one on the frame
plan and one interval join (their state buffered rows, replaced where fired or expired, the changes logged
between compactions: ``spark.windowing.stateLogBatches`` 1 and 2): the run crashes once at each of two or three
commit stages, in different batches, logging and compacting ones; each time a new operator (a restarted job)
replays the batch, and the results, late and quarantine tables must hold exactly the model's rows, each batch's
once. The racing writers write the state table every batch (``0``).
"""
from __future__ import annotations

from collections import Counter

import pytest

from join_spark_runner import frame, model_for, statistics_columns
from windowing.spark.joins.state_pins import STATE_LOG
from windowing.spark.lake.delta_lake_io import folder_names
from windowing.spark.state.log import LOG_BATCHES_SETTING
from racing import REFUSED, race
from transcripts.joins import by_name
from windowing.core.joins import IntervalJoinSpec
from windowing.spark.joins.columns import BATCH_ID, JOIN_KEY, LEFT_TIME, PANE_INDEX, RIGHT_TIME, SIDE, TS, WE, WS
from windowing.spark.joins.interval_plan import INTERVAL
from windowing.spark.joins.intake import SideSchemas
from windowing.spark.joins.operator import JoinOperator, JoinSpecMismatchError
from windowing.spark.joins.plans import plan_for

LEFT_SCHEMA, RIGHT_SCHEMA = "k string, lt bigint, id string", "key string, rt bigint, id string"


class Crash(Exception):
    """The injected fault."""


def _run(spark, spec, steps, root: str, stage_by_batch: dict[int, str]) -> JoinOperator:
    """Runs ``steps``, crashing once at ``stage_by_batch[b]`` of each batch ``b`` named there."""
    crashes = dict(stage_by_batch)
    current = {"batch": None}

    def fault(at):
        if crashes.get(current["batch"]) == at:
            del crashes[current["batch"]]
            raise Crash(at)

    op = JoinOperator.on_delta(spark, spec, "join", root, fault_injection=fault)
    for b, s in enumerate(steps):
        current["batch"] = b
        call = (lambda o: o.flush(b)) if s.flush else (lambda o: o.process_batch(
            frame(spark, s.left, LEFT_SCHEMA), frame(spark, s.right, RIGHT_SCHEMA), b, processing_time_ms=s.pt))
        try:
            call(op)
        except Crash:
            op = JoinOperator.on_delta(spark, spec, "join", root, fault_injection=fault)
            call(op)
        if isinstance(spec, IntervalJoinSpec) and s.state is not None:   # a replayed state change landed once
            held = op.store.committed_state(_plan(spark, op, spec).state_tables[0]).collect()
            assert {side: sorted(r[TS] for r in held if r[SIDE] == side.name) for side in s.state} == s.state, b
    assert not crashes, f"no crash at {crashes}"
    return op


def _plan(spark, op, spec):
    """The operator's plan (one that replayed a batch committed before its crash ran none: the spec's)."""
    return op.plan or plan_for(spec, SideSchemas.of(spec, frame(spark, [], LEFT_SCHEMA).schema,
                                                    frame(spark, [], RIGHT_SCHEMA).schema))


def _table(spark, op, kind):
    return spark.read.format("delta").load(op.store.output_paths[kind])


@pytest.mark.parametrize("transcript, log_batches, stage_by_batch, logged", [
    ("window_join_tumbling_early_and_late_panes", "2", {1: "after_outputs", 3: "before_progress"}, []),
    # batch 0 logs (crash after its log: a folder no pin names), 1 compacts (crash after its state write), 2 logs
    # (crash before it), 3 compacts at the flush
    ("window_join_idle_input", "1", {0: "before_progress", 1: "before_progress", 2: "after_outputs"}, [0, 2]),
    # batches 0 and 1 log, 2 compacts (crash after its state write), 3 compacts at the flush
    ("interval_join_inclusive_bounds_and_cleanup", "2", {1: "before_outputs", 2: "before_progress",
                                                         3: "after_progress"}, [0, 1])],
    ids=["window_join-after_outputs-before_progress", "frame_plan-before_progress-twice-after_outputs",
         "interval_join-before_outputs-before_progress-after_progress"])
def test_a_crash_then_replay_gives_the_models_rows_once(spark, tmp_path, session_settings, transcript, log_batches,
                                                        stage_by_batch, logged):
    t = by_name(transcript)
    with session_settings({LOG_BATCHES_SETTING: log_batches}):
        op = _run(spark, t.spec, t.steps, str(tmp_path), stage_by_batch)
    _assert_the_models_rows(spark, op, t)
    progress = spark.read.format("delta").load(op.store.progress_path).collect()
    assert sorted(r["batch_id"] for r in progress) == list(range(len(t.steps)))
    # The batches that logged their state change instead of writing it (the MERGEd per-key state never logs).
    assert sorted(r["batch_id"] for r in progress if r[STATE_LOG]) == logged
    plan = _plan(spark, op, t.spec)
    for table in plan.state_tables:     # the flush fired and cleaned everything, the logged changes with it
        assert spark.read.format("delta").load(op.store.state_path(table.name)).count() == 0
        assert folder_names(spark, op.store.state_log_path(table.name)) == []
    # File statistics only on the columns the tables are read by (the state's filters and deletes, the results'
    # windows or pair times and batches), though every table has more columns.
    for path, columns in [(op.store.state_path(table.name), table.statistics) for table in plan.state_tables] \
            + [(op.store.output_paths["results"], plan.results_statistics)]:
        assert statistics_columns(spark, path) == set(columns), path


def _assert_the_models_rows(spark, op, t) -> None:
    """The late and results tables hold exactly the model's rows of the transcript, each batch's once (a pane
    without pairs as one row with no values)."""
    model = model_for(t.spec)
    results = [model.flush(b) if s.flush else model.process_batch(s.left, s.right, b, processing_time_ms=s.pt)
               for b, s in enumerate(t.steps)]
    late = Counter((r[SIDE], r[BATCH_ID]) for r in _table(spark, op, "late").collect())
    assert late == Counter((x.side.name, r.batch_id) for r in results for x in r.late)
    rows = _table(spark, op, "results").collect()
    if isinstance(t.spec, IntervalJoinSpec):
        assert Counter((tuple(r[JOIN_KEY]), r[LEFT_TIME], r[RIGHT_TIME], r["l"], r["r"], r[BATCH_ID]) for r in rows) \
            == Counter((p.key, p.left_timestamp_ms, p.right_timestamp_ms, p.values["l"], p.values["r"], r.batch_id)
                       for r in results for p in r.pairs)
    else:
        assert Counter((tuple(r[JOIN_KEY]), r[WS], r[WE], r[PANE_INDEX], r["l"], r["r"], r[BATCH_ID]) for r in rows) \
            == Counter((p.key, p.window_start_ms, p.window_end_ms, p.pane_index, row and row["l"], row and row["r"],
                        r.batch_id) for r in results for p in r.panes for row in p.rows or [None])  # an empty pane


def test_of_two_join_operators_racing_on_each_batch_exactly_one_writes_it(spark, tmp_path, session_settings):
    """Two runs of one join operator on one state root, released together on every batch of an interval join
    writing its state table every batch: exactly one commits each batch, the other raises ConcurrentWriterError
    (or finds it committed and skips it); the tables hold the model's rows once and the state the transcript's."""
    t = by_name("interval_join_inclusive_bounds_and_cleanup")
    ops = {name: JoinOperator.on_delta(spark, t.spec, "join", str(tmp_path)) for name in ("w1", "w2")}

    def prepare(name, b):
        s = t.steps[b]
        left, right = frame(spark, s.left, LEFT_SCHEMA), frame(spark, s.right, RIGHT_SCHEMA)
        write = ((lambda: ops[name].flush(b)) if s.flush else
                 (lambda: ops[name].process_batch(left, right, b, processing_time_ms=s.pt)))
        return lambda: "skipped" if write().skipped else "committed"

    with session_settings({LOG_BATCHES_SETTING: "0"}):
        outcomes = race(ops, range(len(t.steps)), prepare)
    for b in range(len(t.steps)):
        assert sorted(outcomes[name][b] for name in ops) in (["committed", REFUSED], ["committed", "skipped"]), \
            (b, outcomes)
    _assert_the_models_rows(spark, ops["w1"], t)
    progress = spark.read.format("delta").load(ops["w1"].store.progress_path).collect()
    assert sorted(r["batch_id"] for r in progress) == list(range(len(t.steps)))
    assert spark.read.format("delta").load(ops["w1"].store.state_path(INTERVAL)).count() == 0


def test_state_written_for_other_rows_or_another_spec_is_refused_naming_the_plan(spark, tmp_path):
    """An interval join projecting one column a side keeps those and the keys in its state: its progress records
    which, so state holding whole rows (as an earlier release wrote) is refused by name, as is another spec."""
    import dataclasses

    from delta.tables import DeltaTable
    t = by_name("interval_join_inclusive_bounds_and_cleanup")
    step = t.steps[0]

    def run(spec, batch_id):
        op = JoinOperator.on_delta(spark, spec, "join", str(tmp_path))
        return op.process_batch(frame(spark, step.left, LEFT_SCHEMA), frame(spark, step.right, RIGHT_SCHEMA),
                                batch_id, processing_time_ms=step.pt), op
    _, op = run(t.spec, 0)
    assert op.plan.rows != SideSchemas.of(t.spec, frame(spark, [], LEFT_SCHEMA).schema,
                                          frame(spark, [], RIGHT_SCHEMA).schema).whole_rows
    other = dataclasses.replace(t.spec, upper_ms=t.spec.upper_ms + 1)
    with pytest.raises(JoinSpecMismatchError, match="'interval' plan"):
        run(other, 1)
    DeltaTable.forPath(spark, op.store.progress_path).update(set={"spec_fingerprint": f"'{t.spec.fingerprint()}'"})
    with pytest.raises(JoinSpecMismatchError, match="another spec, plan or input schemas"):
        run(t.spec, 1)
