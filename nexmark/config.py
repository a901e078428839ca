"""What a Nexmark event stream looks like: its size, rate, seed and the reference generator's ratios.

Pure Python (no pyspark): the generator (:mod:`nexmark.generator`) turns a :class:`NexmarkConfig`
into Spark columns; the arithmetic of event numbers, ids and times lives here so that the tests and
the reference SQL can use it without a session.

Events are numbered ``0, 1, 2, ...``. Each run of 50 consecutive numbers (an *epoch*) holds one
person, then three auctions, then 46 bids (the reference mix, chosen by event number). The event
time of event ``e`` is ``base + e * inter_event_delay``, the delay being ``1 / rate``: a rate of
10M events per second (the V1 shape) spans 1 s of event time per 10M events, 100K per second (V2)
100 s.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

PERSON_PROPORTION = 1
AUCTION_PROPORTION = 3
BID_PROPORTION = 46
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
"""One epoch: a person, three auctions, 46 bids, in this order of event numbers."""

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
CATEGORIES = 5
HOT_GROUP = 100
"""Hot auctions, bidders and sellers are the first of each group of 100 recent ones (bidders: the second)."""
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
"""A random person or auction may be up to this many ids ahead of the last one created."""
OUT_OF_ORDER_STRIDE = 953
"""Within an out-of-order group of G events, the k-th to arrive is event ``group start + (k * 953) mod G``."""

V1_RATE_PER_S = 10_000_000
V2_RATE_PER_S = 100_000
BASE_TIME_MS = 1_798_761_600_000
"""2027-01-01T00:00:00Z: the event time of event 0 unless configured."""


@dataclass(frozen=True)
class NexmarkConfig:
    """One Nexmark stream, deterministic for a seed.

    Attributes:
        events: how many events (persons, auctions and bids together); a multiple of
            ``out_of_order_group``.
        rate_per_s: events per second of event time (V1: 10,000,000; V2: 100,000).
        seed: every random draw is a hash of (seed, event number, draw); another seed, other rows.
        base_time_ms: the event time of event 0 (epoch ms).
        hot_auction_ratio: a bid is for a hot auction with probability ``1 - 1/ratio``.
        hot_bidders_ratio: a bid is by a hot bidder with probability ``1 - 1/ratio``.
        hot_sellers_ratio: an auction is by a hot seller with probability ``1 - 1/ratio``.
        in_flight_auctions: a cold bid is for one of the last this many auctions (plus a lead).
        active_people: a cold bidder or seller is one of the last this many persons (plus a lead).
        avg_person_bytes, avg_auction_bytes, avg_bid_bytes: the ``extra`` column pads each event
            to about this size (within +-20% of what is left after its other fields).
        out_of_order_group: events arrive permuted within groups of this many (1: in order).
    """

    events: int = 10_000_000
    rate_per_s: int = V1_RATE_PER_S
    seed: int = 0
    base_time_ms: int = BASE_TIME_MS
    hot_auction_ratio: int = 2
    hot_bidders_ratio: int = 4
    hot_sellers_ratio: int = 4
    in_flight_auctions: int = 100
    active_people: int = 1000
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100
    out_of_order_group: int = 1

    def __post_init__(self) -> None:
        for name in ("events", "rate_per_s", "hot_auction_ratio", "hot_bidders_ratio", "hot_sellers_ratio",
                     "in_flight_auctions", "active_people", "out_of_order_group"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"NexmarkConfig.{name} must be a whole number of at least 1, got {value!r}")
        if self.events % self.out_of_order_group:
            raise ValueError(f"NexmarkConfig.events = {self.events} must be a multiple of out_of_order_group = "
                             f"{self.out_of_order_group} (every group is complete)")
        if self.out_of_order_group % OUT_OF_ORDER_STRIDE == 0:
            raise ValueError(f"NexmarkConfig.out_of_order_group = {self.out_of_order_group} must not be a multiple "
                             f"of {OUT_OF_ORDER_STRIDE} (the permutation within a group would repeat events)")

    @classmethod
    def shape(cls, name: str, events: int, **overrides) -> "NexmarkConfig":
        """``"V1"`` (10M events per second of event time) or ``"V2"`` (100K per second)."""
        rates = {"V1": V1_RATE_PER_S, "V2": V2_RATE_PER_S}
        if name not in rates:
            raise ValueError(f"Nexmark shape {name!r} is not one of {sorted(rates)}")
        return cls(events=events, rate_per_s=rates[name], **overrides)

    def with_seed(self, seed: int) -> "NexmarkConfig":
        return replace(self, seed=seed)

    def time_ms(self, event_number: int) -> int:
        """The event time of event ``event_number``: base + number x (1 s / rate), floored to the ms."""
        return self.base_time_ms + event_number * 1000 // self.rate_per_s

    @property
    def span_ms(self) -> int:
        """Event time from the first event to the last."""
        return self.time_ms(self.events - 1) - self.time_ms(0)

    @property
    def arrival_inverse(self) -> int:
        """``k`` such that ``(953 * k) mod G == 1``: maps an event's offset in its group to its arrival offset."""
        return pow(OUT_OF_ORDER_STRIDE, -1, self.out_of_order_group) if self.out_of_order_group > 1 else 0

    def arrival_position(self, event_number: int) -> int:
        """When event ``event_number`` arrives (0 first): its own number unless events come out of order."""
        group = self.out_of_order_group
        start = event_number // group * group
        return start + (event_number - start) * self.arrival_inverse % group if group > 1 else event_number

    def event_at_arrival(self, position: int) -> int:
        """The event number that arrives ``position``-th (the inverse of :meth:`arrival_position`)."""
        group = self.out_of_order_group
        start = position // group * group
        return start + (position - start) * OUT_OF_ORDER_STRIDE % group


def counts(events: int) -> dict[str, int]:
    """How many persons, auctions and bids the first ``events`` event numbers hold."""
    epochs, rest = divmod(events, TOTAL_PROPORTION)
    return {"person": epochs * PERSON_PROPORTION + min(rest, PERSON_PROPORTION),
            "auction": epochs * AUCTION_PROPORTION + min(max(rest - PERSON_PROPORTION, 0), AUCTION_PROPORTION),
            "bid": epochs * BID_PROPORTION + max(rest - PERSON_PROPORTION - AUCTION_PROPORTION, 0)}
