"""Fault soak in CI: ``winjob`` processes SIGKILLed at random points and restarted, and concurrent runs.

The stream (several batches with late and malformed rows) and a chunked backfill
run as real ``winjob`` subprocesses on real Delta tables; each is killed at
random (a commit stage or a delay, see :mod:`pipelines.fault_hook`) at least ten
times in all and restarted until it exits 0. Then two ``winjob stream`` runs of
the job start together. Every table must equal a clean run's, no table may hold
a natural key twice, and a run that loses the race must exit 4 (a conflict) naming the
concurrent writer. The seed is printed; replay a failure with
``WINDOWING_SOAK_SEED=<seed>`` or ``tools/fault_soak.py --seed <seed>`` (the
report prints the command). Longer soaks: ``docs/fault-soak.md``.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import TEST_SQL_SETTINGS
from pipelines.fault_hook import FAULT_ENV, FaultPlan
from tools.soak import REPO, Soak, SoakConfig
from windowing.spark.runtime.spark_session import QUICK_JIT_JAVA_OPTIONS

MIN_KILLS = 10
SESSION_SQL_SETTINGS = tuple(TEST_SQL_SETTINGS)
"""Settings the soak's ``winjob`` processes take from the test session (code generation, adaptive execution,
inferred filters, the listener's plan description: production's under ``WINDOWING_TEST_PRODUCTION_SPARK=1``).

They do not touch what the soak checks (commits, recovery, concurrent writers); interpreted, a
process of the soak's few hundred rows spends a quarter less CPU than with code generation.
"""


@pytest.mark.parametrize("text, plan", [("stage:after_outputs:2", FaultPlan(stage="after_outputs", occurrence=2)),
                                        ("delay:1.5", FaultPlan(delay_s=1.5))])
def test_fault_plans_read_back_what_they_write(text, plan):
    assert FaultPlan.parse(text) == plan
    assert FaultPlan.parse(plan.env_value()) == plan


@pytest.mark.parametrize("text", ["stage:commit:1", "stage:start:0", "delay:-1", "delay:soon", "sigkill"])
def test_a_bad_fault_plan_is_refused_naming_it(text):
    with pytest.raises(ValueError, match="fault|WINJOB_FAULT"):
        FaultPlan.parse(text)


def test_the_hook_kills_the_process_group_at_the_chosen_stage(tmp_path):
    """The process and its child (Spark's JVM in a real run) die at the second ``after_outputs``, not before."""
    child_pid = tmp_path / "child.pid"
    script = textwrap.dedent(f"""
        import pathlib, subprocess, sys
        from pipelines.fault_hook import from_environment
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        pathlib.Path({str(child_pid)!r}).write_text(str(child.pid))
        fault = from_environment()
        for stage in ("start", "after_outputs", "before_progress", "after_outputs", "after_progress"):
            print(stage, flush=True)
            fault(stage)
        """)
    env = {**os.environ, FAULT_ENV: "stage:after_outputs:2", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          start_new_session=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.split() == ["start", "after_outputs", "before_progress", "after_outputs"]
    pid = int(child_pid.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(50):            # the child is gone once its parent reaps it (init here)
            os.kill(pid, 0)
            subprocess.run(["sleep", "0.1"])


@pytest.mark.spark
@pytest.mark.slow
def test_killed_and_concurrent_runs_leave_the_tables_of_a_clean_run(spark, tmp_path):
    seed = int(os.environ.get("WINDOWING_SOAK_SEED") or random.SystemRandom().randrange(1, 2**31))
    print(f"fault soak seed {seed} (replay: WINDOWING_SOAK_SEED={seed})")
    # Small data and few batches: the cost of a soak is its ``winjob`` processes (a JVM each), not its rows.
    config = SoakConfig(seed=seed, stream_kills=5, backfill_kills=5, concurrent_pairs=1, arrivals=2,
                        events=240, minutes=6, backfill_chunk="3 minutes", stream_delay_max_s=8.0,
                        backfill_delay_max_s=10.0,
                        spark_conf=tuple((key, spark.conf.get(key)) for key in SESSION_SQL_SETTINGS)
                        + (("spark.driver.extraJavaOptions", QUICK_JIT_JAVA_OPTIONS),))
    report = Soak(spark, config, tmp_path).run()
    summary = report.summary()
    print(summary)

    assert report.clean_counts["late"] > 0 and report.clean_counts["quarantine"] > 0, \
        f"the soak's data must have late and quarantined rows to check them\n{summary}"
    assert not report.failures, f"seed {seed}: runs failed\n{summary}"
    differing = [t.name for t in report.tables if not t.equal]
    assert not differing, f"seed {seed}: tables differ from the clean run's: {differing}\n{summary}"
    assert report.kills >= MIN_KILLS, f"seed {seed}: only {report.kills} kills fired\n{summary}"
    assert {t.name.rsplit("/", 1)[1] for t in report.tables} >= {"results", "late", "quarantine", "windows",
                                                                  "progress"}
