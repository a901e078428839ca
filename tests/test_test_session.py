"""The test session's code-generation switch (tests/conftest.py): interpreted unless a test is marked."""
from __future__ import annotations

import os

import pytest

from windowing.spark.prepare import count_each

pytestmark = pytest.mark.spark


def test_unmarked_tests_run_interpreted(spark):
    if os.environ.get("WINDOWING_TEST_CODEGEN") == "1":
        pytest.skip("WINDOWING_TEST_CODEGEN=1: the whole suite runs with code generation")
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"


@pytest.mark.codegen
def test_marked_tests_run_with_code_generation(spark):
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    plan = spark.range(3).selectExpr("id + 1 AS x")._jdf.queryExecution().executedPlan().toString()
    assert "WholeStageCodegen" in plan or "*(" in plan


def test_count_each_counts_every_frame(spark):
    df = spark.range(10)
    assert count_each({"even": df.where("id % 2 = 0"), "none": df.where("id < 0"), "all": df}) == \
        {"even": 5, "none": 0, "all": 10}
    assert count_each({}) == {}
