"""Paths as the project sees them: absolute paths of many files at once, the project's root,
which files are test modules (pytest's naming, less the scripts named like tests), and a
path as a line of text shows it."""

from __future__ import annotations

import os
import re
from typing import Dict, Iterable, Sequence


def absolute_paths(paths: Iterable[str]) -> Dict[str, str]:
    """`os.path.abspath` of each path, with one `getcwd` for them all (not one each: a
    tenth of a warm run of a large project)."""
    cwd = os.getcwd()
    return {p: os.path.normpath(os.path.join(cwd, p)) for p in paths}


# Files that mark a project's root folder
ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root(paths: Iterable[str], known: Sequence[str] = ()) -> str:
    """The nearest directory above the files' common directory with a project marker, else
    the directory that holds the package the common directory is in (`check pkg/` in a tree
    without markers: `from pkg.sub import f` names `pkg/sub.py`), else that directory.

    Without a marker, a root a recent check used (`known`, absolute) that holds that
    directory wins, the widest (the check that saw the most callers): `check
    helpers/memory.py` after `check repo/` is a file of `repo` (whose scripts import
    `helpers.memory`), as it was in the package's check, not a project of its own."""
    dirs = [os.path.dirname(p) for p in absolute_paths(paths).values()]
    if not dirs:
        return os.getcwd()
    common = os.path.commonpath(dirs)
    d = common
    while True:
        if any(os.path.exists(os.path.join(d, m)) for m in ROOT_MARKERS):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    while os.path.exists(os.path.join(common, "__init__.py")) and os.path.dirname(common) != common:
        common = os.path.dirname(common)
    above = [k for k in known if common.startswith(os.path.join(k, ""))]
    return min(above, key=len) if above else common


def is_test_path(path: str) -> bool:
    """A test module by pytest's conventions: `test_*.py`, `*_test.py`, `conftest.py`, or a
    file under a `tests`/`test` folder (`path` relative to the project's root)."""
    name = os.path.basename(os.path.normpath(path))
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or _in_tests_folder(path))


def _in_tests_folder(path: str) -> bool:
    """`path` is under a `tests` or `test` folder."""
    return any(p in ("tests", "test") for p in os.path.normpath(path).split(os.sep)[:-1])


# What pytest or unittest would collect: a `test_*` function (one named just `test` is
# an evaluation routine far more often: TCN's and SlowFast's `def test(...)`), a `Test*`
# class, or an import of either framework
_TEST_CODE = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+test\w|^[ \t]*class[ \t]+Test"
                        r"|^[ \t]*(?:import|from)[ \t]+(?:pytest|unittest)\b", re.M)
# A script's entry: a `__main__` block
_MAIN_GUARD = re.compile(r"^if[ \t]+__name__[ \t]*==[ \t]*['\"]__main__['\"]", re.M)
# command-line arguments parsed at import, which pytest's own arguments would break: a
# script whatever it defines (TCN's `add_test.py` trains a model at module level)
_ARGS_AT_IMPORT = re.compile(r"^[A-Za-z_][\w., \t]*=[^\n=]*\.parse_(?:known_)?args\(", re.M)


def is_test_module(path: str, filename: str) -> bool:
    """`is_test_path`, less the scripts named like tests: a file that parses arguments at
    module level; one with a `__main__` block and nothing pytest or unittest would
    collect (faster-rcnn's `test_net.py` evaluates a model); one named like a test, outside
    a tests folder, with nothing to collect (SlowFast's `tools/test_net.py`, which
    `run_net.py` imports). `filename`: where to read it (unreadable: taken for a test)."""
    if not is_test_path(path):
        return False
    if os.path.basename(path) == "conftest.py":
        return True
    try:
        with open(filename, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return True
    if _ARGS_AT_IMPORT.search(text):
        return False
    if _TEST_CODE.search(text):
        return True
    return _in_tests_folder(path) and not _MAIN_GUARD.search(text)


def is_test_file(root: str, filename: str) -> bool:
    """`is_test_module` of a file named as the command line or an editor names it, its
    folders read from the project's `root` (a file outside it: by its own name)."""
    rel = os.path.relpath(os.path.abspath(filename), root)
    return is_test_module(rel if not rel.startswith("..") else os.path.basename(filename), filename)


# What would end a report's line early or reach the terminal as a command: C0 and C1
# controls, DEL, Unicode's line and paragraph separators, and the bytes of a name that is
# not UTF-8 (`os.fsdecode`'s surrogate escapes).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\udc80-\udcff]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown_path(path: str) -> str:
    """`path` as a line of text shows it: as it is, or, where it holds a character that
    would break the line (a newline in a file name) or act on the terminal, in double
    quotes with C escapes, as git shows such names (`"new\\nline.py"`)."""
    if not _UNPRINTABLE.search(path):
        return path
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + _UNPRINTABLE.sub(lambda m: _escape(m.group()), quoted) + '"'


def _escape(c: str) -> str:
    code = ord(c)
    if c in _ESCAPES:
        return _ESCAPES[c]
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a name that is not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
