"""The window spec: one frozen description of a windowed job, and its fluent builder.

Reads like a Flink job::

    spec = (WindowSpecBuilder()
            .key_by("user_id")
            .event_time("event_time", max_out_of_orderness="10 seconds")
            .window(TumblingEventTimeWindows.of("1 minute"))
            .allowed_lateness("30 seconds")
            .side_output_late_data()
            .aggregate(items=Sum("item_count"), purchases=Count()))

The spec is validated when it is built; :meth:`WindowSpec.check_schema`
validates it against the columns of an input.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from windowing.core.aggregates import (
    AGGREGATES, Aggregate, AggregateFunction, Avg, Count, Max, Min, Reduce, Sum, UserAggregate)
from windowing.core.assigners import (
    BUILTIN_ASSIGNERS, MERGING_ASSIGNERS, EventTimeSessionWindows, GapFromColumn, GlobalWindows, SlidingEventTimeWindows, TumblingEventTimeWindows, WindowAssigner)
from windowing.core.evictors import BUILTIN_EVICTORS, CountEvictor, Evictor
from windowing.core.functions import Process
from windowing.core.input_policy import DEFAULT_INPUT_POLICY, InputPolicy
from windowing.core.time import parse_duration_ms, require_picklable
from windowing.core.watermarks import (
    DEFAULT_WATERMARK_STRATEGY, WATERMARK_STRATEGIES, ExplicitWatermarks, WatermarkStrategy)
from windowing.core.triggers import (
    CountTrigger, EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, PurgingTrigger, Trigger,
    can_merge)

ACCUMULATING = "accumulating"
DISCARDING = "discarding"

APPEND = "append"
UPSERT = "upsert"
FINAL = "final"
OUTPUT_MODES = (APPEND, UPSERT, FINAL)
"""Sink output modes (see :mod:`windowing.core.sinks`): every pane; the latest pane per
window (merged-away sessions removed); only final panes."""

# The fields of the foundation spec: the fingerprint of a spec that uses none of the later
# features must not change, or resuming a job written before them would be refused.
_FOUNDATION_FIELDS = ("key_columns", "event_time_column", "max_out_of_orderness_ms", "assigner", "trigger",
                      "aggregates", "allowed_lateness_ms", "evictor", "late_output")
# Every setting in the order the fingerprint has always listed them (the input policy's
# settings were fields of the spec once): the same spec keeps the same fingerprint.
_FINGERPRINT_ORDER = _FOUNDATION_FIELDS + (
    "process_function", "ingestion_time_column", "idle_timeout_ms", "source_column", "sources", "output_mode",
    "max_event_time_skew_ms", "value_bounds", "dedup_column", "dedup_horizon_ms", "watermark_strategy",
    "nullable_bounded")

TIMESTAMP_TYPES = frozenset({"timestamp", "timestamp_ntz"})
LONG_TIME_TYPES = frozenset({"bigint", "int", "long", "integer"})
NUMERIC_TYPES = frozenset({"tinyint", "smallint", "int", "integer", "bigint", "long", "float",
                           "double", "decimal", "byte", "short"})
RESERVED_OUTPUT_COLUMNS = frozenset({
    "window_start_ms", "window_end_ms", "window_start", "window_end", "pane_index", "timing",
    "is_final", "watermark_ms", "batch_id", "end_bucket", "contents_count", "trigger_count",
    "elements_total", "last_batch_id", "elem_index", "event_time_ms", "reason", "supersedes", "emitted"})


@dataclass(frozen=True)
class WindowSpec:
    """Everything that defines a windowed operator's semantics.

    Attributes:
        key_columns: the ``keyBy`` columns; empty for non-keyed windows
            (Flink's ``windowAll``: every element has the key ``()``).
        event_time_column: a timestamp column, or a long of epoch
            milliseconds (may be None for processing-time windows).
        max_out_of_orderness_ms: watermark delay; ``wm = max_seen_ts - delay - 1``
            (with ``watermark_strategy`` ``EventTimeWatermarks(n)``: the n-th largest event time).
        assigner: a window assigner: a built-in one or a user one
            (:class:`~windowing.core.assigners.WindowAssigner`, per-key path only).
        trigger: the effective trigger (already wrapped in ``PurgingTrigger``
            when the accumulation mode is discarding).
        evictor: an optional evictor, built in or a user one
            (:class:`~windowing.core.evictors.Evictor`); count windows with a slide use one.
        allowed_lateness_ms: a window's state lives until ``wm >= max_ts + L``.
        aggregates: ``(output name, aggregate)`` pairs, in output order
            (empty when ``process_function`` is set).
        late_output: send late elements to the late-data table (otherwise
            they are counted as dropped in the batch metrics).
        process_function: a :class:`~windowing.core.functions.Process`
            (a process window function that sees all elements) instead of
            aggregates.
        output_mode: ``append`` (every pane), ``upsert`` (latest pane per
            window, merged-away sessions removed) or ``final`` (final panes
            only); see :mod:`windowing.core.sinks`.
        input: the input policy (:class:`~windowing.core.input_policy.InputPolicy`):
            processing time, watermark strategy, idleness and sources, and the
            checks that quarantine rows before windowing.
    """

    key_columns: tuple[str, ...]
    event_time_column: str
    max_out_of_orderness_ms: int
    assigner: WindowAssigner
    trigger: Any
    aggregates: tuple[tuple[str, Aggregate], ...]
    allowed_lateness_ms: int = 0
    evictor: Evictor | None = None
    late_output: bool = True
    process_function: Process | None = None
    output_mode: str = APPEND
    input: InputPolicy = DEFAULT_INPUT_POLICY

    def __post_init__(self) -> None:
        if not isinstance(self.key_columns, tuple) or not all(isinstance(c, str) and c for c in self.key_columns):
            raise ValueError(f"key_by needs column names (none for window_all), got {self.key_columns!r}")
        for column in self.key_columns:
            if column in RESERVED_OUTPUT_COLUMNS or column.startswith("__"):
                raise ValueError(f"key column {column!r} clashes with an output column of that name; "
                                 f"rename it (reserved: {sorted(RESERVED_OUTPUT_COLUMNS)} and names starting '__')")
        _check_part(self.assigner, WindowAssigner, BUILTIN_ASSIGNERS, "window assigner", _ASSIGNER_NEEDS)
        if self.event_time_column is None:
            if self.assigner.is_event_time:
                raise ValueError(f"{self.assigner!r} is an event-time assigner: call event_time(column, ...)")
        elif not isinstance(self.event_time_column, str) or not self.event_time_column:
            raise ValueError(f"event_time column must be a column name, got {self.event_time_column!r}")
        if not isinstance(self.max_out_of_orderness_ms, int) or self.max_out_of_orderness_ms < 0:
            raise ValueError(
                f"max_out_of_orderness must be >= 0 ms, got {self.max_out_of_orderness_ms!r}")
        if not isinstance(self.allowed_lateness_ms, int) or self.allowed_lateness_ms < 0:
            raise ValueError(f"allowed_lateness must be >= 0 ms, got {self.allowed_lateness_ms!r}")
        if not isinstance(self.trigger, Trigger):
            raise ValueError(f"trigger {self.trigger!r} does not implement the Trigger protocol")
        if self.is_merging and not can_merge(self.trigger):
            raise ValueError(f"{self.assigner!r} merges windows but trigger {self.trigger!r} cannot merge "
                             f"(its can_merge() is not true); use a trigger that supports on_merge")
        if self.evictor is not None:
            _check_part(self.evictor, Evictor, BUILTIN_EVICTORS, "evictor", "evict(elements) and do_evict_after")
        if self.process_function is not None:
            if not isinstance(self.process_function, Process):
                raise ValueError(f"process_function must be a Process(...), got {self.process_function!r}")
            if self.aggregates:
                raise ValueError("a spec has either aggregates or a process function, not both")
            for name in self.process_function.output_columns:
                if name in RESERVED_OUTPUT_COLUMNS or name in self.key_columns or name.startswith("__"):
                    raise ValueError(f"process output column {name!r} clashes with an output column of that name")
        elif not self.aggregates:
            raise ValueError("aggregate() needs at least one aggregate, e.g. total=Sum('amount')")
        if not isinstance(self.input, InputPolicy):
            raise ValueError(f"input must be an InputPolicy, got {self.input!r}")
        if self.output_mode not in OUTPUT_MODES:
            raise ValueError(f"output_mode {self.output_mode!r} is not one of {OUTPUT_MODES}")
        names = [name for name, _ in self.aggregates]
        for name in names:
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"aggregate output name {name!r} must be an identifier")
            if name in RESERVED_OUTPUT_COLUMNS or name in self.key_columns or name.startswith("__"):
                raise ValueError(f"aggregate output name {name!r} clashes with an output column of the same name")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"aggregate output names must be unique; repeated: {duplicates}")
        if isinstance(self.input.watermark_strategy, ExplicitWatermarks) and self.max_out_of_orderness_ms:
            raise ValueError(f"explicit watermarks ignore the event times, so max_out_of_orderness "
                             f"{self.max_out_of_orderness_ms} ms has no effect; leave it at 0")

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        """Columns that must hold numbers: those of Sum/Avg and those with declared bounds."""
        cols = [agg.column for _, agg in self.aggregates if isinstance(agg, (Sum, Avg))]
        cols.extend(column for column, _, _ in self.input.value_bounds)
        return tuple(dict.fromkeys(cols))

    @property
    def is_event_time(self) -> bool:
        return self.assigner.is_event_time

    @property
    def is_merging(self) -> bool:
        return isinstance(self.assigner, MERGING_ASSIGNERS)

    @property
    def needs_buffers(self) -> bool:
        """Windows keep their elements (not accumulators): an evictor or a process function needs them."""
        return self.evictor is not None or self.process_function is not None

    @property
    def input_columns(self) -> tuple[str, ...]:
        cols = list(self.key_columns)
        if self.event_time_column is not None:
            cols.append(self.event_time_column)
        for _, agg in self.aggregates:
            cols.extend(agg.columns)
        if self.process_function is not None:
            cols.extend(self.process_function.columns)
        for part in (self.assigner, self.trigger, self.evictor):
            cols.extend(getattr(part, "columns", ()) or ())
        if isinstance(self.trigger, PurgingTrigger):
            cols.extend(getattr(self.trigger.nested, "columns", ()) or ())
        cols.extend(self.input.timing_columns)
        return tuple(dict.fromkeys(cols))

    @property
    def required_columns(self) -> tuple[str, ...]:
        """Every column an input must have: the operator's inputs plus the checked ones."""
        return tuple(dict.fromkeys(self.input_columns + self.input.checked_columns))

    def _settings(self) -> list[tuple[str, Any, Any]]:
        """``(name, value, default)`` of every setting, the input policy's included, in fingerprint order."""
        own = {f.name: f for f in fields(self)}
        policy = {f.name: f for f in fields(InputPolicy)}
        return [(name, getattr(self, name), own[name].default) if name in own
                else (name, getattr(self.input, name), policy[name].default) for name in _FINGERPRINT_ORDER]

    def fingerprint(self) -> str:
        """A stable hash of the semantics; a resumed job must present the same one.

        Object addresses in reprs (user aggregate functions, user triggers) are
        left out, so the same spec built in another process has the same hash.
        Fields added after the foundation are left out while at their
        defaults, so a spec that does not use them keeps its old fingerprint.
        """
        parts = [f"{name}={value!r}" for name, value, default in self._settings()
                 if name in _FOUNDATION_FIELDS or value != default]
        stable = re.sub(r" at 0x[0-9a-fA-F]+", "", f"WindowSpec({', '.join(parts)})")
        return hashlib.sha256(stable.encode()).hexdigest()[:16]

    def describe(self) -> str:
        aggs = ", ".join(f"{n}={a!r}" for n, a in self.aggregates)
        if self.process_function is not None:
            aggs = f"process {self.process_function!r}"
        text = (f"key_by{self.key_columns} event_time={self.event_time_column} "
                f"delay={self.max_out_of_orderness_ms}ms {self.assigner!r} trigger={self.trigger!r} "
                f"evictor={self.evictor!r} lateness={self.allowed_lateness_ms}ms aggregates: {aggs}")
        extra = [f"{name}={value!r}" for name, value, default in self._settings()
                 if name not in _FOUNDATION_FIELDS and name != "process_function" and value != default]
        return text + (" " + " ".join(extra) if extra else "")

    def check_schema(self, column_types: Mapping[str, str]) -> None:
        """Validate against an input's columns (name -> Spark simple type name).

        Raises:
            ValueError: naming the unknown column and the columns that exist,
                or the event-time column whose type is neither timestamp nor long.
        """
        available = sorted(column_types)
        for column in self.required_columns:
            if column not in column_types:
                raise ValueError(f"column {column!r} is not in the input; available columns: {available}")
        if self.event_time_column is None:
            return
        et_type = column_types[self.event_time_column].split("(")[0]
        if et_type not in TIMESTAMP_TYPES | LONG_TIME_TYPES | {"string"}:
            raise ValueError(
                f"event-time column {self.event_time_column!r} has type {et_type}; it must be a timestamp, "
                f"a bigint of epoch milliseconds, or a string parseable as a timestamp")
        for name, agg in self.aggregates:
            if isinstance(agg, (Sum, Avg)):
                t = column_types[agg.column].split("(")[0]
                if t not in NUMERIC_TYPES:
                    raise ValueError(
                        f"aggregate {name}={agg!r} needs a numeric column but {agg.column!r} is {t}")
        for column, _, _ in self.input.value_bounds:
            t = column_types[column].split("(")[0]
            if t not in NUMERIC_TYPES:
                raise ValueError(f"column {column!r} has declared value bounds, so it must be numeric; "
                                 f"it is {t}")


_ASSIGNER_NEEDS = "is_event_time and assign(ts_ms, row)"


def _check_part(part: Any, protocol: type, builtin: tuple[type, ...], what: str, needs: str) -> None:
    """``part`` implements ``protocol``; one that is not built in must also pickle (executors ship it).

    Raises:
        ValueError: naming the part, what it lacks and the built-in ones.
    """
    if not isinstance(part, protocol):
        raise ValueError(f"{what} {part!r} is not one of {[c.__name__ for c in builtin]} nor a user {what} "
                         f"(one with {needs})")
    if not isinstance(part, builtin):
        require_picklable(part, f"user {what}")


def _resolve(value: Any, name: str) -> int:
    return parse_duration_ms(value, name)


@dataclass(frozen=True)
class WindowSpecBuilder:
    """Immutable fluent builder: every call returns a new builder.

    ``key_by | window_all -> event_time | processing_time -> window |
    count_window -> [trigger] [evictor] [allowed_lateness]
    [side_output_late_data] [accumulating | discarding] [watermark_strategy]
    [watermark_idleness]
    [watermark_sources] [output_mode] -> aggregate | reduce | process``. The
    last call validates and returns the :class:`WindowSpec`.
    """

    _keys: tuple[str, ...] | None = None
    _event_time: str | None = None
    _delay_ms: int = 0
    _assigner: Any = None
    _trigger: Any = None
    _evictor: Any = None
    _lateness_ms: int = 0
    _late_output: bool = False
    _mode: str | None = None
    _ingestion: str | None = None
    _idle_ms: int | None = None
    _source_column: str | None = None
    _sources: tuple[str, ...] = ()
    _output_mode: str = APPEND
    _skew_ms: int | None = None
    _bounds: tuple = ()
    _nullable_bounded: tuple = ()
    _dedup: tuple[str, int] | None = None
    _watermark: WatermarkStrategy = DEFAULT_WATERMARK_STRATEGY
    _user_purging: bool = False

    def key_by(self, *columns: str) -> "WindowSpecBuilder":
        """The key columns; with none, the windows are non-keyed (as :meth:`window_all`)."""
        return replace(self, _keys=tuple(columns))

    def window_all(self) -> "WindowSpecBuilder":
        """Non-keyed windows (Flink's ``windowAll``): one window set for the whole stream."""
        return replace(self, _keys=())

    def event_time(self, column: str, max_out_of_orderness: int | str = 0) -> "WindowSpecBuilder":
        return replace(self, _event_time=column,
                       _delay_ms=_resolve(max_out_of_orderness, "max_out_of_orderness"))

    def processing_time(self, ingestion_time_column: str | None = None) -> "WindowSpecBuilder":
        """Take each row's processing time from ``ingestion_time_column`` (a backfill's replay).

        Without a column, a row's processing time is the operator's clock
        when its batch arrives (``process_batch(..., processing_time_ms=)``).
        """
        return replace(self, _ingestion=ingestion_time_column)

    def window(self, assigner: WindowAssigner) -> "WindowSpecBuilder":
        _check_part(assigner, WindowAssigner, BUILTIN_ASSIGNERS, "window assigner", _ASSIGNER_NEEDS)
        return replace(self, _assigner=assigner)

    def count_window(self, size: int, slide: int | None = None) -> "WindowSpecBuilder":
        """Flink's ``countWindow``: tumbling (purge every ``size``) or sliding.

        Tumbling: ``GlobalWindows + PurgingTrigger(CountTrigger(size))``.
        Sliding: ``GlobalWindows + CountEvictor(size) + CountTrigger(slide)``.
        """
        if slide is None:
            return replace(self, _assigner=GlobalWindows(), _trigger=PurgingTrigger(CountTrigger(size)),
                           _user_purging=False)
        evictor = CountEvictor(size)
        return replace(self, _assigner=GlobalWindows(), _trigger=CountTrigger(slide), _evictor=evictor,
                       _user_purging=False)

    def trigger(self, trigger: Trigger) -> "WindowSpecBuilder":
        return replace(self, _trigger=trigger, _user_purging=isinstance(trigger, PurgingTrigger))

    def evictor(self, evictor: Evictor) -> "WindowSpecBuilder":
        return replace(self, _evictor=evictor)

    def allowed_lateness(self, lateness: int | str) -> "WindowSpecBuilder":
        return replace(self, _lateness_ms=_resolve(lateness, "allowed_lateness"))

    def side_output_late_data(self, enabled: bool = True) -> "WindowSpecBuilder":
        return replace(self, _late_output=enabled)

    def max_event_time_skew(self, skew: int | str | None) -> "WindowSpecBuilder":
        """Quarantine rows whose event time is more than ``skew`` ahead of processing time."""
        return replace(self, _skew_ms=None if skew is None else _resolve(skew, "max_event_time_skew"))

    def value_bounds(self, column: str, min_value: float | None = None,
                     max_value: float | None = None, nullable: bool = False) -> "WindowSpecBuilder":
        """Quarantine rows whose ``column`` is outside ``[min_value, max_value]``, or null unless ``nullable``."""
        return replace(self, _bounds=self._bounds + ((column, min_value, max_value),),
                       _nullable_bounded=self._nullable_bounded + ((column,) if nullable else ()))

    def deduplicate(self, event_id_column: str, horizon: int | str) -> "WindowSpecBuilder":
        """Quarantine repeated event ids seen within ``horizon`` of event time behind the watermark."""
        return replace(self, _dedup=(event_id_column, _resolve(horizon, "dedup_horizon")))

    def accumulating(self) -> "WindowSpecBuilder":
        return replace(self, _mode=ACCUMULATING)

    def discarding(self) -> "WindowSpecBuilder":
        return replace(self, _mode=DISCARDING)

    def watermark_strategy(self, strategy: WatermarkStrategy) -> "WindowSpecBuilder":
        """Where the watermark comes from: ``EventTimeWatermarks(confirming_rows=n)`` (the default, n = 1)
        or ``ExplicitWatermarks()`` (only ``process_batch(watermark_ms=...)`` and the flush move it)."""
        if not isinstance(strategy, WATERMARK_STRATEGIES):
            raise ValueError(f"watermark_strategy() needs one of {[s.__name__ for s in WATERMARK_STRATEGIES]}, "
                             f"got {strategy!r}")
        return replace(self, _watermark=strategy)

    def explicit_watermarks(self) -> "WindowSpecBuilder":
        """Only explicit watermarks move the watermark (Flink's ``noWatermarks()`` plus manual emission)."""
        return self.watermark_strategy(ExplicitWatermarks())

    def watermark_idleness(self, timeout: int | str) -> "WindowSpecBuilder":
        """A source with no element for ``timeout`` of processing time is idle (see WatermarkTracker)."""
        return replace(self, _idle_ms=_resolve(timeout, "idle timeout"))

    def watermark_sources(self, column: str, *sources: str) -> "WindowSpecBuilder":
        """Several sources feed the operator: rows name theirs in ``column``; the watermark is their minimum."""
        return replace(self, _source_column=column, _sources=tuple(sources))

    def output_mode(self, mode: str) -> "WindowSpecBuilder":
        """``append`` (every pane), ``upsert`` (latest pane per window) or ``final`` (final panes only)."""
        return replace(self, _output_mode=mode)

    def aggregate(self, *positional: Aggregate | AggregateFunction, **named: Aggregate) -> WindowSpec:
        pairs = [(agg.default_name(), agg) for agg in positional] + list(named.items())
        for name, agg in pairs:
            if not isinstance(agg, AGGREGATES):
                raise ValueError(f"aggregate {name}={agg!r} is not an aggregate; use Sum, Count, Min, Max, "
                                 f"Avg, First, Last, Collect, UserAggregate or Reduce")
        return self._build(tuple(pairs), None)

    def reduce(self, function: Any, columns: str | tuple[str, ...], result_type: str,
               name: str = "reduce") -> WindowSpec:
        """Flink's ``reduce``: the window's value is ``function.reduce`` folded over the column values."""
        return self._build(((name, Reduce(function, columns, result_type, name)),), None)

    def process(self, function: Any, output_schema: str, columns: str | tuple[str, ...] = (),
                as_pandas: bool = False) -> WindowSpec:
        """A process window function that sees all elements of a firing window (see functions.py)."""
        return self._build((), Process(function, output_schema, columns, as_pandas))

    def _build(self, aggregates, process) -> WindowSpec:
        if self._keys is None:
            raise ValueError("call key_by(column, ...) (or window_all()) before aggregate()")
        if self._event_time is None and (self._assigner is None or self._assigner.is_event_time
                                         or isinstance(self._assigner, GlobalWindows)):
            raise ValueError("call event_time(column, max_out_of_orderness) before aggregate()")
        if self._assigner is None:
            raise ValueError("call window(assigner) or count_window(size) before aggregate()")
        trigger = self._trigger
        if trigger is None:
            if isinstance(self._assigner, GlobalWindows):
                trigger = NeverTrigger()
            else:
                trigger = EventTimeTrigger() if self._assigner.is_event_time else ProcessingTimeTrigger()
        if self._mode == DISCARDING and not isinstance(trigger, PurgingTrigger):
            trigger = PurgingTrigger(trigger)
        if self._mode == ACCUMULATING and isinstance(trigger, PurgingTrigger):
            if self._user_purging:
                raise ValueError(f"accumulating() conflicts with trigger {trigger!r}: a PurgingTrigger discards "
                                 f"the window's contents at every firing; drop accumulating() for discarding "
                                 f"panes, or pass the trigger without PurgingTrigger ({trigger.nested!r}) for "
                                 f"accumulating panes")
            raise ValueError(f"accumulating() conflicts with count_window({trigger.nested.count}): a tumbling "
                             f"count window purges every {trigger.nested.count} elements (Flink's countWindow); "
                             f"for accumulating panes use window(GlobalWindows()).trigger("
                             f"CountTrigger({trigger.nested.count})).accumulating()")
        return WindowSpec(
            key_columns=self._keys, event_time_column=self._event_time,
            max_out_of_orderness_ms=self._delay_ms, assigner=self._assigner, trigger=trigger,
            aggregates=aggregates, allowed_lateness_ms=self._lateness_ms, evictor=self._evictor,
            late_output=self._late_output, process_function=process, output_mode=self._output_mode,
            input=self._input_policy())

    def _input_policy(self) -> InputPolicy:
        return InputPolicy(
            ingestion_time_column=self._ingestion, idle_timeout_ms=self._idle_ms, source_column=self._source_column,
            sources=self._sources, max_event_time_skew_ms=self._skew_ms, value_bounds=self._bounds,
            nullable_bounded=self._nullable_bounded,
            dedup_column=self._dedup[0] if self._dedup else None,
            dedup_horizon_ms=self._dedup[1] if self._dedup else None, watermark_strategy=self._watermark)
