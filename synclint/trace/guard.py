"""`synclint.guard(level)` and `synclint.allow_sync(reason)`: the sync check for tests.

    with synclint.guard("disallow"):
        train_step(batch)                 # SyncError naming the first sync's line
    with synclint.guard("log") as g:      # records (and logs) every sync instead
        evaluate(model)
    print(g.events)
    with synclint.guard("disallow"):
        loss = step()
        with synclint.allow_sync("logged every 100 steps"):
            print(loss.item())            # allowed: recorded with its reason, no error

When it raises: on the syncing line, as the call that synced returns, for the common syncs
(`.item()`, `.tolist()`, `.cpu()`, `if t`, `x[mask]`, f-strings and `print` of a tensor,
`.nonzero()`, `torch.cuda.synchronize()`, `Stream`/`Event.synchronize()`, pageable
copies); a sync in a torch function synclint does not wrap (`torch.nonzero(x)`) is raised
when the block ends (raising.py says how and why). The message names the line, what blocked and
the rule, and a note carries the stack at the sync.

The guard is scoped to the thread that entered it: the detector's warnings arrive on the
syncing thread, so a sync on another thread (a data-loading thread, another test's
worker) is not this guard's business. It sees what `synclint trace` sees, the debug
mode's blind spots included (device and event synchronize, pageable non_blocking copies).
Limits: syncs inside C++ extensions that bypass c10's hooks, and syncs in other processes
(DataLoader workers), are not seen. Without a CUDA device a guard checks nothing and says
so once (a RuntimeWarning).
"""

from __future__ import annotations

import logging
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from synclint.trace.intercept import Listener, SyncEvent

LEVELS = ("allow", "log", "disallow")
logger = logging.getLogger("synclint.guard")


class SyncError(RuntimeError):
    """A CUDA sync inside `synclint.guard("disallow")`."""


@dataclass
class GuardEvent:
    where: str  # file:line (the user's line, else the innermost library frame)
    kind: str
    what: str  # what blocked, in words
    rules: Tuple[str, ...]  # the synclint rules that flag the line
    thread: str
    allowed: Optional[str] = None  # the allow_sync reason, when inside one

    def __str__(self) -> str:
        rules = ", ".join(self.rules) if self.rules else "no synclint rule flags this line"
        allowed = f" (allowed: {self.allowed})" if self.allowed else ""
        return f"{self.where}: {self.what} [{rules}]{allowed}"


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.guards: List["guard"] = []
        self.allowed: List[str] = []


_state = _ThreadState()
_no_device_said: List[str] = []


class _GuardListener(Listener):
    """One listener for all guards; each event goes to the guard of the syncing thread."""

    def on_sync(self, event: SyncEvent) -> Optional[BaseException]:
        if not _state.guards:
            return None
        g = _state.guards[-1]
        if g.level == "allow":
            return None
        ge = _describe(event, _state.allowed[-1] if _state.allowed else None)
        g.events.append(ge)
        if ge.allowed:
            return None
        if g.level == "log":
            logger.warning("sync: %s", ge)
            return None
        return _sync_error(ge, event)


_listener = _GuardListener()


class guard:
    """Check the CUDA syncs of this thread inside the block: "disallow" raises SyncError for
    the first one (on its line; else when the block ends), "log"
    records and logs each, "allow" records nothing. Guards nest: the innermost decides."""

    def __init__(self, level: str = "disallow") -> None:
        if level not in LEVELS:
            raise ValueError(f"synclint.guard: level must be one of {', '.join(LEVELS)}, not {level!r}")
        self.level = level
        self.events: List[GuardEvent] = []
        self.active = False

    def __enter__(self) -> "guard":
        from synclint.trace.intercept import acquire, cuda_state

        reason = cuda_state()
        if reason:
            if not _no_device_said:
                _no_device_said.append(reason)
                warnings.warn(f"synclint.guard: {reason}; the guard checks nothing", RuntimeWarning, stacklevel=2)
            return self
        interceptor = acquire(_listener)
        if self.level == "disallow":
            interceptor.raise_at_the_line()
        self.active = True
        _state.guards.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.active:
            return
        from synclint.trace.intercept import release
        from synclint.trace.raising import take_pending

        _state.guards.remove(self)
        release(_listener)
        self.active = False
        if self.level == "disallow":
            armed = take_pending()  # armed but not raised on its line (raising.py): raised here
            if armed is not None and exc[0] is None:
                raise armed

    @property
    def syncs(self) -> List[GuardEvent]:
        """The events that were not inside allow_sync."""
        return [e for e in self.events if not e.allowed]


class allow_sync:
    """Inside a guard, let syncs happen; they are recorded with `reason`."""

    def __init__(self, reason: str) -> None:
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("synclint.allow_sync needs a reason, e.g. allow_sync(\"metrics every 100 steps\")")
        self.reason = reason

    def __enter__(self) -> "allow_sync":
        _state.allowed.append(self.reason)
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.allowed.remove(self.reason)


def _sync_error(ge: GuardEvent, event: SyncEvent) -> SyncError:
    """The error, with the user's stack at the sync (the guard may raise it later)."""
    import traceback

    err = SyncError(
        f"synchronizing CUDA operation at {ge.where}: {ge.what} "
        f"[{', '.join(ge.rules) or 'no synclint rule flags this line'}]; "
        f"if it is meant, wrap it in synclint.allow_sync(\"why\")")
    frame = event.where.raise_frame
    if frame is not None and hasattr(err, "add_note"):
        err.add_note("the sync happened here:\n" + "".join(traceback.format_stack(frame, limit=6)).rstrip())
    return err


# ---------------------------------------------------------------- explaining a sync

# the rule that covers a sync of each kind the debug mode cannot see, whatever the line
_DIRECT_RULES = {"device": ("SYN401",), "event": ("SYN402",), "pageable-copy": ("SYN303",)}
# (path, mtime) -> the rules on each line, and the codes the file's configuration selects
_checked_cache: Dict[Tuple[str, float], Tuple[Dict[int, Tuple[str, ...]], FrozenSet[str]]] = {}


def _describe(event: SyncEvent, allowed: Optional[str]) -> GuardEvent:
    from synclint.trace.join import KIND_WORDS

    site = event.where.site
    where = f"{site.file}:{site.line}" if site else "<no Python frame>"
    what = KIND_WORDS.get(event.kind, event.kind)
    by_line, selected = _checked(event)
    if event.kind == "stream" and event.where.via and event.where.via.endswith(":synchronize"):
        what, direct = "Stream.synchronize()", ("SYN402",)
    else:
        direct = _DIRECT_RULES.get(event.kind, ())
        if event.where.via and event.kind == "stream":
            what += f" in {event.where.via}"
    rules = tuple(c for c in direct if selected is None or c in selected)
    if not direct:
        rules = by_line.get(site.line, ()) if site is not None and event.where.user else ()
    return GuardEvent(where, event.kind, what, rules, event.thread, allowed)


def _checked(event: SyncEvent) -> Tuple[Dict[int, Tuple[str, ...]], Optional[FrozenSet[str]]]:
    """What `synclint check` says of the syncing line's file under the configuration that
    applies to it (the nearest pyproject.toml: its selection, noqa, per-file ignores): the
    findings' rules by line, and the codes it selects (None: not known here). The file is
    checked once per modification time, when a guard first meets a sync in it; nothing when
    the rules are not importable here or the configuration is broken."""
    import os

    frame = event.where.raise_frame
    path = frame.f_code.co_filename if frame is not None and event.where.user else None
    try:
        key = (path, os.stat(path).st_mtime) if path else ("", 0.0)
    except OSError:
        key = ("", 0.0)
    got = _checked_cache.get(key)
    if got is None:
        got = _checked_cache[key] = _check_file(key[0] or None)
    return got


def _check_file(path: Optional[str]) -> Tuple[Dict[int, Tuple[str, ...]], Optional[FrozenSet[str]]]:
    from dataclasses import replace
    from pathlib import Path

    by_line: Dict[int, Tuple[str, ...]] = {}
    try:
        from synclint.parse.source import read_source
        from synclint.run import pipeline
    except ImportError:  # the rules need LibCST, which a device image may lack
        return {}, None
    try:
        setup = pipeline.configure(start=Path(path).parent if path else Path.cwd(), lazy=False)
        # `tests-hot-only` keeps a static report of test files to their loops; a sync that
        # ran is no noise, so the rule that describes it is named wherever it sits
        setup.cfg = replace(setup.cfg, tests_hot_only=False)
        selected = frozenset(r.CODE for r in setup.selected())
        text = read_source(path) if path else None
        if isinstance(text, str):
            for f in pipeline.run_buffer(setup, path, text).findings:
                for row in range(f.row, f.end_row + 1):
                    by_line[row] = tuple(sorted(set(by_line.get(row, ())) | {f"{f.code} {f.name}"}))
    except (pipeline.PipelineError, OSError, ValueError):  # a broken configuration, an unreadable file
        return {}, None
    return by_line, selected
