"""`synclint bench --compiled`: each SYN6xx pair eagerly and under `torch.compile`, with the
graph break and fixed, and under `mode="reduce-overhead"` (CUDA graphs).

Per pair (synclint/bench/compiled_pairs.py) and variant (mode x side):

* **graphs**: how many graphs Dynamo compiled for the variant, from `torch._dynamo`'s own
  counter (`counters["stats"]["unique_graphs"]`, read before and after the variant's
  warm-up calls, which run one variant at a time); the CPU tests check the counter against
  a counting backend. A graph compiled while the steps are timed (a recompile) is counted in
  `meta.graphs_while_timing`, which should be 0.
* **breaks**: graphs - 1, as `torch._dynamo.explain` counts them (it is not called here:
  it resets Dynamo, dropping every variant compiled before), with Dynamo's reasons, the
  first line of each new key of its `graph_break` and `unimplemented` counters
  (`graph_break` alone misses a branch on a tensor).
* **compile_s**: wall time of the first call (Dynamo, AOTAutograd, inductor and Triton,
  with inductor's FX graph cache off, and Triton's kernel cache in a directory of the run's
  own, so a kernel an earlier variant compiled is not compiled again); **warmup_s**: the
  next calls (`warm_calls` - 1), where CUDA graphs are recorded. Both apart from the step.
* **step_us**: the steady state, wall time per step of loops of N steps with one
  synchronize after the loop (N chosen per variant so a loop takes about `target_ms`);
  `repeat` loops per pass, the sides of a mode interleaved, `passes` passes over all pairs.
* **syncs**: warnings of `torch.cuda.set_sync_debug_mode("warn")` in one steady step.
* **cudagraph_skips / cudagraph_partitions**: inductor's counters over the variant's
  compile (reduce-overhead only).

Per mode, the fix's speedup over the pattern (and over the captured pattern) is the median
of the interleaved loop ratios with a 95% two-level bootstrap interval and the harness's
verdict rule (synclint/bench/stats.py): the same method as `synclint bench`, inside one run.

torch is passed in by the caller; nothing here imports it at load time.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import os
import platform
import socket
import statistics
import tempfile
import time
import types
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from synclint.bench import stats
from synclint.bench.compiled_pairs import SIZES, CompiledPair

MODES = ("eager", "compile", "reduce-overhead")
SIDES = ("pattern", "captured", "fixed")  # the order of the interleaved loops
SCHEMA = "synclint-bench-compiled/1"
SYNC_WARNING = "called a synchronizing CUDA operation"
CLOSE = {"rtol": 1e-4, "atol": 1e-5}  # inductor fuses and reorders float sums


@dataclass
class Options:
    repeat: int = 3  # timed loops per variant and pass
    passes: int = 7  # as `synclint bench`: one odd pass cannot carry the interval
    target_ms: float = 20.0  # one loop's length
    warm_calls: int = 3  # calls before timing: compile, then CUDA graph warm-up and recording
    min_calls: int = 5
    max_calls: int = 2000
    modes: Tuple[str, ...] = MODES
    backend: Any = "inductor"  # "eager" on the CPU: Dynamo's graphs without code generation (tests: a counting one)
    sizes: Dict[str, int] = field(default_factory=lambda: dict(SIZES))
    seed: int = 0
    resamples: int = stats.RESAMPLES
    own_caches: bool = True  # inductor's FX graph cache off, Triton's kernel cache in a fresh directory


def backend_name(backend: Any) -> str:
    return backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)


def variant_key(mode: str, side: str) -> str:
    return f"{mode}/{side}"


def fresh(fn: Callable) -> Callable:
    """`fn` with a code object of its own: Dynamo keeps what it compiled on the code object,
    so two variants of one side (other flags, other mode) must not share one."""
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def sides_of(pair: CompiledPair, built: Dict[str, Callable]) -> Dict[str, Tuple[Callable, Tuple[str, ...]]]:
    """side -> (function, Dynamo flags it runs with). `captured` is the pair's own function,
    or the pattern, run with the pair's capture flags; it exists only where they exist."""
    out = {"pattern": (built["pattern"], ()), "fixed": (built["fixed"], ())}
    if pair.capture:
        out["captured"] = (built.get("captured", built["pattern"]), pair.capture)
    return out


def modes_of(opts: Options, cuda: bool) -> Tuple[str, ...]:
    """CUDA graphs need CUDA: reduce-overhead is left out elsewhere."""
    return tuple(m for m in opts.modes if cuda or m != "reduce-overhead")


# ---------------------------------------------------------------- Dynamo's counts


def graphs_compiled(torch: Any) -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def inductor_count(torch: Any, name: str) -> int:
    from torch._dynamo.utils import counters

    return int(counters["inductor"][name])


def break_reasons(torch: Any) -> Dict[str, int]:
    """Dynamo's reasons for what it could not trace so far (a copy, to diff): its
    `graph_break` counter, and `unimplemented`, where a branch on a tensor is counted."""
    from torch._dynamo.utils import counters

    return {**counters["unimplemented"], **counters["graph_break"]}


def dynamo_flags(torch: Any, flags: Tuple[str, ...]) -> Any:
    return torch._dynamo.config.patch(**{f: True for f in flags})


@contextlib.contextmanager
def own_caches(torch: Any) -> Iterator[Dict[str, Any]]:
    """Inductor's FX graph cache (and AOTAutograd's) off, its cache directory (Triton's
    kernels) a fresh one for the run: compile times that do not depend on earlier runs."""
    import torch._functorch.config
    import torch._inductor.config

    patches = {}
    if hasattr(torch._inductor.config, "fx_graph_cache"):
        patches["fx_graph_cache"] = False
    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="synclint-compiled-") as tmp:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tmp
        try:
            with contextlib.ExitStack() as stack:
                stack.enter_context(torch._inductor.config.patch(**patches))
                if hasattr(torch._functorch.config, "enable_autograd_cache"):
                    stack.enter_context(torch._functorch.config.patch(enable_autograd_cache=False))
                yield {"fx_graph_cache": False, "kernel_cache": "fresh directory for the run"}
        finally:
            if saved is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved


# ---------------------------------------------------------------- one variant


@dataclass
class Variant:
    mode: str
    side: str
    flags: Tuple[str, ...]
    step: Optional[Callable[[], Any]] = None  # one step, ready to time
    record: Dict[str, Any] = field(default_factory=dict)
    output: Any = None  # the first call's result, on the host, for the comparison
    calls: int = 0  # steps per timed loop
    loops: List[List[float]] = field(default_factory=list)  # per pass, per loop: µs per step


def new_record(mode: str, side: str, flags: Tuple[str, ...]) -> Dict[str, Any]:
    return {"mode": mode, "side": side, "flags": list(flags), "graphs": None, "breaks": None, "break_reasons": [],
            "compile_s": None, "warmup_s": None, "step_us": None, "step_us_by_pass": [], "loops_us": [],
            "calls": None, "graphs_while_timing": 0, "syncs": None, "cudagraph_skips": None, "cudagraph_partitions": None, "error": None}


def to_host(torch: Any, out: Any) -> Any:
    """A result copied off the device (CUDA graphs overwrite their outputs at the next replay)."""
    if isinstance(out, (tuple, list)):
        return tuple(to_host(torch, o) for o in out)
    if isinstance(out, torch.Tensor):
        return out.detach().to("cpu", copy=True)
    return out


def same_values(torch: Any, a: Any, b: Any) -> Optional[str]:
    """None when `a` and `b` hold the same values (within CLOSE), else what differs."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            return "different structure"
        for i, (x, y) in enumerate(zip(a, b)):
            why = same_values(torch, x, y)
            if why:
                return f"[{i}] {why}"
        return None
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if not torch.allclose(a.float(), b.float(), **CLOSE):
        return f"values differ by up to {float((a.float() - b.float()).abs().max()):.3g}"
    return None


def _short(e: BaseException) -> str:
    """The exception in one line, with where it was raised (torch's own asserts say nothing)."""
    import traceback

    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {'/'.join(tb[-1].filename.split('/')[-2:])}:{tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {text}"[:300] + where


def first_compile(torch: Any, opts: Options, cuda: bool) -> Optional[float]:
    """Compile and run a function of one line, untimed in the results: what the first
    compile of a process pays once (imports, the compile workers), charged to no variant."""
    if opts.backend != "inductor" or not cuda:
        return None
    t0 = time.perf_counter()
    x = torch.ones(8, device="cuda")
    for mode in ("default", "reduce-overhead") if "reduce-overhead" in opts.modes else ("default",):
        f = torch.compile(fresh(_one_line), mode=mode)
        for _ in range(3):
            torch.compiler.cudagraph_mark_step_begin()
            f(x)
    torch.cuda.synchronize()
    return round(time.perf_counter() - t0, 3)


def _one_line(x: Any) -> Any:
    return (x * 2).relu() + 1


def prepare(torch: Any, pair: CompiledPair, mode: str, side: str, fn: Callable, flags: Tuple[str, ...], x: Any,
            opts: Options, cuda: bool) -> Variant:
    """Compile (unless eager) and warm one variant; its graphs, compile and warm-up times."""
    v = Variant(mode, side, flags, record=new_record(mode, side, flags))
    rec = v.record
    fn = fresh(fn)
    if mode == "eager":
        run = fn
    else:
        kwargs = {"backend": opts.backend}
        if mode == "reduce-overhead":
            kwargs = {"mode": "reduce-overhead"}
        run = torch.compile(fn, **kwargs)
    if mode == "reduce-overhead":
        mark = torch.compiler.cudagraph_mark_step_begin

        def step() -> Any:
            mark()  # an inference step: a new CUDA graph generation each call
            return run(x)
    else:
        def step() -> Any:
            return run(x)

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    graphs0, reasons0 = graphs_compiled(torch), break_reasons(torch)
    skips0, parts0 = inductor_count(torch, "cudagraph_skips"), inductor_count(torch, "cudagraph_partitions")
    try:
        with dynamo_flags(torch, flags), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sync()
            t0 = time.perf_counter()
            v.output = to_host(torch, step())
            sync()
            t1 = time.perf_counter()
            for _ in range(max(0, opts.warm_calls - 1)):
                step()
            sync()
            t2 = time.perf_counter()
    except Exception as e:  # noqa: BLE001 - a variant that cannot compile is a result
        rec["error"] = _short(e)
        return v
    if mode != "eager":
        rec["graphs"] = graphs_compiled(torch) - graphs0
        rec["breaks"] = max(0, rec["graphs"] - 1)
        rec["break_reasons"] = [k.strip().splitlines()[0][:160] for k in break_reasons(torch) if k not in reasons0]
        rec["compile_s"] = round(t1 - t0, 3)
        rec["warmup_s"] = round(t2 - t1, 3)
    if mode == "reduce-overhead":
        rec["cudagraph_skips"] = inductor_count(torch, "cudagraph_skips") - skips0
        rec["cudagraph_partitions"] = inductor_count(torch, "cudagraph_partitions") - parts0
    if cuda:
        rec["syncs"] = count_syncs(torch, step)
    v.step = step
    return v


def count_syncs(torch: Any, step: Callable[[], Any]) -> int:
    """Synchronizing operations in one step, as `set_sync_debug_mode("warn")` sees them."""
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # warn mode is deduplicated per line otherwise
        torch.cuda.set_sync_debug_mode("warn")
        try:
            step()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    return sum(SYNC_WARNING in str(w.message) for w in caught)


# ---------------------------------------------------------------- timing


def loop_us(torch: Any, step: Callable[[], Any], n: int) -> float:
    """µs per step of `n` steps in a row, one synchronize after them."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def calls_per_loop(torch: Any, step: Callable[[], Any], opts: Options) -> int:
    single = loop_us(torch, step, 3) * 1e-6
    return int(min(opts.max_calls, max(opts.min_calls, (opts.target_ms / 1e3) / max(single, 1e-7))))


def time_pass(torch: Any, variants: Sequence[Variant], opts: Options) -> None:
    """One pass over a pair: per mode, `repeat` loops of each side, interleaved."""
    by_mode: Dict[str, List[Variant]] = {}
    for v in variants:
        if v.step is not None:
            by_mode.setdefault(v.mode, []).append(v)
    gc.collect()
    gc.disable()  # a collection inside one loop and not its partner would be noise
    try:
        for group in by_mode.values():
            group.sort(key=lambda v: SIDES.index(v.side))
            for v in group:
                v.loops.append([])
            for _ in range(max(1, opts.repeat)):
                for v in group:
                    before = graphs_compiled(torch)
                    v.loops[-1].append(loop_us(torch, v.step, v.calls))
                    v.record["graphs_while_timing"] += graphs_compiled(torch) - before
    finally:
        gc.enable()


def steady_calls(torch: Any, variants: Sequence[Variant]) -> None:
    """Where nothing is timed (the CPU): one more call of each variant, to see that none
    compiles again once every variant is compiled."""
    for v in variants:
        if v.step is not None:
            before = graphs_compiled(torch)
            v.step()
            v.record["graphs_while_timing"] += graphs_compiled(torch) - before


# ---------------------------------------------------------------- one pair


def build_pair(torch: Any, pair: CompiledPair, device: str, opts: Options) -> Tuple[Dict[str, Any], Any, Dict]:
    """A pair's record, input and sides (side -> (function, flags))."""
    from synclint.bench.compiled_pairs import make_net

    s = opts.sizes
    rec: Dict[str, Any] = {"code": pair.code, "case": pair.case, "pattern": pair.pattern, "fix": pair.fix,
                           "condition": pair.condition, "capture": list(pair.capture), "breaks_expected": pair.breaks,
                           "same_result": None, "compare_note": None, "variants": {}, "comparisons": {},
                           "error": None}
    try:
        net, x = make_net(torch, device, s["batch"], s["width"], s["depth"], opts.seed)
        sides = sides_of(pair, pair.build(torch, net, x))
    except Exception as e:  # noqa: BLE001
        rec["error"] = f"build: {_short(e)}"
        return rec, None, {}
    return rec, x, sides


def prepare_pair(torch: Any, pair: CompiledPair, built: Tuple[Dict[str, Any], Any, Dict], opts: Options, cuda: bool,
                 say: Callable[[str], None]) -> List[Variant]:
    """Compile and warm every variant of a built pair; compares their results."""
    rec, x, sides = built
    variants: List[Variant] = []
    if rec.get("error"):
        return variants
    for mode in modes_of(opts, cuda):
        for side in SIDES:
            if side not in sides or (mode == "eager" and side == "captured"):
                continue  # flags change nothing in eager code
            fn, flags = sides[side]
            say(f"{pair.label}: {mode} {side}")
            v = prepare(torch, pair, mode, side, fn, flags, x, opts, cuda)
            variants.append(v)
            rec["variants"][variant_key(mode, side)] = v.record
    ref = next((v for v in variants if v.output is not None), None)
    notes = []
    for v in variants:
        if v.output is None or v is ref:
            continue
        why = same_values(torch, ref.output, v.output)
        if why:
            notes.append(f"{variant_key(v.mode, v.side)} vs {variant_key(ref.mode, ref.side)}: {why}")
    if ref is not None:
        rec["same_result"] = not notes
        rec["compare_note"] = "; ".join(notes) or None
    for v in variants:
        v.output = None
    if cuda:
        for v in variants:
            if v.step is not None:
                v.calls = calls_per_loop(torch, v.step, opts)
                v.record["calls"] = v.calls
    return variants


def summarize(rec: Dict[str, Any], variants: Sequence[Variant], opts: Options) -> None:
    """Step times per variant, and per mode the fix's speedup over the pattern (and over the
    captured pattern) with its interval and verdict."""
    by_key = {variant_key(v.mode, v.side): v for v in variants}
    for v in variants:
        if v.loops and all(v.loops):
            flat = [t for p in v.loops for t in p]
            v.record["step_us"] = round(statistics.median(flat), 3)
            v.record["step_us_by_pass"] = [round(statistics.median(p), 3) for p in v.loops]
            v.record["loops_us"] = [[round(t, 3) for t in p] for p in v.loops]
    seed = sum(map(ord, rec["code"] + rec["case"]))  # fixed per pair: the same samples give the same interval
    for mode in opts.modes:
        fixed = by_key.get(variant_key(mode, "fixed"))
        for side in ("pattern", "captured"):
            v = by_key.get(variant_key(mode, side))
            if v is None or fixed is None or not v.loops or len(v.loops) != len(fixed.loops):
                continue
            s = stats.speedup(v.loops, fixed.loops)
            lo, hi = stats.bootstrap_interval(v.loops, fixed.loops, resamples=opts.resamples, seed=seed)
            name = mode if side == "pattern" else f"{mode}/captured"
            rec["comparisons"][name] = {
                "mode": mode, "of": side, "to": "fixed", "speedup": round(s, 4), "ci": [round(lo, 4), round(hi, 4)],
                "saved_us": round(v.record["step_us"] - fixed.record["step_us"], 3),
                "verdict": stats.time_verdict(s, (lo, hi)),
            }


# ---------------------------------------------------------------- the run


def env_meta(torch: Any, device: str, opts: Options, cuda: bool) -> Dict[str, Any]:
    from synclint.build import VERSION

    return {
        "schema": SCHEMA,
        "gpu": torch.cuda.get_device_name(torch.cuda.current_device()) if cuda else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda if cuda else None,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "synclint": VERSION,
        "device": device,
        "timed": cuda,
        "backend": backend_name(opts.backend),
        "modes": list(modes_of(opts, cuda)),
        "sizes": dict(opts.sizes),
        "repeats": opts.repeat if cuda else 0,
        "passes": opts.passes if cuda else 0,
        "target_ms": opts.target_ms,
        "warm_calls": opts.warm_calls,
        "confidence": stats.CONFIDENCE,
        "interval": {"kind": "within-run", "confidence": stats.CONFIDENCE, "runs": 1},
        "resamples": opts.resamples,
        "graphs_counted_by": "torch._dynamo.utils.counters['stats']['unique_graphs'] over each variant's warm-up calls",
        "breaks_counted_by": "graphs - 1 (as torch._dynamo.explain counts them); reasons: new keys of Dynamo's "
                             "graph_break and unimplemented counters",
        "caches": None,
        "graphs_while_timing": None,
        "method": (
            "a step of `depth` linear layers (inference) with the pattern or its fix between the first and second "
            "half; per variant (mode x side) the first call's wall time is compile_s, the next warm_calls-1 calls' "
            "warmup_s (CUDA graphs recorded); then loops of N steps with one synchronize after each loop "
            "(N per variant for ~target_ms), `repeats` loops per variant and pass with the sides of a mode "
            "interleaved, `passes` passes over all pairs; step_us = median per-step time; per mode, speedup = "
            "median over interleaved loop pairs of pattern / fixed, 95% interval from a two-level (pass, loop) "
            "paired bootstrap, faster/slower only when it excludes 1.0; syncs = set_sync_debug_mode('warn') "
            "warnings in one steady step"
            if cuda
            else "correctness and graph counts only: every variant runs its warm-up calls on the CPU, nothing timed"
        ),
    }


def run(pairs: Sequence[CompiledPair], device: str, opts: Optional[Options] = None,
        progress: Optional[Callable[[str], None]] = None, torch_module: Any = None) -> Dict[str, Any]:
    """Measure `pairs` on `device` ("cuda", "cuda:N", "cpu"); the results document."""
    if torch_module is None:
        import torch
    else:
        torch = torch_module
    opts = opts or Options()
    say = progress or (lambda msg: None)
    cuda = device.startswith("cuda")
    if cuda and torch.device(device).index is not None:
        torch.cuda.set_device(torch.device(device).index)
    t_start = time.perf_counter()
    meta = env_meta(torch, device, opts, cuda)
    meta["options"] = {**asdict(opts), "backend": backend_name(opts.backend)}
    caches = own_caches(torch) if opts.own_caches and opts.backend == "inductor" else contextlib.nullcontext(None)
    torch._dynamo.reset()
    with caches as cache_note:
        meta["caches"] = cache_note
        meta["first_compile_s"] = first_compile(torch, opts, cuda)
        prepared = []
        for i, pair in enumerate(pairs, 1):
            say(f"[{i}/{len(pairs)}] {pair.label}: compile")
            built = build_pair(torch, pair, device, opts)
            prepared.append((built[0], prepare_pair(torch, pair, built, opts, cuda, say)))
        meta["compile_wall_s"] = round(time.perf_counter() - t_start, 1)
        graphs0 = graphs_compiled(torch)
        for p in range(1, opts.passes + 1 if cuda else 2):
            say(f"timing pass {p}/{opts.passes}" if cuda else "steady calls")
            for _, variants in prepared:
                time_pass(torch, variants, opts) if cuda else steady_calls(torch, variants)
        meta["graphs_while_timing"] = graphs_compiled(torch) - graphs0
    records = []
    for rec, variants in prepared:
        summarize(rec, variants, opts)
        records.append(rec)
    prepared.clear()
    torch._dynamo.reset()
    meta["wall_s"] = round(time.perf_counter() - t_start, 1)
    return {"meta": meta, "results": records}


def failed(results: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Pairs that make the run fail: a pair that cannot be built, a variant that fails in
    eager code or with the fix, values that differ, or a recompile while timing. A pattern
    that fails to compile (as captured, say) is a result, shown in its row, not a failure."""
    def bad(key: str, v: Dict[str, Any]) -> bool:
        return bool(v.get("error")) and (v["mode"] == "eager" or v["side"] == "fixed")

    return [r for r in results if r.get("error") or r.get("same_result") is False
            or any(bad(k, v) or v.get("graphs_while_timing") for k, v in (r.get("variants") or {}).items())]
