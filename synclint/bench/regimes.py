"""The two loops a pair is timed in, and the model of a training step behind the second.

* **back-to-back**: N calls in a row after ~1 ms of queued GPU work, one synchronize at
  the end (what the harness always did). It shows what the pattern costs in a loop that
  has nothing else to do: launch-bound or GPU-bound, with no host work to hide.
* **host-work**: N *steps*; each step queues GPU work (one elementwise kernel sized to take
  `gpu_us`), calls the pair's side, then does `host_us` of host work (a busy-wait, holding
  the GIL like Python-level collation, logging or bookkeeping). Without a sync the host's
  work overlaps the GPU's and a step costs about max(host, GPU); a sync makes the host
  wait for the queue to drain and leaves the GPU idle during the host's work, so the
  step costs about host + GPU. Per sync the cost is about min(host, GPU): the overlap lost.

GPU work is set by kernel size, not kernel count: many small kernels would make the
loop launch-bound (host work in disguise). The kernel is `torch.mul(src[:k], c, out=dst[:k])`,
memory-bound, so its time is linear in k; `calibrate_gpu_work` fits that line on the
device and picks k, and the GPU time each step really got is measured with CUDA events.

torch is passed in; nothing here imports it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

BACK_TO_BACK = "back-to-back"
HOST_WORK = "host-work"
REGIMES = (BACK_TO_BACK, HOST_WORK)


def busy_wait(us: float, clock: Callable[[], float] = time.perf_counter) -> None:
    """Hold the host (and the GIL) for `us` microseconds, as Python-level work would."""
    if us <= 0:
        return
    end = clock() + us * 1e-6
    while clock() < end:
        pass


@dataclass
class GpuWork:
    """One elementwise kernel over `elements` values per step; `us`: its measured GPU time."""

    elements: int
    us: float
    src: Any = None
    dst: Any = None

    def release(self) -> None:
        self.src = self.dst = None


def _kernel(torch: Any, src: Any, dst: Any, k: int) -> None:
    torch.mul(src[:k], 1.0001, out=dst[:k])


def _event_us(torch: Any, fn: Callable[[], None], reps: int = 5) -> float:
    """Median GPU time of fn (one launch), with CUDA events, after one warm-up."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return float(statistics.median(times))


def calibrate_gpu_work(torch: Any, target_us: float, device: str = "cuda", max_elements: Optional[int] = None) -> GpuWork:
    """An elementwise kernel that takes about `target_us` on this GPU, and its measured time.

    Fits time = a + b * k from two sizes (the kernel is memory-bound, so linear above a few
    microseconds), sizes the buffers for target_us, then measures the chosen size."""
    if target_us <= 0:
        return GpuWork(0, 0.0)
    probe = 1 << 24
    small, large = probe // 8, probe
    src = torch.rand(large, device=device)
    dst = torch.empty_like(src)
    t_small = _event_us(torch, lambda: _kernel(torch, src, dst, small))
    t_large = _event_us(torch, lambda: _kernel(torch, src, dst, large))
    slope = max((t_large - t_small) / (large - small), 1e-9)
    k = max(1, int((target_us - t_small) / slope) + small)
    if target_us <= t_small:
        k = max(1, int(small * target_us / max(t_small, 1e-9)))
    if max_elements is not None:
        k = min(k, max_elements)
    del src, dst
    src = torch.rand(k, device=device)
    dst = torch.empty_like(src)
    us = _event_us(torch, lambda: _kernel(torch, src, dst, k))
    return GpuWork(k, us, src, dst)


def step_loop(
    torch: Any, call: Callable[[], Any], n: int, work: GpuWork, host_us: float,
    clock: Callable[[], float] = time.perf_counter,
) -> Tuple[float, float]:
    """n steps of (GPU work, call, host work), one synchronize at the end:
    (per-step wall us, per-step GPU-timeline us)."""
    src, dst, k = work.src, work.dst, work.elements
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = clock()
    start.record()
    for _ in range(n):
        if k:
            torch.mul(src[:k], 1.0001, out=dst[:k])
        call()
        busy_wait(host_us, clock)
    end.record()
    torch.cuda.synchronize()
    t1 = clock()
    return (t1 - t0) / n * 1e6, start.elapsed_time(end) * 1e3 / n
