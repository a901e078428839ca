"""Every transcript, run by every executor: the reference model and the Spark
executor (one batch per step), and, for batching-invariant transcripts, both
again with the input cut into batches of 1 and 2 (final results compared)."""
from __future__ import annotations

import pytest

from semantics_transcripts import FLUSH, TRANSCRIPTS, Step
from spark_adapter import SparkExecutor, infer_schema
from windowing.core.reference import ReferenceOperator

BY_NAME = {t.name: t for t in TRANSCRIPTS}


def _value(v):
    return round(v, 9) if isinstance(v, float) else v


def _panes(result, spec):
    return sorted((p.key[0], p.window_start_ms, tuple(sorted((k, _value(v)) for k, v in p.values.items())),
                   p.pane_index, p.timing, p.is_final) for p in result.panes)


def _expected(panes):
    return sorted((p.key, p.start, tuple(sorted((k, _value(v)) for k, v in p.values.items())), p.pane_index,
                   p.timing, p.is_final) for p in panes)


def _run(executor, steps):
    results = []
    for batch_id, step in enumerate(steps):
        if step == FLUSH:
            results.append(executor.flush(batch_id))
        else:
            results.append(executor.process_batch(step.rows, batch_id, watermark_ms=step.watermark_ms))
    return results


def _check(transcript, results):
    for i, (result, want_panes, want_late) in enumerate(zip(results, transcript.panes, transcript.late)):
        assert _panes(result, transcript.spec) == _expected(want_panes), f"{transcript.name} step {i}"
        assert sorted((l.key[0], l.timestamp_ms) for l in result.late) == sorted(want_late), \
            f"{transcript.name} step {i} late rows"
        assert result.metrics.accounted(), (transcript.name, i, result.metrics)
        for name, value in transcript.extra.get(i, {}).items():
            assert getattr(result.metrics, name) == value, (transcript.name, i, name)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_transcript_reference(name):
    transcript = BY_NAME[name]
    _check(transcript, _run(ReferenceOperator(transcript.spec), transcript.steps))


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_transcript_spark(spark, name):
    transcript = BY_NAME[name]
    schema = infer_schema(transcript.spec, [r for s in transcript.steps if s != FLUSH for r in s.rows]
                          + [dict(k="a", ts=0, v=0, w=0.5)])
    _check(transcript, _run(SparkExecutor(spark, transcript.spec, schema), transcript.steps))


def _final(results):
    last = {}
    for result in results:
        for p in result.panes:
            ident = (p.key, p.window_start_ms)
            if ident not in last or p.pane_index >= last[ident].pane_index:
                last[ident] = p
    return sorted((k, tuple(sorted((n, _value(v)) for n, v in p.values.items()))) for k, p in last.items())


def _recut(transcript, size):
    rows = [r for s in transcript.steps if s != FLUSH for r in s.rows]
    return [Step(rows[i:i + size]) for i in range(0, len(rows), size)] + [FLUSH]


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(n for n, t in BY_NAME.items() if t.batching_invariant))
def test_batching_invariant_transcripts(spark, name):
    transcript = BY_NAME[name]
    schema = infer_schema(transcript.spec, [r for s in transcript.steps if s != FLUSH for r in s.rows]
                          + [dict(k="a", ts=0, v=0, w=0.5)])
    expected = _final(_run(ReferenceOperator(transcript.spec), transcript.steps))
    assert expected
    for size in (1, 2):
        assert _final(_run(ReferenceOperator(transcript.spec), _recut(transcript, size))) == expected, size
    for size in (1, 2):
        assert _final(_run(SparkExecutor(spark, transcript.spec, schema), _recut(transcript, size))) == expected, size
