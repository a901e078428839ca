"""Validate a join job's Delta tables with Great Expectations (the suites of :mod:`expectations.join_results`).

The same project as :mod:`pipelines.quality`: a file-backed GX project beside the job's outputs,
its results kept there and its Data Docs built at ``<output root>/data_docs``.
"""
from __future__ import annotations

import datetime as dt

from pyspark.sql import SparkSession

from pipelines.join_job import JoinJob
from pipelines.quality import SuiteResult, _build_data_docs, _context, _run_check


def validate_join_job(spark: SparkSession, job: JoinJob) -> list[SuiteResult]:
    """Run the join suites on the job's tables; the result of each (``success`` None: skipped, table missing).

    Raises nothing on a failure: the caller decides (``winjob validate`` exits 1 on a failed CRITICAL expectation).
    """
    from great_expectations.core.run_identifier import RunIdentifier
    from expectations import join_results
    context = _context(job)
    stored_before = set(context.validation_results_store.list_keys())
    run_id = RunIdentifier(run_name=f"{job.name}.adhoc.all-batches", run_time=dt.datetime.now(dt.timezone.utc))
    results = [_run_check(context, check, job.operator_id, run_id) for check in join_results.checks(spark, job)]
    _build_data_docs(context, job, stored_before, [f"{job.operator_id}.{name}" for name in join_results.SUITES])
    return results
