"""Helpers for the host-to-device (SYN3xx) and explicit-sync (SYN4xx) rules.

`Bindings` remembers, per function, the expression each plain name was last assigned, so a
rule can ask syntactic questions the abstract value cannot answer: is this index an integer
tensor (`ids = mask.nonzero().squeeze(1)`), a NumPy array (`perm = np.random.permutation(n)`),
a Python int (`for i in range(n)`)? It follows source order, like the context's inference.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic import SemanticModel as FileContext
from synclint.semantic.library import DETERMINISTIC_FACTORIES
from synclint.semantic.syntax import is_true, kwarg
from synclint.rules._helpers import method_call, receiver

INT = object()  # a name known to hold a Python int (a range() loop variable, an enumerate counter)

# torch factories that take sizes (not data): the device can move into the call.
SIZE_FACTORIES = {
    "zeros", "ones", "empty", "full", "arange", "eye", "linspace", "logspace", "tril_indices",
    "triu_indices", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like",
}
DATA_FACTORIES = {"tensor", "as_tensor", "asarray"}
# Methods that keep values and can run on either device: a factory seen through them.
CAST_OR_VIEW = {"float", "double", "half", "bfloat16", "long", "int", "short", "bool",
                "view", "reshape", "unsqueeze", "squeeze", "flatten", "fill_", "zero_"}
# In-place samplers: `torch.empty(n).uniform_()` moved into the factory draws other numbers.
RANDOM_INPLACE = {"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "geometric_",
                  "cauchy_", "log_normal_"}
# Legacy typed constructors: `torch.LongTensor([0, 1])` builds from host data like torch.tensor.
LEGACY_CTORS = {"Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor"}


class Binding:
    """What a name was last assigned (an expression, INT or None) and the binding before it."""

    __slots__ = ("value", "prev")

    def __init__(self, value, prev: Optional["Binding"]) -> None:
        self.value = value
        self.prev = prev


class Bindings:
    """Mixin: `self.binding(name)` -> the Binding of `name` in scope (function, then module)."""

    def _scopes(self) -> List[Optional[int]]:
        stack = self.__dict__.setdefault("_fn_stack", [])
        return [id(f) for f in reversed(stack)] + [None]

    def _record(self, target: cst.BaseExpression, value) -> None:
        if isinstance(target, cst.Name):
            table: Dict[Tuple[Optional[int], str], Binding] = self.__dict__.setdefault("_bound", {})
            key = (self._scopes()[0], target.value)
            table[key] = Binding(value, table.get(key))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._record(el.value, None)
        elif isinstance(target, cst.StarredElement):
            self._record(target.value, None)

    def binding(self, name: str) -> Optional[Binding]:
        for over in reversed(self.__dict__.get("_over", ())):
            if name in over:
                return over[name]
        table = self.__dict__.get("_bound", {})
        stack = self.__dict__.get("_fn_stack", [])
        for depth, key in enumerate(self._scopes()):
            b = table.get((key, name))
            if b is not None:
                return b
            if key is not None and name in _param_names(stack[len(stack) - 1 - depth]):
                return None
        return None

    def bound(self, name: str):
        b = self.binding(name)
        return None if b is None else b.value

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.__dict__.setdefault("_fn_stack", []).append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.__dict__["_fn_stack"].pop()

    # Recorded on leave: while the right-hand side is walked, the old binding still holds.
    def leave_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._record(t.target, node.value if len(node.targets) == 1 else None)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._record(node.target, node.value)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._record(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._record_loop(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._record_loop(node.target, node.iter)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._record(node.asname.name, None)

    def _record_loop(self, target: cst.BaseExpression, it: cst.BaseExpression) -> None:
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name):
            if it.func.value == "range" and isinstance(target, cst.Name):
                self._record(target, INT)
                return
            if it.func.value == "enumerate" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self._record(target.elements[0].value, INT)
                self._record(target.elements[1].value, None)
                return
        self._record(target, None)


def follow(rule: Bindings, name: cst.Name, fn, on_int=False, on_unknown=False):
    """fn(expression assigned to `name`), where `name` itself means its previous binding
    (`x = x[0]` reads the x before it). INT / unknown bindings give `on_int` / `on_unknown`."""
    b = rule.binding(name.value)
    if b is None or b.value is None:
        return on_unknown
    if b.value is INT:
        return on_int
    over = rule.__dict__.setdefault("_over", [])
    if len(over) > 12:
        return on_unknown
    over.append({name.value: b.prev})
    try:
        return fn(b.value)
    finally:
        over.pop()


def _param_names(fn: cst.FunctionDef) -> set:
    p = fn.params
    names = {x.name.value for x in list(p.posonly_params) + list(p.params) + list(p.kwonly_params)}
    if isinstance(p.star_arg, cst.Param):
        names.add(p.star_arg.name.value)
    if p.star_kwarg is not None:
        names.add(p.star_kwarg.name.value)
    return names


def resolve(rule: Bindings, e: cst.BaseExpression, depth: int = 0):
    """Follow plain names to the expression they were assigned (or INT / None)."""
    seen = set()
    while isinstance(e, cst.Name) and depth < 8:
        if e.value in seen:
            return None
        seen.add(e.value)
        b = rule.bound(e.value)
        if b is None or b is INT:
            return b
        e = b
        depth += 1
    return e if not isinstance(e, cst.Name) else None


# ----------------------------------------------------------------- Python ints and scalars
_INT_BUILTINS = {"len", "int", "round", "abs", "min", "max", "sum", "ord"}


def is_int_expr(rule: Bindings, ctx: FileContext, e: cst.BaseExpression, depth: int = 0) -> bool:
    """A Python int for sure: literals, range() loop variables, len(...), x.size(0), x.shape[0]."""
    if depth > 8:
        return False
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        return is_int_expr(rule, ctx, e.expression, depth + 1)
    if isinstance(e, cst.Integer):
        return True
    if isinstance(e, cst.Name):
        if e.value in ("True", "False", "None"):
            return False
        return follow(rule, e, lambda r: is_int_expr(rule, ctx, r, depth + 1), on_int=True)
    if isinstance(e, cst.BinaryOperation) and isinstance(
        e.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
    ):
        return is_int_expr(rule, ctx, e.left, depth + 1) and is_int_expr(rule, ctx, e.right, depth + 1)
    if isinstance(e, cst.Call):
        if isinstance(e.func, cst.Name) and e.func.value in _INT_BUILTINS and e.func.value not in ctx.aliases:
            if e.func.value in ("min", "max", "sum", "abs", "round"):
                return all(is_int_expr(rule, ctx, a.value, depth + 1) for a in e.args) and bool(e.args)
            return True
        m = method_call(e, ("size", "numel", "dim", "nelement", "stride"))
        if m and ctx.is_tensor(receiver(e)) and (m != "size" and m != "stride" or e.args):
            return True
    if isinstance(e, cst.Subscript) and isinstance(e.value, cst.Attribute) and e.value.attr.value == "shape":
        return len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index) and ctx.is_tensor(e.value.value)
    return False


def side_effect_free(e: cst.BaseExpression) -> bool:
    """Literals, names, attributes and arithmetic of them: safe to evaluate in another order."""
    if isinstance(e, (cst.Integer, cst.Float, cst.Name, cst.SimpleString)):
        return True
    if isinstance(e, cst.Attribute):
        return side_effect_free(e.value)
    if isinstance(e, cst.UnaryOperation):
        return side_effect_free(e.expression)
    if isinstance(e, cst.BinaryOperation):
        return side_effect_free(e.left) and side_effect_free(e.right)
    return False


def is_host_number(ctx: FileContext, e: cst.BaseExpression) -> bool:
    """A Python number or bool (what `x[i] = v` turns into a CPU scalar tensor)."""
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        e = e.expression
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.Name) and e.value in ("True", "False"):
        return True
    if isinstance(e, (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.SimpleString, cst.ConcatenatedString,
                      cst.FormattedString, cst.ListComp, cst.Lambda)):
        return False
    if isinstance(e, cst.Name) and e.value == "None":
        return False
    if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value in ("float", "int", "bool"):
        return e.func.value not in ctx.aliases
    return ctx.infer(e).kind == V.PY


# ----------------------------------------------------------------- integer index tensors
_INT_TORCH = {"nonzero", "argwhere", "argsort", "argmax", "argmin", "randperm", "randint", "multinomial",
              "searchsorted", "bucketize", "nonzero_static", "tril_indices", "triu_indices"}
_INT_METHODS = {"nonzero", "argsort", "argmax", "argmin", "long", "int", "multinomial", "nonzero_static"}
_KEEP_INT_METHODS = {"squeeze", "unsqueeze", "view", "reshape", "flatten", "flip", "contiguous", "clone",
                     "detach", "cuda", "to", "repeat", "t", "roll", "narrow", "expand", "sort", "unique"}
_INDEX_RESULTS = {"topk", "sort", "max", "min", "mode", "kthvalue", "median", "cummax", "cummin"}
_INT_DTYPES = {"long", "int64", "int", "int32", "int16", "int8", "uint8", "short"}


def _dtype_is_int(ctx: FileContext, e: Optional[cst.BaseExpression]) -> Optional[bool]:
    if e is None:
        return None
    tn = ctx.torch_name(e)
    if tn is None:
        return None
    return tn in _INT_DTYPES


def is_int_index(rule: Bindings, ctx: FileContext, e: cst.BaseExpression, depth: int = 0) -> bool:
    """Positive evidence that `e` is an integer (not bool) index tensor."""
    if depth > 10:
        return False
    if isinstance(e, cst.Name):
        return follow(rule, e, lambda r: is_int_index(rule, ctx, r, depth + 1))
    if isinstance(e, cst.Subscript):
        base = e.value
        # torch.where(m)[0], m.nonzero(as_tuple=True)[0], x.topk(k)[1]
        if isinstance(base, cst.Call):
            tn = ctx.torch_name(base.func)
            m = method_call(base, ("nonzero", "topk", "sort", "max", "min", "mode", "kthvalue", "median"))
            if tn == "where" and len(base.args) == 1:
                return True
            if (tn == "nonzero" or m == "nonzero") and is_true(kwarg(base, "as_tuple")):
                return True
            name = m or (tn.rsplit(".", 1)[-1] if tn else None)
            if name in _INDEX_RESULTS and len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index):
                idx = e.slice[0].slice.value
                return isinstance(idx, cst.Integer) and idx.value == "1"
        if all(isinstance(s.slice, cst.Slice) for s in e.slice):
            return is_int_index(rule, ctx, base, depth + 1)
        return False
    if isinstance(e, cst.Attribute) and e.attr.value == "indices":
        return True  # x.topk(k).indices, x.sort().indices, x.max(dim).indices
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract, cst.Modulo, cst.FloorDivide)):
        li, ri = is_int_index(rule, ctx, e.left, depth + 1), is_int_index(rule, ctx, e.right, depth + 1)
        return (li and (ri or is_int_expr(rule, ctx, e.right))) or (ri and is_int_expr(rule, ctx, e.left))
    if not isinstance(e, cst.Call):
        return False
    tn = ctx.torch_name(e.func)
    if tn is not None:
        if tn in _INT_TORCH:
            return not (tn == "nonzero" and is_true(kwarg(e, "as_tuple")))
        if tn == "arange":
            dt = _dtype_is_int(ctx, kwarg(e, "dtype"))
            if dt is not None:
                return dt
            return all(not isinstance(a.value, cst.Float) for a in e.args if a.keyword is None)
        if tn in DATA_FACTORIES and e.args and e.args[0].keyword is None:
            dt = _dtype_is_int(ctx, kwarg(e, "dtype"))
            if dt is not None:
                return dt
            data = e.args[0].value
            return isinstance(data, (cst.List, cst.Tuple)) and bool(data.elements) and all(
                isinstance(el.value, cst.Integer) for el in data.elements
            )
        return False
    if not isinstance(e.func, cst.Attribute):
        return False
    m = e.func.attr.value
    if m in _INT_METHODS:
        return not (m == "nonzero" and is_true(kwarg(e, "as_tuple")))
    if m in ("to", "type"):
        dt = kwarg(e, "dtype")
        if dt is None:
            pos = [a.value for a in e.args if a.keyword is None]
            dt = next((a for a in pos if ctx.torch_name(a) is not None), None)
        if _dtype_is_int(ctx, dt):
            return True
    if m in _KEEP_INT_METHODS:
        return is_int_index(rule, ctx, e.func.value, depth + 1)
    return False


# ----------------------------------------------------------------- NumPy index arrays
_NP_ARRAYS = {"arange", "flatnonzero", "argsort", "concatenate", "unique", "sort", "random.permutation"}


def is_numpy_array(rule: Bindings, ctx: FileContext, e: cst.BaseExpression, depth: int = 0) -> bool:
    """Evidence that `e` is a NumPy *array* (a NumPy integer scalar indexes like an int)."""
    if depth > 8:
        return False
    if isinstance(e, cst.Name):
        return follow(rule, e, lambda r: is_numpy_array(rule, ctx, r, depth + 1))
    if isinstance(e, cst.Subscript):
        base = e.value
        if all(isinstance(s.slice, cst.Slice) for s in e.slice):
            return is_numpy_array(rule, ctx, base, depth + 1)
        # np.where(m)[0] / np.nonzero(m)[0]
        if isinstance(base, cst.Call):
            q = ctx.qualname(base.func) or ""
            if q in ("numpy.nonzero", "numpy.where") and len(base.args) == 1:
                return True
        return False
    if not isinstance(e, cst.Call):
        return False
    q = ctx.qualname(e.func)
    pos = [a for a in e.args if a.keyword is None]
    if q is not None and q.startswith("numpy."):
        name = q[6:]
        if name in _NP_ARRAYS:
            return True
        if name in ("array", "asarray") and pos:
            d = pos[0].value
            return isinstance(d, (cst.List, cst.ListComp)) or is_numpy_array(rule, ctx, d, depth + 1)
        if name in ("random.choice", "random.randint"):
            need = 2 if name == "random.choice" else 3
            return len(pos) >= need or kwarg(e, "size") is not None
        return False
    if isinstance(e.func, cst.Attribute) and ctx.infer(e.func.value).kind == V.NUMPY:
        m = e.func.attr.value
        if m in ("permutation", "astype", "copy", "ravel", "flatten", "reshape"):
            return m == "permutation" or is_numpy_array(rule, ctx, e.func.value, depth + 1)
        if m in ("choice", "integers"):
            return len(pos) >= (2 if m == "choice" else 3) or kwarg(e, "size") is not None
    return False


# ----------------------------------------------------------------- moves to the GPU
class Move:
    """A `.to(...)`/`.cuda(...)` call that moves its receiver to a (possibly) GPU device."""

    def __init__(self, call: cst.Call, method: str, device: Optional[cst.BaseExpression],
                 device_is_tensor: bool, dtype: Optional[cst.BaseExpression], non_blocking: Optional[bool],
                 extra: bool) -> None:
        self.call = call
        self.method = method
        self.device = device  # None: `.cuda()` without argument
        self.device_is_tensor = device_is_tensor  # `.to(other)`: dtype changes too
        self.dtype = dtype
        self.non_blocking = non_blocking  # True / False (absent or literal False) / None (not a literal)
        self.extra = extra  # copy=, memory_format= or other arguments
        self.nb_given = False  # non_blocking passed at all (keyword or positional)


def gpu_move(ctx: FileContext, call: cst.Call) -> Optional[Move]:
    """The move if `call` is `x.to(<GPU device>, ...)` or `x.cuda(...)`, else None."""
    m = method_call(call, ("to", "cuda"))
    if m is None or ctx.cuda_less_depth:
        return None
    pos = [a.value for a in call.args if a.keyword is None and not a.star]
    if any(a.star for a in call.args):
        return None
    kws = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    nb_expr = kws.get("non_blocking")
    if m == "cuda":
        if len(pos) > 2 or set(kws) - {"device", "non_blocking", "memory_format"}:
            return None
        dev = kws.get("device", pos[0] if pos else None)
        if nb_expr is None and len(pos) == 2:
            nb_expr = pos[1]
        if dev is not None:
            is_dev, d = ctx.device_of_arg(dev)
            if is_dev and d == V.CPU:
                return None
        move = Move(call, m, dev, False, None, _nb(nb_expr), "memory_format" in kws)
        move.nb_given = nb_expr is not None
        return move
    dev = kws.get("device")
    rest = pos
    if dev is None and pos:
        dev, rest = pos[0], pos[1:]
    if dev is None:
        return None
    is_dev, d = ctx.device_of_arg(dev)
    if not is_dev or d == V.CPU:
        return None
    dev_is_tensor = ctx.infer(dev).kind == V.TENSOR
    dtype = kws.get("dtype")
    extra = bool(set(kws) - {"device", "dtype", "non_blocking"})
    if rest:
        if dtype is None and ctx.torch_name(rest[0]) is not None and not ctx.device_of_arg(rest[0])[0]:
            dtype, rest = rest[0], rest[1:]
        if rest and nb_expr is None:
            nb_expr, rest = rest[0], rest[1:]
        extra = extra or bool(rest)
    move = Move(call, m, dev, dev_is_tensor, dtype, _nb(nb_expr), extra)
    move.nb_given = nb_expr is not None
    return move


def _nb(e: Optional[cst.BaseExpression]) -> Optional[bool]:
    if e is None:
        return False
    if isinstance(e, cst.Name) and e.value in ("True", "False"):
        return e.value == "True"
    return None


def factory_under(ctx: FileContext, e: cst.BaseExpression) -> Optional[Tuple[cst.Call, str, bool]]:
    """(factory call, torch name, seen through casts/views) for `torch.zeros(n).long().view(...)`.

    The name is "tensor" for a legacy constructor of data (`torch.LongTensor([0])`), and gets a
    "~random" suffix when an in-place sampler sits in between (`torch.empty(n).normal_()`)."""
    through = False
    random = False
    while isinstance(e, cst.Call):
        tn = ctx.torch_name(e.func)
        if tn is not None:
            if tn in LEGACY_CTORS and e.args and isinstance(e.args[0].value, (cst.List, cst.Tuple, cst.ListComp)):
                tn = "tensor"
            if tn not in SIZE_FACTORIES and tn not in DATA_FACTORIES:
                return None
            return e, tn + ("~random" if random else ""), through
        m = method_call(e, CAST_OR_VIEW | RANDOM_INPLACE | {"to"})
        if m is None:
            return None
        if m == "to" and not _dtype_only_to(ctx, e):
            return None
        random = random or m in RANDOM_INPLACE
        e = receiver(e)
        through = True
    return None


def _dtype_only_to(ctx: FileContext, call: cst.Call) -> bool:
    kws = {a.keyword.value for a in call.args if a.keyword is not None}
    pos = [a.value for a in call.args if a.keyword is None]
    if kws - {"dtype"} or len(pos) > 1:
        return False
    return all(ctx.torch_name(p) is not None and not ctx.device_of_arg(p)[0] for p in pos) and bool(pos or kws)


def is_deterministic_factory(name: str) -> bool:
    return name in DETERMINISTIC_FACTORIES


def host_data(ctx: FileContext, data: cst.BaseExpression, strict: bool) -> bool:
    """Is `data` (of torch.tensor / as_tensor) host data whose copy to the GPU blocks?

    `strict`: unknown values do not count (as_tensor of a GPU tensor is free)."""
    if isinstance(data, (cst.List, cst.Tuple, cst.ListComp, cst.Integer, cst.Float, cst.GeneratorExp)):
        v = ctx.infer(data)
        return not (v.kind == V.TENSORS and v.device != V.CPU)
    if isinstance(data, cst.UnaryOperation):
        return host_data(ctx, data.expression, strict)
    v = ctx.infer(data)
    if v.kind in (V.PY, V.NUMPY):
        return True
    if v.kind in (V.TENSOR, V.TENSORS):
        return v.device == V.CPU
    return v.kind == V.UNKNOWN and not strict


def with_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended (or its value replaced)."""
    args = list(call.args)
    for i, a in enumerate(args):
        if a.keyword is not None and a.keyword.value == name:
            args[i] = a.with_changes(value=value)
            return call.with_changes(args=args)
    if args and isinstance(args[-1].comma, cst.Comma):  # a trailing comma: keep the layout
        last = args[-1]
        ws = last.comma.whitespace_after
        if isinstance(ws, cst.SimpleWhitespace) and ws.value == "":
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
    no_space = cst.SimpleWhitespace("")
    args.append(cst.Arg(value=value, keyword=cst.Name(name),
                        equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space)))
    return call.with_changes(args=args)


class D2HTracker:
    """Mixin for SYN4xx: remembers functions that started a non-blocking device-to-host copy,
    after which a synchronize is *required* before the host reads the result."""

    def _fn_key(self):
        stack = self.__dict__.get("_fn_stack", [])
        return id(stack[-1]) if stack else None

    def note_d2h(self, node: cst.Call) -> None:
        ctx: FileContext = self.ctx
        m = method_call(node, ("to", "copy_"))
        if m is None or not is_true(kwarg(node, "non_blocking")):
            return
        if m == "to":
            args = [a.value for a in node.args if a.keyword is None]
            dev = kwarg(node, "device") or (args[0] if args else None)
            is_dev, d = ctx.device_of_arg(dev)
            if not (is_dev and d == V.CPU):
                return
        else:
            dst = ctx.infer(receiver(node))
            if not (dst.kind == V.TENSOR and dst.device == V.CPU):
                return
        self.__dict__.setdefault("_d2h", set()).add(self._fn_key())

    def after_d2h(self) -> bool:
        return self._fn_key() in self.__dict__.get("_d2h", set())
