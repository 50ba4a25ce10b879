"""The results of `synclint bench --compiled`: schema check, a table, Markdown for the docs,
and the lines `synclint explain SYN60x` and `synclint check --report` show.

The shipped results are `synclint/data/bench-compiled.json` (the GPU, torch version and date
are in its `meta`); where the file is absent every reader says "not measured".
No torch here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional

from synclint.bench.figures import day, fmt_ci, fmt_us, fmt_x
from synclint.bench.results import shipped_document

SHIPPED = "data/bench-compiled.json"
MODE_WORDS = {"eager": "eager", "compile": "torch.compile", "reduce-overhead": 'mode="reduce-overhead"'}
NOT_MEASURED = "Not measured under torch.compile yet; run `synclint bench --compiled` on a GPU."


# ---------------------------------------------------------------- the document


def validate(data: Any) -> List[str]:
    """Problems with a compiled results document (empty: well formed)."""
    from synclint.bench.compiled import MODES, SCHEMA

    if not isinstance(data, dict) or not isinstance(data.get("meta"), dict) or not isinstance(data.get("results"), list):
        return ["expected an object with 'meta' (object) and 'results' (list)"]
    meta = data["meta"]
    errs = []
    if meta.get("schema") != SCHEMA:
        errs.append(f"meta.schema: {meta.get('schema')!r} is not {SCHEMA!r}")
    for k in ("torch", "date", "device"):
        if not isinstance(meta.get(k), str):
            errs.append(f"meta.{k}: missing")
    timed = meta.get("timed") is True
    if timed and meta.get("graphs_while_timing") != 0:
        errs.append(f"meta.graphs_while_timing: {meta.get('graphs_while_timing')!r} graphs were compiled while timing "
                    "(the steps timed were not the steady state)")
    for i, r in enumerate(data["results"]):
        where = f"results[{i}]"
        if not isinstance(r, dict) or not isinstance(r.get("code"), str) or not isinstance(r.get("case"), str):
            errs.append(f"{where}: needs 'code' and 'case'")
            continue
        where += f" ({r['code']} {r['case']})"
        variants = r.get("variants")
        if not isinstance(variants, dict):
            errs.append(f"{where}.variants: not an object")
            continue
        for key, v in variants.items():
            if not isinstance(v, dict) or v.get("mode") not in MODES or f"{v.get('mode')}/{v.get('side')}" != key:
                errs.append(f"{where}.variants[{key!r}]: mode/side do not match the key")
                continue
            if v.get("error"):
                continue
            if v["mode"] != "eager" and not isinstance(v.get("graphs"), int):
                errs.append(f"{where}.variants[{key!r}]: a compiled variant needs its graph count")
            if timed and not isinstance(v.get("step_us"), (int, float)):
                errs.append(f"{where}.variants[{key!r}]: a timed variant needs step_us")
        for name, c in (r.get("comparisons") or {}).items():
            ci = c.get("ci") if isinstance(c, dict) else None
            if not (isinstance(ci, list) and len(ci) == 2 and ci[0] <= ci[1]):
                errs.append(f"{where}.comparisons[{name!r}]: needs an interval [low, high]")
            elif c.get("verdict") == "faster" and not ci[0] > 1.0:
                errs.append(f"{where}.comparisons[{name!r}]: 'faster' but the interval {ci} does not exclude 1.0")
    return errs


@lru_cache(maxsize=None)
def shipped() -> Optional[Dict[str, Any]]:
    """The shipped compiled results, or None (absent, unreadable or invalid: "not measured")."""
    data = shipped_document(SHIPPED)
    return None if data is None or validate(data) else data


def results_for(code: str, data: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    data = shipped() if data is None else data
    return [r for r in (data or {}).get("results", []) if r.get("code") == code.upper()]


# ---------------------------------------------------------------- words


def graphs_phrase(r: Dict[str, Any], mode: str) -> str:
    """"2 graphs -> 1" for a mode: the pattern's graph count and the fix's."""
    vs = r.get("variants") or {}
    p, f = vs.get(f"{mode}/pattern") or {}, vs.get(f"{mode}/fixed") or {}
    if p.get("graphs") is None or f.get("graphs") is None:
        return ""
    word = "graph" if p["graphs"] == 1 else "graphs"
    return f"{p['graphs']} {word} -> {f['graphs']}"


def comparison_phrase(c: Optional[Dict[str, Any]]) -> str:
    """"1.24x (95% CI 1.20–1.28x), faster"."""
    if not c:
        return "-"
    return f"{fmt_x(c.get('speedup'))} ({fmt_ci(c.get('ci'))}), {c.get('verdict')}"


def measured_lines(code: str, data: Optional[Dict[str, Any]] = None) -> List[str]:
    """What `synclint explain` shows for a SYN6xx rule: per pair, the fix's speedup in each
    mode with graphs and compile times; NOT_MEASURED when there are no results."""
    data = shipped() if data is None else data
    rs = results_for(code, data)
    if not rs:
        return [NOT_MEASURED]
    m = data["meta"]
    if not m.get("timed"):
        return [NOT_MEASURED + " (the results at hand are a CPU run: graph counts only)"]
    lines = [f"Measured on {m.get('gpu') or 'GPU'}, torch {m.get('torch')}, {day(m.get('date'))}, "
             f"a step of {m['sizes'].get('depth')} linear layers (batch {m['sizes'].get('batch')}, width "
             f"{m['sizes'].get('width')}); the fix's speedup over the pattern per step, 95% CI:"]
    for r in rs:
        if r.get("error") or r.get("same_result") is False:
            lines.append(f"- `{r['pattern']}`: measurement failed ({r.get('error') or r.get('compare_note')})")
            continue
        parts = []
        for mode in m.get("modes") or []:
            c = (r.get("comparisons") or {}).get(mode)
            if c is None:
                continue
            g = graphs_phrase(r, mode)
            comp = _compile_times(r, mode)
            extra = "; ".join(x for x in (g, comp) if x)
            parts.append(f"{MODE_WORDS.get(mode, mode)} {comparison_phrase(c)}" + (f" [{extra}]" if extra else ""))
        lines.append(f"- `{r['pattern']}` -> `{r['fix']}`: " + "; ".join(parts))
        for mode in m.get("modes") or []:
            c = (r.get("comparisons") or {}).get(f"{mode}/captured")
            if c is not None:
                lines.append(f"  with {', '.join(r.get('capture') or [])} under {MODE_WORDS.get(mode, mode)} (no break, "
                             f"{_captured_wait(r, mode)}): the fix {comparison_phrase(c)}")
    return lines


def _captured_wait(r: Dict[str, Any], mode: str) -> str:
    """Whether the captured variant still synced in its measured step: a value captured
    into the graph that only feeds tensor math stays on the GPU (the host does not wait);
    one that sets a shape is still read by the host. (The debug mode sees the syncs that
    pass c10's two hooked places, not every one: docs/trace.md.)"""
    syncs = ((r.get("variants") or {}).get(f"{mode}/captured") or {}).get("syncs")
    if syncs is None:
        return "syncs not counted"
    return "the host still waits" if syncs else "no sync seen by torch's sync debug mode"


def _compile_times(r: Dict[str, Any], mode: str) -> str:
    vs = r.get("variants") or {}
    p, f = vs.get(f"{mode}/pattern") or {}, vs.get(f"{mode}/fixed") or {}
    if p.get("compile_s") is None or f.get("compile_s") is None:
        return ""
    return f"compile {p['compile_s']:.1f} s -> {f['compile_s']:.1f} s"


# ---------------------------------------------------------------- tables


HEAD = ("rule", "case", "mode", "side", "graphs", "breaks", "compile s", "warm-up s", "step us", "syncs",
        "vs fixed (95% CI)")


def rows(data: Dict[str, Any]) -> List[List[str]]:
    """One row per variant, in the order of the document."""
    out = []
    for r in data.get("results", []):
        if r.get("error"):
            out.append([r["code"], r["case"], "-", "-", "", "", "", "", "", "", f"error: {r['error']}"])
            continue
        for key, v in (r.get("variants") or {}).items():
            comp = (r.get("comparisons") or {}).get(v["mode"] if v["side"] == "pattern" else key)
            vs = "" if v["side"] == "fixed" else comparison_phrase(comp) if comp else "-"
            out.append([
                r["code"], r["case"], v["mode"], v["side"] + (f" ({', '.join(v['flags'])})" if v.get("flags") else ""),
                _n(v.get("graphs")), _n(v.get("breaks")), _s(v.get("compile_s")), _s(v.get("warmup_s")),
                fmt_us(v.get("step_us")) if v.get("step_us") is not None else "-", _n(v.get("syncs")),
                f"error: {v['error']}" if v.get("error") else vs,
            ])
    return out


def _n(x: Any) -> str:
    return "-" if x is None else str(x)


def _s(x: Any) -> str:
    return "-" if x is None else f"{x:.2f}"


def header(data: Dict[str, Any]) -> str:
    m = data["meta"]
    s = m.get("sizes") or {}
    where = (f"{m.get('gpu')}, torch {m.get('torch')}, CUDA {m.get('cuda')}, {day(m.get('date'))}" if m.get("timed")
             else f"{m.get('device')} (correctness and graph counts only), torch {m.get('torch')}, {day(m.get('date'))}")
    return (f"{where}; step: {s.get('depth')} linear layers, batch {s.get('batch')}, width {s.get('width')}; "
            f"backend {m.get('backend')}; {m.get('repeats')} loops x {m.get('passes')} passes; "
            f"graphs compiled while timing: {_n(m.get('graphs_while_timing'))}; wall {m.get('wall_s')} s")


def render_text(data: Dict[str, Any]) -> str:
    table = [list(HEAD)] + rows(data)
    widths = [max(len(row[i]) for row in table) for i in range(len(HEAD))]
    lines = [header(data), ""]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    from synclint.bench.compiled import failed

    bad = failed(data["results"])
    lines.append(f"\n{len(data['results'])} pair(s), {len(bad)} failed")
    return "\n".join(lines) + "\n"


def render_markdown(data: Optional[Dict[str, Any]], source: str = "synclint/data/bench-compiled.json") -> str:
    """The compiled section of docs/benchmarks.md (a placeholder when there are no results)."""
    out = ["## Compiled code: each SYN6xx pair eagerly, under torch.compile and with CUDA graphs", ""]
    if data is None:
        out += [
            "**Not measured yet** (no `synclint/data/bench-compiled.json`). On a GPU: "
            "`synclint bench --compiled --output-format json --output synclint/data/bench-compiled.json` "
            "(or `bash scripts/gpu_run.sh --compiled`, see docs/compiled.md), then "
            "`python scripts/gen_bench_docs.py`.",
            "",
        ]
        return "\n".join(out)
    m = data["meta"]
    out += [f"<!-- generated from {source} -->", "", header(data) + ".", "",
            "Graphs are counted by " + str(m.get("graphs_counted_by")) + "; breaks by "
            + str(m.get("breaks_counted_by")) + ". compile s is the first call (graphs traced and compiled), "
            "warm-up s the next calls (CUDA graphs recorded), step us the steady state. \"vs fixed\" is the "
            "pattern's (or the captured pattern's) step time over the fix's in the same mode.", "",
            "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for row in rows(data):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    out.append("")
    return "\n".join(out)
