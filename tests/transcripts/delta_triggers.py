"""Transcripts of the last built-in triggers to get DataFrame plans: the plain event-time trigger on
GLOBAL windows, and the DeltaTrigger with its built-in ``AbsoluteDifference`` delta.

Same format and rules as ``basics.py`` (this module's ``TRANSCRIPTS``); expected
values worked out BY HAND from the rules below, the reasoning in the comments.

Rules used (windowing/core/triggers.py, reference.py; Flink's GlobalWindow and DeltaTrigger):

* the global window's max_ts is Long.MAX: the event-time trigger's timer there is due only when
  the watermark reaches +infinity (a flush); the window is never late and never cleaned, so no
  pane is final, and every firing of a global window is ON_TIME. Once the watermark is at
  +infinity, ``EventTimeTrigger.on_element`` sees ``max_ts <= wm`` and fires on every element;
* ``DeltaTrigger(threshold, value_column=c)``: the first element of a window is remembered
  without firing; an element with ``|v - v_remembered| > threshold`` fires (the pane includes it)
  and becomes the remembered one; time never fires it. Elements of a batch go in (event time,
  sequence) order. Purging empties the window's contents, not the remembered element; the
  window's cleanup (``max_ts + L``) forgets it. A delta firing is EARLY while the window's end
  is ahead of the watermark at the start of the batch, else LATE (ON_TIME on a global window).
"""
from __future__ import annotations

from dataclasses import dataclass

from transcripts.build import L, P, flush, r, spec, step, transcript_list, tumbling
from transcripts.types import Cut
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import GlobalWindows
from windowing.core.records import EARLY, LATE, ON_TIME
from windowing.core.triggers import DeltaTrigger, EventTimeTrigger


TRANSCRIPTS, transcript = transcript_list()

transcript(
    "event_time_trigger_on_global_window",
    spec(GlobalWindows(), trigger=EventTimeTrigger()),
    # no timer is due below +infinity: nothing fires however far the watermark goes
    step(r(1, 1), r(5, 2), r(3, 4, k="b"), wm_after=4),
    step(r(100, 8), wm_after=99),
    # flush: the timer at Long.MAX fires once per window, ON_TIME, not final (never cleaned)
    flush([P("a", None, None, 0, ON_TIME, False, s=11, n=3), P("b", None, None, 0, ON_TIME, False, s=4, n=1)]),
    invariant=True, doc="EventTimeTrigger on GlobalWindows fires only at the end of input",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.THREE | Cut.ALL, delta=Cut.STEPS)

transcript(
    "event_time_trigger_on_global_window_all_purging_after_the_end",
    spec(GlobalWindows(), trigger=EventTimeTrigger(), mode="discarding", keys=()),
    step(r(7, 1), r(2, 2)),
    # flush: one pane with both, purged
    flush([P((), None, None, 0, ON_TIME, False, s=3, n=2)]),
    # the watermark stays at +infinity: the global window is not late (max_ts + 0 is Long.MAX, which the
    # watermark reaches but the window never ends); on_element fires at once: one pane per batch, with only
    # what came since the purge
    step(r(50, 4), r(40, 8), panes=[P((), None, None, 1, ON_TIME, False, s=12, n=2)]),
    # a second flush: no new element, nothing to fire (the timer at Long.MAX already fired)
    flush(),
    doc="PurgingTrigger(EventTimeTrigger) on GlobalWindows, window_all, with rows after the end of input",
    spark=Cut.STEPS)


@dataclass(frozen=True)
class SquaredDifference:
    """A user delta function: ``(new[column] - old[column]) ** 2`` (user code: the per-key path)."""

    column: str

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def delta(self, old_row, new_row) -> float:
        return (new_row[self.column] - old_row[self.column]) ** 2


transcript(
    "delta_trigger_on_tumbling_windows_across_batches",
    spec(tumbling(100), lateness=50, trigger=DeltaTrigger(5, value_column="v")),
    # a, in event-time order: 10 remembered; |12-10| = 2; |16-10| = 6 > 5: FIRE (10+12+16), EARLY (max_ts 99 is
    # ahead of the watermark), remember 16; |17-16| = 1. b: 1 remembered. wm 4.
    step(r(1, 10), r(3, 16), r(2, 12), r(4, 17), r(5, 1, k="b"),
         panes=[P("a", 0, 100, 0, EARLY, False, s=38, n=3)]),
    # the remembered values crossed the batch: a |30-16| = 14 > 5: FIRE with everything so far, remember 30;
    # b |8-1| = 7 > 5: FIRE. wm 9.
    step(r(10, 30), r(6, 8, k="b"), panes=[P("a", 0, 100, 1, EARLY, False, s=85, n=5),
                                           P("b", 0, 100, 0, EARLY, False, s=9, n=2)]),
    # [100,200) opens: 31 remembered. wm 119 passes [0,100)'s max_ts 99: a delta trigger never fires on time;
    # cleanup is at 99 + 50 = 149.
    step(r(120, 31), wm_after=119),
    # 50 is in [0,100), behind the watermark but within the allowed lateness: |40-30| = 10 > 5: FIRE, LATE.
    step(r(50, 40), panes=[P("a", 0, 100, 2, LATE, False, s=125, n=6)]),
    # 60: |42-40| = 2. 170 in [100,200): |37-31| = 6 > 5: FIRE, EARLY. wm 169 cleans up [0,100) (149) for a and
    # b, forgetting their remembered values, without a pane.
    step(r(60, 42), r(170, 37), wm_after=169, panes=[P("a", 100, 200, 0, EARLY, False, s=68, n=2)]),
    # [0,100) is gone: 80 is late beyond the allowed lateness
    step(r(80, 100), late=[L(80)]),
    # flush: [100,200) is cleaned up without firing
    flush(),
    doc="DeltaTrigger(AbsoluteDifference) on tumbling windows: state across batches, late firings, cleanup",
    spark=Cut.STEPS)

transcript(
    "delta_trigger_on_global_window_purging_doubles",
    spec(GlobalWindows(), trigger=DeltaTrigger(0.5, value_column="w"), mode="discarding", s=Sum("w"), n=Count()),
    # 1.0 remembered; |1.25-1.0| = 0.25; |1.75-1.0| = 0.75 > 0.5: FIRE (ON_TIME: a global window), purge,
    # remember 1.75
    step(r(1, w=1.0), r(2, w=1.25), r(3, w=1.75), panes=[P("a", None, None, 0, ON_TIME, False, s=4.0, n=3)]),
    # event-time order: 4 first: |2.5-1.75| = 0.75 > 0.5: FIRE with only 2.5 (purged before), remember 2.5;
    # 5: |2.0-2.5| = 0.5, not above the threshold
    step(r(5, w=2.0), r(4, w=2.5), panes=[P("a", None, None, 1, ON_TIME, False, s=2.5, n=1)]),
    # |0.125-2.5| > 0.5: FIRE with 2.0 and 0.125
    step(r(6, w=0.125), panes=[P("a", None, None, 2, ON_TIME, False, s=2.125, n=2)]),
    # time never fires a delta trigger; the global window is never cleaned
    flush(),
    doc="PurgingTrigger(DeltaTrigger) on GlobalWindows over a double column: discarding panes", spark=Cut.STEPS)

transcript(
    "delta_trigger_on_global_window_in_event_time_order",
    spec(GlobalWindows(), trigger=DeltaTrigger(3, value_column="v")),
    # a: 5 remembered; |7-5| = 2; |9-5| = 4 > 3: FIRE, remember 9. b: 1 remembered; |4-1| = 3 is not above 3;
    # |5-1| = 4: FIRE, remember 5.
    step(r(1, 5), r(2, 7), r(3, 9), r(4, 1, k="b"), r(5, 4, k="b"), r(6, 5, k="b"),
         panes=[P("a", None, None, 0, ON_TIME, False, s=21, n=3), P("b", None, None, 0, ON_TIME, False, s=10, n=3)]),
    # a: |12-9| = 3; |13-9| = 4: FIRE, remember 13. b: |20-5| = 15: FIRE.
    step(r(7, 12), r(8, 13), r(9, 20, k="b"),
         panes=[P("a", None, None, 1, ON_TIME, False, s=46, n=5), P("b", None, None, 1, ON_TIME, False, s=30, n=4)]),
    # |10-13| = 3: nothing
    step(r(10, 10)),
    flush(),
    invariant=True, doc="DeltaTrigger on GlobalWindows, rows in event-time order (any cut gives the same panes)",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.THREE | Cut.ALL)

transcript(
    "delta_trigger_with_a_user_delta_function",
    spec(tumbling(100), trigger=DeltaTrigger(10, delta_fn=SquaredDifference("v"))),
    # 1 remembered; (3-1)^2 = 4; (5-1)^2 = 16 > 10: FIRE, EARLY, remember 5; (6-5)^2 = 1
    step(r(1, 1), r(2, 3), r(3, 5), r(4, 6), panes=[P("a", 0, 100, 0, EARLY, False, s=9, n=3)]),
    # flush: cleaned up without firing
    flush(),
    doc="DeltaTrigger with a user-written delta function (runs per key: user code)", spark=Cut.STEPS)
