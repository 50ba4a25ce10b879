"""Shared predicates for the SYN2xx family (ops whose output shape depends on the data)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.semantic import values as V
from synclint.rules._helpers import arg, torch_alias  # noqa: F401 - shared helpers, re-exported for this family


def mask_index(ctx, node: cst.Subscript) -> Optional[cst.BaseExpression]:
    """The first index of `x[...]` that is a GPU boolean mask, if the indexed value is on the GPU.

    A torch mask indexes a torch tensor, so an indexed value of unknown kind counts."""
    mask = None
    for el in node.slice:
        if type(el.slice) is cst.Index and el.slice.star is None and ctx.gpu_mask(el.slice.value):
            mask = el.slice.value
            break
    if mask is None:
        return None
    base = ctx.infer(node.value)
    if base.kind == V.TENSOR:
        return mask if base.device != V.CPU else None
    return mask if base.kind in (V.UNKNOWN, V.TENSORS) else None


def number(e: Optional[cst.BaseExpression]) -> Optional[float]:
    """The value of a numeric literal (optionally signed), else None."""
    if e is None:
        return None
    sign = 1.0
    if type(e) is cst.UnaryOperation and type(e.operator) in (cst.Minus, cst.Plus):
        sign = -1.0 if type(e.operator) is cst.Minus else 1.0
        e = e.expression
    if type(e) in (cst.Integer, cst.Float):
        try:
            return sign * float(e.evaluated_value)
        except (ValueError, OverflowError):  # pragma: no cover - odd literals
            return None
    return None


