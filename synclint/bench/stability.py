"""Do two runs of the bench agree? Verdicts (and the regime each rests on) per pair.

Only runs from the same GPU model and torch are compared: figures from different cards are
different measurements, not a test of stability.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from synclint.bench.report import fmt_ci, fmt_x


class Incomparable(ValueError):
    """The two documents are not runs of the same bench on the same kind of card."""


def _run_meta(data: Dict[str, Any]) -> Dict[str, Any]:
    m = data.get("meta", {})
    return {k: m.get(k) for k in ("gpu", "torch", "cuda", "date", "host", "passes", "repeats", "timed")}


def compare(first: Dict[str, Any], second: Dict[str, Any]) -> Dict[str, Any]:
    """The comparison document. Raises Incomparable for runs on different GPUs or torch
    versions, or runs that were not timed."""
    a, b = _run_meta(first), _run_meta(second)
    for k in ("timed",):
        if not a[k] or not b[k]:
            raise Incomparable("both runs must be timed (CUDA) runs")
    for k in ("gpu", "torch"):
        if a[k] != b[k]:
            raise Incomparable(f"the runs differ in {k}: {a[k]!r} vs {b[k]!r}")
    r1 = {r["code"]: r for r in first.get("results", [])}
    r2 = {r["code"]: r for r in second.get("results", [])}
    pairs: List[Dict[str, Any]] = []
    for code in sorted(set(r1) | set(r2)):
        x, y = r1.get(code), r2.get(code)
        row: Dict[str, Any] = {"code": code, "name": (x or y or {}).get("name")}
        if x is None or y is None:
            row.update(equal=False, why="missing from run " + ("1" if x is None else "2"))
            pairs.append(row)
            continue
        row["verdict"] = [x.get("verdict"), y.get("verdict")]
        row["regime"] = [x.get("regime"), y.get("regime")]
        row["speedup"] = [x.get("speedup"), y.get("speedup")]
        row["ci"] = [x.get("ci"), y.get("ci")]
        regs: Dict[str, Any] = {}
        for name in sorted(set(x.get("regimes") or {}) | set(y.get("regimes") or {})):
            gx, gy = (x.get("regimes") or {}).get(name) or {}, (y.get("regimes") or {}).get(name) or {}
            regs[name] = {
                "verdict": [gx.get("verdict"), gy.get("verdict")],
                "speedup": [gx.get("speedup"), gy.get("speedup")],
                "ci": [gx.get("ci"), gy.get("ci")],
            }
        row["regimes"] = regs
        why = []
        if row["verdict"][0] != row["verdict"][1]:
            why.append(f"verdict {row['verdict'][0]} -> {row['verdict'][1]}")
        elif row["regime"][0] != row["regime"][1]:
            why.append(f"regime {row['regime'][0]} -> {row['regime'][1]}")
        for name, g in regs.items():
            if g["verdict"][0] != g["verdict"][1]:
                why.append(f"{name}: {g['verdict'][0]} -> {g['verdict'][1]}")
        row["equal"] = not why
        row["why"] = "; ".join(why) or None
        pairs.append(row)
    changed = [p["code"] for p in pairs if not p["equal"]]
    return {
        "runs": [a, b],
        "pairs": pairs,
        "changed": changed,
        "all_equal": not changed,
        "rule": "equal: the same verdict resting on the same regime, and the same verdict in every regime",
    }


def render_markdown(cmp: Dict[str, Any], heading: Optional[str] = "## Stability: two runs, verdict by verdict") -> str:
    a, b = cmp["runs"]
    out = [heading + "\n"] if heading else []
    n, changed = len(cmp["pairs"]), cmp["changed"]
    out.append(
        f"Two consecutive full runs on **{a['gpu']}** (torch {a['torch']}): run 1 at {a['date']}, run 2 at "
        f"{b['date']} (the results above are run 2). "
        + (f"**All {n} verdicts are equal** in both runs, with the regime each rests on and the verdict of every regime."
           if not changed else f"**{len(changed)} of {n} pairs changed**: {', '.join(changed)}.")
        + "\n"
    )
    out.append("| rule | verdict run 1 | verdict run 2 | run 1 speedup (95% CI) | run 2 speedup (95% CI) | same |")
    out.append("|---|---|---|---:|---:|---|")
    for p in cmp["pairs"]:
        if "verdict" not in p:
            out.append(f"| {p['code']} | - | - | - | - | no: {p.get('why')} |")
            continue
        cells = [f"{p['code']} `{p['name']}`"]
        for i in (0, 1):
            v, reg = p["verdict"][i], p["regime"][i]
            cells.append(f"{v} ({reg})" if reg and len(p["regimes"]) > 1 else str(v))
        for i in (0, 1):
            s = p["speedup"][i]
            cells.append("-" if s is None else f"{fmt_x(s)} ({fmt_ci(p['ci'][i])})")
        cells.append("yes" if p["equal"] else f"**no**: {p['why']}")
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"
