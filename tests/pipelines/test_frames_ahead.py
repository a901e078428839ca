"""The suites' frames computed ahead of GE (``pipelines/frames_ahead.py``), on real Spark frames."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.frames_ahead import FRAMES_AHEAD, FramesAhead, cache_and_compute

pytestmark = pytest.mark.spark


def _cached(frame) -> bool:
    return frame.storageLevel.useMemory or frame.storageLevel.useDisk


def _computed(spark) -> int:
    """How many cached RDDs hold partitions (a frame cached and computed has one)."""
    return sum(1 for info in spark.sparkContext._jsc.sc().getRDDStorageInfo() if info.numCachedPartitions() > 0)


def test_frames_come_in_order_computed_and_at_most_frames_ahead_beyond_the_one_taken(spark):
    frames = [spark.range(10 * (i + 1)).withColumn("i", F.lit(i)) for i in range(FRAMES_AHEAD + 3)]
    frames.insert(1, None)                                   # a check with nothing to validate
    computed_before = _computed(spark)
    with FramesAhead(frames, cache_and_compute) as ahead:
        first = ahead.take(0)
        assert _computed(spark) > computed_before, "the frame was handed over before it was computed"
        assert first is frames[0] and _cached(first) and first.count() == 10
        # taking frame 0 asked for the frames up to 0 + FRAMES_AHEAD, none after them
        beyond = [f for f in frames[FRAMES_AHEAD + 1:] if f is not None]
        assert not any(_cached(f) for f in beyond), "frames computed further ahead than asked"
        assert ahead.take(1) is None
        for index in range(2, len(frames)):
            frame = ahead.take(index)
            assert frame is frames[index] and _cached(frame)
            assert frame.count() == 10 * index and {r.i for r in frame.select("i").distinct().collect()} == {index - 1}
            frame.unpersist()
    first.unpersist()


def test_frames_prepared_and_not_taken_are_unpersisted_when_the_validation_stops(spark):
    frames = [spark.range(5).withColumn("i", F.lit(i)) for i in range(FRAMES_AHEAD + 2)]
    with pytest.raises(RuntimeError, match="suite failed"):
        with FramesAhead(frames, cache_and_compute) as ahead:
            taken = ahead.take(0)
            taken.unpersist()
            raise RuntimeError("suite failed")
    assert not any(_cached(f) for f in frames), "a frame computed ahead stayed cached"


def test_a_frame_that_fails_to_compute_is_handed_over_cached_and_fails_again_where_it_is_used(spark):
    broken = spark.range(3).where(F.assert_true(F.col("id") < 1, "id too large").isNull())
    with FramesAhead([broken, spark.range(2)], cache_and_compute) as ahead:
        frame = ahead.take(0)
        assert frame is broken and _cached(frame)
        with pytest.raises(Exception, match="id too large"):
            frame.count()
        frame.unpersist()
        second = ahead.take(1)
        assert second.count() == 2
        second.unpersist()
