"""Processing-time windows (tumbling, sliding, sessions with a static gap or a
gap column) with CountTrigger, ContinuousProcessingTimeTrigger, the plain
EventTimeTrigger, EarlyLateEventTimeTrigger or ContinuousEventTimeTrigger
(each optionally purging), and tumbling/sliding ones with DeltaTrigger on the
built-in AbsoluteDifference (optionally purging; it cannot merge), as
DataFrame plans.

Sessions are the session trigger plan (:mod:`windowing.spark.plans.session_window_trigger_plan`:
merging around the same phases) on the same clock: a session the clock closes
before the rows fires (its phase-A firing) and is cleaned there, so a row
that only touches it opens a new session; an island of the batch's windows
only whose ``max_ts`` is at or below the clock before the rows is late.

They are the trigger plans' phases (:mod:`windowing.spark.plans.trigger_rules`)
with the processing-time clock where event-time windows have the watermark,
as the reference model runs processing-time windows:

* an element's timestamp is its processing time (``prepare.classify``: its
  ingestion time, else the batch's arrival time); rows whose every window the
  clock closed before the rows are late before the plan runs
  (:func:`windowing.spark.plans.processing_time_plan.replayed_late`, reason
  ``processing_time_window_already_fired``), and a sliding row joins only its
  windows whose ``max_ts`` is above that clock;
* a window is cleaned when the clock reaches its ``max_ts`` (a processing-time
  timer, fired in time order with the trigger's): before the rows (phase A)
  or after them (phase C). The CountTrigger never fires on that timer, so a
  partial count is dropped, as in Flink (so are the elements after a
  DeltaTrigger's last firing); a ContinuousProcessingTimeTrigger's
  last timer is capped at ``max_ts``, so it fires with the cleanup (one pane);
* timing: a firing is EARLY while the window's ``max_ts`` is ahead of the
  clock at that moment (before the rows ``pt - 1``, during them the batch's
  arrival time, after them the clock after the batch), else ON_TIME; never
  LATE (the watermark does not end these windows);
* EventTimeTrigger: an element registers an event-time timer at ``max_ts``;
  it fires after the rows when the watermark reaches it, before the clock's
  cleanup of the same phase; a window the clock cleaned before the rows is
  gone with its timer (so are a ContinuousEventTimeTrigger's pending timers:
  event-time timers never fire before the rows);
* early/late firings: the end-of-window and the late firings as the
  EventTimeTrigger's (late for the trigger: ``max_ts`` behind the watermark);
  the early-firing timer is a processing-time timer, ordered in time with the
  clock's cleanup timer at ``max_ts``: one after ``max_ts`` never fires (the
  window is gone first), one AT ``max_ts`` is the cleanup timer itself (it
  fires, ON_TIME, then the window is cleaned);
* ``is_final`` marks the window's last pane of the batch that cleans it.

The state rows are the trigger plans' (``trigger_count``, ``timer_ms``); the
fingerprint is salted (:data:`STATE_LAYOUT`) so that state the per-key
path wrote for the same spec (which ran it before) is refused, not misread.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.spark.input.batch_time import BatchTime
from windowing.spark.input.columns import WE, long_lit
from windowing.spark.plans import session_window_trigger_plan as stp
from windowing.spark.plans import trigger_rules as tp
from windowing.spark.plans.processing_time_plan import state_end_ranges
from windowing.spark.plans.processing_session_window_plan import relevant_end_ranges as session_ranges

STATE_LAYOUT = "processing-time-trigger-state-v1"
"""Salt of the state fingerprint of specs on these plans."""


def processing_trigger_plan(ctx, plan, elements: DataFrame, state: DataFrame, clock: "tp.BatchClock"):
    """Panes and state changes of one batch (see the module docstring).

    Args:
        ctx: the batch's :class:`~windowing.spark.plans.base.PlanContext` (watermarks for the panes).
        plan: the spec's ``TriggerPlan`` (its trigger rules, trigger, purge).
        elements: accepted rows (replayed-late rows left out), one row per (element, window).
        state: the state rows the batch can touch (:func:`relevant_end_ranges`, :func:`due_timers`).
        clock: the batch's processing-time clock.

    Returns:
        the trigger plans' :class:`~windowing.spark.plans.base.PlanOutput`, with ``cleaned``: every
        window cleaned in this batch (those opened and closed in it included).
    """
    # A sliding row's windows that the clock closed before the rows are late for it: it joins the others.
    live = elements.where(F.col(WE) > long_lit(tp._clamp(clock.at_rows_ms + 1)))
    return tp.trigger_plan(ctx, plan, live, state, clock,
                           processing_time_windows=True)


def processing_session_trigger_plan(ctx, plan, elements: DataFrame, state: DataFrame, clock: "tp.BatchClock"):
    """One batch of processing-time sessions with one of these triggers: the event-time session
    trigger plan (:func:`windowing.spark.plans.session_window_trigger_plan.session_trigger_plan`: phase A,
    merging, phases B and C) on the processing-time clock (see the module docstring).

    Args:
        ctx, clock: as for :func:`processing_trigger_plan`.
        plan: the spec's ``TriggerPlan`` (its trigger rules, trigger, purge).
        elements: accepted rows with every input column, ``__ts_ms`` (the processing time),
            ``__seq`` and their own window ``[pt, pt + gap)``.
        state: the open sessions the batch may touch
            (:func:`windowing.spark.plans.processing_session_window_plan.relevant_end_ranges`, :func:`due_timers`).

    Returns:
        a :class:`~windowing.spark.plans.session_window_plan.SessionOutput` (late islands: rows whose sessions the
        clock closed before the rows).
    """

    return stp.session_trigger_plan(ctx, plan, elements, state, clock,
                                    processing_time_windows=True)


def relevant_end_ranges(rules: "type[tp.TriggerRules]", times: BatchTime, min_accepted_ts: int | None, max_accepted_ts: int | None,
                        size_ms: int) -> list[tuple[int, int]]:
    """Window ends (inclusive ranges) of the state rows a batch can touch by their end: those its
    rows fall in, those whose ``max_ts`` the clock passes and (the event-time triggers) those whose
    ``max_ts`` the watermark passes (see :func:`due_timers` for the rest)."""

    ranges = state_end_ranges(times)
    wm0, wm1 = times.watermark_start_ms, times.watermark_end_ms
    if rules.fires_at_window_end and wm1 > wm0:
        ranges.append((tp._clamp(wm0 + 2), tp._clamp(wm1 + 1)))   # max_ts in (wm0, wm1]
    if min_accepted_ts is not None:
        ranges.append((min_accepted_ts + 1, min(max_accepted_ts + size_ms, MAX_TIMESTAMP_MS)))
    return ranges


def session_relevant_end_ranges(rules: "type[tp.TriggerRules]", times: BatchTime, min_accepted_ts: int | None) -> list[tuple[int, int]]:
    """Window ends (inclusive ranges) of the open sessions a batch can touch by their end: those of
    :func:`windowing.spark.plans.processing_session_window_plan.relevant_end_ranges` and (the event-time triggers)
    those whose ``max_ts`` the watermark passes (see :func:`due_timers` for the rest)."""

    ranges = session_ranges(times, min_accepted_ts)
    wm0, wm1 = times.watermark_start_ms, times.watermark_end_ms
    if rules.fires_at_window_end and wm1 > wm0:
        ranges.append((tp._clamp(wm0 + 2), tp._clamp(wm1 + 1)))   # max_ts in (wm0, wm1]
    return ranges
