#!/usr/bin/env python3
"""Run the full bench twice on the GPU and compare the verdicts; or compare two runs.

    python scripts/bench_stability.py both [--out DIR]            # on the GPU: run, run, compare
    python scripts/bench_stability.py compare RUN1 RUN2 [--out DIR]

`both` writes DIR/bench-run1.json, DIR/bench-run2.json and the comparison; `compare` only the
comparison: DIR/bench-stability.json and DIR/bench-stability.md. Exit 0 when no verdict
changed, 1 when one did, 2 when the runs cannot be compared (different GPUs or torch, or a
file that is not a timed results document). When the two runs must go in two device calls
(each run is up to 5 minutes), run `scripts/gpu_run.sh --name bench-run1.json` and
`--name bench-run2.json`, then `compare` here. Commit the second run as
synclint/data/bench.json and the comparison beside it (scripts/take_gpu_results.py
--stability does both).
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
    print(f"{n - len(cmp['changed'])} of {n} pairs with equal verdicts; wrote {out / 'bench-stability.json'}")
    return 0 if cmp["all_equal"] else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    both = sub.add_parser("both", help="on the GPU: two full runs, then the comparison")
    both.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "gpu-out"))
    both.add_argument("--select", default="")
    cmpp = sub.add_parser("compare", help="compare two results documents")
    cmpp.add_argument("first", type=Path)
    cmpp.add_argument("second", type=Path)
    cmpp.add_argument("--out", type=Path, default=Path("."))
    a = ap.parse_args(argv)
    if a.cmd == "compare":
        return write_comparison(a.first, a.second, a.out)
    import gpu_run

    gpu_run.ensure_rules_package()
    a.out.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in ("bench-run1.json", "bench-run2.json"):
        status = gpu_run.run_bench(a.out, name, a.select) or status
    rc = write_comparison(a.out / "bench-run1.json", a.out / "bench-run2.json", a.out)
    return rc or status


if __name__ == "__main__":
    sys.exit(main())
