"""Run transcripts through the Spark executor: the same interface as the reference model."""
from __future__ import annotations

from windowing.core.records import BatchMetrics, BatchResult, LateElement, Pane, QuarantinedRow
from windowing.core.spec import WindowSpec
from windowing.spark.operator import SparkWindowOperator
from windowing.spark.stores import MemoryStore

_SPARK_TYPES = {bool: "boolean", int: "bigint", float: "double", str: "string"}


def infer_schema(spec: WindowSpec, rows: list[dict]) -> str:
    """A DDL schema for transcript rows: the spec's input columns, typed by their first non-null value."""
    columns = list(spec.input_columns)
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    fields = []
    for column in columns:
        values = [r.get(column) for r in rows if r.get(column) is not None]
        kind = "double" if any(isinstance(v, float) for v in values) else \
            _SPARK_TYPES.get(type(values[0]), "string") if values else "bigint"
        if column == spec.event_time_column:
            kind = "bigint"
        fields.append(f"`{column}` {kind}")
    return ", ".join(fields)


class SparkExecutor:
    """The Spark executor on a MemoryStore, fed transcript rows (dicts)."""

    def __init__(self, spark, spec: WindowSpec, schema: str, store=None):
        self.spark, self.spec, self.schema = spark, spec, schema
        self.store = store or MemoryStore(spark)
        self.operator = SparkWindowOperator(spark, spec, self.store)

    @property
    def columns(self) -> list[str]:
        return [f.split("`")[1] for f in self.schema.split(", ")]

    def process_batch(self, rows, batch_id: int, watermark_ms: int | None = None) -> BatchResult:
        df = self.spark.createDataFrame([tuple(r.get(c) for c in self.columns) for r in rows], self.schema)
        return self._result(self.operator.process_batch(df, batch_id, watermark_ms=watermark_ms))

    def flush(self, batch_id: int) -> BatchResult:
        if self.store.last_progress() is None:
            return self.process_batch([], batch_id, watermark_ms=2**63 - 1)
        return self._result(self.operator.flush(batch_id))

    def _result(self, report) -> BatchResult:
        spec, b = self.spec, report.batch_id
        keys = spec.key_columns
        out = BatchResult(b, report.watermark_before_ms, report.watermark_after_ms, metrics=report.metrics)
        for r in self.store.outputs["results"]:
            if r["batch_id"] == b:
                out.panes.append(Pane(tuple(r[k] for k in keys), r["window_start_ms"], r["window_end_ms"],
                                      {n: r[n] for n, _ in spec.aggregates}, r["pane_index"], r["timing"],
                                      r["is_final"], r["watermark_ms"], b,
                                      supersedes=tuple((w["window_start_ms"], w["window_end_ms"])
                                                       for w in r.get("supersedes") or ())))
        for r in self.store.outputs["late"]:
            if r["batch_id"] == b:
                row = {k: v for k, v in r.items()
                       if k not in ("event_time_ms", "reason", "watermark_ms", "batch_id")}
                out.late.append(LateElement(tuple(r[k] for k in keys), r["event_time_ms"], row, r["reason"],
                                            r["watermark_ms"], b))
        for r in self.store.outputs["quarantine"]:
            if r["batch_id"] == b:
                row = {k: v for k, v in r.items() if k not in ("reason", "batch_id")}
                out.quarantined.append(QuarantinedRow(row, r["reason"], b))
        out.metrics = report.metrics if isinstance(report.metrics, BatchMetrics) else BatchMetrics()
        return out

    def open_windows(self) -> list:
        return self.store.open_windows()

    def time_windows_left(self) -> list:
        """State rows of time windows (global windows have a null start)."""
        start = self.store._schemas["windows"].names.index("window_start_ms") if self.store._schemas else None
        return [] if start is None else [r for r in self.store.open_windows() if r[start] is not None]
