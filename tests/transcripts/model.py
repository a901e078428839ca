"""Transcripts of the full window model: sessions, every trigger, evictors, window
functions, processing time, idleness, several sources, non-keyed windows.

Same format and rules as ``basics.py`` (this module's ``TRANSCRIPTS``); the expected values were
worked out BY HAND from Flink's rules (WindowOperator, MergingWindowSet, the triggers and
evictors as the seeds describe them) and docs/semantics.md, with the reasoning in the
comments. Rules these add:

* sessions: an element opens ``[ts, ts + gap)``; windows of a key that intersect or only
  touch merge into their cover, transitively; the batch's elements merge with the open
  sessions first (the late check is against the merged window), then timers fire on the
  merged windows. A merged window's pane index continues from the highest of its parts;
  its next pane lists in ``supersedes`` the parts that had emitted panes;
* processing time: ``step(..., pt=t)``: timers strictly below ``t`` fire before the
  batch's rows, then the clock is ``t`` and, after the rows, timers at or below it fire;
  a flush moves watermark and clock to +infinity (event-time timers first);
* at most one time-driven pane per window per timer phase (continuous triggers that
  missed several intervals give one pane, with the timing of the last firing);
* timing: a processing-time window firing at its end is ON_TIME; an early firing by a
  processing-time timer is EARLY while the window's end is ahead of the watermark.

Spark runs these on the per-key path (the reference model per key, windowing/spark/keyed/executor.py) or,
where one covers the spec, a DataFrame plan: see windowing/spark/operator/dispatch.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from transcripts.build import (CollectList, DistinctCount, L, P, flush, r, spec, step, transcript_list,
                               tumbling)
from transcripts.types import Cut
from windowing.core.aggregates import Count, Sum, UserAggregate
from windowing.core.assigners import (
    EventTimeSessionWindows, GlobalWindows, ProcessingTimeSessionWindows, SlidingProcessingTimeWindows,
    TumblingProcessingTimeWindows)
from windowing.core.evictors import CountEvictor, DeltaEvictor, TimeEvictor
from windowing.core.records import (
    EARLY, LATE, ON_TIME, QUARANTINE_INVALID_INGESTION_TIME, QUARANTINE_INVALID_SESSION_GAP,
    QUARANTINE_NULL_EVENT_TIME, QUARANTINE_NULL_KEY,
    QUARANTINE_UNKNOWN_SOURCE)
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import MIN_TIMESTAMP_MS
from windowing.core.triggers import (
    ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger, DeltaTrigger, EventTimeTrigger,
    TriggerBase, TriggerResult)


TRANSCRIPTS, transcript = transcript_list()




def session(gap):
    return EventTimeSessionWindows.with_gap(gap)


# ------------------------------------------------------- user functions (picklable)


@dataclass(frozen=True)
class GapByKind:
    """A dynamic gap from a function of the row: 'short' rows 5 ms, others 50 ms."""

    columns = ("kind",)

    def gap_ms(self, row):
        return 5 if row["kind"] == "short" else 50


@dataclass(frozen=True)
class GapFromGOrRaise:
    """The row's ``g`` as the gap, through Python. It raises on ``g == -99``: only rows that an
    earlier check quarantines carry it, so a call on such a row is a bug."""

    columns = ("g",)

    def gap_ms(self, row):
        if row["g"] == -99:
            raise RuntimeError(f"the gap function was called on a row an earlier check quarantines: {row!r}")
        return row["g"]


@dataclass(frozen=True)
class EveryTwoNegatives(TriggerBase):
    """The user trigger of the triggers.py docstring: fire on every 2nd negative value and at the end."""

    def on_element(self, value, timestamp_ms, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp_ms)
        if value["v"] >= 0:
            return TriggerResult.CONTINUE
        seen = ctx.get_state("negatives", 0) + 1
        if seen >= 2:
            ctx.set_state("negatives", 0)
            return TriggerResult.FIRE
        ctx.set_state("negatives", seen)
        return TriggerResult.CONTINUE

    def on_event_time(self, time_ms, window, ctx):
        return TriggerResult.FIRE if time_ms == window.max_timestamp_ms else TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.merge_state("negatives", lambda a, b: a + b)
        ctx.register_event_time_timer(window.max_timestamp_ms)

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp_ms)
        ctx.clear_state("negatives")


@dataclass(frozen=True)
class LargerV:
    """A ReduceFunction over (v, w) pairs: keep the pair with the larger v (the earlier one on ties)."""

    def reduce(self, a, b):
        return b if b[0] > a[0] else a


@dataclass(frozen=True)
class TopTwo:
    """A process window function over rows: the two largest values, ranked."""

    def process(self, key, context, elements):
        best = sorted((row["v"] for row in elements), reverse=True)[:2]
        return [dict(rank=i + 1, v=v, end=context.window_end_ms) for i, v in enumerate(best)]


@dataclass(frozen=True)
class Spread:
    """A process window function over a pandas DataFrame: max - min and the row count."""

    def process(self, key, context, elements):
        return [dict(spread=int(elements["v"].max() - elements["v"].min()), rows=int(len(elements)))]


# =================================================================== sessions

transcript(
    "session_merge_within_batch", spec(session(10)),
    # 0 -> [0,10); 5 -> [5,15) intersects it -> [0,15); 30 -> [30,40). wm = 29 >= 14: [0,15) fires
    # ON_TIME and (L = 0) is cleaned at once. No part of it had emitted: supersedes nothing.
    step(r(0, 1), r(5, 2), r(30, 4), wm_after=29, panes=[P("a", 0, 15, 0, ON_TIME, True, s=3, n=2)]),
    flush([P("a", 30, 40, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, doc="two elements within the gap merge in one batch", spark=Cut.STEPS | Cut.THREE, delta=Cut.ONE)

transcript(
    "session_touching_windows_merge", spec(session(10)),
    # [0,10) and [10,20) only touch: Flink's intersects (a.start <= b.end and a.end >= b.start) merges them.
    step(r(0, 1), r(10, 2), r(40, 4), wm_after=39, panes=[P("a", 0, 20, 0, ON_TIME, True, s=3, n=2)]),
    flush([P("a", 40, 50, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, doc="windows that only touch merge", spark=Cut.STEPS | Cut.THREE)

transcript(
    "session_merges_across_batches_transitively", spec(session(10), delay=100),
    # delay 100: nothing fires before the flush. [0,10) and [30,40) are open.
    step(r(0, 1), r(30, 2), wm_after=-71),
    # 20 -> [20,30) touches [30,40) -> [20,40); [0,10) ends at 10 < 20: untouched.
    step(r(20, 4), wm_after=-71),
    # 10 -> [10,20) touches [0,10) AND [20,40): all three merge into [0,40).
    step(r(10, 8), wm_after=-71),
    flush([P("a", 0, 40, 0, ON_TIME, True, s=15, n=4)]),
    invariant=True, doc="a later element bridges two open sessions across batches",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "session_bridge_merges_accumulators",
    spec(session(15), delay=100, s=Sum("v"), d=UserAggregate(DistinctCount(), ("v",), "bigint"),
         vals=UserAggregate(CollectList(), ("v",), "array<bigint>")),
    step(r(0, 1), r(25, 2)),
    # 12 -> [12,27) intersects [0,15) and [25,40): merged accumulators = merge([0,15), [25,40)) in window
    # order (CollectList: [1] + [2]), THEN the element is added (Flink adds after merging): [1, 2, 1].
    step(r(12, 1)),
    flush([P("a", 0, 40, 0, ON_TIME, True, s=4, d=2, vals=[1, 2, 1])]),
    doc="the merged state is AggregateFunction.merge of the parts (user aggregates too)",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "session_late_bridge_fires_merged_window_late", spec(session(10), lateness=100),
    # wm = 49: [0,10) (max 9) and [15,25) (max 24) fire ON_TIME; cleanup at 109 and 124, so not final.
    step(r(0, 1), r(15, 2), r(50, 4), wm_after=49, panes=[
        P("a", 0, 10, 0, ON_TIME, False, s=1, n=1), P("a", 15, 25, 0, ON_TIME, False, s=2, n=1)]),
    # 8 is behind the watermark but its window [8,18) is within lateness; it bridges both fired sessions:
    # [0,25), max 24 <= wm: the merged window fires LATE after the batch. Its index continues from its
    # parts (both had 1 pane) and it supersedes both.
    step(r(8, 8), wm_after=49, panes=[
        P("a", 0, 25, 1, LATE, False, supersedes=[(0, 10), (15, 25)], s=11, n=3)]),
    # wm = 99: [50,60) fires ON_TIME (cleanup 159 > 99).
    step(r(100, 16), wm_after=99, panes=[P("a", 50, 60, 0, ON_TIME, False, s=4, n=1)]),
    # flush: [100,110) fires and is cleaned; the others are cleaned without a new pane.
    flush([P("a", 100, 110, 0, ON_TIME, True, s=16, n=1)]),
    doc="a late element within allowed lateness that bridges two fired sessions", spark=Cut.STEPS)

transcript(
    "session_merged_window_carries_supersedes_to_its_next_pane", spec(session(10), lateness=100),
    # wm = 14: [0,10) (max 9) fires ON_TIME; cleanup 109: it stays open, having emitted. [15,25) is open.
    step(r(0, 1), r(15, 2), wm_after=14, panes=[P("a", 0, 10, 0, ON_TIME, False, s=1, n=1)]),
    # 10 -> [10,20) touches [0,10) and [15,25): [0,25), max 24 > wm 14: no pane yet. Its index continues
    # from [0,10) (1) and it keeps, in state, that it supersedes [0,10).
    step(r(10, 4), wm_after=14),
    # wm = 39: [0,25) fires ON_TIME with pane index 1, superseding [0,10); not final (cleanup 124).
    step(r(40, 8), wm_after=39, panes=[P("a", 0, 25, 1, ON_TIME, False, supersedes=[(0, 10)], s=7, n=3)]),
    # flush: [40,50) fires and is cleaned; [0,25) is cleaned without a new pane.
    flush([P("a", 40, 50, 0, ON_TIME, True, s=8, n=1)]),
    doc="a merged window that does not fire at once keeps what it supersedes (in state) until its next pane",
    spark=Cut.STEPS)

transcript(
    "session_discarding_late_merge_carries_only_new_elements", spec(session(10), lateness=100, mode="discarding"),
    # wm = 29: [0,10) fires ON_TIME and is purged (discarding); it stays open (cleanup 109).
    step(r(0, 1), r(30, 2), wm_after=29, panes=[P("a", 0, 10, 0, ON_TIME, False, s=1, n=1)]),
    # 5 -> [5,15) extends the fired [0,10) to [0,15), max 14 <= wm: a LATE pane at once, carrying only
    # what arrived since the purge (the merge of an empty state and the new element), superseding [0,10).
    step(r(5, 4), panes=[P("a", 0, 15, 1, LATE, False, supersedes=[(0, 10)], s=4, n=1)]),
    # flush: [30,40) fires and is cleaned; [0,15) was purged and is cleaned without a pane.
    flush([P("a", 30, 40, 0, ON_TIME, True, s=2, n=1)]),
    doc="PurgingTrigger on sessions: a merged window's pane holds only what came after the last purge",
    spark=Cut.STEPS)

transcript(
    "session_late_element_alone_is_late", spec(session(10), lateness=5),
    # wm = 29: [0,10) fires ON_TIME; its cleanup 9 + 5 = 14 <= 29: cleaned in the same batch (final).
    step(r(0, 1), r(30, 2), wm_after=29, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    # 12 -> [12,22): cleanup 26 <= 29 and it touches no session ([25,35) starts at 25 > 22): late.
    # 25 -> [25,35): it touches [30,40): merged [25,40), not late.
    step(r(12, 4), r(25, 8), late=[L(12)], metrics=dict(accepted_rows=1)),
    flush([P("a", 25, 40, 0, ON_TIME, True, s=10, n=2)]),
    doc="a late session window is dropped unless merging joins it to an open session", spark=Cut.STEPS)

transcript(
    "session_batch_windows_merge_before_the_late_check", spec(session(10), lateness=5),
    step(r(0, 1), r(30, 2), wm_after=29, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    # 12 -> [12,22) would be late alone (cleanup 26 <= 29), but the batch's windows merge first:
    # [12,22) touches [20,30) (from 20), which touches [30,40): one session [12,40), not late.
    step(r(12, 4), r(20, 8), metrics=dict(accepted_rows=2)),
    flush([P("a", 12, 40, 0, ON_TIME, True, s=14, n=3)]),
    doc="elements of one batch merge with each other and the open sessions before the late check", spark=Cut.STEPS)

transcript(
    "session_dynamic_gap_from_column", spec(EventTimeSessionWindows.with_dynamic_gap("g")),
    # gaps per row: 0 -> [0,5), 7 -> [7,27), 30 -> [30,31). [0,5) and [7,27) do not touch (5 < 7).
    # Rows whose gap is 0 or null are quarantined (invalid_session_gap). wm = 29: both first sessions fire.
    step(r(0, 1, g=5), r(7, 2, g=20), r(30, 4, g=1), r(3, 8, g=0), r(4, 16, g=None), wm_after=29,
         quarantined=[QUARANTINE_INVALID_SESSION_GAP] * 2, metrics=dict(quarantined_rows=2, accepted_rows=3),
         panes=[P("a", 0, 5, 0, ON_TIME, True, s=1, n=1), P("a", 7, 27, 0, ON_TIME, True, s=2, n=1)]),
    flush([P("a", 30, 31, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, doc="the gap comes from a column of each row", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "session_dynamic_gap_from_function", spec(EventTimeSessionWindows.with_dynamic_gap(GapByKind()), delay=100),
    # short rows 5 ms, long rows 50 ms: 0 short -> [0,5); 10 short -> [10,15); 20 long -> [20,70);
    # 60 short -> [60,65) inside [20,70): nothing extends.
    step(r(0, 1, kind="short"), r(10, 2, kind="short"), r(20, 4, kind="long"), r(60, 8, kind="short")),
    # 3 long -> [3,53): bridges [0,5), [10,15) and [20,70) -> [0,70).
    step(r(3, 16, kind="long")),
    flush([P("a", 0, 70, 0, ON_TIME, True, s=31, n=5)]),
    invariant=True, doc="the gap is a (frozen, picklable) function of the row", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "session_gap_function_sees_only_checked_rows", spec(EventTimeSessionWindows.with_dynamic_gap(GapFromGOrRaise())),
    # 0 -> [0,5), 7 -> [7,27). The function returns 0 and None for two rows: quarantined
    # (invalid_session_gap). A null key and a null event time are quarantined first: the
    # function never sees them (it would raise). wm = 7 - 1 = 6 passes [0,5)'s max timestamp 4.
    step(r(0, 1, g=5), r(7, 2, g=20), r(3, 8, g=0), r(4, 16, g=None), r(5, 32, k=None, g=-99),
         r(None, 64, g=-99), wm_after=6,
         quarantined=[QUARANTINE_INVALID_SESSION_GAP, QUARANTINE_INVALID_SESSION_GAP, QUARANTINE_NULL_KEY,
                      QUARANTINE_NULL_EVENT_TIME],
         metrics=dict(quarantined_rows=4, accepted_rows=2), panes=[P("a", 0, 5, 0, ON_TIME, True, s=1, n=1)]),
    flush([P("a", 7, 27, 0, ON_TIME, True, s=2, n=1)]),
    invariant=True, doc="a gap function's bad results are quarantined; rows failing earlier checks never reach it",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "session_count_trigger_merges_counts_and_supersedes", spec(session(10), delay=100, trigger=CountTrigger(3)),
    step(r(0, 1), r(20, 2)),
    # 10 -> [10,20) bridges [0,10) (count 1) and [20,30) (count 1): on_merge adds the counts (2), the
    # element makes 3: FIRE now (EARLY: max 29 > wm -71). Neither part had emitted: supersedes nothing.
    step(r(10, 4), panes=[P("a", 0, 30, 0, EARLY, False, s=7, n=3)]),
    # 25 -> [25,35) extends it to [0,35): count 1. [0,30) had emitted, so [0,35) supersedes it.
    step(r(25, 8)),
    # 26 -> [0,36) (count 2), 27 -> [0,37) (count 3): FIRE. Still superseding [0,30) (the intermediate
    # windows never emitted).
    step(r(26, 16), r(27, 32), panes=[P("a", 0, 37, 1, EARLY, False, supersedes=[(0, 30)], s=63, n=6)]),
    # the flush cleans [0,37) with count 0: a count trigger does not fire on time.
    flush(),
    doc="CountTrigger.on_merge adds the parts' counts; supersedes accumulates over merges",
    spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "session_user_trigger_merges_its_state", spec(session(10), delay=100, trigger=EveryTwoNegatives()),
    # one negative in each session
    step(r(0, -1), r(20, -1)),
    # 10 (positive) bridges them: on_merge adds the negatives (1 + 1 = 2) but on_merge does not fire.
    step(r(10, 5)),
    # 12 -> [12,22) inside [0,30): third negative -> 3 >= 2: FIRE (EARLY), counter reset.
    step(r(12, -1), panes=[P("a", 0, 30, 0, EARLY, False, s=2, n=4)]),
    flush([P("a", 0, 30, 1, ON_TIME, True, s=2, n=4)]),
    doc="a user trigger's state merges through the OnMergeContext", spark=Cut.STEPS)

transcript(
    "processing_time_session", spec(ProcessingTimeSessionWindows.with_gap(10)),
    # assignment by processing time: pt 0 -> [0,10); pt 5 -> [5,15) merges -> [0,15). Event times are ignored.
    step(r(1000, 1), pt=0),
    step(r(5, 2), pt=5),
    # pt 20: the timer at 14 (< 20) fires before the row: ON_TIME and cleaned (processing-time cleanup at
    # max_ts); the row opens [20,30).
    step(r(0, 4), pt=20, panes=[P("a", 0, 15, 0, ON_TIME, True, s=3, n=2)]),
    # the clock reaches 29 = max_ts of [20,30): it fires after the (empty) batch.
    step(pt=29, panes=[P("a", 20, 30, 0, ON_TIME, True, s=4, n=1)]),
    flush(),
    doc="processing-time sessions with a controlled clock", spark=Cut.STEPS)

# =================================================================== triggers

transcript(
    "continuous_event_time_trigger", spec(tumbling(100), trigger=ContinuousEventTimeTrigger(30)),
    # 5: timer at the end (99) and at the next multiple of 30 after 5: 30. wm 4.
    step(r(5, 1), wm_after=4),
    # wm 30: the timer at 30 fires EARLY; next one at 60.
    step(r(31, 2), wm_after=30, panes=[P("a", 0, 100, 0, EARLY, False, s=3, n=2)]),
    # wm 94: 60 fires (EARLY); the next is registered after the watermark: min(120, 99) = 99 (the missed
    # interval at 90 would give the same pane).
    step(r(95, 4), wm_after=94, panes=[P("a", 0, 100, 1, EARLY, False, s=7, n=3)]),
    # wm 129: 99 fires ON_TIME and L = 0 cleans the window. [100,200) gets a timer at 150.
    step(r(130, 8), wm_after=129, panes=[P("a", 0, 100, 2, ON_TIME, True, s=7, n=3)]),
    # flush: 150 (EARLY) and 199 (ON_TIME) fire in one timer phase: one pane, ON_TIME.
    flush([P("a", 100, 200, 0, ON_TIME, True, s=8, n=1)]),
    doc="fires every 30 ms of event time and at the end", spark=Cut.STEPS)

transcript(
    "continuous_event_time_trigger_purging", spec(tumbling(100), trigger=ContinuousEventTimeTrigger(30),
                                                  mode="discarding"),
    step(r(5, 1), r(31, 2), wm_after=30, panes=[P("a", 0, 100, 0, EARLY, False, s=3, n=2)]),
    step(r(40, 4), wm_after=39),
    # flush: 60 fires (EARLY, purges: s=4), then 99 (ON_TIME) finds no contents: the one pane of this
    # phase takes the ON_TIME timing; the window is cleaned (final).
    flush([P("a", 0, 100, 1, ON_TIME, True, s=4, n=1)]),
    doc="PurgingTrigger(ContinuousEventTimeTrigger): discarding panes", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "continuous_processing_time_trigger_on_global_window",
    spec(GlobalWindows(), trigger=ContinuousProcessingTimeTrigger(10)),
    # pt 3: the first element registers the next multiple of 10 after the clock: 10.
    step(r(1, 1), pt=3),
    step(r(2, 2), pt=8),
    # pt 12: 10 < 12 fires before the row (global windows: ON_TIME); next after the clock 12: 20.
    step(r(3, 4), pt=12, panes=[P("a", None, None, 0, ON_TIME, False, s=3, n=2)]),
    # pt 45: 20 fires; the missed 30 and 40 are skipped (same pane); next: 50.
    step(pt=45, panes=[P("a", None, None, 1, ON_TIME, False, s=7, n=3)]),
    # flush: the clock goes to +infinity, 50 fires; global windows never end (not final).
    flush([P("a", None, None, 2, ON_TIME, False, s=7, n=3)]),
    doc="fires every 10 ms of processing time", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "delta_trigger", spec(GlobalWindows(), trigger=DeltaTrigger(5, value_column="v")),
    # in event-time order: 10 is remembered; |12-10| = 2; |16-10| = 6 > 5: FIRE (10+12+16), remember 16;
    # |17-16| = 1.
    step(r(1, 10), r(3, 16), r(2, 12), r(4, 17), panes=[P("a", None, None, 0, ON_TIME, False, s=38, n=3)]),
    # |30-16| = 14 > 5: FIRE with everything so far.
    step(r(5, 30), panes=[P("a", None, None, 1, ON_TIME, False, s=85, n=5)]),
    flush(),
    doc="fires when |v - v of the last firing element| exceeds the threshold", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "early_count_and_late_count_firings_use_separate_counters",
    spec(tumbling(100), lateness=100,
         trigger=EventTimeTrigger().with_early_firings(every_n_elements=2).with_late_firings(every_n_elements=2)),
    # early count: 1 (1), 2 (2) -> FIRE EARLY, 3 (4) -> 1.
    step(r(1, 1), r(2, 2), r(3, 4), panes=[P("a", 0, 100, 0, EARLY, False, s=3, n=2)]),
    # 8: early count 2 -> FIRE EARLY.
    step(r(4, 8), panes=[P("a", 0, 100, 1, EARLY, False, s=15, n=4)]),
    # 16: early count 1. wm 149: ON_TIME (not final: cleanup 199). [100,200) opens.
    step(r(5, 16), r(150, 32), wm_after=149, panes=[P("a", 0, 100, 2, ON_TIME, False, s=31, n=5)]),
    # late 64: late count 1. A shared counter (Flink SQL's quirk) would hold 1 + 1 = 2 and fire here.
    step(r(10, 64)),
    # late 128: late count 2 -> FIRE LATE.
    step(r(20, 128), panes=[P("a", 0, 100, 3, LATE, False, s=223, n=7)]),
    # late 256: late count 1; the flush cleans [0,100) without firing that remainder.
    step(r(30, 256)),
    flush([P("a", 100, 200, 0, ON_TIME, True, s=32, n=1)]),
    doc="withEarlyFirings(every 2) / withLateFirings(every 2 late elements)", spark=Cut.STEPS)

transcript(
    "early_firings_every_processing_time_interval",
    spec(tumbling(100), trigger=EventTimeTrigger().with_early_firings(every="10 ms")),
    # pt 0: the first element schedules an early firing at 0 + 10.
    step(r(1, 1), pt=0),
    step(r(2, 2), pt=5),
    # pt 12: 10 < 12 fires before the row: EARLY with 1+2. The row schedules the next at 12 + 10 = 22.
    step(r(3, 4), pt=12, panes=[P("a", 0, 100, 0, EARLY, False, s=3, n=2)]),
    step(r(4, 8), pt=15),
    # pt 40, no rows: 22 fires EARLY (nothing schedules another until an element arrives).
    step(pt=40, panes=[P("a", 0, 100, 1, EARLY, False, s=15, n=4)]),
    # wm 119: ON_TIME and cleaned. [100,200) schedules an early firing at 51.
    step(r(120, 16), pt=41, wm_after=119, panes=[P("a", 0, 100, 2, ON_TIME, True, s=15, n=4)]),
    # flush: event time first: [100,200) fires ON_TIME and is cleaned; its early timer finds nothing.
    flush([P("a", 100, 200, 0, ON_TIME, True, s=16, n=1)]),
    doc="withEarlyFirings(every 10 ms of processing time)", spark=Cut.STEPS)

transcript(
    "user_trigger_state_survives_across_batches", spec(tumbling(100), trigger=EveryTwoNegatives()),
    step(r(1, -1)),                  # negatives 1 (kept in the window's trigger state)
    step(r(2, 5)),                   # positive: unchanged
    step(r(3, -2), panes=[P("a", 0, 100, 0, EARLY, False, s=2, n=3)]),   # 2: FIRE, reset
    step(r(4, -3)),                  # 1
    step(r(150, 1), wm_after=149, panes=[P("a", 0, 100, 1, ON_TIME, True, s=-1, n=4)]),
    flush([P("a", 100, 200, 0, ON_TIME, True, s=1, n=1)]),
    doc="a user trigger's per-window state lives in the operator, across batches", spark=Cut.STEPS)

# ============================================================ processing time

transcript(
    "processing_time_tumbling_with_controlled_clock", spec(TumblingProcessingTimeWindows.of(10)),
    step(r(100, 1), pt=3),           # [0,10)
    # pt 9: the row joins [0,10) (the timer at 9 is not below 9), then the timer fires: ON_TIME, cleaned.
    step(r(101, 2), pt=9, panes=[P("a", 0, 10, 0, ON_TIME, True, s=3, n=2)]),
    step(r(102, 4), pt=15),          # [10,20)
    step(pt=25, panes=[P("a", 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    flush(),
    doc="processing-time timers fire when the injected clock advances", spark=Cut.STEPS)

transcript(
    "processing_time_sliding", spec(SlidingProcessingTimeWindows.of(10, 5)),
    # pt 7 -> [5,15) and [0,10); pt 12 -> [10,20) and [5,15). pt 12 > 9: [0,10) fires before the row.
    step(r(0, 1), pt=7),
    step(r(0, 2), pt=12, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    step(pt=19, panes=[P("a", 5, 15, 0, ON_TIME, True, s=3, n=2), P("a", 10, 20, 0, ON_TIME, True, s=2, n=1)]),
    flush(),
    doc="sliding windows on processing time", spark=Cut.STEPS, delta=Cut.STEPS)

transcript(
    "processing_time_from_ingestion_column",
    WindowSpecBuilder().key_by("k").event_time("ts").processing_time("ingest")
    .window(TumblingProcessingTimeWindows.of(10)).aggregate(s=Sum("v"), n=Count()),
    # a backfill replays recorded ingestion times: rows land in [0,10), [10,20), [20,30) by "ingest"; the
    # clock ends at 25, so [0,10) and [10,20) fire; a null ingestion time is quarantined.
    step(r(0, 1, ingest=1), r(0, 2, ingest=5), r(0, 4, ingest=12), r(0, 8, ingest=25), r(0, 16, ingest=None),
         quarantined=[QUARANTINE_INVALID_INGESTION_TIME], metrics=dict(quarantined_rows=1),
         panes=[P("a", 0, 10, 0, ON_TIME, True, s=3, n=2), P("a", 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=8, n=1)]),
    doc="in a backfill, processing time is each row's recorded ingestion time", spark=Cut.STEPS)

# ================================================================ watermarks

transcript(
    "watermark_idleness_advances_by_processing_time",
    WindowSpecBuilder().key_by("k").event_time("ts", 5).window(tumbling(10)).watermark_idleness(100)
    .side_output_late_data().aggregate(s=Sum("v"), n=Count()),
    step(r(3, 1), pt=0, wm_after=-3),            # 3 - 5 - 1
    step(pt=50, wm_after=-3),                    # 50 ms without data: not idle yet
    # 100 ms without data: idle; the watermark advances by the processing time since the last row:
    # -3 + 100 = 97: [0,10) fires and is cleaned.
    step(pt=100, wm_after=97, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    # a row again: the source is active, its own watermark is 50 - 6 = 44 but the watermark never goes
    # back; 50 is late (its window [50,60) ended before 97).
    step(r(50, 2), pt=110, wm_after=97, late=[L(50)], metrics=dict(accepted_rows=0)),
    flush(),
    doc="an idle source lets the watermark advance with processing time", spark=Cut.STEPS)

_TWO_SOURCES = (WindowSpecBuilder().key_by("k").event_time("ts").window(tumbling(10))
                .watermark_sources("src", "s1", "s2"))

transcript(
    "watermark_is_the_minimum_over_sources", _TWO_SOURCES.aggregate(s=Sum("v"), n=Count()),
    # only s1 has data: s2's watermark is still -infinity, and so is the operator's.
    step(r(15, 1, src="s1"), r(3, 2, src="s1"), wm_after=MIN_TIMESTAMP_MS),
    # s2 at 12: min(14, 11) = 11: [0,10) fires.
    step(r(12, 4, src="s2"), wm_after=11, panes=[P("a", 0, 10, 0, ON_TIME, True, s=2, n=1)]),
    # an undeclared source is quarantined.
    step(r(5, 8, src="s3"), quarantined=[QUARANTINE_UNKNOWN_SOURCE], metrics=dict(quarantined_rows=1),
         wm_after=11),
    step(r(25, 16, src="s2"), wm_after=14),       # min(14, 24)
    step(r(22, 32, src="s1"), wm_after=21, panes=[P("a", 10, 20, 0, ON_TIME, True, s=5, n=2)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=48, n=2)]),
    doc="several sources: the watermark is the minimum of theirs", spark=Cut.STEPS)

transcript(
    "idle_source_is_left_out_of_the_minimum",
    _TWO_SOURCES.watermark_idleness(100).aggregate(s=Sum("v"), n=Count()),
    step(r(5, 1, src="s1"), pt=0, wm_after=MIN_TIMESTAMP_MS),
    # pt 100: s2 sent nothing for 100 ms (since the first batch): idle, left out; s1 just sent 16 and is
    # active: the watermark is s1's, 15: [0,10) fires.
    step(r(16, 2, src="s1"), pt=100, wm_after=15, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=2, n=1)]),
    doc="an idle source does not hold the watermark back", spark=Cut.STEPS)

# ========================================================= evictors and functions

transcript(
    "time_evictor_before_the_function", spec(GlobalWindows(), trigger=CountTrigger(3), evictor=TimeEvictor(10)),
    # third element fires; before the function, elements with ts <= 12 - 10 = 2 go: 5 and 12 remain.
    step(r(0, 1), r(5, 2), r(12, 4), panes=[P("a", None, None, 0, ON_TIME, False, s=6, n=2)]),
    # buffer 5, 12, 13, 14, 30 at the next firing: ts <= 20 go: only 30 remains.
    step(r(13, 8), r(14, 16), r(30, 32), panes=[P("a", None, None, 1, ON_TIME, False, s=32, n=1)]),
    flush(),
    doc="TimeEvictor(10) before the function")

transcript(
    "time_evictor_after_the_function",
    spec(GlobalWindows(), trigger=CountTrigger(3), evictor=TimeEvictor(10, do_evict_after=True)),
    # the function sees all three; after it, 0 is evicted (buffer 5, 12).
    step(r(0, 1), r(5, 2), r(12, 4), panes=[P("a", None, None, 0, ON_TIME, False, s=7, n=3)]),
    # the function sees 5, 12, 13, 14, 30; after it only 30 remains.
    step(r(13, 8), r(14, 16), r(30, 32), panes=[P("a", None, None, 1, ON_TIME, False, s=62, n=5)]),
    flush(),
    doc="TimeEvictor(10) after the function: the pane still sees every element", spark=Cut.STEPS)

transcript(
    "delta_evictor", spec(GlobalWindows(), trigger=CountTrigger(3), evictor=DeltaEvictor(10, value_column="v")),
    # newest value 20: |1-20| = 19 and |5-20| = 15 are >= 10: evicted.
    step(r(0, 1), r(1, 5), r(2, 20), panes=[P("a", None, None, 0, ON_TIME, False, s=20, n=1)]),
    # buffer 20, 25, 8, 12; newest 12: |25-12| = 13 evicted; 20 (8), 8 (4), 12 (0) remain.
    step(r(3, 25), r(4, 8), r(5, 12), panes=[P("a", None, None, 1, ON_TIME, False, s=40, n=3)]),
    flush(),
    doc="DeltaEvictor: drop elements too far from the newest")

transcript(
    "count_evictor_after_the_function",
    spec(GlobalWindows(), trigger=CountTrigger(2), evictor=CountEvictor(2, do_evict_after=True)),
    # fires at 2 (sees 1, 2); after: keep the last 2 (1, 2). 4: count 1.
    step(r(0, 1), r(1, 2), r(2, 4), panes=[P("a", None, None, 0, ON_TIME, False, s=3, n=2)]),
    # fires at 8: sees 1, 2, 4, 8 (before the function a CountEvictor(2) would leave 4, 8 = 12).
    step(r(3, 8), panes=[P("a", None, None, 1, ON_TIME, False, s=15, n=4)]),
    flush(),
    doc="CountEvictor after the function", delta=Cut.STEPS)

transcript(
    "time_evictor_on_a_time_window", spec(tumbling(10), evictor=TimeEvictor(3)),
    # [0,10) fires at wm 19 with 1, 5, 8: ts <= 8 - 3 = 5 go: only 8 (v=4) is aggregated.
    step(r(1, 1), r(5, 2), r(8, 4), r(20, 8), panes=[P("a", 0, 10, 0, ON_TIME, True, s=4, n=1)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=8, n=1)]),
    doc="an evictor on an event-time window")

transcript(
    "reduce_function",
    WindowSpecBuilder().key_by("k").event_time("ts").window(tumbling(10)).reduce(LargerV(), ("v", "w"), "struct<v:bigint,w:string>", name="best"),
    # (3,x), (5,y), (5,z): 5 > 3 takes (5,y); 5 is not > 5: (5,y) stays.
    step(r(1, 3, w="x"), r(2, 5, w="y"), r(3, 5, w="z"), r(12, 1, w="q"),
         panes=[P("a", 0, 10, 0, ON_TIME, True, best=(5, "y"))]),
    flush([P("a", 10, 20, 0, ON_TIME, True, best=(1, "q"))]),
    invariant=True, doc="reduce(a, b) folded over the window's values", spark=Cut.STEPS | Cut.THREE | Cut.ALL)

transcript(
    "reduce_function_on_merging_sessions",
    WindowSpecBuilder().key_by("k").event_time("ts", 100).window(session(10))
    .reduce(LargerV(), ("v", "w"), "struct<v:bigint,w:string>", name="best"),
    step(r(0, 3, w="x"), r(20, 7, w="y")),
    # 10 bridges: the merged value is reduce((3,x), (7,y)) = (7,y); then (1,z) is added: (7,y).
    step(r(10, 1, w="z")),
    flush([P("a", 0, 30, 0, ON_TIME, True, best=(7, "y"))]),
    invariant=True, doc="merging sessions reduces the parts' values", spark=Cut.STEPS | Cut.THREE)

transcript(
    "process_function_emits_rows",
    WindowSpecBuilder().key_by("k").event_time("ts").window(tumbling(10))
    .process(TopTwo(), "rank int, v bigint, end bigint", columns=("v",)),
    step(r(1, 1), r(2, 5), r(3, 3), r(11, 7), panes=[
        P("a", 0, 10, 0, ON_TIME, True, rows=[dict(rank=1, v=5, end=10), dict(rank=2, v=3, end=10)])]),
    flush([P("a", 10, 20, 0, ON_TIME, True, rows=[dict(rank=1, v=7, end=20)])]),
    invariant=True, doc="a process function sees all elements and emits any number of rows",
    spark=Cut.THREE | Cut.ALL, delta=Cut.TWO)

transcript(
    "process_function_on_pandas_with_count_evictor",
    WindowSpecBuilder().key_by("k").event_time("ts").window(GlobalWindows()).trigger(CountTrigger(3))
    .evictor(CountEvictor(2)).process(Spread(), "spread bigint, rows bigint", columns=("v",), as_pandas=True),
    # fires at the 3rd element; the CountEvictor keeps 5 and 2 before the function: spread 3 over 2 rows.
    step(r(0, 1), r(1, 5), r(2, 2), panes=[P("a", None, None, 0, ON_TIME, False, rows=[dict(spread=3, rows=2)])]),
    # buffer 5, 2 + 10, 4, 9: fires at 9 (3 new); evicted to the last 2: 4, 9.
    step(r(3, 10), r(4, 4), r(5, 9), panes=[P("a", None, None, 1, ON_TIME, False, rows=[dict(spread=5, rows=2)])]),
    flush(),
    doc="a process function over a pandas DataFrame, after an evictor", spark=Cut.STEPS)

transcript(
    "non_keyed_windows", spec(tumbling(10), keys=()),
    # window_all: every element is in the one keyless window set.
    step(r(1, 1, k="a"), r(2, 2, k="b"), r(12, 4, k=None), panes=[P((), 0, 10, 0, ON_TIME, True, s=3, n=2)]),
    flush([P((), 10, 20, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, doc="windowAll: no key columns (a null in an unused column is fine)", spark=Cut.STEPS | Cut.THREE)

transcript(
    "session_early_firings_and_late_bridge",
    spec(session(10), lateness=100,
         trigger=EventTimeTrigger().with_early_firings(every_n_elements=2).with_late_firings(every_n_elements=1)),
    # 0 -> [0,10) (early count 1); 3 -> [3,13) extends it to [0,13): on_merge carries the count (1), the
    # element makes 2: EARLY pane.
    step(r(0, 1), r(3, 2), wm_after=2, panes=[P("a", 0, 13, 0, EARLY, False, s=3, n=2)]),
    # wm 59: [0,13) and [20,30) fire ON_TIME (cleanup 112 and 129: not final).
    step(r(20, 4), r(60, 8), wm_after=59, panes=[
        P("a", 0, 13, 1, ON_TIME, False, s=3, n=2), P("a", 20, 30, 0, ON_TIME, False, s=4, n=1)]),
    # 11 -> [11,21) bridges both fired sessions: [0,30), end behind the watermark: a late element; late
    # firings every 1 element: LATE pane at once, superseding both parts.
    step(r(11, 16), panes=[P("a", 0, 30, 2, LATE, False, supersedes=[(0, 13), (20, 30)], s=23, n=4)]),
    flush([P("a", 60, 70, 0, ON_TIME, True, s=8, n=1)]),
    doc="sessions with early firings and a late element that bridges two fired sessions",
    spark=Cut.STEPS, delta=Cut.STEPS)

# ============================================ watermarks, processing time and window_all on the plans
#
# Rules these pin down (the DataFrame plans run them: windowing/spark/input/batch_time.py and
# plans/processing_time_plan.py; the model is the oracle):
# * a slow source that keeps sending (so it is never idle) holds the operator's watermark back;
#   once it is idle (no element for the timeout), the others' minimum is the watermark;
# * a processing-time window gets the same panes whether a stream gives its rows the batch's
#   processing time or a backfill replays them with their recorded ingestion times;
# * window_all: the count and session plans run with no key columns too.

_SLOW_SOURCES = (WindowSpecBuilder().key_by("k").event_time("ts").window(tumbling(10))
                 .watermark_sources("src", "s1", "s2").watermark_idleness(100))

transcript(
    "slow_source_holds_the_watermark", _SLOW_SOURCES.aggregate(s=Sum("v"), n=Count()),
    step(r(5, 1, src="s1"), r(2, 2, src="s2"), pt=0, wm_after=1),          # min(4, 1)
    step(r(25, 4, src="s1"), r(8, 8, src="s2"), pt=50, wm_after=7),        # min(24, 7)
    # s1 runs ahead (34) but s2 sent 70 ms ago (< 100: not idle): s2 still holds the watermark at 7.
    step(r(35, 16, src="s1"), pt=120, wm_after=7),
    step(r(9, 32, src="s2"), pt=130, wm_after=8),                          # the slow source moves it
    # s2 at 12: min(34, 11) = 11: [0,10) fires with 5, 2, 8 and 9.
    step(r(12, 64, src="s2"), pt=140, wm_after=11, panes=[P("a", 0, 10, 0, ON_TIME, True, s=43, n=4)]),
    # pt 245: s2 sent nothing for 105 ms: idle, left out; the watermark is s1's: 44.
    step(r(45, 128, src="s1"), pt=245, wm_after=44, panes=[
        P("a", 10, 20, 0, ON_TIME, True, s=64, n=1), P("a", 20, 30, 0, ON_TIME, True, s=4, n=1),
        P("a", 30, 40, 0, ON_TIME, True, s=16, n=1)]),
    flush([P("a", 40, 50, 0, ON_TIME, True, s=128, n=1)]),
    invariant=True, doc="a slow but active source holds the watermark; an idle one does not",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL)

transcript(
    "processing_time_window_in_a_stream", spec(TumblingProcessingTimeWindows.of(10)),
    # each row's processing time is its batch's: 3, 3, 8 -> [0,10); 12 -> [10,20).
    step(r(100, 1), r(7, 2, k="b"), pt=3),
    step(r(50, 4), pt=8),
    # pt 12: [0,10) (max_ts 9 < 12) fires before the row, for both keys.
    step(r(1, 8), pt=12, panes=[P("a", 0, 10, 0, ON_TIME, True, s=5, n=2), P("b", 0, 10, 0, ON_TIME, True, s=2, n=1)]),
    step(pt=25, panes=[P("a", 10, 20, 0, ON_TIME, True, s=8, n=1)]),
    flush(),
    doc="a stream: rows take their batch's processing time", spark=Cut.STEPS)

transcript(
    "processing_time_window_in_a_backfill_by_ingestion_time",
    WindowSpecBuilder().key_by("k").event_time("ts").processing_time("ingest")
    .window(TumblingProcessingTimeWindows.of(10)).aggregate(s=Sum("v"), n=Count()),
    # the stream above replayed from its recorded ingestion times, in one batch with no clock of its own:
    # the clock ends at the latest ingestion time, 12, so [0,10) fires; [10,20) waits for the flush.
    # The final panes are the stream's.
    step(r(100, 1, ingest=3), r(7, 2, k="b", ingest=3), r(50, 4, ingest=8), r(1, 8, ingest=12),
         panes=[P("a", 0, 10, 0, ON_TIME, True, s=5, n=2), P("b", 0, 10, 0, ON_TIME, True, s=2, n=1)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=8, n=1)]),
    invariant=True, doc="a backfill: processing time is each row's recorded ingestion time",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.ALL)

transcript(
    "non_keyed_count_window", spec(count=(3,), keys=()),
    # in event-time order 1, 2, 3 fire (purging); 4 waits.
    step(r(1, 1, k="a"), r(2, 2, k="b"), r(4, 8, k="a"), r(3, 4, k="c"),
         panes=[P((), None, None, 0, ON_TIME, False, s=7, n=3)]),
    step(r(5, 16, k="b"), r(6, 32, k="c"), panes=[P((), None, None, 1, ON_TIME, False, s=56, n=3)]),
    flush(),
    doc="countWindowAll(3): one count window over every key", spark=Cut.STEPS)

transcript(
    "non_keyed_sliding_count_window", spec(count=(3, 2), keys=()),
    # fires every 2 elements over the last 3: at 2 (1+2), at 4 (2+4+8).
    step(r(1, 1, k="a"), r(2, 2, k="b"), r(3, 4, k="a"), r(4, 8, k="c"), panes=[
        P((), None, None, 0, ON_TIME, False, s=3, n=2), P((), None, None, 1, ON_TIME, False, s=14, n=3)]),
    flush(),
    doc="countWindowAll(3, 2)", spark=Cut.STEPS)

transcript(
    "non_keyed_sessions", spec(session(10), keys=()),
    # sessions over every key: 0 and 5 merge into [0,15); wm 30 closes it; [30,40) waits for the flush.
    step(r(0, 1, k="a"), r(5, 2, k="b"), r(30, 4, k="a"), panes=[P((), 0, 15, 0, ON_TIME, True, s=3, n=2)]),
    flush([P((), 30, 40, 0, ON_TIME, True, s=4, n=1)]),
    invariant=True, doc="session windows with window_all", spark=Cut.STEPS | Cut.THREE)
