#!/usr/bin/env python3
"""Is a sync's host time longer than the CUDA call's when other Python threads run? (issue 39)

`synclint trace --cross-check` reads more blocked time than the profiler's blocking CUDA
calls on programs whose loaders run Python threads (makemore +74%, DLA +43%), and agrees
where waits are long. The reading to test: a sync releases the GIL for its wait, and the
main thread then waits to get it back from another thread, time that is inside the
Python call and outside every CUDA runtime call.

Per condition, N times: a GPU sleep of about --wait-us, then `torch.cuda.synchronize()`
timed by perf_counter around the call, with the profiler (CUDA activity) recording
`cudaDeviceSynchronize`; the same for `.item()` (`cudaMemcpyAsync` + `cudaStreamSynchronize`).
Conditions: alone; a Python thread spinning; the same with a 0.1 ms switch interval; a
thread waking every 0.1 ms for a little Python work (a pin-memory thread's shape); a real
DataLoader with 2 workers and pin_memory being iterated by the main loop.

    python scripts/gil_wait.py --out OUT        # on a GPU: prints a table, writes OUT/gil-wait.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

CONDITIONS = ("alone", "spin", "spin-0.1ms", "waker", "loader")


def _cycles_per_us(torch: Any) -> float:
    torch.cuda._sleep(1_000_000)  # warm the clocks
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    torch.cuda._sleep(2_000_000)
    b.record()
    b.synchronize()
    return 2_000_000 / (a.elapsed_time(b) * 1e3)


def _background(condition: str, stop: threading.Event) -> Optional[threading.Thread]:
    if condition.startswith("spin"):
        def body() -> None:
            x = 0
            while not stop.is_set():
                x += 1
    elif condition == "waker":
        def body() -> None:
            while not stop.is_set():
                time.sleep(1e-4)
                sum(range(300))
    else:
        return None
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t


def _loader(torch: Any) -> Any:
    from torch.utils.data import DataLoader, TensorDataset

    ds = TensorDataset(torch.randn(100_000, 64), torch.randint(0, 10, (100_000,)))
    return iter(DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, pin_memory=True,
                           persistent_workers=True))


def one(torch: Any, condition: str, sync: str, n: int, cycles: int) -> Dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    stop = threading.Event()
    old = sys.getswitchinterval()
    if condition == "spin-0.1ms":
        sys.setswitchinterval(1e-4)
    thread = _background(condition, stop)
    it = _loader(torch) if condition == "loader" else None
    x = torch.ones(1, device="cuda")
    act: Callable[[], Any] = torch.cuda.synchronize if sync == "synchronize" else x.item
    for _ in range(20):  # warm-up: workers started, first batches pinned
        if it is not None:
            next(it)
        torch.cuda._sleep(cycles)
        act()
    timed: List[float] = []
    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.start()
    for _ in range(n):
        if it is not None:
            next(it)
        torch.cuda._sleep(cycles)
        t = time.perf_counter()
        act()
        timed.append(time.perf_counter() - t)
    prof.stop()
    stop.set()
    if thread is not None:
        thread.join()
    sys.setswitchinterval(old)
    calls: Dict[str, List[float]] = {}
    for e in prof.events():
        if e.name in ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaMemcpyAsync"):
            calls.setdefault(e.name, []).append(e.time_range.elapsed_us())
    prof_total_us = sum(sum(v) for v in calls.values())
    timed_us = [t * 1e6 for t in timed]
    return {"condition": condition, "sync": sync, "n": n,
            "timed_us_median": round(statistics.median(timed_us), 2),
            "timed_us_p90": round(sorted(timed_us)[int(0.9 * n)], 2),
            "timed_us_total": round(sum(timed_us), 1),
            "profiler_us_total": round(prof_total_us, 1),
            "profiler_calls": {k: [len(v), round(statistics.median(v), 2)] for k, v in calls.items()},
            "excess_pct": round(100 * (sum(timed_us) - prof_total_us) / prof_total_us, 1) if prof_total_us else None}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--wait-us", type=float, default=50.0)
    a = ap.parse_args(argv)
    import torch

    cycles = int(a.wait_us * _cycles_per_us(torch))
    rows = [one(torch, c, s, a.n, cycles) for c in CONDITIONS for s in ("synchronize", "item")]
    doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": torch.cuda.get_device_name(0),
           "torch": torch.__version__, "python": sys.version.split()[0], "wait_us": a.wait_us, "cycles": cycles,
           "rows": rows}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "gil-wait.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{doc['gpu']}, torch {doc['torch']}, GPU wait ~{a.wait_us} us, n={a.n}")
    print(f"{'condition':12s} {'sync':12s} {'timed med us':>12s} {'p90':>8s} {'timed total':>12s} {'profiler total':>15s} {'excess':>8s}")
    for r in rows:
        print(f"{r['condition']:12s} {r['sync']:12s} {r['timed_us_median']:12.1f} {r['timed_us_p90']:8.1f} "
              f"{r['timed_us_total']:12.0f} {r['profiler_us_total']:15.0f} {r['excess_pct']!s:>7}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
