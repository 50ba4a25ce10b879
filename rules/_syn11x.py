"""Helpers for the SYN110-SYN116 rules (tensors used as Python numbers, hidden checks in
library calls: masked_fill, linalg, distributions, clip_grad_norm_, GradScaler, packing)."""

from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.syntax import target_names
from synclint.rules._helpers import arg, torch_alias  # noqa: F401 - shared helpers, re-exported for this family

# Methods that containers and other host objects have too: calling one on a parameter says
# nothing about the parameter being a tensor.
_GENERIC_METHODS = {"get", "pop", "index", "count", "copy", "keys", "values", "items", "__getitem__"}


_OP_NAMESPACES = {"torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.sparse",
                  "torch.nested"}


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
    """Mixin for a Rule: keeps the weak names of the enclosing function: its unannotated
    parameters, and locals assigned from them without a tensor operation in between
    (`input, batch_sizes = input`, `n = sizes[0]`)."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._weak_stack().append(weak_params(node))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._weak_stack().pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        stack = self._weak_stack()
        if not stack:
            return
        weak = stack[-1]
        derived = not evidence(self.ctx, node.value, weak)
        for t in node.targets:
            for name in target_names(t.target):
                if derived:
                    weak.add(name)
                else:
                    weak.discard(name)

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
        q = ctx.qualname(func)
        if q is None:
            return True  # in-file functions returning tensors
        # Tensor ops live in these namespaces; other torch modules (torch._prims_common,
        # torch.ao..., torch._C) hold helpers that return shapes, ints and tuples.
        return q.count(".") == 1 or q.rsplit(".", 1)[0] in _OP_NAMESPACES
    if isinstance(e, (cst.Tuple, cst.List)):
        return any(evidence(ctx, el.value, weak) for el in e.elements if not isinstance(el, cst.StarredElement))
    if isinstance(e, cst.BinaryOperation):
        if isinstance(e.left, (cst.Tuple, cst.List)) or isinstance(e.right, (cst.Tuple, cst.List)):
            return False  # `shape + (n, n)`: a shape, not a number
        return any(
            ctx.infer(side).kind == V.TENSOR and evidence(ctx, side, weak) for side in (e.left, e.right)
        )
    if isinstance(e, cst.UnaryOperation):
        return evidence(ctx, e.expression, weak)
    return True


def gpu_number(ctx, e: cst.BaseExpression, weak: Set[str]) -> bool:
    """`e` is a tensor on (or assumed on) the GPU, with evidence beyond a parameter's name."""
    return ctx.gpu_tensor_val(e) is not None and not _dim_or_shape_name(e) and evidence(ctx, e, weak)


_DIM_SUFFIXES = ("shape", "dim", "dims", "axis", "axes")


def _dim_or_shape_name(e: cst.BaseExpression) -> bool:
    """`start_dim`, `end_dim + 1`, `out_shape`: dimension indices and shapes are host values;
    a name like that inferred as a tensor is an inference miss (a helper's return value)."""
    if isinstance(e, cst.BinaryOperation):
        return _dim_or_shape_name(e.left) or _dim_or_shape_name(e.right)
    if isinstance(e, cst.UnaryOperation):
        return _dim_or_shape_name(e.expression)
    name = e.value if isinstance(e, cst.Name) else e.attr.value if isinstance(e, cst.Attribute) else None
    return name is not None and name.lower().endswith(_DIM_SUFFIXES)


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
