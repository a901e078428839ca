"""A test hook for fault soaks: the process SIGKILLs itself at a chosen moment.

Set ``WINJOB_FAULT`` in the environment of a ``winjob`` process to one of:

* ``stage:<name>:<n>``: die the ``n``-th time (1, 2, ...) this process's
  operator reaches the commit stage ``<name>`` (``start``, ``before_outputs``,
  ``after_outputs``, ``before_progress``, ``after_progress``: see the
  operators' ``fault_injection``). A batch the operator skips as already
  committed reaches no stage.
* ``delay:<seconds>``: die that many seconds after the operator is built
  (the SparkSession is up by then), wherever the process is: reading state,
  creating a table, inside a Delta commit, in Spark's checkpoint writes.

Unset (the normal case) the hook does nothing. Dying is ``SIGKILL`` of the
process's group when the process leads one (then Spark's JVM, its child, dies
in the same instant, as in a lost container), else of the process alone.
Nothing runs on the way out: no ``finally``, no shutdown hook, no flush.
"""
from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass

FAULT_ENV = "WINJOB_FAULT"
STAGES = ("start", "before_outputs", "after_outputs", "before_progress", "after_progress")
STAGE_MODE, DELAY_MODE = "stage", "delay"


@dataclass(frozen=True)
class FaultPlan:
    """Where a process dies: at the ``occurrence``-th ``stage``, or ``delay_s`` after its operator is built."""

    stage: str | None = None
    occurrence: int = 1
    delay_s: float | None = None

    def __post_init__(self) -> None:
        if (self.stage is None) == (self.delay_s is None):
            raise ValueError(f"a fault plan has a stage or a delay, not both or neither: {self!r}")
        if self.stage is not None and self.stage not in STAGES:
            raise ValueError(f"fault stage {self.stage!r} is not one of {STAGES}")
        if self.occurrence < 1:
            raise ValueError(f"fault occurrence must be 1 or more, got {self.occurrence}")
        if self.delay_s is not None and self.delay_s < 0:
            raise ValueError(f"fault delay must be 0 s or more, got {self.delay_s}")

    @classmethod
    def parse(cls, text: str) -> "FaultPlan":
        """``stage:<name>:<n>`` or ``delay:<seconds>`` (see the module docstring)."""
        mode, _, rest = text.strip().partition(":")
        try:
            if mode == STAGE_MODE:
                name, _, n = rest.partition(":")
                return cls(stage=name, occurrence=int(n or 1))
            if mode == DELAY_MODE:
                return cls(delay_s=float(rest))
        except ValueError as error:
            raise ValueError(f"{FAULT_ENV}={text!r}: {error}") from None
        raise ValueError(f"{FAULT_ENV}={text!r} is not 'stage:<name>:<n>' (name one of {STAGES}) "
                         f"or 'delay:<seconds>'")

    def env_value(self) -> str:
        """The ``WINJOB_FAULT`` text of this plan."""
        return f"{STAGE_MODE}:{self.stage}:{self.occurrence}" if self.stage else f"{DELAY_MODE}:{self.delay_s:.3f}"


def die() -> None:
    """SIGKILL this process (and its group when it leads one: the JVM goes with it)."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def from_environment() -> Callable[[str], None] | None:
    """The operator's ``fault_injection`` for ``WINJOB_FAULT``; None when it is unset.

    A delay plan starts its timer here, so call it when the operator is built.
    """
    text = os.environ.get(FAULT_ENV)
    if not text:
        return None
    plan = FaultPlan.parse(text)
    if plan.delay_s is not None:
        timer = threading.Timer(plan.delay_s, die)
        timer.daemon = True
        timer.start()
        return None
    reached = {"n": 0}

    def at_stage(stage: str) -> None:
        if stage == plan.stage:
            reached["n"] += 1
            if reached["n"] == plan.occurrence:
                die()
    return at_stage
