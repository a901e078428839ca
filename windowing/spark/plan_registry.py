"""The DataFrame plans as objects, found by window family and trigger rule.

A spec's plan is chosen once (:func:`plan_for`): its window family (time,
global, session, processing time, processing-time session) and its trigger
rule (the built-in trigger, exact type, with the sliding count window's
evictor as a rule of its own) are the key of :data:`PLANS`. What a plan does
is the :class:`Plan` object found there; the executor
(:mod:`windowing.spark.plan_executor`) asks it, and never compares plan names.
A spec whose key has no entry, or that has a feature no plan covers
(:func:`unplanned_features`), runs on the per-key path.

The plans (their modules hold the phases):

* ``time``: EventTimeTrigger / NeverTrigger (optionally purging) on time
  windows, NeverTrigger on global windows (:mod:`windowing.spark.time_plans`).
* ``count``: CountTrigger(n) on time or global windows; ``evicting_count``:
  GlobalWindows + CountTrigger(slide) + CountEvictor(size), the sliding count
  window (:mod:`windowing.spark.time_plans`).
* ``early_late``, ``continuous_event_time``, ``processing_time_trigger``,
  ``continuous_processing_time``, ``delta``: the triggers with timers and
  trigger state on time and global windows; the plain EventTimeTrigger on
  global windows is ``early_late`` with neither early nor late firings
  (:mod:`windowing.spark.trigger_plans`, :mod:`windowing.spark.delta_trigger_plan`).
* ``session``: event-time sessions with EventTimeTrigger
  (:mod:`windowing.spark.session_plan`); ``session_<rule>``: with the trigger
  plans' rules (:mod:`windowing.spark.session_trigger_plan`).
* ``processing_time``: processing-time tumbling/sliding windows with
  ProcessingTimeTrigger (:mod:`windowing.spark.processing_plan`);
  ``processing_time_<rule>``: with other built-in triggers
  (:mod:`windowing.spark.processing_trigger_plan`).
* ``processing_time_session``: processing-time sessions with
  ProcessingTimeTrigger (:mod:`windowing.spark.processing_session_plan`);
  ``processing_time_session_<rule>``: with other built-in triggers.

Every plan also runs without key columns (window_all) and optionally purging
(but the sliding count window). Adding a trigger rule to a window family is
one plan module (its phases) and entries here.
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Any, Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import types as T

from windowing.core.assigners import (EventTimeSessionWindows, GlobalWindows, ProcessingTimeSessionWindows,
                                      SlidingEventTimeWindows, SlidingProcessingTimeWindows,
                                      TumblingEventTimeWindows, TumblingProcessingTimeWindows)
from windowing.core.evictors import CountEvictor
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.core.triggers import (AbsoluteDifference, ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger,
                                     CountTrigger, DeltaTrigger, EarlyLateEventTimeTrigger, EventTimeTrigger,
                                     NeverTrigger, ProcessingTimeTrigger, PurgingTrigger)
from windowing.spark import batch_time
from windowing.spark import processing_session_plan as ptsp
from windowing.spark import processing_trigger_plan as ptp
from windowing.spark import session_trigger_plan as stp
from windowing.spark import trigger_plans as tp
from windowing.spark.plan_base import PlanContext, TriggerPlan
from windowing.spark.processing_plan import PROCESSING_TIME_PLAN, processing_time_plan, state_end_ranges
from windowing.spark.session_plan import SESSION_PLAN, closing_session_plan, session_plan, session_state_fields
from windowing.spark.time_plans import (COUNT_PLAN, EVICTING_COUNT_PLAN, TIME_PLAN, closing_time_plan, count_plan,
                                       evicting_count_plan, time_plan)


class WindowFamily(enum.Enum):
    TIME = "tumbling or sliding event-time windows"
    GLOBAL = "global windows"
    SESSION = "event-time session windows"
    PROCESSING_TIME = "tumbling or sliding processing-time windows"
    PROCESSING_TIME_SESSION = "processing-time session windows"


class TriggerRule(enum.Enum):
    EVENT_TIME = "EventTimeTrigger"
    NEVER = "NeverTrigger"
    COUNT = "CountTrigger"
    SLIDING_COUNT = "CountTrigger with CountEvictor (count_window(size, slide))"
    EARLY_LATE = "EarlyLateEventTimeTrigger"
    CONTINUOUS_EVENT_TIME = "ContinuousEventTimeTrigger"
    PROCESSING_TIME = "ProcessingTimeTrigger"
    CONTINUOUS_PROCESSING_TIME = "ContinuousProcessingTimeTrigger"
    DELTA = "DeltaTrigger with the built-in AbsoluteDifference"


class Elements(enum.Enum):
    """The rows a plan takes per accepted element."""
    PER_WINDOW = "one row per (element, window)"
    SLICES = "one row per element with its slice (sliding windows aggregate per slice first)"
    SESSION = "one row per element with its own session window, the input's columns kept"


@dataclass(frozen=True)
class PlanInputs:
    """What a plan reads for one batch (see :class:`windowing.spark.plan_executor.PlanExecutor`)."""
    ctx: PlanContext
    plan: TriggerPlan
    elements: DataFrame | None
    state: DataFrame
    clock: "tp.BatchClock"
    times: "batch_time.BatchTime"
    buffers: DataFrame | None = None
    value_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchRange:
    """The accepted elements' event times and the watermarks of one batch (which state rows it needs)."""
    min_accepted_ts: int | None
    max_accepted_ts: int | None
    wm_start_ms: int
    wm_end_ms: int
    allowed_lateness_ms: int
    size_ms: int | None
    clock: "tp.BatchClock"
    times: "batch_time.BatchTime"


StateRows = tuple[list[tuple[int, int]], Column | None] | None
"""Which state rows a batch needs: window-end ranges (inclusive) and rows that also meet a
condition (a timer that comes due); None: every row (global windows)."""


def _no_fields() -> list[T.StructField]:
    return []


def _trigger_fields() -> list[T.StructField]:
    return tp.trigger_state_fields()


def _session_fields() -> list[T.StructField]:
    return session_state_fields()


def _session_trigger_fields() -> list[T.StructField]:
    return session_state_fields() + tp.trigger_state_fields()


@dataclass(frozen=True)
class OnePass:
    """A plan's one-pass form for a first batch that ends the input: every window closes, no state.

    ``run(ctx, elements, observation)`` gives the panes; with ``observes_input`` an
    :class:`~pyspark.sql.Observation` may count the elements the panes aggregate (each element is
    in one pane), so the row accounting needs no second pass (see the executor).
    """
    run: Callable[[PlanContext, DataFrame, Any], DataFrame]
    observes_input: bool = False


@dataclass(frozen=True)
class Plan:
    """One DataFrame plan: how a batch runs and what its state looks like.

    Attributes:
        name: what reports call it (``BatchReport.plan``) and the plan modules' own name of it.
        run: the batch's panes and state changes from :class:`PlanInputs`.
        state_rows: which state rows a batch needs (:data:`StateRows`), from a :class:`BatchRange`.
        state_fields: the windows table's columns beyond the time plan's.
        state_layout: salt of the spec fingerprint when the state layout differs from the
            per-key path's (state another layout wrote is refused, not misread); None: unsalted.
        elements: the element rows the plan takes.
        fires_at_end: the window fires once, when the watermark passes its end.
        one_pass: the plan's :class:`OnePass` form, if it has one.
        clock_closes_windows: the processing-time clock closes windows: rows it closed them for
            are late, judged against the clock.
        reads_buffers: the plan keeps elements in the buffers table (the sliding count window).
        takes_trigger: the plan reads the trigger's parameters (``TriggerPlan.trigger``).
        takes_count: the plan reads the CountTrigger's count (``TriggerPlan.count``).
    """
    name: str
    run: Callable[[PlanInputs], Any]
    state_rows: Callable[[BatchRange, TriggerPlan], StateRows]
    state_fields: Callable[[], list[T.StructField]] = _no_fields
    state_layout: str | None = None
    elements: Elements = Elements.PER_WINDOW
    fires_at_end: bool = False
    one_pass: OnePass | None = None
    clock_closes_windows: bool = False
    reads_buffers: bool = False
    takes_trigger: bool = False
    takes_count: bool = False

    def fingerprint(self, spec: WindowSpec) -> str:
        """What progress records for ``spec`` on this plan."""
        if self.state_layout is None:
            return spec.fingerprint()
        return hashlib.sha256(f"{spec.fingerprint()}/{self.state_layout}".encode()).hexdigest()[:16]

    @property
    def is_session(self) -> bool:
        return self.elements is Elements.SESSION


# ------------------------------------------------------------ state rows
def _all_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return None


def _accepted_range(r: BatchRange, first_end_after: int = 1) -> list[tuple[int, int]]:
    if r.min_accepted_ts is None:
        return []
    return [(r.min_accepted_ts + first_end_after, r.max_accepted_ts + r.size_ms)]


def _watermark_ranges(r: BatchRange) -> list[tuple[int, int]]:
    """Windows whose end the watermark crosses in ``(wm0, wm1]`` and whose cleanup time falls there."""
    if r.wm_end_ms <= r.wm_start_ms:
        return []
    lateness = r.allowed_lateness_ms
    return [(r.wm_start_ms + 2, r.wm_end_ms + 1), (r.wm_start_ms - lateness + 2, r.wm_end_ms - lateness + 1)]


def _time_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """Time windows: an accepted element may fall in them (end within ``(min_ts, max_ts + size]``), the
    watermark crosses their end, their cleanup time comes, or (trigger plans) a timer comes due."""
    return _accepted_range(r) + _watermark_ranges(r), tp.due_timers(plan.kind, r.wm_end_ms, r.clock)


def _session_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """Event-time sessions an element window may touch or bridge (end at or after the smallest
    accepted timestamp), whose end the watermark crosses or whose cleanup comes."""
    ranges = [] if r.min_accepted_ts is None else [(r.min_accepted_ts, MAX_TIMESTAMP_MS)]
    return ranges + _watermark_ranges(r), None


def _session_trigger_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """The sessions :func:`_session_rows` takes, and those with a timer that comes due."""
    ranges, _ = _session_rows(r, plan)
    return ranges, stp.due_timers(plan.kind, r.wm_end_ms, r.clock)


def _processing_time_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """Processing-time windows the batch's rows fall in, and those whose end the clock passes."""
    return state_end_ranges(r.times) + _accepted_range(r), None


def _processing_trigger_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return (ptp.relevant_end_ranges(plan.kind, r.times, r.min_accepted_ts, r.max_accepted_ts, r.size_ms),
            ptp.due_timers(plan.kind, r.wm_end_ms, r.clock))


def _processing_session_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return ptsp.relevant_end_ranges(r.times, r.min_accepted_ts), None


def _processing_session_trigger_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return (ptp.session_relevant_end_ranges(plan.kind, r.times, r.min_accepted_ts),
            ptp.due_timers(plan.kind, r.wm_end_ms, r.clock))


# ------------------------------------------------------------ the plans
def _time_plan(p: PlanInputs):
    return time_plan(p.ctx, p.plan, p.elements, p.state)


def _count_plan(p: PlanInputs):
    return count_plan(p.ctx, p.plan, p.elements, p.state)


def _evicting_count_plan(p: PlanInputs):
    return evicting_count_plan(p.ctx, p.plan, p.elements, p.state, p.buffers, list(p.value_columns))


def _trigger_plan(p: PlanInputs):
    return tp.trigger_plan(p.ctx, p.plan, p.elements, p.state, p.clock)


def _processing_time_plan(p: PlanInputs):
    return processing_time_plan(p.ctx, p.plan, p.elements, p.state, p.times)


def _processing_trigger_plan(p: PlanInputs):
    return ptp.processing_trigger_plan(p.ctx, p.plan, p.elements, p.state, p.clock)


def _session_plan(p: PlanInputs):
    return session_plan(p.ctx, p.plan, p.elements, p.state)


def _session_trigger_plan(p: PlanInputs):
    return stp.session_trigger_plan(p.ctx, p.plan, p.elements, p.state, p.clock)


def _processing_session_plan(p: PlanInputs):
    return ptsp.processing_time_session_plan(p.ctx, p.plan, p.elements, p.state, p.times)


def _processing_session_trigger_plan(p: PlanInputs):
    return ptp.processing_session_trigger_plan(p.ctx, p.plan, p.elements, p.state, p.clock)


TIME = Plan(TIME_PLAN, _time_plan, _time_rows, elements=Elements.SLICES, fires_at_end=True,
            one_pass=OnePass(closing_time_plan, observes_input=True))
TIME_NEVER = Plan(TIME_PLAN, _time_plan, _time_rows, elements=Elements.SLICES)
GLOBAL_NEVER = Plan(TIME_PLAN, _time_plan, _all_rows, elements=Elements.SLICES)
COUNT = Plan(COUNT_PLAN, _count_plan, _time_rows, takes_count=True)
GLOBAL_COUNT = Plan(COUNT_PLAN, _count_plan, _all_rows, takes_count=True)
SLIDING_COUNT = Plan(EVICTING_COUNT_PLAN, _evicting_count_plan, _all_rows, reads_buffers=True, takes_count=True)
SESSION = Plan(SESSION_PLAN, _session_plan, _session_rows, _session_fields, elements=Elements.SESSION,
               fires_at_end=True, one_pass=OnePass(lambda ctx, elements, observation: closing_session_plan(ctx, elements)))
PROCESSING_TIME = Plan(PROCESSING_TIME_PLAN, _processing_time_plan, _processing_time_rows, elements=Elements.SLICES,
                       clock_closes_windows=True)
PROCESSING_TIME_SESSION = Plan(ptsp.PROCESSING_TIME_SESSION_PLAN, _processing_session_plan, _processing_session_rows,
                               _session_fields, ptsp.STATE_LAYOUT, Elements.SESSION, fires_at_end=True,
                               clock_closes_windows=True)

_TRIGGER_PLAN_RULES = {TriggerRule.EARLY_LATE: tp.EARLY_LATE_PLAN,
                       TriggerRule.CONTINUOUS_EVENT_TIME: tp.CONTINUOUS_EVENT_TIME_PLAN,
                       TriggerRule.PROCESSING_TIME: tp.PROCESSING_TIME_PLAN,
                       TriggerRule.CONTINUOUS_PROCESSING_TIME: tp.CONTINUOUS_PROCESSING_TIME_PLAN,
                       TriggerRule.DELTA: tp.DELTA_PLAN}
"""Trigger rule -> the trigger plans' rule set (:mod:`windowing.spark.trigger_plans`)."""
_PROCESSING_TRIGGER_NAMES = {TriggerRule.COUNT: "count", TriggerRule.CONTINUOUS_PROCESSING_TIME: "continuous",
                             TriggerRule.DELTA: "delta", TriggerRule.EVENT_TIME: "event_time",
                             TriggerRule.EARLY_LATE: "early_late",
                             TriggerRule.CONTINUOUS_EVENT_TIME: "continuous_event_time"}
"""Trigger rule -> its name in :mod:`windowing.spark.processing_trigger_plan`."""
_SESSION_TRIGGER_RULES = {**{rule: base for rule, base in _TRIGGER_PLAN_RULES.items() if rule is not TriggerRule.DELTA},
                          TriggerRule.COUNT: tp.COUNT_TRIGGER_PLAN}
"""Trigger rule -> the rule set of the event-time session trigger plans (a DeltaTrigger cannot merge)."""


def _trigger_plan_entry(name: str, rows) -> Plan:
    return Plan(name, _trigger_plan, rows, _trigger_fields, tp.STATE_LAYOUT, takes_trigger=True)


PLANS: dict[tuple[WindowFamily, TriggerRule], Plan] = {
    (WindowFamily.TIME, TriggerRule.EVENT_TIME): TIME,
    (WindowFamily.TIME, TriggerRule.NEVER): TIME_NEVER,
    (WindowFamily.TIME, TriggerRule.COUNT): COUNT,
    (WindowFamily.GLOBAL, TriggerRule.NEVER): GLOBAL_NEVER,
    (WindowFamily.GLOBAL, TriggerRule.COUNT): GLOBAL_COUNT,
    (WindowFamily.GLOBAL, TriggerRule.SLIDING_COUNT): SLIDING_COUNT,
    # On the global window (max_ts Long.MAX) the event-time trigger is the early/late trigger with
    # neither early nor late firings: it fires only once the watermark is at +infinity (a flush),
    # and after that on every element, always ON_TIME, never final.
    (WindowFamily.GLOBAL, TriggerRule.EVENT_TIME): _trigger_plan_entry(tp.EARLY_LATE_PLAN, _all_rows),
    **{(WindowFamily.TIME, rule): _trigger_plan_entry(name, _time_rows) for rule, name in _TRIGGER_PLAN_RULES.items()},
    **{(WindowFamily.GLOBAL, rule): _trigger_plan_entry(name, _all_rows)
       for rule, name in _TRIGGER_PLAN_RULES.items()},
    (WindowFamily.SESSION, TriggerRule.EVENT_TIME): SESSION,
    **{(WindowFamily.SESSION, rule): Plan(stp.SESSION_KINDS[base], _session_trigger_plan, _session_trigger_rows,
                                          _session_trigger_fields, stp.STATE_LAYOUT, Elements.SESSION,
                                          takes_trigger=True)
       for rule, base in _SESSION_TRIGGER_RULES.items()},
    (WindowFamily.PROCESSING_TIME, TriggerRule.PROCESSING_TIME): PROCESSING_TIME,
    **{(WindowFamily.PROCESSING_TIME, rule): Plan(ptp.WINDOW_KINDS[name], _processing_trigger_plan,
                                                  _processing_trigger_rows, _trigger_fields, ptp.STATE_LAYOUT,
                                                  clock_closes_windows=True, takes_trigger=True)
       for rule, name in _PROCESSING_TRIGGER_NAMES.items()},
    (WindowFamily.PROCESSING_TIME_SESSION, TriggerRule.PROCESSING_TIME): PROCESSING_TIME_SESSION,
    **{(WindowFamily.PROCESSING_TIME_SESSION, rule): Plan(
        ptp.SESSION_KINDS[name], _processing_session_trigger_plan, _processing_session_trigger_rows,
        _session_trigger_fields, ptp.STATE_LAYOUT, Elements.SESSION, clock_closes_windows=True, takes_trigger=True)
       for rule, name in _PROCESSING_TRIGGER_NAMES.items() if name in ptp.SESSION_KINDS},
}
"""(window family, trigger rule) -> the plan. A key not here runs on the per-key path."""

PLAN_NAMES = frozenset(plan.name for plan in PLANS.values())


def window_family(assigner) -> WindowFamily | None:
    """The family of a built-in assigner (exact classes and their built-in variants), else None."""
    if isinstance(assigner, ProcessingTimeSessionWindows):
        return WindowFamily.PROCESSING_TIME_SESSION
    if isinstance(assigner, EventTimeSessionWindows):
        return WindowFamily.SESSION
    if isinstance(assigner, (TumblingProcessingTimeWindows, SlidingProcessingTimeWindows)):
        return WindowFamily.PROCESSING_TIME
    if isinstance(assigner, GlobalWindows):
        return WindowFamily.GLOBAL
    if isinstance(assigner, (TumblingEventTimeWindows, SlidingEventTimeWindows)):
        return WindowFamily.TIME
    return None


_RULES = {EventTimeTrigger: TriggerRule.EVENT_TIME, NeverTrigger: TriggerRule.NEVER, CountTrigger: TriggerRule.COUNT,
          EarlyLateEventTimeTrigger: TriggerRule.EARLY_LATE,
          ContinuousEventTimeTrigger: TriggerRule.CONTINUOUS_EVENT_TIME,
          ProcessingTimeTrigger: TriggerRule.PROCESSING_TIME,
          ContinuousProcessingTimeTrigger: TriggerRule.CONTINUOUS_PROCESSING_TIME}


def trigger_rule(trigger, purge: bool, evictor) -> TriggerRule | None:
    """The rule of a (non-purging) built-in trigger and the spec's evictor, else None.

    Exact types only: a user subclass is a user trigger; a ``DeltaTrigger`` with a user delta
    function is user code; the only evictor a plan keeps is the sliding count window's (a
    ``CountEvictor`` before the function, with a non-purging ``CountTrigger``).
    """
    if evictor is not None:
        sliding = (type(trigger) is CountTrigger and isinstance(evictor, CountEvictor) and not purge
                   and not evictor.do_evict_after)
        return TriggerRule.SLIDING_COUNT if sliding else None
    if type(trigger) is DeltaTrigger:
        return TriggerRule.DELTA if type(trigger.delta_fn) is AbsoluteDifference else None
    return _RULES.get(type(trigger))


def supported() -> str:
    """The (family, rule) pairs that have a plan, for messages."""
    by_family: dict[WindowFamily, list[str]] = {}
    for family, rule in PLANS:
        by_family.setdefault(family, []).append(rule.value)
    return "; ".join(f"{family.value}: {', '.join(rules)}" for family, rules in by_family.items())


def plan_for(spec: WindowSpec) -> TriggerPlan:
    """The DataFrame plan of ``spec``, chosen once: :data:`PLANS` by window family and trigger rule.

    Raises:
        NotImplementedError: when no plan covers the spec, naming what is not covered (and, for a
            trigger/evictor combination, the combinations that have a plan).
    """
    gaps = unplanned_features(spec)
    if gaps:
        raise NotImplementedError(f"no DataFrame plan for {', '.join(gaps)}")
    trigger, purge = spec.trigger, False
    if isinstance(trigger, PurgingTrigger):
        trigger, purge = trigger.nested, True
    family, rule = window_family(spec.assigner), trigger_rule(trigger, purge, spec.evictor)
    plan = PLANS.get((family, rule))
    if plan is None:
        raise NotImplementedError(f"trigger {spec.trigger!r} with evictor {spec.evictor!r} on {spec.assigner!r} "
                                  f"has no Spark plan; supported: {supported()}, each optionally in "
                                  f"PurgingTrigger but the sliding count window")
    return TriggerPlan(plan.name, count=trigger.count if plan.takes_count else None,
                       fires_at_end=plan.fires_at_end, purge=purge,
                       evictor_size=spec.evictor.max_count if rule is TriggerRule.SLIDING_COUNT else None,
                       trigger=trigger if plan.takes_trigger else None, definition=plan)


def unplanned_features(spec: WindowSpec) -> tuple[str, ...]:
    """The features of ``spec`` that no DataFrame plan covers (they run on the per-key path)."""
    found = []
    trigger = spec.trigger.nested if isinstance(spec.trigger, PurgingTrigger) else spec.trigger
    if isinstance(spec.assigner, ProcessingTimeSessionWindows):
        # Processing-time sessions run as the processing_time_session plan with their own
        # trigger (a gap function runs in classify: prepare.gap_function_column).
        if type(trigger) is not ProcessingTimeTrigger and ptp.session_plan_kind(trigger) is None:
            found.append(f"trigger {trigger!r} on processing-time session windows (their plans take "
                         f"ProcessingTimeTrigger, CountTrigger, ContinuousProcessingTimeTrigger, "
                         f"EventTimeTrigger, EarlyLateEventTimeTrigger or ContinuousEventTimeTrigger)")
        if spec.evictor is not None:
            found.append(f"evictor on session windows {spec.evictor!r}")
    elif isinstance(spec.assigner, EventTimeSessionWindows):
        # Sessions run as a DataFrame plan when the trigger is a built-in one with a session
        # plan, whatever the gap (static, a column, or a function: prepare.gap_function_column).
        if type(trigger) is not EventTimeTrigger and stp.session_plan_kind(trigger) is None:
            found.append(f"trigger {trigger!r} on session windows")
        if spec.evictor is not None:
            found.append(f"evictor on session windows {spec.evictor!r}")
    elif isinstance(spec.assigner, (TumblingProcessingTimeWindows, SlidingProcessingTimeWindows)):
        # Processing-time windows run as the processing_time plan with their own trigger, or as a
        # processing-time trigger plan with another built-in trigger (ptp.py).
        if type(trigger) is not ProcessingTimeTrigger and ptp.plan_kind(trigger) is None:
            found.append(f"trigger {trigger!r} on processing-time windows (their plans take "
                         f"ProcessingTimeTrigger, CountTrigger, ContinuousProcessingTimeTrigger, "
                         f"EventTimeTrigger, EarlyLateEventTimeTrigger, ContinuousEventTimeTrigger or "
                         f"DeltaTrigger with the built-in AbsoluteDifference)")
        if spec.evictor is not None:
            found.append(f"evictor {spec.evictor!r}")
    else:
        if not isinstance(spec.assigner, (TumblingEventTimeWindows, SlidingEventTimeWindows, GlobalWindows)):
            found.append(f"assigner {type(spec.assigner).__name__}")
        if type(trigger) not in (EventTimeTrigger, CountTrigger, NeverTrigger):   # a user subclass is a user trigger
            if type(trigger) is DeltaTrigger and tp.plan_kind(trigger) is None:
                found.append(f"trigger {trigger!r} (its delta function {type(trigger.delta_fn).__name__} is user "
                             f"code; only the built-in AbsoluteDifference has a plan)")
            elif tp.plan_kind(trigger) is None:
                found.append(f"trigger {trigger!r}")
        if spec.evictor is not None and not (isinstance(spec.evictor, CountEvictor)
                                             and not spec.evictor.do_evict_after):
            found.append(f"evictor {spec.evictor!r}")
    if spec.process_function is not None:
        found.append("process window functions")
    return tuple(dict.fromkeys(found))
