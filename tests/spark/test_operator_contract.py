"""The window operator's contract, run against both executors on real Delta tables.

One class (:class:`windowing.spark.operator.protocol.WindowOperator`) owns the batch
protocol; the DataFrame plans and the per-key model only compute. Each test
here runs once per executor: crashes at every commit stage and their replays
write every row once (the reference model is the oracle), a committed batch is
skipped, a resumed operator keeps its state, another spec is refused unless
the state is reset, cleanup leaves no window state, and of two writers of one
batch only one lands it.
"""
from __future__ import annotations

import pytest

from transcripts.model import EveryTwoNegatives
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.spark.operator.protocol import KeyedModelOperator
from windowing.spark.operator.protocol import SparkWindowOperator
from windowing.spark import ConcurrentWriterError, SpecMismatchError

pytestmark = pytest.mark.spark

SCHEMA = "k string, ts long, v long"
BATCHES = [
    [("a", 1, -1), ("b", 4, 2), ("a", 9, 3)],
    [("a", 12, -4), ("b", 15, 5), ("a", 3, -6), (None, 5, 7)],    # [0,10) fires; a quarantined row
    [("b", 31, 8), ("a", 2, 9)],                                  # ts=2 is late beyond lateness -> late table
]
FLUSH = len(BATCHES)
STAGES = ("start", "before_outputs", "after_outputs", "before_progress", "after_progress")
CRASHES = {0: ["start", "before_outputs"], 1: ["after_outputs", "before_progress"], 2: ["after_progress"],
           FLUSH: ["before_progress"]}
"""Batch -> the stages its successive attempts crash at: every stage once, some replays crash again."""


def spec(trigger=None, lateness=5):
    builder = (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
               .allowed_lateness(lateness).side_output_late_data())
    if trigger is not None:
        builder = builder.trigger(trigger)
    return builder.aggregate(s=Sum("v"), n=Count())


EXECUTORS = {
    # the DataFrame plans, with Flink's default event-time trigger
    "dataframe-plan": (SparkWindowOperator, lambda **kw: spec(**kw)),
    # the reference model per key, with a user trigger (EARLY panes on every second negative value)
    "per-key": (KeyedModelOperator, lambda **kw: spec(EveryTwoNegatives(), **kw)),
}


@pytest.fixture(params=sorted(EXECUTORS))
def executor(request):
    return EXECUTORS[request.param]


class Crash(Exception):
    pass


def rows_of(spark, path, columns):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def expected_outputs(a_spec):
    model = ReferenceOperator(a_spec)
    results = [model.process_batch([dict(zip(("k", "ts", "v"), r)) for r in rows], b)
               for b, rows in enumerate(BATCHES)] + [model.flush(FLUSH)]
    panes = sorted((p.key[0], p.window_start_ms, p.pane_index, p.timing, p.is_final, p.values["s"], p.values["n"],
                    p.batch_id) for res in results for p in res.panes)
    late = sorted((r.row["k"], r.row["ts"], b) for b, res in enumerate(results) for r in res.late)
    quarantined = sorted((r.row["v"], r.reason, b) for b, res in enumerate(results) for r in res.quarantined)
    return panes, late, quarantined


def test_crashes_at_every_stage_and_their_replays_write_every_row_once(spark, tmp_path, executor):
    cls, make_spec = executor
    root, attempts = str(tmp_path / "s"), []

    def fault(stage):
        batch, planned = attempts[-1], CRASHES.get(attempts[-1], [])
        crashes_so_far = attempts.count(batch) - 1
        if crashes_so_far < len(planned) and stage == planned[crashes_so_far]:
            raise Crash(stage)

    def attempt(batch, call):
        while True:
            attempts.append(batch)
            # Each attempt is a new process: the operator starts from the Delta tables.
            op = cls.on_delta(spark, make_spec(), "op", root, fault_injection=fault)
            try:
                return op, call(op)
            except Crash:
                continue

    reports = []
    for b, rows in enumerate(BATCHES):
        op, report = attempt(b, lambda op: op.process_batch(spark.createDataFrame(rows, SCHEMA), b))
        reports.append(report)
    op, final = attempt(FLUSH, lambda op: op.flush(FLUSH))
    reports.append(final)

    # every planned crash fired; a batch committed before its crash (after_progress) is skipped on replay
    assert sum(len(stages) for stages in CRASHES.values()) == len(attempts) - len(reports)
    assert [r.skipped for r in reports] == [False, False, True, False]
    panes, late, quarantined = expected_outputs(make_spec())
    assert rows_of(spark, op.store.results_path, ("k", "window_start_ms", "pane_index", "timing", "is_final",
                                                  "s", "n", "batch_id")) == panes
    assert rows_of(spark, op.store.late_path, ("k", "ts", "batch_id")) == late == [("a", 2, 2)]
    assert rows_of(spark, op.store.quarantine_path, ("v", "reason", "batch_id")) == quarantined == [(7, "null_key", 1)]
    progress = spark.read.format("delta").load(op.store.progress_path).orderBy("batch_id").collect()
    assert [r.batch_id for r in progress] == [0, 1, 2, 3] and progress[-1].watermark_ms == 2**63 - 1


def test_no_window_state_remains_after_cleanup(spark, tmp_path, executor):
    cls, make_spec = executor
    op = cls.on_delta(spark, make_spec(), "op", str(tmp_path / "s"))
    for b, rows in enumerate(BATCHES):
        op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
    op.flush(FLUSH)
    if isinstance(op, KeyedModelOperator):
        # only the operator row (watermark tracker, clock) is left
        assert [r.scope for r in spark.read.format("delta").load(f"{tmp_path}/s/op/keyed_state").collect()] \
            == ["operator"]
    else:
        assert spark.read.format("delta").load(op.store.windows_path).count() == 0


def test_a_committed_batch_is_skipped_and_a_resumed_operator_keeps_its_state(spark, tmp_path, executor):
    cls, make_spec = executor
    root = str(tmp_path / "s")
    cls.on_delta(spark, make_spec(), "op", root).process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0)
    again = cls.on_delta(spark, make_spec(), "op", root)
    assert again.process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0).skipped
    report = again.process_batch(spark.createDataFrame(BATCHES[1], SCHEMA), 1)
    assert (report.skipped, report.watermark_before_ms, report.watermark_after_ms) == (False, 8, 14)
    on_time = [tuple(p) for p in spark.read.format("delta").load(again.store.results_path)
               .where("timing = 'ON_TIME'").select("k", "window_start_ms", "s").orderBy("k").collect()]
    # [0,10) of a: -1 and 3 from batch 0 (kept in Delta across the restart) and -6 from batch 1
    assert on_time == [("a", 0, -4), ("b", 0, 2)]


def test_another_spec_is_refused_unless_the_state_is_reset(spark, tmp_path, executor):
    cls, make_spec = executor
    root = str(tmp_path / "s")
    cls.on_delta(spark, make_spec(), "op", root).process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0)
    with pytest.raises(SpecMismatchError, match="reset_state=True"):
        cls.on_delta(spark, make_spec(lateness=7), "op", root)
    fresh = cls.on_delta(spark, make_spec(lateness=7), "op", root, reset_state=True)
    assert fresh.last_progress() is None
    assert fresh.process_batch(spark.createDataFrame(BATCHES[0], SCHEMA), 0).skipped is False


def test_of_two_writers_of_one_batch_only_one_lands_it(spark, tmp_path, executor):
    cls, make_spec = executor
    root = str(tmp_path / "s")
    first, second = (cls.on_delta(spark, make_spec(), "op", root) for _ in range(2))
    df = spark.createDataFrame(BATCHES[0], SCHEMA)
    first.process_batch(df, 0)
    with pytest.raises(ConcurrentWriterError, match="batch 0"):
        second.process_batch(df, 0)
    assert spark.read.format("delta").load(first.store.progress_path).count() == 1
    assert spark.read.format("delta").load(first.store.results_path).where("batch_id = 0").count() \
        == len([p for p in expected_outputs(make_spec())[0] if p[-1] == 0])
