"""Spark on real Delta state: every plan kind runs several batches on Delta.

The other Spark runs keep state in a ``MemoryStore`` (a read copies the rows: it cannot show a
plan that reads state its own batch writes). On Delta the executor keeps state in Delta tables
under ``tmp_path`` and reads every batch's panes, late and quarantined rows back from the Delta
output tables (``spark_adapter.DeltaExecutor``):

- transcripts that declare ``delta`` (``transcripts/``) run in ``test_transcripts.py``: for each
  plan kind one transcript step by step, and a few batching-invariant ones cut into 1 or 2;
- ``DELTA_MODEL_STREAMS`` here: the plan kinds no transcript takes (and the one-pass ``closing``
  batch followed by more batches), a small stream checked batch by batch against the reference model;
- a test that every plan kind the operators can run (the kind constants of the plan modules) has
  one of the above.

CI time: one run per kind and a few cuts (every Delta batch is several Spark jobs and commits).
"""
from __future__ import annotations

import itertools

import pytest

from spark_adapter import DeltaExecutor, expected_plan_kind, infer_schema
from transcripts import TRANSCRIPTS
from transcripts.build import spec
from transcripts.model import session
from transcripts.types import RECUTS, Cut
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import (ProcessingTimeSessionWindows, TumblingEventTimeWindows,
                                      TumblingProcessingTimeWindows)
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.core.triggers import (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger,
                                     EarlyLateEventTimeTrigger, PurgingTrigger)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("transcripts_delta")]

def _processing(window, trigger):
    return (WindowSpecBuilder().key_by("k").event_time("ts").window(window).trigger(trigger)
            .side_output_late_data(True).aggregate(s=Sum("v"), n=Count()))


_STREAM = [([dict(k="a", ts=0, v=1), dict(k="b", ts=2, v=2), dict(k="a", ts=4, v=4)], 1),
           ([dict(k="a", ts=9, v=8), dict(k="b", ts=30, v=16)], 5),
           ([dict(k="a", ts=12, v=32), dict(k="a", ts=3, v=64)], 14),
           ([dict(k="b", ts=33, v=128)], 30)]

DELTA_MODEL_STREAMS = {
    "session_continuous_processing_time": (
        spec(session(6), lateness=10, trigger=ContinuousProcessingTimeTrigger(6)), _STREAM, None),
    "processing_time_early_late": (
        _processing(TumblingProcessingTimeWindows.of(20), EarlyLateEventTimeTrigger(early_every_n=2, early_interval_ms=7, late_every_n=2)), _STREAM, None),
    "processing_time_session_continuous_event_time": (
        _processing(ProcessingTimeSessionWindows.with_gap(8), PurgingTrigger(ContinuousEventTimeTrigger(6))),
        _STREAM, None),
    # A first batch that closes everything (watermark +infinity) runs one pass and creates no
    # state table; the batches after it create the tables and read them as created.
    "closing": (spec(TumblingEventTimeWindows.of(10)), _STREAM, MAX_TIMESTAMP_MS),
}
"""Plan kind -> (spec, [(rows, processing time)], watermark of the first batch): a stream checked
batch by batch against the reference model (no transcript takes these kinds)."""

def all_plan_kinds() -> set[str]:
    """Every plan an operator can report: the registry's plans, the one-pass batch and the per-key path."""
    from windowing.spark.keyed import executor as keyed
    from windowing.spark.plans import executor as plan_executor
    from windowing.spark.plans import registry as plan_registry
    return set(plan_registry.PLAN_NAMES) | {plan_executor.CLOSING_PLAN, keyed.KEYED_PLAN}


_roots = itertools.count()


def _executor(spark, tmp_path, transcript_spec, rows):
    schema = infer_schema(transcript_spec, rows + [dict(k="a", ts=0, v=0, w=0.5)])
    return DeltaExecutor(spark, transcript_spec, schema, str(tmp_path / f"root{next(_roots)}"))


def test_every_plan_kind_runs_on_delta_with_several_batches():
    on_delta = [t for t in TRANSCRIPTS if Cut.STEPS in t.delta]
    kinds = [expected_plan_kind(t.spec) for t in on_delta]
    covered = set(kinds) | set(DELTA_MODEL_STREAMS)
    missing = all_plan_kinds() - covered
    assert not missing, f"plan kinds without a run on Delta state (declare delta=Cut.STEPS): {sorted(missing)}"
    assert not covered - all_plan_kinds(), sorted(covered - all_plan_kinds())
    assert len(kinds) == len(set(kinds)), "one transcript per plan kind"
    for transcript in on_delta:
        assert sum(1 for s in transcript.steps if not s.flush and s.rows) >= 2, transcript.name
        assert transcript.spec.output_mode == "append", transcript.name
    for transcript in TRANSCRIPTS:
        if transcript.delta & RECUTS:
            assert transcript.batching_invariant and len(transcript.rows) >= 3, transcript.name


def _norm(result):
    panes = sorted((p.key, p.window_start_ms, p.window_end_ms, tuple(sorted(p.values.items())), p.pane_index,
                    p.timing, bool(p.is_final), p.watermark_ms, tuple(p.supersedes or ())) for p in result.panes)
    late = sorted((tuple(x.key), x.timestamp_ms, x.reason) for x in result.late)
    return panes, late, result.metrics.input_rows, result.metrics.accepted_rows


@pytest.mark.parametrize("kind", sorted(DELTA_MODEL_STREAMS))
def test_stream_on_delta_matches_the_model(spark, tmp_path, kind):
    stream_spec, batches, first_watermark = DELTA_MODEL_STREAMS[kind]
    rows = [row for batch, _ in batches for row in batch]
    executor = _executor(spark, tmp_path, stream_spec, rows)
    model = ReferenceOperator(stream_spec)
    got, want = [], []
    for b, (batch, pt) in enumerate(batches):
        wm = first_watermark if b == 0 else None
        got.append(executor.process_batch([dict(r) for r in batch], b, watermark_ms=wm, processing_time_ms=pt))
        want.append(model.process_batch([dict(r) for r in batch], b, watermark_ms=wm, processing_time_ms=pt))
    got.append(executor.flush(len(batches)))
    want.append(model.flush(len(batches)))
    for b, (g, w) in enumerate(zip(got, want)):   # compared after the run: the outputs are read once
        assert _norm(g) == _norm(w), (kind, b)
    assert kind in executor.plans_run, (kind, executor.plans_run)
    assert len(executor.plans_run) >= 3
    assert not executor.time_windows_left()
