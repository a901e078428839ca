"""The two inputs of the example join job (``jobs/joins/clicks_orders.toml``): clicks and orders.

:data:`ARRIVALS` are the rows of each arrival, made to show a window join's panes
(the windows are 1 minute, both inputs 5 seconds out of order; times below are
seconds after :data:`T0`):

1. user u1 clicks at 5 and 20 and orders at 10: three rows of the window [0, 60),
   an EARLY pane; the watermark passes 60 (ON_TIME panes of u1 and u2); a click
   without a user is quarantined;
2. a click of u1 at 50 joins the closed window within its allowed lateness (a
   LATE pane); a click of u2 at -30 and an order of u1 at -20 are beyond it (one
   late row per side); an order without a time is quarantined; u3's rows move the
   watermark past the second minute.

:func:`generate` makes random inputs of any size for the same job.
"""
from __future__ import annotations

import datetime as dt
import random

from pyspark.sql import SparkSession

T0 = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)
T0_MS = int(T0.timestamp() * 1000)
CLICKS_SCHEMA = "click_id string, user string, page string, click_ms bigint"
ORDERS_SCHEMA = "order_id string, buyer string, amount bigint, order_ms bigint"


def click(click_id: str, user: str | None, seconds: float, page: str = "home") -> dict:
    return {"click_id": click_id, "user": user, "page": page, "click_ms": T0_MS + int(seconds * 1000)}


def order(order_id: str, buyer: str | None, seconds: float | None, amount: int = 10) -> dict:
    return {"order_id": order_id, "buyer": buyer, "amount": amount,
            "order_ms": None if seconds is None else T0_MS + int(seconds * 1000)}


ARRIVALS: list[tuple[str, list[dict], list[dict]]] = [
    ("u1 clicks twice and orders once in the first minute (an EARLY pane); the watermark passes it (ON_TIME)",
     [click("c1", "u1", 5), click("c2", "u1", 20, "cart"), click("c3", "u2", 30), click("c4", "u1", 75),
      click("c5", "u2", 80), click("c9", None, 100)],
     [order("o1", "u1", 10, 25), order("o2", "u2", 40, 40), order("o3", "u1", 70, 15), order("o4", "u2", 85, 5)]),
    ("a click of u1 within the allowed lateness (a LATE pane); one late row per side; u3 moves the watermark",
     [click("c6", "u1", 50, "checkout"), click("c7", "u2", -30), click("c8", "u3", 200)],
     [order("o5", "u1", -20, 99), order("o6", "u1", 65, 30), order("o7", "u3", 205, 12), order("o8", "u3", None)]),
]


def land(spark: SparkSession, clicks: list[dict], orders: list[dict], clicks_path: str, orders_path: str) -> None:
    """Append the rows to the two Delta tables (each gets a version, empty or not)."""
    for rows, schema, path in ((clicks, CLICKS_SCHEMA, clicks_path), (orders, ORDERS_SCHEMA, orders_path)):
        names = [part.split()[0] for part in schema.split(", ")]
        frame = spark.createDataFrame([tuple(row[n] for n in names) for row in rows], schema)
        frame.write.format("delta").mode("append").save(path)


def generate(n_users: int = 50, minutes: int = 60, clicks_per_minute: int = 40, seed: int = 7
             ) -> tuple[list[dict], list[dict]]:
    """Random clicks and orders (about one order per five clicks), a few seconds out of order."""
    rng = random.Random(seed)
    clicks, orders = [], []
    for i in range(minutes * clicks_per_minute):
        seconds = i * 60 / clicks_per_minute + rng.uniform(-4, 4)
        user = f"u{rng.randrange(n_users)}"
        clicks.append(click(f"c{i}", user, seconds, rng.choice(("home", "item", "cart", "checkout"))))
        if rng.random() < 0.2:
            orders.append(order(f"o{i}", user, seconds + rng.uniform(0, 30), rng.randrange(1, 200)))
    return clicks, orders
