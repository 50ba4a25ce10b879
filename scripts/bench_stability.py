#!/usr/bin/env python3
"""Two full bench runs on the GPU, and whether the second's intervals hold the first's figures.

    python scripts/bench_stability.py run bench-run1.json [--runs 4] [--passes 1] [--out DIR]   # on the GPU
    python scripts/bench_stability.py both [--runs 4] [--out DIR]       # on the GPU: run, run, compare
    python scripts/bench_stability.py compare RUN1 RUN2 [--out DIR]

A full run is `synclint bench --runs R` in a process of its own, which runs the whole bench R
times, each in a fresh process, and combines them (synclint/bench/runs.py). `run` makes one
(into DIR/NAME, with its wall time), `both` two and the comparison; `compare` only the
comparison: DIR/bench-stability.json and DIR/bench-stability.md. Exit 0 when every interval
of run 2 holds run 1's figure or is flagged not reproducible and no verdict flipped, 1
otherwise, 2 when the runs cannot be compared (different GPUs or torch, or a file that is
not a timed results document). When the two runs must go in two device calls, `run` each,
then `compare` here. Commit the second run as synclint/data/bench.json and the comparison
beside it (scripts/take_gpu_results.py --stability does both).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def write_comparison(first: Path, second: Path, out: Path) -> int:
    from synclint.bench.results import dumps, validate, write_atomic
    from synclint.bench.stability import Incomparable, compare, render_markdown

    docs = []
    for path in (first, second):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"bench_stability: {path}: cannot read a results document ({e})")
            return 2
        problems = validate(data)
        if problems:
            print(f"bench_stability: {path}: not a valid results document ({problems[0]})")
            return 2
        docs.append(data)
    try:
        cmp = compare(*docs)
    except Incomparable as e:
        print(f"bench_stability: {first} and {second} cannot be compared: {e}")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(str(out / "bench-stability.json"), dumps(cmp))
    write_atomic(str(out / "bench-stability.md"), render_markdown(cmp, heading="# Bench stability: two runs, verdict by verdict"))
    for p in cmp["pairs"]:
        if not p["equal"]:
            print(f"CHANGED {p['code']} {p['name']}: {p['why']}")
    n = len(cmp["pairs"])
    print(f"{n - len(cmp['changed'])} of {n} pairs with equal verdicts; {len(cmp['flips'])} flipped, "
          f"{len(cmp['withheld'])} withheld in one run; {cmp['covered']} of {cmp['intervals']} intervals of run 2 "
          f"hold run 1's figure, {len(cmp['misses_flagged'])} miss flagged, {len(cmp['misses'])} miss unflagged; "
          f"wrote {out / 'bench-stability.json'}")
    return 0 if not cmp["flips"] and not cmp["misses"] else 1


def run_full(out: Path, name: str, runs: int, passes: int, repeat: int, select: str) -> int:
    """One full run, `synclint bench --runs RUNS`, in a process of its own, into out/name."""
    import subprocess
    import time

    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "synclint", "bench", "--runs", str(runs), "--passes", str(passes),
           "--repeat", str(repeat), "--output-format", "json", "--output", str(out / name), "--progress"]
    cmd += [a for sel in select.split(",") if sel.strip() for a in ("--select", sel.strip())]
    t0 = time.time()
    with open(out / "progress.log", "a", buffering=1) as log:
        rc = subprocess.run(cmd, stderr=log).returncode
    took = time.time() - t0
    if (out / name).is_file():
        data = json.loads((out / name).read_text(encoding="utf-8"))
        data["meta"]["wall_s"] = round(took, 1)
        from synclint.bench.results import dumps, write_atomic

        write_atomic(str(out / name), dumps(data))
    print(f"{name}: {runs} runs x {passes} passes x {repeat} loops took {took:.0f} s (exit {rc})", flush=True)
    return rc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("run", help="on the GPU: one full run")
    one.add_argument("name")
    both = sub.add_parser("both", help="on the GPU: two full runs, then the comparison")
    for p in (one, both):
        p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "gpu-out"))
        p.add_argument("--select", default="")
        p.add_argument("--runs", type=int, default=4)
        p.add_argument("--passes", type=int, default=1)
        p.add_argument("--repeat", type=int, default=4)
    cmpp = sub.add_parser("compare", help="compare two results documents")
    cmpp.add_argument("first", type=Path)
    cmpp.add_argument("second", type=Path)
    cmpp.add_argument("--out", type=Path, default=Path("."))
    a = ap.parse_args(argv)
    if a.cmd == "compare":
        return write_comparison(a.first, a.second, a.out)
    if a.cmd == "run":
        return run_full(a.out, a.name, a.runs, a.passes, a.repeat, a.select)
    status = 0
    for name in ("bench-run1.json", "bench-run2.json"):
        status = run_full(a.out, name, a.runs, a.passes, a.repeat, a.select) or status
    rc = write_comparison(a.out / "bench-run1.json", a.out / "bench-run2.json", a.out)
    return rc or status


if __name__ == "__main__":
    sys.exit(main())
