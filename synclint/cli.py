"""The `synclint` command line (click). Exit codes: 0 clean, 1 findings, 2 usage/input errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence

import click

from synclint import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ["text", "concise", "json", "sarif", "github", "junit", "gitlab"]


def _split(values: Sequence[str]) -> List[str]:
    """`--select SYN1,SYN2 --select SYN401` -> ['SYN1', 'SYN2', 'SYN401']."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"synclint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


_FAST_EXIT = []  # non-empty once `check` has run: the process may end without teardown


class _Group(click.Group):
    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Run as the program (`synclint check ...`; not CliRunner, which passes args), end a
        `check` with os._exit once the output is flushed: freeing LibCST's classes and the
        parsed trees at interpreter exit took about 40 ms, a sixth of a one-file check."""
        if args is not None or not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        except SystemExit as e:
            if not _FAST_EXIT:
                raise
            code = e.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed pipe (`synclint check | head`): nothing left to say
                pass
        os._exit(code)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt, SystemExit):
            raise
        except BrokenPipeError:  # `synclint check | head`
            sys.stderr.close()
            raise click.exceptions.Exit(EXIT_ERROR)
        except Exception as e:  # never a traceback for the user
            click.echo(f"synclint: internal error: {type(e).__name__}: {e} (please report this)", err=True)
            raise click.exceptions.Exit(EXIT_ERROR)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="synclint")
def main() -> None:
    """Find the places where PyTorch code makes the CPU wait for the GPU.

    \b
    Start here:
      synclint check src/               check a tree (exit 1 if anything is found)
      synclint check --hot-only .       only findings in loops, forward(), *_step()
      synclint explain SYN101           what a rule flags, why it costs, the fix
      synclint rules                    every rule, its family and default
      synclint bench --device cuda      time each pattern against its fix on a GPU

    Configure in pyproject.toml under [tool.synclint]; silence a line with
    `# noqa: SYN101`.
    """


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--select", multiple=True, metavar="RULES",
              help="Rules to enable instead of the defaults: codes (SYN101), prefixes (SYN1) or names; comma-separated, repeatable. ALL enables every rule.")
@click.option("--ignore", multiple=True, metavar="RULES", help="Rules to disable (codes, prefixes or names).")
@click.option("--extend-select", multiple=True, metavar="RULES", help="Rules to enable on top of the defaults, e.g. off-by-default ones.")
@click.option("--hot-only", is_flag=True, help="Report only findings in hot code (loop bodies, forward, *_step, functions called from loops).")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default="text", show_default=True,
              help="How to print findings: text (with source), concise (a line each), json, sarif, github, junit, gitlab (Code Quality).")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), help="Read [tool.synclint] from this file instead of the nearest pyproject.toml.")
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix/--diff, also apply fixes that may change behaviour.")
@click.option("--diff", is_flag=True, help="Show the fixes as a unified diff; write nothing (exit 1 if there is a diff).")
@click.option("--force-exclude", is_flag=True, help="Apply `exclude` to files named on the command line too (for pre-commit, which names every staged file).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache (.synclint_cache/).")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None, help="Worker processes (default: one per CPU).")
@click.option("--no-source", is_flag=True, help="One line per finding, without the source excerpt.")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), help="Ignore findings recorded in this baseline file (see `synclint baseline`).")
@click.option("--report", "report_file", type=click.Path(dir_okay=False, path_type=Path), help="Also write a Markdown report joining findings with measured speedups.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding (after --baseline), to adopt synclint on an existing tree; writes files, exits 0.")
@click.option("--stdin-filename", metavar="PATH", help="With `-` as the path: the name of the file read from stdin (config, per-file-ignores and output use it).")
@click.option("--verbose", "-v", is_flag=True, help="Also name each folder or file the walk skipped, and why.")
@click.option("--bench", "bench_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Bench results JSON for --report (default: the shipped H200 results).")
@click.option("--trace", "trace_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="A `synclint trace` JSON of a run of these files: --report shows each finding's measured cost in it.")
def check(paths, select, ignore, extend_select, hot_only, output_format, statistics, exit_zero,
          config_file, fix, unsafe_fixes, diff, force_exclude, no_cache, jobs, no_source, baseline, report_file, add_noqa,
          stdin_filename, verbose, bench_file, trace_file):
    """Check PATHS (files or directories; default: the current directory).

    \b
    Each finding reads  path:row:col: CODE [hot|cold] message
    followed by the source line, a caret and the fix hint.
    Exit status: 0 no findings, 1 findings, 2 usage error or a file
    that could not be read or parsed (the other files are still checked).

    \b
    Examples:
      synclint check src/ --select SYN1,SYN2
      synclint check train.py --output-format json
      synclint check . --extend-select SYN115 --ignore tensor-formatting
      synclint check . --fix --diff
    """
    from synclint.config import (
        ConfigError, cache_dir_for, drop_per_file_ignored, find_config, load_config, merge_cli,
    )
    from synclint.discovery import discover
    from synclint.registry import SelectionError, select as select_rules

    _FAST_EXIT.append(True)
    if add_noqa and (fix or diff):
        raise _fail("--add-noqa cannot be combined with --fix or --diff")
    if trace_file is not None and report_file is None:
        raise _fail("--trace goes with --report FILE (the report shows the traced cost per finding)")
    paths = list(paths) or ["."]
    stdin = paths == ["-"]
    if "-" in paths and not stdin:
        raise _fail("`-` (read stdin) cannot be mixed with other paths")
    if stdin_filename and not stdin:
        raise _fail("--stdin-filename needs `-` as the path")
    try:
        cfg_path = config_file if config_file else find_config(Path(stdin_filename or ".") if stdin else Path(paths[0]))
        if config_file and not config_file.exists():
            raise ConfigError(f"{config_file}: no such file")
        cfg = merge_cli(load_config(cfg_path), _split(select), _split(ignore), _split(extend_select), hot_only)

        def selected_rules():
            chosen = select_rules(cfg.select, cfg.ignore, cfg.extend_select)
            for codes in cfg.per_file_ignores.values():
                for c in codes:
                    _match(c)  # an unknown code in per-file-ignores is a configuration error
            return chosen

        cache_dir = cache_dir_for(cfg, no_cache)
        selection_key = _selection_key(cfg)
        # A selection with a cache file for this build was valid when that file was written,
        # so importing the rules (and LibCST) can wait until some file is not in the cache.
        if fix or diff or cache_dir is None or not _cache_path(cache_dir, [selection_key], cfg.hot_only).exists():
            rules = selected_rules()
        else:
            rules = selected_rules
    except (ConfigError, SelectionError) as e:
        raise _fail(str(e))
    if cfg.docs_url:
        from synclint.findings import set_docs_url

        set_docs_url(cfg.docs_url)

    if stdin:
        _check_stdin(stdin_filename or "-", cfg, rules() if callable(rules) else rules, output_format=output_format,
                     fix=fix, diff=diff, unsafe=unsafe_fixes, force_exclude=force_exclude, exit_zero=exit_zero,
                     no_source=no_source)
    found = discover(paths, cfg.exclude, cfg.root, force_exclude)
    files, missing = found.files, found.errors
    for m in missing:
        click.echo(f"synclint: error: {m}", err=True)
    if verbose:
        for path, why in found.skipped:
            click.echo(f"synclint: skipped {path}: {why}", err=True)

    from synclint.runner import check_files

    try:
        result = check_files(files, rules, hot_only=cfg.hot_only, cache_dir=cache_dir, jobs=jobs,
                             selection_key=selection_key)
    except SelectionError as e:
        raise _fail(str(e))
    from synclint.findings import split_internal

    findings, internal = split_internal(result.findings)
    result.errors.extend(internal)
    silenced = {"noqa": sum(1 for f in findings if f.suppressed == "noqa")}
    findings = drop_per_file_ignored(cfg, findings)
    if baseline is not None:
        from synclint.baseline import BaselineError, filter_new

        try:
            before = len(findings)
            findings = filter_new(findings, baseline)
            silenced["baseline"] = before - len(findings)
        except BaselineError as e:
            raise _fail(str(e))

    errors = list(result.errors)
    if add_noqa:
        from synclint.noqa import add_noqa as add_directives

        added, add_errors = add_directives(findings)
        errors.extend(add_errors)
        for e in errors:
            click.echo(f"synclint: error: {e}", err=True)
        click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        _exit(errors, missing, 0, exit_zero)
    if fix or diff:
        findings, fix_errors, diff_changed = _apply_fixes(
            findings, rules, cfg.hot_only, write=fix and not diff, unsafe=unsafe_fixes, show_diff=diff)
        errors.extend(fix_errors)
        if diff:
            for e in errors:
                click.echo(f"synclint: error: {e}", err=True)
            risky = sum(1 for f in findings if f.fix and f.fix.applicability == "unsafe")
            if risky and not unsafe_fixes:
                click.echo(f"{risky} more fix{'es' if risky != 1 else ''} with `--diff --unsafe-fixes` (review the change).", err=True)
            _exit(errors, missing, 0, exit_zero, diff_changed=diff_changed)

    findings.sort(key=lambda f: f.sort_key())
    for e in errors:
        click.echo(f"synclint: error: {e}", err=True)

    if report_file is not None:
        from synclint.report import write_report

        write_report(findings, report_file, bench_file, trace_file)

    if statistics:
        from synclint.render import statistics as stats

        text = stats(findings, "json" if output_format == "json" else "text")
        if text:
            click.echo(text)
    elif output_format in ("text", "concise"):
        from synclint.render import summary, text_report

        if findings:
            click.echo(text_report(findings, show_source=not no_source and output_format == "text"))
        click.echo(summary(findings, missing + errors, len(files), unsafe_fixes, skipped=len(found.skipped),
                           verbose=verbose, silenced=silenced))
    else:
        from synclint.formats import render

        click.echo(render(output_format, findings, missing + errors))
    _exit(errors, missing, len(findings), exit_zero)


def _check_stdin(name, cfg, rules, *, output_format, fix, diff, unsafe, force_exclude, exit_zero, no_source):
    """`synclint check - --stdin-filename PATH`: the text on stdin, checked as if it were PATH
    (its config, per-file-ignores and name). With --fix the fixed text goes to stdout and
    the findings left to stderr, as Ruff does; with --diff, the diff goes to stdout."""
    from synclint.config import drop_per_file_ignored
    from synclint.discovery import excluded_by_config
    from synclint.engine import LintError, decode_source, lint_source
    from synclint.findings import FileError, split_internal
    from synclint.fixes import FixError, fix_text
    from synclint.lines import source_lines

    data = sys.stdin.buffer.read()
    if force_exclude and name != "-" and excluded_by_config(name, cfg.exclude, cfg.root):
        if fix:
            click.echo(data.decode("utf-8", "surrogateescape"), nl=False)
        raise click.exceptions.Exit(EXIT_CLEAN)  # excluded: nothing to say, the text unchanged
    text = decode_source(name, data)
    if isinstance(text, FileError):
        raise _fail(str(text))

    def lint(source):
        found, internal = split_internal(lint_source(source, name, rules, hot_only=cfg.hot_only))
        for e in internal:
            click.echo(f"synclint: error: {e}", err=True)
        return drop_per_file_ignored(cfg, found)

    try:
        findings = lint(text)
        if fix or diff:
            new, n, findings = fix_text(text, lint, unsafe=unsafe)
            findings = drop_per_file_ignored(cfg, findings)
    except (LintError, FixError) as e:
        if fix:
            click.echo(text, nl=False)  # a filter never swallows its input
        raise _fail(f"{name}: {e}")
    if diff:
        import difflib

        click.echo("".join(difflib.unified_diff(source_lines(text, True), source_lines(new, True),
                                                fromfile=f"a/{name}", tofile=f"b/{name}")), nl=False)
        raise click.exceptions.Exit(EXIT_FINDINGS if n and not exit_zero else EXIT_CLEAN)
    if fix:
        click.echo(new, nl=False)
        for f in findings:
            click.echo(f"{f.filename}:{f.row}:{f.column}: {f.code} {f.message}", err=True)
    elif output_format == "text":
        from synclint.render import summary, text_report

        if findings:
            click.echo(text_report(findings, show_source=not no_source, sources={name: source_lines(text)}))
        click.echo(summary(findings, [], 1, unsafe))
    else:
        from synclint.formats import render

        click.echo(render(output_format, findings, []))
    raise click.exceptions.Exit(EXIT_FINDINGS if findings and not exit_zero else EXIT_CLEAN)


def _selection_key(cfg) -> str:
    """Everything the rule selection (and its validation) is made from, for the cache key."""
    pfi = sorted({c for codes in cfg.per_file_ignores.values() for c in codes})
    return "select=" + repr((sorted(cfg.select or ()), sorted(cfg.ignore), sorted(cfg.extend_select), pfi))


def _cache_path(cache_dir, key, hot_only):
    from synclint.cache import cache_path

    return cache_path(cache_dir, key, hot_only)


def _match(code):
    from synclint.registry import match

    return match(code)


def _exit(errors, missing, n_findings, exit_zero, diff_changed=False):
    if errors or missing:
        raise click.exceptions.Exit(EXIT_ERROR)
    if diff_changed and not exit_zero:
        raise click.exceptions.Exit(EXIT_FINDINGS)
    if n_findings and not exit_zero:
        raise click.exceptions.Exit(EXIT_FINDINGS)
    raise click.exceptions.Exit(EXIT_CLEAN)


def _apply_fixes(findings, rules, hot_only, *, write, unsafe, show_diff):
    """Fix each file that has fixable findings; returns (remaining findings, errors, whether
    a diff was shown). A SIGTERM meanwhile ends the run like Ctrl-C: the file being written
    is left as it was, with no temp file beside it."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _fix_files(findings, rules, hot_only, write=write, unsafe=unsafe, show_diff=show_diff)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return _fix_files(findings, rules, hot_only, write=write, unsafe=unsafe, show_diff=show_diff)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fix_files(findings, rules, hot_only, *, write, unsafe, show_diff):
    from synclint.atomic import write_text_atomic
    from synclint.engine import LintError, decode_source, lint_source, source_encoding
    from synclint.findings import FileError, split_internal
    from synclint.fixes import FixError, fix_text
    from synclint.lines import source_lines

    by_file = {}
    for f in findings:
        by_file.setdefault(f.filename, []).append(f)
    remaining, errors = [], []
    diff_changed = False
    fixed_count = 0
    for path, fs in by_file.items():
        if not any(f.fix and (f.fix.applicability == "safe" or unsafe) for f in fs):
            remaining.extend(fs)
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as e:
            errors.append(FileError(path, f"cannot read: {e.strerror or e}"))
            remaining.extend(fs)
            continue
        text = decode_source(path, data)
        if isinstance(text, FileError):
            errors.append(text)
            remaining.extend(fs)
            continue
        try:
            new, n, left = fix_text(text, lambda s: lint_source(s, path, rules, hot_only=hot_only), unsafe=unsafe)
        except (FixError, LintError) as e:
            errors.append(FileError(path, str(e)))
            remaining.extend(fs)
            continue
        if n and show_diff:
            diff_changed = True
            import difflib

            click.echo("".join(difflib.unified_diff(
                source_lines(text, True), source_lines(new, True), fromfile=f"a/{path}", tofile=f"b/{path}")), nl=False)
        elif n and write:
            try:  # in the file's own encoding, with its BOM if it had one
                write_text_atomic(path, new, source_encoding(data), data.startswith(b"\xef\xbb\xbf"))
            except (OSError, UnicodeEncodeError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else e
                errors.append(FileError(path, f"cannot write the fixes: {reason}; the file is unchanged"))
                remaining.extend(fs)
                continue
            fixed_count += n
        if write:
            left, internal = split_internal(left)
            errors.extend(internal)
        remaining.extend(left if write else fs)
    if write and fixed_count:
        click.echo(f"Fixed {fixed_count} finding{'s' if fixed_count != 1 else ''}.", err=True)
    return remaining, errors, diff_changed


@main.command()
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "table", "json"]),
              default="text", show_default=True,
              help="text: one line per rule (greppable); table: a table; json: every field.")
def rules(output_format):
    """List every rule, one line each: code, default (on/off), fix (always/some/never),
    name and summary.

    \b
    The summary is cut at a word to fit the terminal (or $COLUMNS); piped
    without $COLUMNS, lines are whole. Examples:
      synclint rules | grep -i mask
      synclint rules --format table
      synclint rules --output-format json
    """
    from synclint.config import ConfigError, find_config, load_config
    from synclint.findings import set_docs_url
    from synclint.registry import all_rules

    try:  # the rule links follow the project's `docs-url`, as `check` does
        set_docs_url(load_config(find_config(Path.cwd())).docs_url)
    except ConfigError as e:
        raise _fail(str(e))
    rows = [_rule_json(r) for r in all_rules()]
    if output_format == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    if output_format == "text":
        width = _listing_width()
        for r in rows:
            click.echo(_rule_line(r, width))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="synclint rules", show_lines=False)
    for col in ("code", "name", "family", "default", "fix", "summary"):
        table.add_column(col, overflow="fold", no_wrap=col in ("code", "name", "default", "fix"))
    for r in rows:
        table.add_row(r["code"], r["name"], r["family"], "on" if r["default"] else "off",
                      r["fix"], r["summary"])
    Console().print(table)


FIX_SHORT = {"always": "always", "sometimes": "some", "never": "never"}


def _listing_width() -> Optional[int]:
    """Where to cut a rule line: $COLUMNS if set, else the terminal's width; None (whole
    lines) when piped without $COLUMNS, so that grep sees every word."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return None


def _rule_line(r: dict, width: Optional[int]) -> str:
    """`SYN101 on  never  tensor-item: Flags ...`, cut at a word boundary to `width`."""
    head = f"{r['code']} {'on' if r['default'] else 'off':<3} {FIX_SHORT[r['fix']]:<6} {r['name']}: "
    summary = r["summary"].removeprefix("Flags ")  # every summary starts so; the listing says it once
    if width is None or len(head) + len(summary) <= width:
        return head + summary
    room = width - len(head) - 1  # 1 for the ellipsis
    cut = summary[:room + 1].rsplit(" ", 1)[0] if room > 0 else ""
    if not cut or len(cut) > room:
        cut = ""
    return head + cut + "…"  # no word fits: the name and an ellipsis, never half a word


def _rule_json(r) -> dict:
    from synclint.findings import rule_url

    return {
        "code": r.CODE,
        "name": r.NAME,
        "family": r.FAMILY,
        "summary": r.SUMMARY,
        "default": r.DEFAULT_ON,
        "fix": r.FIX,
        "has_bench": r.BENCH is not None,
        "url": rule_url(r.NAME, r.CODE),
    }


@main.command()
@click.argument("rule")
def explain(rule):
    """Show a rule's page: what it flags, why it costs, the fix, examples, measured cost."""
    from synclint.docs import rule_markdown
    from synclint.registry import rule_by_key

    r = rule_by_key(rule)
    if r is None:
        raise _fail(f"unknown rule {rule!r}; `synclint rules` lists them")
    text = rule_markdown(r)
    if not sys.stdout.isatty():
        click.echo(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(text))


class _LazyCommand(click.Command):
    """Stands in for a command whose module is imported only when that command runs or
    `--help` lists it, so that `synclint check` does not pay for importing the others."""

    def __init__(self, name: str, module: str, attr: str) -> None:
        super().__init__(name)
        self._where = (module, attr)
        self._real: Optional[click.Command] = None

    def real(self) -> click.Command:
        if self._real is None:
            import importlib

            try:
                cmd = getattr(importlib.import_module(self._where[0]), self._where[1], None)
            except ImportError as e:
                raise _fail(f"the {self.name} command is not available: {e}")
            if not isinstance(cmd, click.Command):
                raise _fail(f"the {self.name} command is not available")
            self._real = cmd
        return self._real

    def make_context(self, info_name, args, parent=None, **extra):
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        return self.real().invoke(ctx)

    def get_short_help_str(self, limit: int = 45) -> str:
        try:
            return self.real().get_short_help_str(limit)
        except click.exceptions.Exit:
            return "(not available in this install)"


def _add_optional_commands() -> None:
    """Commands whose modules may not exist in a partial install are added when present."""
    from importlib.util import find_spec

    for mod, name, attr in (("synclint.bench.command", "bench", "bench"), ("synclint.lsp", "lsp", "lsp"),
                            ("synclint.baseline", "baseline", "baseline_command"),
                            ("synclint.trace.command", "trace", "trace")):
        try:
            present = find_spec(mod) is not None
        except ImportError:
            present = False
        if present:
            main.add_command(_LazyCommand(name, mod, attr))


_add_optional_commands()
