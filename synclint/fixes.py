"""Apply fixes: text edits from findings, repeated until nothing changes (at most 10
passes), each result re-parsed before it is accepted; files are replaced atomically."""

from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

from synclint.findings import Finding
from synclint.lines import line_starts

MAX_PASSES = 10


class FixError(Exception):
    pass


def apply_edits(text: str, findings: Sequence[Finding], unsafe: bool) -> Tuple[str, int]:
    """Apply the non-overlapping fixes of `findings`; returns (new text, fixes applied)."""
    starts = line_starts(text)

    def off(pos: Tuple[int, int]) -> int:
        row, col = pos
        return starts[row - 1] + col - 1

    chosen: List[Tuple[int, int, str]] = []
    for f in sorted(findings, key=Finding.sort_key):
        if f.fix is None or (f.fix.applicability != "safe" and not unsafe):
            continue
        spans = [(off(e.start), off(e.end), e.content) for e in f.fix.edits]
        if any(s < pe and ps < e for s, e, _ in spans for ps, pe, _ in chosen):
            continue  # overlaps an earlier fix: the next pass gets it
        chosen.extend(spans)
    if not chosen:
        return text, 0
    out = text
    for s, e, content in sorted(chosen, reverse=True):
        out = out[:s] + content + out[e:]
    return out, len(chosen)


def fix_text(text: str, lint: Callable[[str], List[Finding]], unsafe: bool = False) -> Tuple[str, int, List[Finding]]:
    """Fix until stable. Returns (text, number of fixes, remaining findings)."""
    import libcst as cst

    from synclint.nesting import nesting_problem

    total = 0
    findings = lint(text)
    for _ in range(MAX_PASSES):
        new, n = apply_edits(text, findings, unsafe)
        if n == 0:
            return text, total, findings
        try:
            if nesting_problem(new) is not None:
                raise RecursionError
            cst.parse_module(new)
        except Exception as e:  # a fix must never leave code that does not parse
            raise FixError(f"a fix produced code that does not parse ({type(e).__name__}); nothing was written") from None
        text, total = new, total + n
        findings = lint(text)
    raise FixError(f"fixes did not converge after {MAX_PASSES} passes; nothing was written")
