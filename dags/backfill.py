"""Backfill DAGs: one run per data interval, each recomputing that interval's windows.

One DAG per job definition (``<job>_backfill``), a join job's included. Made for Airflow 3 backfills::

    airflow backfill create --dag-id purchases_per_minute_backfill \
        --from-date 2026-11-01T09:00 --to-date 2026-11-01T10:00 --reprocess-behavior completed

and for ad-hoc ranges: trigger it with the params ``start`` and ``end``.
Thin: the task calls ``pipelines.orchestration.backfill_run`` (a join job's:
``pipelines.join_orchestration.backfill_run``).
"""
from __future__ import annotations

from airflow.sdk import DAG, CronDataIntervalTimetable, Param, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from pipelines import orchestration

DOC = """
### Backfill (complete mode)

A run covers the windows whose max timestamp lies in its range: its data
interval, or the params `start`/`end` when given (an ad-hoc range). The range is
computed with the job's window operator on a fresh operator state of its own
(so intervals never share state or batch ids), in event-time chunks, the
last ending the input, then replaces exactly that range of the `results_backfill` table
in one Delta commit (`replaceWhere`). Runs are therefore idempotent: a retry or
`airflow backfill create ... --reprocess-behavior completed` rewrites the same
rows. `max_active_runs=1`: replacing two ranges of one table at the same time
would make one of the commits conflict. An interval without raw rows is
skipped (no asset event). The table is the Asset `<job>.results_backfill`;
the quality DAG validates each run once (this task does not validate).
"""

JOIN_DOC = """
### Backfill of a join job (complete mode)

A run covers its data interval `[start, end)`, or the params `start`/`end` when
given: the panes of the windows ending in `(start, end]` (a window join or
co-group), or the pairs whose time (the later row's) is in `[start, end)` (an
interval join). It reads the rows of both inputs that can feed them (from
`start` minus the window size, or minus the interval's reach) and joins them on a
fresh operator of its own, in event-time chunks, the last ending the input (no
row is late). Then each of `results_backfill`, `late_backfill` and
`quarantine_backfill` gets its range replaced in one Delta commit
(`replaceWhere`); quarantined rows by their own side's event time (a row without
one is in no range). Runs are idempotent; `max_active_runs=1`. An interval
whose range has no result, late or quarantined row is skipped (no asset event).
The table is the Asset `<job>.results_backfill`; the quality DAG validates it
with the join suites (this task does not validate).
"""


def backfill_dag(job) -> DAG:
    results = orchestration.asset(job, "backfill")
    with DAG(dag_id=f"{job.name}_backfill",
             schedule=CronDataIntervalTimetable(job.airflow.backfill_schedule, timezone="UTC"),
             start_date=job.airflow.start, catchup=False, max_active_runs=1,
             default_args=orchestration.default_args(job), tags=["windowing", "backfill", job.name],
             description=f"{job.name}: recompute the windows of each data interval into results_backfill",
             doc_md=(JOIN_DOC if orchestration.runner(job) else DOC) + "\n" + orchestration.job_doc(job),
             params={"start": Param("", type="string", description="ad-hoc range start (ISO, UTC); "
                                    "empty: the run's data interval"),
                     "end": Param("", type="string", description="ad-hoc range end (ISO, UTC)")}) as dag:

        @task(outlets=[results])
        def backfill(job_file: str, params=None, data_interval_start=None, data_interval_end=None) -> dict:
            """Recompute the windows of the data interval (or of params start/end)."""
            try:
                summary = orchestration.backfill_run(job_file, params["start"] or data_interval_start,
                                                     params["end"] or data_interval_end)
            except (orchestration.SourceNotReadyError, orchestration.NothingNewError) as error:
                raise AirflowSkipException(str(error)) from None
            get_current_context()["outlet_events"][results].extra = summary
            return summary

        backfill(job.source_file)
    return dag


for _job in orchestration.airflow_jobs():
    if "backfill" in orchestration.kinds_of(_job):
        backfill_dag(_job)
