"""The whole-suite run's scheduling: ``--dist loadgroup`` keeps an ``xdist_group`` in one process,
and the number of test processes and the services modules' groups follow the machine
(``tests/suite_machine.py``).

Modules with module-scoped set-up (a Spark cluster and an object store, an Airflow stream) rely on
the groups: split over the test processes, each process would run that set-up again.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


SERVICES_MODULE = '''
import os, pytest
from suite_machine import services_group
pytestmark = pytest.mark.xdist_group(services_group(__file__))

@pytest.mark.parametrize("i", range(3))
def test_service(i, request):
    with open(os.environ["RECORD"], "a") as f:
        f.write(f"{request.node.nodeid} {os.environ['PYTEST_XDIST_WORKER']}\\n")
'''


def test_services_modules_spread_over_lanes_on_a_large_machine(tmp_path):
    # Eight test processes on this machine stand for a machine with eight cores: two lanes.
    for module in ("test_cluster", "test_cluster_writers"):
        (tmp_path / f"{module}.py").write_text(SERVICES_MODULE)
    record = tmp_path / "nodes.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(RECORD=str(record), PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-n", "8", "--dist", "loadgroup",
                           "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    groups: dict[str, set[str]] = {}
    workers: dict[str, set[str]] = {}
    for line in record.read_text().splitlines():
        nodeid, worker = line.split()
        module = nodeid.split("::")[0]
        groups.setdefault(module, set()).add(nodeid.rsplit("@", 1)[1])
        workers.setdefault(module, set()).add(worker)
    assert groups == {"test_cluster.py": {"services-0"}, "test_cluster_writers.py": {"services-1"}}
    assert all(len(found) == 1 for found in workers.values()), workers


def test_usable_cores_are_capped_by_the_containers_cpu_quota(tmp_path):
    import suite_machine as machine
    affinity = len(os.sched_getaffinity(0))
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    assert machine.usable_cores(cgroup) == affinity                      # no quota files: the affinity
    (cgroup / "cpu.max").write_text("max 100000\n")
    assert machine.usable_cores(cgroup) == affinity                      # v2, no quota
    (cgroup / "cpu.max").write_text("100000 100000\n")
    assert machine.usable_cores(cgroup) == 1                             # v2: one CPU's quota
    (cgroup / "cpu.max").unlink()
    (cgroup / "cpu").mkdir()
    (cgroup / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (cgroup / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert machine.usable_cores(cgroup) == affinity                      # v1, no quota
    (cgroup / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    assert machine.usable_cores(cgroup) == 1                             # v1: half a CPU still runs one process


def test_memory_is_capped_by_the_containers_limit(tmp_path):
    import suite_machine as machine
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       25165824 kB\nMemFree:        1000 kB\n")
    assert machine.memory_bytes(tmp_path, meminfo) == 24 * 2**30
    (tmp_path / "memory.max").write_text("max\n")
    assert machine.memory_bytes(tmp_path, meminfo) == 24 * 2**30
    (tmp_path / "memory.max").write_text(f"{6 * 2**30}\n")
    assert machine.memory_bytes(tmp_path, meminfo) == 6 * 2**30


def test_the_test_processes_follow_cores_memory_and_the_variable():
    import suite_machine as machine
    gib = 2**30
    assert machine.worker_count({}, cores=2, memory=24 * gib) == 2
    assert machine.worker_count({}, cores=16, memory=24 * gib) == 6     # four GiB a process
    assert machine.worker_count({}, cores=16, memory=7 * gib) == 2     # two whatever the memory
    assert machine.worker_count({}, cores=1, memory=64 * gib) == 1
    assert machine.worker_count({}, cores=4, memory=None) == 4          # memory unknown
    assert machine.worker_count({"WINDOWING_TEST_WORKERS": "3"}, cores=16, memory=64 * gib) == 3
    for bad in ("0", "two", "-1"):
        with pytest.raises(ValueError, match=repr(bad)):
            machine.worker_count({"WINDOWING_TEST_WORKERS": bad}, cores=2, memory=24 * gib)


def test_long_groups_get_one_lane_for_every_four_test_processes():
    import suite_machine as machine

    def workers(n: int) -> dict:
        return {"PYTEST_XDIST_WORKER_COUNT": str(n)}

    assert [machine.lanes(workers(n)) for n in (1, 2, 4, 7, 8, 12, 64)] == [1, 1, 1, 1, 2, 3, 16]
    assert machine.lanes({}) == 1                                        # not an xdist run
    assert [machine.lane_group("g", i, workers(12)) for i in range(4)] == ["g-0", "g-1", "g-2", "g-0"]
    for environ in ({}, workers(2), workers(7)):
        assert {machine.services_group(f"tests/e2e/{m}.py", environ) for m in machine.SERVICES_MODULES} == {"services"}
    assert [machine.services_group(f"{m}.py", workers(8)) for m in machine.SERVICES_MODULES] == [
        "services-0", "services-1", "services-0", "services-1"]
    assert [machine.services_group(f"{m}.py", workers(64)) for m in machine.SERVICES_MODULES] == [
        "services-0", "services-1", "services-2", "services-3"]               # at most a lane a module
    with pytest.raises(ValueError, match="test_quality"):
        machine.services_group("tests/pipelines/test_quality.py", {})


def test_every_module_with_module_scoped_set_up_is_one_xdist_group():
    """A module-scoped fixture outside a group runs once in each test process that gets a test of the module."""
    ungrouped = [path.relative_to(TESTS).as_posix() for path in sorted(TESTS.rglob("test_*.py"))
                 if 'scope="module"' in (text := path.read_text()) and "xdist_group" not in text]
    assert ungrouped == []
