"""Runnable examples: the two demos (``winjob demo``, ``winjob demo --sessions``) and example
user functions (a trigger, an assigner, an evictor) that job files name by import path,
e.g. ``trigger = "examples.triggers:EveryNthLarge"``."""


class CountAndColumn:
    """What the example trigger and evictor share: a count ``n`` of elements and the ``column`` they read.

    A mixin of frozen dataclasses with fields ``n`` and ``column``; ``columns``
    tells the spec which input column the part reads.
    """

    def __post_init__(self) -> None:
        name = type(self).__name__
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n <= 0:
            raise ValueError(f"{name} n must be a positive int, got {self.n!r}")
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"{name} column must be a column name, got {self.column!r}")

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)
