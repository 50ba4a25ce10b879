"""The value types that flow out of the engine: findings, fixes and edits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

# `synclint check`'s exit codes (DESIGN.md): clean, findings, usage or input errors.
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

# The rule pages are docs/rules/<name>.md in synclint's repository. Where they are served
# from is the user's choice (`[tool.synclint] docs-url`); by default they are the pages in
# the source tree synclint runs from (a clone installed with `pip install -e .`), and a
# wheel without that tree has no page to link to: no URL rather than an invented one.
RULE_PAGES = Path(__file__).resolve().parent.parent / "docs" / "rules"
def default_docs_url() -> Optional[str]:
    return RULE_PAGES.as_uri() if RULE_PAGES.is_dir() else None


def rule_url(name: str, code: str, base: Optional[str] = None) -> Optional[str]:
    """The rule's page: `base` formatted when it has `{name}` or `{code}`, else
    `base/<name>.md`; None when there is no page to point at. `base`: the run's `docs-url`
    (None: the pages of the source tree synclint runs from)."""
    base = base or default_docs_url()
    if not base:
        return None
    if "{name}" in base or "{code}" in base:
        return base.replace("{name}", name).replace("{code}", code)
    return f"{base.rstrip('/')}/{name}.md"


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
    # Its rule leaves code that times itself alone (`TIMING_EXEMPT`): dropped when the project
    # finds its function calling another module's clock (a `Timer`'s `toc`).
    timing_exempt: bool = field(default=False, repr=False, compare=False)
    # Its rule reports only what runs every step (`HOT_ONLY`): dropped when cold.
    hot_only: bool = field(default=False, repr=False, compare=False)
    # Its rule is about grad mode (`GRAD_MODE_EXEMPT`): dropped when every caller of its
    # function in the project runs it with autograd off.
    grad_mode_exempt: bool = field(default=False, repr=False, compare=False)
    # Its rule leaves one-time transfers at setup alone (`SETUP_EXEMPT`): dropped when its
    # line runs once in setup code (`semantic.setup.drops`); `setup_site`: its line is in a
    # first-call block ("first") or in straight-line code ("straight").
    setup_exempt: bool = field(default=False, repr=False, compare=False)
    setup_site: Optional[str] = field(default=None, repr=False, compare=False)
    # "noqa": silenced by a `# noqa` comment. The engine hands such findings on (through the
    # cache and the runner) only so that the summary can count them; they are never shown.
    suppressed: Optional[str] = field(default=None, repr=False, compare=False)
    # A rule that raised on this file: reported as the file's error, not as a finding.
    internal: bool = field(default=False, repr=False, compare=False)
    # The text of its first row as the check read it (no line ending): what a report quotes
    # and a baseline matches, without reading the file again. None: read it from the file.
    line: Optional[str] = field(default=None, repr=False, compare=False)
    # A compiled event (`semantic.compiled`): what it does depends on the compiled region its
    # function is in, known once the project is linked; `compiled.settle` keeps or drops it
    # and says its consequence. None for every finding that leaves the engine settled.
    compiled: Optional[str] = field(default=None, repr=False, compare=False)
    # How often its line runs (`semantic.rates`: "per-step", "every-n-steps", ...; `hot` is
    # whether that is per step or faster), and the chain from the entry that gave it
    # (`--show-rate`, `synclint explain FILE:LINE`). None: not known (a file's error).
    rate: Optional[str] = field(default=None, compare=False)
    rate_chain: Tuple[str, ...] = field(default=(), repr=False, compare=False)

    def url(self, docs_url: Optional[str] = None) -> Optional[str]:
        """Its rule's page, by the run's `docs-url`."""
        return rule_url(self.name, self.code, docs_url)

    def sort_key(self):
        return (self.filename, self.row, self.column, self.code)

    def to_json(self, docs_url: Optional[str] = None) -> dict:
        d = self._fields()
        d["url"] = self.url(docs_url)
        return d

    def _fields(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
            "hot": self.hot,
            "rate": self.rate,
            "fix": self.fix.to_json() if self.fix else None,
            "fix_title": self.fix_title,
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
            scope=d.get("scope"), guarded=bool(d.get("guarded")), suppressed=d.get("suppressed"),
            timing_exempt=bool(d.get("timing_exempt")), hot_only=bool(d.get("hot_only")),
            grad_mode_exempt=bool(d.get("grad_mode_exempt")),
            setup_exempt=bool(d.get("setup_exempt")), setup_site=d.get("setup_site"),
            noqa_rows=tuple(d.get("noqa_rows", ())), internal=bool(d.get("internal")), line=d.get("line"),
            compiled=d.get("compiled"), rate=d.get("rate"), rate_chain=tuple(d.get("rate_chain", ())),
        )

    def to_cache(self) -> dict:
        """`to_json` plus what the project's heat needs (cached findings get it too), less
        the rule page's URL, which each report makes for its own docs-url (working it out
        for every cached finding was a twentieth of a warm run)."""
        d = self._fields()
        d["scope"], d["guarded"] = self.scope, self.guarded
        if self.timing_exempt:
            d["timing_exempt"] = True
        if self.hot_only:
            d["hot_only"] = True
        if self.grad_mode_exempt:
            d["grad_mode_exempt"] = True
        if self.setup_exempt:
            d["setup_exempt"] = True
        if self.setup_site:
            d["setup_site"] = self.setup_site
        d["noqa_rows"] = list(self.noqa_rows)  # where `--add-noqa` may put a comment
        if self.suppressed:
            d["suppressed"] = self.suppressed
        if self.internal:
            d["internal"] = True
        if self.line is not None:
            d["line"] = self.line
        if self.compiled:
            d["compiled"] = self.compiled
        if self.rate_chain:
            d["rate_chain"] = list(self.rate_chain)
        return d

    def reheat(self, hot: bool, rate: str, *chain: str) -> None:
        """Set `hot` as the project decided it (a hot caller in another module, a cold glob,
        a test file), and with it `rate` and its chain."""
        self.hot, self.rate, self.rate_chain = hot, rate, chain


# A file's error that no rule's code names (flake8 needs a code for every line): under SYN
# so that flake8 shows it exactly when synclint's codes are selected.
INTERNAL_CODE = "SYN000"


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked: reported in one line, exit code 2."""

    filename: str
    reason: str
    row: Optional[int] = None  # the line it happened at, where known (a rule that raised)
    code: Optional[str] = None  # the rule that raised (flake8 shows the error under its code)

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
            errors.append(FileError(f.filename, f.message, f.row, f.code))
        else:
            kept.append(f)
    return kept, errors
