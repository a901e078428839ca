"""The windowing core never imports pyspark (docs/architecture.md): it is the vocabulary and the
reference model, usable and testable without Spark."""
from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import tokenize
from pathlib import Path

import windowing.core

CORE = Path(windowing.core.__file__).resolve().parent
REPO = CORE.parent.parent


def _core_modules() -> list[str]:
    modules = []
    for path in sorted(CORE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def test_core_has_modules():
    modules = _core_modules()
    assert "windowing.core" in modules and "windowing.core.reference" in modules, modules


def test_importing_every_core_module_does_not_import_pyspark():
    """A fresh interpreter imports each core module and the ``windowing`` package (whose Spark names
    load lazily); pyspark, py4j and delta must stay out of sys.modules."""
    script = (
        "import importlib, json, sys\n"
        "assert not any(m == 'pyspark' or m.startswith('pyspark.') for m in sys.modules)\n"
        f"for name in {_core_modules() + ['windowing']!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "                        if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={"PATH": "", "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    leaked = json.loads(done.stdout.strip().splitlines()[-1])
    assert leaked == [], f"importing windowing.core pulled in {leaked}"


def _code_mentions(path: Path, word: str) -> list[str]:
    """Where ``word`` occurs in a Python file outside comments and docstrings.

    Identifiers, import statements and string literals all count (so
    ``importlib.import_module("pyspark")`` is caught); prose does not: the
    package docstring says that a test keeps pyspark out, which is fine.
    """
    source = path.read_text(encoding="utf-8")
    prose = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            prose.add((node.value.lineno, node.value.col_offset))  # docstrings and bare strings
    hits = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.start in prose):
            continue
        if word in tok.string.lower():
            hits.append(f"{path.name}:{tok.start[0]}: {tok.line.strip()}")
    return hits


def test_no_core_code_mentions_pyspark():
    hits = []
    for path in sorted(CORE.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        if path.suffix == ".py":
            hits += _code_mentions(path, "pyspark")
        elif "pyspark" in path.read_text(encoding="utf-8", errors="replace").lower():
            hits.append(str(path))
    assert hits == []


def test_the_code_scan_sees_imports_and_strings(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""Mentions pyspark in prose."""\n# pyspark in a comment\n'
                      'import importlib\nx = importlib.import_module("pyspark.sql")\n'
                      'from pyspark import sql\n')
    assert [h.split(":")[1] for h in _code_mentions(sample, "pyspark")] == ["4", "5"]
