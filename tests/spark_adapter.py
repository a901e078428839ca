"""Run transcripts through the Spark executor (on in-memory or Delta state): the same interface as the
reference model."""
from __future__ import annotations

from pyspark.sql.types import DataType

from windowing.core.records import BatchMetrics, BatchResult, LateElement, Pane, QuarantinedRow
from windowing.core.spec import APPEND, WindowSpec
from windowing.spark.lake import delta_lake_io
from windowing.spark.operator.dispatch import make_operator
from windowing.spark.operator.protocol import KeyedModelOperator
from windowing.spark.runtime.local_frames import local_frame
from windowing.spark.state.stores import MemoryStore, delta_store

_SPARK_TYPES = {bool: "boolean", int: "bigint", float: "double", str: "string"}


def infer_schema(spec: WindowSpec, rows: list[dict]) -> str:
    """A DDL schema for transcript rows: the spec's input columns, typed by their first non-null value."""
    columns = list(spec.input_columns)
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    fields = []
    for column in columns:
        values = [r.get(column) for r in rows if r.get(column) is not None]
        # A string among the values wins: the runners append a typing row (w=0.5) that a
        # transcript with string values in ``w`` must not turn into a double column.
        kind = "string" if any(isinstance(v, str) for v in values) else \
            "double" if any(isinstance(v, float) for v in values) else \
            _SPARK_TYPES.get(type(values[0]), "string") if values else "bigint"
        if column == spec.event_time_column:
            kind = "bigint"
        fields.append(f"`{column}` {kind}")
    return ", ".join(fields)


class SparkExecutor:
    """The Spark executor on a MemoryStore, fed transcript rows (dicts).

    The operator is the one the dispatch picks for the spec: a DataFrame plan
    or the per-key model (``windowing.spark.operator.dispatch.make_operator``).
    """

    def __init__(self, spark, spec: WindowSpec, schema: str, store=None):
        self.spark, self.spec, self.schema = spark, spec, schema
        self.struct = DataType.fromDDL(schema)
        self.store = store or MemoryStore(spark)
        self.operator = make_operator(spark, spec, self.store)

    @property
    def columns(self) -> list[str]:
        return [f.split("`")[1] for f in self.schema.split(", ")]

    def process_batch(self, rows, batch_id: int, watermark_ms: int | None = None,
                      processing_time_ms: int | None = None) -> BatchResult:
        # A local relation (as the MemoryStore's state): no RDD scan for every query on the batch.
        df = local_frame(self.spark, [tuple(r.get(c) for c in self.columns) for r in rows], self.struct)
        return self._result(self.operator.process_batch(df, batch_id, watermark_ms=watermark_ms,
                                                        processing_time_ms=processing_time_ms))

    def flush(self, batch_id: int) -> BatchResult:
        if self.store.last_progress() is None:
            return self.process_batch([], batch_id, watermark_ms=2**63 - 1)
        return self._result(self.operator.flush(batch_id))

    def _written(self, kind: str, batch_id: int) -> list[dict]:
        """The rows the batch wrote to an output (``results``, ``late`` or ``quarantine``)."""
        return [r for r in self.store.outputs[kind] if r["batch_id"] == batch_id]

    def _result(self, report) -> BatchResult:
        spec, b = self.spec, report.batch_id
        keys = spec.key_columns
        out = BatchResult(b, report.watermark_before_ms, report.watermark_after_ms, metrics=report.metrics)
        panes: dict = {}
        for r in self._written("results", b):
            ident = (tuple(r[k] for k in keys), r["window_start_ms"], r["window_end_ms"], r["pane_index"])
            supersedes = tuple((s["window_start_ms"], s["window_end_ms"]) for s in r.get("supersedes") or ())
            pane = panes.get(ident)
            if pane is None:
                pane = panes[ident] = Pane(
                    ident[0], ident[1], ident[2], {n: _plain(r[n]) for n, _ in spec.aggregates},
                    r["pane_index"], r["timing"], r["is_final"], r["watermark_ms"], b, supersedes,
                    rows=() if spec.process_function is not None else None)
            if spec.process_function is not None and r["row_index"] is not None:
                row = {c: r[c] for c in spec.process_function.output_columns}
                panes[ident] = Pane(**{**pane.__dict__, "rows": pane.rows + ((r["row_index"], row),)})
        for pane in panes.values():
            if pane.rows is not None:   # process function rows in the order it emitted them
                pane = Pane(**{**pane.__dict__, "rows": tuple(row for _, row in sorted(pane.rows, key=lambda x: x[0]))})
            out.panes.append(pane)
        for r in self._written("late", b):
            row = {k: v for k, v in r.items()
                   if k not in ("event_time_ms", "reason", "watermark_ms", "batch_id")}
            out.late.append(LateElement(tuple(r[k] for k in keys), r["event_time_ms"], row, r["reason"],
                                        r["watermark_ms"], b))
        for r in self._written("quarantine", b):
            row = {k: v for k, v in r.items() if k not in ("reason", "batch_id")}
            out.quarantined.append(QuarantinedRow(row, r["reason"], b))
        out.metrics = report.metrics if isinstance(report.metrics, BatchMetrics) else BatchMetrics()
        return out

    def open_windows(self) -> list:
        if isinstance(self.operator, KeyedModelOperator):
            return self.operator.open_keys()
        return self.store.open_windows()

    def time_windows_left(self) -> list:
        """State rows of time windows (global windows have a null start)."""
        if isinstance(self.operator, KeyedModelOperator):
            return keyed_time_windows_left(self.operator)
        start = self.store._schemas["windows"].names.index("window_start_ms") if self.store._schemas else None
        return [] if start is None else [r for r in self.store.open_windows() if r[start] is not None]


class KeyedExecutor(SparkExecutor):
    """The Spark executor forced onto the per-key path (the model per key in applyInArrow), whatever
    the dispatch would pick."""

    def __init__(self, spark, spec: WindowSpec, schema: str):
        super().__init__(spark, spec, schema)
        self.operator = KeyedModelOperator(spark, spec, self.store)


class DeltaExecutor(SparkExecutor):
    """The Spark executor on a :class:`DeltaStore` under ``root``: state in Delta tables, and every
    batch's panes, late and quarantined rows read back from the Delta output tables.

    A batch's result is read when first looked at: the transcript runners run every batch
    before they compare anything, so each output table is read once per run, not once per batch.

    ``plans_run``: the plan kind of every batch that ran (``BatchReport.plan``), so a test can tell
    which plans a transcript exercised on Delta. Append output mode only (the results table of
    ``final`` and ``upsert`` holds what the mode keeps, not every pane a batch emitted).
    """

    OUTPUTS = ("results", "late", "quarantine")
    RESTART_BEFORE_BATCH = 2
    """Before its third batch the DataFrame plan's operator is built anew on the same tables, as a
    restarted stream's would be: that batch reads its state from Delta with the changes the
    batches before logged in their progress rows folded in (:mod:`windowing.spark.state.log`),
    so each plan's state layout goes through the log and back."""

    def __init__(self, spark, spec: WindowSpec, schema: str, root: str, operator_id: str = "transcript"):
        if spec.output_mode != APPEND:
            raise ValueError(f"DeltaExecutor reads every pane back from the results table: output mode "
                             f"{spec.output_mode!r} keeps only some; use a spec in mode {APPEND!r}")
        self.plans_run: list[str] = []
        self._outputs: dict[str, dict[int, list[dict]]] | None = None
        self._root, self._operator_id, self._batches = root, operator_id, 0
        super().__init__(spark, spec, schema, delta_store(spark, spec, operator_id, root))

    def process_batch(self, rows, batch_id: int, watermark_ms: int | None = None,
                      processing_time_ms: int | None = None) -> BatchResult:
        if self._batches == self.RESTART_BEFORE_BATCH and not isinstance(self.operator, KeyedModelOperator):
            self.store = delta_store(self.spark, self.spec, self._operator_id, self._root)
            self.operator = make_operator(self.spark, self.spec, self.store)
        self._batches += 1
        return super().process_batch(rows, batch_id, watermark_ms, processing_time_ms)

    def _written(self, kind: str, batch_id: int) -> list[dict]:
        if self._outputs is None:
            self._outputs = {name: self._read_output(name) for name in self.OUTPUTS}
        return self._outputs[kind].get(batch_id, [])

    def _read_output(self, kind: str) -> dict[int, list[dict]]:
        """The output table's rows by batch id."""
        path = {"results": self.store.results_path, "late": self.store.late_path,
                "quarantine": self.store.quarantine_path}[kind]
        by_batch: dict[int, list[dict]] = {}
        if delta_lake_io.table_exists(self.spark, path):
            for row in self.spark.read.format("delta").load(path).collect():
                by_batch.setdefault(row["batch_id"], []).append(row.asDict())
        return by_batch

    def _result(self, report):
        if report.plan is not None:
            self.plans_run.append(report.plan)
        self._outputs = None            # this batch wrote to them
        return DeferredResult(lambda: SparkExecutor._result(self, report))

    def open_windows(self) -> list:
        if isinstance(self.operator, KeyedModelOperator):
            return self.operator.open_keys()
        return self.store.open_windows()

    def time_windows_left(self) -> list:
        if isinstance(self.operator, KeyedModelOperator):
            return keyed_time_windows_left(self.operator)
        start = len(self.spec.key_columns)    # the windows table: key columns, then the window start
        return [r for r in self.open_windows() if r[start] is not None]


class DeferredResult:
    """A :class:`BatchResult` built by ``build()`` when one of its attributes is first read."""

    def __init__(self, build):
        self._build, self._built = build, None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._built is None:
            self._built = self._build()
        return getattr(self._built, name)


def expected_plan_kind(spec: WindowSpec) -> str:
    """The plan kind a run of ``spec`` reports: its DataFrame plan's, else the per-key path's."""
    from windowing.spark.operator.dispatch import uses_dataframe_plan
    from windowing.spark.keyed.executor import KEYED_PLAN
    from windowing.spark.plans.registry import plan_for
    return plan_for(spec).kind if uses_dataframe_plan(spec) else KEYED_PLAN


def _plain(value):
    """A Spark Row (struct result) as the tuple the model emits."""
    return tuple(value) if hasattr(value, "asDict") else value


def keyed_time_windows_left(operator: KeyedModelOperator) -> list:
    """The (key, window) pairs of time windows still in the per-key state (unpickled)."""
    import pickle
    from windowing.spark.keyed.state import STATE
    state_at = operator.state_table.schema.names.index(STATE) if operator.state_table.schema else None
    return [(row[:len(operator.spec.key_columns)], w) for row in operator.open_keys()
            for w in pickle.loads(row[state_at]).windows if not w.is_global]


def assert_plan_refuses_per_key_state(spark, spec: WindowSpec, processing_time_ms: int | None = None) -> None:
    """State the per-key path wrote for ``spec`` (before the spec had a plan) has another layout: the
    DataFrame-plan operator refuses it (the salted fingerprint) and accepts it after the reset the
    message names."""
    import pytest
    from windowing.spark import SparkWindowOperator, SpecMismatchError
    store = MemoryStore(spark)
    KeyedModelOperator(spark, spec, store).process_batch(
        spark.createDataFrame([("a", 1, 1)], "k string, ts bigint, v bigint"), 0, processing_time_ms=processing_time_ms)
    with pytest.raises(SpecMismatchError, match="reset_state=True"):
        SparkWindowOperator(spark, spec, store)
    SparkWindowOperator(spark, spec, store, reset_state=True)   # the way out the message names


class Crash(Exception):
    """The fault a crash-and-replay run injects."""


def run_with_a_crash_and_replay(spark, spec: WindowSpec, batches: list[tuple[list[tuple], int]], schema: str,
                                root: str, crash_batch: int, operator_id: str = "crash",
                                stage: str = "before_progress") -> tuple:
    """Run ``batches`` (``(rows, processing_time_ms)``, rows as tuples in ``schema``'s column order) on a
    DataFrame-plan operator on Delta state under ``root``, crashing once at ``stage`` of batch
    ``crash_batch``; a new operator replays that batch, as a restarted job would. The reference model
    runs the same batches; both are flushed after the last batch.

    Returns:
        ``(operator, expected panes)``: the last operator (its store holds the results) and the
        model's panes of the whole run.

    Raises:
        AssertionError: when the crash was never injected (the run would prove nothing).
    """
    from windowing.core.reference import ReferenceOperator
    from windowing.spark.operator.protocol import SparkWindowOperator
    columns = [field.split()[0] for field in schema.split(",")]
    crashes = {"left": 1}
    current = {"batch": None}

    def fault(at_stage):
        if at_stage == stage and current["batch"] == crash_batch and crashes["left"]:
            crashes["left"] -= 1
            raise Crash(at_stage)

    op = SparkWindowOperator.on_delta(spark, spec, operator_id, root, fault_injection=fault)
    model = ReferenceOperator(spec)
    expected = []
    for b, (rows, pt) in enumerate(batches):
        current["batch"] = b
        expected += model.process_batch([dict(zip(columns, row)) for row in rows], b, processing_time_ms=pt).panes
        df = spark.createDataFrame(rows, schema)
        try:
            op.process_batch(df, b, processing_time_ms=pt)
        except Crash:
            op = SparkWindowOperator.on_delta(spark, spec, operator_id, root)
            op.process_batch(df, b, processing_time_ms=pt)
    assert crashes["left"] == 0, f"no crash at {stage} of batch {crash_batch}"
    expected += model.flush(len(batches)).panes
    op.flush(len(batches))
    return op, expected


def pane_rows(spark, op, values: tuple[str, ...], supersedes: bool = False) -> list[tuple]:
    """The operator's results table as sorted (key, window, pane info, ``values``..., watermark, batch) tuples."""
    rows = spark.read.format("delta").load(op.store.results_path).collect()
    return sorted((r["k"], r["window_start_ms"], r["window_end_ms"], r["pane_index"], r["timing"], r["is_final"],
                   *[r[v] for v in values], r["watermark_ms"], r["batch_id"],
                   *([tuple((x["window_start_ms"], x["window_end_ms"]) for x in r["supersedes"])] if supersedes else []))
                  for r in rows)


def model_pane_rows(panes, values: tuple[str, ...], supersedes: bool = False) -> list[tuple]:
    """The model's panes as :func:`pane_rows` gives the results table's."""
    return sorted((p.key[0], p.window_start_ms, p.window_end_ms, p.pane_index, p.timing, p.is_final,
                   *[p.values[v] for v in values], p.watermark_ms, p.batch_id,
                   *([tuple(p.supersedes)] if supersedes else []))
                  for p in panes)
