"""Helpers for the SYN102-SYN109 read-back rules (`.tolist()`, `.cpu()`, `float(t)`,
tensor truthiness, formatting, equality checks, builtin reductions, membership)."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from synclint.semantic import values as V
from synclint.rules._helpers import torch_alias  # noqa: F401 - shared helpers, re-exported for this family

# Methods that only tensors have (not modules, not NumPy): a receiver chain that calls one
# of them is a tensor even when the chain's root cannot be inferred.
TENSOR_ONLY_METHODS = {
    "detach", "detach_", "argmax", "argmin", "softmax", "log_softmax", "sigmoid", "unsqueeze",
    "view", "view_as", "contiguous", "masked_fill", "index_select", "gather", "permute",
    "clamp", "clamp_min", "clamp_max", "logsumexp", "topk", "expand", "expand_as",
}
# Last word of a receiver's name that names a model rather than a tensor (`model.cpu()`,
# `text_encoder.cpu()`; but `model_output.cpu()` is a tensor).
MODULE_WORDS = {"model", "net", "module", "encoder", "decoder", "backbone", "layer", "layers",
                "head", "block", "blocks", "policy", "critic", "actor", "teacher", "student", "ema",
                "generator", "discriminator", "classifier", "embedder", "wrapper", "pipeline",
                "pipe", "metric", "metrics", "network", "vae", "unet", "transformer", "submodule"}
MODULE_SUFFIXES = ("net", "model", "module", "encoder", "decoder")


def is_builtin(ctx, func: cst.BaseExpression, names) -> Optional[str]:
    """`func` is the builtin `name` (one of `names`), not shadowed by an import or a binding."""
    if not isinstance(func, cst.Name) or func.value not in names:
        return None
    name = func.value
    if name in ctx.aliases or name in ctx.module_scope:
        return None
    if ctx.func is not None and name in ctx.func.scope:
        return None
    return name


# Methods that lists, dicts and other host containers have too.
GENERIC_METHODS = {"get", "pop", "index", "count", "copy", "keys", "values", "items", "__getitem__"}


def gpu_tensor(ctx, e: cst.BaseExpression) -> bool:
    """A value known to be a tensor, on the GPU or on an unknown device, for a reason
    better than being a bare `forward` parameter (`if use_cache:`, `int(n)`)."""
    return ctx.gpu_tensor_val(e) is not None and evidence(ctx, e)


def evidence(ctx, e: cst.BaseExpression) -> bool:
    """Is `e` a tensor for a reason other than an unannotated `forward` parameter?

    `n` alone is not enough; `lengths.max()`, `x.sum() > 0` or `x * 2` with `x` rebound to
    a module output are.
    """
    if isinstance(e, cst.Name):
        return not ctx.assumed_param(e)
    if isinstance(e, (cst.Subscript, cst.Attribute)):
        return evidence(ctx, e.value)
    if isinstance(e, cst.Call):
        func = e.func
        if isinstance(func, cst.Attribute) and ctx.qualname(func) is None and ctx.assumed_param(func.value):
            return func.attr.value not in GENERIC_METHODS
        return True
    if isinstance(e, cst.BinaryOperation):
        return any(ctx.infer(s).kind == V.TENSOR and evidence(ctx, s) for s in (e.left, e.right))
    if isinstance(e, cst.Comparison):
        sides = [e.left] + [c.comparator for c in e.comparisons]
        return any(ctx.infer(s).kind == V.TENSOR and evidence(ctx, s) for s in sides)
    if isinstance(e, cst.UnaryOperation):
        return evidence(ctx, e.expression)
    return True


def last_identifier(e: cst.BaseExpression) -> Optional[str]:
    while isinstance(e, cst.Subscript):
        e = e.value
    if isinstance(e, cst.Name):
        return e.value
    if isinstance(e, cst.Attribute):
        return e.attr.value
    return None


def tensor_chain(e: cst.BaseExpression) -> bool:
    """`a.detach()`, `out.argmax(1).view(-1)`: a call chain that only a tensor answers."""
    while True:
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute):
            if e.func.attr.value in TENSOR_ONLY_METHODS:
                return True
            e = e.func.value
        elif isinstance(e, (cst.Subscript, cst.Attribute)):
            e = e.value
        else:
            return False


def copy_source_is_gpu_tensor(ctx, recv: cst.BaseExpression) -> bool:
    """Receiver of `.cpu()` / `.to("cpu")`: a GPU tensor, or an unknown that is not a model.

    Only tensors and modules answer `.cpu()`, so NumPy imports do not matter here; what
    matters is telling `model.cpu()` (setup, not a hazard) from `out.cpu()`.
    """
    if ctx.cuda_less_depth:
        return False
    v = ctx.infer(recv)
    if v.kind == V.TENSOR:
        return v.device != V.CPU
    if v.kind != V.UNKNOWN:
        return False
    if tensor_chain(recv):
        return True
    if isinstance(recv, (cst.Name, cst.Attribute, cst.Subscript)):
        name = last_identifier(recv)
        if name is None or name == "self" or name[:1].isupper():
            return False
        last = re.split(r"_+", name.lower().strip("_"))[-1].rstrip("0123456789")
        return last not in MODULE_WORDS and not last.endswith(MODULE_SUFFIXES)
    return False


def only_on_error_path(ctx) -> bool:
    """The innermost statement is `raise ...` or `assert ...`: its message is built only
    when the check fails, not on every step."""
    stmt = ctx.stmt_stack[-1] if ctx.stmt_stack else None
    return isinstance(stmt, (cst.Raise, cst.Assert))


def string_literal(e: cst.BaseExpression) -> bool:
    return isinstance(e, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
