"""What can go wrong in a run, as one exit code and one readable line each.

The CLI (``winjob``) and the Airflow tasks meet every failure through
:func:`explain`: it names what failed, where (path, job, batch) and what to do,
and picks the exit code from :class:`ExitCode`. The stack trace is for
``--verbose`` only.
"""
from __future__ import annotations

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
    from windowing.spark import delta_io
    if not delta_io.table_exists(spark, path):
        raise InputError(f"job {job_name}: the {role} {path} is not a Delta table (no commit in its _delta_log); "
                         f"{hint}")


def _local(path: str) -> Path | None:
    if path.startswith("file:"):
        return Path(re.sub(r"^file:(//)?", "", path))
    return None if "://" in path else Path(path)


@dataclass(frozen=True)
class Explained:
    code: ExitCode
    line: str


# Spark's error classes for files that are gone or cannot be read, and for a folder that is no table.
_UNREADABLE = ("FAILED_READ_FILE", "CANNOT_READ_FILE", "FILE_NOT_EXIST", "PATH_NOT_FOUND", "DELTA_FILE_NOT_FOUND",
               "DELTA_TABLE_NOT_FOUND", "DELTA_SCHEMA_NOT_SET", "DELTA_MISSING_DELTA_TABLE",
               "DELTA_LOG_FILE_NOT_FOUND", "DELTA_EMPTY_DIRECTORY")
_JAVA_UNREADABLE = ("java.io.FileNotFoundException", "org.apache.parquet.io.ParquetDecodingException",
                    "is not a Parquet file", "CorruptedFileException", "java.io.EOFException")


def explain(error: BaseException) -> Explained:
    """The exit code and the one line for ``error`` (its cause chain and Spark error class included)."""
    from pipelines.quality import DataQualityError
    from windowing.spark.stores import ConcurrentWriterError, SpecMismatchError
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
