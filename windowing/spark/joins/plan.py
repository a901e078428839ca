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

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from windowing.core.joins.sides import SIDES, Side
from windowing.spark.joins.columns import PLAN_COUNTS
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
        has_rows: the batch has a valid row of either side.
        valid_rows: each side's valid (not quarantined) rows in the batch, from the intake's aggregate.
        state_empty: the state as read is the tables as created (no batch committed before this one).
        plan_rows: each side's valid rows per condition of the plan's ``row_conditions`` (counted with the
            intake's aggregate), when the plan has them.
    """

    batch_id: int
    watermark_start_ms: int
    watermark_end_ms: int
    clock_before_ms: int
    processing_time_ms: int | None
    clock_end_ms: int
    flush: bool
    has_rows: bool
    valid_rows: dict[Side, int] = field(default_factory=dict)
    state_empty: bool = False
    plan_rows: dict[Side, dict[str, int]] = field(default_factory=dict)

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
    :data:`~windowing.spark.joins.columns.PLAN_COUNTS`), ``changes`` per state table (:class:`KeyedChanges` or
    :class:`ReplaceWhere`; a table left out has no change this batch), and the frames the plan may have cached
    (unpersisted after the commit)."""

    results: DataFrame
    late: DataFrame
    counts: dict[Side, dict[str, int]]
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
