"""Nexmark: the generator's rules on small counts, and every query's job files against batch SQL.

One module-scoped stream of 3,000 events (100 per second of event time: 30 s, so the 10 s
windows and sessions close several times), landed in two arrivals; each query (q0 and q2 on their backfill only) runs
through ``winjob stream`` after each arrival and through ``winjob backfill`` under another root, and
both answers are compared with the query's Spark batch SQL (:mod:`nexmark.queries`).
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from nexmark.config import (FIRST_AUCTION_ID, FIRST_PERSON_ID, HOT_GROUP, TOTAL_PROPORTION, NexmarkConfig, counts)
from nexmark.generator import (AUCTION, BID, EVENT_NUMBER, EVENT_TIME, EVENT_TYPES, INGESTED_AT, PERSON,
                               RANGE_COLUMNS, RAW_TABLE_PROPERTIES, arrivals, table_path, write_events)
from nexmark.queries import QUERIES
from nexmark.spark_streaming import SPARK_STREAMING, stream_once
from pipelines.cli import main as winjob

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("nexmark")]  # module-scoped fixtures: one test process

SMALL = NexmarkConfig(events=5_000, rate_per_s=100, seed=7)


@pytest.fixture(scope="module")
def frames(spark):
    """Each type's rows of SMALL, collected once."""
    return {t.name: t.frame(spark, SMALL).toPandas() for t in (PERSON, AUCTION, BID)}


def test_the_mix_is_one_person_three_auctions_46_bids_by_event_number(frames):
    assert {name: len(rows) for name, rows in frames.items()} == counts(SMALL.events) == \
        {"person": 100, "auction": 300, "bid": 4600}
    offsets = {name: set(rows[EVENT_NUMBER] % TOTAL_PROPORTION) for name, rows in frames.items()}
    assert offsets == {"person": {0}, "auction": {1, 2, 3}, "bid": set(range(4, 50))}
    numbers = sorted(n for rows in frames.values() for n in rows[EVENT_NUMBER])
    assert numbers == list(range(SMALL.events))


def test_ids_and_event_times_follow_the_event_numbers(frames):
    persons, auctions, bids = frames["person"], frames["auction"], frames["bid"]
    assert list(persons["id"]) == list(range(FIRST_PERSON_ID, FIRST_PERSON_ID + 100))
    assert sorted(auctions["id"]) == list(range(FIRST_AUCTION_ID, FIRST_AUCTION_ID + 300))
    for rows in (persons, auctions, bids):
        rows = rows.sort_values(EVENT_NUMBER)
        ms = [SMALL.time_ms(n) for n in rows[EVENT_NUMBER]]
        assert [int(t.value // 1_000_000) for t in rows[EVENT_TIME]] == ms
        assert ms == sorted(ms)
    # A bid names an auction and a person that exist by then, or one up to the lead of 10 ahead.
    epoch = bids[EVENT_NUMBER] // TOTAL_PROPORTION
    assert (bids["auction"] >= FIRST_AUCTION_ID).all() and (bids["auction"] <= FIRST_AUCTION_ID + 3 * epoch + 2 + 10).all()
    assert (bids["bidder"] >= FIRST_PERSON_ID).all() and (bids["bidder"] <= FIRST_PERSON_ID + epoch + 10).all()
    assert (auctions["expires"] > auctions[EVENT_TIME]).all() and (auctions["reserve"] > auctions["initial_bid"]).all()
    assert bids["price"].between(100, 100_000_000).all()


def test_hot_auctions_bidders_and_sellers_have_the_configured_shares(frames):
    bids, auctions = frames["bid"], frames["auction"]
    epoch = bids[EVENT_NUMBER] // TOTAL_PROPORTION
    hot_auction = (3 * epoch + 2) // HOT_GROUP * HOT_GROUP + FIRST_AUCTION_ID
    hot_bidder = epoch // HOT_GROUP * HOT_GROUP + 1 + FIRST_PERSON_ID
    # Hot with probability 1 - 1/ratio (ratios 2 and 4); a cold draw may hit the hot id too.
    assert 0.45 < (bids["auction"] == hot_auction).mean() < 0.6
    assert 0.72 < (bids["bidder"] == hot_bidder).mean() < 0.8
    hot_seller = auctions[EVENT_NUMBER] // TOTAL_PROPORTION // HOT_GROUP * HOT_GROUP + FIRST_PERSON_ID
    assert 0.65 < (auctions["seller"] == hot_seller).mean() < 0.85
    assert (bids["extra"].str.len().between(54, 82)).all()


def test_the_same_seed_gives_the_same_rows_and_another_seed_others(spark, frames):
    again = BID.frame(spark, SMALL).toPandas()
    assert again.equals(frames["bid"])
    other = BID.frame(spark, SMALL.with_seed(8)).toPandas()
    assert list(other[EVENT_NUMBER]) == list(again[EVENT_NUMBER])
    assert (other["price"] != again["price"]).mean() > 0.9


def test_arrivals_cut_the_same_rows_and_out_of_order_groups_permute_arrivals(spark, frames):
    cut = BID.frame(spark, SMALL, 0, 1234).union(BID.frame(spark, SMALL, 1234, SMALL.events)).toPandas()
    assert cut.sort_values(EVENT_NUMBER).reset_index(drop=True).equals(frames["bid"])
    shuffled = NexmarkConfig(events=1000, rate_per_s=100, out_of_order_group=100)
    numbers = [r[0] for r in BID.frame(spark, shuffled, 0, 250).select(EVENT_NUMBER).collect()]
    # Arrivals 0-249 are the events the permutation puts there: not simply the first 250 numbers.
    assert sorted(numbers) == sorted(n for n in (shuffled.event_at_arrival(p) for p in range(250))
                                     if n % TOTAL_PROPORTION >= 4)
    assert max(numbers) >= 250
    assert [shuffled.arrival_position(shuffled.event_at_arrival(p)) for p in range(1000)] == list(range(1000))
    with pytest.raises(ValueError, match="multiple of out_of_order_group"):
        NexmarkConfig(events=1001, out_of_order_group=100)


def test_the_raw_tables_hold_the_frames_rows_without_dictionaries_and_with_statistics_on_range_columns_only(
        spark, tmp_path):
    root = str(tmp_path / "nexmark")
    for first, end in arrivals(SMALL, 2_500):
        write_events(spark, SMALL, root, first, end)
    for event_type in EVENT_TYPES:
        path = table_path(root, event_type)
        rows = spark.read.format("delta").load(path)
        assert rows.count() == counts(SMALL.events)[event_type.name]
        assert rows.drop(INGESTED_AT).exceptAll(event_type.frame(spark, SMALL)).count() == 0
        assert rows.select(F.countDistinct(INGESTED_AT)).first()[0] == 2   # one commit per arrival
        properties = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["properties"]
        assert RAW_TABLE_PROPERTIES.items() <= properties.items()
        files = sorted(Path(path).glob("*.parquet"))
        assert files
        for file in files:
            metadata = pq.ParquetFile(file).metadata
            for g in range(metadata.num_row_groups):
                chunks = [metadata.row_group(g).column(i) for i in range(metadata.num_columns)]
                assert not [c.path_in_schema for c in chunks if any("DICTIONARY" in e for e in c.encodings)]
                assert {c.path_in_schema for c in chunks if c.is_stats_set} == set(RANGE_COLUMNS)
        adds = [json.loads(line)["add"] for log in Path(path, "_delta_log").glob("*.json")
                for line in log.read_text().splitlines() if '"add"' in line]
        assert len(adds) == len(files)
        assert all(set(json.loads(add["stats"])["minValues"]) == set(RANGE_COLUMNS) for add in adds)


# ------------------------------------------------------------------ the queries as jobs
JOBS_STREAM = NexmarkConfig(events=3_000, rate_per_s=100, seed=3)
BACKFILLED_ONLY = ("q0", "q2")
STREAMED = [q for q in QUERIES.values() if q.name not in BACKFILLED_ONLY]
"""q0 and q2 stream like q1 (the same transform driver, another SQL); they are checked on their backfill only,
to keep the module cheap."""


@pytest.fixture(scope="module")
def streamed(spark, tmp_path_factory):
    """The raw tables landed in two arrivals, every query streamed after each; then backfilled elsewhere."""
    stream_root, backfill_root = tmp_path_factory.mktemp("nexmark_stream"), tmp_path_factory.mktemp("nexmark_fill")
    for first, end in arrivals(JOBS_STREAM, 1_500):
        write_events(spark, JOBS_STREAM, str(stream_root / "nexmark"), first, end)
        for query in STREAMED:
            for job_file in query.job_files:
                assert winjob(["stream", "--job", str(job_file), "--root", str(stream_root)]) == 0, job_file
    for event_type in EVENT_TYPES:   # the same rows, with the arrivals' ingestion times (q12's processing time)
        spark.read.format("delta").load(table_path(str(stream_root / "nexmark"), event_type)).write.format("delta") \
            .save(table_path(str(backfill_root / "nexmark"), event_type))
    for query in QUERIES.values():
        for job_file in query.job_files:
            assert winjob(["backfill", "--job", str(job_file), "--root", str(backfill_root)]) == 0, job_file
    return stream_root, backfill_root


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_each_query_streamed_and_backfilled_equals_its_batch_sql(spark, streamed, name):
    query = QUERIES[name]
    for root in streamed if query in STREAMED else streamed[1:]:
        results = str(root / "output" / "nexmark" / name / "results")
        found = query.mismatches(spark, str(root / "nexmark"), results)
        assert (found["missing"], found["extra"]) == (0, 0), (root, found)
        assert found["rows"] > 0
        if query.windowed and root == streamed[0]:
            assert found["bound_ms"] > JOBS_STREAM.base_time_ms + 10_000 or name == "q12"


def test_q8_holds_a_person_once_per_window_however_many_auctions_they_opened_in_it(spark, streamed):
    """The data holds persons with several auctions in their window, so the semi join's once is exercised."""
    raw = str(streamed[1] / "nexmark")
    persons, sellers = (spark.read.format("delta").load(table_path(raw, t)) for t in (PERSON, AUCTION))
    pairs = persons.select("id", F.window(EVENT_TIME, "10 seconds").alias("w")).join(
        sellers.select(F.col("seller").alias("id"), F.window(EVENT_TIME, "10 seconds").alias("w")), ["id", "w"])
    answer = spark.read.format("delta").load(str(streamed[1] / "output" / "nexmark" / "q8" / "results")) \
        .where(F.col("row_index").isNotNull())
    assert pairs.count() > pairs.distinct().count() == answer.count()
    assert answer.groupBy("id", "window_start_ms").count().where("count > 1").count() == 0


def test_q8s_buffered_rows_carry_the_projected_and_key_columns_and_stream_as_logged_changes(spark, streamed):
    """The streamed window join's state keeps a person's id and name and an auction's seller (q8 projects
    ``id, name`` of persons, a semi join), not the rows' other columns, in its table and in the changes its
    batches logged instead of writing the table; its results table keeps file statistics on the columns it is
    read by only."""
    from join_spark_runner import statistics_columns
    from windowing.spark.joins.columns import BATCH_ID, LEFT_ROW, RIGHT_ROW, WE, WS
    from windowing.spark.joins.state_pins import STATE_LOG
    q8 = streamed[0] / "output" / "nexmark" / "q8"
    operator = q8 / "state" / "nexmark_q8"
    progress = spark.read.format("delta").load(str(operator / "progress")).orderBy("batch_id").collect()
    logged = [json.loads(r[STATE_LOG])["buffers"] for r in progress]
    assert [[change[0] for change in changes] for changes in logged] == [[0], [0, 1]]   # two batches, both logged
    for rows in [spark.read.format("delta").load(str(operator / "state" / "buffers"))] \
            + [spark.read.parquet(change[1]) for change in logged[-1]]:
        assert (rows.schema[LEFT_ROW].dataType.fieldNames(), rows.schema[RIGHT_ROW].dataType.fieldNames()) \
            == (["id", "name"], ["seller"])
    # a batch logs the rows of the windows its watermark left open, and only those
    last = spark.read.parquet(logged[-1][-1][1])
    assert last.count() == last.where(f"{WE} - 1 > {progress[-1]['watermark_ms']}").count() > 0
    assert statistics_columns(spark, str(q8 / "results")) == {WS, WE, BATCH_ID}


def test_a_transform_job_rerun_writes_nothing_twice(spark, streamed):
    stream_root = streamed[0]
    results = str(stream_root / "output" / "nexmark" / "q1" / "results")
    before = spark.read.format("delta").load(results).count()
    assert winjob(["stream", "--job", str(QUERIES["q1"].job_files[0]), "--root", str(stream_root)]) == 0
    assert spark.read.format("delta").load(results).count() == before == 2 * 1380
    assert sorted(r[0] for r in spark.read.format("delta").load(results).select("batch_id").distinct().collect()) \
        == [0, 1]
    assert spark.read.format("delta").load(str(stream_root / "nexmark" / "bid")) \
        .select(F.countDistinct(INGESTED_AT)).first()[0] == 2


@pytest.mark.parametrize("name", sorted(SPARK_STREAMING))
def test_sparks_own_streaming_form_equals_the_batch_sql(spark, streamed, name, tmp_path):
    """The benchmark's other side: Spark's own availableNow queries (one run on the whole bid table)."""
    raw = str(streamed[1] / "nexmark")
    found = QUERIES[name].mismatches(spark, raw, stream_once(spark, name, raw, str(tmp_path)))
    assert (found["missing"], found["extra"]) == (0, 0), found
    assert found["rows"] > 0
