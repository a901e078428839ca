"""``[window] type = "session"`` in job files (pure Python: no Spark)."""
from __future__ import annotations

import pytest

from pipelines.job import build_spec
from windowing.core.assigners import EventTimeSessionWindows, GapFromColumn
from windowing.core.spec import UPSERT

SOURCE = {"key": "user_id", "event_time": "ts"}
AGGREGATES = {"n": "count()"}


def test_session_window_with_a_static_gap_or_a_gap_column():
    spec = build_spec(SOURCE, {"type": "session", "gap": "30 seconds", "output_mode": "upsert"}, AGGREGATES)
    assert spec.assigner == EventTimeSessionWindows.with_gap(30_000) and spec.output_mode == UPSERT
    spec = build_spec(SOURCE, {"type": "session", "gap_column": "gap_ms"}, AGGREGATES)
    assert spec.assigner.dynamic_gap == GapFromColumn("gap_ms")
    assert "gap_ms" in spec.input_columns


@pytest.mark.parametrize("window, message", [
    ({"type": "session"}, "exactly one of gap"),
    ({"type": "session", "gap": "1 minute", "gap_column": "g"}, "exactly one of gap"),
    ({"type": "session", "gap": "1 minute", "size": "5 minutes"}, r"does not take \['size'\]"),
    ({"type": "session", "gap": "-1 minute"}, "gap_ms must be a positive number"),
    ({"type": "sessions", "gap": "1 minute"}, "'sessions' is not one of"),
])
def test_bad_session_windows_are_refused_with_the_bad_value(window, message):
    with pytest.raises(ValueError, match=message):
        build_spec(SOURCE, window, AGGREGATES)


def test_override_to_a_session_window_drops_the_size():
    from pipelines.job import Job
    job = Job(name="j", operator_id="j", spec=build_spec(SOURCE, {"type": "tumbling", "size": "1 minute"}, AGGREGATES),
              source_path="raw", state_root="s", results_path="r", late_path="l", quarantine_path="q",
              checkpoint_path="c", definition={"source": SOURCE, "window": {"type": "tumbling", "size": "1 minute"},
                                               "aggregates": AGGREGATES})
    sessions = job.with_window({"type": "session", "gap": "10 seconds"})
    assert sessions.spec.assigner == EventTimeSessionWindows.with_gap(10_000)
    assert sessions.with_window({"type": "tumbling", "size": "2 minutes"}).spec.assigner.size_ms == 120_000
