"""An example user evictor that job files name by import path.

``[window] evictor = "examples.evictors:KeepLargest"`` with
``evictor_args = { n = 3, column = "item_count" }`` keeps, when a window
fires, only its 3 elements with the largest ``item_count``; it runs on the
per-key path (the reference model per key, the window's elements kept in the
Delta keyed state table between batches).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from examples import CountAndColumn


@dataclass(frozen=True)
class KeepLargest(CountAndColumn):
    """Keep the ``n`` elements whose ``column`` is largest (ties: the later arrival), in their order.

    Elements are ``(timestamp_ms, seq, row)`` triples, oldest first; a null
    value counts as the smallest. With ``do_evict_after`` the function sees
    every element and the next panes only the kept ones.
    """

    n: int = 3
    column: str = "item_count"
    do_evict_after: bool = False

    def evict(self, elements: Sequence[tuple]) -> list[tuple]:
        def rank(element: tuple) -> tuple:
            value = element[2].get(self.column)
            return (value is not None, value if value is not None else 0, element[1])
        kept = {seq for _, seq, _ in sorted(elements, key=rank)[-self.n:]}
        return [e for e in elements if e[1] in kept]
