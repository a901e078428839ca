"""Batch claims: which run of an operator writes a batch, decided before it writes anything.

Before a batch writes its first output row, its writer reads the batch's claims
and, unless the batch is another running writer's, adds a claim of
``(generation, batch id)`` naming itself and the process it runs in. Claims
are kept in an order every writer of a race sees the same way, so every writer
sees the same owner:

* the first claim of a batch (in claim order) owns it;
* a later claim owns it instead only if it *takes over* the current owner
  (it names that owner): a writer takes over only an owner that is no longer
  running (see :func:`is_running`), so a crashed run's batch passes to the
  next run without manual repair, while a live run's batch never does.

A writer that is not the owner raises :class:`ConcurrentWriterError` before
writing anything. Together with the write markers of :mod:`delta_lake_io` (a replay
skips what the crashed attempt already wrote) a batch's outputs land once.

Two kinds of claim log keep that order in ``state_root/operator_id/claims``;
:func:`claim_log_kind` picks one per claims location, once, from the Spark
configuration and the path, and :func:`open_claim_log` opens it. Both implement
:class:`ClaimLog`, whose :meth:`ClaimLog.claim` and :meth:`ClaimLog.new_generation`
hold the rules above, the take-over and the errors; a kind only reads and
writes claims.

* :class:`FileClaimLog` (where the LogStore Delta uses for the path writes a
  file put-if-absent atomically across processes): one small JSON file per
  claim in ``claims/_claims/_delta_log``, named by a 20-digit sequence number
  (``00000000000000000007.json``), written through that LogStore with
  ``overwrite=false``, the way Delta writes a commit file, so each number is
  written exactly once. A claim lists the folder's newest files, reads those it
  has not read yet (a file never changes once written) and writes the file
  after the newest that read listed (never after a later listing, which could
  skip past a claim made meanwhile): that number free, the claim follows
  exactly the claims its writer read (what it decided stands). A writer whose
  number another writer took reads again and decides again. No Spark job. The folder is named
  ``_delta_log`` because a LogStore may rely on that name: the DynamoDB
  LogStore, before it writes file ``N``, checks that file ``N - 1`` is in the
  ``_delta_log`` beside it.
* :class:`DeltaClaimLog` (everywhere else, e.g. S3 with Delta's default
  single-driver LogStore, whose put-if-absent holds only inside one JVM): a
  Delta table, one appended row per claim, the claim's fields also in the
  commit's ``userMetadata`` marker; after its append a writer reads the batch's
  claims back from the table's log. Two first claims that both create the
  table, or two appends Delta refuses, end in the clean error; one Spark job
  and one Delta commit per claim.

Which LogStore is atomic where: :mod:`windowing.spark.lake.log_stores`.

Claims in a Delta table under file claims: where ``claims`` is a Delta table
(the layout :class:`DeltaClaimLog` writes, and that of earlier releases) and
the file kind is chosen, the table's claims come before every claim file, in
the table's log order. They are read only while the files leave the decision
open (the first claims of such a root), so its generation and the owners of its
batches carry over. The reverse is refused: :class:`DeltaClaimLog` stops (a
``RuntimeError`` naming the setting) where claim files exist, since it cannot
order its commits after them (a run whose configuration lost the DynamoDB
LogStore must get it back). It looks once per log, and not at all in a session
without a JVM in this process.

Old claim files: a claim that makes its writer the owner of batch ``b``, when
its sequence number is a multiple of :data:`CLEANUP_INTERVAL_CLAIMS`, deletes
the files older than both the newest :data:`KEEP_CLAIM_FILES` and the claim a
read of ``b`` stops at (the newest claim of an earlier batch or generation).
What it deletes are claims of earlier batches, which the operator claims one
after another, each once the one before is committed: no read of batch ``b`` or
a later one gets to them. The newest claims are kept for a run many batches
behind, which its batch's claims still refuse (without them
:class:`windowing.spark.state.stores.DeltaStore` refuses it, finding the batch
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
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from delta.exceptions import (ConcurrentAppendException, ConcurrentWriteException, MetadataChangedException,
                              ProtocolChangedException)
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from windowing.spark.lake import delta_lake_io

from windowing.spark.lake import log_stores
from windowing.spark.runtime.local_frames import local_frame

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
"""The rows of a :class:`DeltaClaimLog`'s table."""

MARKER_GENERATION, MARKER_TAKES_OVER = "generation", "taken_over_from"
MARKER_HOST, MARKER_PID, MARKER_STARTED = "host", "pid", "process_started"
MARKER_CLAIMED_AT = "claimed_at"
RESET_BATCH = -1
"""The batch id of a reset's claim (below every batch id)."""

def claim_log_kind(conf: log_stores.ConfReader, path: str, default_fs: str = "file:///") -> type[ClaimLog]:
    """The kind of claim log for the claims at ``path``: :class:`FileClaimLog` where the LogStore Delta
    uses there writes put-if-absent atomically across processes
    (:func:`windowing.spark.lake.log_stores.atomic_put_if_absent`), else :class:`DeltaClaimLog`. ``conf``:
    the Spark configuration Delta reads its LogStore from (the ``SparkConf``); ``default_fs``: the
    file system of a path without a scheme."""
    return FileClaimLog if log_stores.atomic_put_if_absent(conf, path, default_fs) else DeltaClaimLog


def open_claim_log(spark: SparkSession, operator_id: str, path: str,
                   kind: type[ClaimLog] | None = None) -> ClaimLog:
    """The claim log of ``operator_id`` at ``path``, of ``kind`` (None: :func:`claim_log_kind` picks it from
    the session's ``SparkConf``, which is where Delta reads its LogStore classes from)."""
    if kind is None:
        if not hasattr(spark, "_jvm"):              # Spark Connect: the file kind needs the JVM's LogStore
            kind = DeltaClaimLog
        else:
            default_fs = spark._jsc.hadoopConfiguration().get("fs.defaultFS", "file:///")
            kind = claim_log_kind(spark.sparkContext.getConf(), path, default_fs)
    elif not (isinstance(kind, type) and issubclass(kind, ClaimLog) and kind is not ClaimLog):
        raise ValueError(f"kind must be FileClaimLog or DeltaClaimLog (or None: chosen from the Spark "
                         f"configuration), not {kind!r}")
    return kind(spark, operator_id, path)


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


class ClaimLog(ABC):
    """The claims of one operator: the rules of the module docstring over a kind's reads and writes.

    A kind implements :meth:`read` (the current generation and a batch's claims in
    claim order), :meth:`_append` (write one claim) and :meth:`_add_claim` (a
    decided claim: written so that the decision stands, or refused).
    """

    def __init__(self, spark: SparkSession, operator_id: str, path: str):
        self.spark, self.operator_id, self.path = spark, operator_id, path

    @abstractmethod
    def read(self, batch_id: int | None = None) -> tuple[int, list[Claim]]:
        """``(current generation, claims of batch_id in that generation, in claim order)``; no Spark job."""

    @abstractmethod
    def _append(self, batch_id: int, generation: int, writer_id: str | None, takes_over: str | None) -> None:
        """Write one claim (of ``RESET_BATCH``: a reset to ``generation``) after every claim there is."""

    @abstractmethod
    def _add_claim(self, batch_id: int, generation: int, writer_id: str, takes_over: str | None) -> None:
        """Write the claim :meth:`claim` decided on so that ``writer_id`` owns the batch, or raise
        :class:`ConcurrentWriterError` (through :meth:`_check`) when another claim came between."""

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
        _register(writer_id)                          # running from its claim on (see is_running)
        try:
            self._add_claim(batch_id, generation, writer_id, current.writer_id if current else None)
        except BaseException:
            release(writer_id)
            raise
        return generation

    def new_generation(self) -> int:
        """Start the next generation (a state reset); returns it."""
        generation, _ = self.read()
        self._append(RESET_BATCH, generation + 1, None, None)
        return generation + 1

    def _check(self, batch_id: int, generation: int, writer_id: str, expected_owner: str | None) -> None:
        """Read the batch's claims again: raise unless the generation is still ``generation`` and the batch's
        owner the writer ``expected_owner`` (None: no claim)."""
        generation_now, claims = self.read(batch_id)
        if generation_now != generation:
            raise self._reset_meanwhile(batch_id, writer_id)
        current = owner(claims)
        if (current.writer_id if current else None) != expected_owner:
            raise self._raced(batch_id, writer_id)

    def _record(self, batch_id: int, generation: int, writer_id: str | None, takes_over: str | None) -> dict:
        """A claim's fields (a claim file's content; a claims table's commit marker and row)."""
        pid = os.getpid()
        return {delta_lake_io.MARKER_APP: self.operator_id, delta_lake_io.MARKER_BATCH: batch_id,
                MARKER_GENERATION: generation, delta_lake_io.MARKER_WRITER: writer_id, MARKER_HOST: socket.gethostname(),
                MARKER_PID: pid, MARKER_STARTED: _process_started(pid), MARKER_TAKES_OVER: takes_over,
                MARKER_CLAIMED_AT: datetime.datetime.now(datetime.timezone.utc).isoformat()}

    def _claims_in(self, marks: Iterator[tuple[int | None, dict | None]],
                   batch_id: int | None) -> tuple[int | None, int, list[Claim]]:
        """Walk claims newest first: ``(position the walk stopped at (None: it read them all), current
        generation, claims of batch_id in that generation in claim order)``."""
        generation, found = None, []
        for position, mark in marks:
            if mark is None or mark.get(delta_lake_io.MARKER_APP) != self.operator_id:
                continue
            if generation is None:
                generation = int(mark.get(MARKER_GENERATION, 0))
                if batch_id is None:
                    return position, generation, []
            if int(mark.get(MARKER_GENERATION, 0)) != generation or int(mark[delta_lake_io.MARKER_BATCH]) < batch_id:
                return position, generation, found[::-1]
            if int(mark[delta_lake_io.MARKER_BATCH]) == batch_id:
                found.append(_claim_of(mark))
        return None, generation or 0, found[::-1]

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


class FileClaimLog(ClaimLog):
    """Claims as files in ``path``/:data:`CLAIM_FILES_FOLDER`, after the claims of a Delta table at ``path``."""

    def __init__(self, spark: SparkSession, operator_id: str, path: str):
        super().__init__(spark, operator_id, path)
        self.files = ClaimFiles(spark, path, f"{path.rstrip('/')}/{CLAIM_FILES_FOLDER}")
        self._list_from = 0
        """Where the next read lists from: the file the last read stopped at (0: it read them all), or
        this log's last claim."""
        self._newest: int | None = None
        """The newest sequence number the last listing found (None: no file)."""
        self._listed = False
        """Whether this log listed the folder yet (a claim writes after the newest its read listed)."""

    def read(self, batch_id: int | None = None) -> tuple[int, list[Claim]]:
        stopped_at, generation, claims = self._claims_in(self._newest_first(), batch_id)
        self._list_from = stopped_at or 0
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
        self._newest, self._listed = (listed[-1] if listed else None), True
        return start, listed

    def _table_markers(self) -> Iterator[tuple[None, dict | None]]:
        """The markers of the Delta table at ``path`` (claims of a :class:`DeltaClaimLog`), newest first."""
        if not delta_lake_io.has_commit(self.spark, self.path) or not delta_lake_io.table_exists(self.spark, self.path):
            return
        for _, mark in delta_lake_io.markers_newest_first(self.spark, self.path):
            yield None, mark

    def _add_claim(self, batch_id: int, generation: int, writer_id: str, takes_over: str | None) -> None:
        sequence = self._write(batch_id, generation, writer_id, takes_over,
                               lambda: self._check(batch_id, generation, writer_id, takes_over))
        self._clean_up(sequence)
        self._list_from = sequence                    # where a read of a later batch stops

    def _append(self, batch_id: int, generation: int, writer_id: str | None, takes_over: str | None) -> None:
        sequence = self._write(batch_id, generation, writer_id, takes_over)
        if batch_id == RESET_BATCH:
            self._list_from = sequence                # where every later read stops

    def _write(self, batch_id: int, generation: int, writer_id: str | None, takes_over: str | None,
               on_taken: Callable[[], None] | None = None) -> int:
        """Write a claim as the file after the newest the last read listed; returns its sequence number.

        That number free, no claim came between the claims the last read saw and this
        one, so what the read decided stands (no read back). When another writer took
        it, ``on_taken()`` reads again (it may raise) and the claim tries the number
        after the newest again.
        """
        record = self._record(batch_id, generation, writer_id, takes_over)
        if not self._listed:                          # not after a read (a claim written as it is)
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


class DeltaClaimLog(ClaimLog):
    """Claims as rows appended to a Delta table at ``path`` (their fields in each commit's marker), read back."""

    def __init__(self, spark: SparkSession, operator_id: str, path: str):
        super().__init__(spark, operator_id, path)
        self._no_claim_files = False
        """Whether a read found no claim files beside the table (checked once per log)."""

    def read(self, batch_id: int | None = None) -> tuple[int, list[Claim]]:
        self._refuse_claim_files()
        if not delta_lake_io.table_exists(self.spark, self.path):
            return 0, []
        _, generation, claims = self._claims_in(delta_lake_io.markers_newest_first(self.spark, self.path), batch_id)
        return generation, claims

    def _refuse_claim_files(self) -> None:
        """Stop where a :class:`FileClaimLog` wrote claim files: they may be newer than every commit of
        the table, which this log cannot tell (the session's LogStore for this path changed)."""
        if self._no_claim_files or not hasattr(self.spark, "_jvm"):
            return
        folder = f"{self.path.rstrip('/')}/{CLAIM_FILES_FOLDER}"
        scheme = log_stores.scheme_of(self.path)
        scheme = scheme if scheme in log_stores.S3_SCHEMES else "s3a"
        if ClaimFiles(self.spark, self.path, folder).sequences_from(0):
            raise RuntimeError(
                f"operator {self.operator_id!r}: its claims in {folder} were written as files, by runs whose "
                f"Delta LogStore writes a file put-if-absent atomically; this session's LogStore for "
                f"{self.path} does not (its claims would go to the Delta table at {self.path} instead, and miss "
                f"those). Run with the LogStore the earlier runs had (on S3: "
                f"{log_stores.LOG_STORE_SCHEME_KEY.format(scheme=scheme)}={log_stores.S3_DYNAMODB_LOG_STORE}).")
        self._no_claim_files = True

    def _add_claim(self, batch_id: int, generation: int, writer_id: str, takes_over: str | None) -> None:
        self._append(batch_id, generation, writer_id, takes_over)
        self._check(batch_id, generation, writer_id, writer_id)    # read back: the first claim owns the batch

    def _append(self, batch_id: int, generation: int, writer_id: str | None, takes_over: str | None) -> None:
        record = self._record(batch_id, generation, writer_id, takes_over)
        fields = {k: v for k, v in record.items() if k != MARKER_CLAIMED_AT}
        row = dict(fields, batch_id=None if batch_id == RESET_BATCH else batch_id,
                   claimed_at=datetime.datetime.fromisoformat(record[MARKER_CLAIMED_AT]))
        frame = local_frame(self.spark, [tuple(row.get(f.name) for f in CLAIMS_SCHEMA.fields)], CLAIMS_SCHEMA)
        writer = (frame.write.format("delta").mode("append")
                  .option("userMetadata", json.dumps(fields, sort_keys=True)))
        for key, value in delta_lake_io.DEFAULT_PROPERTIES.items():
            writer = writer.option(key, value)
        try:
            writer.save(self.path)
        except Exception as error:  # noqa: BLE001 - two first claims: one created the table, the other appends again
            if not delta_lake_io.table_exists(self.spark, self.path):
                if isinstance(error, CONCURRENT_COMMITS):
                    raise self._raced(batch_id, writer_id) from error
                raise
            try:
                writer.save(self.path)
            except CONCURRENT_COMMITS as again:
                raise self._raced(batch_id, writer_id) from again


def _claim_of(mark: dict) -> Claim:
    return Claim(mark.get(delta_lake_io.MARKER_WRITER), mark.get(MARKER_HOST), mark.get(MARKER_PID),
                 mark.get(MARKER_STARTED), mark.get(MARKER_TAKES_OVER))


def _register(writer_id: str) -> None:
    with _RUNNING_LOCK:
        _RUNNING.add(writer_id)


def release(writer_id: str) -> None:
    """The writer left its batch (committed it, or failed): a later run may take its claim over."""
    with _RUNNING_LOCK:
        _RUNNING.discard(writer_id)
