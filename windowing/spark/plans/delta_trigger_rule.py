"""The DeltaTrigger with the built-in ``AbsoluteDifference`` delta as a DataFrame plan.

Flink's ``DeltaTrigger`` (as the reference model has it): the first element of
a window is remembered without firing; an element whose delta to the
remembered one exceeds the threshold fires the window (the pane includes it)
and becomes the remembered one; time never fires it. Whether an element fires
depends on every earlier decision: a recurrence, not a set operation. The plan
computes it per (key, window) in one pass with Spark's higher-order
``aggregate``: the batch's elements, collected and sorted in (event time,
sequence) order, are folded from the remembered value kept in state; the fold
gives the firing positions and the remembered value after the batch, and each
element's group is the number of firings before it (a group ends with its
firing element).

From there the window is a count-like trigger: groups ``0 .. __k - 1`` end
with a firing, and :mod:`windowing.spark.plans.trigger_rules` emits their panes
(running aggregates per group), the contents left after the last firing, and
the state, as it does for count firings. The remembered value is kept in the
``windows`` table's ``timer_ms`` column (a delta trigger has no timer): the
value itself for integral columns, the IEEE-754 bits of the double for
floating-point columns (exact both ways). The window's cleanup deletes the
row, so it forgets the remembered value, as the model's ``clear`` does;
purging empties the contents and keeps it.

A user-written delta function (any other ``DeltaFunction``) is user code and
stays on the per-key path.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from windowing.spark.input.columns import SEQ, TS

REMEMBERED = "__remembered"
"""The remembered value after the batch, encoded for the ``timer_ms`` column."""
WINDOW_COLUMNS = ("__k", REMEMBERED)
"""Per-window columns of :func:`numbered_elements` (the same on each of the window's elements)."""

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_FLOATING = (T.FloatType, T.DoubleType)


class _Codec:
    """The value column's values as the fold sees them, and their encoding in a long column."""

    def __init__(self, column: str, data_type: T.DataType):
        if isinstance(data_type, _INTEGRAL):
            self.floating = False
        elif isinstance(data_type, _FLOATING):
            self.floating = True
        else:
            raise ValueError(f"DeltaTrigger's AbsoluteDifference column {column!r} has type "
                             f"{data_type.simpleString()}; the DataFrame plan takes an integral or floating-point "
                             f"column")

    def value(self, column: Column) -> Column:
        return column.cast("double" if self.floating else "long")

    def encode(self, name: str) -> Column:
        """Column ``name`` (a value) as a long."""
        if not self.floating:
            return F.col(name)
        # reflect fails on a null argument: guard it (CASE WHEN does not evaluate the branch)
        bits = F.expr(f"reflect('java.lang.Double', 'doubleToRawLongBits', `{name}`)")
        return F.when(F.col(name).isNotNull(), bits.cast("long"))

    def decode(self, name: str) -> Column:
        """Column ``name`` (a stored long) as a value."""
        if not self.floating:
            return F.col(name).cast("long")
        # Double.toString round-trips exactly, so the string reflect returns casts back to the same double
        value = F.expr(f"reflect('java.lang.Double', 'longBitsToDouble', `{name}`)")
        return F.when(F.col(name).isNotNull(), value.cast("double"))

    def delta(self, new: Column, old: Column) -> Column:
        if self.floating:
            return F.abs(new - old)
        # exact for the whole long range (Python ints do not overflow)
        return F.abs(new.cast("decimal(20,0)") - old.cast("decimal(20,0)"))


def numbered_elements(ctx, trigger, elements: DataFrame, after_a: DataFrame) -> DataFrame:
    """The batch's elements with their group ``__g`` and their window's :data:`WINDOW_COLUMNS`.

    Args:
        ctx: the batch's :class:`windowing.spark.plans.base.PlanContext`.
        trigger: the ``DeltaTrigger`` (its ``delta_fn`` an ``AbsoluteDifference``).
        elements: accepted elements with their window (``ctx.window_keys``), ``__ts_ms``, ``__seq``.
        after_a: the window state, with the stored remembered value in ``__timer_A``.

    The fold keeps only the firing positions; an element's group is then a running count of
    the firings before it (a window function), so the cost grows with the elements plus the
    firings squared per window and batch (each firing copies the positions array).

    Returns:
        ``elements``' columns plus ``__c0`` (0), ``__n`` (null), ``__g`` (firings before the element
        in (event time, sequence) order; a firing element closes its group), ``__k`` (the window's
        firings in this batch) and :data:`REMEMBERED` (encoded).

    Raises:
        ValueError: when the delta column is neither integral nor floating-point. A null in the
            delta column fails the batch's job with a message naming the column and the element's
            event time (``raise_error``: the model cannot take that delta either).
    """
    keys = ctx.window_keys
    column = trigger.delta_fn.column
    codec = _Codec(column, elements.schema[column].dataType)
    threshold = F.lit(trigger.threshold)
    ranked = elements.withColumn("__i", F.row_number().over(Window.partitionBy(*keys).orderBy(TS, SEQ)))
    lists = ranked.groupBy(*keys).agg(
        F.array_sort(F.collect_list(F.struct(F.col("__i").alias("i"), F.col(TS).alias("ts"),
                                             codec.value(F.col(column)).alias("v"))))
        .alias("__xs"))
    stored = after_a.select(*keys, codec.decode("__timer_A").alias("__last0"))
    lists = (lists.alias("b").join(stored.alias("s"), ctx.join_condition("b", "s"), "left")
             .select(*[F.col(f"b.{c}") for c in keys], "b.__xs", "s.__last0"))

    def step(acc: Column, x: Column) -> Column:
        # A null has no delta (the model fails on it too): stop the batch, naming the column and the element.
        v = F.coalesce(x["v"], F.raise_error(F.concat(
            F.lit(f"DeltaTrigger: AbsoluteDifference column {column!r} is null in the element at event time "),
            x["ts"].cast("string"), F.lit(" ms; the delta needs a number (filter or fill nulls upstream)"))))
        fire = F.coalesce(acc["last"].isNotNull() & (codec.delta(v, acc["last"]) > threshold), F.lit(False))
        # only firings grow the array (arrays are copied on append: the cost goes with the firings)
        return F.struct(F.when(acc["last"].isNull() | fire, v).otherwise(acc["last"]).alias("last"),
                        F.when(fire, F.concat(acc["fires"], F.array(x["i"]))).otherwise(acc["fires"]).alias("fires"))

    start = F.struct(F.col("__last0").alias("last"), F.array().cast("array<int>").alias("fires"))
    folded = lists.select(*keys, F.aggregate(F.col("__xs"), start, step).alias("__fold"))
    per_window = (folded.select(*keys, F.col("__fold.fires").alias("__fires"),
                                F.size("__fold.fires").cast("long").alias("__k"), F.col("__fold.last").alias("__last1")))
    fired = per_window.select(*keys, F.explode("__fires").alias("__i_fired"), F.lit(1).alias("__fired"))
    flagged = (ranked.alias("e").join(fired.alias("f"), ctx.join_condition("e", "f") & (F.col("e.__i") == F.col("f.__i_fired")),
                                      "left")
               .select(*[F.col(f"e.{c}") for c in ranked.columns], F.coalesce(F.col("f.__fired"), F.lit(0)).alias("__fired")))
    # an element's group: the firings strictly before it (a firing element closes its own group)
    before = Window.partitionBy(*keys).orderBy("__i").rowsBetween(Window.unboundedPreceding, -1)
    flagged = flagged.withColumn("__g", F.coalesce(F.sum("__fired").over(before), F.lit(0)).cast("long"))
    info = per_window.select(*keys, "__k", codec.encode("__last1").alias(REMEMBERED))
    return (flagged.alias("e").join(info.alias("w"), ctx.join_condition("e", "w"), "inner")
            .select(*[F.col(f"e.{c}") for c in elements.columns],
                    F.lit(0).cast("long").alias("__c0"), F.lit(None).cast("long").alias("__n"), F.col("e.__g"),
                    F.col("w.__k"), F.col(f"w.{REMEMBERED}").alias(REMEMBERED)))
