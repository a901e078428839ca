"""Failures that say why: a full disk and a raw column whose type changed, each in the one line of ``winjob``.

The full disk is real: ``winjob stream`` runs in a private mount namespace
(``unshare``) whose output folder is a tmpfs of a few kilobytes, so Hadoop and
Delta meet the kernel's ENOSPC at their own writes. The type change is a real
overwrite of the raw Delta table under a stream that read it before.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from job_files import demo_job_file
from pipelines.errors import ExitCode, explain

REPO = Path(__file__).resolve().parents[2]


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt 2>/dev/null || "
                            "mount -t tmpfs -o size=4k tmpfs /tmp"], capture_output=True, timeout=30)
    return probe.returncode == 0


def _land(spark, path: str, n: int = 300) -> list[tuple]:
    from examples.demo import generate_purchases, land
    rows = generate_purchases(n_events=n, minutes=5)
    land(spark, rows, path)
    return rows


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(not _unshare_works(), reason="no private mount namespace here (unshare -rm with tmpfs)")
def test_a_full_disk_ends_the_stream_with_the_cause_in_one_line(spark, tmp_path):
    from pipelines.job import load_job
    job_file = demo_job_file(tmp_path)
    job = load_job(job_file, root=tmp_path)
    _land(spark, job.source_path)
    outputs = Path(job.output_root)
    outputs.mkdir(parents=True)
    # The outputs folder is a 16 KiB tmpfs, seen only by the winjob process (and its JVM).
    command = (f"mount -t tmpfs -o size=16k tmpfs {outputs} && exec {sys.executable} -m pipelines.cli stream "
               f"--job {job_file} --root {tmp_path}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    run = subprocess.run(["unshare", "-rm", "sh", "-c", command], env=env, capture_output=True, text=True,
                         timeout=600, cwd=str(REPO))
    lines = [line for line in run.stderr.splitlines() if line.startswith("winjob stream:")]
    assert run.returncode == ExitCode.FAILURE, run.stderr[-3000:]
    assert len(lines) == 1, run.stderr[-3000:]
    line = lines[0]
    assert "the disk is full (No space left on device)" in line, line
    assert str(outputs) in line and "Free space" in line and "Traceback" not in line, line
    assert len(line) < 600, line


def test_write_failures_name_their_cause():
    """Permission, read-only and quota failures as Hadoop words them (the full disk is the test above)."""
    cases = {
        "java.nio.file.AccessDeniedException: /data/out/results/part-0.parquet": ("permission denied", "/data/out"),
        "java.io.FileNotFoundException: /data/out/_delta_log/x.json (Permission denied)": ("permission denied",
                                                                                           "/data/out"),
        "java.io.IOException: Read-only file system": ("the file system is read-only", "the job's outputs"),
        "org.apache.hadoop.fs.FSError: java.io.IOException: Disk quota exceeded": ("quota", "the job's outputs"),
    }
    for message, (cause, where) in cases.items():
        explained = explain(RuntimeError(f"streaming job j failed: {message}"), outputs="/data/out")
        assert explained.code == ExitCode.FAILURE and cause in explained.line and where in explained.line, \
            (message, explained.line)


@pytest.mark.spark
@pytest.mark.slow
def test_a_raw_column_type_change_names_column_types_version_and_what_to_do(spark, tmp_path, capsys):
    from examples.demo import RAW_SCHEMA
    from pipelines.cli import main
    from pipelines.job import load_job
    from pyspark.sql import functions as F
    from windowing.spark.lake import delta_lake_io
    job_file = demo_job_file(tmp_path)
    job = load_job(job_file, root=tmp_path)
    _land(spark, job.source_path)
    assert main(["stream", "--job", str(job_file), "--root", str(tmp_path)]) == ExitCode.OK
    # An additive change first (a new column, which the stream reads on), then the type change.
    raw = spark.read.format("delta").load(job.source_path)
    raw.limit(5).withColumn("channel", F.lit("web")).write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(job.source_path)
    added = delta_lake_io.latest_version(spark, job.source_path)
    changed = spark.read.format("delta").load(job.source_path).withColumn("item_count", F.col("item_count")
                                                                          .cast("string"))
    changed.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(job.source_path)
    version = delta_lake_io.latest_version(spark, job.source_path)
    assert version == added + 1 and RAW_SCHEMA["item_count"].dataType.simpleString() == "bigint"
    capsys.readouterr()
    code = main(["stream", "--job", str(job_file), "--root", str(tmp_path)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("winjob stream:")]
    assert code == ExitCode.INPUT, err
    assert len(err) == 1
    line = err[0]
    assert f"changed the type of item_count from bigint to string in version {version}" in line, line
    assert f"TO VERSION AS OF {version - 1}" in line and "--reset-state" in line, line
    assert "Traceback" not in line and "DELTA_SCHEMA_CHANGED" not in line, line
