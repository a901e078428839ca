"""The semantics contract as transcripts: one catalogue, discovered from the topic modules.

Each topic module of this package builds its own ``TRANSCRIPTS`` list (importing a module
changes nothing outside it); this module finds every module that has one and joins them in the
modules' name order, so a new topic module is picked up without being listed anywhere. The
format is in ``types.py``, the builders in ``build.py``, the runner (step by step, re-cut, the
comparisons) in ``runner.py``.

Topics: ``first_rules`` (the first rules on short inputs), ``basics`` (assigners, watermark,
lateness, count windows, aggregates, input hygiene), ``model`` (sessions, every trigger,
evictors, window functions, processing time, sources, non-keyed windows), ``triggers`` and
``global_triggers`` (timer triggers), ``session_triggers``, ``delta_triggers``,
``processing_sessions``, ``processing_triggers``, ``watermarks`` (the watermark strategies) and
``ordered_aggregates`` (First, Last, Collect; Sum overflow). ``joins`` holds the two-input
transcripts under ``JOIN_TRANSCRIPTS``, run by their own runner (``tests/core/test_join_transcripts.py``).
"""
from __future__ import annotations

import importlib
import pkgutil

from transcripts.types import Cut, Executor, Transcript


def _discovered() -> list[Transcript]:
    """Every topic module's ``TRANSCRIPTS``, in module name order."""
    found: list[Transcript] = []
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        topic = importlib.import_module(f"{__name__}.{module}")
        found.extend(getattr(topic, "TRANSCRIPTS", ()))
    return found


TRANSCRIPTS: list[Transcript] = _discovered()

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
