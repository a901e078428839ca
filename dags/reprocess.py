"""Reprocessing DAGs: recompute a time range, possibly with another window spec.

One DAG per job definition (``<job>_reprocess``), triggered by hand with
params. Thin: the task calls ``pipelines.orchestration.reprocess_run``.
"""
from __future__ import annotations

from airflow.sdk import DAG, Asset, Param, get_current_context, task

from pipelines import orchestration

DOC = """
### Reprocess a time range

Params: `start`, `end` (ISO, UTC; windows whose max timestamp is in
`[start, end)`), `window` (overrides of the job's `[window]` table, e.g.
`{"size": "5 minutes"}`; `{}` keeps it), `into` (empty: replace the range in the
job's own tables; a name: write new tables `results_<name>`, `late_<name>`, ...).

The range is computed completely on a fresh operator into a staging folder;
only then is the range of each target table replaced in one Delta commit, so
readers see the old results until the new ones are complete.
"""


def reprocess_dag(job) -> DAG:
    results = Asset(orchestration.asset_uri(job, "reprocess"))
    with DAG(dag_id=f"{job.name}_reprocess", schedule=None, start_date=job.airflow.start, catchup=False,
             max_active_runs=1, default_args=orchestration.default_args(job),
             tags=["windowing", "reprocess", job.name], doc_md=DOC + "\n" + orchestration.job_doc(job),
             params={"start": Param(type="string", description="range start (ISO, UTC)"),
                     "end": Param(type="string", description="range end (ISO, UTC)"),
                     "window": Param({}, type="object", description="overrides of the [window] table"),
                     "into": Param("", type="string", description="new output table name; empty: replace "
                                   "the range in place")}) as dag:

        @task(outlets=[results])
        def reprocess(job_file: str, params=None) -> dict:
            """Recompute the range and replace it (or write new tables)."""
            summary = orchestration.reprocess_run(job_file, params["start"], params["end"], params["window"],
                                                  params["into"] or None)
            get_current_context()["outlet_events"][results].extra = summary
            return summary

        reprocess(job.source_file)
    return dag


for _job in orchestration.airflow_jobs():
    reprocess_dag(_job)
