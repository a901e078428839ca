"""The colours of the pictures and pages: each means one thing wherever it appears.

The timeline and the quality report draw the same things (panes by timing, rows by outcome, the
watermark), so they take their colours from here; a chart of something else (quarantine reasons,
failed expectations) uses colours that mean nothing elsewhere.
"""
from __future__ import annotations

EARLY = "#1f77b4"           # blue: an EARLY pane
ON_TIME = "#2ca02c"         # green: an ON_TIME pane; rows that went into windows
LATE_PANE = "#ff7f0e"       # orange: a LATE pane (a late row accepted within the allowed lateness)
LATE_ROW = "#d62728"        # red: a row of the late table (beyond the allowed lateness)
DROPPED_LATE = "#8c564b"    # brown: a late row dropped (no late table)
UNASSIGNED = "#c7c7c7"      # light grey: a row no window took
INPUT_ROW = "#7f7f7f"       # grey: an input row
LEFT_INPUT = "#7f7f7f"      # grey: a join's left input row (a circle)
RIGHT_INPUT = "#17becf"     # cyan: a join's right input row (a square)
PAIR = "#bcbd22"            # olive: an interval join's pair (an arc between its two rows)
QUARANTINED = "#9467bd"     # purple: a quarantined row
QUARANTINE_REASONS = ("#9467bd", "#5e3c99", "#c2a5cf", "#762a83", "#e7d4e8", "#40004b")
"""Shades of the quarantine purple, one a reason."""
WATERMARK = "#000000"       # black: the watermark and its lag
FAILED_CRITICAL = "#67001f"  # dark crimson: a failed CRITICAL expectation
FAILED_WARNING = "#dbb40c"  # gold: a failed WARNING expectation

TIMING = {"EARLY": EARLY, "ON_TIME": ON_TIME, "LATE": LATE_PANE}
