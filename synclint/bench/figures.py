"""How the harness writes its figures: microseconds, speedups, intervals, bytes, dates.

Every page that shows a measurement (the bench table, `explain`, `check --report`, the
stability comparison, the compiled harness) writes it with these, so a figure reads the
same everywhere."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence


def day(date: Optional[str]) -> str:
    return (date or "?")[:10]


def fmt_us(x: Optional[float]) -> str:
    if x is None:
        return "-"
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_x(s: Optional[float]) -> str:
    if s is None:
        return "-"
    return f"{s:.0f}x" if s >= 100 else f"{s:.2f}x"


def fmt_bytes(n: Optional[int]) -> str:
    if n is None:
        return "-"
    if abs(n) >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if abs(n) >= 1 << 10:
        return f"{n / (1 << 10):.0f} KiB"
    return f"{n} B"


def fmt_syncs(r: Dict[str, Any]) -> str:
    if r.get("syncs_flagged") is None:
        return "not visible" if r.get("debug_mode_sees") is False and r.get("flagged_us") is not None else "-"
    return f"{r['syncs_flagged']} → {r['syncs_fixed']}"


def fmt_sizes(sizes: Dict[str, Any]) -> str:
    def n(v: Any) -> str:
        if isinstance(v, int) and not isinstance(v, bool) and v >= 10_000:
            e = int(math.log10(v))
            if v % 10**e == 0:
                return f"{v // 10**e}e{e}"
        return str(v)

    return ", ".join(f"{k}={n(v)}" for k, v in sizes.items()) or "-"


def fmt_ci(ci: Optional[Sequence[float]]) -> str:
    """A speedup's interval: "1.28–1.36x"."""
    if not ci or len(ci) != 2:
        return "-"
    lo, hi = ci
    if lo >= 100:
        return f"{lo:.0f}–{hi:.0f}x"
    return f"{lo:.2f}–{hi:.2f}x"
