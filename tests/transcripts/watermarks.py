"""Transcripts of the watermark strategies: one outlying row, confirming rows, explicit watermarks.

Same format and rules as ``basics.py`` (this module's ``TRANSCRIPTS``). Rules these add
(windowing/core/watermarks.py):

* ``EventTimeWatermarks(confirming_rows=n)``: a source's watermark is ``t_n - delay - 1``
  where ``t_n`` is the n-th largest event time it has sent (equal times count one each);
  -infinity until it sent n rows. n = 1 is Flink's rule (the largest event time);
* ``ExplicitWatermarks()``: rows never move the watermark; ``step(..., wm=t)`` (an explicit
  watermark, never moving it back) and the flush do.

The first transcript shows what the option is for: with Flink's rule one row far ahead moves
the watermark past every row that follows it.
"""
from __future__ import annotations

from dataclasses import replace

from transcripts.build import L, P, flush, r, spec, step, transcript_list, tumbling
from transcripts.model import TopTwo
from transcripts.types import Cut
from windowing.core.aggregates import Count, Sum
from windowing.core.records import ON_TIME
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import MIN_TIMESTAMP_MS
from windowing.core.watermarks import EventTimeWatermarks, ExplicitWatermarks


TRANSCRIPTS, transcript = transcript_list()

CONFIRMED_BY_TWO = EventTimeWatermarks(confirming_rows=2)

transcript(
    "one_outlier_row_moves_the_largest_event_time_watermark", spec(tumbling(10)),
    # Flink's rule: 1000 is the largest event time, wm = 1000 - 0 - 1 = 999: [0,10) fires.
    step(r(1, 1), r(1000, 2), wm_after=999, panes=[P("a", 0, 10, 0, ON_TIME, True, s=1, n=1)]),
    # every later row of the stream's real time is late: its window's max_ts is at or below 999.
    step(r(5, 4), r(12, 8), wm_after=999, late=[L(5), L(12)], metrics=dict(accepted_rows=0)),
    flush([P("a", 1000, 1010, 0, ON_TIME, True, s=2, n=1)]),
    doc="confirming_rows = 1 (Flink's rule): one row far ahead sends the rows after it to the late output",
    spark=Cut.STEPS)


def _confirmed_by_two(window_spec):
    """The spec with its input policy's watermark strategy confirmed by two rows."""
    return replace(window_spec, input=replace(window_spec.input, watermark_strategy=CONFIRMED_BY_TWO))

transcript(
    "watermark_confirmed_by_two_rows_ignores_one_outlier",
    _confirmed_by_two(spec(tumbling(10))),
    # the two largest event times are 1000 and 1: wm = 1 - 0 - 1 = 0. Nothing fires.
    step(r(1, 1), r(1000, 2), wm_after=0),
    # now 1000 and 12: wm = 11: [0,10) fires with 1 and 5.
    step(r(5, 4), r(12, 8), wm_after=11, panes=[P("a", 0, 10, 0, ON_TIME, True, s=5, n=2)]),
    # 1000 and 15: wm 14; 15 is not late.
    step(r(15, 16), wm_after=14),
    # 1000 and 22 (21 is the third largest): wm 21: [10,20) fires with 12 and 15.
    step(r(21, 32), r(22, 64), wm_after=21, panes=[P("a", 10, 20, 0, ON_TIME, True, s=24, n=2)]),
    flush([P("a", 20, 30, 0, ON_TIME, True, s=96, n=2), P("a", 1000, 1010, 0, ON_TIME, True, s=2, n=1)]),
    invariant=True, doc="confirming_rows = 2: one outlying row cannot move the watermark",
    spark=Cut.STEPS | Cut.THREE | Cut.ALL)

_TWO_SOURCES = (WindowSpecBuilder().key_by("k").event_time("ts").window(tumbling(10))
                .watermark_sources("src", "s1", "s2").watermark_strategy(CONFIRMED_BY_TWO).side_output_late_data())

transcript(
    "watermark_confirmed_by_two_rows_per_source", _TWO_SOURCES.aggregate(s=Sum("v"), n=Count()),
    # s1: 50 and 1 -> 0; s2: 4 and 3 -> 2; the minimum is 0.
    step(r(1, 1, src="s1"), r(50, 2, src="s1"), r(3, 4, src="s2"), r(4, 8, src="s2"), wm_after=0),
    # s1: 50 and 12 -> 11; s2: 13 alone would give 4 -> 3 (the min); with 14: 14 and 13 -> 12.
    # min 11: [0,10) fires with 1, 3 and 4.
    step(r(12, 16, src="s1"), r(13, 32, src="s2"), r(14, 64, src="s2"), wm_after=11,
         panes=[P("a", 0, 10, 0, ON_TIME, True, s=13, n=3)]),
    flush([P("a", 10, 20, 0, ON_TIME, True, s=112, n=3), P("a", 50, 60, 0, ON_TIME, True, s=2, n=1)]),
    invariant=True, doc="each source's watermark follows its own second largest event time",
    spark=Cut.STEPS | Cut.ONE | Cut.TWO | Cut.THREE | Cut.ALL)

transcript(
    "explicit_watermarks_only",
    WindowSpecBuilder().key_by("k").event_time("ts").window(tumbling(10)).explicit_watermarks()
    .side_output_late_data().aggregate(s=Sum("v"), n=Count()),
    # rows do not move the watermark.
    step(r(1, 1), r(100, 2), wm_after=MIN_TIMESTAMP_MS),
    # an explicit watermark 9 = max_ts of [0,10): it fires.
    step(r(5, 4), wm=9, wm_after=9, panes=[P("a", 0, 10, 0, ON_TIME, True, s=5, n=2)]),
    # 7 is late against 9; the row itself moves nothing.
    step(r(7, 8), wm_after=9, late=[L(7)], metrics=dict(accepted_rows=0)),
    # an explicit watermark never moves it back.
    step(wm=5, wm_after=9),
    flush([P("a", 100, 110, 0, ON_TIME, True, s=2, n=1)]),
    doc="ExplicitWatermarks: only explicit watermarks and the flush move the watermark", spark=Cut.STEPS)

_TOP_TWO = WindowSpecBuilder().key_by("k").event_time("ts").window(tumbling(10)).side_output_late_data()

transcript(
    "watermark_confirmed_by_two_rows_on_the_per_key_path",
    _TOP_TWO.watermark_strategy(CONFIRMED_BY_TWO).process(TopTwo(), "rank int, v bigint, end bigint",
                                                          columns=("v",)),
    # 500 and 2: wm 1.
    step(r(1, 1), r(2, 5), r(500, 9), wm_after=1),
    # 500 and 11: wm 10: [0,10) fires with 1, 5, 3.
    step(r(3, 3), r(11, 7), wm_after=10, panes=[
        P("a", 0, 10, 0, ON_TIME, True, rows=[dict(rank=1, v=5, end=10), dict(rank=2, v=3, end=10)])]),
    flush([P("a", 10, 20, 0, ON_TIME, True, rows=[dict(rank=1, v=7, end=20)]),
           P("a", 500, 510, 0, ON_TIME, True, rows=[dict(rank=1, v=9, end=510)])]),
    invariant=True, doc="a process function (the per-key path) with a watermark confirmed by two rows",
    spark=Cut.STEPS)

transcript(
    "explicit_watermarks_on_the_per_key_path",
    _TOP_TWO.explicit_watermarks().process(TopTwo(), "rank int, v bigint, end bigint", columns=("v",)),
    step(r(1, 1), r(2, 5), r(500, 9), wm_after=MIN_TIMESTAMP_MS),
    step(r(11, 7), wm=10, wm_after=10, panes=[
        P("a", 0, 10, 0, ON_TIME, True, rows=[dict(rank=1, v=5, end=10), dict(rank=2, v=1, end=10)])]),
    flush([P("a", 10, 20, 0, ON_TIME, True, rows=[dict(rank=1, v=7, end=20)]),
           P("a", 500, 510, 0, ON_TIME, True, rows=[dict(rank=1, v=9, end=510)])]),
    doc="a process function (the per-key path) whose watermark moves only explicitly", spark=Cut.STEPS)

WATERMARK_TRANSCRIPT_NAMES = (
    "one_outlier_row_moves_the_largest_event_time_watermark", "watermark_confirmed_by_two_rows_ignores_one_outlier",
    "watermark_confirmed_by_two_rows_per_source", "explicit_watermarks_only",
    "watermark_confirmed_by_two_rows_on_the_per_key_path", "explicit_watermarks_on_the_per_key_path")
