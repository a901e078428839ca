"""The per-key path's commit protocol on real Delta: a crash and a replay write every row once."""
from __future__ import annotations

import pytest

from transcripts.model import EveryTwoNegatives
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.spark.dispatch import operator_on_delta
from windowing.spark.keyed import KeyedModelOperator
from windowing.spark.operator import SpecMismatchError

pytestmark = pytest.mark.spark

SCHEMA = "k string, ts long, v long"
BATCHES = [
    [("a", 1, -1), ("b", 4, 2), ("a", 9, 3)],
    [("a", 12, -4), ("b", 15, 5), ("a", 3, -6), (None, 5, 7)],    # a's 2nd negative fires [0,10); a null key
    [("b", 31, 8), ("a", 2, 9)],                                  # ts=2 is late beyond lateness -> late table
]


def spec(lateness=5):
    return (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(10))
            .trigger(EveryTwoNegatives()).allowed_lateness(lateness).side_output_late_data()
            .aggregate(s=Sum("v"), n=Count()))


class Crash(Exception):
    pass


def test_replay_after_crash_writes_every_row_exactly_once(spark, tmp_path):
    root = str(tmp_path / "s")
    stage_seen = []

    def fault(stage):
        stage_seen.append(stage)
        if stage == "before_progress" and len([s for s in stage_seen if s == "start"]) == 2:
            raise Crash(stage)   # batch 1: outputs and state MERGE landed, progress did not

    op = operator_on_delta(spark, spec(), "op", root, fault_injection=fault)
    assert isinstance(op, KeyedModelOperator)
    for b, rows in enumerate(BATCHES):
        try:
            op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
        except Crash:
            # A new process starts from the Delta tables and replays batch b: state AS OF the last
            # committed version, outputs and MERGE skipped by Delta's txnAppId/txnVersion.
            op = operator_on_delta(spark, spec(), "op", root)
            report = op.process_batch(spark.createDataFrame(rows, SCHEMA), b)
            assert report.plan == "keyed" and not report.skipped
    op.flush(len(BATCHES))

    model = ReferenceOperator(spec())
    results = [model.process_batch([dict(zip("k ts v".split(), r)) for r in rows], b)
               for b, rows in enumerate(BATCHES)] + [model.flush(len(BATCHES))]
    want = sorted((p.key[0], p.window_start_ms, p.pane_index, p.timing, p.is_final, p.values["s"], p.values["n"],
                   p.batch_id) for res in results for p in res.panes)
    got = sorted(tuple(r) for r in spark.read.format("delta").load(op.store.results_path)
                 .select("k", "window_start_ms", "pane_index", "timing", "is_final", "s", "n", "batch_id").collect())
    assert got == want and any(t == "EARLY" for _, _, _, t, *_ in got)
    late = spark.read.format("delta").load(op.store.late_path).collect()
    assert [(r.k, r.ts, r.batch_id) for r in late] == [("a", 2, 2)]
    quarantine = spark.read.format("delta").load(op.store.quarantine_path).collect()
    assert [(r.v, r.reason, r.batch_id) for r in quarantine] == [(7, "null_key", 1)]
    # after the flush every window is cleaned: only the operator row (watermark, clock) is left
    assert [r.scope for r in spark.read.format("delta").load(f"{root}/op/keyed_state").collect()] == ["operator"]

    with pytest.raises(SpecMismatchError, match="reset_state=True"):
        operator_on_delta(spark, spec(lateness=7), "op", root)
    assert operator_on_delta(spark, spec(lateness=7), "op", root, reset_state=True).last_progress() is None
