"""Fault soak in CI: ``winjob`` processes SIGKILLed at random points and restarted, and concurrent runs.

The stream (several batches with late and malformed rows) and a chunked backfill
run as real ``winjob`` subprocesses on real Delta tables; each is killed at
random (a commit stage or a delay, see :mod:`pipelines.fault_hook`) at least ten
times in all and restarted until it exits 0. Then two ``winjob stream`` runs of
the job start together. Every table must equal a clean run's, no table may hold
a natural key twice, and a run that loses the race must exit 2 naming the
concurrent writer. The seed is printed; replay a failure with
``WINDOWING_SOAK_SEED=<seed>`` or ``tools/fault_soak.py --seed <seed>`` (the
report prints the command). Longer soaks: ``docs/fault-soak.md``.
"""
from __future__ import annotations

import os
import random

import pytest

from tools.soak import Soak, SoakConfig

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MIN_KILLS = 10


def test_killed_and_concurrent_runs_leave_the_tables_of_a_clean_run(spark, tmp_path):
    seed = int(os.environ.get("WINDOWING_SOAK_SEED") or random.SystemRandom().randrange(1, 2**31))
    print(f"fault soak seed {seed} (replay: WINDOWING_SOAK_SEED={seed})")
    config = SoakConfig(seed=seed, stream_kills=5, backfill_kills=5, concurrent_pairs=1, arrivals=3)
    report = Soak(spark, config, tmp_path).run()
    summary = report.summary()
    print(summary)

    assert report.clean_counts["late"] > 0 and report.clean_counts["quarantine"] > 0, \
        f"the soak's data must have late and quarantined rows to check them\n{summary}"
    assert report.kills >= MIN_KILLS, f"only {report.kills} kills fired\n{summary}"
    assert not report.failures, f"seed {seed}: runs failed\n{summary}"
    differing = [t.name for t in report.tables if not t.equal]
    assert not differing, f"seed {seed}: tables differ from the clean run's: {differing}\n{summary}"
    assert {t.name.rsplit("/", 1)[1] for t in report.tables} >= {"results", "late", "quarantine", "windows",
                                                                  "progress"}
