"""The value types that flow out of the engine: findings, fixes and edits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

DOCS_URL = "https://synclint.dev/rules/{name}"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two (row, column) positions; rows and columns 1-based."""

    start: Tuple[int, int]
    end: Tuple[int, int]
    content: str

    def to_json(self) -> dict:
        return {
            "location": {"row": self.start[0], "column": self.start[1]},
            "end_location": {"row": self.end[0], "column": self.end[1]},
            "content": self.content,
        }


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" | "unsafe"
    message: str
    edits: Tuple[Edit, ...]

    def to_json(self) -> dict:
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }


@dataclass
class Finding:
    code: str
    name: str
    message: str
    filename: str
    row: int
    column: int  # 1-based, in characters
    end_row: int
    end_column: int
    hot: bool
    fix_title: Optional[str] = None
    fix: Optional[Fix] = None
    # Lines on which a `# noqa` also applies (first/last line of a multi-line statement).
    noqa_rows: Tuple[int, ...] = field(default=(), repr=False)
    # For heat across modules: the function the finding is in, and whether it sits under a
    # periodic guard (then a hot caller does not make it hot). Not part of the JSON output.
    scope: Optional[str] = field(default=None, repr=False, compare=False)
    guarded: bool = field(default=False, repr=False, compare=False)
    # A rule that raised on this file: reported as the file's error, not as a finding.
    internal: bool = field(default=False, repr=False, compare=False)

    @property
    def url(self) -> str:
        return DOCS_URL.format(name=self.name)

    def sort_key(self):
        return (self.filename, self.row, self.column, self.code)

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
            "hot": self.hot,
            "fix": self.fix.to_json() if self.fix else None,
            "fix_title": self.fix_title,
            "url": self.url,
        }

    @classmethod
    def from_json(cls, d: dict) -> "Finding":
        fix = None
        if d.get("fix"):
            f = d["fix"]
            fix = Fix(
                f["applicability"],
                f["message"],
                tuple(
                    Edit(
                        (e["location"]["row"], e["location"]["column"]),
                        (e["end_location"]["row"], e["end_location"]["column"]),
                        e["content"],
                    )
                    for e in f["edits"]
                ),
            )
        return cls(
            d["code"], d["name"], d["message"], d["filename"],
            d["location"]["row"], d["location"]["column"],
            d["end_location"]["row"], d["end_location"]["column"],
            d["hot"], d.get("fix_title"), fix,
            scope=d.get("scope"), guarded=bool(d.get("guarded")), internal=bool(d.get("internal")),
        )

    def to_cache(self) -> dict:
        """`to_json` plus what the project's heat needs (cached findings get it too)."""
        d = self.to_json()
        d["scope"], d["guarded"] = self.scope, self.guarded
        if self.internal:
            d["internal"] = True
        return d


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked: reported in one line, exit code 2."""

    filename: str
    reason: str
    row: Optional[int] = None  # the line it happened at, where known (a rule that raised)

    def __str__(self) -> str:
        where = f"{self.filename}:{self.row}" if self.row else self.filename
        return f"{where}: {self.reason}"


def split_internal(findings: Sequence[Finding]) -> Tuple[List[Finding], List[FileError]]:
    """(findings, errors): a rule that raised on a file travels with that file's findings
    (through workers and the cache) and becomes that file's one-line error here."""
    kept: List[Finding] = []
    errors: List[FileError] = []
    for f in findings:
        if f.internal:
            errors.append(FileError(f.filename, f.message, f.row))
        else:
            kept.append(f)
    return kept, errors
