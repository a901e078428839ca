"""The suites' frames of a validation, computed ahead of Great Expectations.

GE validates one suite after another, each on its frame cached in Spark. Computing a frame
(reading the tables the batch wrote, the joins and counts that reduce them) needs nothing
from GE: while GE validates one suite, worker threads compute the frames of the next ones,
so the driver plans one query while the executors run another. At most :data:`FRAMES_AHEAD`
frames beyond the one GE holds are computed, so a validation of whole tables caches at most
that many more frames at a time than it did one by one.

A frame whose computation fails is handed to GE as it is (cached, not computed): GE meets the
same error and reports it on the suite's expectations, as it would without this module.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Sequence

from py4j.protocol import Py4JError
from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.util import inheritable_thread_target

FRAMES_AHEAD = 2
"""Frames computed beyond the one GE validates (and threads computing them)."""


def cache_and_compute(frame: DataFrame) -> DataFrame:
    """``frame`` cached (memory, then disk) and computed into the cache; cached only when computing fails."""
    cached = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        cached.count()
    except (PySparkException, Py4JError):
        pass    # GE computes it again and reports the error on the suite
    return cached


class FramesAhead:
    """The frames of a list, each prepared (``prepare``: a frame to a cached frame) up to
    :data:`FRAMES_AHEAD` ahead of the one last taken; a None frame stays None.

    Use as a context manager: leaving it waits for the threads and unpersists every prepared
    frame that was not taken (a validation that stopped on an error).
    """

    def __init__(self, frames: Sequence[DataFrame | None], prepare: Callable[[DataFrame], DataFrame]):
        self._frames = list(frames)
        self._prepare = prepare
        self._pool = ThreadPoolExecutor(max_workers=FRAMES_AHEAD, thread_name_prefix="suite-frame")
        self._pending: dict[int, Future] = {}

    def __enter__(self) -> "FramesAhead":
        for index in range(min(FRAMES_AHEAD, len(self._frames))):
            self._submit(index)
        return self

    def __exit__(self, *exc) -> None:
        self._pool.shutdown(wait=True)
        for future in self._pending.values():
            if future.exception() is None:
                future.result().unpersist()
        self._pending.clear()

    def _submit(self, index: int) -> None:
        frame = self._frames[index] if index < len(self._frames) else None
        if frame is not None:
            # the worker runs with the caller's Spark local properties and job tags (job group, pool)
            prepare = inheritable_thread_target(frame.sparkSession)(self._prepare)
            self._pending[index] = self._pool.submit(prepare, frame)

    def take(self, index: int) -> DataFrame | None:
        """Frame ``index`` prepared (waiting for it), after asking for frame ``index + FRAMES_AHEAD``;
        the caller unpersists it. Frames are taken in order."""
        self._submit(index + FRAMES_AHEAD)
        future = self._pending.pop(index, None)
        return None if future is None else future.result()
