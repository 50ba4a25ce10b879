"""The one output dispatcher: a pipeline `Outcome` printed in the format asked for (text,
concise, statistics, json, sarif, github, junit, gitlab) or handed to flake8, and the one
shape of an error line (`synclint: error: PATH: REASON`). The renderers themselves are
`synclint.report.render` (text, statistics, json) and `synclint.report.formats` (the CI formats)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import click

from synclint.findings import EXIT_ERROR, FileError, INTERNAL_CODE, default_docs_url


def error_line(message: object) -> str:
    return f"synclint: error: {message}"


def echo_errors(errors: Iterable[FileError]) -> None:
    from dataclasses import replace

    from synclint.paths import shown_path

    for e in errors:
        click.echo(error_line(replace(e, filename=shown_path(e.filename))), err=True)


def echo_skipped(skipped: Iterable[Tuple[str, str]]) -> None:
    from synclint.paths import shown_path

    for path, why in skipped:
        click.echo(f"synclint: skipped {shown_path(path)}: {why}", err=True)


def fail(message: str) -> "click.exceptions.Exit":
    """Print `message` as the run's error line; the exit (2) to raise."""

    click.echo(error_line(message), err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def render(fmt: str, outcome, *, statistics: bool = False, show_source: bool = True, unsafe: bool = False,
           verbose: bool = False, sources: Optional[Dict[str, List[str]]] = None,
           color: bool = True, summary: bool = True, docs_url: Optional[str] = None,
           show_rate: bool = False) -> Optional[str]:
    """The report of `outcome` (a `pipeline.Outcome`, findings sorted) in `fmt`; None when
    there is nothing to print. `sources`: the lines of files not on disk (stdin); `color`:
    whether the text report's styles would reach a terminal; `summary`: whether a text
    report ends with its counts (not with --quiet); `docs_url`: the run's `docs-url`, for
    the rule links; `show_rate`: the text report's rate chains (`--show-rate`)."""
    findings, errors = outcome.findings, outcome.all_errors
    if statistics and fmt == "json":
        from synclint.report.render import statistics as stats

        return stats(findings, "json") or None
    if statistics or fmt in ("text", "concise"):
        from synclint.report.render import statistics as stats, summary as summary_of, text_report

        if statistics:  # the count per rule, then the same last lines as a full report
            report = stats(findings, "text")
        else:
            report = text_report(findings, show_source=show_source and fmt == "text", sources=sources,
                                 color=color, show_rate=show_rate) if findings else ""
        if not summary:
            return report or None
        tail = summary_of(findings, errors, outcome.checked, unsafe, skipped=len(outcome.skipped), verbose=verbose,
                          silenced=outcome.suppressed, color=color)
        return f"{report}\n{tail}" if report else tail
    if fmt == "json":
        from synclint.report.render import json_report

        return json_report(findings, docs_url)
    import json

    from synclint.report import formats

    if fmt == "sarif":
        return json.dumps(formats.sarif_log(findings, errors, docs_url), indent=2, ensure_ascii=False)
    if fmt == "github":
        return formats.github_annotations(findings, errors, docs_url)
    if fmt == "junit":
        return formats.junit_xml(findings, errors, docs_url)
    if fmt == "gitlab":
        return json.dumps(formats.gitlab_code_quality(findings, errors), indent=2, ensure_ascii=False)
    raise ValueError(f"unknown output format {fmt!r}")


def emit(fmt: str, outcome, *, output_file: Optional[Path] = None, **options) -> None:
    """Print `render`'s report to stdout, or write it to `output_file` (atomically, without
    styles; an empty file when there is nothing to report). Raises OSError if it cannot."""
    if output_file is not None:
        from synclint.atomic import write_text_atomic

        text = render(fmt, outcome, color=False, **options)
        write_text_atomic(output_file, "" if text is None else text + "\n")
        return
    from click.globals import resolve_color_default
    from click.utils import should_strip_ansi

    # `echo`'s own test: styling each finding only for `echo` to strip it all again was a
    # third of a warm run's report
    color = not should_strip_ansi(click.get_text_stream("stdout"), resolve_color_default())
    text = render(fmt, outcome, color=color, **options)
    if text is not None:
        click.echo(text)


def flake8_lines(outcome) -> Iterator[Tuple[int, int, str]]:
    """(row, 0-based column, "CODE message") for flake8: each finding, and each file error as
    the same reason `check` prints, under the code of the rule that raised or SYN000."""
    for e in outcome.all_errors:
        yield e.row or 1, 0, f"{e.code or INTERNAL_CODE} {e.reason}"
    for f in outcome.findings:
        yield f.row, f.column - 1, f"{f.code} {f.message}"


def settings_text(setup, target: str) -> str:
    """What `check --show-settings` prints: the file the settings came from and each
    setting as the run would use it (command-line options applied), in TOML's spelling, with
    the rules the selection resolves to."""
    import json

    cfg = setup.cfg
    q = json.dumps

    def patterns(values, where) -> str:
        return f"{q(values)}  # relative to {where}" if values else "[]"

    lines = [f"Resolved settings for: {target}",
             f"Settings path: {cfg.path.resolve() if cfg.path else 'none (no [tool.synclint] found: the defaults)'}", ""]
    lines.append("select = " + (q(cfg.select) if cfg.select is not None else "(not set: the rules on by default)"))
    lines.append("extend-select = " + q(cfg.extend_select))
    lines.append("ignore = " + q(cfg.ignore))
    rules = setup.selected()
    lines.append(f"# the {len(rules)} rule{'s' if len(rules) != 1 else ''} selected")
    lines.append("rules = [" + "".join(f"\n    {q(r.CODE)},  # {r.NAME}" for r in rules) + ("\n]" if rules else "]"))
    if cfg.cli_exclude is None:
        lines.append("exclude = " + patterns(cfg.exclude, cfg.root))
    else:
        lines.append("exclude = " + patterns(cfg.cli_exclude, f"{cfg.cli_base} (--exclude)")
                     + (f"; replaces {q(cfg.exclude)}" if cfg.exclude else ""))
    lines.append("extend-exclude = " + patterns(cfg.extend_exclude, cfg.root))
    if cfg.cli_extend_exclude:
        lines.append("# --extend-exclude = " + patterns(cfg.cli_extend_exclude, cfg.cli_base))
    lines.append("per-file-ignores = {" + ", ".join(f"{q(k)} = {q(v)}" for k, v in cfg.per_file_ignores.items()) + "}")
    lines.append(f"hot-only = {str(cfg.hot_only).lower()}")
    lines.append(f"tests-hot-only = {str(cfg.tests_hot_only).lower()}")
    lines.append("cache-dir = " + (q(str(setup.cache_dir)) if setup.cache_dir else "(none: --no-cache)"))
    lines.append("hot-functions = " + q(cfg.hot_functions))
    lines.append("cold-functions = " + q(cfg.cold_functions))
    lines.append(f"file-timeout = {cfg.file_timeout}" + ("  # no limit" if cfg.file_timeout == float("inf") else ""))

    lines.append("docs-url = " + (q(cfg.docs_url) if cfg.docs_url else f"(not set: {default_docs_url() or 'no links'})"))
    return "\n".join(lines)
