"""Transcripts of the ordered aggregates: First, Last and Collect.

A key's elements are ordered by (event time, then arrival sequence)
(docs/semantics.md, "The micro-batch rule"): ``First`` is the value of the earliest element,
``Last`` of the latest, ``Collect`` every value in that order; null values are
skipped by all three (``Count()`` still counts their elements). Rows arrive
out of order and in several batches, and two elements of equal event time in
different batches keep their arrival order, so each transcript checks that
state from an earlier batch is placed by event time, not by batch.

The expected values were worked out by hand from those rules. Each
transcript's comment says which Spark plan runs it. Each runs on the
reference model and on Spark step by step, the batching-invariant ones also
re-cut into batches of 1, 2 and all; three run on the per-key path too, and
``test_ordered_aggregates.py`` runs them on Delta.
"""
from __future__ import annotations

from transcripts.build import P, flush, r, sliding, spec, step, tumbling
from transcripts.types import Cut, Transcript
from windowing.core.aggregates import Collect, Count, First, Last
from windowing.core.assigners import EventTimeSessionWindows
from windowing.core.records import EARLY, ON_TIME
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
        batching_invariant=True, doc="tumbling windows (the time plan): state merged with a later batch",
        spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL),
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
        batching_invariant=True, doc="sliding windows (slices merged per window, state across batches)",
        spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL),
    Transcript(
        "ordered_aggregates_merged_sessions", spec(EventTimeSessionWindows.with_gap(10), delay=100, **ORDERED),
        (
            # Two sessions [0,10) and [30,40).
            step(e(0, "a"), e(30, "c")),
            # 10 opens [10,20) (touches [0,10)); 20 opens [20,30) (touches both): one session [0,40).
            step(e(20, "d"), e(10, "b")),
            flush([P("a", 0, 40, 0, ON_TIME, True, f="a", l="c", c=["a", "b", "d", "c"], n=4)]),
        ),
        batching_invariant=True, doc="session windows merged across batches (the session plan)",
        spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL, spark_per_key=Cut.STEPS),
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
        doc="count_window(3) (the count trigger plan, purging)", spark=Cut.STEPS),
    Transcript(
        "ordered_aggregates_sliding_count_window", spec(count=(3, 2), **ORDERED),
        (
            # b(1), a(5): the second element fires {b, a}.
            step(e(5, "a"), e(1, "b"), panes=[P("a", None, None, 0, ON_TIME, False, f="b", l="a", c=["b", "a"], n=2)]),
            # d(0), c(3) fire: buffer b, a, d, c evicted to its last 3: a, d, c; e(9) waits.
            step(e(3, "c"), e(0, "d"), e(9, "e"), panes=[
                P("a", None, None, 1, ON_TIME, False, f="d", l="a", c=["d", "c", "a"], n=3)]),
        ),
        doc="count_window(3, 2) (the evicting count plan: buffers)", spark=Cut.STEPS, spark_per_key=Cut.STEPS),
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
        doc="CountTrigger on a time window (trigger plan: running merges), accumulating", spark=Cut.STEPS),
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
        doc="CountTrigger on a time window, discarding", spark=Cut.STEPS, spark_per_key=Cut.STEPS),
)


# ---------------------------------------------------------- Sum overflow

MAX, MIN = 2 ** 63 - 1, -(2 ** 63)

OVERFLOW_TRANSCRIPTS = (
    Transcript(
        "sum_overflow_in_one_batch_gives_null", spec(tumbling(10)),
        (
            # [0,10): MAX + 5 leaves int64: its Sum is null, both rows stay counted; wm = 11 fires it.
            # [10,20) and key b are untouched: the batch commits.
            step(r(1, MAX), r(2, 5), r(3, 4, k="b"), r(12, 7), wm_after=11, panes=[
                P("a", 0, 10, 0, ON_TIME, True, s=None, n=2), P("b", 0, 10, 0, ON_TIME, True, s=4, n=1)]),
            flush([P("a", 10, 20, 0, ON_TIME, True, s=7, n=1)]),
        ),
        batching_invariant=True, doc="an overflowing window sums to null; the rest of the batch goes on",
        spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL),
    Transcript(
        "sum_overflow_only_by_the_merge_with_state", spec(tumbling(10), delay=100),
        (
            step(r(1, MAX), r(1, MIN, k="c"), r(1, 3, k="b")),
            # Each batch fits in int64 alone; the merge with the window's state does not. The negative
            # values of key c overflow on their own side. Key b: 3 + 4.
            step(r(2, 5), r(3, -10), r(2, -1, k="c"), r(2, 4, k="b")),
            # A later value does not bring an overflowed Sum back.
            step(r(4, -MAX)),
            flush([P("a", 0, 10, 0, ON_TIME, True, s=None, n=4), P("b", 0, 10, 0, ON_TIME, True, s=7, n=2),
                   P("c", 0, 10, 0, ON_TIME, True, s=None, n=2)]),
        ),
        batching_invariant=True, doc="an overflow caused by merging a batch into the window's state",
        spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL),
    Transcript(
        "sum_overflow_in_sliding_windows", spec(sliding(10, 5), delay=100),
        (
            step(r(1, MAX)),
            step(r(7, 5)),
            # [-5,5): MAX | [0,10): MAX + 5 overflows | [5,15): 5.
            flush([P("a", -5, 5, 0, ON_TIME, True, s=MAX, n=1), P("a", 0, 10, 0, ON_TIME, True, s=None, n=2),
                   P("a", 5, 15, 0, ON_TIME, True, s=5, n=1)]),
        ),
        batching_invariant=True, doc="slices and windows: only the window that overflows is null",
        spark=Cut.STEPS | Cut.ONE | Cut.TWO),
    Transcript(
        "sum_overflow_in_a_merged_session", spec(EventTimeSessionWindows.with_gap(10), delay=100),
        (
            step(r(0, MAX)),
            step(r(5, 5)),
            flush([P("a", 0, 15, 0, ON_TIME, True, s=None, n=2)]),
        ),
        batching_invariant=True, doc="two sessions whose sums fit merge into one that overflows",
        spark=Cut.STEPS | Cut.ONE | Cut.TWO),
    Transcript(
        "sum_overflow_under_a_count_trigger", spec(tumbling(10), delay=100, trigger=CountTrigger(2)),
        (
            step(r(1, MAX), r(2, 1), r(3, 2), panes=[P("a", 0, 10, 0, EARLY, False, s=None, n=2)]),
            step(r(4, 3), panes=[P("a", 0, 10, 1, EARLY, False, s=None, n=4)]),
            flush(),
        ),
        doc="running merges of a count trigger keep the overflow", spark=Cut.STEPS),
)

TRANSCRIPTS = [*ORDERED_TRANSCRIPTS, *OVERFLOW_TRANSCRIPTS]
