"""The interception: every host-GPU sync of the process, as it happens, on its own thread.

Choice of mechanism (torch 2.11 on the device, 2.13 here; read in their sources):

* `torch.cuda._gpu_trace` callbacks (after `torch._C._activate_gpu_trace()`) are the
  spine. c10 fires the stream-synchronization callback from the same two hooks the sync
  debug mode uses (`memcpy_and_sync`, `stream_synchronize` in c10/cuda/CUDAFunctions.h), so
  it sees every sync the debug mode sees, and it also fires for what the debug mode is
  blind to: `torch.cuda.synchronize()` (device callback) and `Event.synchronize()` (event
  callback). A callback runs on the syncing thread, before the blocking call, with the
  Python stack of the line that caused it: that gives the line, the thread and a place to
  measure the wait (timing.py). It counts every occurrence (the debug mode's warnings are
  deduplicated per line unless the filter says "always").
* The debug mode ("warn", filter "always") runs beside it as a cross-check only: each site
  carries the debug mode's own count, so "the counts equal the debug mode's for the lines
  it sees" is checked in every trace, not assumed.
* Pageable `non_blocking` host-to-device copies block inside `cudaMemcpyAsync` with no hook
  at all, so `Tensor.to`, `Tensor.cuda` and `Tensor.copy_` are wrapped: only calls with
  `non_blocking=True` from an unpinned CPU tensor to a CUDA device are timed and reported.
* The profiler was rejected as the recording mechanism: its runtime events
  (`cudaStreamSynchronize`, ...) carry durations but reach Python frames only with
  `with_stack=True`, cost far more than a callback per sync, and grow a buffer for the whole
  run. `synclint trace --cross-check` runs it beside the callbacks to check the times.

A callback's exceptions are swallowed by torch's CallbackRegistry, so a listener that wants
to stop the program (the guard) returns the exception and this module arms it for the
syncing thread (raising.py): a wrapper of the call that synced raises it on the syncing
line as that call returns (`raise_at_the_line`), else the guard raises it when its block
ends.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from synclint.trace.frames import Attribution, Place, UserCode

DEBUG_MODE_MESSAGE = "called a synchronizing CUDA operation"
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
    """Receives events. `wants_time`: the interceptor measures the wait (timing.py)."""

    wants_time = False

    def on_sync(self, event: SyncEvent) -> Optional[BaseException]:
        return None

    def on_debug_mode(self, where: Optional[Place], thread: str) -> None:
        pass


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

    def __init__(self, user: UserCode) -> None:
        self.user = user
        self.listeners: List[Listener] = []
        self._local = threading.local()  # .busy: inside our own handling (no re-entry)
        self._undo: List[Callable[[], None]] = []
        self._waiter = None
        self.debug_mode = False
        self.raise_at_line = False  # raise_at_the_line() installed its wrappers
        self._torch: Any = None

    # ------------------------------------------------------------ install / remove

    def install(self, torch: Any, *, debug_mode: bool = False) -> None:
        from torch.cuda import _gpu_trace

        from synclint.trace.raising import raise_armed_after
        from synclint.trace.timing import GpuWaiter

        self._waiter = GpuWaiter(torch)
        torch._C._activate_gpu_trace()  # cannot be undone; our callbacks can
        for registry, cb in ((_gpu_trace.StreamSynchronizationCallbacks, self.on_stream_sync),
                             (_gpu_trace.DeviceSynchronizationCallbacks, self.on_device_sync),
                             (_gpu_trace.EventSynchronizationCallbacks, self.on_event_sync)):
            registry.add_callback(cb)
            self._undo.append(lambda r=registry, c=cb: r.callback_list.remove(c))
        self._wrap(torch.cuda.Event, "synchronize", self._timed_event_synchronize)
        self._wrap(torch.cuda, "synchronize", raise_armed_after)
        self._wrap(torch.cuda.Stream, "synchronize", raise_armed_after)
        self._wrap(torch.Tensor, "to", self._copy_wrapper("to"))
        self._wrap(torch.Tensor, "cuda", self._copy_wrapper("cuda"))
        self._wrap(torch.Tensor, "copy_", self._copy_wrapper("copy_"))
        self._torch = torch
        if debug_mode:
            self._install_debug_mode(torch)

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

    def _install_debug_mode(self, torch: Any) -> None:
        previous_mode = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings():  # its one-time "prototype feature" notice
            warnings.simplefilter("ignore")
            torch.cuda.set_sync_debug_mode("warn")
        warnings.filterwarnings("always", message=DEBUG_MODE_MESSAGE)
        ours = warnings.filters[0]
        # The C part of `warnings` looks `_showwarnmsg` up on each warning, and
        # `catch_warnings(record=True)` (pytest's) leaves it alone: a stable place to listen.
        original = warnings._showwarnmsg  # type: ignore[attr-defined]

        def showwarnmsg(msg: Any) -> None:
            if DEBUG_MODE_MESSAGE in str(msg.message):
                self.on_debug_warning(sys._getframe(1))
                return
            original(msg)

        warnings._showwarnmsg = showwarnmsg  # type: ignore[attr-defined]
        self.debug_mode = True

        def undo() -> None:
            warnings._showwarnmsg = original  # type: ignore[attr-defined]
            if ours in warnings.filters:
                warnings.filters.remove(ours)
                getattr(warnings, "_filters_mutated", lambda: None)()
            torch.cuda.set_sync_debug_mode(previous_mode)
            self.debug_mode = False

        self._undo.append(undo)

    # ------------------------------------------------------------ events

    def _busy(self) -> bool:
        return getattr(self._local, "busy", False)

    def _wants_time(self) -> bool:
        return self._waiter is not None and any(listener.wants_time for listener in self.listeners)

    def _dispatch(self, event: SyncEvent) -> Optional[BaseException]:
        raised = None
        for listener in list(self.listeners):
            exc = listener.on_sync(event)
            raised = raised or exc
        return raised

    def _callback(self, kind: str, frame: Any, wait: Optional[Callable[[], float]]) -> None:
        """The shared body of the torch callbacks: attribute, wait, tell the listeners and,
        if one of them says stop, arm the exception in the user's frame."""
        if self._busy() or not self.listeners:
            return
        self._local.busy = True
        try:
            where = self.user.attribute(frame)
            blocked = wait() if wait is not None and self._wants_time() else None
            exc = self._dispatch(SyncEvent(kind, where, blocked, threading.current_thread().name))
            if exc is not None:
                from synclint.trace.raising import arm

                arm(exc)
        finally:
            self._local.busy = False

    def on_stream_sync(self, stream_ptr: int) -> None:
        waiter = self._waiter
        self._callback("stream", sys._getframe(1), (lambda: waiter.stream(stream_ptr)) if waiter else None)

    def on_device_sync(self) -> None:
        waiter = self._waiter
        self._callback("device", sys._getframe(1), waiter.device if waiter else None)

    def on_event_sync(self, event_handle: int) -> None:
        if getattr(self._local, "event_wrapper", False):
            # Inside our Event.synchronize wrapper: it times the call and reports after it.
            self._local.event_seen = True
            return
        self._callback("event", sys._getframe(1), None)

    def on_debug_warning(self, frame: Any) -> None:
        if self._busy() or not self.listeners:
            return
        where = self.user.innermost(frame)
        thread = threading.current_thread().name
        for listener in list(self.listeners):
            listener.on_debug_mode(where, thread)

    # ------------------------------------------------------------ wrappers

    def _after_wrapped_call(self, kind: str, blocked: float, frame: Any) -> None:
        """Report a sync that a Python wrapper timed; raise here if a listener says stop."""
        self._local.busy = True
        try:
            where = self.user.attribute(frame)
            exc = self._dispatch(SyncEvent(kind, where, blocked, threading.current_thread().name))
        finally:
            self._local.busy = False
        if exc is not None:
            raise exc

    def _timed_event_synchronize(self, original: Callable) -> Callable:
        interceptor = self

        def synchronize(event: Any) -> None:
            local = interceptor._local
            if interceptor._busy() or not interceptor.listeners:
                return original(event)
            local.event_wrapper, local.event_seen = True, False
            t0 = time.perf_counter()
            try:
                original(event)
            finally:
                local.event_wrapper = False
            if local.event_seen:
                interceptor._after_wrapped_call("event", time.perf_counter() - t0, sys._getframe(1))

        synchronize.__doc__ = original.__doc__
        return synchronize

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


def acquire(listener: Listener, *, user: Optional[UserCode] = None, debug_mode: bool = False) -> Interceptor:
    """Register a listener on the process's interceptor, installing it on first use."""
    global _shared, _users
    with _shared_lock:
        if _shared is None:
            import torch

            _shared = Interceptor(user or UserCode())
            _shared.install(torch, debug_mode=debug_mode)
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
