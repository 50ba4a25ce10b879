"""Shared predicates for the SYN2xx family (ops whose output shape depends on the data)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.semantic import values as V
from synclint.rules._helpers import arg, torch_alias  # noqa: F401 - shared helpers, re-exported for this family

# Functions that run in DataLoader workers or the main process's input pipeline: their
# unannotated tensors are CPU tensors far more often than not.
_PIPELINE_FUNCS = {"__getitem__", "__getitems__", "__iter__", "__next__", "__len__"}


def in_data_pipeline(ctx) -> bool:
    """Inside a Dataset-style `__getitem__`/`__iter__` (not of an nn.Module) or a collate function."""
    f = ctx.func
    if f is None:
        return False
    if "collate" in f.name:
        return True
    return f.name in _PIPELINE_FUNCS and not (f.cls is not None and f.cls.is_module)


def tensor_arg_on_gpu(ctx, e: cst.BaseExpression) -> bool:
    """An argument that a torch function requires to be a tensor: on the GPU unless known not.

    Unknown values count (the callee makes them tensors; device unknown is assumed GPU), except
    in data-pipeline functions, where an unknown tensor is most likely a CPU one.
    """
    if ctx.cuda_less_depth:
        return False
    v = ctx.infer(e)
    if v.kind == V.TENSOR:
        return v.device == V.CUDA or (v.device is None and not in_data_pipeline(ctx))
    return v.kind == V.UNKNOWN and not in_data_pipeline(ctx)


def receiver_on_gpu(ctx, e: cst.BaseExpression) -> bool:
    """The receiver of a tensor method: a GPU tensor, or unknown in a file without NumPy-likes."""
    if ctx.cuda_less_depth:
        return False
    v = ctx.infer(e)
    if v.kind == V.TENSOR:
        return v.device == V.CUDA or (v.device is None and not in_data_pipeline(ctx))
    return v.kind == V.UNKNOWN and not ctx.uses_numpy and not in_data_pipeline(ctx)


def gpu_mask(ctx, e: cst.BaseExpression) -> bool:
    """A boolean tensor known to be a mask (comparison, bool method, dtype=torch.bool) on the GPU."""
    if ctx.cuda_less_depth:
        return False
    v = ctx.infer(e)
    if v.kind != V.TENSOR or not v.mask or v.device == V.CPU:
        return False
    return v.device == V.CUDA or not in_data_pipeline(ctx)


def mask_index(ctx, node: cst.Subscript) -> Optional[cst.BaseExpression]:
    """The first index of `x[...]` that is a GPU boolean mask, if the indexed value is on the GPU."""
    mask = None
    for el in node.slice:
        if isinstance(el.slice, cst.Index) and el.slice.star is None and gpu_mask(ctx, el.slice.value):
            mask = el.slice.value
            break
    if mask is None:
        return None
    base = ctx.infer(node.value)
    if base.kind == V.TENSOR:
        return mask if base.device != V.CPU else None
    if base.kind == V.UNKNOWN:
        # A CUDA mask can only index a CUDA tensor; a mask of unknown device, only where the
        # file has no NumPy-like arrays that could be the indexed value.
        if ctx.infer(mask).device == V.CUDA or not ctx.uses_numpy:
            return mask
    return None


def gpu_tensor_value(ctx, e: cst.BaseExpression) -> bool:
    """A value known to be a tensor not on the CPU (`y[m]` with a GPU mask counts)."""
    v = ctx.infer(e)
    if v.kind == V.TENSOR:
        return v.device != V.CPU
    if isinstance(e, cst.Subscript) and mask_index(ctx, e) is not None:
        return True
    return False


def has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def number(e: Optional[cst.BaseExpression]) -> Optional[float]:
    """The value of a numeric literal (optionally signed), else None."""
    if e is None:
        return None
    sign = 1.0
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        sign = -1.0 if isinstance(e.operator, cst.Minus) else 1.0
        e = e.expression
    if isinstance(e, (cst.Integer, cst.Float)):
        try:
            return sign * float(e.evaluated_value)
        except (ValueError, OverflowError):  # pragma: no cover - odd literals
            return None
    return None


