"""Rules touch their file only through `RuleContext`'s declared API.

Every rule module (rules/*.py, helpers rules/_*.py included) is read as Python and each use
of its context (`self.ctx`, a `ctx` name, `rule.ctx`) is checked: an attribute read must be
a declared name, nothing may be assigned to it, and the context itself may only go to the
rules' own helpers (which are checked the same way), never to code that would read the
model behind it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List, Set

import pytest

from synclint.semantic.context import API, API_NAMES, RuleContext

RULES = Path(__file__).resolve().parent.parent / "rules"


def _is_context(node: ast.AST) -> bool:
    """`ctx` (a helper's parameter, `ctx = self.ctx`) or `<anything>.ctx` (`self.ctx`, `rule.ctx`)."""
    return (type(node) is ast.Name and node.id == "ctx") or (type(node) is ast.Attribute and node.attr == "ctx")


def _rule_helpers(tree: ast.Module) -> Set[str]:
    """The functions a module may hand its context to: its own module-level functions and
    those it imports from the rules package (checked as rule code themselves)."""
    out = {n.name for n in tree.body if type(n) is ast.FunctionDef}
    for n in ast.walk(tree):
        if type(n) is ast.ImportFrom and (n.module or "").startswith("synclint.rules"):
            out.update(a.asname or a.name for a in n.names)
    return out


def context_misuse(source: str, filename: str = "<rule>") -> List[str]:
    """Each use of a rule module's context that goes beyond `RuleContext`'s API, as
    "file:line: what"."""
    tree = ast.parse(source, filename)
    helpers = _rule_helpers(tree)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    out: List[str] = []

    def bad(node: ast.AST, what: str) -> None:
        out.append(f"{filename}:{node.lineno}: {what}")

    for node in ast.walk(tree):
        if not _is_context(node):
            continue
        parent = parents.get(node)
        if type(node) is ast.Attribute and type(node.ctx) is not ast.Load:
            bad(node, f"assigns the context itself ({ast.unparse(node)})")
        elif type(parent) is ast.Attribute and parent.value is node:
            if parent.attr not in API_NAMES:
                bad(parent, f"`{ast.unparse(parent)}` is not in RuleContext's API")
            elif type(parent.ctx) is not ast.Load:
                bad(parent, f"assigns `{ast.unparse(parent)}`")
        elif type(parent) is ast.Call and node in parent.args:
            f = parent.func
            to_helper = type(f) is ast.Name and f.id in helpers
            to_base = type(f) is ast.Attribute and f.attr == "__init__" and type(f.value) is ast.Call \
                and type(f.value.func) is ast.Name and f.value.func.id == "super"
            if not (to_helper or to_base):
                bad(node, f"hands the context to `{ast.unparse(f)}`, which is not rule code")
        elif type(parent) is ast.Assign and parent.value is node:
            if not all(type(t) is ast.Name and t.id == "ctx" for t in parent.targets):
                bad(node, "keeps the context under another name than `ctx`")
        elif type(node) is ast.Name and type(node.ctx) is not ast.Load:
            pass  # `ctx = self.ctx`: the value assigned is checked above
        else:
            bad(node, f"uses the context as a value ({ast.unparse(parent) if parent else 'ctx'})")
    return out


def test_rules_use_only_the_declared_api():
    files = sorted(RULES.glob("*.py"))
    assert len(files) > 40
    found = [m for f in files for m in context_misuse(f.read_text(encoding="utf-8"), f.name)]
    assert found == []


@pytest.mark.parametrize("code, what", [
    # tensor_truthiness used to raise the walker's loop depth around a `while` test
    ("        self.ctx.loop_depth += 1\n", "`self.ctx.loop_depth` is not in RuleContext's API"),
    ("        if self.ctx.loop_depth:\n            pass\n", "`self.ctx.loop_depth` is not in RuleContext's API"),
    ("        ctx = self.ctx\n        n = ctx.stmt_stack[-1]\n", "`ctx.stmt_stack` is not in RuleContext's API"),
    ("        self.ctx.findings.append(node)\n", "`self.ctx.findings` is not in RuleContext's API"),
    ("        self.ctx.in_cuda_less = True\n", "assigns `self.ctx.in_cuda_less`"),
    ("        self.ctx = None\n", "assigns the context itself (self.ctx)"),
    ("        model = self.ctx\n", "keeps the context under another name than `ctx`"),
    ("        gpu_move(self.ctx, node)\n", "hands the context to `gpu_move`, which is not rule code"),
    ("        getattr(self.ctx, 'source')\n", "hands the context to `getattr`, which is not rule code"),
    ("        return self.ctx\n", "uses the context as a value (return self.ctx)"),
])
def test_a_rule_reaching_past_the_api_is_caught(code, what):
    source = ("from synclint.rule import Rule\n"
              "from synclint.semantic.moves import gpu_move\n"
              "class R(Rule):\n"
              "    def visit_While(self, node):\n" + code)
    assert [m.split(": ", 1)[1] for m in context_misuse(source)] == [what]


def test_what_a_rule_may_do_with_its_context_passes():
    source = ("from synclint.rule import Rule\n"
              "from synclint.rules._helpers import torch_alias\n"
              "def helper(ctx, node):\n"
              "    return ctx.gpu(node) is not None and not ctx.in_cuda_less\n"
              "class R(Rule):\n"
              "    def __init__(self, ctx):\n"
              "        super().__init__(ctx)\n"
              "    def visit_Call(self, node):\n"
              "        ctx = self.ctx\n"
              "        if helper(ctx, node) and torch_alias(self.ctx):\n"
              "            self.report_at(ctx.site(), node)\n")
    assert context_misuse(source) == []


def test_the_declared_api_is_what_the_context_offers():
    from synclint.semantic import SemanticModel

    ctx = RuleContext(SemanticModel("import torch\n"))
    offered = {n for n in dir(ctx) if not n.startswith("_")}
    assert offered == set(API_NAMES)
    names = [n for group in API.values() for n in group]
    assert len(names) == len(set(names))  # each in one group


def test_each_query_is_documented():
    doc = (RULES.parent / "docs" / "writing-rules.md").read_text(encoding="utf-8")
    assert [n for n in sorted(API_NAMES) if f"`ctx.{n}" not in doc] == []
