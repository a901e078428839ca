"""Validate a job's Delta tables with Great Expectations, keep the results, build Data Docs.

:func:`validate_job` is what the drivers, the CLI (``winjob validate``) and
the Airflow DAGs call. It runs the suites of ``expectations/`` with Great
Expectations' Spark execution engine on the written Delta tables (read as
Spark DataFrames; checks that need joins or counts are reduced in Spark
first), then:

* appends one row per suite to the Delta table ``<state_root>/validation_runs``
  (:data:`RUNS_SCHEMA`);
* builds Data Docs HTML into ``<output root>/data_docs`` (``index.html``);
  the Great Expectations project (suites, results) is ``<output root>/gx``;
* raises :class:`DataQualityError` naming every failed CRITICAL expectation
  (suite, expectation type, column); WARNING failures are only reported.
"""
from __future__ import annotations

import datetime as dt
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from expectations import SUITE_MODULES, SUITES
from expectations.base import CRITICAL, DETAILS, PASS_OR_FAIL, Check, Scope
from pipelines import frames_ahead, gx_results
from pipelines.job import Job, is_uri
from windowing.spark.input.batch_settings import ScopedSettings

RUN_KINDS = ("stream", "backfill", "reprocess", "adhoc")
DEFAULT_SUITES = ("raw_events", "window_results", "late_rows", "quarantine_rows", "state_windows",
                  "state_progress", "row_accounting", "watermark_jumps")
DATA_DOCS_SITE = "local_site"

RUNS_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType(), False),
    T.StructField("job", T.StringType(), False),
    T.StructField("operator_id", T.StringType(), False),
    T.StructField("suite", T.StringType(), False),
    T.StructField("table_path", T.StringType(), False),
    T.StructField("success", T.BooleanType(), True),          # null: skipped (table missing, not applicable)
    T.StructField("skipped_reason", T.StringType(), True),
    T.StructField("evaluated_expectations", T.LongType(), False),
    T.StructField("failed_expectations", T.LongType(), False),
    T.StructField("failed_critical", T.LongType(), False),
    T.StructField("failed_warning", T.LongType(), False),
    T.StructField("failed_expectation_names", T.ArrayType(T.StringType()), False),
    T.StructField("severity", T.StringType(), True),           # worst failed severity, null when all passed
    T.StructField("batch_id", T.LongType(), True),
    T.StructField("run_kind", T.StringType(), False),
    T.StructField("validated_at", T.TimestampType(), False),
    T.StructField("data_docs_path", T.StringType(), True),
])


class DataQualityError(RuntimeError):
    """A CRITICAL expectation failed; the message names each (suite, expectation type, column)."""

    def __init__(self, message: str, report: "ValidationReport"):
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class FailedExpectation:
    suite: str
    expectation_type: str
    column: str | None
    severity: str
    detail: str

    def describe(self) -> str:
        where = f" column {self.column!r}" if self.column else ""
        return f"{self.suite}: {self.expectation_type}{where} ({self.detail})"


@dataclass
class SuiteResult:
    suite: str
    table: str
    success: bool | None
    evaluated: int
    failed: list[FailedExpectation]
    skipped_reason: str | None = None

    @property
    def failed_critical(self) -> list[FailedExpectation]:
        return [f for f in self.failed if f.severity == CRITICAL.value]

    @property
    def failed_warning(self) -> list[FailedExpectation]:
        return [f for f in self.failed if f.severity != CRITICAL.value]


@dataclass
class ValidationReport:
    """The outcome of one :func:`validate_job` call."""

    run_id: str
    job: str
    run_kind: str
    batch_id: int | None
    suites: list[SuiteResult] = field(default_factory=list)
    data_docs_path: str | None = None
    runs_table_path: str | None = None
    seconds: float = 0.0

    @property
    def critical_failures(self) -> list[FailedExpectation]:
        return [f for s in self.suites for f in s.failed_critical]

    @property
    def warnings(self) -> list[FailedExpectation]:
        return [f for s in self.suites for f in s.failed_warning]

    @property
    def success(self) -> bool:
        """No CRITICAL expectation failed (warnings allowed)."""
        return not self.critical_failures

    def one_line(self) -> str:
        """The outcome in one line: suites passed, expectations met, what failed or warned."""
        ran = [s for s in self.suites if s.success is not None]
        met = sum(s.evaluated - len(s.failed) for s in ran)
        total = sum(s.evaluated for s in ran)
        state = "FAILED" if self.critical_failures else ("passed with warnings" if self.warnings else "passed")
        text = (f"data quality {state}: {met}/{total} expectations met in {len(ran)} suites"
                + (f" ({len(self.suites) - len(ran)} skipped)" if len(ran) < len(self.suites) else "")
                + f", {self.seconds:.1f}s")
        worst = self.critical_failures or self.warnings
        if worst:
            text += "; " + "; ".join(f.describe() for f in worst[:3]) + (" ..." if len(worst) > 3 else "")
        return text

    def summary(self) -> str:
        lines = [f"validation {self.run_id} of job {self.job} ({self.run_kind}"
                 + (f", batch {self.batch_id}" if self.batch_id is not None else "") + f"), {self.seconds:.1f}s"]
        for s in self.suites:
            if s.success is None:
                lines.append(f"  SKIP {s.suite:16s} {s.skipped_reason}")
                continue
            state = "PASS" if s.success else ("FAIL" if s.failed_critical else "WARN")
            lines.append(f"  {state} {s.suite:16s} {s.evaluated - len(s.failed)}/{s.evaluated} expectations met"
                         f"  [{s.table}]")
            for f in s.failed:
                lines.append(f"       {f.severity.upper():8s} {f.describe()}")
        lines.append(f"Data Docs: {self.data_docs_path}")
        return "\n".join(lines)


# --------------------------------------------------------------- locations
def _local_root(job: Job) -> Path:
    """The local folder of a job's Great Expectations files: beside its outputs, or, when those
    are on an object store (a URI), ``output/<job name>`` in the working folder."""
    return Path("output", job.name) if is_uri(job.output_root) else Path(job.output_root)


def data_docs_dir(job: Job) -> str:
    """Where the Data Docs HTML of a job goes (``index.html`` inside)."""
    return str(_local_root(job) / "data_docs")


def gx_project_dir(job: Job) -> str:
    return str(_local_root(job) / "gx")


def runs_table_path(job: Job) -> str:
    return f"{job.state_root.rstrip('/')}/validation_runs"


def _context(job: Job):
    """A file-backed GE project beside the job's outputs, its Data Docs site at :func:`data_docs_dir`."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from pipelines.visual.gx_offline import SITE_VIEWS
    context = gx.get_context(mode="file", project_root_dir=gx_project_dir(job))
    _read_config_variables_once(context)
    # GX draws a "Calculating Metrics" bar per expectation suite run; the drivers and the CLI
    # print their own progress and a summary instead.
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    # SITE_VIEWS: pages that load nothing from the internet (GX's templates load ~15 CDN assets)
    site = {"class_name": "SiteBuilder", "show_how_to_buttons": False,
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": data_docs_dir(job)},
            **SITE_VIEWS}
    sites = context.variables.data_docs_sites or {}
    if sites.get(DATA_DOCS_SITE) != site or len(sites) != 1:
        for name in list(sites):
            context.delete_data_docs_site(name)
        context.add_data_docs_site(DATA_DOCS_SITE, site)
    return context


def _read_config_variables_once(context) -> None:
    """Have ``context`` read ``uncommitted/config_variables.yml`` once, not on every lookup.

    GX parses that file (YAML) whenever it reads a project setting: about 160 times in a
    stream batch's validation. The context lives for one validation, during which
    nothing here writes the file; its values are read when the context is made. A GX without
    that provider (a private class) keeps its own behaviour.
    """
    try:
        from great_expectations.core.config_provider import _ConfigurationVariablesConfigurationProvider
    except ImportError:
        return
    provider = context.config_provider.get_provider(_ConfigurationVariablesConfigurationProvider)
    if provider is None:
        return
    values = provider.get_values()
    provider.get_values = lambda: dict(values)


def _batch_definition(context, suite_name: str):
    # add_or_update rewrites the project's config file on every call: only add what is missing.
    try:
        source = context.data_sources.get("delta_tables")
    except (KeyError, LookupError, ValueError):
        source = context.data_sources.add_spark("delta_tables")
    try:
        asset = source.get_asset(suite_name)
    except LookupError:
        asset = source.add_dataframe_asset(suite_name)
    try:
        return asset.get_batch_definition("whole_table")
    except (KeyError, LookupError):
        return asset.add_batch_definition_whole_dataframe("whole_table")


def _failed(suite: str, result) -> FailedExpectation:
    config = result.expectation_config
    kwargs = config.kwargs or {}
    column = kwargs.get("column") or (",".join(kwargs["column_list"]) if kwargs.get("column_list") else None)
    severity = getattr(config, "severity", CRITICAL)
    severity = getattr(severity, "value", severity) or CRITICAL.value
    info = result.result or {}
    if result.exception_info and result.exception_info.get("raised_exception"):
        detail = "error: " + str(result.exception_info.get("exception_message", ""))[:200]
    elif "unexpected_count" in info:
        sample = info.get("partial_unexpected_list") or []
        detail = f"{info['unexpected_count']} unexpected" + (f", e.g. {sample[:3]}" if sample else "")
    elif "observed_value" in info:
        detail = f"observed {info['observed_value']}"
        rows = info.get("details", {}).get("unexpected_rows") if isinstance(info.get("details"), dict) else None
        batches = sorted({r["batch_id"] for r in rows or [] if isinstance(r, dict) and r.get("batch_id") is not None})
        if batches:
            detail += f" in batch{'es' if len(batches) > 1 else ''} {', '.join(map(str, batches[:10]))}"
        if rows:
            detail += f" unexpected rows, e.g. {str(rows[:2])[:200]}"
    else:
        detail = "failed"
    if config.description and config.type.startswith("unexpected_rows"):
        detail = f"{config.description}; {detail}"
    return FailedExpectation(suite, config.type, column, str(severity), detail)


def run_name(job: Job, run_kind: str, batch_id: int | None) -> str:
    """A validation run's name in Data Docs: ``<job>.<run kind>.batch-<id>`` or ``<job>.<run kind>.all-batches``."""
    return f"{job.name}.{run_kind}." + (f"batch-{batch_id}" if batch_id is not None else "all-batches")


def _run_check(context, check: Check, operator_id: str, run_id=None, frame: DataFrame | None = None) -> SuiteResult:
    """Validate ``check`` and unpersist its frame: ``frame``, the check's frame cached in GE's session
    (:func:`_cached`), or None to cache it here."""
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier
    name = check.suite.name
    if check.frame is None:
        return SuiteResult(name, check.table, None, 0, [], check.skip_reason or "nothing to validate")
    if frame is None:
        frame = _cached(check.frame)
    try:
        # Jobs writing beside each other (a stream and its backfill) share one GE project
        # and one Data Docs site: their suites are told apart by the operator id.
        qualified = f"{operator_id}.{name}"
        check.suite.name = qualified
        suite = context.suites.add_or_update(check.suite)
        definition = context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=qualified, data=_batch_definition(context, qualified), suite=suite))
        run_id = run_id or RunIdentifier(run_time=dt.datetime.now(dt.timezone.utc))
        # Whether each expectation holds needs no sample of unexpected values: GE would fetch one
        # per column expectation (a Spark job each, a sixth of a stream batch's validation). A suite
        # that fails runs again for the details its failures report; under the same run id its
        # result replaces the first in the results store (and in Data Docs).
        outcome = definition.run(batch_parameters={"dataframe": frame}, result_format=PASS_OR_FAIL, run_id=run_id)
        if not outcome.success:
            outcome = definition.run(batch_parameters={"dataframe": frame}, result_format=DETAILS, run_id=run_id)
        failed = [_with_batches(_failed(name, r), r, check, frame) for r in outcome.results if not r.success]
    finally:
        frame.unpersist()
    return SuiteResult(name, check.table, not failed, len(outcome.results), failed)


def _cached(frame: DataFrame) -> DataFrame:
    """``frame`` in GE's session, cached: GE computes each metric with its own Spark job, and without
    the cache every one of them would read the Delta tables (and redo the joins that built the frame) again."""
    return in_validation_session(frame).persist(StorageLevel.MEMORY_AND_DISK)


def _cached_and_computed(frame: DataFrame) -> DataFrame:
    return frames_ahead.cache_and_compute(in_validation_session(frame))


def in_validation_session(frame: DataFrame) -> DataFrame:
    """``frame`` as a DataFrame of the session Great Expectations queries (``SparkSession.builder.getOrCreate()``).

    GX's query expectations register their frame as the temporary view ``tmp_view`` in the
    frame's own session and then run the query in the engine's session. A frame built
    from a streaming micro-batch lives in a clone of the session (``foreachBatch``), so the
    query would read whatever ``tmp_view`` the engine's session last held: another suite's
    frame. The same rows, planned in the engine's session, keep the two together.
    """
    session = SparkSession.builder.getOrCreate()
    if not hasattr(session, "_jsparkSession") or frame.sparkSession._jsparkSession.equals(session._jsparkSession):
        return frame
    return DataFrame(session._jsparkSession.createDataFrame(frame._jdf.rdd(), frame._jdf.schema()), session)


def _with_batches(failed: FailedExpectation, result, check: Check, frame: DataFrame) -> FailedExpectation:
    """``failed`` naming the batches of its unexpected rows, when the rows carry a ``batch_id``.

    GX's summary of an unexpected-rows expectation carries only their count:
    the expectation's query runs once more on the (cached) frame for their batch ids.
    """
    if "batch_id" not in frame.columns or " in batch" in failed.detail:
        return failed
    config = result.expectation_config
    query = (config.kwargs or {}).get("unexpected_rows_query") or next(
        (getattr(e, "unexpected_rows_query", None) for e in check.suite.expectations
         if getattr(e, "expectation_type", None) == config.type), None)
    if not query or "batch_id" not in query:
        return failed
    view = f"_unexpected_{uuid.uuid4().hex[:8]}"
    frame.createOrReplaceTempView(view)
    try:
        rows = frame.sparkSession.sql(query.replace("{batch}", view)).select("batch_id").distinct().limit(10).collect()
    except Exception:  # noqa: BLE001 - naming the batches is a courtesy; the failure stands without it
        return failed
    finally:
        frame.sparkSession.catalog.dropTempView(view)
    batches = sorted(r["batch_id"] for r in rows if r["batch_id"] is not None)
    if not batches:
        return failed
    named = f" in batch{'es' if len(batches) > 1 else ''} {', '.join(map(str, batches))}"
    return FailedExpectation(failed.suite, failed.expectation_type, failed.column, failed.severity,
                             failed.detail + named)


def check_frame(job: Job, suite_name: str, frame: DataFrame) -> SuiteResult:
    """Validate one suite of ``job`` on a given Spark DataFrame (not recorded; for tests and exploration).

    The frame must look like what the suite's module reads (e.g. the raw
    suite's ``_event_time_ms`` column; see :mod:`expectations`).
    """
    from expectations import (accounting, late_quarantine, raw_events, reconciliation, state, watermark,
                              window_results)
    builders = {
        "raw_events": lambda: raw_events.expectations(job, frame.columns, int(time.time() * 1000)),
        "window_results": lambda: window_results.expectations(job),
        "late_rows": lambda: late_quarantine.late_expectations(job),
        "quarantine_rows": lambda: late_quarantine.quarantine_expectations(job),
        "state_windows": lambda: state.window_expectations(job),
        "state_progress": state.progress_expectations,
        "reconciliation": reconciliation.expectations,
        "row_accounting": lambda: accounting.expectations(job),
        "watermark_jumps": lambda: watermark.expectations(job),
    }
    if suite_name not in builders:
        raise ValueError(f"unknown suite {suite_name!r}; known suites: {sorted(builders)}")
    context = _context(job)
    expectations = builders[suite_name]()
    from expectations.base import suite
    return _run_check(context, Check(suite(suite_name, expectations), "(frame)", frame), job.operator_id)


def _name_data_asset(store, key) -> None:
    """Validation pages name the data asset from the batch spec, where GX leaves a DataFrame asset's name out."""
    result = store.get(key)
    spec = result.meta.get("batch_spec") if result is not None else None
    if isinstance(spec, dict) and not spec.get("data_asset_name") and result.asset_name:
        spec["data_asset_name"] = result.asset_name
        store.set(key, result)


def _build_data_docs(context, job: Job, stored_before: set, suite_names: list[str]) -> None:
    """Render the pages of this run's validation results and suites (``suite_names``, qualified), then the index.

    A full build re-renders every validation result ever stored, so each run
    would cost more than the one before; the pages of earlier runs are already
    on disk and do not change. (GE reads an empty identifier list as "build
    everything": that is only done while the site has no index yet.)
    """
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier
    new = [key for key in context.validation_results_store.list_keys() if key not in stored_before]
    for key in new:
        _name_data_asset(context.validation_results_store, key)
    changed = new + [ExpectationSuiteIdentifier(name) for name in suite_names]
    if changed or not (Path(data_docs_dir(job)) / "index.html").exists():
        context.build_data_docs(site_names=[DATA_DOCS_SITE], resource_identifiers=changed or None)
    from pipelines.visual.report import write_placeholder
    write_placeholder(job)   # every page links the quality report: until it is built, a page that says how


def _record(spark: SparkSession, job: Job, report: ValidationReport) -> None:
    from windowing.spark.lake import delta_lake_io
    now = dt.datetime.now(dt.timezone.utc)
    rows = []
    for s in report.suites:
        worst = "critical" if s.failed_critical else ("warning" if s.failed else None)
        rows.append((report.run_id, job.name, job.operator_id, s.suite, s.table, s.success, s.skipped_reason,
                     s.evaluated, len(s.failed), len(s.failed_critical), len(s.failed_warning),
                     [f"{f.expectation_type}" + (f"({f.column})" if f.column else "") for f in s.failed],
                     worst, report.batch_id, report.run_kind, now, report.data_docs_path))
    path = runs_table_path(job)
    delta_lake_io.create_empty(spark, RUNS_SCHEMA, path)
    spark.createDataFrame(rows, RUNS_SCHEMA).write.format("delta").mode("append").save(path)


def validate_job(spark: SparkSession, job: Job, *, batch_id: int | None = None, run_kind: str = "adhoc",
                 suites: Sequence[str] | None = None, raw: DataFrame | None = None,
                 raise_on_failure: bool = True, now_ms: int | None = None,
                 settings: Mapping[str, str] | None = None) -> ValidationReport:
    """Validate a job's tables, record the run, build Data Docs, fail on CRITICAL failures.

    Args:
        spark: the process's SparkSession (with Delta).
        job: the job whose raw, results, late, quarantine and state tables are checked.
        batch_id: check only this batch's results/late/quarantine rows (the
            results check includes the earlier panes of the windows the batch
            touched); None checks whole tables.
        run_kind: "stream", "backfill", "reprocess" or "adhoc" (recorded).
        suites: suite names (see ``expectations.SUITES``); default
            :data:`DEFAULT_SUITES`, plus "reconciliation" for a backfill.
        raw: the raw rows to check instead of the whole raw table (a stream's
            micro-batch; the rows a backfill fed).
        raise_on_failure: raise :class:`DataQualityError` on a CRITICAL failure.
        now_ms: processing time for the raw event-time range (default: now).
        settings: Spark SQL settings the validation runs with, the session's own put back
            afterwards (the stream driver passes the small-batch settings for a small batch:
            :func:`windowing.spark.input.batch_settings.validates_small`).

    Returns:
        The :class:`ValidationReport` (also when a warning failed).

    Raises:
        DataQualityError: a CRITICAL expectation failed; the message names
            each failed expectation with its suite and column.
        ValueError: an unknown suite name or run kind.
    """
    if run_kind not in RUN_KINDS:
        raise ValueError(f"run_kind {run_kind!r} is not one of {RUN_KINDS}")
    if not settings:
        return _validate(spark, job, batch_id, run_kind, suites, raw, raise_on_failure, now_ms)
    # GE plans its queries in the builder's session; a stream batch's raw rows belong to the query's own.
    scoped = ScopedSettings(spark, SparkSession.builder.getOrCreate(), *([raw.sparkSession] if raw is not None else []))
    scoped.set(dict(settings))
    try:
        return _validate(spark, job, batch_id, run_kind, suites, raw, raise_on_failure, now_ms)
    finally:
        scoped.restore()


def _validate(spark: SparkSession, job: Job, batch_id: int | None, run_kind: str, suites: Sequence[str] | None,
              raw: DataFrame | None, raise_on_failure: bool, now_ms: int | None) -> ValidationReport:
    """:func:`validate_job` in the session's current settings."""
    started = time.monotonic()
    wanted = list(suites) if suites is not None else (
        list(DEFAULT_SUITES) + (["reconciliation"] if run_kind == "backfill" and batch_id is None else []))
    unknown = [s for s in wanted if s not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {unknown}; known suites: {sorted(SUITES)}")
    scope = Scope(batch_id=batch_id, now_ms=now_ms if now_ms is not None else int(time.time() * 1000),
                  run_kind=run_kind, raw=raw, reconcile="reconciliation" in wanted)
    context = _context(job)  # GE suites need a project while they are built
    checks: list[Check] = []
    for module in SUITE_MODULES:
        if any(name in wanted for name in SUITES_OF[module.__name__]):
            checks.extend(c for c in module.checks(spark, job, scope) if c.suite.name in wanted)
    report = ValidationReport(uuid.uuid4().hex[:12], job.name, run_kind, batch_id,
                              runs_table_path=runs_table_path(job))
    # GE lists its whole results store several times a validation: it keeps the newest results only.
    gx_results.archive_older_results(Path(context.validation_results_store.store_backend.full_base_directory),
                                     job.gx_results_kept)
    stored_before = set(context.validation_results_store.list_keys())
    from great_expectations.core.run_identifier import RunIdentifier
    run_id = RunIdentifier(run_name=run_name(job, run_kind, batch_id), run_time=dt.datetime.now(dt.timezone.utc))
    # The next suites' frames are computed while GE validates one (pipelines/frames_ahead.py).
    with frames_ahead.FramesAhead([check.frame for check in checks], _cached_and_computed) as frames:
        report.suites = [_run_check(context, check, job.operator_id, run_id, frames.take(index))
                         for index, check in enumerate(checks)]
    _build_data_docs(context, job, stored_before, [c.suite.name for c in checks if c.frame is not None])
    report.data_docs_path = str(Path(data_docs_dir(job)) / "index.html")
    report.seconds = time.monotonic() - started
    _record(spark, job, report)
    if raise_on_failure and report.critical_failures:
        failures = "; ".join(f.describe() for f in report.critical_failures)
        raise DataQualityError(
            f"data quality of job {job.name} ({run_kind}" + (f", batch {batch_id}" if batch_id is not None else "")
            + f"): {len(report.critical_failures)} critical expectation(s) failed: {failures}. "
            f"Data Docs: {report.data_docs_path}", report)
    return report


def stream_batches(spark: SparkSession, job: Job) -> tuple[set[int], set[int]]:
    """``(committed, unvalidated)`` batch ids of the job's operator.

    ``unvalidated``: committed batches with no stream validation run of this
    operator recorded at or after the batch's commit (a run recorded before it
    was of an earlier batch with the same id, e.g. before a reset).
    """
    from pyspark.sql import functions as F
    from windowing.spark.lake import delta_lake_io
    progress_path = f"{job.state_root.rstrip('/')}/{job.operator_id}/progress"
    if not delta_lake_io.table_exists(spark, progress_path):
        return set(), set()
    progress = spark.read.format("delta").load(progress_path).select("batch_id", "committed_at")
    committed = {r["batch_id"] for r in progress.select("batch_id").collect()}
    if not delta_lake_io.table_exists(spark, runs_table_path(job)):
        return committed, set(committed)
    runs = (read_runs(spark, job).where((F.col("operator_id") == job.operator_id) & (F.col("run_kind") == "stream"))
            .select("batch_id", "validated_at"))
    validated = progress.alias("p").join(
        runs.alias("r"), (F.col("p.batch_id") == F.col("r.batch_id")) & (F.col("r.validated_at") >= F.col("p.committed_at")),
        "left_semi")
    return committed, committed - {r["batch_id"] for r in validated.select("batch_id").collect()}


def read_runs(spark: SparkSession, job: Job) -> DataFrame:
    """The validation runs recorded for a job (a Delta table)."""
    return spark.read.format("delta").load(runs_table_path(job))


SUITES_OF = {module.__name__: names for module, names in
             ((m, tuple(n for n, mod in SUITES.items() if mod is m)) for m in SUITE_MODULES)}
