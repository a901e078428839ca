"""Evictors: remove elements from a window's buffer around the window function."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class CountEvictor:
    """Keep only the last ``max_count`` elements (Flink's ``CountEvictor``).

    Applied before the window function (``do_evict_after=False``, the default)
    the function sees at most ``max_count`` elements; the evicted elements are
    gone from the window state for good.
    """

    max_count: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.max_count, int) or isinstance(self.max_count, bool) or self.max_count <= 0:
            raise ValueError(f"CountEvictor max_count must be a positive int, got {self.max_count!r}")

    def evict(self, elements: Sequence[T]) -> list[T]:
        """Return the elements that remain, in order (oldest first)."""
        return list(elements[-self.max_count:])
