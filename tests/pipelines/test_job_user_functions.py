"""Job files name user triggers, evictors and process functions by import path (no Spark needed)."""
from __future__ import annotations

import pytest

from examples.triggers import EveryNthLarge
from pipelines.job import build_spec
from windowing.core.evictors import CountEvictor, TimeEvictor

SOURCE = {"key": "user_id", "event_time": "event_time"}
AGGS = {"n": "count()"}


def test_user_trigger_with_arguments():
    spec = build_spec(SOURCE, {"size": "1 minute", "trigger": "examples.triggers:EveryNthLarge",
                               "trigger_args": {"n": 2, "column": "item_count", "threshold": 3}}, AGGS)
    assert spec.trigger == EveryNthLarge(2, "item_count", 3)
    assert "item_count" in spec.input_columns   # the trigger's column is read from the input


def test_evictors_and_process_function():
    spec = build_spec(SOURCE, {"size": "1 minute", "evictor": "time:10 seconds", "evict_after": True}, AGGS)
    assert spec.evictor == TimeEvictor(10_000, do_evict_after=True)
    assert build_spec(SOURCE, {"type": "count", "size": 5, "evictor": "count:3"}, AGGS).evictor == CountEvictor(3)
    spec = build_spec(SOURCE, {"size": "1 minute"}, {}, {"function": "transcripts.model:TopTwo",
                                                        "output_schema": "rank int, v bigint, end bigint",
                                                        "columns": ["v"]})
    assert spec.process_function.output_columns == ("rank", "v", "end") and spec.aggregates == ()


@pytest.mark.parametrize("window, process, message", [
    ({"trigger": "no_such_module:Thing"}, None, "cannot be imported"),
    ({"trigger": "examples.triggers:Missing"}, None, "cannot be imported"),
    ({"trigger": "examples.triggers:EveryNthLarge", "trigger_args": {"m": 1}}, None, "does not take the arguments"),
    ({"trigger": "examples.triggers:EveryNthLarge", "trigger_args": {"n": 0}}, None, "n must be a positive int"),
    ({"trigger": "every-so-often"}, None, "import path 'package.module:Name' of a user trigger"),
    ({"evictor": "sometimes"}, None, r"evictor 'sometimes' is not one of \['count:<n>', 'time:<duration>', 'delta'\]"),
    ({}, {"function": "transcripts.model:TopTwo"}, "needs function"),
])
def test_bad_user_function_references_name_the_bad_value(window, process, message):
    with pytest.raises(ValueError, match=message):
        build_spec(SOURCE, {"size": "1 minute", **window}, {} if process else AGGS, process)
