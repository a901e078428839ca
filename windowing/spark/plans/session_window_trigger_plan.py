"""Event-time session windows with the built-in triggers that have timers or counters.

Covers sessions (static gap or a gap column) with, optionally in
``PurgingTrigger``: :class:`EarlyLateEventTimeTrigger`,
:class:`ContinuousEventTimeTrigger`, :class:`ProcessingTimeTrigger`,
:class:`ContinuousProcessingTimeTrigger` and :class:`CountTrigger`. It is the
session plan's merging (:mod:`windowing.spark.plans.session_window_plan`) wrapped around
the trigger plans' phases (:mod:`windowing.spark.plans.trigger_rules`), in the
reference model's order:

A. before the rows: processing-time timers below the batch's processing time
   fire on the open sessions AS THEY ARE (nothing is merged yet);
M. merging: the batch's element windows and those sessions form islands
   (gaps and islands per key); an island is one merged session, its cover
   ``[min start, max end)``. Its trigger state is the model's ``on_merge``:
   the counters (early, late; CountTrigger's count) are the SUM of the
   parts', the pending timer (early-firing timer, next continuous firing) the
   EARLIEST of the parts'; accumulators merge in window order; the pane index
   continues from the highest of the parts; ``supersedes`` lists the parts
   that had emitted panes. An island of this batch's windows only whose
   cleanup time is behind the watermark at the start of the batch is late:
   its elements go to the late output;
B, C. the rows and the timers after them run on the islands exactly as on
   time windows (count firings numbered after the merged counter, timer
   registrations, due timers, cleanup at ``max_ts + L``).

The first pane a merged session emits names what it supersedes; its state
keeps ``emitted`` and ``supersedes`` (the session plan's columns) and the
trigger state (``trigger_count``, ``late_count``, ``timer_ms``). No Python
runs per row.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from windowing.spark.plans.aggregates import running_exprs
from windowing.spark.input.columns import EMITTED, END_BUCKET, SEQ, SUPERSEDES, TS, WE, WS, long_lit
from windowing.spark.input.prepare import count_each
from windowing.spark.plans.session_window_plan import (_ISLAND, _OLD, ISLAND_FACTS, SessionOutput, _empty_supersedes,
                                                      island_cover, merged_islands)
from windowing.spark.plans import trigger_rules as tp

STATE_LAYOUT = "session-trigger-state-v1"
"""Salt of the state fingerprint of specs on these plans (session columns plus trigger-state columns)."""



def _old_sessions_after_phase_a(rules, after_a: DataFrame) -> DataFrame:
    """The open sessions after phase A, as rows of the merge: accumulators under their own names,
    the pane index, emitted flag and supersedes after a phase-A pane."""
    ctx = rules.ctx
    a_pane = F.col("__a_pane")
    return after_a.select(
        *ctx.window_keys, *[F.col(f"__acc_A__{c}").alias(c) for c in ctx.acc_columns],
        "__cnt_A", (F.col("__p0") + a_pane.cast("long")).alias("__pA"), "__ec_A", "__lc0", "__timer_A", "__a_fire",
        (F.coalesce(F.col(EMITTED), F.lit(False)) | a_pane).alias(EMITTED),
        F.when(a_pane, _empty_supersedes()).otherwise(F.coalesce(F.col(SUPERSEDES), _empty_supersedes()))
        .alias(SUPERSEDES),
        F.lit(True).alias(_OLD))


def _merged(rules, elements: DataFrame, old: DataFrame, late_end_at_or_below: int) -> DataFrame:
    """Every element and open session with its island's merged facts, trigger state included (the
    triggers' ``on_merge``: counters add, the earliest pending timer wins, the pane index continues)."""
    ctx = rules.ctx
    return merged_islands(elements, old, list(ctx.spec.key_columns), late_end_at_or_below, lambda island: [
        F.coalesce(F.max("__pA").over(island), F.lit(0)).cast("long").alias("__i_p"),
        F.coalesce(F.sum("__cnt_A").over(island), F.lit(0)).cast("long").alias("__i_cnt"),
        F.coalesce(F.sum("__ec_A").over(island), F.lit(0)).cast("long").alias("__i_ec"),
        F.coalesce(F.sum("__lc0").over(island), F.lit(0)).cast("long").alias("__i_lc"),
        F.min("__timer_A").over(island).alias("__i_timer"),
        F.coalesce(F.max(F.col("__a_fire").cast("int")).over(island), F.lit(0)).alias("__i_a_fire"),
        *running_exprs(ctx.compiled, island, prefix="__i_acc__")])


def _island_state(rules, united: DataFrame) -> DataFrame:
    """One row per (non-late) island: its merged state in the columns of ``trigger_rules``' phase A."""
    ctx = rules.ctx
    keys = list(ctx.spec.key_columns)
    facts = [*ISLAND_FACTS, "__i_p", "__i_cnt", "__i_ec", "__i_lc", "__i_timer", "__i_a_fire",
             *[f"__i_acc__{c}" for c in ctx.acc_columns]]
    islands = united.where(~F.col("__late")).groupBy(*keys, _ISLAND).agg(*[F.first(c).alias(c) for c in facts])
    ws, we, unchanged, superseded = island_cover()
    return islands.select(
        *keys, ws.alias(WS), we.alias(WE),
        *[F.col(f"__i_acc__{c}").alias(f"__acc_A__{c}") for c in ctx.acc_columns],
        F.col("__i_cnt").alias("__cnt_A"), F.col("__i_p").alias("__p0"), F.col("__i_ec").alias("__ec_A"),
        F.col("__i_lc").alias("__lc0"), F.col("__i_timer").cast("long").alias("__timer_A"),
        (F.col("__i_a_fire") == 1).alias("__a_fire"), F.lit(False).alias("__a_pane"),
        (F.col("__n_old") > 0).alias("__in_state"),
        superseded.alias(SUPERSEDES),
        # An island that is one open session unchanged is that session: its emitted flag stays.
        (unchanged & F.coalesce(F.col("__old_emitted") == 1, F.lit(False)))
        .alias("__still_emitted"))


def session_trigger_plan(ctx, plan, elements: DataFrame, state: DataFrame, clock: "tp.BatchClock",
                         processing_time_windows: bool = False) -> SessionOutput:
    """Panes and state changes of one batch of sessions with a timer or count trigger.

    Args:
        ctx: the batch's :class:`~windowing.spark.plans.base.PlanContext`.
        plan: the spec's ``TriggerPlan`` (its trigger rules, trigger, purge).
        elements: accepted rows with the key and the columns the aggregates and triggers read,
            ``__ts_ms``, ``__seq`` and their own window ``[window_start_ms, window_end_ms)``.
        state: the state sessions the batch may touch (session and trigger-state columns).
        clock: the batch's processing-time clock.
        processing_time_windows: processing-time sessions
            (:mod:`windowing.spark.plans.processing_time_trigger_plan`): the processing-time clock takes the
            watermark's place. A session whose ``max_ts`` the clock reaches before the rows is
            cleaned then (after its phase-A firing, its event-time timers gone with it) and
            merges with nothing; an island of this batch's windows only whose ``max_ts`` is at
            or below that clock is late; a session is cleaned when the clock after the rows
            reaches its ``max_ts`` (after its event-time timers the watermark reached).
    """

    rules = plan.rules(ctx, plan, clock, processing_time_windows)
    keys = list(ctx.spec.key_columns)
    if processing_time_windows:
        late_end_at_or_below = tp._clamp(clock.at_rows_ms + 1)     # max_ts <= the clock before the rows
        cleaned_end_at_or_below = tp._clamp(clock.after_ms + 1)    # max_ts <= the clock after the rows
    else:
        wm0, wm1, lateness = ctx.wm_start_ms, ctx.wm_end_ms, ctx.spec.allowed_lateness_ms
        late_end_at_or_below = tp._clamp(wm0 - lateness + 1)      # cleanup end - 1 + L <= wm0
        cleaned_end_at_or_below = tp._clamp(wm1 - lateness + 1)   # cleanup end - 1 + L <= wm1

    # A: timers due before the rows, on the sessions as they are; processing-time sessions the
    # clock closed in that phase are cleaned there (only on event time is nothing cleaned before the rows)
    closed = (F.col(WE) <= long_lit(late_end_at_or_below)) if processing_time_windows else F.lit(False)
    after_a = (tp._state_after_pre_rows_phase(rules, state, carry=(EMITTED, SUPERSEDES))
               .withColumn("__closed_before_rows", closed).persist())
    # M: merging
    input_columns = [c for c in elements.columns if c not in (TS, SEQ, WS, WE)]
    merging = after_a.where(~F.col("__closed_before_rows"))
    united = _merged(rules, elements, _old_sessions_after_phase_a(rules, merging), late_end_at_or_below).persist()
    is_old = F.col(_OLD)
    island_elements = (united.where(~is_old & ~F.col("__late"))
                       .select(*keys, TS, SEQ, *[c for c in input_columns if c not in keys],
                               F.col("__isl_ws").alias(WS), F.col("__isl_we").alias(WE)))
    # B, C on the merged sessions
    groups, j = tp.rows_and_timers(rules, island_elements, _island_state(rules, united),
                                   carry=(SUPERSEDES, "__still_emitted"))

    # Panes. Phase A's belong to the sessions before merging; a merged session's first pane after
    # the merge (a count firing's group 0, else the time-driven one) names what it supersedes.
    k, c_pane = F.col("__k"), F.col("__c_pane")
    island_end = j.select(*ctx.window_keys, (F.col("__cleaned") & (k == 0) & ~c_pane).alias("__last_is_a"))
    a_rows = (after_a.where("__a_pane").alias("a")
              .join(island_end.alias("i"), ctx.join_condition("a", "i"), "left")
              .select("a.*", F.coalesce(F.col("i.__last_is_a"), F.col("a.__closed_before_rows"))
                      .alias("__last_is_a")))
    a_panes = tp.pane_rows(ctx, a_rows, "__s0__", F.col("__p0"), rules.pre_rows_timing(), F.col("__last_is_a"),
                           ctx.wm_start_ms,
                           {SUPERSEDES: F.coalesce(F.col(SUPERSEDES), _empty_supersedes())})
    sup = F.col(SUPERSEDES)
    panes = a_panes.unionByName(tp.time_driven_panes(
        rules, j, {SUPERSEDES: F.when(k == 0, sup).otherwise(_empty_supersedes())}))
    if rules.has_count_rule:
        panes = panes.unionByName(tp.count_firing_panes(
            rules, groups, j, carry=(SUPERSEDES,),
            extra={SUPERSEDES: F.when(F.col("__g") == 0, sup).otherwise(_empty_supersedes())}))

    emitted_now = (k > 0) | c_pane
    # A phase-A firing changes a session's state even when nothing else touches it this batch.
    changed = (F.col("__m") > 0) | F.col("__a_fire") | F.col("__c_fire")
    upserts = (j.where(~F.col("__cleaned") & changed)
               .select(*ctx.window_keys, *tp.state_after_batch(rules),
                       (emitted_now | F.col("__still_emitted")).alias(EMITTED),
                       F.when(emitted_now, _empty_supersedes()).otherwise(sup).alias(SUPERSEDES))
               .select(*ctx.state_columns(), tp.LATE_COUNT, tp.TIMER, EMITTED, SUPERSEDES))
    # An open session goes when its island's cover differs from it (merged away or extended: the
    # cover is written as a new row) or when the cover is cleaned up.
    gone = is_old & ((F.col(WS) != F.col("__isl_ws")) | (F.col(WE) != F.col("__isl_we"))
                     | (F.col("__isl_we") <= long_lit(cleaned_end_at_or_below)))
    deletes = united.where(gone).select(*ctx.window_keys, ctx.end_bucket().alias(END_BUCKET))
    late_elements = united.where(~is_old & F.col("__late"))
    to_count = {"late": late_elements, "cleaned": j.where(F.col("__cleaned"))}
    if processing_time_windows:
        closed_before_rows = after_a.where("__closed_before_rows")
        deletes = deletes.unionByName(closed_before_rows.select(*ctx.window_keys, ctx.end_bucket().alias(END_BUCKET)))
        to_count["closed"] = closed_before_rows
    counts = count_each(to_count)
    late = late_elements.select(*keys, WS, WE)          # each late element's own window
    late_count = counts["late"]
    cleaned_count = counts["cleaned"] + counts.get("closed", 0)
    cached = [after_a, united, j] + ([groups] if rules.has_count_rule else [])
    return SessionOutput(panes, upserts, deletes, late, late_count, cleaned_count, cached=cached)
