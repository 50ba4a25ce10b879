"""The compiled-code corpus (eval/compiled/, scripts/compiled_corpus.py): the recorder names the
user line and Dynamo's reason of each graph break on a tiny compiled function (CPU, backend
"eager", a few seconds); the scorer counts precision and recall per case from synclint's JSON;
the program folders are well formed."""

import json
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import compiled_corpus as cc  # noqa: E402


def _fn_with_breaks():
    import torch

    @torch.compiler.disable
    def helper(x):
        return x + 1

    def step(x):
        y = x * 2
        v = y.sum().item()  # BREAK item
        if y.mean() > 0:  # BREAK tensor_branch
            y = y + 1
        picked = y[y > 0]  # BREAK bool_mask
        y = helper(y)  # BREAK other
        kept = torch.where(y > 0, y, 0.0)  # three-argument where: no break
        return y + v + picked.sum() + kept

    return torch.compile(step, backend="eager"), step.__code__


def _expected_lines(code):
    lines = Path(code.co_filename).read_text().splitlines()
    return {i: ln.split("# BREAK ")[1].strip() for i, ln in enumerate(lines, 1)
            if code.co_firstlineno <= i < code.co_firstlineno + 12 and "# BREAK " in ln}


def test_recorder_names_the_line_and_reason_of_each_break(tmp_path):
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    fn, code = _fn_with_breaks()
    with cc.CompileRecorder() as rec:
        fn(torch.ones(4))
        fn(torch.ones(6))  # another shape: recompiles
    got = cc.summarise(rec, Path(code.co_filename).parent, tmp_path / "driver.py")
    here = Path(code.co_filename).name
    sites = {(b["line"], b["case"]) for b in got["breaks"] if b["path"] == here}
    assert sites == {(line, case) for line, case in _expected_lines(code).items()}
    by_case = {b["case"]: b for b in got["breaks"] if b["path"] == here}
    assert by_case["item"]["gb_id"] == "GB0124" and "item" in by_case["item"]["gb_type"]
    assert by_case["tensor_branch"]["gb_id"] == "GB0170"
    assert by_case["bool_mask"]["context"].startswith("aten.")
    assert by_case["other"]["gb_type"].startswith("Skip calling `torch.compiler.disable()`d")
    assert all(b["in_program"] and b["stack"][-1] == f"{here}:{b['line']}" for b in by_case.values())
    assert any(r["function"] == "step" and any("size mismatch" in g for g in r["guards"]) for r in got["recompiles"])


def test_case_of_reads_the_line_when_dynamo_reason_is_shared():
    # nonzero, boolean masks and one-argument where all stop at aten.nonzero: the line tells them apart
    assert cc.case_of("GB0036", "Dynamic shape operator", "aten.nonzero.default", "i = torch.where(m)") == "where1"
    assert cc.case_of("GB0036", "Dynamic shape operator", "aten.nonzero.default", "x = y[m]") == "bool_mask"
    assert cc.case_of("GB0036", "Dynamic shape operator", "aten.nonzero.default", "i = m.nonzero()") == "nonzero"
    assert cc.case_of("GB0124", "Unsupported Tensor.item()", "", "n = int(t)") == "scalar_conversion"
    assert cc.case_of("GB0124", "Unsupported Tensor.item()", "", "z = torch.zeros(t)") == "dd_size"
    assert cc.case_of("GB0098", "Skip calling", "", "y = helper(y)") == "other"


def test_case_of_trusts_the_operator_dynamo_names_over_the_line():
    # a boolean mask on a repeat_interleave with an int count stops at nonzero, not at repeat_interleave
    nz = ("GB0036", "Dynamic shape operator", "aten.nonzero.default")
    assert cc.case_of(*nz, "t = torch.arange(B).repeat_interleave(k)[mask]") == "bool_mask"
    assert cc.case_of(*nz, "s = x.repeat_interleave(k, dim=0)[m]  # unique( masked_select(") == "bool_mask"
    # near misses: the operator itself, and no operator named at all (the line decides)
    ri = ("GB0036", "Dynamic shape operator", "aten.repeat_interleave.Tensor")
    assert cc.case_of(*ri, "F = torch.repeat_interleave(F, sizes, dim=0)") == "repeat_interleave"
    assert cc.case_of("GB0036", "Dynamic shape operator", "", "u = torch.unique(t)") == "unique"


def test_score_counts_precision_and_recall_per_case(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text("a = 1\nv = t.item()\nif t > 0:\n    x[m] = y\nb = y[m]\nw = x.item()\nhelper(x)\n")
    recorded = {"program": "fake", "breaks": [
        {"path": "m.py", "line": 2, "in_program": True, "case": "item"},
        {"path": "m.py", "line": 3, "in_program": True, "case": "tensor_branch"},
        {"path": "m.py", "line": 5, "in_program": True, "case": "bool_mask"},
        {"path": "m.py", "line": 7, "in_program": True, "case": "other"},  # not scored for recall
        {"path": "torch/nn/functional.py", "line": 9, "in_program": False, "case": "item"},  # outside: ignored
    ]}
    expected = {"maybe": [{"path": "m.py", "line": 6}],
                # the break recorded at line 7 (a call) is caused by line 4: a finding there names it
                "cause": [{"path": "m.py", "line": 4, "break_line": 7, "case": "bool_mask"}]}

    def finding(code, row, end=None):
        return {"code": code, "filename": "m.py", "location": {"row": row, "column": 1},
                "end_location": {"row": end or row, "column": 9}}

    findings = [finding("SYN701", 2), finding("SYN702", 3), finding("SYN701", 1),  # right, right, wrong
                finding("SYN701", 6),  # on a [[maybe]] line: not counted
                finding("SYN703", 4),  # right: the cause of the break recorded at line 7
                finding("SYN101", 5),  # not a code we were given
                dict(finding("SYN701", 3), filename="other.py")]  # not a file that was read: ignored
    tallies = defaultdict(cc.Tally)
    cc.score_program(recorded, expected, findings, ["SYN70"], src, tallies, ["m.py"])
    allt = tallies["all"]
    assert (allt.tp, allt.fp, allt.breaks, allt.found) == (3, 1, 4, 3)
    assert tallies["item"].recall() == 1.0 and tallies["bool_mask"].recall() == 0.5
    assert tallies["tensor_branch"].precision() == 1.0
    assert tallies["unknown"].fp == 1 and allt.fps == ["fake/m.py:1 SYN701 a = 1"]
    assert allt.misses == ["fake/m.py:5 [bool_mask]"] and tallies["bool_mask"].tp == 1


def test_programs_are_well_formed():
    programs = cc.load_programs()
    assert len(programs) >= 8
    for p in programs:
        assert len(p.commit) == 40 and p.files and (p.folder / "driver.py").is_file(), p.name
        lines = {f["path"]: f["lines"] for f in p.files}
        exp = tomllib.loads((p.folder / "expected.toml").read_text())
        for e in exp.get("break", []) + exp.get("maybe", []) + exp.get("cause", []):
            assert e["path"] in lines and 1 <= e["line"] <= lines[e["path"]], (p.name, e)
            assert e["why"].strip(), (p.name, e)
        for e in exp.get("break", []) + exp.get("cause", []):
            assert e.get("case", "other") in cc.CASES + ("other",), (p.name, e)
        for e in exp.get("cause", []):
            assert 1 <= e["break_line"] <= lines[e["path"]] and e["why"].strip(), (p.name, e)
        rec = json.loads((p.folder / "recorded.json").read_text())
        assert rec["torch"] and rec["backend"] and rec["commit"] == p.commit, p.name
        for b in rec["breaks"]:
            assert b["case"] in cc.CASES + ("other",) and b["line"] >= 1, (p.name, b)
