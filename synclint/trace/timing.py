"""How long a sync blocked the host, for syncs that are reported after they happened.

torch's sync debug mode (the detector, detector.py) reports a sync as a Python warning
when the C++ call that synced returns to Python: the wait is over by then, and nothing
marks when it began. What does mark it is the bytecode instruction of the frame the sync
is charged to (`x[mask]`, `if t:`, `f"{t}"`, `loss.item()`, a call into a library that
syncs): the host was inside that instruction from its start until the report. So the
clock learns each syncing instruction from its first report, and from then on
`sys.monitoring` (Python 3.12+) tells it when that one instruction starts: blocked time =
the report's time minus the instruction's start (or minus the previous report inside the
same execution of the instruction, when one call syncs twice).

Cost: nothing for code that never synced. A code object that holds a syncing instruction
gets INSTRUCTION events; every other instruction in it fires once and is then disabled
(`DISABLE`), so in the steady state exactly one callback runs per execution of a syncing
instruction. The first sync at each instruction is counted but not timed (it teaches the
clock where to look); a warm-up (`synclint trace --warmup`) leaves none untimed in the
window. What the time includes beyond the wait: the rest of that instruction up to the
report (the copy of `.item()`'s 4 bytes, converting `.tolist()`'s list, a kernel launch
after `nonzero`'s count), which the profiler counts in its blocking calls too for the
copies, not for the Python work.

The report itself arrives late: after the C++ call returns, torch turns the debug mode's
warning into a Python warning and the warnings machinery (filters, the registry, the
`_showwarnmsg` lookup) runs before the detector reads the clock. That delay is the same for
every sync and was most of the trace's figure for short waits (on an H100, 6-9 us per sync
against a 9-14 us `.item()` or pageable copy): `synclint trace` measures it once, at the
start of its window, on an idle GPU (`Interceptor.report_latency`), and the clock subtracts
it from every timed sync (`latency`).

Before Python 3.12 (no `sys.monitoring`) the clock is unavailable: syncs are counted and
attributed, not timed.
"""

from __future__ import annotations

import bisect
import dis
import sys
import threading
import time
from types import CodeType, FrameType
from typing import Any, Callable, Dict, List, Optional, Set

TOOL_NAME = "synclint-sync-clock"


def claim_tool(name: str, preferred: tuple = (4, 3, 1, 2)) -> Optional[int]:
    """A free `sys.monitoring` tool id, registered under `name`; None if none is free
    (coverage.py, a profiler and a debugger may hold some) or before Python 3.12."""
    mon = getattr(sys, "monitoring", None)
    if mon is None:
        return None
    for tool in preferred:
        if mon.get_tool(tool) is None:
            mon.use_tool_id(tool, name)
            return tool
    return None


class SyncClock:
    """Learns the instructions that sync and times each later execution of them."""

    def __init__(self) -> None:
        self._mon = getattr(sys, "monitoring", None)
        self._tool: Optional[int] = None
        self._armed: Dict[CodeType, Set[int]] = {}  # code -> instruction offsets that synced
        self._offsets: Dict[CodeType, List[int]] = {}  # code -> its instruction offsets (no caches)
        self._lock = threading.Lock()  # arming comes from any syncing thread
        self._local = threading.local()  # .started: {(code, offset): perf_counter at its start}
        self._undo: List[Callable[[], None]] = []
        self.latency = 0.0  # seconds each report arrives after its sync ended (see above)

    @property
    def available(self) -> bool:
        return self._tool is not None

    def start(self) -> bool:
        """Claim a monitoring tool; False when there is none (Python < 3.12, all taken)."""
        if self._tool is not None:
            return True
        self._tool = claim_tool(TOOL_NAME)
        if self._tool is None:
            return False
        mon, tool = self._mon, self._tool
        mon.register_callback(tool, mon.events.INSTRUCTION, self._on_instruction)

        def undo() -> None:
            for code in list(self._armed):
                mon.set_local_events(tool, code, 0)
            mon.register_callback(tool, mon.events.INSTRUCTION, None)
            mon.free_tool_id(tool)
            self._tool = None

        self._undo.append(undo)
        return True

    def stop(self) -> None:
        while self._undo:
            self._undo.pop()()
        self._armed.clear()

    def _on_instruction(self, code: CodeType, offset: int) -> Any:
        if offset not in self._armed.get(code, ()):
            return self._mon.DISABLE  # not a syncing instruction: never report it again
        started = getattr(self._local, "started", None)
        if started is None:
            started = self._local.started = {}
        started[(code, offset)] = time.perf_counter()
        return None

    def _instruction(self, code: CodeType, lasti: int) -> int:
        """The offset of the instruction `f_lasti` is in (it can point into the inline
        cache after the instruction, as for a call in progress on Python 3.12)."""
        offsets = self._offsets.get(code)
        if offsets is None:
            offsets = self._offsets[code] = [i.offset for i in dis.get_instructions(code)]
        i = bisect.bisect_right(offsets, lasti) - 1
        return offsets[i] if i >= 0 else lasti

    def elapsed(self, frame: Optional[FrameType], now: float) -> Optional[float]:
        """Seconds from the start of `frame`'s current instruction (or from the previous
        report inside it) to `now`, when the report arrived, less the report's own
        `latency`; None the first time that instruction syncs (it is armed now)."""
        if frame is None or self._tool is None:
            return None
        code = frame.f_code
        offset = self._instruction(code, frame.f_lasti)
        started = getattr(self._local, "started", None)
        t0 = started.pop((code, offset), None) if started else None
        if t0 is not None:
            started[(code, offset)] = now  # a second sync in the same execution counts from here
            return max(0.0, now - t0 - self.latency)
        self._arm(code, offset)
        return None

    def _arm(self, code: CodeType, offset: int) -> None:
        with self._lock:
            offsets = self._armed.get(code)
            if offsets is not None and offset in offsets:
                return  # armed already: this execution began before it was armed
            fresh = offsets is None
            self._armed.setdefault(code, set()).add(offset)
            mon, tool = self._mon, self._tool
            if fresh:
                mon.set_local_events(tool, code, mon.events.INSTRUCTION)
            else:
                # Its other instructions disabled themselves, this one among them: enable
                # them again (each fires once more and disables itself again).
                mon.restart_events()
