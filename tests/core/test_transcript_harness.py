"""The transcript harness fails when an expectation is wrong: a transcript that passes on the reference
model, changed in one detail, must fail there (pure Python).

The changes are made to copies of catalogue transcripts, so the cases below stay in step with the
runner's comparisons; each test also checks that the unchanged transcript passes.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from transcripts import by_name
from transcripts.runner import run_cut, run_transcript
from transcripts.types import Cut, ExpectedLate, Transcript
from windowing.core.records import QUARANTINE_NULL_KEY
from windowing.core.reference import ReferenceOperator


def _changed(transcript: Transcript, index: int, **step_fields) -> Transcript:
    steps = list(transcript.steps)
    steps[index] = replace(steps[index], **step_fields)
    return replace(transcript, name=f"{transcript.name}_changed", steps=tuple(steps))


def _on_reference(transcript: Transcript, cut: Cut = Cut.STEPS) -> None:
    run_cut(transcript, cut, ReferenceOperator)


def test_a_wrong_value_in_an_expected_pane_fails():
    t = by_name("tumbling_window_boundaries")
    _on_reference(t)
    pane = t.steps[1].panes[0]
    wrong = _changed(t, 1, panes=(replace(pane, values={**pane.values, "s": pane.values["s"] + 1}),))
    with pytest.raises(AssertionError, match=r"(?s)unexpected pane .*s': 3.*missing pane .*s': 4"):
        _on_reference(wrong)


@pytest.mark.parametrize("field, value", [("timing", "LATE"), ("is_final", False), ("pane_index", 1),
                                          ("window_end_ms", 11)])
def test_a_wrong_pane_attribute_fails(field, value):
    t = by_name("tumbling_window_boundaries")
    wrong = _changed(t, 1, panes=(replace(t.steps[1].panes[0], **{field: value}),))
    with pytest.raises(AssertionError, match="missing pane"):
        _on_reference(wrong)


def test_a_pane_expected_in_another_step_fails():
    t = by_name("tumbling_window_boundaries")
    moved = _changed(_changed(t, 1, panes=()), 0, panes=t.steps[1].panes)
    with pytest.raises(AssertionError, match=r"(?s)step 0: missing pane.*step 1: unexpected pane"):
        _on_reference(moved)


def test_a_missing_late_row_fails():
    t = by_name("tumbling_window_boundaries")
    assert t.steps[2].late
    wrong = _changed(t, 2, late=(), metrics={})
    with pytest.raises(AssertionError, match="unexpected late row"):
        _on_reference(wrong)


def test_a_late_row_with_another_reason_fails():
    t = by_name("tumbling_window_boundaries")
    late = t.steps[2].late[0]
    wrong = _changed(t, 2, late=(ExpectedLate(late.key, late.timestamp_ms, "some other reason"),))
    with pytest.raises(AssertionError, match=r"(?s)unexpected late row.*missing late row"):
        _on_reference(wrong)


def test_an_executor_that_loses_a_late_row_fails():
    t = by_name("tumbling_window_boundaries")

    class LosesLateRows:
        def __init__(self, spec):
            self.inner = ReferenceOperator(spec)

        def process_batch(self, rows, batch_id, watermark_ms=None):
            result = self.inner.process_batch(rows, batch_id, watermark_ms)
            result.late = []
            return result

        def flush(self, batch_id):
            return self.inner.flush(batch_id)

        def open_windows(self):
            return self.inner.open_windows()

    with pytest.raises(AssertionError, match="missing late row"):
        run_transcript(t, LosesLateRows(t.spec))


def test_an_extra_quarantined_row_fails():
    t = by_name("malformed_rows_quarantined")
    _on_reference(t)
    extra = _changed(t, 0, quarantined=t.steps[0].quarantined + (QUARANTINE_NULL_KEY,))
    with pytest.raises(AssertionError, match="quarantined reasons"):
        _on_reference(extra)


def test_a_wrong_metric_or_watermark_fails():
    t = by_name("tumbling_window_boundaries")
    with pytest.raises(AssertionError, match="metrics.accepted_rows = 0, expected 1"):
        _on_reference(_changed(t, 2, metrics=dict(late_rows=1, accepted_rows=1)))
    with pytest.raises(AssertionError, match="watermark after = 9, expected 10"):
        _on_reference(_changed(t, 1, watermark_after_ms=10))


def test_a_wrong_final_pane_fails_every_cut():
    t = by_name("tumbling_positive_offset")
    assert t.batching_invariant
    pane = t.steps[-1].panes[0]
    wrong = _changed(t, len(t.steps) - 1, panes=(replace(pane, values={**pane.values, "n": 2}),))
    for cut in (Cut.ONE, Cut.TWO, Cut.THREE, Cut.ALL):
        _on_reference(t, cut)
        with pytest.raises(AssertionError, match=f"cut into batches of {cut.size or 'all'}"):
            _on_reference(wrong, cut)


def test_recuts_of_a_transcript_that_is_not_batching_invariant_are_refused():
    with pytest.raises(ValueError, match="tumbling_window_boundaries: spark re-cuts .* need a batching-invariant"):
        replace(by_name("tumbling_window_boundaries"), spark=Cut.STEPS | Cut.ONE)
