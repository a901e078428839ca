"""Exact replay of a join stream: its recorded micro-batches again, on a fresh join operator, into tables of its own.

A join stream is one query over both inputs; each committed batch recorded in its
progress row what it read of each side (the Delta source offsets by side,
:func:`pipelines.stream_offsets.named_offsets_json`) and its processing time. A
replay feeds a fresh :class:`~windowing.spark.joins.operator.JoinOperator`, batch
by batch under the same batch ids, the very rows each batch read of each side
(:func:`pipelines.replay_source.batch_rows` per input table; a side that had no
data yet: no rows) with that batch's processing time. The stream gives the
operator no explicit watermark, nor does the replay: with the job's own join spec
the replay writes the stream's results, late rows and quarantined rows.

As :mod:`pipelines.replay` does for a single-input stream: every recorded batch
from the operator's first one runs (to rebuild the state), the outputs of the
batches before ``from_batch`` go to scratch tables removed afterwards, and the
tables are ``<output root>/replay_<name>/{results,late,quarantine,state}``,
removed first (a rerun recomputes them). Another window: overrides of the
``[join.window]`` table (:meth:`pipelines.join_job.JoinJob.with_window`); another join
spec altogether: replay a copy of the job file with another ``[join]`` table and the
same ``[job]`` and ``[output]`` (it reads this stream's progress and inputs).
"""
from __future__ import annotations

import json
from dataclasses import replace

from pyspark.sql import DataFrame, SparkSession

from pipelines import logs
from pipelines.join_drivers import describe, operator_for, require_inputs, run_kinds
from pipelines.join_job import JoinJob
from pipelines.replay import WARMUP_FOLDER, ReplayReport, output_paths, plan_replay, replay_base
from pipelines.replay_diff import ResultIdentity, compare
from pipelines.replay_source import batch_rows
from pipelines.stream_offsets import BatchOffsets, named_offsets_from_json, named_offsets_json
from windowing.core.joins.sides import SIDES
from windowing.spark.joins.columns import BATCH_ID
from windowing.spark.joins.stores import SOURCE_OFFSETS, JoinDeltaStore
from windowing.spark.lake import delta_lake_io

REPLAY_KIND = "replay"
"""The run a replay's operator state belongs to (:func:`pipelines.join_drivers.claim_run`)."""


def replay_join_job(job: JoinJob, name: str) -> JoinJob:
    """The join on the replay's own operator, state, outputs and checkpoint.

    Raises:
        ValueError: ``name`` is not letters, digits and ``_``.
    """
    base = replay_base(job.output_root, name)
    return replace(job, operator_id=f"{job.operator_id}_replay_{name}", state_root=f"{base}/state",
                   results_path=f"{base}/results", late_path=f"{base}/late", quarantine_path=f"{base}/quarantine",
                   checkpoint_path=f"{base}/checkpoint")


def spec_text(job: JoinJob) -> str:
    """The join spec as the job file gives it (its ``[join]`` table as JSON), for reports."""
    join = job.definition.get("join")
    return json.dumps(join, sort_keys=True, default=str) if join else type(job.spec).__name__


def recorded_join_batches(spark: SparkSession, job: JoinJob) -> list[dict]:
    """The join stream's committed progress rows (one per batch, oldest first), each with the ``run`` that wrote
    the operator's state (from its run table) and ``source_offsets`` (None where the progress table lacks it)."""
    store = JoinDeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path,
                           job.quarantine_path)
    if not delta_lake_io.table_exists(spark, store.progress_path):
        return []
    progress = spark.read.format("delta").load(store.progress_path)
    columns = [BATCH_ID, "processing_time_ms", "committed_at",
               *([SOURCE_OFFSETS] if SOURCE_OFFSETS in progress.columns else [])]
    kinds = sorted(run_kinds(spark, job))
    run = json.dumps({"kind": kinds[0]}) if kinds else None   # the run column's form (pipelines.replay reads it)
    rows = sorted((r.asDict() for r in progress.select(*columns).collect()),
                  key=lambda r: (r["batch_id"], r["committed_at"]))
    first_of_batch: dict[int, dict] = {}
    for row in rows:
        first_of_batch.setdefault(row["batch_id"], {**row, "run": run})
    return [first_of_batch[b] for b in sorted(first_of_batch)]


def side_rows(spark: SparkSession, path: str, offsets: BatchOffsets | None, batch_id: int) -> DataFrame:
    """The rows of one input table batch ``batch_id`` read (``offsets`` None: none, the side had no data yet)."""
    if offsets is None:
        return spark.read.format("delta").load(path).limit(0)
    return batch_rows(spark, path, offsets, batch_id)


def replay_join_stream(spark: SparkSession, job: JoinJob, name: str, from_batch: int | None = None,
                       to_batch: int | None = None, diff: bool = False,
                       window: dict | None = None) -> ReplayReport:
    """Replay the join stream's recorded batches into the replay's tables; see the module docstring.

    Args:
        job: the streaming join job (its inputs and progress tell what to replay).
        name: names the replay's tables (``replay_<name>`` in the job's output root).
        from_batch / to_batch: the batches whose outputs are written (default: all committed).
        diff: compare with the stream's outputs of the range (:attr:`ReplayReport.diff`).
        window: overrides of the ``[join.window]`` table: the replay runs with that window.

    Raises:
        pipelines.replay.ReplayRefused: no committed batch, state a backfill wrote, a range outside the
            committed batches, or a batch without recorded source offsets (naming it).
        pipelines.replay_source.ReplaySourceError: a batch's rows cannot be read again.
        pipelines.errors.InputError: an input table is missing.
        ValueError: a window override that is not valid, or an interval join's (naming it).
    """
    replay = replay_join_job(job.with_window(window), name)
    batches, start, end = plan_replay(job, recorded_join_batches(spark, job), from_batch, to_batch,
                                      parse_offsets=named_offsets_from_json)
    require_inputs(spark, job)
    folder = replay_base(job.output_root, name)
    delta_lake_io.delete_folder(spark, folder)
    scratch = f"{folder}/{WARMUP_FOLDER}"
    warmup = replace(replay, results_path=f"{scratch}/results", late_path=f"{scratch}/late",
                     quarantine_path=f"{scratch}/quarantine")
    logs.info(f"replay {job.name} batches {start}..{end} (state from batch {batches[0].batch_id}) -> {folder}")
    operator = None
    for batch in batches:
        if operator is None or batch.batch_id == start:
            # Batches before `start` rebuild the state only; their outputs go to the scratch tables.
            operator = operator_for(spark, warmup if batch.batch_id < start else replay, REPLAY_KIND)
        operator.store.source_offsets = named_offsets_json(batch.offsets)
        rows = [side_rows(spark, job.input_paths[side.name], batch.offsets.get(side.name), batch.batch_id)
                for side in SIDES]
        report = operator.process_batch(*rows, batch.batch_id, processing_time_ms=batch.processing_time_ms)
        logs.info(("replay (state only) " if batch.batch_id < start else "replay ") + describe(report))
    delta_lake_io.delete_folder(spark, scratch)
    found = None
    if diff:
        found = compare(spark, output_paths(job), output_paths(replay), start, end, spec_text(job),
                        spec_text(replay), ResultIdentity(job.family.identity, job.family.result_noun))
        logs.info(f"replay {job.name}: {'no differences' if found.empty else 'differences'} against the stream")
    return ReplayReport(start, end, batches[0].batch_id, replay.results_path, replay.late_path,
                        replay.quarantine_path, spec_text(replay), found)

