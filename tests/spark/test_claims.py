"""Claims: which kind a claims location gets, the rules every kind keeps, and the claim files' own cost,
layout, Delta-table compatibility and cleanup.

The rules (first claim owns, take-over of a dead owner, a claim taken meanwhile, resets, claims in a
Delta table) run against both kinds on a local root, the kind forced through :func:`open_claim_log`.
Two first claims racing on threads: ``test_delta_io.py``; whole operators racing and taking crashed
runs over: ``tests/pipelines/test_writers.py``.
"""
from __future__ import annotations

import datetime
import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from windowing.spark.lake import claims
from windowing.spark.lake.claims import (ConcurrentWriterError, DeltaClaimLog, FileClaimLog, claim_log_kind,
                                    open_claim_log, release)

pytestmark = pytest.mark.spark

NEVER_COMMITTED = lambda: False  # noqa: E731 - the committed() of a batch no run committed
DYNAMODB = "io.delta.storage.S3DynamoDBLogStore"
KINDS = pytest.mark.parametrize("kind", [FileClaimLog, DeltaClaimLog], ids=["files", "delta-table"])


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


def _conf(spark, **settings):
    """A copy of the session's SparkConf (where Delta reads its LogStore classes) with ``settings``."""
    conf = spark.sparkContext.getConf()
    for key, value in settings.items():
        conf.set(key, value)
    return conf


def owner_of(spark, path, batch_id, kind) -> str | None:
    owner = claims.owner(open_claim_log(spark, "op", path, kind).read(batch_id)[1])
    return owner.writer_id if owner else None


# ------------------------------------------------------------------ which kind a claims location gets
def test_the_kind_follows_the_log_store_delta_uses_for_the_path(spark, tmp_path):
    plain = _conf(spark)
    assert plain.get("spark.delta.logStore.s3a.impl") is None and plain.get("spark.delta.logStore.class") is None
    assert claim_log_kind(plain, str(tmp_path / "claims")) is FileClaimLog                  # no scheme: file:///
    assert claim_log_kind(plain, f"file:{tmp_path}/claims") is FileClaimLog
    assert claim_log_kind(plain, "/data/claims", default_fs="hdfs://namenode:8020") is FileClaimLog
    assert claim_log_kind(plain, "/data/claims", default_fs="s3a://bucket") is DeltaClaimLog
    for atomic in ("hdfs://nn/s/claims", "abfss://c@account.dfs.core.windows.net/s/claims",
                   "wasbs://c@account.blob.core.windows.net/s/claims", "adl://account/s/claims", "gs://b/s/claims"):
        assert claim_log_kind(plain, atomic) is FileClaimLog, atomic
    for single_driver in ("s3a://bucket/s/claims", "s3://bucket/s/claims", "S3N://bucket/s/claims"):
        assert claim_log_kind(plain, single_driver) is DeltaClaimLog, single_driver
    for unknown in ("oss://bucket/s/claims", "viewfs://cluster/s/claims", "ftp://host/s/claims"):
        assert claim_log_kind(plain, unknown) is DeltaClaimLog, unknown

    dynamodb = _conf(spark, **{"spark.delta.logStore.s3a.impl": DYNAMODB})
    assert claim_log_kind(dynamodb, "s3a://bucket/s/claims") is FileClaimLog
    assert claim_log_kind(dynamodb, "s3://bucket/s/claims") is DeltaClaimLog     # configured for s3a only
    assert claim_log_kind(dynamodb, str(tmp_path)) is FileClaimLog
    assert claim_log_kind(_conf(spark, **{"delta.logStore.s3.impl": DYNAMODB}), "s3://b/claims") is FileClaimLog
    assert claim_log_kind(_conf(spark, **{"spark.delta.logStore.class": DYNAMODB}), "s3n://b/claims") is FileClaimLog
    # A LogStore not known to be atomic where it is configured: the Delta table.
    local_only = _conf(spark, **{"spark.delta.logStore.file.impl": "io.delta.storage.LocalLogStore"})
    assert claim_log_kind(local_only, str(tmp_path)) is DeltaClaimLog
    assert claim_log_kind(_conf(spark, **{"spark.delta.logStore.s3a.impl": "com.example.S3Store"}),
                          "s3a://b/claims") is DeltaClaimLog


def test_the_factory_picks_the_kind_once_and_a_bad_value_is_named(spark, tmp_path):
    assert type(open_claim_log(spark, "op", str(tmp_path / "claims"))) is FileClaimLog
    assert type(open_claim_log(spark, "op", "s3a://no-such-bucket/s/claims")) is DeltaClaimLog   # touches no store
    assert type(open_claim_log(spark, "op", str(tmp_path / "claims"), DeltaClaimLog)) is DeltaClaimLog
    from windowing.spark.state.stores import DeltaStore
    assert type(DeltaStore(spark, "op", str(tmp_path / "root")).claims) is FileClaimLog
    with pytest.raises(ValueError, match="not 'files'"):
        open_claim_log(spark, "op", str(tmp_path), "files")
    with pytest.raises(ValueError, match=r"not <class 'windowing.spark.lake.claims.ClaimLog'>"):
        open_claim_log(spark, "op", str(tmp_path), claims.ClaimLog)
    with pytest.raises(ValueError, match="not ''"):
        claim_log_kind(_conf(spark), "")
    with pytest.raises(ValueError, match=r"spark.delta.logStore.s3a.impl=' '"):
        claim_log_kind(_conf(spark, **{"spark.delta.logStore.s3a.impl": " "}), "s3a://b/claims")
    with pytest.raises(ValueError, match=r"spark.delta.logStore.s3a.impl='io.delta.storage.S3DynamoDBLogStore' and "
                                         r"delta.logStore.s3a.impl='x.Y'"):
        claim_log_kind(_conf(spark, **{"spark.delta.logStore.s3a.impl": DYNAMODB, "delta.logStore.s3a.impl": "x.Y"}),
                       "s3a://b/claims")
    with pytest.raises(ValueError, match=r"spark.delta.logStore.class='x.Y' and "
                                         r"spark.delta.logStore.s3a.impl='io.delta.storage.S3DynamoDBLogStore'"):
        claim_log_kind(_conf(spark, **{"spark.delta.logStore.class": "x.Y", "spark.delta.logStore.s3a.impl": DYNAMODB}),
                       "s3a://b/claims")


def test_delta_table_claims_refuse_a_location_with_claim_files(spark, tmp_path):
    """Claim files may be newer than every commit of the table: a log of the table kind cannot order
    its claims after them, so it stops (naming the setting) instead of deciding on half the claims."""
    path = str(tmp_path / "claims")
    FileClaimLog(spark, "op", path).claim(0, "w1", NEVER_COMMITTED)
    release("w1")
    with pytest.raises(RuntimeError, match=rf"claims in {path}/_claims/_delta_log were written as files.*"
                                           rf"spark.delta.logStore.s3a.impl={DYNAMODB}"):
        DeltaClaimLog(spark, "op", path).claim(1, "w2", NEVER_COMMITTED)
    assert _files(path) == [f"{0:020d}.json"] and not (Path(path) / "_delta_log").exists()


# ------------------------------------------------------------------ the rules, on both kinds
@KINDS
def test_the_first_claim_owns_a_live_owner_refuses_and_a_dead_one_is_taken_over(spark, tmp_path, kind):
    path, dead = str(tmp_path / "claims"), _dead_pid()
    log = open_claim_log(spark, "op", path, kind)
    assert log.claim(0, "w1", NEVER_COMMITTED) == 0
    assert log.claim(0, "w1", NEVER_COMMITTED) == 0                 # its own claim again
    with pytest.raises(ConcurrentWriterError, match=r"batch 0 is being written by writer w1 .* this run "
                                                    r"\(writer w2\) stopped before writing any of it"):
        open_claim_log(spark, "op", path, kind).claim(0, "w2", NEVER_COMMITTED)
    release("w1")
    with pytest.raises(ConcurrentWriterError, match=r"batch 0 was already committed by another writer; this "
                                                    r"writer \(w2\) did not commit"):
        open_claim_log(spark, "op", path, kind).claim(0, "w2", lambda: True)
    assert open_claim_log(spark, "op", path, kind).claim(0, "w2", NEVER_COMMITTED) == 0   # w1 left its batch
    release("w2")
    with pytest.MonkeyPatch.context() as patch:                      # a run that crashed in batch 1
        patch.setattr(claims.os, "getpid", lambda: dead)
        open_claim_log(spark, "op", path, kind)._append(1, 0, "crashed", None)
    assert open_claim_log(spark, "op", path, kind).claim(1, "w3", NEVER_COMMITTED) == 0
    release("w3")
    assert [(c.writer_id, c.taken_over_from) for c in open_claim_log(spark, "op", path, kind).read(0)[1]] == [
        ("w1", None), ("w2", "w1")]
    assert [(c.writer_id, c.taken_over_from) for c in open_claim_log(spark, "op", path, kind).read(1)[1]] == [
        ("crashed", None), ("w3", "crashed")]
    assert owner_of(spark, path, 0, kind) == "w2" and owner_of(spark, path, 1, kind) == "w3"
    assert open_claim_log(spark, "op", path, kind).new_generation() == 1
    assert open_claim_log(spark, "op", path, kind).read(1) == (1, [])   # the new generation has no claim yet
    assert open_claim_log(spark, "op", path, kind).claim(1, "w4", NEVER_COMMITTED) == 1
    release("w4")
    assert open_claim_log(spark, "other-op", path, kind).read() == (0, [])


@KINDS
def test_a_claim_made_meanwhile_refuses_a_claim_of_the_same_batch_and_a_reset_still_goes_in(spark, tmp_path, kind):
    """Another writer claims between this writer's read and its write: a claim of the batch it decided on
    stops (ConcurrentWriterError, the same message on both kinds), a reset goes in after it."""
    path = str(tmp_path / "claims")
    first, second = open_claim_log(spark, "op", path, kind), open_claim_log(spark, "op", path, kind)
    read = first.read
    meanwhile = [(0, lambda: second.claim(0, "w2", NEVER_COMMITTED)),      # after the claim's read of batch 0
                 (None, lambda: second.claim(1, "w2", NEVER_COMMITTED))]   # after the reset's read

    def other_writer_after_the_read(batch_id=None):
        answer = read(batch_id)
        if meanwhile and meanwhile[0][0] == batch_id:
            meanwhile.pop(0)[1]()
        return answer
    first.read = other_writer_after_the_read
    with pytest.raises(ConcurrentWriterError, match=r"another run claimed batch 0 at the same moment as this run "
                                                    r"\(writer w1\)"):
        first.claim(0, "w1", NEVER_COMMITTED)
    assert owner_of(spark, path, 0, kind) == "w2"
    assert first.new_generation() == 1                 # w2's claim of batch 1 went in meanwhile
    assert open_claim_log(spark, "op", path, kind).read() == (1, [])
    assert owner_of(spark, path, 1, kind) is None      # that claim was of generation 0
    release("w2")


def _table_claim(spark, path, batch_id, generation, writer_id, pid):
    """A claim as a commit of a Delta table at ``path``, its fields in the commit's marker (what
    :class:`DeltaClaimLog` writes, and earlier releases did)."""
    marker = {"windowing_app_id": "op", "batch_id": batch_id, "generation": generation, "writer_id": writer_id,
              "host": socket.gethostname(), "pid": pid, "process_started": None, "taken_over_from": None}
    row = spark.createDataFrame([(None if batch_id < 0 else batch_id, generation, writer_id, marker["host"], pid, None,
                                  None, datetime.datetime.now(datetime.timezone.utc))], claims.CLAIMS_SCHEMA)
    row.write.format("delta").mode("append").option("userMetadata", json.dumps(marker, sort_keys=True)).save(path)


@KINDS
def test_claims_in_a_delta_table_count_and_carry_their_generation_over(spark, tmp_path, kind):
    """Claim files read a table's claims as the beginning of their sequence; Delta-table claims are those."""
    path, dead = str(tmp_path / "claims"), _dead_pid()
    _table_claim(spark, path, 0, 0, "old-0", dead)
    _table_claim(spark, path, claims.RESET_BATCH, 1, None, None)
    _table_claim(spark, path, 5, 1, "old-5", dead)                  # a run that crashed in batch 5
    log = open_claim_log(spark, "op", path, kind)
    assert log.read() == (1, [])
    assert [c.writer_id for c in log.read(5)[1]] == ["old-5"]
    generations = []                                                # it takes the crashed run's batch over
    jobs = _jobs_in(spark, lambda: generations.append(log.claim(5, "new", NEVER_COMMITTED)))
    assert generations == [1] and (jobs == [] if kind is FileClaimLog else jobs != [])
    release("new")
    assert [(c.writer_id, c.taken_over_from) for c in open_claim_log(spark, "op", path, kind).read(5)[1]] == [
        ("old-5", None), ("new", "old-5")]
    assert owner_of(spark, path, 5, kind) == "new"
    assert open_claim_log(spark, "op", path, kind).claim(6, "new", NEVER_COMMITTED) == 1
    release("new")
    assert open_claim_log(spark, "op", path, kind).new_generation() == 2
    assert open_claim_log(spark, "op", path, kind).read() == (2, [])


@KINDS
def test_a_live_claim_in_a_delta_table_refuses_a_new_claim(spark, tmp_path, kind):
    path = str(tmp_path / "claims")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        _table_claim(spark, path, 2, 0, "old-run", live.pid)
        with pytest.raises(ConcurrentWriterError, match=rf"batch 2 is being written by writer old-run .*"
                                                        rf"process {live.pid}"):
            open_claim_log(spark, "op", path, kind).claim(2, "new", NEVER_COMMITTED)
    finally:
        live.kill()
        live.wait()
    assert not (Path(path) / claims.CLAIM_FILES_FOLDER).exists()    # refused before writing a claim


# ------------------------------------------------------------------ claim files: cost, layout, cleanup
def test_claim_files_run_no_spark_job(spark, tmp_path):
    log = FileClaimLog(spark, "op", str(tmp_path / "claims"))

    def claim_three_batches_and_reset():
        for batch in range(3):
            log.claim(batch, "w1", NEVER_COMMITTED)
            release("w1")
        assert log.new_generation() == 1
        assert log.claim(3, "w1", NEVER_COMMITTED) == 1
        release("w1")
        assert FileClaimLog(spark, "op", log.path).read(3)[0] == 1
    assert _jobs_in(spark, claim_three_batches_and_reset) == []
    assert _files(log.path) == [f"{n:020d}.json" for n in range(5)]
    assert _jobs_in(spark, lambda: spark.range(3).count()) != []      # the job group sees jobs


def test_a_claim_file_holds_the_claim(spark, tmp_path, monkeypatch):
    path, dead = str(tmp_path / "claims"), _dead_pid()
    with monkeypatch.context() as patch:
        patch.setattr(claims.os, "getpid", lambda: dead)
        FileClaimLog(spark, "op", path)._append(0, 0, "crashed", None)
    assert FileClaimLog(spark, "op", path).claim(0, "w1", NEVER_COMMITTED) == 0   # takes the crashed run's over
    release("w1")
    record = json.loads((Path(path) / claims.CLAIM_FILES_FOLDER / f"{1:020d}.json").read_text())
    assert {k: record[k] for k in ("windowing_app_id", "batch_id", "generation", "writer_id", "host", "pid",
                                   "taken_over_from")} == {
        "windowing_app_id": "op", "batch_id": 0, "generation": 0, "writer_id": "w1", "host": socket.gethostname(),
        "pid": claims.os.getpid(), "taken_over_from": "crashed"}
    assert set(record) == {"windowing_app_id", "batch_id", "generation", "writer_id", "host", "pid",
                           "process_started", "taken_over_from", "claimed_at"}


def test_a_number_taken_meanwhile_is_read_and_the_next_number_tried(spark, tmp_path):
    """The file kind's own race: the number a writer is about to write is taken; a reset (which decides
    nothing about a batch) reads again and writes the next number."""
    path = str(tmp_path / "claims")
    first, second = FileClaimLog(spark, "op", path), FileClaimLog(spark, "op", path)
    assert first.read() == (0, [])
    put = first.files.put_if_absent
    meanwhile = [lambda: second.claim(0, "w2", NEVER_COMMITTED)]

    def other_writer_first(sequence, record):
        if meanwhile:
            meanwhile.pop(0)()
        return put(sequence, record)
    first.files.put_if_absent = other_writer_first
    first._append(claims.RESET_BATCH, 1, None, None)
    assert _files(path) == [f"{n:020d}.json" for n in range(2)]
    assert FileClaimLog(spark, "op", path).read() == (1, [])
    release("w2")


def test_cleanup_keeps_the_newest_claims_and_every_claim_of_the_batch_being_claimed(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(claims, "KEEP_CLAIM_FILES", 3)
    monkeypatch.setattr(claims, "CLEANUP_INTERVAL_CLAIMS", 5)
    path = str(tmp_path / "claims")
    log = FileClaimLog(spark, "op", path)
    for batch in range(12):                             # numbers 0-11; 5 and 10 clean up
        log.claim(batch, "w", NEVER_COMMITTED)
        release("w")
    assert _files(path) == [f"{n:020d}.json" for n in range(7, 12)]   # 10 kept 7 and later (10 - 3)
    dead = _dead_pid()
    with monkeypatch.context() as patch:                # batch 12 crashes three times: numbers 12, 13, 14
        patch.setattr(claims.os, "getpid", lambda: dead)
        for writer, taken_over_from in (("c1", None), ("c2", "c1"), ("c3", "c2")):
            FileClaimLog(spark, "op", path)._append(12, 0, writer, taken_over_from)
    assert FileClaimLog(spark, "op", path).claim(12, "w", NEVER_COMMITTED) == 0   # number 15: cleans up
    release("w")
    # Kept: the claim of batch 11 (where a read of batch 12 stops) and every claim of batch 12.
    assert _files(path) == [f"{n:020d}.json" for n in range(11, 16)]
    assert [c.writer_id for c in FileClaimLog(spark, "op", path).read(12)[1]] == ["c1", "c2", "c3", "w"]
    assert owner_of(spark, path, 12, FileClaimLog) == "w"
    assert log.claim(13, "w", NEVER_COMMITTED) == 0     # a log that read files since deleted
    release("w")
    assert FileClaimLog(spark, "op", path).read() == (0, [])
