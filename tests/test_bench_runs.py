"""Intervals that survive a rerun (synclint/bench/runs.py, stats.run_interval): runs in
separate processes combined into figures whose intervals hold another set of runs' figure,
the not-reproducible flag, verdicts only where the intervals settle them, and the
comparison of two full runs. On the CPU with simulated loop times; no torch."""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.bench import stats
from synclint.bench.harness import new_record, summarize
from synclint.bench.pairs import Pair
from synclint.bench.results import validate
from synclint.bench.runs import Incomparable, combine, run_processes
from synclint.bench.stability import compare
from synclint.rule import BenchPair


def _run(seed: int, gain: float, run_sd: float, loop_sd: float = 0.02, passes: int = 2, loops: int = 4):
    """One whole run's results document for one pair: the flagged side `gain` times slower,
    times a factor drawn once for the whole run (what changes between processes), times
    noise per loop."""
    rng = random.Random(seed)
    effect = rng.lognormvariate(0, run_sd)
    f = [[100 * gain * effect * rng.lognormvariate(0, loop_sd) for _ in range(loops)] for _ in range(passes)]
    x = [[100 * rng.lognormvariate(0, loop_sd) for _ in range(loops)] for _ in range(passes)]
    r = new_record(Pair("SYN999", "x", BenchPair(setup="", flagged="", fixed="")), {"n": 10})
    r.update(same_result=True, syncs_flagged=1, syncs_fixed=0, peak_mem_flagged=1 << 20, peak_mem_fixed=1 << 20)
    r["_raw"] = {"back-to-back": {"calls": {"flagged": 10, "fixed": 10}, "flagged": f, "fixed": x,
                                  "flagged_gpu": f, "fixed_gpu": x}}
    meta = {"gpu": "Test GPU", "torch": "2.x", "cuda": "12", "date": f"2026-01-01T00:{seed % 60:02d}:00Z",
            "host": "h", "device": "cuda", "timed": True, "runs": 1}
    return {"meta": meta, "results": [summarize(r, True, resamples=200)]}


def _figure(doc):
    g = doc["results"][0]["regimes"]["back-to-back"]
    return g["speedup"], g["ci"], g


def test_t_quantiles_match_the_published_table():
    for p, df, table in ((0.975, 1, 12.706), (0.975, 2, 4.303), (0.995, 3, 5.841), (0.995, 4, 4.604),
                         (0.995, 30, 2.750), (0.975, 1000, 1.962)):
        assert stats.t_quantile(p, df) == pytest.approx(table, abs=2e-3)
    assert stats.t_quantile(0.025, 4) == pytest.approx(-stats.t_quantile(0.975, 4))


def test_one_runs_interval_misses_the_next_run_and_combined_runs_hold_it():
    """The defect of issue 39, simulated: a run-level factor (5%) bigger than the loop noise.
    One run's bootstrap interval rarely holds another run's figure; the interval of 5 runs
    combined holds another 5 runs' figure about as often as it says (99%)."""
    single = combined = trials = 0
    for k in range(20):
        one, other = _run(1000 + k, 1.3, 0.05), _run(2000 + k, 1.3, 0.05)
        single += _figure(one)[1][0] <= _figure(other)[0] <= _figure(one)[1][1]
        a = combine([_run(100 * k + i, 1.3, 0.05) for i in range(5)])
        b = combine([_run(100 * k + 50 + i, 1.3, 0.05) for i in range(5)])
        combined += _figure(b)[1][0] <= _figure(a)[0] <= _figure(b)[1][1]
        trials += 1
    assert single / trials < 0.6
    assert combined >= trials - 1  # a 99% interval; these seeds miss none


def test_the_interval_is_never_narrower_than_the_runs_own_spread():
    # Five runs that agree to the digit by chance still wander by their own intervals.
    s, (lo, hi) = stats.run_interval([1.30] * 5, [(1.20, 1.40)] * 5)
    assert s == pytest.approx(1.30) and lo < 1.25 and hi > 1.35
    s, (lo, hi) = stats.run_interval([1.30] * 5, [(1.299, 1.301)] * 5)
    assert hi - lo < 0.01
    with pytest.raises(ValueError, match="two runs"):
        stats.run_interval([1.3], [(1.2, 1.4)])


def test_runs_whose_own_intervals_do_not_overlap_are_not_reproducible():
    assert stats.runs_disagree([(1.25, 1.33), (1.46, 1.48)])  # issue 39's SYN101, twice
    assert not stats.runs_disagree([(1.25, 1.33), (1.30, 1.48), (1.28, 1.31)])
    doc = combine([_run(i, 1.3, 0.15, loop_sd=0.005) for i in range(5)])
    g = _figure(doc)[2]
    assert g["reproducible"] is False and doc["results"][0]["reproducible"] is False
    from synclint.bench.report import NOT_REPRODUCIBLE, regime_phrase

    assert NOT_REPRODUCIBLE in regime_phrase(g)


def test_a_verdict_is_issued_only_where_the_interval_settles_it():
    v = stats.verdict_across_runs
    assert v(1.30, (1.10, 1.50)) == "faster"
    assert v(1.01, (0.99, 1.02)) == "no measurable gain"
    assert v(0.80, (0.70, 0.90)) == "slower"
    assert v(1.05, (0.99, 1.12)) == "undecided"  # 1.0 and a 3% gain both inside
    assert v(1.02, (1.01, 1.04)) == "undecided"  # above 1.0, but a 3% gain is not shown


def test_verdicts_cannot_flip_while_each_interval_holds_the_other_runs_figure():
    rng = random.Random(7)
    for _ in range(20000):
        s1, s2 = math.exp(rng.gauss(0, 0.05)), math.exp(rng.gauss(0, 0.05))
        w1, w2 = math.exp(abs(rng.gauss(0, 0.05))), math.exp(abs(rng.gauss(0, 0.05)))
        i1, i2 = (s1 / w1, s1 * w1), (s2 / w2, s2 * w2)
        if not (i1[0] <= s2 <= i1[1] and i2[0] <= s1 <= i2[1]):
            continue
        a, b = stats.verdict_across_runs(s1, i1), stats.verdict_across_runs(s2, i2)
        assert a == b or "undecided" in (a, b), (s1, i1, s2, i2)


def test_combined_document_is_valid_and_keeps_each_runs_figures():
    docs = [_run(i, 1.5, 0.02) for i in range(4)]
    doc = combine(docs)
    assert validate(doc) == []
    r = doc["results"][0]
    g = r["regimes"]["back-to-back"]
    assert [x["speedup"] for x in g["runs"]] == [_figure(d)[0] for d in docs]
    assert g["speedup"] == pytest.approx(math.exp(statistics.fmean(math.log(_figure(d)[0]) for d in docs)), rel=1e-3)
    assert g["passes"] == 8 and len(g["speedups_by_pass"]) == 8
    assert (r["verdict"], r["speedup"], r["ci"]) == ("faster", g["speedup"], g["ci"])
    assert doc["meta"]["runs"] == 4 and doc["meta"]["interval"]["kind"] == "run-to-run"


def test_only_runs_of_one_card_and_torch_combine():
    a, b = _run(1, 1.3, 0.02), _run(2, 1.3, 0.02)
    b["meta"]["gpu"] = "Other GPU"
    with pytest.raises(Incomparable, match="gpu"):
        combine([a, b])
    with pytest.raises(Incomparable, match="at least two"):
        combine([a])


def test_a_pair_that_failed_in_one_run_fails_in_the_combination():
    docs = [_run(i, 1.3, 0.02) for i in range(3)]
    docs[1]["results"][0].update(error="RuntimeError: boom", verdict="error")
    r = combine(docs)["results"][0]
    assert r["verdict"] == "error" and "did not run cleanly" in r["notes"][-1]


def test_bench_combine_from_the_command_line(tmp_path):
    from synclint.frontends.cli import main

    paths = []
    for i in range(3):
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps(_run(i, 1.4, 0.02)))
        paths += ["--combine", str(p)]
    out = CliRunner().invoke(main, ["bench", *paths, "--output-format", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["meta"]["runs"] == 3 and validate(doc) == []
    (tmp_path / "bad.json").write_text("{")
    out = CliRunner().invoke(main, ["bench", "--combine", str(tmp_path / "bad.json"), "--combine", paths[1]])
    assert out.exit_code == 2 and "bad.json" in out.output and "Traceback" not in out.output


def test_runs_are_separate_processes_one_after_another(tmp_path):
    """run_processes starts `python -m synclint bench ... --runs 1` once per run; a stand-in
    python records its arguments and writes a document."""
    log = tmp_path / "calls.log"
    fake = tmp_path / "python"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"open({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "out = sys.argv[sys.argv.index('--output') + 1]\n"
        "json.dump({'meta': {'pid': os.getpid()}, 'results': []}, open(out, 'w'))\n")
    fake.chmod(0o755)
    docs = run_processes(["--device", "cuda", "--select", "SYN101"], 3, python=str(fake))
    calls = log.read_text().splitlines()
    assert len(docs) == 3 and len({d["meta"]["pid"] for d in docs}) == 3
    assert all(c.startswith("-m synclint bench --device cuda --select SYN101 --runs 1 --output-format json") for c in calls)


def test_the_comparison_counts_intervals_that_hold_and_verdicts_that_flip():
    a = combine([_run(i, 1.3, 0.02) for i in range(4)])
    b = combine([_run(10 + i, 1.3, 0.02) for i in range(4)])
    c = compare(a, b)
    assert (c["intervals"], c["covered"], c["misses"], c["flips"]) == (1, 1, [], [])
    b["results"][0]["regimes"]["back-to-back"]["ci"] = [2.0, 2.1]  # an interval that misses run 1's figure
    b["results"][0]["verdict"] = b["results"][0]["regimes"]["back-to-back"]["verdict"] = "undecided"
    c = compare(a, b)
    assert c["misses"] == ["SYN999 back-to-back"] and c["flips"] == [] and c["withheld"] == ["SYN999"]
    b["results"][0]["regimes"]["back-to-back"]["reproducible"] = False
    assert compare(a, b)["misses_flagged"] == ["SYN999 back-to-back"]
