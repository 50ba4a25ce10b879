"""Where the walk meets what decides a compiled module's training mode (`semantic.trainmode`
holds the rest, on cached call graphs): the `if self.training:` branches, where a compile
result is kept, the mode sets and the calls of held modules and of the class's own methods,
and what lets a held value leave its class. What they find goes to the model's `Compiled`."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic.syntax import always_leaves, child_nodes, dotted_path, self_attr

_UNSET = object()


def branch_mode(ctx) -> Optional[bool]:
    """The training mode the innermost `if self.training:` branch around the walk's statement
    needs (True: its body, or the `else` of `if not self.training:`), in a method of an
    nn.Module class; None outside such a branch."""
    f = ctx.func
    if f is None or f.cls is None or not f.cls.is_module:
        return None
    stmts = ctx.stmt_stack
    for outer, inner in reversed(list(zip(stmts, stmts[1:]))):
        block = getattr(getattr(outer, "body", None), "body", None)
        if type(block) not in (list, tuple):
            continue
        at = _index(block, inner)
        if type(outer) is cst.If:
            mode, pure = _test_mode(outer.test)
            if mode is not None and at is not None:
                return mode
            if mode is not None and pure:
                return not mode  # the else (or an elif) of `if self.training:`
        if at is not None:
            for s in reversed(block[:at]):  # after `if self.training: return ...`
                if type(s) is cst.If and s.orelse is None and always_leaves(s.body):
                    mode, pure = _test_mode(s.test)
                    if mode is not None and pure:
                        return not mode
    return None


def _index(block, inner) -> Optional[int]:
    """Where `inner` is in `block` (a small statement sits in a SimpleStatementLine of it)."""
    return next((i for i, s in enumerate(block) if inner is s or type(s) is cst.SimpleStatementLine
                 and any(inner is x for x in s.body)), None)


def _test_mode(test: cst.BaseExpression) -> Tuple[Optional[bool], bool]:
    """(the mode the body of `if test:` needs, whether the else needs the other one):
    `self.training`, `not self.training` (both ways); `self.training and c` (its body only)."""
    if _is_training(test):
        return True, True
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and _is_training(test.expression):
        return False, True
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        for side in (test.left, test.right):
            mode, pure = _test_mode(side)
            if mode is not None:
                return mode, False
    return None, False


def _is_training(e: cst.BaseExpression) -> bool:
    return type(e) is cst.Attribute and e.attr.value == "training" and type(e.value) is cst.Name \
        and e.value.value == "self"


def _set_mode(call: cst.Call):
    """The mode `.train(...)` / `.eval()` sets (None: not a literal), or _UNSET for another call."""
    name = call.func.attr.value if type(call.func) is cst.Attribute else None
    if name == "eval" and not call.args:
        return False
    if name != "train":
        return _UNSET
    if not call.args:
        return True
    if len(call.args) == 1 and (call.args[0].keyword is None or call.args[0].keyword.value == "mode"):
        v = call.args[0].value
        if type(v) is cst.Name and v.value in ("True", "False"):
            return v.value == "True"
    return None


def _here(ctx) -> Tuple[int, ...]:
    return tuple(id(s) for s in ctx.stmt_stack)


def note_call(ctx, node: cst.Call) -> None:
    """A call in a method: a mode set (`r.train()`, `r.eval()`), a call of a held value or of
    the class's own method (`self.model(x)`, `self.step()`), with the modes set before it by
    statements that dominate it, and a held value or a compile result passed away."""
    f = ctx.func
    if f is None:
        return
    facts = ctx.compile_facts
    func = node.func
    q = ctx.qualname(func)
    library = q is not None and q.split(".", 1)[0] in L.LIBRARY_ROOTS
    if type(func) is cst.Attribute:
        mode = _set_mode(node)
        recv = dotted_path(func.value)
        if mode is not _UNSET and recv is not None:
            facts.mode_sets.append((f.qual, recv, mode))
            ctx.mode_marks.append((f.qual, recv, mode, _here(ctx)))
    attr = self_attr(func)
    if f.cls is not None and attr is None and type(func) is cst.Attribute and func.attr.value in _RUNS_FORWARD:
        attr = self_attr(func.value)  # `self.model.forward(x)`, `self.model.module(x)` (DDP's)
    if attr is not None and f.cls is not None:
        if attr in f.cls.methods and func.attr.value == attr:
            facts.mode_sites.append((f.qual, "self", f"{f.cls.name}.{attr}", _known(ctx)))
        else:
            facts.mode_sites.append((f.qual, "held", attr, _known(ctx)))
    if type(func) is cst.Name and (f.qual, func.value) in ctx.compiled_locals:
        facts.escapes.extend(("", str(i)) for i in ctx.compiled_locals[(f.qual, func.value)])  # called here
    if library and _held_by_assignment(ctx, node):
        return  # `self.model = DDP(model, ...)`: the wrapper holds it
    bare = _bare_in_args(ctx, node) if f.cls is not None else ()
    for i, a in enumerate(node.args):
        for used in bare[i] if bare else ():
            if library:  # `checkpoint(self.model, x)`: a library may call it here
                facts.mode_sites.append((f.qual, "held", used, _known(ctx)))
            else:
                facts.escapes.append((f.cls.name, used))
        if type(a.value) is cst.Name and (f.qual, a.value.value) in ctx.compiled_locals:
            facts.escapes.extend(("", str(i)) for i in ctx.compiled_locals[(f.qual, a.value.value)])


# the attributes of a held module whose call runs its (compiled) forward
_RUNS_FORWARD = ("forward", "module", "__call__")


def _known(ctx) -> Dict[str, Optional[bool]]:
    """The receivers' modes set, in this function, by statements that dominate the walk's."""
    here = _here(ctx)
    f = ctx.func
    known: Dict[str, Optional[bool]] = {}
    for qual, recv, mode, at in ctx.mode_marks:  # (in walk order: the last one wins)
        if qual == f.qual and here[:len(at) - 1] == at[:-1] and here != at:
            known[recv] = mode
    return known


def _bare_in_args(ctx, node: cst.Call) -> Tuple[Tuple[str, ...], ...]:
    """`_bare_self_attrs` of each argument of the call, worked out once per tree: every walk
    asks it of every call in a method, and a call nested in another's arguments was walked
    again for each call around it."""
    return ctx.once(("bare self attrs", id(node)), lambda: tuple(tuple(_bare_self_attrs(a.value)) for a in node.args))


def _bare_self_attrs(e: cst.BaseExpression) -> List[str]:
    """The `self.<x>` in `e` used as values (`[self.model]`, `f(self.model)`), not read
    through (`self.model.parameters()`, `self.model.weight`)."""
    out: List[str] = []
    todo: list = [e]
    while todo:
        n = todo.pop()
        attr = self_attr(n)
        if attr is not None:
            out.append(attr)
            continue
        if type(n) is cst.Attribute:
            if self_attr(n.value) is None:
                todo.append(n.value)
            continue
        if type(n) is cst.Call:
            if self_attr(n.func) is None and not (type(n.func) is cst.Attribute and self_attr(n.func.value)):
                todo.append(n.func)
            todo.extend(a.value for a in n.args)
            continue
        if type(n) in (cst.Lambda, cst.FunctionDef):
            continue
        todo.extend(child_nodes(n))  # (not `.children`: LibCST rebuilds every child for it)
    return out


def _held_by_assignment(ctx, node: cst.Call) -> bool:
    stmt = ctx.stmt_stack[-1] if ctx.stmt_stack else None
    return type(stmt) is cst.Assign and stmt.value is node and len(stmt.targets) == 1 \
        and self_attr(stmt.targets[0].target) is not None


def note_compiled(ctx, call: cst.Call, first: int, count: int) -> None:
    """`torch.compile(...)` made the roots `first .. first + count - 1` of the file: where
    its result is kept (`self.model = torch.compile(m)`, or a local an attribute gets later)."""
    f = ctx.func
    stmt = ctx.stmt_stack[-1] if ctx.stmt_stack else None
    indices = list(range(first, first + count))
    if f is None or type(stmt) is not cst.Assign or stmt.value is not call or len(stmt.targets) != 1:
        ctx.compile_facts.escapes.extend(("", str(i)) for i in indices)
        return
    target = stmt.targets[0].target
    attr = self_attr(target)
    if attr is not None and f.cls is not None:
        ctx.compile_facts.holders.extend((i, f.cls.name, attr) for i in indices)
    elif type(target) is cst.Name:
        ctx.compiled_locals[(f.qual, target.value)] = indices
    else:
        ctx.compile_facts.escapes.extend(("", str(i)) for i in indices)


def note_assign(ctx, node: cst.Assign) -> None:
    """`self.model = model` (or `= DDP(model, ...)`) of a compile result kept in a local: the
    attribute holds it; `x = self.model`, or the local bound elsewhere: it leaves the class."""
    f = ctx.func
    if f is None:
        return
    value = node.value
    wrapper = ctx.qualname(value.func) if type(value) is cst.Call and value.args else None
    if wrapper is not None and wrapper.split(".", 1)[0] in L.LIBRARY_ROOTS:
        value = value.args[0].value  # a library wrapper of its first argument
    held = self_attr(node.value)
    if held is None and type(node.value) is cst.Attribute and node.value.attr.value in ("module", "_orig_mod"):
        held = self_attr(node.value.value)  # `self.raw_model = self.model.module` (DDP's, or the compiled one's)
    targets = [self_attr(t.target) for t in node.targets]
    if f.cls is not None and held is not None and all(t is not None for t in targets):
        ctx.compile_facts.aliases.extend((f.cls.name, t, held) for t in targets)
    elif f.cls is not None and type(node.value) is not cst.Call:  # (a call's arguments: `note_call`)
        ctx.compile_facts.escapes.extend((f.cls.name, a) for a in _bare_self_attrs(node.value))
    if type(value) is not cst.Name or (f.qual, value.value) not in ctx.compiled_locals:
        return
    indices = ctx.compiled_locals[(f.qual, value.value)]
    for t in node.targets:
        held = self_attr(t.target)
        if held is not None and f.cls is not None:
            ctx.compile_facts.holders.extend((i, f.cls.name, held) for i in indices)
        elif not (type(t.target) is cst.Name and t.target.value == value.value):
            ctx.compile_facts.escapes.extend(("", str(i)) for i in indices)


def note_return(ctx, node: cst.Return) -> None:
    """`return self.model` or `return model` (a compile result): it leaves the class."""
    f = ctx.func
    if f is None or node.value is None:
        return
    if f.cls is not None:
        ctx.compile_facts.escapes.extend((f.cls.name, a) for a in _bare_self_attrs(node.value))
    if type(node.value) is cst.Name and (f.qual, node.value.value) in ctx.compiled_locals:
        ctx.compile_facts.escapes.extend(("", str(i)) for i in ctx.compiled_locals[(f.qual, node.value.value)])
