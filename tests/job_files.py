"""Variants of the shipped job files for tests (written to a temporary folder)."""
from __future__ import annotations

import re
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "jobs" / "purchases_per_minute.toml"


def demo_job_file(folder: Path, validate_runs: bool = False, replace: dict[str, str] | None = None) -> Path:
    """The demo's job file with ``[quality] validate_runs`` set (default false), written to ``folder``
    under its own name (``purchases_per_minute.toml``).

    ``validate_runs = false``: the drivers skip their own Great Expectations
    validation after each batch and backfill (as where the Airflow quality DAG
    validates), for tests whose point is what the runs write. ``replace``:
    further exact text replacements, each of which must match.
    """
    text = DEMO.read_text()
    text, n = re.subn(r"^\[quality\][^\n]*\n", f"[quality]\nvalidate_runs = {str(validate_runs).lower()}\n",
                      text, count=1, flags=re.M)
    assert n == 1, f"no [quality] table in {DEMO}"
    for old, new in (replace or {}).items():
        assert old in text, f"{old!r} is not in {DEMO}"
        text = text.replace(old, new)
    path = Path(folder) / DEMO.name
    path.write_text(text)
    return path
