"""How long a sync blocks the host, measured inside torch's own sync callback.

torch calls the `torch.cuda._gpu_trace` callbacks *before* the blocking CUDA call
(`memcpy_and_sync` and `stream_synchronize` in c10/cuda/CUDAFunctions.h, device and event
synchronize likewise), so a callback cannot time the call that follows it. Instead the
callback does the waiting itself: it records an event on the stream that is about to be
synchronized and waits for it (or synchronizes the device). That wait is exactly the time
the host would have blocked on queued GPU work; the real sync that follows finds the
queue drained and returns at once. A stream whose queue is already empty (a query says so)
is not waited on. What is not counted is the copy that
`memcpy_and_sync` issues after the hook (transfer time, not waiting); the profiler check of
`synclint trace --cross-check` shows how much that is.

Our own event wait goes through `cudaEventSynchronize`, which the debug mode does not
report, so the wait adds no debug-mode warning of its own.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, Optional


class GpuWaiter:
    """Waits for the queued work that a sync is about to wait for; returns seconds."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._local = threading.local()  # per thread: stream pointer -> (stream, event)

    def _stream_and_event(self, ptr: int):
        cache: Optional[Dict[int, Any]] = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = {}
        hit = cache.get(ptr)
        if hit is None:
            cuda = self._torch.cuda
            cur = cuda.current_stream()
            # The legacy default stream has pointer 0: the current stream when none was set.
            stream = cur if cur.cuda_stream == ptr else cuda.ExternalStream(ptr)
            hit = cache[ptr] = (stream, cuda.Event())
        return hit

    def stream(self, ptr: int) -> float:
        stream, event = self._stream_and_event(ptr)
        t0 = time.perf_counter()
        # Most syncs after the first of a step find the queue empty: a query (no wait, not
        # a sync) answers those without the second round trip of an event wait.
        if not stream.query():
            event.record(stream)
            event.synchronize()
        return time.perf_counter() - t0

    def device(self) -> float:
        t0 = time.perf_counter()
        self._torch._C._cuda_synchronize()
        return time.perf_counter() - t0
