"""A source file's text as Python reads it: the encoding its PEP 263 cookie or BOM names,
and the one-line reason when it cannot be read. Kept apart from the engine so that a warm
run (every file in the cache) reads and decodes files without importing the analysis."""

from __future__ import annotations

from typing import Dict, List, Optional, Union

from synclint.findings import FileError, Finding

# Characters of a file past which it is not analysed (`max-file-size` in [tool.synclint]).
# Memory grows with the tokens of a file, not its lines: 1.2 GB per million characters of
# dense code, 1.7 GB for a one-line list of numbers (LibCST's own parser builds a second
# tree for a fix; 10 MB of it needed 22 GB before). Over torch's largest file (1.4 MB);
# 3.5 GB at most (docs/reliability.md, "Pathological shapes").
DEFAULT_MAX_CHARS = 2_000_000


def size_problem(source: str, max_chars: Optional[int]) -> Optional[str]:
    """Why `source` is not analysed, for its size alone (the language server's own limit,
    `synclint lsp --max-size`, says it the same way), or None."""
    if max_chars is None or len(source) <= max_chars:
        return None
    return (f"too large to analyse ({len(source):,} characters; the limit is {max_chars:,}: "
            f"raise `max-file-size` in [tool.synclint])")


def read_bytes(path: str) -> Union[bytes, FileError]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        return FileError(path, f"cannot read: {e.strerror or e}")


def read_source(path: str) -> Union[str, FileError]:
    data = read_bytes(path)
    return data if isinstance(data, FileError) else decode_source(path, data)


def source_encoding(data: bytes) -> str:
    """The encoding Python reads a source file in: UTF-8 (with or without a BOM) unless a
    PEP 263 coding cookie in the first two lines names another. Raises `SyntaxError` for a
    cookie Python would refuse."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if b"coding" not in (data[:second] if second >= 0 else data):  # a cookie is on line 1 or 2
        return "utf-8"
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return "utf-8" if encoding == "utf-8-sig" else encoding


# Byte-order marks of encodings Python cannot read source in (UTF-32's first: it begins
# with UTF-16's)
_FOREIGN_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                 (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def decode_source(path: str, data: bytes) -> Union[str, FileError]:
    for bom, name in _FOREIGN_BOMS:
        if data.startswith(bom):
            return FileError(path, f"not UTF-8: {name}, by its byte-order mark (Python reads source as UTF-8 "
                                   f"or an ASCII-based encoding)")
    try:
        encoding = source_encoding(data)
    except SyntaxError as e:
        return FileError(path, f"cannot read: {_cookie_conflict(data) or e}")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        name = "UTF-8" if encoding == "utf-8" else encoding
        return FileError(path, f"not {name}: invalid byte 0x{data[e.start]:02x} at offset {e.start}")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        return FileError(path, "cannot parse: source contains a null byte")
    return text


def _cookie_conflict(data: bytes) -> Optional[str]:
    """What disagrees where a file starts with UTF-8's byte-order mark and its coding cookie
    names another encoding (`tokenize` says only "encoding problem: utf-8"), or None."""
    if not data.startswith(b"\xef\xbb\xbf"):
        return None
    import re
    import tokenize

    for line in data[3:].splitlines()[:2]:
        m = re.match(tokenize.cookie_re.pattern.encode(), line)
        if m:
            cookie = m.group(1).decode("ascii", "replace")
            return f"it starts with UTF-8's byte-order mark but its coding cookie says {cookie}"
    return None


def finding_line(f: Finding, read: Dict[str, List[str]]) -> Optional[str]:
    """The text of a finding's first row: as the check read it, else its file's as read now
    (each file once, its lines kept in `read`); None past the end or for an unreadable file."""
    if f.line is not None:
        return f.line
    if f.filename not in read:
        from synclint.parse.lines import source_lines

        text = read_source(f.filename)  # as the check read it: coding cookie, BOM
        read[f.filename] = source_lines(text) if isinstance(text, str) else []
    lines = read[f.filename]
    return lines[f.row - 1] if 0 < f.row <= len(lines) else None
