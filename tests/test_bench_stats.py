"""The bench's statistics and decisions, on the CPU: the bootstrap interval, the verdict rule,
the headline regime, the results schema's checks of them, the stability comparison and the
`.item()` sweep's model arithmetic. No torch needed, no NumPy either (CI installs neither
beyond torch)."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from synclint.bench import stats
from synclint.bench.harness import decide, loses_overlap, new_record, summarize, summarize_regime
from synclint.bench.pairs import Pair
from synclint.bench.results import validate
from synclint.bench.stability import Incomparable, compare
from synclint.bench.sweep import render_svg as sweep_svg, summarize as sweep_summary
from synclint.rule import BenchPair

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "synclint" / "data" / "bench.json"


def noisy(level: float, n_pass: int, n_loop: int, sd: float, seed: int, drift=None):
    """Per-loop times: `level` times a per-pass drift, times log-normal noise per loop."""
    rng = random.Random(seed)
    drift = drift or [1.0] * n_pass
    return [[level * drift[p] * rng.lognormvariate(0, sd) for _ in range(n_loop)] for p in range(n_pass)]


# ---------------------------------------------------------------- bootstrap interval


def test_interval_is_seeded_and_brackets_the_speedup():
    f, x = noisy(120, 7, 4, 0.05, 1), noisy(100, 7, 4, 0.05, 2)
    a = stats.bootstrap_interval(f, x, seed=3)
    assert a == stats.bootstrap_interval(f, x, seed=3)  # the same samples give the same interval
    s = stats.speedup(f, x)
    assert a[0] < s < a[1] and 1.1 < s < 1.3
    assert a[0] > 1.0  # a 20% gain under 5% noise is measurable


def test_interval_narrows_with_more_samples():
    def width(n_pass, n_loop):
        f, x = noisy(110, n_pass, n_loop, 0.08, 5), noisy(100, n_pass, n_loop, 0.08, 6)
        lo, hi = stats.bootstrap_interval(f, x, resamples=1000)
        return hi - lo

    assert width(10, 10) < 0.6 * width(3, 3)


def test_interval_covers_the_true_ratio_most_of_the_time():
    """About 95% coverage: over 40 simulated runs of a true 1.10x, at most a few intervals miss."""
    miss = 0
    for seed in range(40):
        f, x = noisy(110, 7, 4, 0.06, 100 + seed), noisy(100, 7, 4, 0.06, 500 + seed)
        lo, hi = stats.bootstrap_interval(f, x, resamples=400, seed=seed)
        miss += not (lo <= 1.10 <= hi)
    assert miss <= 5


def test_drift_common_to_both_sides_cancels():
    """Passes at very different speeds (a machine warming up or shared) do not widen the
    interval of a pair whose loops were interleaved: the ratio is taken loop by loop."""
    drift = [1.0, 1.3, 0.8, 1.5, 1.1, 0.9, 1.2]
    f = noisy(100, 7, 4, 0.01, 7, drift)
    x = [[v / 1.25 for v in p] for p in f]  # the fix is exactly 1.25x faster, whatever the pass
    lo, hi = stats.bootstrap_interval(f, x)
    assert lo == pytest.approx(1.25) and hi == pytest.approx(1.25)
    # a ratio of pooled medians would mix the passes' levels; the paired median does not
    assert stats.speedup(f, x) == pytest.approx(1.25)


def test_one_odd_pass_of_seven_does_not_carry_the_interval():
    f, x = noisy(115, 7, 4, 0.03, 8), noisy(100, 7, 4, 0.03, 9)
    f[0] = [v * 0.7 for v in f[0]]  # one pass where the fix looked slower
    lo, _ = stats.bootstrap_interval(f, x)
    assert lo > 1.0 and stats.time_verdict(stats.speedup(f, x), (lo, _)) == "faster"


def test_interval_needs_matching_passes_and_loops():
    with pytest.raises(ValueError, match="passes"):
        stats.bootstrap_interval([[1.0]], [[1.0], [1.0]])
    with pytest.raises(ValueError, match="loops"):
        stats.bootstrap_interval([[1.0, 2.0]], [[1.0]])


def test_difference_statistic():
    f, x = noisy(300, 5, 4, 0.01, 10), noisy(100, 5, 4, 0.01, 11)
    lo, hi = stats.bootstrap_interval(f, x, statistic=stats.difference)
    assert 180 < lo < 200 < hi < 220


# ---------------------------------------------------------------- verdict rule


@pytest.mark.parametrize("s,ci,want", [
    (1.20, (1.10, 1.30), "faster"),
    (1.20, (0.99, 1.30), "no measurable gain"),  # the interval includes 1.0
    (1.02, (1.01, 1.03), "no measurable gain"),  # excludes 1.0, but under the 3% floor
    (0.80, (0.75, 0.90), "slower"),
    (0.80, (0.75, 1.01), "no measurable gain"),
    (1.00, None, "no measurable gain"),
])
def test_time_verdict(s, ci, want):
    assert stats.time_verdict(s, ci) == want


def _raw(f, x):
    return {"calls": {"flagged": 3, "fixed": 3}, "flagged": f, "fixed": x, "flagged_gpu": f, "fixed_gpu": x}


def _rec(regimes, **kw):
    r = new_record(Pair("SYN999", "x", BenchPair(setup="", flagged="", fixed="")), {"n": 10})
    r.update(same_result=True, syncs_flagged=1, syncs_fixed=0, peak_mem_flagged=1 << 20, peak_mem_fixed=1 << 20)
    r.update(kw)
    r["_raw"] = {k: _raw(*v) for k, v in regimes.items()}
    return summarize(r, True, resamples=300)


FAST = (noisy(150, 7, 4, 0.02, 1), noisy(100, 7, 4, 0.02, 2))
SAME = (noisy(100, 7, 4, 0.05, 3), noisy(100, 7, 4, 0.05, 4))
SLOW = (noisy(100, 7, 4, 0.02, 5), noisy(150, 7, 4, 0.02, 6))


def test_headline_is_host_work_when_both_loops_are_faster():
    r = _rec({"back-to-back": FAST, "host-work": FAST})
    assert (r["verdict"], r["regime"]) == ("faster", "host-work")
    assert r["speedup"] == r["regimes"]["host-work"]["speedup"] and r["ci"] == r["regimes"]["host-work"]["ci"]
    assert validate({"meta": _meta(), "results": [r]}) == []


def test_faster_in_one_loop_only_names_that_loop():
    r = _rec({"back-to-back": SAME, "host-work": FAST})
    assert (r["verdict"], r["regime"]) == ("faster", "host-work")
    assert r["regimes"]["back-to-back"]["verdict"] == "no measurable gain"
    r = _rec({"back-to-back": FAST, "host-work": SAME})
    assert (r["verdict"], r["regime"]) == ("faster", "back-to-back")


def test_not_faster_anywhere_is_said_so_and_memory_stays_memory():
    r = _rec({"back-to-back": SAME, "host-work": SAME})
    assert r["verdict"] == "no measurable gain" and r["ci"][0] <= 1.0 <= r["ci"][1]
    m = _rec({"back-to-back": SAME}, peak_mem_flagged=320 << 20, peak_mem_fixed=244 << 20)
    assert (m["verdict"], m["regime"]) == ("memory", "back-to-back")
    s = _rec({"back-to-back": SLOW})
    assert s["verdict"] == "slower" and s["ci"][1] < 1.0
    y = _rec({"back-to-back": SAME}, expect="syncs")
    assert y["verdict"] == "fewer syncs"


def test_record_carries_interval_passes_and_samples():
    r = _rec({"back-to-back": FAST})
    g = r["regimes"]["back-to-back"]
    assert r["passes"] == 7 and r["samples"] == {"flagged": 28, "fixed": 28}
    assert len(g["loops_us"]["flagged"]) == 7 and len(g["speedups_by_pass"]) == 7
    lo, hi = r["ci"]
    assert lo < r["speedup"] < hi and r["spread"] == pytest.approx(max(r["speedup"] / lo - 1, hi / r["speedup"] - 1), abs=1e-3)
    assert "loops_us" not in r  # samples live in the regime, not twice


def test_loses_overlap():
    assert loses_overlap({"debug_mode_sees": True, "syncs_flagged": 50, "syncs_fixed": 0})
    assert not loses_overlap({"debug_mode_sees": True, "syncs_flagged": 0, "syncs_fixed": 0})
    assert loses_overlap({"debug_mode_sees": False, "syncs_flagged": None, "syncs_fixed": None})


def test_decide_order_does_not_depend_on_magnitudes():
    """Two runs where both loops are faster but by swapped margins keep the same headline."""
    a = {"regimes": {"back-to-back": {"verdict": "faster", "ci": [1.5, 1.7]}, "host-work": {"verdict": "faster", "ci": [1.2, 1.3]}}}
    b = {"regimes": {"back-to-back": {"verdict": "faster", "ci": [1.1, 1.2]}, "host-work": {"verdict": "faster", "ci": [1.4, 1.5]}}}
    assert decide(a) == decide(b) == ("faster", "host-work")


# ---------------------------------------------------------------- schema


def _meta():
    return {"gpu": "Test GPU", "torch": "2.x", "cuda": "12", "date": "2026-01-01T00:00:00Z", "host": "h",
            "device": "cuda", "timed": True}


def test_validate_refuses_a_verdict_the_interval_does_not_allow():
    r = _rec({"back-to-back": SAME})
    bad = copy.deepcopy(r)
    bad["regimes"]["back-to-back"]["verdict"] = bad["verdict"] = "faster"
    errs = validate({"meta": _meta(), "results": [bad]})
    assert any("does not exclude 1.0" in e for e in errs)
    bad = copy.deepcopy(r)
    bad["regime"] = "host-work"
    assert any(".regime" in e for e in validate({"meta": _meta(), "results": [bad]}))
    bad = copy.deepcopy(r)
    bad["ci"] = [1.3, 1.1]
    assert any("low <= high" in e or "differs" in e for e in validate({"meta": _meta(), "results": [bad]}))
    bad = copy.deepcopy(r)
    del bad["regimes"]["back-to-back"]["loops_us"]["fixed"][0][0]
    assert any("loops_us" in e for e in validate({"meta": _meta(), "results": [bad]}))


# ---------------------------------------------------------------- stability


def _doc(results, gpu="Test GPU", date="2026-01-01T00:00:00Z"):
    m = _meta()
    m.update(gpu=gpu, date=date)
    return {"meta": m, "results": results}


def test_stability_equal_runs():
    a = _doc([_rec({"back-to-back": FAST, "host-work": FAST})])
    b = _doc([_rec({"back-to-back": FAST, "host-work": FAST})], date="2026-01-01T00:05:00Z")
    c = compare(a, b)
    assert c["all_equal"] and c["changed"] == [] and c["pairs"][0]["equal"]


def test_stability_catches_a_changed_verdict_and_a_changed_regime():
    a = _doc([_rec({"back-to-back": FAST, "host-work": FAST})])
    b = _doc([_rec({"back-to-back": SAME, "host-work": FAST})])
    c = compare(a, b)
    assert not c["all_equal"] and c["changed"] == ["SYN999"]
    assert "back-to-back: faster -> no measurable gain" in c["pairs"][0]["why"]
    b = _doc([_rec({"back-to-back": FAST, "host-work": SAME})])
    c = compare(a, b)
    assert "regime host-work -> back-to-back" in c["pairs"][0]["why"]
    b = _doc([])
    assert compare(a, b)["pairs"][0]["why"] == "missing from run 2"


def test_stability_refuses_runs_from_different_cards():
    a = _doc([_rec({"back-to-back": FAST})])
    with pytest.raises(Incomparable, match="gpu"):
        compare(a, _doc([_rec({"back-to-back": FAST})], gpu="Other GPU"))


def test_stability_script_exit_codes(tmp_path):
    a = _doc([_rec({"back-to-back": FAST, "host-work": FAST})])
    b = _doc([_rec({"back-to-back": SAME, "host-work": FAST})])
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    (tmp_path / "bad.json").write_text("{")
    script = [sys.executable, str(ROOT / "scripts" / "bench_stability.py"), "compare"]
    same = subprocess.run(script + ["a.json", "a.json", "--out", "o1"], cwd=tmp_path, capture_output=True, text=True)
    assert same.returncode == 0, same.stdout + same.stderr
    assert json.loads((tmp_path / "o1" / "bench-stability.json").read_text())["all_equal"] is True
    diff = subprocess.run(script + ["a.json", "b.json", "--out", "o2"], cwd=tmp_path, capture_output=True, text=True)
    assert diff.returncode == 1 and "CHANGED SYN999" in diff.stdout
    bad = subprocess.run(script + ["a.json", "bad.json", "--out", "o3"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "bad.json" in bad.stdout and "Traceback" not in bad.stdout + bad.stderr


# ---------------------------------------------------------------- the .item() sweep


def _point(h, g, cost):
    return {"host_us": h, "gpu_target_us": g, "gpu_us": g, "flagged_us": max(h, g) + cost, "fixed_us": max(h, g),
            "cost_us": cost, "ci": [cost - 1, cost + 1], "model_us": min(h, g), "deviation_us": cost - min(h, g)}


def test_sweep_deviation_from_the_model():
    pts = [_point(h, g, min(h, g) + 20) for h in (0, 500, 1000) for g in (0, 1000)]
    pts[-1] = _point(1000, 1000, 900)  # 100 us under the model
    s = sweep_summary(pts)
    assert s["points"] == 6 and s["median_deviation_us"] == 20 and s["max_abs_deviation_us"] == 100
    assert s["max_at"] == {"host_us": 1000, "gpu_us": 1000, "of_step": 0.1}  # 100 us of a 1000 us step


def test_sweep_chart_draws_measured_points_and_the_model():
    pts = [_point(h, g, min(h, g) + 10) for h in (0, 500, 1000, 2000) for g in (0, 1000)]
    svg = sweep_svg({"meta": {"gpu": "Test GPU", "torch": "2.x", "date": "2026-01-01"}, "points": pts, "summary": sweep_summary(pts)})
    root = ElementTree.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert len([c for c in root.iter(f"{ns}circle") if c.get("class") == "point"]) == len(pts)
    assert len([p for p in root.iter(f"{ns}polyline") if p.get("class") == "model"]) == 2
    assert "Test GPU" in svg


# ---------------------------------------------------------------- without NumPy, and the shipped run


def test_statistics_do_not_need_numpy():
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from synclint.bench import stats, harness, sweep, stability\n"
        "print(stats.bootstrap_interval([[2.0, 2.1]], [[1.0, 1.0]], resamples=50))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def _shipped():
    if not SHIPPED.is_file():
        pytest.skip("no shipped results")
    data = json.loads(SHIPPED.read_text())
    if not any(r.get("regimes") for r in data["results"]):
        pytest.skip("shipped results predate the two regimes")
    return data


def test_shipped_intervals_are_reproducible_from_their_samples():
    """Each shipped interval is what the harness computes from the per-loop samples beside it:
    each run's own figure from its passes, then (runs.py) the figure and interval across runs."""
    data = _shipped()
    for r in data["results"][:6]:
        for name, g in (r.get("regimes") or {}).items():
            runs = g.get("runs") or [None]
            per = g["passes"] // len(runs)
            got_runs = []
            for i in range(len(runs)):
                cut = slice(i * per, (i + 1) * per)
                raw = {"calls": g["calls"], "flagged": g["loops_us"]["flagged"][cut], "fixed": g["loops_us"]["fixed"][cut],
                       "flagged_gpu": g["loops_us"]["flagged"][cut], "fixed_gpu": g["loops_us"]["fixed"][cut]}
                got_runs.append(summarize_regime(raw, data["meta"]["resamples"], sum(map(ord, r["code"]))))
            if runs == [None]:
                got = got_runs[0]
            else:
                for mine, shipped in zip(got_runs, runs):
                    assert [mine["speedup"], *mine["ci"]] == pytest.approx([shipped["speedup"], *shipped["ci"]], rel=1e-3)
                s, ci = stats.run_interval([x["speedup"] for x in runs], [tuple(x["ci"]) for x in runs], g["confidence"])
                got = {"speedup": s, "ci": list(ci), "verdict": stats.verdict_across_runs(s, ci)}
            assert got["ci"] == pytest.approx(g["ci"], rel=1e-3), (r["code"], name)
            assert got["speedup"] == pytest.approx(g["speedup"], rel=1e-3) and got["verdict"] == g["verdict"]


def test_shipped_run_has_both_regimes_for_the_sync_pairs():
    data = _shipped()
    by = {r["code"]: r for r in data["results"]}
    for code in ("SYN101", "SYN106", "SYN201"):  # .item(), print(tensor), a boolean mask per step
        r = by[code]
        hw = r["regimes"]["host-work"]
        assert hw["speedup"] > 1.2 and hw["ci"][0] <= hw["speedup"] <= hw["ci"][1], (code, hw)
        # faster where the interval settles it; SYN101's 1.3x is undecided over 3 runs (synclint/data/bench-stability.md)
        assert hw["verdict"] == ("faster" if hw["ci"][0] > 1.0 else "undecided"), (code, hw)
    assert data["meta"]["passes"] * (data["meta"].get("runs") or 1) >= 3


def test_results_json_keeps_sample_lists_on_one_line_and_round_trips():
    from synclint.bench.results import dumps

    r = _rec({"back-to-back": FAST})
    doc = {"meta": _meta(), "results": [r]}
    text = dumps(doc)
    assert json.loads(text) == json.loads(json.dumps(doc))
    loops = r["regimes"]["back-to-back"]["loops_us"]["flagged"][0]
    assert "[" + ", ".join(json.dumps(v) for v in loops) + "]" in text
    assert '"code": "SYN999"' in text  # everything else stays indented
