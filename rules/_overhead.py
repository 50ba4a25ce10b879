"""Helpers for the SYN5xx rules (GPU overhead that is not a sync): the
indentation of the block being walked and fixes laid out for it, a node's code children.
(A finding decided after the walk has moved on is reported with `Rule.report_at` at the
site `ctx.site()` kept where it was seen.)"""

from __future__ import annotations

import libcst as cst


class Indentation:
    """The absolute indentation of the block being walked (rules see every IndentedBlock)."""

    def __init__(self) -> None:
        self.default = "    "
        self.stack: list = []

    def enter_module(self, default_indent: str) -> None:
        """At the module: the indentation its blocks default to (`Module.default_indent`)."""
        self.default = default_indent

    def push(self, node: cst.IndentedBlock) -> None:
        self.stack.append(node.indent if node.indent is not None else self.default)

    def pop(self) -> None:
        self.stack.pop()

    @property
    def current(self) -> str:
        return "".join(self.stack)


class _AbsoluteLayout(cst.CSTTransformer):
    def __init__(self, indent: str) -> None:
        self.indent = indent

    def leave_ParenthesizedWhitespace(self, original, updated):
        if not updated.indent:
            return updated
        last = updated.last_line.value if type(updated.last_line) is cst.SimpleWhitespace else ""
        return updated.with_changes(indent=False, last_line=cst.SimpleWhitespace(self.indent + last))


def absolute_layout(node: cst.CSTNode, indent: str) -> cst.CSTNode:
    """`node` with its continuation lines indented absolutely, so that the text of a
    multi-line replacement (generated outside its block) lands at the right column."""
    if not indent:
        return node
    return node.visit(_AbsoluteLayout(indent))
