"""Do two runs of the bench agree? Verdicts (and the regime each rests on) per pair, and
whether each interval of the second run holds the first run's figure.

Only runs from the same GPU model and torch are compared: figures from different cards are
different measurements, not a test of stability. A verdict *flips* when both runs issue
one and they differ; "undecided" (runs.py: the runs did not settle it) is no verdict, so a
change to or from it is counted apart, as *withheld*. An interval *holds* when it contains
the other run's figure; one that misses is excused only when its run flagged the figure
as not reproducible.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from synclint.bench.figures import fmt_ci, fmt_x


class Incomparable(ValueError):
    """The two documents are not runs of the same bench on the same kind of card."""


def _run_meta(data: Dict[str, Any]) -> Dict[str, Any]:
    m = data.get("meta", {})
    return {k: m.get(k) for k in ("gpu", "torch", "cuda", "date", "host", "passes", "repeats", "timed", "runs",
                                  "run_dates", "interval")}


def _holds(figure: Any, g: Dict[str, Any]) -> Dict[str, Any]:
    """Does interval g["ci"] hold `figure`; is g flagged not reproducible."""
    ci = g.get("ci")
    covered = None if figure is None or not ci else ci[0] <= figure <= ci[1]
    return {"covered": covered, "flagged": g.get("reproducible") is False}


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
                "reproducible": [gx.get("reproducible"), gy.get("reproducible")],
                "second_holds_first": _holds(gx.get("speedup"), gy) if gx and gy else None,
                "first_holds_second": _holds(gy.get("speedup"), gx) if gx and gy else None,
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
        v1, v2 = row["verdict"]
        row["flip"] = v1 != v2 and "undecided" not in (v1, v2)
        row["withheld"] = v1 != v2 and "undecided" in (v1, v2)
        pairs.append(row)
    changed = [p["code"] for p in pairs if not p["equal"]]
    held = [(p["code"], name, g["second_holds_first"]) for p in pairs for name, g in (p.get("regimes") or {}).items()
            if g.get("second_holds_first") and g["second_holds_first"]["covered"] is not None]
    return {
        "runs": [a, b],
        "pairs": pairs,
        "changed": changed,
        "all_equal": not changed,
        "flips": [p["code"] for p in pairs if p.get("flip")],
        "withheld": [p["code"] for p in pairs if p.get("withheld")],
        "intervals": len(held),
        "covered": sum(1 for _, _, h in held if h["covered"]),
        "misses_flagged": [f"{c} {n}" for c, n, h in held if not h["covered"] and h["flagged"]],
        "misses": [f"{c} {n}" for c, n, h in held if not h["covered"] and not h["flagged"]],
        "rule": "equal: the same verdict resting on the same regime, and the same verdict in every regime; "
                "flip: two issued verdicts that differ; an interval of run 2 holds when it contains run 1's figure",
    }


def render_markdown(cmp: Dict[str, Any], heading: Optional[str] = "## Stability: two runs, verdict by verdict") -> str:
    a, b = cmp["runs"]
    out = [heading + "\n"] if heading else []
    n, changed = len(cmp["pairs"]), cmp["changed"]
    how = (f"each of {a['runs']} whole runs in fresh processes" if (a.get("runs") or 1) > 1 else "one process each")
    out.append(
        f"Two full runs on **{a['gpu']}** (torch {a['torch']}; {how}): run 1 at {a['date']}, run 2 at "
        f"{b['date']}. "
        + (f"**All {n} verdicts are equal** in both runs, with the regime each rests on and the verdict of every regime."
           if not changed else f"**{len(changed)} of {n} pairs changed**: {', '.join(changed)}.")
        + "\n"
    )
    if "intervals" in cmp:
        flips, withheld = cmp.get("flips") or [], cmp.get("withheld") or []
        out.append(
            f"**Intervals**: {cmp['covered']} of {cmp['intervals']} intervals of run 2 contain run 1's figure"
            + (f"; the {len(cmp['misses_flagged'])} that do not are flagged (runs disagree) "
               f"({', '.join(cmp['misses_flagged'])})" if cmp["misses_flagged"] else "")
            + (f"; **{len(cmp['misses'])} miss without a flag** ({', '.join(cmp['misses'])})" if cmp["misses"] else "")
            + ". **Verdicts**: " + (f"{len(flips)} flipped ({', '.join(flips)})" if flips else "none flipped")
            + (f"; {len(withheld)} issued in one run and withheld (undecided) in the other ({', '.join(withheld)})"
               if withheld else "") + ".\n"
        )
    if cmp.get("note"):  # what the person who took the runs adds (how they were made, what else was checked)
        out.append(cmp["note"] + "\n")
    out.append("| rule | verdict run 1 | verdict run 2 | run 1 speedup (interval) | run 2 speedup (interval) | "
               "run 2 holds run 1 | same |")
    out.append("|---|---|---|---:|---:|---|---|")
    for p in cmp["pairs"]:
        if "verdict" not in p:
            out.append(f"| {p['code']} | - | - | - | - | - | no: {p.get('why')} |")
            continue
        cells = [f"{p['code']} `{p['name']}`"]
        for i in (0, 1):
            v, reg = p["verdict"][i], p["regime"][i]
            cells.append(f"{v} ({reg})" if reg and len(p["regimes"]) > 1 else str(v))
        for i in (0, 1):
            s = p["speedup"][i]
            cells.append("-" if s is None else f"{fmt_x(s)} ({fmt_ci(p['ci'][i])})")
        held = []
        for name, g in (p.get("regimes") or {}).items():
            h = g.get("second_holds_first")
            if h and h["covered"] is not None:
                held.append(f"{name}: " + ("yes" if h["covered"] else "flagged" if h["flagged"] else "**no**"))
        cells.append("; ".join(held) or "-")
        cells.append("yes" if p["equal"] else f"**no**: {p['why']}")
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"
