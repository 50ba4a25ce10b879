"""Helpers shared by the test-suite: rule examples and fixture expectations."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from synclint.engine import lint_source
from synclint.fixes import fix_text
from synclint.parse.lines import source_lines

# `# error: SYN101` / `# error: SYN101 [cold], SYN105 [hot]`
EXPECT_RE = re.compile(r"#\s*error:\s*(?P<items>SYN\d{3}(?:\s*\[(?:hot|cold)\])?(?:\s*,\s*SYN\d{3}(?:\s*\[(?:hot|cold)\])?)*)")
ITEM_RE = re.compile(r"(SYN\d{3})(?:\s*\[(hot|cold)\])?")
# A line that synchronizes on the GPU but that synclint rightly does not flag.
UNFLAGGED_SYNC_RE = re.compile(r"#\s*unflagged-sync:")
RATE_MARK_RE = re.compile(r"# \[([a-z-]+)\]")  # `# [per-step]`: the rate a line's finding must get
# `# [setup]`: a transfer that runs once at setup, which its rule leaves alone: no finding
SETUP_MARK = "setup"

Expectation = Dict[Tuple[int, str], Optional[bool]]  # (row, code) -> hot (None: either)


def expectations(source: str) -> Expectation:
    out: Expectation = {}
    for row, line in enumerate(source_lines(source), start=1):
        m = EXPECT_RE.search(line)
        if not m:
            continue
        for code, hot in ITEM_RE.findall(m.group("items")):
            out[(row, code)] = None if not hot else hot == "hot"
    return out


def marked_rates(source: str) -> Dict[int, str]:
    """row -> the rate its `# [rate]` mark names (tests/data/rates/*.py)."""
    return {row: m.group(1) for row, line in enumerate(source.splitlines(), 1) for m in [RATE_MARK_RE.search(line)] if m}


def rates_at_marks(source: str, filename: str) -> Tuple[Dict[int, str], Dict[int, str]]:
    """(row -> the rate linting `source` as `filename` gives each marked row, `marked_rates`):
    the two a rate test compares."""
    expected = marked_rates(source)
    return at_marks({f.row: f.rate for f in lint_source(source, filename)}, expected), expected


def at_marks(found: Dict[int, str], expected: Dict[int, str]) -> Dict[int, str]:
    """`found` (row -> rate) on the marked rows, a `[setup]` row without a finding as "setup"."""
    out = {row: rate for row, rate in found.items() if row in expected}
    out.update((row, SETUP_MARK) for row, mark in expected.items() if mark == SETUP_MARK and row not in found)
    return out


def unflagged_sync_rows(source: str) -> Set[int]:
    return {row for row, line in enumerate(source_lines(source), 1) if UNFLAGGED_SYNC_RE.search(line)}


def fixture_paths(root: Path) -> List[Path]:
    return sorted(p for p in root.glob("*.py") if not p.name.endswith(".fixed.py"))


def lint_with(rules, source: str):
    return lint_source(source, "<test>", rules)


def fixed_source(rules, source: str, unsafe: bool = True) -> str:
    text, _, _ = fix_text(source, lambda s: lint_source(s, "<test>", rules), unsafe=unsafe)
    return text


def run_cli(args, cwd: Path, input: Optional[str] = None):
    """Invoke `synclint ARGS` in `cwd` through click's CliRunner (exceptions propagate);
    `input`: its stdin."""
    from click.testing import CliRunner

    from synclint.frontends.cli import main

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args, input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


def spin_on(monkeypatch, suffix: str, seconds: float = 30.0) -> None:
    """Make SYN101 spin (busy, for at most `seconds`) on files whose name ends with `suffix`:
    an analysis that runs past any time budget. Forked workers inherit it."""
    import time

    from synclint.rules.tensor_item import TensorItem

    real = TensorItem.visit_Call

    def visit_Call(self, node):
        if self.ctx.filename.endswith(suffix):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                pass
        return real(self, node)

    monkeypatch.setattr(TensorItem, "visit_Call", visit_Call)
