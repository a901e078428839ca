"""A pytest plugin that shows where a test run's Spark time goes, per test module.

In each test process it times every py4j call (the Python side waiting on the JVM), each
action by kind, the analysis, optimization and planning phases of each collect and count
(their ``QueryPlanningTracker``), and, at the end of each module, Spark's rule timings
(``RuleExecutor.dumpTimeSpent()``: the analyzer's rules, Delta's ``PrepareDeltaScan``, the
optimizer's other rules). Each process appends one JSON line per module, with totals since
it started, to ``$SPARK_TIME_PROFILE_DIR/<worker>.jsonl``; ``python tools/spark_time_profile.py DIR``
prints the totals and the modules that took longest. Used by ``docs/testing.md``::

    SPARK_TIME_PROFILE_DIR=/tmp/profile PYTHONPATH=tools PYTEST_ADDOPTS="-p spark_time_profile" ./dev test
    python tools/spark_time_profile.py /tmp/profile

The timings are the Python side's wall time: run it alone, as a benchmark.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import re
import sys
import time

import pytest

ACTIONS = ("collectToPython", "collectAsArrowToPython", "count", "save", "execute")
PLANNED_ACTIONS = ("collectToPython", "collectAsArrowToPython", "count")
PHASES = ("analysis", "optimization", "planning")
RULE_LINE = re.compile(r"^(\S+)\s+\d+ / (\d+)\s+\d+ / \d+", re.M)

totals: collections.Counter = collections.Counter()
_measuring = [False]


def _rule_kind(name: str) -> str:
    if name.endswith("PrepareDeltaScan"):
        return "prepare_delta_scan"
    if ".analysis." in name or "Analyzer" in name or name.endswith(("DeltaAnalysis", "ResolveDeltaPathTable")):
        return "analysis"
    return "optimizer" if ".optimizer." in name else "other"


def _install() -> None:
    import py4j.java_gateway as gateway
    call = gateway.JavaMember.__call__

    def timed(member, *args):
        if _measuring[0]:
            return call(member, *args)
        started = time.perf_counter()
        result = call(member, *args)
        seconds = time.perf_counter() - started
        totals["py4j_s"] += seconds
        if member.name in ACTIONS:
            totals[f"{member.name}_s"] += seconds
            totals[f"{member.name}_n"] += 1
        if member.name in PLANNED_ACTIONS:
            _measuring[0] = True
            try:
                phases = member.container.queryExecution().tracker().phases()
                for phase in PHASES:
                    summary = phases.get(phase)
                    if summary.isDefined():
                        totals[f"{member.name}_{phase}_s"] += summary.get().durationMs() / 1000
            except Exception:  # noqa: BLE001 - not a Dataset action (a grouped count): no phases
                pass
            finally:
                _measuring[0] = False
        return result

    gateway.JavaMember.__call__ = timed


def _rule_seconds() -> dict:
    from pyspark.sql import SparkSession
    spark = SparkSession.getActiveSession()
    if spark is None:
        return {}
    _measuring[0] = True
    try:
        text = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.dumpTimeSpent()
    finally:
        _measuring[0] = False
    seconds: collections.Counter = collections.Counter()
    for name, total_ns in RULE_LINE.findall(text):
        seconds[f"rules_{_rule_kind(name)}_s"] += int(total_ns) / 1e9
    return dict(seconds)


def pytest_configure(config) -> None:
    _install()


@pytest.hookimpl(tryfirst=True)     # before the module's fixtures (and the session) are torn down
def pytest_runtest_teardown(item, nextitem) -> None:
    if nextitem is not None and nextitem.module is item.module:
        return
    folder = os.environ.get("SPARK_TIME_PROFILE_DIR", "spark-time-profile")
    os.makedirs(folder, exist_ok=True)
    record = {"module": item.module.__name__, **totals, **_rule_seconds()}
    with open(os.path.join(folder, f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"), "a") as out:
        out.write(json.dumps(record) + "\n")



def report(folder: str) -> None:
    """Print the totals over every process and the modules with the most py4j time."""
    overall: collections.Counter = collections.Counter()
    by_module: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in glob.glob(os.path.join(folder, "*.jsonl")):
        before: collections.Counter = collections.Counter()
        for line in open(path):
            record = json.loads(line)
            module = record.pop("module")
            now = collections.Counter(record)
            for key in before:                 # the session already gone: its last rule timings stand
                if key.startswith("rules_") and key not in now:
                    now[key] = before[key]
            by_module[module].update({key: now[key] - before[key] for key in now})
            before = now
        overall.update(before)
    for key in sorted(overall):
        print(f"{key:40s} {overall[key]:10.1f}")
    print()
    columns = ("py4j_s", "collectToPython_s", "save_s", "rules_analysis_s", "rules_prepare_delta_scan_s")
    print(f"{'module':34s}" + "".join(f"{c:>28s}" for c in columns))
    for module, seconds in sorted(by_module.items(), key=lambda item: -item[1]["py4j_s"])[:25]:
        print(f"{module:34s}" + "".join(f"{seconds[c]:28.1f}" for c in columns))


if __name__ == "__main__":
    report(sys.argv[1] if len(sys.argv) > 1 else "spark-time-profile")
