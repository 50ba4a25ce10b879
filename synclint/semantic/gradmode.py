"""Grad mode over a whole file: which functions compute gradients, where each function of
the file is called from and whether autograd is off there, and whether the file sets the
grad mode or freezes parameters for all of its code.

Read from the tree in one pass, the first time a rule asks (`SemanticModel.grad_facts`):
the walk that rules see reaches a function's body before its callers, but a question such as
"is `validate` ever called under `no_grad`?" needs the whole file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic.syntax import child_nodes, last_name, string_value

# What a name or attribute refers to, qualified (`SemanticModel.qualname`).
QualName = Callable[[cst.BaseExpression], Optional[str]]

__all__ = ["GRAD_CALLS", "GRAD_MODE_CONTEXTS", "CallOf", "GradFacts", "grad_facts", "wants_grad_call"]

# `with` contexts that set the grad mode explicitly (`SemanticModel.grad_mode_depth`)
GRAD_MODE_CONTEXTS = frozenset({
    "torch.enable_grad", "torch.autograd.enable_grad", "torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
    "torch.autograd.grad_mode.set_grad_enabled", "torch.autograd.grad_mode.enable_grad"})

# Calls of code that wants gradients (or manages grad mode itself).
GRAD_CALLS = frozenset({
    "torch.autograd.grad", "torch.autograd.backward", "torch.set_grad_enabled",
    "torch.autograd.set_grad_enabled", "torch.enable_grad", "torch.autograd.enable_grad",
    "torch.func.grad", "torch.func.grad_and_value", "torch.func.vjp", "torch.func.jvp",
    "torch.func.jacrev", "torch.func.jacfwd", "torch.func.hessian",
})
_SETS_GRAD_MODE = ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled")


def wants_grad_call(q: Optional[str]) -> bool:
    """A call of `torch.autograd.grad`, `torch.func.vjp`, `torch.enable_grad`, ... by its qualified name."""
    return q is not None and (q in GRAD_CALLS or q.startswith("torch.autograd.functional."))


@dataclass(frozen=True)
class CallOf:
    """One call, by name, of a function: from which function and in which grad mode."""

    caller: Optional[str]  # the innermost enclosing function's name; None at module level
    caller_wants_grad: bool  # the caller computes gradients or sets the grad mode itself
    grad_off: bool  # under `no_grad` / `inference_mode`, or in a block that sets the grad mode


@dataclass
class GradFacts:
    wants_grad: Dict[int, bool] = field(default_factory=dict)  # id(FunctionDef) -> wants gradients
    calls: Dict[str, List[CallOf]] = field(default_factory=dict)  # callee's last name -> its calls
    set_in_file: bool = False  # module-level `set_grad_enabled(...)`, or parameters frozen


def _is_false(e: cst.BaseExpression) -> bool:
    return type(e) is cst.Name and e.value == "False"


def _no_grad_context(qualname: QualName, item: cst.BaseExpression) -> bool:
    """`with torch.no_grad():` / `torch.inference_mode()` (not `inference_mode(False)`)."""
    if type(item) is not cst.Call or qualname(item.func) not in L.NO_GRAD_CONTEXTS:
        return False
    return not (item.args and string_value(item.args[0].value) is None and _is_false(item.args[0].value))


def grad_facts(qualname: QualName, module: cst.Module) -> GradFacts:
    out = GradFacts()
    # (function node, its name, its pending calls: (callee, grad off)); wants-grad decided at its end
    Frame = Tuple[cst.FunctionDef, str, List[Tuple[str, bool]]]
    frames: List[Frame] = []

    def visit(node: cst.CSTNode, off: bool) -> None:
        t = type(node)
        if t is cst.FunctionDef:
            wants = False
            body_off = off
            for d in node.decorators:
                dec = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
                q = qualname(dec)
                wants = wants or q in GRAD_MODE_CONTEXTS
                body_off = body_off or q in L.NO_GRAD_CONTEXTS
                visit(d, off)
            out.wants_grad[id(node)] = wants
            frames.append((node, node.name.value, []))
            for c in child_nodes(node):
                if c is not node.name and type(c) is not cst.Decorator:
                    visit(c, body_off)
            fnode, name, calls = frames.pop()
            wants = out.wants_grad[id(fnode)]
            for callee, grad_off in calls:
                out.calls.setdefault(callee, []).append(CallOf(name, wants, grad_off))
            return
        if t is cst.With:
            grad_mode = False
            for item in node.items:
                if type(item.item) is cst.Call and qualname(item.item.func) in GRAD_MODE_CONTEXTS:
                    grad_mode = True  # from this item on (its own call too)
                visit(item, off or grad_mode)
            body_off = off or grad_mode or any(_no_grad_context(qualname, item.item) for item in node.items)
            visit(node.body, body_off)
            return
        if t is cst.Call:
            _call(node, off)
        elif t is cst.AssignTarget and type(node.target) is cst.Attribute and node.target.attr.value == "requires_grad":
            out.set_in_file = True  # `p.requires_grad = False`: frozen parameters
        for c in child_nodes(node):
            visit(c, off)

    def _call(node: cst.Call, off: bool) -> None:
        frame = frames[-1] if frames else None
        func = node.func
        q = qualname(func)
        if wants_grad_call(q):
            if frame is not None:
                out.wants_grad[id(frame[0])] = True
            elif q in _SETS_GRAD_MODE:
                out.set_in_file = True
            return
        callee = last_name(func)
        if callee is not None:
            if frame is not None:
                frame[2].append((callee, off))
            else:
                out.calls.setdefault(callee, []).append(CallOf(None, False, off))
        if type(func) is cst.Attribute:
            m = func.attr.value
            if m == "backward" and frame is not None:
                out.wants_grad[id(frame[0])] = True
            elif m == "requires_grad_":
                if node.args and _is_false(node.args[0].value):
                    out.set_in_file = True
                elif frame is not None:
                    out.wants_grad[id(frame[0])] = True

    visit(module, False)
    return out
