"""How the whole-suite run uses the machine: how many test processes, and which modules share one.

The suite is CPU-bound (every test process keeps about 1.5 cores busy with its Python process and
its Spark JVM), so ``./dev test`` starts one test process per usable core, as far as memory allows.
The modules that start services of their own processes (a Spark cluster and an object store, a
Connect server, Airflow with a JVM per task) each keep several cores busy; on a small machine they
run one after another in one test process, so two of them never compete for the same cores (on two
cores, a streaming task of the Airflow test once ran past its 12-minute bound beside a cluster module), and on
a larger one they are spread over lanes, one lane for every :data:`WORKERS_PER_LANE` test processes.
A long group without shared set-up (the transcripts on Delta state) is spread over lanes the same way,
so that on a large machine no single process holds a quarter of an hour of tests.

``python tests/suite_machine.py`` prints the number of test processes (``./dev test`` reads it).
"""
from __future__ import annotations

import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MEMORY_PER_WORKER_BYTES = 4 * 2**30
"""A test process's Spark JVM (its heap may grow to 4 GiB), its Python process and the processes its tests start."""
MEMORY_FREE_WORKERS = 2
"""Test processes started whatever the memory reads (at most one per core): the two-process run is the
suite's baseline on a 2-core machine, and a memory limit must not halve it."""
WORKERS_PER_LANE = 4
SERVICES_MODULES = ("test_cluster", "test_cluster_writers", "test_airflow_e2e", "test_cluster_connect")
"""The modules that start services, the longest first: with several lanes they are dealt out in this order."""
SERVICES_GROUP = "services"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def usable_cores(cgroup_root: Path = CGROUP_ROOT) -> int:
    """The cores this process may run on, capped by the container's CPU quota (cgroup v2 ``cpu.max``
    or v1 ``cpu.cfs_quota_us``): a container limited to two CPUs of a 64-core host gets 2, not 64."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = period = None
    v2 = _read(cgroup_root / "cpu.max")
    if v2 and not v2.startswith("max"):
        quota, period = (int(x) for x in v2.split()[:2])
    else:
        v1_quota = _read(cgroup_root / "cpu" / "cpu.cfs_quota_us")
        v1_period = _read(cgroup_root / "cpu" / "cpu.cfs_period_us")
        if v1_quota and v1_period and int(v1_quota) > 0:
            quota, period = int(v1_quota), int(v1_period)
    if quota and period:
        cores = min(cores, max(1, quota // period))
    return max(1, cores)


def memory_bytes(cgroup_root: Path = CGROUP_ROOT, meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The machine's memory, capped by the container's limit (cgroup v2 ``memory.max`` or v1
    ``memory.limit_in_bytes``); None when neither can be read."""
    total = None
    for line in (_read(meminfo) or "").splitlines():
        if line.startswith("MemTotal:"):
            total = int(line.split()[1]) * 1024
    for limit in (_read(cgroup_root / "memory.max"), _read(cgroup_root / "memory" / "memory.limit_in_bytes")):
        if limit and limit.isdigit():
            total = min(total, int(limit)) if total else int(limit)
    return total


def worker_count(environ: dict | None = None, cores: int | None = None, memory: int | None = None) -> int:
    """Test processes of the whole-suite run: ``WINDOWING_TEST_WORKERS`` if set, else one per usable
    core, beyond :data:`MEMORY_FREE_WORKERS` at most one per :data:`MEMORY_PER_WORKER_BYTES` of
    memory, and at least one."""
    environ = os.environ if environ is None else environ
    given = environ.get("WINDOWING_TEST_WORKERS")
    if given:
        if not given.isdigit() or int(given) < 1:
            raise ValueError(f"WINDOWING_TEST_WORKERS must be a whole number of at least 1, not {given!r}")
        return int(given)
    cores = usable_cores() if cores is None else cores
    memory = memory_bytes() if memory is None else memory
    by_memory = memory // MEMORY_PER_WORKER_BYTES if memory else cores
    return max(min(cores, MEMORY_FREE_WORKERS), min(cores, by_memory), 1)


def lanes(environ: dict | None = None) -> int:
    """How many processes a long group is spread over: one for every :data:`WORKERS_PER_LANE` test
    processes of this pytest-xdist run (``PYTEST_XDIST_WORKER_COUNT``, the same in every test process,
    so every process computes the same groups); one outside xdist."""
    environ = os.environ if environ is None else environ
    return max(1, int(environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) // WORKERS_PER_LANE)


def lane_group(group: str, index: int, environ: dict | None = None) -> str:
    """The ``xdist_group`` of the ``index``-th member of ``group``: ``group`` itself while the run has
    one lane, else ``group-<lane>``, the members dealt out over the lanes in turn."""
    count = lanes(environ)
    return group if count == 1 else f"{group}-{index % count}"


def services_group(module_file: str, environ: dict | None = None) -> str:
    """The ``xdist_group`` of the services module at ``module_file`` (its ``__file__``: the module
    also runs as a script, in the processes its tests start): :data:`SERVICES_GROUP` while the run
    has one lane, else the lane its place in :data:`SERVICES_MODULES` deals it to."""
    name = Path(module_file).stem
    if name not in SERVICES_MODULES:
        raise ValueError(f"{name!r} is not one of the services modules {SERVICES_MODULES}")
    return lane_group(SERVICES_GROUP, SERVICES_MODULES.index(name), environ)


if __name__ == "__main__":
    try:
        print(worker_count())
    except ValueError as error:
        raise SystemExit(f"./dev test: {error}") from None
