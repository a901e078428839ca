"""Data quality over time: one HTML page per job, beside its Data Docs (``quality_report.html``).

For the job's stream and for its backfill (the operator ``<operator id>_backfill``, when it has
run), from the operator's ``progress`` table (row accounting and watermark of every batch) and its
quarantine table (rows per batch and reason), it plots:

* rows per batch: in windows, late, dropped late, unassigned, quarantined
  (the batch's metrics; they add up to the batch's input rows);
* quarantined rows per batch by reason;
* watermark lag per batch: the batch's processing time minus the watermark
  after it, in the unit that suits its range (batches without a processing time or with an
  infinite watermark, such as a backfill's last chunk, have no point);

and, from the job's ``validation_runs`` table, expectations failed per validation run (critical and
warning) of both. Each chart is followed by its numbers as a table; a colour means one thing on
every chart (:mod:`pipelines.visual.colours`). The page is self-contained (inline SVG and CSS) and
opens offline. :func:`write_report` is what ``winjob report``, the demo and the quality DAG call;
until it has run, the Data Docs link to :func:`write_placeholder`'s page.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pipelines.visual import colours
from pipelines.visual.charts import Series, duration_unit, line, stacked_bars
from pipelines.visual.svg import html_table, page, text, time_label

REPORT_FILE = "quality_report.html"
ROW_OUTCOMES = (("accepted_rows", "in windows", colours.ON_TIME), ("late_rows", "late", colours.LATE_ROW),
                ("dropped_late_rows", "dropped late", colours.DROPPED_LATE),
                ("unassigned_rows", "unassigned", colours.UNASSIGNED),
                ("quarantined_rows", "quarantined", colours.QUARANTINED))
MIN_MS, MAX_MS = -(2**63), 2**63 - 1
PLACEHOLDER_MARK = "<!-- placeholder: no data-quality page built yet -->"


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
class OperatorQuality:
    """The committed batches of one operator of the job: its stream or its backfill."""

    role: str
    operator_id: str
    batches: tuple[BatchQuality, ...]


@dataclass(frozen=True)
class ValidationRun:
    """One validation run (all its suites): when, what it checked, how many expectations failed."""

    run_id: str
    validated_at: str
    operator_id: str
    run_kind: str
    batch_id: int | None
    evaluated: int
    failed_critical: int
    failed_warning: int
    failed_names: tuple[str, ...]

    @property
    def label(self) -> str:
        """Short, for a chart's axis: the run kind and its batch (``all``: whole tables)."""
        return f"{self.run_kind} " + (f"b{self.batch_id}" if self.batch_id is not None else "all")


@dataclass(frozen=True)
class QualityReport:
    job: str
    operators: tuple[OperatorQuality, ...]
    runs: tuple[ValidationRun, ...]

    @property
    def batches(self) -> tuple[BatchQuality, ...]:
        """The stream's batches (none when the stream has not run)."""
        return next((o.batches for o in self.operators if o.role == "stream"), ())


def report_path(job) -> Path:
    """Where the page goes: beside the Data Docs ``index.html`` of the job, which links to it."""
    from pipelines.quality import data_docs_dir
    return Path(data_docs_dir(job)) / REPORT_FILE


def operators_of(job) -> list[tuple[str, object]]:
    """``(role, job)`` of the operators the page covers: the job's stream and its backfill."""
    from pipelines.orchestration import backfill_job
    return [("stream", job), ("backfill", backfill_job(job))]


def _operator_batches(spark, job) -> tuple[BatchQuality, ...]:
    from pyspark.sql import functions as F

    from windowing.spark.lake import delta_lake_io
    from windowing.spark import DeltaStore

    store = DeltaStore(spark, job.operator_id, job.state_root, job.results_path, job.late_path, job.quarantine_path)
    if not delta_lake_io.table_exists(spark, store.progress_path):
        return ()
    reasons: dict[int, dict] = {}
    if job.quarantine_path and delta_lake_io.table_exists(spark, job.quarantine_path):
        for r in (spark.read.format("delta").load(job.quarantine_path).groupBy("batch_id", "reason")
                  .count().collect()):
            reasons.setdefault(r["batch_id"], {})[r["reason"]] = r["count"]
    return tuple(BatchQuality(p["batch_id"], p["at"], json.loads(p["metrics"] or "{}"), p["watermark_ms"],
                              p["processing_time_ms"], reasons.get(p["batch_id"], {}))
                 for p in (spark.read.format("delta").load(store.progress_path)
                           .select("batch_id", "watermark_ms", "processing_time_ms", "metrics",
                                   F.date_format("committed_at", "yyyy-MM-dd HH:mm:ss").alias("at"))
                           .orderBy("batch_id").collect()))


def load_report(spark, job) -> QualityReport:
    """Read the progress and quarantine tables of the job's stream and backfill, and its validation_runs
    table (missing tables read as empty; an operator that never ran is left out)."""
    from pyspark.sql import functions as F

    from pipelines.quality import runs_table_path
    from windowing.spark.lake import delta_lake_io

    operators = []
    for role, operator in operators_of(job):
        batches = _operator_batches(spark, operator)
        if batches or role == "stream":
            operators.append(OperatorQuality(role, operator.operator_id, batches))
    runs = []
    path = runs_table_path(job)
    if delta_lake_io.table_exists(spark, path):
        ids = [o.operator_id for _, o in operators_of(job)]
        grouped = (spark.read.format("delta").load(path).where(F.col("operator_id").isin(ids))
                   .groupBy("run_id")
                   .agg(F.date_format(F.min("validated_at"), "yyyy-MM-dd HH:mm:ss").alias("at"),
                        F.first("operator_id").alias("operator_id"),
                        F.first("run_kind").alias("run_kind"), F.first("batch_id").alias("batch_id"),
                        F.sum("evaluated_expectations").alias("evaluated"),
                        F.sum("failed_critical").alias("critical"), F.sum("failed_warning").alias("warning"),
                        F.flatten(F.collect_list("failed_expectation_names")).alias("names"))
                   .orderBy("at", "run_id"))
        for r in grouped.collect():
            runs.append(ValidationRun(r["run_id"], r["at"], r["operator_id"], r["run_kind"], r["batch_id"],
                                      int(r["evaluated"] or 0), int(r["critical"] or 0), int(r["warning"] or 0),
                                      tuple(r["names"] or ())))
    return QualityReport(job.name, tuple(operators), tuple(runs))


def _operator_sections(operator: OperatorQuality) -> list[str]:
    batches = operator.batches
    heading = f"{operator.role.capitalize()} (operator {operator.operator_id})"
    if not batches:
        return [f"<h2>{text(heading)}</h2>", "<p>No committed batch yet.</p>"]
    categories = [f"b{b.batch_id}" for b in batches]
    sections = [f"<h2>{text(heading)}: {len(batches)} committed batch(es)</h2>", "<h3>Rows per batch</h3>",
                stacked_bars(f"{operator.role}: rows per batch by outcome", categories, [
                    Series(label, tuple(b.metrics.get(name, 0) for b in batches), colour)
                    for name, label, colour in ROW_OUTCOMES]),
                html_table(["batch", "committed at", "input"] + [label for _, label, _ in ROW_OUTCOMES] + ["panes"],
                           [[b.batch_id, b.committed_at, b.metrics.get("input_rows", 0)]
                            + [b.metrics.get(name, 0) for name, _, _ in ROW_OUTCOMES]
                            + [b.metrics.get("panes_emitted", 0)] for b in batches], text_columns=2)]
    reasons = sorted({reason for b in batches for reason in b.quarantined_by_reason})
    sections.append("<h3>Quarantined rows by reason</h3>")
    if reasons:
        shades = colours.QUARANTINE_REASONS
        sections.append(stacked_bars(f"{operator.role}: quarantined rows per batch by reason", categories, [
            Series(reason, tuple(b.quarantined_by_reason.get(reason, 0) for b in batches), shades[i % len(shades)])
            for i, reason in enumerate(reasons)]))
        sections.append(html_table(["batch"] + reasons, [[b.batch_id] + [b.quarantined_by_reason.get(r, 0)
                                                                         for r in reasons]
                                                        for b in batches if b.quarantined_by_reason]))
    else:
        sections.append("<p>No row was quarantined.</p>")
    lags = [b.watermark_lag_s for b in batches]
    unit, size = duration_unit(max((abs(v) for v in lags if v is not None), default=0))
    sections.append("<h3>Watermark lag behind processing time</h3>")
    sections.append(line(f"{operator.role}: watermark lag per batch", categories,
                         [Series("lag", tuple(None if v is None else v / size for v in lags), colours.WATERMARK)],
                         f"lag ({unit})"))
    sections.append(html_table(["batch", "processing time", "watermark (event time)", f"lag ({unit})"],
                               [[b.batch_id, time_label(b.processing_time_ms, True), time_label(b.watermark_ms, True),
                                 "" if b.watermark_lag_s is None else f"{b.watermark_lag_s / size:,.3f}"]
                                for b in batches], text_columns=3))
    return sections


def render_report(report: QualityReport) -> str:
    """The HTML page of :class:`QualityReport` (charts, then their numbers)."""
    covered = ", ".join(f"{o.role} {len(o.batches)} committed batch(es)" for o in report.operators)
    sections = [f"<p class=\"note\">{text(covered)}; {len(report.runs)} validation run(s). Charts read left to "
                "right in batch (or run) order; hover a bar or a point for its numbers. "
                "<a href=\"index.html\">Data Docs</a></p>"]
    for operator in report.operators:
        sections += _operator_sections(operator)
    sections.append("<h2>Expectations failed per validation run</h2>")
    if report.runs:
        labels = [r.label for r in report.runs]
        sections.append(stacked_bars("expectations failed per validation run", labels, [
            Series("critical", tuple(r.failed_critical for r in report.runs), colours.FAILED_CRITICAL),
            Series("warning", tuple(r.failed_warning for r in report.runs), colours.FAILED_WARNING)],
            "expectations"))
        sections.append(html_table(["run", "validated at", "operator", "kind", "batch", "evaluated", "critical",
                                    "warning", "failed expectations"],
                                   [[r.run_id, r.validated_at, r.operator_id, r.run_kind, r.batch_id, r.evaluated,
                                     r.failed_critical, r.failed_warning, ", ".join(sorted(set(r.failed_names)))]
                                    for r in report.runs], text_columns=4))
    else:
        sections.append("<p>No validation run is recorded.</p>")
    return page(f"Data quality over time: {report.job}", sections)


def write_report(spark, job, out: str | Path | None = None) -> Path:
    """Build the page for ``job`` and write it (default: :func:`report_path`); return its path."""
    path = Path(out) if out is not None else report_path(job)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(load_report(spark, job)))
    return path


def write_placeholder(job) -> Path | None:
    """Write a page at :func:`report_path` saying how to build the report, unless a page is there already.

    The Data Docs link to the report from every page; this keeps the link whole until the
    report is first built. Returns the path written, or None.
    """
    path = report_path(job)
    if path.exists():
        return None
    command = f"winjob report --job {job.source_file}" if job.source_file else "winjob report --job <job file>"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(f"Data quality over time: {job.name}", [
        PLACEHOLDER_MARK,
        f"<p>This page has not been built yet. Build it with <code>{text(command)}</code>; the job's quality "
        "DAG rebuilds it after every validation, and <code>winjob demo</code> builds it for the demo.</p>",
        "<p><a href=\"index.html\">Data Docs</a></p>"]))
    return path
