#!/usr/bin/env python3
"""Regenerate docs/benchmarks.md, docs/speedups.svg, docs/item-sweep.svg and the README's bench table.

    python scripts/gen_bench_docs.py [RESULTS_JSON] [--docs DIR] [--check]

RESULTS_JSON defaults to the shipped synclint/data/bench.json; the `.item()` sweep
(item-sweep.json), the two-run comparison (bench-stability.json) and the compiled-code
pairs (bench-compiled.json, `synclint bench --compiled`; a placeholder section without it)
are read from beside it when there. With --check nothing is written; the exit status says whether the docs are
up to date (for CI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synclint.bench.report import load, render_markdown, render_svg  # noqa: E402
from synclint.bench.results import validate, write_atomic  # noqa: E402


START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def readme_with_bench(readme: str, data) -> str:
    """The README's bench block: the chart and one line per rule, from the results JSON."""
    from synclint.bench.figures import day, fmt_sizes
    from synclint.bench.report import regime_phrase

    if START not in readme or END not in readme:
        return readme
    meta = data["meta"]
    lines = [
        START,
        f"Measured by `synclint bench` on **{meta.get('gpu')}**, torch {meta.get('torch')}, "
        f"{day(meta.get('date'))} (generated from `synclint/data/bench.json`; full table and "
        "method in [docs/benchmarks.md](docs/benchmarks.md)):",
        "",
        "![Speedup of each rule's fix, log scale](docs/speedups.svg)",
        "",
        "Speedup = flagged time / fixed time (the median over interleaved loop pairs"
        + (f", the geometric mean over {meta['runs']} whole runs in fresh processes) with an interval that holds "
           f"another {meta['runs']} runs' figure" if (meta.get("runs") or 1) > 1 else ") with its 95% bootstrap interval")
        + ", in a back-to-back loop and, "
        "for fixes that remove a sync, in a loop with host and GPU work per step "
        f"({(meta.get('host_work') or {}).get('host_us', '?')} µs host, {(meta.get('host_work') or {}).get('gpu_us', '?')} µs GPU); "
        "a verdict needs the interval to exclude 1.0 (or, for no gain, to stay within 3% of it; else *undecided*) "
        "and names the loop it rests on.",
        "",
        "| rule | sizes | back-to-back | host-work | verdict |",
        "|---|---|---:|---:|---|",
    ]
    for r in data["results"]:
        regs = r.get("regimes") or {}
        v = r.get("verdict")
        if r.get("regime") and len(regs) > 1 and v in ("faster", "slower", "no measurable gain"):
            v = f"{v} ({r['regime']})"
        cells = [f"{r['code']} `{r['name']}`", fmt_sizes(r.get("sizes") or {}),
                 regime_phrase(regs.get("back-to-back")), regime_phrase(regs.get("host-work")), str(v)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines.append(END)
    head, rest = readme.split(START, 1)
    tail = rest.split(END, 1)[1]
    return head + "\n".join(lines) + tail


def _beside(results: Path, name: str):
    """A document that lives beside the results (the sweep, the stability comparison), or None."""
    p = results.parent / name
    return load(str(p)) if p.is_file() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", default=str(ROOT / "synclint" / "data" / "bench.json"))
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
    sweep = _beside(path, "item-sweep.json")
    stability = _beside(path, "bench-stability.json")
    from synclint.bench.compiled_report import render_markdown as compiled_markdown
    from synclint.bench.compiled_report import validate as validate_compiled

    compiled = _beside(path, "bench-compiled.json")
    if compiled is not None and validate_compiled(compiled):
        print(f"gen_bench_docs: {path.parent / 'bench-compiled.json'} is not a valid compiled results document:")
        for p in validate_compiled(compiled)[:20]:
            print(f"  {p}")
        return 1
    outputs = {
        Path(a.docs) / "benchmarks.md": render_markdown(data, source=source, chart="speedups.svg", sweep=sweep,
                                                        stability=stability)
        + "\n" + compiled_markdown(compiled, source=(path.parent / "bench-compiled.json").name),
        Path(a.docs) / "speedups.svg": render_svg(data),
    }
    if sweep:
        from synclint.bench.sweep import render_svg as sweep_svg

        outputs[Path(a.docs) / "item-sweep.svg"] = sweep_svg(sweep)
    readme = ROOT / "README.md"
    if readme.is_file() and Path(a.docs).resolve() == (ROOT / "docs").resolve():
        outputs[readme] = readme_with_bench(readme.read_text(encoding="utf-8"), data)
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
