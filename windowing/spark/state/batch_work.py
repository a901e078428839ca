"""What an executor gives the window operator for one batch: the contract between them.

The window operator (:class:`windowing.spark.operator.protocol.WindowOperator`) owns the
exactly-once batch protocol: skip a committed batch, claim it, write its
outputs, its seen ids and its state, commit its progress row, and call the
fault-injection hook at each stage. An executor only computes: from a batch's
raw rows and the last committed progress row it builds a :class:`BatchWork`,
whose frames are lazy until the operator writes them. Two executors exist:
the DataFrame plans (:class:`windowing.spark.plans.executor.PlanExecutor`) and
the reference model per key (:class:`windowing.spark.keyed.executor.KeyedExecutor`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol

from pyspark.sql import DataFrame

from windowing.core.records import BatchMetrics


@dataclass
class BatchReport:
    batch_id: int
    skipped: bool
    watermark_before_ms: int
    watermark_after_ms: int
    metrics: BatchMetrics = field(default_factory=BatchMetrics)
    seconds: float = 0.0
    plan: str | None = None
    """The plan that ran (a DataFrame plan's kind, ``closing`` for a one-pass batch, or ``keyed``);
    None if skipped."""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Output:
    """One output table's rows of a batch: ``rows`` is their count when known before the write
    (an empty output then costs no job), None when the write should count them."""
    frame: DataFrame
    rows: int | None


@dataclass(frozen=True)
class StateVersions:
    """What a batch's progress row records of its state: the state tables' Delta versions (None: no
    such table), and the window state changes it logged instead of writing the windows table
    (``windows_logged_from``, ``state_changes``: :mod:`windowing.spark.state.log`; None: none)."""
    windows: int | None
    buffers: int | None = None
    windows_logged_from: int | None = None
    state_changes: str | None = None


class BatchWork:
    """One claimed batch, computed by an executor, written by the operator.

    The operator calls, in this order: :meth:`results`, :meth:`results_written`
    with what the results write reported, :meth:`late`, :meth:`quarantine`,
    (records :attr:`seen_rows`), :meth:`write_state`; it then commits the progress
    row from :attr:`watermark_end_ms`, :attr:`max_seen_ms`, :attr:`time_state`
    and :attr:`metrics`, calls :meth:`committed`, and always :meth:`close`.
    A frame handed out is written once per batch id (a replay finds it written).
    """

    plan_name: str
    watermark_start_ms: int
    watermark_end_ms: int
    max_seen_ms: int | None = None
    time_state: str | None = None
    """The clock and watermark tracker as JSON, for executors that resume them from progress."""
    seen_rows: DataFrame | None = None
    """The batch's rows to record as seen (de-duplication), with the columns the executor classified."""

    def __init__(self) -> None:
        self.metrics = BatchMetrics()
        self.cached: list[DataFrame] = []
        self.settings = None
        """The batch's :class:`windowing.spark.input.batch_settings.ScopedSettings`, put back at :meth:`close`."""

    def results(self) -> Output:
        raise NotImplementedError

    def results_written(self, rows_written: int | None) -> None:
        """What the results write reported: the rows it wrote, or None (replayed, or not counted)."""

    def late(self) -> Output | None:
        """Late rows with their reason, or None when the spec drops late rows."""
        raise NotImplementedError

    def quarantine(self) -> Output:
        raise NotImplementedError

    def write_state(self) -> StateVersions:
        """Write the batch's state changes (once per batch id); the versions progress records."""
        raise NotImplementedError

    def committed(self) -> None:
        """The batch's progress row is committed (an executor may keep what it needs for the next)."""

    def close(self) -> None:
        for frame in self.cached:
            frame.unpersist()
        if self.settings is not None:
            self.settings.restore()


class Executor(Protocol):
    """Computes batches for the window operator (see the module docstring)."""

    plan: object
    """The DataFrame plan chosen for the spec, or None (the per-key path)."""

    @property
    def fingerprint(self) -> str:
        """What progress records for the spec: a resumed operator refuses state another one wrote."""

    def reset(self) -> None:
        """Discard state the executor keeps beside the store's tables."""

    def compute(self, df: DataFrame, batch_id: int, last: dict | None, watermark_ms: int | None,
                processing_time_ms: int | None, seen_ids) -> BatchWork:
        """The batch's work; ``last`` is the last committed progress row (None before the first),
        ``seen_ids`` the operator's :class:`windowing.spark.operator.dedup.SeenIds` or None."""
