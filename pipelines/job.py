"""A windowed job's definition: source, window spec, outputs, state, Spark settings.

Jobs are TOML files (see ``jobs/*.toml``); the CLI, the demo and the DAGs all
read the same definition. Relative paths resolve against ``root`` (default:
the ``WINDOWING_DATA_ROOT`` environment variable, else the current folder).
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from windowing.core.aggregates import Avg, Count, Max, Min, Sum
from windowing.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from windowing.core.spec import WindowSpec, WindowSpecBuilder
from windowing.core.time import parse_duration_ms
from windowing.core.triggers import CountTrigger, EventTimeTrigger

_AGGREGATE = re.compile(r"^\s*(sum|count|min|max|avg)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)?\s*\)\s*$")
_AGG_TYPES = {"sum": Sum, "count": Count, "min": Min, "max": Max, "avg": Avg}


@dataclass(frozen=True)
class Job:
    """A job definition, validated; paths are absolute."""

    name: str
    operator_id: str
    spec: WindowSpec
    source_path: str
    state_root: str
    results_path: str
    late_path: str
    quarantine_path: str
    checkpoint_path: str
    spark_conf: dict = field(default_factory=dict)
    backfill_chunk: str = "6 hours"
    event_id_column: str | None = None
    result_bounds: tuple[tuple[str, float | None, float | None], ...] = ()
    raw_max_age_ms: int = 3650 * 86_400_000

    @property
    def output_root(self) -> str:
        """The folder of the job's output tables (where Data Docs go too)."""
        return str(Path(self.results_path).parent)

    def with_operator(self, operator_id: str, suffix: str) -> "Job":
        """The same job writing to other tables (e.g. a backfill beside the stream)."""
        base = str(Path(self.results_path).parent)
        return replace(self, operator_id=operator_id, results_path=f"{base}/results_{suffix}",
                       late_path=f"{base}/late_{suffix}", quarantine_path=f"{base}/quarantine_{suffix}",
                       checkpoint_path=f"{self.checkpoint_path}_{suffix}")


def parse_aggregate(name: str, text: str):
    match = _AGGREGATE.match(text)
    if not match:
        raise ValueError(f"aggregate {name} = {text!r} is not understood; write e.g. 'sum(amount)', "
                         f"'count()', 'min(x)', 'max(x)', 'avg(x)'")
    kind, column = match.groups()
    if kind == "count":
        return Count(column)
    if column is None:
        raise ValueError(f"aggregate {name} = {text!r} needs a column, e.g. '{kind}(amount)'")
    return _AGG_TYPES[kind](column)


def build_spec(source: dict, window: dict, aggregates: dict) -> WindowSpec:
    builder = (WindowSpecBuilder().key_by(*_as_list(source.get("key")))
               .event_time(source["event_time"], source.get("max_out_of_orderness", 0)))
    kind = window.get("type", "tumbling")
    if kind == "tumbling":
        builder = builder.window(TumblingEventTimeWindows.of(window["size"], window.get("offset", 0)))
    elif kind == "sliding":
        builder = builder.window(SlidingEventTimeWindows.of(window["size"], window["slide"], window.get("offset", 0)))
    elif kind == "count":
        builder = builder.count_window(int(window["size"]), window.get("slide"))
    else:
        raise ValueError(f"window type {kind!r} is not one of 'tumbling', 'sliding', 'count'")
    trigger = window.get("trigger")
    if trigger:
        if trigger == "event_time":
            builder = builder.trigger(EventTimeTrigger())
        elif trigger.startswith("count:"):
            builder = builder.trigger(CountTrigger(int(trigger.split(":", 1)[1])))
        else:
            raise ValueError(f"trigger {trigger!r} is not 'event_time' or 'count:<n>'")
    if "allowed_lateness" in window:
        builder = builder.allowed_lateness(window["allowed_lateness"])
    if "max_event_time_skew" in source:
        builder = builder.max_event_time_skew(source["max_event_time_skew"])
    if "dedup_horizon" in source:
        if "event_id" not in source:
            raise ValueError("[source] dedup_horizon needs event_id: the column that identifies an event")
        builder = builder.deduplicate(source["event_id"], source["dedup_horizon"])
    for column, (lo, hi) in parse_bounds(source.get("bounds", {}), "[source.bounds]").items():
        builder = builder.value_bounds(column, lo, hi)
    mode = window.get("mode")
    if mode not in (None, "accumulating", "discarding"):
        raise ValueError(f"mode {mode!r} must be 'accumulating' or 'discarding'")
    if mode:
        builder = builder.accumulating() if mode == "accumulating" else builder.discarding()
    builder = builder.side_output_late_data(bool(window.get("late_output", True)))
    if not aggregates:
        raise ValueError("the [aggregates] table is empty; add e.g. total = 'sum(amount)'")
    return builder.aggregate(**{name: parse_aggregate(name, text) for name, text in aggregates.items()})


def parse_bounds(table: dict, where: str) -> dict[str, tuple[float | None, float | None]]:
    """``{column = {min = 0, max = 100}}`` (either bound optional) to ``{column: (min, max)}``."""
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table of column = {{min = ..., max = ...}}, got {table!r}")
    bounds = {}
    for column, value in table.items():
        if not isinstance(value, dict) or not set(value) <= {"min", "max"} or not value:
            raise ValueError(f"{where} {column} = {value!r}: write {{min = 0, max = 100}} (either may be left out)")
        for side in ("min", "max"):
            v = value.get(side)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise ValueError(f"{where} {column}.{side} = {v!r} is not a number")
        bounds[column] = (value.get("min"), value.get("max"))
    return bounds


def _as_list(value) -> list[str]:
    if value is None:
        raise ValueError("[source] key is missing: the column(s) to key by")
    return [value] if isinstance(value, str) else list(value)


def load_job(path: str | Path, root: str | Path | None = None) -> Job:
    """Read and validate a job TOML file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"job definition {path} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"job definition {path} is not valid TOML: {error}") from None
    root = Path(root or os.environ.get("WINDOWING_DATA_ROOT", ".")).resolve()
    resolve = lambda p: str(p if Path(p).is_absolute() else root / p)  # noqa: E731
    job, source, out = data.get("job", {}), data.get("source", {}), data.get("output", {})
    for section, keys in (("job", ("name", "operator_id")), ("source", ("path", "event_time", "key"))):
        missing = [k for k in keys if k not in data.get(section, {})]
        if missing:
            raise ValueError(f"job definition {path}: [{section}] is missing {missing}")
    spec = build_spec(source, data.get("window", {}), data.get("aggregates", {}))
    quality = data.get("quality", {})
    base = out.get("root", f"output/{job['name']}")
    return Job(
        name=job["name"], operator_id=job["operator_id"], spec=spec, source_path=resolve(source["path"]),
        state_root=resolve(out.get("state_root", f"{base}/state")),
        results_path=resolve(out.get("results", f"{base}/results")),
        late_path=resolve(out.get("late", f"{base}/late")),
        quarantine_path=resolve(out.get("quarantine", f"{base}/quarantine")),
        checkpoint_path=resolve(out.get("checkpoint", f"{base}/checkpoint")),
        spark_conf={str(k): str(v) for k, v in data.get("spark", {}).items()},
        backfill_chunk=job.get("backfill_chunk", "6 hours"),
        event_id_column=source.get("event_id"),
        result_bounds=tuple((c, lo, hi) for c, (lo, hi) in
                            parse_bounds(quality.get("result_bounds", {}), "[quality.result_bounds]").items()),
        raw_max_age_ms=parse_duration_ms(quality.get("raw_max_age", "3650 days"), "[quality] raw_max_age"))
