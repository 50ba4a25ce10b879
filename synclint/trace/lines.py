"""Which lines of the user's files ran in the traced window: line coverage beside the syncs.

A finding whose line never ran is neither confirmed nor refuted by a run; one whose line
ran without a sync is. The sync callbacks only see lines that synced, so the trace also
records which lines ran.

On Python 3.12+ this is `sys.monitoring` LINE events: each (code, line) reports once and
is then disabled (`DISABLE`), so a loop costs nothing after its first pass. Older Pythons
fall back to `sys.settrace` with a local tracer only in the user's files (slower: each
line of the user's code pays a Python call while the window is open).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Dict, List, Optional, Set

from synclint.trace.frames import UserCode

_TOOL_NAME = "synclint-lines"


class LineRecorder:
    def __init__(self, user: UserCode) -> None:
        self.user = user
        self._ran: Dict[str, Set[int]] = {}  # co_filename -> lines
        self._tool: Optional[int] = None
        self._stop: List[Any] = []
        self.mechanism = "sys.monitoring" if hasattr(sys, "monitoring") else "sys.settrace"

    def _note(self, filename: str, line: int) -> bool:
        """Record the line if the file is the user's; False: not the user's (stop asking)."""
        if not self.user.is_user(filename):
            return False
        lines = self._ran.get(filename)
        if lines is None:
            lines = self._ran[filename] = set()
        lines.add(line)
        return True

    def start(self) -> None:
        if hasattr(sys, "monitoring"):
            self._start_monitoring()
        else:
            self._start_settrace()

    def stop(self) -> None:
        while self._stop:
            self._stop.pop()()

    def lines(self) -> Dict[str, List[List[int]]]:
        """{file as the trace names it: [[first, last], ...]} (sorted runs of lines)."""
        out: Dict[str, List[List[int]]] = {}
        for filename, lines in sorted(self._ran.items()):
            out.setdefault(self.user.shown(filename), []).extend(_runs(sorted(lines)))
        return out

    # ------------------------------------------------------------ mechanisms

    def _start_monitoring(self) -> None:
        from synclint.trace.timing import claim_tool

        mon = sys.monitoring  # type: ignore[attr-defined]
        tool = claim_tool(_TOOL_NAME, (mon.COVERAGE_ID, 3, 4))
        if tool is None:  # coverage.py and two others hold the tools: record nothing
            self.mechanism = "none (no free sys.monitoring tool)"
            return
        disable = mon.DISABLE

        def on_line(code: Any, line: int) -> Any:
            self._note(code.co_filename, line)
            return disable  # this location never reports again to this tool

        mon.register_callback(tool, mon.events.LINE, on_line)
        mon.restart_events()  # an earlier recorder's DISABLEs must not hide lines from this one
        mon.set_events(tool, mon.events.LINE)

        def undo() -> None:
            mon.set_events(tool, 0)
            mon.register_callback(tool, mon.events.LINE, None)
            mon.free_tool_id(tool)

        self._stop.append(undo)

    def _start_settrace(self) -> None:
        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                self._note(frame.f_code.co_filename, frame.f_lineno)
            return local

        def global_(frame: Any, event: str, arg: Any) -> Any:
            if event != "call" or not self.user.is_user(frame.f_code.co_filename):
                return None
            return local

        previous = sys.gettrace()
        sys.settrace(global_)
        threading.settrace(global_)
        # Frames already running (the program's module frame when the window opens late).
        f = sys._getframe(1)
        while f is not None:
            if self.user.is_user(f.f_code.co_filename):
                f.f_trace = local
            f = f.f_back

        def undo() -> None:
            sys.settrace(previous)
            threading.settrace(None)  # type: ignore[arg-type]

        self._stop.append(undo)


def _runs(lines: List[int]) -> List[List[int]]:
    out: List[List[int]] = []
    for n in lines:
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def ran(runs: Optional[List[List[int]]], first: int, last: int) -> bool:
    """Whether any line from `first` to `last` is in `runs` (LineRecorder.lines' form)."""
    return any(a <= last and first <= b for a, b in runs or ())
