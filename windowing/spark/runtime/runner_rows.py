"""Kinds of rows in one output of a per-key runner (a ``cogroup().applyInArrow`` function).

A runner returns several kinds of rows (panes, late rows, counts, state) in one Arrow
output; each kind is a :class:`RunnerRow` that tags the rows it makes and finds them again.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

KIND = "__kind"
"""The column naming a runner output row's kind."""


@dataclass(frozen=True)
class RunnerRow:
    """One kind of row of a runner's output, named ``tag`` in the :data:`KIND` column."""

    tag: str

    def make(self, base: dict, **fields) -> dict:
        """``base`` and ``fields`` as a row of this kind."""
        return dict(base, **{KIND: self.tag}, **fields)

    def flag(self) -> Column:
        """Whether an output row is of this kind."""
        return F.col(KIND) == self.tag

    def rows(self, out: DataFrame) -> DataFrame:
        """The rows of this kind in the runner's output ``out``."""
        return out.where(self.flag())
