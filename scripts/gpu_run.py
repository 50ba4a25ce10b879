#!/usr/bin/env python3
"""On the GPU machine: the `.item()` sweep, the full `synclint bench` and the fixture sync record,
or (--compiled) the compiled-code pairs alone.

Run through scripts/gpu_run.sh (which installs the carried libcst wheel first). Writes
into --out (default $OUT): item-sweep.json (with --sweep), bench.json (results; --name
changes the file name), gpu-sync-record.json (fixtures' synced lines), progress.log, and
prints the results table and how long each part took. With --compiled: bench-compiled.json
(`synclint bench --compiled`; --select, --repeat and --passes apply) and nothing else.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ensure_rules_package() -> None:
    """Make `synclint.rules` importable from a plain checkout (pyproject maps rules/ onto it)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import synclint

    try:
        import synclint.rules  # noqa: F401

        return
    except ImportError:
        pass
    spec = importlib.util.spec_from_file_location(
        "synclint.rules", ROOT / "rules" / "__init__.py", submodule_search_locations=[str(ROOT / "rules")]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["synclint.rules"] = mod
    spec.loader.exec_module(mod)
    synclint.rules = mod


def run_bench(out: Path, name: str = "bench.json", select: str = "", repeat: int = 4, passes: int = 7) -> int:
    """The full bench (both regimes) into out/name; 0 when every pair ran and agreed."""
    from synclint.bench import harness
    from synclint.bench.command import render_text
    from synclint.bench.pairs import rule_modules, select_pairs
    from synclint.bench.results import dumps, validate, write_atomic

    t0 = time.time()
    for mod, got in rule_modules():
        if isinstance(got, Exception):
            print(f"BROKEN RULE MODULE {mod}: {type(got).__name__}: {got}", flush=True)
    pairs, _ = select_pairs([s for s in select.split(",") if s.strip()])
    print(f"bench: {len(pairs)} pairs -> {name}", flush=True)
    opts = harness.Options(repeat=repeat, passes=passes)
    with open(out / "progress.log", "a", buffering=1) as log:
        data = harness.run(pairs, "cuda", opts, progress=lambda m: print(f"{time.time() - t0:7.1f}s {m}", file=log, flush=True))
    data["meta"]["wall_s"] = round(time.time() - t0, 1)
    write_atomic(str(out / name), dumps(data))
    print(render_text(data), flush=True)
    problems = validate(data)
    for p in problems:
        print(f"SCHEMA: {p}")
    print(f"bench took {time.time() - t0:.0f} s", flush=True)
    return 1 if harness.failed(data["results"]) or problems else 0


def run_item_sweep(out: Path) -> int:
    """The `.item()` sweep into out/item-sweep.json."""
    import torch

    from synclint.bench.results import dumps, write_atomic
    from synclint.bench.sweep import run_sweep

    t0 = time.time()
    with open(out / "progress.log", "a", buffering=1) as log:
        data = run_sweep(torch, "cuda", progress=lambda m: print(f"{time.time() - t0:7.1f}s {m}", file=log, flush=True))
    data["meta"]["wall_s"] = round(time.time() - t0, 1)
    write_atomic(str(out / "item-sweep.json"), dumps(data))
    print("sweep summary:", json.dumps(data["summary"]), flush=True)
    for p in data["points"]:
        print(f"  host {p['host_us']:>6g} us  gpu {p['gpu_us']:>8.1f} us  cost {p['cost_us']:>8.1f} us "
              f"[{p['ci'][0]:.0f}, {p['ci'][1]:.0f}]  model {p['model_us']:>7.1f}", flush=True)
    print(f"sweep took {time.time() - t0:.0f} s", flush=True)
    return 0


def run_compiled(out: Path, select: str = "", repeat: int = 3, passes: int = 7) -> int:
    """The compiled pairs into out/bench-compiled.json; 0 when every variant ran and agreed."""
    from synclint.bench import compiled
    from synclint.bench.compiled_pairs import select as select_pairs
    from synclint.bench.compiled_report import render_text, validate
    from synclint.bench.results import dumps, write_atomic

    t0 = time.time()
    pairs = select_pairs(tuple(s.strip() for s in select.split(",") if s.strip()))
    print(f"compiled bench: {len(pairs)} pairs -> bench-compiled.json", flush=True)
    with open(out / "progress.log", "a", buffering=1) as log:
        data = compiled.run(pairs, "cuda", compiled.Options(repeat=repeat, passes=passes),
                            progress=lambda m: print(f"{time.time() - t0:7.1f}s {m}", file=log, flush=True))
    write_atomic(str(out / "bench-compiled.json"), dumps(data))
    print(render_text(data), flush=True)
    problems = validate(data)
    for p in problems:
        print(f"SCHEMA: {p}")
    print(f"compiled bench took {time.time() - t0:.0f} s", flush=True)
    return 1 if compiled.failed(data["results"]) or problems else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "gpu-out"))
    ap.add_argument("--name", default="bench.json", help="file name of the bench results under --out")
    ap.add_argument("--select", default="", help="comma-separated rule selectors for the bench")
    ap.add_argument("--repeat", type=int, default=None, help="default 4 (3 with --compiled)")
    ap.add_argument("--passes", type=int, default=None, help="default 7")
    ap.add_argument("--sweep", action="store_true", help="run the .item() sweep first")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--skip-record", action="store_true")
    ap.add_argument("--isolate", action="store_true", help="record each fixture in its own process")
    ap.add_argument("--compiled", action="store_true",
                    help="only the compiled-code pairs (bench-compiled.json); --repeat defaults to 3 there")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    ensure_rules_package()
    import torch

    print(f"torch {torch.__version__} cuda {torch.version.cuda} gpu {torch.cuda.get_device_name(0)}", flush=True)
    if a.compiled:
        return run_compiled(out, a.select, a.repeat or 3, a.passes or 7)
    status = 0
    if a.sweep:
        try:
            status = run_item_sweep(out) or status
        except Exception:  # noqa: BLE001 - the bench below still runs
            traceback.print_exc()
            status = 1
    if not a.skip_bench:
        try:
            status = run_bench(out, a.name, a.select, a.repeat or 4, a.passes or 7) or status
        except Exception:  # noqa: BLE001 - the record below still runs
            traceback.print_exc()
            status = 1
    if not a.skip_record:
        t0 = time.time()
        sys.path.insert(0, str(ROOT / "scripts"))
        import record_syncs

        paths = record_syncs.fixture_paths(ROOT / "fixtures")
        if not paths:
            print("record: no fixtures")
        else:
            with open(out / "progress.log", "a", buffering=1) as log:
                data = record_syncs.record_all(paths, isolate=a.isolate, say=lambda m: print(m, file=log, flush=True))
            record_syncs.write_atomic(out / "gpu-sync-record.json", json.dumps(data, indent=2) + "\n")
            errs = [n for n, r in data["fixtures"].items() if r["error"]]
            for n in errs:
                print(f"record: {n} raised: {data['fixtures'][n]['error']}")
            lines = sum(len(r["synced_lines"]) for r in data["fixtures"].values())
            print(f"record: {len(paths)} fixtures, {lines} synced lines, {len(errs)} raised")
            if errs:
                status = status or 1
        print(f"record took {time.time() - t0:.0f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
