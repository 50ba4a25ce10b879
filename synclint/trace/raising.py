"""Raise an exception in a given frame from code that cannot raise itself.

torch runs its sync callbacks inside C++ and its CallbackRegistry logs and swallows what
they raise, and an exception set from a warning hook there breaks the interpreter state
(seen on the device: "SystemError: error return without exception set"). So the guard
arms a one-shot trace function on the user's frame instead: at that frame's next opcode
(right after the syncing call returns into it) the trace function restores the previous
tracer (a debugger's or coverage's) and raises, so the traceback points at the line that
synced.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any, Optional


def raise_in_frame(frame: FrameType, exc: BaseException) -> None:
    previous = sys.gettrace()
    previous_local = frame.f_trace

    def tracer(f: FrameType, event: str, arg: Any) -> Optional[Any]:
        if f is not frame:
            return None  # calls made before control is back in `frame`: not traced
        if event in ("opcode", "line"):
            frame.f_trace_opcodes = False
            frame.f_trace = previous_local
            sys.settrace(previous)
            raise exc
        return tracer

    frame.f_trace = tracer
    frame.f_trace_opcodes = True
    sys.settrace(tracer)
