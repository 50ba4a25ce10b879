"""`synclint bench`: run the rules' benchmark pairs (wired into the CLI by synclint/cli.py)."""

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
@click.option("--passes", type=click.IntRange(1, 50), default=7, show_default=True, help="Times the whole run is repeated (interleaved); the bootstrap interval resamples passes, then loops.")
@click.option("--host-us", type=click.FloatRange(0, 100_000), default=500.0, show_default=True, help="Host-work regime: host busy-work per step (µs).")
@click.option("--gpu-us", type=click.FloatRange(0, 100_000), default=1000.0, show_default=True, help="Host-work regime: GPU work per step (µs, one kernel sized to take it).")
@click.option("--size", "size_overrides", multiple=True, metavar="NAME=N", help="Override a pair size (e.g. n=1000), for quick runs.")
@click.option("--output-format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--output", "output", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report to FILE (atomically) instead of stdout.")
@click.option("--progress/--no-progress", default=None, help="Progress lines on stderr (default: when stderr is a terminal).")
@click.pass_context
def bench(
    ctx: click.Context,
    device: Optional[str],
    selectors: Tuple[str, ...],
    repeat: int,
    passes: int,
    host_us: float,
    gpu_us: float,
    size_overrides: Tuple[str, ...],
    fmt: str,
    output: Optional[str],
    progress: Optional[bool],
) -> None:
    """Check and time each rule's benchmark pair (flagged pattern vs fix).

    On CUDA: same-result check; time per call in a back-to-back loop with GPU work queued and,
    for pairs whose fix removes a sync, per step in a loop with host and GPU work per step;
    the speedup's 95% bootstrap interval; syncs per call (set_sync_debug_mode), peak memory
    and a verdict per rule that names the loop it rests on. On the CPU:
    the same-result check only. Exit 0: all pairs agree; 1: a pair's sides differ or a pair
    could not run; 2: usage error.
    """
    from synclint.registry import SelectionError

    sizes = _sizes(size_overrides)
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

    show = sys.stderr.isatty() if progress is None else progress
    say = (lambda msg: click.echo(msg, err=True)) if show else None
    if device == "cpu" and (fmt != "text" or output):
        click.echo(CPU_NOTE, err=True)
    opts = harness.Options(repeat=repeat, passes=passes, host_us=host_us, gpu_us=gpu_us)
    data = harness.run(pairs, device, opts, progress=say, sizes_override=sizes or None)

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

    from synclint.bench.report import fmt_bytes, fmt_syncs, fmt_us, regime_phrase

    meta = data["meta"]
    buf = io.StringIO()
    con = Console(file=buf, width=190, force_terminal=color, no_color=not color, highlight=False)
    timed = bool(meta.get("timed"))
    if timed:
        hw = meta.get("host_work") or {}
        con.print(
            f"{meta.get('gpu')}  torch {meta.get('torch')}  CUDA {meta.get('cuda')}  {meta.get('date')}  "
            f"({meta.get('repeats')} loops x {meta.get('passes')} passes; back-to-back after {meta.get('background_us')} us "
            f"queued; host-work: {hw.get('host_us')} us host + {hw.get('gpu_us')} us GPU per step)"
        )
    else:
        con.print(f"{CPU_NOTE}; torch {meta.get('torch')}  {meta.get('date')}")
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("rule", no_wrap=True)
    table.add_column("name", no_wrap=True, max_width=34, overflow="ellipsis")
    if timed:
        for col in ("back-to-back us", "speedup (95% CI)", "host-work us/step", "speedup (95% CI)", "syncs", "peak mem"):
            table.add_column(col, justify="right")
    table.add_column("same result")
    table.add_column("verdict")
    styles = {"faster": "green", "memory": "blue", "failed": "bold red", "error": "bold red", "slower": "red"}
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
                row += [f"{fmt_us(g['flagged_us'])} -> {fmt_us(g['fixed_us'])}" if g else "-", regime_phrase(g).replace("95% CI ", "")]
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
