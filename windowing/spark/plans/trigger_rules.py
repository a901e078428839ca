"""DataFrame plans for the built-in triggers with timers and per-window trigger state.

Each built-in trigger rule is one :class:`TriggerRules` subclass, whose
methods are the trigger's part of each phase below:
:class:`EarlyLateRules` (:class:`EarlyLateEventTimeTrigger`, and the plain
:class:`EventTimeTrigger` on global windows: neither early nor late firings,
only the end-of-window firing, on a flush), :class:`ContinuousEventTimeRules`,
:class:`ProcessingTimeRules`, :class:`ContinuousProcessingTimeRules`,
:class:`DeltaRules` (``DeltaTrigger`` with the built-in ``AbsoluteDifference``:
its firings come from a fold, :mod:`windowing.spark.plans.delta_trigger_rule`, and go
through the count-firing code below; the remembered value is kept in
:data:`TIMER`) and :class:`CountRules` (the session plans' CountTrigger). The
plan registry (:mod:`windowing.spark.plans.registry`) says which rule set runs
on which window family: here on tumbling and sliding event-time windows and on
``GlobalWindows`` (keyed or window_all; optionally in ``PurgingTrigger``, i.e.
both accumulation modes); the session and processing-time trigger plans run
the same phases.

The reference model (``windowing.core.reference``) runs one batch of one
window in three phases; the plan computes each phase's outcome per window
with column expressions instead of replaying timers:

A. before the rows, when the batch brings a later processing time ``pt``:
   processing-time timers at or below ``pt - 1`` fire (one time-driven pane
   at most, watermark ``wm0``);
B. the rows in (event time, sequence) order: count firings (exact, every n:
   numbered per window after the counter kept in state, as the count plan
   does) and timer registrations;
C. after the rows (clock ``c1``, watermark ``wm1``): due event-time timers,
   then due processing-time timers; at most one time-driven pane per window
   (several firings in one phase see the same contents, the last one names
   the timing), then cleanup at ``max_ts + L``.

A global window is one constant window per key (null start and end in the
state and the panes) whose max_ts is Long.MAX, as in Flink: its max_ts
conditions are Python booleans (true only at +infinity, i.e. on a flush), it
is never late nor cleaned up (no pane is final) and, as the reference model
says, every firing of it is ON_TIME. So an early/late trigger fires its
end-of-window part, and a ``ProcessingTimeTrigger`` its timer at max_ts, only
on a flush; a ``ContinuousEventTimeTrigger`` fires at each interval boundary
the watermark passes, for as long as the stream runs.

Trigger state lives in the ``windows`` state table: the early count in
``trigger_count``, plus :data:`LATE_COUNT` (late firings' counter) and
:data:`TIMER` (the pending early-firing or next continuous timer). The
processing-time clock is kept in the ``progress`` table's
``processing_time_ms`` (the clock after the batch, monotonic).
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.records import EARLY, LATE, ON_TIME
from windowing.core.time import MAX_TIMESTAMP_MS, floor_mod, clamp_ms as _clamp
from windowing.spark.plans.aggregates import partial_exprs, running_exprs
from windowing.spark.plans import delta_trigger_rule
from windowing.spark.plans.base import PlanOutput
from windowing.spark.input.columns import END_BUCKET, SEQ, TS, WE, long_lit

LATE_COUNT, TIMER = "late_count", "timer_ms"
STATE_LAYOUT = "trigger-state-v1"
"""Salt of the state fingerprint of specs on these plans (their state table has the extra columns)."""


def trigger_state_fields() -> list[T.StructField]:
    """The columns a spec on these plans has in its ``windows`` table beyond the time plan's."""
    return [T.StructField(LATE_COUNT, T.LongType(), True), T.StructField(TIMER, T.LongType(), True)]


def _boundary_after(now_ms: int, interval_ms: int) -> int | None:
    """The first multiple of ``interval_ms`` strictly after ``now_ms`` (None at or past int64's end)."""
    nxt = now_ms - floor_mod(now_ms, interval_ms) + interval_ms
    return nxt if nxt < MAX_TIMESTAMP_MS else None


def _timer_at(value: int | None) -> int | None:
    """A timer time registered by the model (``None`` when at or past +infinity: never registered)."""
    return value if value is not None and value < MAX_TIMESTAMP_MS else None


def _opt_lit(value: int | None) -> Column:
    return F.lit(None).cast("long") if value is None else long_lit(value)


@dataclass(frozen=True)
class BatchClock:
    """The processing-time clock of one batch, as the reference model moves it.

    Attributes:
        before_ms: the clock after the previous batch (``MIN_TIMESTAMP_MS`` at first).
        pre_rows_ms: timers at or below it fire before the rows (``pt - 1``), or None
            when the batch brings no later processing time (or is a flush).
        arrival_ms: the clock while the rows are processed.
        after_ms: the clock after the rows (``+infinity`` on a flush).
    """

    before_ms: int
    pre_rows_ms: int | None
    arrival_ms: int
    after_ms: int

    @classmethod
    def of(cls, times) -> "BatchClock":
        """The clock of a batch's :class:`windowing.spark.input.batch_time.BatchTime` (the model's clock)."""
        below = times.early_phase_below_ms
        return cls(times.clock_before_ms, None if below is None else below - 1, times.arrival_ms, times.clock_end_ms)

    @property
    def at_rows_ms(self) -> int:
        """The clock after the timers before the rows: a processing-time window whose ``max_ts`` is at
        or below it was cleaned before the rows (:attr:`windowing.spark.input.batch_time.BatchTime.clock_at_rows_ms`)."""
        return self.before_ms if self.pre_rows_ms is None else max(self.before_ms, self.pre_rows_ms)

    def __post_init__(self) -> None:
        if not (self.before_ms <= self.arrival_ms <= self.after_ms):
            raise ValueError(f"clock must not move back: before {self.before_ms}, arrival {self.arrival_ms}, "
                             f"after {self.after_ms}")


def _merge(ctx, left_prefix: str, right_prefix: str) -> list[Column]:
    """Null-aware merge of two accumulator column sets, aliased to the accumulator names."""
    return [p.merge(F.col(f"{left_prefix}{p.column}"), F.col(f"{right_prefix}{p.column}")).alias(p.column)
            for agg in ctx.compiled for p in agg.parts]


class TriggerRules:
    """A trigger's rules as column expressions over one window's row, for one batch.

    One subclass per built-in trigger rule; the plan registry chooses it once per
    spec (``TriggerPlan.rules``) and each batch makes one with its context and clock.
    The phases (see the module docstring) ask it what the trigger does: the
    subclass overrides the phases its trigger takes part in (the defaults: no
    timer, nothing fires). ``max_ts`` conditions are written on the window end
    with Python-clamped literals, so nothing overflows int64 when a watermark or
    the clock is at either end of the range.
    """

    fires_at_window_end = False
    """The trigger registers an event-time timer at ``max_ts`` (its end-of-window firing is ON_TIME,
    or LATE on a late window), so the watermark passing a window's end makes its state relevant."""
    resets_early_count = False
    """A time-driven firing restarts the early count (the early/late trigger's counter)."""
    one_counter = False
    """One counter for every element, early or late (CountTrigger), instead of an early and a late one."""

    def __init__(self, ctx, plan, clock: BatchClock, processing_time_windows: bool = False):
        self.ctx, self.trigger, self.clock, self.purge = ctx, plan.trigger, clock, plan.purge
        # Processing-time windows end by the processing-time clock: cleaned when it reaches max_ts
        # (the cleanup timer is a processing-time timer, ordered with the trigger's own, after the
        # event-time timers of the same phase), their late rows were left out before the plan, and
        # a firing is EARLY while max_ts is ahead of the clock, else ON_TIME (never LATE): the
        # model's rules for them. The event-time rule sets (early/late, the plain EventTimeTrigger
        # among them, and continuous event time) keep their timers in event time; the early-firing
        # timer is a processing-time timer that loses to the cleanup when it lies after max_ts
        # (:meth:`before_cleanup`).
        self.processing_time_windows = processing_time_windows
        # The global window (null start/end) has max_ts = Long.MAX: a constant, so its
        # conditions are decided on the driver; its firings are all ON_TIME (the model's rule).
        self.is_global = ctx.geometry.never_ends
        self.early_n: int | None = None
        self.late_n: int | None = None
        self.early_interval: int | None = None
        self.interval: int | None = getattr(plan.trigger, "interval_ms", None)
        # DeltaTrigger: firings at the positions a fold over the sorted elements finds, grouped
        # like count firings; the remembered value lives in the TIMER column
        self.delta = None

    # ---------------------------------------------------------------- the trigger's phases
    def pre_rows_fire(self, below_ms: int) -> Column:
        """Phase A: the window's processing-time timer at or below ``below_ms`` fires."""
        return F.lit(False)

    def pre_rows_pane_fire(self, fire: Column) -> Column:
        """Phase A: a fired timer emits the window's contents."""
        return fire

    def timer_after_pre_rows(self, fire: Column, below_ms: int) -> Column:
        """Phase A: the pending timer after the phase."""
        return F.col(TIMER)

    def timer_after_rows(self) -> Column:
        """Phase B: the timer registrations of the rows (on the joined per-window row)."""
        return F.lit(None).cast("long")

    def after_rows_firings(self, late: Column, end_due: Column, cleaned: Column,
                           timer_b: Column) -> tuple[Column, Column, Column]:
        """Phase C: ``(end of window, event-time timer, processing-time timer)`` firings."""
        no = F.lit(False)
        return no, no, no

    def timer_after_firings(self, end_due: Column, end_fire: Column, nf_fire: Column, proc_fire: Column,
                            timer_b: Column) -> Column:
        """Phase C: the pending timer after the batch."""
        return F.lit(None).cast("long")

    @classmethod
    def due_timers(cls, wm_end_ms: int, clock: BatchClock) -> Column | None:
        """State rows a batch must read because a timer of theirs comes due (beyond the rows the
        window-end ranges select), or None."""
        return None

    # ---------------------------------------------------------------- shared conditions
    def pre_rows_timing(self) -> Column:
        """Timing of a phase-A (processing-time, before the rows) firing: against the old watermark
        (processing-time windows: the clock in that phase)."""
        if self.processing_time_windows:
            return self._by_clock(self.clock.pre_rows_ms)
        return self.early_or_late(self.ctx.wm_start_ms)

    def element_timing(self) -> Column:
        """Timing of a firing by an element (phase B): against the watermark at the start of the
        batch (processing-time windows: the clock while the rows arrive)."""
        if self.processing_time_windows:
            return self._by_clock(self.clock.arrival_ms)
        return self.early_or_late(self.ctx.wm_start_ms)

    def after_rows_timing(self) -> Column:
        """Timing of a timer firing after the rows (phase C) of the triggers without an end-of-window
        rule: against the new watermark (processing-time windows: the clock after the rows)."""
        if self.processing_time_windows:
            return self._by_clock(self.clock.after_ms)
        return self.early_or_late(self.ctx.wm_end_ms)

    def _by_clock(self, now_ms: int | None) -> Column:
        """EARLY while max_ts is ahead of the processing-time clock ``now_ms``, else ON_TIME."""
        if now_ms is None:   # no such phase this batch: nothing fires in it
            return F.lit(ON_TIME)
        return F.when(self.above(now_ms), F.lit(EARLY)).otherwise(F.lit(ON_TIME))

    def cleaned(self) -> Column:
        """The window is cleaned up in this batch: its cleanup time ``max_ts + L`` at or below the
        new watermark, or (processing-time windows) its ``max_ts`` at or below the clock after the
        rows (a window the phase before the rows cleans is among them: no row reaches it)."""
        if self.processing_time_windows:
            return F.coalesce(self.at_or_below(self.clock.after_ms), F.lit(False))
        return self.ctx.cleaned()

    def early_or_late(self, wm: int) -> Column:
        """EARLY while max_ts is ahead of ``wm``, else LATE; ON_TIME on a global window."""
        if self.is_global:
            return F.lit(ON_TIME)
        return F.when(self.above(wm), F.lit(EARLY)).otherwise(F.lit(LATE))

    # max_ts = end - 1 against a constant
    def above(self, value: int) -> Column:
        if self.is_global:
            return F.lit(MAX_TIMESTAMP_MS > value)
        return F.col(WE) > long_lit(_clamp(value + 1))

    def at_or_below(self, value: int) -> Column:
        if self.is_global:
            return F.lit(MAX_TIMESTAMP_MS <= value)
        return F.col(WE) <= long_lit(_clamp(value + 1))

    def max_ts(self) -> Column:
        """The window's max timestamp: ``end - 1``, or Long.MAX for the global window (null end)."""
        return long_lit(MAX_TIMESTAMP_MS) if self.is_global else F.col(WE) - 1

    @property
    def has_count_rule(self) -> bool:
        """Elements fire the window (count firings, or delta firings)."""
        return self.early_n is not None or self.late_n is not None or self.delta is not None

    def late_window(self) -> Column:
        """The window's end was behind the watermark at the start of the batch (its elements are late).

        On processing-time windows this is only the trigger's view (an event-time timer at max_ts
        already fired): their late rows (windows the clock closed before the rows) never reach
        the plan (:meth:`closed_before_rows`).
        """
        return self.at_or_below(self.ctx.wm_start_ms)

    def closed_before_rows(self) -> Column:
        """Processing-time windows the clock cleaned before the rows (``max_ts`` at or below the clock
        then): gone with their timers, whatever the watermark does after the rows."""
        if not self.processing_time_windows:
            return F.lit(False)
        return self.at_or_below(self.clock.at_rows_ms)

    def before_cleanup(self, timer: Column) -> Column:
        """A processing-time timer at ``timer`` fires before the window is gone: on processing-time
        windows the clock's cleanup timer at ``max_ts`` fires in time order with the trigger's own
        (an early-firing timer at ``max_ts`` is that same timer: it fires, then the window is
        cleaned), so a timer after ``max_ts`` never fires. Event-time windows: always true."""
        if not self.processing_time_windows:
            return F.lit(True)
        return F.coalesce(timer <= self.max_ts(), F.lit(False))

    def capped(self, at: int | None) -> Column:
        """A timer at ``at`` capped at the window's max timestamp (null when ``at`` is never reached)."""
        return F.when(F.lit(at is not None), F.least(_opt_lit(at), self.max_ts())).otherwise(F.lit(None).cast("long"))


def _due_by_clock(clock: BatchClock) -> Column:
    return F.coalesce(F.col(TIMER) <= long_lit(clock.after_ms), F.lit(False))


class EarlyLateRules(TriggerRules):
    """:class:`EarlyLateEventTimeTrigger`: early firings every N elements and/or every T of processing
    time, the end-of-window firing, late firings every N late elements. The plain
    :class:`EventTimeTrigger` is this rule set with neither early nor late firings."""

    fires_at_window_end = True
    resets_early_count = True

    def __init__(self, ctx, plan, clock: BatchClock, processing_time_windows: bool = False):
        super().__init__(ctx, plan, clock, processing_time_windows)
        t = plan.trigger
        self.early_n = getattr(t, "early_every_n", None)
        self.late_n = getattr(t, "late_every_n", None)
        self.early_interval = getattr(t, "early_interval_ms", None)

    def pre_rows_fire(self, below_ms: int) -> Column:
        timer = F.col(TIMER)
        return F.coalesce(timer <= long_lit(below_ms), F.lit(False)) & self.before_cleanup(timer)

    def pre_rows_pane_fire(self, fire: Column) -> Column:
        # on_processing_time: CONTINUE (timer cleared) once the window's end is behind the watermark
        return fire & self.above(self.ctx.wm_start_ms)

    def timer_after_pre_rows(self, fire: Column, below_ms: int) -> Column:
        return F.when(fire, F.lit(None).cast("long")).otherwise(F.col(TIMER))

    def timer_after_rows(self) -> Column:
        none = F.lit(None).cast("long")
        if self.early_interval is None:
            return none
        m, k, timer_a = F.col("__m"), F.col("__k"), F.col("__timer_A")
        at_arrival = _opt_lit(_timer_at(self.clock.arrival_ms + self.early_interval))
        if self.early_n is None:
            fresh = F.coalesce(timer_a, at_arrival)
        else:
            # a count firing restarts the timer; an element after the last firing sets it again
            remainder = F.col("__c0") + m - k * F.col("__n")
            fresh = F.when(k > 0, F.when(remainder > 0, at_arrival).otherwise(none)) \
                .otherwise(F.coalesce(timer_a, at_arrival))
        return F.when(~self.late_window() & (m > 0), fresh).otherwise(timer_a)

    def after_rows_firings(self, late, end_due, cleaned, timer_b):
        m, no = F.col("__m"), F.lit(False)
        end_fire = end_due & (~late | F.lit(self.late_n is None) & (m > 0)) & ~self.closed_before_rows()
        proc_fire = (~end_due & F.coalesce(timer_b <= long_lit(self.clock.after_ms), no)
                     & self.before_cleanup(timer_b))
        return end_fire, no, proc_fire

    def timer_after_firings(self, end_due, end_fire, nf_fire, proc_fire, timer_b):
        return F.when(end_fire | proc_fire, F.lit(None).cast("long")).otherwise(timer_b)

    @classmethod
    def due_timers(cls, wm_end_ms: int, clock: BatchClock) -> Column | None:
        return _due_by_clock(clock)


class ContinuousEventTimeRules(TriggerRules):
    """:class:`ContinuousEventTimeTrigger`: a firing at each interval boundary the watermark passes,
    and at the window's end."""

    fires_at_window_end = True

    def timer_after_rows(self) -> Column:
        m, timer_a, none = F.col("__m"), F.col("__timer_A"), F.lit(None).cast("long")
        interval = self.interval
        start = F.col("__min_ts") - F.pmod(F.col("__min_ts"), long_lit(interval))
        boundary = F.when(start < long_lit(MAX_TIMESTAMP_MS - interval), start + long_lit(interval))
        first = F.least(boundary, self.max_ts())   # null boundary: no timer (least skips nulls: guard)
        first = F.when(boundary.isNull(), none).otherwise(first)
        return F.when(~self.late_window() & (m > 0), F.coalesce(timer_a, first)).otherwise(timer_a)

    def after_rows_firings(self, late, end_due, cleaned, timer_b):
        # (processing-time windows: the clock's cleanup before the rows took the event-time timers along)
        m, no = F.col("__m"), F.lit(False)
        end_fire = end_due & (~late | (m > 0)) & ~self.closed_before_rows()
        nf_fire = ~end_due & F.coalesce(timer_b <= long_lit(self.ctx.wm_end_ms), no) & ~self.closed_before_rows()
        return end_fire, nf_fire, no

    def timer_after_firings(self, end_due, end_fire, nf_fire, proc_fire, timer_b):
        return F.when(end_due, F.lit(None).cast("long")) \
            .when(nf_fire, self.capped(_boundary_after(self.ctx.wm_end_ms, self.interval))).otherwise(timer_b)

    @classmethod
    def due_timers(cls, wm_end_ms: int, clock: BatchClock) -> Column | None:
        return F.coalesce(F.col(TIMER) <= long_lit(wm_end_ms), F.lit(False))


class ProcessingTimeRules(TriggerRules):
    """:class:`ProcessingTimeTrigger`: every window registers a processing-time timer at its ``max_ts``."""

    def pre_rows_fire(self, below_ms: int) -> Column:
        # Every window in state registered a timer at its max_ts; those above the old clock are pending.
        return self.above(self.clock.before_ms) & self.at_or_below(below_ms)

    def after_rows_firings(self, late, end_due, cleaned, timer_b):
        clock, no = self.clock, F.lit(False)
        pending_from = clock.pre_rows_ms if clock.pre_rows_ms is not None else clock.before_ms
        registered = (F.col("__m") > 0) | (F.col("__in_state") & self.above(pending_from))
        return no, no, ~cleaned & self.at_or_below(clock.after_ms) & registered

    @classmethod
    def due_timers(cls, wm_end_ms: int, clock: BatchClock) -> Column | None:
        return (F.col(WE) > long_lit(_clamp(clock.before_ms + 1))) & (F.col(WE) <= long_lit(_clamp(clock.after_ms + 1)))


class ContinuousProcessingTimeRules(TriggerRules):
    """:class:`ContinuousProcessingTimeTrigger`: a firing at each interval boundary the clock passes."""

    def pre_rows_fire(self, below_ms: int) -> Column:
        return F.coalesce(F.col(TIMER) <= long_lit(below_ms), F.lit(False))

    def timer_after_pre_rows(self, fire: Column, below_ms: int) -> Column:
        # the next boundary after the clock, capped at max_ts; if that cap is due too it fires in
        # the same phase (same pane) and registers nothing more
        return F.when(~fire, F.col(TIMER)).when(self.at_or_below(below_ms), F.lit(None).cast("long")) \
            .otherwise(self.capped(_boundary_after(below_ms, self.interval)))

    def timer_after_rows(self) -> Column:
        m, timer_a = F.col("__m"), F.col("__timer_A")
        first = self.capped(_boundary_after(self.clock.arrival_ms, self.interval))
        return F.when(m > 0, F.coalesce(timer_a, first)).otherwise(timer_a)

    def after_rows_firings(self, late, end_due, cleaned, timer_b):
        # On event-time windows the watermark's cleanup comes first (event-time timers fire before
        # processing-time ones); a processing-time window's cleanup timer is at max_ts, at or after
        # its last continuous timer, so those fire first.
        no = F.lit(False)
        alive = F.lit(True) if self.processing_time_windows else ~cleaned
        return no, no, alive & F.coalesce(timer_b <= long_lit(self.clock.after_ms), no)

    def timer_after_firings(self, end_due, end_fire, nf_fire, proc_fire, timer_b):
        c1 = self.clock.after_ms
        return F.when(~proc_fire, timer_b).when(self.at_or_below(c1), F.lit(None).cast("long")) \
            .otherwise(self.capped(_boundary_after(c1, self.interval)))

    @classmethod
    def due_timers(cls, wm_end_ms: int, clock: BatchClock) -> Column | None:
        return _due_by_clock(clock)


class DeltaRules(TriggerRules):
    """:class:`DeltaTrigger` with the built-in ``AbsoluteDifference``: firings where a fold over the
    window's sorted elements finds them (:mod:`windowing.spark.plans.delta_trigger_rule`); the remembered
    value is kept in :data:`TIMER`."""

    def __init__(self, ctx, plan, clock: BatchClock, processing_time_windows: bool = False):
        super().__init__(ctx, plan, clock, processing_time_windows)
        self.delta = plan.trigger

    def timer_after_rows(self) -> Column:
        return F.when(F.col("__m") > 0, F.col(delta_trigger_rule.REMEMBERED)).otherwise(F.col("__timer_A"))

    def timer_after_firings(self, end_due, end_fire, nf_fire, proc_fire, timer_b):
        return timer_b   # the remembered value: no timer, it only changes with the rows


class CountRules(TriggerRules):
    """:class:`CountTrigger` as a rule of these phases (the session plans use it; time windows have
    the count plan): one counter for every element, early or late."""

    one_counter = True

    def __init__(self, ctx, plan, clock: BatchClock, processing_time_windows: bool = False):
        super().__init__(ctx, plan, clock, processing_time_windows)
        self.early_n = self.late_n = plan.trigger.count


def _state_after_pre_rows_phase(rules: TriggerRules, state: DataFrame, carry: tuple[str, ...] = ()) -> DataFrame:
    """Phase A: processing-time timers below the batch's processing time fire before its rows.

    Adds ``__a_fire`` (a timer fired), ``__a_pane`` (with contents: a pane),
    the state after the phase (``__acc_A__*``, ``__cnt_A``, ``__ec_A``,
    ``__timer_A``) and keeps the state before it as ``__s0__*``; ``carry`` names
    state columns passed through unchanged (the session plans' ``emitted`` and ``supersedes``).
    """
    ctx, clock = rules.ctx, rules.clock
    accs = ctx.acc_columns
    a = clock.pre_rows_ms
    timer = F.col(TIMER)
    if a is None:   # the batch brings no later processing time: nothing fires before the rows
        fire = pane_fire = F.lit(False)
        timer_a = timer
    else:
        fire = rules.pre_rows_fire(a)
        pane_fire = rules.pre_rows_pane_fire(fire)
        timer_a = rules.timer_after_pre_rows(fire, a)
    purge = F.lit(rules.purge)
    has_contents = F.coalesce(F.col("contents_count") > 0, F.lit(False))
    return state.select(
        *[F.col(c) for c in ctx.window_keys],
        *[F.col(c).alias(f"__s0__{c}") for c in accs],
        *[F.when(fire & purge, F.lit(None)).otherwise(F.col(c)).alias(f"__acc_A__{c}") for c in accs],
        F.col("contents_count").cast("long").alias("__cnt0"),
        F.when(fire & purge, F.lit(0)).otherwise(F.col("contents_count")).cast("long").alias("__cnt_A"),
        F.col("pane_index").cast("long").alias("__p0"),
        (F.when(fire & F.lit(rules.resets_early_count), F.lit(0)).otherwise(F.coalesce(F.col("trigger_count"), F.lit(0)))
         .cast("long").alias("__ec_A")),
        F.coalesce(F.col(LATE_COUNT), F.lit(0)).cast("long").alias("__lc0"),
        timer_a.cast("long").alias("__timer_A"),
        fire.alias("__a_fire"),
        (pane_fire & has_contents).alias("__a_pane"),
        F.lit(True).alias("__in_state"),
        *[F.col(c) for c in carry])


def _element_groups(rules: TriggerRules, elements: DataFrame, after_a: DataFrame) -> DataFrame:
    """Phase B's count firings: the batch's elements per window in groups that end at a firing.

    Group ``__g`` of an element is ``floor((c0 + i - 1) / n)`` for its rank
    ``i`` in (event time, sequence) order, ``c0`` the counter before the batch
    and ``n`` the early count (late count for a window already behind the
    watermark); groups ``0 .. __k - 1`` end with a firing. Without a count
    rule every element is in group 0 and ``__k`` is 0. One row per
    (window, group) with partial accumulators, running merges (``__run__*``),
    the window's element count ``__m``, its first element time ``__min_ts``.
    """
    ctx = rules.ctx
    keys = ctx.window_keys
    delta_columns: list[Column] = []
    if rules.delta is not None:
        numbered = delta_trigger_rule.numbered_elements(ctx, rules.delta, elements, after_a)
        delta_columns = [F.first(c).alias(c) for c in delta_trigger_rule.WINDOW_COLUMNS]
    elif rules.has_count_rule:
        counters = after_a.select(*keys, "__ec_A", "__lc0")
        cond = ctx.join_condition("e", "s")
        late = F.col("e.__late") & F.lit(not rules.one_counter)
        counter = (F.when(late, F.coalesce(F.col("s.__lc0"), F.lit(0)))
                   .otherwise(F.coalesce(F.col("s.__ec_A"), F.lit(0))).cast("long"))
        n = F.when(late, _opt_lit(rules.late_n)).otherwise(_opt_lit(rules.early_n))
        # A merged session's counter is the sum of its parts' and may reach n without firing
        # (on_merge never fires): its next element fires, as from n - 1.
        counter = F.when(n.isNull(), counter).otherwise(F.least(counter, n - 1))
        numbered = (elements.withColumn("__late", rules.late_window()).alias("e")
                    .join(counters.alias("s"), cond, "left")
                    .select(*[F.col(f"e.{c}") for c in elements.columns], counter.alias("__c0"), n.alias("__n")))
        order = Window.partitionBy(*keys).orderBy(TS, SEQ)
        numbered = numbered.withColumn(
            "__g", F.when(F.col("__n").isNull(), F.lit(0))
            .otherwise(F.floor((F.col("__c0") + F.row_number().over(order) - 1) / F.col("__n"))).cast("long"))
    else:
        numbered = elements.select("*", F.lit(0).cast("long").alias("__c0"), F.lit(None).cast("long").alias("__n"),
                                   F.lit(0).cast("long").alias("__g"))
    groups = numbered.groupBy(*keys, "__g").agg(
        *partial_exprs(ctx.compiled), F.count(F.lit(1)).alias("__g_n"), F.first("__c0").alias("__c0"),
        F.first("__n").alias("__n"), F.min(TS).alias("__g_min_ts"), *delta_columns)
    per_window = Window.partitionBy(*keys)
    running = per_window.orderBy("__g").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    elements_in_window = F.sum("__g_n").over(per_window)
    # With a delta rule __k is the fold's firing count (a column of delta_columns).
    firings = [] if rules.delta is not None else [
        F.when(F.col("__n").isNull(), F.lit(0))
        .otherwise(F.floor((F.col("__c0") + elements_in_window) / F.col("__n"))).cast("long").alias("__k")]
    return groups.select("*", elements_in_window.alias("__m"), F.max("__g").over(per_window).alias("__g_max"),
                         F.min("__g_min_ts").over(per_window).alias("__min_ts"),
                         *running_exprs(ctx.compiled, running), *firings)


def trigger_plan(ctx, plan, elements: DataFrame, state: DataFrame, clock: BatchClock,
                 processing_time_windows: bool = False):
    """Panes and state changes of one batch for the triggers of this module.

    Args:
        ctx: the batch's :class:`windowing.spark.plans.base.PlanContext`.
        plan: the :class:`windowing.spark.plans.base.TriggerPlan` (rules, trigger, purge).
        elements: accepted elements, one row per (element, live window).
        state: the state rows the batch can touch (with :func:`trigger_state_fields`).
        clock: the batch's processing-time clock.
        processing_time_windows: the windows are processing-time windows
            (:mod:`windowing.spark.plans.processing_time_trigger_plan`): the clock cleans them and names the
            timing; the output's ``cleaned`` then holds every window cleaned (opened and closed in
            this batch included).
    """

    rules = plan.rules(ctx, plan, clock, processing_time_windows)
    keys = ctx.window_keys
    after_a = _state_after_pre_rows_phase(rules, state)
    groups, j = rows_and_timers(rules, elements, after_a)

    last_is_a = (F.col("__k") == 0) & ~F.col("__c_pane")
    a_panes = pane_rows(ctx, j.where("__a_pane"), "__s0__", F.col("__p0"), rules.pre_rows_timing(),
                        F.col("__cleaned") & last_is_a, ctx.wm_start_ms)
    panes = a_panes.unionByName(time_driven_panes(rules, j))
    if rules.has_count_rule:
        panes = panes.unionByName(count_firing_panes(rules, groups, j))
    upserts = (j.where(~F.col("__cleaned") & ((F.col("__m") > 0) | F.col("__a_fire") | F.col("__c_fire")))
               .select(*keys, *state_after_batch(rules))
               .select(*ctx.state_columns(), LATE_COUNT, TIMER))
    deletes = j.where(F.col("__cleaned") & F.col("__in_state")).select(*keys, ctx.end_bucket().alias(END_BUCKET))
    return PlanOutput(panes, upserts, deletes, cached=[j, groups] if rules.has_count_rule else [j],
                      cleaned=j.where("__cleaned") if processing_time_windows else None)


def pane_rows(ctx, frame: DataFrame, accs_prefix: str, pane_index: Column, timing: Column, final: Column,
              wm: int, extra: dict[str, Column] | None = None) -> DataFrame:
    """Pane rows (the results table's columns, then ``extra`` by name) from accumulators named
    ``accs_prefix + column``."""
    extra = extra or {}
    return (frame.select(*ctx.window_keys, *[F.col(f"{accs_prefix}{c}").alias(c) for c in ctx.acc_columns],
                         pane_index.alias("pane_index"), timing.alias("timing"), final.alias("is_final"),
                         long_lit(wm).alias("watermark_ms"), *[e.alias(name) for name, e in extra.items()])
            .select(*ctx.pane_columns(), *ctx.pane_tail(), *list(extra)))


def time_driven_panes(rules: "TriggerRules", j: DataFrame, extra: dict[str, Column] | None = None) -> DataFrame:
    """Phase C's pane (at most one per window): the contents after the rows, the last firing's timing."""
    return pane_rows(rules.ctx, j.where("__c_pane"), "__acc_B__", F.col("__p_A") + F.col("__k"),
                     F.col("__c_timing"), F.col("__cleaned"), rules.ctx.wm_end_ms, extra)


def count_firing_panes(rules: "TriggerRules", groups: DataFrame, j: DataFrame, carry: tuple[str, ...] = (),
                       extra: dict[str, Column] | None = None) -> DataFrame:
    """Phase B's count firings: one pane per complete group of n elements (``__g < __k``).

    ``carry`` names per-window columns of ``j`` the ``extra`` pane columns read.
    """
    ctx = rules.ctx
    accs = ctx.acc_columns
    info = j.select(*ctx.window_keys, *[F.col(f"__acc_A__{c}") for c in accs], "__p_A", "__c_pane", "__cleaned",
                    *carry)
    fired = (groups.where(F.col("__g") < F.col("__k")).alias("b")
             .join(info.alias("s"), ctx.join_condition("b", "s"), "left")
             .select(*[F.col(f"b.{c}") for c in groups.columns],
                     *[F.col(f"s.__acc_A__{c}") for c in accs],
                     F.coalesce(F.col("s.__p_A"), F.lit(0)).alias("__p_A"),
                     F.coalesce(F.col("s.__c_pane"), F.lit(False)).alias("__c_pane"),
                     F.col("s.__cleaned"), *[F.col(f"s.{c}") for c in carry]))
    if rules.purge:
        b_accs = [F.when(F.col("__g") == 0, merged).otherwise(F.col(c)).alias(f"__pane__{c}")
                  for merged, c in zip(_merge(ctx, "__acc_A__", ""), accs)]
    else:
        b_accs = [a.alias(f"__pane__{c}") for a, c in zip(_merge(ctx, "__acc_A__", "__run__"), accs)]
    fired = fired.select("*", *b_accs)
    b_final = F.col("__cleaned") & (F.col("__g") == F.col("__k") - 1) & ~F.col("__c_pane")
    return pane_rows(ctx, fired, "__pane__", F.col("__p_A") + F.col("__g"),
                     rules.element_timing(), b_final, ctx.wm_start_ms,
                     extra)


def state_after_batch(rules: "TriggerRules") -> list[Column]:
    """A window's state columns after the batch (on a row of :func:`rows_and_timers`' frame)."""
    accs = rules.ctx.acc_columns
    purged = F.col("__c_fire") & F.lit(rules.purge)
    return [*[F.when(purged, F.lit(None)).otherwise(F.col(f"__acc_B__{c}")).alias(c) for c in accs],
            F.when(purged, F.lit(0)).otherwise(F.col("__cnt_B")).alias("contents_count"),
            F.col("__ec_C").alias("trigger_count"),
            (F.col("__p_A") + F.col("__k") + F.col("__c_pane").cast("long")).alias("pane_index"),
            F.lit(0).alias("elements_total"),
            F.col("__lc_B").cast("long").alias(LATE_COUNT), F.col("__timer_C").cast("long").alias(TIMER)]


def rows_and_timers(rules: "TriggerRules", elements: DataFrame, after_a: DataFrame,
                    carry: tuple[str, ...] = ()) -> tuple[DataFrame, DataFrame]:
    """Phases B (the rows: count firings, timer registrations) and C (due timers, cleanup) per window.

    Args:
        rules: the trigger's rules for this batch.
        elements: accepted elements with their window (``window_keys``), ``__ts_ms``, ``__seq``.
        after_a: one row per window in state after phase A (:func:`_state_after_pre_rows_phase`
            columns; ``__s0__*`` optional), keyed by ``window_keys``.
        carry: further columns of ``after_a`` to keep on the result.

    Returns:
        ``(groups, j)``: the element groups of :func:`_element_groups` (persisted when a count rule
        fires) and one persisted row per window with the phases' outcome: ``__acc_B__*`` /
        ``__cnt_B`` (contents after the rows), ``__ec_B``, ``__lc_B``, ``__timer_B``, ``__c_fire``,
        ``__c_pane``, ``__c_timing``, ``__timer_C``, ``__ec_C``, ``__cleaned``, ``__p_A`` (pane
        index after phase A) and the counters ``__m``, ``__k``.
    """
    ctx, plan_purge = rules.ctx, rules.purge
    keys, accs = ctx.window_keys, ctx.acc_columns
    wm1 = ctx.wm_end_ms

    groups = _element_groups(rules, elements, after_a)
    if rules.has_count_rule:
        groups = groups.persist()   # read twice: the window summary and the count firings' panes
    delta_carry = [delta_trigger_rule.REMEMBERED, "__last_n"] if rules.delta is not None else []
    summary = groups.where(F.col("__g") == F.col("__g_max")).select(
        *keys, "__m", "__k", "__c0", "__n", "__g_max", "__min_ts",
        *([F.col(delta_trigger_rule.REMEMBERED), F.col("__g_n").alias("__last_n")] if delta_carry else []),
        *[F.col(f"__run__{c}") for c in accs], *[F.col(c).alias(f"__last__{c}") for c in accs])

    j = after_a.alias("s").join(summary.alias("b"), ctx.join_condition("s", "b"), "full_outer")
    j = j.select(*[F.coalesce(F.col(f"s.{c}"), F.col(f"b.{c}")).alias(c) for c in keys],
                 *[F.col(f"s.{c}") for c in after_a.columns if c not in keys],
                 *[F.col(f"b.{c}") for c in summary.columns if c not in keys])
    j = j.select(
        *keys, *[F.col(c) for c in after_a.columns if c.startswith("__s0__")],
        *[F.col(f"__acc_A__{c}") for c in accs],
        *[F.col(f"__run__{c}") for c in accs], *[F.col(f"__last__{c}") for c in accs],
        F.coalesce(F.col("__cnt_A"), F.lit(0)).alias("__cnt_A"),
        F.coalesce(F.col("__p0"), F.lit(0)).alias("__p0"),
        F.coalesce(F.col("__ec_A"), F.lit(0)).alias("__ec_A"),
        F.coalesce(F.col("__lc0"), F.lit(0)).alias("__lc0"),
        F.col("__timer_A"),
        F.coalesce(F.col("__a_fire"), F.lit(False)).alias("__a_fire"),
        F.coalesce(F.col("__a_pane"), F.lit(False)).alias("__a_pane"),
        F.coalesce(F.col("__in_state"), F.lit(False)).alias("__in_state"),
        F.coalesce(F.col("__m"), F.lit(0)).alias("__m"), F.coalesce(F.col("__k"), F.lit(0)).alias("__k"),
        F.coalesce(F.col("__c0"), F.lit(0)).alias("__c0"), F.col("__n"), F.col("__g_max"), F.col("__min_ts"),
        *[F.col(c) for c in delta_carry], *[F.col(c) for c in carry])

    m, k, n, c0 = F.col("__m"), F.col("__k"), F.col("__n"), F.col("__c0")
    late = rules.late_window()
    # contents after the rows (phase B)
    if plan_purge:
        remainder_group = F.col("__g_max") == k
        acc_b = [F.when(k == 0, merged).when(remainder_group, F.col(f"__last__{c}")).otherwise(F.lit(None)).alias(c)
                 for merged, c in zip(_merge(ctx, "__acc_A__", "__run__"), accs)]
        if rules.delta is not None:   # the elements after the last firing: the last group, if it did not fire
            cnt_b = F.when(k == 0, F.col("__cnt_A") + m).when(remainder_group, F.col("__last_n")).otherwise(F.lit(0))
        else:
            cnt_b = F.when(k == 0, F.col("__cnt_A") + m).otherwise(c0 + m - k * n)
    else:
        acc_b = _merge(ctx, "__acc_A__", "__run__")
        cnt_b = F.col("__cnt_A") + m
    j = j.select("*", *[a.alias(f"__acc_B__{c}") for a, c in zip(acc_b, accs)], cnt_b.alias("__cnt_B"))
    # counters after the rows
    count_rem = F.pmod(c0 + m, F.coalesce(n, F.lit(1)))
    if rules.one_counter:
        ec_b = F.when((m > 0) & n.isNotNull(), count_rem).otherwise(F.col("__ec_A"))
        lc_b = F.col("__lc0")
    else:
        ec_b = F.when(~late & (m > 0) & n.isNotNull(), count_rem).otherwise(F.col("__ec_A"))
        lc_b = F.when(late & (m > 0) & n.isNotNull(), count_rem).otherwise(F.col("__lc0"))
    j = j.select("*", ec_b.alias("__ec_B"), lc_b.alias("__lc_B"), rules.timer_after_rows().alias("__timer_B"))

    # phase C: event-time timers, then processing-time timers, then cleanup
    timer_b = F.col("__timer_B")
    end_due = rules.at_or_below(wm1)
    cleaned = rules.cleaned()
    end_fire, nf_fire, proc_fire = rules.after_rows_firings(late, end_due, cleaned, timer_b)
    c_fire = end_fire | nf_fire | proc_fire
    if rules.is_global:
        c_timing = F.lit(ON_TIME)
    elif rules.fires_at_window_end and not rules.processing_time_windows:
        c_timing = (F.when(end_fire, F.when(late, F.lit(LATE)).otherwise(F.lit(ON_TIME))).otherwise(F.lit(EARLY)))
    else:   # (processing-time windows: an end-of-window firing as any other, by the clock)
        c_timing = rules.after_rows_timing()
    timer_c = rules.timer_after_firings(end_due, end_fire, nf_fire, proc_fire, timer_b)
    ec_c = F.when((end_fire | proc_fire) & F.lit(rules.resets_early_count), F.lit(0)).otherwise(F.col("__ec_B"))
    j = j.select("*", c_fire.alias("__c_fire"), (c_fire & (F.col("__cnt_B") > 0)).alias("__c_pane"),
                 c_timing.alias("__c_timing"), timer_c.alias("__timer_C"), ec_c.alias("__ec_C"),
                 cleaned.alias("__cleaned"),
                 (F.col("__p0") + F.col("__a_pane").cast("long")).alias("__p_A")).persist()
    return groups, j
