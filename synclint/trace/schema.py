"""The trace file: a versioned JSON document (`"schema": "synclint-trace"`, `"version"`).

    {"schema": "synclint-trace", "version": 1,
     "meta": {"command": [...], "root": "/abs/dir", "date": "...", "torch": "2.11.0",
              "cuda": "13.0", "gpu": "NVIDIA H100 80GB HBM3", "python": "3.12.3",
              "synclint": "0.1.0", "detector": "...", "timing": "sys.monitoring: ...", "wall_ms": 1234.5, "steps": 20,
              "warmup_steps": 2, "stopped": "end" | "steps" | "time-limit" | "error",
              "exit_code": 0, "profiler": null | {"sync_ms": ..., "calls": {name: [count, ms]}}},
     "sites": [{"file": "train.py", "line": 42, "function": "main", "kind": "stream",
                "via": "torch/_tensor.py:__format__" | null, "source": "print(f'{loss}')",
                "count": 20, "blocked_ms": 3.1, "timed": 20, "debug_mode": 20 | null,
                "callers": ["train.py:80:<module>"], "threads": ["MainThread"], "user": true}],
     "lines": {"train.py": [[1, 30], [34, 52]]},
     "compile": {"breaks": [{"file": "train.py", "line": 57, "function": "step", "gb_type": "Data-dependent branching",
                             "gb_id": "GB0170", "explanation": "...", "context": "...", "count": 2,
                             "source": "if loss > 10:", "dynamo_at": null, "callers": ["train.py:80:main"],
                             "skipped": null, "user": true, "error": false}],
                 "recompiles": [{"file": "train.py", "line": 50, "function": "step", "count": 1,
                                 "guards": ["tensor 'x' size mismatch at index 0. expected 64, actual 32"],
                                 "user": true}],
                 "recompile_limit_hits": []}}

A site is one (file, line, kind). `kind` is what blocked: "stream" (a stream sync: every
sync the debug mode sees, and `Stream.synchronize()`), "device" (`torch.cuda.synchronize()`),
"event" (`Event.synchronize()`), "pageable-copy" (a `non_blocking` host-to-device copy from
pageable memory, which blocks without any sync call). `user` is false for a sync with no
user frame on its stack (a library thread): then file/line are the innermost library frame.
`debug_mode` is the debug mode's own count at the line in traces taken with the former
GPU-trace callbacks and `--debug-mode` (null otherwise: the debug mode is now the detector,
named with the clock in `meta.detector` and `meta.timing`); `timed` counts the syncs whose
blocked time was measured (the first at each line teaches the clock and is not).
`lines` (optional; absent in traces taken before it existed) holds, per user file, the runs
of lines that executed in the window (lines.py): what separates a finding whose line ran
without syncing from one whose line never ran.
`compile` (optional; absent in traces taken before it existed) holds what Dynamo reported
(dynamo.py): each graph break once per (file, line, graph-break type) with `count` (the
compilations that met it: Dynamo reports a break when it compiles, not each time the
compiled code runs), charged like a sync to the innermost frame of the user's code on
Dynamo's stack (`dynamo_at`: where Dynamo itself stopped, when that is elsewhere, such as a
library line the user's line called; `skipped`: the frame that then ran eagerly whole);
`error`: a break `fullgraph=True` turned into the program's error, which stopped the run);
each recompiled function with the guards that failed; and Dynamo's recompile-limit
warnings. `meta.compile` names the hook, or why nothing could be recorded.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from synclint.jsonio import read_json

SCHEMA = "synclint-trace"
VERSION = 1
KINDS = ("stream", "device", "event", "pageable-copy")


class TraceError(Exception):
    """A trace file that cannot be used; the message names the file and the reason."""


@dataclass
class Site:
    file: str
    line: int
    function: str
    kind: str
    via: Optional[str] = None
    source: str = ""
    count: int = 0
    blocked_ms: float = 0.0
    timed: int = 0
    debug_mode: Optional[int] = None
    callers: List[str] = field(default_factory=list)
    threads: List[str] = field(default_factory=list)
    user: bool = True

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class GraphBreak:
    file: str
    line: int
    function: str
    gb_type: str
    gb_id: Optional[str] = None
    explanation: str = ""
    context: str = ""
    count: int = 0
    source: str = ""
    dynamo_at: Optional[str] = None
    callers: List[str] = field(default_factory=list)
    skipped: Optional[str] = None
    user: bool = True
    error: bool = False  # fullgraph=True made it the program's error: the run stopped there

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Recompilation:
    file: str
    line: int
    function: str
    count: int = 0
    guards: List[str] = field(default_factory=list)
    user: bool = True


@dataclass
class Compile:
    """What Dynamo reported during the run (dynamo.py)."""

    breaks: List[GraphBreak] = field(default_factory=list)
    recompiles: List[Recompilation] = field(default_factory=list)
    recompile_limit_hits: List[str] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        return {"breaks": [asdict(b) for b in self.breaks], "recompiles": [asdict(r) for r in self.recompiles],
                "recompile_limit_hits": list(self.recompile_limit_hits)}


@dataclass
class Trace:
    meta: Dict[str, Any]
    sites: List[Site]
    lines: Optional[Dict[str, List[List[int]]]] = None  # None: not recorded
    compile: Optional[Compile] = None  # None: not recorded

    @property
    def wall_ms(self) -> float:
        return float(self.meta.get("wall_ms") or 0.0)

    @property
    def blocked_ms(self) -> float:
        return sum(s.blocked_ms for s in self.sites)

    def to_json(self) -> Dict[str, Any]:
        out = {"schema": SCHEMA, "version": VERSION, "meta": self.meta,
               "sites": [asdict(s) for s in self.sites]}
        if self.lines is not None:
            out["lines"] = self.lines
        if self.compile is not None:
            out["compile"] = self.compile.to_json()
        return out

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1) + "\n"


def _site(d: Any, i: int, where: str) -> Site:
    if not isinstance(d, dict):
        raise TraceError(f"{where}: sites[{i}] is not an object")
    try:
        site = Site(
            file=str(d["file"]), line=int(d["line"]), function=str(d.get("function", "")),
            kind=str(d["kind"]), via=d.get("via"), source=str(d.get("source", "")),
            count=int(d["count"]), blocked_ms=float(d.get("blocked_ms", 0.0)), timed=int(d.get("timed", 0)),
            debug_mode=None if d.get("debug_mode") is None else int(d["debug_mode"]),
            callers=[str(c) for c in d.get("callers", [])], threads=[str(t) for t in d.get("threads", [])],
            user=bool(d.get("user", True)),
        )
    except KeyError as e:
        raise TraceError(f"{where}: sites[{i}] has no {e.args[0]!r}") from None
    except (TypeError, ValueError) as e:
        raise TraceError(f"{where}: sites[{i}]: {e}") from None
    if site.kind not in KINDS:
        raise TraceError(f"{where}: sites[{i}] has an unknown kind {site.kind!r}")
    return site


def from_json(data: Any, where: str) -> Trace:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise TraceError(f"{where}: not a synclint trace (no \"schema\": \"{SCHEMA}\")")
    version = data.get("version")
    if version != VERSION:
        raise TraceError(f"{where}: trace version {version!r}; this synclint reads version {VERSION}")
    meta, sites = data.get("meta"), data.get("sites")
    if not isinstance(meta, dict) or not isinstance(sites, list):
        raise TraceError(f"{where}: a trace needs \"meta\" (an object) and \"sites\" (a list)")
    return Trace(meta, [_site(d, i, where) for i, d in enumerate(sites)], _lines(data.get("lines"), where),
                 _compile(data.get("compile"), where))


def _compile(d: Any, where: str) -> Optional[Compile]:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise TraceError(f"{where}: \"compile\" is not an object")
    out = Compile(recompile_limit_hits=[str(x) for x in d.get("recompile_limit_hits", [])])
    for key, items in (("breaks", out.breaks), ("recompiles", out.recompiles)):
        got = d.get(key, [])
        if not isinstance(got, list):
            raise TraceError(f"{where}: compile.{key} is not a list")
        for i, e in enumerate(got):
            if not isinstance(e, dict):
                raise TraceError(f"{where}: compile.{key}[{i}] is not an object")
            try:
                if key == "breaks":
                    items.append(GraphBreak(
                        file=str(e["file"]), line=int(e["line"]), function=str(e.get("function", "")),
                        gb_type=str(e.get("gb_type", "")), gb_id=None if e.get("gb_id") is None else str(e["gb_id"]),
                        explanation=str(e.get("explanation", "")), context=str(e.get("context", "")),
                        count=int(e.get("count", 1)), source=str(e.get("source", "")),
                        dynamo_at=None if e.get("dynamo_at") is None else str(e["dynamo_at"]),
                        callers=[str(c) for c in e.get("callers", [])],
                        skipped=None if e.get("skipped") is None else str(e["skipped"]), user=bool(e.get("user", True)),
                        error=bool(e.get("error", False))))
                else:
                    items.append(Recompilation(
                        file=str(e["file"]), line=int(e["line"]), function=str(e.get("function", "")),
                        count=int(e.get("count", 1)), guards=[str(g) for g in e.get("guards", [])],
                        user=bool(e.get("user", True))))
            except KeyError as err:
                raise TraceError(f"{where}: compile.{key}[{i}] has no {err.args[0]!r}") from None
            except (TypeError, ValueError) as err:
                raise TraceError(f"{where}: compile.{key}[{i}]: {err}") from None
    return out


def _lines(d: Any, where: str) -> Optional[Dict[str, List[List[int]]]]:
    if d is None:
        return None
    ok = isinstance(d, dict) and all(
        isinstance(runs, list) and all(isinstance(r, list) and len(r) == 2 and all(isinstance(n, int) for n in r)
                                       for r in runs) for runs in d.values())
    if not ok:
        raise TraceError(f"{where}: \"lines\" must map each file to a list of [first, last] line runs")
    return {str(k): v for k, v in d.items()}


def load(path: str) -> Trace:
    return from_json(read_json(path, TraceError), path)
