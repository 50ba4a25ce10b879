"""flake8-compatible `# noqa` comments, read from the text (no tree needed)."""

from __future__ import annotations

import re
from typing import Dict, Iterable, Optional, Tuple

from synclint.lines import source_lines

# `# noqa` alone, or `# noqa: SYN101, SYN2` (codes or prefixes), as flake8 writes them.
NOQA_RE = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?",
    re.IGNORECASE,
)
CODE_SPLIT = re.compile(r"[,\s]+")

# row -> None (blanket noqa) or the codes listed
NoqaMap = Dict[int, Optional[Tuple[str, ...]]]


def noqa_map(source: str) -> NoqaMap:
    out: NoqaMap = {}
    if "noqa" not in source.lower():
        return out
    for row, line in enumerate(source_lines(source), start=1):
        if "#" not in line:
            continue
        m = NOQA_RE.search(line)
        if m is None:
            continue
        codes = m.group("codes")
        if codes:
            out[row] = tuple(c.upper() for c in CODE_SPLIT.split(codes.strip()) if c)
        else:
            out[row] = None
    return out


def suppressed(noqa: NoqaMap, rows: Iterable[int], code: str) -> bool:
    for row in rows:
        if row not in noqa:
            continue
        codes = noqa[row]
        if codes is None or any(code.startswith(c) for c in codes):
            return True
    return False
