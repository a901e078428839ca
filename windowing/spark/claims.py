"""Batch claims: which run of an operator writes a batch, decided before it writes anything.

Table ``state_root/operator_id/claims`` (Delta, appended only). Before a batch
writes its first output row, its writer appends a claim of ``(generation,
batch id)`` naming itself and the process it runs in, and the batch's owner is
read back from the table's log. Delta writes each log version exactly once, so
every writer of a race sees the same order of claims and the same owner:

* the first claim of a batch (in log order) owns it;
* a later claim owns it instead only if it *takes over* the current owner
  (it names that owner): a writer takes over only an owner that is no longer
  running (see :func:`is_running`), so a crashed run's batch passes to the
  next run without manual repair, while a live run's batch never does.

A writer that is not the owner raises :class:`ConcurrentWriterError` before
writing anything. Together with the write markers of :mod:`delta_io` (a replay
skips what the crashed attempt already wrote) a batch's outputs land once.

Whether a claimant is running: a claim records host, process id and the
process's start time. On the same host, a claimant of another process runs
while that process exists (the start time rules out a reused id); a claimant
of this process runs while it is inside its batch (a process-wide registry).
A claimant on another host cannot be checked from here: its batch is not taken
over (the run stops with the error naming it).

Generations: :meth:`ClaimLog.new_generation` (a state reset) starts generation
``g + 1``; the write markers of the outputs carry the generation in their
application id (:func:`app_id`), so what an earlier generation wrote never
counts as written by this one.
"""
from __future__ import annotations

import datetime
import json
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from delta.exceptions import (ConcurrentAppendException, ConcurrentWriteException, MetadataChangedException,
                              ProtocolChangedException)
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from windowing.spark import delta_io
from windowing.spark.local_frames import local_frame

CONCURRENT_COMMITS = (ProtocolChangedException, MetadataChangedException, ConcurrentAppendException,
                      ConcurrentWriteException)
"""Delta's errors for a commit that another writer's commit of the same version beat (table creation included)."""

CLAIMS_SCHEMA = T.StructType([
    T.StructField("batch_id", T.LongType(), True),           # null: the row of a reset (new generation)
    T.StructField("generation", T.LongType(), False),
    T.StructField("writer_id", T.StringType(), True),
    T.StructField("host", T.StringType(), True),
    T.StructField("pid", T.LongType(), True),
    T.StructField("process_started", T.StringType(), True),
    T.StructField("taken_over_from", T.StringType(), True),
    T.StructField("claimed_at", T.TimestampType(), False),
])
MARKER_GENERATION, MARKER_TAKES_OVER = "generation", "taken_over_from"
MARKER_HOST, MARKER_PID, MARKER_STARTED = "host", "pid", "process_started"
RESET_BATCH = -1
"""The batch id in the marker of a reset's commit (below every batch id)."""


class ConcurrentWriterError(RuntimeError):
    """Another writer owns (or committed) this batch of this operator; this writer wrote nothing of it."""


def app_id(operator_id: str, generation: int) -> str:
    """The application id of an operator's write markers in ``generation`` (operator ids have no ``#``)."""
    return operator_id if generation == 0 else f"{operator_id}#{generation}"


@dataclass(frozen=True)
class Claim:
    """One claim of a batch, as its commit's marker records it."""
    writer_id: str
    host: str | None
    pid: int | None
    process_started: str | None
    taken_over_from: str | None

    def describe(self) -> str:
        return f"writer {self.writer_id} (host {self.host}, process {self.pid})"


_RUNNING: set[str] = set()
_RUNNING_LOCK = threading.Lock()


def _process_started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux ``/proc``), else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


TAKE_OVER_ENV = "WINDOWING_TAKE_OVER_WRITER"
"""An operator's declaration that a writer is dead: a claim of the writer id this variable names
(from the refusal's message) is taken over even where it cannot be checked (another host)."""


def is_running(claim: Claim) -> bool:
    """Whether the claimant may still be running (True when it cannot be told: another host, unless the
    operator named its writer id in :data:`TAKE_OVER_ENV`)."""
    if claim.writer_id is not None and os.environ.get(TAKE_OVER_ENV) == claim.writer_id:
        return False
    if claim.host != socket.gethostname() or claim.pid is None:
        return True
    if claim.pid == os.getpid():
        with _RUNNING_LOCK:
            return claim.writer_id in _RUNNING
    try:
        os.kill(claim.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                                  # exists, another user's
    started = _process_started(claim.pid)
    return claim.process_started is None or started is None or started == claim.process_started


def owner(claims: list[Claim]) -> Claim | None:
    """The owner of a batch given its claims in log order (see the module docstring)."""
    current = claims[0] if claims else None
    for claim in claims[1:]:
        if claim.taken_over_from == current.writer_id:
            current = claim
    return current


class ClaimLog:
    """The claims table of one operator."""

    def __init__(self, spark: SparkSession, operator_id: str, path: str):
        self.spark, self.operator_id, self.path = spark, operator_id, path

    def read(self, batch_id: int | None = None) -> tuple[int, list[Claim]]:
        """``(current generation, claims of batch_id in that generation, in log order)``; no Spark job."""
        if not delta_io.table_exists(self.spark, self.path):
            return 0, []
        generation, found = None, []
        for _, mark in delta_io.markers_newest_first(self.spark, self.path):
            if mark is None or mark.get(delta_io.MARKER_APP) != self.operator_id:
                continue
            if generation is None:
                generation = int(mark.get(MARKER_GENERATION, 0))
                if batch_id is None:
                    break
            if int(mark.get(MARKER_GENERATION, 0)) != generation or int(mark[delta_io.MARKER_BATCH]) < batch_id:
                break
            if int(mark[delta_io.MARKER_BATCH]) == batch_id:
                found.append(Claim(mark.get(delta_io.MARKER_WRITER), mark.get(MARKER_HOST), mark.get(MARKER_PID),
                                   mark.get(MARKER_STARTED), mark.get(MARKER_TAKES_OVER)))
        return generation or 0, found[::-1]

    def claim(self, batch_id: int, writer_id: str, committed: Callable[[], bool]) -> int:
        """Make ``writer_id`` the owner of ``batch_id`` or raise :class:`ConcurrentWriterError`; returns the generation.

        ``committed()`` tells whether the batch has been committed meanwhile (read
        only when the current owner is no longer running: a crashed writer's batch
        may have been committed by a run that took it over).
        """
        generation, claims = self.read(batch_id)
        current = owner(claims)
        if current is not None and current.writer_id == writer_id:
            _register(writer_id)
            return generation
        if current is not None and is_running(current):
            raise self._refusal(batch_id, writer_id, current)
        if current is not None and committed():
            raise self._already_committed(batch_id, writer_id)
        self._append(batch_id, generation, writer_id, current.writer_id if current else None)
        generation_now, claims = self.read(batch_id)
        current = owner(claims)
        if generation_now != generation:
            raise ConcurrentWriterError(
                f"operator {self.operator_id!r}: its state was reset while this writer ({writer_id}) claimed "
                f"batch {batch_id}; this writer wrote nothing. Run again.")
        if current is None or current.writer_id != writer_id:
            raise self._refusal(batch_id, writer_id, current)
        _register(writer_id)
        return generation

    def new_generation(self) -> int:
        """Start the next generation (a state reset); returns it."""
        generation, _ = self.read()
        self._append(RESET_BATCH, generation + 1, None, None)
        return generation + 1

    def _append(self, batch_id: int, generation: int, writer_id: str | None, takes_over: str | None) -> None:
        pid = os.getpid()
        fields = {delta_io.MARKER_APP: self.operator_id, delta_io.MARKER_BATCH: batch_id,
                  MARKER_GENERATION: generation, delta_io.MARKER_WRITER: writer_id, MARKER_HOST: socket.gethostname(),
                  MARKER_PID: pid, MARKER_STARTED: _process_started(pid), MARKER_TAKES_OVER: takes_over}
        row = dict(fields, batch_id=None if batch_id == RESET_BATCH else batch_id,
                   claimed_at=datetime.datetime.now(datetime.timezone.utc))
        frame = local_frame(self.spark, [tuple(row.get(f.name) for f in CLAIMS_SCHEMA.fields)], CLAIMS_SCHEMA)
        writer = (frame.write.format("delta").mode("append")
                  .option("userMetadata", json.dumps(fields, sort_keys=True)))
        for key, value in delta_io.DEFAULT_PROPERTIES.items():
            writer = writer.option(key, value)
        try:
            writer.save(self.path)
        except Exception as error:  # noqa: BLE001 - two first claims: one created the table, the other appends again
            if not delta_io.table_exists(self.spark, self.path):
                if isinstance(error, CONCURRENT_COMMITS):
                    raise self._raced(batch_id, writer_id) from error
                raise
            try:
                writer.save(self.path)
            except CONCURRENT_COMMITS as again:
                raise self._raced(batch_id, writer_id) from again

    def _raced(self, batch_id: int, writer_id: str | None) -> ConcurrentWriterError:
        return ConcurrentWriterError(
            f"operator {self.operator_id!r}: another run claimed batch {batch_id} at the same moment as this run "
            f"(writer {writer_id}), which stopped before writing any of it. Two runs must not write one operator "
            f"at the same time: let the other run finish, then run again.")

    def _refusal(self, batch_id: int, writer_id: str, current: Claim | None) -> ConcurrentWriterError:
        holder = current.describe() if current else "another writer"
        return ConcurrentWriterError(
            f"operator {self.operator_id!r}: batch {batch_id} is being written by {holder}; this run "
            f"(writer {writer_id}) stopped before writing any of it. Two runs must not write one operator at "
            f"the same time: let the other run finish (or stop it), then run again. A run that crashed is taken "
            f"over automatically; one on another host cannot be checked: if that run is gone, run again with "
            f"{TAKE_OVER_ENV}={current.writer_id if current else '<writer id>'}.")

    def _already_committed(self, batch_id: int, writer_id: str) -> ConcurrentWriterError:
        return ConcurrentWriterError(
            f"operator {self.operator_id!r}: batch {batch_id} was already committed by another writer; this "
            f"writer ({writer_id}) did not commit. Two jobs must not run one operator's state at the same time.")


def _register(writer_id: str) -> None:
    with _RUNNING_LOCK:
        _RUNNING.add(writer_id)


def release(writer_id: str) -> None:
    """The writer left its batch (committed it, or failed): a later run may take its claim over."""
    with _RUNNING_LOCK:
        _RUNNING.discard(writer_id)
