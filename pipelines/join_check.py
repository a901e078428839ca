"""A join job's Delta outputs checked against the reference model run on the same batches.

:func:`model_outputs` runs the pure-Python model (the spec's family's
reference: :mod:`pipelines.join_families`) over batches of rows;
:func:`table_outputs` reads what the Spark join wrote (results, late table, the
progress rows' per-side metrics). Both give the same shape, so equal means:
every batch emitted the same panes or pairs, the same late rows with their side,
and accounted for each side's rows the same way.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from pipelines.join_families import family_of
from windowing.spark.joins.columns import BATCH_ID, EVENT_TIME, JOIN_KEY, REASON, SIDE

METRICS = ("input_rows", "accepted_rows", "late_rows", "dropped_late_rows", "unassigned_rows", "quarantined_rows")
"""Each side's accounting, in this order in :attr:`JoinOutputs.metrics`."""



@dataclass(frozen=True)
class EndOfInput:
    """The inputs' last batch: its rows (none: a flush), then the watermark and the clock to +infinity."""

    left: Sequence[Mapping] = ()
    right: Sequence[Mapping] = ()


Batch = tuple[Sequence[Mapping], Sequence[Mapping]] | EndOfInput
"""A batch's (left rows, right rows), or the inputs' last batch."""


@dataclass
class JoinOutputs:
    """What a join emitted: result rows (per batch, pane and output row), late rows, per-side metrics."""

    results: Counter = field(default_factory=Counter)
    late: Counter = field(default_factory=Counter)
    metrics: dict[int, dict[str, tuple]] = field(default_factory=dict)

    def differences(self, other: "JoinOutputs") -> list[str]:
        """What differs from ``other`` (empty: the same outputs)."""
        found = []
        for name in ("results", "late"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                found.append(f"{name}: only here {sorted((mine - theirs).elements(), key=repr)[:5]}, only there "
                             f"{sorted((theirs - mine).elements(), key=repr)[:5]}")
        if self.metrics != other.metrics:
            found.append(f"metrics: {self.metrics} != {other.metrics}")
        return found


def model_outputs(spec, batches: Iterable[Batch], first_batch_id: int = 0) -> JoinOutputs:
    """The reference model's outputs of ``batches`` (batch ids from ``first_batch_id``)."""
    family = family_of(spec)
    model, out = family.reference(spec), JoinOutputs()
    for batch_id, batch in enumerate(batches, first_batch_id):
        if isinstance(batch, EndOfInput):
            result = model.process_batch(batch.left, batch.right, batch_id, ends_input=True)
        else:
            result = model.process_batch(batch[0], batch[1], batch_id)
        out.results.update(family.reference_results(spec, batch_id, result))
        out.late.update((batch_id, x.side.name, x.key, x.timestamp_ms, x.reason) for x in result.late)
        out.metrics[batch_id] = {side.name: tuple(getattr(m, name) for name in METRICS)
                                 for side, m in result.metrics.items()}
    return out


def result_rows(spark, spec, path: str) -> Counter:
    """A results table's rows in :attr:`JoinOutputs.results`'s shape (per batch, pane or pair, output row)."""
    family = family_of(spec)
    return Counter(family.table_result(spec, r) for r in spark.read.format("delta").load(path).collect())


def in_range(spec, results: Counter, start_ms: int, end_ms: int) -> Counter:
    """The results a reprocessing range ``[start, end)`` owns: panes of windows ending in ``(start, end]``, or
    pairs whose time ``max(left, right)`` is in ``[start, end)`` (:mod:`pipelines.join_reprocess`)."""
    family = family_of(spec)
    return Counter({r: n for r, n in results.items() if family.result_in_range(r, start_ms, end_ms)})


def table_outputs(spark, job) -> JoinOutputs:
    """What the job's Spark join wrote to its Delta tables (results, late, progress)."""
    from windowing.spark.joins.stores import JoinDeltaStore
    out = JoinOutputs(results=result_rows(spark, job.spec, job.results_path))
    read = lambda path: spark.read.format("delta").load(path).collect()  # noqa: E731
    out.late.update((r[BATCH_ID], r[SIDE], tuple(r[JOIN_KEY]), r[EVENT_TIME], r[REASON]) for r in read(job.late_path))
    store = JoinDeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path,
                           job.quarantine_path)
    for r in read(store.progress_path):
        metrics = json.loads(r["metrics"])
        out.metrics[r["batch_id"]] = {side: tuple(m[name] for name in METRICS) for side, m in metrics.items()}
    return out


def final_pairs(outputs: JoinOutputs, closed_before_ms: int | None = None) -> Counter:
    """Each window's output rows in its last pane (per key and window), of the windows ending at or before
    ``closed_before_ms`` (None: all): what an accumulating window join finally says, whatever the batches."""
    last: dict = {}
    for (batch_id, key, start, end, pane, *_rest, row), n in outputs.results.items():
        if closed_before_ms is not None and end > closed_before_ms:
            continue
        index = (key, start, end)
        if index not in last or last[index][0] < pane:
            last[index] = (pane, Counter())
        if last[index][0] == pane and row is not None:
            last[index][1][row] += n
    return Counter({(index, row): n for index, (_, rows) in last.items() for row, n in rows.items()})
