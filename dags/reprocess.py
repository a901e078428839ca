"""Reprocessing DAGs: recompute a time range, or replay the stream's batches, possibly with another window spec.

One DAG per job definition (``<job>_reprocess``), triggered by hand with params.
Thin: the task calls ``pipelines.orchestration.reprocess_run`` (``mode``
``range``) or ``pipelines.orchestration.replay_run`` (``mode`` ``replay``), a join
job's the same (its ``window`` overrides: keys of ``[join.window]``).
"""
from __future__ import annotations

from airflow.sdk import DAG, Param, get_current_context, task

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

`mode` = `replay`: run the stream's recorded micro-batches `from_batch` to
`to_batch` (empty: all) again on a fresh operator, with `window` overrides if
given, into the tables `replay_<into>/...` (`into` required), and write the
differences against the stream's outputs to the task log (docs/replay.md).
`start` and `end` are not used then.
"""

JOIN_DOC = """
### Reprocess a time range of a join job

Params: `start`, `end` (ISO, UTC): the panes of the windows ending in
`(start, end]` (a window join or co-group), or the pairs whose time is in
`[start, end)` (an interval join); `into` (empty: replace the range in the
job's own tables; a name: write new tables `results_<name>`, `late_<name>`,
`quarantine_<name>`); `window` (overrides of the job's `[join.window]`
table, e.g. `{"size": "5 minutes"}`; an interval join has none). Mode
`replay`: the stream's recorded batches again on a fresh join operator into
`replay_<into>` tables, with `window` overrides if given, compared with the
stream (the summary in the task log).

The range is computed completely, from the rows of both inputs that can feed
it, on a fresh operator into a staging folder; only then is the range of each
target table replaced in one Delta commit, so readers see the old rows until the
new ones are complete. Session, global and count windows have no time range and
are refused. A rerun gives the same tables.
"""


def reprocess_dag(job) -> DAG:
    results = orchestration.asset(job, "reprocess")
    join = orchestration.runner(job) is not None
    with DAG(dag_id=f"{job.name}_reprocess", schedule=None, start_date=job.airflow.start, catchup=False,
             max_active_runs=1, default_args=orchestration.default_args(job),
             description=f"{job.name}: recompute a time range (maybe with another window spec), or replay "
                         f"the stream's batches",
             tags=["windowing", "reprocess", job.name],
             doc_md=(JOIN_DOC if join else DOC) + "\n" + orchestration.job_doc(job),
             params={"mode": Param("range", enum=["range", "replay"],
                                   description="range: recompute a time range; replay: the stream's batches"),
                     "start": Param("", type="string", description="range start (ISO, UTC)"),
                     "end": Param("", type="string", description="range end (ISO, UTC)"),
                     "from_batch": Param(None, type=["null", "integer"], description="replay: first batch"),
                     "to_batch": Param(None, type=["null", "integer"], description="replay: last batch"),
                     "window": Param({}, type="object", description="overrides of the [window] table"),
                     "into": Param("", type="string", description="new output table name; empty: replace "
                                   "the range in place")}) as dag:

        @task(outlets=[results])
        def reprocess(job_file: str, params=None) -> dict:
            """Recompute the range and replace it (or write new tables), or replay the stream's batches."""
            if params["mode"] == "replay":
                summary = orchestration.replay_run(job_file, params["into"], params["from_batch"],
                                                   params["to_batch"], params["window"])
                # Without the job file the quality DAG leaves the replay's tables alone (they are a comparison).
                get_current_context()["outlet_events"][results].extra = {
                    k: v for k, v in summary.items() if k not in ("diff_summary", "job_file")}
                return summary
            summary = orchestration.reprocess_run(job_file, params["start"], params["end"], params["window"],
                                                  params["into"] or None)
            get_current_context()["outlet_events"][results].extra = summary
            return summary

        reprocess(job.source_file)
    return dag


for _job in orchestration.airflow_jobs():
    if "reprocess" in orchestration.kinds_of(_job):
        reprocess_dag(_job)
