"""The per-key split of a batch: its clock refuses time going back and advances like the model's.

Every transcript runs on the model split by key (``transcripts/split_by_key.py``, the
``model_per_key`` executor of the transcript test).
"""
from __future__ import annotations

import pytest

from windowing.core.time import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from windowing.core.watermarks import WatermarkTracker


def test_key_batch_clock_refuses_time_going_back():
    from windowing.core.reference import KeyBatchClock
    with pytest.raises(ValueError, match="watermark_end_ms 5 is below watermark_start_ms 9"):
        KeyBatchClock(0, 9, 5, 0, None, 0)
    with pytest.raises(ValueError, match="processing_time_end_ms 3 is below processing_time_before_ms 4"):
        KeyBatchClock(0, 0, 0, 4, None, 3)


def test_batch_clock_advances_watermark_and_clock_like_the_model():
    """Per-source maxima move the tracker as the model's per-element observations do."""
    from windowing.core.reference import batch_clock
    tracker = WatermarkTracker(5, ("s1", "s2"), idle_timeout_ms=100)
    clock = batch_clock(tracker, MIN_TIMESTAMP_MS, 0, {"s1": (50, 7)}, processing_time_ms=7)
    assert (clock.watermark_start_ms, clock.watermark_end_ms) == (MIN_TIMESTAMP_MS, MIN_TIMESTAMP_MS)  # s2 silent
    assert clock.processing_time_end_ms == 7
    # 100 ms without rows: both sources idle; the watermark is s1's (44) advanced by the 100 ms
    clock = batch_clock(tracker, 7, 1, {}, processing_time_ms=107)
    assert clock.watermark_end_ms == 44 + 100 and clock.processing_time_end_ms == 107
    flushed = batch_clock(tracker, 107, 2, {}, flush=True)
    assert flushed.watermark_end_ms == MAX_TIMESTAMP_MS and flushed.processing_time_end_ms == MAX_TIMESTAMP_MS
