"""The transcript harness fails when an expectation is wrong: a transcript that passes on the reference
model, changed in one detail, must fail there (pure Python).

The changes are made to copies of catalogue transcripts, so the cases below stay in step with the
runner's comparisons; each test also checks that the unchanged transcript passes.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from transcripts import by_name
from transcripts.runner import distinct_cuts, run_cut, run_transcript, steps_are_recut
from transcripts.types import Cut, ExpectedLate, Step, Transcript
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


# ------------------------------------------------- re-cuts folded into the steps run


def test_a_recut_that_feeds_the_steps_batches_is_folded_into_the_steps_run():
    t = by_name("tumbling_positive_offset")          # four rows in one batch, then a flush
    assert [len(st.rows) for st in t.steps] == [4, 0] and t.steps[-1].flush
    assert steps_are_recut(t, Cut.ALL) and not steps_are_recut(t, Cut.ONE)
    assert distinct_cuts(t, Cut.STEPS | Cut.ONE | Cut.THREE | Cut.ALL) == [Cut.STEPS | Cut.ALL, Cut.ONE, Cut.THREE]
    assert distinct_cuts(t, Cut.ALL) == [Cut.STEPS | Cut.ALL]       # its checks, and every step's besides
    assert (Cut.STEPS | Cut.ALL).label == "steps+cutn"
    _on_reference(t, Cut.STEPS | Cut.ALL)
    pair = by_name("negative_offset")                # two rows in one batch, then a flush
    assert steps_are_recut(pair, Cut.TWO) and not steps_are_recut(pair, Cut.ONE)
    assert distinct_cuts(pair, Cut.STEPS | Cut.ONE | Cut.TWO) == [Cut.STEPS | Cut.TWO, Cut.ONE]
    _on_reference(pair, Cut.STEPS | Cut.TWO)


@pytest.mark.parametrize("change", ["watermark", "processing time", "flush in the middle", "other batches",
                                    "not batching-invariant"])
def test_steps_that_feed_other_batches_than_the_recut_do_not_fold_it(change):
    t = by_name("negative_offset")
    assert steps_are_recut(t, Cut.TWO)
    steps = list(t.steps)
    first = steps[0]
    fields = {}
    if change == "watermark":
        steps[0] = replace(first, watermark_ms=0)
    elif change == "processing time":
        steps[0] = replace(first, processing_time_ms=0)
    elif change == "flush in the middle":
        steps.insert(1, Step(flush=True))
    elif change == "other batches":
        steps[:1] = [Step(rows=first.rows[:1]), Step(rows=first.rows[1:])]
    else:
        fields = dict(batching_invariant=False, reference=Cut.STEPS, model_per_key=Cut.STEPS, spark=Cut.STEPS,
                      spark_per_key=Cut.NONE, delta=Cut.NONE)
    changed = replace(t, steps=tuple(steps), **fields)
    assert not steps_are_recut(changed, Cut.TWO)
    assert distinct_cuts(changed, Cut.STEPS | Cut.TWO) == [Cut.STEPS, Cut.TWO]
    with pytest.raises(AssertionError, match="cannot be folded|not declared batching-invariant"):
        _on_reference(changed, Cut.STEPS | Cut.TWO)


def test_the_steps_run_makes_the_checks_of_the_recut_folded_into_it():
    """What a re-cut checks beyond the steps' checks (no late row of any kind in any batch) fails the
    steps run it is folded into, and the re-cut run on the same batches fails alike."""
    t = by_name("tumbling_positive_offset")

    class DropsALateRow:
        """The reference model, reporting one accepted row of the first batch as dropped for lateness."""

        def __init__(self, spec):
            self.inner = ReferenceOperator(spec)

        def process_batch(self, rows, batch_id, watermark_ms=None):
            result = self.inner.process_batch(rows, batch_id, watermark_ms)
            if batch_id == 0:
                result.metrics.accepted_rows -= 1
                result.metrics.dropped_late_rows += 1
            return result

        def flush(self, batch_id):
            return self.inner.flush(batch_id)

        def open_windows(self):
            return self.inner.open_windows()

    run_cut(t, Cut.STEPS, DropsALateRow)         # step by step, nothing looks wrong
    for cut in (Cut.STEPS | Cut.ALL, Cut.ALL):
        with pytest.raises(AssertionError, match="batch 0 has late rows"):
            run_cut(t, cut, DropsALateRow)
