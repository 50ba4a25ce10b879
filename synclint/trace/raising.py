"""Raise an exception in a given frame from code that cannot raise itself.

torch runs its sync callbacks inside C++ and its CallbackRegistry logs and swallows what
they raise, and an exception set from a warning hook there breaks the interpreter state
(seen on the device: "SystemError: error return without exception set"). So the guard
arms a one-shot trace function on the user's frame instead: at that frame's next opcode
(right after the syncing call returns into it) the trace function restores the previous
tracer (a debugger's or coverage's) and raises, so the traceback points at the line that
synced. One exception per thread is armed at a time: the first sync is the one reported.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any, Optional

_armed = threading.local()  # .pending: an exception armed and not yet raised


def pending() -> bool:
    return getattr(_armed, "pending", None) is not None


def raise_in_frame(frame: FrameType, exc: BaseException) -> None:
    if pending():
        return
    _armed.pending = exc
    previous = sys.gettrace()
    previous_local = frame.f_trace

    def tracer(f: FrameType, event: str, arg: Any) -> Optional[Any]:
        if f is not frame:
            return None  # calls made before control is back in `frame`: not traced
        if event in ("opcode", "line", "return"):
            frame.f_trace_opcodes = False
            frame.f_trace = previous_local
            sys.settrace(previous)
            _armed.pending = None
            raise exc
        return tracer

    frame.f_trace = tracer
    frame.f_trace_opcodes = True
    sys.settrace(tracer)
