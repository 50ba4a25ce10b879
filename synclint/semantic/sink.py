"""The finding sink: what rules report during a file's walk, each at its site, before the
engine turns them into findings (heat settled, fixes made, noqa applied)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import libcst as cst

from synclint.semantic.rates import OUTSIDE, SiteRate


@dataclass(frozen=True)
class Site:
    """Where a finding reported now would be placed (`SemanticModel.site`): kept by a rule
    that decides later (at the end of a function or of the file) whether to report it."""

    hot: bool
    func: Optional[str]
    stmt_index: int
    stmt: Optional[cst.CSTNode]
    guarded: bool
    rate: SiteRate = OUTSIDE  # the site's execution rate (`heat.rate_here`)


@dataclass
class PendingFinding:
    rule: object
    node: cst.CSTNode
    message: str
    replacement: Optional[cst.CSTNode]
    target: cst.CSTNode
    safe: bool
    fix_title: Optional[str]
    hot: bool
    func: Optional[str]
    stmt_index: int
    stmt: Optional[cst.CSTNode]
    guarded: bool = False
    compiled: Optional[str] = None  # a compiled event (`semantic.compiled.tag`), settled later
    rate: SiteRate = OUTSIDE  # the site's execution rate (`heat.rate_here`)


class FindingSink:
    """The findings of one walk, in the order they were reported."""

    def __init__(self) -> None:
        self.findings: List[PendingFinding] = []

    def add(self, where: Site, rule, node: cst.CSTNode, message: str, *, replacement: Optional[cst.CSTNode],
            target: cst.CSTNode, safe: bool, fix_title: Optional[str], compiled: Optional[str] = None) -> None:
        self.findings.append(PendingFinding(
            rule=rule, node=node, message=message, replacement=replacement, target=target, safe=safe,
            fix_title=fix_title, hot=where.hot, func=where.func, stmt_index=where.stmt_index, stmt=where.stmt,
            guarded=where.guarded, compiled=compiled, rate=where.rate))
