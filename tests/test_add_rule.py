"""scripts/add_rule.py scaffolds a rule that imports, passes its own examples and fixture,
and documents itself, in a temporary copy of the checkout's rule folders."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from synclint.report.rule_docs import rule_markdown
from synclint.registry import all_rules
from synclint.testing import expectations, fixed_source, lint_with

ROOT = Path(__file__).resolve().parent.parent


def _add_rule():
    spec = importlib.util.spec_from_file_location("add_rule", ROOT / "scripts" / "add_rule.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def checkout(tmp_path):
    for d in ("rules", "fixtures"):
        (tmp_path / d).mkdir()
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "rules.md", tmp_path / "docs" / "rules.md")
    shutil.copy(ROOT / "rules" / "tensor_item.py", tmp_path / "rules" / "tensor_item.py")
    return tmp_path


@pytest.mark.parametrize("fix", [False, True], ids=["no-fix", "fix"])
def test_scaffolded_rule_runs_its_examples_and_fixture(checkout, fix):
    add_rule = _add_rule()
    assert add_rule.main(["--root", str(checkout), "--code", "SYN122", "--name", "tensor-squash",
                          "--call", "squash"] + (["--fix"] if fix else [])) == 0
    rule = add_rule.load_rule(checkout / "rules" / "tensor_squash.py", "tensor_squash")
    assert (rule.CODE, rule.NAME, rule.FIX) == ("SYN122", "tensor-squash", "always" if fix else "never")
    for case in rule.VALID:
        assert lint_with([rule], case.code) == []
    for case in rule.INVALID:
        found = lint_with([rule], case.code)
        assert [(f.row, f.hot) for f in found] == [(case.line, case.hot)]
        if case.fixed is not None:
            assert fixed_source([rule], case.code) == case.fixed
    # the fixture test, as tests/test_fixtures.py runs it (every rule on)
    source = (checkout / "fixtures" / "SYN122.py").read_text(encoding="utf-8")
    found = lint_with(all_rules() + (rule,), source)
    assert {(f.row, f.code): f.hot for f in found} == expectations(source) != {}
    twin = checkout / "fixtures" / "SYN122.fixed.py"
    assert twin.exists() == fix
    assert fixed_source(all_rules() + (rule,), source, unsafe=False) == (
        twin.read_text(encoding="utf-8") if fix else source)
    assert (checkout / "docs" / "rules" / "tensor-squash.md").read_text(encoding="utf-8") == rule_markdown(rule)
    index = (checkout / "docs" / "rules.md").read_text(encoding="utf-8").splitlines()
    rows = [line.split(" | ")[0][2:] for line in index if line.startswith("| SYN")]
    assert "SYN122" in rows and rows == sorted(rows)


def test_a_taken_code_or_name_is_refused(checkout):
    add_rule = _add_rule()
    with pytest.raises(SystemExit, match="already has this code"):
        add_rule.main(["--root", str(checkout), "--code", "SYN101", "--name", "other-item", "--call", "x"])
    with pytest.raises(SystemExit, match="already exists"):
        add_rule.main(["--root", str(checkout), "--code", "SYN198", "--name", "tensor-item", "--call", "x"])
    with pytest.raises(SystemExit, match="kebab-case"):
        add_rule.main(["--root", str(checkout), "--code", "SYN198", "--name", "Bad_Name", "--call", "x"])
    assert sorted(p.name for p in (checkout / "rules").iterdir()) == ["tensor_item.py"]
