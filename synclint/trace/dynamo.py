"""Dynamo's graph breaks and recompilations during a run, from Dynamo's own reporting.

The hook (`DynamoRecorder`, a context manager) is Dynamo's `graph_breaks` and `recompiles`
log artifacts, what `TORCH_LOGS=graph_breaks,recompiles` prints: every graph break is logged
there once per compilation with the user line Dynamo stopped at, the reason (the registry's
graph-break type, a link carrying its GBxxxx id, an explanation) and the user stack; every
recompilation with the function and the guards that failed. The message formats parsed here
are the ones PyTorch's own tests assert ("Graph break in user code at FILE:LINE").

Why this hook: `torch._dynamo.explain()` needs the function and its arguments and sees one
call of one function; Dynamo's counters and the graph-break registry carry no source line;
tlparse reads a structured trace (`TORCH_TRACE`) after the run, written to a folder of its
own. The log artifacts see every compiled frame of a whole program while it runs, with the
user's line, and nothing in torch is patched.

What is changed while recording, and given back: the two artifacts are switched on in
torch's logging state (a copy of the user's own settings, which are restored whole, the way
torch's tests do: `_set_log_state` then `_init_logs`), works also when `TORCH_LOGS` is set
(where `torch._logging.set_logs` does nothing), and the records of an artifact the user did
not ask for are kept from torch's console handlers, so the program's output is what it was.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from synclint.trace.schema import Compile

ARTIFACTS = ("graph_breaks", "recompiles")
_DYNAMO_LOGGER = "torch._dynamo"

_BREAK = re.compile(r"Graph break in user code at (?P<file>.+?):(?P<line>\d+)\nGraph Break Reason: "
                    r"(?P<reason>.*?)(?:\n\nUser code traceback:\n(?P<stack>.*))?\Z", re.S)
_DUP_BREAK = re.compile(r"Graph break \(user stack suppressed due to duplicate graph break\) in user code "
                        r"at (?P<file>.+?):(?P<line>\d+)\nGraph Break Reason: (?P<reason>.*)\Z", re.S)
_SKIP = re.compile(r"Graph break: torch.compile cannot properly resume from this graph break.*?"
                   r"torch.compile will skip tracing the frame (?P<frame>.*?) and fall back to eager.*?"
                   r"The graph break occurred in the following user code:\n(?P<stack>.*)\Z", re.S)
_RECOMPILE = re.compile(r"Recompiling function (?P<fn>\S+) in (?P<file>.+?):(?P<line>\d+)\n"
                        r"\s*triggered by the following guard failure\(s\):\n(?P<guards>.*)\Z", re.S)
_FRAME = re.compile(r'^ {2,3}File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>.+)$', re.M)
# the user stack of an Unsupported error (fullgraph=True), as its message carries it
_USER_CODE = re.compile(r"\n\nfrom user code:\n(?P<stack>.*?)(?:\n\nSet TORCHDYNAMO_VERBOSE|\Z)", re.S)
_GB_LINK = re.compile(r"/gb/gb(\d{4})\.html")
_GUARD = re.compile(r"\d+/\d+: ")
_RESUMED = re.compile(r"torch_dynamo_resume_in_(.+)_at_(\d+)")
# a break Dynamo cannot resume from (in a loop, in a with-block it cannot reconstruct...) skips the frame
_SKIPPED = re.compile(r"frame skipped: (?P<fn>\S+) \((?P<file>.+?) line (?P<line>\d+)\)")


def graph_break_ids() -> Dict[str, str]:
    """Dynamo's graph-break registry, gb_type -> GBxxxx (shipped with torch >= 2.8)."""
    import torch._dynamo

    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out: Dict[str, str] = {}
    for gb_id, entries in data.items():
        for e in entries:
            out.setdefault(e.get("Gb_type", ""), gb_id)
    return out


def parse_reason(reason: str) -> Tuple[str, str, str]:
    """(gb_type, context, explanation) of a graph break reason as Dynamo formats it:
    an optional 'Encountered graph break when attempting to trace ...:' line, the gb_type,
    then indented 'Explanation:', 'Hint:' and 'Developer debug context:' lines."""
    lines = reason.splitlines()
    gb_type = ""
    for i, ln in enumerate(lines):
        if ln.startswith("  Explanation:"):
            gb_type = next((p for p in reversed(lines[:i]) if p.strip()), "").strip()
            break
    if not gb_type:
        gb_type = next((ln.strip() for ln in lines if ln.strip()), "")
    ctx = next((ln.split(":", 1)[1].strip() for ln in lines if ln.strip().startswith("Developer debug context:")), "")
    expl = next((ln.split(":", 1)[1].strip() for ln in lines if ln.strip().startswith("Explanation:")), "")
    return gb_type, ctx, expl


@dataclass
class Break:
    """One graph break as Dynamo logged it (paths absolute, as in its messages)."""

    file: str  # where Dynamo stopped (its "user code at"): the user's line, or a library line it called
    line: int
    gb_type: str
    gb_id: Optional[str]
    context: str
    explanation: str
    stack: List[Tuple[str, int, str]]  # outermost first, as Dynamo printed it
    skipped: Optional[Tuple[str, int, str]] = None  # the frame that fell back to eager whole, if one did
    error: bool = False  # not a break but the program's error: fullgraph=True forbids breaks


@dataclass
class Recompile:
    function: str
    file: str
    line: int  # the function's first line
    guards: List[str]


class DynamoRecorder(logging.Handler):
    """Records Dynamo's graph breaks and recompilations while active (a context manager);
    torch's logging settings are as they were afterwards."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.breaks: List[Break] = []
        self.recompiles: List[Recompile] = []
        self.limits: List[str] = []  # recompile-limit warnings: the frame runs eagerly from then on
        self.error: Optional[str] = None  # why nothing could be recorded (a torch without the artifacts)
        self._stacks: Dict[Tuple[str, int, str], List[Tuple[str, int, str]]] = {}
        self._gb_ids: Optional[Dict[str, str]] = None
        self._saved: Any = None
        self._quieted: List[Tuple[logging.Handler, logging.Filter]] = []

    def __enter__(self) -> "DynamoRecorder":
        try:
            from torch._logging import _internal as tl
        except ImportError as e:
            self.error = f"torch._logging is not available ({e})"
            return self
        try:
            self._saved = tl._get_log_state()
            state = tl.LogState(dict(self._saved.log_qname_to_level), set(self._saved.artifact_names) | set(ARTIFACTS))
            tl._set_log_state(state)
            for qname in tl.log_registry.get_artifact_log_qnames():  # loggers made later read the state themselves
                log = logging.getLogger(qname)
                if getattr(log, "artifact_name", None) in ARTIFACTS:
                    tl.configure_artifact_log(log)
            dynamo = logging.getLogger(_DYNAMO_LOGGER)
            wanted = set(self._saved.artifact_names)
            for h in dynamo.handlers:  # torch's console handlers: only the artifacts the user asked for
                if tl._is_torch_handler(h):
                    f = _ArtifactFilter(wanted)
                    h.addFilter(f)
                    self._quieted.append((h, f))
            dynamo.addHandler(self)
        except (AttributeError, TypeError) as e:  # a torch whose logging internals differ: the run goes on, unrecorded
            self.error = f"this torch's logging internals differ ({e})"
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._saved is None:
            return
        from torch._logging import _internal as tl

        logging.getLogger(_DYNAMO_LOGGER).removeHandler(self)
        for h, f in self._quieted:
            h.removeFilter(f)
        tl._set_log_state(self._saved)  # the user's settings, reapplied as torch's own tests restore them
        tl._init_logs()
        self._saved = None

    def take_error(self, exc: BaseException) -> bool:
        """Records the graph break a `fullgraph=True` compile raised instead of logging (the
        program's error, `torch._dynamo.exc.Unsupported`, itself or among its causes):
        True if `exc` was one."""
        seen = 0
        while exc is not None and seen < 8:
            if any(c.__name__ == "Unsupported" and c.__module__.startswith("torch._dynamo") for c in type(exc).__mro__):
                text = str(exc)
                m = _USER_CODE.search(text)
                stack = _frames(m["stack"]) if m else []
                if not stack:
                    return False
                reason = text[:m.start()]
                gb_type, ctx, expl = parse_reason(reason)
                file, line, _ = stack[-1]
                self.breaks.append(Break(file, line, gb_type, self._gb_id(gb_type, reason), ctx, expl, stack,
                                         error=True))
                return True
            exc, seen = exc.__cause__ or exc.__context__, seen + 1
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._take(record)
        except Exception:  # a format we do not know must not stop the program being recorded
            self.handleError(record)

    def _gb_id(self, gb_type: str, reason: str) -> Optional[str]:
        m = _GB_LINK.search(reason)
        if m:
            return f"GB{m.group(1)}"
        if self._gb_ids is None:
            self._gb_ids = graph_break_ids()
        return self._gb_ids.get(gb_type)

    def _take(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if record.name.endswith("__recompiles") or record.name.endswith("__recompiles_verbose"):
            m = _RECOMPILE.match(msg)
            if m:
                guards = [g.strip()[2:] for g in m["guards"].splitlines() if g.strip().startswith("- ")]
                # each failed guard is "frame/compile: guard"; the user stack Dynamo adds below one is not a guard
                guards = [g for g in guards if _GUARD.match(g)] or guards
                self.recompiles.append(Recompile(m["fn"], m["file"], int(m["line"]), guards))
            return
        if not record.name.endswith("__graph_breaks"):
            if record.levelno >= logging.WARNING and "recompile_limit" in msg:
                self.limits.append(msg.strip())
            return
        m = _BREAK.match(msg)
        if m:
            reason, stack = m["reason"], _frames(m["stack"] or "")
            reason = reason.split("\n\nStack variable source attribution:")[0]
            file, line = m["file"], int(m["line"])
        elif (m := _DUP_BREAK.match(msg)):
            reason, stack = m["reason"], None
            file, line = m["file"], int(m["line"])
        elif (m := _SKIP.search(msg)):
            stack = _frames(m["stack"])
            exc = record.exc_info[1] if record.exc_info else None
            reason = str(getattr(exc, "msg", exc) or "")
            if not _SKIPPED.search(reason):
                reason += f"\nframe skipped: {m['frame']}"
            if not stack:
                return
            file, line = stack[-1][0], stack[-1][1]
        else:
            return
        gb_type, ctx, expl = parse_reason(reason)
        sk = _SKIPPED.search(reason)
        skipped = (sk["file"], int(sk["line"]), sk["fn"]) if sk else None
        key = (file, line, gb_type)
        if stack:
            self._stacks.setdefault(key, stack)
        else:  # a duplicate: Dynamo printed the stack the first time
            stack = self._stacks.get(key, [(file, line, "?")])
        self.breaks.append(Break(file, line, gb_type, self._gb_id(gb_type, reason), ctx, expl, stack, skipped))


class _ArtifactFilter(logging.Filter):
    """Lets a torch console handler show the graph_breaks/recompiles records only where the
    user had switched that artifact on."""

    def __init__(self, wanted: set) -> None:
        super().__init__()
        self.wanted = wanted

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name.rpartition(".__")[2] if ".__" in record.name else ""
        return name not in ARTIFACTS or name in self.wanted


def _frames(text: str) -> List[Tuple[str, int, str]]:
    return [(m["file"], int(m["line"]), m["fn"]) for m in _FRAME.finditer(text)]


HOOK = "torch._logging artifacts graph_breaks, recompiles"


def compile_record(rec: DynamoRecorder, user: Any) -> "Compile":
    """The trace's `compile` part: each break charged to the innermost frame of the user's
    code on Dynamo's stack (`user`: a frames.UserCode), one entry per (file, line, type)
    with its count; each recompiled function with the guards that failed (8 at most)."""
    import linecache

    from synclint.trace.schema import Compile, GraphBreak, Recompilation

    breaks: Dict[Tuple[str, int, str], GraphBreak] = {}
    for b in rec.breaks:
        frames = b.stack or [(b.file, b.line, "?")]
        mine = [f for f in frames if user.is_user(f[0])]
        path, line, function = mine[-1] if mine else (b.file, b.line, frames[-1][2])
        shown = _shown(user, path)
        key = (shown, line, b.gb_type)
        e = breaks.get(key)
        if e is None:
            dynamo_at = f"{_shown(user, b.file)}:{b.line}"
            e = breaks[key] = GraphBreak(
                shown, line, function, b.gb_type, b.gb_id, b.explanation[:300], b.context[:300],
                source=linecache.getline(path, line).strip(),
                dynamo_at=None if dynamo_at == f"{shown}:{line}" else dynamo_at,
                callers=[f"{_shown(user, f)}:{n}:{fn}" for f, n, fn in reversed(mine[:-1])][:6],
                skipped=None if b.skipped is None else f"{_shown(user, b.skipped[0])}:{b.skipped[1]}:{b.skipped[2]}",
                user=bool(mine), error=b.error)
        e.count += 1
    recompiles: Dict[Tuple[str, int, str], Recompilation] = {}
    for r in rec.recompiles:
        shown = _shown(user, r.file)
        resumed = _RESUMED.fullmatch(r.function)  # the rest of a function after a break, compiled apart
        function = f"{resumed[1]} (after the break at line {resumed[2]})" if resumed else r.function
        e = recompiles.setdefault((shown, r.line, function),
                                  Recompilation(shown, r.line, function, user=user.is_user(r.file)))
        e.count += 1
        for g in r.guards:
            g = re.sub(r"\s+", " ", g)[:240]
            if g not in e.guards and len(e.guards) < 8:
                e.guards.append(g)
    order = lambda e: (not e.user, e.file, e.line)  # noqa: E731
    return Compile(sorted(breaks.values(), key=order), sorted(recompiles.values(), key=order), rec.limits[:10])


def _shown(user: Any, path: str) -> str:
    """A file as the trace names it: relative to the user's root, else from its package down
    (torch/nn/modules/module.py), else as Dynamo wrote it ("<string>")."""
    if user.is_user(path):
        return user.shown(path)
    m = re.search(r"[/\\](?:site|dist)-packages[/\\](.*)", path)
    return m.group(1).replace("\\", "/") if m else path
