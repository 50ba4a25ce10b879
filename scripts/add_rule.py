"""Scaffold a new rule: one command writes what a rule needs (Ruff's `add_rule.py`).

    python scripts/add_rule.py --code SYN213 --name tensor-frobnicate --call frobnicate
    python scripts/add_rule.py --code SYN122 --name tensor-squash --call squash --fix

writes
- `rules/<snake_name>.py`: the `Rule` subclass, its docstring headings, message, `CALLS`,
  a near-miss and a finding as examples, and a `visit_Call` that reports `x.<call>()` on a GPU
  tensor (with `--fix`: a safe fix that drops the call, and a `BenchPair` to fill in);
- `fixtures/<CODE>.py` with inline expectations (a near-miss first), and with `--fix` its
  `fixtures/<CODE>.fixed.py` twin (the fixture after safe fixes);
- `docs/rules/<name>.md` (generated from the rule) and its row in `docs/rules.md`.

Rules are found by their module (synclint.registry), so nothing else is registered by hand.
The skeleton runs as it is (its fixture test passes); then make it the rule you mean: write
the near-misses first (docs/writing-rules.md), then the check. `--root` writes into another
checkout (the test scaffolds into a temporary copy).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import List, Optional

ROOT = Path(__file__).resolve().parent.parent
CODE_RE = re.compile(r"^SYN[1-6]\d\d$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
CALL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

RULE_TEMPLATE = '''import libcst as cst

from synclint.rule import {imports}
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import RECEIVER


class {cls}(Rule):
    """
    ## What it does
    Flags `.{call}()` on a tensor that lives on the GPU.

    ## Why is this bad?
    TODO: what synchronizes, where in PyTorch (the catalogue row's source evidence), what it
    costs (measured).

    ## Use instead
    TODO: the alternative that does not synchronize, with code.
{fix_safety}
    ## Known problems
    TODO: what the rule cannot see.
    """

    CODE = "{code}"
    NAME = "{name}"
    CALLS = frozenset({{"{call}"}})
    MESSAGE = "`{{recv}}.{call}()` TODO: the hazard in one clause"
    FIX_TITLE = {fix_title}
    FIX = "{fix}"
    CATALOGUE = ()  # rows of shared/reference/sync-catalogue.md
    VALID = [
        # near-misses first: code that must stay clean
        Valid("import torch\\nx = torch.ones(3)\\ny = x.{call}()\\n"),  # a CPU tensor
    ]
    INVALID = [
        Invalid(
            "import torch\\nx = torch.ones(3, device='cuda')\\nfor _ in range(3):\\n    y = x.{call}()\\n",
            line=4,
            hot=True,{fixed}
        ),
    ]
{bench}
    def visit_Call(self, node: cst.Call) -> None:
        if not method_call(node, self.CALLS):
            return
        recv = receiver(node)
        if self.ctx.gpu(recv, RECEIVER) is None:
            return
        self.report(node{replacement}, recv=short(recv))
'''

FIX_SAFETY = '''
    ## Fix safety
    TODO: why the fix keeps the program's meaning (safe), or when it does not (unsafe).
'''

BENCH = '''    BENCH = BenchPair(  # TODO: the flagged pattern and its fix, timed by `synclint bench`
        setup="x = torch.ones(n, device=device)\\n",
        flagged="def flagged(x):\\n    return x.{call}()\\n",
        fixed="def fixed(x):\\n    return x\\n",
        sizes={{"n": 1_000_000}},
        compare="none",
    )
'''

FIXTURE_TEMPLATE = '''# {code} {name}. TODO: what each flagged line does on the GPU.
import torch

device = "cuda"


def near_misses():
    cpu = torch.ones(4)
    return cpu.{call}()  # a CPU tensor


def train(steps):
    x = torch.ones(4, device=device)
    for _ in range(steps):
        y = {flagged}  # error: {code} [hot]
    return y


near_misses()
train(2)
'''


def snake(name: str) -> str:
    return name.replace("-", "_")


def camel(name: str) -> str:
    return "".join(w.capitalize() for w in name.split("-"))


def rule_source(code: str, name: str, call: str, fix: bool) -> str:
    fixed = ""
    if fix:
        fixed = ('\n            fixed="import torch\\nx = torch.ones(3, device=\'cuda\')\\nfor _ in range(3):\\n'
                 '    y = x\\n",')
    return RULE_TEMPLATE.format(
        imports="BenchPair, Invalid, Rule, Valid" if fix else "Invalid, Rule, Valid",
        cls=camel(name), code=code, name=name, call=call,
        fix_safety=FIX_SAFETY if fix else "",
        fix_title='"TODO: what the user should do (imperative)"' if fix else "None",
        fix="always" if fix else "never",
        fixed=fixed,
        bench="\n" + BENCH.format(call=call) if fix else "",
        replacement=", recv, safe=True" if fix else "",
    )


def load_rule(path: Path, module: str) -> type:
    """The rule class of a rule file, imported as `synclint.rules.<module>`."""
    from synclint.rule import Rule

    spec = importlib.util.spec_from_file_location(f"synclint.rules.{module}", path)
    assert spec is not None and spec.loader is not None
    mod: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    found = [o for o in vars(mod).values()
             if isinstance(o, type) and issubclass(o, Rule) and o.__module__ == mod.__name__]
    if len(found) != 1:
        raise SystemExit(f"{path}: expected one rule class, found {len(found)}")
    return found[0]


def index_row(rule) -> str:
    return (f"| {rule.CODE} | [{rule.NAME}](rules/{rule.NAME}.md) | {rule.FAMILY} | "
            f"{'on' if rule.DEFAULT_ON else 'off'} | {rule.FIX} | {rule.SUMMARY} |")


def add_index_row(index: Path, rule) -> None:
    """Put the rule's row in docs/rules.md, in code order (the table `python -m synclint.report.rule_docs` writes)."""
    if not index.is_file():
        return
    lines = index.read_text(encoding="utf-8").splitlines()
    rows = [i for i, line in enumerate(lines) if re.match(r"^\| SYN\d{3} \|", line)]
    at = next((i for i in rows if lines[i][2:8] > rule.CODE), rows[-1] + 1 if rows else len(lines))
    lines.insert(at, index_row(rule))
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")


def scaffold(root: Path, code: str, name: str, call: str, fix: bool) -> List[Path]:
    """Write the rule, its fixture(s) and its docs page under `root`; the paths written."""
    from synclint.report.rule_docs import rule_markdown

    if not CODE_RE.match(code):
        raise SystemExit(f"--code {code!r}: not SYN + a family digit 1-6 + two digits")
    if not NAME_RE.match(name):
        raise SystemExit(f"--name {name!r}: not kebab-case")
    if not CALL_RE.match(call):
        raise SystemExit(f"--call {call!r}: not a method name")
    rule_path = root / "rules" / f"{snake(name)}.py"
    fixture = root / "fixtures" / f"{code}.py"
    page = root / "docs" / "rules" / f"{name}.md"
    for p in (rule_path, fixture, page):
        if p.exists():
            raise SystemExit(f"{p}: already exists")
    taken = [p.name for p in (root / "fixtures").glob("*.py") if p.name.startswith(code + ".")]
    if taken or any(f'CODE = "{code}"' in p.read_text(encoding="utf-8") for p in (root / "rules").glob("*.py")):
        raise SystemExit(f"{code}: a rule already has this code")

    written = [rule_path, fixture]
    rule_path.write_text(rule_source(code, name, call, fix), encoding="utf-8")
    fixture.write_text(FIXTURE_TEMPLATE.format(code=code, name=name, call=call, flagged=f"x.{call}()"),
                       encoding="utf-8")
    if fix:
        twin = fixture.with_suffix(".fixed.py")
        twin.write_text(FIXTURE_TEMPLATE.format(code=code, name=name, call=call, flagged="x"), encoding="utf-8")
        written.append(twin)
    rule = load_rule(rule_path, snake(name))
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(rule_markdown(rule), encoding="utf-8")
    add_index_row(root / "docs" / "rules.md", rule)
    return written + [page, root / "docs" / "rules.md"]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", required=True, help="SYN + family digit + two digits (SYN213)")
    ap.add_argument("--name", required=True, help="kebab-case, names the pattern (tensor-frobnicate)")
    ap.add_argument("--call", required=True, help="the tensor method the skeleton flags (frobnicate)")
    ap.add_argument("--fix", action="store_true", help="the rule offers a fix: a fixed twin and a BenchPair")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to write into (default: this one)")
    a = ap.parse_args(argv)
    for p in scaffold(a.root, a.code, a.name, a.call, a.fix):
        print(p)
    print(f"next: fill in the TODOs, then `pytest -q tests/test_fixtures.py -k {a.code}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
