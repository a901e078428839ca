"""The windowing core must not import pyspark (it is the executable spec, usable anywhere)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "windowing" / "core"


def test_core_modules_do_not_import_pyspark():
    modules = [f"windowing.core.{p.stem}" for p in sorted(CORE.glob("*.py")) if p.stem != "__init__"]
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules) + "import windowing\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))\n"
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=CORE.parents[1])
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_core_file_has_a_spark_import_statement():
    import re
    pattern = re.compile(r"^\s*(import|from)\s+(pyspark|py4j|delta)\b", re.MULTILINE)
    offenders = [p.name for p in CORE.glob("*.py") if pattern.search(p.read_text())]
    assert offenders == []
