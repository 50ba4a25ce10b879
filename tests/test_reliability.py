"""Reliability under bad input and hostile code (issue 9): one file's trouble is one line
for that file, and every other file and rule is still reported."""

import textwrap
from pathlib import Path

import pytest

from synclint.engine import lint_source
from synclint.registry import all_rules
from synclint.testing import run_cli as run

HAZARD = textwrap.dedent(
    """\
    import torch

    x = torch.ones(3, device="cuda")
    for _ in range(3):
        v = x.sum().item()
        w = x.tolist()
    """
)


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def item_rule_raises_on_boom(monkeypatch):
    """SYN101 raises at `.item()` in a file that mentions BOOM (a stand-in for a rule's bug)."""
    from synclint.rules.tensor_item import TensorItem

    real = TensorItem.visit_Call

    def visit_Call(self, node):
        if "BOOM" in self.ctx.source and getattr(getattr(node.func, "attr", None), "value", "") == "item":
            raise AttributeError("'Match' object has no attribute 'body'")
        return real(self, node)

    monkeypatch.setattr(TensorItem, "visit_Call", visit_Call)


def test_a_rule_that_raises_is_one_line_for_that_file(tmp_path, item_rule_raises_on_boom):
    write(tmp_path / "bad.py", "# BOOM\n" + HAZARD)
    write(tmp_path / "good.py", HAZARD)
    r = run(["check", "bad.py", "good.py", "--no-cache", "--select", "SYN101,SYN102", "--no-source"], tmp_path)
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == ["synclint: error: bad.py:6: internal error in SYN101; please report"]
    out = r.stdout
    assert "good.py:5:9: SYN101" in out  # the other file: every rule
    assert "good.py:6:9: SYN102" in out
    assert "bad.py:7:9: SYN102" in out  # the same file: the other rules
    assert "bad.py:6:9: SYN101" not in out
    assert "Traceback" not in r.stdout + r.stderr


def test_internal_error_is_not_a_finding_in_json(tmp_path, item_rule_raises_on_boom):
    write(tmp_path / "bad.py", "# BOOM\n" + HAZARD)
    r = run(["check", "bad.py", "--no-cache", "--output-format", "json"], tmp_path)
    assert r.exit_code == 2
    import json

    codes = {f["code"] for f in json.loads(r.stdout)}
    assert "SYN101" not in codes and "SYN102" in codes


def test_match_in_a_loop_does_not_break_any_rule():
    """The crash of issue 9: SYN501/SYN503 assumed every compound statement has `.body`."""
    source = textwrap.dedent(
        """\
        import torch

        def step(model, kind, lr):
            for p in model.parameters():
                match kind:
                    case "sgd" if lr > 0:
                        p -= lr * p.grad
                    case {"x": y}:
                        p.grad = None
                    case _:
                        pass
            x = torch.ones(3, device="cuda")
            for i in range(3):
                match i:
                    case 0:
                        x = x.mul(2)
            return x
        """
    )
    findings = lint_source(source, "m.py", all_rules())
    assert not [f for f in findings if f.internal], [f.message for f in findings]
    assert {"SYN501", "SYN503"} <= {f.code for f in findings}


# ------------------------------------------------------------------ depth and size
DEEP = {
    "brackets": "x = " + "(" * 3000 + ")" * 3000 + "\n",
    "calls": "x = " + "f(" * 2000 + ")" * 2000 + "\n",
    "unary": "x = " + "-" * 20000 + "1\n",
    "lambdas": "x = " + "lambda: " * 5000 + "1\n",
    "plus-chain": "x = " + "+".join(["a"] * 100_000) + "\n",
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_code_that_would_kill_the_parser_is_refused_in_one_line(tmp_path, kind):
    """Each of these segfaults LibCST's parser or parses for minutes: refused before parsing,
    the good file next to it still checked."""
    write(tmp_path / "deep.py", "import torch\n" + DEEP[kind])
    write(tmp_path / "good.py", HAZARD)
    r = run(["check", "deep.py", "good.py", "--no-cache", "--no-source"], tmp_path)
    assert r.exit_code == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("synclint: error: deep.py: too deeply nested to analyse (")
    assert "good.py:5:9: SYN101" in r.stdout


def test_nesting_limits_leave_real_code_alone():
    from synclint.nesting import nesting_problem

    ok = [
        "x = " + "(" * 200 + "1" + ")" * 200 + "\n",  # CPython's own limit
        "y = " + " + ".join(["-a ** -b"] * 900) + "\n",  # operands, not a nest
        "z = [" + ", ".join(["-1"] * 50_000) + "]\n",  # a long flat list
        "f = lambda a, b=1, *c, **d: lambda: a if b else c\n" * 2000,
        "w = (\r" + "a +\r" * 900 + "b)\r",  # CR-only line endings
    ]
    assert [nesting_problem(s) for s in ok] == [None] * len(ok)


@pytest.mark.parametrize("chain", [".abs()" * 246 + ".item()", ".item()" + ".real" * 491])
def test_long_chains_get_positions(tmp_path, chain):
    """Positions regenerate the statement: these chains raised RecursionError there."""
    src = 'import torch\nx = torch.ones(3, device="cuda")\nfor i in range(3):\n    y = x' + chain + "\n"
    findings = lint_source(src, "c.py", all_rules())
    assert [(f.code, f.row, f.column, f.internal) for f in findings] == [("SYN101", 4, 9, False)]
