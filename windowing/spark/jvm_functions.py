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
    members: dict[tuple[object, str], object] = {}   # by (gateway, name): a new gateway resolves anew

    def kept_lookup(name: str, sc):
        key = (sc._gateway, name)
        member = members.get(key)
        if member is None:
            member = members[key] = lookup(name, sc)
        return member

    kept_lookup.keeps_members = True
    builtin._get_jvm_function = kept_lookup
    return True
