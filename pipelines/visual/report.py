"""Data quality over time: one HTML page per job, beside its Data Docs (``quality_report.html``).

From the job's ``progress`` table (row accounting and watermark of every
batch), its quarantine and late tables (rows per batch and reason) and its
``validation_runs`` table (expectations failed per validation run), it plots:

* rows per batch: in windows, late, dropped late, unassigned, quarantined
  (the batch's metrics; they add up to the batch's input rows);
* quarantined rows per batch by reason;
* watermark lag per batch: the batch's processing time minus the watermark
  after it, in seconds (batches without a processing time or with an
  infinite watermark, such as a backfill's flush, have no point);
* expectations failed per validation run, critical and warning.

Each chart is followed by its numbers as a table. The page is self-contained
(inline SVG and CSS) and opens offline. :func:`write_report` is what
``winjob report`` and the quality DAG call.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pipelines.visual.charts import PALETTE, Series, line, stacked_bars
from pipelines.visual.svg import html_table, page, text, time_label

REPORT_FILE = "quality_report.html"
ROW_OUTCOMES = (("accepted_rows", "in windows", "#2ca02c"), ("late_rows", "late", "#ff7f0e"),
                ("dropped_late_rows", "dropped late", "#d62728"), ("unassigned_rows", "unassigned", "#7f7f7f"),
                ("quarantined_rows", "quarantined", "#9467bd"))
MIN_MS, MAX_MS = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class BatchQuality:
    """One committed batch: its row accounting, watermark lag and quarantined rows by reason."""

    batch_id: int
    committed_at: str
    metrics: dict
    watermark_ms: int
    processing_time_ms: int | None
    quarantined_by_reason: dict

    @property
    def watermark_lag_s(self) -> float | None:
        if self.processing_time_ms is None or not MIN_MS < self.watermark_ms < MAX_MS:
            return None
        return (self.processing_time_ms - self.watermark_ms) / 1000


@dataclass(frozen=True)
class ValidationRun:
    """One validation run (all its suites): when, what it checked, how many expectations failed."""

    run_id: str
    validated_at: str
    run_kind: str
    batch_id: int | None
    evaluated: int
    failed_critical: int
    failed_warning: int
    failed_names: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.run_kind}" + (f" b{self.batch_id}" if self.batch_id is not None else "") + \
            f" {self.validated_at[5:16]}"


@dataclass(frozen=True)
class QualityReport:
    job: str
    batches: tuple[BatchQuality, ...]
    runs: tuple[ValidationRun, ...]


def report_path(job) -> Path:
    """Where the page goes: beside the Data Docs ``index.html`` of the job, which links to it."""
    from pipelines.quality import data_docs_dir
    return Path(data_docs_dir(job)) / REPORT_FILE


def load_report(spark, job) -> QualityReport:
    """Read the job's progress, quarantine and validation_runs tables (missing tables read as empty)."""
    from pyspark.sql import functions as F

    from pipelines.quality import runs_table_path
    from windowing.spark import delta_io
    from windowing.spark.stores import DeltaStore

    store = DeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path, job.quarantine_path)
    reasons: dict[int, dict] = {}
    if job.quarantine_path and delta_io.table_exists(spark, job.quarantine_path):
        for r in (spark.read.format("delta").load(job.quarantine_path).groupBy("batch_id", "reason")
                  .count().collect()):
            reasons.setdefault(r["batch_id"], {})[r["reason"]] = r["count"]
    batches = []
    if delta_io.table_exists(spark, store.progress_path):
        for p in (spark.read.format("delta").load(store.progress_path)
                  .select("batch_id", "watermark_ms", "processing_time_ms", "metrics",
                          F.date_format("committed_at", "yyyy-MM-dd HH:mm:ss").alias("at"))
                  .orderBy("batch_id").collect()):
            batches.append(BatchQuality(p["batch_id"], p["at"], json.loads(p["metrics"] or "{}"), p["watermark_ms"],
                                        p["processing_time_ms"], reasons.get(p["batch_id"], {})))
    runs = []
    path = runs_table_path(job)
    if delta_io.table_exists(spark, path):
        grouped = (spark.read.format("delta").load(path).where(F.col("operator_id") == job.operator_id)
                   .groupBy("run_id")
                   .agg(F.date_format(F.min("validated_at"), "yyyy-MM-dd HH:mm:ss").alias("at"),
                        F.first("run_kind").alias("run_kind"), F.first("batch_id").alias("batch_id"),
                        F.sum("evaluated_expectations").alias("evaluated"),
                        F.sum("failed_critical").alias("critical"), F.sum("failed_warning").alias("warning"),
                        F.flatten(F.collect_list("failed_expectation_names")).alias("names"))
                   .orderBy("at", "run_id"))
        for r in grouped.collect():
            runs.append(ValidationRun(r["run_id"], r["at"], r["run_kind"], r["batch_id"], int(r["evaluated"] or 0),
                                      int(r["critical"] or 0), int(r["warning"] or 0), tuple(r["names"] or ())))
    return QualityReport(job.name, tuple(batches), tuple(runs))


def render_report(report: QualityReport) -> str:
    """The HTML page of :class:`QualityReport` (charts, then their numbers)."""
    sections = [f"<p class=\"note\">{len(report.batches)} committed batch(es), {len(report.runs)} validation "
                "run(s). Charts read left to right in batch (or run) order; hover a bar for its numbers. "
                "<a href=\"index.html\">Data Docs</a></p>"]
    categories = [f"b{b.batch_id}" for b in report.batches]
    sections.append("<h2>Rows per batch</h2>")
    sections.append(stacked_bars("rows per batch by outcome", categories, [
        Series(label, tuple(b.metrics.get(name, 0) for b in report.batches), colour)
        for name, label, colour in ROW_OUTCOMES]))
    sections.append(html_table(["batch", "committed at", "input"] + [label for _, label, _ in ROW_OUTCOMES]
                               + ["panes"],
                               [[b.batch_id, b.committed_at, b.metrics.get("input_rows", 0)]
                                + [b.metrics.get(name, 0) for name, _, _ in ROW_OUTCOMES]
                                + [b.metrics.get("panes_emitted", 0)] for b in report.batches], text_columns=2))
    reasons = sorted({reason for b in report.batches for reason in b.quarantined_by_reason})
    sections.append("<h2>Quarantined rows by reason</h2>")
    if reasons:
        sections.append(stacked_bars("quarantined rows per batch by reason", categories, [
            Series(reason, tuple(b.quarantined_by_reason.get(reason, 0) for b in report.batches),
                   PALETTE[i % len(PALETTE)]) for i, reason in enumerate(reasons)]))
        sections.append(html_table(["batch"] + reasons, [[b.batch_id] + [b.quarantined_by_reason.get(r, 0)
                                                                         for r in reasons]
                                                        for b in report.batches if b.quarantined_by_reason]))
    else:
        sections.append("<p>No row was quarantined.</p>")
    sections.append("<h2>Watermark lag behind processing time</h2>")
    sections.append(line("watermark lag per batch", categories,
                         [Series("lag", tuple(b.watermark_lag_s for b in report.batches), "#1f77b4")], "seconds"))
    sections.append(html_table(["batch", "processing time", "watermark", "lag (s)"],
                               [[b.batch_id, time_label(b.processing_time_ms, True),
                                 time_label(b.watermark_ms, True),
                                 "" if b.watermark_lag_s is None else f"{b.watermark_lag_s:.3f}"]
                                for b in report.batches], text_columns=3))
    sections.append("<h2>Expectations failed per validation run</h2>")
    if report.runs:
        labels = [r.label for r in report.runs]
        sections.append(stacked_bars("expectations failed per validation run", labels, [
            Series("critical", tuple(r.failed_critical for r in report.runs), "#d62728"),
            Series("warning", tuple(r.failed_warning for r in report.runs), "#ff7f0e")], "expectations"))
        sections.append(html_table(["run", "validated at", "kind", "batch", "evaluated", "critical", "warning",
                                    "failed expectations"],
                                   [[r.run_id, r.validated_at, r.run_kind, r.batch_id, r.evaluated, r.failed_critical,
                                     r.failed_warning, ", ".join(sorted(set(r.failed_names)))] for r in report.runs],
                                   text_columns=3))
    else:
        sections.append("<p>No validation run is recorded.</p>")
    return page(f"Data quality over time: {report.job}", sections)


def write_report(spark, job, out: str | Path | None = None) -> Path:
    """Build the page for ``job`` and write it (default: :func:`report_path`); return its path."""
    path = Path(out) if out is not None else report_path(job)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(load_report(spark, job)))
    return path
