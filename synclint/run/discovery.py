"""Which files to check: directories walked, .gitignore and `exclude` respected.

A path named on the command line is always checked, as Ruff does: a named file even when
`exclude` or .gitignore match it, a named directory even when it is ignored itself (what
is inside it is still filtered), unless `--force-exclude` (pre-commit names every staged
file). What the walk passes over is recorded (`skipped`) so that `--verbose` can name it,
and a named path that cannot be checked gets its own reason (no such file, a FIFO, a
symlink loop), never a silent "0 files checked".
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from synclint.findings import FileError
from synclint.paths import absolute_paths

ALWAYS_SKIP = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".tox", ".nox", ".eggs",
               "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".synclint_cache",
               "site-packages", "build", "dist", "__pypackages__"}
# Of those, the ones that never hold source anyone wrote (version control, tools' caches):
# skipped without being counted, or every run would report synclint's own cache.
QUIET_SKIP = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
              ".synclint_cache"}


@dataclass
class Discovery:
    files: List[str] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)  # named paths that cannot be checked
    skipped: List[Tuple[str, str]] = field(default_factory=list)  # (path, why) passed over in a walk


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


def not_checkable(path: str) -> Optional[str]:
    """Why a path named on the command line cannot be checked, or None for a file or
    directory."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "symlink loop"
        if e.errno == errno.ENOENT and os.path.islink(path):
            return f"broken symlink (to {os.readlink(path)})"
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return "no such file or directory"
        return f"cannot read: {e.strerror or e}"
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode)
            else "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
            else "not a regular file")
    return f"not a regular file ({kind})" if kind.startswith("a ") else kind


class Excludes:
    """The exclusions in force: gitignore-style patterns, each set relative to its own
    folder (the configuration's for `exclude` in [tool.synclint], the current folder for
    --exclude)."""

    def __init__(self, sets: Sequence[Tuple[object, object]]) -> None:
        # (folder, patterns), or (folder, a compiled spec) from `without_matches_of`
        self.sets = [(str(folder), _spec(spec) if isinstance(spec, (list, tuple)) else spec)
                     for folder, spec in sets if spec]

    def __bool__(self) -> bool:
        return bool(self.sets)

    def match(self, path: str) -> bool:
        """`path` (existing or not: stdin's name; a file or a folder) is excluded."""
        full = os.path.abspath(path)
        for folder, spec in self.sets:
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            if spec.match_file(rel) or spec.match_file(rel + "/"):
                return True
        return False

    def without_matches_of(self, folder: str) -> "Excludes":
        """Less the patterns that match `folder` (named on the command line: what excludes
        the folder itself must not exclude everything inside it)."""
        full = os.path.abspath(folder)
        return Excludes([(base, _without_matches_of(spec, os.path.relpath(full, base).replace(os.sep, "/")))
                         for base, spec in self.sets])


def tidy(path: str) -> str:
    """A path as given, without `.` parts or doubled separators (`./src//a.py` -> `src/a.py`),
    for the findings, errors and diffs that print it. `..` is kept: through a symlinked
    folder it is not the lexical parent."""
    if os.sep + "." + os.sep not in os.sep + path + os.sep and os.sep * 2 not in path:
        return path
    head = os.sep if path.startswith(os.sep) else ""
    parts = [p for p in path.split(os.sep) if p not in ("", ".")]
    return head + os.sep.join(parts) if parts else head or "."


def discover(paths: Iterable[str], exclude: Sequence[Tuple[Path, Sequence[str]]], force_exclude: bool = False
             ) -> Discovery:
    """The python files to check under `paths` (printed as `tidy` writes them), the named
    paths that cannot be checked, and what the walk skipped. `exclude`: (folder, patterns
    relative to it), as `Config.exclude_sets` gives them."""
    out = Discovery()
    excl = Excludes(exclude)
    files: List[str] = []
    for p in paths:
        p = tidy(p)
        why = not_checkable(p)
        if why is not None:
            out.errors.append(FileError(p, why))
        elif force_exclude and excl.match(p):
            out.skipped.append((p, "excluded by the configuration (--force-exclude)"))
        elif os.path.isdir(p):
            files.extend(_walk(p, excl, out))
        else:
            files.append(p)
    seen = set()
    for f, key in absolute_paths(files).items():
        if key not in seen:
            seen.add(key)
            out.files.append(f)
    return out


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


def _without_matches_of(spec, rel_dir: str):
    """`spec` less the patterns that match `rel_dir` (a directory named on the command line:
    what ignores the directory itself must not ignore everything inside it)."""
    import pathspec

    keep = [p for p in spec.patterns if not (p.include and p.match_file(rel_dir + "/"))]
    return pathspec.GitIgnoreSpec(keep) if len(keep) != len(spec.patterns) else spec


def _walk(top: str, excl: Excludes, out: Discovery) -> List[str]:
    """The `.py` files under `top` (named on the command line); what is passed over goes to
    `out.skipped`, and `top` itself unreadable to `out.errors` (it was asked for)."""
    found: List[str] = []
    skipped = out.skipped
    top_abs = os.path.abspath(top)
    specs: List[Tuple[str, object]] = [
        (base, _without_matches_of(spec, os.path.relpath(top_abs, base).replace(os.sep, "/")))
        for base, spec in _ancestor_gitignores(top)
    ]
    if excl:
        excl = excl.without_matches_of(top)
    stack: List[Tuple[str, List[Tuple[str, object]]]] = [(top, specs)]
    while stack:
        d, specs = stack.pop()
        d_abs = os.path.abspath(d)  # (once per folder: its entries' are joined to it)
        own = _read_gitignore(d)
        if own is not None:
            specs = specs + [(d_abs, own)]
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            why = f"cannot read the directory: {e.strerror or e}"
            if d == top:
                out.errors.append(FileError(d, why))
            else:
                skipped.append((d, why))
            continue
        bare = d == "."  # scandir(".") names its entries ./a.py: they print as a.py
        subdirs = []
        for e in entries:
            full = e.name if bare else e.path  # (`os.path.join(d, e.name)`, made by scandir)
            try:
                is_dir = e.is_dir(follow_symlinks=False)
                is_py = not is_dir and e.name.endswith(".py")
                is_file = is_py and e.is_file()
            except OSError as err:  # a symlink loop (ELOOP) and the like
                if e.name.endswith(".py"):
                    skipped.append((full, _link_problem(full, err)))
                continue
            if is_dir:  # (a symlink to a directory is not followed: a link up would loop)
                if e.name in ALWAYS_SKIP or e.name.endswith(".egg-info"):
                    if e.name not in QUIET_SKIP:
                        skipped.append((full, "a tool or environment folder"))
                    continue
                if specs and _ignored(os.path.join(d_abs, e.name), True, specs):
                    skipped.append((full, "ignored by .gitignore"))
                    continue
                if excl and excl.match(full):
                    skipped.append((full, "excluded by the configuration"))
                    continue
                subdirs.append(full)
            elif is_py:
                if not is_file:
                    if e.is_symlink():
                        skipped.append((full, _link_problem(full, None)))
                    continue
                if specs and _ignored(os.path.join(d_abs, e.name), False, specs) or excl and excl.match(full):
                    continue
                found.append(full)
        for s in reversed(subdirs):
            stack.append((s, specs))
    return sorted(found)


def _link_problem(path: str, err: Optional[OSError]) -> str:
    why = not_checkable(path)
    if why is None and err is not None:
        why = f"cannot read: {err.strerror or err}"
    return why or "not a regular file"
