"""Ownership: which names hold a tensor that they alone own, without autograd history.

An out-of-place op bound back to its name (`x = x * 2`) can become in-place (`x.mul_(2)`)
only when nothing else can see `x`'s tensor and autograd does not need it. Three facts
answer that, computed here for the rules to ask:

- `fresh(model, e)`: `e` makes new storage (a factory, arithmetic, an allocating op), with
  or without autograd history (`Fresh.nograd`), and its dtype class where known. The model
  keeps it on each name's binding (`Binding.fresh`), joined at branches like the value.
- `escaped_names(model, root)`: names whose tensor may be reachable from elsewhere: bound to
  another name, stored in a container or attribute, passed to an unknown function,
  captured by a nested scope, or read through a view.
- `loop_rebinds_ok(model, loop, name)`: across loop iterations, every binding of the name
  makes an owned tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Set

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.syntax import is_none, kwarg, string_value

_D = L._DATA["ownership"]
INPLACE_TWINS = frozenset(_D["inplace_twins"])
FLOAT_RESULT = frozenset(_D["float_result"])
SAME_DTYPE = frozenset(_D["same_dtype"])
BINARY = frozenset(_D["binary"])
NEW_TENSOR_OPS = INPLACE_TWINS | FLOAT_RESULT | SAME_DTYPE | BINARY | frozenset(_D["new_tensor"])
INT_OK = frozenset(_D["int_ok"])
FACTORIES = frozenset(_D["fresh_factories"])
FLOAT_FACTORIES = frozenset(_D["float_factories"])
INT_FACTORIES = frozenset(_D["int_factories"])
FLOAT_DTYPES = frozenset(_D["float_dtypes"])
COMPILERS = frozenset(_D["compilers"])
SAFE_BUILTINS = frozenset(_D["safe_builtins"])
# Methods whose result never shares the receiver's memory.
SAFE_METHODS = (L.HOST_METHODS - {"type", "untyped_storage"}) | {"item", "tolist"} | NEW_TENSOR_OPS


@dataclass(frozen=True)
class Fresh:
    """A tensor that its name alone owns: new storage, no autograd history (`nograd`)."""

    nograd: bool
    dtype: Optional[str]  # "float" | "int" | "bool" | None (unknown)


def join(a: Optional[Fresh], b: Optional[Fresh]) -> Optional[Fresh]:
    """After two paths meet: owned on both, grad-free only if both are, the dtype if equal."""
    if a is None or b is None:
        return None
    return Fresh(a.nograd and b.nograd, a.dtype if a.dtype == b.dtype else None)


def _positional(call: cst.Call) -> List[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def _python_scalar(e: cst.BaseExpression) -> bool:
    if type(e) is cst.UnaryOperation and type(e.operator) in (cst.Minus, cst.Plus):
        e = e.expression
    return type(e) in (cst.Integer, cst.Float) or type(e) is cst.Name and e.value in ("True", "False")


def _name_fresh(model, name: str) -> Optional[Fresh]:
    b = model.binding(name)
    return b.fresh if b is not None else None


def fresh(model, e: cst.BaseExpression) -> Optional[Fresh]:
    """`e` makes a new tensor that nothing else references: with or without history.
    Remembered per node like inferred values (a chain `x.abs().abs()...` asks each link
    twice, for its history and for its dtype: without this, exponential)."""
    key = ("fresh", id(e))
    got = model.evaluator.memo.get(key)
    if got is not None and got[0] is e:
        return got[1]
    v = _fresh(model, e)
    model.evaluator.memo[key] = (e, v)
    return v


def _fresh(model, e: cst.BaseExpression) -> Optional[Fresh]:
    if model.infer(e).kind != V.TENSOR:
        return None
    ng = model.in_no_grad
    if type(e) is cst.BinaryOperation:
        if type(e.operator) is cst.MatrixMultiply:
            return Fresh(ng or (nograd(model, e.left) and nograd(model, e.right)), None)
        return Fresh(ng or (nograd(model, e.left) and nograd(model, e.right)),
                     _promote(dtype(model, e.left), dtype(model, e.right), type(e.operator)))
    if type(e) is cst.UnaryOperation and type(e.operator) is cst.Minus:
        d = dtype(model, e.expression)
        return Fresh(ng or nograd(model, e.expression), d if d in ("float", "int") else None)
    if type(e) is not cst.Call:
        return None
    helper = _one_line_factory(model, e)
    if helper is not None:  # `noise(n)` whose body is `return torch.randn(n, device="cuda")`
        e = helper
    t = model.torch_name(e.func)
    if t is not None:
        if t in FACTORIES:
            rg = kwarg(e, "requires_grad")
            if rg is not None and not (type(rg) is cst.Name and rg.value == "False"):
                return None
            return Fresh(True, _factory_dtype(model, t, e))
        if t.startswith("nn.functional."):
            t = t.rsplit(".", 1)[-1]
            inplace = kwarg(e, "inplace")
            if inplace is not None and not (type(inplace) is cst.Name and inplace.value == "False"):
                return None
        if t not in NEW_TENSOR_OPS or kwarg(e, "out") is not None:
            return None
        pos = _positional(e)
        if not pos:
            return None
        return Fresh(ng or all(nograd(model, a.value) for a in e.args),
                     _op_dtype(model, t, pos[0].value, e, skip_first=True))
    if type(e.func) is cst.Attribute and e.func.attr.value in NEW_TENSOR_OPS:
        recv = e.func.value
        m = e.func.attr.value
        return Fresh(ng or (nograd(model, recv) and all(nograd(model, a.value) for a in e.args)),
                     _op_dtype(model, m, recv, e, skip_first=False))
    return None


def _one_line_factory(model, call: cst.Call) -> Optional[cst.Call]:
    """The factory call an in-file one-line helper returns (`def noise(n): return
    torch.randn(n, device="cuda")`): each call of it makes a new tensor."""
    f = call.func
    if not (type(f) is cst.Name and f.value in model.one_liners and model.lookup(f.value) == V.FUNCTION_VAL):
        return None
    expr = model.one_liners[f.value][1]
    if type(expr) is cst.Call and model.torch_name(expr.func) in FACTORIES:
        return expr
    return None


def nograd(model, e: cst.BaseExpression) -> bool:
    """`e` is a Python value or a tensor without autograd history."""
    if _python_scalar(e) or string_value(e) is not None or is_none(e):
        return True
    if type(e) is cst.Name:
        f = _name_fresh(model, e.value)
        if f is not None:
            return f.nograd
    kind = model.infer(e).kind
    if kind == V.PY:
        return True
    if kind != V.TENSOR:
        return False
    if type(e) is cst.Attribute and _attribute_from_factories(model, e):
        return True
    f = fresh(model, e) if type(e) is not cst.Name else None
    return f is not None and f.nograd


def _attribute_from_factories(model, e: cst.Attribute) -> bool:
    """`s.scale` where every assignment of `scale` in `s`'s in-file class is a factory
    without `requires_grad` (a tensor with no autograd history)."""
    base = model.infer(e.value)
    info = model.classes_by_name.get(base.cls) if base.kind in (V.OBJECT, V.MODULE) and base.cls else None
    exprs = info.pending.get(e.attr.value) if info is not None else None
    return bool(exprs) and all(
        type(x) is cst.Call and model.torch_name(x.func) in FACTORIES and kwarg(x, "requires_grad") is None
        for x in exprs)


def dtype(model, e: cst.BaseExpression) -> Optional[str]:
    """The dtype class of `e`: "float"/"int" for tensors, "pyint"/"pyfloat" for literals."""
    if type(e) is cst.UnaryOperation and type(e.operator) in (cst.Minus, cst.Plus):
        e = e.expression
    if type(e) is cst.Integer:
        return "pyint"
    if type(e) is cst.Float:
        return "pyfloat"
    f = _name_fresh(model, e.value) if type(e) is cst.Name else fresh(model, e)
    return f.dtype if f is not None else None


def _op_dtype(model, m: str, recv: cst.BaseExpression, call: cst.Call, skip_first: bool) -> Optional[str]:
    if m in FLOAT_RESULT and not (m == "div" and kwarg(call, "rounding_mode") is not None):
        return "float"
    d = dtype(model, recv)
    if m in BINARY:
        others = _positional(call)[1 if skip_first else 0:]
        return _promote(d, dtype(model, others[0].value), None) if others else None
    if m in SAME_DTYPE:
        return d if d in ("float", "int") else None
    return None


def _factory_dtype(model, t: str, call: cst.Call) -> Optional[str]:
    dt = kwarg(call, "dtype")
    if dt is not None:
        name = (model.torch_name(dt) or "").rsplit(".", 1)[-1]
        return "float" if name in FLOAT_DTYPES else "int" if name in L.INT_DTYPES else "bool" if name == "bool" else None
    if t in FLOAT_FACTORIES or t in ("rand_like", "randn_like"):
        return "float" if t in FLOAT_FACTORIES else _like_dtype(model, call)
    if t in INT_FACTORIES:
        return "int"
    pos = _positional(call)
    if t == "arange":
        kinds = {dtype(model, a.value) for a in pos}
        return "float" if "pyfloat" in kinds else "int" if kinds == {"pyint"} else None
    if t in ("full", "full_like") and len(pos) >= 2:
        d = dtype(model, pos[1].value)
        return "float" if d == "pyfloat" else "int" if d == "pyint" and t == "full" else None
    if t in ("zeros_like", "ones_like", "empty_like", "randint_like"):
        return _like_dtype(model, call)
    if t == "tensor" and pos:
        return _literal_dtype(pos[0].value)
    return None


def _like_dtype(model, call: cst.Call) -> Optional[str]:
    pos = _positional(call)
    return dtype(model, pos[0].value) if pos else None


def _strip_sign(e: cst.BaseExpression) -> cst.BaseExpression:
    if type(e) is cst.UnaryOperation and type(e.operator) in (cst.Minus, cst.Plus):
        return e.expression
    return e


def _promote(a: Optional[str], b: Optional[str], op) -> Optional[str]:
    """Result dtype category of `a <op> b` for real operands (complex is not modelled):
    true division and anything with a float side is floating point."""
    if op is cst.Divide or "float" in (a, b) or "pyfloat" in (a, b):
        return "float"
    if a is None or b is None:
        return None
    if {a, b} <= {"int", "pyint"} and "int" in (a, b):
        return "int"
    return None


def _literal_dtype(e: cst.BaseExpression) -> Optional[str]:
    e = _strip_sign(e)
    if type(e) is cst.Float:
        return "float"
    if type(e) is cst.Integer:
        return "int"
    if type(e) in (cst.List, cst.Tuple) and e.elements:
        kinds = {_literal_dtype(el.value) for el in e.elements}
        if kinds == {"int"}:
            return "int"
        if kinds <= {"int", "float"}:
            return "float"
    return None


def dtype_kept(model, d: Optional[str], op: str, operands) -> bool:
    """An in-place `op` keeps the tensor's dtype (class `d`) with these operands."""
    if d == "float":  # real operands keep a float tensor floating (complex is not modelled)
        return True
    if d == "int":
        return op in INT_OK and all(
            type(_strip_sign(e)) is cst.Integer or is_none(e)
            or dtype(model, e) == "int" for e in operands
        )
    return False


# ----------------------------------------------------------------- loops
def loop_rebinds_ok(model, loop: cst.CSTNode, name: str) -> bool:
    """Across iterations the value may come from any binding in the loop: each must make
    an owned tensor (and, outside no_grad, from grad-free operands only)."""
    for stmt in _loop_statements(loop):
        if type(stmt) is cst.For and name in bound_names(stmt.target):
            return False
        if type(stmt) is cst.With and any(
            it.asname is not None and name in bound_names(it.asname.name) for it in stmt.items
        ):
            return False
        if type(stmt) in (cst.Assign, cst.AnnAssign):
            targets = [t.target for t in stmt.targets] if type(stmt) is cst.Assign else [stmt.target]
            if not any(name in bound_names(t) for t in targets):
                continue
            if len(targets) != 1 or type(targets[0]) is not cst.Name or stmt.value is None:
                return False
            if not _makes_new(model, stmt.value):
                return False
            if not model.in_no_grad:
                for o in _operands_in(stmt.value):
                    if type(o) is cst.Name:
                        if o.value == name:
                            continue
                        f = _name_fresh(model, o.value)
                        if not (f is not None and f.nograd) and model.lookup(o.value).kind != V.PY:
                            return False
                    elif not nograd(model, o):  # `s.scale`: the attribute, not the object
                        return False
    return True


def _makes_new(model, e: cst.BaseExpression) -> bool:
    if type(e) is cst.BinaryOperation:
        return True
    if type(e) is cst.UnaryOperation and type(e.operator) is cst.Minus:
        return True
    if type(e) is cst.Call:
        if _one_line_factory(model, e) is not None:
            return True
        t = model.torch_name(e.func)
        if t is not None:
            return t in FACTORIES or t in NEW_TENSOR_OPS
        return type(e.func) is cst.Attribute and e.func.attr.value in NEW_TENSOR_OPS
    return False


def _loop_statements(loop: cst.CSTNode):
    """Statements inside a loop, compound ones included, not into nested scopes."""
    out = []

    def walk(block) -> None:
        for stmt in getattr(block, "body", ()):
            if type(stmt) is cst.SimpleStatementLine:
                out.extend(stmt.body)
            elif isinstance(stmt, cst.BaseSmallStatement):
                out.append(stmt)
            elif type(stmt) in (cst.FunctionDef, cst.ClassDef):
                continue
            elif isinstance(stmt, cst.BaseCompoundStatement):
                out.append(stmt)
                walk(getattr(stmt, "body", None))  # a `match` has no body of its own
                for case in getattr(stmt, "cases", ()):
                    walk(case.body)
                orelse = getattr(stmt, "orelse", None)
                while type(orelse) is cst.If:
                    out.append(orelse)
                    walk(orelse.body)
                    orelse = orelse.orelse
                if orelse is not None:
                    walk(orelse.body)
                for h in getattr(stmt, "handlers", ()):
                    walk(h.body)
                final = getattr(stmt, "finalbody", None)
                if final is not None:
                    walk(final.body)

    out.append(loop)
    walk(loop.body)
    return out


def _operands_in(node: cst.CSTNode) -> List[cst.BaseExpression]:
    """The names and attribute chains (`s.scale`) an expression computes with, not the
    functions it calls."""
    out: List[cst.BaseExpression] = []
    todo: List[cst.CSTNode] = [node]
    while todo:
        n = todo.pop()
        if type(n) is cst.Name:
            out.append(n)
        elif type(n) is cst.Attribute and _is_chain(n):
            out.append(n)
        elif type(n) is cst.Call:
            if not _is_chain(n.func):
                todo.append(n.func)
            elif type(n.func) is cst.Attribute:
                todo.append(n.func.value)  # `n.mul(...)`: the receiver computes
            todo.extend(a.value for a in n.args)
        else:
            todo.extend(n.children)
    return out


def _is_chain(e: cst.BaseExpression) -> bool:
    """`a`, `a.b`, `a.b.c`: names and attributes only."""
    while type(e) is cst.Attribute:
        e = e.value
    return type(e) is cst.Name


def bound_names(t: cst.CSTNode) -> Set[str]:
    if type(t) is cst.Name:
        return {t.value}
    if type(t) in (cst.Tuple, cst.List):
        return set().union(*(bound_names(el.value) for el in t.elements)) if t.elements else set()
    if type(t) is cst.StarredElement:
        return bound_names(t.value)
    return set()


# ----------------------------------------------------------------- escapes
SAFE, ESC = 0, 1


class _Escapes:
    """Names whose tensor may be reachable from somewhere else: bound to another name,
    stored in a container or attribute, passed to an unknown function, captured by a
    nested scope, or read through a view (`x[0]`, `x.T`, `x.view(..)`). Making such a
    name's op in-place would change what the other reference sees."""

    def __init__(self, model) -> None:
        self.model = model
        self.out: Set[str] = set()

    def names_in(self, node: cst.CSTNode) -> None:
        if type(node) is cst.Name:
            self.out.add(node.value)
        for c in node.children:
            self.names_in(c)

    def target(self, t: cst.BaseExpression) -> None:
        if type(t) in (cst.Tuple, cst.List):
            for el in t.elements:
                self.target(el.value)
        elif type(t) is cst.StarredElement:
            self.target(t.value)
        elif type(t) is cst.Subscript:  # x[i] = v writes into x: no new reference
            self.scan(t.value, SAFE)
            for el in t.slice:
                self.scan(el.slice, SAFE)
        elif type(t) is cst.Attribute:
            self.scan(t.value, SAFE)

    def scan(self, n: cst.CSTNode, mode: int) -> None:  # noqa: C901 - one case per node type
        if type(n) is cst.Name:
            if mode == ESC:
                self.out.add(n.value)
        elif type(n) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            self.names_in(n)  # closures: anything they mention may be kept
        elif type(n) in (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Del):
            pass
        elif type(n) is cst.Expr:
            self.scan(n.value, SAFE)
        elif type(n) is cst.Assign:
            for t in n.targets:
                self.target(t.target)
            self.scan(n.value, ESC)
        elif type(n) is cst.AugAssign:
            self.target(n.target)
            container = type(n.value) in (cst.List, cst.Tuple, cst.ListComp, cst.Set)
            self.scan(n.value, ESC if container else SAFE)
        elif type(n) is cst.AnnAssign:
            self.target(n.target)
            if n.value is not None:
                self.scan(n.value, ESC)
        elif type(n) is cst.Return:
            if n.value is not None:
                self.scan(n.value, SAFE)
        elif type(n) in (cst.If, cst.While):
            self.scan(n.test, SAFE)
            self.scan(n.body, SAFE)
            if n.orelse is not None:
                self.scan(n.orelse, SAFE)
        elif type(n) is cst.For:
            self.target(n.target)
            self.scan(n.iter, ESC)
            self.scan(n.body, SAFE)
            if n.orelse is not None:
                self.scan(n.orelse, SAFE)
        elif type(n) is cst.With:
            for item in n.items:
                self.scan(item.item, ESC)
                if item.asname is not None:
                    self.target(item.asname.name)
            self.scan(n.body, SAFE)
        elif type(n) is cst.Assert:
            self.scan(n.test, SAFE)
        elif type(n) is cst.Attribute:
            self.scan(n.value, SAFE if n.attr.value in L.HOST_ATTRS else ESC)
        elif type(n) is cst.Call:
            self.call(n, mode)
        elif type(n) in (cst.BinaryOperation,):
            self.scan(n.left, SAFE)
            self.scan(n.right, SAFE)
        elif type(n) is cst.UnaryOperation:
            self.scan(n.expression, SAFE)
        elif type(n) is cst.Comparison:
            self.scan(n.left, SAFE)
            for c in n.comparisons:
                self.scan(c.comparator, SAFE)
        elif type(n) is cst.BooleanOperation:  # `a or b` is one of them
            self.scan(n.left, mode)
            self.scan(n.right, mode)
        elif type(n) is cst.IfExp:
            self.scan(n.test, SAFE)
            self.scan(n.body, mode)
            self.scan(n.orelse, mode)
        elif type(n) is cst.Subscript:  # a view of the value
            self.scan(n.value, mode)
            for el in n.slice:
                self.scan(el.slice, SAFE)
        elif type(n) in (cst.List, cst.Tuple, cst.Set):
            for el in n.elements:
                self.scan(el.value, mode)
        elif type(n) is cst.Dict:
            for el in n.elements:
                if type(el) is cst.DictElement:
                    self.scan(el.key, mode)
                self.scan(el.value, mode)
        elif type(n) in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            comp = n.for_in
            while comp is not None:
                self.target(comp.target)
                self.scan(comp.iter, ESC)
                for cond in comp.ifs:
                    self.scan(cond.test, SAFE)
                comp = comp.inner_for_in
            if type(n) is cst.DictComp:
                self.scan(n.key, mode)
                self.scan(n.value, mode)
            else:
                self.scan(n.elt, mode)
        elif type(n) is cst.FormattedStringExpression:
            self.scan(n.expression, SAFE)
        else:
            for c in n.children:
                self.scan(c, ESC)

    def call(self, n: cst.Call, mode: int) -> None:
        func = n.func
        args_mode = ESC
        if type(func) is cst.Attribute:
            m = func.attr.value
            if m in SAFE_METHODS:
                recv_mode = SAFE
            elif m.endswith("_") and not m.startswith("_"):
                recv_mode = mode  # an in-place method returns its receiver
            else:
                recv_mode = ESC
            self.scan(func.value, recv_mode)
            if m in NEW_TENSOR_OPS or (m.endswith("_") and (m[:-1] in NEW_TENSOR_OPS or m in (
                    "copy_", "fill_", "index_add_", "index_copy_", "index_put_", "scatter_",
                    "scatter_add_", "masked_scatter_", "masked_fill_"))):
                args_mode = SAFE
        else:
            q = self.model.qualname(func) or ""
            last = q.rsplit(".", 1)[-1]
            inplace = kwarg(n, "inplace")
            if (q.startswith("torch.") and last in NEW_TENSOR_OPS and kwarg(n, "out") is None
                    and not (type(inplace) is cst.Name and inplace.value == "True")):
                args_mode = SAFE
            elif type(func) is cst.Name and func.value in SAFE_BUILTINS and not q:
                args_mode = SAFE
            if type(func) is not cst.Name:
                self.scan(func, SAFE)
        for a in n.args:
            self.scan(a.value, args_mode)


def escaped_names(model, root: cst.CSTNode) -> Set[str]:
    """The names of `root`'s body (a function, a class or the module) that escape."""
    scan = _Escapes(model)
    body = root.body if type(root) in (cst.FunctionDef, cst.ClassDef) else root
    for c in (body.children if isinstance(body, cst.CSTNode) else body):
        scan.scan(c, SAFE)
    return scan.out
