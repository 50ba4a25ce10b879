"""Lines as Python counts them: ended by `\\r\\n`, `\\r` or `\\n` and nothing else.

`str.splitlines` also breaks at form feeds, `\\v`, `\\x1c`-`\\x1e`, `\\x85`, `\\u2028` and
`\\u2029`, which Python (and LibCST, and `ast`) read as ordinary characters: a file with
one of them had its `# noqa` comments, baseline lines and source excerpts shifted."""

from __future__ import annotations

import re
from typing import List

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str, keepends: bool = False) -> List[str]:
    """The lines of `text`; with `keepends`, each keeps its line ending."""
    if "\r" not in text:  # the common case, where `str.split` is exact and far faster
        lines = text.split("\n")
        last = lines.pop()  # "" when the text ends with a line break
        if keepends:
            lines = [line + "\n" for line in lines]
        if last:
            lines.append(last)
        return lines
    lines = _LINE.findall(text)
    return lines if keepends else [_BREAK.sub("", line, count=1) for line in lines]


def line_starts(text: str) -> List[int]:
    """Offset of the first character of each line (row r starts at `line_starts[r - 1]`)."""
    return [0] + [m.end() for m in _BREAK.finditer(text)]


def line_ending(text: str) -> str:
    """The file's most common line ending (what new lines written into it should use)."""
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    best = max((lf, "\n"), (crlf, "\r\n"), (cr, "\r"))
    return best[1] if best[0] else "\n"
