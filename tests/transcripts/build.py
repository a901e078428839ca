"""Builders for transcripts: rows, expected panes and late rows, steps, specs, and picklable user aggregates.

``transcript_list()`` gives a topic module its ``TRANSCRIPTS`` list and the ``transcript(...)``
function that builds a :class:`~transcripts.types.Transcript` and appends it to that list (the
module's own list: nothing outside the module is changed).
"""
from __future__ import annotations

from typing import Any, Callable

from transcripts.types import Cut, ExpectedLate, ExpectedPane, Step, Transcript
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.spec import WindowSpec, WindowSpecBuilder

# -------------------------------------------------------------- small helpers


def r(ts: int | None, v: Any = 1, k: str | None = "a", **more: Any) -> dict:
    """An input row: key ``k``, event time ``ts`` (epoch ms), value ``v``."""
    return dict(k=k, ts=ts, v=v, **more)


def P(key, start, end, idx, timing, final, supersedes=(), rows=None, **values) -> ExpectedPane:
    """An expected pane; ``key`` may be a str (one key column) or a tuple."""
    return ExpectedPane(key if isinstance(key, tuple) else (key,), start, end, values, idx, timing, final,
                        tuple(supersedes), None if rows is None else tuple(rows))


def L(ts: int, k: str = "a") -> ExpectedLate:
    """An expected late row (late beyond allowed lateness)."""
    return ExpectedLate((k,), ts)


def step(*rows: dict, wm: int | None = None, panes=(), late=(), metrics=None, wm_after=None,
         quarantined=(), pt: int | None = None) -> Step:
    """One batch; ``pt`` is the processing time at which it arrives (the injectable clock)."""
    return Step(tuple(rows), wm, False, tuple(panes), tuple(late), dict(metrics or {}), wm_after,
                tuple(quarantined), pt)


def flush(panes=(), late=(), metrics=None) -> Step:
    return Step((), None, True, tuple(panes), tuple(late), dict(metrics or {}), None, ())


def spec(window=None, *, count=None, delay=0, lateness=0, trigger=None, mode=None, late_output=True,
         keys=("k",), evictor=None, **aggs) -> WindowSpec:
    """A spec keyed by ``k`` on event time ``ts``; aggregates default to ``s=Sum(v), n=Count()``."""
    b = WindowSpecBuilder().key_by(*keys).event_time("ts", delay)
    b = b.window(window) if count is None else b.count_window(*count)
    if trigger is not None:
        b = b.trigger(trigger)
    if evictor is not None:
        b = b.evictor(evictor)
    if mode == "discarding":
        b = b.discarding()
    elif mode == "accumulating":
        b = b.accumulating()
    b = b.allowed_lateness(lateness).side_output_late_data(late_output)
    return b.aggregate(**(aggs or dict(s=Sum("v"), n=Count())))


def tumbling(size, offset=0):
    return TumblingEventTimeWindows.of(size, offset)


def sliding(size, slide, offset=0):
    return SlidingEventTimeWindows.of(size, slide, offset)


# ------------------------------------------------ user aggregates (picklable)


class WeightedSum:
    """sum(v * w) over rows where both are non-null (a two-column user aggregate)."""

    def create_accumulator(self):
        return [0.0]

    def add(self, value, acc):
        v, w = value
        if v is not None and w is not None:
            acc[0] += v * w
        return acc

    def merge(self, a, b):
        a[0] += b[0]
        return a

    def get_result(self, acc):
        return acc[0]


class DistinctCount:
    """The number of distinct non-null values (accumulator: a set)."""

    def create_accumulator(self):
        return set()

    def add(self, value, acc):
        if value is not None:
            acc.add(value)
        return acc

    def merge(self, a, b):
        return a | b

    def get_result(self, acc):
        return len(acc)


class CollectList:
    """All values in arrival order; ``get_result`` hands back the accumulator itself.

    Flink's own examples do this (``getResult(acc) { return acc; }``); an
    emitted pane must nevertheless be a snapshot that later elements of the
    window cannot change (Flink serializes or copies every emitted record).
    """

    def create_accumulator(self):
        return []

    def add(self, value, acc):
        acc.append(value)
        return acc

    def merge(self, a, b):
        return a + b

    def get_result(self, acc):
        return acc



def transcript_list() -> tuple[list[Transcript], Callable[..., Transcript]]:
    """A topic module's list and the function that builds a transcript into it."""
    into: list[Transcript] = []

    def transcript(name: str, spec_: WindowSpec, *steps: Step, invariant: bool = False,
                   xfail: str | None = None, doc: str = "", spark: Cut = Cut.NONE,
                   spark_per_key: Cut = Cut.NONE, delta: Cut = Cut.NONE) -> Transcript:
        t = Transcript(name, spec_, tuple(steps), invariant, xfail, doc, spark=spark,
                       spark_per_key=spark_per_key, delta=delta)
        into.append(t)
        return t

    return into, transcript
