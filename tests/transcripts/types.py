"""The transcript format: a spec, steps (one batch each, or a flush), and what each step must emit.

A :class:`Transcript` names the executors that run it and, per executor, the cuts that apply
(:class:`Cut`): ``STEPS`` runs the steps as written and compares every step's panes, late rows,
quarantined rows, metrics and watermark; ``ONE``, ``TWO``, ``THREE`` and ``ALL`` feed every row in
arrival order in batches of 1, 2, 3 or all of them, flush, and compare the final results only
(the last pane per window), which only a ``batching_invariant`` transcript may ask for.

What runs where by default (CI time: a Spark batch is seconds, a model batch microseconds):

* the reference model and the model split by key (the per-key path's algorithm in plain
  Python) run every transcript step by step, and a batching-invariant one also cut (the model
  cut into 1, 2, 3 and all; the split into 1, 2 and all);
* Spark on the in-memory store (``spark``: the DataFrame plan the dispatch picks, else the
  per-key path), the Spark executor forced onto the per-key path (``spark_per_key``) and Spark
  on Delta state (``delta``) run only what a transcript declares.

A cut that gives the same batches as an earlier cut of the same executor runs once; a re-cut that
gives the very batches the steps run feeds (no explicit watermark or processing time, one flush at
the end) is folded into the steps run, which makes the re-cut's checks as well
(``runner.distinct_cuts``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from windowing.core.records import LATE_BEYOND_ALLOWED_LATENESS
from windowing.core.spec import WindowSpec


class Executor(enum.Enum):
    """Who runs a transcript."""

    REFERENCE = "reference"              # windowing.core.reference.ReferenceOperator
    MODEL_PER_KEY = "model_per_key"      # the model split by key as the per-key path runs it (pure Python)
    SPARK = "spark"                      # Spark on a MemoryStore: the dispatch's DataFrame plan or the per-key path
    SPARK_PER_KEY = "spark_per_key"      # Spark forced onto the per-key path (the model per key in applyInArrow)
    DELTA = "delta"                      # Spark with state and outputs in Delta tables

    @property
    def needs_spark(self) -> bool:
        return self not in (Executor.REFERENCE, Executor.MODEL_PER_KEY)


class Cut(enum.Flag):
    """How the rows are fed: the steps as written, or every row re-cut into batches of 1, 2, 3 or all."""

    NONE = 0
    STEPS = enum.auto()
    ONE = enum.auto()
    TWO = enum.auto()
    THREE = enum.auto()
    ALL = enum.auto()

    @property
    def size(self) -> int | None:
        """Rows per batch of a re-cut (None: all rows in one batch)."""
        return {Cut.ONE: 1, Cut.TWO: 2, Cut.THREE: 3, Cut.ALL: None}[self]

    @property
    def label(self) -> str:
        """``steps``, ``cut1``, ...; a combination joins its members' (``steps+cutn``: a steps run that
        also makes the checks of the re-cut folded into it)."""
        names = {Cut.STEPS: "steps", Cut.ONE: "cut1", Cut.TWO: "cut2", Cut.THREE: "cut3", Cut.ALL: "cutn"}
        return "+".join(names[c] for c in self.members())

    def members(self) -> list["Cut"]:
        """The single cuts of a combination, STEPS first, then by batch size."""
        return [c for c in (Cut.STEPS, Cut.ONE, Cut.TWO, Cut.THREE, Cut.ALL) if c in self]


RECUTS = Cut.ONE | Cut.TWO | Cut.THREE | Cut.ALL


@dataclass(frozen=True)
class ExpectedPane:
    """``supersedes``: (start, end) of merged-away windows this pane replaces; ``rows``: a process function's output."""

    key: tuple
    window_start_ms: int | None
    window_end_ms: int | None
    values: dict
    pane_index: int
    timing: str
    is_final: bool
    supersedes: tuple = ()
    rows: tuple | None = None


@dataclass(frozen=True)
class ExpectedLate:
    key: tuple
    timestamp_ms: int
    reason: str = LATE_BEYOND_ALLOWED_LATENESS


@dataclass(frozen=True)
class Step:
    """One batch (``rows`` + optional explicit ``watermark_ms``) or a flush.

    ``metrics``: a subset of ``BatchMetrics`` fields to check (the runner
    always checks ``accounted()``, ``input_rows``, ``late_rows`` and
    ``panes_emitted``). ``watermark_after_ms``: checked when given.
    ``quarantined``: the reasons of the quarantined rows (order-insensitive).
    ``processing_time_ms``: the clock at which the batch arrives.
    """

    rows: tuple = ()
    watermark_ms: int | None = None
    flush: bool = False
    panes: tuple = ()
    late: tuple = ()
    metrics: dict = field(default_factory=dict)
    watermark_after_ms: int | None = None
    quarantined: tuple = ()
    processing_time_ms: int | None = None


@dataclass(frozen=True)
class Transcript:
    """A spec, its steps and expectations, and who runs it with which cuts.

    ``reference``/``model_per_key``: None takes the default (steps, plus the re-cuts when
    ``batching_invariant``; the model per key skips a transcript with ``reference_xfail``).
    ``spark``, ``spark_per_key``, ``delta``: the cuts these executors run (none unless declared).
    ``reference_xfail`` names a known disagreement of the reference model with the contract
    (the reference run is marked xfail with that reason).
    """

    name: str
    spec: WindowSpec
    steps: tuple
    batching_invariant: bool = False
    reference_xfail: str | None = None
    doc: str = ""
    reference: Cut | None = None
    model_per_key: Cut | None = None
    spark: Cut = Cut.NONE
    spark_per_key: Cut = Cut.NONE
    delta: Cut = Cut.NONE

    def __post_init__(self):
        invariant_cuts = RECUTS if self.batching_invariant else Cut.NONE
        if self.reference is None:
            object.__setattr__(self, "reference", Cut.STEPS | invariant_cuts)
        if self.model_per_key is None:
            object.__setattr__(self, "model_per_key", Cut.NONE if self.reference_xfail else
                               Cut.STEPS | (invariant_cuts & ~Cut.THREE))
        for executor, cuts in self.runs.items():
            if cuts & RECUTS and not self.batching_invariant:
                raise ValueError(f"{self.name}: {executor.value} re-cuts ({cuts}) need a batching-invariant "
                                 f"transcript")

    @property
    def runs(self) -> dict[Executor, Cut]:
        """Executor -> the cuts it runs (executors with none left out)."""
        every = {Executor.REFERENCE: self.reference, Executor.MODEL_PER_KEY: self.model_per_key,
                 Executor.SPARK: self.spark, Executor.SPARK_PER_KEY: self.spark_per_key, Executor.DELTA: self.delta}
        return {executor: cuts for executor, cuts in every.items() if cuts}

    @property
    def rows(self) -> list[dict]:
        """Every input row, in arrival order (what a re-cut feeds)."""
        return [dict(row) for step in self.steps if not step.flush for row in step.rows]
