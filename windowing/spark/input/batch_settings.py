"""Spark settings a small streaming batch runs with, and their scope.

Adaptive query execution plans every shuffle stage as a Spark job of its own and
plans again between them. On a batch of a few thousand rows that fixed cost is
most of the batch (a 600-row batch ran 27 jobs with it, 13 without), and Spark's
own stateful streaming runs its micro-batches without it for that reason. A
batch is small when the last batch read at most :data:`SMALL_BATCH_ROWS` input
rows and the window state is small enough to be kept in the driver
(:mod:`windowing.spark.state.cache`); it then runs without adaptive execution
and with at most :data:`SMALL_BATCH_PARTITIONS` shuffle partitions (without
adaptive execution nothing would coalesce the session's partitions: 200 tasks,
and 200 files in each output, for a few rows). A batch that turns out larger
than :data:`SMALL_BATCH_ROWS` goes back to the session's settings at once. The
settings are the session's again when the batch ends, committed or not.
The validation of such a batch runs with them too (:func:`validates_small`).
Setting :data:`SMALL_BATCH_SETTINGS` to ``false`` (a job's ``[spark]`` table)
keeps the session's settings for every batch and its validation.
"""
from __future__ import annotations

import json

SMALL_BATCH_ROWS = 100_000
"""Input rows up to which a batch runs with :func:`small_batch_settings`."""
SMALL_BATCH_PARTITIONS = 4
"""Most shuffle partitions of a small batch (fewer if the session has fewer)."""
SMALL_BATCH_SETTINGS = "spark.windowing.smallBatchSettings"
"""The session setting that turns the small-batch settings off (``false``); on by default."""
ADAPTIVE = "spark.sql.adaptive.enabled"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def runs_small(spark, state_in_driver: bool, last: dict | None) -> bool:
    """Whether a batch starts with :func:`small_batch_settings`: the state is in the driver, the
    last batch read at most :data:`SMALL_BATCH_ROWS` rows, and the session does not turn it off."""
    return _small(spark, state_in_driver, last_input_rows(last))


def validates_small(spark, state_in_driver: bool, input_rows: int | None) -> bool:
    """Whether the validation of a stream batch just committed runs with :func:`small_batch_settings`.

    Its frames are then small too: the batch's raw rows (``input_rows``, at most
    :data:`SMALL_BATCH_ROWS`), the window state kept in the driver (``state_in_driver``) and the
    panes, late and quarantined rows of the batch. Great Expectations runs a Spark job or more per
    metric; with adaptive execution each shuffle of them is a job of its own.
    """
    return _small(spark, state_in_driver, input_rows)


def _small(spark, state_in_driver: bool, input_rows: int | None) -> bool:
    """The state is in the driver, ``input_rows`` is known and at most :data:`SMALL_BATCH_ROWS`, and
    the session leaves the small-batch settings on (:data:`SMALL_BATCH_SETTINGS` not ``false``)."""
    return (state_in_driver and input_rows is not None and input_rows <= SMALL_BATCH_ROWS
            and spark.conf.get(SMALL_BATCH_SETTINGS, "true").strip().lower() != "false")


def small_batch_settings(spark) -> dict[str, str]:
    partitions = min(int(spark.conf.get(SHUFFLE_PARTITIONS)), SMALL_BATCH_PARTITIONS)
    return {ADAPTIVE: "false", SHUFFLE_PARTITIONS: str(partitions)}


def last_input_rows(last: dict | None) -> int | None:
    """The input rows of the batch a progress row committed (None: no batch, or not recorded)."""
    if not last or not last.get("metrics"):
        return None
    return json.loads(last["metrics"]).get("input_rows")


class ScopedSettings:
    """Session settings set for a while and then put back as they were (unset if they were unset).

    Set on each of ``sessions`` (the same session once): in ``foreachBatch`` a micro-batch's
    DataFrame belongs to the streaming query's own clone of the session, whose settings decide
    how the queries derived from it run.
    """

    def __init__(self, *sessions) -> None:
        self.sessions = _distinct(sessions)
        self._before: list[dict[str, str | None]] = [{} for _ in self.sessions]

    def set(self, settings: dict[str, str]) -> None:
        for session, before in zip(self.sessions, self._before):
            for key, value in settings.items():
                if key not in before:
                    before[key] = session.conf.get(key, None)
                session.conf.set(key, value)

    def restore(self) -> None:
        for session, before in zip(self.sessions, self._before):
            for key, value in before.items():
                if value is None:
                    session.conf.unset(key)
                else:
                    session.conf.set(key, value)
            before.clear()


def _distinct(sessions) -> list:
    """``sessions`` without repeats: a session whose JVM session is one already listed (two Python
    objects of one session would record each other's settings as the ones to put back)."""
    out: list = []
    for session in sessions:
        jvm = getattr(session, "_jsparkSession", None)
        if not any(session is seen or (jvm is not None and jvm.equals(getattr(seen, "_jsparkSession", None)))
                   for seen in out):
            out.append(session)
    return out
