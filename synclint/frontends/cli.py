"""The `synclint` command line (click). Exit codes: 0 clean, 1 findings, 2 usage/input errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import click

from synclint.build import VERSION
from synclint.run.decoded import FRESH, Fresh
from synclint.findings import EXIT_CLEAN, EXIT_ERROR, FileError, rule_url
from synclint.report.output import echo_errors, echo_skipped, emit, fail as _fail, settings_text

OUTPUT_FORMATS = ["text", "concise", "json", "sarif", "github", "junit", "gitlab"]


# Words a user may type for `explain` (the nearest command name would be `rules`)
_RULE_PAGE_WORDS = frozenset(("rule", "doc", "docs", "show", "describe", "help-rule", "info"))


class Program:
    """One invocation of the command line (its root context's `obj`): whether it may end
    without the interpreter's teardown (`check` says so when it starts), and the store of
    whole-project tables its runs share (`project.Project`: a --watch session's, or the
    daemon's, which hands its own to each request), and how its runs read the cache's files
    (the daemon keeps them decoded: `decoded.Kept`)."""

    def __init__(self, kept: Optional[dict] = None, decoded: Fresh = FRESH) -> None:
        self.fast_exit = False
        self.kept: dict = {} if kept is None else kept
        self.decoded = decoded


class _Group(click.Group):
    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Run as the program (`synclint check ...`; not CliRunner, which passes args), end a
        `check` with os._exit once the output is flushed: freeing LibCST's classes and the
        parsed trees at interpreter exit took about 40 ms, a sixth of a one-file check."""
        if args is not None or not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        program = Program()
        try:
            return super().main(args, prog_name, complete_var, standalone_mode, obj=program, **extra)
        except SystemExit as e:
            if not program.fast_exit:
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

    def resolve_command(self, ctx, args):
        """`synclint rule SYN101` (or `doc`, `show`): say which command shows a rule's page,
        not only the nearest command name (`rules`, which lists them)."""
        name = args[0] if args else ""
        if self.get_command(ctx, name) is None and name in _RULE_PAGE_WORDS:
            raise click.UsageError(f"No such command '{name}'. A rule's page: `synclint explain "
                                   f"{args[1] if len(args) > 1 else 'SYN101'}`; every rule: `synclint rules`.", ctx)
        return super().resolve_command(ctx, args)

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
@click.version_option(VERSION, "-V", "--version", prog_name="synclint")
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


# Paths are not tested for readability here: an unreadable file or folder gets its own error
# line from the run, like one found by a walk, and the other paths are still checked.
_PATHS = click.Path(path_type=str, readable=False)


@main.command()
@click.argument("paths", nargs=-1, type=_PATHS)
@click.option("--select", multiple=True, metavar="RULES",
              help="Rules to enable instead of the defaults: codes (SYN101), prefixes (SYN1) or names; comma-separated, repeatable. ALL enables every rule.")
@click.option("--ignore", multiple=True, metavar="RULES", help="Rules to disable (codes, prefixes or names).")
@click.option("--extend-select", multiple=True, metavar="RULES", help="Rules to enable on top of the defaults, e.g. off-by-default ones.")
@click.option("--hot-only", is_flag=True, help="Report only findings in hot code (loop bodies, forward, *_step, functions called from loops).")
@click.option("--exclude", multiple=True, metavar="PATTERNS",
              help="Paths to leave out (gitignore-style patterns, relative to the current folder; comma-separated, repeatable); replaces `exclude` in [tool.synclint].")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS",
              help="Paths to leave out in addition to `exclude` and `extend-exclude` (as --exclude).")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default="text", show_default=True,
              help="How to print findings: text (with source), concise (a line each), json, sarif, github, junit, gitlab (Code Quality).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file (replaced whole, never half-written) instead of stdout; error lines still go to stderr.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option("--quiet", "-q", is_flag=True, help="Print the findings (and error lines) only: no summary or counts.")
@click.option("--silent", "-s", is_flag=True, help="Print nothing but a --diff; the exit code says what was found.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), help="Read [tool.synclint] from this file instead of the nearest pyproject.toml.")
@click.option("--show-settings", is_flag=True, help="Print the settings a check of PATHS would use, and the file they came from; check nothing.")
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix/--diff, also apply fixes that may change behaviour.")
@click.option("--diff", is_flag=True, help="Show the fixes as a unified diff; write nothing (exit 1 if there is a diff).")
@click.option("--watch", "-w", is_flag=True,
              help="Check again each time a Python file, .gitignore or the configuration changes, until Ctrl-C (unchanged files come from the cache; file events with `pip install 'synclint[watch]'`, else a look once a second).")
@click.option("--force-exclude", is_flag=True, help="Apply `exclude` to files named on the command line too (for pre-commit, which names every staged file).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache (.synclint_cache/).")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None, help="Worker processes (default: one per CPU).")
@click.option("--no-source", is_flag=True, help="One line per finding, without the source excerpt.")
@click.option("--show-rate", is_flag=True, help="Text output: how often each finding's line runs (once, per epoch, every N steps, per step, per micro-step, per token) and the chain from the entry point that gave it (json and sarif always carry the rate). `synclint explain FILE:LINE` shows it for one line.")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), help="Ignore findings recorded in this baseline file (see `synclint baseline`).")
@click.option("--report", "report_file", type=click.Path(dir_okay=False, path_type=Path), help="Also write a Markdown report joining findings with measured speedups.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding (after --baseline), to adopt synclint on an existing tree; writes files, exits 0.")
@click.option("--stdin-filename", metavar="PATH", help="With `-` as the path: the name of the file read from stdin (config, per-file-ignores and output use it).")
@click.option("--verbose", "-v", is_flag=True, help="Also name each folder or file the walk skipped, and why.")
@click.option("--bench", "bench_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Bench results JSON for --report (default: the shipped results, whose file names the GPU they were measured on).")
@click.option("--trace", "trace_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="A `synclint trace` JSON of a run of these files: --report shows each finding's measured cost in it.")
@click.option("--file-timeout", type=float, metavar="SECONDS", help="Seconds one file's analysis may take in each phase before it is skipped with an error (default: `file-timeout` in [tool.synclint], else 300; inf: no limit).")
def check(**options):
    """Check PATHS (files or directories; default: the current directory).

    \b
    Each finding reads  path:row:col: CODE [hot|cold] message
    followed by the source line, a caret and the fix hint.
    Exit status: 0 no findings, 1 findings, 2 usage error or a file
    that could not be read or parsed (the other files are still checked).

    \b
    Examples:
      synclint check src/ --select SYN1,SYN2
      synclint check train.py --output-format json -o findings.json
      synclint check . --extend-select SYN901 --ignore tensor-formatting
      synclint check . --diff
      synclint check src/ --watch
    """
    from types import SimpleNamespace

    from synclint.run.workers import collect_less

    program = click.get_current_context().obj
    if isinstance(program, Program):
        program.fast_exit = True
    collect_less()  # (once: a --watch session's later runs collect as usual)
    o = SimpleNamespace(**options)
    o.paths = list(o.paths) or ["."]
    _check_usage(o)
    if o.show_settings:
        _show_settings(o)
    if not o.watch:
        raise click.exceptions.Exit(_check_once(o))
    from synclint.run.config import find_config
    from synclint.frontends.watch import watch

    config = o.config_file or find_config(Path(o.paths[0]))  # (also when it lies above the paths)
    raise click.exceptions.Exit(watch(lambda: _check_once(o), o.paths, config_file=config, quiet=o.quiet or o.silent))


def _check_usage(o) -> None:
    """The combinations of `check` options that make no sense: one error line, exit 2."""
    stdin = o.paths == ["-"]
    if o.add_noqa and (o.fix or o.diff):
        raise _fail("--add-noqa cannot be combined with --fix or --diff")
    if o.trace_file is not None and o.report_file is None:
        raise _fail("--trace goes with --report FILE (the report shows the traced cost per finding)")
    if "-" in o.paths and not stdin:
        raise _fail("`-` (read stdin) cannot be mixed with other paths")
    if o.stdin_filename and not stdin:
        raise _fail("--stdin-filename needs `-` as the path")
    if o.watch and (stdin or o.add_noqa or o.show_settings):
        raise _fail("--watch cannot be combined with " + ("`-` (stdin)" if stdin else "--add-noqa" if o.add_noqa
                                                          else "--show-settings"))
    if o.output_file is not None and stdin and (o.fix or o.diff):
        raise _fail("--output-file cannot be combined with --fix or --diff on stdin (the fixed text goes to stdout)")


def _show_settings(o) -> None:
    """`check --show-settings`: the settings a check of the first path would use."""
    from synclint.run import pipeline

    try:
        text = settings_text(_configure(o), o.stdin_filename or "-" if o.paths == ["-"] else o.paths[0])
    except pipeline.PipelineError as e:
        raise _fail(str(e))
    click.echo(text)
    raise click.exceptions.Exit(EXIT_CLEAN)


def _configure(o):
    """The configuration and rule selection of a check with options `o`."""
    from synclint.run import pipeline

    stdin = o.paths == ["-"]
    program = click.get_current_context().obj
    return pipeline.configure(
        config_file=o.config_file, start=Path(o.stdin_filename or ".") if stdin else Path(o.paths[0]),
        select=o.select, ignore=o.ignore, extend_select=o.extend_select, hot_only=o.hot_only,
        exclude=o.exclude or None, extend_exclude=o.extend_exclude, no_cache=o.no_cache,
        file_timeout=o.file_timeout, lazy=not (o.fix or o.diff),
        kept=program.kept if isinstance(program, Program) else None,
        decoded=program.decoded if isinstance(program, Program) else FRESH)


def _check_once(o) -> int:
    """One check with options `o` (already vetted by `_check_usage`): its exit code. A usage
    or configuration error is its error line and exit 2."""
    from synclint.run import pipeline

    try:
        try:
            setup = _configure(o)
            if o.paths == ["-"]:
                _check_stdin(setup, o.stdin_filename or "-", o)
            outcome = pipeline.run(setup, o.paths, force_exclude=o.force_exclude, jobs=o.jobs, baseline=o.baseline)
        except pipeline.PipelineError as e:
            raise _fail(str(e))
    except click.exceptions.Exit as e:
        return e.exit_code
    loud = not o.silent
    if loud:
        echo_errors(outcome.missing)
    if o.verbose and loud:
        echo_skipped(outcome.skipped)
    if setup.cfg.select == [] and not setup.cfg.extend_select and loud:
        click.echo(f"synclint: warning: no rule is selected (`select = []` in {setup.cfg.path}); "
                   "nothing is checked", err=True)

    if o.add_noqa:
        from synclint.run.autofix import add_noqa as add_directives

        added = add_directives(outcome)
        if loud:
            echo_errors(outcome.errors)
        if not (o.quiet or o.silent):
            click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        return outcome.exit_code(o.exit_zero, count_findings=False)
    if o.fix or o.diff:
        from synclint.run.autofix import fix_files, unfixable_note

        changed = fix_files(setup, outcome, write=o.fix and not o.diff, unsafe=o.unsafe_fixes, show_diff=o.diff,
                            quiet=o.quiet or o.silent)
        if o.diff:
            note = unfixable_note(outcome, o.unsafe_fixes)
            if loud:
                echo_errors(outcome.errors)
            if note and not (o.quiet or o.silent):
                click.echo(note, err=True)
            return outcome.exit_code(o.exit_zero, count_findings=False, changed=changed)

    outcome.findings.sort(key=lambda f: f.sort_key())
    if loud:
        echo_errors(outcome.errors)
    if o.report_file is not None:
        from synclint.report.savings import write_report

        write_report(outcome.findings, o.report_file, o.bench_file, o.trace_file, setup.cfg.docs_url)
    if loud or o.output_file is not None:
        try:
            emit(o.output_format, outcome, statistics=o.statistics, show_source=not o.no_source, unsafe=o.unsafe_fixes,
                 verbose=o.verbose, summary=not (o.quiet or o.silent), output_file=o.output_file,
                 docs_url=setup.cfg.docs_url, show_rate=o.show_rate)
        except OSError as e:
            return _fail(f"{o.output_file}: cannot write the report: {e.strerror or e}").exit_code
    return outcome.exit_code(o.exit_zero)


def _check_stdin(setup, name, o):
    """`synclint check - --stdin-filename PATH`: the text on stdin, checked as if it were PATH
    (its config, per-file-ignores and name). With --fix the fixed text goes to stdout and
    the findings left to stderr, as Ruff does; with --diff, the diff goes to stdout."""
    from synclint.run import pipeline
    from synclint.run.discovery import Excludes
    from synclint.engine import LintError
    from synclint.parse.source import decode_source
    from synclint.fixes import FixError
    from synclint.parse.lines import source_lines

    data = sys.stdin.buffer.read()
    cfg = setup.cfg
    fix, diff, loud = o.fix, o.diff, not o.silent
    if o.force_exclude and name != "-" and Excludes(cfg.exclude_sets()).match(name):
        if fix:
            click.echo(data.decode("utf-8", "surrogateescape"), nl=False)
        raise click.exceptions.Exit(EXIT_CLEAN)  # excluded: nothing to say, the text unchanged
    text = decode_source(name, data)
    if isinstance(text, FileError):
        raise _fail(str(text))
    outcome = pipeline.run_text(setup, name, text)
    if (fix or diff) and not any(e.code is None for e in outcome.errors):  # it parsed
        from synclint.run.autofix import fix_stdin, unified_diff

        try:
            new, n = fix_stdin(setup, outcome, name, text, unsafe=o.unsafe_fixes)
        except (LintError, FixError) as e:
            outcome.errors.append(FileError(name, str(e)))
    if fix or diff:
        if any(e.code is None for e in outcome.errors):
            if fix:
                click.echo(text, nl=False)  # a filter never swallows its input
            if loud:
                echo_errors(outcome.errors)
            raise click.exceptions.Exit(EXIT_ERROR)
        if loud:
            echo_errors(outcome.errors)
        if diff:
            click.echo(unified_diff(name, text, new), nl=False)
            raise click.exceptions.Exit(outcome.exit_code(o.exit_zero, count_findings=False, changed=bool(n)))
        click.echo(new, nl=False)
        for f in outcome.findings if loud else ():
            click.echo(f"{f.filename}:{f.row}:{f.column}: {f.code} {f.message}", err=True)
        raise click.exceptions.Exit(outcome.exit_code(o.exit_zero))
    if loud:
        echo_errors(outcome.errors)
    if loud or o.output_file is not None:
        emit(o.output_format, outcome, statistics=o.statistics, show_source=not o.no_source, unsafe=o.unsafe_fixes,
             sources={name: source_lines(text)}, summary=not (o.quiet or o.silent), output_file=o.output_file,
             docs_url=cfg.docs_url, show_rate=o.show_rate)
    raise click.exceptions.Exit(outcome.exit_code(o.exit_zero))


@main.command("baseline")
@click.argument("paths", nargs=-1, type=_PATHS)
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False, path_type=Path), default=".synclint-baseline.json",
              show_default=True, help="Where to write the baseline.")
@click.option("--select", multiple=True, metavar="RULES", help="Rules to record instead of the defaults (as for check).")
@click.option("--ignore", multiple=True, metavar="RULES", help="Rules to leave out (as for check).")
@click.option("--extend-select", multiple=True, metavar="RULES", help="Rules to add to the defaults (as for check).")
@click.option("--hot-only", is_flag=True, help="Record only findings in hot code.")
@click.option("--exclude", multiple=True, metavar="PATTERNS", help="Paths to leave out; replaces `exclude` (as for check).")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS", help="Paths to leave out in addition (as for check).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read [tool.synclint] from this file instead of the nearest pyproject.toml.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--file-timeout", type=float, metavar="SECONDS",
              help="Seconds one file's analysis may take in each phase (as for check).")
def baseline_command(paths, output, select, ignore, extend_select, hot_only, exclude, extend_exclude, config_file,
                     no_cache, file_timeout):
    """Record today's findings in PATHS so that `check --baseline FILE` reports only new ones.

    \b
    Findings are matched by file, rule and the text of the flagged line (not its
    number), so they stay matched when code above them moves.
    Use the same selection options for `baseline` and `check`.

    \b
    Example:
      synclint baseline src/ -o .synclint-baseline.json
      synclint check src/ --baseline .synclint-baseline.json
    """
    from synclint.run import pipeline
    from synclint.baseline import write_baseline

    paths = list(paths) or ["."]
    try:
        setup = pipeline.configure(config_file=config_file, start=Path(paths[0]), select=select, ignore=ignore,
                                   extend_select=extend_select, hot_only=hot_only, exclude=exclude or None,
                                   extend_exclude=extend_exclude, no_cache=no_cache, file_timeout=file_timeout)
        outcome = pipeline.run(setup, paths)
    except pipeline.PipelineError as e:
        raise _fail(str(e))
    echo_errors(outcome.all_errors)
    write_baseline(outcome.findings, output)
    n, files = len(outcome.findings), outcome.checked
    click.echo(f"Recorded {n} finding{'s' if n != 1 else ''} from {files} file{'s' if files != 1 else ''} in {output}.", err=True)
    if outcome.all_errors:
        raise click.exceptions.Exit(pipeline.EXIT_ERROR)


@main.command()
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "table", "json"]),
              default="text", show_default=True,
              help="text: one line per rule (greppable); table: a table; json: every field.")
def rules(output_format):
    """List every rule by family: code, default (on/off), fix (always/some/never: whether
    --fix can fix its findings), name and summary.

    \b
    The summary is cut at a word to fit the terminal (or $COLUMNS); piped
    without $COLUMNS, lines are whole. Examples:
      synclint rules | grep -i mask
      synclint rules --format table
      synclint rules --output-format json
    """
    from synclint.run.config import ConfigError, find_config, load_config
    from synclint.registry import all_rules

    try:  # the rule links follow the project's `docs-url`, as `check` does
        docs_url = load_config(find_config(Path.cwd())).docs_url
    except ConfigError as e:
        raise _fail(str(e))
    rows = [_rule_json(r, docs_url) for r in all_rules()]
    if output_format == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    from synclint.report.render import rules_table, rules_text

    if output_format == "text":
        click.echo(rules_text(rows, _listing_width()))
        return
    rules_table(rows)


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


def _rule_json(r, docs_url: Optional[str]) -> dict:
    return {
        "code": r.CODE,
        "name": r.NAME,
        "family": r.FAMILY,
        "summary": r.SUMMARY,
        "default": r.DEFAULT_ON,
        "fix": r.FIX,
        "hot_only": r.HOT_ONLY,
        "has_bench": r.BENCH is not None,
        "url": rule_url(r.NAME, r.CODE, docs_url),
    }


@main.command()
@click.argument("rule", metavar="RULE|FILE:LINE")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="With FILE:LINE: read [tool.synclint] from this file instead of the nearest pyproject.toml.")
def explain(rule, config_file):
    """Show a rule's page: what it flags, why it costs, the fix, examples, measured cost.

    \b
    With FILE:LINE instead of a rule, check FILE (as `check FILE` would,
    with the cache of its project) and show each finding on that line with
    its execution rate and the chain from the entry point that gave it:
      synclint explain train.py:57
      train.py:57:9: SYN101 [hot] ...
        rate: per step: train() loops over train_loader (train.py:41) -> train_step
    """
    from synclint.report.rule_docs import rule_markdown
    from synclint.registry import rule_by_key

    r = rule_by_key(rule)
    where = _file_line(rule) if r is None else None
    if where is not None:
        if not Path(where[0]).is_file():
            raise _fail(f"{where[0]}: no such file")
        raise click.exceptions.Exit(_explain_line(*where, config_file))
    if r is None:
        raise _fail(f"unknown rule {rule!r}; `synclint rules` lists them (or give FILE:LINE)")
    text = rule_markdown(r)
    if not sys.stdout.isatty():
        click.echo(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(text))


def _file_line(arg: str):
    """(path, line) of an argument shaped `FILE:LINE`; None for anything else (a rule)."""
    path, _, line = arg.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else None


def _explain_line(path: str, line: int, config_file: Optional[Path]) -> int:
    """`synclint explain FILE:LINE`: the findings of a check of FILE on that line, each with
    its rate chain. Its exit code: 0, or 2 when FILE could not be checked."""
    from types import SimpleNamespace

    from synclint.report.render import rate_text, shown_path
    from synclint.run import pipeline

    o = SimpleNamespace(config_file=config_file, paths=[path], stdin_filename=None, select=(), ignore=(),
                        extend_select=(), hot_only=False, exclude=(), extend_exclude=(), no_cache=False,
                        file_timeout=None, fix=False, diff=False)
    try:
        outcome = pipeline.run(_configure(o), [path], force_exclude=False, jobs=1, baseline=None)
    except pipeline.PipelineError as e:
        return _fail(str(e)).exit_code
    echo_errors(outcome.missing)
    echo_errors(outcome.errors)
    here = sorted((f for f in outcome.findings if f.row <= line <= f.end_row), key=lambda f: f.sort_key())
    setup = [f for f in outcome.at_setup if f.row <= line <= f.end_row and not f.suppressed]
    if not here:
        click.echo(f"{shown_path(path)}:{line}: no finding on this line")
    for f in setup:
        click.echo(f"{shown_path(f.filename)}:{f.row}:{f.column}: {f.code} leaves this one-time transfer at setup"
                   f" alone (docs/configuration.md, \"Hot and cold\")")
        click.echo(f"  rate: {rate_text(f)}")
    for f in here:
        heat = "hot" if f.hot else "cold"
        click.echo(f"{shown_path(f.filename)}:{f.row}:{f.column}: {f.code} [{heat}] {f.message}")
        click.echo(f"  rate: {rate_text(f)}")
    return EXIT_ERROR if outcome.errors or outcome.missing else EXIT_CLEAN


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

    for mod, name, attr in (("synclint.bench.command", "bench", "bench"),
                            ("synclint.frontends.daemon", "daemon", "daemon"), ("synclint.frontends.lsp", "lsp", "lsp"),
                            ("synclint.trace.command", "trace", "trace")):
        try:
            present = find_spec(mod) is not None
        except ImportError:
            present = False
        if present:
            main.add_command(_LazyCommand(name, mod, attr))


_add_optional_commands()
