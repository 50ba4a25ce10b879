"""What one instance's attributes hold, from the calls made on that instance.

A class's attribute is one value for all its instances: an `AverageMeter` that one loop
feeds floats (`batch_time.update(time.time() - end)`) and another GPU tensors
(`top1.update(acc1[0], n)`) holds "a tensor" in `val`, `sum` and `avg` for both. Formatting
`batch_time.val` is then taken for a read-back. When the attribute is made only from the
parameters of the class's own methods (`self.val = val`, `self.sum += val * n`, `self.avg =
self.sum / self.count`), what this instance was given tells more: every call made on it in
this scope passed plain numbers, so its attribute is a number.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from synclint.semantic.callgraph import spread
from synclint.semantic.syntax import all_params, descendants, self_attr

# attribute -> (method, parameter, position after self, whether its default is a literal)
Fed = Dict[str, List[Tuple[str, str, int, bool]]]


def fed_attributes(node: cst.ClassDef) -> Fed:
    """Attributes made only from method parameters, constants and other such attributes,
    with the (method, parameter, position) each depends on; an attribute assigned anything
    else (a call, a global) is left out."""
    direct: Dict[str, Set[Tuple[str, str, int, bool]]] = {}
    via: Dict[str, Set[str]] = {}
    opaque: Set[str] = set()
    body = node.body.body if type(node.body) is cst.IndentedBlock else ()
    for m in body:
        if type(m) is not cst.FunctionDef:
            continue
        params = all_params(m.params)
        position = {p.name.value: i - 1 for i, p in enumerate(params) if i > 0}
        literal = {p.name.value for p in params
                   if type(p.default) in (cst.Integer, cst.Float, cst.SimpleString)}
        for stmt in _small_statements(m.body):
            if type(stmt) is cst.Assign and len(stmt.targets) == 1:
                target, value = stmt.targets[0].target, stmt.value
            elif type(stmt) in (cst.AugAssign, cst.AnnAssign) and stmt.value is not None:
                target, value = stmt.target, stmt.value
            else:
                continue
            attr = self_attr(target)
            if attr is None:
                continue
            nodes = [value, *descendants(value)]
            attr_names = {id(a.attr) for a in nodes if type(a) is cst.Attribute}
            for n in nodes:
                if type(n) is cst.Attribute and self_attr(n) is not None:
                    via.setdefault(attr, set()).add(n.attr.value)
                elif type(n) is cst.Name and n.value in position:
                    direct.setdefault(attr, set()).add((m.name.value, n.value, position[n.value], n.value in literal))
                elif type(n) in (cst.Call, cst.Subscript, cst.Lambda) or (
                        type(n) is cst.Name and n.value != "self" and id(n) not in attr_names):
                    opaque.add(attr)
    out: Fed = {}
    for attr in sorted(set(direct) | set(via)):
        made_from = spread([attr], via, set())  # the attributes it is computed from, itself too
        deps = set().union(*(direct.get(a, set()) for a in made_from))
        if deps and not made_from & opaque:
            out[attr] = sorted(deps)
    return out


def instance_value(fed: Optional[Fed], attr: str, calls: List[tuple]):
    """True when every call made on this instance passed a plain Python value for each
    parameter `attr` is made from (so it holds a plain value), else None."""
    from synclint.semantic import values as V

    deps = (fed or {}).get(attr)
    if not deps or not calls:
        return None
    for method, param, pos, literal_default in deps:
        for m, args, kws in calls:
            if m != method:
                continue
            v = kws.get(param, args[pos] if pos < len(args) else None)
            if v is None and literal_default:
                continue  # `update(x)`: `n=1`
            if v is None or v.kind != V.PY:
                return None
    return True


def _small_statements(block) -> Iterator[cst.BaseSmallStatement]:
    """The simple statements of a block and of the blocks nested in it (not of nested
    functions or classes): where `self.x = ...` can be, without walking every expression."""
    for stmt in block.body if type(block) is cst.IndentedBlock else [block]:
        if type(stmt) in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
            yield from stmt.body
        elif type(stmt) in (cst.FunctionDef, cst.ClassDef):
            continue
        else:
            for name in ("body", "orelse", "finalbody"):
                sub = getattr(stmt, name, None)
                if type(sub) in (cst.IndentedBlock, cst.SimpleStatementSuite):
                    yield from _small_statements(sub)
                elif sub is not None and hasattr(sub, "body"):  # an Else/Finally/elif If
                    yield from _small_statements(sub if type(sub) is cst.If else sub.body)
            for h in getattr(stmt, "handlers", ()):
                yield from _small_statements(h.body)
