"""Every built-in part has its Spark form beside its reference form (no Spark session needed).

A built-in trigger has a DataFrame plan on some window family (``plan_registry.PLANS``), a
built-in assigner a window family that has plans, a built-in aggregate a registered Spark form and a
job-file name. A new part that forgets its Spark form fails here, not in a transcript on Spark.
"""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from windowing.core.aggregates import AGGREGATES, BUILTIN_AGGREGATES, Count, Reduce, Sum, UserAggregate  # noqa: E402
from windowing.core.assigners import (BUILTIN_ASSIGNERS, CumulativeEventTimeWindows, EventTimeSessionWindows,  # noqa: E402
                                      GlobalWindows,
                                      ProcessingTimeSessionWindows, SlidingEventTimeWindows,
                                      SlidingProcessingTimeWindows, TumblingEventTimeWindows,
                                      TumblingProcessingTimeWindows)
from windowing.core.registry import JOB_AGGREGATES, JOB_TRIGGERS, JOB_WINDOW_TYPES  # noqa: E402
from windowing.core.sinks import MODES  # noqa: E402
from windowing.core.triggers import (BUILTIN_TRIGGERS, ContinuousEventTimeTrigger,  # noqa: E402
                                     ContinuousProcessingTimeTrigger, CountTrigger, DeltaTrigger,
                                     EarlyLateEventTimeTrigger, EventTimeTrigger, NeverTrigger,
                                     ProcessingTimeTrigger, PurgingTrigger)
from windowing.spark.plans import aggregates as spark_aggregates  # noqa: E402
from windowing.spark.plans import registry as plan_registry  # noqa: E402
from windowing.spark.plans import trigger_rules  # noqa: E402
from windowing.spark.plans import window_geometry  # noqa: E402
from windowing.spark.state.output_modes import SinkMode, sink_mode  # noqa: E402

TRIGGERS = [EventTimeTrigger(), CountTrigger(2), NeverTrigger(), ProcessingTimeTrigger(),
            ContinuousEventTimeTrigger(10), ContinuousProcessingTimeTrigger(10),
            DeltaTrigger(1.0, value_column="v"), EarlyLateEventTimeTrigger(early_every_n=2)]
ASSIGNERS = [TumblingEventTimeWindows.of(10), SlidingEventTimeWindows.of(10, 5), CumulativeEventTimeWindows.of(10, 5),
             GlobalWindows(),
             TumblingProcessingTimeWindows.of(10), SlidingProcessingTimeWindows.of(10, 5),
             EventTimeSessionWindows.with_gap(5), ProcessingTimeSessionWindows.with_gap(5)]


def test_the_lists_here_cover_every_builtin_part():
    assert {type(t) for t in TRIGGERS} | {PurgingTrigger} == set(BUILTIN_TRIGGERS)
    assert {type(a) for a in ASSIGNERS} == set(BUILTIN_ASSIGNERS)


@pytest.mark.parametrize("trigger", TRIGGERS, ids=lambda t: type(t).__name__)
def test_every_builtin_trigger_has_a_plan(trigger):
    rule = plan_registry.trigger_rule(trigger)
    assert rule is not None, trigger
    plans = [plan for (family, r), plan in plan_registry.PLANS.items() if r is rule]
    assert plans, f"{rule} has no plan on any window family"
    for plan in plans:   # a plan that reads the trigger's parameters runs them as a rule set
        if plan.takes_trigger:
            assert isinstance(plan.rules, type) and issubclass(plan.rules, trigger_rules.TriggerRules), plan.name
    # PurgingTrigger is the same plan, purging
    purging = plan_registry.trigger_rule(PurgingTrigger(trigger).nested)
    assert purging is rule


@pytest.mark.parametrize("assigner", ASSIGNERS, ids=lambda a: type(a).__name__)
def test_every_builtin_assigner_has_a_window_family_with_plans(assigner):
    family = plan_registry.window_family(assigner)
    assert family is not None, assigner
    assert any(f is family for f, _ in plan_registry.PLANS), family


def test_every_registered_part_is_a_builtin_part_with_its_spark_form():
    """What job files name (window types, triggers, aggregates) and what the plan registry keys on
    (window families, trigger rules) are built-in parts, each with its Spark form: a window
    assigner its geometry and a family with plans, a trigger its rule, every family and every rule
    a plan."""
    assert set(JOB_WINDOW_TYPES.classes) <= set(BUILTIN_ASSIGNERS)
    assert set(JOB_TRIGGERS.classes) <= set(BUILTIN_TRIGGERS)
    assert set(plan_registry._FAMILIES) == set(BUILTIN_ASSIGNERS)
    assert set(plan_registry._FAMILIES.values()) == set(plan_registry.WindowFamily)
    assert {family for family, _ in plan_registry.PLANS} == set(plan_registry.WindowFamily)
    assert {rule for _, rule in plan_registry.PLANS} == set(plan_registry.TriggerRule)
    for cls in BUILTIN_ASSIGNERS:
        assert window_geometry.geometry_class(cls) is not None, cls.__name__
    assert set(JOB_AGGREGATES.values()) <= {cls for cls in AGGREGATES if spark_aggregates.form_of_class(cls)}


@pytest.mark.parametrize("assigner", ASSIGNERS, ids=lambda a: type(a).__name__)
def test_every_geometry_with_slices_builds_windows_from_them(assigner):
    """A family that puts an element in several windows has its own slices and its own way from
    slice partials to window partials (the base class refuses both); one window per element has
    its window columns instead."""
    geometry = window_geometry.geometry_class(type(assigner))
    base = window_geometry.WindowGeometry
    if geometry.slices:
        for method in ("slice_start", "window_partials", "windows", "in_live_window", "assign"):
            assert getattr(geometry, method) is not getattr(base, method), (geometry.__name__, method)
    else:
        assert geometry.window is not base.window, geometry.__name__


def test_every_rule_set_overrides_a_phase():
    """A rule set that changed nothing of the base would be a trigger that never fires."""
    phases = ("pre_rows_fire", "timer_after_rows", "after_rows_firings", "timer_after_firings")
    rule_sets = {plan.rules for plan in plan_registry.PLANS.values() if plan.rules is not None}
    assert len(rule_sets) == 6, rule_sets
    for rules in rule_sets:
        overridden = [p for p in phases if getattr(rules, p) is not getattr(trigger_rules.TriggerRules, p)]
        assert overridden or rules.one_counter, rules.__name__


@pytest.mark.parametrize("cls", AGGREGATES, ids=lambda c: c.__name__)
def test_every_aggregate_has_a_spark_form(cls):
    form = spark_aggregates.form_of_class(cls)
    assert isinstance(form, spark_aggregates.AggregateForm)


def test_every_builtin_aggregate_has_a_job_name_the_job_file_reads():
    from pipelines.job import parse_aggregate
    assert set(JOB_AGGREGATES.values()) == set(BUILTIN_AGGREGATES)
    for name, cls in JOB_AGGREGATES.items():
        assert isinstance(parse_aggregate("a", f"{name}(x)"), cls)
    assert parse_aggregate("n", "count()") == Count()
    assert parse_aggregate("s", " sum ( amount ) ") == Sum("amount")
    with pytest.raises(ValueError, match=r"aggregate a = 'median\(x\)' is not understood; .*'collect\(x\)'"):
        parse_aggregate("a", "median(x)")
    with pytest.raises(ValueError, match=r"needs a column, e.g. 'sum\(amount\)'"):
        parse_aggregate("a", "sum()")


def test_an_aggregate_without_a_spark_form_is_refused_by_name():
    class Median:
        def __repr__(self):
            return "Median()"
    with pytest.raises(ValueError, match=r"aggregate Median\(\) has no Spark form; these have one: Avg, Collect"):
        spark_aggregates.form_of(Median())


def test_a_subclass_of_a_builtin_aggregate_keeps_its_spark_form():
    class MySum(Sum):
        pass
    assert spark_aggregates.form_of(MySum("v")) is spark_aggregates.form_of(Sum("v"))
    assert spark_aggregates.form_of_class(UserAggregate) is not spark_aggregates.form_of_class(Reduce)


def test_every_output_mode_is_an_object_that_knows_what_it_writes():
    from windowing.core.records import Pane
    from windowing.core.sinks import MODES, output_mode
    from windowing.core.spec import OUTPUT_MODES
    assert set(MODES) == set(OUTPUT_MODES)
    early = Pane(("a",), 0, 10, {"n": 1}, 0, "EARLY", False, 5, 0)
    final = Pane(("a",), 0, 10, {"n": 2}, 1, "ON_TIME", True, 9, 1)
    assert output_mode("append").written([early, final]) == [early, final]
    assert output_mode("final").written([early, final]) == [final]
    assert output_mode("upsert").holds([early, final]) == [final]
    assert output_mode(None) is MODES["append"]
    with pytest.raises(ValueError, match=r"output mode 'replace' is not one of \('append', 'upsert', 'final'\)"):
        output_mode("replace")


@pytest.mark.parametrize("name", sorted(MODES))
def test_every_output_mode_has_its_spark_form(name):
    """An output mode's Spark form writes what the core mode says a sink holds: one held table per
    mode, and ``final`` counts the panes emitted apart (its write keeps only some)."""
    mode = sink_mode(name)
    assert mode.core is MODES[name] and mode.name == name
    assert (type(mode).results is not SinkMode.results) == (not MODES[name].writes_every_pane)
