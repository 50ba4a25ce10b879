"""The sync detector: torch's sync debug mode, its warnings routed to a callback.

`torch.cuda.set_sync_debug_mode("warn")` makes c10 warn from the two places every hooked
sync passes through (`memcpy_and_sync` and `stream_synchronize`, c10/cuda/CUDAFunctions.h),
and costs nothing anywhere else: no per-kernel, per-allocation or per-event hook. The
warning reaches Python when the C++ call that synced returns, on the syncing thread, with
the Python frame that made the call on top of the stack; it is routed here and never
shown.

Two things keep it complete:

* Python's warnings filters decide whether a warning is shown at all, once per line
  by default, and never after the program's own `warnings.filterwarnings("ignore")` (a
  common first line of training scripts). So an "always" filter for the message is kept
  first in `warnings.filters`: put there on install, and moved back to the front whenever
  the program changes the filters (every change through the `warnings` API ends in its
  `_filters_mutated()`, which is wrapped for that). A program that assigns
  `warnings.filters` directly, bypassing the API, can still displace it.
* `warnings._showwarnmsg` is looked up by the C part of `warnings` for every warning that
  passes the filters, and `catch_warnings(record=True)` (pytest's) leaves it alone, so it
  is the place to take ours out: only the detector's message is taken; everything else goes
  on to the original.

The debug mode's blind spots (`torch.cuda.synchronize()`, `Event.synchronize()`,
`non_blocking` copies from pageable memory) are covered by wrappers in intercept.py.
"""

from __future__ import annotations

import sys
import time
import warnings
from types import FrameType
from typing import Any, Callable, List, Optional

MESSAGE = "called a synchronizing CUDA operation"


def install(torch: Any, on_sync: Callable[[Optional[FrameType], float], None]) -> Callable[[], None]:
    """Turn the debug mode on and route its warnings to `on_sync(frame, now)`, `now` the
    `time.perf_counter()` read as the warning arrived; returns the undo.

    The program's own `torch.cuda.set_sync_debug_mode(...)` is honoured, not obeyed to
    the letter: "error" still raises, "warn" still shows its warnings, "default" hides them
    again, and in every case the detector keeps seeing the syncs."""
    undo: List[Callable[[], None]] = []
    cuda = torch.cuda
    original_set = cuda.set_sync_debug_mode
    program = {"mode": _level(cuda.get_sync_debug_mode())}  # what the program asked for

    def set_mode(mode: Any) -> None:
        program["mode"] = _level(mode)
        with warnings.catch_warnings():  # torch's one-time "prototype feature" notice
            warnings.simplefilter("ignore")
            original_set(2 if program["mode"] == 2 else 1)

    set_mode(program["mode"])
    cuda.set_sync_debug_mode = set_mode
    undo.append(lambda: (setattr(cuda, "set_sync_debug_mode", original_set), original_set(program["mode"])))
    undo.append(_pin_always_filter())

    original_show = warnings._showwarnmsg  # type: ignore[attr-defined]

    def showwarnmsg(msg: Any) -> None:
        now = time.perf_counter()  # the wait ended before this: read the clock before any work
        if isinstance(msg.message, Warning) and MESSAGE in str(msg.message):
            on_sync(sys._getframe(1), now)  # the frame that called the op that synced
            if program["mode"] != 1:
                return
        original_show(msg)

    warnings._showwarnmsg = showwarnmsg  # type: ignore[attr-defined]
    undo.append(lambda: setattr(warnings, "_showwarnmsg", original_show))

    def uninstall() -> None:
        while undo:
            undo.pop()()

    return uninstall


def _level(mode: Any) -> int:
    """torch's debug-mode argument as its number: 0 default, 1 warn, 2 error."""
    if isinstance(mode, str):
        return {"default": 0, "warn": 1, "error": 2}.get(mode, 0)
    return int(mode)


def _pin_always_filter() -> Callable[[], None]:
    """Put an "always" filter for MESSAGE first in `warnings.filters` and keep it there."""
    warnings.filterwarnings("always", message=MESSAGE)
    ours = warnings.filters[0]
    name = "_filters_mutated"
    original = getattr(warnings, name, None)

    def repin() -> None:
        filters = warnings.filters
        if filters and filters[0] is ours:
            return
        if ours in filters:
            filters.remove(ours)
        filters.insert(0, ours)

    def filters_mutated(*args: Any, **kwargs: Any) -> Any:
        repin()
        return original(*args, **kwargs)  # type: ignore[misc]

    if original is not None:
        setattr(warnings, name, filters_mutated)

    def unpin() -> None:
        if original is not None:
            setattr(warnings, name, original)
        if ours in warnings.filters:
            warnings.filters.remove(ours)
        if original is not None:
            original()

    return unpin
