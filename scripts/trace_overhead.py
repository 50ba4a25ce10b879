#!/usr/bin/env python3
"""What `synclint trace` costs real training programs, and whether its blocked time is right.

Three programs of different shapes (other people's code, named by repository and commit
in PROGRAMS; materialised from local clones with `fetch`, not committed):

* makemore   karpathy/makemore `makemore.py`: a 4-layer character transformer, batch 32:
             launch-bound and small (a few ms a step, a `torch.cuda.synchronize()` each step);
* dla        kuangliu/pytorch-cifar `main.py`: SimpleDLA under DataParallel on CIFAR-10 shapes,
             batch 128, cudnn autotuned: GPU-bound and large. (CutMix-PyTorch's PyramidNet-200 was
             tried first: its own `accuracy()` fails on torch 2.11, `.view` of a non-contiguous
             slice, before a step is taken.)
* fixmatch   kekmodel/FixMatch-pytorch `train.py`: WRN-28-2 on CIFAR-10 shapes with
             RandAugment on 7x64 unlabelled images a step, 4 loader workers: data-loader bound.

CIFAR datasets are replaced by random images of the same shapes (torchvision's CIFAR10 and
its subclasses load no files); DataLoader iterators regain the `.next()` that FixMatch
calls (gone from torch 2.x); `stty size` answers "24 80" (pytorch-cifar's progress bar
asks at import). Nothing in the programs is edited.

    python scripts/trace_overhead.py fetch --mirror /work/.mirror --dest DIR
    python scripts/trace_overhead.py measure --programs DIR --rounds 3 --out OUT    # on a GPU

`measure` runs, per round and program, the program plain and under `synclint trace`
(default options: the sync debug mode, its wrappers, the clock, the record of the lines
that ran; `--warmup W --steps N`) in separate processes, alternating which goes first;
both carry the same optimizer-step hook that notes the time of each step. A step is the
time between two `optimizer.step()` calls; the figure is the median step of the window
(the N steps after W warm-up steps, less the first). Round 1 also runs each program with
`torch._C._activate_gpu_trace()` alone (the former mechanism's price, no callback), and
once under `synclint trace --cross-check` (the profiler beside it, over fewer steps where a
program has many: blocked time against the profiler's time in blocking CUDA calls). Writes OUT/trace-overhead.json and prints a
table.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import runpy
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent

PROGRAMS: Dict[str, Dict[str, Any]] = {
    "makemore": {
        "repo": "karpathy/makemore", "commit": "988aa59e4d8fefa526d06f3b453ad116258398d4",
        "files": ["makemore.py", "names.txt"], "shape": "launch-bound, small",
        "argv": ["makemore.py", "-i", "names.txt", "-o", "out", "--device", "cuda", "--max-steps", "100000"],
        "warmup": 30, "steps": 300, "crosscheck_steps": 40,
    },
    "dla": {
        "repo": "kuangliu/pytorch-cifar", "commit": "49b7aa97b0c12fe0d4054e670403a16b6b834ddd",
        "files": ["main.py", "utils.py", "models/__init__.py", "models/densenet.py", "models/dla.py",
                  "models/dla_simple.py", "models/dpn.py", "models/efficientnet.py", "models/googlenet.py",
                  "models/lenet.py", "models/mobilenet.py", "models/mobilenetv2.py", "models/pnasnet.py",
                  "models/preact_resnet.py", "models/regnet.py", "models/resnet.py", "models/resnext.py",
                  "models/senet.py", "models/shufflenet.py", "models/shufflenetv2.py", "models/vgg.py"],
        "shape": "GPU-bound, large",
        "argv": ["main.py"], "warmup": 10, "steps": 40,
    },
    "fixmatch": {
        "repo": "kekmodel/FixMatch-pytorch", "commit": "040be3b8950300b052f810df31a0c6c09561e09f",
        "files": ["train.py", "dataset/cifar.py", "dataset/randaugment.py", "models/ema.py", "models/resnext.py",
                  "models/wideresnet.py", "utils/__init__.py", "utils/misc.py"],
        "shape": "data-loader bound",
        "argv": ["train.py", "--dataset", "cifar10", "--num-labeled", "4000", "--arch", "wideresnet", "--batch-size", "64",
                 "--lr", "0.03", "--expand-labels", "--seed", "5", "--out", "results/cifar10@4000.5"],
        "warmup": 5, "steps": 25,
    },
}


# ---------------------------------------------------------------- fetch (here)


def fetch(mirror: Path, dest: Path) -> int:
    bad = 0
    for name, p in PROGRAMS.items():
        git_dir = mirror / p["repo"].replace("/", "+") / "repo"
        if (git_dir / ".git").is_dir():
            git_dir = git_dir / ".git"
        for f in p["files"]:
            r = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{p['commit']}:{f}"], capture_output=True)
            if r.returncode != 0:
                print(f"{name}: cannot read {f} at {p['commit'][:10]} from {git_dir}", file=sys.stderr)
                bad += 1
                continue
            out = dest / name / f
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(r.stdout)
    print(f"fetched {len(PROGRAMS)} programs into {dest}" + (f"; {bad} files missing" if bad else ""))
    return 1 if bad else 0


# ---------------------------------------------------------------- the child: one run of one program


def _synthetic_cifar() -> None:
    """torchvision's CIFAR10 (and CIFAR100, and any subclass) holds random images instead of
    loading files: the same `data`/`targets` arrays, so programs that index them work."""
    try:
        import numpy as np
        from torchvision.datasets import CIFAR10, CIFAR100
        from torchvision.datasets.vision import VisionDataset
    except ImportError:  # a program that needs neither
        return

    def init(self, root, train=True, transform=None, target_transform=None, download=False):
        VisionDataset.__init__(self, str(root), transform=transform, target_transform=target_transform)
        self.train = train
        n = 50000 if train else 10000
        classes = 100 if isinstance(self, CIFAR100) else 10
        rng = np.random.default_rng(0 if train else 1)
        self.data = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
        self.targets = rng.integers(0, classes, n).tolist()
        self.classes = [f"class{i}" for i in range(classes)]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    CIFAR10.__init__ = init


def _terminal() -> None:
    """`stty size` answers "24 80" (a progress bar that sizes itself asks at import)."""
    import tempfile

    bin_dir = Path(tempfile.mkdtemp(prefix="trace-overhead-bin-"))
    (bin_dir / "stty").write_text("#!/bin/sh\necho 24 80\n")
    (bin_dir / "stty").chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def _loader_next() -> None:
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    if not hasattr(_BaseDataLoaderIter, "next"):
        _BaseDataLoaderIter.next = _BaseDataLoaderIter.__next__


def _no_loader_workers() -> None:
    """Every DataLoader loads in the main thread (num_workers=0): no worker queues' feeder
    threads, no pin-memory thread (the cross-check's GIL question, issue 39)."""
    from torch.utils.data import DataLoader

    init = DataLoader.__init__

    def single_process(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["num_workers"] = 0
        kwargs.pop("persistent_workers", None)
        kwargs.pop("prefetch_factor", None)
        init(self, *args, **kwargs)

    DataLoader.__init__ = single_process


def _sync_samples() -> Dict[str, List[float]]:
    """Each timed sync's blocked seconds by site, recorded beside the trace's totals, so
    the cross-check can tell a steady per-sync excess from a few long outliers."""
    from synclint.trace.record import Recorder

    samples: Dict[str, List[float]] = {}
    on_sync = Recorder.on_sync

    def recording(self: Any, event: Any) -> Any:
        if self.recording and event.blocked_s is not None and event.where.site is not None:
            samples.setdefault(f"{event.where.site.file}:{event.where.site.line}", []).append(event.blocked_s)
        return on_sync(self, event)

    Recorder.on_sync = recording
    return samples


def _gc_pauses() -> Dict[int, List[float]]:
    """Seconds of every garbage collection, by generation."""
    pauses: Dict[int, List[float]] = {0: [], 1: [], 2: []}
    started: List[float] = []

    def callback(phase: str, info: Dict[str, Any]) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            pauses[info["generation"]].append(time.perf_counter() - started[0])

    gc.callbacks.append(callback)
    return pauses


def _spread(xs: List[float]) -> Dict[str, float]:
    us = sorted(x * 1e6 for x in xs)
    return {"n": len(us), "median": round(statistics.median(us), 1), "p90": round(us[int(0.9 * (len(us) - 1))], 1),
            "max": round(us[-1], 1), "mean": round(sum(us) / len(us), 1)}


def child(a: argparse.Namespace) -> int:
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    _synthetic_cifar()
    _loader_next()
    _terminal()
    if a.mode in ("crosscheck-noworkers", "crosscheck-nogc"):
        _no_loader_workers()
    if a.mode == "crosscheck-nogc":
        gc.disable()  # no collection can land inside a sync's window
    samples = _sync_samples() if a.mode.startswith("crosscheck") or a.mode == "trace" else {}
    gc_pauses = _gc_pauses()
    stamps: List[float] = []
    total = a.warmup + a.steps

    class Done(BaseException):
        pass

    def note(*_: Any) -> None:
        stamps.append(time.perf_counter())
        if a.mode != "trace" and len(stamps) >= total:
            raise Done()  # `synclint trace --steps` stops the program the same way

    register_optimizer_step_post_hook(note)
    program = list(a.program)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    out: Dict[str, Any] = {"mode": a.mode, "gpu": gpu, "torch": torch.__version__,
                           "python": sys.version.split()[0]}
    if a.mode == "gpu-trace":
        torch._C._activate_gpu_trace()
    t0 = time.perf_counter()
    if a.mode == "trace" or a.mode.startswith("crosscheck"):
        from synclint.trace.run import Options, run

        trace = run(Options(program, roots=[os.getcwd()], warmup=a.warmup, steps=a.steps,
                            cross_check=a.mode.startswith("crosscheck")))
        sites = sorted(trace.sites, key=lambda s: -s.blocked_ms)
        out["trace"] = {"blocked_ms": round(trace.blocked_ms, 3), "wall_ms": trace.meta.get("wall_ms"),
                        "syncs": sum(s.count for s in sites), "timed": sum(s.timed for s in sites),
                        "stopped": trace.meta.get("stopped"), "timing": trace.meta.get("timing"),
                        "profiler": trace.meta.get("profiler"),
                        "sites": [[f"{s.file}:{s.line}", s.kind, s.count, s.timed, round(s.blocked_ms, 3)]
                                  for s in sites[:12]],
                        "per_sync_us": {k: _spread(v) for k, v in samples.items()}}
    else:
        sys.argv = program
        sys.path.insert(0, os.getcwd())
        try:
            runpy.run_path(program[0], run_name="__main__")
        except Done:
            pass
    out["gc"] = {f"gen{g}": [len(v), round(sum(v) * 1e3, 3), round(max(v) * 1e3, 3)]
                 for g, v in gc_pauses.items() if v}
    out["run_s"] = round(time.perf_counter() - t0, 2)
    window = [b - c for c, b in zip(stamps[a.warmup:], stamps[a.warmup + 1:])]
    out["steps"] = len(window)
    out["step_ms"] = [round(x * 1e3, 3) for x in window]
    out["median_ms"] = round(statistics.median(window) * 1e3, 3) if window else None
    Path(a.json).write_text(json.dumps(out) + "\n")
    return 0


# ---------------------------------------------------------------- measure (on the GPU)


def _run_child(name: str, mode: str, programs: Path, out: Path, work: Path, tag: str, limit_s: float) -> Dict[str, Any]:
    p = PROGRAMS[name]
    result = work / f"{name}-{tag}.json"
    log = out / "children.log"
    steps = p.get("crosscheck_steps", p["steps"]) if mode.startswith("crosscheck") else p["steps"]
    cmd = [sys.executable, str(Path(__file__).resolve()), "child", "--mode", mode, "--warmup", str(p["warmup"]),
           "--steps", str(steps), "--json", str(result), "--", *p["argv"]]
    t0 = time.time()
    with open(log, "a") as f:
        f.write(f"\n===== {name} {tag}: {' '.join(cmd)}\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, cwd=programs / name, stdout=f, stderr=subprocess.STDOUT, timeout=limit_s).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    if rc != 0 or not result.is_file():
        return {"mode": mode, "error": f"exit {rc}", "wall_s": round(time.time() - t0, 1)}
    data = json.loads(result.read_text())
    data["wall_s"] = round(time.time() - t0, 1)
    return data


def measure(a: argparse.Namespace) -> int:
    import tempfile

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="trace-overhead-"))  # one file per child: kept out of OUT
    names = [n for n in PROGRAMS if not a.only or n in a.only.split(",")]
    deadline = time.time() + a.budget_s
    runs: Dict[str, List[Dict[str, Any]]] = {n: [] for n in names}
    for r in range(1, a.rounds + 1):
        for i, name in enumerate(names):
            modes = ["plain", "trace"] if (r + i) % 2 else ["trace", "plain"]
            if a.crosscheck_only:
                modes = ["crosscheck", "crosscheck-noworkers", "crosscheck-nogc"]
                modes = modes if (r + i) % 2 else modes[::-1]
            elif r == 1:
                modes += ["crosscheck"] + (["gpu-trace"] if name in a.gpu_trace.split(",") else [])
            for mode in modes:
                if time.time() > deadline:
                    print(f"budget spent: skipping {name} {mode} round {r}", flush=True)
                    continue
                d = _run_child(name, mode, Path(a.programs).resolve(), out, work, f"{mode}-r{r}", a.child_limit_s)
                d["round"] = r
                runs[name].append(d)
                print(f"{name:10s} r{r} {mode:10s} median {d.get('median_ms')} ms over {d.get('steps')} steps "
                      f"({d.get('wall_s')} s){' ' + d['error'] if d.get('error') else ''}", flush=True)
    summary = {n: summarize(runs[n]) for n in names}
    doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "programs": {n: PROGRAMS[n] for n in names},
           "summary": summary, "runs": runs}
    (out / "trace-overhead.json").write_text(json.dumps(doc, indent=1) + "\n")
    print()
    print(table(doc))
    return 0


def summarize(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Per mode: the median step of each run, their median; the trace's overhead per round
    (trace / plain of the same round) and its median; the cross-check."""
    by: Dict[str, List[Dict[str, Any]]] = {}
    for d in runs:
        if d.get("median_ms") is not None:
            by.setdefault(d["mode"], []).append(d)
    s: Dict[str, Any] = {m: {"medians_ms": [d["median_ms"] for d in ds],
                             "median_ms": round(statistics.median(d["median_ms"] for d in ds), 3)}
                         for m, ds in by.items()}
    plain = {d["round"]: d["median_ms"] for d in by.get("plain", [])}
    ratios = [d["median_ms"] / plain[d["round"]] for d in by.get("trace", []) if d["round"] in plain]
    if ratios:
        s["trace_overhead_pct_by_round"] = [round(100 * (x - 1), 2) for x in ratios]
        s["trace_overhead_pct"] = round(100 * (statistics.median(ratios) - 1), 2)
    for d in by.get("gpu-trace", []):
        if d["round"] in plain:
            s["gpu_trace_overhead_pct"] = round(100 * (d["median_ms"] / plain[d["round"]] - 1), 2)
    for d in runs:
        if d.get("mode", "").startswith("crosscheck") and d.get("trace"):
            t = d["trace"]
            prof = (t.get("profiler") or {}).get("sync_ms")
            s.setdefault("cross_check", {})[f"{d['mode']}-r{d['round']}"] = {"blocked_ms": t["blocked_ms"], "profiler_sync_ms": prof,
                               "profiler_calls": (t.get("profiler") or {}).get("calls"),
                               "syncs": t["syncs"], "timed": t["timed"], "sites": t["sites"],
                               "per_sync_us": t.get("per_sync_us"), "gc": d.get("gc"),
                               "diff_pct": None if not prof else round(100 * (t["blocked_ms"] - prof) / prof, 2)}
    return s


def table(doc: Dict[str, Any]) -> str:
    lines = ["program     shape                 plain ms   trace ms  overhead (rounds)           gpu-trace on"]
    checks = ["", "cross-check            blocked ms vs profiler ms"]
    for n, s in doc["summary"].items():
        shape = doc["programs"][n]["shape"]
        lines.append(
            f"{n:11s} {shape:20s} {s.get('plain', {}).get('median_ms', '-'):>9} {s.get('trace', {}).get('median_ms', '-'):>9}  "
            f"{s.get('trace_overhead_pct', '-'):>6}% {str(s.get('trace_overhead_pct_by_round', '')):22s} "
            f"{s.get('gpu_trace_overhead_pct', '-'):>6}%")
        for run, cc in (s.get("cross_check") or {}).items():
            checks.append(f"{n:11s} {run:26s} {cc['blocked_ms']} vs {cc['profiler_sync_ms']} ({cc['diff_pct']}%), "
                          f"{cc['syncs']} syncs; gc (n, ms, max ms) {cc.get('gc')}")
            for site, sp in (cc.get("per_sync_us") or {}).items():
                checks.append(f"    {site:28s} per sync us: median {sp['median']} p90 {sp['p90']} max {sp['max']} "
                              f"mean {sp['mean']} (n={sp['n']})")
    return "\n".join(lines + checks)


# makemore timing its own syncing lines (`own-timer`): the host time at each, as the program
# itself reads it, untraced or beside the trace's figure for the same calls
_OWN_TIMER = '''import atexit as _atexit, statistics as _st, time as _time
_TIMES = {"to": [], "item": [], "sync": []}
def _report():
    for k, v in _TIMES.items():
        if v:
            us = sorted(x * 1e6 for x in v[-60:])
            print(f"OWN-TIMER {k}: n={len(us)} median {_st.median(us):.1f} us p90 {us[int(0.9*(len(us)-1))]:.1f} max {us[-1]:.1f}", flush=True)
_atexit.register(_report)
def _timed_to(t, d):
    t0 = _time.perf_counter(); v = t.to(d); _TIMES["to"].append(_time.perf_counter() - t0); return v
def _timed_item(x):
    t0 = _time.perf_counter(); v = x.item(); _TIMES["item"].append(_time.perf_counter() - t0); return v
def _timed_sync():
    t0 = _time.perf_counter(); v = torch.cuda.synchronize(); _TIMES["sync"].append(_time.perf_counter() - t0); return v
'''


def own_timer(programs: Path) -> int:
    """Write makemore/makemore_timed.py: makemore.py with its batch copies, its per-step
    `torch.cuda.synchronize()` and its logged `loss.item()` each timed by the program."""
    src = (programs / "makemore" / "makemore.py").read_text()
    edits = [("import os\n", "import os\n" + _OWN_TIMER),
             ("batch = [t.to(args.device) for t in batch]", "batch = [_timed_to(t, args.device) for t in batch]"),
             ("            torch.cuda.synchronize()\n        t1 = time.time()", "            _timed_sync()\n        t1 = time.time()"),
             ("{loss.item():.4f}", "{_timed_item(loss):.4f}")]
    for old, new in edits:
        if old not in src:
            raise SystemExit(f"makemore.py: no {old.strip()!r} to time")
        src = src.replace(old, new)
    (programs / "makemore" / "makemore_timed.py").write_text(src)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    f.add_argument("--dest", type=Path, required=True)
    m = sub.add_parser("measure")
    m.add_argument("--programs", required=True)
    m.add_argument("--rounds", type=int, default=3)
    m.add_argument("--only", default="")
    m.add_argument("--out", default=os.environ.get("OUT") or "trace-overhead-out")
    m.add_argument("--budget-s", type=float, default=420, help="start no run after this many seconds")
    m.add_argument("--child-limit-s", type=float, default=90)
    m.add_argument("--gpu-trace", default=",".join(PROGRAMS), help="programs also run with the GPU-trace hooks armed")
    m.add_argument("--crosscheck-only", action="store_true",
                   help="each round: only the cross-check, with the program's loader workers and with none")
    o = sub.add_parser("own-timer", help="write makemore_timed.py beside makemore.py (its syncing lines timed by itself)")
    o.add_argument("--programs", type=Path, required=True)
    c = sub.add_parser("child")
    c.add_argument("--mode", choices=["plain", "trace", "gpu-trace", "crosscheck", "crosscheck-noworkers", "crosscheck-nogc"], required=True)
    c.add_argument("--warmup", type=int, required=True)
    c.add_argument("--steps", type=int, required=True)
    c.add_argument("--json", required=True)
    c.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.cmd == "fetch":
        return fetch(a.mirror, a.dest)
    if a.cmd == "measure":
        return measure(a)
    if a.cmd == "own-timer":
        return own_timer(a.programs)
    if a.program and a.program[0] == "--":
        a.program = a.program[1:]
    return child(a)


if __name__ == "__main__":
    sys.exit(main())
