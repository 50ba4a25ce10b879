#!/usr/bin/env python3
"""Take what scripts/gpu_run.sh brought back from the GPU machine into the repo.

    python scripts/take_gpu_results.py FOLDER [--force]

FOLDER holds bench-h200.json and gpu-sync-record.json (the `run` tool's files_at). Both are
checked first: the results document must validate, cover every rule that has a BENCH pair,
and have no pair that errored or whose sides differ; the record must cover every fixture
with none that raised. Only then (or with --force) are they copied to
synclint/data/bench-h200.json and tests/data/gpu-sync-record.json, and docs/benchmarks.md
and docs/speedups.svg regenerated.
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--force", action="store_true", help="copy even if incomplete")
    a = ap.parse_args(argv)
    bench = a.folder / "bench-h200.json"
    record = a.folder / "gpu-sync-record.json"
    status = 0
    for src, dst, check in (
        (bench, ROOT / "synclint" / "data" / "bench-h200.json", check_bench),
        (record, ROOT / "tests" / "data" / "gpu-sync-record.json", check_record),
    ):
        if not src.is_file():
            print(f"missing {src}")
            status = 1
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
    if (ROOT / "synclint" / "data" / "bench-h200.json").is_file():
        rc = subprocess.call([sys.executable, str(ROOT / "scripts" / "gen_bench_docs.py")])
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main())
