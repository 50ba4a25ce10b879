"""`synclint trace`: run a program under interception, write the trace, join it with the
static findings and show where the host waited."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Tuple

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
@click.option("--limit", type=click.IntRange(1), default=30, show_default=True, help="Rows in the text table.")
def trace(program: Tuple[str, ...], output: Path, load: Optional[Path], steps, warmup, time_limit, roots, fmt,
          report, no_join, debug_mode, cross_check, limit) -> None:
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
    lines that ran). Needs a CUDA GPU; the trace is JSON (-o), readable with --load.
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
                                   cross_check=cross_check))
        except TraceUnavailable as e:
            raise _fail(str(e))
        from synclint.atomic import write_text_atomic

        try:
            write_text_atomic(output, recorded.dumps())
        except OSError as e:
            raise _fail(f"{output}: cannot write: {e.strerror or e}")
        click.echo(f"synclint trace: wrote {output} ({len(recorded.sites)} sites, stopped: "
                   f"{recorded.meta.get('stopped')})", err=True)
    _show(recorded, fmt, report, no_join, limit)
    code = recorded.meta.get("exit_code") or 0
    raise click.exceptions.Exit(code if isinstance(code, int) and load is None else 0)


def _show(recorded, fmt: str, report: Optional[Path], no_join: bool, limit: int) -> None:
    from synclint.trace.join import join, source_root, static_findings, user_files
    from synclint.trace.output import render_json, render_markdown, render_text

    root = source_root(recorded)
    findings = []
    if not no_join:
        try:
            findings, errors = static_findings(user_files(recorded, root))
        except ImportError as e:  # a device image without libcst: record now, join elsewhere
            click.echo(f"synclint trace: the static rules are not available ({e}); showing the trace alone "
                       "(join it later with --load)", err=True)
            errors = []
        for e in errors:
            click.echo(f"synclint trace: {e}", err=True)
    joined = join(recorded, findings, root)
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
