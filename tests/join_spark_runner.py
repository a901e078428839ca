"""Run a join transcript's batches on the Spark join operator and on the reference model, and compare.

The model is the oracle: both run the same batches (a transcript's steps cut some way), and every
batch's panes (each pane's rows in ``row_index`` order) or pairs, late and quarantined rows, watermark
and per-side accounting must agree; a late or quarantined row must carry its whole input row.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from windowing.core.joins import LEFT, RIGHT, IntervalJoinOperator, IntervalJoinSpec, WindowJoinOperator
from windowing.spark.joins.columns import (
    BATCH_ID, EVENT_TIME, IS_FINAL, JOIN_KEY, LEFT_ROW, LEFT_TIME, PAIR_TIME, PANE_INDEX, REASON, RIGHT_ROW,
    RIGHT_TIME, ROW_INDEX, SIDE, SUPERSEDES, TIMING, WE, WS)

METRICS = ("input_rows", "accepted_rows", "late_rows", "dropped_late_rows", "unassigned_rows", "quarantined_rows")


def model_for(spec):
    return IntervalJoinOperator(spec) if isinstance(spec, IntervalJoinSpec) else WindowJoinOperator(spec)


def side_schema(rows) -> str:
    """A DDL schema for a side's rows: a column is bigint when its every value is an int (or None), else string."""
    columns = {}
    for row in rows:
        for name, value in row.items():
            columns.setdefault(name, set()).add(type(value))
    return ", ".join(f"{name} {'bigint' if types <= {int, type(None)} else 'string'}"
                     for name, types in columns.items())


def frame(spark, rows, schema: str):
    names = [part.split()[0] for part in schema.split(", ")]
    typed = [tuple(None if row.get(n) is None else (row[n] if "bigint" in f else str(row[n]))
                   for n, f in zip(names, schema.split(", "))) for row in rows]
    return spark.createDataFrame(typed, schema)


def _values(row: dict) -> tuple:
    """A row's non-null values as text, by column (the frames hold a model row's values as text or bigint)."""
    return tuple(sorted((name, str(value)) for name, value in row.items() if value is not None))


def _side_row(r) -> tuple:
    """The whole input row a late or quarantine table row carries, as :func:`_values`."""
    return _values(r[{LEFT.name: LEFT_ROW, RIGHT.name: RIGHT_ROW}[r[SIDE]]].asDict())


def model_batch(spec, result) -> dict:
    columns = spec.output_columns
    out = {"wm": result.watermark_after_ms,
           "late": Counter((x.side.name, x.key, x.timestamp_ms, x.reason, _values(x.row)) for x in result.late),
           "quarantined": Counter((q.side.name, q.reason, _values(q.row)) for q in result.quarantined),
           "metrics": {side.name: tuple(getattr(result.metrics[side], m) for m in METRICS) for side in (LEFT, RIGHT)}}
    if isinstance(spec, IntervalJoinSpec):
        out["pairs"] = Counter((p.key, p.left_timestamp_ms, p.right_timestamp_ms, p.timestamp_ms,
                                tuple(p.values[c] for c in columns)) for p in result.pairs)
    else:
        out["panes"] = Counter((p.key, p.window_start_ms, p.window_end_ms, p.pane_index, p.timing, p.is_final,
                                tuple(tuple(s) for s in p.supersedes),
                                tuple(tuple(r[c] for c in columns) for r in p.rows or ()))
                               for p in result.panes)
    return out


def spark_batch(spec, store, report, batch_id: int, seen: dict) -> dict:
    """The batch's rows of the memory store's outputs (those after ``seen`` counts), as :func:`model_batch`'s."""
    columns = spec.output_columns
    new = {}
    for kind in ("results", "late", "quarantine"):
        rows = store.outputs[kind]
        new[kind], seen[kind] = rows[seen.get(kind, 0):], len(rows)
        assert all(r[BATCH_ID] == batch_id for r in new[kind]), f"{kind} rows of another batch than {batch_id}"
    out = {"wm": report.watermark_end_ms,
           "late": Counter((r[SIDE], tuple(r[JOIN_KEY]), r[EVENT_TIME], r[REASON], _side_row(r)) for r in new["late"]),
           "quarantined": Counter((r[SIDE], r[REASON], _side_row(r)) for r in new["quarantine"]),
           "metrics": {side.name: tuple(getattr(report.metrics[side], m) for m in METRICS) for side in (LEFT, RIGHT)}}
    if isinstance(spec, IntervalJoinSpec):
        out["pairs"] = Counter((tuple(r[JOIN_KEY]), r[LEFT_TIME], r[RIGHT_TIME], r[PAIR_TIME],
                                tuple(r[c] for c in columns)) for r in new["results"])
        return out
    panes: dict = {}
    for r in new["results"]:
        pane = (tuple(r[JOIN_KEY]), r[WS], r[WE], r[PANE_INDEX], r[TIMING], r[IS_FINAL],
                tuple((s[WS], s[WE]) for s in r[SUPERSEDES] or ()))
        rows = panes.setdefault(pane, [])
        if r[ROW_INDEX] is not None:
            rows.append((r[ROW_INDEX], tuple(r[c] for c in columns)))
    # A pane's rows in row_index order, which must be 0, 1, ... (the model's order of the pane's rows).
    ordered = {pane: sorted(rows) for pane, rows in panes.items()}
    for pane, rows in ordered.items():
        assert [i for i, _ in rows] == list(range(len(rows))), f"pane {pane}: row_index {[i for i, _ in rows]}"
    out["panes"] = Counter(pane + (tuple(row for _, row in rows),) for pane, rows in ordered.items())
    return out


@dataclass(frozen=True)
class Batch:
    """One batch of both inputs at a processing time; ``ends_input``: the inputs' last (no flush after it)."""

    left: list
    right: list
    pt: int | None = None
    ends_input: bool = False


FLUSH = None
"""A flush: the end of both inputs as a batch of no rows."""


def last_ends_input(batches: list) -> list:
    """``batches`` with a final flush folded into the batch before it (which then ends the input)."""
    if len(batches) >= 2 and batches[-1] is FLUSH and batches[-2] is not FLUSH:
        return batches[:-2] + [replace(batches[-2], ends_input=True)]
    return batches


def run_batches(spark, spec, batches, operator, left_schema: str, right_schema: str) -> None:
    """Run ``batches`` (:class:`Batch` or :data:`FLUSH`) on ``operator`` (on a memory store) and on the model;
    fail at the first batch that differs."""
    model = model_for(spec)
    seen: dict = {}
    for batch_id, batch in enumerate(batches):
        if batch is FLUSH:
            expected = model_batch(spec, model.flush(batch_id))
            report = operator.flush(batch_id)
        else:
            expected = model_batch(spec, model.process_batch(batch.left, batch.right, batch_id,
                                                             processing_time_ms=batch.pt, ends_input=batch.ends_input))
            report = operator.process_batch(frame(spark, batch.left, left_schema),
                                            frame(spark, batch.right, right_schema), batch_id,
                                            processing_time_ms=batch.pt, ends_input=batch.ends_input)
        actual = spark_batch(spec, operator.store, report, batch_id, seen)
        assert actual == expected, f"batch {batch_id}: spark {actual}\n model {expected}"


def statistics_columns(spark, path: str) -> set[str]:
    """The top-level columns the data files of the Delta table at ``path`` carry statistics on (their
    ``nullCount`` keys, present for every column with statistics, null or not); empty when no file has any."""
    import json
    from pathlib import Path

    columns = set()
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            add = json.loads(line).get("add")
            if add and add.get("stats"):
                columns |= set(json.loads(add["stats"]).get("nullCount", {}))
    return columns
