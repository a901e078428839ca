"""Values of job-file tables, checked: what a built-in part's ``from_config`` reads.

A job file is TOML, so a value may arrive as an int, a string (the short form
``"count:3"`` gives ``"3"``) or a table. These helpers turn them into what the
part's constructor takes, or raise an error naming the part, the key and the
value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from windowing.core.time import parse_duration_ms


@dataclass(frozen=True)
class JobForm:
    """How job files name a built-in part (see :mod:`windowing.core.registry`).

    Attributes:
        name: the part's name (``"tumbling"``, ``"count"``).
        keys: the keys its table takes (``("size", "offset")``).
        arg: the key that the short form ``"<name>:<value>"`` fills (``"n"`` for
            ``"count:3"``); None: the name stands alone.
    """

    name: str
    keys: tuple[str, ...] = ()
    arg: str | None = None


def require(table: Mapping[str, Any], owner: str, *keys: str) -> None:
    """Every key of ``keys`` is in ``table``.

    Raises:
        ValueError: ``"<owner> needs <key> = ..."`` naming the missing keys.
    """
    missing = [key for key in keys if key not in table]
    if missing:
        raise ValueError(f"{owner} needs {' and '.join(f'{key} = ...' for key in missing)} (got {dict(table)!r})")


def as_int(value: Any, name: str) -> int:
    """An int, or a string of one (``"3"`` from ``"count:3"``); booleans are refused."""
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return value


def as_number(value: Any, name: str) -> float | int:
    """An int or a float, or a string of one; booleans are refused."""
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return value


def as_flag(value: Any, name: str) -> bool:
    """A TOML boolean; ``"yes"`` or ``1`` are refused."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def optional_duration_ms(table: Mapping[str, Any], key: str) -> int | None:
    """``table[key]`` as milliseconds (``"10 seconds"`` or an int), None when absent."""
    return None if table.get(key) is None else parse_duration_ms(table[key], key)
