"""A null in a bounded column is out of bounds unless the job says ``nullable = true``.

A bound says what a valid value is; a missing value is not one, and if let
through it would be counted in its window and skipped by the window's sums
unseen. The reference model, the DataFrame plan and the per-key path decide
the same quarantine for the same rows: all three classify through the input
policy's bounds.
"""
from __future__ import annotations

import pytest

from pipelines.job import load_job
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import TumblingEventTimeWindows
from windowing.core.records import QUARANTINE_VALUE_OUT_OF_BOUNDS
from windowing.core.reference import ReferenceOperator
from windowing.core.spec import WindowSpecBuilder
from examples.triggers import EveryNthLarge

ROWS = [{"id": "ok", "k": "a", "ts": 10, "v": 5}, {"id": "low", "k": "a", "ts": 11, "v": 0},
        {"id": "null", "k": "a", "ts": 12, "v": None}, {"id": "ok2", "k": "b", "ts": 13, "v": 100},
        {"id": "high", "k": "b", "ts": 14, "v": 101}]
SCHEMA = "id string, k string, ts bigint, v bigint"


def _spec(nullable: bool, per_key: bool = False):
    builder = (WindowSpecBuilder().key_by("k").event_time("ts", 0).window(TumblingEventTimeWindows.of(100))
               .value_bounds("v", 1, 100, nullable=nullable))
    if per_key:
        builder = builder.trigger(EveryNthLarge(n=2, column="v", threshold=1))   # a user trigger: the per-key path
    return builder.aggregate(s=Sum("v"), n=Count())


@pytest.mark.parametrize("nullable", [False, True])
def test_reference_model_quarantines_a_null_bounded_value_unless_nullable(nullable):
    result = ReferenceOperator(_spec(nullable)).process_batch(ROWS, 0, processing_time_ms=0)
    quarantined = {q.row["id"]: q.reason for q in result.quarantined}
    expected = {"low", "high"} | (set() if nullable else {"null"})
    assert quarantined == dict.fromkeys(expected, QUARANTINE_VALUE_OUT_OF_BOUNDS)
    assert result.metrics.accepted_rows == len(ROWS) - len(expected)


@pytest.mark.spark
@pytest.mark.parametrize("per_key", [False, True], ids=["dataframe-plan", "per-key"])
def test_both_spark_paths_quarantine_what_the_model_does(spark, per_key):
    from windowing.spark.operator.dispatch import execution_path, make_operator
    from windowing.spark.state.stores import MemoryStore
    for nullable in (False, True):
        spec = _spec(nullable, per_key)
        assert execution_path(spec).startswith("per-key model" if per_key else "dataframe plan")
        store = MemoryStore(spark)
        operator = make_operator(spark, spec, store)
        df = spark.createDataFrame([(r["id"], r["k"], r["ts"], r["v"]) for r in ROWS], SCHEMA)
        report = operator.process_batch(df, 0, processing_time_ms=0)
        expected = ReferenceOperator(spec).process_batch(ROWS, 0, processing_time_ms=0)
        got = sorted((r["id"], r["reason"]) for r in store.outputs["quarantine"])
        assert got == sorted((q.row["id"], q.reason) for q in expected.quarantined), (per_key, nullable)
        assert ("null", QUARANTINE_VALUE_OUT_OF_BOUNDS) in got if not nullable else ("null" not in dict(got))
        assert report.metrics.accepted_rows == expected.metrics.accepted_rows and report.metrics.accounted()


def test_a_job_file_says_nullable_per_bounded_column(tmp_path):
    base = ('[job]\nname = "j"\noperator_id = "j"\n[source]\npath = "raw"\nkey = "k"\nevent_time = "ts"\n'
            '[window]\nsize = "1 minute"\n[aggregates]\ns = "sum(v)"\n')
    path = tmp_path / "job.toml"
    path.write_text(base + '[source.bounds]\nv = { min = 1, max = 100 }\nw = { min = 0, nullable = true }\n')
    policy = load_job(path).spec.input
    assert policy.nullable_bounded == ("w",)
    assert policy.out_of_bounds("v", None) and not policy.out_of_bounds("w", None)
    assert policy.out_of_bounds("v", 0) and not policy.out_of_bounds("v", 1) and policy.out_of_bounds("w", -1)
    # A nullable spec is another spec: a resumed state notices the change.
    path.write_text(base + '[source.bounds]\nv = { min = 1, max = 100, nullable = true }\nw = { min = 0 }\n')
    assert load_job(path).spec.fingerprint() != _fingerprint(base, tmp_path)
    path.write_text(base + '[source.bounds]\nv = { min = 1, nullable = "yes" }\n')
    with pytest.raises(ValueError, match=r"v.nullable = 'yes' must be true or false"):
        load_job(path)
    path.write_text(base + '[source.bounds]\nv = { nullable = true }\n')
    with pytest.raises(ValueError, match="with nullable = true if a null value is valid"):
        load_job(path)


def _fingerprint(base: str, folder) -> str:
    other = folder / "plain.toml"
    other.write_text(base + '[source.bounds]\nv = { min = 1, max = 100 }\nw = { min = 0 }\n')
    return load_job(other).spec.fingerprint()
