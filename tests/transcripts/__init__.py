"""The semantics contract as transcripts: one catalogue, joined here from the topic modules.

Each topic module builds its own ``TRANSCRIPTS`` list (importing a module changes nothing
outside it); this module joins them in the order below. The format is in ``types.py``, the
builders in ``build.py``, the runner (step by step, re-cut, the comparisons) in ``runner.py``.

Topics: ``first_rules`` (the first rules on short inputs), ``basics`` (assigners, watermark,
lateness, count windows, aggregates, input hygiene), ``model`` (sessions, every trigger,
evictors, window functions, processing time, sources, non-keyed windows), ``triggers`` and
``global_triggers`` (timer triggers), ``session_triggers``, ``delta_triggers``,
``processing_sessions``, ``processing_triggers``, ``watermarks`` (the watermark strategies) and
``ordered_aggregates`` (First, Last, Collect; Sum overflow).
"""
from __future__ import annotations

from transcripts import (basics, delta_triggers, first_rules, global_triggers, model, ordered_aggregates,
                         processing_sessions, processing_triggers, session_triggers, triggers, watermarks)
from transcripts.types import Cut, Executor, Transcript

TRANSCRIPTS: list[Transcript] = [
    *first_rules.TRANSCRIPTS,
    *basics.TRANSCRIPTS,
    *model.TRANSCRIPTS,
    *triggers.TRANSCRIPTS,
    *global_triggers.TRANSCRIPTS,
    *session_triggers.TRANSCRIPTS,
    *processing_sessions.TRANSCRIPTS,
    *delta_triggers.TRANSCRIPTS,
    *processing_triggers.TRANSCRIPTS,
    *watermarks.TRANSCRIPTS,
    *ordered_aggregates.TRANSCRIPTS,
]

BY_NAME: dict[str, Transcript] = {t.name: t for t in TRANSCRIPTS}
if len(BY_NAME) != len(TRANSCRIPTS):
    raise ValueError(f"transcript names must be unique: "
                     f"{sorted(n for n in BY_NAME if [t.name for t in TRANSCRIPTS].count(n) > 1)}")


def by_name(name: str) -> Transcript:
    """The transcript called ``name`` (KeyError naming it when there is none)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no transcript named {name!r}") from None


def run_on(executor: Executor, cut: Cut = Cut.NONE) -> list[Transcript]:
    """The transcripts that ``executor`` runs (with ``cut`` among their cuts, when given)."""
    return [t for t in TRANSCRIPTS if executor in t.runs and (not cut or t.runs[executor] & cut)]
