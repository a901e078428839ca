"""The transcript runner: feed a transcript to an executor and compare what it emits.

An executor is any object with ``process_batch(rows, batch_id, watermark_ms=None)`` (and
``processing_time_ms=`` when a step has one) and ``flush(batch_id)`` returning something shaped
like ``windowing.core.records.BatchResult`` (``.panes``, ``.late``, ``.metrics``, optionally
``.quarantined`` and ``.watermark_after_ms``):

* ``run_transcript`` runs the steps as written and compares every step (``Cut.STEPS``);
* ``check_batching_invariance`` re-cuts the rows into batches of the given sizes, flushes,
  and compares the final results (the other cuts);
* a re-cut whose batches are the steps' own (:func:`steps_are_recut`) is folded into the steps
  run (:func:`distinct_cuts`): on the same batches it would only repeat that run, so the steps run
  makes its final-result checks as well (``run_cut`` with ``Cut.STEPS | Cut.ALL``, say).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Iterable

from transcripts.types import RECUTS, Cut, Transcript

REL_TOL = 1e-9
ABS_TOL = 1e-9


# --------------------------------------------------------------- comparison


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a == b


def _same_values(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(_same_value(a[k], b[k]) for k in a)


def _pane_ident(p) -> tuple:
    """Everything of a pane but its values (values are compared with tolerance)."""
    return (tuple(p.key), p.window_start_ms, p.window_end_ms, p.pane_index, p.timing, bool(p.is_final),
            tuple(tuple(w) for w in getattr(p, "supersedes", ()) or ()))


def _same_rows(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return len(a) == len(b) and all(_same_values(dict(x), dict(y)) for x, y in zip(a, b))


def _show(p) -> str:
    sup = getattr(p, "supersedes", ()) or ()
    rows = getattr(p, "rows", None)
    return (f"key={tuple(p.key)} [{p.window_start_ms},{p.window_end_ms}) #{p.pane_index} {p.timing}"
            f"{' final' if p.is_final else ''} {dict(p.values)}"
            f"{f' supersedes={list(sup)}' if sup else ''}{f' rows={list(rows)}' if rows is not None else ''}")


def _sort_key(ident: tuple) -> str:
    return repr(ident)


def diff_panes(actual: Iterable, expected: Iterable) -> list[str]:
    """Order-insensitive multiset comparison of panes; returns human-readable problems."""
    unmatched = list(expected)
    extra = []
    for pane in sorted(actual, key=lambda p: _sort_key(_pane_ident(p))):
        for i, want in enumerate(unmatched):
            if _pane_ident(want) == _pane_ident(pane) and _same_values(dict(pane.values), want.values) \
                    and _same_rows(getattr(pane, "rows", None), want.rows):
                del unmatched[i]
                break
        else:
            extra.append(pane)
    return ([f"unexpected pane {_show(p)}" for p in extra]
            + [f"missing pane    {_show(p)}" for p in unmatched])


def _late_ident(x) -> tuple:
    return (tuple(x.key), x.timestamp_ms, x.reason)


def diff_late(actual: Iterable, expected: Iterable) -> list[str]:
    got, want = Counter(_late_ident(x) for x in actual), Counter(_late_ident(x) for x in expected)
    return ([f"unexpected late row {i} x{n}" for i, n in (got - want).items()]
            + [f"missing late row    {i} x{n}" for i, n in (want - got).items()])


def check_step(transcript: Transcript, index: int, result) -> list[str]:
    """Compare one step's result with the transcript; returns the problems found."""
    st = transcript.steps[index]
    where = f"{transcript.name} step {index}{' (flush)' if st.flush else ''}"
    problems = [f"{where}: {p}" for p in diff_panes(result.panes, st.panes)]
    problems += [f"{where}: {p}" for p in diff_late(result.late, st.late)]
    m = result.metrics
    if not m.accounted():
        problems.append(f"{where}: metrics do not account for every row: {m}")
    expected_metrics = {"input_rows": len(st.rows), "late_rows": len(st.late),
                        "panes_emitted": len(st.panes), **st.metrics}
    for name, want in expected_metrics.items():
        if getattr(m, name) != want:
            problems.append(f"{where}: metrics.{name} = {getattr(m, name)}, expected {want}")
    if st.watermark_after_ms is not None and getattr(result, "watermark_after_ms", None) is not None:
        if result.watermark_after_ms != st.watermark_after_ms:
            problems.append(f"{where}: watermark after = {result.watermark_after_ms}, "
                            f"expected {st.watermark_after_ms}")
    if st.quarantined or len(st.rows):
        got = Counter(q.reason for q in getattr(result, "quarantined", []))
        if got != Counter(st.quarantined):
            problems.append(f"{where}: quarantined reasons {dict(got)}, expected {dict(Counter(st.quarantined))}")
    return problems


def reference_time_windows_left(executor) -> list:
    """The open (key, window) pairs that are not global windows, from ``open_windows()``."""
    return [(key, w) for key, w in executor.open_windows() if not w.is_global]


def run_steps(transcript: Transcript, executor) -> list:
    """Feed every step to the executor (rows copied) and return the results."""
    results = []
    for batch_id, st in enumerate(transcript.steps):
        if st.flush:
            results.append(executor.flush(batch_id))
        elif st.processing_time_ms is not None:
            results.append(executor.process_batch([dict(row) for row in st.rows], batch_id,
                                                  watermark_ms=st.watermark_ms,
                                                  processing_time_ms=st.processing_time_ms))
        else:
            results.append(executor.process_batch([dict(row) for row in st.rows], batch_id,
                                                  watermark_ms=st.watermark_ms))
    return results


def run_transcript(transcript: Transcript, executor,
                   time_windows_left: Callable[[Any], list] | None = reference_time_windows_left) -> list:
    """Run every step, then compare each step's panes, late rows and metrics with the transcript.

    All steps run before anything is compared, so a pane that changes after
    it was emitted is caught. After a flush, ``time_windows_left(executor)``
    must be empty (no time-window state survives a flush); pass None to skip.

    Raises:
        AssertionError: listing every difference.
    """
    results = run_steps(transcript, executor)
    problems = []
    for index, result in enumerate(results):
        problems += check_step(transcript, index, result)
        if transcript.steps[index].flush and time_windows_left is not None:
            # Only the state right after the LAST flush can be inspected; a flush in the
            # middle of a transcript is checked through its outputs.
            if index == len(results) - 1:
                left = time_windows_left(executor)
                if left:
                    problems.append(f"{transcript.name}: time-window state left after flush: {left}")
    assert not problems, "\n".join(problems)
    return results


# ----------------------------------------------------------- batching invariance


def final_panes(panes_per_step: Iterable[Iterable]) -> dict:
    """The last pane per (key, window) over a whole run: later steps, then higher pane_index, win."""
    final: dict = {}
    for panes in panes_per_step:
        for pane in sorted(panes, key=lambda p: p.pane_index):
            final[(tuple(pane.key), pane.window_start_ms, pane.window_end_ms)] = pane
    return final


def recut(transcript: Transcript, size: int | None) -> list[list[dict]]:
    """All rows in arrival order, in batches of ``size`` (None: one batch); explicit watermarks dropped."""
    rows = transcript.rows
    if size is None:
        return [rows]
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def final_result_problems(transcript: Transcript, results: list, label: str) -> list[str]:
    """A re-cut's checks on the results of a whole run (its batches, then the flush): the last pane
    per window equals the transcript's last expected one (values, timing and is_final; pane indices
    may differ with the cut when count triggers fire), no batch has late rows, every batch's metrics
    account for its rows."""
    want = final_panes(st.panes for st in transcript.steps)
    got = final_panes(res.panes for res in results)
    problems = []
    for ident in sorted(set(got) | set(want), key=repr):
        g, w = got.get(ident), want.get(ident)
        if g is None or w is None:
            problems.append(f"{label}: window {ident}: got {g and _show(g)}, expected {w and _show(w)}")
        elif not (_same_values(dict(g.values), w.values) and g.timing == w.timing
                  and bool(g.is_final) == w.is_final):
            problems.append(f"{label}: window {ident}: got {_show(g)}, expected {_show(w)}")
    for res in results:
        if res.late or res.metrics.late_rows or res.metrics.dropped_late_rows:
            problems.append(f"{label}: batch {res.batch_id} has late rows {res.late}")
        if not res.metrics.accounted():
            problems.append(f"{label}: batch {res.batch_id} metrics do not account: {res.metrics}")
    return problems


def _assert_recuttable(transcript: Transcript) -> None:
    assert transcript.batching_invariant, f"{transcript.name} is not declared batching-invariant"
    assert transcript.steps and transcript.steps[-1].flush, f"{transcript.name} must end with a flush"


def check_batching_invariance(transcript: Transcript, make_executor: Callable[[Any], Any],
                              sizes: Iterable[int | None] = (1, 2, 3, None)) -> None:
    """Re-cut a batching-invariant transcript, flush at the end, compare final results only
    (:func:`final_result_problems`).

    Sizes that cut the rows into the same batches as an earlier size run once.
    """
    _assert_recuttable(transcript)
    problems = []
    cuts_run = set()
    for size in sizes:
        batches = recut(transcript, size)
        # A size at least the number of rows cuts exactly like "all" (or a smaller size already did):
        # the same batches would run the same plans a second time.
        cut = tuple(len(batch) for batch in batches)
        if cut in cuts_run:
            continue
        cuts_run.add(cut)
        executor = make_executor(transcript.spec)
        results = [executor.process_batch(batch, b) for b, batch in enumerate(batches)]
        results.append(executor.flush(len(batches)))
        problems += final_result_problems(transcript, results, f"{transcript.name} cut into batches of {size or 'all'}")
    assert not problems, "\n".join(problems)


def steps_are_recut(transcript: Transcript, cut: Cut) -> bool:
    """Whether running the steps as written feeds an executor exactly what re-cut ``cut`` feeds it:
    the same rows in the same batches in the same order (so the same batch ids), then one flush,
    the last step; no batch with an explicit watermark or processing time (a re-cut gives none)."""
    if cut not in RECUTS or len(cut.members()) != 1 or not transcript.batching_invariant:
        return False
    steps = transcript.steps
    if not steps or not steps[-1].flush or any(st.flush for st in steps[:-1]):
        return False
    if any(st.watermark_ms is not None or st.processing_time_ms is not None for st in steps[:-1]):
        return False
    return [[dict(row) for row in st.rows] for st in steps[:-1]] == recut(transcript, cut.size)


def folded_recuts(transcript: Transcript, cuts: Cut) -> Cut:
    """The re-cuts of ``cuts`` whose batches are the steps' (:func:`steps_are_recut`)."""
    folded = Cut.NONE
    for cut in cuts.members():
        if cut is not Cut.STEPS and steps_are_recut(transcript, cut):
            folded |= cut
    return folded


def distinct_cuts(transcript: Transcript, cuts: Cut) -> list[Cut]:
    """The runs that ``cuts`` asks for, in order, each on its own batches.

    A re-cut whose batches are the steps' is folded into the steps run: the first run is then
    ``Cut.STEPS`` with those re-cuts (the steps run makes their checks too), also when ``cuts`` has
    no ``STEPS`` (the steps run checks every step besides). A re-cut that gives the same batches as
    an earlier one is left out (with 3 rows or fewer, a cut of 3 is a cut of all)."""
    folded = folded_recuts(transcript, cuts)
    out, seen = [], set()
    if Cut.STEPS in cuts or folded:
        out.append(Cut.STEPS | folded)
    for cut in cuts.members():
        if cut is Cut.STEPS or cut in folded:
            continue
        shape = tuple(len(batch) for batch in recut(transcript, cut.size))
        if shape in seen:
            continue
        seen.add(shape)
        out.append(cut)
    return out


def run_cut(transcript: Transcript, cut: Cut, make_executor: Callable[[Any], Any],
            time_windows_left: Callable[[Any], list] | None = reference_time_windows_left) -> list | None:
    """Run one cut of a transcript on a new executor from ``make_executor(spec)``.

    ``cut`` is a single cut, or ``Cut.STEPS`` with re-cuts folded into it (:func:`distinct_cuts`):
    the steps run, checked step by step, then checked as each of those re-cuts would be.
    Returns the steps run's results (None for a re-cut)."""
    if Cut.STEPS not in cut:
        check_batching_invariance(transcript, make_executor, sizes=(cut.size,))
        return None
    recuts = cut & ~Cut.STEPS
    if recuts:
        _assert_recuttable(transcript)
        assert folded_recuts(transcript, recuts) == recuts, \
            f"{transcript.name}: {recuts} cut the rows otherwise than the steps: they cannot be folded into them"
    results = run_transcript(transcript, make_executor(transcript.spec), time_windows_left=time_windows_left)
    if recuts:
        label = f"{transcript.name} steps as batches of {' and '.join(str(c.size or 'all') for c in recuts.members())}"
        problems = final_result_problems(transcript, results, label)
        assert not problems, "\n".join(problems)
    return results
