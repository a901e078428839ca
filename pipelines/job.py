"""A windowed job's definition: source, window spec, outputs, state, Spark settings.

Jobs are TOML files (see ``jobs/*.toml``); the CLI, the demo and the DAGs all
read the same definition. Relative paths resolve against ``root`` (default:
the ``WINDOWING_DATA_ROOT`` environment variable, else the current folder); a path
or root with a scheme (``s3a://bucket/prefix``, ``file:/...``) is a URI, kept as written.

Tables of a job file: ``[job]`` (name, operator id, backfill chunk),
``[source]``, ``[window]``, ``[aggregates]``, ``[output]``, ``[spark]`` (any
Spark setting, ``spark.master`` included: ``local[2]`` or
``spark://host:7077``) and ``[airflow]`` (schedules, retries, start date and
an optional Airflow connection id whose host/port/extras override ``[spark]``;
see :class:`AirflowSettings`).
"""
from __future__ import annotations

import os
import re
import tomllib
import datetime as dt
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from windowing.core.aggregates import Count
from windowing.core.assigners import MERGING_ASSIGNERS
from windowing.core.config_values import as_int, require
from windowing.core.evictors import EVICT_AFTER
from windowing.core.registry import COUNT_WINDOW, JOB_AGGREGATES, JOB_EVICTORS, JOB_TRIGGERS, JOB_WINDOW_TYPES, Registry
from windowing.core.spec import WindowSpec, WindowSpecBuilder
from windowing.core.time import parse_duration_ms
from windowing.core.watermarks import EventTimeWatermarks, ExplicitWatermarks, WatermarkStrategy

_AGGREGATE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)?\s*\)\s*$")

TRANSFORM_SECTION = "transform"
"""The job-file table of a stateless stage (:mod:`pipelines.transforms`)."""


_CRON_ALIASES = ("@hourly", "@daily", "@weekly", "@monthly", "@yearly")


@dataclass(frozen=True)
class AirflowSettings:
    """How the DAGs schedule a job (the ``[airflow]`` table; every key optional).

    Attributes:
        stream_schedule: cron of the streaming DAG (each run: ``availableNow``).
        backfill_schedule: cron of the backfill DAG; each run processes the
            windows whose max timestamp falls in its data interval.
        start_date: first data interval of the backfill DAG (ISO date, UTC).
        retries: task retries of every DAG of the job.
        retry_delay_s: seconds between retries.
        spark_conn_id: an Airflow connection whose host (and port) give
            ``spark.master`` and whose ``spark.*`` extras override ``[spark]``;
            a missing connection is an error naming the id.
    """

    stream_schedule: str = "*/5 * * * *"
    backfill_schedule: str = "@hourly"
    start_date: str = "2026-01-01"
    retries: int = 2
    retry_delay_s: int = 30
    spark_conn_id: str | None = None

    def __post_init__(self) -> None:
        for name in ("stream_schedule", "backfill_schedule"):
            value = getattr(self, name)
            if not (value in _CRON_ALIASES or len(str(value).split()) == 5):
                raise ValueError(f"[airflow] {name} = {value!r} is not a cron expression; write e.g. "
                                 f"'*/5 * * * *' or one of {', '.join(_CRON_ALIASES)}")
        try:
            dt.datetime.fromisoformat(self.start_date)
        except (TypeError, ValueError):
            raise ValueError(f"[airflow] start_date = {self.start_date!r} is not an ISO date such as "
                             f"'2026-01-01'") from None
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"[airflow] retries = {self.retries!r} must be a non-negative integer")
        if not isinstance(self.retry_delay_s, int) or self.retry_delay_s < 0:
            raise ValueError(f"[airflow] retry_delay_s = {self.retry_delay_s!r} must be a non-negative integer")

    @classmethod
    def from_table(cls, table: dict) -> "AirflowSettings":
        unknown = sorted(set(table) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"[airflow] has unknown keys {unknown}; valid: {sorted(cls.__dataclass_fields__)}")
        return cls(**table)

    @property
    def start(self) -> dt.datetime:
        value = dt.datetime.fromisoformat(self.start_date)
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Job:
    """A job definition, validated; paths are absolute.

    ``definition`` keeps the parsed TOML tables so that a variant of the job
    (another window spec for reprocessing) is built from the same text.
    """

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
    backfill_chunk: str = "all"
    airflow: AirflowSettings = field(default_factory=AirflowSettings)
    definition: dict = field(default_factory=dict, compare=False, repr=False)
    source_file: str | None = None
    event_id_column: str | None = None
    result_bounds: tuple[tuple[str, float | None, float | None], ...] = ()
    raw_max_age_ms: int = 3650 * 86_400_000
    # The largest watermark jump one row may cause before validation fails (expectations/watermark.py);
    # None: the spec's max_out_of_orderness + allowed_lateness.
    max_watermark_jump_ms: int | None = None
    # False where something else validates every run's outputs (e.g. the Airflow quality DAG):
    # the drivers then skip their own validation unless asked for it.
    validate_runs: bool = True
    # How many validation results the Great Expectations store keeps (pipelines/gx_results.py).
    gx_results_kept: int = 200

    @property
    def output_root(self) -> str:
        """The folder of the job's output tables (where Data Docs go too)."""
        return parent_of(self.results_path)

    def with_operator(self, operator_id: str, suffix: str) -> "Job":
        """The same job writing to other tables (e.g. a backfill beside the stream)."""
        base = parent_of(self.results_path)
        return replace(self, operator_id=operator_id, results_path=f"{base}/results_{suffix}",
                       late_path=f"{base}/late_{suffix}", quarantine_path=f"{base}/quarantine_{suffix}",
                       checkpoint_path=f"{self.checkpoint_path}_{suffix}")

    def with_outputs(self, operator_id: str, state_root: str, results_path: str, late_path: str,
                     quarantine_path: str) -> "Job":
        """The same job (same spec) with its own operator state and output tables."""
        return replace(self, operator_id=operator_id, state_root=state_root, results_path=results_path,
                       late_path=late_path, quarantine_path=quarantine_path,
                       checkpoint_path=f"{state_root}/{operator_id}/_checkpoint")

    def with_window(self, overrides: dict[str, Any] | None) -> "Job":
        """The same job with keys of its ``[window]`` table replaced (e.g. another size).

        Raises:
            ValueError: naming the bad key or value, as for a job file.
        """
        if not overrides:
            return self
        window = merged_window(self.definition.get("window", {}), overrides, _WINDOW_KEYS)
        spec = build_spec(self.definition.get("source", {}), window, self.definition.get("aggregates", {}),
                          self.definition.get("process"))
        return replace(self, spec=spec, definition={**self.definition, "window": window})


_ASSIGNER_KEYS = tuple(dict.fromkeys(key for cls in JOB_WINDOW_TYPES.classes for key in cls.job_form.keys))
"""The ``[window]`` keys the built-in assigners take (size, slide, step, offset, gap, gap_column): the core registry's."""
_WINDOW_KEYS = {"type", "assigner_args", *_ASSIGNER_KEYS, "trigger", "trigger_args", "evictor", "evictor_args",
                "evict_after", "allowed_lateness", "mode", "late_output", "output_mode"}
_IMPORT_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$")


def import_object(path: str, args: dict | None, what: str):
    """``"package.module:Name"`` imported and called with ``args`` (a user assigner, trigger, evictor or function).

    The module must be importable by the driver AND the Spark workers (on
    their ``PYTHONPATH``); the object a frozen dataclass or another picklable
    object with value equality (the spec fingerprint uses its repr).

    Raises:
        ValueError: naming the path and what went wrong.
    """
    import importlib
    if not isinstance(path, str) or not _IMPORT_PATH.match(path):
        raise ValueError(f"{what} {path!r} is not an import path like 'package.module:Name'")
    module_name, name = path.split(":")
    try:
        factory = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"{what} {path!r} cannot be imported: {error}") from None
    if args is not None and not isinstance(args, dict):
        raise ValueError(f"the arguments of {what} {path!r} must be a table, got {args!r}")
    try:
        return factory(**(args or {}))
    except TypeError as error:
        raise ValueError(f"{what} {path!r} does not take the arguments {args or {}}: {error}") from None


_SESSION_TYPES = {cls.job_form.name for cls in MERGING_ASSIGNERS}


def merged_window(window: dict[str, Any], overrides: dict[str, Any], valid_keys: set[str]) -> dict[str, Any]:
    """A window table with ``overrides`` applied: a new ``type`` drops the keys that belong to the old type
    only (a slide or step; a size and offset for sessions; an offset and gap for count windows; a gap for
    the others) unless given again.

    Raises:
        ValueError: an override key not in ``valid_keys``, naming it.
    """
    unknown = sorted(set(overrides) - valid_keys)
    if unknown:
        raise ValueError(f"window override has unknown keys {unknown}; valid: {sorted(valid_keys)}")
    merged = {**window, **overrides}
    if "type" in overrides:
        dropped = (("slide", "step", "size", "offset") if overrides["type"] in _SESSION_TYPES
                   else ("slide", "step", "offset", "gap", "gap_column") if overrides["type"] == COUNT_WINDOW
                   else ("slide", "step", "gap", "gap_column"))
        for key in dropped:
            if key not in overrides:
                merged.pop(key, None)
    return merged
_COUNT_WINDOW_KEYS = ("size", "slide")


def _window_part(registry: Registry, window: dict, key: str, args_key: str, what: str,
                 extra: dict | None = None):
    """The part ``window[key]`` names: a built-in one of ``registry`` (a string such as
    ``"count:3"`` or a table ``{type = "count", n = 3}``, plus the ``extra`` keys of the
    ``[window]`` table), or a user one by import path, called with ``window[args_key]``.

    Raises:
        ValueError: naming the bad value and the valid names or keys.
    """
    value, args = window[key], window.get(args_key)
    if isinstance(value, str) and _IMPORT_PATH.match(value) and not registry.knows(value):
        if extra:
            raise ValueError(f"{sorted(extra)} belong to built-in {what}s; the user {what} {value!r} takes its "
                             f"arguments in {args_key} = {{...}}")
        return import_object(value, args, what)
    if args is not None:
        raise ValueError(f"{args_key} = {args!r} goes with a user {what} named by import path, not with the "
                         f"built-in {value!r}")
    return registry.from_config(value, extra)


def window_parts(builder, window: dict):
    """``builder`` with the trigger, the evictor and the allowed lateness a window table names (a single
    input's ``[window]`` or a join's ``[join.window]``; both builders take them the same way)."""
    if window.get("trigger"):
        builder = builder.trigger(_window_part(JOB_TRIGGERS, window, "trigger", "trigger_args", "trigger"))
    if window.get("evictor"):
        after = {EVICT_AFTER: window[EVICT_AFTER]} if EVICT_AFTER in window else None
        builder = builder.evictor(_window_part(JOB_EVICTORS, window, "evictor", "evictor_args", "evictor", after))
    if "allowed_lateness" in window:
        builder = builder.allowed_lateness(window["allowed_lateness"])
    return builder


def _window(builder: WindowSpecBuilder, window: dict) -> WindowSpecBuilder:
    """``[window] type`` (a name of :data:`JOB_WINDOW_TYPES`, ``count``, or the import path of a
    user assigner with ``assigner_args``) and its keys: size, slide, offset, gap, gap_column."""
    keys = {key: window[key] for key in _ASSIGNER_KEYS if key in window}
    kind = window.get("type", "tumbling")
    if kind != COUNT_WINDOW:
        return builder.window(_window_part(JOB_WINDOW_TYPES, {**window, "type": kind}, "type", "assigner_args",
                                           "window assigner", keys))
    unknown = sorted(set(keys) - set(_COUNT_WINDOW_KEYS))
    if unknown:
        raise ValueError(f"window type 'count' does not take {unknown}; it takes {list(_COUNT_WINDOW_KEYS)}")
    require(keys, "window type 'count'", "size")
    slide = None if window.get("slide") is None else as_int(window["slide"], "count window slide")
    return builder.count_window(as_int(window["size"], "count window size"), slide)


def parse_aggregate(name: str, text: str):
    match = _AGGREGATE.match(text)
    if not match or match.group(1) not in JOB_AGGREGATES:
        forms = ", ".join(f"'{n}()'" if cls is Count else f"'{n}(x)'" for n, cls in JOB_AGGREGATES.items())
        raise ValueError(f"aggregate {name} = {text!r} is not understood; write e.g. 'sum(amount)', one of {forms}")
    kind, column = match.groups()
    if column is None and JOB_AGGREGATES[kind] is not Count:
        raise ValueError(f"aggregate {name} = {text!r} needs a column, e.g. '{kind}(amount)'")
    return JOB_AGGREGATES[kind]() if column is None else JOB_AGGREGATES[kind](column)


def build_spec(source: dict, window: dict, aggregates: dict, process: dict | None = None) -> WindowSpec:
    """The window spec of a job's tables.

    ``[process]`` (instead of ``[aggregates]``): ``function`` (an import path
    of a process window function), ``output_schema`` (DDL of the rows it
    emits), optional ``columns`` (the input columns it reads), ``args`` and
    ``as_pandas``.

    ``[source]``: ``key`` (a column or a list; ``key = []`` is window_all,
    non-keyed windows), ``event_time``, ``max_out_of_orderness``, and for the
    watermark and processing time: ``ingestion_time_column`` (a column of each
    row's recorded ingestion time, epoch ms or a timestamp: the row's
    processing time, which a backfill replays), ``idle_timeout`` (a source
    with no row for this long of processing time is idle and the watermark
    advances without it), ``source_column`` with ``sources`` (several sources
    feed the job: the watermark is the minimum of theirs), ``watermark``
    (``{ confirming_rows = n }``: the watermark follows the n-th largest event
    time, so fewer than n outlying rows cannot move it; ``"explicit"``: only
    explicit watermarks and the end-of-input flush move it; see
    docs/watermarks.md).
    ``[window]``: ``type`` (``tumbling``, ``sliding``, ``count``, ``session``,
    ``tumbling_processing_time``, ``sliding_processing_time``,
    ``session_processing_time``: :data:`windowing.core.registry.JOB_WINDOW_TYPES`; or a
    user assigner's import path with ``assigner_args``); ``trigger`` and
    ``evictor``: a built-in name (``"count:3"``, ``"time:10 seconds"``), a table
    (``{type = "continuous_event_time", interval = "1 minute"}``) or a user
    one's import path with ``trigger_args`` / ``evictor_args``; see docs/jobs.md.
    """
    builder = (WindowSpecBuilder().key_by(*_as_list(source.get("key")))
               .event_time(source["event_time"], source.get("max_out_of_orderness", 0)))
    builder = _window(builder, window)
    builder = _watermark_and_processing_time(builder, source)
    builder = window_parts(builder, window)
    if "max_event_time_skew" in source:
        builder = builder.max_event_time_skew(source["max_event_time_skew"])
    if "dedup_horizon" in source:
        if "event_id" not in source:
            raise ValueError("[source] dedup_horizon needs event_id: the column that identifies an event")
        builder = builder.deduplicate(source["event_id"], source["dedup_horizon"])
    bounds = source.get("bounds", {})
    for column, (lo, hi) in parse_bounds(bounds, "[source.bounds]", nullable=True).items():
        builder = builder.value_bounds(column, lo, hi, nullable=bounds[column].get("nullable", False))
    mode = window.get("mode")
    if mode not in (None, "accumulating", "discarding"):
        raise ValueError(f"mode {mode!r} must be 'accumulating' or 'discarding'")
    if mode:
        builder = builder.accumulating() if mode == "accumulating" else builder.discarding()
    builder = builder.side_output_late_data(bool(window.get("late_output", True)))
    if "output_mode" in window:
        builder = builder.output_mode(window["output_mode"])
    if process:
        if aggregates:
            raise ValueError("a job has either [aggregates] or [process], not both")
        unknown = sorted(set(process) - {"function", "output_schema", "columns", "args", "as_pandas"})
        if unknown or "function" not in process or "output_schema" not in process:
            raise ValueError(f"[process] needs function = 'package.module:Name' and output_schema = 'a int, ...' "
                             f"(optional: columns, args, as_pandas); unknown keys: {unknown}")
        function = import_object(process["function"], process.get("args"), "process function")
        return builder.process(function, process["output_schema"], tuple(process.get("columns", ())),
                               bool(process.get("as_pandas", False)))
    if not aggregates:
        raise ValueError("the [aggregates] table is empty; add e.g. total = 'sum(amount)'")
    return builder.aggregate(**{name: parse_aggregate(name, text) for name, text in aggregates.items()})


def _watermark_and_processing_time(builder: WindowSpecBuilder, source: dict) -> WindowSpecBuilder:
    """``[source]`` ingestion_time_column, idle_timeout, watermark, source_column + sources."""
    if "ingestion_time_column" in source:
        column = source["ingestion_time_column"]
        if not isinstance(column, str) or not column:
            raise ValueError(f"[source] ingestion_time_column must be a column name, got {column!r}")
        builder = builder.processing_time(column)
    if "idle_timeout" in source:
        builder = builder.watermark_idleness(source["idle_timeout"])
    if "watermark" in source:
        builder = builder.watermark_strategy(watermark_strategy(source["watermark"]))
    if ("source_column" in source) != ("sources" in source):
        raise ValueError(f"[source] source_column and sources go together (the column naming each row's source "
                         f"and the declared sources), got source_column={source.get('source_column')!r}, "
                         f"sources={source.get('sources')!r}")
    if "source_column" in source:
        sources = source["sources"]
        if not isinstance(sources, list) or not sources or not all(isinstance(x, str) and x for x in sources):
            raise ValueError(f"[source] sources must be a non-empty list of source names, got {sources!r}")
        builder = builder.watermark_sources(str(source["source_column"]), *sources)
    return builder


def watermark_strategy(value: Any) -> WatermarkStrategy:
    """``[source] watermark``: ``{ confirming_rows = n }`` or ``"explicit"``.

    Raises:
        ValueError: naming the value and the forms that are understood.
    """
    if value == "explicit":
        return ExplicitWatermarks()
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"confirming_rows"})
        if unknown:
            raise ValueError(f"[source] watermark has unknown keys {unknown}; valid: ['confirming_rows']")
        return EventTimeWatermarks(value.get("confirming_rows", 1))
    raise ValueError(f"[source] watermark = {value!r} is not understood; write watermark = "
                     f"{{ confirming_rows = 2 }} or watermark = 'explicit'")


def parse_bounds(table: dict, where: str, nullable: bool = False) -> dict[str, tuple[float | None, float | None]]:
    """``{column = {min = 0, max = 100}}`` (either bound optional) to ``{column: (min, max)}``.

    ``nullable``: the table may also say ``nullable = true`` (``[source.bounds]``: a null value then
    passes; without it a null in a bounded column is out of bounds and quarantined).
    """
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table of column = {{min = ..., max = ...}}, got {table!r}")
    keys = {"min", "max", "nullable"} if nullable else {"min", "max"}
    bounds = {}
    for column, value in table.items():
        if not isinstance(value, dict) or not set(value) <= keys or not set(value) & {"min", "max"}:
            raise ValueError(f"{where} {column} = {value!r}: write {{min = 0, max = 100}} (either may be left out)"
                             + (", with nullable = true if a null value is valid" if nullable else ""))
        if nullable and not isinstance(value.get("nullable", False), bool):
            raise ValueError(f"{where} {column}.nullable = {value['nullable']!r} must be true or false")
        for side in ("min", "max"):
            v = value.get(side)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise ValueError(f"{where} {column}.{side} = {v!r} is not a number")
        bounds[column] = (value.get("min"), value.get("max"))
    return bounds


def _as_list(value) -> list[str]:
    if value is None:
        raise ValueError("[source] key is missing: the column(s) to key by (key = [] for non-keyed windows, "
                         "window_all)")
    return [value] if isinstance(value, str) else list(value)


def is_uri(path: str | Path) -> bool:
    """True for a path with a scheme (``s3a://b/k``, ``file:/tmp/x``): a URI, not a local path."""
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", str(path)))


def parent_of(path: str) -> str:
    """The folder of a table path, local or URI (``Path`` would fold ``s3a://`` into ``s3a:/``)."""
    return path.rstrip("/").rsplit("/", 1)[0] if is_uri(path) else str(Path(path).parent)


def resolve_path(root: str | Path, path: str) -> str:
    """``path`` when absolute or a URI, else ``path`` under ``root`` (a folder or a URI)."""
    if is_uri(path) or Path(path).is_absolute():
        return str(path)
    if is_uri(root):
        return f"{str(root).rstrip('/')}/{path}"
    return str(Path(root).resolve() / path)


def load_job(path: str | Path, root: str | Path | None = None) -> Job:
    """Read and validate a job TOML file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"job definition {path} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"job definition {path} is not valid TOML: {error}") from None
    root = root or os.environ.get("WINDOWING_DATA_ROOT", ".")
    resolve = lambda p: resolve_path(root, p)  # noqa: E731
    if TRANSFORM_SECTION in data:   # a stateless stage (docs/jobs.md, "[transform]"); its module imports Spark
        from pipelines import transforms
        return transforms.transform_job(data, path, resolve)
    from pipelines import join_job
    if join_job.is_join_definition(data):   # two inputs joined (docs/jobs.md, "Join jobs")
        return join_job.join_job(data, path, resolve)
    job, source, out = data.get("job", {}), data.get("source", {}), data.get("output", {})
    for section, keys in (("job", ("name", "operator_id")), ("source", ("path", "event_time", "key"))):
        missing = [k for k in keys if k not in data.get(section, {})]
        if missing:
            raise ValueError(f"job definition {path}: [{section}] is missing {missing}")
    spec = build_spec(source, data.get("window", {}), data.get("aggregates", {}), data.get("process"))
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
        backfill_chunk=job.get("backfill_chunk", "all"),
        airflow=AirflowSettings.from_table(data.get("airflow", {})),
        definition=data, source_file=str(path.resolve()),
        event_id_column=source.get("event_id"),
        result_bounds=tuple((c, lo, hi) for c, (lo, hi) in
                            parse_bounds(quality.get("result_bounds", {}), "[quality.result_bounds]").items()),
        raw_max_age_ms=parse_duration_ms(quality.get("raw_max_age", "3650 days"), "[quality] raw_max_age"),
        max_watermark_jump_ms=(parse_duration_ms(quality["max_watermark_jump"], "[quality] max_watermark_jump")
                               if "max_watermark_jump" in quality else None),
        validate_runs=_flag(quality.get("validate_runs", True), "[quality] validate_runs"),
        gx_results_kept=_at_least_one(quality.get("gx_results_kept", Job.gx_results_kept),
                                      "[quality] gx_results_kept"))


def _at_least_one(value: Any, name: str) -> int:
    """A TOML integer of at least 1; anything else (``0``, ``"200"``, ``2.5``, ``true``) is refused with the value."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
    return value


def _flag(value: Any, name: str) -> bool:
    """A TOML boolean; anything else (``"yes"``, ``1``) is refused with the value."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value
