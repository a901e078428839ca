"""Watermark strategies: confirmed by n rows, explicit only; and accumulating() against a PurgingTrigger.

The transcripts of ``transcripts/watermarks.py`` run in ``test_transcripts.py``: on the model, and
on Spark the DataFrame-plan ones, the per-key ones, and the confirmed one cut into batches of 1 and
2 on its plan; here: which path each takes, the tracker, the confirmed watermark resumed from
Delta state, and the builder, spec and job-file rules.
"""
from __future__ import annotations

import json

import pytest

from transcripts import TRANSCRIPTS
from transcripts.watermarks import WATERMARK_TRANSCRIPT_NAMES
from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import GlobalWindows, TumblingEventTimeWindows
from windowing.core.reference import batch_clock
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import MIN_TIMESTAMP_MS
from windowing.core.triggers import CountTrigger, EventTimeTrigger, PurgingTrigger
from windowing.core.watermarks import EventTimeWatermarks, ExplicitWatermarks, WatermarkTracker

BY_NAME = {t.name: t for t in TRANSCRIPTS}
BASE = WindowSpecBuilder().key_by("k").event_time("ts").window(TumblingEventTimeWindows.of(10))


def test_watermark_transcripts_are_registered():
    assert set(WATERMARK_TRANSCRIPT_NAMES) <= set(BY_NAME)


# ----------------------------------------------------------------- the tracker


def test_confirmed_watermark_follows_the_nth_largest_event_time_and_survives_a_snapshot():
    tracker = WatermarkTracker(2, strategy=EventTimeWatermarks(3))
    tracker.observe("", 100, 0)
    tracker.observe("", 10, 0)
    assert tracker.advance(0) == MIN_TIMESTAMP_MS      # two rows: not yet confirmed
    tracker.observe("", 10, 0)                         # equal event times count one each
    assert tracker.advance(0) == 10 - 2 - 1
    saved = json.loads(json.dumps(tracker.snapshot()))
    again = WatermarkTracker.restore(2, ("",), None, tracker.current_ms, saved, strategy=EventTimeWatermarks(3))
    for twin in (tracker, again):
        twin.observe("", 50, 0)
        assert twin.advance(0) == 10 - 3                # 100, 50, 10: the third is 10
        twin.observe("", 60, 0)
        assert twin.advance(0) == 50 - 3


def test_explicit_watermarks_ignore_the_rows():
    tracker = WatermarkTracker(0, strategy=ExplicitWatermarks())
    tracker.observe("", 1_000, 0)
    assert tracker.advance(0) == MIN_TIMESTAMP_MS
    assert tracker.advance(0, explicit_ms=7) == 7
    assert tracker.advance(0, explicit_ms=3) == 7      # never back


def test_batch_clock_refuses_maxima_without_the_top_event_times_the_strategy_needs():
    tracker = WatermarkTracker(0, strategy=EventTimeWatermarks(2))
    with pytest.raises(ValueError, match=r"needs the largest 2 event times of source\(s\) \[''\]"):
        batch_clock(tracker, MIN_TIMESTAMP_MS, 0, {"": (100, 0)})
    clock = batch_clock(tracker, MIN_TIMESTAMP_MS, 0, {"": (100, 0)}, source_top_event_times_ms={"": [100, 40]})
    assert clock.watermark_end_ms == 39


# ----------------------------------------------------------- spec and builder


def test_strategy_is_part_of_the_fingerprint_and_the_default_leaves_it_unchanged():
    plain = BASE.aggregate(n=Count())
    assert BASE.watermark_strategy(EventTimeWatermarks()).aggregate(n=Count()).fingerprint() == plain.fingerprint()
    confirmed = BASE.watermark_strategy(EventTimeWatermarks(2)).aggregate(n=Count())
    assert confirmed.fingerprint() != plain.fingerprint()
    assert "EventTimeWatermarks(confirming_rows=2)" in confirmed.describe()


@pytest.mark.parametrize("bad, message", [
    (0, r"confirming_rows must be an int >= 1 .* got 0"),
    (True, r"confirming_rows must be an int >= 1 .* got True"),
    ("2", r"confirming_rows must be an int >= 1 .* got '2'"),
])
def test_confirming_rows_is_validated(bad, message):
    with pytest.raises(ValueError, match=message):
        EventTimeWatermarks(bad)


def test_watermark_strategy_must_be_a_strategy_object():
    with pytest.raises(ValueError, match=r"watermark_strategy\(\) needs one of \['EventTimeWatermarks', "
                                         r"'ExplicitWatermarks'\], got 'explicit'"):
        BASE.watermark_strategy("explicit")


def test_explicit_watermarks_refuse_a_delay_and_idleness():
    with pytest.raises(ValueError, match="explicit watermarks ignore the event times, so max_out_of_orderness "
                                         "5000 ms has no effect"):
        BASE.event_time("ts", "5 seconds").explicit_watermarks().aggregate(n=Count())
    with pytest.raises(ValueError, match=r"explicit watermarks do not advance by idleness; remove the idle "
                                         r"timeout \(100 ms\)"):
        BASE.explicit_watermarks().watermark_idleness(100).aggregate(n=Count())


def test_accumulating_refuses_a_trigger_the_user_wrapped_in_purging_trigger():
    purging = BASE.trigger(PurgingTrigger(EventTimeTrigger()))
    with pytest.raises(ValueError, match=r"accumulating\(\) conflicts with trigger "
                                         r"PurgingTrigger\(nested=EventTimeTrigger\(\)\): .* pass the trigger "
                                         r"without PurgingTrigger \(EventTimeTrigger\(\)\)"):
        purging.accumulating().aggregate(n=Count())
    # the order of the calls does not matter
    with pytest.raises(ValueError, match=r"accumulating\(\) conflicts with trigger"):
        BASE.accumulating().trigger(PurgingTrigger(EventTimeTrigger())).aggregate(n=Count())
    # discarding on it, or accumulating on the unwrapped trigger, are what the message offers
    assert purging.discarding().aggregate(n=Count()).trigger == PurgingTrigger(EventTimeTrigger())
    assert BASE.trigger(EventTimeTrigger()).accumulating().aggregate(n=Count()).trigger == EventTimeTrigger()


def test_accumulating_refuses_a_tumbling_count_window():
    count = WindowSpecBuilder().key_by("k").event_time("ts").count_window(3)
    with pytest.raises(ValueError, match=r"accumulating\(\) conflicts with count_window\(3\): .* "
                                         r"window\(GlobalWindows\(\)\).trigger\(CountTrigger\(3\)\).accumulating\(\)"):
        count.accumulating().aggregate(n=Count())
    offered = (WindowSpecBuilder().key_by("k").event_time("ts").window(GlobalWindows()).trigger(CountTrigger(3))
               .accumulating().aggregate(n=Count()))
    assert offered.trigger == CountTrigger(3)
    # a sliding count window is not purging: accumulating is its own mode
    assert WindowSpecBuilder().key_by("k").event_time("ts").count_window(3, 1).accumulating() \
        .aggregate(n=Count()).trigger == CountTrigger(1)


# ------------------------------------------------------------------- job files


def _job(tmp_path, source_extra: str):
    from pipelines.job import load_job
    path = tmp_path / "job.toml"
    path.write_text(f"""
[job]
name = "j"
operator_id = "j"
[source]
path = "raw"
key = ["k"]
event_time = "ts"
{source_extra}
[window]
type = "tumbling"
size = "1 minute"
[aggregates]
n = "count()"
""")
    return load_job(path, root=tmp_path)


def test_job_file_watermark_settings(tmp_path):
    assert _job(tmp_path, "").spec.input.watermark_strategy == EventTimeWatermarks()
    assert _job(tmp_path, "watermark = { confirming_rows = 3 }").spec.input.watermark_strategy == EventTimeWatermarks(3)
    assert _job(tmp_path, 'watermark = "explicit"').spec.input.watermark_strategy == ExplicitWatermarks()
    with pytest.raises(ValueError, match=r"\[source\] watermark = 'none' is not understood; write "
                                         r"watermark = \{ confirming_rows = 2 \} or watermark = 'explicit'"):
        _job(tmp_path, 'watermark = "none"')
    with pytest.raises(ValueError, match=r"\[source\] watermark has unknown keys \['rows'\]"):
        _job(tmp_path, "watermark = { rows = 2 }")
    with pytest.raises(ValueError, match="confirming_rows must be an int >= 1"):
        _job(tmp_path, "watermark = { confirming_rows = 0 }")


# ---------------------------------------------------------------------- Spark

PER_KEY = ("watermark_confirmed_by_two_rows_on_the_per_key_path", "explicit_watermarks_on_the_per_key_path")


def test_per_key_transcripts_take_the_per_key_path():
    pytest.importorskip("pyspark")
    from windowing.spark.operator.dispatch import uses_dataframe_plan
    assert not any(uses_dataframe_plan(BY_NAME[name].spec) for name in PER_KEY)
    assert all(uses_dataframe_plan(BY_NAME[name].spec) for name in WATERMARK_TRANSCRIPT_NAMES if name not in PER_KEY)


def _schema(t):
    from spark_adapter import infer_schema
    return infer_schema(t.spec, t.rows + [dict(k="a", ts=0, v=0, w=0.5)])


@pytest.mark.spark
@pytest.mark.parametrize("name", ["watermark_confirmed_by_two_rows_ignores_one_outlier",
                                  "watermark_confirmed_by_two_rows_on_the_per_key_path"])
def test_confirmed_watermark_on_delta_state_resumes_from_the_state_tables(spark, tmp_path, name):
    """A new operator object per batch: the n largest event times come back from the Delta state
    (the progress row's time state on the plan, the pickled tracker on the per-key path)."""
    from pyspark.sql.types import DataType
    from windowing.spark.operator.dispatch import operator_on_delta
    t = BY_NAME[name]
    schema = _schema(t)
    columns = [field.split("`")[1] for field in schema.split(", ")]
    struct = DataType.fromDDL(schema)
    paths = {p: str(tmp_path / p) for p in ("state", "results", "late", "quarantine")}
    for batch_id, st in enumerate(t.steps):
        operator = operator_on_delta(spark, t.spec, "wm", paths["state"], paths["results"], paths["late"],
                                     paths["quarantine"])
        if st.flush:
            report = operator.flush(batch_id)
        else:
            df = spark.createDataFrame([tuple(r.get(c) for c in columns) for r in st.rows], struct)
            report = operator.process_batch(df, batch_id, watermark_ms=st.watermark_ms)
            if st.watermark_after_ms is not None:
                assert report.watermark_after_ms == st.watermark_after_ms, (batch_id, report)
        assert report.metrics.panes_emitted == len(st.panes), (batch_id, report)
        assert report.metrics.late_rows == len(st.late), (batch_id, report)
    results = spark.read.format("delta").load(paths["results"])
    got = sorted((r["window_start_ms"], r["batch_id"]) for r in results.select("window_start_ms", "batch_id")
                 .distinct().collect())
    want = sorted((p.window_start_ms, b) for b, st in enumerate(t.steps) for p in st.panes)
    assert got == want
