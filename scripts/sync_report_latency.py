"""What the trace adds to a short sync's reported blocked time (docs/trace.md, Overhead).

On a GPU: a pageable host-to-device copy and an `.item()` of an idle tensor, each timed by
the program itself around the call (perf_counter), plain, under the trace and under the
trace's cross-check, each in a fresh process; beside each, the trace's blocked time per
sync at that line and the profiler's blocking-call time. Where the trace's figure exceeds
the program's own, the excess is what reporting the sync costs before the clock is read.

    python scripts/sync_report_latency.py [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

PROGRAM = '''
import json, sys, time
import torch
x = torch.ones(32, 16, dtype=torch.long)  # pageable
y = torch.ones(1, device="cuda")
p = torch.nn.Parameter(torch.zeros(1, device="cuda"))
opt = torch.optim.SGD([p], lr=0.1)
T = {"to": [], "item": []}
for step in range(400):
    t0 = time.perf_counter(); a = x.to("cuda"); t1 = time.perf_counter()  # COPY
    T["to"].append(t1 - t0)
    t0 = time.perf_counter(); v = y.item(); t1 = time.perf_counter()  # ITEM
    T["item"].append(t1 - t0)
    opt.step()
    if step == 200:
        json.dump({k: round(sorted(v[10:])[len(v[10:]) // 2] * 1e6, 2) for k, v in T.items()}, open(sys.argv[1], "w"))
'''
MODES = ("plain", "trace", "crosscheck")


def child(mode: str, prog: str, own: str, out: str) -> None:
    import runpy

    res: dict = {}
    if mode == "plain":
        sys.argv = [prog, own]
        runpy.run_path(prog, run_name="__main__")
    else:
        from synclint.trace.run import Options, run

        t = run(Options([prog, own], roots=[os.path.dirname(prog)], warmup=5, steps=250,
                        cross_check=mode == "crosscheck"))
        res["sites"] = {str(s.line): {"count": s.count, "timed": s.timed,
                                      "us_per_sync": round(1000 * s.blocked_ms / max(1, s.timed), 1)} for s in t.sites}
        res["profiler"] = t.meta.get("profiler")
        res["timing"] = t.meta.get("timing")
    with open(own) as fh:
        res["program_us"] = json.load(fh)
    with open(out, "w") as fh:
        json.dump(res, fh)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None)
    p.add_argument("--child", nargs=4, metavar=("MODE", "PROG", "OWN", "OUT"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(*a.child)
        return 0
    work = tempfile.mkdtemp(prefix="sync-latency-")
    prog = os.path.join(work, "prog.py")
    with open(prog, "w") as fh:
        fh.write(PROGRAM)
    lines = {tag: n for n, text in enumerate(PROGRAM.splitlines(), start=1) for tag in ("COPY", "ITEM") if f"# {tag}" in text}
    results = {}
    for mode in MODES:
        out = os.path.join(work, f"{mode}.json")
        subprocess.run([sys.executable, __file__, "--child", mode, prog, out + ".own", out], check=True, timeout=120)
        with open(out) as fh:
            results[mode] = json.load(fh)
    print(f"{'mode':11s} {'copy: program us':>17s} {'trace us/sync':>14s} {'item: program us':>17s} {'trace us/sync':>14s}")
    for mode, r in results.items():
        sites = r.get("sites") or {}
        cells = []
        for key, tag in (("to", "COPY"), ("item", "ITEM")):
            cells += [f"{r['program_us'][key]:17.1f}", f"{(sites.get(str(lines[tag])) or {}).get('us_per_sync', '-')!s:>14s}"]
        print(f"{mode:11s} " + " ".join(cells))
    prof = (results.get("crosscheck") or {}).get("profiler")
    if prof:
        print("profiler (cross-check):", json.dumps(prof.get("calls")))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
