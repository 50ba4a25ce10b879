"""Generated programs through `synclint check`'s per-file path, and what must hold for each.

Two kinds of program: hypothesmith's (any valid Python, from the grammar or from LibCST's
nodes: the parser, positions and the walk on code nobody writes) and torch-flavoured ones
(the rules' own examples, composed and nested in random contexts with random renames: code
the rules fire on and the fixer rewrites). `check_program` runs one through
`lint_source` with every rule (`--select ALL`) and `fix_source`, safe fixes and unsafe ones,
as `synclint check --fix [--unsafe-fixes]` does per file, and returns what went wrong.
Used by `tests/test_fuzz.py` (a small sample in CI) and `scripts/fuzz.py` (the large run).
"""

from __future__ import annotations

import ast
import builtins
import random
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from synclint.engine import LintError, lint_source
from synclint.fixes import FixError, fix_source, fix_text
from synclint.parse.lines import source_lines
from synclint.registry import all_rules

FILENAME = "fuzz.py"
OLDEST = (3, 8)  # a fixed text must parse as this Python wherever the original did


@dataclass
class Outcome:
    """What one program did: the problems are what the fuzz runs count as failures."""

    problems: List[str] = field(default_factory=list)
    refused: Optional[str] = None  # the one line of a file synclint rightly refuses
    codes: Tuple[str, ...] = ()
    fixes: int = 0  # fixes applied, unsafe ones included
    fixed_texts: int = 0  # fixed texts checked (compiled, re-linted, fixed again): one per mode that fixed


def lint(source: str) -> list:
    return lint_source(source, FILENAME, all_rules())


def check_program(source: str) -> Outcome:
    """Lint `source` with every rule and fix it (safe fixes, then all): no exception and no
    internal error, every position inside the file, and each fixed text, as Black checks
    its output: compiling on this Python and parsing as Python 3.8 wherever the original
    did, linted again without a refusal, and fixed again without a change. No fix may be
    withheld either: the fixer checks each fixed text itself (`fixcheck`) and withholds a
    fix that breaks the file, so a withheld fix is a fix the rule got wrong."""
    out = Outcome()
    try:
        findings = lint(source)
    except LintError as e:
        out.refused = str(e)
        return out
    except Exception as e:  # noqa: BLE001 - that is what is counted
        out.problems.append(f"lint raised {_exception(e)}")
        return out
    out.problems += _bad_findings(source, findings)
    out.codes = tuple(sorted({f.code for f in findings}))
    compiles, parses_old = _compiles(source), _parses_as(source, OLDEST)
    for unsafe in (False, True):
        try:
            result = fix_source(source, lint, unsafe=unsafe)
            out.problems += [f"fix withheld (unsafe={unsafe}): {f.code} at line {f.row}: {why}"
                             for f, why in result.withheld]
            fixed, n, left = result.text, result.count, result.left
            if n == 0:
                continue
            out.fixed_texts += 1
            out.problems += [f"after fixes: {p}" for p in _bad_findings(fixed, left)]
            if compiles and not _compiles(fixed):
                out.problems.append(f"fixed text does not compile (unsafe={unsafe})")
            if parses_old and not _parses_as(fixed, OLDEST):
                out.problems.append(f"fixed text does not parse as Python {OLDEST[0]}.{OLDEST[1]} (unsafe={unsafe})")
            again, more, _ = fix_text(fixed, lint, unsafe=unsafe)
            if more or again != fixed:
                out.problems.append(f"fixing the fixed text changed it again (unsafe={unsafe})")
            out.fixes = max(out.fixes, n)
        except (FixError, LintError) as e:
            out.problems.append(f"fix (unsafe={unsafe}): {e}")
        except Exception as e:  # noqa: BLE001
            out.problems.append(f"fix (unsafe={unsafe}) raised {_exception(e)}")
    return out


def with_torch(source: str) -> str:
    """`source` with `import torch` first where it still compiles (a `from __future__`
    import must stay first): a file that never mentions torch is only syntax-checked."""
    prefixed = "import torch\n" + source
    return prefixed if _compiles(prefixed) or not _compiles(source) else source


def _bad_findings(source: str, findings: Sequence) -> List[str]:
    lines = source_lines(source)
    widths = [len(line.rstrip("\r\n")) for line in lines] or [0]
    bad = []
    for f in findings:
        if f.internal:
            bad.append(f"internal error: {f.message} at line {f.row}")
            continue
        for row, col in ((f.row, f.column), (f.end_row, f.end_column)):
            # a position may sit one past a line's last character (an end), or at 1:1 of an empty file
            if not (1 <= row <= len(widths) and 1 <= col <= widths[row - 1] + 1):
                bad.append(f"{f.code} at {f.row}:{f.column}-{f.end_row}:{f.end_column} is outside the file")
                break
    return bad


def _compiles(source: str) -> bool:
    try:
        with warnings.catch_warnings():  # generated code is full of `(1, 2)()`: not our business
            warnings.simplefilter("ignore")
            compile(source, FILENAME, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _parses_as(source: str, version: Tuple[int, int]) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source, feature_version=version)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _exception(e: BaseException) -> str:
    import traceback

    where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    at = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
    return f"{type(e).__name__}: {str(e)[:200]}{at}"


# Torch-flavoured programs.


@dataclass(frozen=True)
class Example:
    code: str
    fires: Optional[str]  # the rule an INVALID example fires, None for a VALID one


def rule_examples() -> List[Example]:
    out = []
    for rule in all_rules():
        out += [Example(e.code, rule.CODE) for e in rule.INVALID]
        out += [Example(e.code, None) for e in rule.VALID]
    return out


# Statement contexts: a header line (indented body follows) and what may close it.
_BLOCKS = (
    ("def {f}(x, y=None, *args, **kwargs):", ""),
    ("async def {f}(x):", ""),
    ("for {i} in range(3):", ""),
    ("for {i} in loader:", ""),
    ("while {i}:", ""),
    ("with torch.no_grad():", ""),
    ("with torch.inference_mode():", ""),
    ("with torch.autocast('cuda'):", ""),
    ("if {i}:", "else:\n    pass"),
    ("if(flag and {i}):", ""),  # no space after the keyword: LibCST keeps that in the node
    ("while(not {i}):", ""),
    ("with(torch.no_grad()):", ""),
    ("try:", "except Exception:\n    pass"),
    ("try:", "finally:\n    pass"),
    ("match {i}:\n    case [a, *rest] if a:", ""),
    ("match {i}:\n    case {{'k': v}}:", ""),
    ("class {C}:", ""),
    ("class {C}(torch.nn.Module):", ""),
    ("@torch.no_grad()\ndef {f}(self):", ""),
    ("@decorator\ndef {f}():", ""),
)
# Expression contexts, around the right-hand side of an assignment.
_EXPRESSIONS = (
    "(lambda: {e})()",
    "[{e} for _ in range(2)][0]",
    "{{k: {e} for k in 'ab'}}['a']",
    "next(iter({e} for _ in range(1)))",
    "({e} if flag else None)",
    "(_w := {e})",
    'f"{{{e}}}"',  # inside an f-string's braces: before 3.12 a string there may not reuse its quote
    "f'{{{e}}}'",
    'f"""{{{e}}}"""',
)
_KEEP = frozenset(dir(builtins)) | {
    "torch", "nn", "F", "np", "numpy", "self", "cls", "device", "cuda", "loader", "model",
    "optimizer", "decorator", "flag", "main",
}


def torch_program(rng: random.Random, examples: Sequence[Example], fixtures: Sequence[str] = ()) -> Tuple[str, List[str]]:
    """A program of 1-5 examples (mostly INVALID ones; now and then a whole fixture file), each nested in 0-3
    random contexts, some right-hand sides wrapped in an expression context, names renamed.
    Returns the program and the codes of the INVALID examples it holds. Every step that
    would not compile is dropped, so the program compiles."""
    invalid = [ex for ex in examples if ex.fires]
    picked = [rng.choice(invalid if rng.random() < 0.7 else examples) for _ in range(rng.randint(1, 5))]
    if fixtures and rng.random() < 0.05:
        picked.append(Example(rng.choice(fixtures), None))
    imports: Dict[str, None] = {"import torch": None}
    parts = []
    for n, ex in enumerate(picked):
        body_lines = []
        for line in ex.code.splitlines():
            if line.startswith(("import ", "from ")) and not line.rstrip().endswith(("(", "\\")):
                imports[line] = None
            else:
                body_lines.append(line)
        body = "\n".join(body_lines) + "\n"
        if body.strip() and _compiles(body):
            body = _wrap_expressions(rng, body)
            for depth in range(rng.choice((0, 1, 1, 2, 3))):
                body = _nest(rng, body, f"{n}_{depth}")
        parts.append(body)
    future = [i for i in imports if i.startswith("from __future__")]
    head = future + [i for i in imports if i not in future]
    program = "\n".join(head) + "\n\n" + "\n".join(parts)
    if not _compiles(program):  # a context that does not fit (a `nonlocal` moved away, ...)
        program = "\n".join(head) + "\n\n" + "\n".join(
            "\n".join(line for line in ex.code.splitlines() if line not in imports) + "\n" for ex in picked)
    if not _compiles(program):
        program = picked[0].code
    renamed = _rename(rng, program)
    if renamed is not None and _compiles(renamed):
        program = renamed
    return program, [ex.fires for ex in picked if ex.fires]


def _nest(rng: random.Random, body: str, tag: str) -> str:
    header, tail = rng.choice(_BLOCKS)
    header = header.format(f=f"f{tag}", i=f"i{tag}", C=f"C{tag}")
    indent = " " * (8 if header.startswith("match") else 4)
    nested = f"{header}\n{textwrap.indent(body, indent)}" + (f"{tail}\n" if tail else "")
    return nested if _compiles(nested) else body


def _wrap_expressions(rng: random.Random, body: str) -> str:
    """Wrap the value of some one-line assignments (`x = EXPR`) in an expression context."""
    lines = body.splitlines()
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        if rng.random() > 0.3 or " = " not in stripped or stripped.startswith(("#", "@")):
            continue
        target, value = stripped.split(" = ", 1)
        try:
            ok = isinstance(ast.parse(stripped).body[0], ast.Assign)
        except SyntaxError:
            continue
        if ok:
            wrapped = rng.choice(_EXPRESSIONS).format(e=value.split("  #")[0])
            lines[k] = f"{line[: len(line) - len(stripped)]}{target} = {wrapped}"
    out = "\n".join(lines) + "\n"
    return out if _compiles(out) else body


def _rename(rng: random.Random, program: str) -> Optional[str]:
    """Rename some of the names the program binds (everywhere they appear as names, never
    as attributes or keywords), keeping the formatting."""
    import libcst as cst

    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    bound, imported = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported.update((a.asname or a.name).split(".")[0] for a in node.names)
    names = sorted(n for n in bound - _KEEP - imported if not n.startswith("_"))
    mapping = {n: f"{n}_r{rng.randint(0, 99)}" for n in names if rng.random() < 0.4}
    if not mapping:
        return None

    class Rename(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return updated.with_changes(value=mapping.get(updated.value, updated.value))

        def leave_Attribute(self, original, updated):
            return updated.with_changes(attr=original.attr)

        def leave_Arg(self, original, updated):
            return updated.with_changes(keyword=original.keyword)

    try:
        return cst.parse_module(program).visit(Rename()).code
    except Exception:  # noqa: BLE001 - a rename that does not fit is simply not made
        return None


def fixture_sources(root: Path) -> List[str]:
    return [p.read_text() for p in sorted(root.glob("SYN*.py")) if not p.name.endswith(".fixed.py")]
