"""What a join plan gets and returns for one batch (the operator owns reading, writing and committing).

A plan (:mod:`keyed_plan`, :mod:`window_plan`, :mod:`interval_plan`; chosen
once by :func:`windowing.spark.joins.plans.plan_for`) names its state tables,
and computes from the batch's valid tagged rows and its state (read as of
the versions the last committed batch recorded) the batch's results, late
rows, per-side accounting and state change sets. Its ``rows`` say what each
side's tagged rows carry (:meth:`~windowing.spark.joins.intake.SideSchemas.carried_rows`:
a projection's columns, or the whole row), in the batch and in its state; its
late rows come from the same rows carrying the whole input row (``whole_valid``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.core.joins.sides import SIDES, Side
from windowing.spark.joins.columns import ACCEPTED, DROPPED_LATE, LATE, PLAN_COUNTS, UNASSIGNED
from windowing.spark.joins.state_pins import TablePin


@dataclass(frozen=True)
class StateTable:
    """A state table of a plan: its name (the table's folder), schema, change-set keys, partition columns,
    and the columns whose file statistics a batch reads it by (``statistics``: its filters and deletes select
    rows by them; Delta collects no statistics on the others, which would cost every write and skip nothing)."""

    name: str
    schema: T.StructType
    keys: tuple[str, ...]
    statistics: tuple[str, ...]
    partition_by: tuple[str, ...] = ()


OBSERVED_ROWS = {side: f"{side.name}_rows" for side in SIDES}
"""The observed metric of a side's rows in the fired panes (:attr:`BatchContext.observation`)."""
OBSERVED_MAX_TS = {side: f"{side.name}_max_ts_ms" for side in SIDES}
"""The observed metric of a side's largest event time in the fired panes."""


def observed_sides(rows: dict[Side, Column], max_ts: dict[Side, Column]) -> list[Column]:
    """The observation's aggregates over fired panes: per side, ``rows`` summed (how many of the side's rows the
    observed row stands for; null: none) and ``max_ts`` maximized, under the names :data:`OBSERVED_ROWS` and
    :data:`OBSERVED_MAX_TS`."""
    return [*(F.coalesce(F.sum(rows[side]), F.lit(0)).alias(OBSERVED_ROWS[side]) for side in SIDES),
            *(F.max(max_ts[side]).alias(OBSERVED_MAX_TS[side]) for side in SIDES)]


@dataclass(frozen=True)
class BatchContext:
    """The batch-wide times of one batch.

    Attributes:
        batch_id: the batch.
        watermark_start_ms: the watermark at the start (lateness is judged against it).
        watermark_end_ms: after the batch's rows (every event-time timer at or below it fires).
        clock_before_ms: the processing-time clock before the batch.
        processing_time_ms: the batch's arrival time as given (None: none).
        clock_end_ms: the clock after the batch's rows (+infinity on a flush).
        flush: end of both inputs.
        has_rows: the batch has a valid row of either side (None: not known before the results are written,
            on a batch whose accounting they observe).
        state_empty: the state as read is the tables as created (no batch committed before this one).
        observation: set on a one-pass batch whose plan :attr:`observes_one_pass`: the plan observes on its
            results, per side, the rows of its fired panes and their largest event time
            (:data:`OBSERVED_ROWS`, :data:`OBSERVED_MAX_TS`), and the operator takes the batch's accounting
            from them when they are every input row (no pass over the input before the write).
    """

    batch_id: int
    watermark_start_ms: int
    watermark_end_ms: int
    clock_before_ms: int
    processing_time_ms: int | None
    clock_end_ms: int
    flush: bool
    has_rows: bool | None
    state_empty: bool = False
    observation: Observation | None = None

    @property
    def state_stays_empty(self) -> bool:
        """:func:`stays_empty` for this batch."""
        return stays_empty(self.flush, self.state_empty)

    def cached_if_reread(self, frame: DataFrame) -> DataFrame:
        """``frame`` cached when the batch writes state from it too (read twice: the outputs and the state's
        new rows); as it is when the state stays empty (read once)."""
        return frame if self.state_stays_empty else frame.cache()


def stays_empty(flush: bool, state_empty: bool) -> bool:
    """A batch that starts from empty state and ends the input (a one-pass backfill): a plan whose every row's
    state ends with its window or its horizon keeps nothing, so it has no state change to write and reads each
    of its rows once."""
    return flush and state_empty


@dataclass(frozen=True)
class KeyedChanges:
    """A state change set matched on the table's keys: rows flagged ``DELETE_FLAG`` delete their row, the
    others replace or insert it (a MERGE)."""

    rows: DataFrame

    def write(self, store, table: StateTable, batch_id: int, pin: TablePin, before: DataFrame,
              ends_input: bool) -> TablePin:
        """Write the change once for the batch; the table's pin after it."""
        return store.merge_state(table, self.rows, batch_id, pin)


@dataclass(frozen=True)
class ReplaceWhere:
    """A state change as a predicate and new rows: the rows matching ``delete_where`` (SQL on the table's
    columns) leave, ``inserts`` (none of which match it) come in, in one commit with no join against the
    table (for state whose rows leave by time: buffered rows of fired windows, expired rows)."""

    inserts: DataFrame
    delete_where: str

    def write(self, store, table: StateTable, batch_id: int, pin: TablePin, before: DataFrame,
              ends_input: bool) -> TablePin:
        """Write the change once for the batch, or log it (:mod:`windowing.spark.joins.state_pins`; ``before``:
        the state at ``pin``); the table's pin after it."""
        return store.replace_state(table, self.inserts, self.delete_where, batch_id, pin, before, ends_input)


@dataclass
class PlanOutput:
    """One batch's outputs: ``results`` in the plan's results schema, ``late`` in the late table's (only rows
    for the late table: none without ``side_output_late_data``), ``counts`` per side (the names of
    :data:`~windowing.spark.joins.columns.PLAN_COUNTS`; None for a plan with ``row_conditions``, whose counts
    follow from them: :func:`counts_of_conditions`), ``changes`` per state table (:class:`KeyedChanges` or
    :class:`ReplaceWhere`; a table left out has no change this batch), and the frames the plan may have cached
    (unpersisted after the commit)."""

    results: DataFrame
    late: DataFrame
    counts: dict[Side, dict[str, int]] | None
    changes: dict[str, KeyedChanges | ReplaceWhere]
    cached: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()


def counts_by_side(rows) -> dict[Side, dict[str, int]]:
    """Collected ``(side, accepted_rows, late_rows, dropped_late_rows, unassigned_rows)`` rows, summed per side."""
    counts = {side: dict.fromkeys(PLAN_COUNTS, 0) for side in SIDES}
    by_name = {side.name: side for side in SIDES}
    for row in rows:
        for name in PLAN_COUNTS:
            counts[by_name[row[0]]][name] += int(row[name] or 0)
    return counts


def counts_of_conditions(condition_rows: dict[str, int], late_output: bool) -> dict[str, int]:
    """A side's counts (:data:`~windowing.spark.joins.columns.PLAN_COUNTS`) from its valid rows per row condition
    of a plan (accepted, late, and for windows unassigned): late rows go to the late table with
    ``late_output``, else they are dropped."""
    late = condition_rows.get(LATE, 0)
    return {ACCEPTED: condition_rows.get(ACCEPTED, 0), LATE: late if late_output else 0,
            DROPPED_LATE: 0 if late_output else late, UNASSIGNED: condition_rows.get(UNASSIGNED, 0)}
