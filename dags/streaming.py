"""Streaming DAGs: every few minutes, process what has arrived in the raw table, then stop.

One DAG per job definition (``<job>_streaming``), join jobs included (both
inputs in one query). Thin: the task calls ``pipelines.orchestration.stream_run``;
the window (or join) operator and its Delta commit protocol make a retried run
write no row twice.
"""
from __future__ import annotations

from airflow.sdk import DAG, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from pipelines import orchestration

DOC = """
### Streaming run (`availableNow`)

Each run starts the job's Structured Streaming query with the `availableNow`
trigger: it processes every raw row that landed since the last run, in
micro-batches, and stops. `max_active_runs=1`: runs never overlap (they share
the checkpoint and the operator's state). A failed run is retried; the retry
replays the uncommitted micro-batch under the same batch id and skips the
committed ones, so no output row is duplicated. The task is skipped (no asset
event, no quality run) while the raw table does not exist and when nothing
arrived since the last batch (its log says "nothing new since batch N"). The
results table is the Asset `<job>.results`: the quality DAG validates each new
batch once (this task does not validate).

A join job's run reads its left and right input tables in one query; it is
skipped while either table does not exist, and when neither has new rows
("nothing new in <left> or <right> since batch N"). Its summary (the asset
event's extra) counts the input rows per side and the result rows written.
"""


def streaming_dag(job) -> DAG:
    results = orchestration.asset(job, "stream")
    with DAG(dag_id=f"{job.name}_streaming", schedule=job.airflow.stream_schedule, start_date=job.airflow.start,
             catchup=False, max_active_runs=1, default_args=orchestration.default_args(job),
             description=f"{job.name}: process what landed in {' and '.join(orchestration.input_tables(job))}, "
                         f"then stop (availableNow)",
             tags=["windowing", "streaming", job.name], doc_md=DOC + "\n" + orchestration.job_doc(job)) as dag:

        @task(outlets=[results], pool=orchestration.stream_pool())
        def stream(job_file: str) -> dict:
            """Run the streaming job once with availableNow."""
            try:
                summary = orchestration.stream_run(job_file)
            except (orchestration.SourceNotReadyError, orchestration.NothingNewError) as error:
                raise AirflowSkipException(str(error)) from None
            get_current_context()["outlet_events"][results].extra = summary
            return summary

        stream(job.source_file)
    return dag


for _job in orchestration.airflow_jobs():
    streaming_dag(_job)
