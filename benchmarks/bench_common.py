"""What the benchmarks share: the streaming rounds' data and Spark's own windowed query, Spark job
counts, CPU and memory readings, the machine's load, medians and ratios, and a step profiler.

The scripts of this folder run with it on their path (``./dev bench <script>`` runs the script
from here), so they import it as ``bench_common``.
"""
from __future__ import annotations

import functools
import os
import resource
import statistics
import time
from collections import Counter
from pathlib import Path

from pyspark.sql import functions as F

BASE_MS = 1_793_491_200_000
ROUND_SPAN_MS = 120_000
"""Event time one round's rows cover: two windows, so each batch closes the windows of the one before."""
DISORDER_MS = 3_000
"""Rows run up to this far behind the batch's newest, within the 10 s bound (few late rows)."""
WATERMARK_DELAY = "10 seconds"
WINDOW_SIZE = "1 minute"


def append_round(spark, raw: str, r: int, rows: int, keys: int) -> None:
    """Append round ``r``'s arrival to the raw Delta table: ``rows`` rows of ``keys`` users over
    :data:`ROUND_SPAN_MS` of event time after the previous round's, a little out of order."""
    step_ms = max(1, ROUND_SPAN_MS // rows)
    (spark.range(rows)
     .select((F.col("id") % keys).cast("string").alias("user_id"),
             F.timestamp_millis(F.lit(BASE_MS + r * ROUND_SPAN_MS) + F.col("id") * step_ms
                                - (F.col("id") % 7) * (DISORDER_MS // 7)).alias("event_time"),
             ((F.col("id") * 13) % 5 + 1).cast("long").alias("item_count"))
     .write.format("delta").mode("append").save(raw))


def spark_windowed_stream(spark, raw: str):
    """Spark's own query of the streaming benchmarks: the raw Delta table, ``withWatermark`` 10 s,
    ``groupBy(window(event_time, 1 minute), user_id)`` with sum, count and max (not yet started)."""
    return (spark.readStream.format("delta").load(raw)
            .withWatermark("event_time", WATERMARK_DELAY)
            .groupBy(F.window("event_time", WINDOW_SIZE), "user_id")
            .agg(F.sum("item_count").alias("items"), F.count(F.lit(1)).alias("n"),
                 F.max("item_count").alias("max_items")))


def spark_results(spark, path: str):
    """Spark's windowed results as ``(user_id, start_ms, items, n, max_items)``."""
    return (spark.read.format("delta").load(path)
            .select("user_id", F.unix_millis("window.start").alias("start_ms"),
                    *[F.col(c).cast("long") for c in ("items", "n", "max_items")]))


def our_final_results(spark, path: str, names=("items", "n", "max_items")):
    """Our final panes as Spark's rows (``names``: our columns of sum, count and max)."""
    return (spark.read.format("delta").load(path).where("is_final")
            .select("user_id", F.col("window_start_ms").alias("start_ms"),
                    *[F.col(c).cast("long").alias(a) for c, a in zip(names, ("items", "n", "max_items"))]))


def compare_windows(theirs, ours) -> tuple[int, int]:
    """(windows Spark emitted, how many of them are missing or different among our final panes).

    Spark's append mode emits a window once the watermark passes its end; ours emits its final
    pane then too, so the windows of Spark's output must be among ours.
    """
    return theirs.count(), theirs.exceptAll(ours).count()


def spark_jobs_so_far(spark) -> int:
    """Spark jobs started in this JVM so far, whatever their group (the scheduler's next job id)."""
    next_id = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()
    return int(next_id if isinstance(next_id, int) else next_id.get())


def jvm_pid(spark) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def jvm_cpu_s(spark) -> float:
    """CPU seconds (user + system) used so far by the Spark JVM (driver and local executors).

    Less sensitive than wall time to other work on a shared machine.
    """
    fields = Path(f"/proc/{jvm_pid(spark)}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_line(spark) -> str:
    """The driver's peak RSS (Python process and JVM, from /proc) and the JVM heap: used now, the
    peak of its pools, and the maximum."""
    py_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    status = Path(f"/proc/{jvm_pid(spark)}/status").read_text()
    jvm_peak_mb = next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM")), 0.0)
    lang = spark.sparkContext._jvm.java.lang
    runtime = lang.Runtime.getRuntime()
    used_mb = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
    peak_mb = 0.0
    for pool in lang.management.ManagementFactory.getMemoryPoolMXBeans():
        if str(pool.getType().toString()) == "Heap memory":
            peak_mb += pool.getPeakUsage().getUsed() / 2**20
    return (f"memory: Python driver peak RSS {py_peak_mb:.0f} MB, JVM peak RSS {jvm_peak_mb:.0f} MB, "
            f"JVM heap used {used_mb:.0f} MB (pools' peaks {peak_mb:.0f} MB, max {runtime.maxMemory() / 2**20:.0f} MB)")


def load_line(when: str) -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {when}: {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def commit_line() -> str:
    """The commit measured (and whether the tree had changes)."""
    import subprocess
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "commit: unknown"
    return f"commit {head}{' (with uncommitted changes)' if dirty else ''}"


def median_ratio(rounds: list[dict], key: str, ours: str = "ours", theirs: str = "spark") -> float:
    """The median over ``rounds`` of each round's ours / Spark ratio of ``key``."""
    return statistics.median(r[ours][key] / r[theirs][key] for r in rounds)


def sum_ratio(rounds: list[dict], key: str, ours: str = "ours", theirs: str = "spark") -> float:
    """Ours / Spark's of ``key`` summed over ``rounds``."""
    return sum(r[ours][key] for r in rounds) / sum(r[theirs][key] for r in rounds)


def alternate(r: int, names: list[str]) -> list[str]:
    """The order the sides run in round ``r``: as given in even rounds, reversed in odd ones."""
    return list(names) if r % 2 == 0 else list(names)[::-1]


class StepProfiler:
    """Wraps functions to count the Spark jobs and seconds each step spends itself.

    Nested steps count their own; the enclosing step gets the rest. :meth:`wrap` replaces
    ``owner.name`` for the rest of the process (a benchmark's last act).
    """

    def __init__(self, spark):
        self.spark = spark
        self.jobs, self.seconds, self.calls = Counter(), Counter(), Counter()
        self._stack: list[list] = []

    def wrap(self, owner, name: str, label: str | None = None, by_caller: bool = False) -> None:
        """Count ``owner.name``'s calls under ``label``; ``by_caller``: under the label and the
        product's function that called it."""
        base = label or f"{getattr(owner, '__name__', owner)}.{name}"
        original = getattr(owner, name)
        profiler = self

        @functools.wraps(original)
        def wrapper(*a, **k):
            label = f"{base} <- {product_caller()}" if by_caller else base
            frame = [spark_jobs_so_far(profiler.spark), time.monotonic(), 0, 0.0]
            profiler._stack.append(frame)
            try:
                return original(*a, **k)
            finally:
                profiler._stack.pop()
                n, s = spark_jobs_so_far(profiler.spark) - frame[0], time.monotonic() - frame[1]
                profiler.jobs[label] += n - frame[2]
                profiler.seconds[label] += s - frame[3]
                profiler.calls[label] += 1
                if profiler._stack:
                    profiler._stack[-1][2] += n
                    profiler._stack[-1][3] += s
        setattr(owner, name, wrapper)

    def wrap_all(self, owner, names, prefix: str, by_caller: bool = False) -> None:
        for name in names:
            if hasattr(owner, name):
                self.wrap(owner, name, f"{prefix}.{name}", by_caller)

    def reset(self) -> None:
        self.jobs.clear()
        self.seconds.clear()
        self.calls.clear()

    def lines(self) -> list[str]:
        out = [f"{sum(self.jobs.values())} Spark jobs, {sum(self.seconds.values()):.2f} s in the steps below"]
        for step, s in self.seconds.most_common():
            out.append(f"  {self.jobs[step]:3d} jobs {s:6.2f} s {self.calls[step]:4d} calls  {step}")
        return out


def product_caller() -> str:
    """The innermost function of the product (windowing/, pipelines/) on the call stack."""
    import sys
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if ("/windowing/" in name or "/pipelines/" in name) and "/pyspark/" not in name:
            return f"{Path(name).stem}.{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def wrap_operator_steps(profiler: StepProfiler) -> None:
    """The operator's Spark and Delta calls (what one batch spends where)."""
    from pyspark.sql.classic.dataframe import DataFrame
    from windowing.spark.lake import claims
    from windowing.spark.lake import delta_lake_io
    from windowing.spark.operator import protocol as operator
    from windowing.spark.state import stores
    profiler.wrap_all(DataFrame, ("count", "first", "collect", "persist", "toArrow"), "DataFrame", by_caller=True)
    profiler.wrap_all(delta_lake_io, ("merge_once", "append", "latest_version", "committed_batch", "appended_rows",
                                 "create_empty", "table_exists", "version_before_marks", "first_writer",
                                 "merge_deleted_rows", "landed", "run_once"), "delta_lake_io")
    profiler.wrap_all(stores.DeltaStore, ("claim", "commit_progress", "write_output", "write_windows",
                                          "read_windows", "last_progress", "ensure_tables", "start_versions"),
                      "DeltaStore")
    profiler.wrap(claims.ClaimLog, "claim", "ClaimLog.claim")
    profiler.wrap(operator.WindowOperator, "process_batch", "process_batch (the rest)")
