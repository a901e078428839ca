"""Where a timeline's input rows go: the batch each arrived in, its key as text, the commits that added them.

Arrival batch of a raw row: the late and quarantine tables record it. For the
rows that went into windows it is derived from the raw table's Delta log: a
row arrived in the first batch whose processing time is not before the
commit that added the row (a stream reads each commit in the next
micro-batch). When every commit precedes the first batch (a backfill over
data already landed), batches were cut by event time instead, and a row is
placed in the first batch whose largest event time seen reaches its own.
"""
from __future__ import annotations

import bisect
import json
from pathlib import Path

from pipelines.visual.timeline_marks import MIN_MS, NULL_KEY, BatchRow

MAX_DRAWN_ROWS = 20_000
"""At most this many raw rows (of each input) are drawn by default (the picture says when there were more)."""


def arrival_batches(commit_ms: list[int | None], event_ms: list[int | None], batches: tuple[BatchRow, ...]
                    ) -> list[int | None]:
    """The batch each raw row arrived in (see the module docstring); None: not read by any committed batch yet."""
    if not batches:
        return [None] * len(commit_ms)
    times = [b.processing_time_ms for b in batches]
    known = [c for c in commit_ms if c is not None]
    by_commit = all(t is not None for t in times) and not (known and len(batches) > 1 and max(known) <= times[0])
    out: list[int | None] = []
    if by_commit:
        for c in commit_ms:
            i = bisect.bisect_left(times, c) if c is not None else 0
            out.append(batches[i].batch_id if i < len(batches) else None)
        return out
    seen = [b.max_seen_ms if b.max_seen_ms is not None else MIN_MS for b in batches]
    running = [max(seen[:i + 1]) for i in range(len(seen))]
    for e in event_ms:
        i = bisect.bisect_left(running, e) if e is not None else 0
        out.append(batches[min(i, len(batches) - 1)].batch_id)
    return out


def key_text(row, key_columns) -> str:
    """A key as the picture names it: the key columns' values joined by ``", "`` (a null among them:
    :data:`NULL_KEY`; no key columns: ``(all)``)."""
    if not key_columns:
        return "(all)"
    if any(row[c] is None for c in key_columns):
        return NULL_KEY
    return ", ".join(str(row[c]) for c in key_columns)


def commit_times(source_path: str) -> dict[str, int]:
    """File name -> commit timestamp (ms) of the commit that added it, from the table's ``_delta_log`` JSON."""
    out: dict[str, int] = {}
    for commit in sorted(Path(source_path, "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        stamp = next((a["commitInfo"].get("timestamp") for a in actions if "commitInfo" in a), None)
        stamp = stamp if stamp is not None else int(commit.stat().st_mtime * 1000)
        for a in actions:
            if "add" in a:
                out[Path(a["add"]["path"]).name] = stamp
    return out
