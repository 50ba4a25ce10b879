"""`synclint trace`: run a program under interception, write the trace, join it with the
static findings and show where the host waited."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Sequence, Tuple

import click

EXIT_ERROR = 2


def _fail(message: str) -> click.exceptions.Exit:
    click.echo(f"synclint trace: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("synclint-trace.json"), show_default=True, help="Where to write the trace (JSON).")
@click.option("--load", "load", type=click.Path(dir_okay=False, path_type=Path),
              help="Join and show a recorded trace instead of running a program.")
@click.option("--steps", type=click.IntRange(1), help="Stop after this many optimizer steps (after --warmup).")
@click.option("--warmup", type=click.IntRange(0), default=0, show_default=True,
              help="Optimizer steps to run before recording (first-use kernel loads block too).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop the program after this many seconds.")
@click.option("--root", "roots", multiple=True, type=click.Path(file_okay=False, path_type=str),
              help="A directory whose files are your code (repeatable; default: the current directory).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="How to print the joined result.")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path), help="Also write the Markdown report here.")
@click.option("--no-join", is_flag=True, help="Only record; do not run the static rules.")
@click.option("--debug-mode", is_flag=True, hidden=True, help="Accepted for old command lines: torch's sync debug mode is now how every trace sees syncs.")
@click.option("--cross-check", is_flag=True, help="Also run the profiler and record its time in blocking CUDA calls.")
@click.option("--compile-only", is_flag=True,
              help="Record only Dynamo's graph breaks and recompilations (torch.compile): no GPU needed, "
                   "no syncs recorded.")
@click.option("--limit", type=click.IntRange(1), default=30, show_default=True, help="Rows in the text table.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read [tool.synclint] from this file instead of the nearest pyproject.toml (as `check`).")
@click.option("--select", multiple=True, metavar="RULES", help="Rules to check the traced files with (as `check`).")
@click.option("--ignore", multiple=True, metavar="RULES", help="Rules to disable (as `check`).")
@click.option("--extend-select", multiple=True, metavar="RULES",
              help="Rules to enable on top of the defaults (as `check`).")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path),
              help="Leave out the findings recorded in this baseline file (as `check`).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache (as `check`).")
def trace(program: Tuple[str, ...], output: Path, load: Optional[Path], steps, warmup, time_limit, roots, fmt,
          report, no_join, debug_mode, cross_check, compile_only, limit, config_file, select, ignore, extend_select,
          baseline, no_cache) -> None:
    """Run a program and measure every CPU-GPU sync it makes, per line of your code.

    \b
      synclint trace -- python train.py --epochs 1
      synclint trace --warmup 5 --steps 50 -- python -m mypkg.train
      synclint trace --load synclint-trace.json --report trace.md

    Each sync (what torch's sync debug mode sees, plus torch.cuda.synchronize(),
    Event.synchronize() and non_blocking copies from pageable memory) is charged to the
    innermost line of your code, with the host time it blocked and its share of the wall
    time. The table joins the static findings: confirmed (the line synced), missed by the
    rules, and for a finding with no sync, whether its line ran (the trace records the
    lines that ran). Dynamo's graph breaks and recompilations under torch.compile are
    recorded too, by your line, and joined with the compile findings (SYN6xx) the same way.
    The findings are those `synclint check` reports for the traced files under the same
    configuration (--config, --select, --ignore, --baseline: as check). Needs a CUDA GPU
    (graph breaks alone do not: --compile-only); the trace is JSON (-o), readable with --load.
    """
    from synclint.trace.schema import TraceError, load as load_trace

    if load is not None:
        if program:
            raise _fail("give either --load FILE or a program, not both")
        try:
            recorded = load_trace(str(load))
        except TraceError as e:
            raise _fail(str(e))
    else:
        if not program:
            raise _fail("no program given: synclint trace [OPTIONS] -- python script.py [ARGS]")
        from synclint.trace.run import Options, TraceUnavailable, run

        try:
            recorded = run(Options(list(program), roots=roots, steps=steps, warmup=warmup, time_limit=time_limit,
                                   cross_check=cross_check, compile_only=compile_only))
        except TraceUnavailable as e:
            raise _fail(str(e))
        from synclint.atomic import write_text_atomic

        try:
            write_text_atomic(output, recorded.dumps())
        except OSError as e:
            raise _fail(f"{output}: cannot write: {e.strerror or e}")
        click.echo(f"synclint trace: wrote {output} ({len(recorded.sites)} sites, stopped: "
                   f"{recorded.meta.get('stopped')})", err=True)
    check = dict(config_file=str(config_file) if config_file else None, select=select, ignore=ignore,
                 extend_select=extend_select, baseline=str(baseline) if baseline else None, no_cache=no_cache)
    _show(recorded, fmt, report, no_join, limit, check)
    code = recorded.meta.get("exit_code") or 0
    raise click.exceptions.Exit(code if isinstance(code, int) and load is None else 0)


def _show(recorded, fmt: str, report: Optional[Path], no_join: bool, limit: int, check: dict) -> None:
    """Join `recorded` with `synclint check` of its files (`check`: the options as check
    takes them) and print it."""
    from synclint.trace.join import join, source_root, user_files
    from synclint.trace.output import render_json, render_markdown, render_text

    root = source_root(recorded)
    findings, suppressed = [], {}
    if not no_join:
        from synclint.run.pipeline import PipelineError

        errors = []
        try:
            outcome = static_findings(user_files(recorded, root), root, **check)
            findings, suppressed, errors = outcome.findings, outcome.suppressed, outcome.all_errors
        except PipelineError as e:  # the configuration, selection or baseline: nothing to join with
            raise _fail(str(e))
        except ImportError as e:  # a device image without libcst: record now, join elsewhere
            click.echo(f"synclint trace: the static rules are not available ({e}); showing the trace alone "
                       "(join it later with --load)", err=True)
        for e in errors:
            click.echo(f"synclint trace: {e}", err=True)
    joined = join(recorded, findings, root, suppressed)
    if fmt == "json":
        click.echo(render_json(joined), nl=False)
    elif fmt == "markdown":
        click.echo(render_markdown(joined), nl=False)
    else:
        click.echo(render_text(joined, limit), nl=False)
    if report is not None:
        from synclint.atomic import write_text_atomic

        try:
            write_text_atomic(report, render_markdown(joined))
        except OSError as e:
            raise _fail(f"{report}: cannot write: {e.strerror or e}")
    sys.stdout.flush()


def static_findings(files: Sequence[str], root: str, *, config_file: Optional[str] = None,
                    select: Sequence[str] = (), ignore: Sequence[str] = (), extend_select: Sequence[str] = (),
                    baseline: Optional[str] = None, no_cache: bool = False):
    """`synclint check` of `files` through the one pipeline: the configuration (`config_file`,
    else the nearest above `root`) with these choices on top, its selection, noqa, per-file
    ignores, exclusions (the files were found, not named: as `check .` treats them), the file
    budget, the cache and the baseline. A `pipeline.Outcome`; raises `pipeline.PipelineError`."""
    from pathlib import Path

    from synclint.run import pipeline
    from synclint.trace.join import path_under_root

    if not files:
        return pipeline.Outcome()
    setup = pipeline.configure(config_file=Path(config_file) if config_file else None, start=Path(root),
                               select=select, ignore=ignore, extend_select=extend_select, no_cache=no_cache)
    # named as a user would name them here, so that the findings name them as `check` does
    here = os.path.realpath(os.getcwd())
    named = [path_under_root(f, here) for f in files]
    return pipeline.run(setup, named, force_exclude=True, baseline=Path(baseline) if baseline else None)
