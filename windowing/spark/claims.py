"""Batch claims: which run of an operator writes a batch, decided before it writes anything.

The claims of an operator are small JSON files, one claim each, in the folder
``state_root/operator_id/claims/_claims/_delta_log``, named by a 20-digit
sequence number (``00000000000000000007.json``). Before a batch writes its first
output row, its writer reads the batch's claims and, unless the batch is another
running writer's, adds a claim of ``(generation, batch id)`` naming itself and
the process it runs in, as the file after the newest it read. A claim file is
written the way Delta writes a commit file: through Delta's LogStore,
put-if-absent, so each number is written exactly once. A claim that gets its
number follows exactly the claims its writer read (what it decided stands); a
writer whose number another writer took reads again and decides again. So every
writer of a race sees the same order of claims and the same owner:

* the first claim of a batch (in sequence order) owns it;
* a later claim owns it instead only if it *takes over* the current owner
  (it names that owner): a writer takes over only an owner that is no longer
  running (see :func:`is_running`), so a crashed run's batch passes to the
  next run without manual repair, while a live run's batch never does.

A writer that is not the owner raises :class:`ConcurrentWriterError` before
writing anything. Together with the write markers of :mod:`delta_io` (a replay
skips what the crashed attempt already wrote) a batch's outputs land once.

A claim runs no Spark job: it lists the folder's newest files, reads those it
has not read yet (a file never changes once written) and writes one file. The put-if-absent is the LogStore's, the one Delta's own commits use
on that store, so claims have exactly the guarantees of Delta's commits there:
atomic on local file systems and HDFS; on S3 only with Delta's S3 DynamoDB
LogStore or a LogStore using S3's conditional writes (the default S3 LogStore
serialises writes inside one driver JVM). The folder is named ``_delta_log``
because a LogStore may rely on that name: the DynamoDB LogStore, before it
writes file ``N``, checks that file ``N - 1`` is in the ``_delta_log`` beside it.

Claims in a Delta table: where ``claims`` itself is a Delta table whose commits
carry the claims as ``userMetadata`` markers (the layout of earlier releases),
those claims come before every claim file, in the table's log order. They are
read only while the files leave the decision open (the first claims of such a
root), so its generation and the owners of its batches carry over.

Old claim files: a claim that makes its writer the owner of batch ``b``, when
its sequence number is a multiple of :data:`CLEANUP_INTERVAL_CLAIMS`, deletes
the files older than both the newest :data:`KEEP_CLAIM_FILES` and the claim a
read of ``b`` stops at (the newest claim of an earlier batch or generation).
What it deletes are claims of earlier batches, which the operator claims one
after another, each once the one before is committed: no read of batch ``b`` or
a later one gets to them. The newest claims are kept for a run many batches
behind, which its batch's claims still refuse (without them
:class:`windowing.spark.stores.DeltaStore` refuses it, finding the batch
committed).

Whether a claimant is running: a claim records host, process id and the
process's start time. On the same host, a claimant of another process runs
while that process exists (the start time rules out a reused id); a claimant
of this process runs from its claim until it leaves its batch (a process-wide
registry). A claimant on another host cannot be checked from here: its batch
is not taken over (the run stops with the error naming it).

Generations: :meth:`ClaimLog.new_generation` (a state reset) starts generation
``g + 1``; the write markers of the outputs carry the generation in their
application id (:func:`app_id`), so what an earlier generation wrote never
counts as written by this one.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from windowing.spark import delta_io

CLAIM_FILES_FOLDER = "_claims/_delta_log"
"""Where the claim files are, inside the claims folder (see the module docstring for the name)."""
CLAIM_FILE = re.compile(r"^(\d{20})\.json$")
SEQUENCE_FORMAT = "{:020d}.json"
KEEP_CLAIM_FILES = 100
"""Claim files a cleanup keeps at least (the newest)."""
CLEANUP_INTERVAL_CLAIMS = 100
"""A claim whose sequence number is a multiple of this cleans up (when it makes its writer the owner)."""
MAX_WRITE_ATTEMPTS = 100
"""Sequence numbers a claim tries before it gives up (each taken one is another writer's claim)."""
FILE_EXISTS_ERRORS = ("java.nio.file.FileAlreadyExistsException", "org.apache.hadoop.fs.FileAlreadyExistsException")
NOT_FOUND_ERROR = "java.io.FileNotFoundException"

MARKER_GENERATION, MARKER_TAKES_OVER = "generation", "taken_over_from"
MARKER_HOST, MARKER_PID, MARKER_STARTED = "host", "pid", "process_started"
MARKER_CLAIMED_AT = "claimed_at"
RESET_BATCH = -1
"""The batch id of a reset's claim (below every batch id)."""


class ConcurrentWriterError(RuntimeError):
    """Another writer owns (or committed) this batch of this operator; this writer wrote nothing of it."""


def app_id(operator_id: str, generation: int) -> str:
    """The application id of an operator's write markers in ``generation`` (operator ids have no ``#``)."""
    return operator_id if generation == 0 else f"{operator_id}#{generation}"


@dataclass(frozen=True)
class Claim:
    """One claim of a batch, as its file (or its Delta commit's marker) records it."""
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


def _java_error(error: Py4JJavaError) -> str:
    return error.java_exception.getClass().getName()


class _LogStoreIO:
    """The JVM objects a claims folder needs, looked up once (each lookup of a JVM class or static method
    is a py4j round trip)."""

    def __init__(self, spark: SparkSession, table_path: str, folder: str):
        jvm = spark._jvm
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, table_path)
        self.store, self.conf = log.store(), log.newDeltaHadoopConf()
        self.path_class = jvm.org.apache.hadoop.fs.Path
        self.folder = self.path_class(folder)
        self.fs = self.folder.getFileSystem(self.conf)
        self._as_scala = jvm.scala.jdk.javaapi.CollectionConverters.asScala
        self._one_item_list = jvm.java.util.Collections.singletonList

    def file(self, sequence: int):
        return self.path_class(self.folder, SEQUENCE_FORMAT.format(sequence))

    def lines(self, line: str):
        """A Scala iterator of the one line ``line`` (what ``LogStore.write`` takes)."""
        return self._as_scala(self._one_item_list(line).iterator())


class ClaimFiles:
    """A folder of claim files, written and read through the LogStore Delta uses for the table at ``table_path``.

    Files are named by sequence number, written once (put-if-absent) and never
    changed, so each is read at most once per instance. No Spark job.
    """

    def __init__(self, spark: SparkSession, table_path: str, folder: str):
        self.spark, self.table_path, self.folder = spark, table_path, folder
        self._jvm_io: _LogStoreIO | None = None
        self._records: dict[int, dict] = {}

    def _io(self) -> _LogStoreIO:
        if self._jvm_io is None:
            self._jvm_io = _LogStoreIO(self.spark, self.table_path, self.folder)
        return self._jvm_io

    def sequences_from(self, first: int) -> list[int]:
        """The sequence numbers of the files from ``first`` up, ascending (none: no folder yet)."""
        io, names = self._io(), []
        try:
            statuses = io.store.listFrom(io.file(first), io.conf)
            while statuses.hasNext():
                names.append(statuses.next().getPath().getName())
        except Py4JJavaError as error:
            if _java_error(error) != NOT_FOUND_ERROR:
                raise
            return []
        return sorted(int(match.group(1)) for match in map(CLAIM_FILE.match, names) if match)

    def record(self, sequence: int) -> dict | None:
        """The claim in file ``sequence``; None when the file is gone (cleaned up since it was listed)."""
        if sequence not in self._records:
            io = self._io()
            try:
                text = io.store.read(io.file(sequence), io.conf).mkString("\n")
            except Py4JJavaError as error:
                if _java_error(error) != NOT_FOUND_ERROR:
                    raise
                return None
            self._records[sequence] = json.loads(text)
        return self._records[sequence]

    def put_if_absent(self, sequence: int, record: dict) -> bool:
        """Write ``record`` as file ``sequence`` unless that file exists (then False: another writer's)."""
        io, line = self._io(), json.dumps(record, sort_keys=True)
        for attempt in ("first", "after creating the folder"):
            try:
                io.store.write(io.file(sequence), io.lines(line), False, io.conf)
                break
            except Py4JJavaError as error:
                if _java_error(error) in FILE_EXISTS_ERRORS:
                    return False
                if _java_error(error) != NOT_FOUND_ERROR or attempt != "first":
                    raise
                io.fs.mkdirs(io.folder)
        self._records[sequence] = record
        self._forget_below(sequence - KEEP_CLAIM_FILES)
        return True

    def delete_below(self, sequence: int) -> int:
        """Delete the files numbered below ``sequence``; returns how many."""
        io = self._io()
        old = [s for s in self.sequences_from(0) if s < sequence]
        for number in old:
            io.fs.delete(io.file(number), False)
        self._forget_below(sequence)
        return len(old)

    def _forget_below(self, sequence: int) -> None:
        for number in [s for s in self._records if s < sequence]:
            del self._records[number]


class ClaimLog:
    """The claims of one operator: the claim files in ``path``, after the claims of a Delta table at ``path``."""

    def __init__(self, spark: SparkSession, operator_id: str, path: str):
        self.spark, self.operator_id, self.path = spark, operator_id, path
        self.files = ClaimFiles(spark, path, f"{path.rstrip('/')}/{CLAIM_FILES_FOLDER}")
        self._list_from = 0
        """Where the next read lists from: the file the last read stopped at (0: it read them all), or
        this log's last claim."""
        self._newest: int | None = None
        """The newest sequence number the last listing found (None: no file)."""

    def read(self, batch_id: int | None = None) -> tuple[int, list[Claim]]:
        """``(current generation, claims of batch_id in that generation, in log order)``; no Spark job."""
        generation, found = None, []
        for sequence, mark in self._newest_first():
            if mark is None or mark.get(delta_io.MARKER_APP) != self.operator_id:
                continue
            if generation is None:
                generation = int(mark.get(MARKER_GENERATION, 0))
                if batch_id is None:
                    return self._stopped_at(sequence, generation, [])
            if int(mark.get(MARKER_GENERATION, 0)) != generation or int(mark[delta_io.MARKER_BATCH]) < batch_id:
                return self._stopped_at(sequence, generation, found[::-1])
            if int(mark[delta_io.MARKER_BATCH]) == batch_id:
                found.append(_claim_of(mark))
        return self._stopped_at(None, generation or 0, found[::-1])

    def _stopped_at(self, sequence: int | None, generation: int, claims: list[Claim]) -> tuple[int, list[Claim]]:
        """The read's answer; ``sequence``: the file it stopped at (None: it read every claim)."""
        self._list_from = sequence or 0
        return generation, claims

    def _newest_first(self) -> Iterator[tuple[int | None, dict | None]]:
        """``(sequence number, claim)`` of the files from the newest down, then ``(None, marker)`` of the
        Delta table's commits (only when the files begin at number 0: none was cleaned up)."""
        start, listed = self._listing()
        for sequence in reversed(listed):
            record = self.files.record(sequence)
            if record is None:
                return                                 # cleaned up: what is older no longer counts
            yield sequence, record
        if start:
            older = [s for s in self.files.sequences_from(0) if s < start]
            for sequence in reversed(older):
                record = self.files.record(sequence)
                if record is None:
                    return
                yield sequence, record
            listed = older + listed
        if not listed or listed[0] == 0:
            yield from self._table_markers()

    def _listing(self) -> tuple[int, list[int]]:
        """``(first number listed, numbers of the files from it up)``; also notes the newest number."""
        start, listed = self._list_from, self.files.sequences_from(self._list_from)
        if start and (not listed or listed[0] != start):
            start, listed = 0, self.files.sequences_from(0)   # the file listed from is gone
        self._newest = listed[-1] if listed else None
        return start, listed

    def _table_markers(self) -> Iterator[tuple[None, dict | None]]:
        """The markers of the Delta table at ``path`` (claims of earlier releases), newest first."""
        if not delta_io.has_commit(self.spark, self.path) or not delta_io.table_exists(self.spark, self.path):
            return
        for _, mark in delta_io.markers_newest_first(self.spark, self.path):
            yield None, mark

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
        takes_over = current.writer_id if current else None
        _register(writer_id)                          # running from its claim on (see is_running)
        try:
            sequence = self._append(batch_id, generation, writer_id, takes_over, lambda: self._check_unclaimed(
                batch_id, generation, writer_id, takes_over))
        except BaseException:
            release(writer_id)
            raise
        self._clean_up(sequence)
        self._list_from = sequence                    # where a read of a later batch stops
        return generation

    def _check_unclaimed(self, batch_id: int, generation: int, writer_id: str, takes_over: str | None) -> None:
        """After another writer took the number this claim tried: raise unless the batch's owner is still the
        one this claim was decided on (and the generation the same)."""
        generation_now, claims = self.read(batch_id)
        if generation_now != generation:
            raise self._reset_meanwhile(batch_id, writer_id)
        current = owner(claims)
        if (current.writer_id if current else None) != takes_over:
            raise self._raced(batch_id, writer_id)

    def new_generation(self) -> int:
        """Start the next generation (a state reset); returns it."""
        generation, _ = self.read()
        self._list_from = self._append(RESET_BATCH, generation + 1, None, None)   # where every later read stops
        return generation + 1

    def _append(self, batch_id: int, generation: int, writer_id: str | None, takes_over: str | None,
                on_taken: Callable[[], None] | None = None) -> int:
        """Write a claim as the file after the newest the last read listed; returns its sequence number.

        That number free, no claim came between the claims the last read saw and this
        one, so what the read decided stands (no read back). When another writer took
        it, ``on_taken()`` reads again (it may raise) and the claim tries the number
        after the newest again.
        """
        pid = os.getpid()
        record = {delta_io.MARKER_APP: self.operator_id, delta_io.MARKER_BATCH: batch_id,
                  MARKER_GENERATION: generation, delta_io.MARKER_WRITER: writer_id, MARKER_HOST: socket.gethostname(),
                  MARKER_PID: pid, MARKER_STARTED: _process_started(pid), MARKER_TAKES_OVER: takes_over,
                  MARKER_CLAIMED_AT: datetime.datetime.now(datetime.timezone.utc).isoformat()}
        if self._newest is None:
            self._listing()
        for _ in range(MAX_WRITE_ATTEMPTS):
            sequence = 0 if self._newest is None else self._newest + 1
            if self.files.put_if_absent(sequence, record):
                self._newest = sequence
                return sequence
            self._listing()
            if on_taken is not None:
                on_taken()
        raise RuntimeError(f"operator {self.operator_id!r}: no claim file could be written in "
                           f"{self.files.folder} after {MAX_WRITE_ATTEMPTS} attempts (each number was taken)")

    def _clean_up(self, sequence: int) -> None:
        """After claim ``sequence`` made its writer the owner: delete the files no read needs any more (see
        the module docstring), on every :data:`CLEANUP_INTERVAL_CLAIMS`-th number."""
        if sequence % CLEANUP_INTERVAL_CLAIMS:
            return
        below = min(self._list_from, sequence - KEEP_CLAIM_FILES)   # where the claim's read stopped
        if below > 0:
            self.files.delete_below(below)

    def _raced(self, batch_id: int, writer_id: str | None) -> ConcurrentWriterError:
        return ConcurrentWriterError(
            f"operator {self.operator_id!r}: another run claimed batch {batch_id} at the same moment as this run "
            f"(writer {writer_id}), which stopped before writing any of it. Two runs must not write one operator "
            f"at the same time: let the other run finish, then run again.")

    def _reset_meanwhile(self, batch_id: int, writer_id: str) -> ConcurrentWriterError:
        return ConcurrentWriterError(
            f"operator {self.operator_id!r}: its state was reset while this writer ({writer_id}) claimed "
            f"batch {batch_id}; this writer wrote nothing. Run again.")

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


def _claim_of(mark: dict) -> Claim:
    return Claim(mark.get(delta_io.MARKER_WRITER), mark.get(MARKER_HOST), mark.get(MARKER_PID),
                 mark.get(MARKER_STARTED), mark.get(MARKER_TAKES_OVER))


def _register(writer_id: str) -> None:
    with _RUNNING_LOCK:
        _RUNNING.add(writer_id)


def release(writer_id: str) -> None:
    """The writer left its batch (committed it, or failed): a later run may take its claim over."""
    with _RUNNING_LOCK:
        _RUNNING.discard(writer_id)
