"""The speedup of a pair and its 95% bootstrap interval, and the verdict they allow.

Pure Python on purpose: CI imports the harness without NumPy, and the whole bench's
bootstrap (a few thousand resamples of ~25 loop times per regime) takes seconds.

The samples are per-loop times (one per timed loop: per-call wall time of N calls),
grouped by pass; within a pass the flagged and fixed loops were interleaved, so loop i of
each side shares the host's and the GPU's state at that moment. The speedup is the median
of those paired ratios flagged_i / fixed_i: a drift of clocks or host load between loops
or passes (seen at +30% over one run on a shared machine) hits both sides of a pair alike
and cancels, where a ratio of pooled medians would mix levels. The bootstrap resamples in
two levels, passes first and then loops inside each drawn pass, because passes differ more
than loops do: a one-level bootstrap over loops would call a pass-to-pass change a
measured gain.
"""

from __future__ import annotations

import random
import statistics
from typing import Callable, List, Optional, Sequence, Tuple

CONFIDENCE = 0.95
RESAMPLES = 2000
MIN_GAIN = 0.03  # a speedup under 3% is never called faster (nor one over 1/1.03 slower)

Passes = Sequence[Sequence[float]]


def ratio(f: Sequence[float], x: Sequence[float]) -> float:
    """The speedup of paired samples: the median of flagged_i / fixed_i."""
    return statistics.median(a / max(b, 1e-12) for a, b in zip(f, x))


def difference(f: Sequence[float], x: Sequence[float]) -> float:
    """What the fix saves, of pooled samples: median flagged time minus median fixed time."""
    return statistics.median(f) - statistics.median(x)


def speedup(flagged: Passes, fixed: Passes) -> float:
    """The median of the paired loop ratios flagged / fixed, over all passes."""
    return ratio([x for p in flagged for x in p], [v for p in fixed for v in p])


def _check(flagged: Passes, fixed: Passes) -> None:
    if not flagged or len(flagged) != len(fixed):
        raise ValueError(f"need the same number of passes on both sides (got {len(flagged)} and {len(fixed)})")
    for i, (f, x) in enumerate(zip(flagged, fixed)):
        if not f or len(f) != len(x):
            raise ValueError(f"pass {i}: need the same number of loops on both sides (got {len(f)} and {len(x)})")


def bootstrap_interval(
    flagged: Passes,
    fixed: Passes,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
    statistic: Callable[[Sequence[float], Sequence[float]], float] = ratio,
) -> Tuple[float, float]:
    """Percentile interval of `statistic` (the speedup by default) under a two-level
    (pass, then loop) paired bootstrap. Seeded: the same samples give the same interval."""
    _check(flagged, fixed)
    rng = random.Random(seed)
    n_pass = len(flagged)
    stats: List[float] = []
    for _ in range(resamples):
        f: List[float] = []
        x: List[float] = []
        for _ in range(n_pass):
            p = rng.randrange(n_pass)
            fp, xp = flagged[p], fixed[p]
            n = len(fp)
            for _ in range(n):
                i = rng.randrange(n)
                f.append(fp[i])
                x.append(xp[i])
        stats.append(statistic(f, x))
    stats.sort()
    tail = (1.0 - confidence) / 2
    return _quantile(stats, tail), _quantile(stats, 1.0 - tail)


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def time_verdict(s: float, interval: Optional[Sequence[float]]) -> str:
    """"faster" / "slower" only when the interval excludes 1.0 (and the gain is at least
    MIN_GAIN); otherwise "no measurable gain"."""
    if interval is None:
        return "no measurable gain"
    lo, hi = interval
    if lo > 1.0 and s >= 1.0 + MIN_GAIN:
        return "faster"
    if hi < 1.0 and s <= 1.0 / (1.0 + MIN_GAIN):
        return "slower"
    return "no measurable gain"
