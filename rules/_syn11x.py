"""Helpers for the SYN110-SYN116 rules (tensors used as Python numbers, hidden checks in
library calls: masked_fill, linalg, distributions, clip_grad_norm_, GradScaler, packing)."""

from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst

from synclint import values as V

# Methods that containers and other host objects have too: calling one on a parameter says
# nothing about the parameter being a tensor.
_GENERIC_METHODS = {"get", "pop", "index", "count", "copy", "keys", "values", "items", "__getitem__"}


def _is_tensor_annotation(ann: cst.BaseExpression) -> bool:
    if isinstance(ann, cst.Subscript):  # Optional[Tensor]
        return any(
            isinstance(el.slice, cst.Index) and _is_tensor_annotation(el.slice.value) for el in ann.slice
        )
    if isinstance(ann, cst.Attribute):
        return ann.attr.value == "Tensor"
    if isinstance(ann, cst.Name):
        return ann.value == "Tensor"
    if isinstance(ann, cst.SimpleString):
        return ann.value.strip("'\"").rsplit(".", 1)[-1] == "Tensor"
    return False


def weak_params(fn: cst.FunctionDef) -> Set[str]:
    """Parameters whose tensor-ness is only assumed (not annotated `Tensor`).

    The context treats the parameters of `forward` as tensors; a bare parameter used as a
    size (`torch.arange(seq_len)`) is an int as often as not, so rules asking "is this a GPU
    number?" want more evidence than that assumption.
    """
    p = fn.params
    params = list(p.posonly_params) + list(p.params) + list(p.kwonly_params)
    if isinstance(p.star_arg, cst.Param):
        params.append(p.star_arg)
    if p.star_kwarg is not None:
        params.append(p.star_kwarg)
    return {
        prm.name.value
        for prm in params
        if prm.name.value not in ("self", "cls")
        and (prm.annotation is None or not _is_tensor_annotation(prm.annotation.annotation))
    }


class ParamScopes:
    """Mixin for a Rule: keeps the weak parameters of the enclosing function."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._weak_stack().append(weak_params(node))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._weak_stack().pop()

    def _weak_stack(self) -> List[Set[str]]:
        stack = self.__dict__.get("_weak")
        if stack is None:
            stack = self.__dict__["_weak"] = []
        return stack

    @property
    def weak(self) -> Set[str]:
        stack = self._weak_stack()
        return stack[-1] if stack else set()


def evidence(ctx, e: cst.BaseExpression, weak: Set[str]) -> bool:
    """Is `e` a tensor for a reason other than being an unannotated parameter?

    `n` (a `forward` parameter) is not enough; `lengths.max()`, `mask.sum()`, `n - 1` with
    `n = x.sum()`, or a parameter annotated `Tensor` are.
    """
    if isinstance(e, cst.Name):
        return e.value not in weak
    if isinstance(e, cst.Subscript):
        return not (isinstance(e.value, cst.Name) and e.value.value in weak) and evidence(ctx, e.value, weak)
    if isinstance(e, cst.Attribute):
        return evidence(ctx, e.value, weak)
    if isinstance(e, cst.Call):
        func = e.func
        if isinstance(func, cst.Attribute) and ctx.qualname(func) is None:
            recv = func.value
            if isinstance(recv, cst.Name) and recv.value in weak:
                return func.attr.value not in _GENERIC_METHODS  # `lengths.max()`: a tensor method
            return evidence(ctx, recv, weak)
        return True  # torch.* results, in-file functions returning tensors
    if isinstance(e, cst.BinaryOperation):
        return any(
            ctx.infer(side).kind == V.TENSOR and evidence(ctx, side, weak) for side in (e.left, e.right)
        )
    if isinstance(e, cst.UnaryOperation):
        return evidence(ctx, e.expression, weak)
    return True


def gpu_number(ctx, e: cst.BaseExpression, weak: Set[str]) -> bool:
    """`e` is a tensor on (or assumed on) the GPU, with evidence beyond a parameter's name."""
    return ctx.gpu_tensor_val(e) is not None and evidence(ctx, e, weak)


def torch_alias(ctx) -> Optional[str]:
    """A local name bound to the `torch` module itself (for fixes that add `torch.` calls)."""
    for local, q in ctx.aliases.items():
        if q == "torch" and "." not in local:
            return local
    return None


def arg(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
    """The argument at positional `index` or keyword `name`, else None."""
    pos = [a for a in call.args if a.keyword is None and not a.star]
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    if index < len(pos):
        return pos[index].value
    return None


def one_line(node: cst.CSTNode) -> bool:
    """The node's code has no line break. Fixes are offered only for these: the engine writes
    a replacement's later lines without the enclosing block's indentation."""
    return "\n" not in cst.Module(body=[]).code_for_node(node)


def has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def literal_bool(e: Optional[cst.BaseExpression]) -> Optional[bool]:
    if isinstance(e, cst.Name) and e.value in ("True", "False"):
        return e.value == "True"
    return None
