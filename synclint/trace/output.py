"""The joined trace as text (a rich table, most blocked first), JSON (versioned) and
Markdown (`--report`)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from synclint.trace.join import CONFIRMED, MISSED, NOT_REACHED, BreakRow, Joined, Row

JOIN_SCHEMA, JOIN_VERSION = "synclint-trace-join", 1

_STATUS_WORDS = {
    CONFIRMED: "confirmed",
    MISSED: "missed by the rules",
    NOT_REACHED: "not reached / no sync",
}


def status_words(row: Row) -> str:
    if row.status == NOT_REACHED and row.ran is not None:
        return "ran, no sync" if row.ran else "not run in the window"
    return _STATUS_WORDS[row.status]


def break_status_words(row: BreakRow) -> str:
    # Dynamo compiles when code first runs, usually during the warm-up: the lines record
    # (the window) says whether the line ran, not whether it ran compiled
    if row.status == NOT_REACHED:
        return "no break in the run"
    return _STATUS_WORDS[row.status]


def _ms(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.1f}"


def _pct(joined: Joined, ms: float) -> str:
    share = joined.share(ms)
    return "-" if share is None else f"{share:.1f}%"


def headline(joined: Joined) -> str:
    m = joined.trace.meta
    if m.get("compile_only"):
        return (f"graph breaks only (--compile-only: no syncs recorded), {_ms(joined.trace.wall_ms)} ms wall; "
                f"torch {m.get('torch', '?')}, {str(m.get('date', '?'))[:10]}")
    blocked = joined.trace.blocked_ms
    syncs = sum(s.count for s in joined.trace.sites)
    steps = f", {m['steps']} steps" if m.get("steps") else ""
    timed = sum(s.timed for s in joined.trace.sites)
    # The first sync at a line teaches the clock where to look (timing.py): say how many were timed.
    of = "" if timed == syncs else f" ({timed} of them timed)"
    return (f"{syncs} syncs at {len(joined.trace.sites)} sites{of} blocked the host {_ms(blocked)} ms of "
            f"{_ms(joined.trace.wall_ms)} ms wall ({_pct(joined, blocked)}){steps}; "
            f"{m.get('gpu', '?')}, torch {m.get('torch', '?')}, {str(m.get('date', '?'))[:10]}")


def _counts(joined: Joined) -> Dict[str, int]:
    return {s: len(joined.by_status(s)) for s in (CONFIRMED, MISSED, NOT_REACHED)}


def _break_counts(joined: Joined) -> Dict[str, int]:
    return {s: sum(1 for r in joined.breaks if r.status == s) for s in (CONFIRMED, MISSED, NOT_REACHED)}


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _summary_line(joined: Joined) -> str:
    c = _counts(joined)
    head = f"{_n(c[CONFIRMED], 'finding')} confirmed, {_n(c[MISSED], 'sync site')} missed by the rules, "
    if joined.trace.lines is None:
        return head + f"{_n(c[NOT_REACHED], 'finding')} not reached or not a sync in this run." + _silenced(joined)
    ran = sum(1 for r in joined.by_status(NOT_REACHED) if r.ran)
    return (head + f"{_n(ran, 'finding')} ran without a sync, {c[NOT_REACHED] - ran} not run in the window."
            + _silenced(joined))


def _silenced(joined: Joined) -> str:
    """What the check left out, as `synclint check` counts it (noqa, the baseline)."""
    parts = [f"{n} by {'# noqa' if why == 'noqa' else 'the baseline'}"
             for why, n in sorted(joined.suppressed.items(), reverse=True) if n]
    return f" Not shown: {', '.join(parts)}." if parts else ""


def break_headline(joined: Joined) -> str:
    comp = joined.trace.compile
    assert comp is not None
    n = sum(b.count for b in comp.breaks)
    rec = sum(r.count for r in comp.recompiles)
    return (f"Dynamo: {_n(n, 'graph break')} at {_n(len({(b.file, b.line) for b in comp.breaks}), 'line')}, "
            f"{_n(rec, 'recompilation')} of {_n(len(comp.recompiles), 'function')}")


def _break_summary(joined: Joined) -> str:
    c = _break_counts(joined)
    return (f"{_n(c[CONFIRMED], 'compile finding')} confirmed, {_n(c[MISSED], 'graph-break line')} missed by the "
            f"rules, {_n(c[NOT_REACHED], 'compile finding')} with no break in the run.")


def _rules(row: Row) -> str:
    return ", ".join(row.codes) or "-"


def _debug(row: Row) -> str:
    seen = [s.debug_mode for s in row.sites if s.debug_mode is not None]
    return str(sum(seen)) if seen else "-"


def render_text(joined: Joined, limit: Optional[int] = None) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buf = StringIO()
    if joined.trace.meta.get("compile_only"):  # no syncs were recorded: nothing to confirm or miss
        buf.write(headline(joined) + "\n")
        if joined.trace.compile is not None:
            _break_text(joined, limit, buf)
        else:
            buf.write(f"Nothing recorded: {joined.trace.meta.get('compile')}\n")
        return buf.getvalue()
    table = Table(title=headline(joined), title_justify="left", show_lines=False)
    for col, just in (("where", "left"), ("status", "left"), ("rules", "left"), ("what blocked", "left"),
                      ("syncs", "right"), ("debug mode", "right"), ("blocked ms", "right"), ("% wall", "right")):
        table.add_column(col, justify=just, overflow="fold", no_wrap=col in ("where", "syncs", "blocked ms", "% wall"))
    rows = joined.rows if limit is None else joined.rows[:limit]
    for r in rows:
        table.add_row(f"{r.file}:{r.line}", status_words(r), _rules(r), r.op or "-",
                      str(r.count) if r.sites else "0", _debug(r),
                      _ms(r.blocked_ms) if r.sites else "-", _pct(joined, r.blocked_ms) if r.sites else "-")
    Console(file=buf, width=160, force_terminal=False, color_system=None).print(table)
    buf.write(_summary_line(joined) + "\n")
    if limit is not None and len(joined.rows) > limit:
        buf.write(f"({len(joined.rows) - limit} more rows: --format json or --report FILE for all)\n")
    if joined.trace.compile is not None and (joined.breaks or joined.trace.compile.recompiles):
        _break_text(joined, limit, buf)
    return buf.getvalue()


def _break_text(joined: Joined, limit: Optional[int], buf: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=break_headline(joined), title_justify="left", show_lines=False)
    for col, just in (("where", "left"), ("status", "left"), ("rules", "left"), ("graph break", "left"),
                      ("times", "right"), ("line", "left")):
        table.add_column(col, justify=just, overflow="fold", no_wrap=col in ("where", "times"))
    rows = joined.breaks if limit is None else joined.breaks[:limit]
    for r in rows:
        table.add_row(f"{r.file}:{r.line}", break_status_words(r), _rules(r), escape(r.what or "-"), str(r.count),
                      escape(r.source[:60]))
    buf.write("\n")
    Console(file=buf, width=160, force_terminal=False, color_system=None).print(table)
    buf.write(_break_summary(joined) + "\n")
    if limit is not None and len(joined.breaks) > limit:
        buf.write(f"({len(joined.breaks) - limit} more rows: --format json or --report FILE for all)\n")
    for r in joined.trace.compile.recompiles[:limit]:
        guard = f": {r.guards[0][:100]}" if r.guards else ""
        buf.write(f"recompiled {r.count}x: {r.file}:{r.line} {r.function}{guard}\n")


def _row_json(joined: Joined, r: Row) -> Dict[str, Any]:
    return {
        "status": r.status,
        "ran": r.ran,
        "file": r.file,
        "line": r.line,
        "rules": r.codes,
        "findings": [f.to_json() for f in r.findings],
        "what": r.op or None,
        "source": r.source,
        "count": r.count,
        "debug_mode": None if _debug(r) == "-" else int(_debug(r)),
        "blocked_ms": round(r.blocked_ms, 4),
        "wall_share": None if joined.share(r.blocked_ms) is None else round(joined.share(r.blocked_ms), 3),
        "sites": [{"kind": s.kind, "via": s.via, "count": s.count, "blocked_ms": s.blocked_ms,
                   "callers": s.callers, "threads": s.threads, "user": s.user} for s in r.sites],
    }


def _break_row_json(r: BreakRow) -> Dict[str, Any]:
    return {
        "status": r.status,
        "file": r.file,
        "line": r.line,
        "rules": r.codes,
        "findings": [f.to_json() for f in r.findings],
        "source": r.source,
        "count": r.count,
        "breaks": [{"gb_id": b.gb_id, "gb_type": b.gb_type, "explanation": b.explanation, "count": b.count,
                    "dynamo_at": b.dynamo_at, "callers": b.callers, "skipped": b.skipped, "user": b.user,
                    "error": b.error}
                   for b in r.breaks],
    }


def render_json(joined: Joined) -> str:
    doc: Dict[str, Any] = {
        "schema": JOIN_SCHEMA,
        "version": JOIN_VERSION,
        "meta": joined.trace.meta,
        "summary": {**_counts(joined), "syncs": sum(s.count for s in joined.trace.sites),
                    "blocked_ms": round(joined.trace.blocked_ms, 4), "wall_ms": joined.trace.wall_ms,
                    "suppressed": joined.suppressed},
        "rows": [_row_json(joined, r) for r in joined.rows],
    }
    comp = joined.trace.compile
    if comp is not None:  # (absent for a trace recorded before graph breaks were)
        doc["summary"]["breaks"] = _break_counts(joined)
        doc["breaks"] = [_break_row_json(r) for r in joined.breaks]
        doc["recompiles"] = [{"file": r.file, "line": r.line, "function": r.function, "count": r.count,
                              "guards": r.guards, "user": r.user} for r in comp.recompiles]
        doc["recompile_limit_hits"] = comp.recompile_limit_hits
    return json.dumps(doc, indent=1) + "\n"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(joined: Joined) -> str:
    m = joined.trace.meta
    out: List[str] = ["# synclint trace: the syncs of one run, joined with the static findings", ""]
    out.append(headline(joined) + ".")
    out.append("")
    how = (f"blocked time: {m['timing']}" if m.get("timing")
           else f"debug-mode cross-check: {'on' if m.get('debug_mode') else 'off'}")  # a trace from before the clock
    out.append(f"Command: `{' '.join(m.get('command') or [])}`; stopped: {m.get('stopped', '?')}; {how}.")
    prof = m.get("profiler")
    if isinstance(prof, dict) and prof.get("sync_ms") is not None:
        out.append(f"The profiler, in the same run, timed {_ms(prof['sync_ms'])} ms in blocking CUDA calls "
                   f"({', '.join(f'{k} ×{v[0]} {_ms(v[1])} ms' for k, v in prof.get('calls', {}).items())}).")
    out.append("")
    if not m.get("compile_only"):
        out.append(_summary_line(joined))
        out.append("")
        out += ["| where | status | rules | what blocked | syncs | blocked ms | % wall | line |",
                "|---|---|---|---|---:|---:|---:|---|"]
        for r in joined.rows:
            out.append(
                f"| `{_cell(r.file)}:{r.line}` | {status_words(r)} | {_cell(_rules(r))} | {_cell(r.op or '-')} | "
                f"{r.count} | {_ms(r.blocked_ms) if r.sites else '-'} | "
                f"{_pct(joined, r.blocked_ms) if r.sites else '-'} | `{_cell(r.source)}` |")
        out.append("")
    comp = joined.trace.compile
    if comp is not None and (joined.breaks or comp.recompiles):
        out += ["## Graph breaks and recompilations", "", break_headline(joined) + ".", "", _break_summary(joined), "",
                "| where | status | rules | graph break | times | line |", "|---|---|---|---|---:|---|"]
        for r in joined.breaks:
            out.append(f"| `{_cell(r.file)}:{r.line}` | {break_status_words(r)} | {_cell(_rules(r))} | "
                       f"{_cell(r.what or '-')} | {r.count} | `{_cell(r.source)}` |")
        if comp.recompiles:
            out += ["", "| recompiled | function | times | first failed guard |", "|---|---|---:|---|"]
            for rc in comp.recompiles:
                out.append(f"| `{_cell(rc.file)}:{rc.line}` | `{_cell(rc.function)}` | {rc.count} | "
                           f"{_cell(rc.guards[0] if rc.guards else '-')} |")
        out.append("")
    out.append("What next: fix the confirmed findings from the top (`synclint explain CODE`); for a missed "
               "sync, read its line: it syncs in this run although no rule flags it.")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- for `check --report --trace`


def measured_cells(joined: Joined) -> Dict[int, str]:
    """id(finding) -> what the run measured at its line, for the report's per-finding table."""
    cells: Dict[int, str] = {}
    for r in joined.rows:
        for f in r.findings:
            if r.status == CONFIRMED:
                cells[id(f)] = f"{r.count} syncs, {_ms(r.blocked_ms)} ms ({_pct(joined, r.blocked_ms)} of wall)"
            else:
                cells[id(f)] = {None: "not reached / no sync in the run", True: "ran, no sync in the run",
                                False: "not run in the traced window"}[r.ran]
    for b in joined.breaks:  # a compile finding: whether Dynamo broke the graph there, beside its syncs
        for f in b.findings:
            said = (f"graph break ({b.what}, {_n(b.count, 'compilation')})" if b.status == CONFIRMED
                    else "no graph break in the run")
            cells[id(f)] = f"{cells[id(f)]}; {said}" if id(f) in cells and not joined.trace.meta.get("compile_only") \
                else said
    return cells


def trace_section(joined: Joined, source: str) -> List[str]:
    """The report's lines about the trace: where it came from, then the syncs no rule flags."""
    out = [f"**Traced run:** `{source}`: {headline(joined)}. The column *in your run* is what that run "
           "measured at each finding's line (syncs and host time blocked).", ""]
    broken = [r for r in joined.breaks if r.status == MISSED]
    if broken:
        out += ["## Graph breaks the rules missed", "",
                "Dynamo broke the graph on these lines in the traced run but no enabled compile rule flags them.", "",
                "| where | graph break | times | line |", "|---|---|---:|---|"]
        for r in broken:
            out.append(f"| `{_cell(r.file)}:{r.line}` | {_cell(r.what)} | {r.count} | `{_cell(r.source)}` |")
        out.append("")
    missed = joined.by_status(MISSED)
    if missed:
        out += ["## Syncs the rules missed", "",
                "These lines synced in the traced run but no enabled rule flags them.", "",
                "| where | what blocked | syncs | blocked ms | % wall | line |", "|---|---|---:|---:|---:|---|"]
        for r in missed:
            out.append(f"| `{_cell(r.file)}:{r.line}` | {_cell(r.op or '-')} | {r.count} | {_ms(r.blocked_ms)} | "
                       f"{_pct(joined, r.blocked_ms)} | `{_cell(r.source)}` |")
        out.append("")
    return out
