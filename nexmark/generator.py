"""The Nexmark generator on Spark: persons, auctions and bids as column expressions, written to Delta.

Nothing runs per event in Python: each event type is a ``spark.range`` over its own event numbers
(every 50 numbers hold 1 person, 3 auctions, 46 bids) mapped to columns. Every random draw is
``xxhash64(seed, event number, draw index)``, so a row depends only on the seed and its number:
the same seed gives the same rows however the stream is cut into arrivals, another seed other rows.

The rules follow the reference generators (nexmark/nexmark, Beam's Nexmark):

* ids: person ``1000 + epoch``, auction ``1000 + 3 * epoch + k`` (the k-th auction of the epoch);
* a bid's auction is hot (the first of its group of 100 recent auctions) with probability
  ``1 - 1/hot_auction_ratio``, else one of the last ``in_flight_auctions`` plus a lead of 10; its
  bidder is hot (the second person of the group of 100 recent persons) with probability
  ``1 - 1/hot_bidders_ratio``, else one of the last ``active_people`` plus a lead of 10; an
  auction's seller likewise (the group's first person, ``hot_sellers_ratio``);
* price ``round(10 ** (6u) * 100)`` for a uniform u (cents, 1 dollar to 1M dollars, log-uniform);
  an auction's reserve is its initial bid plus another such price;
* an auction expires a random time after it starts, up to twice the event time that
  ``in_flight_auctions`` more auctions take to be created;
* ``extra`` pads an event to about its type's average size, +-20%;
* out of order: within groups of G event numbers, the k-th event to arrive is number
  ``start + (953 k) mod G`` (:meth:`NexmarkConfig.event_at_arrival`); event time stays that of
  the number.

Three Delta tables, one per type (``<root>/person``, ``<root>/auction``, ``<root>/bid``): each
query reads one type (q8 joins two), a job's source is one table with one schema, and a bid table
carries no empty person or auction columns. Each row keeps its ``event_number`` (unique across
the three tables: the raw suites' event id) and ``ingested_at``, the wall time its arrival landed
(the processing time of q12, which a backfill replays).
"""
from __future__ import annotations

import datetime as dt
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from nexmark.config import (AUCTION_ID_LEAD, AUCTION_PROPORTION, CATEGORIES, FIRST_AUCTION_ID, FIRST_CATEGORY_ID,
                            FIRST_PERSON_ID, HOT_GROUP, PERSON_ID_LEAD, PERSON_PROPORTION,
                            TOTAL_PROPORTION, NexmarkConfig)
from windowing.spark.lake.delta_lake_io import create_empty

EVENT_NUMBER = "event_number"
EVENT_TIME = "date_time"
INGESTED_AT = "ingested_at"
PAD_CHARS = 4096
MAX_TEXT_CHARS = 1024
SLICE_STEP = 16
"""Strings (names, e-mails, descriptions, ``extra``) are slices (up to 1024 letters, starting at one of
256 places) of one random text per seed."""
ROWS_PER_PARTITION = 2_000_000

HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
CHANNELS = 10_000
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent",
             "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")


class _Draws:
    """The random draws of one event, as columns: draw ``k`` is ``xxhash64(seed, event number, k)``."""

    def __init__(self, config: NexmarkConfig, e: Column):
        self.config, self.e = config, e
        rng = random.Random(config.seed)
        pad = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(PAD_CHARS + MAX_TEXT_CHARS))
        # Bytes, not a string: a binary substring copies its bytes from an offset, where a string's
        # walks its characters from the start; the ASCII bytes are the same text as a string.
        self.pad = F.lit(bytearray(pad.encode("ascii")))

    def raw(self, k: int) -> Column:
        return F.xxhash64(F.lit(self.config.seed), self.e, F.lit(k))

    def below(self, k: int, n) -> Column:
        """A whole number in ``[0, n)`` (``n`` an int or a column)."""
        return F.pmod(self.raw(k), n if isinstance(n, Column) else F.lit(n).cast("long"))

    def unit(self, k: int) -> Column:
        """A double in ``[0, 1)``: the draw's top 53 bits."""
        return F.shiftrightunsigned(self.raw(k), 11).cast("double") * F.lit(2.0 ** -53)

    def chance(self, k: int, ratio: int) -> Column:
        """True with probability ``1 - 1/ratio`` (the reference's hot choice)."""
        return self.below(k, ratio) > 0

    def price(self, k: int) -> Column:
        # floor(x + 0.5) is x's half-up rounding (what round does, without its BigDecimal): for
        # 100 <= x < 2^52 the sum x + 0.5 is exact.
        return F.floor(F.pow(F.lit(10.0), self.unit(k) * 6.0) * 100.0 + 0.5)

    def pick(self, k: int, values: tuple[str, ...]) -> Column:
        return F.element_at(F.array(*[F.lit(v) for v in values]), (self.below(k, len(values)) + 1).cast("int"))

    def text(self, k: int, length: Column | int) -> Column:
        """``length`` letters: a slice of the seed's random text at a random place."""
        length = length if isinstance(length, Column) else F.lit(length)
        start = (self.below(k, PAD_CHARS // SLICE_STEP) * SLICE_STEP + 1).cast("int")
        return F.substring(self.pad, start, length.cast("int")).cast("string")

    def word(self, k: int, max_length: int) -> Column:
        """3 to ``max_length - 1`` letters (the reference's random strings)."""
        return self.text(k, self.below(k + 1, max_length - 3) + 3)

    def extra(self, k: int, current_size: Column, average: int) -> Column:
        """Padding to about ``average`` bytes: what is left after ``current_size``, +-20%; empty if nothing is."""
        left = F.lit(average) - current_size
        delta = F.round(left * 0.2).cast("long")
        size = left - delta + F.when(delta > 0, self.below(k, F.greatest(delta * 2, F.lit(1)))).otherwise(0)
        return F.when(left > 0, self.text(k + 1, F.least(size, F.lit(MAX_TEXT_CHARS)))).otherwise(F.lit(""))


def _event_time(config: NexmarkConfig, e: Column) -> Column:
    return F.timestamp_millis(F.lit(config.base_time_ms) + F.floor(e * 1000 / F.lit(config.rate_per_s)))


def _epoch(e: Column) -> Column:
    return F.floor(e / TOTAL_PROPORTION)


def _last_person(e: Column) -> Column:
    """The base-0 id of the last person created at or before event ``e`` (its epoch's)."""
    return _epoch(e) * PERSON_PROPORTION


def _last_auction(e: Column) -> Column:
    """The base-0 id of the last auction created at or before a bid or auction ``e``."""
    offset = F.least(e % TOTAL_PROPORTION - PERSON_PROPORTION, F.lit(AUCTION_PROPORTION - 1))
    return _epoch(e) * AUCTION_PROPORTION + offset


def _random_person(config: NexmarkConfig, draws: _Draws, k: int, e: Column) -> Column:
    """One of the last ``active_people`` persons, or up to 10 ids beyond the last one (base 0)."""
    people = _last_person(e) + 1
    active = F.least(people, F.lit(config.active_people))
    return people - active + draws.below(k, active + PERSON_ID_LEAD)


def _random_auction(config: NexmarkConfig, draws: _Draws, k: int, e: Column) -> Column:
    """One of the last ``in_flight_auctions`` auctions, or up to 10 ids beyond the last one (base 0)."""
    last = _last_auction(e)
    first = F.greatest(last - config.in_flight_auctions, F.lit(0))
    return first + draws.below(k, last - first + 1 + AUCTION_ID_LEAD)


def _person_columns(config: NexmarkConfig, e: Column, d: _Draws) -> list[Column]:
    name = F.concat_ws(" ", d.pick(1, FIRST_NAMES), d.pick(2, LAST_NAMES))
    email = F.concat(d.word(3, 7), F.lit("@"), d.word(5, 5), F.lit(".com"))
    card = F.concat_ws(" ", *[F.lpad(d.below(10 + i, 10_000).cast("string"), 4, "0") for i in range(4)])
    city, state = d.pick(7, US_CITIES), d.pick(8, US_STATES)
    size = F.lit(8) + F.length(name) + F.length(email) + F.length(card) + F.length(city) + F.length(state)
    return [(_last_person(e) + FIRST_PERSON_ID).alias("id"), name.alias("name"), email.alias("email_address"),
            card.alias("credit_card"), city.alias("city"), state.alias("state"),
            _event_time(config, e).alias(EVENT_TIME), d.extra(20, size, config.avg_person_bytes).alias("extra")]


def _auction_columns(config: NexmarkConfig, e: Column, d: _Draws) -> list[Column]:
    hot_seller = F.floor(_last_person(e) / HOT_GROUP) * HOT_GROUP
    seller = F.when(d.chance(1, config.hot_sellers_ratio), hot_seller).otherwise(_random_person(config, d, 2, e))
    initial = d.price(3)
    # The auction stays open for up to twice the event time that in_flight_auctions more auctions take.
    ahead = config.in_flight_auctions * TOTAL_PROPORTION // AUCTION_PROPORTION
    horizon_ms = F.floor((e + ahead) * 1000 / F.lit(config.rate_per_s)) - F.floor(e * 1000 / F.lit(config.rate_per_s))
    length_ms = d.below(5, F.greatest(horizon_ms * 2, F.lit(1))) + 1
    name, description = d.word(6, 20), d.word(8, 100)
    size = F.lit(8 * 6) + F.length(name) + F.length(description)
    return [(_last_auction(e) + FIRST_AUCTION_ID).alias("id"), name.alias("item_name"),
            description.alias("description"), initial.alias("initial_bid"), (initial + d.price(4)).alias("reserve"),
            _event_time(config, e).alias(EVENT_TIME),
            F.timestamp_millis(F.unix_millis(_event_time(config, e)) + length_ms).alias("expires"),
            (seller + FIRST_PERSON_ID).alias("seller"),
            (d.below(10, CATEGORIES) + FIRST_CATEGORY_ID).alias("category"),
            d.extra(20, size, config.avg_auction_bytes).alias("extra")]


def _bid_columns(config: NexmarkConfig, e: Column, d: _Draws) -> list[Column]:
    hot_auction = F.floor(_last_auction(e) / HOT_GROUP) * HOT_GROUP
    auction = F.when(d.chance(1, config.hot_auction_ratio), hot_auction).otherwise(_random_auction(config, d, 2, e))
    hot_bidder = F.floor(_last_person(e) / HOT_GROUP) * HOT_GROUP + 1
    bidder = F.when(d.chance(3, config.hot_bidders_ratio), hot_bidder).otherwise(_random_person(config, d, 4, e))
    channel_number = d.below(7, CHANNELS)
    hot = d.chance(6, 2)
    channel = F.when(hot, d.pick(8, HOT_CHANNELS)).otherwise(F.concat(F.lit("channel-"), channel_number))
    url = F.concat(F.lit("https://www.nexmark.com/"), F.when(hot, channel).otherwise(d.word(9, 6)),
                   F.lit("/item.htm?query=1"),
                   F.when(~hot, F.concat(F.lit("&channel_id="), channel_number)).otherwise(F.lit("")))
    return [(auction + FIRST_AUCTION_ID).alias("auction"), (bidder + FIRST_PERSON_ID).alias("bidder"),
            d.price(5).alias("price"), channel.alias("channel"), url.alias("url"),
            _event_time(config, e).alias(EVENT_TIME), d.extra(20, F.lit(32), config.avg_bid_bytes).alias("extra")]


@dataclass(frozen=True)
class EventType:
    """One kind of Nexmark event: where it sits in each epoch of 50 numbers, and its columns."""

    name: str
    first_offset: int
    per_epoch: int
    columns: Callable[[NexmarkConfig, Column, _Draws], list[Column]]

    def frame(self, spark: SparkSession, config: NexmarkConfig, first: int = 0, end: int | None = None,
              ingested_at: dt.datetime | None = None) -> DataFrame:
        """This type's events among the arrivals ``[first, end)`` (positions in arrival order; default: all); with
        ``ingested_at``, a last column :data:`INGESTED_AT` holding it.

        The arrival's bounds and ``ingested_at`` reach the plan as a one-row broadcast table, not as literals:
        a literal is part of the Java source Spark generates, so each arrival would compile and warm up new
        classes; this way arrivals of one size run the same code."""
        end = config.events if end is None else end
        if not 0 <= first <= end <= config.events:
            raise ValueError(f"arrival range [{first}, {end}) is not within the {config.events} events")
        group = config.out_of_order_group
        lo, hi = first // group * group, min(-(-end // group) * group, config.events)   # whole groups
        epochs = (lo // TOTAL_PROPORTION, -(-hi // TOTAL_PROPORTION))
        rows = (epochs[1] - epochs[0]) * self.per_epoch
        partitions = max(1, min(spark.sparkContext.defaultParallelism, rows // 100_000), rows // ROWS_PER_PARTITION)
        arrival = spark.createDataFrame([(epochs[0] * self.per_epoch, first, end, lo, hi, ingested_at)],
                                        _ARRIVAL_SCHEMA)
        i = F.col("id") + F.col(_FIRST_ID)
        e = F.floor(i / self.per_epoch) * TOTAL_PROPORTION + self.first_offset + i % self.per_epoch
        frame = (spark.range(0, rows, 1, partitions).crossJoin(F.broadcast(arrival))
                 .select(e.alias(EVENT_NUMBER), *_ARRIVAL_COLUMNS))
        number = F.col(EVENT_NUMBER)
        if group > 1:   # the arrival position of each event: its group's start + offset * 953^-1 mod G
            start = F.floor(number / group) * group
            position = start + F.pmod((number - start) * config.arrival_inverse, F.lit(group))
            frame = frame.where((number >= F.col(_LO)) & (number < F.col(_HI)) & (position >= F.col(_FIRST))
                                & (position < F.col(_END)))
        else:
            frame = frame.where((number >= F.col(_FIRST)) & (number < F.col(_END)))
        columns = [*self.columns(config, number, _Draws(config, number)), number]
        if ingested_at is not None:
            columns.append(F.col(_INGESTED_AT).alias(INGESTED_AT))
        return frame.select(*columns)


_FIRST_ID, _FIRST, _END, _LO, _HI, _INGESTED_AT = (
    "__first_id", "__first", "__end", "__lo", "__hi", "__ingested_at")
_ARRIVAL_SCHEMA = (f"{_FIRST_ID} long, {_FIRST} long, {_END} long, {_LO} long, {_HI} long, "
                   f"{_INGESTED_AT} timestamp")
"""One arrival's values as :meth:`EventType.frame` reads them: the first id of its range, its positions
``[first, end)``, the whole out-of-order groups ``[lo, hi)`` around them, the time it lands."""
_ARRIVAL_COLUMNS = (_FIRST, _END, _LO, _HI, _INGESTED_AT)


PERSON = EventType("person", 0, PERSON_PROPORTION, _person_columns)
AUCTION = EventType("auction", PERSON_PROPORTION, AUCTION_PROPORTION, _auction_columns)
BID = EventType("bid", PERSON_PROPORTION + AUCTION_PROPORTION, TOTAL_PROPORTION - PERSON_PROPORTION
                - AUCTION_PROPORTION, _bid_columns)
EVENT_TYPES = (PERSON, AUCTION, BID)


RANGE_COLUMNS = (EVENT_NUMBER, EVENT_TIME, INGESTED_AT)
"""The columns readers select ranges of: the only ones with file and Parquet statistics."""
RAW_TABLE_PROPERTIES = {
    "parquet.enable.dictionary": "false",
    "parquet.column.statistics.enabled": "false",
    **{f"parquet.column.statistics.enabled#{column}": "true" for column in RANGE_COLUMNS},
    "parquet.size.statistics.enabled": "false",
    "delta.dataSkippingStatsColumns": ",".join(RANGE_COLUMNS),
}
"""Table properties of the person, auction and bid tables (Delta hands them to the Parquet writer).
No dictionaries: most columns are near-unique (event numbers, prices, times, random texts), and
building a dictionary per column chunk cost more CPU than generating the rows; with snappy the
files stay about twice the size of dictionary-encoded ones and read as fast. Statistics (Delta's
per file, Parquet's per row group and page) only on :data:`RANGE_COLUMNS`: min/max of every other
column (strings above all) cost a sixth to a third of a Delta write's CPU and would skip nothing."""


def table_path(root: str, event_type: EventType) -> str:
    return f"{str(root).rstrip('/')}/{event_type.name}"


def write_events(spark: SparkSession, config: NexmarkConfig, root: str, first: int = 0, end: int | None = None,
                 types: tuple[EventType, ...] = EVENT_TYPES) -> None:
    """Append the arrivals ``[first, end)`` to ``<root>/person``, ``<root>/auction`` and ``<root>/bid``.

    One Delta commit per table (a table that does not exist yet is first created with
    :data:`RAW_TABLE_PROPERTIES`); every row of the three commits gets the same ``ingested_at``: now.
    The tables are written concurrently, one thread each, so that one table's planning and
    commit overlap another's tasks.
    """
    landed_at = dt.datetime.now(dt.timezone.utc)

    def append(event_type: EventType) -> None:
        frame = event_type.frame(spark, config, first, end, ingested_at=landed_at)
        path = table_path(root, event_type)
        create_empty(spark, frame.schema, path, properties=RAW_TABLE_PROPERTIES)
        frame.write.format("delta").mode("append").save(path)

    with ThreadPoolExecutor(max_workers=len(types)) as pool:
        for done in [pool.submit(append, event_type) for event_type in types]:
            done.result()


def arrivals(config: NexmarkConfig, size: int) -> Iterator[tuple[int, int]]:
    """The arrival ranges ``[first, end)`` of ``size`` events each (the last may be shorter)."""
    if size < 1:
        raise ValueError(f"an arrival holds at least 1 event, got {size}")
    for first in range(0, config.events, size):
        yield first, min(first + size, config.events)
