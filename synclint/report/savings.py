"""`synclint check --report FILE`: a Markdown report that joins each finding with what its
rule's fix was measured to save by `synclint bench` (the results shipped with the package
by default, `synclint/data/bench.json`, which name the GPU they were taken on; or `--bench
FILE`).

What the harness measured is what the report says: a fix that was not faster on the GPU
at hand is reported as not faster, with the reason the harness gave (memory, fewer syncs,
inside the noise, slower). The GPU, torch/CUDA versions and the date of the measurement
head the report.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from synclint.findings import Finding
from synclint.jsonio import read_json
from synclint.paths import shown_path

SHIPPED = "data/bench.json"


class ReportError(Exception):
    """The bench results cannot be used (unreadable, not JSON, wrong shape)."""


# ---------------------------------------------------------------- bench data


def load_bench(bench_file: Optional[Path]) -> Tuple[Optional[Dict[str, Any]], str]:
    """(results document or None, where it came from). An explicit file that cannot be
    used is an error; a missing shipped file is not (the report says so)."""
    if bench_file is not None:
        data = read_json(bench_file, ReportError)
        _check_shape(data, str(bench_file))
        return data, str(bench_file)
    try:
        from importlib.resources import files

        ref = files("synclint").joinpath(SHIPPED)
        if not ref.is_file():
            return None, f"synclint/{SHIPPED}"
        data = json.loads(ref.read_text(encoding="utf-8"))
    except (OSError, ValueError, ModuleNotFoundError):
        return None, f"synclint/{SHIPPED}"
    try:
        _check_shape(data, f"synclint/{SHIPPED}")
    except ReportError:
        return None, f"synclint/{SHIPPED}"
    return data, f"synclint/{SHIPPED}"


def _check_shape(data: Any, where: str) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("meta"), dict) or not isinstance(data.get("results"), list):
        raise ReportError(f"{where}: not a `synclint bench` results file (expected 'meta' and 'results')")
    for i, r in enumerate(data["results"]):
        if not isinstance(r, dict) or not isinstance(r.get("code"), str):
            raise ReportError(f"{where}: results[{i}] has no rule code")


# ---------------------------------------------------------------- wording


# Number formats are the bench report's, so both documents print a measurement the same way.
from synclint.bench.figures import fmt_bytes as _bytes  # noqa: E402
from synclint.bench.figures import fmt_ci as _ci  # noqa: E402
from synclint.bench.figures import fmt_us, fmt_x as _x  # noqa: E402
from synclint.bench.report import ci_label as _ci_label  # noqa: E402
from synclint.build import VERSION


def _headline(r: Dict[str, Any]) -> Dict[str, Any]:
    """The regime a result's top-level figures come from (its interval says what kind it is)."""
    return (r.get("regimes") or {}).get(r.get("regime")) or r


def _us(x: Optional[float]) -> str:
    return "-" if x is None else f"{fmt_us(x)} µs"


def verdict_text(r: Optional[Dict[str, Any]], timed: bool = True) -> str:
    """The harness's verdict in words; anything but a measured speedup says "not faster"."""
    if r is None:
        return "not measured"
    v = r.get("verdict")
    s = r.get("speedup")
    if r.get("error") or v in ("failed", "error"):
        return f"measurement failed ({r.get('error') or v})"
    if r.get("same_result") is False:
        return "not verified: the fix did not compute the same result in the harness"
    if not timed or v == "not timed" or r.get("flagged_us") is None:
        return "not timed (the bench ran without a GPU)"
    if v == "faster":
        return f"{_x(s)} faster"  # the regime is said beside it, with the sizes (`measured_at`)
    if v == "memory":
        return (f"not faster ({_x(s)}); the gain is memory: peak {_bytes(r.get('peak_mem_flagged'))} → "
                f"{_bytes(r.get('peak_mem_fixed'))}")
    if v == "fewer syncs":
        syncs = ""
        if r.get("syncs_flagged") is not None:
            syncs = f": {r['syncs_flagged']} → {r['syncs_fixed']} per call"
        return f"not faster ({_x(s)}); fewer syncs{syncs}"
    if v == "no measurable gain":
        return f"not faster: no measurable gain ({_x(s)}, {_ci_label(_headline(r))} {_ci(r.get('ci'))})"
    if v == "undecided":
        return f"not shown faster: the runs do not settle it ({_x(s)}, {_ci_label(_headline(r))} {_ci(r.get('ci'))})"
    if v == "slower":
        return f"not faster: the fix was slower here ({_x(s)})"
    return f"not faster ({v})" if v else "not measured"


def _measured_detail(r: Dict[str, Any]) -> str:
    parts = [f"flagged {_us(r.get('flagged_us'))} → fixed {_us(r.get('fixed_us'))} per call"]
    if r.get("ci") is not None:
        parts.append(f"{_ci_label(_headline(r))} {_ci(r.get('ci'))}")
    if r.get("syncs_flagged") is not None:
        parts.append(f"syncs {r['syncs_flagged']} → {r['syncs_fixed']}")
    elif r.get("debug_mode_sees") is False:
        parts.append("syncs not visible to the debug mode")
    return "; ".join(parts)


def _sizes(r: Dict[str, Any]) -> str:
    """`n=10,000,000` from the pair's `sizes` (the inputs the figure was measured at)."""
    sizes = r.get("sizes")
    if not isinstance(sizes, dict) or not sizes:
        return "fixed inputs"
    return ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in sizes.items())


def _regime(r: Dict[str, Any], meta: Dict[str, Any]) -> str:
    """Under what load the figure was measured: the result's own `regime` where the bench
    records one (a word, or an object with a name/description), else the harness setting
    from `meta`: a steady-state loop behind this much queued GPU work."""
    regime = r.get("regime")
    if isinstance(regime, dict):
        regime = regime.get("description") or regime.get("name") or regime.get("label")
    if isinstance(regime, str) and regime.strip():
        return regime.strip()
    background = meta.get("background_us")
    if isinstance(background, (int, float)):
        return f"steady-state loop, {background / 1000:.1f} ms of GPU work queued"
    return "regime not recorded"


def _interval(r: Dict[str, Any]) -> str:
    """The speedup's interval, where the bench records one (`speedup_interval` or
    `interval`: [low, high])."""
    for key in ("speedup_interval", "interval"):
        iv = r.get(key)
        if isinstance(iv, (list, tuple)) and len(iv) == 2 and all(isinstance(x, (int, float)) for x in iv):
            return f"interval {_x(iv[0])}–{_x(iv[1])}"
        if isinstance(iv, dict) and isinstance(iv.get("low"), (int, float)) and isinstance(iv.get("high"), (int, float)):
            level = f"{iv['level']:.0%} " if isinstance(iv.get("level"), (int, float)) else ""
            return f"{level}interval {_x(iv['low'])}–{_x(iv['high'])}"
    return ""


def measured_at(r: Dict[str, Any], meta: Dict[str, Any]) -> str:
    """What a harness figure holds for: its sizes and regime (and interval, if recorded)."""
    parts = [_sizes(r), _regime(r, meta)]
    if _interval(r):
        parts.append(_interval(r))
    return "; ".join(parts)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _anchor(code: str, name: str) -> str:
    return f"{code}-{name}".lower()


def _where(f: Finding) -> str:
    try:
        rel = os.path.relpath(os.path.abspath(f.filename))
    except ValueError:
        rel = f.filename
    if rel.startswith(".."):
        rel = f.filename
    return f"{shown_path(rel.replace(os.sep, '/'))}:{f.row}:{f.column}"


# ---------------------------------------------------------------- the report


def render_report(findings: Sequence[Finding], bench: Optional[Dict[str, Any]], source: str,
                  now: Optional[_dt.datetime] = None, shipped: bool = False, trace: Any = None,
                  docs_url: Optional[str] = None) -> str:
    """`trace`: a joined trace (synclint.trace.join.Joined) of the same files, or None;
    `docs_url`: the run's `docs-url`, for the rule links."""

    now = now or _dt.datetime.now(_dt.timezone.utc)
    meta = (bench or {}).get("meta", {})
    timed = bench is not None and meta.get("timed", True) is not False
    by_code: Dict[str, Dict[str, Any]] = {}
    for r in (bench or {}).get("results", []):
        by_code[r["code"].upper()] = r

    out: List[str] = ["# synclint report: what fixing these findings was measured to save", ""]
    hot = sum(f.hot for f in findings)
    files = len({f.filename for f in findings})
    out.append(
        f"{len(findings)} finding{'s' if len(findings) != 1 else ''} ({hot} hot, {len(findings) - hot} cold) "
        f"in {files} file{'s' if files != 1 else ''}; checked {now.strftime('%Y-%m-%d %H:%M UTC')} "
        f"with synclint {VERSION}."
    )
    out.append("")
    if bench is None:
        out.append(
            f"**No bench results:** `{source}` was not found, so no speedups are shown. Run "
            "`synclint bench` on a GPU and pass its JSON with `--bench FILE`."
        )
    else:
        gpu = meta.get("gpu") or "no GPU"
        cuda = f", CUDA {meta['cuda']}" if meta.get("cuda") else ""
        date = str(meta.get("date") or "unknown date")[:10]
        out.append(
            f"**Measured on {gpu}** (torch {meta.get('torch', '?')}{cuda}) on **{date}** by `synclint bench`; "
            f"source: `{source}`{' (shipped with synclint)' if shipped else ''}."
        )
        if not timed:
            out.append("")
            out.append("These bench results were not timed on a GPU (the harness only checked that each "
                       "pattern and its fix compute the same result), so no speedups are shown.")
        else:
            out.append("")
            out.append(
                "A speedup is the time per call of the rule's flagged pattern divided by that of its fix, in the "
                "harness's benchmark (a steady-state loop with GPU work queued). What your code gains depends "
                "on its sizes and on how often the line runs: a hot finding runs every iteration."
            )
    out.append("")
    in_run: Dict[int, str] = {}
    if trace is not None:
        from synclint.trace.output import measured_cells, trace_section

        in_run = measured_cells(trace)
        out += trace_section(trace, str(trace.trace.meta.get("source", "trace")))
    if not findings:
        out.append("No findings.")
        return "\n".join(out) + "\n"

    groups: Dict[str, List[Finding]] = {}
    for f in findings:
        groups.setdefault(f.code, []).append(f)

    def speed(code: str) -> float:
        r = by_code.get(code)
        if not timed or r is None or r.get("verdict") != "faster" or r.get("speedup") is None:
            return 0.0
        return float(r["speedup"])

    order = sorted(groups, key=lambda c: (not any(f.hot for f in groups[c]), -speed(c), c))

    out += ["## Summary", "",
            "| rule | findings | hot | measured per call (flagged → fixed) | measured at (sizes; regime) | verdict |",
            "|---|---:|---:|---|---|---|"]
    for code in order:
        fs = groups[code]
        r = by_code.get(code)
        name = fs[0].name
        measured = at = "-"
        if timed and r is not None and r.get("flagged_us") is not None:
            measured = f"{_us(r.get('flagged_us'))} → {_us(r.get('fixed_us'))}"
            at = measured_at(r, meta)
        out.append(
            f"| [{code} {name}](#{_anchor(code, name)}) | {len(fs)} | {sum(f.hot for f in fs)} | {measured} | "
            f"{_cell(at)} | {_cell(verdict_text(r, timed) if bench is not None else 'no bench data')} |"
        )
    out.append("")

    for code in order:
        fs = sorted(groups[code], key=lambda f: (not f.hot, f.sort_key()))
        r = by_code.get(code)
        name = fs[0].name
        verdict = verdict_text(r, timed) if bench is not None else "no bench data"
        out.append(f"## {code} {name}")
        out.append("")
        if bench is not None and r is not None and timed and r.get("flagged_us") is not None:
            out.append(f"Fix measured: **{verdict}** at {measured_at(r, meta)} ({_measured_detail(r)}). "
                       "Your sizes and load decide what you gain.")
        else:
            out.append(f"Fix measured: **{verdict}**.")
        if r is not None and r.get("condition"):
            out.append(f"The fix is equivalent when: {r['condition']}.")
        out += _compiled_measured(code)
        url = fs[0].url(docs_url)
        page = f" or [{name}]({url})" if url else ""
        out.append(f"What to do: `synclint explain {code}`{page}.")
        out.append("")
        out.append("| where | heat | finding | fix |" + (" in your run |" if trace is not None else ""))
        out.append("|---|---|---|---|" + ("---|" if trace is not None else ""))
        for f in fs:
            if f.fix is None:
                fix = "-"
            else:
                fix = "safe (`--fix`)" if f.fix.applicability == "safe" else "unsafe (`--fix --unsafe-fixes`)"
            heat = "**hot**" if f.hot else "cold"
            run = f" {_cell(in_run.get(id(f), '-'))} |" if trace is not None else ""
            out.append(f"| `{_cell(_where(f))}` | {heat} | {_cell(f.message)} | {fix} |{run}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _compiled_measured(code: str) -> List[str]:
    """What the compiled pairs of a SYN6xx rule measured (synclint/bench/compiled_report.py)."""
    from synclint.bench.compiled_pairs import codes
    from synclint.bench.compiled_report import NOT_MEASURED, measured_lines

    if code not in codes():
        return []
    lines = measured_lines(code)
    if lines[0].startswith(NOT_MEASURED):
        return ["Under torch.compile: not measured (`synclint bench --compiled` on a GPU)."]
    return ["", "Under torch.compile: " + lines[0], ""] + lines[1:] + [""]


def write_report(findings: Sequence[Finding], report_file: Path, bench_file: Optional[Path] = None,
                 trace_file: Optional[Path] = None, docs_url: Optional[str] = None) -> None:
    """Called by `synclint check --report FILE [--bench FILE] [--trace FILE]`; exits 2 on
    unusable bench data or trace."""
    from synclint.atomic import write_text_atomic

    try:
        bench, source = load_bench(Path(bench_file) if bench_file is not None else None)
        joined = _joined_trace(findings, trace_file) if trace_file is not None else None
        text = render_report(findings, bench, source, shipped=bench_file is None, trace=joined, docs_url=docs_url)
        write_text_atomic(report_file, text)
    except (ReportError, OSError) as e:
        import click

        msg = str(e) if isinstance(e, ReportError) else f"{report_file}: cannot write: {e.strerror or e}"
        click.echo(f"synclint: error: {msg}", err=True)
        raise click.exceptions.Exit(2)
    if bench is None:
        import click

        click.echo(f"synclint: note: no bench results ({source} not found); the report shows no speedups.", err=True)


def _joined_trace(findings: Sequence[Finding], trace_file: Path) -> Any:
    """The trace of a run of the same files, joined with these findings (file names in the
    trace are relative to its root: the trace's own root if it exists here, else the
    working directory)."""
    from synclint.trace.join import join, source_root
    from synclint.trace.schema import TraceError, load

    try:
        trace = load(str(trace_file))
    except TraceError as e:
        raise ReportError(str(e)) from None
    trace.meta.setdefault("source", str(trace_file))
    return join(trace, findings, source_root(trace))
