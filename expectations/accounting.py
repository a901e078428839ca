"""Suite ``row_accounting``: the output tables hold what each committed batch recorded (CRITICAL).

Each committed batch's progress row records its row accounting
(``windowing.core.records.BatchMetrics``). Per batch, the tables must agree:

* results rows of the batch = ``panes_emitted`` (output mode ``append``);
  at most ``panes_emitted`` (``final``: only final panes are written); not
  checked for ``upsert`` (a later pane of a window replaces the row);
* late-table rows of the batch = ``late_rows``;
* quarantine-table rows of the batch = ``quarantined_rows``;
* the raw rows the run read = ``input_rows``, where that can be told: a
  stream batch validated while it runs (its micro-batch), and a backfill's
  whole run (the rows it fed against the sum over all its batches).

A lost result row, a duplicated late row or a missing quarantined row fails
the suite, naming the batch. Tables that reprocessing replaced a range of
(an overwrite commit) hold rows of another operator: their comparison is
skipped, and the notes say so. The counting runs in Spark; Great
Expectations validates the per-batch rows.
"""
from __future__ import annotations

from expectations.base import CRITICAL, Check, Scope, UnexpectedRowsQuery, read_delta, suite
from windowing.core.spec import APPEND, FINAL

SUITE = "row_accounting"
BATCH_ID = "batch_id"
ALL_BATCHES = "all batches"
"""The ``scope`` of the row that compares a whole backfill's input with the rows it fed."""


class ExpectResultRowsToMatchPanesEmitted(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT batch_id, panes_emitted, result_rows FROM {batch} "
                                  "WHERE result_rows IS NOT NULL AND result_rows <> panes_emitted")
    description: str = "each batch's rows in the results table = the panes its progress row says it emitted"


class ExpectLateRowsToMatchProgress(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT batch_id, late_rows, late_table_rows FROM {batch} "
                                  "WHERE late_table_rows IS NOT NULL AND late_table_rows <> late_rows")
    description: str = "each batch's rows in the late table = the late rows its progress row recorded"


class ExpectQuarantinedRowsToMatchProgress(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT batch_id, quarantined_rows, quarantine_table_rows FROM {batch} "
                                  "WHERE quarantine_table_rows IS NOT NULL AND quarantine_table_rows <> quarantined_rows")
    description: str = "each batch's rows in the quarantine table = the quarantined rows its progress row recorded"


class ExpectInputRowsToMatchRawRowsRead(UnexpectedRowsQuery):
    unexpected_rows_query: str = ("SELECT batch_id, scope, input_rows, raw_rows_read FROM {batch} "
                                  "WHERE raw_rows_read IS NOT NULL AND input_rows <> raw_rows_read")
    description: str = "the input rows the progress recorded = the raw rows the run read (where that is known)"


def expectations(job) -> list:
    found = []
    mode = job.spec.output_mode
    if mode == APPEND:
        found.append(ExpectResultRowsToMatchPanesEmitted(severity=CRITICAL))
    elif mode == FINAL:
        found.append(ExpectResultRowsToMatchPanesEmitted(
            unexpected_rows_query=("SELECT batch_id, panes_emitted, result_rows FROM {batch} "
                                   "WHERE result_rows IS NOT NULL AND result_rows > panes_emitted"),
            description="each batch's rows in the results table are at most the panes it emitted (final panes only)",
            severity=CRITICAL))
    found += [ExpectLateRowsToMatchProgress(severity=CRITICAL), ExpectQuarantinedRowsToMatchProgress(severity=CRITICAL),
              ExpectInputRowsToMatchRawRowsRead(severity=CRITICAL)]
    return found


def replaced_by_reprocessing(spark, path: str) -> bool:
    """Whether a commit of the table overwrote part of it (reprocessing's ``replaceWhere``)."""
    from delta.tables import DeltaTable
    history = DeltaTable.forPath(spark, path).history().select("operation", "operationParameters")
    return history.where("operation = 'WRITE' AND operationParameters['mode'] = 'Overwrite'").limit(1).count() > 0


def _rows_per_batch(spark, path: str, batch_id: int | None, name: str, notes: dict):
    from pyspark.sql import functions as F
    table = read_delta(spark, path)
    if table is None:
        return None
    if batch_id is None and replaced_by_reprocessing(spark, path):
        notes[name] = f"not compared: reprocessing replaced a range of {path}"
        return spark.createDataFrame([], f"{BATCH_ID} bigint, {name} bigint, {name}_known boolean")
    if batch_id is not None:
        table = table.where(F.col(BATCH_ID) == batch_id)
    return table.groupBy(BATCH_ID).agg(F.count(F.lit(1)).alias(name)).withColumn(f"{name}_known", F.lit(True))


def accounting_frame(spark, job, scope: Scope, progress, notes: dict):
    """One row per committed batch (of ``scope.batch_id`` only, if set): recorded metrics and table row counts.

    A count column is null where the comparison does not apply (a table that
    reprocessing replaced a range of); a missing table counts 0 rows.
    """
    from pyspark.sql import functions as F
    metrics = "input_rows BIGINT, panes_emitted BIGINT, late_rows BIGINT, quarantined_rows BIGINT"
    batches = (progress.select(BATCH_ID, F.from_json("metrics", metrics).alias("m"))
               .dropDuplicates([BATCH_ID])
               .select(BATCH_ID, F.lit("batch").alias("scope"), "m.input_rows", "m.panes_emitted", "m.late_rows",
                       "m.quarantined_rows"))
    if scope.batch_id is not None:
        batches = batches.where(F.col(BATCH_ID) == scope.batch_id)
    frame = batches
    for name, path in (("result_rows", job.results_path), ("late_table_rows", job.late_path),
                       ("quarantine_table_rows", job.quarantine_path)):
        counts = _rows_per_batch(spark, path, scope.batch_id, name, notes)
        if counts is None:
            frame = frame.withColumn(name, F.lit(0).cast("long"))
            continue
        replaced = name in notes
        frame = (frame.join(counts, BATCH_ID, "left")
                 .withColumn(name, F.lit(None).cast("long") if replaced else F.coalesce(F.col(name), F.lit(0)))
                 .drop(f"{name}_known"))
    raw_read = None
    if scope.raw is not None and scope.batch_id is not None and scope.run_kind == "stream":
        raw_read = scope.raw.count()        # the micro-batch this run read
        frame = frame.withColumn("raw_rows_read", F.lit(raw_read).cast("long"))
    else:
        frame = frame.withColumn("raw_rows_read", F.lit(None).cast("long"))
    if scope.raw is not None and scope.batch_id is None and scope.reconcile:
        # A backfill that fed every batch of the operator: all its rows against all batches' input.
        raw_read = scope.raw.count()
        total = batches.agg(F.coalesce(F.sum("input_rows"), F.lit(0)).alias("input_rows")).select(
            F.lit(None).cast("long").alias(BATCH_ID), F.lit(ALL_BATCHES).alias("scope"), "input_rows",
            *[F.lit(None).cast("long").alias(c) for c in ("panes_emitted", "late_rows", "quarantined_rows",
                                                           "result_rows", "late_table_rows",
                                                           "quarantine_table_rows")],
            F.lit(raw_read).cast("long").alias("raw_rows_read"))
        frame = frame.unionByName(total)
    if raw_read is not None:
        notes["raw_rows_read"] = raw_read
    return frame


def checks(spark, job, scope: Scope) -> list[Check]:
    built = suite(SUITE, expectations(job))
    base = f"{job.state_root.rstrip('/')}/{job.operator_id}"
    progress = read_delta(spark, f"{base}/progress")
    if progress is None:
        return [Check(built, f"{base}/progress", None, skip_reason="no committed batch")]
    notes: dict = {}
    frame = accounting_frame(spark, job, scope, progress, notes)
    return [Check(built, f"{base}/progress", frame, notes=notes)]
