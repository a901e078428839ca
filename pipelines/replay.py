"""Exact replay of a stream: its recorded micro-batches again, on a fresh operator, into tables of their own.

Each committed stream batch recorded in its progress row what it read (the Delta
source offsets, :mod:`pipelines.stream_offsets`) and its processing time. A
replay feeds a fresh operator, batch by batch and under the same batch ids, the
very rows each batch read (:mod:`pipelines.replay_source`) with that batch's
processing time. The stream gives its operator no explicit watermark, so the
replay gives none either: the watermark, the clock, idleness, lateness and
de-duplication follow from the same rows and times as they did in the stream.
With the job's own window spec the replay therefore writes the stream's panes,
late rows and quarantined rows; with a window override, what the new spec would
have written for the same arrivals.

State before ``from_batch``: the replay runs every recorded batch from the
operator's first one, and writes the outputs of the batches before
``from_batch`` to scratch tables that it removes afterwards. Copying the
stream's state as batch ``from_batch - 1`` left it would skip that work, but only
for the stream's own spec (a changed window spec has no such state anywhere) and
only by knowing every state table's layout (windows, buffers, per-key state, seen
ids, the clock); replaying the batches is exact for every plan and every spec.

Tables: ``<output root>/replay_<name>/{results,late,quarantine,state}``, never the
stream's. A replay run removes that folder first, so running one again (an
Airflow retry) recomputes it from scratch.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from pyspark.sql import SparkSession

from pipelines.drivers import describe, log, operator_for
from pipelines.job import Job
from pipelines.replay_diff import ReplayDiff, compare
from pipelines.replay_source import batch_rows
from pipelines.stream_offsets import BatchOffsets
from windowing.spark.lake import delta_lake_io
from windowing.spark import DeltaStore

REPLAY_FOLDER = "replay_{name}"
"""The folder of a replay's tables, in the job's output root."""
WARMUP_FOLDER = "_warmup"
"""Scratch outputs of the batches before ``from_batch``, in the replay's folder; removed afterwards."""
STREAM_KIND = "stream"


class ReplayRefused(ValueError):
    """The stream cannot be replayed as asked (the message names the batch or the argument, and what to do)."""


@dataclass(frozen=True)
class RecordedBatch:
    """What a stream batch recorded for its replay."""

    batch_id: int
    processing_time_ms: int | None
    offsets: BatchOffsets | dict
    """A single-input stream's :class:`BatchOffsets`; a join's, by side (None: the side read nothing)."""


@dataclass(frozen=True)
class ReplayReport:
    """One replay run.

    Attributes:
        from_batch / to_batch: the batches whose outputs the replay wrote.
        first_batch: the operator's first recorded batch (replayed from there to rebuild the state).
        results_path / late_path / quarantine_path: the replay's tables.
        spec: the window spec replayed (after overrides).
        diff: the differences against the stream's outputs, when asked for.
    """

    from_batch: int
    to_batch: int
    first_batch: int
    results_path: str
    late_path: str
    quarantine_path: str
    spec: str
    diff: ReplayDiff | None = None

    def as_dict(self) -> dict:
        return {"from_batch": self.from_batch, "to_batch": self.to_batch, "first_batch": self.first_batch,
                "results_path": self.results_path, "late_path": self.late_path,
                "quarantine_path": self.quarantine_path, "spec": self.spec,
                "diff": self.diff.as_dict() if self.diff is not None else None}


def replay_job(job: Job, name: str, window: dict | None = None) -> Job:
    """The job (with the window overrides) on the replay's own operator and tables.

    Raises:
        ValueError: ``name`` is not letters, digits and ``_``; a window override is not valid.
    """
    base = replay_base(job.output_root, name)
    return job.with_window(window).with_outputs(f"{job.operator_id}_replay_{name}", f"{base}/state",
                                                f"{base}/results", f"{base}/late", f"{base}/quarantine")


def replay_base(output_root: str, name: str) -> str:
    """The folder of replay ``name``'s tables in ``output_root`` (any job's, single-input or join).

    Raises:
        ValueError: ``name`` is not letters, digits and ``_``.
    """
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"replay name {name!r} must be letters, digits or '_' (it becomes a table folder)")
    return f"{output_root}/{REPLAY_FOLDER.format(name=name)}"


def replay_folder(replay: Job) -> str:
    """The folder holding every table of a replay (see :func:`replay_job`)."""
    return replay.state_root.rsplit("/", 1)[0]


def recorded_batches(spark: SparkSession, job: Job) -> list[dict]:
    """The stream's committed progress rows (one per batch, oldest first) as dicts.

    Of two rows of one batch (a writer that lost a race and died before withdrawing its
    row) the earlier commit counts.
    """
    store = DeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path, job.quarantine_path)
    if not delta_lake_io.table_exists(spark, store.progress_path):
        return []
    progress = spark.read.format("delta").load(store.progress_path)
    columns = ["batch_id", "processing_time_ms", "committed_at", "spec_description",
               *(c for c in ("run", "source_offsets") if c in progress.columns)]
    rows = sorted((r.asDict() for r in progress.select(*columns).collect()),
                  key=lambda r: (r["batch_id"], r["committed_at"]))
    first_of_batch: dict[int, dict] = {}
    for row in rows:
        first_of_batch.setdefault(row["batch_id"], row)
    return [first_of_batch[b] for b in sorted(first_of_batch)]


def plan_replay(job, rows: list[dict], from_batch: int | None, to_batch: int | None,
                parse_offsets: Callable[[str], object] = BatchOffsets.from_json) \
        -> tuple[list[RecordedBatch], int, int]:
    """The batches to run (from the operator's first to ``to_batch``) and the range whose outputs count.

    ``job``: a single-input or join job (its name and operator id name what is refused);
    ``rows``: its progress rows as :func:`recorded_batches` gives them; ``parse_offsets``: reads a
    row's ``source_offsets`` text.

    Raises:
        ReplayRefused: no committed batch, state another kind of run wrote, a range outside the
            committed batches, or a batch without recorded source offsets (naming it).
    """
    if not rows:
        raise ReplayRefused(f"job {job.name}: operator {job.operator_id!r} has no committed batch to replay; "
                            f"run the stream first (winjob stream)")
    for row in rows:
        run = json.loads(row["run"]) if row.get("run") else None
        if run is not None and run.get("kind") != STREAM_KIND:
            raise ReplayRefused(f"job {job.name}: batch {row['batch_id']} of operator {job.operator_id!r} was "
                                f"written by a {run.get('kind')} run, not a stream; only a stream's batches can "
                                f"be replayed (recompute a backfill's range with winjob reprocess)")
    first, last = rows[0]["batch_id"], rows[-1]["batch_id"]
    start = first if from_batch is None else from_batch
    end = last if to_batch is None else to_batch
    if not first <= start <= end <= last:
        raise ReplayRefused(f"job {job.name}: batches {start}..{end} are not within the stream's committed batches "
                            f"{first}..{last}; pass --from-batch and --to-batch within them, from <= to")
    batches = []
    for row in rows:
        if row["batch_id"] > end:
            break
        if not row.get("source_offsets"):
            raise ReplayRefused(
                f"job {job.name}: batch {row['batch_id']} of operator {job.operator_id!r} has no recorded source "
                f"offsets (it was committed by a release that did not record them), so which raw rows it read "
                f"is not known. A replay runs every batch from the operator's first ({first}) to rebuild its "
                f"state: only streams whose batches all recorded their offsets can be replayed (start the stream "
                f"again with --reset-state and a new checkpoint to record them from its first batch on)")
        batches.append(RecordedBatch(row["batch_id"], row["processing_time_ms"],
                                     parse_offsets(row["source_offsets"])))
    return batches, start, end


def replay_stream(spark: SparkSession, job: Job, name: str, from_batch: int | None = None,
                  to_batch: int | None = None, window: dict | None = None, diff: bool = False) -> ReplayReport:
    """Replay the stream's recorded batches into the replay's tables; see the module docstring.

    Args:
        job: the streaming job (its raw table, progress and checkpoint tell what to replay).
        name: names the replay's tables (``replay_<name>`` in the job's output root).
        from_batch / to_batch: the batches whose outputs are written (default: all committed).
        window: overrides of the job's ``[window]`` table (None or ``{}``: the job's own spec).
        diff: compare with the stream's outputs of the range (:attr:`ReplayReport.diff`).

    Raises:
        ReplayRefused: see :func:`plan_replay`.
        pipelines.replay_source.ReplaySourceError: a batch's rows cannot be read again.
        pipelines.errors.InputError: the raw table is missing.
    """
    from pipelines.drivers import require_raw_table
    require_raw_table(spark, job)
    replay = replay_job(job, name, window)
    batches, start, end = plan_replay(job, recorded_batches(spark, job), from_batch, to_batch)
    folder = replay_folder(replay)
    _remove(spark, folder)
    warmup = replay.with_outputs(replay.operator_id, replay.state_root, f"{folder}/{WARMUP_FOLDER}/results",
                                 f"{folder}/{WARMUP_FOLDER}/late", f"{folder}/{WARMUP_FOLDER}/quarantine")
    log(f"replay {job.name} batches {start}..{end} (state from batch {batches[0].batch_id}) with "
        f"{replay.spec.describe()} -> {folder}")
    run = replay_run(job.operator_id, start, end)
    operator = None
    for batch in batches:
        if operator is None or batch.batch_id == start:
            # Batches before `start` rebuild the state only; their outputs go to the scratch tables.
            operator = operator_for(spark, warmup if batch.batch_id < start else replay)
            operator.store.run = run
        operator.store.source_offsets = batch.offsets.to_json()
        rows = batch_rows(spark, job.source_path, batch.offsets, batch.batch_id)
        report = operator.process_batch(rows, batch.batch_id, processing_time_ms=batch.processing_time_ms)
        log(("replay (state only) " if batch.batch_id < start else "replay ") + describe(report))
    _remove(spark, f"{folder}/{WARMUP_FOLDER}")
    found = None
    if diff:
        stream_spec = job.spec.describe()
        found = compare(spark, output_paths(job), output_paths(replay), start, end, stream_spec, replay.spec.describe())
        log(f"replay {job.name}: {'no differences' if found.empty else 'differences'} against the stream")
    return ReplayReport(start, end, batches[0].batch_id, replay.results_path, replay.late_path,
                        replay.quarantine_path, replay.spec.describe(), found)


def replay_run(operator_id: str, start: int, end: int) -> str:
    """The run a replay records: which operator's batches, which range."""
    return json.dumps({"kind": "replay", "of": operator_id, "from_batch": start, "to_batch": end}, sort_keys=True)


def output_paths(job) -> dict[str, str]:
    """The ``results``, ``late`` and ``quarantine`` tables of a job (single-input or join), absolute."""
    return {"results": delta_lake_io.absolute(job.results_path), "late": delta_lake_io.absolute(job.late_path),
            "quarantine": delta_lake_io.absolute(job.quarantine_path)}


def _remove(spark: SparkSession, path: str) -> None:
    """Delete a folder of the replay's own (on any Hadoop file system)."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    p = jvm.org.apache.hadoop.fs.Path(delta_lake_io.absolute(path))
    p.getFileSystem(conf).delete(p, True)

