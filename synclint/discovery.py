"""Which files to check: directories walked, .gitignore and `exclude` respected."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, List, Tuple

ALWAYS_SKIP = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".tox", ".nox", ".eggs",
               "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".synclint_cache",
               "site-packages", "build", "dist", "__pypackages__"}


def _spec(lines: Iterable[str]):
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(list(lines))


def _read_gitignore(d: str):
    p = os.path.join(d, ".gitignore")
    try:
        with open(p, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    lines = [l for l in lines if l.strip() and not l.lstrip().startswith("#")]
    return _spec(lines) if lines else None


def discover(
    paths: Iterable[str], exclude: List[str], root: Path, force_exclude: bool = False
) -> Tuple[List[str], List[str]]:
    """(python files to check, paths that do not exist). Named files are checked even when
    `exclude` matches them, unless `force_exclude` (pre-commit names every staged file)."""
    files: List[str] = []
    missing: List[str] = []
    excl = _spec(exclude) if exclude else None
    root_s = str(root)

    def excluded(path: str) -> bool:
        if excl is None:
            return False
        rel = os.path.relpath(os.path.abspath(path), root_s).replace(os.sep, "/")
        return excl.match_file(rel) or excl.match_file(rel + "/")

    for p in paths:
        if os.path.isfile(p):
            if not (force_exclude and excluded(p)):
                files.append(p)
        elif os.path.isdir(p):
            files.extend(_walk(p, excluded))
        else:
            missing.append(p)
    seen = set()
    out = []
    for f in files:
        key = os.path.abspath(f)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out, missing


def _ancestor_gitignores(top: str) -> List[Tuple[str, object]]:
    """.gitignore files above `top`, up to the repository root."""
    out = []
    d = os.path.abspath(top)
    while True:
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        spec = _read_gitignore(d)
        if spec is not None:
            out.append((d, spec))
        if os.path.isdir(os.path.join(d, ".git")):
            break
    return out


def _ignored(path: str, is_dir: bool, specs: List[Tuple[str, object]]) -> bool:
    for base, spec in specs:
        rel = os.path.relpath(path, base).replace(os.sep, "/")
        if rel.startswith(".."):
            continue
        if spec.match_file(rel + ("/" if is_dir else "")):
            return True
    return False


def _walk(top: str, excluded) -> List[str]:
    out: List[str] = []
    specs: List[Tuple[str, object]] = _ancestor_gitignores(top)
    stack: List[Tuple[str, List[Tuple[str, object]]]] = [(top, specs)]
    while stack:
        d, specs = stack.pop()
        own = _read_gitignore(d)
        if own is not None:
            specs = specs + [(os.path.abspath(d), own)]
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            full = os.path.join(d, e.name)
            absf = os.path.abspath(full)
            if e.is_dir(follow_symlinks=False):
                if e.name in ALWAYS_SKIP or e.name.endswith(".egg-info"):
                    continue
                if _ignored(absf, True, specs) or excluded(full):
                    continue
                subdirs.append(full)
            elif e.name.endswith(".py") and e.is_file():
                if _ignored(absf, False, specs) or excluded(full):
                    continue
                out.append(full)
        for s in reversed(subdirs):
            stack.append((s, specs))
    return sorted(out)
