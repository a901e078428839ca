"""Invalid specs and inputs fail early with messages that name the bad value."""
from __future__ import annotations

import pytest

from windowing.core.aggregates import Count, Sum
from windowing.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.spec import WindowSpecBuilder
from windowing.core.time import parse_duration_ms


def base():
    return WindowSpecBuilder().key_by("user").event_time("ts", "5s").window(TumblingEventTimeWindows.of("1 minute"))


@pytest.mark.parametrize("make, message", [
    (lambda: TumblingEventTimeWindows.of(0), "size_ms must be a positive number of milliseconds, got 0"),
    (lambda: TumblingEventTimeWindows.of(10, 10), "offset_ms=10 is invalid"),
    (lambda: SlidingEventTimeWindows.of(10, -1), "slide_ms must be a positive number of milliseconds, got -1"),
    (lambda: base().allowed_lateness(-1).aggregate(Count()), "allowed_lateness must be >= 0 ms, got -1"),
    (lambda: base().allowed_lateness("soon").aggregate(Count()), "allowed_lateness='soon' is not a duration"),
    (lambda: base().aggregate(), "needs at least one aggregate"),
    (lambda: base().aggregate(pane_index=Count()), "clashes with an output column"),
    (lambda: WindowSpecBuilder().key_by("user").aggregate(Count()), "call event_time"),
    (lambda: base().count_window(0).aggregate(Count()), "count must be a positive int, got 0"),
])
def test_invalid_specs_name_the_bad_value(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_durations():
    assert parse_duration_ms("5 minutes") == 300_000
    assert parse_duration_ms("250 ms") == 250
    assert parse_duration_ms(7) == 7


@pytest.mark.parametrize("columns, message", [
    ({"user": "string", "ts": "timestamp"}, "column 'amount' is not in the input"),
    ({"user": "string", "ts": "double", "amount": "bigint"}, "event-time column 'ts' has type double"),
    ({"user": "string", "ts": "timestamp", "amount": "string"}, "needs a numeric column but 'amount' is string"),
])
def test_schema_check(columns, message):
    spec = base().aggregate(total=Sum("amount"))
    with pytest.raises(ValueError, match=message):
        spec.check_schema(columns)
    spec.check_schema({"user": "string", "ts": "timestamp", "amount": "bigint"})


@pytest.mark.spark
def test_string_and_timestamp_event_times_before_1970_and_unparseable(spark):
    from spark_adapter import SparkExecutor
    spec = (WindowSpecBuilder().key_by("user").event_time("ts").window(TumblingEventTimeWindows.of("1 minute"))
            .aggregate(n=Count()))
    ex = SparkExecutor(spark, spec, "`user` string, `ts` string")
    result = ex.process_batch([dict(user="a", ts="1969-12-31 23:59:59.999"), dict(user="a", ts="not a time"),
                               dict(user="a", ts="1970-01-01 00:00:30")], 0, watermark_ms=2**63 - 1)
    assert sorted((p.window_start_ms, p.values["n"]) for p in result.panes) == [(-60_000, 1), (0, 1)]
    assert [r["reason"] for r in ex.store.outputs["quarantine"]] == ["unparseable_event_time"]
    assert result.metrics.accounted()


def test_fingerprint_is_stable_across_instances_and_sensitive_to_semantics():
    from transcripts.first_rules import Mean
    from windowing.core.aggregates import UserAggregate

    def make(lateness="0s"):
        return base().allowed_lateness(lateness).aggregate(m=UserAggregate(Mean(), ("amount",), "double"))

    assert make().fingerprint() == make().fingerprint()      # a new Mean() object, same semantics
    assert make().fingerprint() != make("1s").fingerprint()
