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


# the methods of a logger that format what they are given
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})


def is_logging_call(ctx, func: cst.Attribute) -> bool:
    """`logger.info(...)`, `logging.warning(...)`: a method of the logging module or of a
    name that is a logger's."""
    q = ctx.qualname(func)
    if q is not None:
        return q.startswith(("logging.", "loguru.", "absl.logging."))
    name = last_identifier(func.value)
    if name is None or name == "self":
        return False
    low = name.lower().lstrip("_")
    return low in ("log", "logger", "logging", "lg") or low.endswith("logger")
