"""Reports from a `synclint bench` results document: Markdown page, SVG chart, one-line figures.

`measured(code)` reads the results shipped with the package (`synclint/data/bench.json`: named
for no card, the GPU that measured them is in its `meta`) so that `synclint explain` and CI
reports can show what a rule's fix was measured to save.
No torch, no matplotlib: the chart is SVG written by hand.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

from synclint.bench.figures import day, fmt_bytes, fmt_ci, fmt_sizes, fmt_syncs, fmt_us, fmt_x
from synclint.bench.results import shipped_document

SHIPPED = "data/bench.json"
# The flag of runs.py: two runs' own 95% intervals are disjoint, so one run's figure is not
# reproducible by the next; the run-to-run interval shown beside it includes that spread.
NOT_REPRODUCIBLE = "runs disagree"

VERDICT_COLOURS = {
    "faster": "#2e7d32",
    "memory": "#1565c0",
    "fewer syncs": "#6a1b9a",
    "no measurable gain": "#9e9e9e",
    "undecided": "#f9a825",
    "slower": "#c62828",
}


# ---------------------------------------------------------------- shipped results


@lru_cache(maxsize=None)
def shipped() -> Optional[Dict[str, Any]]:
    """The results document shipped as package data, or None when there is none."""
    return shipped_document(SHIPPED)


def measured(code: str, data: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """The measured record of rule `code` (with the run's `meta` under "meta"), or None."""
    data = shipped() if data is None else data
    if not data:
        return None
    for r in data.get("results", []):
        if r.get("code") == code.upper():
            out = dict(r)
            out["meta"] = {k: data.get("meta", {}).get(k) for k in ("gpu", "torch", "cuda", "date", "host")}
            return out
    return None


def measured_line(code: str, data: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """One sentence for `synclint explain`: what the pair measured, on which GPU and when."""
    r = measured(code, data)
    if r is None or r.get("flagged_us") is None:
        return None
    m = r["meta"]
    where = f"{m.get('gpu') or 'GPU'}, torch {m.get('torch')}, {day(m.get('date'))}"
    text = (
        f"Measured on {where}: {fmt_us(r['flagged_us'])} -> {fmt_us(r['fixed_us'])} us per call, "
        f"{verdict_phrase(r)}"
    )
    if r.get("syncs_flagged") is not None:
        text += f"; syncs per call {r['syncs_flagged']} -> {r['syncs_fixed']}"
    if r.get("condition"):
        text += f" (when {r['condition']})"
    return text + "."


def ci_label(g: Optional[Dict[str, Any]]) -> str:
    """What a figure's interval is: "95% CI" inside one run, "99% over 5 runs" across runs
    (runs.py: an interval that holds the figure of another 5 runs)."""
    runs = (g or {}).get("runs")
    if runs:
        from synclint.bench.stats import RUN_CONFIDENCE

        return f"{(g or {}).get('confidence', RUN_CONFIDENCE) * 100:.0f}% over {len(runs)} runs"
    return "95% CI"


def regime_phrase(g: Optional[Dict[str, Any]]) -> str:
    """One regime's speedup with its interval: "1.32x (95% CI 1.28–1.36x)", "1.32x (99% over
    5 runs 1.25–1.40x, runs disagree)"."""
    if not g or g.get("speedup") is None:
        return "-"
    flag = f", {NOT_REPRODUCIBLE}" if g.get("reproducible") is False else ""
    return f"{fmt_x(g['speedup'])} ({ci_label(g)} {fmt_ci(g.get('ci'))}{flag})"


def verdict_phrase(r: Dict[str, Any]) -> str:
    v = r.get("verdict")
    s = r.get("speedup")
    where = f" in the {r['regime']} loop" if r.get("regime") else ""
    head = (r.get("regimes") or {}).get(r.get("regime")) or r
    ci = f"{ci_label(head)} {fmt_ci(r.get('ci'))}" + (f", {NOT_REPRODUCIBLE}" if head.get("reproducible") is False else "")
    if v == "faster":
        return f"{fmt_x(s)} faster{where} ({ci})"
    if v == "memory":
        return (
            f"no faster ({fmt_x(s)}, {ci}), but peak memory {fmt_bytes(r.get('peak_mem_flagged'))} -> "
            f"{fmt_bytes(r.get('peak_mem_fixed'))}"
        )
    if v == "fewer syncs":
        return f"no measurable time gain ({fmt_x(s)}, {ci}), fewer syncs"
    if v == "slower":
        return f"the fix was slower{where} ({fmt_x(s)}, {ci})"
    if v == "no measurable gain":
        regs = r.get("regimes") or {}
        if len(regs) > 1:
            return f"no measurable gain in either loop ({r.get('regime')}: {fmt_x(s)}, {ci} includes 1.0)"
        return f"no measurable gain ({fmt_x(s)}, {ci} includes 1.0)"
    if v == "undecided":
        return f"undecided{where}: the runs do not settle whether it gains 3% or more ({fmt_x(s)}, {ci})"
    return str(v)


# ---------------------------------------------------------------- Markdown


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(
    data: Dict[str, Any],
    source: str = "synclint/data/bench.json",
    chart: Optional[str] = "speedups.svg",
    sweep: Optional[Dict[str, Any]] = None,
    sweep_chart: Optional[str] = "item-sweep.svg",
    stability: Optional[Dict[str, Any]] = None,
) -> str:
    """docs/benchmarks.md: method, the sweep (if given), the results table, the stability
    comparison (if given) and a section per rule."""
    meta = data.get("meta", {})
    results = sorted(data.get("results", []), key=lambda r: r.get("code", ""))
    timed = bool(meta.get("timed"))
    out: List[str] = []
    out.append("# Measured cost of each hazard, and of its fix\n")
    out.append(f"<!-- generated by scripts/gen_bench_docs.py from {source}; do not edit by hand -->\n")
    gpu = meta.get("gpu") or f"{meta.get('device', 'cpu')} (no GPU)"
    out.append(
        f"Measured on **{gpu}** with torch {meta.get('torch')}"
        + (f" (CUDA {meta['cuda']})" if meta.get("cuda") else "")
        + f", on {day(meta.get('date'))} (host `{meta.get('host')}`, synclint {meta.get('synclint', '?')}).\n"
    )
    counts: Dict[str, int] = {}
    for r in results:
        counts[r.get("verdict", "?")] = counts.get(r.get("verdict", "?"), 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    out.append(f"{len(results)} benchmark pairs: {summary}.\n")
    if not timed:
        out.append("These results come from a CPU run: **correctness only**, nothing was timed.\n")
    if chart and timed:
        out.append(f"![Speedup of each rule's fix, log scale]({chart})\n")
    out.append("## How to read this\n")
    hw = meta.get("host_work") or {}
    out.append(
        "Each rule carries a benchmark pair: its flagged pattern and the fix, as real functions "
        "(`BENCH` in `rules/<rule>.py`). `synclint bench` checks that both return the same result, then "
        "times each side in loops of N calls with one synchronize at the end, so a sync inside the loop "
        "shows up as lost CPU/GPU overlap. Two regimes:\n"
    )
    out.append(
        f"- **back-to-back**: N calls in a row after {meta.get('background_us', '?')} µs of queued GPU work. "
        "This is the pattern's cost in a loop with nothing else to do: launch-bound or GPU-bound, no host "
        "work to hide. Times are per call.\n"
        f"- **host-work** (every pair whose fix removes a sync): N steps, each one GPU kernel of "
        f"{hw.get('gpu_us', '?')} µs (an elementwise kernel sized to take that long: GPU work set by kernel "
        f"size, not kernel count), then the call, then {hw.get('host_us', '?')} µs of host busy-work (what "
        "collation, Python logic and logging do to the host). Without a sync the host's work overlaps the "
        "GPU's; a sync makes the host wait for the queue to drain and leaves the GPU idle while the host "
        "works, so each sync costs about min(host, GPU) time between syncs (the sweep below measures how "
        "well). Times are per step; **saved** is flagged minus fixed per step.\n"
    )
    runs = meta.get("runs") or 1
    out.append(
        f"Each side and regime is timed in {meta.get('repeats', '?')} loops per pass, flagged and fixed "
        f"interleaved, in {meta.get('passes', '?')} pass(es) over all pairs (fresh inputs each pass)"
        + (f", in each of **{runs} whole runs, each in a fresh process**" if runs > 1 else "")
        + ". A run's speedup is the median, over all its interleaved pairs of loops, of flagged time / fixed time "
        "(a drift of the machine between loops or passes hits both loops of a pair alike and cancels), with a 95% "
        f"bootstrap interval that resamples passes, then loops within them ({meta.get('resamples', '?')} resamples). "
    )
    if runs > 1:
        conf = (meta.get("interval") or {}).get("confidence", 0.99)
        out.append(
            "That interval sees only what varies inside one process; between processes the figures move more "
            "(buffer placement, the kernels the libraries pick, the host's clocks: two runs of SYN101 ten days "
            "apart gave 1.25–1.33x and 1.46–1.48x). So the figure here is the geometric mean of the runs' "
            f"speedups, and its interval (**{conf * 100:.0f}% over {runs} runs**) is a prediction interval for the "
            f"figure of another {runs} runs: the spread between the runs (never less than the runs' own intervals "
            "say), with Student's t for their number (`synclint/bench/runs.py`). A figure is marked "
            f"*{NOT_REPRODUCIBLE}* when two runs' own 95% intervals do not overlap: one run's figure is not "
            "reproducible by the next, it depends on the process more than one run can tell (the interval shown "
            "includes that spread). A pair is *faster* (or *slower*) only when that interval lies above (below) "
            "1.0 and the gain is at least 3%, *no measurable gain* only when it lies within 3% of 1.0, and "
            "*undecided* otherwise: with that gap, two runs give opposite verdicts only if one's interval misses "
            "the other's figure. "
        )
    else:
        out.append(
            "A pair is *faster* (or *slower*) only when the interval excludes 1.0 in that regime (and the gain is "
            "at least 3%). One run's interval does not include the spread between runs: `synclint bench --runs N` "
            "gives intervals that do. "
        )
    out.append(
        "The verdict names the regime it rests on. (This replaces the harness contract's \"median of "
        "repeats after warm-up\" in DESIGN.md: one median per side, compared without an interval, let verdicts "
        "near 1.0x flip between runs.) Otherwise it is *memory* when the fix lowers peak GPU "
        "memory. Sizes matter: a gain at 1e7 elements is that size's gain, "
        "not a universal factor. Syncs are counted with `torch.cuda.set_sync_debug_mode(\"warn\")`; "
        "*not visible* marks syncs that the debug mode cannot see (`torch.cuda.synchronize()`, "
        "`Event.synchronize()`, pageable `non_blocking` copies).\n"
    )
    if timed:
        out.append(
            f"To reproduce: `synclint bench --runs {runs} --passes {meta.get('passes', '?')} --repeat "
            f"{meta.get('repeats', '?')} --output-format json --output results.json` (this one took "
            f"{meta.get('wall_s', '?')} s) or, from a checkout, "
            "`python scripts/bench_stability.py both` (two such runs and their comparison) and "
            "`python scripts/gpu_run.py --sweep --skip-bench --skip-record` (the sweep).\n"
        )
    if sweep:
        from synclint.bench.sweep import render_markdown_section

        out.append(render_markdown_section(sweep, chart=sweep_chart))
    out.append("## Results\n")
    out.append(
        "| rule | sizes | syncs | back-to-back (µs per call) | back-to-back speedup | "
        "host-work (µs per step) | host-work speedup | peak memory | verdict |"
    )
    out.append("|---|---|---|---:|---:|---:|---:|---|---|")
    for r in results:
        mem = "-"
        if r.get("peak_mem_flagged") is not None:
            mem = f"{fmt_bytes(r['peak_mem_flagged'])} → {fmt_bytes(r['peak_mem_fixed'])}"
        verdict = r.get("verdict", "?")
        if verdict in ("failed", "error"):
            verdict = f"**{verdict}**"
        elif r.get("regime") and verdict in ("faster", "slower", "no measurable gain") and len(r.get("regimes") or {}) > 1:
            verdict = f"{verdict} ({r['regime']})"
        regs = r.get("regimes") or {}
        cells = [f"[{r.get('code')}](#{r.get('code', '').lower()}) `{r.get('name')}`", fmt_sizes(r.get("sizes") or {}), fmt_syncs(r)]
        for name in ("back-to-back", "host-work"):
            g = regs.get(name)
            cells.append(f"{fmt_us(g['flagged_us'])} → {fmt_us(g['fixed_us'])}" if g else "-")
            cells.append(regime_phrase(g))
        cells += [mem, verdict]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out.append("")
    if stability:
        from synclint.bench.stability import render_markdown as stability_markdown

        out.append(stability_markdown(stability))
    out.append("## Per rule\n")
    for r in results:
        out.append(f"### {r.get('code')}\n")
        out.append(f"`{r.get('name')}`: {verdict_phrase(r)}." if r.get("flagged_us") is not None else f"`{r.get('name')}`: {r.get('verdict')}.")
        out.append("")
        regs = r.get("regimes") or {}
        if regs:
            out.append("| regime | side | per call or step (µs) | GPU timeline (µs) | per pass (µs) | loop length | loops |")
            out.append("|---|---|---:|---:|---|---:|---:|")
            for name, g in regs.items():
                calls = g.get("calls") or {}
                samples = g.get("samples") or {}
                for side in ("flagged", "fixed"):
                    out.append(
                        f"| {name} | {side} | {fmt_us(g.get(side + '_us'))} | {fmt_us(g.get(side + '_gpu_us'))} | "
                        f"{', '.join(fmt_us(x) for x in g.get(side + '_us_by_pass') or []) or '-'} | "
                        f"{calls.get(side, '-')} | {samples.get(side, '-')} |"
                    )
            out.append("")
        facts = []
        facts.append(f"sizes: {fmt_sizes(r.get('sizes') or {})}")
        facts.append(f"expected gain: {r.get('expect')}")
        for name, g in regs.items():
            facts.append(
                f"{name}: {regime_phrase(g)}, {g.get('verdict')}; saved {fmt_us(g.get('saved_us'))} µs per "
                f"{'step' if name == 'host-work' else 'call'}; per pass "
                + ", ".join(fmt_x(x) for x in g.get("speedups_by_pass") or [])
            )
        if r.get("flagged_us") is not None:
            facts.append(
                f"syncs per call: {fmt_syncs(r)}; peak memory {fmt_bytes(r.get('peak_mem_flagged'))} → "
                f"{fmt_bytes(r.get('peak_mem_fixed'))}"
            )
        if r.get("condition"):
            facts.append(f"equivalent when: {r['condition']}")
        if r.get("same_result") is True:
            facts.append("same result: yes" + (" (within float tolerance)" if r.get("compare") == "close" else ""))
        elif r.get("same_result") is None and not r.get("error"):
            facts.append(f"same result: {r.get('compare_note') or 'not compared'}")
        elif r.get("same_result") is False:
            facts.append(f"**same result: NO** ({r.get('compare_note')})")
        if r.get("syncs_note"):
            facts.append(r["syncs_note"])
        if r.get("error"):
            facts.append(f"**error**: `{r['error']}`")
        out.extend(f"- {_cell(f)}" for f in facts)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------- SVG chart

TICKS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def _domain(values: Sequence[float]) -> Tuple[float, float]:
    lo = min([1.0] + [v for v in values if v > 0])
    hi = max([2.0] + list(values))
    lo_t = max([t for t in TICKS if t <= lo] or [TICKS[0]])
    hi_t = min([t for t in TICKS if t >= hi] or [TICKS[-1]])
    if lo_t == 1:
        lo_t = 0.5
    return lo_t, hi_t


REGIME_STYLE = {"back-to-back": "", "host-work": ' fill-opacity="0.55"'}


def _bars(r: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """(regime, figures) for each timed regime of a result; a result without regimes
    (an older document) gives its top level as one back-to-back bar."""
    regs = r.get("regimes") or {}
    if regs:
        return [(k, g) for k, g in regs.items() if isinstance(g.get("speedup"), (int, float)) and g["speedup"] > 0]
    if isinstance(r.get("speedup"), (int, float)) and r["speedup"] > 0:
        return [("back-to-back", r)]
    return []


def render_svg(data: Dict[str, Any]) -> str:
    """A horizontal bar chart of speedups (log scale): per rule one bar per regime, coloured by
    that regime's verdict, with its 95% interval as a whisker."""
    meta = data.get("meta", {})
    rows = sorted(data.get("results", []), key=lambda r: r.get("code", ""))
    values_all = [v for r in rows for _, g in _bars(r) for v in [g["speedup"], *(g.get("ci") or [])] if v > 0]
    lo, hi = _domain(values_all)
    labels = [f"{r.get('code')} {r.get('name')}" for r in rows] or [""]
    values = [_value_text(r) for r in rows] or [""]
    char_w = 7.0  # 12px sans-serif, generous
    label_w = int(max(160, char_w * max(map(len, labels)) + 16))
    plot_w = 470
    value_w = int(max(120, char_w * max(map(len, values)) + 12))
    row_h, top, bottom = 26, 64, 74
    width = label_w + plot_w + value_w
    height = top + row_h * max(1, len(rows)) + bottom
    lg_lo, lg_hi = math.log10(lo), math.log10(hi)

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return label_w + (math.log10(v) - lg_lo) / (lg_hi - lg_lo) * plot_w

    gpu = meta.get("gpu") or "no GPU"
    title = "Speedup of each rule's fix (flagged time / fixed time, log scale)"
    sub = (f"{gpu}, torch {meta.get('torch')}, {day(meta.get('date'))}; per rule: back-to-back (solid), "
           "host-work (light); whiskers: " + ci_label(next((g for r in rows for _, g in _bars(r)), None)))
    p: List[str] = []
    p.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">'
    )
    p.append(f"<title>{escape(title)}</title>")
    p.append(f'<rect width="{width}" height="{height}" fill="#ffffff"/>')
    p.append(f'<text x="{width / 2:.0f}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{escape(title)}</text>')
    p.append(f'<text x="{width / 2:.0f}" y="42" text-anchor="middle" fill="#555">{escape(sub)}</text>')
    plot_top, plot_bottom = top - 6, top + row_h * max(1, len(rows))
    for t in TICKS:
        if lo <= t <= hi:
            tx = x(t)
            colour, dash = ("#333", "") if t == 1 else ("#ddd", ' stroke-dasharray="3,3"')
            p.append(f'<line x1="{tx:.1f}" y1="{plot_top}" x2="{tx:.1f}" y2="{plot_bottom}" stroke="{colour}"{dash}/>')
            p.append(f'<text x="{tx:.1f}" y="{plot_bottom + 16}" text-anchor="middle" fill="#333">{t:g}x</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h
        cy = y + row_h / 2
        label = f"{r.get('code')} {r.get('name')}"
        p.append(f'<text x="{label_w - 8}" y="{cy + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        bars = _bars(r)
        if not bars:
            p.append(f'<text x="{label_w + 6}" y="{cy + 4:.1f}" fill="#c62828">{escape(str(r.get("verdict") or "not timed"))}</text>')
            continue
        bar_h = (row_h - 6) / len(bars)
        for j, (name, g) in enumerate(bars):
            s = g["speedup"]
            colour = VERDICT_COLOURS.get(g.get("verdict", r.get("verdict", "")), "#9e9e9e")
            by = y + 3 + j * bar_h
            x0, x1 = x(1.0), x(s)
            left, w = min(x0, x1), max(abs(x1 - x0), 1.0)
            p.append(
                f'<rect class="bar" data-code="{escape(str(r.get("code")))}" data-regime="{name}" data-speedup="{s}" '
                f'x="{left:.1f}" y="{by:.1f}" width="{w:.1f}" height="{bar_h - 1:.1f}" fill="{colour}"'
                f'{REGIME_STYLE.get(name, "")}><title>{escape(label)}, {name}: {escape(regime_phrase(g))}, '
                f"{escape(str(g.get('verdict', '')))}</title></rect>"
            )
            ci = g.get("ci")
            if ci and len(ci) == 2 and ci[0] > 0:
                wy = by + (bar_h - 1) / 2
                a, b = x(ci[0]), x(ci[1])
                p.append(f'<line x1="{a:.1f}" y1="{wy:.1f}" x2="{b:.1f}" y2="{wy:.1f}" stroke="#000" stroke-width="1.2"/>')
                for e in (a, b):
                    p.append(f'<line x1="{e:.1f}" y1="{wy - 3:.1f}" x2="{e:.1f}" y2="{wy + 3:.1f}" stroke="#000"/>')
        colour = VERDICT_COLOURS.get(r.get("verdict", ""), "#9e9e9e")
        p.append(f'<text x="{label_w + plot_w + 6}" y="{cy + 4:.1f}" fill="{colour}">{escape(_value_text(r))}</text>')
    ly = plot_bottom + 40
    lx = label_w
    for v, colour in VERDICT_COLOURS.items():
        p.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour}"/>')
        p.append(f'<text x="{lx + 16}" y="{ly}">{escape(v)}</text>')
        lx += 22 + 7 * len(v) + 14
    p.append("</svg>")
    return "\n".join(p) + "\n"


def _value_text(r: Dict[str, Any]) -> str:
    s, v = r.get("speedup"), r.get("verdict", "")
    if not isinstance(s, (int, float)) or s <= 0:
        return ""
    regime = r.get("regime") if len(r.get("regimes") or {}) > 1 else None
    if v == "faster":
        return fmt_x(s) + (f" ({regime})" if regime else "")
    return f"{fmt_x(s)} ({v}" + (f", {regime})" if regime else ")")


def load(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
