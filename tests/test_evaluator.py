"""The evaluator is no base class of the model and has no hidden state: it reads the file
only through what its `Env` protocol declares, writes none of it (what the next walk should
know goes through the env's `note_` methods), and owns its memo."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from synclint.semantic import SemanticModel
from synclint.semantic import values as V
from synclint.semantic.infer import Evaluator, infer

INFER = Path(__file__).resolve().parent.parent / "synclint" / "semantic" / "infer.py"


def _declared() -> set:
    """The names `Env` declares: its annotated fields and its methods."""
    tree = ast.parse(INFER.read_text(encoding="utf-8"))
    env = next(n for n in tree.body if type(n) is ast.ClassDef and n.name == "Env")
    return {n.target.id for n in env.body if type(n) is ast.AnnAssign} | {
        n.name for n in env.body if type(n) is ast.FunctionDef}


def _is_env(node: ast.AST) -> bool:
    """`self.env`, or `env` (a method's local for it: `env = self.env`)."""
    return (type(node) is ast.Name and node.id == "env") or (
        type(node) is ast.Attribute and node.attr == "env" and type(node.value) is ast.Name and node.value.id == "self")


def env_misuse(source: str) -> list:
    """Each use of `self.env` in the evaluator that its protocol does not declare, or that
    writes the env (a store, or a mutating method of one of its tables)."""
    declared, out = _declared(), []
    tree = ast.parse(source)
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for n in ast.walk(tree):
        if not (type(n) is ast.Attribute and _is_env(n.value)):
            continue
        up = parents.get(n)
        if n.attr not in declared:
            out.append(f"{n.lineno}: reads `env.{n.attr}`, which Env does not declare")
        elif type(n.ctx) is not ast.Load:
            out.append(f"{n.lineno}: writes `env.{n.attr}`")
        elif type(up) in (ast.Subscript, ast.Attribute) and type(up.ctx) is not ast.Load:
            out.append(f"{n.lineno}: writes into `env.{n.attr}`")
        elif type(up) is ast.Attribute and up.attr in ("add", "append", "update", "setdefault", "pop", "clear",
                                                        "discard", "remove", "extend"):
            out.append(f"{n.lineno}: writes into `env.{n.attr}` (.{up.attr})")
    return out


def test_the_model_holds_an_evaluator_and_derives_from_nothing():
    assert SemanticModel.__mro__ == (SemanticModel, object)
    assert Evaluator.__mro__ == (Evaluator, object)
    model = SemanticModel("import torch\n")
    assert isinstance(model.evaluator, Evaluator) and model.evaluator.env is model


def test_the_evaluator_reads_only_what_env_declares_and_writes_none_of_it():
    assert env_misuse(INFER.read_text(encoding="utf-8")) == []


def test_the_model_is_an_env():
    model = SemanticModel("import torch\n")
    assert [n for n in sorted(_declared()) if not hasattr(model, n)] == []


@pytest.mark.parametrize("code, what", [
    ("self.env.forward_refs.add(name)\n", "reads `env.forward_refs`, which Env does not declare"),
    ("self.env.func_returns[name] = v\n", "writes into `env.func_returns`"),
    ("self.env.device_options.update(d)\n", "writes into `env.device_options` (.update)"),
    ("self.env.default_device = 'cuda'\n", "writes `env.default_device`"),
    ("env = self.env\n        env.early_options.add(name)\n", "reads `env.early_options`, which Env does not declare"),
])
def test_a_planted_env_write_or_undeclared_read_is_caught(code, what):
    source = "class Evaluator:\n    def f(self, name, v, d):\n        " + code
    assert [m.split(": ", 1)[1] for m in env_misuse(source)] == [what]


class _Stub:
    """An env of one CUDA tensor `x` in a file that imports torch: whatever else evaluation
    read would fail here (the protocol is all it gets)."""

    func = cls = None
    loop_depth = 0
    uses_xla = False
    default_device = V.CPU

    def lookup(self, name):
        return V.tensor(V.CUDA) if name == "x" else V.UNKNOWN_VAL

    def qualname(self, e):
        return "torch." + e.attr.value if type(e) is cst.Attribute and type(e.value) is cst.Name \
            and e.value.value == "torch" else None

    def torch_name(self, e):
        q = self.qualname(e)
        return q[6:] if q else None

    def is_local(self, name):
        return name == "x"


@pytest.mark.parametrize("expr, kind, device", [
    ("x.cpu()", V.TENSOR, V.CPU),
    ("x.sum() * 2", V.TENSOR, V.CUDA),
    ("torch.zeros(3, device='cuda')", V.TENSOR, V.CUDA),
    ("x.item()", V.PY, None),
])
def test_infer_is_a_function_of_the_expression_and_its_env(expr, kind, device):
    v = infer(cst.parse_expression(expr), _Stub())
    assert (v.kind, v.device) == (kind, device)


def test_the_memo_is_the_evaluators_own():
    """Values are kept per node until the binder says a binding changed (`forget`)."""
    env = _Stub()
    ev = Evaluator(env)
    e = cst.parse_expression("x.cpu()")
    assert ev.infer(e).device == V.CPU
    env.lookup = lambda name: V.py("int")  # what `x` holds changes...
    assert ev.infer(e).device == V.CPU  # ...unseen until the binder says so
    ev.forget()
    assert ev.infer(e).kind == V.UNKNOWN  # `(1).cpu()`: not known
