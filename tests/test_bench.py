"""The GPU verification harness, checked where CI runs (CPU).

Per rule: the module imports, a fixable rule has a pair, the pair is well formed, both sides
give the same result on the CPU (through `synclint bench --device cpu`), the flagged side
triggers its rule and the fixed side does not. Plus the results schema and the report
generator on a JSON recorded on a GPU (tests/data/bench-sample.json).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from synclint.bench.command import bench
from synclint.bench.pairs import Pair, missing_modules, parameter_names, rule_modules
from synclint.bench.report import measured, measured_line, render_markdown, render_svg
from synclint.bench.results import validate
from synclint.rule import BenchPair

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "bench-recorded.json"
SHIPPED = ROOT / "synclint" / "data" / "bench.json"

MODULES = rule_modules()  # one broken module must not break the collection
RULES = sorted((r for _, got in MODULES if not isinstance(got, Exception) for r in got), key=lambda r: r.CODE)
WITH_PAIR = [r for r in RULES if isinstance(getattr(r, "BENCH", None), BenchPair)]


def rid(rule) -> str:
    return f"{rule.CODE}-{rule.NAME}"


# ---------------------------------------------------------------- per rule


@pytest.mark.parametrize("modname,got", MODULES, ids=[m.rsplit(".", 1)[1] for m, _ in MODULES])
def test_rule_module_imports(modname, got):
    if isinstance(got, Exception):
        pytest.fail(f"{modname} cannot be imported: {type(got).__name__}: {got}")


# SYN9xx rules are about the comments (unused `noqa`): their fixes change no runtime, so
# there is nothing to time.
@pytest.mark.parametrize("rule", [r for r in RULES if r.FIX != "never" and not r.CODE.startswith("SYN9")], ids=rid)
def test_fixable_rule_has_a_pair(rule):
    assert isinstance(getattr(rule, "BENCH", None), BenchPair), f"{rule.CODE} has FIX={rule.FIX!r} but no BENCH pair"


@pytest.mark.parametrize("rule", WITH_PAIR, ids=rid)
def test_pair_is_well_formed(rule):
    b = rule.BENCH
    assert b.expect in ("time", "memory", "syncs"), f"expect={b.expect!r}"
    assert b.compare in ("equal", "close", "none"), f"compare={b.compare!r}"
    assert all(isinstance(k, str) and isinstance(v, int) for k, v in b.sizes.items()), f"sizes={b.sizes!r}"
    setup_names = _assigned_names(b.setup) | set(b.sizes) | {"torch", "device"}
    for side in ("flagged", "fixed"):
        params = parameter_names(b, side)
        unknown = [p for p in params if p not in setup_names]
        assert not unknown, f"{side}() parameters {unknown} are not defined by setup (setup defines {sorted(setup_names)})"
    if b.compare == "none":
        assert b.condition or b.expect != "time" or True  # a reason is welcome, not required


@pytest.fixture(scope="module")
def cpu_run():
    """`synclint bench --device cpu --output-format json` over every pair, once."""
    pytest.importorskip("torch")
    res = CliRunner().invoke(bench, ["--device", "cpu", "--output-format", "json", "--no-progress"])
    assert res.exit_code in (0, 1), f"exit {res.exit_code}: {res.output}\n{res.exception!r}"
    data = json.loads(res.stdout)
    return res.exit_code, data


@pytest.mark.parametrize("rule", WITH_PAIR, ids=rid)
def test_pair_same_result_on_cpu(rule, cpu_run):
    _, data = cpu_run
    if missing_modules(rule.BENCH):
        pytest.skip(f"the pair needs {missing_modules(rule.BENCH)}")
    (r,) = [x for x in data["results"] if x["code"] == rule.CODE]
    assert r["error"] is None, f"the pair could not run on the CPU: {r['error']}"
    if rule.BENCH.compare == "none":
        assert r["same_result"] is None
    else:
        assert r["same_result"] is True, f"flagged and fixed differ: {r['compare_note']}"


def test_cpu_bench_passes_for_every_pair(cpu_run):
    code, data = cpu_run
    bad = [(r["code"], r["error"] or r["compare_note"]) for r in data["results"] if r["error"] or r["same_result"] is False]
    assert code == 0 and not bad, f"synclint bench --device cpu failed for {bad}"


def _lint_side(rule, side):
    from synclint.engine import lint_source

    b = rule.BENCH
    head = "import torch\ndevice = 'cuda'\n" + "".join(f"{k} = {v}\n" for k, v in b.sizes.items())
    setup = b.setup if b.setup.endswith("\n") else b.setup + "\n"
    code = textwrap.dedent(getattr(b, side))
    code = code if code.endswith("\n") else code + "\n"
    params = parameter_names(b, side)
    loop = f"for _ in range(3):\n    {side}({', '.join(params)})\n"
    first = (head + setup).count("\n") + 1
    last = first + code.count("\n") - 1
    src = head + setup + code + loop
    findings = lint_source(src, "<bench>", [rule])
    inside = [f for f in findings if first <= f.row <= last]
    return inside, findings, src


@pytest.mark.parametrize("rule", WITH_PAIR, ids=rid)
def test_flagged_side_triggers_the_rule(rule):
    inside, findings, src = _lint_side(rule, "flagged")
    assert inside, f"{rule.CODE} does not fire on its own flagged() (findings elsewhere: {[(f.row, f.message) for f in findings]})\n{src}"


@pytest.mark.parametrize("rule", WITH_PAIR, ids=rid)
def test_fixed_side_is_clean(rule):
    inside, _, src = _lint_side(rule, "fixed")
    if rule.BENCH.fix_still_flagged:
        assert 0 < len(inside) <= len(_lint_side(rule, "flagged")[0]), src
        return
    assert not inside, f"{rule.CODE} fires on its own fixed(): {[(f.row, f.message) for f in inside]}\n{src}"


def _assigned_names(src: str) -> set:
    names = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


# ---------------------------------------------------------------- the whole CPU run


def test_cpu_run_schema(cpu_run):
    _, data = cpu_run
    assert validate(data) == []
    assert data["meta"]["timed"] is False
    assert {r["code"] for r in data["results"]} == {r.CODE for r in WITH_PAIR if not missing_modules(r.BENCH)}
    for r in data["results"]:
        assert r["flagged_us"] is None and r["syncs_flagged"] is None and r["verdict"] in ("not timed", "failed", "error")


def test_cpu_text_and_markdown_say_correctness_only(tmp_path):
    pytest.importorskip("torch")
    code = WITH_PAIR[0].CODE if WITH_PAIR else pytest.skip("no pairs")
    res = CliRunner().invoke(bench, ["--device", "cpu", "--select", code, "--no-progress"])
    assert "correctness only" in res.output
    out = tmp_path / "r.md"
    res = CliRunner().invoke(bench, ["--device", "cpu", "--select", code, "--output-format", "markdown", "--output", str(out)])
    assert res.exit_code in (0, 1)
    assert "correctness only" in out.read_text()
    assert not list(tmp_path.glob(".synclint-*"))  # no temporary file left behind


def test_usage_errors():
    pytest.importorskip("torch")
    r = CliRunner().invoke(bench, ["--device", "tpu"])
    assert r.exit_code == 2
    r = CliRunner().invoke(bench, ["--device", "cpu", "--select", "SYN999"])
    assert r.exit_code == 2 and "SYN999" in r.output
    import torch

    if not torch.cuda.is_available():
        r = CliRunner().invoke(bench, [])
        assert r.exit_code == 2 and "--device cpu" in r.output


def test_missing_torch_gives_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    r = CliRunner().invoke(bench, ["--device", "cpu"])
    assert r.exit_code == 2
    assert r.output.strip() == "synclint bench needs PyTorch: pip install 'synclint[bench]'"


def test_importing_bench_does_not_import_torch():
    code = (
        "import sys\n"
        "import synclint.bench, synclint.bench.command, synclint.bench.report, synclint.bench.harness, "
        "synclint.bench.pairs, synclint.bench.results, synclint.bench.compare\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_failing_pair_fails_loudly(monkeypatch):
    pytest.importorskip("torch")
    from synclint.bench import harness

    bad = Pair("SYN000", "made-up", BenchPair(
        setup="x = torch.arange(5, device=device)\n",
        flagged="def flagged(x):\n    return x + 1\n",
        fixed="def fixed(x):\n    return x + 2\n",
    ))
    broken = Pair("SYN001", "broken", BenchPair(
        setup="x = torch.arange(5, device=device)\n",
        flagged="def flagged(x, nope):\n    return x\n",
        fixed="def fixed(x):\n    return x\n",
    ))
    data = harness.run([bad, broken], "cpu")
    by = {r["code"]: r for r in data["results"]}
    assert by["SYN000"]["same_result"] is False and by["SYN000"]["verdict"] == "failed"
    assert "nope" in by["SYN001"]["error"] and by["SYN001"]["verdict"] == "error"
    assert len(harness.failed(data["results"])) == 2
    assert validate(data) == []
    monkeypatch.setattr("synclint.bench.pairs.select_pairs", lambda sel: ([bad], []))
    r = CliRunner().invoke(bench, ["--device", "cpu", "--no-progress"])
    assert r.exit_code == 1 and "FAILED SYN000" in r.output


# ---------------------------------------------------------------- comparison and verdicts


def test_compare_modes():
    torch = pytest.importorskip("torch")
    from synclint.bench.compare import same_result

    a = torch.tensor([1.0, float("nan"), 3.0])
    assert same_result(torch, a, a.clone(), "equal")[0] is True
    assert same_result(torch, a, a + 1e-6, "equal")[0] is False
    assert same_result(torch, a, a + 1e-6, "close")[0] is True
    assert same_result(torch, torch.tensor(2.5), 2.5, "equal")[0] is True
    assert same_result(torch, torch.tensor([1, 2]), [1, 2], "equal")[0] is True
    assert same_result(torch, torch.zeros(3), torch.zeros(4), "equal")[0] is False
    assert same_result(torch, (torch.ones(2), 3), [torch.ones(2), 3], "equal")[0] is True
    assert same_result(torch, {"a": 1}, {"a": 2}, "equal")[0] is False
    assert same_result(torch, 1, 2, "none")[0] is None


def _rec(flagged, fixed, **kw):
    from synclint.bench.harness import new_record, summarize

    r = new_record(Pair("SYN999", "x", BenchPair(setup="", flagged="", fixed="")), {})
    r["same_result"] = True
    r["_raw"] = {"back-to-back": {"calls": {"flagged": 1, "fixed": 1}, "flagged": flagged, "fixed": fixed,
                                  "flagged_gpu": flagged, "fixed_gpu": fixed}}
    r.update(kw)
    return summarize(r, True, resamples=200)


def test_verdicts():
    quiet = [100.0] * 7
    assert _rec([quiet, quiet], [[40.0] * 7, [40.0] * 7])["verdict"] == "faster"
    r = _rec([quiet, [110.0] * 7], [[100.0] * 7, [100.0] * 7])
    assert r["verdict"] == "no measurable gain" and r["ci"][0] <= 1.0  # one pass 1.1x, one 1.0x: not measured
    assert _rec([quiet, quiet], [[102.0] * 7, [102.0] * 7])["verdict"] == "no measurable gain"  # under 3%
    assert _rec([quiet, quiet], [[150.0] * 7, [150.0] * 7])["verdict"] == "slower"
    m = _rec([quiet, quiet], [quiet, quiet], peak_mem_flagged=320 << 20, peak_mem_fixed=244 << 20)
    assert m["verdict"] == "memory"
    s = _rec([quiet, quiet], [quiet, quiet], expect="syncs", syncs_flagged=1, syncs_fixed=0)
    assert s["verdict"] == "fewer syncs"
    r = _rec([quiet, quiet], [[40.0] * 7, [40.0] * 7])
    assert r["speedup"] == 2.5 and r["speedups_by_pass"] == [2.5, 2.5] and r["flagged_us_by_pass"] == [100.0, 100.0]
    assert r["regime"] == "back-to-back" and r["ci"] == [2.5, 2.5] and r["passes"] == 2


# ---------------------------------------------------------------- recorded GPU results and reports


def _sample():
    if not SAMPLE.is_file():
        pytest.skip("no recorded sample (tests/data/bench-recorded.json)")
    return json.loads(SAMPLE.read_text())


def test_recorded_sample_schema():
    data = _sample()
    assert validate(data) == []
    assert data["meta"]["timed"] is True and data["meta"]["gpu"]
    for r in data["results"]:
        if r["verdict"] in ("faster", "memory", "no measurable gain", "slower", "fewer syncs"):
            assert r["passes"] >= 5 and len(r["speedups_by_pass"]) == r["passes"] and len(r["ci"]) == 2


def test_validate_catches_problems():
    data = _sample()
    bad = json.loads(json.dumps(data))
    del bad["meta"]["gpu"]
    bad["results"][0]["verdict"] = "great"
    bad["results"][0]["speedup"] = "fast"
    errs = validate(bad)
    assert any("gpu" in e for e in errs) and any("verdict" in e for e in errs) and any("speedup" in e for e in errs)
    assert validate([]) != []


def test_report_markdown_from_sample():
    data = _sample()
    md = render_markdown(data)
    meta = data["meta"]
    assert meta["gpu"] in md and meta["torch"] in md and meta["date"][:10] in md
    assert "speedups.svg" in md
    for r in data["results"]:
        assert f"### {r['code']}" in md
        assert f"[{r['code']}]" in md


def test_report_svg_from_sample():
    data = _sample()
    svg = render_svg(data)
    root = ElementTree.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    bars = [e for e in root.iter(f"{ns}rect") if e.get("class") == "bar"]
    regimes = [(r["code"], k) for r in data["results"] for k in (r.get("regimes") or {})]
    assert sorted((b.get("data-code"), b.get("data-regime")) for b in bars) == sorted(regimes)
    # log scale: a bar's length is proportional to |log(speedup)|
    import math

    pairs = [(abs(math.log10(float(b.get("data-speedup")))), float(b.get("width"))) for b in bars]
    pairs = [(lg, w) for lg, w in pairs if lg > 0.05]
    if len(pairs) >= 2:
        ratios = [w / lg for lg, w in pairs]
        assert max(ratios) / min(ratios) < 1.05
    assert data["meta"]["gpu"] in svg


def test_measured_reads_a_document():
    data = _sample()
    code = data["results"][0]["code"]
    r = measured(code, data)
    assert r is not None and r["code"] == code and r["meta"]["gpu"] == data["meta"]["gpu"]
    assert measured("SYN999", data) is None
    line = measured_line(code, data)
    assert line is None or data["meta"]["gpu"] in line


def test_shipped_results_are_valid_and_current():
    if not SHIPPED.is_file():
        pytest.skip("no shipped results yet (synclint/data/bench.json)")
    data = json.loads(SHIPPED.read_text())
    assert validate(data) == []
    assert data["meta"]["timed"] is True
    r = measured(data["results"][0]["code"])
    assert r is not None


# ---------------------------------------------------------------- the CUDA code path, with a stand-in


class _FakeEvent:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, *a):
        import time

        self.t = time.perf_counter()

    def synchronize(self):
        return None

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class _FakeCuda:
    Event = _FakeEvent
    mode = "default"
    modes_seen = []

    def is_available(self):
        return True

    def current_device(self):
        return 0

    def set_device(self, i):
        return None

    def get_device_name(self, i=None):
        return "Fake GPU"

    def synchronize(self, *a):
        return None

    def _sleep(self, cycles):
        import time

        time.sleep(cycles * 1e-9)

    def set_sync_debug_mode(self, mode):
        _FakeCuda.mode = mode
        _FakeCuda.modes_seen.append(mode)

    def fake_sync(self):
        """What a synchronizing op does under the debug mode (the flagged side calls it)."""
        import warnings

        if _FakeCuda.mode == "warn":
            warnings.warn("called a synchronizing CUDA operation")

    def memory_allocated(self):
        return 0

    def max_memory_allocated(self):
        return 3 << 20

    def reset_peak_memory_stats(self):
        return None

    def empty_cache(self):
        return None


class _FakeTorch:
    """Real torch (CPU) for the pair code, a stand-in for torch.cuda."""

    def __init__(self):
        import torch

        self._torch = torch
        self.cuda = _FakeCuda()
        self.version = type("V", (), {"cuda": "0.0"})()

    def __getattr__(self, name):
        return getattr(self._torch, name)


def test_timed_path_with_a_stand_in_for_cuda():
    """Every line of the CUDA path (background, both regimes, interleaved loops, events, sync
    counting, memory, two passes, intervals, verdicts) runs, on a CPU machine, against a fake
    torch.cuda."""
    pytest.importorskip("torch")
    from synclint.bench import harness

    slow = Pair("SYN001", "slow-vs-fast", BenchPair(
        setup="import time\nx = torch.arange(8, device=device)\n",
        flagged="def flagged(x, time):\n    for _ in range(3):\n        torch.cuda.fake_sync()\n    time.sleep(0.002)\n    return x * 2\n",
        fixed="def fixed(x):\n    return x + x\n",
    ))
    blind = Pair("SYN002", "blind", BenchPair(
        setup="x = torch.ones(4, device=device)\n",
        flagged="def flagged(x):\n    torch.cuda.synchronize()\n    return x.sum()\n",
        fixed="def fixed(x):\n    return x.sum()\n",
        compare="close", debug_mode_sees=False, expect="memory",
    ))
    real = [Pair(r.CODE, r.NAME, r.BENCH) for r in WITH_PAIR if set(r.BENCH.sizes) == {"n"}][:2]
    opts = harness.Options(repeat=3, passes=2, warmup=1, target_ms=2, background_us=200, max_calls=50,
                           host_us=300, gpu_us=50, kernel_probe=1 << 16, resamples=200)
    data = harness.run([slow, blind] + real, "cpu", opts, torch_module=_FakeTorch(), timed=True,
                       sizes_override={"n": 1000, "steps": 3})
    assert validate(data) == [], validate(data)
    meta = data["meta"]
    assert meta["gpu"] == "Fake GPU" and meta["timed"] is True and meta["background_us"] > 0
    by = {r["code"]: r for r in data["results"]}
    s = by["SYN001"]
    assert s["error"] is None and s["same_result"] is True
    assert s["syncs_flagged"] == 3 and s["syncs_fixed"] == 0
    b2b, hw = s["regimes"]["back-to-back"], s["regimes"]["host-work"]  # the fix removes syncs: both loops
    assert b2b["flagged_us"] > 1500 and b2b["speedup"] > 5 and b2b["verdict"] == "faster"
    assert hw["fixed_us"] >= opts.host_us and hw["flagged_us"] > 2000 + opts.host_us  # per step: call + host work
    # host-work is the headline whenever it is measurably faster (on a loaded CPU it may not be)
    assert s["verdict"] == "faster" and s["regime"] == ("host-work" if hw["verdict"] == "faster" else "back-to-back")
    assert len(s["speedups_by_pass"]) == 2 and s["calls"]["flagged"] >= opts.min_calls
    assert meta["host_work"]["host_us"] == 300 and meta["host_work"]["gpu_elements"] >= 1
    b = by["SYN002"]
    assert b["syncs_flagged"] is None and b["syncs_note"] and b["peak_mem_flagged"] == 3 << 20
    assert set(b["regimes"]) == {"back-to-back", "host-work"}  # a sync the debug mode cannot see still costs overlap
    assert _FakeCuda.mode == "default"  # the debug mode is always switched back off
    for r in real:
        assert by[r.code]["error"] is None, by[r.code]["error"]
        assert set(by[r.code]["regimes"]) == {"back-to-back"}  # the stand-in sees no sync in them
    md = render_markdown(data)
    assert "Fake GPU" in md and "not visible" in md
    ElementTree.fromstring(render_svg(data))


def test_a_pair_whose_modules_are_missing_is_skipped_with_a_note(monkeypatch):
    from synclint.bench import pairs as P

    fake = type("Fake", (), {"CODE": "SYN999", "NAME": "fake", "BENCH": BenchPair(
        setup="import no_such_module_here\n", flagged="def flagged():\n    return 1\n",
        fixed="def fixed():\n    return 1\n", requires=("no_such_module_here", "json"))})
    assert P.missing_modules(fake.BENCH) == ["no_such_module_here"]
    monkeypatch.setattr("synclint.registry.all_rules", lambda: (fake,))
    got, notes = P.select_pairs()
    assert got == [] and notes == ["SYN999 fake: skipped, its pair needs no_such_module_here (not installed)"]
