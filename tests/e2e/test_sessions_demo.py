"""The second example (``winjob demo --sessions``) shows what its docstring promises.

Checked on the reference model (the example itself compares its Spark run with
the model and exits non-zero when they differ).
"""
from __future__ import annotations

from examples.sessions_demo import ARRIVALS, T0, model_panes, sessions_spec
from windowing.core.reference import ReferenceOperator


def _s(seconds: float) -> int:
    return int(T0.timestamp() * 1000) + int(seconds * 1000)


def test_the_example_shows_early_on_time_and_a_late_bridge():
    panes = model_panes(sessions_spec())
    timings = [(batch, user, timing) for batch, user, _, _, timing, *_ in panes]
    assert (0, "alice", "EARLY") in timings                       # 3 clicks before her session ends
    assert {(1, u, "ON_TIME") for u in ("alice", "bob")} <= set(timings)
    late = [p for p in panes if p[4] == "LATE"]
    assert len(late) == 1
    batch, user, start, end, _, _, items, clicks = late[0]
    # The late click bridged both of alice's sessions: one session over all 6 clicks.
    assert (batch, user, start, end, items, clicks) == (2, "alice", _s(0), _s(110), 13, 6)


def test_the_late_pane_supersedes_both_sessions_and_dave_is_late():
    model = ReferenceOperator(sessions_spec())
    names = ("event_id", "user_id", "item_count", "event_time", "ingestion_time")
    results = []
    for batch_id, (_, rows) in enumerate(ARRIVALS):
        dicts = [dict(zip(names, r), event_time=int(r[3].timestamp() * 1000)) for r in rows]
        results.append(model.process_batch(dicts, batch_id))
    (late_pane,) = [p for p in results[2].panes if p.timing == "LATE"]
    assert late_pane.supersedes == ((_s(0), _s(50)), (_s(70), _s(110)))
    assert [(e.row["event_id"], e.reason) for e in results[2].late] == [("e10", "late_beyond_allowed_lateness")]
