"""The value types that flow out of the engine: findings, fixes and edits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

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
            scope=d.get("scope"), guarded=bool(d.get("guarded")),
        )

    def to_cache(self) -> dict:
        """`to_json` plus what the project's heat needs (cached findings get it too)."""
        d = self.to_json()
        d["scope"], d["guarded"] = self.scope, self.guarded
        return d


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked: reported in one line, exit code 2."""

    filename: str
    reason: str

    def __str__(self) -> str:
        return f"{self.filename}: {self.reason}"
