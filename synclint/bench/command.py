"""`synclint bench`: run the rules' benchmark pairs (wired into the CLI by synclint/frontends/cli.py)."""

from __future__ import annotations

import io
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

TORCH_MISSING = "synclint bench needs PyTorch: pip install 'synclint[bench]'"
CPU_NOTE = "cpu: correctness only (timings, sync counts and peak memory need a CUDA device)"


def _split(values: Sequence[str]) -> List[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _sizes(values: Sequence[str]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for v in _split(values):
        name, eq, num = v.partition("=")
        try:
            if not eq:
                raise ValueError
            out[name.strip()] = int(float(num)) if "e" in num.lower() else int(num)
        except ValueError:
            raise click.BadParameter(f"{v!r} is not NAME=INTEGER", param_hint="--size") from None
    return out


@click.command("bench")
@click.option("--device", default=None, metavar="cuda|cpu", help="Where to run (default: cuda if available, else an error).")
@click.option("--select", "selectors", multiple=True, metavar="CODES", help="Rule codes, prefixes or names (repeatable, comma-separated).")
@click.option("--repeat", type=click.IntRange(1, 1000), default=4, show_default=True, help="Timed loops per side, regime and pass.")
@click.option("--runs", type=click.IntRange(1, 50), default=5, show_default=True, help="Whole runs, each in a fresh process; each interval then holds the figure of another such set of runs, and a verdict is given only where it does (CUDA only; 1: one run, its interval from inside it).")
@click.option("--passes", type=click.IntRange(1, 50), default=None, help="Passes over all pairs inside a run (interleaved; the bootstrap resamples passes, then loops). Default: 7 with --runs 1, else 1.")
@click.option("--combine", "combine_files", multiple=True, type=click.Path(exists=True, dir_okay=False), metavar="RUN.json", help="Combine single-run results documents (repeatable) instead of running: runs made apart, on other days or machines of the same GPU model.")
@click.option("--host-us", type=click.FloatRange(0, 100_000), default=500.0, show_default=True, help="Host-work regime: host busy-work per step (µs).")
@click.option("--gpu-us", type=click.FloatRange(0, 100_000), default=1000.0, show_default=True, help="Host-work regime: GPU work per step (µs, one kernel sized to take it).")
@click.option("--size", "size_overrides", multiple=True, metavar="NAME=N", help="Override a pair size (e.g. n=1000), for quick runs.")
@click.option("--output-format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--output", "output", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report to FILE (atomically) instead of stdout.")
@click.option("--progress/--no-progress", default=None, help="Progress lines on stderr (default: when stderr is a terminal).")
@click.option("--compiled", is_flag=True, help="The SYN6xx pairs eagerly, under torch.compile (with the graph break, captured, fixed) and under mode=\"reduce-overhead\": graphs, breaks, compile time and steady-state step time apart (one run; --select takes codes or case names; on the CPU: graph counts and values only). See docs/compiled.md.")
@click.pass_context
def bench(
    ctx: click.Context,
    device: Optional[str],
    selectors: Tuple[str, ...],
    repeat: int,
    runs: int,
    passes: Optional[int],
    combine_files: Tuple[str, ...],
    host_us: float,
    gpu_us: float,
    size_overrides: Tuple[str, ...],
    fmt: str,
    output: Optional[str],
    progress: Optional[bool],
    compiled: bool,
) -> None:
    """Check and time each rule's benchmark pair (flagged pattern vs fix).

    On CUDA: same-result check; time per call in a back-to-back loop with GPU work queued and,
    for pairs whose fix removes a sync, per step in a loop with host and GPU work per step;
    syncs per call (set_sync_debug_mode), peak memory; --runs whole runs in fresh processes,
    the speedup over them with an interval that holds another set of runs' figure (flagged
    when the runs disagree beyond their own spread), and a verdict per rule, where those
    intervals settle one, that names the loop it rests on. On the CPU: the same-result
    check only. Exit 0: all pairs agree; 1: a pair's sides differ or a pair
    could not run; 2: usage error.
    """
    from synclint.registry import SelectionError

    sizes = _sizes(size_overrides)
    if combine_files:
        data = _combined(ctx, combine_files)
        _finish(ctx, data, fmt, output)
        return
    from synclint.torch_import import import_torch

    try:
        torch = import_torch()
    except ImportError:
        click.echo(TORCH_MISSING, err=True)
        ctx.exit(2)

    if device is None:
        if not torch.cuda.is_available():
            raise click.UsageError(
                f"no CUDA device is available (torch {torch.__version__}); "
                "pass --device cpu to check the pairs' correctness without timing"
            )
        device = "cuda"
    device = device.strip().lower()
    if not (device == "cpu" or device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit())):
        raise click.BadParameter(f"{device!r}: expected cuda, cuda:N or cpu", param_hint="--device")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise click.UsageError(
            f"--device {device}: CUDA is not available (torch {torch.__version__}); "
            "use --device cpu for the correctness check only"
        )

    show = sys.stderr.isatty() if progress is None else progress
    if compiled:
        _compiled(ctx, torch, device, _split(selectors), repeat, passes, fmt, output,
                  (lambda msg: click.echo(msg, err=True)) if show else None)
        return

    from synclint.bench import harness
    from synclint.bench.pairs import select_pairs

    try:
        pairs, notes = select_pairs(_split(selectors))
    except SelectionError as e:
        raise click.UsageError(str(e)) from None
    except Exception as e:  # noqa: BLE001 - a broken rule module
        click.echo(f"synclint bench: cannot load the rules: {type(e).__name__}: {e}", err=True)
        ctx.exit(2)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if not pairs:
        raise click.UsageError("no benchmark pair among the selected rules")

    say = (lambda msg: click.echo(msg, err=True)) if show else None
    if device == "cpu" and (fmt != "text" or output):
        click.echo(CPU_NOTE, err=True)
    if device != "cpu" and runs > 1:
        from synclint.bench.runs import combine, run_processes

        args = ["--device", device, "--repeat", str(repeat), "--passes", str(passes or 1), "--host-us", str(host_us),
                "--gpu-us", str(gpu_us), "--progress" if show else "--no-progress"]
        args += [a for sel in selectors for a in ("--select", sel)] + [a for v in size_overrides for a in ("--size", v)]
        try:
            data = combine(run_processes(args, runs, say))
        except (RuntimeError, ValueError) as e:
            click.echo(f"synclint bench: {e}", err=True)
            ctx.exit(2)
    else:
        opts = harness.Options(repeat=repeat, passes=passes or 7, host_us=host_us, gpu_us=gpu_us)
        data = harness.run(pairs, device, opts, progress=say, sizes_override=sizes or None)
    _finish(ctx, data, fmt, output)


def _compiled(ctx: click.Context, torch: Any, device: str, selectors: List[str], repeat: int, passes: Optional[int],
              fmt: str, output: Optional[str], say: Any) -> None:
    """`--compiled`: the compiled pairs (synclint/bench/compiled.py), one run in this process."""
    from synclint.bench import compiled
    from synclint.bench.compiled_pairs import select

    try:
        pairs = select(tuple(selectors))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--select") from None
    given = ctx.get_parameter_source("repeat") == click.core.ParameterSource.COMMANDLINE
    opts = compiled.Options(repeat=repeat if given else compiled.Options.repeat, passes=passes or compiled.Options.passes,
                            backend="inductor" if device.startswith("cuda") else "eager")
    data = compiled.run(pairs, device, opts, progress=say, torch_module=torch)
    from synclint.bench.compiled_report import render_markdown, render_text
    from synclint.bench.results import dumps

    text = {"json": dumps, "markdown": render_markdown}.get(fmt, render_text)(data)
    if output:
        from synclint.bench.results import write_atomic

        write_atomic(output, text)
        click.echo(f"wrote {len(data['results'])} compiled pair(s) to {output}")
    else:
        click.echo(text, nl=False)
    bad = compiled.failed(data["results"])
    for r in bad:
        what = r.get("error") or r.get("compare_note") or "; ".join(
            f"{k}: {v['error'] or 'compiled again while timed'}" for k, v in r["variants"].items()
            if v.get("error") or v.get("graphs_while_timing"))
        click.echo(f"FAILED {r['code']} {r['case']}: {what}", err=True)
    ctx.exit(1 if bad else 0)


def _combined(ctx: click.Context, paths: Sequence[str]) -> Dict[str, Any]:
    """`--combine`: the runs' documents read, checked and folded together (runs.py)."""
    from synclint.bench.results import validate
    from synclint.bench.runs import Incomparable, combine
    from synclint.jsonio import read_json

    docs = []
    for path in paths:
        try:
            data = read_json(path, ValueError)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--combine") from None
        problems = validate(data)
        if problems:
            raise click.BadParameter(f"{path}: not a results document ({problems[0]})", param_hint="--combine")
        docs.append(data)
    try:
        return combine(docs)
    except Incomparable as e:
        raise click.BadParameter(str(e), param_hint="--combine") from None


def _finish(ctx: click.Context, data: Dict[str, Any], fmt: str, output: Optional[str]) -> None:
    from synclint.bench import harness

    text = render(data, fmt, color=output is None and sys.stdout.isatty())
    if output:
        from synclint.bench.results import write_atomic

        write_atomic(output, text)
        bad = len(harness.failed(data["results"]))
        click.echo(f"wrote {len(data['results'])} result(s) to {output}" + (f"; {bad} failed" if bad else ""))
    else:
        click.echo(text, nl=False)
    bad_results = harness.failed(data["results"])
    for r in bad_results:
        what = r.get("error") or f"flagged and fixed give different results: {r.get('compare_note')}"
        click.echo(f"FAILED {r['code']} {r['name']}: {what}", err=True)
    ctx.exit(1 if bad_results else 0)


def render(data: Dict[str, Any], fmt: str, color: bool = False) -> str:
    if fmt == "json":
        from synclint.bench.results import dumps

        return dumps(data)
    if fmt == "markdown":
        from synclint.bench.report import render_markdown

        return render_markdown(data, source="synclint bench", chart=None)
    return render_text(data, color=color)


def render_text(data: Dict[str, Any], color: bool = False) -> str:
    from rich.console import Console
    from rich.table import Table

    from synclint.bench.report import ci_label, regime_phrase
    from synclint.bench.figures import fmt_bytes, fmt_syncs, fmt_us

    meta = data["meta"]
    buf = io.StringIO()
    con = Console(file=buf, width=190, force_terminal=color, no_color=not color, highlight=False)
    timed = bool(meta.get("timed"))
    if timed:
        hw = meta.get("host_work") or {}
        runs = meta.get("runs") or 1
        con.print(
            f"{meta.get('gpu')}  torch {meta.get('torch')}  CUDA {meta.get('cuda')}  {meta.get('date')}  "
            + (f"({runs} runs in fresh processes x " if runs > 1 else "(")
            + f"{meta.get('repeats')} loops x {meta.get('passes')} passes; back-to-back after {meta.get('background_us')} us "
            f"queued; host-work: {hw.get('host_us')} us host + {hw.get('gpu_us')} us GPU per step)"
        )
    else:
        con.print(f"{CPU_NOTE}; torch {meta.get('torch')}  {meta.get('date')}")
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("rule", no_wrap=True)
    table.add_column("name", no_wrap=True, max_width=34, overflow="ellipsis")
    if timed:
        label = "speedup (99% over runs)" if (meta.get("runs") or 1) > 1 else "speedup (95% CI)"
        for col in ("back-to-back us", label, "host-work us/step", label, "syncs", "peak mem"):
            table.add_column(col, justify="right")
    table.add_column("same result")
    table.add_column("verdict")
    styles = {"faster": "green", "memory": "blue", "failed": "bold red", "error": "bold red", "slower": "red",
              "undecided": "yellow"}
    for r in data["results"]:
        same = {True: "yes", False: "NO", None: "not compared"}[r.get("same_result")]
        if r.get("error"):
            same = "-"
        verdict = r.get("verdict") or "?"
        if r.get("error"):
            verdict = f"error: {r['error']}"
        elif r.get("same_result") is False:
            verdict = f"failed: {r.get('compare_note')}"
        elif r.get("regime") and len(r.get("regimes") or {}) > 1 and verdict in ("faster", "slower", "no measurable gain"):
            verdict = f"{verdict} ({r['regime']})"
        row = [r["code"], r["name"]]
        if timed:
            mem = "-"
            if r.get("peak_mem_flagged") is not None:
                mem = f"{fmt_bytes(r['peak_mem_flagged'])} -> {fmt_bytes(r['peak_mem_fixed'])}"
            for name in ("back-to-back", "host-work"):
                g = (r.get("regimes") or {}).get(name)
                row += [f"{fmt_us(g['flagged_us'])} -> {fmt_us(g['fixed_us'])}" if g else "-",
                        regime_phrase(g).replace(f"{ci_label(g)} ", "")]
            row += [fmt_syncs(r).replace("→", "->"), mem]
        style = styles.get(r.get("verdict"))
        row += [same, f"[{style}]{_esc(verdict)}[/]" if style else _esc(verdict)]
        table.add_row(*row)
    con.print(table)
    failed = sum(1 for r in data["results"] if r.get("error") or r.get("same_result") is False)
    con.print(f"{len(data['results'])} pair(s), {failed} failed")
    return buf.getvalue()


def _esc(s: str) -> str:
    from rich.markup import escape

    return escape(s)
