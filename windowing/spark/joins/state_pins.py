"""Where a join batch reads each state table: a Delta version, plus the change sets logged after it.

A streaming batch of a window join or an interval join changes its state as a
``replaceWhere`` (:class:`~windowing.spark.joins.plan.ReplaceWhere`): the rows
matching a time predicate leave, the batch's new rows come in. Written to the
state table, that is a Delta commit whose predicate has Delta rebuild the
table's file list (log replay, statistics) for the version just written: the
most expensive step of a small batch. So a batch may instead *log* its change:
its inserted rows go to a Parquet folder of their own (``state_log/<table>/
<batch>-<attempt>``, no Delta commit) and the progress row that commits the
batch records the folder and the predicate (column ``state_log``).

The state of a table after a committed batch is then (:class:`TablePin`):

    the table AS OF ``version`` (column ``state_versions``)
    then, for each logged change in batch order: the rows matching its
    ``delete_where`` leave, its folder's rows come in

A batch logs while its pin holds fewer than ``spark.windowing.stateLogBatches``
changes (default 10; ``0``: never log); the next batch, and every batch that
ends the input, *compacts*: it writes the whole state after it to the table in
one ``replaceWhere`` commit marked with its batch id (a replay finds it
written), and its pin holds no change. Folders no pin can name any more (those
of batches up to a committed compaction, and of attempts that never committed)
are deleted after the compaction commits. Exactly once holds as for the table
writes: a folder is read only through the committed progress row that names it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

STATE_LOG = "state_log"
"""Progress column: per state table, the change sets logged after its version (JSON; null: none)."""


@dataclass(frozen=True)
class LoggedChange:
    """A batch's change of a state table kept out of it: the rows matching ``delete_where`` (SQL on the
    table's columns) leave, then the rows in the Parquet folder ``path`` come in."""

    batch_id: int
    path: str
    delete_where: str


@dataclass(frozen=True)
class TablePin:
    """A state table's rows after a committed batch: the table at ``version`` (None: a store without
    versions) with ``logged`` applied in order."""

    version: int | None
    logged: tuple[LoggedChange, ...] = ()

    def then(self, change: LoggedChange) -> "TablePin":
        return TablePin(self.version, self.logged + (change,))

    def read(self, spark: SparkSession, table_rows: DataFrame) -> DataFrame:
        """The pinned rows, from the table's rows at ``version``."""
        rows = table_rows
        for change in self.logged:
            rows = leave(rows, change.delete_where).unionByName(
                spark.read.schema(table_rows.schema).parquet(change.path))
        return rows


def leave(rows: DataFrame, delete_where: str) -> DataFrame:
    """``rows`` without those matching ``delete_where`` (a null match keeps the row, as Delta's delete does)."""
    return rows.where(f"NOT coalesce({delete_where}, false)")


def pins_of(last: dict | None, names) -> dict[str, TablePin] | None:
    """Each state table's pin as the progress row ``last`` records it; None before the first batch."""
    if last is None:
        return None
    versions = json.loads(last["state_versions"])
    logged = json.loads(last.get(STATE_LOG) or "{}")
    return {name: TablePin(versions[name], tuple(LoggedChange(*change) for change in logged.get(name, ())))
            for name in names}


def progress_columns(pins: dict[str, TablePin]) -> dict[str, str | None]:
    """The progress row's ``state_versions`` and ``state_log`` of the pins after a batch."""
    logged = {name: [[c.batch_id, c.path, c.delete_where] for c in pin.logged]
              for name, pin in pins.items() if pin.logged}
    return {"state_versions": json.dumps({name: pin.version for name, pin in pins.items()}),
            STATE_LOG: json.dumps(logged) if logged else None}
