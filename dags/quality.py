"""Data-quality DAGs: run the expectation suites on the tables each run wrote.

One DAG per job definition (``<job>_quality``), data-aware: it is scheduled on
the results Assets of the job's streaming, backfill and reprocessing DAGs, and
validates the tables named by the triggering asset events. Thin: the task
calls ``pipelines.orchestration.quality_run`` (which calls
``pipelines.quality.validate_job``); then the data-quality-over-time page is
rebuilt (``pipelines.visual.report.write_report``), also after a failed
validation, so the page shows the failure. A join job's DAG validates with the
join suites and has no report task.
"""
from __future__ import annotations

from airflow.sdk import DAG, AssetAny, task
from airflow.sdk.exceptions import AirflowSkipException

from pipelines import orchestration

DOC = """
### Data quality on every run's outputs

Runs whenever a streaming, backfill or reprocessing run of the job updates its
results table (Airflow Assets). For each triggering event it validates the
tables that run wrote with the Great Expectations suites: stream runs batch by
batch, backfills and reprocessing as a whole. A failed critical expectation
fails this DAG's run (`DataQualityError` names it); the producing run has
already succeeded, so a bad batch is flagged, not hidden. Each batch is
validated once: here (the producing tasks do not validate), and not again when
a validation run of it is recorded already. When there was nothing to validate
both tasks are skipped. After each validation, `quality_report.html` beside
the Data Docs index plots rows in windows, late and quarantined per batch,
watermark lag and failed expectations.
"""

JOIN_DOC = """
### Data quality of a join job's outputs

Runs whenever a streaming, backfill or reprocessing run of the join job updates
its results (the Assets `<job>.results`, `<job>.results_backfill`,
`<job>.reprocessed`). It validates the tables that run wrote as a whole with the
join suites
(`expectations/join_results.py`: no output row twice in a pane, each side's
accounting, every result and late row found in its side's input table; a
backfill's or reprocessing's tables have no progress of their own, so their
accounting suite is skipped). A
failed critical expectation fails this DAG's run (`DataQualityError` names it).
Triggered by hand (no asset event), it validates the join tables as they are.
There is no quality report task: the data-quality-over-time page reads a
single-input job's tables, so it is not built for a join job; the Data Docs are.
"""


def quality_dag(job) -> DAG:
    assets = [orchestration.asset(job, kind) for kind in orchestration.kinds_of(job)]
    schedule = AssetAny(*assets)   # any of the job's results assets
    report_page = orchestration.has_report_page(job)
    with DAG(dag_id=f"{job.name}_quality", schedule=schedule,
             start_date=job.airflow.start, catchup=False, max_active_runs=1,
             default_args=orchestration.default_args(job), tags=["windowing", "quality", job.name],
             description=f"{job.name}: Great Expectations on what each run wrote"
                         + (", then the quality report" if report_page else " (join suites)"),
             doc_md=(DOC if report_page else JOIN_DOC) + "\n" + orchestration.job_doc(job)) as dag:

        @task
        def validate(job_file: str, triggering_asset_events=None) -> list[dict]:
            """Validate the outputs named by the triggering asset events (a join job's run by hand: its tables)."""
            events = [event.extra for asset_events in triggering_asset_events.values() for event in asset_events]
            done = orchestration.quality_run(events or orchestration.events_by_hand(job_file))
            if not done:
                raise AirflowSkipException("nothing to validate: every batch of these runs has a validation run")
            return done

        @task(trigger_rule="none_skipped")
        def report(job_file: str) -> str:
            """Rebuild the job's data-quality-over-time page beside its Data Docs."""
            from pipelines.visual.report import write_report
            target = orchestration.load(job_file)
            return str(write_report(orchestration.spark_for(target), target))

        if report_page:
            validate(job.source_file) >> report(job.source_file)
        else:
            validate(job.source_file)
    return dag


for _job in orchestration.airflow_jobs():
    quality_dag(_job)
