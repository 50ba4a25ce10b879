"""What the language server computes for one buffer, in its worker process: the
diagnostics as the JSON text to publish, and each finding's code actions ready to serve,
with positions in the client's units (UTF-16 by default). The line offsets are computed
once per analysis: converting a position costs the length of its line's prefix, never a
split of the whole document.

Plain data only (dicts, strings, tuples): it crosses a process boundary, and the server's
event loop only filters it and frames it."""

from __future__ import annotations

import json
from array import array
from typing import Any, Dict, Iterator, List, Optional, Tuple

from synclint.findings import rule_url
from synclint.parse.lines import line_starts

SOURCE = "synclint"
Range = Tuple[int, int, int, int]  # LSP (start line, start character, end line, end character)


def _unit_count(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8", "surrogatepass"))
    return 2 if ord(ch) > 0xFFFF else 1  # UTF-16: astral characters take two units


def units(text: str, encoding: str) -> int:
    """The length of `text` in the client's units."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    return sum(_unit_count(ch, encoding) for ch in text)


def code_points(line: str, character: int, encoding: str) -> int:
    """A client's `character` on `line` (without its line ending) as an index into it; past
    the end is the end, as LSP says."""
    if encoding == "utf-32" or line.isascii():
        return min(character, len(line))
    n = 0
    for i, ch in enumerate(line):
        if n >= character:
            return i
        n += _unit_count(ch, encoding)
    return len(line)


class ClientPositions:
    """A finding's (row, column) (1-based, code points) as an LSP position (0-based, in the
    client's `encoding`: "utf-16", "utf-8" or "utf-32")."""

    def __init__(self, source: str, encoding: str = "utf-16") -> None:
        self.source = source
        self.starts = line_starts(source)
        self.encoding = encoding

    def line_text(self, row: int) -> str:
        """Row `row`'s text without its line ending."""
        start = self.starts[row - 1]
        end = self.starts[row] if row < len(self.starts) else len(self.source)
        return self.source[start:end].rstrip("\r\n")

    def _units(self, text: str) -> int:
        return units(text, self.encoding)

    def position(self, row: int, column: int) -> Tuple[int, int]:
        if row < 1:
            return 0, 0
        if row > len(self.starts):  # past the end: the end of the document
            return len(self.starts), 0
        return row - 1, self._units(self.line_text(row)[: max(column - 1, 0)])

    def end(self) -> Tuple[int, int]:
        """The position just past the last character."""
        last = len(self.starts)
        return last - 1, self._units(self.line_text(last))

    def range(self, row: int, column: int, end_row: int, end_column: int) -> Range:
        return self.position(row, column) + self.position(end_row, end_column)


class PreparedActions:
    """Each finding's range and its code actions' material (JSON text of {"diagnostic",
    "fix", "noqa"}), packed flat: a few big objects cross the process boundary in
    microseconds, where thousands of small ones cost the event loop tens of ms to unpickle.
    Only the findings a request overlaps are decoded."""

    def __init__(self) -> None:
        self.ranges = array("l")  # 4 numbers a finding
        self.offsets = array("q", [0])  # where each finding's JSON starts in `text` (+ the end)
        self.parts: List[str] = []
        self.text = ""

    def add(self, rng: Range, material: Dict[str, Any]) -> None:
        self.ranges.extend(rng)
        self.parts.append(json.dumps(material))  # JSON text has no raw newline: "\n" separates
        self.offsets.append(self.offsets[-1] + len(self.parts[-1]) + 1)

    def __getstate__(self):
        return {"ranges": self.ranges, "offsets": self.offsets, "text": "\n".join(self.parts) + "\n"}

    def __setstate__(self, state) -> None:
        self.__dict__.update(state, parts=[])

    def overlapping(self, rng: Range) -> Iterator[Dict[str, Any]]:
        """The material of each finding whose range touches `rng`, in source order."""
        text = self.text or "\n".join(self.parts) + "\n"
        r = self.ranges
        for i in range(len(r) // 4):
            a = r[4 * i: 4 * i + 4]
            if (a[0], a[1]) <= (rng[2], rng[3]) and (rng[0], rng[1]) <= (a[2], a[3]):
                yield json.loads(text[self.offsets[i]: self.offsets[i + 1] - 1])


def lsp_range(r: Range) -> Dict[str, Any]:
    return {"start": {"line": r[0], "character": r[1]}, "end": {"line": r[2], "character": r[3]}}


def _diagnostic(f, rng: Range, href: Optional[str]) -> Dict[str, Any]:
    d = {
        "range": lsp_range(rng),
        "severity": 2 if f.hot else 3,  # Warning in hot code, Information in cold code
        "code": f.code,
        "source": SOURCE,
        "message": f"{f.message} [{'hot' if f.hot else 'cold'}]",
        "data": {"name": f.name, "hot": f.hot, "rate": f.rate, "fixable": f.fix is not None},
    }
    if href:
        d["codeDescription"] = {"href": href}
    return d


def _quick_fixes(f, pos: ClientPositions) -> Dict[str, Any]:
    """The finding's fix (title, safe, edits) and its `# noqa` edit, each None when absent."""
    fix = None
    if f.fix is not None and f.fix.edits:
        fix = {
            "title": f.fix.message or f.fix_title or f"Fix {f.code}",
            "safe": f.fix.applicability == "safe",
            "edits": [(pos.range(*e.start, *e.end), e.content) for e in f.fix.edits],
        }
    noqa = None
    row = f.end_row  # a noqa on the statement's last line covers it
    if 0 < row <= len(pos.starts):
        text = pos.line_text(row)
        if "noqa" not in text:
            noqa = (pos.range(row, len(text) + 1, row, len(text) + 1), f"  # noqa: {f.code}")
    return {"fix": fix, "noqa": noqa}


class Memory:
    """What the worker keeps between its jobs: the last analysis' findings (one buffer's),
    where the first pass of "fix all" starts, and the whole-project tables its runs share
    (`project.Project`)."""

    def __init__(self) -> None:
        self.last: Dict[Optional[str], Tuple[str, list]] = {}
        self.kept: dict = {}


def lint_document(source: str, path: Optional[str], kept: Optional[dict] = None):
    """(findings, error message or None, the docs-url of the file's configuration) for an
    editor buffer, through the one pipeline."""
    from synclint.run.pipeline import PipelineError, run_editor

    try:
        outcome, cfg = run_editor(path, source, kept)
    except PipelineError as e:  # a broken pyproject.toml: say so instead of linting with defaults
        return [], f"configuration: {e}", None
    # (a rule's internal error, or a time budget run out: its line beside the other findings)
    return outcome.findings, outcome.errors[0].reason if outcome.errors else None, cfg.docs_url


def analyse_buffer(source: str, path: Optional[str], encoding: str = "utf-16",
                   memory: Optional[Memory] = None) -> Dict[str, Any]:
    """Lint `source` (the buffer of `path`) and prepare everything the server sends about it:
    {"diagnostics": JSON text of the Diagnostic list, "end": the buffer's end
    position, "findings": PreparedActions, "safe_fixes": bool, "error": message or None}."""

    memory = memory or Memory()
    findings, error, docs_url = lint_document(source, path, memory.kept)
    memory.last.clear()
    memory.last[path] = (source, findings)
    pos = ClientPositions(source, encoding)
    diagnostics: List[Dict[str, Any]] = []
    prepared = PreparedActions()
    for f in findings:
        rng = pos.range(f.row, f.column, f.end_row, f.end_column)
        diagnostics.append(_diagnostic(f, rng, rule_url(f.name, f.code, docs_url)))
        prepared.add(rng, {"diagnostic": diagnostics[-1], **_quick_fixes(f, pos)})
    return {
        "diagnostics": json.dumps(diagnostics),
        "end": pos.end(),
        "findings": prepared,
        "safe_fixes": any(f.fix is not None and f.fix.applicability == "safe" for f in findings),
        "error": error,
    }


def fix_all_buffer(source: str, path: Optional[str], memory: Optional[Memory] = None) -> Optional[str]:
    """The buffer with every safe fix applied (linted as its diagnostics were), or None
    when nothing changes or the fixes fail."""
    from synclint.fixes import FixError, fix_text

    memory = memory or Memory()

    def lint(text: str) -> list:
        last = memory.last.get(path)
        if last is not None and last[0] == text:
            return last[1]
        return lint_document(text, path, memory.kept)[0]

    try:
        new, n, _ = fix_text(source, lint, unsafe=False)
    except FixError:
        return None
    return new if n else None
