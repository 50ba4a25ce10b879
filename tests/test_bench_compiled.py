"""`synclint bench --compiled`, checked where CI runs (CPU, Dynamo with a counting backend).

Per pair: the pattern triggers its SYN6xx rule inside a compiled function and the fix does
not; under torch.compile the pattern breaks the graph (2+ graphs) and the fix and the
captured pattern do not (1 graph); every variant computes the pattern's values. Plus the
graph counter against a counting backend, no recompile once every variant is compiled,
the command, and the explain lines and report with and without results.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from synclint.bench import compiled  # noqa: E402
from synclint.bench.compiled_pairs import PAIRS, codes  # noqa: E402
from synclint.bench.compiled_report import NOT_MEASURED, measured_lines, render_markdown, render_text, validate  # noqa: E402

TINY = {"batch": 4, "width": 8, "depth": 2}


class CountingBackend:
    """Dynamo's graphs handed to this backend, run as they are."""

    __name__ = "counting"

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


# In a process of its own: Dynamo's marks outlive `torch._dynamo.reset()` (code it gave up on,
# such as a module's forward that another test compiled past the recompile limit, stays
# skipped), so a run after other compiling tests in one process counts graphs that are not
# the pairs' own. The GPU runs it alone as well (`gpu_run.py --compiled`).
RUN_ALONE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_bench_compiled import PAIRS, TINY, CountingBackend
from synclint.bench import compiled
counter = CountingBackend()
data = compiled.run(PAIRS, "cpu", compiled.Options(backend=counter, sizes=dict(TINY)))
print("@@" + json.dumps({"data": data, "graphs": counter.graphs}))
"""


@pytest.fixture(scope="module")
def cpu_run():
    import subprocess
    import sys
    import types

    r = subprocess.run([sys.executable, "-c", RUN_ALONE, str(Path(__file__).parent)], capture_output=True, text=True)
    assert r.returncode == 0 and "@@" in r.stdout, r.stderr[-3000:]
    got = json.loads(r.stdout.rsplit("@@", 1)[1])
    return got["data"], types.SimpleNamespace(graphs=got["graphs"])


def result(data, pair):
    return next(r for r in data["results"] if (r["code"], r["case"]) == (pair.code, pair.case))


# ---------------------------------------------------------------- the pairs and the rules

STAND_INS = (
    "import torch\n"
    "class Net(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.head = torch.nn.Linear(256, 256)\n"
    "        self.tail = torch.nn.Linear(256, 256)\n"
    "net = Net().cuda()\n"
    "x = torch.randn(64, 256, device='cuda')\n"
    "lengths = torch.arange(64, device='cuda') + 1\n"
    "repeats = torch.full((64,), 2, device='cuda')\n"
    "total = 128\n"
    "out = None\n"
)


def side_source(pair, side):
    """The source of one side, as its builder defines it (None: the pair has no such side)."""
    src = textwrap.dedent(inspect.getsource(pair.build))
    for node in ast.parse(src).body[0].body:
        if isinstance(node, ast.FunctionDef) and node.name == side:
            return textwrap.dedent("".join(src.splitlines(True)[node.lineno - 1:node.end_lineno]))
    return None


def lint_side(pair, side):
    from synclint.engine import lint_source
    from synclint.registry import rule_by_key

    mode = "(mode='reduce-overhead')" if pair.code == "SYN605" else ""  # SYN605 is a CUDA graphs rule
    head = STAND_INS + f"@torch.compile{mode}\n"
    code = side_source(pair, side)
    src = head + code + f"{side}(x)\n"
    first, last = head.count("\n") + 1, head.count("\n") + code.count("\n")
    return [f for f in lint_source(src, "<pair>", [rule_by_key(pair.code)]) if first <= f.row <= last], src


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.label)
def test_pattern_triggers_its_rule_and_the_fix_does_not(pair):
    found, src = lint_side(pair, "pattern")
    assert found, f"{pair.code} does not fire on its own compiled pattern\n{src}"
    found, src = lint_side(pair, "fixed")
    assert not found, f"{pair.code} fires on its own fix: {[f.message for f in found]}\n{src}"


def test_every_compiled_rule_has_a_pair():
    from synclint.registry import all_rules

    assert set(codes()) == {r.CODE for r in all_rules() if r.CODE.startswith("SYN6")}


# ---------------------------------------------------------------- graphs, breaks, values


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.label)
def test_pattern_breaks_the_graph_and_the_fix_does_not(cpu_run, pair):
    r = result(cpu_run[0], pair)
    vs = r["variants"]
    assert not r["error"], r["error"]
    pattern, fixed = vs["compile/pattern"], vs["compile/fixed"]
    if pair.breaks:
        assert pattern["graphs"] >= 2 and pattern["breaks"] >= 1, pattern
    else:
        assert pattern["graphs"] == 1 and pattern["breaks"] == 0, pattern
    assert fixed["graphs"] == 1 and fixed["breaks"] == 0, fixed
    if pair.capture:  # the flags remove the break (not the wait: that needs a GPU to see)
        assert vs["compile/captured"]["graphs"] == 1 and vs["compile/captured"]["breaks"] == 0, vs["compile/captured"]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.label)
def test_every_variant_computes_the_patterns_values(cpu_run, pair):
    r = result(cpu_run[0], pair)
    assert r["same_result"] is True, r["compare_note"]
    assert {"eager/pattern", "eager/fixed", "compile/pattern", "compile/fixed"} <= set(r["variants"])


def test_graph_counter_agrees_with_a_counting_backend(cpu_run):
    data, counter = cpu_run
    counted = sum(v["graphs"] for r in data["results"] for v in r["variants"].values() if v["graphs"] is not None)
    assert counter.graphs == counted > 0


def test_no_variant_compiles_again_once_all_are_compiled(cpu_run):
    """Each variant is called once more after every pair was compiled: none may compile
    again (a `torch._dynamo.reset()` between pairs, as `torch._dynamo.explain` does, dropped
    the earlier pairs' graphs: they were compiled again while timed, the captured ones
    without their flags)."""
    data, _ = cpu_run
    assert data["meta"]["graphs_while_timing"] == 0
    again = {(r["case"], k): v["graphs_while_timing"] for r in data["results"] for k, v in r["variants"].items()}
    assert again and not any(again.values()), again
    captured = [v for r in data["results"] for k, v in r["variants"].items() if k.endswith("/captured")]
    assert captured and all(v["graphs"] == 1 for v in captured)


def test_cpu_document_is_valid_and_renders(cpu_run):
    data = json.loads(json.dumps(cpu_run[0]))
    assert validate(data) == []
    assert data["meta"]["timed"] is False and data["meta"]["modes"] == ["eager", "compile"]
    text = render_text(data)
    assert "SYN604" in text and "0 failed" in text
    assert "| SYN602 | branch | compile | pattern | 2 | 1 |" in render_markdown(data)
    # a CPU run says nothing about time: explain still says "not measured"
    assert measured_lines("SYN601", data)[0].startswith(NOT_MEASURED)


# ---------------------------------------------------------------- explain and the report


def timed_document():
    """A timed document of one pair, as a GPU run writes it (figures made up for the words)."""
    loops = [[500.0, 510.0], [505.0, 495.0]]
    fixed = [[400.0, 405.0], [398.0, 402.0]]
    variant = {"flags": [], "breaks": None, "break_reasons": [], "warmup_s": 0.01, "error": None, "syncs": 0,
               "cudagraph_skips": None, "cudagraph_partitions": None, "calls": 10, "graphs_while_timing": 0}
    vs = {
        "eager/pattern": {**variant, "mode": "eager", "side": "pattern", "graphs": None, "compile_s": None, "step_us": 500.0},
        "eager/fixed": {**variant, "mode": "eager", "side": "fixed", "graphs": None, "compile_s": None, "step_us": 400.0},
        "compile/pattern": {**variant, "mode": "compile", "side": "pattern", "graphs": 2, "breaks": 1, "compile_s": 1.2, "step_us": 600.0},
        "compile/fixed": {**variant, "mode": "compile", "side": "fixed", "graphs": 1, "breaks": 0, "compile_s": 0.7, "step_us": 450.0},
    }
    comp = {"eager": {"mode": "eager", "of": "pattern", "to": "fixed", "speedup": 1.25, "ci": [1.2, 1.3], "saved_us": 100.0,
                      "verdict": "faster"},
            "compile": {"mode": "compile", "of": "pattern", "to": "fixed", "speedup": 1.33, "ci": [1.25, 1.4],
                        "saved_us": 150.0, "verdict": "faster"}}
    meta = {"schema": compiled.SCHEMA, "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130", "cuda": "13.0",
            "date": "2026-12-07T01:00:00Z", "device": "cuda", "timed": True, "modes": ["eager", "compile"],
            "sizes": {"batch": 64, "width": 256, "depth": 8}, "backend": "inductor", "repeats": 2, "passes": 2,
            "graphs_while_timing": 0}
    rec = {"code": "SYN602", "case": "branch", "pattern": "if h.mean() > 0: ...", "fix": "torch.where(...)",
           "capture": [], "error": None, "same_result": True, "variants": vs, "comparisons": comp}
    assert loops and fixed
    return {"meta": meta, "results": [rec]}


def test_explain_lines_from_a_timed_document():
    data = timed_document()
    assert validate(data) == []
    lines = measured_lines("SYN602", data)
    assert "NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, 2026-12-07" in lines[0]
    assert "torch.compile 1.33x (1.25–1.40x), faster [2 graphs -> 1; compile 1.2 s -> 0.7 s]" in lines[1]
    assert measured_lines("SYN603", data) == [NOT_MEASURED]


def test_a_run_that_compiled_while_timing_is_not_valid():
    data = timed_document()
    data["meta"]["graphs_while_timing"] = 50
    assert any("compiled while timing" in p for p in validate(data))


def test_a_faster_verdict_needs_its_interval_above_one():
    data = timed_document()
    data["results"][0]["comparisons"]["compile"]["ci"] = [0.9, 1.4]
    assert any("does not exclude 1.0" in p for p in validate(data))


def test_explain_page_says_not_measured_without_results(monkeypatch):
    from synclint.report import rule_docs as docs
    from synclint.bench import compiled_report
    from synclint.registry import rule_by_key

    monkeypatch.setattr(compiled_report, "shipped", lambda: None)
    page = docs.rule_markdown(rule_by_key("SYN604"))
    assert "## Measured under torch.compile" in page and NOT_MEASURED in page
    monkeypatch.setattr(compiled_report, "shipped", timed_document)
    page = docs.rule_markdown(rule_by_key("SYN602"))
    assert "2 graphs -> 1" in page and NOT_MEASURED not in page


def test_report_shows_the_compiled_measurement(monkeypatch, tmp_path):
    from synclint.bench import compiled_report
    from synclint.engine import lint_source
    from synclint.registry import rule_by_key
    from synclint.report.savings import render_report

    src = "import torch\n@torch.compile\ndef step(x: torch.Tensor):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n"
    findings = lint_source(src, "step.py", [rule_by_key("SYN602")])
    assert findings
    monkeypatch.setattr(compiled_report, "shipped", lambda: None)
    assert "Under torch.compile: not measured" in render_report(findings, None, "none")
    monkeypatch.setattr(compiled_report, "shipped", timed_document)
    assert "torch.compile 1.33x" in render_report(findings, None, "none")


def test_command_on_the_cpu(tmp_path):
    from synclint.bench.command import bench

    out = tmp_path / "compiled.json"
    r = CliRunner().invoke(bench, ["--compiled", "--device", "cpu", "--select", "branch", "--output-format", "json",
                                   "--output", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert validate(data) == [] and [x["case"] for x in data["results"]] == ["branch"]
    assert data["results"][0]["variants"]["compile/pattern"]["graphs"] == 2
    r = CliRunner().invoke(bench, ["--compiled", "--device", "cpu", "--select", "SYN999", "--no-progress"])
    assert r.exit_code == 2 and "names no compiled pair" in r.output
