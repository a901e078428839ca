"""A user assigner and a user evictor named in job files run on real Spark (the per-key path)
and emit exactly the reference model's panes for the same arrivals."""
from __future__ import annotations

import pytest

from pipelines.job import build_spec, load_job
from windowing.core.reference import ReferenceOperator

pytestmark = pytest.mark.spark

JOB = """
[job]
name = "{name}"
operator_id = "{name}"

[source]
path = "raw/purchases"
key = "user_id"
event_time = "event_time"
max_out_of_orderness = "10 seconds"

[window]
{window}
allowed_lateness = "1 minute"
late_output = true

[aggregates]
items = "sum(item_count)"
purchases = "count()"
"""
USER_ASSIGNER = """type = "examples.assigners:DayPartWindows"
assigner_args = { starts = ["09:00", "09:05", "09:12", "09:30"] }"""
USER_EVICTOR = """type = "tumbling"
size = "5 minutes"
evictor = "examples.evictors:KeepLargest"
evictor_args = { n = 2, column = "item_count" }"""
ARRIVALS = 3
RAW_COLUMNS = ("event_id", "user_id", "item_count", "event_time", "ingestion_time")


def _arrivals() -> list[list[tuple]]:
    from examples.demo import generate_purchases
    rows = generate_purchases(n_events=240, n_users=4, minutes=20, seed=11)   # in ingestion order
    size = -(-len(rows) // ARRIVALS)
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def _model(spec, arrivals, batch_ids) -> tuple[list[tuple], list[str]]:
    """The reference model's panes (batch, user, start, end, timing, index, items, purchases) and late ids."""
    model = ReferenceOperator(spec)
    panes, late = [], []
    for batch_id, rows in zip(batch_ids, arrivals):
        dicts = [dict(zip(RAW_COLUMNS, row)) for row in rows]
        for d in dicts:
            d["event_time"] = None if d["event_time"] is None else int(d["event_time"].timestamp() * 1000)
        result = model.process_batch(dicts, batch_id)
        panes += [(batch_id, p.key[0], p.window_start_ms, p.window_end_ms, p.timing, p.pane_index,
                   p.values["items"], p.values["purchases"]) for p in result.panes]
        late += [e.row["event_id"] for e in result.late]
    return sorted(panes), sorted(late)


def _run_job(spark, tmp_path, name: str, window: str):
    from examples.demo import land
    from pipelines.drivers import run_stream
    path = tmp_path / f"{name}.toml"
    path.write_text(JOB.format(name=name, window=window))
    job = load_job(path, root=tmp_path)
    arrivals, reports = _arrivals(), []
    for rows in arrivals:
        land(spark, rows, job.source_path)
        reports += run_stream(spark, job, validate=False)
    assert len(reports) == ARRIVALS and {r.plan for r in reports} == {"keyed"}   # the per-key path
    results = spark.read.format("delta").load(job.results_path).collect()
    spark_panes = sorted((r.batch_id, r.user_id, r.window_start_ms, r.window_end_ms, r.timing, r.pane_index,
                          r.items, r.purchases) for r in results)
    spark_late = sorted(r.event_id for r in spark.read.format("delta").load(job.late_path).collect())
    return job, spark_panes, spark_late, _model(job.spec, arrivals, [r.batch_id for r in reports])


def test_a_user_assigner_in_a_job_file_emits_the_models_panes(spark, tmp_path):
    job, panes, late, (model_panes, model_late) = _run_job(spark, tmp_path, "day_parts", USER_ASSIGNER)
    assert panes == model_panes and late == model_late
    # the parts are the assigner's uneven windows: 5, 7 and 18 minutes (the last one still open)
    lengths = {(end - start) // 60_000 for _, _, start, end, *_ in panes}
    assert lengths == {5, 7} and len(panes) >= 8


def test_a_user_evictor_in_a_job_file_emits_the_models_panes(spark, tmp_path):
    job, panes, late, (model_panes, model_late) = _run_job(spark, tmp_path, "keep_largest", USER_EVICTOR)
    assert panes == model_panes and late == model_late
    assert panes and all(purchases <= 2 for *_, purchases in panes)   # the evictor kept two elements per pane


def test_user_parts_are_named_by_import_path_with_their_arguments():
    source, aggregates = {"key": "k", "event_time": "ts"}, {"n": "count()"}
    spec = build_spec(source, {"type": "examples.assigners:DayPartWindows",
                               "assigner_args": {"starts": ["06:00", "18:00"]}}, aggregates)
    assert spec.assigner.starts == ("06:00", "18:00")
    from types import SimpleNamespace
    from expectations.state import window_expectations
    from expectations.window_results import expectations
    # the quality suites of such a job: no window-size check (the parts are of uneven length)
    names = [type(e).__name__ for e in expectations(SimpleNamespace(spec=spec, result_bounds=()))]
    assert "ExpectAtMostOneOnTimePane" in names and "ExpectWindowLengthToMatchSpec" not in names
    assert len(window_expectations(SimpleNamespace(spec=spec))) == 1
    spec = build_spec(source, {"size": "1 minute", "evictor": "examples.evictors:KeepLargest",
                               "evictor_args": {"n": 1, "column": "v", "do_evict_after": True}}, aggregates)
    assert spec.evictor.do_evict_after and "v" in spec.input_columns
    for window, message in [
        ({"type": "examples.assigners:DayPartWindows", "size": "1 minute"}, r"\['size'\] belong to built-in"),
        ({"type": "examples.assigners:DayPartWindows", "assigner_args": {"starts": ["9"]}}, "is not a time of day"),
        ({"size": "1 minute", "evictor": "examples.evictors:KeepLargest", "evict_after": True}, "evictor_args"),
        ({"type": "examples.triggers:EveryNthLarge"}, "nor a user window assigner"),
        ({"size": "1 minute", "evictor": "examples.triggers:EveryNthLarge"}, "nor a user evictor"),
    ]:
        with pytest.raises(ValueError, match=message):
            build_spec(source, window, aggregates)
