"""One traversal per file: dispatch each node to the binder and to every rule.

LibCST's own visitor rebuilds children as it goes and costs about as much as the parse;
walking the dataclass fields directly is more than ten times cheaper (measured on the
lightning sources), so the walker does that and calls `visit_<Type>` / `leave_<Type>` of
all enabled rules in the same pass (the batched-visitor idea without its overhead).

At each node: a statement is entered (`Binder.enter_statement`), the rules' `visit_`
methods run, then the binder's handler for the node's type (which binds and walks the
children itself, in the order its bindings need: `semantic.binder`) or else a plain walk
of the children, then the rules' `leave_` methods, and the statement is left. So a rule's
visit sees the model before the node binds anything, its leave after.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, List, Sequence, Tuple

import libcst as cst

from synclint.semantic.binder import Binder
from synclint.semantic.model import SemanticModel
from synclint.semantic.syntax import FIELD_KINDS, NODE, SEQ, field_kind, node_fields

_STMT_TYPES = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
_stmt_cache: Dict[type, bool] = {}


def _is_stmt(t: type) -> bool:
    s = _stmt_cache.get(t)
    if s is None:
        s = _stmt_cache[t] = issubclass(t, _STMT_TYPES)
    return s


_dispatch_cache: Dict[type, Tuple[Tuple[str, str], ...]] = {}


def rule_methods(rule_cls: type) -> Tuple[Tuple[str, str], ...]:
    """(kind, node type name) pairs for a rule class's visit_/leave_ methods."""
    found = _dispatch_cache.get(rule_cls)
    if found is None:
        found = tuple(
            (attr[:5], attr[6:])
            for attr in dir(rule_cls)
            if attr.startswith(("visit_", "leave_")) and callable(getattr(rule_cls, attr))
        )
        _dispatch_cache[rule_cls] = found
    return found


class Walker:
    """Walks a module's tree once, filling `model` (through its binder) and calling each of
    `rules`' `visit_<Type>` and `leave_<Type>` methods."""

    def __init__(self, model: SemanticModel, rules: Sequence[object]) -> None:
        self.visit: Dict[str, List[Callable]] = defaultdict(list)
        self.leave: Dict[str, List[Callable]] = defaultdict(list)
        for rule in rules:
            for kind, tname in rule_methods(type(rule)):
                table = self.visit if kind == "visit" else self.leave
                table[tname].append(getattr(rule, f"{kind}_{tname}"))
        binder = Binder(model, self)
        self.handlers = binder.handlers
        self.enter_statement = binder.enter_statement
        self.leave_statement = binder.leave_statement
        self._plans: Dict[type, tuple] = {}

    def close(self) -> None:
        """The walk is over: drop what this walker holds. It and its binder refer to each
        other (each holds the other's methods), so without this the walker, its plans and
        the rules it calls (some thousand objects a walk) waited for the collector, which
        then had to scan them."""
        self.__dict__.clear()

    # ------------------------------------------------------------- traversal
    def _plan(self, t: type) -> tuple:
        """What a walk does at a node of type t, decided once per type (a walk meets about
        a million nodes on a large project): whether it is a statement, the rules' visit
        and leave methods, the binder's handler, the fields to walk, and whether anything
        happens at the node itself (else a walk only goes through to its children: two
        thirds of the nodes, names most of them, which have none)."""
        name = t.__name__
        is_stmt, visits, handler, leaves = (_is_stmt(t), tuple(self.visit.get(name, ())), self.handlers.get(t),
                                            tuple(self.leave.get(name, ())))
        acts = bool(is_stmt or visits or handler is not None or leaves)
        plan = self._plans[t] = (is_stmt, visits, handler, leaves, node_fields(t), acts)
        return plan

    def walk(self, node: cst.CSTNode) -> None:
        t = type(node)
        plan = self._plans.get(t) or self._plan(t)
        is_stmt, visits, handler, leaves, _, _ = plan
        if is_stmt:
            self.enter_statement(node)
        for fn in visits:
            fn(node)
        if handler is not None:
            handler(node)
        else:
            self.children(node)
        for fn in leaves:
            fn(node)
        if is_stmt:
            self.leave_statement()

    def children(self, node: cst.CSTNode) -> None:
        t = type(node)
        self._fields(node, (self._plans.get(t) or self._plan(t))[4])

    def _fields(self, node: cst.CSTNode, fields: Tuple[str, ...]) -> None:
        """Walk the nodes in `fields` of `node`; one at which nothing happens (`_plan`) is
        gone through to its children directly, without a walk's dispatch."""
        plans, walk, through = self._plans, self.walk, self._fields
        kinds = FIELD_KINDS  # (read directly: a call of `field_kind` per item was a fortieth of a check)
        for fname in fields:
            v = getattr(node, fname)
            tv = type(v)
            k = kinds.get(tv)
            if k is None:
                k = field_kind(tv)
            if k == NODE:
                p = plans.get(tv) or self._plan(tv)
                if p[5]:
                    walk(v)
                elif p[4]:
                    through(v, p[4])
            elif k == SEQ:
                for c in v:
                    tc = type(c)
                    kc = kinds.get(tc)
                    if kc == NODE or (kc is None and field_kind(tc) == NODE):
                        p = plans.get(tc) or self._plan(tc)
                        if p[5]:
                            walk(c)
                        elif p[4]:
                            through(c, p[4])

    def walk_field(self, v) -> None:
        k = field_kind(type(v))
        if k == NODE:
            self.walk(v)
        elif k == SEQ:
            for c in v:
                if field_kind(type(c)) == NODE:
                    self.walk(c)

