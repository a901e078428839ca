"""Transcripts of the last built-in triggers to get DataFrame plans: the plain event-time trigger on
GLOBAL windows, and the DeltaTrigger with its built-in ``AbsoluteDifference`` delta.

Same format and rules as ``transcripts.py`` (importing this module registers them); expected
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

from transcripts import P, flush, r, spec, step, transcript, tumbling
from windowing.core.assigners import GlobalWindows
from windowing.core.records import EARLY, LATE, ON_TIME
from windowing.core.triggers import DeltaTrigger, EventTimeTrigger

transcript(
    "event_time_trigger_on_global_window",
    spec(GlobalWindows(), trigger=EventTimeTrigger()),
    # no timer is due below +infinity: nothing fires however far the watermark goes
    step(r(1, 1), r(5, 2), r(3, 4, k="b"), wm_after=4),
    step(r(100, 8), wm_after=99),
    # flush: the timer at Long.MAX fires once per window, ON_TIME, not final (never cleaned)
    flush([P("a", None, None, 0, ON_TIME, False, s=11, n=3), P("b", None, None, 0, ON_TIME, False, s=4, n=1)]),
    invariant=True, doc="EventTimeTrigger on GlobalWindows fires only at the end of input")

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
    doc="PurgingTrigger(EventTimeTrigger) on GlobalWindows, window_all, with rows after the end of input")
