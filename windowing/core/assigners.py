"""Window assigners: which windows an element with timestamp ``ts`` belongs to.

Formulas (all integer milliseconds, floor-mod so that timestamps before 1970
and negative offsets are right):

* tumbling: ``start = ts - floor_mod(ts - offset, size)``, window ``[start, start + size)``.
* sliding: ``last_start = ts - floor_mod(ts - offset, slide)``; the windows are
  ``[s, s + size)`` for ``s = last_start, last_start - slide, ...`` while
  ``s > ts - size``. With ``slide > size`` an element may fall in a gap and
  belong to no window.
* global: the one :data:`GLOBAL_WINDOW`.
* session: ``[ts, ts + gap)`` per element, merged with the key's open
  sessions it intersects or touches (a *merging* assigner; the operator
  merges, see :func:`merge_windows`).

Every assigner has ``is_event_time``; processing-time assigners assign by the
element's processing time. ``assign(ts_ms, row)`` takes the row for dynamic
session gaps (the others ignore it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Protocol, runtime_checkable

from windowing.core.config_values import JobForm, require
from windowing.core.time import floor_mod, parse_duration_ms, require_picklable
from windowing.core.windows import GLOBAL_WINDOW, GlobalWindow, TimeWindow, Window


@runtime_checkable
class WindowAssigner(Protocol):
    """What every assigner has (Flink's ``WindowAssigner``); a user assigner implements it.

    * ``is_event_time``: True to assign by event time (windows fire and are
      cleaned up as the watermark passes them; elements behind it are late),
      False to assign by processing time.
    * ``assign(ts_ms, row)``: the windows of an element with timestamp
      ``ts_ms`` (its event or processing time; ``row`` is the element, a
      mapping of column to value): a tuple of :class:`TimeWindow` (or the
      :data:`GLOBAL_WINDOW`), possibly empty. The result must depend on
      ``ts_ms`` and ``row`` only.
    * optional ``columns``: the input columns ``assign`` reads from ``row``
      (checked against the input's schema).

    A user assigner must be a module-level frozen dataclass (or another
    picklable class with value equality and a stable repr): the spec's
    fingerprint, its equality and Spark's pickling rely on that. It runs on
    the per-key path (the reference model per key); the built-in assigners
    have DataFrame plans. A user assigner does not merge windows.
    """

    @property
    def is_event_time(self) -> bool: ...

    def assign(self, ts_ms: int, row: Mapping[str, Any] | None = None) -> tuple[Window, ...]: ...


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive number of milliseconds, got {value!r}")


def _offset_within(name: str, offset_ms: int, bound_name: str, bound_ms: int) -> None:
    if not isinstance(offset_ms, int) or abs(offset_ms) >= bound_ms:
        raise ValueError(
            f"{name}={offset_ms!r} is invalid: it must satisfy "
            f"-{bound_name} < offset < {bound_name}, i.e. |offset| < {bound_ms} ms")


TUMBLING_KEYS = ("size", "offset")
SLIDING_KEYS = ("size", "slide", "offset")


class _Tumbling:
    """What both tumbling assigners share: ``size_ms`` and ``offset_ms``, checked; built from durations."""

    def __post_init__(self) -> None:
        _positive("size_ms", self.size_ms)
        _offset_within("offset_ms", self.offset_ms, "size", self.size_ms)

    @classmethod
    def of(cls, size: int | str, offset: int | str = 0):
        return cls(parse_duration_ms(size, "size"), parse_duration_ms(offset, "offset"))

    @classmethod
    def from_config(cls, table: Mapping[str, Any]):
        """``size`` and an optional ``offset``."""
        require(table, f"window type {cls.job_form.name!r}", "size")
        return cls.of(table["size"], table.get("offset", 0))


class _Sliding:
    """What both sliding assigners share: ``size_ms``, ``slide_ms`` and ``offset_ms``, checked."""

    def __post_init__(self) -> None:
        _positive("size_ms", self.size_ms)
        _positive("slide_ms", self.slide_ms)
        _offset_within("offset_ms", self.offset_ms, "slide", self.slide_ms)

    @classmethod
    def of(cls, size: int | str, slide: int | str, offset: int | str = 0):
        return cls(parse_duration_ms(size, "size"), parse_duration_ms(slide, "slide"),
                   parse_duration_ms(offset, "offset"))

    @classmethod
    def from_config(cls, table: Mapping[str, Any]):
        """``size``, ``slide`` and an optional ``offset``."""
        require(table, f"window type {cls.job_form.name!r}", "size", "slide")
        return cls.of(table["size"], table["slide"], table.get("offset", 0))


@dataclass(frozen=True)
class TumblingEventTimeWindows(_Tumbling):
    """Fixed-size, non-overlapping event-time windows (Flink's ``TumblingEventTimeWindows``)."""

    job_form: ClassVar[JobForm] = JobForm("tumbling", TUMBLING_KEYS)

    size_ms: int
    offset_ms: int = 0

    @property
    def is_event_time(self) -> bool:
        return True

    def assign(self, ts_ms: int, row=None) -> tuple[TimeWindow, ...]:
        start = ts_ms - floor_mod(ts_ms - self.offset_ms, self.size_ms)
        return (TimeWindow(start, start + self.size_ms),)


@dataclass(frozen=True)
class SlidingEventTimeWindows(_Sliding):
    """Windows of ``size_ms`` starting every ``slide_ms`` (Flink's ``SlidingEventTimeWindows``)."""

    job_form: ClassVar[JobForm] = JobForm("sliding", SLIDING_KEYS)

    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    @property
    def is_event_time(self) -> bool:
        return True

    def assign(self, ts_ms: int, row=None) -> tuple[TimeWindow, ...]:
        last_start = ts_ms - floor_mod(ts_ms - self.offset_ms, self.slide_ms)
        windows = []
        start = last_start
        while start > ts_ms - self.size_ms:
            windows.append(TimeWindow(start, start + self.size_ms))
            start -= self.slide_ms
        return tuple(windows)


CUMULATE_KEYS = ("size", "step", "offset")
"""A job file's keys of a cumulating window: ``size`` is the largest window's, as Flink SQL's ``CUMULATE``."""


@dataclass(frozen=True)
class CumulativeEventTimeWindows:
    """Windows that grow by ``step_ms`` from a common start up to ``max_size_ms``, then start again
    (Flink SQL's ``CUMULATE``): for the start ``s`` aligned to ``max_size_ms`` (plus offset), the
    windows ``[s, s + step)``, ``[s, s + 2 * step)``, ..., ``[s, s + max_size)``. An element at
    ``ts`` is in each of them that ends after ``ts``. ``max_size_ms`` is a whole number of steps."""

    job_form: ClassVar[JobForm] = JobForm("cumulate", CUMULATE_KEYS)

    max_size_ms: int
    step_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _positive("max_size_ms", self.max_size_ms)
        _positive("step_ms", self.step_ms)
        if self.max_size_ms % self.step_ms:
            raise ValueError(f"max_size_ms={self.max_size_ms} must be a whole number of steps "
                             f"(step_ms={self.step_ms})")
        _offset_within("offset_ms", self.offset_ms, "max_size", self.max_size_ms)

    @classmethod
    def of(cls, max_size: int | str, step: int | str, offset: int | str = 0) -> "CumulativeEventTimeWindows":
        return cls(parse_duration_ms(max_size, "max_size"), parse_duration_ms(step, "step"),
                   parse_duration_ms(offset, "offset"))

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> "CumulativeEventTimeWindows":
        """``size`` (the largest window's), ``step`` and an optional ``offset``."""
        require(table, f"window type {cls.job_form.name!r}", "size", "step")
        return cls.of(table["size"], table["step"], table.get("offset", 0))

    @property
    def is_event_time(self) -> bool:
        return True

    def start_of(self, ts_ms: int) -> int:
        """The common start of the windows holding ``ts_ms``."""
        return ts_ms - floor_mod(ts_ms - self.offset_ms, self.max_size_ms)

    def assign(self, ts_ms: int, row=None) -> tuple[TimeWindow, ...]:
        start = self.start_of(ts_ms)
        first_end = ts_ms - floor_mod(ts_ms - self.offset_ms, self.step_ms) + self.step_ms
        return tuple(TimeWindow(start, end) for end in range(first_end, start + self.max_size_ms + 1, self.step_ms))


@dataclass(frozen=True)
class GlobalWindows:
    """All elements of a key in one window that never ends (fires only by its trigger)."""

    @property
    def is_event_time(self) -> bool:
        # Flink: GlobalWindows.isEventTime() is false, so no element is ever late.
        return False

    def assign(self, ts_ms: int, row=None) -> tuple[GlobalWindow, ...]:
        return (GLOBAL_WINDOW,)


# ------------------------------------------------------------ processing time


@dataclass(frozen=True)
class TumblingProcessingTimeWindows(_Tumbling):
    """Tumbling windows on processing time (Flink's ``TumblingProcessingTimeWindows``).

    The element's timestamp for assignment is its processing time: the
    operator's clock when the batch arrived, or the row's recorded ingestion
    time when the spec names an ingestion-time column (a backfill). Windows
    fire and are cleaned up by processing-time timers at ``max_timestamp_ms``;
    nothing is ever late.
    """

    job_form: ClassVar[JobForm] = JobForm("tumbling_processing_time", TUMBLING_KEYS)

    size_ms: int
    offset_ms: int = 0

    @property
    def is_event_time(self) -> bool:
        return False

    def assign(self, ts_ms: int, row=None) -> tuple[TimeWindow, ...]:
        return TumblingEventTimeWindows(self.size_ms, self.offset_ms).assign(ts_ms)


@dataclass(frozen=True)
class SlidingProcessingTimeWindows(_Sliding):
    """Sliding windows on processing time (Flink's ``SlidingProcessingTimeWindows``)."""

    job_form: ClassVar[JobForm] = JobForm("sliding_processing_time", SLIDING_KEYS)

    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    @property
    def is_event_time(self) -> bool:
        return False

    def assign(self, ts_ms: int, row=None) -> tuple[TimeWindow, ...]:
        return SlidingEventTimeWindows(self.size_ms, self.slide_ms, self.offset_ms).assign(ts_ms)


# -------------------------------------------------------------------- sessions


@runtime_checkable
class SessionGapExtractor(Protocol):
    """A dynamic session gap (Flink's ``SessionWindowTimeGapExtractor``).

    Implement it as a frozen dataclass (or another class with value
    equality and a stable repr) at module level: the spec's equality, its
    fingerprint and Spark's pickling all rely on that. ``gap_ms(row)`` must
    return a positive int for every accepted row.
    """

    def gap_ms(self, row: Mapping[str, Any]) -> int: ...


@dataclass(frozen=True)
class GapFromColumn:
    """The session gap in milliseconds, read from a column of each row."""

    column: str

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"GapFromColumn needs a column name, got {self.column!r}")

    def gap_ms(self, row: Mapping[str, Any]) -> int:
        return row[self.column]


def _session_window(ts_ms: int, gap_ms: Any, row) -> tuple[TimeWindow, ...]:
    if not isinstance(gap_ms, int) or isinstance(gap_ms, bool) or gap_ms <= 0:
        raise InvalidGapError(f"session gap must be a positive int of milliseconds, got {gap_ms!r} "
                              f"for the row {dict(row) if row is not None else None!r}")
    return (TimeWindow(ts_ms, ts_ms + gap_ms),)


class InvalidGapError(ValueError):
    """A dynamic gap extractor returned something that is not a positive int (the row is quarantined)."""


def _gap_extractor(gap: Any) -> SessionGapExtractor:
    if isinstance(gap, str):
        return GapFromColumn(gap)
    if not isinstance(gap, SessionGapExtractor):
        raise ValueError(f"a dynamic session gap must be a column name or an object with gap_ms(row), "
                         f"got {gap!r}")
    return gap


SESSION_KEYS = ("gap", "gap_column")


class _SessionWindows:
    """What both session assigners share; subclasses are frozen dataclasses with
    ``gap_ms`` and ``dynamic_gap`` fields and say which time they use."""

    def __post_init__(self) -> None:
        _check_session(self, type(self).__name__)

    @classmethod
    def from_config(cls, table: Mapping[str, Any]):
        """``gap = "30 seconds"`` or ``gap_column = "<column of ms>"`` (exactly one)."""
        if ("gap" in table) == ("gap_column" in table):
            raise ValueError(f"a session window needs exactly one of gap (a duration) or gap_column (a column of "
                             f"milliseconds), got gap={table.get('gap')!r}, gap_column={table.get('gap_column')!r}")
        if "gap" in table:
            return cls.with_gap(table["gap"])
        return cls.with_dynamic_gap(str(table["gap_column"]))

    @classmethod
    def with_gap(cls, gap: int | str):
        return cls(gap_ms=parse_duration_ms(gap, "gap"))

    @classmethod
    def with_dynamic_gap(cls, gap: str | SessionGapExtractor):
        return cls(dynamic_gap=_gap_extractor(gap))

    @property
    def is_merging(self) -> bool:
        return True

    @property
    def columns(self) -> tuple[str, ...]:
        return _gap_columns(self.dynamic_gap)

    def assign(self, ts_ms: int, row=None) -> tuple[TimeWindow, ...]:
        gap = self.gap_ms if self.dynamic_gap is None else self.dynamic_gap.gap_ms(row)
        return _session_window(ts_ms, gap, row)


@dataclass(frozen=True)
class EventTimeSessionWindows(_SessionWindows):
    """Event-time session windows (Flink's ``EventTimeSessionWindows``): a merging assigner.

    Each element opens ``[ts, ts + gap)``; windows of one key that intersect
    or only touch (``a.start <= b.end and a.end >= b.start``) merge into their
    cover. The gap is static (``gap_ms``) or comes per element from
    ``dynamic_gap`` (a column name or a :class:`SessionGapExtractor`).
    Build with :meth:`with_gap` or :meth:`with_dynamic_gap`.
    """

    job_form: ClassVar[JobForm] = JobForm("session", SESSION_KEYS)

    gap_ms: int | None = None
    dynamic_gap: Any = None

    @property
    def is_event_time(self) -> bool:
        return True


@dataclass(frozen=True)
class ProcessingTimeSessionWindows(_SessionWindows):
    """Processing-time session windows (Flink's ``ProcessingTimeSessionWindows``).

    As :class:`EventTimeSessionWindows`, with the element's processing time
    as its timestamp; sessions close by processing-time timers.
    """

    job_form: ClassVar[JobForm] = JobForm("session_processing_time", SESSION_KEYS)

    gap_ms: int | None = None
    dynamic_gap: Any = None

    @property
    def is_event_time(self) -> bool:
        return False


def _check_session(assigner, name: str) -> None:
    if (assigner.gap_ms is None) == (assigner.dynamic_gap is None):
        raise ValueError(f"{name} needs exactly one of a static gap_ms or a dynamic_gap, got "
                         f"gap_ms={assigner.gap_ms!r}, dynamic_gap={assigner.dynamic_gap!r}")
    if assigner.gap_ms is not None:
        _positive("gap_ms", assigner.gap_ms)
    elif not isinstance(assigner.dynamic_gap, SessionGapExtractor):
        raise ValueError(f"{name} dynamic_gap must be a SessionGapExtractor (gap_ms(row)), "
                         f"got {assigner.dynamic_gap!r}")
    else:
        require_picklable(assigner.dynamic_gap, f"{name} dynamic_gap")


def _gap_columns(extractor) -> tuple[str, ...]:
    if isinstance(extractor, GapFromColumn):
        return (extractor.column,)
    return tuple(getattr(extractor, "columns", ()))


def merge_windows(windows) -> list[tuple[TimeWindow, list[TimeWindow]]]:
    """Flink's ``TimeWindow.mergeWindows``: group windows that intersect or touch.

    Sorts by start and sweeps, so merging is transitive (a window that
    bridges two others joins all three). Returns ``(cover, members)`` for
    every group, including groups of one.
    """
    groups: list[tuple[TimeWindow, list[TimeWindow]]] = []
    for window in sorted(windows):
        if groups and groups[-1][0].intersects(window):
            cover, members = groups[-1]
            groups[-1] = (cover.cover(window), members + [window])
        else:
            groups.append((window, [window]))
    return groups


MERGING_ASSIGNERS = (EventTimeSessionWindows, ProcessingTimeSessionWindows)
BUILTIN_ASSIGNERS = (TumblingEventTimeWindows, SlidingEventTimeWindows, CumulativeEventTimeWindows, GlobalWindows,
                     TumblingProcessingTimeWindows, SlidingProcessingTimeWindows, EventTimeSessionWindows,
                     ProcessingTimeSessionWindows)
"""The assigners with a DataFrame plan (``tests/spark/test_spark_forms.py`` checks each has its Spark form)."""
