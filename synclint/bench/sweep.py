"""The `.item()` sweep: what one sync per step costs, over host work x GPU work per step.

Each step queues one GPU kernel of about `gpu_us` (synclint.bench.regimes: GPU work set by
kernel size), reads one value of its output, then does `host_us` of host busy-work. The
flagged step reads it with `.item()` (one sync); the fixed step accumulates it on the GPU.
The cost of the sync is flagged minus fixed time per step, measured against the model

    per sync, cost ~= min(host, GPU) time between syncs

(a sync serialises the host's and the GPU's work, which would otherwise overlap). The
results document carries every grid point, the model's value there and the deviation; the
chart (`render_svg`) is hand-written SVG from those numbers.

torch is passed in; nothing here imports it.
"""

from __future__ import annotations

import datetime as _dt
import math
import socket
import statistics
from typing import Any, Callable, Dict, List, Optional, Sequence
from xml.sax.saxutils import escape

from synclint.bench import stats
from synclint.bench.regimes import fit_kernel, gpu_work, step_loop

MODEL = "per sync, cost ≈ min(host, GPU) time between syncs"
HOST_US = (0, 50, 200, 500, 1000, 2000, 4000)
GPU_US = (0, 50, 200, 500, 1000, 2000, 4000)


def _sides(torch: Any, out: Any) -> Dict[str, Callable[[], Any]]:
    """The step's read of the kernel's output: `.item()` (flagged) or a GPU accumulation."""
    box = {"host": 0.0}
    acc = torch.zeros((), device=out.device)

    def flagged() -> None:
        box["host"] += out[0].item()

    def fixed() -> None:
        acc.add_(out[0])

    return {"flagged": flagged, "fixed": fixed}


def run_sweep(
    torch: Any,
    device: str = "cuda",
    host_us: Sequence[float] = HOST_US,
    gpu_us: Sequence[float] = GPU_US,
    repeat: int = 3,
    passes: int = 3,
    target_ms: float = 20.0,
    min_steps: int = 5,
    probe: int = 1 << 27,
    progress: Optional[Callable[[str], None]] = None,
) -> Dict[str, Any]:
    """Measure the grid; the sweep's results document."""
    say = progress or (lambda m: None)
    fit = fit_kernel(torch, device, probe)
    ks = {g: (fit.elements_for(g) if g > 0 else 1) for g in gpu_us}
    src = torch.rand(max(ks.values()), device=device)
    dst = torch.empty_like(src)
    works = {g: gpu_work(torch, ks[g], device, src, dst) for g in gpu_us}
    sides = _sides(torch, dst)
    grid = [(h, g) for g in gpu_us for h in host_us]
    raw: Dict[tuple, Dict[str, List[List[float]]]] = {pt: {"flagged": [], "fixed": []} for pt in grid}
    steps = {(h, g): max(min_steps, int(target_ms * 1e3 / (h + works[g].us + 20.0))) for h, g in grid}
    for p in range(passes):
        say(f"sweep pass {p + 1}/{passes}")
        for h, g in grid:
            w = works[g]
            for side in ("flagged", "fixed"):  # warm-up
                step_loop(torch, sides[side], 2, w, h)
            loops: Dict[str, List[float]] = {"flagged": [], "fixed": []}
            for _ in range(repeat):
                for side in ("flagged", "fixed"):
                    loops[side].append(step_loop(torch, sides[side], steps[(h, g)], w, h)[0])
            for side in loops:
                raw[(h, g)][side].append(loops[side])
    points = []
    for h, g in grid:
        f, x = raw[(h, g)]["flagged"], raw[(h, g)]["fixed"]
        pooled_f = [v for p in f for v in p]
        pooled_x = [v for p in x for v in p]
        cost = stats.difference(pooled_f, pooled_x)
        lo, hi = stats.bootstrap_interval(f, x, statistic=stats.difference, seed=int(h * 7 + g))
        gpu = works[g].us
        model = min(h, gpu)
        points.append({
            "host_us": h,
            "gpu_target_us": g,
            "gpu_us": round(gpu, 2),
            "gpu_elements": works[g].elements,
            "steps": steps[(h, g)],
            "flagged_us": round(statistics.median(pooled_f), 2),
            "fixed_us": round(statistics.median(pooled_x), 2),
            "cost_us": round(cost, 2),
            "ci": [round(lo, 2), round(hi, 2)],
            "model_us": round(model, 2),
            "deviation_us": round(cost - model, 2),
        })
    for w in works.values():
        w.release()
    src = dst = None
    return {"meta": sweep_meta(torch, device, repeat, passes, target_ms), "points": points, "summary": summarize(points)}


def sweep_meta(torch: Any, device: str, repeat: int, passes: int, target_ms: float) -> Dict[str, Any]:
    cuda = device.startswith("cuda")
    return {
        "gpu": torch.cuda.get_device_name(torch.cuda.current_device()) if cuda else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda if cuda else None,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "device": device,
        "repeats": repeat,
        "passes": passes,
        "target_ms": target_ms,
        "model": MODEL,
        "step": (
            "torch.mul(src[:k], 1.0001, out=dst[:k]) (GPU work, k sized for gpu_us); flagged: "
            "total += dst[0].item(); fixed: acc.add_(dst[0]); then host_us of busy-wait"
        ),
    }


def summarize(points: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """How far the measured costs are from the model: in microseconds and relative to the step."""
    if not points:
        return {}
    dev = [p["deviation_us"] for p in points]
    rel = [abs(p["deviation_us"]) / max(p["fixed_us"], 1e-9) for p in points]
    worst = max(points, key=lambda p: abs(p["deviation_us"]))
    return {
        "points": len(points),
        "median_deviation_us": round(statistics.median(dev), 2),
        "median_abs_deviation_us": round(statistics.median(abs(d) for d in dev), 2),
        "max_abs_deviation_us": round(abs(worst["deviation_us"]), 2),
        "max_at": {"host_us": worst["host_us"], "gpu_us": worst["gpu_us"],
                   "of_step": round(abs(worst["deviation_us"]) / max(worst["fixed_us"], 1e-9), 4)},
        "median_abs_deviation_of_step": round(statistics.median(rel), 4),
        "max_abs_deviation_of_step": round(max(rel), 4),
    }


# ---------------------------------------------------------------- reports

COLOURS = ("#1b5e20", "#1565c0", "#6a1b9a", "#ef6c00", "#c62828", "#00838f", "#5d4037", "#455a64")


def render_svg(sweep: Dict[str, Any]) -> str:
    """Cost per step of one `.item()` against host work per step, one line per GPU work per
    step; dashed: the model min(host, GPU)."""
    meta, points = sweep.get("meta", {}), sweep.get("points", [])
    by_gpu: Dict[float, List[Dict[str, Any]]] = {}
    for p in points:
        by_gpu.setdefault(p["gpu_target_us"], []).append(p)
    hosts = sorted({p["host_us"] for p in points}) or [0, 1]
    x_max = max(hosts) or 1
    y_max = max([p["cost_us"] for p in points] + [p["ci"][1] for p in points] + [p["model_us"] for p in points] + [1.0])
    y_max = _nice(y_max * 1.05)
    left, right, top, bottom = 70, 190, 60, 60
    pw, ph = 620, 400
    width, height = left + pw + right, top + ph + bottom

    def x(v: float) -> float:
        return left + v / x_max * pw

    def y(v: float) -> float:
        return top + ph - max(v, -0.04 * y_max) / y_max * ph  # a small negative cost stays in view

    title = "Cost of one .item() per step: flagged minus fixed step time"
    sub = f"{meta.get('gpu') or 'no GPU'}, torch {meta.get('torch')}, {str(meta.get('date', '?'))[:10]}; dashed: model min(host, GPU)"
    o: List[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{left + pw / 2:.0f}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{escape(title)}</text>',
        f'<text x="{left + pw / 2:.0f}" y="42" text-anchor="middle" fill="#555">{escape(sub)}</text>',
    ]
    for t in _ticks(y_max):
        o.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + pw}" y2="{y(t):.1f}" stroke="#e0e0e0"/>')
        o.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    for h in hosts:
        o.append(f'<line x1="{x(h):.1f}" y1="{top}" x2="{x(h):.1f}" y2="{top + ph}" stroke="#f0f0f0"/>')
        o.append(f'<text x="{x(h):.1f}" y="{top + ph + 16}" text-anchor="middle">{h:g}</text>')
    o.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>')
    o.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>')
    o.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph + 40}" text-anchor="middle">host work per step (µs)</text>')
    o.append(
        f'<text x="18" y="{top + ph / 2:.0f}" text-anchor="middle" transform="rotate(-90 18 {top + ph / 2:.0f})">'
        "cost per step of the sync (µs)</text>"
    )
    for i, (g, pts) in enumerate(sorted(by_gpu.items())):
        pts = sorted(pts, key=lambda p: p["host_us"])
        c = COLOURS[i % len(COLOURS)]
        gpu = statistics.median(p["gpu_us"] for p in pts)
        model = " ".join(f"{x(h):.1f},{y(min(h, gpu)):.1f}" for h in _model_knots(hosts, gpu))
        o.append(f'<polyline class="model" points="{model}" fill="none" stroke="{c}" stroke-dasharray="5,4" stroke-width="1.2"/>')
        line = " ".join(f"{x(p['host_us']):.1f},{y(p['cost_us']):.1f}" for p in pts)
        o.append(f'<polyline class="measured" data-gpu-us="{gpu:.1f}" points="{line}" fill="none" stroke="{c}" stroke-width="2"/>')
        for p in pts:
            cx = x(p["host_us"])
            o.append(f'<line x1="{cx:.1f}" y1="{y(p["ci"][0]):.1f}" x2="{cx:.1f}" y2="{y(p["ci"][1]):.1f}" stroke="{c}"/>')
            o.append(
                f'<circle class="point" cx="{cx:.1f}" cy="{y(p["cost_us"]):.1f}" r="3" fill="{c}" '
                f'data-cost-us="{p["cost_us"]}" data-model-us="{p["model_us"]}"><title>host {p["host_us"]:g} µs, '
                f'GPU {p["gpu_us"]:.0f} µs: cost {p["cost_us"]:.0f} µs (95% CI {p["ci"][0]:.0f}–{p["ci"][1]:.0f}), '
                f'model {p["model_us"]:.0f} µs</title></circle>'
            )
        ly = top + 10 + i * 20
        o.append(f'<line x1="{left + pw + 16}" y1="{ly}" x2="{left + pw + 40}" y2="{ly}" stroke="{c}" stroke-width="2"/>')
        o.append(f'<text x="{left + pw + 46}" y="{ly + 4}">GPU {gpu:.0f} µs/step</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def _model_knots(hosts: Sequence[float], gpu: float) -> List[float]:
    return sorted(set(list(hosts) + ([gpu] if min(hosts) < gpu < max(hosts) else [])))


def _nice(v: float) -> float:
    e = 10 ** math.floor(math.log10(max(v, 1e-9)))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


def _ticks(top: float) -> List[float]:
    step = _nice(top / 5)
    return [i * step for i in range(int(top / step + 1e-9) + 1)]


def render_markdown_section(sweep: Dict[str, Any], chart: Optional[str] = "item-sweep.svg") -> str:
    """The sweep for docs/benchmarks.md: the model in one sentence, the chart, the deviation."""
    meta, points = sweep.get("meta", {}), sweep.get("points", [])
    s = summarize(points)  # from the points, so the text always matches the table
    out = ["## What one sync costs: the `.item()` sweep\n"]
    out.append(
        "**Model: a sync costs about min(host, GPU) time between syncs** — it makes the host wait for the "
        "GPU's queue to drain and leaves the GPU idle while the host does its own work, so the overlap the "
        "two would have had is lost.\n"
    )
    out.append(
        f"Measured on **{meta.get('gpu')}**, torch {meta.get('torch')}, {str(meta.get('date', '?'))[:10]}: each step "
        "queues one GPU kernel (sized to take the GPU time below), reads one value of its output with "
        "`.item()` (flagged) or accumulates it on the GPU (fixed), then does the host work (a busy-wait). "
        f"The cost is flagged minus fixed time per step; {meta.get('repeats')} loops per side and point in each of "
        f"{meta.get('passes')} passes, 95% CI from the same two-level bootstrap as the bench.\n"
    )
    if chart:
        out.append(f"![Cost of one .item() per step against host and GPU work per step]({chart})\n")
    if s:
        at = s["max_at"]
        worst_rel = f" ({at['of_step'] * 100:.1f}% of that step)" if "of_step" in at else ""
        out.append(
            f"**How far the measurements are from the model**, over {s['points']} points: the median deviation "
            f"(measured minus model) is {s['median_deviation_us']:+.0f} µs and the median |deviation| "
            f"{s['median_abs_deviation_us']:.0f} µs ({s['median_abs_deviation_of_step'] * 100:.1f}% of the fixed step); "
            f"the largest is {s['max_abs_deviation_us']:.0f} µs{worst_rel}, at host {at['host_us']:g} µs and GPU "
            f"{at['gpu_us']:.0f} µs. Relative to the step the largest deviation is "
            f"{s['max_abs_deviation_of_step'] * 100:.0f}%, on the shortest steps, where the sync's own round trip "
            "(tens of µs: it is there even when nothing is queued) is a large part of a step.\n"
        )
    gpus = sorted({p["gpu_target_us"] for p in points})
    hosts = sorted({p["host_us"] for p in points})
    at = {(p["host_us"], p["gpu_target_us"]): p for p in points}
    if points:
        head = [f"GPU {statistics.median(p['gpu_us'] for p in points if p['gpu_target_us'] == g):.0f} µs" for g in gpus]
        out.append("Cost per step in µs, measured (model), by host work per step (rows) and GPU work per step (columns):\n")
        out.append("| host work | " + " | ".join(head) + " |")
        out.append("|---:|" + "---:|" * len(gpus))
        for h in hosts:
            cells = []
            for g in gpus:
                p = at.get((h, g))
                cells.append("-" if p is None else f"{p['cost_us']:.0f} ({p['model_us']:.0f})")
            out.append(f"| {h:g} µs | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out) + "\n"
