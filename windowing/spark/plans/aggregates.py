"""Aggregates compiled to Spark columns: partial, merge, running merge, result.

An aggregate's accumulator is one or more state columns named
``acc__<output name>__<part>``. A null accumulator means "no contents" for
every aggregate, so merging is null-aware: ``merge(null, x) = x``. A Sum's
accumulator is ``struct<pos, neg>`` (the sums of its positive and of its
negative values, each ``try_sum``/``try_add``-ed, null once it overflowed), so
an overflow makes the window's Sum null instead of failing the batch (see
:class:`windowing.core.aggregates.Sum`).
User aggregates keep a pickled accumulator in a binary column and run their
Python ``add``/``merge``/``get_result`` in pandas UDFs (the only per-row
Python of this module). A :class:`~windowing.core.aggregates.Reduce` is run by
the same UDFs as an aggregate whose accumulator is the value so far.

Order. A reduce function need not be commutative (``reduce(a, b) = b``, keep
the later value, is a common one), so a Reduce folds in exactly the reference
model's order: a partial sorts its elements by ``order`` (default event time,
then arrival sequence) before folding; every ``merge`` call site passes the
older accumulator (the state, or the earlier window/slice/group) first; and a
``running`` fold relies on ``collect_list`` over an ORDERED window frame
keeping the frame's row order (Spark's window frames feed rows to the
aggregate in the partition's sort order).

Ordered aggregates (First, Last, Collect) keep each value with its event
time: ``struct<ts, v>`` (Collect: an array of them, sorted). A partial picks
or sorts its group's elements by (event time, then ``order``); a merge
compares event times and, on a tie, keeps the OLDER accumulator's elements
first (the call sites' convention above), which is the arrival order: an
element of an earlier batch, group or slice arrived before an equal-time one
of a later. So no arrival sequence needs to be comparable across batches.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from pyspark.sql import Column, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.types import BinaryType, StructType, _parse_datatype_string

from windowing.core.aggregates import Avg, Collect, Count, First, Last, Max, Min, Reduce, Sum, UserAggregate
from windowing.spark.input.columns import SEQ, SLICE, TS

if TYPE_CHECKING:
    import pandas as pd

ELEMENT_ORDER = (TS, SEQ)
"""The order a Reduce's partial folds a group's elements in: (event time, arrival sequence), as the model."""


def _null_aware(combine: Callable[[Column, Column], Column]) -> Callable[[Column, Column], Column]:
    def merged(a: Column, b: Column) -> Column:
        return F.when(a.isNull(), b).when(b.isNull(), a).otherwise(combine(a, b))
    return merged


_add = _null_aware(lambda a, b: a + b)
ORDER_TS, ORDER_VALUE = "ts", "v"
"""Fields of an ordered aggregate's element: its event time and its value."""


SUM_POSITIVE, SUM_NEGATIVE = "pos", "neg"
"""Fields of a Sum's accumulator: the sums of its positive (with zero, NaN) and of its negative values."""


def _is_negative(value: Column) -> Column:
    return value < F.lit(0)


def _part(total: Column, present: Column) -> Column:
    """A part of a Sum: ``total`` (null: it overflowed) or 0 when the part has no value."""
    return F.when(present, total).otherwise(F.lit(0))


def _sum_struct(positive: Column, negative: Column) -> Column:
    return F.struct(positive.alias(SUM_POSITIVE), negative.alias(SUM_NEGATIVE))


def sum_partial(value: Column) -> Column:
    """A Sum's accumulator over a group (an aggregate): null when no value is non-null.

    Each part is a ``try_sum`` (null when it leaves the type's range); the
    parts are one-signed, so a part overflows whatever the summation order.
    """
    negative = F.when(_is_negative(value), value)
    positive = F.when(~_is_negative(value), value)
    return F.when(F.count(value) > 0, _sum_struct(_part(F.try_sum(positive), F.count(positive) > 0),
                                                  _part(F.try_sum(negative), F.count(negative) > 0)))


def sum_merge(a: Column, b: Column) -> Column:
    """Two non-null Sum accumulators merged: each part ``try_add``-ed, an overflowed (null) part stays null."""
    return _sum_struct(F.try_add(a[SUM_POSITIVE], b[SUM_POSITIVE]), F.try_add(a[SUM_NEGATIVE], b[SUM_NEGATIVE]))


def sum_merge_all(acc: Column, over=lambda e: e) -> Column:
    """The merge of a group's (or, with ``over``, a window frame's) Sum accumulators, as an aggregate."""
    def merged(field: str) -> Column:
        # try_sum skips nulls: a part that overflowed in any accumulator keeps the merge null.
        every = over(F.count(acc[field])) == over(F.count(acc))
        return F.when(every, over(F.try_sum(acc[field])))
    return F.when(over(F.count(acc)) > 0, _sum_struct(merged(SUM_POSITIVE), merged(SUM_NEGATIVE)))


def sum_running(acc: Column, window) -> Column:
    return sum_merge_all(acc, lambda e: e.over(window))


def sum_result(acc: Column) -> Column:
    """The Sum: null when no value was added or a part overflowed (``+`` of nulls), else positive + negative.

    The parts have opposite signs, so their sum stays in range.
    """
    return acc[SUM_POSITIVE] + acc[SUM_NEGATIVE]


def _first_of(a: Column, b: Column) -> Column:
    """The earlier of two ``struct<ts, v>``; ``a`` (older) wins a tie."""
    return F.when(b[ORDER_TS] < a[ORDER_TS], b).otherwise(a)


def _last_of(a: Column, b: Column) -> Column:
    """The later of two ``struct<ts, v>``; ``b`` (newer) wins a tie."""
    return F.when(b[ORDER_TS] >= a[ORDER_TS], b).otherwise(a)


def sorted_by_time(elements: Column) -> Column:
    """``array<struct<ts, v>>`` sorted by ts, keeping the array's order on ties (a stable sort)."""
    indexed = F.transform(elements, lambda e, i: F.struct(e[ORDER_TS].alias("t"), i.alias("i"), e[ORDER_VALUE].alias("x")))
    ordered = F.array_sort(indexed, lambda l, r: F.when(l["t"] < r["t"], -1).when(l["t"] > r["t"], 1)
                           .when(l["i"] < r["i"], -1).when(l["i"] > r["i"], 1).otherwise(0))
    return F.transform(ordered, lambda e: F.struct(e["t"].alias(ORDER_TS), e["x"].alias(ORDER_VALUE)))


def _element(value: Column) -> Column:
    # Both fields nullable, as every merge gives them: the state table's schema comes from a partial.
    present = value.isNotNull()
    return F.struct(F.when(present, F.col(TS)).alias(ORDER_TS), F.when(present, value).alias(ORDER_VALUE))


def _time_order(order: tuple[str, ...]) -> tuple[str, ...]:
    """Event time first, then the caller's order columns (they break ties as arrival does)."""
    return (TS,) + tuple(c for c in order if c != TS)


def _pick(pick, value: Column, order: tuple[str, ...]) -> Column:
    """``min_by``/``max_by`` over the group's non-null values by (event time, ``order``)."""
    keyed = F.when(value.isNotNull(), F.struct(*[F.col(c) for c in _time_order(order)]))
    return pick(F.when(value.isNotNull(), _element(value)), keyed)


def _collected(value: Column, order: tuple[str, ...]) -> Column:
    """The group's non-null values as a sorted ``array<struct<ts, v>>`` (an aggregate)."""
    present = value.isNotNull()
    keyed = F.struct(*[F.when(present, F.col(c)).alias(f"__o{i}") for i, c in enumerate(_time_order(order))],
                     F.when(present, value).alias("__v"))
    return F.transform(F.array_sort(F.collect_list(F.when(value.isNotNull(), keyed))),
                       lambda s: F.struct(s["__o0"].alias(ORDER_TS), s["__v"].alias(ORDER_VALUE)))


def _fold_frame(merge: Callable[[Column, Column], Column], c: Column, window) -> Column:
    """Merge the frame's accumulators oldest first (their frame order)."""
    accs = F.collect_list(c).over(window)
    return F.aggregate(accs, F.get(accs, 0), lambda acc, x: merge(acc, x))
_least = _null_aware(lambda a, b: F.least(a, b))
_greatest = _null_aware(lambda a, b: F.greatest(a, b))


@dataclass(frozen=True)
class AccumulatorPart:
    """One accumulator column: how to build it from elements and combine two."""

    column: str
    partial: Callable[[tuple[str, ...]], Column]   # aggregate expression over elements, given their order
    merge: Callable[[Column, Column], Column]
    running: Callable[[Column, object], Column]  # running merge over a window spec


INTEGRAL_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_EXACT = "decimal(38,0)"   # sums of int64 values that cannot overflow


class AggregateForm:
    """The Spark form of one kind of aggregate: its accumulator columns, its merges and its result.

    One subclass per aggregate class, registered with :func:`spark_form`; the
    reference form (add, merge, get_result in Python) is the core class itself.
    """

    def parts(self, agg, column: Callable[[str], str]) -> list[AccumulatorPart]:
        """The accumulator columns of ``agg``; ``column(part)`` names one."""
        raise NotImplementedError

    def result(self, agg, accs: list[Column]) -> Column:
        """The aggregate's value from its accumulator columns (in :meth:`parts`' order)."""
        return accs[0]

    def result_type(self, agg, input_schema: T.StructType) -> T.DataType:
        """The type of the aggregate's value over rows of ``input_schema`` (the per-key path's result column)."""
        raise NotImplementedError

    def rollup(self, agg, column: str) -> Column:
        """An aggregate expression merging a group of accumulator values of the column named ``column``
        (nulls mean "empty"); the group is a window's slices, which cover disjoint time ranges, so no
        two of them hold elements of equal event time, and :data:`SLICE` orders them."""
        raise NotImplementedError

    # Running differences (windowing.spark.plans.slicing): an aggregate whose accumulator is rebuilt from
    # integer sums over a window's slices can be windowed by differences of running sums.
    def invertible(self, agg, input_schema: T.StructType) -> bool:
        """Whether :meth:`sums` and :meth:`from_sums` rebuild the accumulator exactly."""
        return False

    def sums(self, compiled: "CompiledAggregate") -> list[tuple[str, Column]]:
        """(column name, per-slice integer partial) pairs whose window sums rebuild the accumulator."""
        raise NotImplementedError

    def from_sums(self, compiled: "CompiledAggregate") -> list[Column]:
        """The accumulator columns from the window sums of :meth:`sums`."""
        raise NotImplementedError


def _signed_sums(compiled: "CompiledAggregate") -> list[tuple[str, Column]]:
    """Exact sums of the positive and of the negative values of an integral column (decimal, so no
    running sum can overflow) and how many values were not null."""
    column, name = compiled.aggregate.column, compiled.name
    value = F.col(column).cast(_EXACT)
    return [(f"__inv__{name}__pos", F.coalesce(F.sum(F.when(value >= 0, value)), F.lit(0).cast(_EXACT))),
            (f"__inv__{name}__neg", F.coalesce(F.sum(F.when(value < 0, value)), F.lit(0).cast(_EXACT))),
            (f"__inv__{name}__nn", F.count(column))]


def _signed_sum_columns(compiled: "CompiledAggregate") -> tuple[Column, Column, Column]:
    name = compiled.name
    return F.col(f"__inv__{name}__pos"), F.col(f"__inv__{name}__neg"), F.col(f"__inv__{name}__nn")


def _integral(input_schema: T.StructType, column: str) -> bool:
    return isinstance(input_schema[column].dataType, INTEGRAL_TYPES)


_FORMS: dict[type, AggregateForm] = {}


def spark_form(*classes: type):
    """Register the decorated :class:`AggregateForm` as the Spark form of the aggregate ``classes``."""
    def register(form: type[AggregateForm]) -> type[AggregateForm]:
        for cls in classes:
            _FORMS[cls] = form()
        return form
    return register


def form_of_class(cls: type) -> AggregateForm | None:
    """The Spark form of the aggregate class ``cls`` (or of its nearest base class that has one), else None."""
    return next((_FORMS[c] for c in cls.__mro__ if c in _FORMS), None)


def form_of(agg) -> AggregateForm:
    """The Spark form of ``agg``.

    Raises:
        ValueError: naming the aggregate and the classes that have a Spark form.
    """
    form = form_of_class(type(agg))
    if form is None:
        raise ValueError(f"aggregate {agg!r} has no Spark form; these have one: "
                         f"{', '.join(sorted(c.__name__ for c in _FORMS))}")
    return form


def _over(aggregate_fn) -> Callable[[Column, object], Column]:
    """The running form of a SQL aggregate: ``aggregate_fn(c)`` over a window frame."""
    return lambda c, w: aggregate_fn(c).over(w)


class _SignedSumsForm(AggregateForm):
    """An aggregate of sums of its column (``Sum``, ``Avg``): exact running differences when the
    column is integral, over the positive and negative parts of the column (``_signed_sums``)."""

    def invertible(self, agg, input_schema):
        return _integral(input_schema, agg.column)

    def sums(self, compiled):
        return _signed_sums(compiled)


@spark_form(Sum)
class _SumForm(_SignedSumsForm):
    def parts(self, agg, column):
        return [AccumulatorPart(column("sum"), lambda order: sum_partial(F.col(agg.column)),
                                _null_aware(sum_merge), sum_running)]

    def result(self, agg, accs):
        return sum_result(accs[0])

    def result_type(self, agg, input_schema):
        return T.LongType() if _integral(input_schema, agg.column) else T.DoubleType()

    def rollup(self, agg, column):
        return sum_merge_all(F.col(column))

    def from_sums(self, compiled):
        # as sum_partial builds it: a part beyond int64 is null
        pos, neg, nn = _signed_sum_columns(compiled)
        return [F.when(nn > 0, F.struct(F.when(pos <= F.lit(2 ** 63 - 1), pos.cast("long")).alias(SUM_POSITIVE),
                                        F.when(neg >= F.lit(-(2 ** 63)), neg.cast("long")).alias(SUM_NEGATIVE)))
                .alias(compiled.columns[0])]


@spark_form(Count)
class _CountForm(AggregateForm):
    def parts(self, agg, column):
        return [AccumulatorPart(column("count"), lambda order: self._count(agg), _add, _over(F.sum))]

    @staticmethod
    def _count(agg) -> Column:
        return F.count(F.lit(1)) if agg.column is None else F.count(agg.column)

    def result_type(self, agg, input_schema):
        return T.LongType()

    def rollup(self, agg, column):
        return F.sum(column)

    def invertible(self, agg, input_schema):
        return True

    def sums(self, compiled):
        return [(compiled.columns[0], self._count(compiled.aggregate))]

    def from_sums(self, compiled):
        return [F.col(compiled.columns[0])]


class _ExtremeForm(AggregateForm):
    """``Min`` and ``Max``: one part, the extreme value of the column, of the column's type; the same
    function aggregates, runs over a window and rolls slices up; ``merge`` keeps the extreme of two."""

    def __init__(self, part: str, extreme, merge):
        self.part, self.extreme, self.merge = part, extreme, merge

    def parts(self, agg, column):
        return [AccumulatorPart(column(self.part), lambda order: self.extreme(agg.column), self.merge,
                                _over(self.extreme))]

    def result_type(self, agg, input_schema):
        return input_schema[agg.column].dataType

    def rollup(self, agg, column):
        return self.extreme(column)


_FORMS[Min] = _ExtremeForm("min", F.min, _least)
_FORMS[Max] = _ExtremeForm("max", F.max, _greatest)


@spark_form(Avg)
class _AvgForm(_SignedSumsForm):
    def parts(self, agg, column):
        return [AccumulatorPart(column("sum"), lambda order: F.sum(F.col(agg.column).cast("double")), _add,
                                _over(F.sum)),
                AccumulatorPart(column("count"), lambda order: F.count(agg.column), _add, _over(F.sum))]

    def result(self, agg, accs):
        total, count = accs
        return F.when(count > 0, total / count)

    def result_type(self, agg, input_schema):
        return T.DoubleType()

    def rollup(self, agg, column):
        return F.sum(column)

    def from_sums(self, compiled):
        # (double sum, count), as the partial builds it
        pos, neg, nn = _signed_sum_columns(compiled)
        return [F.when(nn > 0, (pos + neg).cast("double")).alias(compiled.columns[0]), nn.alias(compiled.columns[1])]


class _PickForm(AggregateForm):
    """First or Last: one ``struct<ts, v>``, picked by event time."""

    part: str
    pick: Callable
    choose: Callable[[Column, Column], Column]

    def parts(self, agg, column):
        merge = _null_aware(type(self).choose)
        pick = type(self).pick
        return [AccumulatorPart(column(self.part), lambda order: _pick(pick, F.col(agg.column), order), merge,
                                lambda c, w: _fold_frame(merge, c, w))]

    def result(self, agg, accs):
        return accs[0][ORDER_VALUE]

    def result_type(self, agg, input_schema):
        return input_schema[agg.column].dataType

    def rollup(self, agg, column):
        return type(self).pick_slice(column, F.col(column)[ORDER_TS])


@spark_form(First)
class _FirstForm(_PickForm):
    part, pick, choose, pick_slice = "first", F.min_by, _first_of, F.min_by


@spark_form(Last)
class _LastForm(_PickForm):
    part, pick, choose, pick_slice = "last", F.max_by, _last_of, F.max_by


@spark_form(Collect)
class _CollectForm(AggregateForm):
    def parts(self, agg, column):
        return [AccumulatorPart(column("values"), lambda order: _collected(F.col(agg.column), order),
                                _null_aware(lambda a, b: sorted_by_time(F.concat(a, b))),
                                lambda c, w: sorted_by_time(F.flatten(F.collect_list(c).over(w))))]

    def result(self, agg, accs):
        return F.transform(accs[0], lambda e: e[ORDER_VALUE])

    def result_type(self, agg, input_schema):
        return T.ArrayType(input_schema[agg.column].dataType, True)

    def rollup(self, agg, column):
        return F.flatten(ordered_values(F.col(column), (SLICE,)))


class _UserForm(AggregateForm):
    """A user AggregateFunction or a Reduce: a pickled accumulator, folded by pandas UDFs."""

    def _function(self, agg):
        """The AggregateFunction the UDFs run."""
        return agg.function

    def _partial(self, agg, udfs: "_UserUdfs", values: Callable[[], Column]) -> Callable[[tuple[str, ...]], Column]:
        # A grouped-agg pandas UDF cannot sit beside built-in aggregates, so the
        # partial collects the values and a scalar pandas UDF folds them with add().
        return lambda order: udfs.partial(F.collect_list(values()))

    def parts(self, agg, column):
        udfs = _user_udfs(agg, self._function(agg))
        values = (lambda: F.col(agg.columns[0])) if len(agg.columns) == 1 else \
            (lambda: F.struct(*[F.col(c) for c in agg.columns]))
        # running: collect_list over the caller's ordered frame keeps the frame's order, so
        # the fold merges the accumulators oldest first (what a Reduce needs).
        return [AccumulatorPart(column("acc"), self._partial(agg, udfs, values), lambda a, b: udfs.merge(a, b),
                                lambda c, w: udfs.fold(F.collect_list(c).over(w)))]

    def result(self, agg, accs):
        return _user_udfs(agg, self._function(agg)).result(accs[0])

    def result_type(self, agg, input_schema):
        return _parse_datatype_string(agg.result_type)

    def rollup(self, agg, column):
        return _user_udfs(agg, self._function(agg)).fold(F.collect_list(column))


@spark_form(UserAggregate)
class _UserAggregateForm(_UserForm):
    pass


@spark_form(Reduce)
class _ReduceForm(_UserForm):
    def _function(self, agg):
        return _ReduceAsAggregate(agg)

    def _partial(self, agg, udfs, values):
        # collect_list in a group has no order: sort by the elements' order, then fold.
        return lambda order: udfs.partial(ordered_values(values(), order))

    def rollup(self, agg, column):
        # Each slice's partial folded its elements in (event time, sequence) order: folding the
        # slices in slice order folds the window's elements in that order (a reduce need not commute).
        return _user_udfs(agg, self._function(agg)).fold(ordered_values(F.col(column), (SLICE,)))


class CompiledAggregate:
    """The Spark form of one (output name, aggregate) pair of a spec."""

    def __init__(self, name: str, aggregate):
        self.name = name
        self.aggregate = aggregate
        self.form = form_of(aggregate)
        self.parts = self.form.parts(aggregate, self._col)

    def _col(self, part: str) -> str:
        return f"acc__{self.name}__{part}"

    @property
    def columns(self) -> list[str]:
        return [p.column for p in self.parts]

    def result(self, prefix: str = "") -> Column:
        """The output column computed from accumulator columns named ``prefix + column``."""
        return self.form.result(self.aggregate, [F.col(prefix + c) for c in self.columns]).alias(self.name)


class _ReduceAsAggregate:
    """A :class:`Reduce` as an AggregateFunction on values: the accumulator is the value so far.

    ``add`` and ``merge`` are the model's (``Reduce.add`` / ``Reduce.merge``):
    a null value adds nothing, a null accumulator is "nothing yet", and two
    values combine as ``reduce(older, newer)``.
    """

    def __init__(self, reduce: Reduce):
        self._reduce = reduce

    def create_accumulator(self):
        return self._reduce.create_accumulator()

    def add(self, value, acc):
        if value is None:
            return acc
        return value if acc is None else self._reduce.function.reduce(acc, value)

    def merge(self, a, b):
        return self._reduce.merge(a, b)

    def get_result(self, acc):
        return self._reduce.get_result(acc)


def _import_pandas() -> None:
    """Bind ``pd`` in this module; the pandas UDFs' type hints name it (Spark reads them when a UDF is made).

    Only user aggregates and Reduce need pandas: imported with the module, it cost every
    job's process (a ``winjob`` run, an Airflow task) a second of start-up.
    """
    global pd
    import pandas as pd


class _UserUdfs:
    """pandas UDFs running a user AggregateFunction (or a Reduce) on pickled accumulators."""

    def __init__(self, agg: UserAggregate | Reduce, fn):
        _import_pandas()
        many = len(agg.columns) > 1

        def partial(lists: pd.Series) -> pd.Series:
            out = []
            for values in lists:
                acc = fn.create_accumulator()
                for value in values:
                    if many:
                        value = tuple(value[c] for c in agg.columns) if isinstance(value, dict) else tuple(value)
                    acc = fn.add(_py(value), acc)
                out.append(pickle.dumps(acc))
            return pd.Series(out, dtype=object)

        def merge(a: pd.Series, b: pd.Series) -> pd.Series:
            out = []
            for x, y in zip(a, b):
                if x is None or y is None:
                    out.append(y if x is None else x)
                else:
                    out.append(pickle.dumps(fn.merge(pickle.loads(x), pickle.loads(y))))
            return pd.Series(out, dtype=object)

        def fold(lists: pd.Series) -> pd.Series:
            out = []
            for accs in lists:
                acc = None
                for blob in accs:
                    acc = pickle.loads(blob) if acc is None else fn.merge(acc, pickle.loads(blob))
                out.append(None if acc is None else pickle.dumps(acc))
            return pd.Series(out, dtype=object)

        def results(accs: pd.Series) -> list:
            return [None if a is None else fn.get_result(pickle.loads(a)) for a in accs]

        def result(accs: pd.Series) -> pd.Series:
            return pd.Series(results(accs))

        result_type = _parse_datatype_string(agg.result_type)
        fields = [f.name for f in result_type.fields] if isinstance(result_type, StructType) else []

        def struct_result(accs: pd.Series) -> pd.DataFrame:
            # a pandas UDF returns a struct as a DataFrame, one column per field
            rows = [tuple(v.values()) if isinstance(v, dict) else (None,) * len(fields) if v is None else tuple(v)
                    for v in results(accs)]
            return pd.DataFrame.from_records(rows, columns=fields)

        self.partial = F.pandas_udf(partial, BinaryType())
        self.merge = F.pandas_udf(merge, BinaryType())
        self.fold = F.pandas_udf(fold, BinaryType())
        self.result = F.pandas_udf(struct_result if fields else result, result_type)


def ordered_values(value: Column, order: tuple[str, ...]) -> Column:
    """The group's non-null ``value``s as an array sorted by the ``order`` columns (an aggregate).

    ``collect_list`` alone gives the group's rows in no defined order; the
    values travel in structs led by the order columns, and ``array_sort``
    orders structs field by field. The order columns must identify a row
    (e.g. (event time, arrival sequence)), so the values are never compared.
    """
    if not order:
        raise ValueError("ordered_values needs at least one order column, got none")
    keyed = F.struct(*[F.col(c).alias(f"__o{i}") for i, c in enumerate(order)], value.alias("__v"))
    return F.transform(F.array_sort(F.collect_list(F.when(value.isNotNull(), keyed))), lambda s: s["__v"])


def _py(value):
    """numpy scalars to plain Python, so user code sees what the reference model gives it."""
    if isinstance(value, tuple):
        return tuple(_py(v) for v in value)
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


_USER_UDF_CACHE: dict = {}


def _user_udfs(agg: UserAggregate | Reduce, fn) -> _UserUdfs:
    """The UDFs of ``agg`` running ``fn`` (made once per aggregate object)."""
    key = id(agg)
    if key not in _USER_UDF_CACHE:
        _USER_UDF_CACHE[key] = (agg, _UserUdfs(agg, fn))
    return _USER_UDF_CACHE[key][1]


def compile_aggregates(spec) -> list[CompiledAggregate]:
    return [CompiledAggregate(name, agg) for name, agg in spec.aggregates]


def accumulator_columns(compiled: list[CompiledAggregate]) -> list[str]:
    return [c for agg in compiled for c in agg.columns]


def partial_exprs(compiled: list[CompiledAggregate], order: tuple[str, ...] = ELEMENT_ORDER,
                  prefix: str = "") -> list[Column]:
    """Partial accumulators over a group of elements, named ``prefix`` + their accumulator column;
    ``order`` is the columns that order the group's elements as the model adds them (only a Reduce
    uses it)."""
    return [p.partial(order).alias(prefix + p.column) for agg in compiled for p in agg.parts]


def running_exprs(compiled: list[CompiledAggregate], window: Window, prefix: str = "__run__") -> list[Column]:
    return [p.running(F.col(p.column), window).alias(prefix + p.column)
            for agg in compiled for p in agg.parts]
