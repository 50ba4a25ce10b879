"""Narrowing by a test: in the body of `if isinstance(x, int):` (and past `assert
isinstance(...)`), x is an int; where such a test is false, a tensor it named is no
tensor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.annotations import annotation_val
from synclint.semantic.syntax import isinstance_test
from synclint.semantic.values import Val

if TYPE_CHECKING:
    from synclint.semantic.model import SemanticModel

__all__ = ["narrow"]


def narrow(ctx: "SemanticModel", test: cst.BaseExpression, negated: bool = False) -> None:
    """In the body of `if isinstance(x, int):`, x is an int (`torch.Tensor`: a tensor).
    `negated`: where the test is false (the else path, or the code after an `if` without
    one): past `if isinstance(v, Tensor): v = v.item()`, v is no tensor on either path."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        if _device_test(test.expression) is not None:  # `if not x.is_cpu: return`: either path says
            narrow(ctx, test.expression, not negated)
            return
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
    placed = _device_test(test)
    if placed is not None:
        subject, device, is_not = placed
        old = ctx.infer(subject)
        if old.kind in (V.TENSOR, V.TENSORS):
            # in the body of `if x.device.type == "cpu":`, past `if x.device.type != "cpu":
            # raise` (OLMo-core's `cu_doc_lens`), past `assert not x.is_cuda`: x is there
            # (where a test says "not on the host", on the GPU)
            if negated != is_not:
                device = V.CUDA if device == V.CPU else V.CPU
            ctx.bind(subject.value, old.with_(device=device, assumed=False), ctx.assigned(subject.value))
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


def _device_test(test: cst.BaseExpression) -> Optional[Tuple[cst.Name, str, bool]]:
    """(the name tested, the device it says, whether the test is negated) of
    `x.device.type == "cpu"` (`!=`: negated; "cuda" alike), `x.is_cuda` and `x.is_cpu`
    (under `not`: `narrow` passes the negation)."""
    if type(test) is cst.Attribute and type(test.value) is cst.Name and test.attr.value in ("is_cuda", "is_cpu"):
        return test.value, V.CUDA if test.attr.value == "is_cuda" else V.CPU, False
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    left, (comp,) = test.left, test.comparisons
    op = type(comp.operator)
    if op not in (cst.Equal, cst.NotEqual) or type(comp.comparator) is not cst.SimpleString:
        return None
    device = {"'cpu'": V.CPU, '"cpu"': V.CPU, "'cuda'": V.CUDA, '"cuda"': V.CUDA}.get(comp.comparator.value)
    if device is None or not (type(left) is cst.Attribute and left.attr.value == "type"
                              and type(left.value) is cst.Attribute and left.value.attr.value == "device"
                              and type(left.value.value) is cst.Name):
        return None
    return left.value.value, device, op is cst.NotEqual


def _type_test(test: cst.BaseExpression) -> Optional[Tuple[cst.Name, cst.BaseExpression, bool]]:
    """(the name tested, the type or tuple of types, whether the test is negated) of
    `isinstance(x, T)`, and of `type(x) is T` / `type(x) == T` (`is not`, `!=`: negated),
    which say as much of x (audiocraft's `if type(step) is int:`)."""
    tested = isinstance_test(test)
    if tested is not None:
        return tested[0], tested[1], False
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
