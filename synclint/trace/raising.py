"""How a guard's exception gets out of the sync detector and onto the syncing line.

The detector is torch's sync debug mode, whose warning reaches Python as the call that
synced returns (detector.py). An exception raised from the warning handler does not leave
it cleanly: torch's warning machinery turns it into "SystemError: error return without
exception set" at the line (seen on the device, torch 2.11, Python 3.12). With the former
GPU-trace callbacks, two more ways out were tried and dropped: arming a trace function
from the callback (a segmentation fault on a boolean-mask index, which syncs twice inside
one C call), and an asynchronous exception (`PyThreadState_SetAsyncExc`), delivered while
c10's hook was still running and swallowed there.

So the detector only *arms* the error for its thread (`arm`), and it is raised:

1. on the syncing line, as the call that synced returns, by a synclint wrapper around that
   call (`raise_armed_after`): `Stream.synchronize`, `Tensor.to`/`cuda`/`copy_` (the
   wrappers of `torch.cuda.synchronize` and `Event.synchronize` raise their own), and while a raising guard is on, the
   Tensor operations behind the common syncs (intercept.py's SYNCING_TENSOR_METHODS:
   `.item()`, `if t`, `x[mask]`, f-strings, `print`, `.cpu()`, `.nonzero()`, ...). The
   operators among them (`if t`, `x[mask]`) are no calls in the user's frame: only a
   wrapper of the Tensor method behind them can stop the code right there;
2. otherwise (a torch function synclint does not wrap, such as `torch.nonzero(x)`), when
   the guard's block ends, with the syncing line in the message.

The message always names the syncing line, and a note carries the stack at the sync.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

_state = threading.local()  # .pending: the first armed error of this thread


def arm(exc: BaseException) -> None:
    if getattr(_state, "pending", None) is None:
        _state.pending = exc


def pending() -> Optional[BaseException]:
    return getattr(_state, "pending", None)


def take_pending() -> Optional[BaseException]:
    exc = pending()
    _state.pending = None
    return exc


def call_and_raise_armed(original: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call `original`; if a sync inside it armed an error, raise it now (on the caller's line)."""
    before = pending()
    out = original(*args, **kwargs)
    if before is None and pending() is not None:
        raise take_pending()  # type: ignore[misc]
    return out


def raise_armed_after(original: Callable) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call_and_raise_armed(original, *args, **kwargs)

    wrapper.__name__ = getattr(original, "__name__", "wrapper")
    wrapper.__qualname__ = getattr(original, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    return wrapper
