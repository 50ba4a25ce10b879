"""Every rule's VALID examples stay clean and INVALID ones fire, with only that rule on."""

import libcst as cst
import pytest

from synclint.registry import all_rules
from synclint.testing import fixed_source, lint_with

CASES = [
    pytest.param(rule, kind, i, case, id=f"{rule.CODE}-{rule.NAME}-{kind}-{i}")
    for rule in all_rules()
    for kind, cases in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for i, case in enumerate(cases)
]


@pytest.mark.parametrize("rule,kind,i,case", CASES)
def test_example(rule, kind, i, case):
    cst.parse_module(case.code)  # examples must be valid Python
    findings = lint_with([rule], case.code)
    if kind == "valid" and case.cold:
        assert all(not f.hot for f in findings), f"reported hot: {[(f.row, f.message) for f in findings]}"
        findings = [f for f in findings if f.hot]
    if kind == "valid":
        assert findings == [], f"false positive: {[(f.row, f.message) for f in findings]}"
        return
    assert findings, "the rule did not fire"
    first = findings[0]
    assert first.code == rule.CODE
    if case.message is not None:
        assert first.message == case.message
    if case.line is not None:
        assert first.row == case.line
    if case.hot is not None:
        assert first.hot is case.hot
    if case.fixed is not None:
        assert fixed_source([rule], case.code) == case.fixed


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.CODE)
def test_fix_availability_matches_behaviour(rule):
    """FIX = "never" rules emit no fix; "always" rules fix every invalid example."""
    fixes = [bool(f.fix) for case in rule.INVALID for f in lint_with([rule], case.code)]
    if rule.FIX == "never":
        assert not any(fixes)
    elif rule.FIX == "always":
        assert all(fixes)
    else:
        assert any(fixes), "FIX = 'sometimes' but no INVALID example shows a fix"


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.FIX != "never"], ids=lambda r: r.CODE)
def test_fixes_converge_and_silence_the_rule(rule):
    for case in rule.INVALID:
        out = fixed_source([rule], case.code)
        cst.parse_module(out)
        remaining = [f for f in lint_with([rule], out) if f.fix is not None]
        assert remaining == []


ALIASED = """import torch
from torch import nonzero as nz
from torch.cuda import synchronize as wait_for_gpu
x = torch.ones(3, device="cuda")
for _ in range(3):
    idx = nz(x)
    wait_for_gpu()
"""


def test_calls_names_every_call_a_rule_acts_on(monkeypatch):
    """A rule's `CALLS` spares it only calls it would pass over: every example and fixture
    gives the same findings when each rule's `visit_Call` sees every call. A call goes by
    the last part of its qualified name too (`nz(x)` after `from torch import nonzero as nz`)."""
    from pathlib import Path

    from synclint.testing import fixture_paths

    rules = all_rules()
    sources = [case.code for r in rules for case in (*r.VALID, *r.INVALID)]
    sources += [p.read_text() for p in fixture_paths(Path(__file__).parent.parent / "fixtures")]
    sources.append(ALIASED)

    def found():
        return [[(f.code, f.row, f.column, f.message, f.hot) for f in lint_with(rules, s)] for s in sources]

    gated = found()
    assert {c for c, row, *_ in gated[-1]} >= {"SYN203", "SYN401"}
    for r in rules:
        monkeypatch.setattr(r, "CALLS", None)
    assert found() == gated
