"""What a join emits: a projection of each pair, a join function, or a co-group function.

* :class:`Projection`: named columns of the left and the right row
  (``project(left=("user", "amount"), right={"page": "page_seen"})``); the
  missing side of an outer join gives nulls.
* :class:`JoinFunction` (Flink's ``JoinFunction``): ``join(left, right)``
  returns one output row (a mapping) or None for none; ``left`` or ``right``
  is None for the missing side of an outer, semi or anti join.
* :class:`CoGroupFunction` (Flink's ``CoGroupFunction``):
  ``co_group(key, window, lefts, rights)`` is called once per key and firing
  window with at least one element on either side, and returns any number
  of rows. ``window`` is a :class:`~windowing.core.functions.ProcessContext`
  (the window's bounds and the pane's timing and index).

User functions must be picklable module-level objects (frozen dataclasses):
executors ship them and persist specs. Every emitted row must have exactly
the output columns (the projection's, or those of the ``output_schema``
given with the function).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from windowing.core.functions import ProcessContext, schema_columns
from windowing.core.joins.kinds import JoinKind
from windowing.core.time import require_picklable


@runtime_checkable
class JoinFunction(Protocol):
    """``join(left, right) -> mapping | None``: one output row of a pair (None: no row)."""

    def join(self, left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> Mapping[str, Any] | None: ...


@runtime_checkable
class CoGroupFunction(Protocol):
    """``co_group(key, window, lefts, rights) -> iterable of mappings`` (see the module docstring)."""

    def co_group(self, key: tuple, window: ProcessContext, lefts: list[dict],
                 rights: list[dict]) -> Iterable[Mapping[str, Any]]: ...


def _checked_row(row: Mapping[str, Any], columns: tuple[str, ...], owner: Any) -> dict:
    row = dict(row)
    if set(row) != set(columns):
        raise ValueError(f"{owner!r} emitted {row!r}; its columns must be exactly the output columns "
                         f"{sorted(columns)}")
    return row


def _column_pairs(columns: Sequence[str] | Mapping[str, str], side: str) -> tuple[tuple[str, str], ...]:
    pairs = tuple(columns.items()) if isinstance(columns, Mapping) else tuple((c, c) for c in columns)
    for source, name in pairs:
        if not (isinstance(source, str) and source and isinstance(name, str) and name.isidentifier()):
            raise ValueError(f"project({side}=...) needs column names (or a mapping of column to output "
                             f"name, an identifier), got {source!r} -> {name!r}")
    return pairs


@dataclass(frozen=True)
class Projection:
    """Columns of the left and the right row, under output names.

    Attributes:
        left, right: ``(input column, output name)`` pairs, in output order
            (left first). The missing side of a pair gives nulls.
    """

    left: tuple[tuple[str, str], ...]
    right: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        names = [name for _, name in self.left + self.right]
        if not names:
            raise ValueError("project() needs at least one column of the left or the right input")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"project() output names repeat: {repeated}; rename one side's columns with a "
                             f"mapping, e.g. right={{'{repeated[0]}': 'right_{repeated[0]}'}}")

    @classmethod
    def of(cls, left: Sequence[str] | Mapping[str, str] = (),
           right: Sequence[str] | Mapping[str, str] = ()) -> "Projection":
        if isinstance(left, str) or isinstance(right, str):
            raise ValueError(f"project() takes tuples of column names (or mappings), got left={left!r}, "
                             f"right={right!r}")
        return cls(_column_pairs(left, "left"), _column_pairs(right, "right"))

    @property
    def output_columns(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.left + self.right)

    @property
    def left_columns(self) -> tuple[str, ...]:
        return tuple(source for source, _ in self.left)

    @property
    def right_columns(self) -> tuple[str, ...]:
        return tuple(source for source, _ in self.right)

    def row(self, left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict | None:
        out = {name: None if left is None else left.get(source) for source, name in self.left}
        out.update({name: None if right is None else right.get(source) for source, name in self.right})
        return out


@dataclass(frozen=True)
class ApplyJoin:
    """A :class:`JoinFunction` and the DDL schema of the rows it returns (``"user string, n bigint"``)."""

    function: Any
    output_schema: str

    def __post_init__(self) -> None:
        if not isinstance(self.function, JoinFunction):
            raise ValueError(f"join function {self.function!r} must define join(left, right)")
        require_picklable(self.function, "join function")
        _check_schema(self.output_schema)

    @property
    def output_columns(self) -> tuple[str, ...]:
        return schema_columns(self.output_schema)

    @property
    def left_columns(self) -> tuple[str, ...]:
        return ()

    @property
    def right_columns(self) -> tuple[str, ...]:
        return ()

    def row(self, left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict | None:
        out = self.function.join(left, right)
        return None if out is None else _checked_row(out, self.output_columns, self.function)


def _check_schema(output_schema: Any) -> None:
    if not isinstance(output_schema, str) or not output_schema.strip():
        raise ValueError(f"output_schema must be a DDL string like 'a int, b string', got {output_schema!r}")
    names = schema_columns(output_schema)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"output_schema {output_schema!r} repeats columns {repeated}")


PairOutput = Projection | ApplyJoin


@dataclass(frozen=True)
class PairJoin:
    """A window join's firing: the kind's pairs, each through the pair output."""

    kind: JoinKind
    output: PairOutput

    def __post_init__(self) -> None:
        if not isinstance(self.kind, JoinKind):
            raise ValueError(f"join kind must be a JoinKind, got {self.kind!r}")
        if not isinstance(self.output, (Projection, ApplyJoin)):
            raise ValueError(f"a join's output must be a Projection or ApplyJoin, got {self.output!r}")
        if self.kind.left_only and isinstance(self.output, Projection) and self.output.right:
            raise ValueError(f"a {self.kind.name} join emits left rows only; project() right columns "
                             f"{list(self.output.right_columns)} would always be null: drop them")

    @property
    def output_columns(self) -> tuple[str, ...]:
        return self.output.output_columns

    def firing_rows(self, key: tuple, window: ProcessContext, lefts: list[dict], rights: list[dict]) -> list[dict]:
        rows = (self.output.row(left, right) for left, right in self.kind.pairs(lefts, rights))
        return [row for row in rows if row is not None]


@dataclass(frozen=True)
class CoGroup:
    """A :class:`CoGroupFunction` and the DDL schema of the rows it returns."""

    function: Any
    output_schema: str

    def __post_init__(self) -> None:
        if not isinstance(self.function, CoGroupFunction):
            raise ValueError(f"co-group function {self.function!r} must define co_group(key, window, lefts, rights)")
        require_picklable(self.function, "co-group function")
        _check_schema(self.output_schema)

    @property
    def output_columns(self) -> tuple[str, ...]:
        return schema_columns(self.output_schema)

    def firing_rows(self, key: tuple, window: ProcessContext, lefts: list[dict], rights: list[dict]) -> list[dict]:
        out = self.function.co_group(key, window, lefts, rights) or ()
        return [_checked_row(row, self.output_columns, self.function) for row in out]


WindowJoinFunction = PairJoin | CoGroup
