"""Spark's own streaming form of the Nexmark queries Spark can express: q5, q7, q8, q11 and q12.

What a Spark user writes without this project, run the way ``winjob stream`` runs a job: one
``availableNow`` query per arrival, reading the raw Delta tables, its state in Spark's state store
(a checkpoint per stage), its answer appended to a Delta table. Each answer has the columns of the
query's reference SQL (:mod:`nexmark.queries`), so :meth:`nexmark.queries.Query.mismatches` checks
it as it checks this project's.

* q5: stage 1 counts bids per auction in sliding 10 s windows every 2 s (``window``, watermark
  0 s, append); stage 2 streams stage 1's table and keeps, per window, the auctions with the most
  bids (a window function in ``foreachBatch``, written idempotently with Delta's ``txnAppId``/
  ``txnVersion``). A window's counts land in one micro-batch of stage 1, hence in one commit that
  one micro-batch of stage 2 reads whole.
* q7: stage 1 takes the top price per tumbling 10 s window; stage 2 joins each closed window's
  price with the bid table as it is (a stream-static join: Delta reads the static side's newest
  version each micro-batch).
* q8: a stream-stream left semi join of persons and auctions, each side with its watermark (0 s)
  and its tumbling 10 s ``window`` column, on ``id = seller`` and equal windows: each person once
  per window in which an auction of theirs opened. The window is a join key that carries the
  watermark, which Spark requires of a streaming semi join: state behind the watermark is dropped.
* q11: ``session_window`` with a 10 s gap, bids per bidder.
* q12: Spark has no processing-time windows; a Spark user windows on a column the source stamps
  with the arrival's time, here ``ingested_at``, as an event-time column (watermark 0 s).

q0-q2 are stateless selections.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from nexmark.generator import AUCTION, BID, EVENT_TIME, INGESTED_AT, PERSON, EventType, table_path

WATERMARK_DELAY = "0 seconds"
"""The generator's events arrive in event-time order: the project's job files allow 0 ms too."""
Q8_WINDOW = "10 seconds"
"""q8's tumbling window, the same on both sides of the join."""


def _window_columns(window: str) -> list:
    return [F.unix_millis(F.col(f"{window}.start")).alias("window_start_ms"),
            F.unix_millis(F.col(f"{window}.end")).alias("window_end_ms")]


@dataclass(frozen=True)
class Folders:
    """Where one query's Spark stages read and write under one root."""
    raw_root: str
    out_root: str

    def bids(self, spark: SparkSession, time_column: str = EVENT_TIME) -> DataFrame:
        return self.events(spark, BID, time_column)

    def events(self, spark: SparkSession, event_type: EventType, time_column: str = EVENT_TIME) -> DataFrame:
        """The stream of one raw table, with its watermark on ``time_column``."""
        return spark.readStream.format("delta").load(table_path(self.raw_root, event_type)) \
            .withWatermark(time_column, WATERMARK_DELAY)

    def table(self, query: str, stage: str) -> str:
        return f"{self.out_root}/{query}/{stage}"

    def checkpoint(self, query: str, stage: str) -> str:
        return f"{self.out_root}/{query}/_checkpoints/{stage}"


def _append(frame: DataFrame, folders: Folders, query: str, stage: str) -> None:
    """Run ``frame`` to its Delta table once, on what has arrived (``availableNow``)."""
    (frame.writeStream.format("delta").outputMode("append").trigger(availableNow=True)
     .option("checkpointLocation", folders.checkpoint(query, stage))
     .start(folders.table(query, stage)).awaitTermination())


def _q5(spark: SparkSession, folders: Folders) -> None:
    counts = (folders.bids(spark).groupBy(F.window(EVENT_TIME, "10 seconds", "2 seconds").alias("w"), "auction")
              .agg(F.count(F.lit(1)).alias("num"))
              .select("auction", "num", *_window_columns("w")))
    _append(counts, folders, "q5", "counts")
    answer = folders.table("q5", "answer")

    def hottest(batch: DataFrame, batch_id: int) -> None:
        per_window = Window.partitionBy("window_start_ms", "window_end_ms")
        (batch.withColumn("top", F.max("num").over(per_window)).where(F.col("num") == F.col("top")).drop("top")
         .write.format("delta").mode("append").option("txnAppId", "nexmark_q5_answer")
         .option("txnVersion", batch_id).save(answer))

    (spark.readStream.format("delta").load(folders.table("q5", "counts")).writeStream.foreachBatch(hottest)
     .trigger(availableNow=True).option("checkpointLocation", folders.checkpoint("q5", "answer"))
     .start().awaitTermination())


def _q7(spark: SparkSession, folders: Folders) -> None:
    highest = (folders.bids(spark).groupBy(F.window(EVENT_TIME, "10 seconds").alias("w"))
               .agg(F.max("price").alias("price")).select("price", *_window_columns("w")))
    _append(highest, folders, "q7", "highest")
    bids = spark.read.format("delta").load(table_path(folders.raw_root, BID))
    top = spark.readStream.format("delta").load(folders.table("q7", "highest"))
    bid_ms = F.unix_millis(bids[EVENT_TIME])
    joined = top.join(bids, (bids["price"] == top["price"]) & (bid_ms >= top["window_start_ms"])
                      & (bid_ms < top["window_end_ms"]))
    _append(joined.select(bids["auction"], bids["price"], bids["bidder"], bids[EVENT_TIME], bids["extra"],
                          top["window_start_ms"], top["window_end_ms"]), folders, "q7", "answer")


def _q8(spark: SparkSession, folders: Folders) -> None:
    persons = folders.events(spark, PERSON).select("id", "name", F.window(EVENT_TIME, Q8_WINDOW).alias("w"))
    sellers = folders.events(spark, AUCTION).select("seller", F.window(EVENT_TIME, Q8_WINDOW).alias("w"))
    joined = persons.join(sellers, (persons["id"] == sellers["seller"]) & (persons["w"] == sellers["w"]),
                          "left_semi")
    _append(joined.select("id", "name", *_window_columns("w")), folders, "q8", "answer")


def _q11(spark: SparkSession, folders: Folders) -> None:
    sessions = (folders.bids(spark).groupBy(F.session_window(EVENT_TIME, "10 seconds").alias("w"), "bidder")
                .agg(F.count(F.lit(1)).alias("bids")).select("bidder", "bids", *_window_columns("w")))
    _append(sessions, folders, "q11", "answer")


def _q12(spark: SparkSession, folders: Folders) -> None:
    counts = (folders.bids(spark, INGESTED_AT).groupBy(F.window(INGESTED_AT, "10 seconds").alias("w"), "bidder")
              .agg(F.count(F.lit(1)).alias("bids")).select("bidder", "bids", *_window_columns("w")))
    _append(counts, folders, "q12", "answer")


SPARK_STREAMING: dict[str, Callable[[SparkSession, Folders], None]] = {"q5": _q5, "q7": _q7, "q8": _q8,
                                                                       "q11": _q11, "q12": _q12}
"""Per query, one streaming run (every stage, ``availableNow``) of Spark's own form."""


def stream_once(spark: SparkSession, query: str, raw_root: str, out_root: str) -> str:
    """Run Spark's own streaming form of ``query`` on what has arrived; returns its answer table's path."""
    folders = Folders(raw_root.rstrip("/"), out_root.rstrip("/"))
    SPARK_STREAMING[query](spark, folders)
    return folders.table(query, "answer")
