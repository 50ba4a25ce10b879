"""What a fixed file must still be: whatever the original was. Where the original compiled
on the Python running synclint, the fixed text must compile there too; where it parsed as
the oldest Python the project declares (`requires-python` in its pyproject.toml), it must
still parse as that Python. A fix that breaks either is withheld (`synclint.fixes`).

`ast.parse(feature_version=...)` knows most syntax by the version that added it, but not
PEP 701 (Python 3.12): an f-string whose braces hold its own quote, a backslash, a comment
or, in a one-line f-string, a line break. Running on 3.12 or later for a project that may run
on 3.11 (or that says nothing), that is checked here from the tokens."""

from __future__ import annotations

import ast
import os
import re
import sys
import warnings
from typing import Callable, Dict, List, Optional, Tuple

Version = Tuple[int, int]
RUNNING: Version = sys.version_info[:2]
PEP701: Version = (3, 12)
# The oldest version `ast.parse(feature_version=...)` takes on every Python we run on.
_OLDEST_FEATURE_VERSION: Version = (3, 7)


class FixCheck:
    """The checks `original` passes; `problem(text)` says which of them `text` fails."""

    def __init__(self, original: str, minimum: Optional[Tuple[Version, str]] = None):
        checks: List[Tuple[Callable[[str], Optional[str]], str]] = [
            (_compile_error, f"does not compile on Python {_v(RUNNING)}, which runs synclint")]
        floor, where = minimum or (None, "")
        if floor is not None and floor < RUNNING:
            fv = max(floor, _OLDEST_FEATURE_VERSION)
            checks.append((lambda text: _parse_error(text, fv), f"does not parse as Python {_v(floor)} ({where})"))
        if RUNNING >= PEP701 and (floor is None or floor < PEP701):
            why = f"needs Python 3.12 ({where})" if floor is not None else "needs Python 3.12 (the file did not)"
            checks.append((pep701_fstring, why))
        self._checks = [(test, why) for test, why in checks if test(original) is None]

    def problem(self, text: str) -> Optional[str]:
        """Why `text` is not fit to be written (None: it is): the first check the original
        passed and it fails, with what failed and where."""
        from synclint.parse.nesting import nesting_problem

        for test, why in self._checks:
            error = test(text)
            if error is not None:
                return f"the fixed code {why}: {error}"
        nested = nesting_problem(text)
        if nested is not None:
            return f"the fixed code is {nested}"
        return _libcst_error(text)


def _v(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def _where(e: SyntaxError) -> str:
    return f"{e.msg} (line {e.lineno})" if e.lineno else str(e.msg)


def _compile_error(text: str) -> Optional[str]:
    try:
        with warnings.catch_warnings():  # `"a" is 1` and bad escapes warn: not ours to judge
            warnings.simplefilter("ignore")
            compile(text, "<fixed>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return _where(e)
    except (ValueError, RecursionError, MemoryError) as e:
        return type(e).__name__
    return None


def _parse_error(text: str, version: Version) -> Optional[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text, feature_version=version)
    except SyntaxError as e:
        return _where(e)
    except (ValueError, RecursionError, MemoryError) as e:
        return type(e).__name__
    return None


def _libcst_error(text: str) -> Optional[str]:
    """LibCST must parse the fixed text: the next pass and the next run read it with it."""
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception as e:  # noqa: BLE001 - whatever it raises, the text is not fit
        return f"the fixed code does not parse ({type(e).__name__})"
    return None


def pep701_fstring(text: str) -> Optional[str]:
    """Where `text` writes an f-string only Python 3.12 and later read (PEP 701), as
    "what (line N)"; None if it writes none. Needs the tokens of Python 3.12 or later
    (FSTRING_START ... FSTRING_END, with the tokens of each replacement field between)."""
    import io
    import tokenize

    start, middle, end = tokenize.FSTRING_START, tokenize.FSTRING_MIDDLE, tokenize.FSTRING_END
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None  # not Python this Python reads: the compile check has its say
    open_: List[List] = []  # per f-string open here: [its closing quote(s), braces open in it, its row]
    for tok in tokens:
        row = tok.start[0]
        if open_:
            # in an expression: a replacement field of the innermost f-string (its format
            # spec aside), or anywhere in an f-string nested in another's field
            in_field = len(open_) > 1 or (open_[-1][1] > 0 and tok.type != middle)
            if tok.type == tokenize.COMMENT:
                return f"a comment inside an f-string's braces (line {row})"
            if in_field and tok.type in (tokenize.STRING, middle, start):
                if "\\" in tok.string:
                    return f"a backslash inside an f-string's braces (line {row})"
                body = tok.string.lstrip("rRbBuUfF")
                for quote, _, _ in open_:
                    if tok.type != middle and (body[0] == quote if len(quote) == 1 else quote in body):
                        return f"a string inside an f-string's braces reuses its quote {quote} (line {row})"
        if tok.type == start:
            open_.append([tok.string.lstrip("rRbBfF"), 0, row])
        elif tok.type == end:
            quote, _, first_row = open_.pop()
            if len(quote) == 1 and tok.end[0] != first_row:
                return f"a line break inside a one-line f-string (line {first_row})"
        elif open_ and tok.type == tokenize.OP and tok.string in "{}":
            open_[-1][1] += 1 if tok.string == "{" else -1
    return None


# ------------------------------------------------------------------ the declared minimum
_CLAUSE = re.compile(r"^\s*(~=|==|>=|>)\s*(\d+)\.(\d+)")


def lowest_python(spec: str) -> Optional[Version]:
    """The oldest Python 3.x a `requires-python` specifier admits (None: it does not say):
    `>=3.8`, `>=3.8,<4`, `~=3.10`, `==3.11.*`, `>3.7` (3.7.1 is in). Every clause must hold,
    so the lowest is the highest of the lower bounds."""
    bounds = []
    for clause in spec.split(","):
        m = _CLAUSE.match(clause)
        if m is not None:
            bounds.append((int(m.group(2)), int(m.group(3))))
    if not bounds:
        return None
    lowest = max(bounds)
    return lowest if lowest[0] == 3 else None


def declared_minimum(path: str, memo: Dict[str, Optional[Tuple[Version, str]]]) -> Optional[Tuple[Version, str]]:
    """(the oldest Python, where that was said) for the file at `path`, from the nearest
    pyproject.toml above it (its project's), or None where that does not say (no file, no
    `requires-python`, a specifier without a lower bound, a file we cannot read). `memo`
    keeps the answer per folder for one run."""
    return _folder_minimum(os.path.dirname(os.path.abspath(path)), memo)


def _folder_minimum(folder: str, memo: Dict[str, Optional[Tuple[Version, str]]]) -> Optional[Tuple[Version, str]]:
    if folder not in memo:
        candidate, parent = os.path.join(folder, "pyproject.toml"), os.path.dirname(folder)
        if os.path.isfile(candidate):
            memo[folder] = _requires_python(candidate)
        else:
            memo[folder] = _folder_minimum(parent, memo) if parent != folder else None
    return memo[folder]


def _requires_python(pyproject: str) -> Optional[Tuple[Version, str]]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(pyproject, "rb") as fh:
            project = tomllib.load(fh).get("project")
    except (OSError, ValueError):  # unreadable or not TOML: its own check says so, not ours
        return None
    spec = project.get("requires-python") if isinstance(project, dict) else None
    lowest = lowest_python(spec) if isinstance(spec, str) else None
    if lowest is None:
        return None
    return lowest, f"requires-python {spec.strip()!r} in {os.path.relpath(pyproject)}"
