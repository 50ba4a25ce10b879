"""Helpers for the SYN102-SYN109 read-back rules (`.tolist()`, `.cpu()`, `float(t)`,
tensor truthiness, formatting, equality checks, builtin reductions, membership)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.rules._helpers import torch_alias  # noqa: F401 - shared helpers, re-exported for this family


def is_builtin(ctx, func: cst.BaseExpression, names) -> Optional[str]:
    """`func` is the builtin `name` (one of `names`), not shadowed by an import or a binding."""
    if type(func) is not cst.Name or func.value not in names:
        return None
    return func.value if ctx.is_builtin(func.value) else None


def last_identifier(e: cst.BaseExpression) -> Optional[str]:
    while type(e) is cst.Subscript:
        e = e.value
    if type(e) is cst.Name:
        return e.value
    if type(e) is cst.Attribute:
        return e.attr.value
    return None


def only_on_error_path(ctx) -> bool:
    """The innermost statement is `raise ...` or `assert ...`: its message is built only
    when the check fails, not on every step."""
    return type(ctx.statement) in (cst.Raise, cst.Assert)


def string_literal(e: cst.BaseExpression) -> bool:
    return type(e) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
