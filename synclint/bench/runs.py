"""Whole runs of the bench in separate processes, and the figures they hold together.

One run's bootstrap interval sees the spread between loops and passes inside one process;
it does not see what changes between processes: where the allocator puts the buffers,
which kernels the libraries pick, the host's clocks and load at the time. Two full runs
ten days apart on the same card model (issue 39) gave SYN101 [1.25, 1.33] then
[1.46, 1.48]: both intervals were right about their own run and wrong about the other.

So `synclint bench --runs R` runs the whole bench R times, each in a fresh process
(`python -m synclint bench --runs 1 ...`), and `combine` folds the R results documents
into one. Per pair and regime:

* the figure is the geometric mean of the runs' speedups;
* the interval is a prediction interval for the figure of another R runs
  (stats.run_interval: the spread between the runs, at least the runs' own spread, with
  Student's t for R-1 degrees of freedom), at RUN_CONFIDENCE;
* `reproducible` is False when two runs' own 95% intervals do not overlap: the figure
  depends on the process more than one run can tell;
* the verdict is issued only where that interval decides it (stats.verdict_across_runs),
  else it is "undecided".

`combine` also takes runs made separately (`synclint bench --combine a.json b.json ...`),
for instance on different days or machines of the same GPU model, whose spread one
session cannot see.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence

from synclint.bench import stats
from synclint.bench.pairs import SIDES
from synclint.bench.stability import Incomparable  # noqa: F401 - runs that cannot be combined

# What a combined regime keeps from each run, beside the figures combined.
_RECORD_FACTS = ("syncs_flagged", "syncs_fixed", "peak_mem_flagged", "peak_mem_fixed")


def run_processes(cli_args: Sequence[str], runs: int, say: Optional[Callable[[str], None]] = None,
                  python: str = sys.executable) -> List[Dict[str, Any]]:
    """Run `synclint bench CLI_ARGS --runs 1` `runs` times, one process after another (never
    two at once: they would time each other); their results documents."""
    docs: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="synclint-bench-") as tmp:
        for i in range(1, runs + 1):
            path = os.path.join(tmp, f"run{i}.json")
            if say:
                say(f"run {i}/{runs}: a fresh process")
            cmd = [python, "-m", "synclint", "bench", *cli_args, "--runs", "1", "--output-format", "json",
                   "--output", path]
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None if say else subprocess.PIPE, text=True)
            if not os.path.isfile(path):
                raise RuntimeError(f"run {i} wrote no results (exit {done.returncode}): "
                                   f"{(done.stderr or done.stdout or '').strip()[-500:]}")
            with open(path, encoding="utf-8") as f:
                docs.append(json.load(f))
    return docs


def combine(docs: Sequence[Dict[str, Any]], confidence: float = stats.RUN_CONFIDENCE) -> Dict[str, Any]:
    """One results document from R single-run documents of the same bench and card."""
    if len(docs) < 2:
        raise Incomparable("combining needs at least two runs")
    metas = [d.get("meta", {}) for d in docs]
    for m in metas:
        if not m.get("timed"):
            raise Incomparable("only timed (CUDA) runs can be combined")
        if (m.get("runs") or 1) > 1:
            raise Incomparable("combine single runs, not documents that are already combined")
    for key in ("gpu", "torch"):
        if len({m.get(key) for m in metas}) > 1:
            raise Incomparable(f"the runs differ in {key}: {', '.join(sorted(str(m.get(key)) for m in metas))}")
    from synclint.bench.harness import REGIME_FIGURES, decide

    meta = copy.deepcopy(metas[0])
    meta.update({
        "runs": len(docs),
        "run_dates": [m.get("date") for m in metas],
        "run_hosts": [m.get("host") for m in metas],
        "interval": {"kind": "run-to-run", "confidence": confidence, "runs": len(docs)},
        "wall_s": round(sum(m.get("wall_s") or 0 for m in metas), 1) or None,
    })
    by_code = [{r["code"]: r for r in d.get("results", [])} for d in docs]
    codes = sorted(set().union(*by_code))
    results = []
    for code in codes:
        recs = [b.get(code) for b in by_code]
        results.append(_combine_record(code, recs, confidence, REGIME_FIGURES, decide))
    return {"meta": meta, "results": results}


def _combine_record(code: str, recs: List[Optional[Dict[str, Any]]], confidence: float,
                    figures: Sequence[str], decide: Callable) -> Dict[str, Any]:
    present = [r for r in recs if r is not None]
    base = copy.deepcopy(present[0])
    base.setdefault("notes", [])
    if len(present) < len(recs):
        base["notes"].append(f"missing from {len(recs) - len(present)} of {len(recs)} runs")
    bad = next((r for r in present if r.get("error") or r.get("same_result") is False or not r.get("regimes")), None)
    if bad is not None:  # an error or a failed comparison in any run is the pair's result
        out = copy.deepcopy(bad)
        out.setdefault("notes", []).append(f"from one of {len(recs)} runs; the pair did not run cleanly in all")
        return out
    for key in _RECORD_FACTS:
        seen = {r.get(key) for r in present}
        if len(seen) > 1:
            base["notes"].append(f"{key} differed between runs: {sorted(seen, key=str)}")
    names = [n for n in base["regimes"] if all(n in r["regimes"] for r in present)]
    base["regimes"] = {n: combine_regime([r["regimes"][n] for r in present], confidence) for n in names}
    base["verdict"], base["regime"] = decide(base)
    for k in figures:
        base[k] = base["regimes"][base["regime"]].get(k)
    base["reproducible"] = base["regimes"][base["regime"]]["reproducible"]
    return base


def combine_regime(gs: Sequence[Dict[str, Any]], confidence: float = stats.RUN_CONFIDENCE) -> Dict[str, Any]:
    """One regime's figures over the runs (each `gs[i]` is harness.summarize_regime's)."""
    within = [tuple(g["ci"]) for g in gs]
    s, (lo, hi) = stats.run_interval([g["speedup"] for g in gs], within, confidence)
    out: Dict[str, Any] = {}
    for side in SIDES:
        out[f"{side}_us"] = round(statistics.median(g[f"{side}_us"] for g in gs), 3)
        out[f"{side}_gpu_us"] = round(statistics.median(g[f"{side}_gpu_us"] for g in gs), 3)
        out[f"{side}_us_by_pass"] = [v for g in gs for v in g[f"{side}_us_by_pass"]]
    out["calls"] = gs[0].get("calls")
    out["speedups_by_pass"] = [v for g in gs for v in g["speedups_by_pass"]]
    out["speedup"] = round(s, 4)
    out["ci"] = [round(lo, 4), round(hi, 4)]
    out["spread"] = round(max(s / max(lo, 1e-12) - 1.0, hi / max(s, 1e-12) - 1.0, 0.0), 4)
    out["saved_us"] = round(out["flagged_us"] - out["fixed_us"], 3)
    out["passes"] = sum(g["passes"] for g in gs)
    out["samples"] = {side: sum(g["samples"][side] for g in gs) for side in SIDES}
    if all("loops_us" in g for g in gs):
        out["loops_us"] = {side: [p for g in gs for p in g["loops_us"][side]] for side in SIDES}
    out["runs"] = [{"speedup": g["speedup"], "ci": g["ci"]} for g in gs]
    out["confidence"] = confidence
    out["reproducible"] = not stats.runs_disagree(within)
    out["verdict"] = stats.verdict_across_runs(s, (lo, hi))
    return out
