"""Output formats for `synclint check`: text (compiler style), json, statistics.

Text output uses click's styling (colour only on a terminal, plain in CI logs) so that a
one-file check does not pay for importing rich; rich renders `explain` and `rules`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Dict, List, Optional, Sequence

import click

from synclint.findings import FileError, Finding
from synclint.parse.source import finding_line
from synclint.paths import shown_path


def _unstyled(text: str, **_) -> str:
    return text


def text_report(findings: Sequence[Finding], show_source: bool = True,
                sources: Optional[Dict[str, List[str]]] = None, color: bool = True, show_rate: bool = False) -> str:
    """`sources`: the lines of files not to be read from disk (stdin). `color=False`: no
    styles at all, where `click.echo` would strip them again (a pipe, a CI log).
    `show_rate`: each finding's execution rate and the chain that gave it (`--show-rate`):
    a `= rate:` line, or at the end of the line without the source."""
    out: List[str] = []
    sources = dict(sources or {})
    style = click.style if color else _unstyled
    for f in findings:
        heat = style("hot", fg="red", bold=True) if f.hot else style("cold", fg="blue")
        loc = style(f"{shown_path(f.filename)}:{f.row}:{f.column}:", bold=True)
        out.append(f"{loc} {style(f.code, fg='red', bold=True)} [{heat}] {f.message}")
        if show_rate and not show_source:
            out[-1] += f" (rate: {rate_text(f)})"
        if show_source:
            gutter = " " * len(str(f.row))
            line = finding_line(f, sources)
            if line is not None:
                width = (f.end_column - f.column) if f.end_row == f.row else len(line) - f.column + 1
                line, column = _excerpt(line, f.column)
                width = min(width, len(line) - column + 1)
                # The caret's lead keeps the line's tabs, so it lines up at any tab width.
                lead = "".join("\t" if c == "\t" else " " for c in line[: column - 1])
                caret = lead + "^" * max(1, width)
                out.append(style(f"{gutter} |", fg="blue"))
                out.append(style(f"{f.row} |", fg="blue") + f" {line}")
                out.append(style(f"{gutter} |", fg="blue") + " " + style(caret, fg="red"))
            if f.fix_title:
                tag = " [*]" if _safe_fix(f) else ""  # [*]: what plain `--fix` applies
                out.append(style(f"{gutter} = help{tag}: ", fg="cyan") + f.fix_title)
            if show_rate:
                out.append(style(f"{gutter} = rate: ", fg="cyan") + rate_text(f))
            out.append(style(f"{gutter} = docs: ", fg="cyan") + f"`synclint explain {f.code}`")
            out.append("")
    return "\n".join(out)


def rate_text(f: Finding) -> str:
    """`"per step: train() loops over train_loader (train.py:41) -> train_step"`."""
    from synclint.semantic.rates import described

    return shown_path(described(f.rate, f.rate_chain))


# A source line longer than this is shown in part, around the finding: a generated one-line
# file (300 KB of f-string, a finding every 3 characters) printed whole with each finding
# made a report of 30 GB.
EXCERPT_MAX = 1000


def _excerpt(line: str, column: int):
    """(the part of `line` a report shows, the finding's 1-based column in it)."""
    if len(line) <= EXCERPT_MAX:
        return line, column
    start = max(0, min(column - 1 - EXCERPT_MAX // 4, len(line) - EXCERPT_MAX))
    end = start + EXCERPT_MAX
    shown = ("..." if start else "") + line[start:end] + ("..." if end < len(line) else "")
    return shown, column - start + (3 if start else 0)


def _safe_fix(f: Finding) -> bool:
    return f.fix is not None and f.fix.applicability == "safe"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def summary(findings: Sequence[Finding], errors: Sequence[FileError], files: int, unsafe: bool, skipped: int = 0,
            verbose: bool = False, silenced: Optional[Dict[str, int]] = None, color: bool = True) -> str:
    """The last lines of a text check. "All checks passed!" only when every file named was
    checked and there was at least one; skipped folders are counted (`--verbose` names them).
    `color=False`: no styles (a file)."""
    style = click.style if color else _unstyled
    checked = f"{_n(files, 'file')} checked"
    if skipped:
        checked += f", {skipped} skipped" + ("" if verbose else " (--verbose names them)")
    if not findings and not files and not errors:
        msg = style("warning:", fg="yellow", bold=True) + f" no Python files to check ({checked})."
    elif not findings and errors:
        msg = f"No findings in the files that could be checked ({checked})."
    elif not findings:
        msg = style("All checks passed!", fg="green", bold=True) + f" ({checked})"
    else:
        hot = sum(f.hot for f in findings)
        nfiles = len({f.filename for f in findings})
        msg = (
            f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} "
            f"({hot} hot, {len(findings) - hot} cold) in {nfiles} file{'s' if nfiles != 1 else ''} "
            f"({checked})."
        )
        safe = sum(1 for f in findings if f.fix and f.fix.applicability == "safe")
        risky = sum(1 for f in findings if f.fix and f.fix.applicability == "unsafe")
        if safe:
            msg += f"\n[*] {safe} fixable with `synclint check --fix`."
        if risky and not unsafe:
            msg += f"\n{risky} more fixable with `--fix --unsafe-fixes` (review the change)."
    hidden = [f"{n} by `# noqa`" if how == "noqa" else f"{n} by the baseline"
              for how, n in (silenced or {}).items() if n]
    if hidden:
        msg += f"\nNot shown: {', '.join(hidden)}."
    if errors:
        msg += "\n" + style(f"{_n(len(errors), 'file')} could not be checked.", fg="red")
    return msg


def json_report(findings: Sequence[Finding], docs_url: Optional[str] = None) -> str:
    return json.dumps([f.to_json(docs_url) for f in findings], indent=2)


def statistics(findings: Sequence[Finding], fmt: str) -> str:
    counts = Counter(f.code for f in findings)
    hot = Counter(f.code for f in findings if f.hot)
    fixable = Counter(f.code for f in findings if _safe_fix(f))
    names = {f.code: f.name for f in findings}
    rows = sorted(counts, key=lambda c: (-counts[c], c))
    if fmt == "json":
        return json.dumps(
            [
                {"code": c, "name": names[c], "count": counts[c], "hot": hot[c], "fixable": fixable[c]}
                for c in rows
            ],
            indent=2,
        )
    lines = [f"{counts[c]:>5}  {c}  {names[c]:<42} {hot[c]:>4} hot{'  [*]' if fixable[c] else ''}" for c in rows]
    return "\n".join(lines)


# `synclint rules`: the listing

FIX_SHORT = {"always": "always", "sometimes": "some", "never": "never"}
RULES_HEADER = "CODE   DEFAULT FIX    NAME: SUMMARY"


def rules_text(rows: Sequence[dict], width: Optional[int]) -> str:
    """The rules (`synclint rules --output-format json`'s rows) under a header, a heading
    per family, one line per rule, each cut to `width` (None: whole)."""
    out = [RULES_HEADER]
    families = Counter(r["family"] for r in rows)
    family = None
    for r in rows:
        if r["family"] != family:
            family = r["family"]
            n = families[family]
            out += ["", f"{r['code'][:4]}xx  {family} ({n} rule{'s' if n != 1 else ''})"]
        out.append(rule_line(r, width))
    return "\n".join(out)


def rule_line(r: dict, width: Optional[int]) -> str:
    """`SYN101 on      never  tensor-item: summary`, cut at a word boundary to `width`."""
    head = f"{r['code']} {'on' if r['default'] else 'off':<7} {FIX_SHORT[r['fix']]:<6} {r['name']}{_hot_only(r)}: "
    summary = r["summary"].removeprefix("Flags ")  # every summary starts so; the listing says it once
    if width is None or len(head) + len(summary) <= width:
        return head + summary
    room = width - len(head) - 1  # 1 for the ellipsis
    cut = summary[:room + 1].rsplit(" ", 1)[0] if room > 0 else ""
    if not cut or len(cut) > room:
        cut = ""
    return head + cut + "…"  # no word fits: the name and an ellipsis, never half a word


def _hot_only(r: dict) -> str:
    """The mark of a rule that reports hot sites only (`Rule.HOT_ONLY`)."""
    return " (hot only)" if r.get("hot_only") else ""


def rules_table(rows: Sequence[dict]) -> None:
    """The rules as a table (rich), a section per family: the summary column wraps, the
    others never do, so that every column keeps its width at 80 columns."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="synclint rules", show_lines=False)
    table.add_column("code", no_wrap=True)
    table.add_column("default", no_wrap=True)
    table.add_column("fix", no_wrap=True)
    table.add_column("name", overflow="fold", ratio=2)
    table.add_column("summary", ratio=3, min_width=16)
    family = None
    for r in rows:
        if r["family"] != family:
            if family is not None:
                table.add_section()
            family = r["family"]
            table.add_row(f"[bold]{r['code'][:4]}xx[/]", "", "", f"[bold]{family}[/]", "")
        table.add_row(r["code"], "on" if r["default"] else "off", FIX_SHORT[r["fix"]], r["name"] + _hot_only(r),
                      r["summary"].removeprefix("Flags "))
    Console().print(table)
