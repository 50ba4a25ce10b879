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


def _event_us(torch: Any, fn: Callable[[], None], reps: int = 5, launches: int = 10) -> float:
    """GPU time of one launch of fn: CUDA events around `launches` launches in a row, divided
    (so that a tiny kernel is not lost in the events' own overhead); median of `reps`."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(launches):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / launches)
    return float(statistics.median(times))


@dataclass
class KernelFit:
    """GPU time of the work kernel as a line in its size: us = base_us + per_element_us * (k - base_k)."""

    base_k: int
    base_us: float
    per_element_us: float

    max_k: int = 1 << 31  # a noisy fit must not ask for more memory than the probe's 16 times

    def elements_for(self, target_us: float) -> int:
        if target_us <= self.base_us:  # below the fitted range: scale down from the base size
            return max(1, int(self.base_k * target_us / max(self.base_us, 1e-9)))
        return min(self.max_k, max(1, int((target_us - self.base_us) / self.per_element_us) + self.base_k))


def fit_kernel(torch: Any, device: str = "cuda", probe: int = 1 << 27) -> KernelFit:
    """Time the work kernel at two sizes (it is memory-bound: linear once its buffers are well
    past the L2 cache, 50-60 MB on Hopper; the default sizes are 128 MB and 512 MB a buffer)."""
    small, large = probe // 4, probe
    src = torch.rand(large, device=device)
    dst = torch.empty_like(src)
    t_small = _event_us(torch, lambda: _kernel(torch, src, dst, small))
    t_large = _event_us(torch, lambda: _kernel(torch, src, dst, large))
    return KernelFit(small, t_small, max((t_large - t_small) / (large - small), 1e-9), max_k=16 * probe)


def gpu_work(torch: Any, k: int, device: str = "cuda", src: Any = None, dst: Any = None) -> GpuWork:
    """The work kernel over k elements (on the given buffers, or new ones), its time measured."""
    if k <= 0:
        return GpuWork(0, 0.0)
    if src is None:
        src = torch.rand(k, device=device)
        dst = torch.empty_like(src)
    return GpuWork(k, _event_us(torch, lambda: _kernel(torch, src, dst, k)), src, dst)


def calibrate_gpu_work(torch: Any, target_us: float, device: str = "cuda", probe: int = 1 << 27) -> GpuWork:
    """An elementwise kernel that takes about `target_us` on this GPU, and its measured time."""
    if target_us <= 0:
        return GpuWork(0, 0.0)
    return gpu_work(torch, fit_kernel(torch, device, probe).elements_for(target_us), device)


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
