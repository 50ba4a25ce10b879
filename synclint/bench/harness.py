"""Run benchmark pairs: correctness anywhere, timing / syncs / memory on CUDA.

How the cost of a sync is measured (see docs/benchmarks.md for the prose):

* Each side runs in a steady-state loop of N back-to-back calls with one
  `torch.cuda.synchronize()` at the end; N is chosen so one loop takes about
  `target_ms`. Before the loop about `background_us` of GPU work (`torch.cuda._sleep`)
  is queued, so the first sync inside the flagged side has a queue to drain, as in a
  real pipeline. Per-call time = max(wall - background, CPU enqueue time) / N: the loop
  cannot be faster than the GPU work nor than the host's launches.
* CUDA events around the loop (the start event fires when the background ends) give
  the GPU timeline per call; idle gaps caused by syncs are part of it.
* Warm-up calls first, `repeat` timed loops, median; the whole run is done `passes`
  times (pass 2 after every pair had pass 1) and the spread between passes and within
  them decides whether a speedup is measurable.
* Syncs: one call under `torch.cuda.set_sync_debug_mode("warn")` with
  `warnings.simplefilter("always")` (warn mode is deduplicated per line otherwise).
  Pairs whose sync the debug mode cannot see (`debug_mode_sees=False`) get `null`.
* Peak memory: `torch.cuda.max_memory_allocated()` above the allocation before one call.

torch is imported by the caller and passed in; this module never imports it at load time.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import platform
import socket
import statistics
import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from synclint.bench.compare import same_result
from synclint.bench.pairs import SIDES, Pair, PairError, build_side

SYNC_WARNING = "called a synchronizing CUDA operation"
MIN_SPREAD = 0.03  # a speedup within 3% is never called a gain, however quiet the run
MEM_MIN_FRACTION = 0.05  # memory "saved" means at least 5% ...
MEM_MIN_BYTES = 1 << 20  # ... and at least 1 MiB less peak


@dataclass
class Options:
    repeat: int = 7
    passes: int = 2
    warmup: int = 5
    target_ms: float = 25.0
    background_us: float = 1000.0
    min_calls: int = 3
    max_calls: int = 2000
    seed: int = 0


# ---------------------------------------------------------------- environment


def env_meta(torch: Any, device: str, opts: Options, cuda: Optional[bool] = None) -> Dict[str, Any]:
    import synclint

    cuda = device.startswith("cuda") if cuda is None else cuda
    gpu = torch.cuda.get_device_name(torch.cuda.current_device()) if cuda else None
    return {
        "gpu": gpu,
        "torch": torch.__version__,
        "cuda": torch.version.cuda if cuda else None,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "synclint": synclint.__version__,
        "device": device,
        "timed": cuda,
        "repeats": opts.repeat if cuda else 0,
        "passes": opts.passes if cuda else 1,
        "warmup": opts.warmup,
        "target_ms": opts.target_ms,
        "background_us": None,  # filled with the measured value on CUDA
        "method": (
            "steady-state loop of N calls per side after ~background_us of queued GPU work "
            "(torch.cuda._sleep), one synchronize at the end; per-call = max(wall - background, "
            "CPU enqueue) / N; median of `repeats` loops after `warmup` calls, in each of `passes` "
            "passes; gpu_us = CUDA-event time of the loop; syncs = warnings under "
            "set_sync_debug_mode('warn') with simplefilter('always') for one call; "
            "peak_mem = max_memory_allocated above the pre-call allocation for one call"
            if cuda
            else "correctness only: both sides run once on the CPU and their results are compared"
        ),
    }


@contextlib.contextmanager
def cpu_shims(torch: Any) -> Iterator[List[str]]:
    """On a machine without CUDA, make CUDA-only calls harmless so correctness can be checked.

    `pin_memory` becomes a no-op, `torch.cuda.synchronize` does nothing, `Event`/`Stream`
    are inert stand-ins. Yields the list of what was shimmed.
    """
    if torch.cuda.is_available():
        yield []
        return
    saved: List[tuple] = []

    def patch(obj: Any, name: str, value: Any) -> None:
        saved.append((obj, name, getattr(obj, name, None), hasattr(obj, name)))
        setattr(obj, name, value)

    class _Inert:
        def __init__(self, *a: Any, **k: Any) -> None:
            pass

        def record(self, *a: Any, **k: Any) -> None:
            return None

        def synchronize(self) -> None:
            return None

        def query(self) -> bool:
            return True

        def wait(self, *a: Any, **k: Any) -> None:
            return None

        def wait_event(self, *a: Any, **k: Any) -> None:
            return None

        def wait_stream(self, *a: Any, **k: Any) -> None:
            return None

        def record_event(self, *a: Any, **k: Any) -> "_Inert":
            return _Inert()

        def elapsed_time(self, *a: Any, **k: Any) -> float:
            return 0.0

        def __enter__(self) -> "_Inert":
            return self

        def __exit__(self, *a: Any) -> None:
            return None

    patch(torch.Tensor, "pin_memory", lambda self, *a, **k: self)
    patch(torch.cuda, "synchronize", lambda *a, **k: None)
    patch(torch.cuda, "Event", _Inert)
    patch(torch.cuda, "Stream", _Inert)
    patch(torch.cuda, "current_stream", lambda *a, **k: _Inert())
    patch(torch.cuda, "default_stream", lambda *a, **k: _Inert())
    patch(torch.cuda, "stream", lambda *a, **k: contextlib.nullcontext())

    def drop_pin(fn: Callable) -> Callable:
        def wrapper(*a: Any, **k: Any) -> Any:
            k.pop("pin_memory", None)
            return fn(*a, **k)

        return wrapper

    for name in ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "tensor",
                 "empty_like", "zeros_like", "ones_like", "full_like", "empty_strided", "as_tensor"):
        if hasattr(torch, name):
            patch(torch, name, drop_pin(getattr(torch, name)))
    try:
        yield ["pin_memory (no-op)", "torch.cuda.synchronize/Event/Stream (inert)"]
    finally:
        for obj, name, old, had in reversed(saved):
            if had:
                setattr(obj, name, old)
            else:
                delattr(obj, name)


# ---------------------------------------------------------------- measurements


@dataclass
class Background:
    cycles: int
    seconds: float


def calibrate_background(torch: Any, target_us: float) -> Background:
    """`torch.cuda._sleep` cycles for about `target_us` of GPU time, and the measured time."""
    if target_us <= 0:
        return Background(0, 0.0)

    def timed(cycles: int) -> float:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        torch.cuda._sleep(cycles)
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 1e3

    timed(1000)
    probe = 1_000_000
    per_cycle = statistics.median(timed(probe) for _ in range(3)) / probe
    cycles = max(1, int(target_us * 1e-6 / max(per_cycle, 1e-12)))
    return Background(cycles, statistics.median(timed(cycles) for _ in range(5)))


def count_syncs(torch: Any, call: Callable[[], Any]) -> int:
    """Syncs one call makes, as `set_sync_debug_mode("warn")` sees them."""
    torch.cuda.synchronize()
    out = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            out = call()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    del out
    torch.cuda.synchronize()
    return sum(SYNC_WARNING in str(w.message) for w in caught)


def peak_memory(torch: Any, call: Callable[[], Any]) -> int:
    """Bytes allocated at the peak of one call, above what was allocated before it."""
    torch.cuda.synchronize()
    gc.collect()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return int(peak)


def _loop(torch: Any, call: Callable[[], Any], n: int, bg: Background) -> Tuple[float, float]:
    """One timed loop of n calls after the queued background: (per-call wall us, per-call GPU us)."""
    perf = time.perf_counter
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = perf()
    if bg.cycles:
        torch.cuda._sleep(bg.cycles)
    start.record()
    for _ in range(n):
        call()
    end.record()
    t_enq = perf()
    torch.cuda.synchronize()
    t1 = perf()
    wall = max(t1 - t0 - bg.seconds, t_enq - t0)
    return wall / n * 1e6, start.elapsed_time(end) * 1e3 / n


def calls_per_loop(torch: Any, call: Callable[[], Any], opts: Options) -> int:
    """Warm up, then pick N so that one loop takes about target_ms."""
    for _ in range(max(1, opts.warmup)):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    single = max(time.perf_counter() - t0, 1e-7)
    return int(min(opts.max_calls, max(opts.min_calls, (opts.target_ms / 1e3) / single)))


def time_pair(torch: Any, calls: Dict[str, Callable[[], Any]], opts: Options, bg: Background) -> Dict[str, Any]:
    """Both sides, their timed loops interleaved (flagged, fixed, flagged, ...) so that drift
    of clocks or host load hits both alike; per-repeat ratios measure the noise of the speedup."""
    n = {side: calls_per_loop(torch, calls[side], opts) for side in SIDES}
    out: Dict[str, Any] = {"calls": n, "wall_us": {s: [] for s in SIDES}, "gpu_us": {s: [] for s in SIDES}}
    for _ in range(max(1, opts.repeat)):
        for side in SIDES:
            wall, gpu = _loop(torch, calls[side], n[side], bg)
            out["wall_us"][side].append(wall)
            out["gpu_us"][side].append(gpu)
    return out


# ---------------------------------------------------------------- one pair


def _short_error(e: BaseException) -> str:
    if isinstance(e, PairError):
        return str(e)
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith("<bench")]
    where = f" (in {frames[-1].filename[1:-1]}, line {frames[-1].lineno})" if frames else ""
    return f"{type(e).__name__}: {e}{where}".strip()[:500]


def new_record(pair: Pair, sizes: Dict[str, int]) -> Dict[str, Any]:
    b = pair.bench
    return {
        "code": pair.code,
        "name": pair.name,
        "sizes": dict(sizes),
        "expect": b.expect,
        "condition": b.condition,
        "compare": b.compare,
        "debug_mode_sees": b.debug_mode_sees,
        "same_result": None,
        "compare_note": None,
        "flagged_us": None,
        "fixed_us": None,
        "flagged_gpu_us": None,
        "fixed_gpu_us": None,
        "calls": None,
        "flagged_us_by_pass": [],
        "fixed_us_by_pass": [],
        "speedups_by_pass": [],
        "spread": None,
        "speedup": None,
        "syncs_flagged": None,
        "syncs_fixed": None,
        "syncs_note": None,
        "peak_mem_flagged": None,
        "peak_mem_fixed": None,
        "verdict": None,
        "error": None,
        "notes": [],
    }


def _build_both(pair: Pair, torch: Any, device: str, sizes: Dict[str, int], seed: int):
    calls, outs, namespaces = {}, {}, {}
    for side in SIDES:
        torch.manual_seed(seed)
        call, ns = build_side(pair.bench, side, torch, device, sizes)
        torch.manual_seed(seed)
        outs[side] = call()
        calls[side], namespaces[side] = call, ns
    return calls, outs, namespaces


def first_pass(pair: Pair, torch: Any, device: str, opts: Options, bg: Optional[Background],
               sizes: Optional[Dict[str, int]] = None, cuda: Optional[bool] = None) -> Dict[str, Any]:
    """Correctness, and on CUDA syncs, memory and the first timing pass."""
    sizes = dict(pair.bench.sizes if sizes is None else sizes)
    rec = new_record(pair, sizes)
    rec["_raw"] = {"flagged": [], "fixed": [], "flagged_gpu": [], "fixed_gpu": []}
    cuda = device.startswith("cuda") if cuda is None else cuda
    calls = outs = namespaces = None
    try:
        calls, outs, namespaces = _build_both(pair, torch, device, sizes, opts.seed)
        if cuda:
            torch.cuda.synchronize()
        same, why = same_result(torch, outs["flagged"], outs["fixed"], pair.bench.compare)
        rec["same_result"] = same
        rec["compare_note"] = why if same is not True else None
        if same is None and pair.bench.condition:
            rec["compare_note"] = f"{why}; the fix is equivalent when {pair.bench.condition}"
        outs = None
        if not cuda:
            return rec
        if pair.bench.debug_mode_sees:
            rec["syncs_flagged"] = count_syncs(torch, calls["flagged"])
            rec["syncs_fixed"] = count_syncs(torch, calls["fixed"])
        else:
            rec["syncs_note"] = (
                "set_sync_debug_mode cannot see this sync (catalogue section 1: device/event "
                "synchronize, pageable non_blocking copies); not counted"
            )
        assert bg is not None
        timing = time_pair(torch, calls, opts, bg)
        rec["calls"] = timing["calls"]
        for side in SIDES:
            rec["_raw"][side].append(timing["wall_us"][side])
            rec["_raw"][side + "_gpu"].append(timing["gpu_us"][side])
        rec["peak_mem_flagged"] = peak_memory(torch, calls["flagged"])
        rec["peak_mem_fixed"] = peak_memory(torch, calls["fixed"])
    except Exception as e:  # noqa: BLE001 - a broken pair is a result, not a crash
        rec["error"] = _short_error(e)
    finally:
        calls = outs = namespaces = None
        _release(torch, cuda)
    return rec


def later_pass(pair: Pair, rec: Dict[str, Any], torch: Any, device: str, opts: Options, bg: Background) -> None:
    """Another timing pass on fresh inputs, appended to the record's raw samples."""
    if rec.get("error") or rec.get("same_result") is False:
        return
    calls = None
    try:
        calls, _, _ = _build_both(pair, torch, device, rec["sizes"], opts.seed)
        t = time_pair(torch, calls, opts, bg)
        for side in SIDES:
            rec["_raw"][side].append(t["wall_us"][side])
            rec["_raw"][side + "_gpu"].append(t["gpu_us"][side])
    except Exception as e:  # noqa: BLE001
        rec["error"] = "later pass: " + _short_error(e)
    finally:
        calls = None
        _release(torch, True)


def _release(torch: Any, cuda: bool) -> None:
    gc.collect()
    if cuda:
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - a poisoned context shows up in the next pair
            pass


# ---------------------------------------------------------------- summary and verdict


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def _iqr_rel(xs: Sequence[float]) -> float:
    if len(xs) < 4:
        return (max(xs) - min(xs)) / max(min(xs), 1e-12) if len(xs) > 1 else 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / max(q[1], 1e-12)


def summarize(rec: Dict[str, Any], timed: bool) -> Dict[str, Any]:
    """Fold the raw samples into medians, spread, speedup and a verdict."""
    raw = rec.pop("_raw", None)
    if rec.get("error"):
        rec["verdict"] = "error"
        return rec
    if rec.get("same_result") is False:
        rec["verdict"] = "failed"
        return rec
    if not timed or not raw or not raw["flagged"]:
        rec["verdict"] = "not timed"
        return rec
    noise = {}
    for side in SIDES:
        passes = raw[side]
        rec[f"{side}_us"] = round(_median([x for p in passes for x in p]), 3)
        rec[f"{side}_gpu_us"] = round(_median([x for p in raw[side + "_gpu"] for x in p]), 3)
        rec[f"{side}_us_by_pass"] = [round(_median(p), 3) for p in passes]
        noise[side] = round(_median([_iqr_rel(p) for p in passes]), 4)
    by_pass = [_median(f) / max(_median(x), 1e-12) for f, x in zip(raw["flagged"], raw["fixed"])]
    rec["speedups_by_pass"] = [round(v, 4) for v in by_pass]
    rec["speedup"] = round(rec["flagged_us"] / max(rec["fixed_us"], 1e-12), 4)
    # The spread of the speedup: how far the passes disagree, and how much the ratio of
    # interleaved flagged/fixed loops moves inside a pass (drift common to both cancels).
    between = (max(by_pass) - min(by_pass)) / max(min(by_pass), 1e-12) if len(by_pass) > 1 else 0.0
    within = _median([_iqr_rel([f / max(x, 1e-12) for f, x in zip(fp, xp)]) for fp, xp in zip(raw["flagged"], raw["fixed"])])
    rec["spread"] = round(max(between, within), 4)
    rec["noise"] = noise
    rec["verdict"] = verdict(rec)
    return rec


def verdict(rec: Dict[str, Any]) -> str:
    s = rec["speedup"]
    margin = max(rec.get("spread") or 0.0, MIN_SPREAD)
    by_pass = rec.get("speedups_by_pass") or [s]
    if s > 1 + margin and min(by_pass) > 1:
        return "faster"
    pf, px = rec.get("peak_mem_flagged"), rec.get("peak_mem_fixed")
    if pf is not None and px is not None and pf - px >= max(MEM_MIN_BYTES, MEM_MIN_FRACTION * pf):
        return "memory"
    sf, sx = rec.get("syncs_flagged"), rec.get("syncs_fixed")
    if rec.get("expect") == "syncs" and sf is not None and sx is not None and sx < sf:
        return "fewer syncs"
    if s < 1 / (1 + margin) and max(by_pass) < 1:
        return "slower"
    return "no measurable gain"


# ---------------------------------------------------------------- the run


def run(
    pairs: Sequence[Pair],
    device: str,
    opts: Optional[Options] = None,
    progress: Optional[Callable[[str], None]] = None,
    sizes_override: Optional[Dict[str, int]] = None,
    torch_module: Any = None,
    timed: Optional[bool] = None,
) -> Dict[str, Any]:
    """Run pairs on `device` ("cuda", "cuda:1", "cpu"); the results document.

    `torch_module` and `timed` exist for tests (a stand-in for torch.cuda on a CPU machine).
    """
    if torch_module is None:
        import torch
    else:
        torch = torch_module

    opts = opts or Options()
    say = progress or (lambda msg: None)
    cuda = device.startswith("cuda") if timed is None else timed
    bg: Optional[Background] = None
    if cuda:
        index = torch.device(device).index
        if index is not None:
            torch.cuda.set_device(index)
    meta = env_meta(torch, device, opts, cuda)
    meta["options"] = asdict(opts)
    if cuda:
        bg = calibrate_background(torch, opts.background_us)
        meta["background_us"] = round(bg.seconds * 1e6, 1)
    records: List[Dict[str, Any]] = []
    shims = contextlib.nullcontext([]) if cuda else cpu_shims(torch)
    with shims as shimmed:
        if shimmed:
            meta["cpu_shims"] = shimmed
        for i, pair in enumerate(pairs, 1):
            sizes = None
            if sizes_override:
                sizes = {k: sizes_override.get(k, v) for k, v in pair.bench.sizes.items()}
            say(f"[{i}/{len(pairs)}] {pair.label}" + (" (pass 1)" if cuda and opts.passes > 1 else ""))
            records.append(first_pass(pair, torch, device, opts, bg, sizes, cuda))
        if cuda:
            for p in range(2, opts.passes + 1):
                for i, (pair, rec) in enumerate(zip(pairs, records), 1):
                    say(f"[{i}/{len(pairs)}] {pair.label} (pass {p})")
                    later_pass(pair, rec, torch, device, opts, bg)  # type: ignore[arg-type]
    results = [summarize(r, cuda) for r in records]
    return {"meta": meta, "results": results}


def failed(results: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Results that make the run fail: sides differ, or the pair could not run."""
    return [r for r in results if r.get("error") or r.get("same_result") is False]
