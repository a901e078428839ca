"""Window functions: incremental aggregates (Flink's ``AggregateFunction``).

Each aggregate is a frozen description with the four operations of Flink's
``AggregateFunction`` in plain Python (the reference model uses them); the
Spark executor compiles the built-ins to column expressions with the same
meaning. Null handling follows SQL/Spark: sum, min, max and avg skip nulls
(and give null when every input was null); ``Count()`` counts elements,
``Count(column)`` counts non-null values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from windowing.core.time import require_picklable


@runtime_checkable
class AggregateFunction(Protocol):
    """A user aggregate, as in Flink: the accumulator must be picklable.

    ``add`` and ``merge`` may mutate and return their first accumulator.
    """

    def create_accumulator(self) -> Any: ...

    def add(self, value: Any, accumulator: Any) -> Any: ...

    def merge(self, a: Any, b: Any) -> Any: ...

    def get_result(self, accumulator: Any) -> Any: ...


def _column_name(kind: str, column: Any) -> str:
    if not isinstance(column, str) or not column:
        raise ValueError(f"{kind} needs a column name (a non-empty str), got {column!r}")
    return column


INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def _add_in_int64(a, b):
    """``a + b``; None (overflow, and it stays so) when either is None or an integer sum leaves int64."""
    if a is None or b is None:
        return None
    total = a + b
    if isinstance(total, int) and not INT64_MIN <= total <= INT64_MAX:
        return None
    return total


@dataclass(frozen=True)
class Sum:
    """The sum of the non-null values (null when every value was null, or none was added).

    Overflow (integer columns are int64 on Spark): the positive values (with
    zeros and NaN) and the negative values are summed apart; when either
    part leaves int64 the window's sum is null in this pane and in every later
    pane of the window (SQL's ``try_sum``), and the window keeps its elements
    (``Count`` still counts them), so a bad number never fails a batch. Each
    part only grows in magnitude, so whether a window overflows does not
    depend on the order of its elements or on how the stream was cut into
    batches; it is conservative: ``2**63 - 1``, ``-5`` and ``5`` overflow
    although their total fits. Declare value bounds to quarantine such
    values before they reach a window.

    Accumulator: ``(positive part, negative part)``, a part None once it
    overflowed; None when no value was added.
    """

    job_name: ClassVar[str] = "sum"
    """Its name in a job file's ``[aggregates]`` (``total = "sum(amount)"``)."""
    column: str

    def __post_init__(self):
        _column_name("Sum", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def default_name(self) -> str:
        return f"sum_{self.column}"

    def create_accumulator(self):
        return None

    def add(self, row, acc):
        value = row[self.column]
        if value is None:
            return acc
        return self.merge(acc, (0, value) if value < 0 else (value, 0))

    def merge(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        return _add_in_int64(a[0], b[0]), _add_in_int64(a[1], b[1])

    def get_result(self, acc):
        if acc is None or acc[0] is None or acc[1] is None:
            return None
        return acc[0] + acc[1]


@dataclass(frozen=True)
class Count:
    """The number of elements (``Count()``), or of their non-null values in ``column``."""

    job_name: ClassVar[str] = "count"
    """Its name in a job file's ``[aggregates]``: ``n = "count()"`` or ``"count(amount)"``."""
    column: str | None = None

    def __post_init__(self):
        if self.column is not None:
            _column_name("Count", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return () if self.column is None else (self.column,)

    def default_name(self) -> str:
        return "count" if self.column is None else f"count_{self.column}"

    def create_accumulator(self):
        return 0

    def add(self, row, acc):
        return acc + (1 if self.column is None or row[self.column] is not None else 0)

    def merge(self, a, b):
        return a + b

    def get_result(self, acc):
        return acc


@dataclass(frozen=True)
class Min:
    job_name: ClassVar[str] = "min"
    """Its name in a job file's ``[aggregates]`` (``total = "min(amount)"``)."""
    column: str

    def __post_init__(self):
        _column_name("Min", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def default_name(self) -> str:
        return f"min_{self.column}"

    def create_accumulator(self):
        return None

    def add(self, row, acc):
        return self.merge(acc, row[self.column])

    def merge(self, a, b):
        return b if a is None else a if b is None else min(a, b)

    def get_result(self, acc):
        return acc


@dataclass(frozen=True)
class Max:
    job_name: ClassVar[str] = "max"
    """Its name in a job file's ``[aggregates]`` (``total = "max(amount)"``)."""
    column: str

    def __post_init__(self):
        _column_name("Max", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def default_name(self) -> str:
        return f"max_{self.column}"

    def create_accumulator(self):
        return None

    def add(self, row, acc):
        return self.merge(acc, row[self.column])

    def merge(self, a, b):
        return b if a is None else a if b is None else max(a, b)

    def get_result(self, acc):
        return acc


@dataclass(frozen=True)
class Avg:
    """Mean of the non-null values; accumulator is (sum, count)."""

    job_name: ClassVar[str] = "avg"
    """Its name in a job file's ``[aggregates]`` (``mean = "avg(amount)"``)."""
    column: str

    def __post_init__(self):
        _column_name("Avg", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def default_name(self) -> str:
        return f"avg_{self.column}"

    def create_accumulator(self):
        return (0.0, 0)

    def add(self, row, acc):
        value = row[self.column]
        return acc if value is None else (acc[0] + value, acc[1] + 1)

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])

    def get_result(self, acc):
        return None if acc[1] == 0 else acc[0] / acc[1]


@dataclass(frozen=True)
class UserAggregate:
    """Wrap a user :class:`AggregateFunction` over one or more columns.

    Args:
        function: object with create_accumulator/add/merge/get_result.
        columns: the input column(s); ``add`` receives the value of a single
            column, or a tuple of values for several.
        result_type: the Spark SQL type of ``get_result`` (e.g. ``"double"``).
        name: the default output column name.
    """

    function: Any
    columns: tuple[str, ...]
    result_type: str
    name: str = "user_aggregate"

    def __post_init__(self):
        if not isinstance(self.function, AggregateFunction):
            raise ValueError(
                f"UserAggregate function {self.function!r} must define create_accumulator, "
                f"add, merge and get_result")
        cols = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        if not cols:
            raise ValueError("UserAggregate needs at least one input column")
        for column in cols:
            _column_name("UserAggregate", column)
        object.__setattr__(self, "columns", cols)
        if not isinstance(self.result_type, str) or not self.result_type.strip():
            raise ValueError(f"UserAggregate result_type must be a Spark SQL type string, got {self.result_type!r}")

    def default_name(self) -> str:
        return self.name

    def _value(self, row):
        if len(self.columns) == 1:
            return row[self.columns[0]]
        return tuple(row[c] for c in self.columns)

    def create_accumulator(self):
        return self.function.create_accumulator()

    def add(self, row, acc):
        return self.function.add(self._value(row), acc)

    def merge(self, a, b):
        return self.function.merge(a, b)

    def get_result(self, acc):
        return self.function.get_result(acc)


@runtime_checkable
class ReduceFunction(Protocol):
    """Flink's ``ReduceFunction``: combine two values into one of the same kind."""

    def reduce(self, a: Any, b: Any) -> Any: ...


@dataclass(frozen=True)
class Reduce:
    """A window reduce (Flink's ``reduce``) over one or more columns.

    The window's value is ``function.reduce`` folded over the elements'
    values (the column's value, or a tuple for several columns) in (event
    time, arrival sequence) order; null values are skipped. Across batches
    the window's value so far comes first: ``reduce(state, next)``. Merging
    two windows (sessions) reduces their two values, the earlier window's
    first. ``function`` must be a module-level object with value equality
    and a stable repr (a frozen dataclass), so the spec keeps its equality
    and fingerprint.

    Contract: ``function.reduce`` must be ASSOCIATIVE,
    ``reduce(reduce(a, b), c) == reduce(a, reduce(b, c))`` (Flink requires it
    to merge window state; the DataFrame plans fold partial values per group,
    slice and batch and combine them). It need NOT be commutative: "keep the
    later value" (``reduce(a, b) = b``) or concatenation are fine, every
    executor folds in the order above. A function that is not associative
    gives results that depend on how the stream is cut into batches.
    """

    function: Any
    columns: tuple[str, ...]
    result_type: str
    name: str = "reduce"

    def __post_init__(self):
        if not isinstance(self.function, ReduceFunction):
            raise ValueError(f"Reduce function {self.function!r} must define reduce(a, b)")
        require_picklable(self.function, "Reduce function")
        cols = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        if not cols:
            raise ValueError("Reduce needs at least one input column")
        for column in cols:
            _column_name("Reduce", column)
        object.__setattr__(self, "columns", cols)
        if not isinstance(self.result_type, str) or not self.result_type.strip():
            raise ValueError(f"Reduce result_type must be a Spark SQL type string, got {self.result_type!r}")

    def default_name(self) -> str:
        return self.name

    def create_accumulator(self):
        return None

    def add(self, row, acc):
        value = row[self.columns[0]] if len(self.columns) == 1 else tuple(row[c] for c in self.columns)
        if value is None:
            return acc
        return value if acc is None else self.function.reduce(acc, value)

    def merge(self, a, b):
        return b if a is None else a if b is None else self.function.reduce(a, b)

    def get_result(self, acc):
        return acc


def _order_key(element: tuple) -> tuple[int, int]:
    return element[0], element[1]


@dataclass(frozen=True)
class First:
    """The value of the window's earliest element: least (event time, arrival sequence).

    Null values are skipped (SQL's ``FIRST_VALUE ... IGNORE NULLS``, Flink's
    ``FIRST_VALUE``): the result is the earliest non-null value, or null when
    every value was null. Accumulator: ``(ts_ms, seq, value)`` or None.
    """

    job_name: ClassVar[str] = "first"
    """Its name in a job file's ``[aggregates]`` (``total = "first(amount)"``)."""
    column: str

    def __post_init__(self):
        _column_name("First", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def default_name(self) -> str:
        return f"first_{self.column}"

    def create_accumulator(self):
        return None

    def add(self, row, acc):
        raise TypeError("First is ordered: add elements with add_element(ts_ms, seq, row, acc)")

    def add_element(self, ts_ms, seq, row, acc):
        value = row[self.column]
        return acc if value is None else self.merge(acc, (ts_ms, seq, value))

    def merge(self, a, b):
        return b if a is None else a if b is None else min(a, b, key=_order_key)

    def get_result(self, acc):
        return None if acc is None else acc[2]


@dataclass(frozen=True)
class Last:
    """The value of the window's latest element: greatest (event time, arrival sequence).

    Null values are skipped, as in :class:`First`. Accumulator: ``(ts_ms,
    seq, value)`` or None.
    """

    job_name: ClassVar[str] = "last"
    """Its name in a job file's ``[aggregates]`` (``total = "last(amount)"``)."""
    column: str

    def __post_init__(self):
        _column_name("Last", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def default_name(self) -> str:
        return f"last_{self.column}"

    def create_accumulator(self):
        return None

    def add(self, row, acc):
        raise TypeError("Last is ordered: add elements with add_element(ts_ms, seq, row, acc)")

    def add_element(self, ts_ms, seq, row, acc):
        value = row[self.column]
        return acc if value is None else self.merge(acc, (ts_ms, seq, value))

    def merge(self, a, b):
        return b if a is None else a if b is None else max(a, b, key=_order_key)

    def get_result(self, acc):
        return None if acc is None else acc[2]


@dataclass(frozen=True)
class Collect:
    """The window's non-null values as a list, in (event time, arrival sequence) order.

    Null values are skipped (Spark's ``collect_list``); a window whose values
    were all null gives an empty list. The list holds every element of the
    window, so it grows with the window (state and panes). Accumulator: a
    list of ``(ts_ms, seq, value)`` sorted by ``(ts_ms, seq)``.
    """

    job_name: ClassVar[str] = "collect"
    """Its name in a job file's ``[aggregates]`` (``total = "collect(amount)"``)."""
    column: str

    def __post_init__(self):
        _column_name("Collect", self.column)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def default_name(self) -> str:
        return f"collect_{self.column}"

    def create_accumulator(self):
        return []

    def add(self, row, acc):
        raise TypeError("Collect is ordered: add elements with add_element(ts_ms, seq, row, acc)")

    def add_element(self, ts_ms, seq, row, acc):
        value = row[self.column]
        return acc if value is None else self.merge(acc, [(ts_ms, seq, value)])

    def merge(self, a, b):
        return sorted(list(a) + list(b), key=_order_key)

    def get_result(self, acc):
        return [value for _, _, value in acc]


def add_element(aggregate, ts_ms: int, seq: int, row: dict, accumulator):
    """Add one element to ``accumulator``: by its order key for an ordered aggregate, else ``add(row, acc)``."""
    if isinstance(aggregate, ORDERED_AGGREGATES):
        return aggregate.add_element(ts_ms, seq, row, accumulator)
    return aggregate.add(row, accumulator)


ORDERED_AGGREGATES = (First, Last, Collect)
"""The aggregates whose value depends on the elements' order, (event time, arrival sequence): the
reference model adds an element with ``add_element(ts_ms, seq, row, acc)`` instead of
``add(row, acc)``, so the accumulator places it by its order key wherever (and in whichever batch)
it arrives."""
BUILTIN_AGGREGATES = (Sum, Count, Min, Max, Avg, First, Last, Collect)
"""The built-in aggregates, each with its ``job_name`` (job files name them so:
:data:`windowing.core.registry.JOB_AGGREGATES`) and a Spark form
(:mod:`windowing.spark.plans.aggregates`). A new built-in aggregate is its class here, in this tuple, and
its Spark form."""
AGGREGATES = (Sum, Count, Min, Max, Avg, First, Last, Collect, UserAggregate, Reduce)
Aggregate = Sum | Count | Min | Max | Avg | First | Last | Collect | UserAggregate | Reduce
