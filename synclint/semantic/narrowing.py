"""Narrowing by a test: in the body of `if isinstance(x, int):` (and past `assert
isinstance(...)`), x is an int; where such a test is false, a tensor it named is no
tensor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.annotations import annotation_val
from synclint.semantic.values import Val

if TYPE_CHECKING:
    from synclint.semantic.model import SemanticModel

__all__ = ["narrow"]


def narrow(ctx: "SemanticModel", test: cst.BaseExpression, negated: bool = False) -> None:
    """In the body of `if isinstance(x, int):`, x is an int (`torch.Tensor`: a tensor).
    `negated`: where the test is false (the else path, or the code after an `if` without
    one): past `if isinstance(v, Tensor): v = v.item()`, v is no tensor on either path."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        # Past `if not isinstance(x, Tensor): raise`, x is a tensor, but that is not used: the
        # check guards an input's type (Lightning's XLA strategies), and the callers' values
        # made evident by it fed the receiver guesses of rules (6 wrong SYN103 findings)
        if not negated:
            narrow(ctx, test.expression, True)
        return
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        if not negated:  # (`not (a and b)` says nothing of either alone)
            narrow(ctx, test.left)
            narrow(ctx, test.right)
        return
    tested = _type_test(test)
    if tested is None:
        return
    subject, kinds, is_not = tested
    if is_not:  # `type(x) is not int`: the test's negation
        negated = not negated
    names = [el.value for el in kinds.elements] if type(kinds) is cst.Tuple else [kinds]
    vals = [annotation_val(ctx, n) for n in names]
    if negated:
        name = subject.value
        if vals and all(v is not None and v.kind == V.TENSOR for v in vals) and ctx.infer(subject).kind == V.TENSOR:
            ctx.bind(name, V.UNKNOWN_VAL, ctx.assigned(name))  # not a tensor: what it is, is not known
        return
    if vals and all(v is not None for v in vals):
        joined = vals[0]
        for v in vals[1:]:
            joined = V.join(joined, v)
        if joined.kind == V.PY and joined.py in ("list", "tuple", "dict", "set", None):
            old = ctx.infer(subject)
            if old.kind == V.TENSORS or old.elems is not None or old.kind == V.PY and old.py == joined.py:
                return  # `assert isinstance(tensors, (list, tuple))`: it stays the list of tensors it was
            if old.kind == V.TENSOR and old.device is not None and joined.py in ("list", "tuple"):
                # a loader's batch item that is a list (SlowFast's pathways): a list of the
                # tensors it was taken for, where they were
                joined = Val(V.TENSORS, old.device, dtype=old.dtype)
        if joined.kind == V.TENSOR and joined.device is None:
            old = ctx.infer(subject)
            if old.kind == V.TENSOR:
                joined = old.with_(assumed=False)
            elif old.kind == V.PY and (old.py in V.NUMBERS or old.py == "str"):
                # known not to be a tensor on any path (a tensor joined with a number is a
                # tensor): a dead branch, as when every caller passes a number
                return
        ctx.bind(subject.value, joined, ctx.assigned(subject.value))


def _type_test(test: cst.BaseExpression) -> Optional[Tuple[cst.Name, cst.BaseExpression, bool]]:
    """(the name tested, the type or tuple of types, whether the test is negated) of
    `isinstance(x, T)`, and of `type(x) is T` / `type(x) == T` (`is not`, `!=`: negated),
    which say as much of x (audiocraft's `if type(step) is int:`)."""
    if type(test) is cst.Call and type(test.func) is cst.Name and test.func.value == "isinstance" \
            and len(test.args) == 2 and type(test.args[0].value) is cst.Name:
        return test.args[0].value, test.args[1].value, False
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    left, (comp,) = test.left, test.comparisons
    if not (type(left) is cst.Call and type(left.func) is cst.Name and left.func.value == "type"
            and len(left.args) == 1 and type(left.args[0].value) is cst.Name):
        return None
    op = type(comp.operator)
    if op not in (cst.Is, cst.Equal, cst.IsNot, cst.NotEqual):
        return None
    return left.args[0].value, comp.comparator, op in (cst.IsNot, cst.NotEqual)
