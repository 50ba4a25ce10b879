"""The package's layers, as pyproject.toml's `[tool.importlinter]` declares them: front ends
-> run | report -> engine -> semantic, and no import circle. Function-level imports count
(grimp reads every import statement, not just the module's top)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

grimp = pytest.importorskip("grimp")
pytest.importorskip("importlinter")

def lint_imports(cwd: Path, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache", "--config", "pyproject.toml"],
                          cwd=cwd, env=env, capture_output=True, text=True)


def circles(graph) -> list:
    """The strongly connected components (more than one module) of an import graph."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_declared_import_contract_holds():
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def synclint_graph():
    """grimp's graph of synclint/. The rules are installed as synclint.rules from rules/ (a
    folder grimp does not see), so it files `import synclint.rules` under the package
    itself: those imports are dropped, not read as imports of synclint/__init__.py."""
    graph = grimp.build_graph("synclint", cache_dir=None)
    for importer in graph.find_modules_that_directly_import("synclint"):
        details = graph.get_import_details(importer=importer, imported="synclint")
        if details and all("synclint.rules" in d["line_contents"] for d in details):
            graph.remove_import(importer=importer, imported="synclint")
    return graph


def test_no_import_circle_in_synclint_function_level_imports_included():
    graph = synclint_graph()
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_circles_finds_a_circle_closed_inside_a_function():
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert circles(graph) == [["p.a", "p.b", "p.c"]]


@pytest.mark.parametrize("module, planted", [
    # the run reaching up to a front end, from inside a function
    ("synclint/run/pipeline.py", "from synclint.frontends.cli import main"),
    # the report layer reading the run
    ("synclint/report/render.py", "from synclint.run.pipeline import run"),
    # a circle between two sibling modules: findings <- engine
    ("synclint/findings.py", "from synclint.engine import lint_source"),
])
def test_a_planted_function_level_import_breaks_the_contract(tmp_path, module, planted):
    shutil.copytree(ROOT / "synclint", tmp_path / "synclint", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with open(tmp_path / module, "a", encoding="utf-8") as fh:
        fh.write(f"\n\ndef _planted():\n    {planted}\n")
    r = lint_imports(tmp_path, env)
    assert r.returncode == 1 and "BROKEN" in r.stdout, r.stdout + r.stderr
