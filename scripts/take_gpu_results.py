#!/usr/bin/env python3
"""Take what scripts/gpu_run.sh brought back from the GPU machine into the repo.

    python scripts/take_gpu_results.py FOLDER [--bench NAME] [--force]

FOLDER holds bench.json (or --bench NAME), and where they were made, item-sweep.json
and gpu-sync-record.json (the `run` tool's files_at). Each is checked first: the results
document must validate, cover every rule that has a BENCH pair, and have no pair that
errored or whose sides differ; the sweep must have points; the record must cover every
fixture with none that raised. Only then (or with --force) are they copied to
synclint/data/bench.json, synclint/data/item-sweep.json and
tests/data/gpu-sync-record.json, and the docs regenerated (scripts/gen_bench_docs.py).
A missing sweep or record is skipped; a missing bench is an error.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def check_bench(data) -> list:
    from synclint.bench.pairs import select_pairs
    from synclint.bench.results import validate

    problems = validate(data)
    got = {r["code"]: r for r in data.get("results", [])}
    pairs, _ = select_pairs()
    for p in pairs:
        r = got.get(p.code)
        if r is None:
            problems.append(f"bench: {p.code} {p.name} has a pair but no result")
        elif r.get("error"):
            problems.append(f"bench: {p.code} errored: {r['error']}")
        elif r.get("same_result") is False:
            problems.append(f"bench: {p.code} flagged and fixed differ: {r.get('compare_note')}")
    if not data.get("meta", {}).get("timed"):
        problems.append("bench: not a timed (CUDA) run")
    return problems


def check_record(data) -> list:
    from synclint.testing import fixture_paths

    problems = []
    fixtures = data.get("fixtures", {})
    for p in fixture_paths(ROOT / "fixtures"):
        r = fixtures.get(p.name)
        if r is None:
            problems.append(f"record: {p.name} missing")
        elif r.get("error"):
            problems.append(f"record: {p.name} raised: {r['error']}")
    return problems


def check_sweep(data) -> list:
    points = data.get("points") if isinstance(data, dict) else None
    if not points:
        return ["sweep: no points"]
    return [f"sweep: point {i} has no cost" for i, p in enumerate(points) if not isinstance(p.get("cost_us"), (int, float))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--bench", default="bench.json", help="the results file's name in FOLDER")
    ap.add_argument("--force", action="store_true", help="copy even if incomplete")
    a = ap.parse_args(argv)
    status = 0
    for name, dst, check, required in (
        (a.bench, ROOT / "synclint" / "data" / "bench.json", check_bench, True),
        ("item-sweep.json", ROOT / "synclint" / "data" / "item-sweep.json", check_sweep, False),
        ("gpu-sync-record.json", ROOT / "tests" / "data" / "gpu-sync-record.json", check_record, False),
    ):
        src = a.folder / name
        if not src.is_file():
            print(f"{'missing' if required else 'not there, skipped:'} {src}")
            status = status or int(required)
            continue
        problems = check(json.loads(src.read_text(encoding="utf-8")))
        for p in problems:
            print(p)
        if problems and not a.force:
            print(f"not copied: {src.name} (use --force to copy anyway)")
            status = 1
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        print(f"copied {src} -> {dst.relative_to(ROOT)}")
    if (ROOT / "synclint" / "data" / "bench.json").is_file():
        rc = subprocess.call([sys.executable, str(ROOT / "scripts" / "gen_bench_docs.py")])
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main())
