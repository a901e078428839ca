"""The internal and output column names of the Spark joins, defined once (names only).

The state change sets' ``DELETE_FLAG`` is ``windowing.spark.input.columns``'s, which ``lake.delta_lake_io`` reads.
"""
from __future__ import annotations

from windowing.core.joins.sides import LEFT, RIGHT

SIDE = "side"
"""The row's side: ``left`` or ``right`` (:attr:`windowing.core.joins.sides.Side.name`); also in the late and
quarantine tables."""
JOIN_KEY = "join_key"
"""The join key: a struct of the key values, its fields named after the left input's key columns."""
TS = "__ts_ms"
"""The row's event time in epoch ms (the side's event-time column, converted)."""
ORDER = "__order"
"""The row's arrival order within its side and batch (with :data:`BATCH` and :data:`SIDE`: unique)."""
BATCH = "__batch"
"""The batch a state row arrived in."""
LEFT_ROW, RIGHT_ROW = "left_row", "right_row"
"""The original row of its side (a struct of the side's columns); null on the other side's rows."""
ROW_COLUMNS = {LEFT: LEFT_ROW, RIGHT: RIGHT_ROW}
"""Each side's row column."""
REASON = "reason"
"""Why a row was quarantined or is late."""

WS, WE = "window_start_ms", "window_end_ms"
PANE_INDEX, TIMING, IS_FINAL, SUPERSEDES, ROW_INDEX = "pane_index", "timing", "is_final", "supersedes", "row_index"
WATERMARK, BATCH_ID = "watermark_ms", "batch_id"
EVENT_TIME = "event_time_ms"
"""A late row's event time (ms)."""
LEFT_TIME, RIGHT_TIME, PAIR_TIME = "left_time_ms", "right_time_ms", "pair_time_ms"
"""An interval join pair's two event times and its own, ``max(left, right)``."""
EXPIRES = "expires_at_ms"
"""When an interval join state row leaves the state: once the watermark reaches it."""
OUTPUT = "__output"
"""A struct of the output columns (flattened in the results table)."""

STATE, NEXT_EVENT_TIMER, NEXT_PROCESSING_TIMER = "state", "next_event_timer_ms", "next_processing_timer_ms"
"""The per-key path's state table: a key's pickled model state and its earliest timers."""

from windowing.spark.input.columns import DELETE_FLAG  # noqa: E402,F401  (the change sets' flag, as lake.delta_lake_io reads it)

ACCEPTED, LATE, DROPPED_LATE, UNASSIGNED = "accepted_rows", "late_rows", "dropped_late_rows", "unassigned_rows"
"""The per-side accounting a plan reports (with ``input_rows`` and ``quarantined_rows`` from the intake)."""
PLAN_COUNTS = (ACCEPTED, LATE, DROPPED_LATE, UNASSIGNED)
