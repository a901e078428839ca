"""The full window model outside the transcripts: output modes (sink views), validation of
the new spec parts, fingerprints of specs with user functions, the injectable clock."""
from __future__ import annotations

import pytest

import transcripts.model as tm
from transcripts.build import r
from windowing import (
    APPEND, FINAL, UPSERT, ContinuousEventTimeTrigger, Count, CountTrigger, DeltaTrigger, EventTimeSessionWindows,
    EventTimeTrigger, NeverTrigger, ProcessingTimeSessionWindows, ReferenceOperator, Sum, TriggerBase,
    TriggerResult,
    TumblingEventTimeWindows, TumblingProcessingTimeWindows, WindowSpecBuilder, sink_view)

T100 = TumblingEventTimeWindows.of(100)


def base(keys=("k",)):
    return WindowSpecBuilder().key_by(*keys).event_time("ts")


def _bridge_run(mode):
    """Two sessions fire ON_TIME, a late element bridges them (LATE pane superseding both)."""
    spec = (base().window(EventTimeSessionWindows.with_gap(10)).allowed_lateness(100).output_mode(mode)
            .aggregate(s=Sum("v"), n=Count()))
    op = ReferenceOperator(spec)
    panes = []
    for i, rows in enumerate([[r(0, 1), r(15, 2), r(50, 4)], [r(8, 8)], [r(100, 16)]]):
        panes += op.process_batch(rows, i).panes
    panes += op.flush(3).panes
    return spec, panes


def _windows(panes):
    return [(p.window_start_ms, p.window_end_ms, p.values["s"], p.timing) for p in panes]


def test_upsert_sink_holds_only_current_sessions():
    spec, panes = _bridge_run(UPSERT)
    assert _windows(sink_view(spec, panes)) == [(0, 25, 11, "LATE"), (50, 60, 4, "ON_TIME"),
                                                (100, 110, 16, "ON_TIME")]


def test_append_sink_keeps_every_pane_and_says_what_it_supersedes():
    spec, panes = _bridge_run(APPEND)
    view = sink_view(spec, panes)
    assert _windows(view) == [(0, 10, 1, "ON_TIME"), (15, 25, 2, "ON_TIME"), (0, 25, 11, "LATE"),
                              (50, 60, 4, "ON_TIME"), (100, 110, 16, "ON_TIME")]
    assert [p.supersedes for p in view] == [(), (), ((0, 10), (15, 25)), (), ()]


def test_final_sink_holds_final_panes_only():
    spec, panes = _bridge_run(FINAL)
    assert _windows(sink_view(spec, panes)) == [(100, 110, 16, "ON_TIME")]


def test_upsert_keeps_latest_pane_per_window():
    spec = base().window(T100).trigger(CountTrigger(1)).aggregate(s=Sum("v"))
    op = ReferenceOperator(spec)
    panes = op.process_batch([r(1, 1), r(2, 2), r(150, 4)], 0).panes
    assert [(p.window_start_ms, p.values["s"]) for p in sink_view(UPSERT, panes)] == [(0, 3), (100, 4)]
    with pytest.raises(ValueError, match="'merge' is not one of"):
        sink_view("merge", panes)


@pytest.mark.parametrize("make, message", [
    (lambda: base().window(EventTimeSessionWindows.with_gap(10)).trigger(DeltaTrigger(1, value_column="v"))
     .aggregate(Count()), "cannot merge"),
    (lambda: EventTimeSessionWindows.with_gap(0), "gap_ms must be a positive"),
    (lambda: EventTimeSessionWindows(), "exactly one of a static gap_ms or a dynamic_gap"),
    (lambda: EventTimeSessionWindows.with_dynamic_gap(42), "column name or an object with gap_ms"),
    (lambda: base().window(T100).output_mode("replace").aggregate(Count()), "output_mode 'replace'"),
    (lambda: base().window(T100).process(tm.TopTwo(), "rank int, rank int"), "repeats columns ['rank']"),
    (lambda: base().window(T100).process(tm.TopTwo(), "rank"), "is not 'name type'"),
    (lambda: EventTimeTrigger().with_early_firings(), "needs every_n_elements=N or every="),
    (lambda: ContinuousEventTimeTrigger(0), "interval_ms must be a positive int, got 0"),
    (lambda: DeltaTrigger(1.0), "needs delta_fn"),
    (lambda: base().window(T100).evictor("last 3").aggregate(Count()), "evictor 'last 3' is not one of"),
    (lambda: WindowSpecBuilder().event_time("ts").window(T100).aggregate(Count()), "call key_by"),
])
def test_invalid_model_specs_name_the_bad_value(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        make()


class NoMerge(TriggerBase):
    def on_element(self, value, timestamp_ms, window, ctx):
        return TriggerResult.CONTINUE


def test_user_functions_must_pickle():
    class LocalGap:
        def gap_ms(self, row):
            return 5

    with pytest.raises(ValueError, match="dynamic_gap .*cannot be pickled.*module-level"):
        EventTimeSessionWindows.with_dynamic_gap(LocalGap())

    class LocalTop:
        def process(self, key, context, elements):
            return []

    with pytest.raises(ValueError, match="process function .*cannot be pickled"):
        base().window(T100).process(LocalTop(), "a int")


def test_user_trigger_must_declare_it_can_merge_for_sessions():
    with pytest.raises(ValueError, match="cannot merge"):
        base().window(EventTimeSessionWindows.with_gap(5)).trigger(NoMerge()).aggregate(Count())
    base().window(EventTimeSessionWindows.with_gap(5)).trigger(tm.EveryTwoNegatives()).aggregate(Count())


def test_process_function_rows_must_match_the_output_schema():
    spec = base().window(T100).process(tm.TopTwo(), "rank int, v bigint")  # TopTwo also emits 'end'
    with pytest.raises(ValueError, match="its columns must be exactly the output schema's"):
        ReferenceOperator(spec).process_batch([r(1, 1)], 0, watermark_ms=200)


def test_specs_with_functions_have_equality_and_stable_fingerprints():
    def make(gap_fn):
        return base().window(EventTimeSessionWindows.with_dynamic_gap(gap_fn)).aggregate(Count())
    assert make(tm.GapByKind()) == make(tm.GapByKind())
    assert make(tm.GapByKind()).fingerprint() == make(tm.GapByKind()).fingerprint()
    assert make("g").fingerprint() != make("h").fingerprint() != make(tm.GapByKind()).fingerprint()
    a = base().window(T100).trigger(EventTimeTrigger().with_early_firings(every_n_elements=2)).aggregate(Count())
    b = base().window(T100).trigger(EventTimeTrigger().with_early_firings(every_n_elements=3)).aggregate(Count())
    assert a.fingerprint() != b.fingerprint()


def test_basic_specs_keep_their_fingerprint():
    """A spec that uses only the basic fields (``spec._FOUNDATION_FIELDS``) has a fixed fingerprint,
    so state written by any release resumes without being refused."""
    spec = base().window(TumblingEventTimeWindows.of(10)).aggregate(s=Sum("v"))
    assert spec.fingerprint() == "f1457104651d790e"


def test_input_policy_settings_keep_their_fingerprint():
    """The input policy's settings (once fields of the spec) hash as they always did."""
    from windowing.core.watermarks import EventTimeWatermarks
    spec = (base().processing_time("ingested").window(TumblingEventTimeWindows.of(10))
            .watermark_idleness("1 minute").watermark_sources("src", "a", "b").output_mode("upsert")
            .max_event_time_skew("1 hour").value_bounds("v", 0, 100).deduplicate("id", "10 minutes")
            .watermark_strategy(EventTimeWatermarks(2)).aggregate(s=Sum("v")))
    assert spec.input.dedup_column == "id" and spec.input.sources == ("a", "b")
    assert spec.fingerprint() == "4aa5f75a4290c5b0"


def test_which_session_specs_run_per_key():
    pytest.importorskip("pyspark")
    from windowing.spark.plans.registry import unplanned_features
    spec = (base(keys=()).window(EventTimeSessionWindows.with_dynamic_gap(tm.GapByKind()))
            .watermark_idleness("1 minute").output_mode(UPSERT).aggregate(Count()))
    # window_all, idleness and a gap function (a Python UDF in classify) have DataFrame plans now
    assert unplanned_features(spec) == ()
    # The built-in triggers on event-time sessions have DataFrame plans (session_trigger_plan.py);
    # so do processing-time sessions with their ProcessingTimeTrigger (processing_session_plan.py)
    # or another built-in trigger that can merge (processing_trigger_plan.py), but not NeverTrigger.
    counted = base().window(EventTimeSessionWindows.with_gap(5)).trigger(CountTrigger(2)).aggregate(Count())
    assert unplanned_features(counted) == ()
    by_clock = WindowSpecBuilder().key_by("k").window(ProcessingTimeSessionWindows.with_gap(5)).aggregate(Count())
    assert unplanned_features(by_clock) == ()
    by_clock_counted = (WindowSpecBuilder().key_by("k").window(ProcessingTimeSessionWindows.with_gap(5))
                        .trigger(CountTrigger(2)).aggregate(Count()))
    assert unplanned_features(by_clock_counted) == ()
    by_clock_event_time = (WindowSpecBuilder().key_by("k").window(ProcessingTimeSessionWindows.with_gap(5))
                           .trigger(EventTimeTrigger()).aggregate(Count()))
    assert unplanned_features(by_clock_event_time) == ()
    by_clock_never = (WindowSpecBuilder().key_by("k").window(ProcessingTimeSessionWindows.with_gap(5))
                      .trigger(NeverTrigger()).aggregate(Count()))
    assert unplanned_features(by_clock_never) == (
        "trigger NeverTrigger() on processing-time session windows (their plans take ProcessingTimeTrigger, "
        "CountTrigger, ContinuousProcessingTimeTrigger, EventTimeTrigger, EarlyLateEventTimeTrigger or "
        "ContinuousEventTimeTrigger)",)


@pytest.mark.parametrize("sessions", [EventTimeSessionWindows.with_gap(5), EventTimeSessionWindows.with_dynamic_gap("g")])
def test_event_time_sessions_have_a_dataframe_plan(sessions):
    pytest.importorskip("pyspark")
    from windowing.spark.plans.registry import unplanned_features
    spec = base().window(sessions).allowed_lateness(10).output_mode(UPSERT).aggregate(n=Count(), s=Sum("v"))
    assert unplanned_features(spec) == ()


def test_injectable_clock_fires_processing_time_windows():
    spec = WindowSpecBuilder().key_by("k").window(TumblingProcessingTimeWindows.of(10)).aggregate(n=Count())
    assert spec.event_time_column is None
    op = ReferenceOperator(spec)
    assert op.process_batch([dict(k="a")], 0, processing_time_ms=4).panes == []
    assert op.advance_processing_time(8, 1).panes == []
    fired = op.advance_processing_time(9, 2).panes
    assert [(p.window_start_ms, p.values["n"], p.timing, p.is_final) for p in fired] == [(0, 1, "ON_TIME", True)]
    assert op.current_processing_time_ms == 9
    op.advance_processing_time(5, 3)   # the clock never goes back
    assert op.current_processing_time_ms == 9


def test_flush_closes_processing_time_sessions():
    spec = WindowSpecBuilder().key_by("k").window(ProcessingTimeSessionWindows.with_gap("1 hour")).aggregate(n=Count())
    op = ReferenceOperator(spec)
    op.process_batch([dict(k="a"), dict(k="b")], 0, processing_time_ms=0)
    panes = op.flush(1).panes
    assert sorted((p.key, p.values["n"], p.is_final) for p in panes) == [(("a",), 1, True), (("b",), 1, True)]
    assert op.open_windows() == []
