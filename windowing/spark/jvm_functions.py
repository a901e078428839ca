"""Spark's JVM column functions resolved once per JVM gateway instead of at every call.

In a classic (py4j) session, every ``F.col``, ``F.lit``, ``F.when`` ... first asks the JVM
for the class ``org.apache.spark.sql.functions`` and then for the method by name (two
reflection round trips), and only then calls it. The methods are static members of one
class, so a resolved member stays valid as long as the gateway does. Building a batch's
plan makes thousands of such calls: the two lookups were about a third of all py4j
commands a transcript batch sent (counted by command type over a 10-batch transcript).

:func:`install` makes PySpark keep the resolved members, per gateway, for the life of
the process. It changes no result: the same JVM method is called with the same
arguments. Spark Connect sessions never take this path (they build plans in Python).
"""
from __future__ import annotations

import threading

_LOCK = threading.Lock()


def install() -> bool:
    """Keep resolved ``org.apache.spark.sql.functions`` members (idempotent).

    Returns False, changing nothing, when this PySpark has no such lookup to keep (its
    internals moved): plans still build, with the lookups.
    """
    try:
        from pyspark.sql.functions import builtin
    except ImportError:
        return False
    lookup = getattr(builtin, "_get_jvm_function", None)
    if lookup is None:
        return False
    if getattr(lookup, "keeps_members", False):
        return True
    members: dict[tuple[int, str], object] = {}
    gateways: dict[int, object] = {}     # keeps each gateway alive while its members are kept

    def kept_lookup(name: str, sc):
        gateway = sc._gateway
        key = (id(gateway), name)
        member = members.get(key)
        if member is None or gateways.get(id(gateway)) is not gateway:
            member = lookup(name, sc)
            with _LOCK:
                if gateways.get(id(gateway)) is not gateway:      # a new gateway: forget the old one's
                    members.clear()
                    gateways.clear()
                    gateways[id(gateway)] = gateway
                members[key] = member
        return member

    kept_lookup.keeps_members = True
    builtin._get_jvm_function = kept_lookup
    return True
