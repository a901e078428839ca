"""The join transcripts (tests/transcripts/joins.py) on the reference models, step by step.

Joins have their own small runner here: two inputs per batch, per-side late and quarantined
rows and accounting, and the interval join's state after each step. Pure Python.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from transcripts.joins import (
    JOIN_TRANSCRIPTS, JoinPaneExpected, JoinStep, JoinTranscript, LateExpected, PairExpected, by_name)
from windowing.core.joins import LEFT, RIGHT, IntervalJoinOperator, IntervalJoinSpec, WindowJoinOperator
from windowing.core.records import BatchMetrics


def operator_for(spec):
    return IntervalJoinOperator(spec) if isinstance(spec, IntervalJoinSpec) else WindowJoinOperator(spec)


def _pane(pane, columns) -> JoinPaneExpected:
    rows = tuple(sorted((tuple(row[c] for c in columns) for row in pane.rows), key=repr))
    return JoinPaneExpected(pane.key[0], pane.window_start_ms, pane.window_end_ms, pane.pane_index, pane.timing,
                            pane.is_final, rows, tuple(tuple(w) for w in pane.supersedes))


def _expected_pane(pane: JoinPaneExpected) -> JoinPaneExpected:
    return replace(pane, rows=tuple(sorted(pane.rows, key=repr)),
                   supersedes=tuple(tuple(w) for w in pane.supersedes))


def _multiset_problems(what: str, actual, expected) -> list[str]:
    got, want = Counter(actual), Counter(expected)
    return ([f"unexpected {what} {x}" for x in sorted((got - want).elements(), key=repr)]
            + [f"missing {what}    {x}" for x in sorted((want - got).elements(), key=repr)])


def step_problems(spec, operator, result, step: JoinStep) -> list[str]:
    """What differs between a batch's result and the step's expectations."""
    columns = spec.output_columns
    problems = _multiset_problems("pane", [_pane(p, columns) for p in result.panes],
                                  [_expected_pane(p) for p in step.panes])
    problems += _multiset_problems(
        "pair", [PairExpected(p.key[0], p.values["l"], p.values["r"], p.timestamp_ms) for p in result.pairs],
        step.pairs)
    problems += _multiset_problems(
        "late row", [LateExpected(x.side, x.key[0], x.timestamp_ms, x.reason) for x in result.late], step.late)
    problems += _multiset_problems("quarantined row", [(q.side, q.reason) for q in result.quarantined],
                                   step.quarantined)
    if step.wm_after is not None and result.watermark_after_ms != step.wm_after:
        problems.append(f"watermark after {result.watermark_after_ms}, expected {step.wm_after}")
    for side, rows in ((LEFT, step.left), (RIGHT, step.right)):
        metrics: BatchMetrics = result.metrics[side]
        if not metrics.accounted():
            problems.append(f"{side.name} rows not accounted for: {metrics}")
        if metrics.input_rows != len(rows):
            problems.append(f"{side.name} input_rows {metrics.input_rows}, expected {len(rows)}")
        for name, value in step.metrics.get(side, {}).items():
            if getattr(metrics, name) != value:
                problems.append(f"{side.name} {name} {getattr(metrics, name)}, expected {value}")
    if step.state is not None and isinstance(operator, IntervalJoinOperator):
        state = {side: sorted(ts for _, ts in rows) for side, rows in operator.state_rows().items()}
        if state != {side: sorted(ts) for side, ts in step.state.items()}:
            problems.append(f"state {state}, expected {step.state}")
    elif step.state is not None:
        state = sorted((key[0], w.start_ms, w.end_ms) for key, w in operator.open_windows())
        if state != sorted(step.state):
            problems.append(f"open windows {state}, expected {sorted(step.state)}")
    return problems


def run_join_transcript(transcript: JoinTranscript) -> None:
    """Run the steps as written; fail with every difference of the first step that differs."""
    operator = operator_for(transcript.spec)
    for batch_id, step in enumerate(transcript.steps):
        result = (operator.flush(batch_id) if step.flush
                  else operator.process_batch(step.left, step.right, batch_id, processing_time_ms=step.pt))
        problems = step_problems(transcript.spec, operator, result, step)
        if problems:
            raise AssertionError(f"{transcript.name}, step {batch_id}:\n  " + "\n  ".join(problems))


@pytest.mark.parametrize("transcript", JOIN_TRANSCRIPTS, ids=lambda t: t.name)
def test_join_transcript(transcript):
    run_join_transcript(transcript)


def test_transcript_names_are_unique():
    names = [t.name for t in JOIN_TRANSCRIPTS]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


# The runner fails when an expectation is wrong (each case checks the unchanged transcript passes first).

def _changed(transcript: JoinTranscript, index: int, **fields) -> JoinTranscript:
    steps = list(transcript.steps)
    steps[index] = replace(steps[index], **fields)
    return replace(transcript, steps=tuple(steps))


def test_a_missing_pair_in_a_pane_fails():
    t = by_name("window_join_tumbling_early_and_late_panes")
    run_join_transcript(t)
    pane = t.steps[1].panes[0]
    with pytest.raises(AssertionError, match=r"(?s)unexpected pane .*missing pane"):
        run_join_transcript(_changed(t, 1, panes=(replace(pane, rows=pane.rows[:-1]),)))


def test_a_late_row_on_the_wrong_side_fails():
    t = by_name("interval_join_inclusive_bounds_and_cleanup")
    run_join_transcript(t)
    with pytest.raises(AssertionError, match="unexpected late row"):
        run_join_transcript(_changed(t, 1, late=(LateExpected(LEFT, "a", 9), LateExpected(LEFT, "a", 9))))


def test_a_wrong_state_fails():
    t = by_name("interval_join_negative_bounds_and_keys")
    run_join_transcript(t)
    with pytest.raises(AssertionError, match="state"):
        run_join_transcript(_changed(t, 1, state={LEFT: [8, 8], RIGHT: [5, 20]}))
