#!/usr/bin/env python3
"""Regenerate docs/benchmarks.md and docs/speedups.svg from a `synclint bench` results JSON.

    python scripts/gen_bench_docs.py [RESULTS_JSON] [--docs DIR] [--check]

RESULTS_JSON defaults to the shipped synclint/data/bench-h200.json. With --check nothing is
written; the exit status says whether the docs are up to date (for CI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synclint.bench.report import load, render_markdown, render_svg  # noqa: E402
from synclint.bench.results import validate, write_atomic  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", default=str(ROOT / "synclint" / "data" / "bench-h200.json"))
    ap.add_argument("--docs", default=str(ROOT / "docs"))
    ap.add_argument("--check", action="store_true", help="only report whether the docs are current")
    a = ap.parse_args(argv)
    path = Path(a.results)
    if not path.is_file():
        print(f"gen_bench_docs: no results file at {path} (run `synclint bench --output-format json --output {path}` on a GPU)")
        return 2
    data = load(str(path))
    problems = validate(data)
    if problems:
        print(f"gen_bench_docs: {path} is not a valid results document:")
        for p in problems[:20]:
            print(f"  {p}")
        return 1
    try:
        source = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        source = path.name
    outputs = {
        Path(a.docs) / "benchmarks.md": render_markdown(data, source=source, chart="speedups.svg"),
        Path(a.docs) / "speedups.svg": render_svg(data),
    }
    stale = []
    for out, text in outputs.items():
        current = out.read_text(encoding="utf-8") if out.is_file() else None
        if current != text:
            stale.append(out)
            if not a.check:
                write_atomic(str(out), text)
    if a.check:
        for out in stale:
            print(f"gen_bench_docs: {out} is out of date")
        return 1 if stale else 0
    meta = data["meta"]
    print(f"wrote {', '.join(str(o) for o in outputs)} ({len(data['results'])} rules, {meta.get('gpu')}, {meta.get('date', '')[:10]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
