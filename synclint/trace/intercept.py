"""The interception: every host-GPU sync of the process, as it happens, on its own thread.

Choice of mechanism (torch 2.11 on the device, 2.13 here; read in their sources):

* torch's sync debug mode is the detector (detector.py): c10 warns from the two hooks
  every sync it knows passes through (`memcpy_and_sync`, `stream_synchronize` in
  c10/cuda/CUDAFunctions.h) and nowhere else, so it costs nothing between syncs. The
  warning arrives on the syncing thread as the call that synced returns, with the Python
  stack of the line that caused it: that gives the line and the thread, and the clock
  (timing.py) gives the time the host spent in that line's instruction.
* What the debug mode cannot see is wrapped in Python: `torch._C._cuda_synchronize`
  (behind `torch.cuda.synchronize()`), `torch.cuda.Event.synchronize` and, for
  `non_blocking` copies from pageable memory (which block inside `cudaMemcpyAsync` with no
  hook at all), `Tensor.to`/`cuda`/`copy_`: each wrapper times its call.
* `torch.cuda._gpu_trace` callbacks were the spine before. They see the same
  syncs before they block, but `torch._C._activate_gpu_trace()` (which cannot be undone)
  sends *every* kernel launch, allocation and event through a Python call under the GIL,
  callback or not: +79% per iteration on a launch-bound nanoGPT on an H100 with no
  callback registered (issue 39). The debug mode sees the same syncs at no such cost.
* The profiler was rejected as the recording mechanism: its runtime events
  (`cudaStreamSynchronize`, ...) carry durations but reach Python frames only with
  `with_stack=True`, cost far more per op, and grow a buffer for the whole run.
  `synclint trace --cross-check` runs it beside the interception to check the times.

A warning handler cannot raise into the program (torch turns that into a SystemError), so
a listener that wants to stop the program (the guard) returns the exception and this
module arms it for the syncing thread (raising.py): a wrapper of the call that synced
raises it on the syncing line as that call returns (`raise_at_the_line`), else the guard
raises it when its block ends.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from synclint.trace.frames import Attribution, UserCode

# What a raising guard wraps: the operations behind the common syncs. The operators among
# them (`if t`, `x[mask]`, `x[m] = v`) are not calls in the user's frame, so only a wrapper
# can raise on their line; print and f-strings reach `item`/`tolist` through torch's
# Python formatting code, wrapped too so that nothing of it runs on after the sync.
SYNCING_TENSOR_METHODS = ("item", "tolist", "cpu", "numpy", "__bool__", "__getitem__", "__setitem__",
                          "__format__", "__repr__", "__int__", "__float__", "__index__",
                          "nonzero", "masked_select", "unique", "equal", "allclose")


@dataclass
class SyncEvent:
    kind: str  # "stream" | "device" | "event" | "pageable-copy" (schema.KINDS)
    where: Attribution
    blocked_s: Optional[float]  # None: not measured
    thread: str


class Listener:
    """Receives events. `wants_time`: the interceptor measures the blocked time (timing.py)."""

    wants_time = False

    def on_sync(self, event: SyncEvent) -> Optional[BaseException]:
        return None


def cuda_state() -> Optional[str]:
    """None when a CUDA device can be traced, else the one-line reason it cannot."""
    from synclint.torch_import import import_torch

    try:
        torch = import_torch()
    except ImportError:
        return "torch is not installed (pip install 'synclint[trace]')"
    if not torch.cuda.is_available():
        built = torch.version.cuda
        return (f"no CUDA GPU is visible to torch {torch.__version__}"
                + ("" if built else " (a CPU-only build)"))
    return None


class Interceptor:
    """Process-wide: installed while at least one listener is registered."""

    def __init__(self, user: UserCode, clock: Any = None) -> None:
        self.user = user
        self.listeners: List[Listener] = []
        self._local = threading.local()  # .busy: inside our own handling (no re-entry)
        self._undo: List[Callable[[], None]] = []
        self.clock = clock  # timing.SyncClock, started when a listener first wants time
        self.raise_at_line = False  # raise_at_the_line() installed its wrappers
        self._torch: Any = None

    # ------------------------------------------------------------ install / remove

    def install(self, torch: Any) -> None:
        from synclint.trace import detector
        from synclint.trace.raising import raise_armed_after
        from synclint.trace.timing import SyncClock

        self._torch = torch
        self.clock = self.clock or SyncClock()
        self._undo.append(self.clock.stop)
        self._undo.append(detector.install(torch, self.on_sync_warning))
        self._wrap(torch._C, "_cuda_synchronize", self._timed_call("device"))
        self._wrap(torch.cuda.Event, "synchronize", self._timed_call("event"))
        self._wrap(torch.cuda.Stream, "synchronize", raise_armed_after)  # the detector sees it
        self._wrap(torch.Tensor, "to", self._copy_wrapper("to"))
        self._wrap(torch.Tensor, "cuda", self._copy_wrapper("cuda"))
        self._wrap(torch.Tensor, "copy_", self._copy_wrapper("copy_"))

    def raise_at_the_line(self) -> None:
        """For a guard that raises: wrap the Tensor operations that sync most (`item`,
        `tolist`, `cpu`, `__bool__`, indexing, formatting, ...) so that an error armed inside
        one is raised as it returns, on the caller's line (raising.py). They stay until the
        interceptor is uninstalled (each costs a Python call)."""
        if self._torch is None or self.raise_at_line:  # a test's stand-in, or done already
            return
        from synclint.trace.raising import raise_armed_after

        for name in SYNCING_TENSOR_METHODS:
            self._wrap(self._torch.Tensor, name, raise_armed_after)
        self.raise_at_line = True
        self._undo.append(lambda: setattr(self, "raise_at_line", False))

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _wrap(self, owner: Any, name: str, make: Callable[[Callable], Callable]) -> None:
        had = name in owner.__dict__
        original = getattr(owner, name)
        setattr(owner, name, make(original))
        self._undo.append(lambda: setattr(owner, name, original) if had else delattr(owner, name))

    # ------------------------------------------------------------ events

    def _busy(self) -> bool:
        return getattr(self._local, "busy", False)

    def _wants_time(self) -> bool:
        return any(listener.wants_time for listener in self.listeners)

    def _dispatch(self, event: SyncEvent) -> Optional[BaseException]:
        raised = None
        for listener in list(self.listeners):
            exc = listener.on_sync(event)
            raised = raised or exc
        return raised

    def on_sync_warning(self, frame: Any, now: float) -> None:
        """The detector's report of a sync that ended in a call made from `frame` at `now`
        (`perf_counter`): attribute it, time it, tell the listeners and, if one says stop,
        arm the error. The time is `now`, not after the attribution's stack walk (which on
        a launch-bound program's short waits was most of what the trace called blocked)."""
        calibrating = getattr(self._local, "calibrating", None)
        if calibrating is not None:  # report_latency's own sync
            calibrating.append(now)
            return
        if self._busy() or not self.listeners:
            return
        self._local.busy = True
        try:
            where = self.user.attribute(frame)
            blocked = None
            if self.clock is not None and self._wants_time() and self.clock.start():
                blocked = self.clock.elapsed(where.raise_frame, now)
            exc = self._dispatch(SyncEvent("stream", where, blocked, threading.current_thread().name))
            if exc is not None:
                from synclint.trace.raising import arm

                arm(exc)
        finally:
            self._local.busy = False

    def report_latency(self, sync: Callable[[], Any], set_mode: Callable[[int], None], runs: int = 50) -> float:
        """Seconds from the end of a sync to the detector's clock read, the median over
        `runs`: `sync` (a short sync on an idle GPU) timed as a program sees it with the
        debug mode off (`set_mode(0)`), alternating with the same call timed up to its
        report (`set_mode(1)`). The clock subtracts it from every sync it times."""
        plain: List[float] = []
        reported: List[float] = []
        self._local.calibrating = seen = []
        try:
            for i in range(runs + 5):  # the first five warm the path up
                set_mode(0)
                t0 = time.perf_counter()
                sync()
                t1 = time.perf_counter()
                set_mode(1)
                del seen[:]
                t2 = time.perf_counter()
                sync()
                if i >= 5 and seen:
                    plain.append(t1 - t0)
                    reported.append(seen[-1] - t2)
        finally:
            self._local.calibrating = None
        if not reported:
            return 0.0
        return max(0.0, statistics.median(reported) - statistics.median(plain))

    # ------------------------------------------------------------ wrappers

    def _after_wrapped_call(self, kind: str, blocked: float, frame: Any) -> None:
        """Report a sync that a Python wrapper timed; raise here if a listener says stop."""
        self._local.busy = True
        try:
            where = self.user.attribute(frame)
            exc = self._dispatch(SyncEvent(kind, where, blocked, threading.current_thread().name))
        finally:
            self._local.busy = False
        if exc is not None:  # raised here, on the caller's line; an earlier sync's error first
            from synclint.trace.raising import arm, take_pending

            arm(exc)
            raise take_pending()  # type: ignore[misc]

    def _timed_call(self, kind: str) -> Callable[[Callable], Callable]:
        """A wrapper for a call that always blocks (a device or event synchronize)."""
        interceptor = self

        def make(original: Callable) -> Callable:
            def synchronize(*args: Any, **kwargs: Any) -> Any:
                if interceptor._busy() or not interceptor.listeners:
                    return original(*args, **kwargs)
                t0 = time.perf_counter()
                out = original(*args, **kwargs)
                interceptor._after_wrapped_call(kind, time.perf_counter() - t0, sys._getframe(1))
                return out

            synchronize.__name__ = getattr(original, "__name__", "synchronize")
            synchronize.__doc__ = original.__doc__
            return synchronize

        return make

    def _copy_wrapper(self, name: str) -> Callable[[Callable], Callable]:
        from synclint.trace.raising import call_and_raise_armed

        interceptor = self

        def make(original: Callable) -> Callable:
            def wrapper(tensor: Any, *args: Any, **kwargs: Any) -> Any:
                if (not interceptor.listeners or interceptor._busy()
                        or not _pageable_to_cuda(interceptor._torch, name, tensor, args, kwargs)):
                    if interceptor.raise_at_line:  # a copy to the host that synced: raise on its line
                        return call_and_raise_armed(original, tensor, *args, **kwargs)
                    return original(tensor, *args, **kwargs)
                t0 = time.perf_counter()
                out = original(tensor, *args, **kwargs)
                interceptor._after_wrapped_call("pageable-copy", time.perf_counter() - t0, sys._getframe(1))
                return out

            wrapper.__name__ = getattr(original, "__name__", name)
            wrapper.__doc__ = original.__doc__
            return wrapper

        return make


def _non_blocking(name: str, args: tuple, kwargs: dict) -> bool:
    if "non_blocking" in kwargs:
        return bool(kwargs["non_blocking"])
    # Positional forms: to(device, dtype, non_blocking) / to(dtype, non_blocking),
    # cuda(device, non_blocking), copy_(src, non_blocking).
    if name == "to":
        return any(isinstance(a, bool) and a for a in args[1:3])
    return len(args) > 1 and args[1] is True


def _pageable_to_cuda(torch: Any, name: str, tensor: Any, args: tuple, kwargs: dict) -> bool:
    """A `non_blocking` copy from unpinned host memory to a CUDA device: it blocks."""
    if not _non_blocking(name, args, kwargs):
        return False
    if name == "copy_":
        src = args[0] if args else kwargs.get("src")
        return (isinstance(src, torch.Tensor) and tensor.device.type == "cuda"
                and src.device.type == "cpu" and not src.is_pinned())
    if tensor.device.type != "cpu" or tensor.is_pinned():
        return False
    if name == "cuda":
        return True
    target = kwargs.get("device", args[0] if args else None)
    if isinstance(target, torch.Tensor):
        target = target.device
    if isinstance(target, (str, int, torch.device)):
        try:
            return torch.device(target).type == "cuda"
        except (RuntimeError, TypeError):
            return False
    return False


_shared: Optional[Interceptor] = None
_shared_lock = threading.Lock()
_users = 0
_holds: dict = {}  # id(listener) -> how many times it was acquired (nested guards share one)


def acquire(listener: Listener, *, user: Optional[UserCode] = None) -> Interceptor:
    """Register a listener on the process's interceptor, installing it on first use."""
    global _shared, _users
    with _shared_lock:
        if _shared is None:
            import torch

            _shared = Interceptor(user or UserCode())
            _shared.install(torch)
        elif user is not None:
            _shared.user = user
        if listener not in _shared.listeners:
            _shared.listeners.append(listener)
        _holds[id(listener)] = _holds.get(id(listener), 0) + 1
        _users += 1
        return _shared


def release(listener: Listener) -> None:
    global _shared, _users
    with _shared_lock:
        if _shared is None:
            return
        _holds[id(listener)] = _holds.get(id(listener), 1) - 1
        if _holds[id(listener)] <= 0:
            _holds.pop(id(listener), None)
            if listener in _shared.listeners:
                _shared.listeners.remove(listener)
        _users -= 1
        if _users <= 0:
            _shared.uninstall()
            _shared, _users = None, 0
