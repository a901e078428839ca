"""What can go wrong in a run, as one exit code and one readable line each.

The CLI (``winjob``) and the Airflow tasks meet every failure through
:func:`explain`: it names what failed, where (path, job, batch) and what to do,
and picks the exit code from :class:`ExitCode`. The stack trace is for
``--verbose`` only.
"""
from __future__ import annotations

import contextlib
import enum
import re
from dataclasses import dataclass
from pathlib import Path


class ExitCode(enum.IntEnum):
    """The exit codes of ``winjob`` (docs/operations.md lists them with what to do)."""

    OK = 0
    DATA_QUALITY = 1
    """A CRITICAL data-quality expectation failed: the outputs are committed, for inspection."""
    JOB = 2
    """The command line or the job file is wrong, or the job does not fit the state it found (a changed spec)."""
    INPUT = 3
    """An input table is missing, is not a Delta table, or cannot be read (corrupt or missing files)."""
    CONFLICT = 4
    """Another run wrote this operator's batch at the same time; this run committed nothing of it."""
    FAILURE = 5
    """Anything else (Spark, the file system, a bug): the message names it; ``--verbose`` shows the trace."""
    INTERRUPTED = 130


class InputError(RuntimeError):
    """An input table the run needs is missing, is not a Delta table, or cannot be read."""


class JobError(ValueError):
    """The job file cannot be used as written (the message names the file, the key and what is valid)."""


def require_delta_table(spark, path: str, role: str, job_name: str, hint: str) -> None:
    """Raise :class:`InputError` unless ``path`` holds a Delta table.

    Args:
        spark: the SparkSession, or None to check only what the local file system tells.
        role: what the table is for, e.g. ``"raw table"``.
        hint: what the user can do about it, e.g. which job key names the path.
    """
    local = _local(path)
    if local is not None and not local.exists():
        raise InputError(f"job {job_name}: the {role} {path} does not exist; {hint}")
    if local is not None and not (local / "_delta_log").is_dir():
        raise InputError(f"job {job_name}: the {role} {path} is not a Delta table (it has no _delta_log); {hint}")
    if spark is None:
        return
    from windowing.spark.lake import delta_lake_io
    if not delta_lake_io.table_exists(spark, path):
        raise InputError(f"job {job_name}: the {role} {path} is not a Delta table (no commit in its _delta_log); "
                         f"{hint}")


SCHEMA_CHANGE_MARKERS = ("DELTA_SCHEMA_CHANGED", "Detected schema change", "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE")
"""What Delta's streaming source says when the raw table's schema changed under a stream."""
VERSIONS_SEARCHED = 100
"""How many versions back :func:`schema_change` looks for the change (each is one read of the log)."""


@dataclass(frozen=True)
class SchemaChange:
    """A raw table's columns that changed: ``{column: (old type, new type)}`` (None: added or removed)."""

    version: int
    columns: dict
    operation: str | None = None

    def describe(self) -> str:
        parts = []
        for column, (old, new) in sorted(self.columns.items()):
            if old is None:
                parts.append(f"added {column} ({new})")
            elif new is None:
                parts.append(f"removed {column} ({old})")
            else:
                parts.append(f"changed the type of {column} from {old} to {new}")
        how = f" (a {self.operation})" if self.operation else ""
        return f"{', '.join(parts)} in version {self.version}{how}"


def schema_change(spark, path: str) -> SchemaChange | None:
    """The newest version of the Delta table at ``path`` whose columns differ from the version before it
    in a way other than added columns, searched back from the newest (at most :data:`VERSIONS_SEARCHED`)."""
    from windowing.spark.lake import delta_lake_io

    def columns(version: int) -> dict[str, str]:
        frame = spark.read.format("delta").option("versionAsOf", version).load(path)
        return {f.name: f.dataType.simpleString() for f in frame.schema.fields}

    newest = delta_lake_io.latest_version(spark, path)
    after = columns(newest)
    for version in range(newest, max(0, newest - VERSIONS_SEARCHED), -1):
        try:
            before = columns(version - 1)
        except Exception:   # noqa: BLE001 - the version's log is gone (cleaned up): search no further
            return None
        changed = {c: (before.get(c), after.get(c)) for c in set(before) | set(after)
                   if before.get(c) != after.get(c)}
        if any(old is not None for old, _ in changed.values()):   # not only added columns
            return SchemaChange(version, changed, _operation(spark, path, version))
        after = before
    return None


def _operation(spark, path: str, version: int) -> str | None:
    try:
        from delta.tables import DeltaTable
        row = DeltaTable.forPath(spark, path).history().where(f"version = {version}").select("operation").first()
        return row["operation"] if row else None
    except Exception:   # noqa: BLE001 - the history is only for the message
        return None


def source_schema_error(spark, job, error: BaseException) -> InputError | None:
    """An :class:`InputError` saying which raw column changed, how, in which version and what to do, when
    ``error`` is Delta's streaming source refusing a schema change of the job's raw table; else None."""
    full = "\n".join(str(item) for item in _chain(error))
    if not any(marker in full for marker in SCHEMA_CHANGE_MARKERS):
        return None
    try:
        change = schema_change(spark, job.source_path)
    except Exception:   # noqa: BLE001 - the diagnosis must not hide the failure
        change = None
    what = change.describe() if change else "changed its columns (the version was not found in its log)"
    before = f"VERSION AS OF {change.version - 1}" if change else "VERSION AS OF <the version before the change>"
    return InputError(
        f"job {job.name}: the raw table {job.source_path} {what}; the stream read the columns as they were and "
        f"cannot go on over the change. To keep the new columns, run again with --reset-state (the operator's "
        f"state and checkpoint start over on the table as it is now) or give the job a new operator_id and "
        f"outputs; to go back, RESTORE TABLE delta.`{job.source_path}` TO {before} and land the later rows "
        f"again with the old types")


@contextlib.contextmanager
def raw_schema_checked(spark, job):
    """Inside: a stream stopped by a schema change of the raw table is raised as the :class:`InputError`
    of :func:`source_schema_error` (exit 3), the original chained."""
    try:
        yield
    except Exception as error:
        better = source_schema_error(spark, job, error)
        if better is None:
            raise
        raise better from error


def _local(path: str) -> Path | None:
    if path.startswith("file:"):
        return Path(re.sub(r"^file:(//)?", "", path))
    return None if "://" in path else Path(path)


@dataclass(frozen=True)
class Explained:
    code: ExitCode
    line: str


# What the file system said when a write failed (Java's and the C library's words), and the one-line cause.
WRITE_CAUSES = (
    (("No space left on device", "ENOSPC"), "the disk is full",
     "free space on that file system (or give the job's outputs another one), then run again"),
    (("Disk quota exceeded", "EDQUOT"), "the disk quota is used up",
     "free space or raise the quota, then run again"),
    (("Permission denied", "AccessDeniedException", "EACCES"), "permission denied",
     "give the user running the job write access to that folder, then run again"),
    (("Read-only file system", "EROFS"), "the file system is read-only",
     "mount it writable or point the job's outputs elsewhere, then run again"),
)
RESUMES = "committed batches stay committed and the next run continues after them"

# Spark's error classes for files that are gone or cannot be read, and for a folder that is no table.
_UNREADABLE = ("FAILED_READ_FILE", "CANNOT_READ_FILE", "FILE_NOT_EXIST", "PATH_NOT_FOUND", "DELTA_FILE_NOT_FOUND",
               "DELTA_TABLE_NOT_FOUND", "DELTA_SCHEMA_NOT_SET", "DELTA_MISSING_DELTA_TABLE",
               "DELTA_LOG_FILE_NOT_FOUND", "DELTA_EMPTY_DIRECTORY")
_JAVA_UNREADABLE = ("java.io.FileNotFoundException", "org.apache.parquet.io.ParquetDecodingException",
                    "is not a Parquet file", "CorruptedFileException", "java.io.EOFException")


def explain(error: BaseException, outputs: str | None = None) -> Explained:
    """The exit code and the one line for ``error`` (its cause chain and Spark error class included).

    ``outputs``: the folder of the job's outputs, named by a write failure whose error names no file.
    """
    from pipelines.quality import DataQualityError
    from windowing.spark import ConcurrentWriterError, SpecMismatchError
    if isinstance(error, KeyboardInterrupt):
        return Explained(ExitCode.INTERRUPTED, "interrupted")
    if isinstance(error, DataQualityError):
        return Explained(ExitCode.DATA_QUALITY, str(error))
    chain = list(_chain(error))
    for item in chain:
        if isinstance(item, InputError):
            return Explained(ExitCode.INPUT, str(item))
        if isinstance(item, ConcurrentWriterError):
            return Explained(ExitCode.CONFLICT, f"{item} Run again when the other run has finished.")
        if isinstance(item, SpecMismatchError):
            return Explained(ExitCode.JOB, str(item))
        if isinstance(item, DataQualityError):
            return Explained(ExitCode.DATA_QUALITY, str(item))
    text = " ".join(_one_line(str(item)) for item in chain)
    full = "\n".join(str(item) for item in chain)
    for markers, cause, todo in WRITE_CAUSES:
        if any(marker in full for marker in markers):
            where = _written_path(full, markers, outputs)
            where = where or (f"the job's outputs under {outputs}" if outputs else "an output")
            said = "" if markers[0].lower() == cause.lower() else f" ({markers[0]})"
            return Explained(ExitCode.FAILURE, f"cannot write {where}: {cause}{said}. "
                                               f"{todo[0].upper()}{todo[1:]}; {RESUMES}")
    condition = next((c for c in (_condition(item) for item in chain) if c), None)
    # Raised inside a streaming query's foreachBatch, these come back as the query's text only.
    for cls, code in ((ConcurrentWriterError, ExitCode.CONFLICT), (SpecMismatchError, ExitCode.JOB),
                      (InputError, ExitCode.INPUT)):
        found = re.search(rf"{cls.__name__}: ([^\n]+)", full)
        if found:
            hint = " Run again when the other run has finished." if code == ExitCode.CONFLICT else ""
            return Explained(code, found.group(1).strip() + hint)
    if condition in _UNREADABLE or any(marker in full for marker in _JAVA_UNREADABLE):
        where = _path_in(full)
        return Explained(ExitCode.INPUT,
                         f"cannot read {where or 'an input table'} ({condition or _first_java_error(text)}): "
                         f"a file of the table is missing or corrupt. Restore it from the table's history or "
                         f"source, or remove the table and land its rows again")
    if isinstance(error, (JobError, ValueError, FileNotFoundError, TypeError, KeyError)) and condition is None:
        return Explained(ExitCode.JOB, _one_line(str(error)))
    kind = condition or type(error).__name__
    return Explained(ExitCode.FAILURE, f"{kind}: {_short(text)} (run again with --verbose for the stack trace)")


def _written_path(text: str, markers: tuple[str, ...], outputs: str | None) -> str | None:
    """The data path a failed write names nearest to its error (not a source file of a stack trace); with
    ``outputs`` known, only a path inside it (a streaming error also names the source table it read)."""
    at = min((text.find(m) for m in markers if m in text), default=0)
    found = [(abs(m.start() - at), m.group(1).rstrip(".")) for m in
             re.finditer(r"((?:file:|hdfs://|s3a?://|abfss?://|gs://)?/[^\s'\"`\],;:()]+)", text)]
    data = [(distance, path) for distance, path in found
            if not path.endswith((".py", ".java", ".scala", ".class", ".jar"))
            and "/site-packages/" not in path and "/lib/python" not in path and path.count("/") > 1
            and (outputs is None or re.sub(r"^file:(//)?", "", path).startswith(str(outputs)))]
    return min(data)[1] if data else None


def _chain(error: BaseException):
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__ or getattr(error, "cause", None)
        if error is not None and not isinstance(error, BaseException):
            return


def _condition(error: BaseException) -> str | None:
    for name in ("getCondition", "getErrorClass"):
        getter = getattr(error, name, None)
        if callable(getter):
            try:
                value = getter()
            except Exception:  # noqa: BLE001 - a py4j error object without the method
                value = None
            if value:
                return str(value)
    match = re.search(r"\[([A-Z][A-Z0-9_]{3,})(?:\.[A-Z0-9_]+)?\]", str(error))
    return match.group(1) if match else None


def _path_in(text: str) -> str | None:
    """The file or table a Spark error message names, if any."""
    match = re.search(r"(?:reading file|[Ff]ile|[Pp]ath|table at|at path) [`'\"]?((?:file:|hdfs:|s3a?:|abfss?:|gs:)?/[^\s'\"`\],;]+)",
                      text)
    if match:
        return match.group(1).rstrip(".")
    match = re.search(r"(file:[^\s'\"\],;]+|(?<![\w.])/[^\s'\"\],;:]+\.(?:parquet|json|checkpoint)\b|"
                      r"hdfs://[^\s'\"\],;]+|s3a?://[^\s'\"\],;]+|abfss?://[^\s'\"\],;]+|gs://[^\s'\"\],;]+)", text)
    return match.group(1).rstrip(".") if match else None


def _first_java_error(text: str) -> str:
    match = re.search(r"([a-z]+(?:\.[a-zA-Z_$]+)+(?:Exception|Error))", text)
    return match.group(1) if match else "unreadable file"


def _one_line(text: str) -> str:
    """The first line of a message that says something (Spark and py4j append traces and SQLSTATEs)."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace", "Traceback", "==")):
            return line
    return text.strip()


def _short(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
