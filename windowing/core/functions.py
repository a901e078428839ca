"""Process window functions: a function that sees all elements of a window.

Flink's ``ProcessWindowFunction``: when a window fires, the function gets
the key, a context (the window, the watermark, the processing time, the
pane's timing and index) and every element of the window (after an evictor
ran, when there is one), and may emit any number of output rows. Windows
with a process function keep element buffers instead of accumulators.

Example::

    @dataclass(frozen=True)
    class TopTwo:
        def process(self, key, context, elements):
            best = sorted(elements, key=lambda row: -row["v"])[:2]
            return [dict(rank=i + 1, v=row["v"]) for i, row in enumerate(best)]

    spec = builder.process(TopTwo(), output_schema="rank int, v bigint", columns=("v",))
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

from windowing.core.time import require_picklable


@dataclass(frozen=True)
class ProcessContext:
    """What a process function knows about the firing it is called for."""

    window_start_ms: int | None
    window_end_ms: int | None
    current_watermark_ms: int
    current_processing_time_ms: int
    timing: str
    pane_index: int


@runtime_checkable
class ProcessWindowFunction(Protocol):
    """``process(key, context, elements) -> iterable of dict rows``.

    ``key`` is the tuple of key values (``()`` for non-keyed windows);
    ``elements`` is a list of row dicts in (event time, arrival sequence)
    order, or a pandas DataFrame of the input columns when the spec asks for
    ``as_pandas``. Each returned row must have exactly the output schema's
    columns.
    """

    def process(self, key: tuple, context: ProcessContext, elements: Any) -> Iterable[Mapping[str, Any]]: ...


_FIELD = re.compile(r"^\s*`?([A-Za-z_][A-Za-z0-9_]*)`?\s+(.+?)\s*$")


def schema_columns(output_schema: str) -> tuple[str, ...]:
    """The column names of a DDL schema string like ``"rank int, v bigint"``."""
    names = []
    depth, part, parts = 0, "", []
    for ch in output_schema:  # split on top-level commas only (types may be struct<a:int,b:int>)
        depth += ch in "<(" 
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    parts.append(part)
    for p in parts:
        match = _FIELD.match(p)
        if not match:
            raise ValueError(f"output_schema {output_schema!r}: {p.strip()!r} is not 'name type'")
        names.append(match.group(1))
    return tuple(names)


@dataclass(frozen=True)
class Process:
    """A process window function and what it needs.

    Args:
        function: a :class:`ProcessWindowFunction` (a module-level object with
            value equality and a stable repr, e.g. a frozen dataclass).
        output_schema: the DDL schema of the rows it emits (``"a int, b string"``).
        columns: the input columns it reads (besides key and event time).
        as_pandas: hand the elements over as a pandas DataFrame instead of rows.
    """

    function: Any
    output_schema: str
    columns: tuple[str, ...] = ()
    as_pandas: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.function, ProcessWindowFunction):
            raise ValueError(f"process function {self.function!r} must define process(key, context, elements)")
        require_picklable(self.function, "process function")
        if not isinstance(self.output_schema, str) or not self.output_schema.strip():
            raise ValueError(f"output_schema must be a DDL string like 'a int, b string', got {self.output_schema!r}")
        object.__setattr__(self, "columns", (self.columns,) if isinstance(self.columns, str) else tuple(self.columns))
        names = schema_columns(self.output_schema)
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"output_schema {self.output_schema!r} repeats columns {duplicates}")

    @property
    def output_columns(self) -> tuple[str, ...]:
        return schema_columns(self.output_schema)

    def run(self, key: tuple, context: ProcessContext, rows: list[dict], input_columns: tuple[str, ...]) -> list[dict]:
        """Call the function and check that every emitted row has the output columns.

        Raises:
            ValueError: naming the row whose columns differ from the output schema.
        """
        elements: Any = rows
        if self.as_pandas:
            import pandas as pd  # only process functions that ask for a DataFrame need pandas
            elements = pd.DataFrame([{c: r.get(c) for c in input_columns} for r in rows], columns=list(input_columns))
        out = []
        want = set(self.output_columns)
        for row in self.function.process(key, context, elements) or ():
            row = dict(row)
            if set(row) != want:
                raise ValueError(f"process function {self.function!r} emitted {row!r}; its columns must be "
                                 f"exactly the output schema's {sorted(want)}")
            out.append(row)
        return out
