"""The internal column names the phases share, and the one literal helper every phase uses.

A module of names only, imported by every Spark-side module: it imports nothing of the project.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

TS = "__ts_ms"
SEQ = "__seq"
STATUS = "__status"
REASON = "__reason"
WS, WE = "window_start_ms", "window_end_ms"
EMITTED, SUPERSEDES = "emitted", "supersedes"
"""A session window's state columns (whether it fired, the windows its next pane replaces); a pane's
``supersedes`` column."""
END_BUCKET = "end_bucket"
"""The windows table's partition column: a window's end divided by the operator's bucket width."""
EVENT_MS, PT, SRC = "__event_ms", "__pt_ms", "__source"
"""The row's event time (null without an event-time column), its processing time and its watermark source."""
SLICE = "__slice_ms"
"""A sliding-window element's slice: the start of its ``gcd(size, slide)`` cell (``windowing.spark.plans.slicing``)."""
GAP = "__gap_ms"
"""The session gap a gap function gave the row (null: not a positive int, or the row failed an earlier check)."""

ACCEPTED, LATE, UNASSIGNED, QUARANTINED = "accepted", "late", "unassigned", "quarantined"
DELETE_FLAG = "__delete"
"""A state change set's column: true for a row that deletes the state row with its key."""


def long_lit(value: int) -> Column:
    return F.lit(value).cast("long")
