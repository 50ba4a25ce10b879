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

import math
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


# ---------------------------------------------------------------- across runs

RUN_CONFIDENCE = 0.99  # the run-to-run interval: one of ~80 intervals of a full run may miss


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (bisection on its CDF)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0 (got p={p}, df={df})")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction, Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast only on this side
        return 1.0 - _betainc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for num in ((m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m)),
                    -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return front * f / a


def run_interval(speedups: Sequence[float], within: Sequence[Tuple[float, float]],
                 confidence: float = RUN_CONFIDENCE) -> Tuple[float, Tuple[float, float]]:
    """The figure of R runs and an interval that holds the figure of another R runs.

    `speedups` are the runs' own figures, `within` their own (within-run) 95% intervals.
    The figure is their geometric mean; the interval is the prediction interval, on the
    log scale, for the mean of R more runs: mean ± t(df = R-1) · σ · sqrt(2/R), where σ is
    the spread between the runs' figures, but never less than what their own intervals
    say a run's figure wanders by (R runs can agree by chance)."""
    r = len(speedups)
    if r < 2 or len(within) != r:
        raise ValueError(f"need at least two runs, each with its own interval (got {r} and {len(within)})")
    logs = [math.log(max(s, 1e-12)) for s in speedups]
    mean = statistics.fmean(logs)
    between = statistics.variance(logs)
    z95 = statistics.NormalDist().inv_cdf(0.975)
    own = statistics.fmean(((math.log(max(hi, 1e-12)) - math.log(max(lo, 1e-12))) / (2 * z95)) ** 2
                           for lo, hi in within)
    half = t_quantile(0.5 + confidence / 2, r - 1) * math.sqrt(max(between, own)) * math.sqrt(2.0 / r)
    return math.exp(mean), (math.exp(mean - half), math.exp(mean + half))


def runs_disagree(within: Sequence[Tuple[float, float]]) -> bool:
    """Not reproducible: two runs' own 95% intervals do not overlap, so the figure depends
    on the process that measured it more than a run's own spread says."""
    return max(lo for lo, _ in within) > min(hi for _, hi in within)


def verdict_across_runs(s: float, interval: Sequence[float]) -> str:
    """A time verdict only where the run-to-run interval decides it: "faster" when it lies
    above 1.0 (and the gain is at least MIN_GAIN), "slower" below, "no measurable gain"
    when it lies inside (1/(1+MIN_GAIN), 1+MIN_GAIN); otherwise "undecided". With that gap,
    two runs give opposite verdicts only if one's interval misses the other's figure."""
    lo, hi = interval
    if lo > 1.0 and s >= 1.0 + MIN_GAIN:
        return "faster"
    if hi < 1.0 and s <= 1.0 / (1.0 + MIN_GAIN):
        return "slower"
    if lo >= 1.0 / (1.0 + MIN_GAIN) and hi <= 1.0 + MIN_GAIN:
        return "no measurable gain"
    return "undecided"
