"""The join of a trace with the static findings of the same files.

* confirmed: a finding whose lines (row to end row) hold a traced sync: its count and
  blocked time are the cost measured in this run;
* not-reached: a finding with no traced sync on its lines: the line did not run in the
  traced window, or it ran and did not sync (a CPU tensor, say); where the trace recorded
  which lines ran (lines.py), `Row.ran` says which of the two;
* missed: a traced sync on a line no finding covers: the rules missed it (or it was
  silenced), shown as a finding of its own with what blocked, so nothing the GPU saw is
  hidden. Syncs with no user frame (a library thread) are missed too, under that frame.

Graph breaks (the trace's `compile`, dynamo.py) are joined the same way with the compile
findings that say the line breaks the graph (SYN6xx, `expects_break`): confirmed (Dynamo
broke the graph on the finding's lines), not reached (it did not: the code was not compiled
in the run, or ran without breaking), missed (a break no such finding covers).
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from synclint.findings import Finding
from synclint.semantic.compiled import NO_BREAK
from synclint.trace.lines import ran
from synclint.trace.schema import GraphBreak, Site, Trace

CONFIRMED, NOT_REACHED, MISSED = "confirmed", "not-reached", "missed"

# What blocked, in words, by kind (and by the library call it went through).
KIND_WORDS = {
    "stream": "stream sync",
    "device": "torch.cuda.synchronize()",
    "event": "Event.synchronize()",
    "pageable-copy": "non_blocking copy from pageable memory",
}


@dataclass
class Row:
    status: str
    file: str  # as the trace names it (relative to its root when under it)
    line: int
    findings: List[Finding] = field(default_factory=list)
    sites: List[Site] = field(default_factory=list)
    text: str = ""  # the line's source, for a finding no sync reached
    ran: Optional[bool] = None  # not-reached rows: did a line of the finding run? None: not recorded

    @property
    def count(self) -> int:
        return sum(s.count for s in self.sites)

    @property
    def blocked_ms(self) -> float:
        return sum(s.blocked_ms for s in self.sites)

    @property
    def codes(self) -> List[str]:
        return sorted({f.code for f in self.findings})

    @property
    def op(self) -> str:
        parts = []
        for s in self.sites:
            words = KIND_WORDS.get(s.kind, s.kind)
            if s.kind == "stream" and s.via and s.via.endswith(":synchronize"):
                words = "Stream.synchronize()"
            elif s.via and s.kind == "stream":
                words += f" in {s.via}"
            parts.append(words)
        return "; ".join(dict.fromkeys(parts))

    @property
    def source(self) -> str:
        return next((s.source for s in self.sites if s.source), self.text)


@dataclass
class BreakRow:
    """A line with graph breaks, or a compile finding: what Dynamo did there."""

    status: str
    file: str
    line: int
    findings: List[Finding] = field(default_factory=list)
    breaks: List[GraphBreak] = field(default_factory=list)
    text: str = ""

    @property
    def count(self) -> int:
        return sum(b.count for b in self.breaks)

    @property
    def codes(self) -> List[str]:
        return sorted({f.code for f in self.findings})

    @property
    def what(self) -> str:
        return "; ".join(dict.fromkeys((f"{b.gb_id} {b.gb_type}" if b.gb_id else b.gb_type)
                                       + (" (a compile error under fullgraph=True)" if b.error else "")
                                       for b in self.breaks))

    @property
    def source(self) -> str:
        return next((b.source for b in self.breaks if b.source), self.text)


def expects_break(f: Finding) -> bool:
    """A compile finding that says its line breaks the graph (or fails to compile under
    fullgraph=True); those that say "no graph break" (a capture flag, CUDA graphs split
    around a host copy: semantic/compiled.py's `consequence`) predict a wait, not a break."""
    return f.code.startswith("SYN6") and f": {NO_BREAK}" not in f.message


@dataclass
class Joined:
    trace: Trace
    rows: List[Row]
    breaks: List[BreakRow] = field(default_factory=list)
    suppressed: Dict[str, int] = field(default_factory=dict)  # "noqa", "baseline" -> findings the check left out

    def by_status(self, status: str) -> List[Row]:
        return [r for r in self.rows if r.status == status]

    def share(self, ms: float) -> Optional[float]:
        wall = self.trace.wall_ms
        return None if not wall else 100.0 * ms / wall


def source_root(trace: Trace, given: Optional[str] = None) -> str:
    """Where the trace's relative file names are found: the option, else the trace's own
    root if it exists here, else the working directory."""
    if given:
        return os.path.realpath(given)
    root = trace.meta.get("root")
    if isinstance(root, str) and os.path.isdir(root):
        return os.path.realpath(root)
    return os.path.realpath(os.getcwd())


def user_files(trace: Trace, root: str) -> List[str]:
    """The user's files the run touched that exist under `root` (what to check): those of
    its syncs, of its graph breaks and of the lines it ran."""
    names = [s.file for s in trace.sites if s.user]
    if trace.compile is not None:
        names += [b.file for b in trace.compile.breaks if b.user]
    names += list(trace.lines or ())
    files = []
    for name in names:
        path = name if os.path.isabs(name) else os.path.join(root, name)
        if os.path.isfile(path) and path not in files:
            files.append(path)
    return files


def join(trace: Trace, findings: Sequence[Finding], root: str,
         suppressed: Optional[Dict[str, int]] = None) -> Joined:
    """The syncs joined with every finding, and the graph breaks with the compile findings
    that expect one."""
    rows: List[Row] = []
    if not trace.meta.get("compile_only"):  # (--compile-only recorded no syncs: nothing to confirm or refute)
        rows = _label(trace.sites, findings, root, trace.lines,
                      lambda status, file, line, text: Row(status, file, line, text=text),
                      lambda r, s: r.sites.append(s))
    order = {CONFIRMED: 0, MISSED: 0, NOT_REACHED: 1}
    rows.sort(key=lambda r: (order[r.status], -r.blocked_ms, -r.count, r.file, r.line))
    breaks: List[BreakRow] = []
    if trace.compile is not None:
        # (no `ran`: Dynamo compiles at a line's first run, mostly in the warm-up, before the lines record starts)
        breaks = _label(trace.compile.breaks, [f for f in findings if expects_break(f)], root, None,
                        lambda status, file, line, text: BreakRow(status, file, line, text=text),
                        lambda r, b: r.breaks.append(b))
        breaks.sort(key=lambda r: (order[r.status], -r.count, r.file, r.line))
    return Joined(trace, rows, breaks, dict(suppressed or {}))


def _label(events: Sequence, findings: Sequence[Finding], root: str, lines: Optional[Dict[str, List[List[int]]]],
           new_row: Callable, add: Callable) -> list:
    """Rows for `events` (syncs or graph breaks: `file`, `line`, `user`) and `findings`: a
    finding whose lines hold events is confirmed by them, one without is not reached (and
    whether its lines ran, where the trace recorded that), an event no finding covers is
    missed. An event's file is relative to the trace's root, a finding's as `check` names it
    (relative to the working directory)."""
    def key(path: str) -> str:
        return os.path.normcase(os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path)))

    def finding_key(path: str) -> str:
        return os.path.normcase(os.path.realpath(path))

    by_file: Dict[str, list] = {}
    for e in events:
        if e.user:
            by_file.setdefault(key(e.file), []).append(e)
    covered: Dict[int, bool] = {}  # id(event) -> some finding covers it
    rows: Dict[Tuple[str, int, str], Any] = {}
    in_row: Dict[int, set] = {}  # id(row) -> the ids of its events (two findings on a line share them)

    for f in findings:
        shown = path_under_root(f.filename, root)
        hits = [e for e in by_file.get(finding_key(f.filename), []) if f.row <= e.line <= f.end_row]
        for e in hits:
            covered[id(e)] = True
        if hits:
            line = min(e.line for e in hits)
            row = rows.get((shown, line, CONFIRMED))
            if row is None:
                row = rows[(shown, line, CONFIRMED)] = new_row(CONFIRMED, shown, line, "")
            added = in_row.setdefault(id(row), set())
            for e in hits:
                if id(e) not in added:
                    added.add(id(e))
                    add(row, e)
        else:
            row = rows.get((shown, f.row, NOT_REACHED))
            if row is None:
                row = rows[(shown, f.row, NOT_REACHED)] = new_row(
                    NOT_REACHED, shown, f.row, linecache.getline(os.path.realpath(f.filename), f.row).strip())
            if lines is not None:
                row.ran = bool(row.ran) or ran(lines.get(shown), f.row, f.end_row)
        row.findings.append(f)

    for e in events:
        if not covered.get(id(e)):
            row = rows.get((e.file, e.line, MISSED))
            if row is None:
                row = rows[(e.file, e.line, MISSED)] = new_row(MISSED, e.file, e.line, "")
            add(row, e)
    return list(rows.values())


def path_under_root(path: str, root: str) -> str:
    """`path` relative to `root` when it lies under it (as `check` names files), else as given."""
    real = os.path.realpath(path)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(real, root).replace(os.sep, "/")
    return path
