"""The Nexmark queries: the job files that run each one, and the batch SQL that checks it.

Each :class:`Query` names its stages (job files under ``jobs/nexmark/``, run in order: a second
stage reads the first one's results), the columns of its answer, and an independent Spark batch
SQL computation written from the query's definition over the raw tables (Spark's ``window``,
window functions for sessions; no code of this project). :meth:`Query.mismatches` compares the two.

A stream's windowed answer is complete only for the windows it closed: the comparison of a
windowed query keeps the windows that end at or before the last window end the job emitted
(windows close in order of their end), so a missing window below that is still a mismatch.

A join job's results table marks a pane that emitted no row with a null ``row_index`` (a window
with persons and no auction of theirs, in q8); the query's answer, like its SQL, is the rows
only: such markers count for the last window end the job emitted, then are left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "jobs" / "nexmark"
WINDOW_END = "window_end_ms"
JOIN_ROW_INDEX = "row_index"
"""A join job's results column: null on the one row that marks a pane with no output row."""


@dataclass(frozen=True)
class Query:
    """One Nexmark query.

    Attributes:
        name: ``q0``, ``q1``, ...
        stages: its job files in run order (names under ``jobs/nexmark/``); the last one's
            results are the answer.
        columns: the answer's columns that the check compares.
        reference_sql: the batch SQL over the views ``person``, ``auction``, ``bid``.
        windowed: whether the answer has ``window_end_ms`` (a stream's answer is complete up to its last one).
        what: one line on the query.
    """

    name: str
    stages: tuple[str, ...]
    columns: tuple[str, ...]
    reference_sql: str
    windowed: bool
    what: str

    @property
    def job_files(self) -> list[Path]:
        return [JOBS / stage for stage in self.stages]

    def reference(self, spark: SparkSession, raw_root: str) -> DataFrame:
        """The answer computed by Spark batch SQL from the raw tables under ``raw_root``."""
        from windowing.spark.lake.delta_lake_io import table_exists
        for table in ("person", "auction", "bid"):   # the tables written (most queries read bids only)
            path = f"{str(raw_root).rstrip('/')}/{table}"
            if table_exists(spark, path):
                spark.read.format("delta").load(path).createOrReplaceTempView(table)
        return spark.sql(self.reference_sql).select(*self.columns)

    def mismatches(self, spark: SparkSession, raw_root: str, results_path: str) -> dict:
        """Rows of the job's answer missing from the reference and the other way round (counts and a few rows).

        Both sides as multisets (``exceptAll``); a windowed answer up to its last window end.
        """
        results = spark.read.format("delta").load(results_path)
        expected = self.reference(spark, raw_root)
        bound = None
        if self.windowed:
            bound = results.agg(F.max(WINDOW_END)).first()[0]
            if bound is None:
                return {"rows": 0, "bound_ms": None, "missing": 0, "extra": expected.count(), "examples": []}
            expected = expected.where(F.col(WINDOW_END) <= bound)
        if JOIN_ROW_INDEX in results.columns:
            results = results.where(F.col(JOIN_ROW_INDEX).isNotNull())
        ours = results.select(*self.columns)
        missing, extra = expected.exceptAll(ours), ours.exceptAll(expected)
        counts = {"missing": missing.count(), "extra": extra.count()}
        examples = [("missing", r.asDict()) for r in missing.limit(3).collect()] + \
                   [("extra", r.asDict()) for r in extra.limit(3).collect()] if any(counts.values()) else []
        return {"rows": ours.count(), "bound_ms": bound, **counts, "examples": examples}


_WINDOW_MS = "unix_millis(w.start) AS window_start_ms, unix_millis(w.end) AS window_end_ms"

QUERIES = {q.name: q for q in (
    Query("q0", ("q0.toml",), ("auction", "bidder", "price", "channel", "url", "date_time", "extra", "event_number"),
          "SELECT * FROM bid", False, "pass-through: every bid"),
    Query("q1", ("q1.toml",), ("auction", "bidder", "price", "date_time", "extra"),
          "SELECT auction, bidder, price * 908 / 1000 AS price, date_time, extra FROM bid", False,
          "currency conversion: prices in euros"),
    Query("q2", ("q2.toml",), ("auction", "price"),
          "SELECT auction, price FROM bid WHERE pmod(auction, 123) = 0", False,
          "selection: bids on every 123rd auction"),
    Query("q5", ("q5_counts.toml", "q5.toml"), ("auction", "num", "window_start_ms", "window_end_ms"),
          f"""WITH counts AS (
                SELECT auction, count(*) AS num, {_WINDOW_MS}
                FROM (SELECT auction, window(date_time, '10 seconds', '2 seconds') AS w FROM bid)
                GROUP BY auction, w),
              tops AS (SELECT window_start_ms, max(num) AS num FROM counts GROUP BY window_start_ms)
              SELECT c.auction, c.num, c.window_start_ms, c.window_end_ms
              FROM counts c JOIN tops t ON c.window_start_ms = t.window_start_ms AND c.num = t.num""", True,
          "hot items: per sliding 10 s window (every 2 s), the auctions with the most bids"),
    Query("q7", ("q7_max.toml", "q7.toml"),
          ("auction", "price", "bidder", "date_time", "extra", "window_start_ms", "window_end_ms"),
          f"""WITH highest AS (
                SELECT max(price) AS price, {_WINDOW_MS}
                FROM (SELECT price, window(date_time, '10 seconds') AS w FROM bid) GROUP BY w)
              SELECT b.auction, b.price, b.bidder, b.date_time, b.extra, h.window_start_ms, h.window_end_ms
              FROM bid b JOIN highest h ON b.price = h.price
               AND unix_millis(b.date_time) >= h.window_start_ms AND unix_millis(b.date_time) < h.window_end_ms""",
          True, "highest bid: per tumbling 10 s window, the bids at the highest price"),
    Query("q8", ("q8.toml",), ("id", "name", "window_start_ms", "window_end_ms"),
          # Each side windowed on its own event time; a person once per window with an auction of theirs.
          """SELECT DISTINCT p.id, p.name, unix_millis(p.w.start) AS window_start_ms,
                     unix_millis(p.w.end) AS window_end_ms
              FROM (SELECT id, name, window(date_time, '10 seconds') AS w FROM person) p
              JOIN (SELECT seller, window(date_time, '10 seconds') AS w FROM auction) a
                ON p.id = a.seller AND p.w = a.w""",
          True, "new users: persons who opened an auction in the tumbling 10 s window they registered in"),
    Query("q11", ("q11.toml",), ("bidder", "bids", "window_start_ms", "window_end_ms"),
          # Gaps and islands: a bidder's session ends where the next bid comes more than 10 s later.
          """SELECT bidder, count(*) AS bids, min(t) AS window_start_ms, max(t) + 10000 AS window_end_ms
             FROM (SELECT bidder, t, sum(CASE WHEN previous IS NULL OR t - previous > 10000 THEN 1 ELSE 0 END)
                                       OVER (PARTITION BY bidder ORDER BY t, event_number) AS session
                   FROM (SELECT bidder, event_number, unix_millis(date_time) AS t,
                                lag(unix_millis(date_time)) OVER (PARTITION BY bidder
                                                                  ORDER BY unix_millis(date_time), event_number)
                                  AS previous
                         FROM bid))
             GROUP BY bidder, session""",
          True, "user sessions: bids per bidder per session (10 s gap)"),
    Query("q12", ("q12.toml",), ("bidder", "bids", "window_start_ms", "window_end_ms"),
          f"""SELECT bidder, count(*) AS bids, {_WINDOW_MS}
              FROM (SELECT bidder, window(ingested_at, '10 seconds') AS w FROM bid) GROUP BY bidder, w""",
          True, "processing-time windows: bids per bidder per tumbling 10 s of processing time"),
)}
"""The queries this project runs, by name."""
