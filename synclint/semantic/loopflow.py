"""Def-use inside one loop: does a `for p in params:` body update `p` in place from its own
gradient, directly or through names derived from it (`g = p.grad; p.add_(g, alpha=-lr)`,
`buf.mul_(m).add_(p.grad); p.sub_(buf)`)? A hand-written optimizer step, one parameter at a
time (`SemanticModel.updates_from_own_grad`)."""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

import libcst as cst

from synclint.semantic.syntax import child_nodes

__all__ = ["updates_params_with_grad"]

# In-place tensor methods that are not parameter updates (zeroing, flags).
NOT_UPDATES = {"zero_", "requires_grad_", "detach_", "share_memory_", "retain_grad"}


def _names(target: cst.BaseExpression) -> Set[str]:
    if type(target) is cst.Name:
        return {target.value}
    if type(target) in (cst.Tuple, cst.List):
        out: Set[str] = set()
        for el in target.elements:
            out |= _names(el.value)
        return out
    return set()


def _param_of(e: cst.BaseExpression, params: Set[str]) -> bool:
    """`p` or `p.data` for a loop variable `p`."""
    if type(e) is cst.Attribute and e.attr.value == "data":
        e = e.value
    return type(e) is cst.Name and e.value in params


def _chain_root(call: cst.Call) -> Tuple[cst.BaseExpression, List[cst.Call]]:
    """`p.data.mul_(a).add_(g)` -> (`p.data`, [the add_ call, the mul_ call])."""
    calls = []
    e: cst.BaseExpression = call
    while type(e) is cst.Call and type(e.func) is cst.Attribute:
        calls.append(e)
        e = e.func.value
    return e, calls


def _collect_grad_sources(n: cst.CSTNode, params: Set[str], derived: Dict[str, Set[str]], out: Set[str]) -> None:
    """Which loop variables' gradients `n` reads: `p.grad`, or a name derived from it."""
    if type(n) is cst.Attribute:
        if n.attr.value == "grad" and _param_of(n.value, params):
            out.add(_base_name(n.value))
        _collect_grad_sources(n.value, params, derived, out)  # not the attribute's own name
        return
    if type(n) is cst.Name:
        out |= derived.get(n.value, set())
        return
    if type(n) is cst.Lambda:
        return
    if type(n) is cst.Arg:  # its value, not its keyword's name
        _collect_grad_sources(n.value, params, derived, out)
        return
    for c in child_nodes(n):
        _collect_grad_sources(c, params, derived, out)


def _base_name(e: cst.BaseExpression) -> str:
    if type(e) is cst.Attribute:
        e = e.value
    assert type(e) is cst.Name
    return e.value


def _grad_sources(nodes, params: Set[str], derived: Dict[str, Set[str]]) -> Set[str]:
    out: Set[str] = set()
    for n in nodes:
        _collect_grad_sources(n, params, derived, out)
    return out


def _statements(block) -> List[cst.CSTNode]:
    """Small statements of a block in order, through if/with/try/loops, not into nested scopes."""
    out: List[cst.CSTNode] = []
    for stmt in block.body:
        out.extend(_flatten(stmt))
    return out


def _flatten(stmt: cst.CSTNode) -> List[cst.CSTNode]:
    if type(stmt) is cst.SimpleStatementLine:
        return list(stmt.body)
    if isinstance(stmt, cst.BaseSmallStatement):
        return [stmt]
    if type(stmt) in (cst.FunctionDef, cst.ClassDef) or not isinstance(stmt, cst.BaseCompoundStatement):
        return []
    out: List[cst.CSTNode] = []
    if type(stmt) is cst.Match:  # cases instead of a body
        for case in stmt.cases:
            out.extend(_statements(case.body))
        return out
    out.extend(_statements(stmt.body))
    orelse = getattr(stmt, "orelse", None)
    if type(orelse) is cst.If:
        out.extend(_flatten(orelse))
    elif orelse is not None:
        out.extend(_statements(orelse.body))
    for h in getattr(stmt, "handlers", ()):
        out.extend(_statements(h.body))
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        out.extend(_statements(final.body))
    return out


def updates_params_with_grad(loop: cst.For) -> bool:
    """The loop body updates a loop variable in place from its own `.grad`."""
    params = _names(loop.target)
    if not params:
        return False
    derived: Dict[str, Set[str]] = {}  # name -> loop variables whose gradient it was made from

    def updates(target: cst.BaseExpression, sources: Set[str]) -> bool:
        return _param_of(target, params) and _base_name(target) in sources

    for s in _statements(loop.body):
        if type(s) is cst.Assign:
            src = _grad_sources([s.value], params, derived)
            if any(type(t.target) is cst.Attribute and updates(t.target, src) for t in s.targets):
                return True  # p.data = p.data - lr * p.grad
            if src:
                for t in s.targets:
                    for n in _names(t.target):
                        derived[n] = src  # g = p.grad
        elif type(s) is cst.AugAssign:
            src = _grad_sources([s.value], params, derived)
            if updates(s.target, src):
                return True  # p -= lr * p.grad
            for n in _names(s.target) if src else ():
                derived[n] = derived.get(n, set()) | src
        elif type(s) is cst.Expr and type(s.value) is cst.Call:
            root, calls = _chain_root(s.value)
            if not any(c.func.attr.value.endswith("_") and c.func.attr.value not in NOT_UPDATES for c in calls):
                continue
            src = _grad_sources([a.value for c in calls for a in c.args], params, derived)
            if not src:
                continue
            if updates(root, src):
                return True  # p.add_(p.grad, alpha=-lr); p.data.mul_(m).add_(g)
            for n in _names(root):
                derived[n] = derived.get(n, set()) | src  # buf.mul_(momentum).add_(g)
    return False
