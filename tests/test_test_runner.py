"""The whole-suite run's scheduling: ``--dist loadgroup`` keeps an ``xdist_group`` in one process.

Modules with module-scoped set-up (a Spark cluster and an object store, an Airflow stream) rely on
it: split over the two test processes, each process would run that set-up again.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

GROUPED = '''
import os, pytest
pytestmark = pytest.mark.xdist_group("one")

@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    out = os.environ["RECORD"]
    with open(out, "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
'''


def test_an_xdist_group_runs_in_one_test_process(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    record = tmp_path / "workers.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}   # not this run's options
    env.update(RECORD=str(record), PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    # The suite's conftest as a plugin: its collection hook is what is tested.
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-n", "2", "--dist", "loadgroup",
                           "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers = record.read_text().split()
    assert len(workers) == 6
    assert len(set(workers)) == 1, f"the group's tests ran in processes {sorted(set(workers))}"
