"""The repository speaks about the product, not about how it was developed.

Users cannot know what a numbered work period, an issue number or a dated lab
note means, and such text goes stale the day it is written: development
history belongs in commit messages. This module scans every file of the
repository (tracked, plus new files not yet committed) for the forms that
history takes:

* numbered work periods and tickets: the word session, sessions, issue or
  sprint followed by a number, or "#" and a number;
* references to issues by position: "the next issue", "the foundation issue";
* dated lab entries: "measured 2026-11-23"; in Markdown, any ISO date in the
  prose (dates in code spans and code blocks are examples, not history);
* "fixed the bug where ...".

The one exclusion is this file, which must spell the forms out to test them.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
THIS_FILE = Path(__file__).resolve().relative_to(REPO).as_posix()
UNTRACKED_TREES = (".git", ".venv", ".jars", "airflow-home", "demo-output", "__pycache__", ".pytest_cache",
                   ".hypothesis")
"""Folders that hold no file of the repository (virtualenv, jars, run outputs): skipped without git."""

HISTORY_FORMS = {
    "a numbered work period or ticket": re.compile(
        r"\b(?:sessions?|issues?|sprints?|milestones?|tickets?|work periods?|pull requests?)\s+#?\d+\b",
        re.IGNORECASE),
    # Not a CSS colour (``color: #222;``): a colour follows a colon, an issue number does not.
    "an issue number": re.compile(r"(?:^|[\s(\[])(?<!:\s)#\d+\b"),
    "an issue named by its position": re.compile(
        r"\b(?:next|previous|earlier|later|this|that|foundation|first|second|third)\s+issues?\b", re.IGNORECASE),
    "a dated lab entry": re.compile(
        r"\b(?:measured|benchmarked|profiled|timed|ran|re-run|rerun)\b[^\n]{0,40}?\b20\d\d-[01]\d-[0-3]\d\b",
        re.IGNORECASE),
    "a bug-fix story": re.compile(r"\bfixed\s+(?:the|a|an)\s+(?:bug|defect|issue)\b", re.IGNORECASE),
}
MARKDOWN_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
_FENCED_BLOCK = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


def repository_files() -> list[str]:
    """The repository's files relative to its root: git's tracked and not-ignored new files, else a walk."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                                cwd=REPO, capture_output=True, check=True, timeout=60).stdout
        names = [name for name in listed.decode("utf-8").split("\0") if name]
        return sorted(name for name in names if (REPO / name).is_file())
    except (OSError, subprocess.CalledProcessError):
        return sorted(p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
                      if p.is_file() and not set(p.relative_to(REPO).parts) & set(UNTRACKED_TREES))


def markdown_prose(text: str) -> str:
    """``text`` with code blocks and code spans blanked (newlines kept, so line numbers stay right)."""
    blank = lambda match: re.sub(r"[^\n]", " ", match.group(0))  # noqa: E731
    return _CODE_SPAN.sub(blank, _FENCED_BLOCK.sub(blank, text))


def history_in(name: str, text: str) -> list[str]:
    """Every line of ``text`` (the file ``name``) that carries development history, as ``name:line: form``."""
    hits = []
    forms = list(HISTORY_FORMS.items())
    scans = [(text, forms)]
    if name.endswith(".md"):
        scans.append((markdown_prose(text), [("a date in the prose", MARKDOWN_DATE)]))
    for scanned, checks in scans:
        for form, pattern in checks:
            for match in pattern.finditer(scanned):
                line = scanned.count("\n", 0, match.start()) + 1
                hits.append(f"{name}:{line}: {form}: {match.group(0).strip()!r}")
    return hits


def test_no_file_carries_development_history():
    hits = []
    for name in repository_files():
        if name == THIS_FILE:
            continue
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary files hold no prose
        hits += history_in(name, text)
    assert hits == [], "development history belongs in commit messages:\n" + "\n".join(hits)


def test_the_scan_sees_the_repository():
    files = repository_files()
    assert {"README.md", "windowing/core/spec.py", THIS_FILE} <= set(files), files[:20]
    assert not any(name.startswith((".venv/", ".jars/")) for name in files)


@pytest.mark.parametrize("text", [
    "Measured in session" + " 19 (the same code).",   # split: the repository's own grep for history stays clean
    "Sessions 13 to 20 measured the ratio.",
    "The transcripts of issue" + " 3's trigger plans.",
    "See #14 for the discussion.",
    "dags/ and expectations/ are the next issues.",
    "the fingerprint of the foundation issue",
    "Measured output (2026-11-23, on the plan):",
    "This fixed the bug where late rows vanished.",
])
def test_history_forms_are_found(text):
    assert history_in("notes.txt", text) != []


@pytest.mark.parametrize("text", [
    "Processing-time sessions merge; a SparkSession per process; session windows of 30 s.",
    "A window fires when the watermark passes its end; issues of late data go to the late table.",
    "CountTrigger(3) fires every 3 elements; the 2 sessions merge into 1.",
    "T0 = 1_767_225_600_000   # 2026-01-01T00:00:00Z",
    "body { color: #222; } .note { color: #555; }",
])
def test_product_text_is_not_history(text):
    assert history_in("module.py", text) == []


def test_markdown_dates_count_in_prose_only():
    example = ("Run `winjob backfill --start 2026-11-01T09:00` for an hour.\n"
               "```bash\n./dev winjob backfill --end 2026-11-01T10:00\n```\n")
    assert history_in("docs/x.md", example) == []
    assert history_in("docs/x.md", example + "On 2026-11-23 the ratio was 1.2x.\n") == [
        "docs/x.md:5: a date in the prose: '2026-11-23'"]


def test_the_execution_paths_doc_is_what_the_dispatch_decides():
    """docs/execution-paths.md's table is regenerated from ``plan_for`` (``docs/execution_paths.py --write``)."""
    pytest.importorskip("pyspark")
    import importlib
    paths = importlib.import_module("docs.execution_paths")   # the repository root is on sys.path
    documented = paths.documented_table(paths.DOC.read_text(encoding="utf-8"))
    assert documented == paths.markdown_table(), "run ./dev python docs/execution_paths.py --write"


SPARK = REPO / "windowing" / "spark"


def _spark_module(path: Path) -> str:
    """``windowing/spark/plans/registry.py`` -> ``plans.registry``; a package's ``__init__`` -> the package."""
    parts = path.relative_to(SPARK).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _spark_imports() -> dict[str, set[str]]:
    """Module -> the ``windowing.spark`` modules it imports (at its top or inside a function), each named
    from the package root (``plans.registry``); ``""`` stands for the package's face, ``windowing.spark``."""
    import ast
    modules = {_spark_module(path) for path in SPARK.rglob("*.py")}

    def resolved(name: str) -> str:
        return name[len("windowing.spark."):] if name.startswith("windowing.spark.") else ""

    graph = {}
    for path in sorted(SPARK.rglob("*.py")):
        module, imported = _spark_module(path), set()
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".") if package else []
                    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                    source = ".".join(base + ([node.module] if node.module else []))
                elif node.module == "windowing.spark" or (node.module or "").startswith("windowing.spark."):
                    source = resolved(node.module)
                else:
                    continue
                for alias in node.names:   # ``from package import module`` imports the module
                    inner = f"{source}.{alias.name}" if source else alias.name
                    imported.add(inner if inner in modules else source)
            elif isinstance(node, ast.Import):
                imported |= {resolved(a.name) for a in node.names
                             if a.name == "windowing.spark" or a.name.startswith("windowing.spark.")}
        graph[module] = imported - {module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if state.get(other) == "open":
                found.append(stack[stack.index(other):] + [other])
            elif other not in state:
                visit(other)
        stack.pop()
        state[module] = "done"
    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_the_spark_modules_import_each_other_without_cycles():
    """Plan modules import the shared names (``plans.base``, ``input.columns``, ``input.prepare``), never the
    planner: the registry imports the plans, the executor imports the registry."""
    graph = _spark_imports()
    assert {"plans.registry", "plans.time_plans", "plans.trigger_rules", "plans.executor"} <= set(graph)
    assert _cycles(graph) == []
    assert "plans.registry" in graph["plans.executor"] and "plans.executor" not in graph["plans.registry"]


def _wing_imports(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Wing (sub-package) -> the other wings its modules import, from the module graph."""
    wings: dict[str, set[str]] = {}
    for module, imported in graph.items():
        if module:
            wing = module.split(".")[0]
            wings.setdefault(wing, set()).update(other.split(".")[0] for other in imported if other)
    return {wing: others - {wing} for wing, others in wings.items()}


def test_the_wings_import_each_other_without_cycles():
    """The wings are layers: ``operator`` over the two executors ``plans`` and ``keyed``, over
    ``input``, ``state``, ``lake`` and ``runtime``; no wing imports one that imports it back, however
    indirectly (two modules that do not import each other can still tie their wings in a knot)."""
    wings = _wing_imports(_spark_imports())
    assert {"operator", "plans", "keyed", "input", "state", "lake", "runtime"} <= set(wings)
    assert _cycles(wings) == []
    assert {"plans", "keyed"} <= wings["operator"]


def test_the_spark_package_root_holds_only_its_face():
    """``windowing/spark`` is in wings: every module is in a sub-package; the root holds ``__init__`` only."""
    assert sorted(p.name for p in SPARK.glob("*.py")) == ["__init__.py"]
    packages = sorted(p.name for p in SPARK.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert packages and all((SPARK / name / "__init__.py").is_file() for name in packages), packages


def test_no_spark_module_imports_upward():
    """A module in a sub-package never imports the face (``windowing.spark`` or the lazy names of
    ``windowing``), and a sub-package's ``__init__`` imports nothing: the face depends on the wings,
    never the other way round."""
    import ast
    graph = _spark_imports()
    upward = sorted(module for module, imported in graph.items() if module and "" in imported)
    assert upward == [], f"modules importing the face windowing.spark: {upward}"
    packages = {module for module in graph if module and "." not in module}
    assert all(graph[package] == set() for package in packages), {p: graph[p] for p in packages if graph[p]}
    from_face = []
    for path in sorted(SPARK.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "windowing" and not node.level:
                from_face.append(_spark_module(path))
    assert from_face == [], f"modules importing names from the face windowing: {from_face}"


def test_the_import_checks_see_an_upward_import_and_a_cycle(tmp_path, monkeypatch):
    """The checks above read real files: an upward import and a cycle in a throwaway tree are found."""
    root = tmp_path / "windowing" / "spark"
    (root / "a").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "a" / "__init__.py").write_text("")
    (root / "a" / "one.py").write_text("from windowing.spark.a.two import X\nfrom windowing.spark import get_spark\n")
    (root / "a" / "two.py").write_text("def f():\n    from windowing.spark.a import one\n")
    monkeypatch.setitem(globals(), "SPARK", root)
    graph = _spark_imports()
    assert graph["a.one"] == {"a.two", ""} and graph["a.two"] == {"a.one"}
    assert _cycles(graph) == [["a.one", "a.two", "a.one"]]
    # wings a and b in a knot, though no module imports one that imports it back
    (root / "a" / "two.py").write_text("from windowing.spark.b.three import Y\n")
    (root / "b").mkdir()
    (root / "b" / "__init__.py").write_text("")
    (root / "b" / "three.py").write_text("from windowing.spark.a.four import Z\n")
    (root / "a" / "four.py").write_text("")
    graph = _spark_imports()
    assert _cycles(graph) == []
    assert _cycles(_wing_imports(graph)) == [["a", "b", "a"]]


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", ["core", "spark"])
def test_the_architecture_doc_names_every_module(package):
    """docs/architecture.md is a newcomer's map of ``windowing``: each module has a row saying its job."""
    doc = (REPO / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`([a-z0-9_/]+\.py)`", doc))
    root = REPO / "windowing" / package
    found = root.rglob("*.py") if package == "spark" else root.glob("*.py")   # spark's modules are in its wings
    modules = {p.relative_to(root).as_posix() for p in found if p.name != "__init__.py"}
    assert modules - named == set(), f"windowing/{package} modules without a row in docs/architecture.md"
