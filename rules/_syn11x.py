"""Helpers for the SYN110-SYN116 rules (tensors used as Python numbers, hidden checks in
library calls: masked_fill, linalg, distributions, clip_grad_norm_, GradScaler, packing)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.rules._helpers import arg, torch_alias  # noqa: F401 - shared helpers, re-exported for this family
from synclint.semantic import EVIDENT
from synclint.semantic.syntax import code_of, last_name

def gpu_number(ctx, e: cst.BaseExpression) -> bool:
    """`e` is a tensor on (or assumed on) the GPU, with evidence beyond a parameter's name."""
    return ctx.gpu(e, EVIDENT) is not None and not _dim_or_shape_name(e)


_DIM_SUFFIXES = ("shape", "dim", "dims", "axis", "axes")


def _dim_or_shape_name(e: cst.BaseExpression) -> bool:
    """`start_dim`, `end_dim + 1`, `out_shape`: dimension indices and shapes are host values;
    a name like that inferred as a tensor is an inference miss (a helper's return value)."""
    if type(e) is cst.BinaryOperation:
        return _dim_or_shape_name(e.left) or _dim_or_shape_name(e.right)
    if type(e) is cst.UnaryOperation:
        return _dim_or_shape_name(e.expression)
    name = last_name(e)
    return name is not None and name.lower().endswith(_DIM_SUFFIXES)


def one_line(node: cst.CSTNode) -> bool:
    """The node's code has no line break. Fixes are offered only for these: the engine writes
    a replacement's later lines without the enclosing block's indentation."""
    return "\n" not in code_of(node)


def has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def literal_bool(e: Optional[cst.BaseExpression]) -> Optional[bool]:
    if type(e) is cst.Name and e.value in ("True", "False"):
        return e.value == "True"
    return None
