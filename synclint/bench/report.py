"""Reports from a `synclint bench` results document: Markdown page, SVG chart, one-line figures.

`measured(code)` reads the results shipped with the package (`synclint/data/bench-h200.json`)
so that `synclint explain` and CI reports can show what a rule's fix was measured to save.
No torch, no matplotlib: the chart is SVG written by hand.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

SHIPPED = "data/bench-h200.json"

VERDICT_COLOURS = {
    "faster": "#2e7d32",
    "memory": "#1565c0",
    "fewer syncs": "#6a1b9a",
    "no measurable gain": "#9e9e9e",
    "slower": "#c62828",
}


# ---------------------------------------------------------------- shipped results


@lru_cache(maxsize=None)
def shipped() -> Optional[Dict[str, Any]]:
    """The results document shipped as package data, or None when there is none."""
    try:
        from importlib.resources import files

        ref = files("synclint").joinpath(SHIPPED)
        if not ref.is_file():
            return None
        return json.loads(ref.read_text(encoding="utf-8"))
    except (OSError, ValueError, ModuleNotFoundError):
        return None


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


# ---------------------------------------------------------------- formatting


def day(date: Optional[str]) -> str:
    return (date or "?")[:10]


def fmt_us(x: Optional[float]) -> str:
    if x is None:
        return "-"
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_x(s: Optional[float]) -> str:
    if s is None:
        return "-"
    return f"{s:.0f}x" if s >= 100 else f"{s:.2f}x"


def fmt_bytes(n: Optional[int]) -> str:
    if n is None:
        return "-"
    if abs(n) >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if abs(n) >= 1 << 10:
        return f"{n / (1 << 10):.0f} KiB"
    return f"{n} B"


def fmt_spread(s: Optional[float]) -> str:
    return "-" if s is None else f"±{s * 100:.0f}%"


def fmt_syncs(r: Dict[str, Any]) -> str:
    if r.get("syncs_flagged") is None:
        return "not visible" if r.get("debug_mode_sees") is False and r.get("flagged_us") is not None else "-"
    return f"{r['syncs_flagged']} → {r['syncs_fixed']}"


def fmt_sizes(sizes: Dict[str, Any]) -> str:
    def n(v: Any) -> str:
        if isinstance(v, int) and not isinstance(v, bool) and v >= 10_000:
            e = int(math.log10(v))
            if v % 10**e == 0:
                return f"{v // 10**e}e{e}"
        return str(v)

    return ", ".join(f"{k}={n(v)}" for k, v in sizes.items()) or "-"


def verdict_phrase(r: Dict[str, Any]) -> str:
    v = r.get("verdict")
    s = r.get("speedup")
    if v == "faster":
        return f"{fmt_x(s)} faster (spread {fmt_spread(r.get('spread'))})"
    if v == "memory":
        return (
            f"no faster ({fmt_x(s)}), but peak memory {fmt_bytes(r.get('peak_mem_flagged'))} -> "
            f"{fmt_bytes(r.get('peak_mem_fixed'))}"
        )
    if v == "fewer syncs":
        return f"no measurable time gain ({fmt_x(s)}), fewer syncs"
    if v == "slower":
        return f"the fix was slower here ({fmt_x(s)}, spread {fmt_spread(r.get('spread'))})"
    if v == "no measurable gain":
        return f"no measurable gain ({fmt_x(s)} is inside the spread {fmt_spread(r.get('spread'))})"
    return str(v)


# ---------------------------------------------------------------- Markdown


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(data: Dict[str, Any], source: str = "synclint/data/bench-h200.json", chart: Optional[str] = "speedups.svg") -> str:
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
    out.append(
        "Each rule carries a benchmark pair: its flagged pattern and the fix, as real functions "
        "(`BENCH` in `rules/<rule>.py`). `synclint bench` checks that both return the same result, then "
        "times each side the way a sync is really paid for: a steady-state loop of N calls with GPU work "
        "already queued and one synchronize at the end, so a sync inside the loop shows up as lost CPU/GPU "
        "overlap. Times are per call, the median of "
        f"{meta.get('repeats', '?')} loops after {meta.get('warmup', '?')} warm-up calls; the whole run is "
        f"done {meta.get('passes', '?')} times, flagged and fixed loops interleaved. **spread** is the larger of "
        "how far the passes' speedups disagree and the interquartile range of the speedup across the interleaved "
        "loops. A speedup inside the spread (or under 3%) is reported as *no measurable gain*; "
        "*memory* means the fix is not faster but lowers peak GPU memory. Syncs are counted with "
        "`torch.cuda.set_sync_debug_mode(\"warn\")`; *not visible* marks syncs that the debug mode cannot "
        "see (`torch.cuda.synchronize()`, `Event.synchronize()`, pageable `non_blocking` copies).\n"
    )
    out.append("## Results\n")
    out.append("| rule | sizes | flagged (µs) | fixed (µs) | speedup | spread | syncs | peak memory | verdict |")
    out.append("|---|---|---:|---:|---:|---:|---|---|---|")
    for r in results:
        mem = "-"
        if r.get("peak_mem_flagged") is not None:
            mem = f"{fmt_bytes(r['peak_mem_flagged'])} → {fmt_bytes(r['peak_mem_fixed'])}"
        verdict = r.get("verdict", "?")
        if verdict in ("failed", "error"):
            verdict = f"**{verdict}**"
        out.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    f"[{r.get('code')}](#{r.get('code', '').lower()}) `{r.get('name')}`",
                    fmt_sizes(r.get("sizes") or {}),
                    fmt_us(r.get("flagged_us")),
                    fmt_us(r.get("fixed_us")),
                    fmt_x(r.get("speedup")),
                    fmt_spread(r.get("spread")),
                    fmt_syncs(r),
                    mem,
                    verdict,
                )
            )
            + " |"
        )
    out.append("")
    out.append("## Per rule\n")
    for r in results:
        out.append(f"### {r.get('code')}\n")
        out.append(f"`{r.get('name')}`: {verdict_phrase(r)}." if r.get("flagged_us") is not None else f"`{r.get('name')}`: {r.get('verdict')}.")
        out.append("")
        if r.get("flagged_us") is not None:
            calls = r.get("calls") or {}
            out.append("| side | per call (µs) | GPU timeline (µs) | per pass (µs) | calls per loop | syncs | peak memory |")
            out.append("|---|---:|---:|---|---:|---:|---:|")
            for side in ("flagged", "fixed"):
                syncs = r.get(f"syncs_{side}")
                out.append(
                    f"| {side} | {fmt_us(r.get(side + '_us'))} | {fmt_us(r.get(side + '_gpu_us'))} | "
                    f"{', '.join(fmt_us(x) for x in r.get(side + '_us_by_pass') or []) or '-'} | "
                    f"{calls.get(side, '-')} | {'not visible' if syncs is None else syncs} | "
                    f"{fmt_bytes(r.get('peak_mem_' + side))} |"
                )
            out.append("")
        facts = []
        facts.append(f"sizes: {fmt_sizes(r.get('sizes') or {})}")
        facts.append(f"expected gain: {r.get('expect')}")
        if r.get("condition"):
            facts.append(f"equivalent when: {r['condition']}")
        if r.get("same_result") is True:
            facts.append("same result: yes" + (" (within float tolerance)" if r.get("compare") == "close" else ""))
        elif r.get("same_result") is None and not r.get("error"):
            facts.append(f"same result: {r.get('compare_note') or 'not compared'}")
        elif r.get("same_result") is False:
            facts.append(f"**same result: NO** ({r.get('compare_note')})")
        if r.get("speedups_by_pass"):
            facts.append("speedup per pass: " + ", ".join(fmt_x(s) for s in r["speedups_by_pass"]))
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


def render_svg(data: Dict[str, Any]) -> str:
    """A horizontal bar chart of speedups (log scale), one bar per rule, coloured by verdict."""
    meta = data.get("meta", {})
    rows = sorted(data.get("results", []), key=lambda r: r.get("code", ""))
    speedups = [r["speedup"] for r in rows if isinstance(r.get("speedup"), (int, float)) and r["speedup"] > 0]
    whiskers = [s for r in rows for s in (r.get("speedups_by_pass") or []) if s > 0]
    lo, hi = _domain(speedups + whiskers)
    labels = [f"{r.get('code')} {r.get('name')}" for r in rows] or [""]
    values = [_value_text(r) for r in rows] or [""]
    char_w = 7.0  # 12px sans-serif, generous
    label_w = int(max(160, char_w * max(map(len, labels)) + 16))
    plot_w = 470
    value_w = int(max(120, char_w * max(map(len, values)) + 12))
    row_h, top, bottom = 22, 64, 74
    width = label_w + plot_w + value_w
    height = top + row_h * max(1, len(rows)) + bottom
    lg_lo, lg_hi = math.log10(lo), math.log10(hi)

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return label_w + (math.log10(v) - lg_lo) / (lg_hi - lg_lo) * plot_w

    gpu = meta.get("gpu") or "no GPU"
    title = "Speedup of each rule's fix (flagged time / fixed time, log scale)"
    sub = f"{gpu}, torch {meta.get('torch')}, {day(meta.get('date'))}; whiskers: the {meta.get('passes', 2)} passes"
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
            lab = f"{t:g}x"
            p.append(f'<text x="{tx:.1f}" y="{plot_bottom + 16}" text-anchor="middle" fill="#333">{lab}</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h
        cy = y + row_h / 2
        label = f"{r.get('code')} {r.get('name')}"
        p.append(f'<text x="{label_w - 8}" y="{cy + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        s = r.get("speedup")
        v = r.get("verdict", "")
        if not isinstance(s, (int, float)) or s <= 0:
            p.append(f'<text x="{label_w + 6}" y="{cy + 4:.1f}" fill="#c62828">{escape(str(v or "not timed"))}</text>')
            continue
        colour = VERDICT_COLOURS.get(v, "#9e9e9e")
        x0, x1 = x(1.0), x(s)
        left, w = min(x0, x1), max(abs(x1 - x0), 1.0)
        p.append(
            f'<rect class="bar" data-code="{escape(str(r.get("code")))}" data-speedup="{s}" x="{left:.1f}" '
            f'y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" fill="{colour}"><title>{escape(label)}: '
            f"{escape(verdict_phrase(r))}</title></rect>"
        )
        passes = [q for q in (r.get("speedups_by_pass") or []) if q > 0]
        if len(passes) > 1:
            a, b = x(min(passes)), x(max(passes))
            p.append(f'<line x1="{a:.1f}" y1="{cy:.1f}" x2="{b:.1f}" y2="{cy:.1f}" stroke="#000" stroke-width="1.5"/>')
            for e in (a, b):
                p.append(f'<line x1="{e:.1f}" y1="{cy - 4:.1f}" x2="{e:.1f}" y2="{cy + 4:.1f}" stroke="#000"/>')
        text = _value_text(r)
        p.append(f'<text x="{label_w + plot_w + 6}" y="{cy + 4:.1f}" fill="{colour}">{escape(text)}</text>')
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
    return fmt_x(s) + ("" if v == "faster" else f" ({v})")


def load(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
