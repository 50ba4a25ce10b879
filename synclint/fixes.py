"""Apply fixes: text edits from findings, repeated until nothing changes (at most 10
passes). Each pass's result must still be what the original was (`synclint.fixcheck`:
compiling on the running Python, parsing as the project's oldest); a fix that breaks
that on its own is withheld, with the reason, and the others are applied."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from synclint.findings import Finding, Fix
from synclint.parse.lines import line_starts

MAX_PASSES = 10


class FixError(Exception):
    pass


@dataclass
class Fixed:
    text: str
    count: int  # fixes applied
    left: List[Finding]  # the findings in `text`; a withheld fix's finding has no fix and says why
    withheld: List[Tuple[Finding, str]]  # (finding, why its fix was not applied)


def apply_edits(text: str, findings: Sequence[Finding], unsafe: bool) -> Tuple[str, int]:
    """Apply the non-overlapping fixes of `findings`; returns (new text, fixes applied)."""
    chosen = _chosen(text, findings, unsafe)
    if not chosen:
        return text, 0
    out = text
    for s, e, content in sorted((span for _, spans in chosen for span in spans), reverse=True):
        out = out[:s] + content + out[e:]
    return out, len(chosen)


def _chosen(text: str, findings: Sequence[Finding], unsafe: bool) -> List[Tuple[Finding, list]]:
    """The findings whose fixes one pass applies, each with its edits as (start, end,
    content) offsets: in order, each that overlaps no earlier one (the next pass gets it)."""
    starts = line_starts(text)

    def off(pos: Tuple[int, int]) -> int:
        row, col = pos
        return starts[row - 1] + col - 1

    chosen: List[Tuple[Finding, list]] = []
    taken: List[Tuple[int, int]] = []
    for f in sorted(findings, key=Finding.sort_key):
        if f.fix is None or (f.fix.applicability != "safe" and not unsafe):
            continue
        spans = [(off(e.start), off(e.end), e.content) for e in f.fix.edits]
        if any(s < pe and ps < e for s, e, _ in spans for ps, pe in taken):
            continue
        chosen.append((f, spans))
        taken.extend((s, e) for s, e, _ in spans)
    return chosen


def fix_text(text: str, lint: Callable[[str], List[Finding]], unsafe: bool = False) -> Tuple[str, int, List[Finding]]:
    """`fix_source` without a declared minimum. Returns (text, number of fixes, remaining
    findings)."""
    fixed = fix_source(text, lint, unsafe)
    return fixed.text, fixed.count, fixed.left


def fix_source(text: str, lint: Callable[[str], List[Finding]], unsafe: bool = False,
               minimum: Optional[Tuple[Tuple[int, int], str]] = None) -> Fixed:
    """Fix until stable, each pass checked against what `text` was (`fixcheck.FixCheck`,
    with `minimum`, the project's oldest Python, where known). A fix that breaks the file
    on its own is first tried with its new strings in the other quote (an f-string's braces
    may not hold its own quote before Python 3.12), then withheld. Raises FixError when
    only fixes together break it, or when they do not converge."""
    from synclint.fixcheck import FixCheck

    check = FixCheck(text, minimum)
    withheld: Dict[tuple, str] = {}  # _identity of a withheld fix -> why
    total, passes = 0, 0
    findings = lint(text)
    while passes < MAX_PASSES:
        usable = _without(text, findings, withheld)
        new, n = apply_edits(text, usable, unsafe)
        if n == 0:
            return Fixed(text, total, *_say_withheld(text, findings, withheld))
        problem = check.problem(new)
        if problem is None:
            text, total, passes = new, total + n, passes + 1
            findings = lint(text)
            continue
        culprits = _breaking(text, [f for f, _ in _chosen(text, usable, unsafe)], unsafe, check)
        if not culprits:
            raise FixError(f"the fixes together make code that does not parse or compile "
                           f"({problem.removeprefix('the fixed code ')}); nothing was written")
        for f, why in culprits:
            other = next((g for g in _requoted(f) if check.problem(apply_edits(text, [g], unsafe)[0]) is None), None)
            if other is not None:
                findings = [other if g is f else g for g in findings]
            else:
                withheld[_identity(text, line_starts(text), f)] = why
    raise FixError(f"fixes did not converge after {MAX_PASSES} passes; nothing was written")


def _breaking(text: str, fs: List[Finding], unsafe: bool, check) -> List[Tuple[Finding, str]]:
    """The fixes among `fs` that break `text` on their own, with why: halves that pass are
    cleared whole, so one bad fix among n costs about 2 log2(n) checks."""
    if not fs:
        return []
    if len(fs) == 1:
        problem = check.problem(apply_edits(text, fs, unsafe)[0])
        return [(fs[0], problem)] if problem else []
    half = len(fs) // 2
    out: List[Tuple[Finding, str]] = []
    for part in (fs[:half], fs[half:]):
        if len(part) == 1 or check.problem(apply_edits(text, part, unsafe)[0]) is not None:
            out += _breaking(text, part, unsafe, check)
    return out


def _identity(text: str, starts: List[int], f: Finding) -> tuple:
    """A fix as what it replaces and with what (`starts`: `text`'s line starts): the same
    fix in a later pass, where other fixes moved it, has the same identity."""
    def off(pos: Tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1] - 1

    return f.code, tuple((text[off(e.start):off(e.end)], e.content) for e in f.fix.edits)


def _without(text: str, findings: List[Finding], withheld: Dict[tuple, str]) -> List[Finding]:
    """`findings` less those whose fix was withheld."""
    if not withheld:
        return findings
    starts = line_starts(text)
    return [f for f in findings if f.fix is None or _identity(text, starts, f) not in withheld]


def _say_withheld(text: str, findings: List[Finding], withheld: Dict[tuple, str]):
    """(the findings, each withheld fix's finding without it and saying why; the withheld)"""
    if not withheld:
        return findings, []
    starts = line_starts(text)
    left, said = [], []
    for f in findings:
        why = withheld.get(_identity(text, starts, f)) if f.fix is not None else None
        if why is not None:
            f = dataclasses.replace(f, fix=None, fix_title=f"{f.fix_title or 'fix'} (not applied: {why})")
            said.append((f, why))
        left.append(f)
    return left, said


def _requoted(f: Finding) -> List[Finding]:
    """`f` with the plain string literals its fix writes in the other quote (all its `"`
    strings as `'`, or the reverse): each way that changes something."""
    out = []
    for old, new in (('"', "'"), ("'", '"')):
        edits = tuple(dataclasses.replace(e, content=_swap_quotes(e.content, old, new)) for e in f.fix.edits)
        if edits != f.fix.edits:
            out.append(dataclasses.replace(f, fix=Fix(f.fix.applicability, f.fix.message, edits)))
    return out


def _swap_quotes(code: str, old: str, new: str) -> str:
    """`code` with each one-line, non-f string literal quoted with `old` requoted with `new`,
    where its body holds neither quote nor a backslash (so it means the same)."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):  # a fragment tokenize cannot follow: left as it is
        return code
    starts = line_starts(code)
    out = code
    for tok in reversed(tokens):
        if tok.type != tokenize.STRING:
            continue
        prefix = tok.string[: len(tok.string) - len(tok.string.lstrip("rRbBuUfF"))]
        body = tok.string[len(prefix) + 1: -1]
        if ("f" in prefix.lower() or tok.string[len(prefix)] != old or tok.string.startswith(old * 3, len(prefix))
                or '"' in body or "'" in body or "\\" in body):
            continue
        s = starts[tok.start[0] - 1] + tok.start[1]
        e = starts[tok.end[0] - 1] + tok.end[1]
        out = out[:s] + prefix + new + body + new + out[e:]
    return out
