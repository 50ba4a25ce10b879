"""No module-level mutable state in synclint/: a name bound at a module's top level must not
be written after import (mutated in place, or rebound through `global`). State of a run
belongs to the run; a long-lived process (the daemon, the LSP worker) must not carry one
request's state into the next. The allow-list names what is still left, with why."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "synclint"

MUTATORS = frozenset(("append", "extend", "insert", "add", "update", "setdefault", "clear", "pop", "popitem",
                      "remove", "discard", "sort", "reverse", "__setitem__", "__delitem__"))

# module:name -> why it is still there. Every entry is a debt (issue 35, point 2), not a
# constant: constants are never written, so they need no entry.
ALLOWED = {
    # Memos of what never changes in a process (a class's fields, a rule set's dispatch class,
    # a libc symbol): the same answer for every run, so no run can see another's.
    "synclint/atomic.py:_LINKAT": "libc's linkat, looked up once",
    "synclint/parse/node_data.py:_COMPARED": "a node class's fields and their defaults",
    "synclint/parse/builder.py:_READS": "the fields the builder reads, completed at import for this Python's node types",
    "synclint/engine.py:_FANOUT": "rule classes -> their crash-isolating class",
    "synclint/semantic/syntax.py:FIELD_KINDS": "a node class's fields",
    "synclint/semantic/syntax.py:_fields_cache": "a node class's fields",
    "synclint/walker.py:_dispatch_cache": "a node class's visit methods",
    "synclint/walker.py:_stmt_cache": "a node class's statement fields",
    # Per process by nature: the signal handler of the LSP worker, and the runtime side, which
    # hooks torch for the whole process (trace/ is another issue's)
    "synclint/frontends/lsp_worker.py:_busy": "the worker's job flag, read by its SIGUSR1 handler",
    "synclint/trace/guard.py:_no_device_said": "runtime guard",
    "synclint/trace/guard.py:_checked_cache": "runtime guard: a syncing file is checked once per test process (keyed by path and mtime, so an edit is seen)",
    "synclint/trace/intercept.py:_holds": "runtime hook of torch",
    "synclint/trace/intercept.py:_shared": "runtime hook of torch",
    "synclint/trace/intercept.py:_users": "runtime hook of torch",
    "synclint/trace/raising.py:_state": "runtime hook of torch",
}


def written_module_names(source: str) -> set:
    """Names bound at the module's top level that code in the module writes after import."""
    tree = ast.parse(source)
    top = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    top.add(n.id)
    written = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            written.update(n for n in node.names if n in top)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in top:
            written.add(node.func.value.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            for t in (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]):
                while isinstance(t, (ast.Subscript, ast.Attribute)):
                    t = t.value
                    if isinstance(t, ast.Name) and t.id in top:
                        written.add(t.id)
    return written


def test_no_module_level_state_is_written_after_import():
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        found.update(f"{rel}:{name}" for name in written_module_names(path.read_text(encoding="utf-8")))
    assert found - set(ALLOWED) == set(), "module-level state written after import"


def test_the_allow_list_names_only_state_that_is_still_there():
    gone = [k for k in ALLOWED if not (PACKAGE.parent / k.split(":")[0]).exists()
            or k.split(":")[1] not in written_module_names((PACKAGE.parent / k.split(":")[0]).read_text())]
    assert not gone, f"remove from ALLOWED: {gone}"


def test_a_planted_memo_is_found():
    planted = "_SEEN = {}\n\ndef check(path):\n    _SEEN[path] = True\n"
    assert written_module_names(planted) == {"_SEEN"}
    assert written_module_names("_N = 0\n\ndef bump():\n    global _N\n    _N += 1\n") == {"_N"}
    assert written_module_names("L = []\n\ndef f():\n    L.append(1)\n") == {"L"}
    # a constant that is only read is not state
    assert written_module_names("WORDS = frozenset(('a',))\nT = {'a': 1}\n\ndef f(k):\n    return T[k]\n") == set()
