"""Transcripts of the ordered aggregates: First, Last and Collect.

A key's elements are ordered by (event time, then arrival sequence)
(DESIGN.md section 2): ``First`` is the value of the earliest element,
``Last`` of the latest, ``Collect`` every value in that order; null values are
skipped by all three (``Count()`` still counts their elements). Rows arrive
out of order and in several batches, and two elements of equal event time in
different batches keep their arrival order, so each transcript checks that
state from an earlier batch is placed by event time, not by batch.

The expected values were worked out by hand from those rules. Each
transcript's comment says which Spark plan runs it. ``ORDERED_TRANSCRIPTS``
is run by ``test_ordered_aggregates.py`` on the reference model, on Spark
step by step, re-cut into batches (the batching-invariant ones) and on Delta.
"""
from __future__ import annotations

from transcripts import ON_TIME, P, Transcript, flush, r, sliding, spec, step, tumbling
from windowing.core.aggregates import Collect, Count, First, Last
from windowing.core.assigners import EventTimeSessionWindows
from windowing.core.records import EARLY
from windowing.core.triggers import CountTrigger

ORDERED = dict(f=First("id"), l=Last("id"), c=Collect("id"), n=Count())


def e(ts: int, ident: str | None, k: str = "a") -> dict:
    """A row whose ``id`` the ordered aggregates read (``v`` is 1)."""
    return r(ts, 1, k, id=ident)


ORDERED_TRANSCRIPTS = (
    Transcript(
        "ordered_aggregates_tumbling_across_batches", spec(tumbling(10), delay=5, **ORDERED),
        (
            # wm = 12 - 5 - 1 = 6 < max_ts 9: nothing fires.
            step(e(3, "b"), e(1, "a"), e(9, "y"), e(3, "c"), e(12, "x"), wm_after=6),
            # An earlier element (0) and equal-time elements (3, 9) arrive a batch later; the null id
            # is counted but not collected.
            step(e(0, "z"), e(3, "d"), e(9, "w"), e(5, None), wm_after=6),
            # Order of [0,10): 0 z, 1 a, 3 b, 3 c, 3 d, 5 null, 9 y, 9 w.
            flush([P("a", 0, 10, 0, ON_TIME, True, f="z", l="w", c=["z", "a", "b", "c", "d", "y", "w"], n=8),
                   P("a", 10, 20, 0, ON_TIME, True, f="x", l="x", c=["x"], n=1)]),
        ),
        batching_invariant=True, doc="tumbling windows (the time plan): state merged with a later batch"),
    Transcript(
        "ordered_aggregates_sliding_slices", spec(sliding(10, 5), delay=100, **ORDERED),
        (
            step(e(7, "p"), e(2, "q"), e(2, None, k="b")),
            step(e(6, "r"), e(12, "s")),
            # [-5,5): 2 q | [0,10): 2 q, 6 r, 7 p | [5,15): 6 r, 7 p, 12 s | [10,20): 12 s.
            # Key b's only value is null: First/Last null, Collect empty.
            flush([P("a", -5, 5, 0, ON_TIME, True, f="q", l="q", c=["q"], n=1),
                   P("a", 0, 10, 0, ON_TIME, True, f="q", l="p", c=["q", "r", "p"], n=3),
                   P("a", 5, 15, 0, ON_TIME, True, f="r", l="s", c=["r", "p", "s"], n=3),
                   P("a", 10, 20, 0, ON_TIME, True, f="s", l="s", c=["s"], n=1),
                   P("b", -5, 5, 0, ON_TIME, True, f=None, l=None, c=[], n=1),
                   P("b", 0, 10, 0, ON_TIME, True, f=None, l=None, c=[], n=1)]),
        ),
        batching_invariant=True, doc="sliding windows (slices merged per window, state across batches)"),
    Transcript(
        "ordered_aggregates_merged_sessions", spec(EventTimeSessionWindows.with_gap(10), delay=100, **ORDERED),
        (
            # Two sessions [0,10) and [30,40).
            step(e(0, "a"), e(30, "c")),
            # 10 opens [10,20) (touches [0,10)); 20 opens [20,30) (touches both): one session [0,40).
            step(e(20, "d"), e(10, "b")),
            flush([P("a", 0, 40, 0, ON_TIME, True, f="a", l="c", c=["a", "b", "d", "c"], n=4)]),
        ),
        batching_invariant=True, doc="session windows merged across batches (the session plan)"),
    Transcript(
        "ordered_aggregates_count_window", spec(count=(3,), **ORDERED),
        (
            # Processed b(1), a(5): two elements, no pane.
            step(e(5, "a"), e(1, "b")),
            # d(0) completes {b, a, d}; c(3), f(8), e(9) the next pane. Each pane in event-time order.
            step(e(3, "c"), e(0, "d"), e(9, "e"), e(8, "f"), panes=[
                P("a", None, None, 0, ON_TIME, False, f="d", l="a", c=["d", "b", "a"], n=3),
                P("a", None, None, 1, ON_TIME, False, f="c", l="e", c=["c", "f", "e"], n=3)]),
        ),
        doc="count_window(3) (the count trigger plan, purging)"),
    Transcript(
        "ordered_aggregates_sliding_count_window", spec(count=(3, 2), **ORDERED),
        (
            # b(1), a(5): the second element fires {b, a}.
            step(e(5, "a"), e(1, "b"), panes=[P("a", None, None, 0, ON_TIME, False, f="b", l="a", c=["b", "a"], n=2)]),
            # d(0), c(3) fire: buffer b, a, d, c evicted to its last 3: a, d, c; e(9) waits.
            step(e(3, "c"), e(0, "d"), e(9, "e"), panes=[
                P("a", None, None, 1, ON_TIME, False, f="d", l="a", c=["d", "c", "a"], n=3)]),
        ),
        doc="count_window(3, 2) (the evicting count plan: buffers)"),
    Transcript(
        "ordered_aggregates_count_trigger_accumulating",
        spec(tumbling(10), delay=100, trigger=CountTrigger(2), **ORDERED),
        (
            # b(1), c(3) fire; a(5) waits (count 1).
            step(e(5, "a"), e(1, "b"), e(3, "c"), panes=[
                P("a", 0, 10, 0, EARLY, False, f="b", l="c", c=["b", "c"], n=2)]),
            # d(0) fires the whole window so far.
            step(e(0, "d"), panes=[P("a", 0, 10, 1, EARLY, False, f="d", l="a", c=["d", "b", "c", "a"], n=4)]),
            flush(),
        ),
        doc="CountTrigger on a time window (trigger plan: running merges), accumulating"),
    Transcript(
        "ordered_aggregates_count_trigger_discarding",
        spec(tumbling(10), delay=100, trigger=CountTrigger(2), mode="discarding", **ORDERED),
        (
            step(e(5, "a"), e(1, "b"), e(3, "c"), panes=[
                P("a", 0, 10, 0, EARLY, False, f="b", l="c", c=["b", "c"], n=2)]),
            # Discarding: the pane holds what arrived since the last one: a(5), d(0).
            step(e(0, "d"), panes=[P("a", 0, 10, 1, EARLY, False, f="d", l="a", c=["d", "a"], n=2)]),
            flush(),
        ),
        doc="CountTrigger on a time window, discarding"),
)
