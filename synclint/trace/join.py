"""The join of a trace with the static findings of the same files.

* confirmed: a finding whose lines (row to end row) hold a traced sync: its count and
  blocked time are the cost measured in this run;
* not-reached: a finding with no traced sync on its lines: the line did not run in the
  traced window, or it ran and did not sync (a CPU tensor, say); where the trace recorded
  which lines ran (lines.py), `Row.ran` says which of the two;
* missed: a traced sync on a line no finding covers: the rules missed it (or it was
  silenced), shown as a finding of its own with what blocked, so nothing the GPU saw is
  hidden. Syncs with no user frame (a library thread) are missed too, under that frame.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from synclint.findings import Finding
from synclint.trace.lines import ran
from synclint.trace.schema import Site, Trace

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
class Joined:
    trace: Trace
    rows: List[Row]

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
    """The files of the trace's user sites that exist under `root` (what to check)."""
    files = []
    for s in trace.sites:
        if not s.user:
            continue
        path = s.file if os.path.isabs(s.file) else os.path.join(root, s.file)
        if os.path.isfile(path) and path not in files:
            files.append(path)
    return files


def join(trace: Trace, findings: Sequence[Finding], root: str) -> Joined:
    def key(path: str) -> str:
        return os.path.normcase(os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path)))

    sites_by_file: Dict[str, List[Site]] = {}
    for s in trace.sites:
        if s.user:
            sites_by_file.setdefault(key(s.file), []).append(s)
    covered: Dict[int, bool] = {}  # id(site) -> some finding covers it
    rows: Dict[Tuple[str, int, str], Row] = {}

    for f in findings:
        shown = _shown(f.filename, root)
        hits = [s for s in sites_by_file.get(key(f.filename), []) if f.row <= s.line <= f.end_row]
        for s in hits:
            covered[id(s)] = True
        if hits:
            line = min(s.line for s in hits)
            row = rows.setdefault((shown, line, CONFIRMED), Row(CONFIRMED, shown, line))
            for s in hits:
                if all(s is not t for t in row.sites):
                    row.sites.append(s)
        else:
            row = rows.get((shown, f.row, NOT_REACHED))
            if row is None:
                path = f.filename if os.path.isabs(f.filename) else os.path.join(root, f.filename)
                row = rows[(shown, f.row, NOT_REACHED)] = Row(NOT_REACHED, shown, f.row,
                                                              text=linecache.getline(path, f.row).strip())
            if trace.lines is not None:
                row.ran = bool(row.ran) or ran(trace.lines.get(shown), f.row, f.end_row)
        row.findings.append(f)

    for s in trace.sites:
        if not covered.get(id(s)):
            row = rows.setdefault((s.file, s.line, MISSED), Row(MISSED, s.file, s.line))
            row.sites.append(s)

    order = {CONFIRMED: 0, MISSED: 0, NOT_REACHED: 1}
    ordered = sorted(rows.values(), key=lambda r: (order[r.status], -r.blocked_ms, -r.count, r.file, r.line))
    return Joined(trace, ordered)


def _shown(path: str, root: str) -> str:
    real = os.path.realpath(path)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(real, root).replace(os.sep, "/")
    return path


def static_findings(files: Sequence[str]) -> Tuple[List[Finding], List[str]]:
    """`synclint check` of `files` (the nearest configuration, its rule selection, all
    findings hot and cold): the findings and one line per file that could not be checked."""
    from pathlib import Path

    from synclint.run.config import drop_per_file_ignored, find_config, load_config
    from synclint.registry import select
    from synclint.run.runner import check_files

    if not files:
        return [], []
    cfg = load_config(find_config(Path(files[0])))
    rules = select(cfg.select, cfg.ignore, cfg.extend_select)
    result = check_files(list(files), rules, hot_only=False, cache_dir=None, jobs=1)
    return drop_per_file_ignored(cfg, result.findings), [str(e) for e in result.errors]
