"""The DataFrame plans as objects, found by window family and trigger rule.

A spec's plan is chosen once (:func:`plan_for`): its window family (time,
global, session, processing time, processing-time session) and its trigger
rule (the built-in trigger, exact type, with the sliding count window's
evictor as a rule of its own) are the key of :data:`PLANS`. What a plan does
is the :class:`Plan` object found there, with its trigger's rule set
(:class:`windowing.spark.plans.trigger_rules.TriggerRules`); the executor
(:mod:`windowing.spark.plans.executor`) asks it, and never compares plan names.
:data:`PLANS` is the only decision: a spec whose key has no entry, or with a
process function, runs on the per-key path, and :func:`unplanned_features`
reads :data:`PLANS` to say why.

The plans (their modules hold the phases):

* ``time``: EventTimeTrigger / NeverTrigger (optionally purging) on time
  windows, NeverTrigger on global windows (:mod:`windowing.spark.plans.time_plans`).
* ``count``: CountTrigger(n) on time or global windows; ``evicting_count``:
  GlobalWindows + CountTrigger(slide) + CountEvictor(size), the sliding count
  window (:mod:`windowing.spark.plans.time_plans`).
* ``early_late``, ``continuous_event_time``, ``processing_time_trigger``,
  ``continuous_processing_time``, ``delta``: the triggers with timers and
  trigger state on time and global windows; the plain EventTimeTrigger on
  global windows is ``early_late`` with neither early nor late firings
  (:mod:`windowing.spark.plans.trigger_rules`, :mod:`windowing.spark.plans.delta_trigger_rule`).
* ``session``: event-time sessions with EventTimeTrigger or NeverTrigger
  (:mod:`windowing.spark.plans.session_window_plan`); ``session_<rule>``: with the trigger
  plans' rules (:mod:`windowing.spark.plans.session_window_trigger_plan`).
* ``processing_time``: processing-time tumbling/sliding windows with
  ProcessingTimeTrigger (:mod:`windowing.spark.plans.processing_time_plan`);
  ``processing_time_<rule>``: with other built-in triggers
  (:mod:`windowing.spark.plans.processing_time_trigger_plan`).
* ``processing_time_session``: processing-time sessions with
  ProcessingTimeTrigger (:mod:`windowing.spark.plans.processing_session_window_plan`);
  ``processing_time_session_<rule>``: with other built-in triggers.

Every plan also runs without key columns (window_all) and optionally purging
(but the sliding count window). A trigger rule whose phases exist runs on
another window family with one line in :data:`PLANS`; a new rule is a
:class:`~windowing.spark.plans.trigger_rules.TriggerRules` subclass and its lines here.
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, replace
from typing import Any, Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import types as T

from windowing.core.assigners import (CumulativeEventTimeWindows, EventTimeSessionWindows, GlobalWindows, ProcessingTimeSessionWindows,
                                      SlidingEventTimeWindows, SlidingProcessingTimeWindows,
                                      TumblingEventTimeWindows, TumblingProcessingTimeWindows)
from windowing.core.evictors import CountEvictor
from windowing.core.spec import WindowSpec
from windowing.core.time import MAX_TIMESTAMP_MS
from windowing.core.triggers import (AbsoluteDifference, ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger,
                                     CountTrigger, DeltaTrigger, EarlyLateEventTimeTrigger, EventTimeTrigger,
                                     NeverTrigger, ProcessingTimeTrigger, PurgingTrigger)
from windowing.spark.input import batch_time
from windowing.spark.plans import processing_session_window_plan as ptsp
from windowing.spark.plans import processing_time_trigger_plan as ptp
from windowing.spark.plans import session_window_trigger_plan as stp
from windowing.spark.plans import trigger_rules as tp
from windowing.spark.plans.base import PlanContext, TriggerPlan
from windowing.spark.plans.elements import PER_WINDOW, SESSION as SESSION_ELEMENTS, SLICES, Elements
from windowing.spark.plans.processing_time_plan import PROCESSING_TIME_PLAN, processing_time_plan, state_end_ranges
from windowing.spark.plans.session_window_plan import SESSION_PLAN, closing_session_plan, session_plan, session_state_fields
from windowing.spark.plans.time_plans import (COUNT_PLAN, EVICTING_COUNT_PLAN, TIME_PLAN, closing_time_plan, count_plan,
                                       evicting_count_plan, time_plan)


class WindowFamily(enum.Enum):
    TIME = "tumbling, sliding or cumulating event-time windows"
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


@dataclass(frozen=True)
class PlanInputs:
    """What a plan reads for one batch (see :class:`windowing.spark.plans.executor.PlanExecutor`)."""
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
    longest_window_ms: int | None
    """The longest window of the spec's family: an element's windows end at most this long after it."""
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

    ``run(ctx, elements, observation)`` gives the panes from element rows of the form ``elements``; with
    ``observes_input`` an :class:`~pyspark.sql.Observation` may count the elements the panes aggregate
    (each element is in one pane), so the row accounting needs no second pass (see the executor).
    """
    run: Callable[[PlanContext, DataFrame, Any], DataFrame]
    elements: Elements
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
        elements: the form of the element rows the plan takes (:mod:`windowing.spark.plans.elements`).
        fires_at_end: the window fires once, when the watermark passes its end.
        one_pass: the plan's :class:`OnePass` form, if it has one.
        clock_closes_windows: the processing-time clock closes windows: rows it closed them for
            are late, judged against the clock.
        clock_marks_replayed_late: tumbling or sliding processing-time windows: a replayed batch's rows
            whose windows the clock already closed are late
            (:func:`windowing.spark.plans.processing_time_plan.replayed_late`).
        reads_buffers: the plan keeps elements in the buffers table (the sliding count window).
        takes_trigger: the plan reads the trigger's parameters (``TriggerPlan.trigger``).
        takes_count: the plan reads the CountTrigger's count (``TriggerPlan.count``).
        rules: the trigger's rule set on the trigger plans (a
            :class:`windowing.spark.plans.trigger_rules.TriggerRules` subclass), else None.
    """
    name: str
    run: Callable[[PlanInputs], Any]
    state_rows: Callable[[BatchRange, TriggerPlan], StateRows]
    state_fields: Callable[[], list[T.StructField]] = _no_fields
    state_layout: str | None = None
    elements: Elements = PER_WINDOW
    fires_at_end: bool = False
    one_pass: OnePass | None = None
    clock_closes_windows: bool = False
    clock_marks_replayed_late: bool = False
    reads_buffers: bool = False
    takes_trigger: bool = False
    takes_count: bool = False
    rules: type | None = None

    def fingerprint(self, spec: WindowSpec) -> str:
        """What progress records for ``spec`` on this plan."""
        if self.state_layout is None:
            return spec.fingerprint()
        return hashlib.sha256(f"{spec.fingerprint()}/{self.state_layout}".encode()).hexdigest()[:16]


# ------------------------------------------------------------ state rows
def _all_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return None


def _accepted_range(r: BatchRange, first_end_after: int = 1) -> list[tuple[int, int]]:
    if r.min_accepted_ts is None:
        return []
    return [(r.min_accepted_ts + first_end_after, r.max_accepted_ts + r.longest_window_ms)]


def _watermark_ranges(r: BatchRange) -> list[tuple[int, int]]:
    """Windows whose end the watermark crosses in ``(wm0, wm1]`` and whose cleanup time falls there."""
    if r.wm_end_ms <= r.wm_start_ms:
        return []
    lateness = r.allowed_lateness_ms
    return [(r.wm_start_ms + 2, r.wm_end_ms + 1), (r.wm_start_ms - lateness + 2, r.wm_end_ms - lateness + 1)]


def _time_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """Time windows: an accepted element may fall in them (end within ``(min_ts, max_ts + size]``), the
    watermark crosses their end, their cleanup time comes, or (trigger plans) a timer comes due."""
    due = plan.rules.due_timers(r.wm_end_ms, r.clock) if plan.rules is not None else None
    return _accepted_range(r) + _watermark_ranges(r), due


def _session_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """Event-time sessions an element window may touch or bridge (end at or after the smallest
    accepted timestamp), whose end the watermark crosses or whose cleanup comes."""
    ranges = [] if r.min_accepted_ts is None else [(r.min_accepted_ts, MAX_TIMESTAMP_MS)]
    return ranges + _watermark_ranges(r), None


def _session_trigger_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """The sessions :func:`_session_rows` takes, and those with a timer that comes due."""
    ranges, _ = _session_rows(r, plan)
    return ranges, plan.rules.due_timers(r.wm_end_ms, r.clock)


def _processing_time_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    """Processing-time windows the batch's rows fall in, and those whose end the clock passes."""
    return state_end_ranges(r.times) + _accepted_range(r), None


def _processing_trigger_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return (ptp.relevant_end_ranges(plan.rules, r.times, r.min_accepted_ts, r.max_accepted_ts, r.longest_window_ms),
            plan.rules.due_timers(r.wm_end_ms, r.clock))


def _processing_session_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return ptsp.relevant_end_ranges(r.times, r.min_accepted_ts), None


def _processing_session_trigger_rows(r: BatchRange, plan: TriggerPlan) -> StateRows:
    return (ptp.session_relevant_end_ranges(plan.rules, r.times, r.min_accepted_ts),
            plan.rules.due_timers(r.wm_end_ms, r.clock))


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


TIME = Plan(TIME_PLAN, _time_plan, _time_rows, elements=SLICES, fires_at_end=True,
            one_pass=OnePass(closing_time_plan, SLICES, observes_input=True))
TIME_NEVER = Plan(TIME_PLAN, _time_plan, _time_rows, elements=SLICES)
GLOBAL_NEVER = Plan(TIME_PLAN, _time_plan, _all_rows, elements=SLICES)
COUNT = Plan(COUNT_PLAN, _count_plan, _time_rows, takes_count=True)
GLOBAL_COUNT = Plan(COUNT_PLAN, _count_plan, _all_rows, takes_count=True)
SLIDING_COUNT = Plan(EVICTING_COUNT_PLAN, _evicting_count_plan, _all_rows, reads_buffers=True, takes_count=True)
SESSION = Plan(SESSION_PLAN, _session_plan, _session_rows, _session_fields, elements=SESSION_ELEMENTS,
               fires_at_end=True, one_pass=OnePass(lambda ctx, elements, observation: closing_session_plan(ctx, elements),
                                 PER_WINDOW))
# A first batch that ends the input closes every processing-time window too (the clock goes to +infinity),
# and none of its rows is late (each row's windows end after its own processing time): the one-pass form.
PROCESSING_TIME = Plan(PROCESSING_TIME_PLAN, _processing_time_plan, _processing_time_rows, elements=SLICES,
                       one_pass=OnePass(closing_time_plan, SLICES, observes_input=True), clock_closes_windows=True,
                       clock_marks_replayed_late=True)
PROCESSING_TIME_SESSION = Plan(ptsp.PROCESSING_TIME_SESSION_PLAN, _processing_session_plan, _processing_session_rows,
                               _session_fields, ptsp.STATE_LAYOUT, SESSION_ELEMENTS, fires_at_end=True,
                               clock_closes_windows=True)

def _on_time_windows(name: str, rules: type, rows=_time_rows) -> Plan:
    """A trigger rule set on event-time tumbling/sliding windows (``rows=_all_rows``: on global windows)."""
    return Plan(name, _trigger_plan, rows, _trigger_fields, tp.STATE_LAYOUT, takes_trigger=True, rules=rules)


def _on_sessions(name: str, rules: type) -> Plan:
    """A trigger rule set on event-time sessions (merging around its phases)."""
    return Plan(f"session_{name}", _session_trigger_plan, _session_trigger_rows, _session_trigger_fields,
                stp.STATE_LAYOUT, SESSION_ELEMENTS, takes_trigger=True, rules=rules)


def _on_processing_time_windows(name: str, rules: type) -> Plan:
    """A trigger rule set on processing-time tumbling/sliding windows (the clock closes them)."""
    return Plan(f"processing_time_{name}", _processing_trigger_plan, _processing_trigger_rows, _trigger_fields,
                ptp.STATE_LAYOUT, clock_closes_windows=True, clock_marks_replayed_late=True, takes_trigger=True,
                rules=rules)


def _on_processing_time_sessions(name: str, rules: type) -> Plan:
    """A trigger rule set on processing-time sessions."""
    return Plan(f"processing_time_session_{name}", _processing_session_trigger_plan, _processing_session_trigger_rows,
                _session_trigger_fields, ptp.STATE_LAYOUT, SESSION_ELEMENTS, clock_closes_windows=True,
                takes_trigger=True, rules=rules)


_F, _R = WindowFamily, TriggerRule
_TIMER_RULE_SETS = {
    _R.EARLY_LATE: ("early_late", tp.EarlyLateRules),
    _R.CONTINUOUS_EVENT_TIME: ("continuous_event_time", tp.ContinuousEventTimeRules),
    _R.PROCESSING_TIME: ("processing_time_trigger", tp.ProcessingTimeRules),
    _R.CONTINUOUS_PROCESSING_TIME: ("continuous_processing_time", tp.ContinuousProcessingTimeRules),
    _R.DELTA: ("delta", tp.DeltaRules),
}
"""The trigger rules with timers and trigger state that time and global windows both run: plan name, rule set."""

PLANS: dict[tuple[WindowFamily, TriggerRule], Plan] = {
    (_F.TIME, _R.EVENT_TIME): TIME,
    (_F.TIME, _R.NEVER): TIME_NEVER,
    (_F.TIME, _R.COUNT): COUNT,
    **{(_F.TIME, rule): _on_time_windows(name, rules) for rule, (name, rules) in _TIMER_RULE_SETS.items()},

    (_F.GLOBAL, _R.NEVER): GLOBAL_NEVER,
    (_F.GLOBAL, _R.COUNT): GLOBAL_COUNT,
    (_F.GLOBAL, _R.SLIDING_COUNT): SLIDING_COUNT,
    # On the global window (max_ts Long.MAX) the event-time trigger is the early/late trigger with
    # neither early nor late firings: it fires only once the watermark is at +infinity (a flush),
    # and after that on every element, always ON_TIME, never final.
    (_F.GLOBAL, _R.EVENT_TIME): _on_time_windows("early_late", tp.EarlyLateRules, _all_rows),
    **{(_F.GLOBAL, rule): _on_time_windows(name, rules, _all_rows) for rule, (name, rules) in _TIMER_RULE_SETS.items()},

    # (a DeltaTrigger cannot merge: the spec refuses it on sessions)
    (_F.SESSION, _R.EVENT_TIME): SESSION,
    (_F.SESSION, _R.NEVER): replace(SESSION, fires_at_end=False, one_pass=None),
    (_F.SESSION, _R.EARLY_LATE): _on_sessions("early_late", tp.EarlyLateRules),
    (_F.SESSION, _R.CONTINUOUS_EVENT_TIME): _on_sessions("continuous_event_time", tp.ContinuousEventTimeRules),
    (_F.SESSION, _R.PROCESSING_TIME): _on_sessions("processing_time_trigger", tp.ProcessingTimeRules),
    (_F.SESSION, _R.CONTINUOUS_PROCESSING_TIME): _on_sessions("continuous_processing_time",
                                                              tp.ContinuousProcessingTimeRules),
    (_F.SESSION, _R.COUNT): _on_sessions("count", tp.CountRules),

    # The plain EventTimeTrigger on processing-time windows is the early/late rule set without early
    # or late firings (its timer at max_ts fires when the watermark reaches it).
    (_F.PROCESSING_TIME, _R.PROCESSING_TIME): PROCESSING_TIME,
    (_F.PROCESSING_TIME, _R.COUNT): _on_processing_time_windows("count", tp.CountRules),
    (_F.PROCESSING_TIME, _R.CONTINUOUS_PROCESSING_TIME): _on_processing_time_windows(
        "continuous", tp.ContinuousProcessingTimeRules),
    (_F.PROCESSING_TIME, _R.DELTA): _on_processing_time_windows("delta", tp.DeltaRules),
    (_F.PROCESSING_TIME, _R.EVENT_TIME): _on_processing_time_windows("event_time", tp.EarlyLateRules),
    (_F.PROCESSING_TIME, _R.EARLY_LATE): _on_processing_time_windows("early_late", tp.EarlyLateRules),
    (_F.PROCESSING_TIME, _R.CONTINUOUS_EVENT_TIME): _on_processing_time_windows(
        "continuous_event_time", tp.ContinuousEventTimeRules),

    (_F.PROCESSING_TIME_SESSION, _R.PROCESSING_TIME): PROCESSING_TIME_SESSION,
    (_F.PROCESSING_TIME_SESSION, _R.COUNT): _on_processing_time_sessions("count", tp.CountRules),
    (_F.PROCESSING_TIME_SESSION, _R.CONTINUOUS_PROCESSING_TIME): _on_processing_time_sessions(
        "continuous", tp.ContinuousProcessingTimeRules),
    (_F.PROCESSING_TIME_SESSION, _R.EVENT_TIME): _on_processing_time_sessions("event_time", tp.EarlyLateRules),
    (_F.PROCESSING_TIME_SESSION, _R.EARLY_LATE): _on_processing_time_sessions("early_late", tp.EarlyLateRules),
    (_F.PROCESSING_TIME_SESSION, _R.CONTINUOUS_EVENT_TIME): _on_processing_time_sessions(
        "continuous_event_time", tp.ContinuousEventTimeRules),
}
"""(window family, trigger rule) -> the plan: the one place that decides which specs run as a
DataFrame plan. A key not here runs on the per-key path (:func:`unplanned_features` says why)."""

PLAN_NAMES = frozenset(plan.name for plan in PLANS.values())


_FAMILIES = {TumblingEventTimeWindows: WindowFamily.TIME, SlidingEventTimeWindows: WindowFamily.TIME,
             CumulativeEventTimeWindows: WindowFamily.TIME,
             GlobalWindows: WindowFamily.GLOBAL, EventTimeSessionWindows: WindowFamily.SESSION,
             TumblingProcessingTimeWindows: WindowFamily.PROCESSING_TIME,
             SlidingProcessingTimeWindows: WindowFamily.PROCESSING_TIME,
             ProcessingTimeSessionWindows: WindowFamily.PROCESSING_TIME_SESSION}
"""Built-in assigner class -> its window family."""


def window_family(assigner) -> WindowFamily | None:
    """The family of a built-in assigner (its class, or the nearest built-in base class of it), else None."""
    return next((_FAMILIES[c] for c in type(assigner).__mro__ if c in _FAMILIES), None)


_RULES = {EventTimeTrigger: TriggerRule.EVENT_TIME, NeverTrigger: TriggerRule.NEVER, CountTrigger: TriggerRule.COUNT,
          EarlyLateEventTimeTrigger: TriggerRule.EARLY_LATE,
          ContinuousEventTimeTrigger: TriggerRule.CONTINUOUS_EVENT_TIME,
          ProcessingTimeTrigger: TriggerRule.PROCESSING_TIME,
          ContinuousProcessingTimeTrigger: TriggerRule.CONTINUOUS_PROCESSING_TIME}


def trigger_rule(trigger) -> TriggerRule | None:
    """The rule of a (non-purging) built-in trigger, else None.

    Exact types only: a user subclass is a user trigger; a ``DeltaTrigger`` with a user delta
    function is user code.
    """
    if type(trigger) is DeltaTrigger:
        return TriggerRule.DELTA if type(trigger.delta_fn) is AbsoluteDifference else None
    return _RULES.get(type(trigger))


def _is_sliding_count(rule: TriggerRule | None, purge: bool, evictor) -> bool:
    """The only evictor a plan keeps: the sliding count window's (a ``CountEvictor`` before the
    function, with a non-purging ``CountTrigger``)."""
    return (rule is TriggerRule.COUNT and not purge and isinstance(evictor, CountEvictor)
            and not evictor.do_evict_after)


def supported() -> str:
    """The (family, rule) pairs that have a plan, for messages."""
    by_family: dict[WindowFamily, list[str]] = {}
    for family, rule in PLANS:
        by_family.setdefault(family, []).append(rule.value)
    return "; ".join(f"{family.value}: {', '.join(rules)}" for family, rules in by_family.items())


def _plan_key(spec: WindowSpec) -> tuple[WindowFamily | None, TriggerRule | None, bool]:
    """The :data:`PLANS` key of ``spec`` (either part None when not built in) and whether it purges."""
    trigger, purge = spec.trigger, False
    if isinstance(trigger, PurgingTrigger):
        trigger, purge = trigger.nested, True
    rule = trigger_rule(trigger)
    if spec.evictor is not None:
        rule = TriggerRule.SLIDING_COUNT if _is_sliding_count(rule, purge, spec.evictor) else None
    return window_family(spec.assigner), rule, purge


def plan_for(spec: WindowSpec) -> TriggerPlan:
    """The DataFrame plan of ``spec``, chosen once: :data:`PLANS` by window family and trigger rule.

    Raises:
        NotImplementedError: when no plan covers the spec, naming what is not covered.
    """
    gaps = unplanned_features(spec)
    if gaps:
        raise NotImplementedError(f"no DataFrame plan for {', '.join(gaps)}")
    family, rule, purge = _plan_key(spec)
    plan = PLANS[(family, rule)]
    trigger = spec.trigger.nested if purge else spec.trigger
    return TriggerPlan(plan.name, count=trigger.count if plan.takes_count else None,
                       fires_at_end=plan.fires_at_end, purge=purge,
                       evictor_size=spec.evictor.max_count if rule is TriggerRule.SLIDING_COUNT else None,
                       trigger=trigger if plan.takes_trigger else None, rules=plan.rules, definition=plan)


_WHERE = {WindowFamily.TIME: "", WindowFamily.GLOBAL: "", WindowFamily.SESSION: " on session windows",
          WindowFamily.PROCESSING_TIME: " on processing-time windows",
          WindowFamily.PROCESSING_TIME_SESSION: " on processing-time session windows"}
"""How a refusal names the window family of a trigger it has no plan for."""
_LISTS_RULES = frozenset({WindowFamily.PROCESSING_TIME, WindowFamily.PROCESSING_TIME_SESSION})
"""Families whose refusal of a trigger lists the triggers their plans take (their own differ most
from the event-time families')."""
_SESSIONS = frozenset({WindowFamily.SESSION, WindowFamily.PROCESSING_TIME_SESSION})


def _rules_of(family: WindowFamily) -> str:
    names = [rule.value for f, rule in PLANS if f is family]
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def unplanned_features(spec: WindowSpec) -> tuple[str, ...]:
    """The features of ``spec`` that no DataFrame plan covers (they run on the per-key path).

    Derived from :data:`PLANS`: the spec's window family and trigger rule (and evictor) have no entry.
    """
    found = []
    trigger = spec.trigger.nested if isinstance(spec.trigger, PurgingTrigger) else spec.trigger
    family, rule, purge = _plan_key(spec)
    trigger_alone = trigger_rule(trigger)
    if family is None:
        found.append(f"assigner {type(spec.assigner).__name__}")
    if trigger_alone is None or (family is not None and (family, trigger_alone) not in PLANS):
        where = _WHERE.get(family, "")
        if type(trigger) is DeltaTrigger and trigger_alone is None:
            found.append(f"trigger {trigger!r}{where} (its delta function {type(trigger.delta_fn).__name__} is "
                         f"user code; only the built-in AbsoluteDifference has a plan)")
        elif family in _LISTS_RULES:
            found.append(f"trigger {trigger!r}{where} (their plans take {_rules_of(family)})")
        else:
            found.append(f"trigger {trigger!r}{where}")
    if spec.evictor is not None and (rule is None or (family is not None and (family, rule) not in PLANS)):
        if family in _SESSIONS:
            found.append(f"evictor on session windows {spec.evictor!r}")
        else:
            found.append(f"evictor {spec.evictor!r} (a plan keeps an evictor only as the sliding count window: "
                         f"GlobalWindows, a non-purging CountTrigger(slide) and CountEvictor(size) before the "
                         f"function)")
    if spec.process_function is not None:
        found.append("process window functions")
    return tuple(dict.fromkeys(found))
