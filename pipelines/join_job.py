"""A join job's definition: two Delta inputs, the join, outputs, state and Spark settings.

A job file with ``[left]``, ``[right]`` and ``[join]`` tables (instead of
``[source]`` and ``[window]``) is a join job (docs/jobs.md, "Join jobs"):

* ``[left]``, ``[right]``: ``path`` (the Delta table), ``key`` (a column or a
  list; as many columns on each side, the i-th left one equals the i-th right
  one), ``event_time`` (epoch ms, a timestamp, or a string of epoch ms),
  ``max_out_of_orderness`` (that input's watermark delay), ``idle_timeout`` (that input's
  idleness, instead of ``[join] idle_timeout``);
* ``[join]``: ``kind`` (``window``, ``co_group`` or ``interval``), ``how``
  (``inner``, ``left``, ``right``, ``full``, ``semi``, ``anti``; window joins),
  the output (``left_columns`` and ``right_columns``: a projection, or
  ``function`` with ``output_schema`` and ``args``), ``late_output``,
  ``idle_timeout``; a window join or co-group has ``[join.window]`` (the keys of
  a single-input job's ``[window]``: type, size, slide, gap, trigger, evictor,
  allowed_lateness, mode); an interval join ``lower``, ``upper``,
  ``lower_exclusive``, ``upper_exclusive``;
* ``[job]``, ``[output]``, ``[spark]`` and ``[airflow]`` as for a single-input job.

Every key is checked: an unknown key or a bad value is refused with a message naming it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipelines.job import AirflowSettings
from windowing.core.config_values import as_int
from windowing.core.evictors import EVICT_AFTER
from windowing.core.joins import IntervalJoinSpec, JoinInput, WindowJoinSpec
from windowing.core.joins.kinds import join_kind
from windowing.core.registry import COUNT_WINDOW, JOB_WINDOW_TYPES
from windowing.core.time import parse_duration_ms

JOIN_SECTIONS = ("left", "right", "join")
"""The tables that make a job file a join job."""
JOIN_KINDS = ("window", "co_group", "interval")
_SIDE_KEYS = {"path", "key", "event_time", "max_out_of_orderness", "idle_timeout"}
_JOIN_KEYS = {"kind", "how", "window", "left_columns", "right_columns", "function", "output_schema", "args",
              "late_output", "idle_timeout", "lower", "upper", "lower_exclusive", "upper_exclusive"}
_WINDOWED_ONLY = ("how", "window")
_INTERVAL_ONLY = ("lower", "upper", "lower_exclusive", "upper_exclusive")
_WINDOW_KEYS = {"type", "assigner_args", "size", "slide", "step", "offset", "gap", "trigger", "trigger_args",
                "evictor", "evictor_args", EVICT_AFTER, "allowed_lateness", "mode"}
_JOB_KEYS = {"name", "operator_id"}
_OUTPUT_KEYS = {"root", "results", "late", "quarantine", "state_root", "checkpoint"}
_TOP_LEVEL = {"job", "left", "right", "join", "output", "spark", "airflow"}


@dataclass(frozen=True)
class JoinJob:
    """A join job, validated; paths are absolute."""

    name: str
    operator_id: str
    spec: WindowJoinSpec | IntervalJoinSpec
    left_path: str
    right_path: str
    state_root: str
    results_path: str
    late_path: str
    quarantine_path: str
    checkpoint_path: str
    spark_conf: dict = field(default_factory=dict)
    airflow: AirflowSettings = field(default_factory=AirflowSettings)
    definition: dict = field(default_factory=dict, compare=False, repr=False)
    source_file: str | None = None

    @property
    def output_root(self) -> str:
        """The folder of the job's output tables."""
        from pipelines.job import parent_of
        return parent_of(self.results_path)

    @property
    def family(self):
        """The join's family (:mod:`pipelines.join_families`): what its results rows are and how a range owns them."""
        from pipelines.join_families import family_of
        return family_of(self.spec)

    @property
    def input_paths(self) -> dict[str, str]:
        """Each side's Delta table, by side name."""
        return {"left": self.left_path, "right": self.right_path}

    def with_window(self, overrides: dict[str, Any] | None) -> "JoinJob":
        """The same join with keys of its ``[join.window]`` table replaced (e.g. another size), as
        :meth:`pipelines.job.Job.with_window` does for a single-input job's ``[window]``.

        Raises:
            ValueError: an interval join (it has no window), or a bad key or value, naming it.
        """
        if not overrides:
            return self
        from dataclasses import replace
        from pipelines.job import merged_window
        join = self.definition.get("join", {})
        if "window" not in join:
            raise ValueError(f"job {self.name} is an interval join: it has no [join.window] to override (got "
                             f"{dict(overrides)}); edit lower and upper in a copy of the job file instead")
        join = {**join, "window": merged_window(join["window"], overrides, _WINDOW_KEYS)}
        spec = build_join_spec(self.definition["left"], self.definition["right"], join)
        return replace(self, spec=spec, definition={**self.definition, "join": join})

    def with_operator(self, operator_id: str, suffix: str) -> "JoinJob":
        """The same join writing to other tables beside its own: ``results_<suffix>``, ``late_<suffix>``,
        ``quarantine_<suffix>`` (and a checkpoint of its own), as :meth:`pipelines.job.Job.with_operator`."""
        from dataclasses import replace
        base = self.output_root
        return replace(self, operator_id=operator_id, results_path=f"{base}/results_{suffix}",
                       late_path=f"{base}/late_{suffix}", quarantine_path=f"{base}/quarantine_{suffix}",
                       checkpoint_path=f"{self.checkpoint_path}_{suffix}")


def is_join_definition(data: dict) -> bool:
    """True for a job file with any of ``[left]``, ``[right]``, ``[join]``."""
    return any(section in data for section in JOIN_SECTIONS)


def _table(data: dict, name: str, keys: set[str]) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ValueError(f"[{name}] must be a table, got {value!r}")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise ValueError(f"[{name}] has unknown keys {unknown}; valid: {sorted(keys)}")
    return value


def _columns(value: Any, where: str) -> tuple[str, ...]:
    columns = [value] if isinstance(value, str) else value
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) and c for c in columns):
        raise ValueError(f"{where} must be a column name or a non-empty list of them, got {value!r}")
    return tuple(columns)


def _side(side: dict, name: str) -> JoinInput:
    missing = [k for k in ("path", "key", "event_time") if k not in side]
    if missing:
        raise ValueError(f"[{name}] is missing {missing}")
    if not isinstance(side["event_time"], str) or not side["event_time"]:
        raise ValueError(f"[{name}] event_time must be a column name, got {side['event_time']!r}")
    delay = parse_duration_ms(side.get("max_out_of_orderness", 0), f"[{name}] max_out_of_orderness")
    if delay < 0:
        raise ValueError(f"[{name}] max_out_of_orderness = {side['max_out_of_orderness']!r} must not be negative")
    idle_ms = None
    if "idle_timeout" in side:
        idle_ms = parse_duration_ms(side["idle_timeout"], f"[{name}] idle_timeout")
        if idle_ms <= 0:
            raise ValueError(f"[{name}] idle_timeout = {side['idle_timeout']!r} must be a positive duration")
    return JoinInput(side["event_time"], delay, idle_ms)


def _flag(join: dict, key: str, default: bool) -> bool:
    value = join.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"[join] {key} must be true or false, got {value!r}")
    return value


def _windowed(builder, window: dict):
    """``[join.window]`` on a join or co-group builder: the assigner, trigger, evictor, lateness, mode."""
    from pipelines.job import _window_part, window_parts
    kind = window.get("type", "tumbling")
    keys = {key: window[key] for key in ("size", "slide", "step", "offset", "gap") if key in window}
    if kind == COUNT_WINDOW:
        unknown = sorted(set(keys) - {"size", "slide"})
        if unknown or "size" not in keys:
            raise ValueError(f"[join.window] type 'count' takes size (and slide), got {sorted(keys)}")
        builder = builder.count_window(as_int(keys["size"], "[join.window] size"),
                                       None if "slide" not in keys else as_int(keys["slide"], "[join.window] slide"))
    else:
        assigner = _window_part(JOB_WINDOW_TYPES, {**window, "type": kind}, "type", "assigner_args",
                                "window assigner", keys)
        builder = builder.window(assigner)
    builder = window_parts(builder, window)
    mode = window.get("mode", "accumulating")
    if mode not in ("accumulating", "discarding"):
        raise ValueError(f"[join.window] mode = {mode!r} must be 'accumulating' or 'discarding'")
    return builder.accumulating() if mode == "accumulating" else builder.discarding()


def _output(builder, join: dict, kind: str):
    """The projection (``left_columns``, ``right_columns``) or the function (``function``, ``output_schema``)."""
    from pipelines.job import import_object
    projected = "left_columns" in join or "right_columns" in join
    if projected and "function" in join:
        raise ValueError("[join] has either left_columns/right_columns (a projection) or function, not both")
    if kind == "co_group" and "function" not in join:
        raise ValueError("[join] kind = 'co_group' needs function = 'package.module:Name' (a co-group function "
                         "with co_group(key, window, lefts, rights)) and output_schema")
    if "function" in join:
        if "output_schema" not in join:
            raise ValueError(f"[join] function = {join['function']!r} needs output_schema = 'a int, ...' (the "
                             f"columns of the rows it emits)")
        return builder.apply(import_object(join["function"], join.get("args"), "join function"),
                             join["output_schema"])
    if "output_schema" in join or "args" in join:
        raise ValueError("[join] output_schema and args go with function = 'package.module:Name'")
    if not projected:
        raise ValueError("[join] needs an output: left_columns and right_columns (the columns of each side, "
                         "a list or a table of column = output name), or function with output_schema")
    sides = {}
    for key in ("left_columns", "right_columns"):
        value = join.get(key, [])
        if not isinstance(value, (list, dict)):
            raise ValueError(f"[join] {key} must be a list of columns or a table of column = output name, "
                             f"got {value!r}")
        sides[key.split("_")[0]] = value
    return builder.project(**sides)


def build_join_spec(left: dict, right: dict, join: dict) -> WindowJoinSpec | IntervalJoinSpec:
    """The join spec of a job file's ``[left]``, ``[right]`` and ``[join]`` tables.

    Raises:
        ValueError: naming the bad key or value.
    """
    left_input, right_input = _side(left, "left"), _side(right, "right")
    left_key, right_key = _columns(left["key"], "[left] key"), _columns(right["key"], "[right] key")
    if len(left_key) != len(right_key):
        raise ValueError(f"[left] key {list(left_key)} and [right] key {list(right_key)} must name as many columns "
                         f"each: the i-th left column equals the i-th right column")
    kind = join.get("kind")
    if kind not in JOIN_KINDS:
        raise ValueError(f"[join] kind = {kind!r} must be one of {list(JOIN_KINDS)}")
    wrong = [k for k in (_INTERVAL_ONLY if kind != "interval" else _WINDOWED_ONLY) if k in join]
    if wrong:
        raise ValueError(f"[join] kind = {kind!r} does not take {wrong}")
    if kind == "co_group" and "how" in join:
        raise ValueError("[join] how goes with kind = 'window'; a co-group's function sees both sides' rows")
    if kind == "interval":
        missing = [k for k in ("lower", "upper") if k not in join]
        if missing:
            raise ValueError(f"[join] kind = 'interval' needs {missing}: the bounds of right time - left time "
                             f"(e.g. lower = '-5 seconds', upper = '10 seconds')")
        builder = left_input.interval_join(right_input)
    elif kind == "window":
        builder = left_input.join(right_input, how=join_kind(join.get("how", "inner")))
    else:
        builder = left_input.co_group(right_input)
    builder = builder.where(*left_key).equal_to(*right_key)
    if "idle_timeout" in join:
        builder = builder.watermark_idleness(join["idle_timeout"])
    builder = builder.side_output_late_data(_flag(join, "late_output", True))
    if kind == "interval":
        builder = builder.between(parse_duration_ms(join["lower"], "[join] lower"),
                                  parse_duration_ms(join["upper"], "[join] upper"))
        if _flag(join, "lower_exclusive", False):
            builder = builder.lower_bound_exclusive()
        if _flag(join, "upper_exclusive", False):
            builder = builder.upper_bound_exclusive()
    else:
        window = join.get("window")
        if not isinstance(window, dict):
            raise ValueError(f"[join] kind = {kind!r} needs a [join.window] table (type, size, ...; as a "
                             f"single-input job's [window])")
        unknown = sorted(set(window) - _WINDOW_KEYS)
        if unknown:
            raise ValueError(f"[join.window] has unknown keys {unknown}; valid: {sorted(_WINDOW_KEYS)}")
        builder = _windowed(builder, window)
    return _output(builder, join, kind)


def join_job(data: dict, path: Path, resolve: Callable[[str], str]) -> JoinJob:
    """The join job of a parsed job file (``resolve``: a relative path to an absolute one).

    Raises:
        ValueError: naming the file and the bad table, key or value.
    """
    try:
        unknown = sorted(set(data) - _TOP_LEVEL)
        if unknown:
            raise ValueError(f"a join job has the tables {sorted(_TOP_LEVEL)}; unknown: {unknown}")
        job = _table(data, "job", _JOB_KEYS)
        missing = [k for k in ("name", "operator_id") if k not in job]
        if missing:
            raise ValueError(f"[job] is missing {missing}")
        left, right = _table(data, "left", _SIDE_KEYS), _table(data, "right", _SIDE_KEYS)
        join = _table(data, "join", _JOIN_KEYS)
        out = _table(data, "output", _OUTPUT_KEYS)
        spec = build_join_spec(left, right, join)
        airflow = AirflowSettings.from_table(_table(data, "airflow", set(AirflowSettings.__dataclass_fields__)))
    except ValueError as error:
        raise ValueError(f"job definition {path}: {error}") from None
    base = out.get("root", f"output/{job['name']}")
    return JoinJob(
        name=job["name"], operator_id=job["operator_id"], spec=spec,
        left_path=resolve(left["path"]), right_path=resolve(right["path"]),
        state_root=resolve(out.get("state_root", f"{base}/state")),
        results_path=resolve(out.get("results", f"{base}/results")),
        late_path=resolve(out.get("late", f"{base}/late")),
        quarantine_path=resolve(out.get("quarantine", f"{base}/quarantine")),
        checkpoint_path=resolve(out.get("checkpoint", f"{base}/checkpoint")),
        spark_conf={str(k): str(v) for k, v in data.get("spark", {}).items()}, airflow=airflow,
        definition=data, source_file=str(path.resolve()))
