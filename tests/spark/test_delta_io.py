"""delta_lake_io's writes that land once per (application id, batch id), on real Delta tables.

The commit protocol (tests/spark/test_delta_protocol.py) relies on these rules; here
each rule is shown on its own: a repeated or older batch is skipped, other
writers' commits in between do not hide the marker, Delta ``txn`` actions of
older releases count, and a log whose early commits were cleaned up falls back
to Delta's own record.
"""
from __future__ import annotations

import decimal
import json
import os
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from windowing.spark.lake import claims

from windowing.spark.lake import delta_lake_io


def _rows(spark, n: int, tag: str):
    return spark.range(n).select(F.col("id"), F.lit(tag).alias("tag"))


def _count(spark, path) -> int:
    return spark.read.format("delta").load(str(path)).count()


def test_a_batch_lands_once_and_older_batches_are_skipped(spark, tmp_path):
    path = str(tmp_path / "t")
    assert delta_lake_io.append(_rows(spark, 3, "b0"), path, "op", 0)
    assert not delta_lake_io.append(_rows(spark, 3, "b0 again"), path, "op", 0)
    assert delta_lake_io.append(_rows(spark, 2, "b1"), path, "op", 1)
    assert not delta_lake_io.append(_rows(spark, 5, "b0 late replay"), path, "op", 0)   # Delta's rule: not higher
    assert _count(spark, path) == 5
    assert delta_lake_io.committed_batch(spark, path, "op") == 1
    assert delta_lake_io.committed_batch(spark, path, "someone else") is None


def test_other_writers_commits_do_not_hide_the_marker(spark, tmp_path):
    path = str(tmp_path / "t")
    delta_lake_io.append(_rows(spark, 1, "op"), path, "op", 7)
    for batch in range(3):
        delta_lake_io.append(_rows(spark, 1, "other"), path, "other", batch)
    # A plain write with someone's free-text metadata, and a DELETE: neither is a marker.
    _rows(spark, 1, "free").write.format("delta").mode("append").option("userMetadata", "not json {").save(path)
    from delta.tables import DeltaTable
    DeltaTable.forPath(spark, path).delete(F.col("tag") == "free")
    assert delta_lake_io.committed_batch(spark, path, "op") == 7
    assert delta_lake_io.committed_batch(spark, path, "other") == 2
    assert not delta_lake_io.append(_rows(spark, 1, "op"), path, "op", 7)
    assert _count(spark, path) == 4


def test_delta_txn_actions_of_older_releases_count_as_markers(spark, tmp_path):
    path = str(tmp_path / "t")
    (_rows(spark, 2, "legacy").write.format("delta").mode("append")
     .option("txnAppId", "op").option("txnVersion", "4").save(path))
    assert delta_lake_io.committed_batch(spark, path, "op") == 4
    assert not delta_lake_io.append(_rows(spark, 2, "replay"), path, "op", 4)
    assert delta_lake_io.append(_rows(spark, 2, "next"), path, "op", 5)
    assert _count(spark, path) == 4


def test_run_once_runs_a_statement_once_per_batch(spark, tmp_path):
    from delta.tables import DeltaTable
    path = str(tmp_path / "t")
    delta_lake_io.append(_rows(spark, 4, "x"), path, "seed", 0)
    table = DeltaTable.forPath(spark, path)
    ran = []

    def bump():
        ran.append(1)
        table.update(set={"id": F.col("id") + 100})

    assert delta_lake_io.run_once(spark, path, "op", 3, bump)
    assert not delta_lake_io.run_once(spark, path, "op", 3, bump)
    assert len(ran) == 1
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [100, 101, 102, 103]
    assert spark.conf.get(delta_lake_io.USER_METADATA_CONF, None) is None   # not left on the session


def test_a_cleaned_up_log_falls_back_to_deltas_record(spark, tmp_path):
    path = str(tmp_path / "t")
    (_rows(spark, 1, "legacy").write.format("delta").mode("append")
     .option("txnAppId", "op").option("txnVersion", "2").save(path))
    for batch in range(11):          # past Delta's checkpoint interval (10)
        delta_lake_io.append(_rows(spark, 1, "other"), path, "other", batch)
    log = Path(path) / "_delta_log"
    assert any(log.glob("*.checkpoint.parquet"))
    for version in range(5):         # as log cleanup does: commits before the checkpoint go
        os.remove(log / f"{version:020d}.json")
    assert delta_lake_io.committed_batch(spark, path, "op") == 2
    assert not delta_lake_io.append(_rows(spark, 1, "replay"), path, "op", 2)


def test_row_counts_of_a_batch_come_from_its_commit(spark, tmp_path):
    """appended_rows / merge_deleted_rows read the marked commit's metrics; a batch whose write
    changed nothing records no commit (Delta skips empty commits) and reads as 0 rows."""
    path = str(tmp_path / "t")
    assert delta_lake_io.append(_rows(spark, 3, "b0"), path, "op", 0)
    assert delta_lake_io.appended_rows(spark, path, "op", 0) == 3
    version = delta_lake_io.latest_version(spark, path)
    assert delta_lake_io.append(_rows(spark, 0, "b1"), path, "op", 1)              # an empty output
    assert delta_lake_io.latest_version(spark, path) == version                     # no commit recorded
    assert delta_lake_io.appended_rows(spark, path, "op", 1) == 0
    assert delta_lake_io.appended_rows(spark, path, "op", 0) == 3                   # still the newest commit of "op"
    source = spark.range(2).select(F.col("id"), F.lit(None).cast("string").alias("tag"),
                                   F.lit(True).alias("__delete"))              # delete ids 0 and 1
    delta_lake_io.merge_once(spark, path, source, ["id"], "op", 2)
    assert delta_lake_io.merge_deleted_rows(spark, path, "op", 2) == 2
    assert _count(spark, path) == 1
    nothing = source.where(F.lit(False))
    delta_lake_io.merge_once(spark, path, nothing, ["id"], "op", 3)                 # changes nothing
    assert delta_lake_io.merge_deleted_rows(spark, path, "op", 3) == 0
    assert delta_lake_io.merge_deleted_rows(spark, path, "op", 1) is None           # batch 2's commit is newer
    assert delta_lake_io.merge_deleted_rows(spark, path, "someone else", 0) == 0    # never wrote: nothing deleted


def test_a_columns_values_come_from_the_commits_file_statistics_while_only_files_were_added(spark, tmp_path):
    """appended_values: one value per added file from its statistics; None when a file holds two values, a
    null, or a commit removed a file (the caller reads the table)."""
    path = str(tmp_path / "runs")
    one_row = (lambda kind: spark.createDataFrame([(kind,)], "kind string").coalesce(1))
    one_row("stream").write.format("delta").save(path)
    assert delta_lake_io.appended_values(spark, path, "kind") == {"stream"}
    one_row("backfill").write.format("delta").mode("append").save(path)
    assert delta_lake_io.appended_values(spark, path, "kind") == {"stream", "backfill"}
    spark.createDataFrame([("a",), ("b",)], "kind string").coalesce(1).write.format("delta").mode("append").save(path)
    assert delta_lake_io.appended_values(spark, path, "kind") is None            # min a, max b: not one value
    nulls = str(tmp_path / "nulls")
    spark.createDataFrame([("a",), (None,)], "kind string").coalesce(1).write.format("delta").save(nulls)
    assert delta_lake_io.appended_values(spark, nulls, "kind") is None
    removed = str(tmp_path / "removed")
    one_row("stream").write.format("delta").save(removed)
    one_row("backfill").write.format("delta").mode("overwrite").save(removed)
    assert delta_lake_io.appended_values(spark, removed, "kind") is None          # the overwrite removed a file


def test_results_table_collects_file_statistics_on_window_bounds_and_batch_id_not_keys(spark, tmp_path):
    """Every results file spans nearly every key (writes are hash-partitioned by key and window):
    key statistics would skip nothing and cost a comparison per row; the window bounds and the
    batch id are what readers select panes by."""
    from windowing.core.aggregates import Count
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.core.spec import WindowSpecBuilder
    from windowing.spark.operator.protocol import SparkWindowOperator

    spec = (WindowSpecBuilder().key_by("user", "shop").event_time("ts").window(TumblingEventTimeWindows.of(10))
            .aggregate(n=Count()))
    results = str(tmp_path / "results")
    op = SparkWindowOperator.on_delta(spark, spec, "stats", str(tmp_path / "state"), results_path=results)
    op.process_batch(spark.createDataFrame([("u", "s", 1), ("v", "s", 12)], "user string, shop string, ts long"), 0)
    properties = spark.sql(f"DESCRIBE DETAIL delta.`{results}`").first()["properties"]
    assert properties["delta.dataSkippingStatsColumns"] == "window_start_ms,window_end_ms,batch_id"
    log = spark.read.json(f"{results}/_delta_log/*.json")
    stats = json.loads(log.where("add IS NOT NULL").select("add.stats").first()[0])
    assert set(stats["minValues"]) == {"window_start_ms", "window_end_ms", "batch_id"}


def test_the_newest_rows_come_from_the_files_that_can_hold_them(spark, tmp_path):
    """The rows of the largest value (all of them), found through the file statistics; after the
    newest rows are deleted, those of the value before."""
    from delta.tables import DeltaTable
    path = str(tmp_path / "t")
    read = lambda: spark.read.format("delta").load(path)  # noqa: E731
    schema = spark.createDataFrame([], "batch_id long, writer string").schema
    delta_lake_io.create_empty(spark, schema, path)
    assert delta_lake_io.newest_rows(read(), "batch_id") == []
    for rows in ([(0, "a"), (1, "a")], [(2, "a")], [(2, "b")], [(3, "a")]):
        spark.createDataFrame(rows, "batch_id long, writer string").write.format("delta").mode("append").save(path)
    assert [tuple(r) for r in delta_lake_io.newest_rows(read(), "batch_id")] == [(3, "a")]
    DeltaTable.forPath(spark, path).delete(F.col("batch_id") == 3)
    assert sorted(tuple(r) for r in delta_lake_io.newest_rows(read(), "batch_id")) == [(2, "a"), (2, "b")]
    assert delta_lake_io.newest_rows(read().drop("writer"), "batch_id")[0].asDict() == {"batch_id": 2}


def test_a_table_is_known_empty_from_its_log_until_a_commit_adds_a_file(spark, tmp_path):
    path = str(tmp_path / "t")
    schema = _rows(spark, 0, "").schema
    delta_lake_io.create_empty(spark, schema, path)
    assert delta_lake_io.schema_if_empty(spark, path, 0) == spark.read.format("delta").load(path).schema
    delta_lake_io.append(_rows(spark, 2, "b1"), path, "op", 1)
    assert delta_lake_io.schema_if_empty(spark, path, 1) is None
    assert delta_lake_io.schema_if_empty(spark, path, 0) is not None      # the version before the rows


def test_conform_casts_only_the_columns_of_another_type(spark):
    from pyspark.sql import types as T
    table = T.StructType([T.StructField("k", T.StringType()), T.StructField("n", T.LongType()),
                          T.StructField("d", T.DecimalType(10, 2)),
                          T.StructField("s", T.StructType([T.StructField("a b", T.LongType())])),
                          T.StructField("missing", T.TimestampType())])
    df = spark.createDataFrame([("x", 1, "2.5", (7,))], "k string, n int, d string, s struct<`a b`: int>") \
        .withColumn("missing", F.lit(None))
    out = delta_lake_io.conform(df.select("n", "k", "d", "s", "missing"), table)
    assert out.schema == table                      # order, atomic, decimal, nested (quoted name) and null columns
    assert [tuple(r) for r in out.collect()] == [("x", 1, decimal.Decimal("2.50"), (7,), None)]
    already = delta_lake_io.conform(out, table)
    assert already is out                           # nothing to select or cast: the same DataFrame
    assert delta_lake_io.conform(out.select("n", "k", "d", "s", "missing"), table).columns == table.names


@pytest.mark.parametrize("kind, attempts", [(claims.FileClaimLog, 5), (claims.DeltaClaimLog, 3)],
                         ids=["files", "delta-table"])
def test_two_first_claims_at_one_moment_leave_one_owner_and_one_clean_refusal(spark, tmp_path, kind, attempts):
    """Both runs make the first claim of a new root at once (their first batch): one owns the batch, the
    other is refused with ConcurrentWriterError, whichever write the LogStore (or Delta's commit) let
    through first, never another error. Claim files race their first file; Delta-table claims race
    the table's creation."""
    import threading
    from windowing.spark.lake.claims import ConcurrentWriterError, open_claim_log, release
    for attempt in range(attempts):
        path, barrier, outcomes = str(tmp_path / f"claims{attempt}"), threading.Barrier(2), {}

        def claim(writer):
            barrier.wait()
            try:
                open_claim_log(spark, "op", path, kind).claim(0, writer, lambda: False)
                outcomes[writer] = "owner"
            except ConcurrentWriterError:
                outcomes[writer] = "refused"
            except Exception as error:      # noqa: BLE001 - reported by the assertion below
                outcomes[writer] = repr(error)
        threads = [threading.Thread(target=claim, args=(w,)) for w in ("w1", "w2")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes.values()) == ["owner", "refused"], outcomes
        owners = [w for w, o in outcomes.items() if o == "owner"]
        assert open_claim_log(spark, "op", path, kind).read(0)[1][0].writer_id == owners[0]
        release(owners[0])


def test_a_batchs_late_and_quarantined_rows_are_found_by_file_statistics_however_wide_the_input(spark, tmp_path):
    """Late and quarantine rows carry the whole input row before ``batch_id``: on an input of 40
    columns, a batch's rows are still read from its own files only (statistics on every column)."""
    from windowing.core.aggregates import Count
    from windowing.core.assigners import TumblingEventTimeWindows
    from windowing.core.spec import WindowSpecBuilder
    from windowing.spark.operator.protocol import SparkWindowOperator

    extra = [f"c{i:02d}" for i in range(38)]
    schema = ", ".join(["k string", "ts long", *[f"{c} string" for c in extra]])
    spec = (WindowSpecBuilder().key_by("k").event_time("ts").window(TumblingEventTimeWindows.of(10))
            .side_output_late_data().aggregate(n=Count()))
    state, late, quarantine = (str(tmp_path / name) for name in ("state", "late", "quarantine"))
    op = SparkWindowOperator.on_delta(spark, spec, "wide", state, late_path=late, quarantine_path=quarantine)
    for batch_id in range(4):      # batch 0 moves the watermark: its row at ts 1 is on time, later ones are late
        on_time = 1_000 * (batch_id + 1)
        rows = [("a", on_time, *extra), ("a", 1, *extra), ("a", None, *extra)]  # on time, late, no event time
        report = op.process_batch(spark.createDataFrame(rows, schema), batch_id, watermark_ms=on_time - 100)
        assert (report.metrics.late_rows, report.metrics.quarantined_rows) == (min(batch_id, 1), 1), report.metrics
    for path, trailing in ((late, 4), (quarantine, 2)):
        table = spark.read.format("delta").load(path)
        assert len(table.columns) == 40 + trailing and table.columns[-1] == "batch_id"
        every_file = set(table.inputFiles())
        assert len(every_file) >= 3, every_file
        one_batch = table.where(F.col("batch_id") == 2)
        assert [r["batch_id"] for r in one_batch.collect()] == [2]
        assert len(set(one_batch.inputFiles())) < len(every_file), path
        properties = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["properties"]
        assert properties["delta.dataSkippingNumIndexedCols"] == "-1"


def test_tables_created_side_by_side_each_have_their_schema_partitioning_and_properties(spark, tmp_path):
    schema = _rows(spark, 0, "").schema
    existing = str(tmp_path / "existing")
    delta_lake_io.append(_rows(spark, 3, "kept"), existing, "op", 1)
    tables = [delta_lake_io.EmptyTable(schema, str(tmp_path / "plain")),
              delta_lake_io.EmptyTable(schema, str(tmp_path / "parted"), ["tag"]),
              delta_lake_io.EmptyTable(schema, str(tmp_path / "props"), properties={"delta.appendOnly": "true"}),
              delta_lake_io.EmptyTable(schema, existing)]
    delta_lake_io.create_empty_tables(spark, tables)
    for table in tables[:3]:
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{table.path}`").first()
        assert spark.read.format("delta").load(table.path).schema == schema
        assert detail["partitionColumns"] == (table.partition_by or [])
        assert detail["numFiles"] == 0
        for key, value in {**delta_lake_io.DEFAULT_PROPERTIES, **table.properties}.items():
            assert detail["properties"].get(key) == value, (table.path, key)
    assert _count(spark, existing) == 3                     # an existing table is left as it is


def test_a_failed_creation_among_several_is_raised(spark, tmp_path):
    schema = _rows(spark, 0, "").schema
    bad = tmp_path / "not_a_table"
    (bad / "_delta_log").mkdir(parents=True)
    (bad / "_delta_log" / "00000000000000000000.json").write_text("not json\n")   # a commit this release cannot read
    with pytest.raises(Exception):
        delta_lake_io.create_empty_tables(spark, [delta_lake_io.EmptyTable(schema, str(tmp_path / "fine")),
                                                  delta_lake_io.EmptyTable(schema, str(bad))])
    assert delta_lake_io.table_exists(spark, str(tmp_path / "fine"))


def _batch_rows(spark, found, batches) -> list[tuple]:
    return sorted(tuple(r) for r in delta_lake_io.read_batch_files(spark, found, batches).collect())


def test_each_batchs_rows_are_read_from_the_file_its_commit_added_while_the_log_is_plain(spark, tmp_path):
    """batch_files names the file of each batch's one append; what breaks the one-commit-per-batch
    picture (a delete, a second commit of a batch, another application's rows) gives None, so the
    caller reads through Delta."""
    path = str(tmp_path / "t")
    delta_lake_io.create_empty(spark, _rows(spark, 0, "").schema, path)
    for b in range(4):
        delta_lake_io.append(_rows(spark, 1, f"b{b}").withColumn("id", F.lit(b).cast("long")), path, "op", b)
    newest = delta_lake_io.batch_files(spark, path, "op")
    assert list(newest.files) == [3] and _batch_rows(spark, newest, [3]) == [(3, "b3")]
    logged = delta_lake_io.batch_files(spark, path, "op", from_batch=1)
    assert sorted(logged.files) == [1, 2, 3]
    assert _batch_rows(spark, logged, [1, 2]) == [(1, "b1"), (2, "b2")]
    assert delta_lake_io.batch_files(spark, path, "someone else") is None       # rows of another application

    delta_lake_io.append(_rows(spark, 1, "b3 again"), path, "op", 4)
    from delta.tables import DeltaTable
    DeltaTable.forPath(spark, path).delete("tag = 'b3 again'")                  # a withdrawn row: a delete
    assert delta_lake_io.batch_files(spark, path, "op") is None
    again = str(tmp_path / "again")
    delta_lake_io.append(_rows(spark, 1, "first"), again, "op", 0, writer_id="w1")
    delta_lake_io.append(_rows(spark, 1, "second"), again, "op", 1, writer_id="w1")
    (_rows(spark, 1, "racer").write.format("delta").mode("append")   # a racing writer's commit of batch 1
     .option("userMetadata", delta_lake_io.marker("op", 1, "w2")).save(again))
    assert delta_lake_io.batch_files(spark, again, "op") is None
