"""flake8-compatible `# noqa` comments, read from the text (no tree needed); and, for the
unused-noqa rule and `--add-noqa`, the directives' places in the comments (tokenize)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

from synclint.parse.lines import source_lines

# `# noqa` alone, or `# noqa: SYN101, SYN2` (codes or prefixes), as flake8 writes them.
NOQA_RE = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?",
    re.IGNORECASE,
)
CODE_SPLIT = re.compile(r"[,\s]+")

# row -> None (blanket noqa) or the codes listed
NoqaMap = Dict[int, Optional[Tuple[str, ...]]]
# (row, code as listed) of a directive entry that silenced a finding; (row, None): a blanket one
Use = Tuple[int, Optional[str]]


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


def suppressing(noqa: NoqaMap, rows: Iterable[int], code: str) -> List[Use]:
    """The directive entries on `rows` that silence `code` (empty: not suppressed)."""
    hits: List[Use] = []
    for row in rows:
        if row not in noqa:
            continue
        codes = noqa[row]
        if codes is None:
            hits.append((row, None))
        else:
            hits.extend((row, c) for c in codes if code.startswith(c))
    return hits


def suppressed(noqa: NoqaMap, rows: Iterable[int], code: str) -> bool:
    return bool(suppressing(noqa, rows, code))


@dataclass(frozen=True)
class Directive:
    """A `# noqa` inside a comment: where it is (0-based columns of the row) and what it lists."""

    row: int
    start: int  # the directive's '#'
    end: int  # just after its last code (or after `noqa`)
    codes: Optional[Tuple[str, ...]]  # as written; None for a blanket `# noqa`
    comment_start: int  # the whole comment token, which may hold other text too
    comment_end: int


def _tokens(source: str):
    import io
    import tokenize

    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []


def directives(source: str) -> Dict[int, Directive]:
    """The `# noqa` directives that are real comments (not text inside a string)."""
    import tokenize

    out: Dict[int, Directive] = {}
    if "noqa" not in source.lower():
        return out
    for tok in _tokens(source):
        if tok.type != tokenize.COMMENT:
            continue
        m = NOQA_RE.search(tok.string)
        if m is None:
            continue
        row, col = tok.start
        codes = m.group("codes")
        listed = tuple(c for c in CODE_SPLIT.split(codes.strip()) if c) if codes else None
        out[row] = Directive(row, col + m.start(), col + m.end(), listed, col, col + len(tok.string))
    return out


def rows_without_room(source: str) -> Set[int]:
    """Rows whose end cannot take a comment: inside a multi-line string, or continued by a
    backslash."""
    blocked: Set[int] = set()
    for tok in _tokens(source):
        if tok.start[0] < tok.end[0] and tok.string.strip():  # a string spanning lines
            blocked.update(range(tok.start[0], tok.end[0]))
    for row, line in enumerate(source.splitlines(), start=1):
        if line.rstrip().endswith("\\"):
            blocked.add(row)
    return blocked


def add_noqa(findings) -> Tuple[int, list]:
    """`synclint check --add-noqa`: give each finding's line a `# noqa: CODE` (merged into a
    directive already there), each file rewritten atomically. Returns (directives added or
    extended, FileErrors). A finding all of whose lines end inside a string or a backslash
    continuation gets none (no comment can go there)."""
    from synclint.atomic import FileChanged, write_text_atomic
    from synclint.parse.source import decode_source, read_bytes, source_encoding
    from synclint.findings import FileError

    wanted: Dict[str, List[Tuple[Tuple[int, ...], str]]] = {}
    for f in findings:
        if f.code == "SYN901":  # a `noqa` for an unused `noqa` would be a second stale comment
            continue
        # the engine reads a finding's `noqa` on its first line, its last, or (in a simple
        # statement) any line of the statement: the first line first, then from the end
        rows = (f.row, *sorted({f.end_row, *f.noqa_rows} - {f.row}, reverse=True))
        wanted.setdefault(f.filename, []).append((rows, f.code))
    added, errors = 0, []
    for path, spans in wanted.items():
        data = read_bytes(path)
        text = data if isinstance(data, FileError) else decode_source(path, data)
        if isinstance(text, FileError):
            errors.append(text)
            continue
        lines = text.splitlines(keepends=True)
        blocked = rows_without_room(text)
        found = directives(text)
        codes_at: Dict[int, List[str]] = {}
        for rows, code in spans:
            target = next((r for r in rows if r not in blocked), None)
            if target is None:
                continue
            at = codes_at.setdefault(target, [])
            if code not in at:
                at.append(code)
        changed = 0
        for row, codes in codes_at.items():
            line = lines[row - 1]
            body = line.rstrip("\r\n")
            eol = line[len(body):]
            d = found.get(row)
            if d is not None:
                if d.codes is None:
                    continue  # a blanket `# noqa` silences these already
                missing = [c for c in codes if not any(c.startswith(x.upper()) for x in d.codes)]
                if not missing:
                    continue
                body = body[:d.start] + "# noqa: " + ", ".join([*d.codes, *missing]) + body[d.end:]
            else:
                body = body.rstrip() + "  # noqa: " + ", ".join(codes)
            lines[row - 1] = body + eol
            changed += 1
        if changed:
            try:  # as `--fix` writes: the file's own encoding and BOM, only over what was read
                write_text_atomic(path, "".join(lines), source_encoding(data), data.startswith(b"\xef\xbb\xbf"),
                                  replacing=data)
            except FileChanged:
                errors.append(FileError(path, "changed while synclint was adding directives (another run or an "
                                              "editor); not overwritten: run --add-noqa again"))
                continue
            except (OSError, UnicodeEncodeError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else e
                errors.append(FileError(path, f"cannot write: {reason}; the file is unchanged"))
                continue
            added += changed
    return added, errors
