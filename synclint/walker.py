"""One traversal per file: keep the FileContext current and dispatch to every rule.

LibCST's own visitor rebuilds children as it goes and costs about as much as the parse;
walking the dataclass fields directly is more than ten times cheaper (measured on the
lightning sources), so the walker does that and calls `visit_<Type>` / `leave_<Type>` of
all enabled rules in the same pass (the batched-visitor idea without its overhead).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Callable, Dict, List, Sequence, Tuple

import libcst as cst

from synclint import values as V
from synclint.context import (
    NO_GRAD_CONTEXTS,
    TIMING_NAMES,
    BATCH_PARAM_NAMES,
    ClassInfo,
    FileContext,
    FuncInfo,
    MODULE_BASE_NAMES,
    MODULE_SUFFIXES,
    hot_name,
    string_value,
)
from synclint.values import Val

_SKIP_TYPES = (
    cst.BaseParenthesizableWhitespace, cst.Comma, cst.Dot, cst.LeftParen, cst.RightParen,
    cst.Newline, cst.EmptyLine, cst.TrailingWhitespace, cst.Semicolon, cst.Colon,
    cst.AssignEqual, cst.Comment, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.BaseBinaryOp, cst.BaseBooleanOp,
    cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp, cst.ImportStar, cst.Asynchronous,
)
_SKIP_FIELDS = {"leading_lines", "lines_after_decorators", "header", "footer", "whitespace",
                "lpar", "rpar", "comma", "semicolon", "trailing_whitespace", "default_newline",
                "default_indent", "encoding", "has_trailing_newline", "indent", "newline"}
_fields_cache: Dict[type, Tuple[str, ...]] = {}
_STMT_TYPES = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
# Decided once per concrete type: isinstance() against LibCST's abstract base classes goes
# through ABCMeta.__instancecheck__, which was about a sixth of the whole lint time.
_SKIP, _NODE, _SEQ = 0, 1, 2
_kind_cache: Dict[type, int] = {}
_stmt_cache: Dict[type, bool] = {}


def _kind(t: type) -> int:
    """What walk_field does with a value of type t: skip it, walk it, or walk its items."""
    k = _kind_cache.get(t)
    if k is None:
        if issubclass(t, cst.CSTNode):
            k = _SKIP if issubclass(t, _SKIP_TYPES) else _NODE
        else:
            k = _SEQ if issubclass(t, (tuple, list)) else _SKIP
        _kind_cache[t] = k
    return k


def _is_stmt(t: type) -> bool:
    s = _stmt_cache.get(t)
    if s is None:
        s = _stmt_cache[t] = issubclass(t, _STMT_TYPES)
    return s


def _fields(t: type) -> Tuple[str, ...]:
    names = _fields_cache.get(t)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(t)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _fields_cache[t] = names
    return names


_dispatch_cache: Dict[type, Tuple[Tuple[str, str], ...]] = {}


def _rule_methods(rule_cls: type) -> Tuple[Tuple[str, str], ...]:
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
    def __init__(self, ctx: FileContext, rules: Sequence[object]) -> None:
        self.ctx = ctx
        self.visit: Dict[str, List[Callable]] = defaultdict(list)
        self.leave: Dict[str, List[Callable]] = defaultdict(list)
        for rule in rules:
            for kind, tname in _rule_methods(type(rule)):
                table = self.visit if kind == "visit" else self.leave
                table[tname].append(getattr(rule, f"{kind}_{tname}"))
        self.special = {
            cst.Import: self._import, cst.ImportFrom: self._import,
            cst.FunctionDef: self._function, cst.ClassDef: self._class,
            cst.For: self._for, cst.While: self._while,
            cst.ListComp: self._comp, cst.SetComp: self._comp,
            cst.GeneratorExp: self._comp, cst.DictComp: self._comp,
            cst.With: self._with, cst.If: self._if,
            cst.Assign: self._assign, cst.AnnAssign: self._annassign,
            cst.AugAssign: self._augassign, cst.Expr: self._expr,
            cst.Return: self._return, cst.Call: self._call,
        }

    # ------------------------------------------------------------- traversal
    def walk(self, node: cst.CSTNode) -> None:
        t = type(node)
        ctx = self.ctx
        is_stmt = _is_stmt(t)
        if is_stmt:
            ctx.stmt_index += 1
            ctx.stmt_stack.append(node)
        name = t.__name__
        for fn in self.visit.get(name, ()):
            fn(node)
        special = self.special.get(t)
        if special is not None:
            special(node)
        else:
            self.children(node)
        for fn in self.leave.get(name, ()):
            fn(node)
        if is_stmt:
            ctx.stmt_stack.pop()

    def children(self, node: cst.CSTNode) -> None:
        for fname in _fields(type(node)):
            self.walk_field(getattr(node, fname))

    def walk_field(self, v) -> None:
        k = _kind(type(v))
        if k == _NODE:
            self.walk(v)
        elif k == _SEQ:
            for c in v:
                if _kind(type(c)) == _NODE:
                    self.walk(c)

    # ------------------------------------------------------------- handlers
    def _import(self, node) -> None:
        self.ctx.add_import(node)

    def _function(self, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        for d in node.decorators:
            self.walk(d)
        for p in _all_params(node.params):
            if p.default is not None:
                self.walk(p.default)
        # A method: directly in a class body (class bodies start with no function scope).
        cls = ctx.cls if ctx.func is None else None
        qual = f"{cls.name}.{node.name.value}" if cls else node.name.value
        info = FuncInfo(name=node.name.value, qual=qual, cls=cls)
        info.no_grad = any(_decorator_is_no_grad(ctx, d.decorator) for d in node.decorators)
        self._bind_params(info, node)
        ctx._all_funcs.add(qual)
        saved = (ctx.loop_depth, ctx.guard_depth)
        ctx.loop_depth = 0
        ctx.guard_depth = 0
        ctx.funcs.append(info)
        if info.no_grad:
            ctx.no_grad_depth += 1
        self.walk_field(node.body)
        if info.no_grad:
            ctx.no_grad_depth -= 1
        ctx.funcs.pop()
        ctx.loop_depth, ctx.guard_depth = saved
        if info.timing:
            ctx.timing_funcs.add(qual)
        ret = info.returns
        if ret is None and node.returns is not None:
            ret = _annotation_val(ctx, node.returns.annotation)
        if ret is not None:
            ctx.func_returns[node.name.value] = ret

    def _bind_params(self, info: FuncInfo, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        params = _all_params(node.params)
        is_method = info.cls is not None
        forward_like = info.name in ("forward", "__call__") and (not is_method or info.cls.is_module) or (
            info.name == "forward"
        )
        step_like = hot_name(info.name) and info.name.endswith("_step")
        for i, p in enumerate(params):
            pname = p.name.value
            val = None
            if p.annotation is not None:
                # An annotation we cannot read (Tuple[int, int], a user type) is still not a
                # tensor by default: trust the author over the forward() heuristic.
                val = _annotation_val(ctx, p.annotation.annotation) or V.UNKNOWN_VAL
            if val is None:
                if i == 0 and is_method and pname == "self":
                    val = Val(V.MODULE) if info.cls.is_module else V.UNKNOWN_VAL
                elif forward_like and not (i == 0 and is_method):
                    val = V.PY_VAL if p.default is not None and not isinstance(p.default, cst.Name) else V.tensor(None)
                    if isinstance(p.default, cst.Name) and p.default.value == "None":
                        val = V.tensor(None)
                    if val.kind == V.TENSOR:
                        info.assumed[pname] = val
                elif step_like and not (i == 0 and is_method):
                    if pname in BATCH_PARAM_NAMES or "batch" in pname and not pname.endswith(("idx", "size")):
                        val = Val(V.TENSORS, None)
                    elif pname.endswith("idx"):
                        val = V.PY_VAL
            if val is not None:
                info.scope[pname] = val

    def _class(self, node: cst.ClassDef) -> None:
        ctx = self.ctx
        for d in node.decorators:
            self.walk(d)
        for b in node.bases:
            self.walk(b.value)
        is_module = any(_is_module_base(ctx, b.value) for b in node.bases)
        if is_module:
            ctx.module_classes.add(node.name.value)
        else:
            ctx.plain_classes.add(node.name.value)
        ctx.classes.append(ClassInfo(node.name.value, is_module))
        saved_funcs = ctx.funcs
        ctx.funcs = []  # class bodies do not see enclosing function scopes
        self.walk_field(node.body)
        ctx.funcs = saved_funcs
        ctx.classes.pop()

    def _for(self, node: cst.For) -> None:
        ctx = self.ctx
        self.walk(node.iter)
        _bind_loop_target(ctx, node.target, node.iter)
        self.walk(node.target)
        ctx.loop_depth += 1
        self.walk_field(node.body)
        ctx.loop_depth -= 1
        if node.orelse is not None:
            self.walk(node.orelse)

    def _while(self, node: cst.While) -> None:
        ctx = self.ctx
        ctx.loop_depth += 1
        self.walk(node.test)
        self.walk_field(node.body)
        ctx.loop_depth -= 1
        if node.orelse is not None:
            self.walk(node.orelse)

    def _comp(self, node) -> None:
        ctx = self.ctx
        comp = node.for_in
        self.walk(comp.iter)  # the outermost iterable is evaluated once
        ctx.loop_depth += 1
        first = True
        while comp is not None:
            if not first:
                self.walk(comp.iter)
            first = False
            _bind_loop_target(ctx, comp.target, comp.iter)
            for cond in comp.ifs:
                self.walk(cond)  # dispatches visit_CompIf, then walks its test
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            self.walk(node.key)
            self.walk(node.value)
        else:
            self.walk(node.elt)
        ctx.loop_depth -= 1

    def _with(self, node: cst.With) -> None:
        ctx = self.ctx
        no_grad = 0
        for item in node.items:
            self.walk(item.item)
            if isinstance(item.item, cst.Call) and ctx.qualname(item.item.func) in NO_GRAD_CONTEXTS:
                if not (item.item.args and string_value(item.item.args[0].value) is None
                        and isinstance(item.item.args[0].value, cst.Name)
                        and item.item.args[0].value.value == "False"):
                    no_grad += 1
            if item.asname is not None:
                ctx.bind_target(item.asname.name, ctx.infer(item.item))
        ctx.no_grad_depth += no_grad
        self.walk_field(node.body)
        ctx.no_grad_depth -= no_grad

    def _if(self, node: cst.If) -> None:
        ctx = self.ctx
        self.walk(node.test)
        kind = _classify_test(ctx, node.test)
        body_flags = orelse_flags = (0, 0)
        if kind == "cpu-body":
            body_flags = (1, 0)
        elif kind == "cpu-else":
            orelse_flags = (1, 0)
        elif kind == "guard" or _lazy_init(node):
            body_flags = (0, 1)
        self._with_flags(body_flags, node.body)
        if node.orelse is not None:
            self._with_flags(orelse_flags, node.orelse)

    def _with_flags(self, flags, node) -> None:
        ctx = self.ctx
        ctx.cuda_less_depth += flags[0]
        ctx.guard_depth += flags[1]
        self.walk(node)
        ctx.cuda_less_depth -= flags[0]
        ctx.guard_depth -= flags[1]

    def _assign(self, node: cst.Assign) -> None:
        self.walk(node.value)
        for t in node.targets:
            self.walk(t.target)
        val = self.ctx.infer(node.value)
        for t in node.targets:
            self.ctx.bind_target(t.target, val)

    def _annassign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.walk(node.value)
        self.walk(node.target)
        val = self.ctx.infer(node.value) if node.value is not None else None
        if val is None or val.kind == V.UNKNOWN:
            val = _annotation_val(self.ctx, node.annotation.annotation) or val
        if val is not None:
            self.ctx.bind_target(node.target, val)

    def _augassign(self, node: cst.AugAssign) -> None:
        self.walk(node.value)
        self.walk(node.target)
        ctx = self.ctx
        if isinstance(node.target, (cst.Name, cst.Attribute)):
            old = ctx.infer(node.target)
            new = ctx._combine([old, ctx.infer(node.value)])
            if new.kind == V.TENSOR and old.kind != V.TENSOR:
                ctx.bind_target(node.target, new)

    def _expr(self, node: cst.Expr) -> None:
        self.walk(node.value)
        ctx = self.ctx
        call = node.value
        if isinstance(call, cst.Call):
            tn = ctx.torch_name(call.func)
            if tn == "set_default_device" and call.args:
                is_dev, dev = ctx.device_of_arg(call.args[0].value)
                if is_dev:
                    ctx.default_device = dev or V.CUDA
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda", "cpu"):
                recv = call.func.value
                if isinstance(recv, (cst.Name, cst.Attribute)) and ctx.infer(recv).kind == V.MODULE:
                    ctx.bind_target(recv, ctx.infer(call))

    def _return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        self.walk(node.value)
        f = self.ctx.func
        if f is not None:
            v = self.ctx.infer(node.value)
            if f.returns is None or v.kind in (V.TENSOR, V.TENSORS):
                f.returns = v

    def _call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        f = ctx.func
        timing = False
        if isinstance(func, cst.Name):
            ctx.calls.append((f.qual if f else None, func.value, ctx.site_hot()))
            timing = ctx.qualname(func) in TIMING_NAMES  # from time import perf_counter
        elif isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value == "self" and ctx.cls is not None:
                ctx.calls.append((f.qual if f else None, f"{ctx.cls.name}.{func.attr.value}", ctx.site_hot()))
            timing = func.attr.value == "elapsed_time" or ctx.qualname(func) in TIMING_NAMES
        if timing:
            if f is not None:
                f.timing = True
            else:
                ctx.timing_funcs.add(None)  # a script that times things at module level
        self.children(node)


# --------------------------------------------------------------------- helpers
def _all_params(params: cst.Parameters) -> List[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def _decorator_is_no_grad(ctx: FileContext, d: cst.BaseExpression) -> bool:
    if isinstance(d, cst.Call):
        d = d.func
    return ctx.qualname(d) in NO_GRAD_CONTEXTS


def _is_module_base(ctx: FileContext, b: cst.BaseExpression) -> bool:
    q = ctx.qualname(b)
    if q is not None:
        return q.endswith(MODULE_SUFFIXES) or q.rsplit(".", 1)[-1] in MODULE_BASE_NAMES
    if isinstance(b, cst.Name):
        return b.value in ctx.module_classes or b.value in MODULE_BASE_NAMES
    if isinstance(b, cst.Attribute):
        return b.attr.value in MODULE_BASE_NAMES
    return False


def _annotation_val(ctx: FileContext, ann: cst.BaseExpression):
    if isinstance(ann, cst.Subscript):  # Optional[Tensor]
        base = ctx.qualname(ann.value) or (ann.value.value if isinstance(ann.value, cst.Name) else "")
        if base.rsplit(".", 1)[-1] == "Optional" and ann.slice:
            inner = ann.slice[0].slice
            if isinstance(inner, cst.Index):
                return _annotation_val(ctx, inner.value)
        return None
    q = ctx.qualname(ann)
    name = q or (ann.value if isinstance(ann, cst.Name) else (ann.attr.value if isinstance(ann, cst.Attribute) else ""))
    if isinstance(ann, cst.SimpleString):
        name = (string_value(ann) or "").strip()
    last = name.rsplit(".", 1)[-1]
    if last == "Tensor" and (q is None or q.startswith("torch")):
        return V.tensor(None)
    if last in ("ndarray", "NDArray") or (q or "").startswith("numpy"):
        return Val(V.NUMPY)
    if name in ("int", "float", "bool", "str", "list", "dict", "tuple", "bytes", "complex"):
        return V.PY_VAL
    if last in ("Module", "LightningModule"):
        return Val(V.MODULE)
    if last == "DataLoader":
        return Val(V.LOADER)
    return None


def _bind_loop_target(ctx: FileContext, target: cst.BaseExpression, it: cst.BaseExpression) -> None:
    """Bind a loop target part by part where the iterable says which part is what:
    `for i, (x, y) in enumerate(loader)`, `for a, b in zip(xs, ys)`, `for k, v in batch.items()`."""
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(it, cst.Call) and not any(
        isinstance(el, cst.StarredElement) for el in target.elements
    ):
        els = [el.value for el in target.elements]
        pos = [a.value for a in it.args if a.keyword is None and not a.star]
        fname = it.func.value if isinstance(it.func, cst.Name) else None
        if fname == "enumerate" and len(els) == 2 and pos and "enumerate" not in ctx.aliases:
            ctx.bind_target(els[0], V.PY_VAL)
            _bind_loop_target(ctx, els[1], pos[0])
            return
        if fname == "zip" and len(els) == len(pos) == len(it.args) and "zip" not in ctx.aliases:
            for el, src in zip(els, pos):
                _bind_loop_target(ctx, el, src)
            return
        if isinstance(it.func, cst.Attribute) and it.func.attr.value == "items" and not it.args and len(els) == 2:
            recv = ctx.infer(it.func.value)
            if recv.kind == V.TENSORS:
                ctx.bind_target(els[0], V.PY_VAL)
                ctx.bind_target(els[1], V.tensor(recv.device, pinned=recv.pinned))
                return
    ctx.bind_target(target, _iter_element(ctx, it))


def _iter_element(ctx: FileContext, it: cst.BaseExpression) -> Val:
    from synclint.context import element_of

    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name):
        fname = it.func.value
        if fname == "range":
            return V.PY_VAL
        if fname == "enumerate" and it.args:
            return Val(V.TENSORS if _iter_element(ctx, it.args[0].value).kind == V.TENSOR else V.UNKNOWN)
        if fname == "zip":
            return V.UNKNOWN_VAL
    v = ctx.infer(it)
    if v.kind == V.UNKNOWN and isinstance(it, (cst.Name, cst.Attribute)):
        name = it.value if isinstance(it, cst.Name) else it.attr.value
        if name.endswith(("loader", "Loader")) or name in ("loader", "dl"):
            return V.tensor(V.CPU, pinned=None)
    if v.kind == V.LOADER:
        return Val(V.TENSORS, V.CPU, pinned=v.pinned)
    return element_of(v)


def _lazy_init(node: cst.If) -> bool:
    """`if self.buf is None: self.buf = ...`, `if len(state) == 0: state["step"] = ...`,
    `if not cache: cache = ...`, `if k not in cache: cache[k] = ...`: a body that runs once (cold)."""
    test = node.test
    subject = None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        c = test.comparisons[0]
        left = test.left
        if isinstance(c.operator, cst.Is) and isinstance(c.comparator, cst.Name) and c.comparator.value == "None":
            subject = left
        elif isinstance(c.operator, cst.NotIn):
            subject = c.comparator
        elif (isinstance(c.operator, cst.Equal) and isinstance(c.comparator, cst.Integer) and c.comparator.value == "0"
              and isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "len"
              and len(left.args) == 1):
            subject = left.args[0].value
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        subject = test.expression
    if not isinstance(subject, (cst.Name, cst.Attribute, cst.Subscript)) or not isinstance(node.body, cst.IndentedBlock):
        return False
    want = _code(subject)
    for stmt in node.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                for t in targets:
                    if _code(t) == want or (isinstance(t, cst.Subscript) and _code(t.value) == want):
                        return True
    return False


def _code(node: cst.CSTNode) -> str:
    return "".join(cst.Module(body=[]).code_for_node(node).split())


def _classify_test(ctx: FileContext, test: cst.BaseExpression) -> str:
    negated = False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negated = True
        test = test.expression
    if isinstance(test, cst.Call) and ctx.torch_name(test.func) in ("cuda.is_available", "cuda.is_initialized"):
        return "cpu-body" if negated else "cpu-else"
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return "cpu-body" if negated else "cpu-else"
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        left = test.left
        if isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
            s = string_value(comp.comparator)
            is_dev = isinstance(left, (cst.Name, cst.Attribute)) and (
                "device" in (left.value if isinstance(left, cst.Name) else left.attr.value)
                or (isinstance(left, cst.Attribute) and left.attr.value == "type")
            )
            if is_dev and s is not None:
                cpu_side = s.startswith("cpu") != isinstance(comp.operator, cst.NotEqual)
                return "cpu-body" if cpu_side != negated else "cpu-else"
            if not negated and isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Modulo) and isinstance(comp.operator, cst.Equal):
                return "guard"
    return ""
