"""Claims as files written put-if-absent through Delta's LogStore: cost, order, claims in a Delta table, cleanup.

Two first claims racing on threads: ``test_delta_io.py``; whole operators racing and taking
crashed runs over: ``tests/pipelines/test_writers.py``.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from windowing.spark import claims
from windowing.spark.claims import ClaimLog, ConcurrentWriterError, release

pytestmark = pytest.mark.spark

NEVER_COMMITTED = lambda: False  # noqa: E731 - the committed() of a batch no run committed


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _files(path) -> list[str]:
    folder = Path(path) / claims.CLAIM_FILES_FOLDER
    return sorted(p.name for p in folder.iterdir() if claims.CLAIM_FILE.match(p.name))


def _jobs_in(spark, action) -> list[int]:
    """The ids of the Spark jobs ``action()`` ran (in a job group of its own)."""
    group = f"claims-{uuid.uuid4().hex}"
    spark.sparkContext.setJobGroup(group, "jobs of a claim")
    try:
        action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_claims_run_no_spark_job(spark, tmp_path):
    log = ClaimLog(spark, "op", str(tmp_path / "claims"))

    def claim_three_batches_and_reset():
        for batch in range(3):
            log.claim(batch, "w1", NEVER_COMMITTED)
            release("w1")
        assert log.new_generation() == 1
        assert log.claim(3, "w1", NEVER_COMMITTED) == 1
        release("w1")
        assert ClaimLog(spark, "op", log.path).read(3)[0] == 1
    assert _jobs_in(spark, claim_three_batches_and_reset) == []
    assert _files(log.path) == [f"{n:020d}.json" for n in range(5)]
    assert _jobs_in(spark, lambda: spark.range(3).count()) != []      # the job group sees jobs


def test_a_claim_file_holds_the_claim_and_the_first_claim_of_a_batch_owns_it(spark, tmp_path, monkeypatch):
    path, dead = str(tmp_path / "claims"), _dead_pid()
    with monkeypatch.context() as patch:
        patch.setattr(claims.os, "getpid", lambda: dead)
        ClaimLog(spark, "op", path)._append(0, 0, "crashed", None)
    assert ClaimLog(spark, "op", path).claim(0, "w1", NEVER_COMMITTED) == 0   # takes the crashed run's over
    release("w1")
    record = json.loads((Path(path) / claims.CLAIM_FILES_FOLDER / f"{1:020d}.json").read_text())
    assert {k: record[k] for k in ("windowing_app_id", "batch_id", "generation", "writer_id", "host", "pid",
                                   "taken_over_from")} == {
        "windowing_app_id": "op", "batch_id": 0, "generation": 0, "writer_id": "w1", "host": socket.gethostname(),
        "pid": claims.os.getpid(), "taken_over_from": "crashed"}
    assert set(record) == {"windowing_app_id", "batch_id", "generation", "writer_id", "host", "pid",
                           "process_started", "taken_over_from", "claimed_at"}
    assert [c.writer_id for c in ClaimLog(spark, "op", path).read(0)[1]] == ["crashed", "w1"]


def test_a_number_taken_meanwhile_refuses_a_claim_of_the_same_batch_and_retries_a_reset(spark, tmp_path):
    """Another writer writes the number this one is about to write: a claim of the batch it decided on
    stops (ConcurrentWriterError), a reset goes to the next number."""
    path = str(tmp_path / "claims")
    first, second = ClaimLog(spark, "op", path), ClaimLog(spark, "op", path)
    put = first.files.put_if_absent
    meanwhile = [lambda: second.claim(0, "w2", NEVER_COMMITTED), lambda: second.claim(1, "w2", NEVER_COMMITTED)]

    def other_writer_first(sequence, record):
        if meanwhile:
            meanwhile.pop(0)()
        return put(sequence, record)
    first.files.put_if_absent = other_writer_first
    with pytest.raises(ConcurrentWriterError, match=r"another run claimed batch 0 at the same moment as this run "
                                                    r"\(writer w1\)"):
        first.claim(0, "w1", NEVER_COMMITTED)
    assert owner_of(spark, path, 0) == "w2" and _files(path) == [f"{0:020d}.json"]
    assert first.new_generation() == 1                 # w2's claim of batch 1 took number 1 meanwhile
    assert _files(path) == [f"{n:020d}.json" for n in range(3)]
    assert ClaimLog(spark, "op", path).read()[0] == 1
    release("w2")


def owner_of(spark, path, batch_id) -> str | None:
    owner = claims.owner(ClaimLog(spark, "op", path).read(batch_id)[1])
    return owner.writer_id if owner else None


# ------------------------------------------------------------------ claims in a Delta table
def _table_claim(spark, path, batch_id, generation, writer_id, pid):
    """A claim as a commit of a Delta table at ``path``, its fields in the commit's marker."""
    marker = {"windowing_app_id": "op", "batch_id": batch_id, "generation": generation, "writer_id": writer_id,
              "host": socket.gethostname(), "pid": pid, "process_started": None, "taken_over_from": None}
    row = spark.createDataFrame([(None if batch_id < 0 else batch_id, generation, writer_id)],
                                "batch_id long, generation long, writer_id string")
    row.write.format("delta").mode("append").option("userMetadata", json.dumps(marker, sort_keys=True)).save(path)


def test_claims_in_a_delta_table_come_first_and_carry_their_generation_over(spark, tmp_path):
    path, dead = str(tmp_path / "claims"), _dead_pid()
    _table_claim(spark, path, 0, 0, "old-0", dead)
    _table_claim(spark, path, claims.RESET_BATCH, 1, None, None)
    _table_claim(spark, path, 5, 1, "old-5", dead)                  # a run that crashed in batch 5
    log = ClaimLog(spark, "op", path)
    assert log.read() == (1, [])
    assert [c.writer_id for c in log.read(5)[1]] == ["old-5"]
    generations = []                                                # it takes the crashed run's batch over
    assert _jobs_in(spark, lambda: generations.append(log.claim(5, "new", NEVER_COMMITTED))) == []
    assert generations == [1]
    release("new")
    assert [(c.writer_id, c.taken_over_from) for c in ClaimLog(spark, "op", path).read(5)[1]] == [
        ("old-5", None), ("new", "old-5")]
    assert owner_of(spark, path, 5) == "new"
    assert ClaimLog(spark, "op", path).claim(6, "new", NEVER_COMMITTED) == 1
    release("new")
    assert ClaimLog(spark, "op", path).new_generation() == 2
    assert ClaimLog(spark, "op", path).read() == (2, [])


def test_a_live_claim_in_a_delta_table_refuses_a_new_claim(spark, tmp_path):
    path = str(tmp_path / "claims")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        _table_claim(spark, path, 2, 0, "old-run", live.pid)
        with pytest.raises(ConcurrentWriterError, match=rf"batch 2 is being written by writer old-run .*"
                                                        rf"process {live.pid}"):
            ClaimLog(spark, "op", path).claim(2, "new", NEVER_COMMITTED)
    finally:
        live.kill()
        live.wait()
    assert not (Path(path) / claims.CLAIM_FILES_FOLDER).exists()    # refused before writing a claim


# ------------------------------------------------------------------ cleanup
def test_cleanup_keeps_the_newest_claims_and_every_claim_of_the_batch_being_claimed(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(claims, "KEEP_CLAIM_FILES", 3)
    monkeypatch.setattr(claims, "CLEANUP_INTERVAL_CLAIMS", 5)
    path = str(tmp_path / "claims")
    log = ClaimLog(spark, "op", path)
    for batch in range(12):                             # numbers 0-11; 5 and 10 clean up
        log.claim(batch, "w", NEVER_COMMITTED)
        release("w")
    assert _files(path) == [f"{n:020d}.json" for n in range(7, 12)]   # 10 kept 7 and later (10 - 3)
    dead = _dead_pid()
    with monkeypatch.context() as patch:                # batch 12 crashes three times: numbers 12, 13, 14
        patch.setattr(claims.os, "getpid", lambda: dead)
        for writer, taken_over_from in (("c1", None), ("c2", "c1"), ("c3", "c2")):
            ClaimLog(spark, "op", path)._append(12, 0, writer, taken_over_from)
    assert ClaimLog(spark, "op", path).claim(12, "w", NEVER_COMMITTED) == 0   # number 15: cleans up
    release("w")
    # Kept: the claim of batch 11 (where a read of batch 12 stops) and every claim of batch 12.
    assert _files(path) == [f"{n:020d}.json" for n in range(11, 16)]
    assert [c.writer_id for c in ClaimLog(spark, "op", path).read(12)[1]] == ["c1", "c2", "c3", "w"]
    assert owner_of(spark, path, 12) == "w"
    assert log.claim(13, "w", NEVER_COMMITTED) == 0     # a log that read files since deleted
    release("w")
    assert ClaimLog(spark, "op", path).read() == (0, [])
