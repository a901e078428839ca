"""Session windows as DataFrame plans: merging by gaps and islands, state in Delta.

Event-time session windows (static gap, or a gap column) with the
EventTimeTrigger (optionally purging), for the built-in and user aggregates.
The semantics are the reference model's (``windowing.core.reference``):

1. Every accepted element opens ``[ts, ts + gap)`` (``prepare.classify``).
2. Merging: windows sorted per key by start form *islands*: a window starts
   a new island when its start is above the running maximum of the previous
   windows' ends (windows that only touch, ``start == end``, merge, as
   Flink's ``TimeWindow.intersects``). An island is one merged session: its
   cover is ``[min start, max end)``. The batch's element windows merge
   among themselves first (*batch sessions*: one row per key and session
   with its element count and partial accumulators), then the batch
   sessions and the key's relevant open sessions from state merge the same
   way. Merging is transitive, so this is the islands of all the windows at
   once: ALL of the batch's windows merge first, and the result does not
   depend on the order of the elements.
3. Lateness, after merging, against the watermark at the start of the batch:
   an island made of this batch's windows only whose cleanup time
   ``end - 1 + L`` is at or below it is late; its elements go to the late
   output. An island that holds an open session is never late.
4. Accumulators: the state sessions of an island are merged in window order
   (``AggregateFunction.merge``), then the batch's elements are added (their
   partial aggregate merged last), as the model adds elements after merging.
   The batch sessions of one island cover disjoint time ranges, so rolling
   their partials up in start order adds the elements in event-time order.
5. Firing (EventTimeTrigger): ON_TIME when the watermark crosses the merged
   window's ``max_ts`` in this batch; LATE (one pane) when the merged window's
   ``max_ts`` was already behind the watermark at the start of the batch and
   the batch added elements to it (a late element within allowed lateness,
   possibly bridging sessions that had fired). Cleanup at ``max_ts + L``.
6. Pane index and ``supersedes``: a merged window continues from the highest
   pane index of its parts; its next pane lists the parts (and what they
   superseded in turn) that had emitted panes. The state keeps ``emitted``
   and ``supersedes`` per session, so this survives across batches. A session
   that merely received elements inside its bounds is the same window (its
   flags stay).

State rows are the time plan's (``windows`` table, keyed by key, window and
end bucket) plus two columns, ``emitted`` and ``supersedes``; merged-away
sessions are deleted in the same MERGE that writes their cover.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql.window import WindowSpec
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.records import LATE, ON_TIME
from windowing.core.time import clamp_ms as _clamp
from windowing.spark.plans.aggregates import partial_exprs, running_exprs
from windowing.spark.input.columns import ACCEPTED, EMITTED, SEQ, SLICE, STATUS, SUPERSEDES, WE, WS, long_lit

SESSION_PLAN = "session"
SUPERSEDES_TYPE = T.ArrayType(T.StructType([T.StructField(WS, T.LongType(), True),
                                            T.StructField(WE, T.LongType(), True)]), True)
"""``array<struct<window_start_ms: bigint, window_end_ms: bigint>>``: the model's ``Pane.supersedes``."""

_OLD = "__old"          # the row is a state session (else a batch element)
_ISLAND = "__island"    # island (merged session) number within its key
_OLD_ACC = "__old__"    # prefix of the state sessions' merged accumulators
_BATCH_ACC = "__batch__"  # prefix of a batch session's partial accumulators
_ELEMENTS = "__elements"  # how many of the batch's elements a batch session holds


def session_state_fields() -> list[T.StructField]:
    """The columns a merging spec's ``windows`` state table has beyond the time plan's."""
    return [T.StructField(EMITTED, T.BooleanType(), True), T.StructField(SUPERSEDES, SUPERSEDES_TYPE, True)]


def _empty_supersedes() -> Column:
    return F.array().cast(SUPERSEDES_TYPE)


@dataclass(frozen=True)
class SessionClock:
    """The time a session batch decides by: the watermark (event time) or the processing-time clock.

    Attributes:
        start_ms: lateness is judged against it: an island of this batch's windows only whose
            cleanup time ``end - 1 + lateness_ms`` is at or below it is late; a merged window
            whose ``max_ts`` is at or below it and that receives elements fires LATE.
        end_ms: a window fires when its ``max_ts`` is at or below it and is cleaned when its
            cleanup time is.
        lateness_ms: the allowed lateness (0 for processing time: cleanup at ``max_ts``).
    """

    start_ms: int
    end_ms: int
    lateness_ms: int

    def __post_init__(self) -> None:
        if self.end_ms < self.start_ms:
            raise ValueError(f"end_ms {self.end_ms} is below start_ms {self.start_ms}: the session clock "
                             f"never moves back")
        if self.lateness_ms < 0:
            raise ValueError(f"lateness_ms must be >= 0, got {self.lateness_ms}")


@dataclass
class SessionOutput:
    """What a session plan computed for one batch.

    ``late_spans``: the late islands' parts, as key and ``[window_start_ms, window_end_ms)``
    rows: an accepted element of the batch is late exactly when its own window lies in one of
    its key's spans. Lateness belongs to an island, and every element window inside a part of
    an island overlaps it, so this names the late elements without naming rows: the executor
    reads their input columns from its own frame (:meth:`late_rows`).
    """

    panes: DataFrame
    upserts: DataFrame            # complete state rows to insert or replace
    deletes: DataFrame            # window keys + end_bucket of state rows to delete
    late_spans: DataFrame         # see above
    late_count: int               # how many late elements
    cleaned_count: int            # sessions cleaned up in this batch
    cached: list = field(default_factory=list)
    state_write_counts_cleaned = False
    """The sessions cleaned are counted by the plan (a merge deletes sessions that are not cleaned)."""

    def account(self, metrics, late_output: bool) -> None:
        """The plan's part of the batch's metrics: the elements it found late (after merging) move from
        accepted to late (or dropped late); the sessions it cleaned."""
        metrics.accepted_rows -= self.late_count
        if late_output:
            metrics.late_rows += self.late_count
        else:
            metrics.dropped_late_rows += self.late_count
        metrics.windows_cleaned = self.cleaned_count

    def late_rows(self, whole: DataFrame, keys: list[str]) -> DataFrame:
        """The accepted rows of ``whole`` (the classified input, every column) whose own window lies in one of
        their key's late spans."""
        names = [f"__late_key{i}" for i in range(len(keys))]
        spans = self.late_spans.select(*[F.col(k).alias(n) for k, n in zip(keys, names)],
                                       F.col(WS).alias("__late_ws"), F.col(WE).alias("__late_we"))
        inside = (F.col(WS) >= F.col("__late_ws")) & (F.col(WE) <= F.col("__late_we"))
        for key, name in zip(keys, names):
            inside = inside & (F.col(key) == F.col(name))     # accepted rows have a key
        return whole.where(F.col(STATUS) == ACCEPTED).join(spans, inside, "left_semi")


def _islands(frame: DataFrame, keys: list[str]) -> DataFrame:
    """Number the islands (merged sessions) of each key: gaps and islands over the sorted windows."""
    order = Window.partitionBy(*keys).orderBy(WS, WE, *([_OLD, SEQ] if _OLD in frame.columns else []))
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    prev_end = F.max(WE).over(before)
    # Touching windows merge: only a start strictly above every earlier end opens an island.
    starts = (prev_end.isNull() | (F.col(WS) > prev_end)).cast("long")
    return frame.withColumn("__starts", starts).withColumn(_ISLAND, F.sum("__starts").over(upto)).drop("__starts")


def merged_islands(elements: DataFrame, old: DataFrame, keys: list[str], late_end_at_or_below: int,
                   extra: Callable[[WindowSpec], list[Column]], element_count: Column | None = None) -> DataFrame:
    """Every batch element (own window; or batch session, ``element_count`` telling how many elements
    each row stands for, default one) and open session (``old``) with its island's facts: the cover
    ``__isl_ws``/``__isl_we``, the number of sessions (``__n_old``) and elements (``__b_n``) in it, the
    bounds and ``emitted`` flag of its session when it has one (``__old_ws``, ``__old_we``,
    ``__old_emitted``), the windows already emitted (``__emitted_parts``) and superseded (``__sup_old``),
    whether it is late (``__late``: new windows only, cleanup behind ``late_end_at_or_below``), and
    ``extra(island)``: each plan's own facts over the island window."""
    united = _islands(elements.withColumn(_OLD, F.lit(False)).unionByName(old, allowMissingColumns=True), keys)
    island = (Window.partitionBy(*keys, _ISLAND).orderBy(WS, WE, _OLD, SEQ)
              .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
    is_old = F.col(_OLD)
    united = united.select(
        "*",
        F.min(WS).over(island).alias("__isl_ws"), F.max(WE).over(island).alias("__isl_we"),
        F.sum(is_old.cast("long")).over(island).alias("__n_old"),
        F.coalesce(F.sum(F.when(~is_old, F.lit(1) if element_count is None else element_count)).over(island),
                   F.lit(0)).cast("long").alias("__b_n"),
        F.max(F.when(is_old, F.col(WS))).over(island).alias("__old_ws"),
        F.max(F.when(is_old, F.col(WE))).over(island).alias("__old_we"),
        F.max(F.when(is_old, F.col(EMITTED).cast("int"))).over(island).alias("__old_emitted"),
        F.collect_list(F.when(is_old & F.col(EMITTED), F.struct(F.col(WS), F.col(WE)))).over(island)
        .alias("__emitted_parts"),
        F.flatten(F.collect_list(F.when(is_old, F.col(SUPERSEDES))).over(island)).alias("__sup_old"),
        *extra(island))
    late_island = (F.col("__n_old") == 0) & (F.col("__isl_we") <= long_lit(late_end_at_or_below))
    return united.withColumn("__late", late_island)


ISLAND_FACTS = ["__isl_ws", "__isl_we", "__n_old", "__old_ws", "__old_we", "__old_emitted", "__emitted_parts",
                "__sup_old"]
"""The island facts :func:`merged_islands` computes that an island's row keeps (with ``__b_n``, ``__late``)."""


def island_cover() -> tuple[Column, Column, Column, Column]:
    """An island row's cover ``(window_start_ms, window_end_ms)``, whether it is its one open session
    unchanged, and the windows its next pane supersedes: those superseded before and those emitted
    (other than the cover itself)."""
    ws, we = F.col("__isl_ws"), F.col("__isl_we")
    cover = F.struct(ws.alias(WS), we.alias(WE)).cast(SUPERSEDES_TYPE.elementType)
    unchanged = (F.col("__n_old") == 1) & (F.col("__old_ws") == ws) & (F.col("__old_we") == we)
    superseded = F.array_sort(F.array_distinct(F.concat(
        F.coalesce(F.col("__sup_old").cast(SUPERSEDES_TYPE), _empty_supersedes()),
        F.filter(F.coalesce(F.col("__emitted_parts").cast(SUPERSEDES_TYPE), _empty_supersedes()),
                 lambda w: w != cover))))
    return ws, we, F.coalesce(unchanged, F.lit(False)), superseded.cast(SUPERSEDES_TYPE)


def batch_sessions(ctx, numbered: DataFrame) -> DataFrame:
    """The batch's elements merged among themselves: one row per key and island of ``numbered`` (the
    elements with their island number, :func:`_islands`) with its cover, its element count
    (``__elements``), its partial accumulators (``__batch__<accumulator>``), ``SEQ`` the island's
    number within its key and ``SLICE`` its start (the batch sessions of one merged session cover
    disjoint time ranges: their start orders their rollup)."""
    keys = list(ctx.spec.key_columns)
    return (numbered.groupBy(*keys, _ISLAND)
            .agg(F.min(WS).alias(WS), F.max(WE).alias(WE), F.count(F.lit(1)).alias(_ELEMENTS),
                 *partial_exprs(ctx.compiled, prefix=_BATCH_ACC))
            .withColumnRenamed(_ISLAND, SEQ)
            .withColumn(SLICE, F.col(WS)))


def closing_session_plan(ctx, elements: DataFrame) -> DataFrame:
    """Panes of a first batch in which every session closes (watermark to +infinity).

    The one-pass form of :func:`session_plan` for empty state: one sort per
    key, islands, one aggregation; each merged session gives exactly one
    final ON_TIME pane with index 0 and supersedes nothing.
    """
    keys = list(ctx.spec.key_columns)
    islands = _islands(elements, keys)
    partials = islands.groupBy(*keys, _ISLAND).agg(F.min(WS).alias(WS), F.max(WE).alias(WE),
                                                   *partial_exprs(ctx.compiled))
    return (partials
            .withColumns({"pane_index": F.lit(0).cast("long"),
                          "timing": F.when(ctx.max_ts_above(ctx.wm_start_ms), F.lit(ON_TIME)).otherwise(F.lit(LATE)),
                          "is_final": F.lit(True), "watermark_ms": long_lit(ctx.wm_end_ms),
                          SUPERSEDES: _empty_supersedes()})
            .select(*ctx.pane_columns(), *ctx.pane_tail(), F.col(SUPERSEDES)))


def session_plan(ctx, plan, elements: DataFrame, state: DataFrame,
                 clock: SessionClock | None = None) -> SessionOutput:
    """Merge a batch's session windows with the relevant open sessions; fire, clean, write back.

    Args:
        ctx: the batch's :class:`~windowing.spark.plans.base.PlanContext`.
        plan: the spec's ``TriggerPlan`` (``fires_at_end``, ``purge``).
        elements: accepted rows with the key and aggregated columns, ``__ts_ms``,
            ``__seq`` and their own window ``[window_start_ms, window_end_ms)``.
        state: the state sessions the batch may touch (see the operator's
            ``_relevant_session_state``): key, window, accumulators,
            bookkeeping, ``emitted``, ``supersedes``.
        clock: the time lateness, firing and cleanup go by; default: the watermark at the
            start and end of the batch with the spec's allowed lateness. Processing-time
            sessions pass the processing-time clock (:mod:`windowing.spark.plans.processing_session_window_plan`).
            Panes record the batch's watermark (``ctx.wm_end_ms``) either way.
    """
    spec = ctx.spec
    keys = list(spec.key_columns)
    accs = ctx.acc_columns
    if clock is None:
        clock = SessionClock(ctx.wm_start_ms, ctx.wm_end_ms, spec.allowed_lateness_ms)
    wm0, wm1, lateness = clock.start_ms, clock.end_ms, clock.lateness_ms
    late_end_at_or_below = _clamp(wm0 - lateness + 1)      # cleanup end - 1 + L <= wm0
    cleaned_end_at_or_below = _clamp(wm1 - lateness + 1)   # cleanup end - 1 + L <= wm1

    old_rows = state.select(*keys, WS, WE, *accs, "contents_count", "pane_index", EMITTED, SUPERSEDES,
                            F.lit(True).alias(_OLD))
    # Island-wide facts on every batch session and open session (one more sort inside each key's
    # partition, no shuffle).
    united = merged_islands(batch_sessions(ctx, _islands(elements, keys)), old_rows, keys, late_end_at_or_below, lambda island: [
        F.coalesce(F.max("pane_index").over(island), F.lit(0)).cast("long").alias("__pi0"),
        F.coalesce(F.sum("contents_count").over(island), F.lit(0)).cast("long").alias("__contents0"),
        *running_exprs(ctx.compiled, island, prefix=_OLD_ACC)], element_count=F.col(_ELEMENTS)).persist()
    old = F.col(_OLD)

    island_facts = [*ISLAND_FACTS, "__b_n", "__pi0", "__contents0", "__late", *[_OLD_ACC + c for c in accs]]
    with_elements = (united.where(~old).groupBy(*keys, _ISLAND)
                     .agg(*[agg.form.rollup(agg.aggregate, _BATCH_ACC + c).alias(c)
                            for agg in ctx.compiled for c in agg.columns],
                          *[F.first(c).alias(c) for c in island_facts]))
    # Sessions the batch adds nothing to: they may still fire (watermark) or be cleaned.
    state_only = united.where(old & (F.col("__b_n") == 0)).select(*keys, _ISLAND, *island_facts)
    islands = with_elements.unionByName(state_only, allowMissingColumns=True)

    merged = [p.merge(F.col(_OLD_ACC + p.column), F.col(p.column)).alias(p.column)
              for agg in ctx.compiled for p in agg.parts]
    ws, we, unchanged, superseded = island_cover()
    j = islands.select(
        *keys, ws.alias(WS), we.alias(WE), *merged,
        (F.col("__contents0") + F.col("__b_n")).alias("contents_count"),
        "__b_n", "__pi0", "__late",
        unchanged.alias("__unchanged"),
        F.coalesce(F.col("__old_emitted") == 1, F.lit(False)).alias("__old_emitted"),
        superseded.alias(SUPERSEDES))
    if plan.fires_at_end:
        crossed = ctx.max_ts_above(wm0) & ctx.max_ts_at_or_below(wm1)
        late_elements = ctx.max_ts_at_or_below(wm0) & (F.col("__b_n") > 0)
        fire = ~F.col("__late") & (F.col("contents_count") > 0) & (crossed | late_elements)
    else:
        fire = F.lit(False)
    j = j.withColumns({"__fire": F.coalesce(fire, F.lit(False)),
                       "__cleaned": ~F.col("__late") & (F.col(WE) <= long_lit(cleaned_end_at_or_below))}).persist()

    panes = (j.where("__fire")
             .withColumns({"pane_index": F.col("__pi0"),
                           "timing": F.when(ctx.max_ts_above(wm0), F.lit(ON_TIME)).otherwise(F.lit(LATE)),
                           "is_final": F.col("__cleaned"), "watermark_ms": long_lit(ctx.wm_end_ms)})
             .select(*ctx.pane_columns(), *ctx.pane_tail(), F.col(SUPERSEDES)))
    purged = F.col("__fire") & F.lit(plan.purge)
    upserts = (j.where(~F.col("__late") & ~F.col("__cleaned") & ((F.col("__b_n") > 0) | F.col("__fire")))
               .select(*keys, WS, WE,
                       *[F.when(purged, F.lit(None)).otherwise(F.col(c)).alias(c) for c in accs],
                       F.when(purged, F.lit(0)).otherwise(F.col("contents_count")).alias("contents_count"),
                       F.lit(0).alias("trigger_count"),
                       (F.col("__pi0") + F.col("__fire").cast("long")).alias("pane_index"),
                       F.lit(0).alias("elements_total"),
                       (F.col("__fire") | (F.col("__unchanged") & F.col("__old_emitted"))).alias(EMITTED),
                       F.when(F.col("__fire"), _empty_supersedes()).otherwise(F.col(SUPERSEDES)).alias(SUPERSEDES))
               .select(*ctx.state_columns(), EMITTED, SUPERSEDES))
    # A state session goes when its island's cover differs from it (merged away or extended:
    # the cover is written as a new row) or when the cover is cleaned up.
    gone = (old & ((F.col(WS) != F.col("__isl_ws")) | (F.col(WE) != F.col("__isl_we"))
                   | (F.col("__isl_we") <= long_lit(cleaned_end_at_or_below))))
    deletes = united.where(gone).select(*ctx.window_keys, ctx.end_bucket().alias("end_bucket"))
    late = united.where(~old & F.col("__late")).select(*keys, WS, WE)     # the late batch sessions' covers
    counts = j.agg(F.coalesce(F.sum(F.when(F.col("__late"), F.col("__b_n"))), F.lit(0)).alias("late"),
                   F.coalesce(F.sum(F.col("__cleaned").cast("long")), F.lit(0)).alias("cleaned")).first()
    return SessionOutput(panes, upserts, deletes, late, int(counts["late"]), int(counts["cleaned"]),
                         cached=[united, j])
