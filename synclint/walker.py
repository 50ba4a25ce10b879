"""One traversal per file: build the SemanticModel as it goes and dispatch to every rule.

LibCST's own visitor rebuilds children as it goes and costs about as much as the parse;
walking the dataclass fields directly is more than ten times cheaper (measured on the
lightning sources), so the walker does that and calls `visit_<Type>` / `leave_<Type>` of
all enabled rules in the same pass (the batched-visitor idea without its overhead).
Bindings follow source order; branches (if/else, try/except, loop bodies) are joined
where they meet, so a name bound on two paths holds either value.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from synclint.semantic import compile_sites
from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.annotations import annotation_val
from synclint.semantic.arguments import device_option
from synclint.semantic.callgraph import STEPS, hot_name
from synclint.semantic.heat import (body_steps_optimizer, classify_test, lazy_init, loop_rate, site_rate,
                                    skips_unless_periodic, steps_optimizer)
from synclint.semantic.helpers import helper_body, returned_parameter, reyielded_parameter
from synclint.semantic.facts import STARRED, ref_target
from synclint.semantic.gradmode import GRAD_MODE_CONTEXTS
from synclint.semantic.model import SemanticModel
from synclint.semantic.scopes import FuncInfo
from synclint.semantic.moves import is_cuda_string, nonblocking_d2h, puts_on_cuda
from synclint.semantic.ownership import COMPILERS
from synclint.semantic.syntax import (COMPOUND_STATEMENTS, FIELD_KINDS, NODE, SCOPE_TYPES, SEQ, SMALL_STATEMENTS,
                                      STATEMENTS, SUITES, all_params, child_nodes, descendants, field_kind,
                                      last_name, node_fields, string_value)
from synclint.semantic.values import Val

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


def _is_classmethod(node: cst.FunctionDef) -> bool:
    return any(type(d.decorator) is cst.Name and d.decorator.value == "classmethod" for d in node.decorators)


class Walker:
    def __init__(self, ctx: SemanticModel, rules: Sequence[object]) -> None:
        self.ctx = ctx
        self.visit: Dict[str, List[Callable]] = defaultdict(list)
        self.leave: Dict[str, List[Callable]] = defaultdict(list)
        for rule in rules:
            for kind, tname in rule_methods(type(rule)):
                table = self.visit if kind == "visit" else self.leave
                table[tname].append(getattr(rule, f"{kind}_{tname}"))
        self.special = {
            cst.Import: self._import, cst.ImportFrom: self._import,
            cst.FunctionDef: self._function, cst.ClassDef: self._class,
            cst.For: self._for, cst.While: self._while,
            cst.ListComp: self._comp, cst.SetComp: self._comp,
            cst.GeneratorExp: self._comp, cst.DictComp: self._comp,
            cst.With: self._with, cst.If: self._if, cst.Try: self._try, cst.IndentedBlock: self._block,
            cst.Assign: self._assign, cst.AnnAssign: self._annassign,
            cst.AugAssign: self._augassign, cst.Expr: self._expr,
            cst.Return: self._return, cst.Call: self._call, cst.NamedExpr: self._walrus,
            cst.Global: self._global, cst.Nonlocal: self._global,
            cst.SimpleString: self._string, cst.Assert: self._assert, cst.Yield: self._yield,
        }
        self._plans: Dict[type, tuple] = {}

    # ------------------------------------------------------------- traversal
    def _plan(self, t: type) -> tuple:
        """What a walk does at a node of type t, decided once per type (a walk meets about
        a million nodes on a large project): whether it is a statement, the rules' visit
        and leave methods, the model's own handler, the fields to walk."""
        name = t.__name__
        plan = self._plans[t] = (_is_stmt(t), tuple(self.visit.get(name, ())), self.special.get(t),
                                 tuple(self.leave.get(name, ())), node_fields(t))
        return plan

    def walk(self, node: cst.CSTNode) -> None:
        t = type(node)
        plan = self._plans.get(t) or self._plan(t)
        is_stmt, visits, special, leaves, _ = plan
        ctx = self.ctx
        if is_stmt:
            ctx.stmt_index += 1
            ctx.stmt_stack.append(node)
            ctx.forget()
        for fn in visits:
            fn(node)
        if special is not None:
            special(node)
        else:
            self.children(node)
        for fn in leaves:
            fn(node)
        if is_stmt:
            ctx.stmt_stack.pop()

    def children(self, node: cst.CSTNode) -> None:
        t = type(node)
        plan = self._plans.get(t) or self._plan(t)
        walk = self.walk
        for fname in plan[4]:
            v = getattr(node, fname)
            k = FIELD_KINDS.get(type(v))
            if k is None:
                k = field_kind(type(v))
            if k == NODE:
                walk(v)
            elif k == SEQ:
                for c in v:
                    if field_kind(type(c)) == NODE:
                        walk(c)

    def walk_field(self, v) -> None:
        k = field_kind(type(v))
        if k == NODE:
            self.walk(v)
        elif k == SEQ:
            for c in v:
                if field_kind(type(c)) == NODE:
                    self.walk(c)

    # ------------------------------------------------------------- scopes
    def _import(self, node) -> None:
        self.ctx.add_import(node)

    def _global(self, node) -> None:
        f = self.ctx.func
        if f is not None:
            f.globals.update(n.name.value for n in node.names)

    def _function(self, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        for d in node.decorators:
            self.walk(d)
        for p in all_params(node.params):
            if p.default is not None:
                self.walk(p.default)
        # A method: directly in a class body (class bodies start with no function scope).
        cls = ctx.cls if ctx.func is None else None
        qual = f"{cls.name}.{node.name.value}" if cls else node.name.value
        info = FuncInfo(name=node.name.value, qual=qual, cls=cls, node=node)
        info.no_grad = any(_decorator_is_no_grad(ctx, d.decorator) for d in node.decorators)
        info.compiled = (ctx.func is not None and ctx.func.compiled) or any(
            ctx.qualname(d.decorator.func if type(d.decorator) is cst.Call else d.decorator) in COMPILERS
            for d in node.decorators)
        info.entry = ctx.is_entry(info)
        ctx.all_funcs[qual] = info
        ctx.patched_flags.append(compile_sites.note_function(ctx, info, node))  # (for roots it defines)
        saved = (ctx.loop_depth, ctx.guard_depth, ctx.comp_depth, ctx.loop_nodes, ctx.once_depth,
                 ctx.container_loop_depth)
        ctx.loop_depth = ctx.guard_depth = ctx.comp_depth = ctx.once_depth = ctx.container_loop_depth = 0
        ctx.loop_nodes = []
        ctx.funcs.append(info)
        self._bind_params(info, node)
        if info.no_grad:
            ctx.no_grad_depth += 1
        self.walk_field(node.body)
        if info.no_grad:
            ctx.no_grad_depth -= 1
        if info.name == "__init__":
            ctx.end_init(info)
        ctx.funcs.pop()
        ctx.patched_flags.pop()
        (ctx.loop_depth, ctx.guard_depth, ctx.comp_depth, ctx.loop_nodes, ctx.once_depth,
         ctx.container_loop_depth) = saved
        if info.timing:
            ctx.timing_funcs.add(qual)
        if info.yields is not None:
            info.reyields = reyielded_parameter(node)
        ret = info.returns if info.yields is None else Val(V.ITER, elems=(info.yields,))
        if ret is None and node.returns is not None:
            ret = annotation_val(ctx, node.returns.annotation)
        if ret is not None:
            if cls is not None:
                ctx.method_returns[(cls.name, node.name.value)] = ret
            else:
                ctx.func_returns[node.name.value] = ret
        if cls is None and ctx.func is None:
            given_back = returned_parameter(node)  # `...; return model`: the call's argument
            body = helper_body(node) if given_back is None else None  # or a replayable helper
            if given_back is not None:
                ctx.one_liners[node.name.value] = ([p.name.value for p in all_params(node.params)],
                                                   cst.Name(given_back))
            elif body is None:
                pass
            elif body.one_line:
                ctx.one_liners[node.name.value] = (body.params, body.returns[0])
            elif ret is None or ret.kind in (V.TENSOR, V.TENSORS, V.UNKNOWN):
                body.node = node
                ctx.helpers[node.name.value] = body
        # The function's name is bound in the enclosing scope (it shadows imports); a nested
        # one by its key, so that a factory's `return step_fn` says which function it gives
        if ctx.func is not None:
            ctx.bind(node.name.value, V.function(qual))
        elif cls is None:
            ctx.bind(node.name.value, V.FUNCTION_VAL)

    def _module_lambda(self, name: str, node: cst.Lambda) -> None:
        """`mse2psnr = lambda x: ...` at module level is a function: its body is hot only
        where its callers are (as `def mse2psnr(x):` would be)."""
        ctx = self.ctx
        info = FuncInfo(name=name, qual=name, cls=None)
        info.entry = ctx.is_entry(info)
        ctx.all_funcs[name] = info
        for p in all_params(node.params):
            if p.default is not None:
                self.walk(p.default)
        ctx.funcs.append(info)
        for p in all_params(node.params):
            _declare_param(info, p, double_star=p is node.params.star_kwarg)
            callers = ctx.param_from_callers(name, p.name.value)
            ctx.bind(p.name.value, callers if callers is not None else V.UNKNOWN_VAL)
        self.walk(node.body)
        ctx.funcs.pop()

    def _bind_params(self, info: FuncInfo, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        params = all_params(node.params)
        is_method = info.cls is not None
        forward_like = info.name in ("forward", "__call__") and (not is_method or info.cls.is_module) or (
            info.name == "forward"
        )
        step_like = hot_name(info.name) and info.name.endswith("_step")
        for i, p in enumerate(params):
            pname = p.name.value
            _declare_param(info, p, double_star=p is node.params.star_kwarg)
            val = None
            callers = ctx.param_from_callers(info.qual, pname)
            if p.annotation is not None:
                # An annotation we cannot read (a user type) is still not a tensor by
                # default: trust the author over the forward() heuristic, but not over what
                # the callers pass (`scaler: amp.GradScaler`, given a `torch.amp.GradScaler`).
                val = annotation_val(ctx, p.annotation.annotation)
                if val is None:
                    val = callers if callers is not None and callers.kind != V.UNKNOWN else V.UNKNOWN_VAL
                elif callers is not None and callers.kind == val.kind != V.UNKNOWN:
                    val = callers  # `optimizer: Optimizer`, and every caller passes an AdamW
            elif i == 0 and is_method and (pname == "cls" or _is_classmethod(node)):
                val = V.class_value(info.cls.name)  # `return cls(...)` makes an instance
            elif i == 0 and is_method and pname == "self":
                val = Val(V.MODULE, cls=info.cls.name) if info.cls.is_module else Val(V.OBJECT, cls=info.cls.name)
            elif callers is not None and callers.kind != V.UNKNOWN:
                val = callers  # every in-file call passes this
            elif p.default is not None and not (type(p.default) is cst.Name and p.default.value == "None"):
                val = ctx.infer(p.default)
                if val.kind == V.UNKNOWN:
                    val = V.PY_VAL if type(p.default) in (cst.Integer, cst.Float, cst.SimpleString) else val
                elif val.device == V.CPU and val.kind in (V.DEVICE, V.PY) and not any(
                        ctx.param_from_callers(info.qual, q.name.value) is not None for q in params[is_method:]):
                    # `device="cpu"` of a function nothing in the project calls: a library's
                    # default, whose users choose the device (`assumed`, as a forward's input).
                    # Called without it (trl's `get_global_statistics`), the default holds.
                    val = Val(val.kind, V.CPU, py=val.py, assumed=True)
            elif forward_like:
                val = V.tensor(None, assumed=True)
            elif step_like:
                if is_method and info.name in L.LIGHTNING_STEP_HOOKS and i >= 2:
                    val = V.py("int")  # Lightning: (self, batch, batch_idx[, dataloader_idx])
                elif is_method and info.name in L.LIGHTNING_STEP_HOOKS and i == 1 and ctx.in_lightning_module():
                    # Lightning moves the batch to the module's device before the hook runs
                    # (`transfer_batch_to_device`): the GPU, on a GPU run
                    val = Val(V.TENSORS, V.CUDA)
                elif pname in L.BATCH_PARAM_NAMES or "batch" in pname and not pname.endswith(("idx", "size", "_nb")):
                    val = Val(V.TENSORS, None)
                elif pname.endswith(("idx", "_nb")):
                    val = V.py("int")
            ctx.bind(pname, val if val is not None else V.UNKNOWN_VAL)

    def _class(self, node: cst.ClassDef) -> None:
        ctx = self.ctx
        for d in node.decorators:
            self.walk(d)
        for b in node.bases:
            self.walk(b.value)
        is_module = any(_is_module_base(ctx, b.value) for b in node.bases)
        info = ctx.add_class(node, is_module)
        ctx.classes.append(info)
        saved_funcs = ctx.funcs
        ctx.funcs = []  # class bodies do not see enclosing function scopes
        self.walk_field(node.body)
        ctx.funcs = saved_funcs
        ctx.classes.pop()
        if ctx.func is not None:
            ctx.bind(node.name.value, V.PY_VAL)

    # ------------------------------------------------------------- control flow
    def _for(self, node: cst.For) -> None:
        ctx = self.ctx
        self.walk(node.iter)
        before = ctx.snapshot()
        head = ctx.enter_loop(node)
        _bind_loop_target(ctx, node.target, node.iter)
        self.walk(node.target)
        # An epoch loop (its body loops over batches) runs its own statements once per
        # epoch: cold; the batch loop inside is hot.
        # A constructor runs once per object, its loops included (pytorch-YOLOv4 builds one
        # grid per output layer in `__init__`): constructor calls spread no heat either.
        epoch = not _in_constructor(ctx) and _epoch_loop(ctx, node)
        per_step = 0 if _in_constructor(ctx) or epoch or _runs_once(node) else 1
        container = per_step if _container_loop(node.iter) else 0
        ctx.loop_rates[id(node)] = loop_rate(ctx, node, per_step, container, epoch)
        # A loop under a periodic guard (validation every N steps) still repeats its body;
        # a loop over a container's items runs where it is, so the guard still holds there.
        ctx.loop_depth += per_step
        ctx.container_loop_depth += container
        ctx.loop_nodes.append(node)
        guard = ctx.guard_depth
        if not container:
            ctx.guard_depth = 0
        _iteration_calls(ctx, node.iter)
        self.walk_field(node.body)
        ctx.leave_loop(node, head)
        ctx.guard_depth = guard
        ctx.loop_nodes.pop()
        ctx.loop_depth -= per_step
        ctx.container_loop_depth -= container
        ctx.merge([before, ctx.snapshot()])  # the body ran zero or more times
        if node.orelse is not None:
            self.walk(node.orelse)

    def _while(self, node: cst.While) -> None:
        ctx = self.ctx
        before = ctx.snapshot()
        head = ctx.enter_loop(node)
        per_step = 0 if _in_constructor(ctx) or _runs_once(node) else 1
        ctx.loop_rates[id(node)] = loop_rate(ctx, node, per_step, 0, False)
        ctx.loop_depth += per_step
        ctx.loop_nodes.append(node)
        guard, ctx.guard_depth = ctx.guard_depth, 0
        self.walk(node.test)
        self.walk_field(node.body)
        ctx.leave_loop(node, head)
        ctx.guard_depth = guard
        ctx.loop_nodes.pop()
        ctx.loop_depth -= per_step
        ctx.merge([before, ctx.snapshot()])
        if node.orelse is not None:
            self.walk(node.orelse)

    def _comp(self, node) -> None:
        ctx = self.ctx
        comp = node.for_in
        self.walk(comp.iter)  # the outermost iterable is evaluated once
        ctx.comp_depth += 1
        first = True
        while comp is not None:
            if not first:
                self.walk(comp.iter)
            first = False
            _bind_loop_target(ctx, comp.target, comp.iter)
            for cond in comp.ifs:
                self.walk(cond)  # dispatches visit_CompIf, then walks its test
            comp = comp.inner_for_in
        if type(node) is cst.DictComp:
            self.walk(node.key)
            self.walk(node.value)
        else:
            self.walk(node.elt)
        ctx.comp_depth -= 1

    def _with(self, node: cst.With) -> None:
        ctx = self.ctx
        # `with torch.enable_grad(), ...`: from its first item on (rules ask at each call)
        grad_mode = sum(1 for item in node.items
                        if type(item.item) is cst.Call and ctx.qualname(item.item.func) in GRAD_MODE_CONTEXTS)
        ctx.grad_mode_depth += grad_mode
        no_grad = 0
        for item in node.items:
            self.walk(item.item)
            if type(item.item) is cst.Call and ctx.qualname(item.item.func) in L.NO_GRAD_CONTEXTS:
                if not (item.item.args and string_value(item.item.args[0].value) is None
                        and type(item.item.args[0].value) is cst.Name
                        and item.item.args[0].value.value == "False"):
                    no_grad += 1
            if item.asname is not None:
                ctx.bind_target(item.asname.name, ctx.infer(item.item))
        ctx.no_grad_depth += no_grad
        ctx.patched_flags.append(compile_sites.with_flags(ctx, node))  # `with torch._dynamo.config.patch(...)`
        self.walk_field(node.body)
        ctx.patched_flags.pop()
        ctx.no_grad_depth -= no_grad
        ctx.grad_mode_depth -= grad_mode

    def _block(self, node: cst.IndentedBlock) -> None:
        """A block's statements in order; after `if step % N != 0: continue` the rest of the
        block runs every N steps: under a periodic guard, unless it steps an optimizer
        (`if (i + 1) % accum != 0: continue`, then `opt.step()`: every optimizer step)."""
        ctx = self.ctx
        guarded = 0
        body = node.body
        for i, stmt in enumerate(body):
            self.walk(stmt)
            if not guarded and type(stmt) is cst.If and skips_unless_periodic(stmt, ctx) and not any(
                    body_steps_optimizer(rest, ctx) for rest in body[i + 1:]):
                guarded = 1
                ctx.guard_depth += 1
        ctx.guard_depth -= guarded

    def _if(self, node: cst.If) -> None:
        ctx = self.ctx
        self.walk(node.test)
        kind = classify_test(ctx, node.test, node.body)
        body_flags = orelse_flags = (0, 0)
        if kind == "cpu-body":
            body_flags = (1, 0)
        elif kind == "cpu-else":
            orelse_flags = (1, 0)
        elif kind == "guard":
            body_flags = (0, 1)
        elif kind == "once" or lazy_init(node, ctx):
            body_flags = (0, 0, 1)
        before = ctx.snapshot()
        _narrow(ctx, node.test)
        self._with_flags(body_flags, node.body)
        after_body = ctx.snapshot()
        ctx.restore(before)
        _narrow(ctx, node.test, negated=True)
        if node.orelse is not None:
            self._with_flags(orelse_flags, node.orelse)
        if kind in ("cpu-body", "cpu-else") and not _leaves(node):
            # `if use_gpu: x = x.cuda()`: on a GPU run only the CUDA path is taken, so what
            # follows sees its values, not a join with the CUDA-less path's ("either")
            if kind == "cpu-else":
                ctx.restore(after_body)
            return
        ctx.merge([after_body, ctx.snapshot()])

    def _assert(self, node: cst.Assert) -> None:
        self.walk(node.test)
        if node.msg is not None:
            self.walk(node.msg)
        _narrow(self.ctx, node.test)  # past `assert isinstance(v, float)`, v is a float

    def _try(self, node: cst.Try) -> None:
        ctx = self.ctx
        before = ctx.snapshot()
        self.walk(node.body)
        ends = [ctx.snapshot()]
        for h in node.handlers:
            ctx.restore(before)
            self.walk(h)
            ends.append(ctx.snapshot())
        ctx.merge(ends)
        for part in (node.orelse, node.finalbody):
            if part is not None:
                self.walk(part)

    def _with_flags(self, flags, node) -> None:
        """(CUDA-less, under a periodic guard, runs once at most) for the block `node`."""
        ctx = self.ctx
        once = flags[2] if len(flags) > 2 else 0
        ctx.cuda_less_depth += flags[0]
        ctx.guard_depth += flags[1]
        ctx.once_depth += once
        self.walk(node)
        ctx.cuda_less_depth -= flags[0]
        ctx.guard_depth -= flags[1]
        ctx.once_depth -= once

    # ------------------------------------------------------------- bindings
    def _assign(self, node: cst.Assign) -> None:
        ctx = self.ctx
        if (type(node.value) is cst.Lambda and ctx.func is None and not ctx.loop_depth and not ctx.classes
                and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name):
            self._module_lambda(node.targets[0].target.value, node.value)
        else:
            self.walk(node.value)
        for t in node.targets:
            self.walk(t.target)
        val = self.ctx.infer(node.value)
        for t in node.targets:
            self.ctx.bind_target(t.target, val, node.value if len(node.targets) == 1 else None)
        compile_sites.note_assign(ctx, node)  # a Dynamo flag set in code or in the environment

    def _annassign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.walk(node.value)
        self.walk(node.target)
        val = self.ctx.infer(node.value) if node.value is not None else None
        if val is None or val.kind == V.UNKNOWN:
            val = annotation_val(self.ctx, node.annotation.annotation) or val
        if val is not None:
            self.ctx.bind_target(node.target, val, node.value)

    def _walrus(self, node: cst.NamedExpr) -> None:
        self.walk(node.value)
        self.ctx.bind_target(node.target, self.ctx.infer(node.value), node.value)

    def _augassign(self, node: cst.AugAssign) -> None:
        self.walk(node.value)
        self.walk(node.target)
        ctx = self.ctx
        if type(node.target) in (cst.Name, cst.Attribute):
            old = ctx.infer(node.target)
            new = ctx.combine([old, ctx.infer(node.value)])
            if old.kind == V.PY and old.py == "list":
                item = ctx.infer(node.value)
                new = Val(V.TENSORS, item.device) if item.kind == V.TENSORS else old
            if new.kind != old.kind or new.device != old.device:
                # `total = 0; total += loss`: now a tensor. Augmented assignment keeps no expression.
                ctx.bind_target(node.target, new)

    def _expr(self, node: cst.Expr) -> None:
        self.walk(node.value)
        ctx = self.ctx
        call = node.value
        if type(call) is not cst.Call:
            return
        tn = ctx.torch_name(call.func)
        if tn == "set_default_device" and call.args:
            is_dev, dev = ctx.device_of_arg(call.args[0].value)
            if is_dev:
                ctx.default_device = dev or V.CUDA
        elif tn in ("set_default_tensor_type",) and call.args:
            s = string_value(call.args[0].value) or (ctx.qualname(call.args[0].value) or "")
            if "cuda" in s:
                ctx.default_device = V.CUDA
        elif type(call.func) is cst.Attribute:
            m = call.func.attr.value
            recv = call.func.value
            if m in ("to", "cuda", "cpu", "eval", "train") and type(recv) in (cst.Name, cst.Attribute):
                if ctx.infer(call).kind == V.MODULE:  # `model.to(device)`, `.eval()`: in place
                    ctx.bind_target(recv, ctx.infer(call))
            elif m in ("append", "extend", "insert") and type(recv) in (cst.Name, cst.Attribute) and call.args:
                # `losses.append(loss)`: the list now holds tensors.
                lst = ctx.infer(recv)
                item = ctx.infer(call.args[-1].value)
                if m == "extend":
                    item = V.element_of(item)
                if lst.kind in (V.PY, V.TENSORS) and item.kind == V.TENSOR:
                    if lst.kind == V.PY and lst.py not in (None, "list"):
                        return
                    merged = item if lst.kind == V.PY else V.join(V.element_of(lst), item)
                    ctx.bind_target(recv, Val(V.TENSORS, merged.device, dtype=merged.dtype, assumed=merged.assumed))
                elif lst.kind == V.PY and lst.py == "list" and (
                        item.kind in (V.OBJECT, V.MODULE) and item.cls or item.kind in (V.LOADER, V.NUMPY)
                        or V.is_dict_of(item)):
                    # `self.logit_filters.append(SuppressBlank(...))`: a list of instances, of
                    # each class appended (iterating it calls every class's methods); of
                    # loaders or their iterators (`self.iters.append(iter(loader))`); of
                    # arrays (`self.predictions.append(dets)`, dets from `.cpu().numpy()`)
                    merged = item if not lst.elems else V.join(lst.elems[0], item)
                    ctx.bind_target(recv, Val(V.PY, py="list", elems=(merged,)))

    def _return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        self.walk(node.value)
        f = self.ctx.func
        if f is not None:
            v = self.ctx.infer(node.value)
            f.returns = v if f.returns is None else V.join(f.returns, v)

    def _yield(self, node: cst.Yield) -> None:
        """`yield batch` (or `yield from loader`): calling the generator gives an iterator of it
        (`def sample_data(loader): while True: yield from loader`)."""
        if node.value is None:
            return
        self.walk(node.value)
        f = self.ctx.func
        if f is None:
            return
        if type(node.value) is cst.From:
            v = V.element_of(self.ctx.infer(node.value.item))
        else:
            v = self.ctx.infer(node.value)
        f.yields = v if f.yields is None else V.join(f.yields, v)

    def _string(self, node: cst.SimpleString) -> None:
        if not self.ctx.puts_on_cuda and is_cuda_string(node):
            self.ctx.puts_on_cuda = True

    def _call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        f = ctx.func
        timing = False
        # per call edge: True when this site runs every step, None under a periodic guard or
        # in a block that runs once (heat does not spread from its caller), else False;
        # STEPS under a periodic guard in hot code
        hot = None if ctx.guard_depth or ctx.once_depth else ctx.site_hot()
        if ctx.guard_depth and ctx.site_hot(guarded=True):
            hot = STEPS  # hot if the callee steps an optimizer (`heat.STEPS`)
        first_edge = len(ctx.calls)  # (this site's edges get its rate: `heat.site_rate`)
        if f is not None and not f.steps_optimizer and steps_optimizer(node, ctx):
            f.steps_optimizer = True
            if any(type(n) is cst.While for n in ctx.loop_nodes):
                # its own `while` loop steps the optimizer (ESRGAN's `while batch is not None:`
                # over a prefetcher): it runs many steps a call, as a loop over a loader does
                f.iterates_loader = True
        caller = f.qual if f else None
        callee = None  # (key of an in-file function, leading parameters the call does not pass)
        # the in-file methods a bound-method variable may be, or the classes an instance may have
        bound_methods: Tuple[str, ...] = ()
        outside: List[Tuple[str, int]] = []  # (qualified name of another module's function or method, leading params)
        # a call known only as an edge (a submodule's forward run through an attribute or a
        # container: compiled regions follow it), whose arguments do not feed the callee's
        # parameters (that inference assumes forward's parameters are tensors)
        edge_only = False
        q = None
        if type(func) is cst.Name:
            ctx.calls.append((caller, func.value, hot))
            cls = ctx.defined_class(func.value)
            q = ctx.qualname(func)
            if cls is not None:
                ctx.calls.append((caller, f"{func.value}.__init__", None if hot is None else False))
                callee = (f"{func.value}.__init__", 1)
            elif q is not None:
                outside = [(q, 0)]  # a function (or, the linker finds, a class) of another module
            elif func.value not in ctx.aliases:
                v = ctx.lookup(func.value)
                if called_instance(v) is not None:  # `forward`, or an object's `__call__`
                    edge_only = not v.cls  # (the items of a container)
                    v = called_instance(v)
                    bound_methods, outside = _instance_methods(ctx, v, _CALLED[v.kind])
                elif V.methods_of(v):  # `_run = self.run_cuda if c else self.run; _run(...)`
                    bound_methods = V.methods_of(v)
                elif V.function_key(v) and V.function_key(v) != func.value:
                    # `step = get_step_fn(...); step(batch)`: the function the factory made;
                    # `spline_fn = f if c else g; spline_fn(x)`: either
                    keys = V.function_keys(v)
                    outside = [(k, 0) for k in keys if "." in k]
                    here = [k for k in keys if "." not in k]
                    if len(here) == 1:
                        callee = (here[0], 0)
                    ctx.calls.extend((caller, k, hot) for k in here)
                    if len(here) > 1:
                        pos, kws = _arg_values(ctx, node)
                        for k in here:
                            ctx.call_args.setdefault(k, []).append((caller, 0, pos, kws))
                elif ctx.stars and func.value not in ctx.all_funcs and not ctx.is_local(func.value):
                    outside = [("*" + func.value, 0)]  # from `from m import *`: the linker finds it
                else:
                    callee = (func.value, 0)
            timing = q in L.TIMING_NAMES  # from time import perf_counter
        elif type(func) is cst.Attribute:
            q = ctx.qualname(func)
            recv = ctx.infer(func.value) if q is None else V.PY_VAL
            if func.attr.value in L.ARG_ADD_METHODS and recv.kind == V.OBJECT and recv.cls == L.ARG_PARSER:
                option = device_option(node, ctx)
                if option is not None:
                    ctx.device_options[option[0]] = option[1]
            if q is not None:
                outside = [(q, 0)]  # `utils.general.f(...)`
            elif recv.kind in (V.MODULE, V.OBJECT) and recv.cls and _held_instance(ctx, func) is not None:
                # `self.model(x)`: an attribute holding a module (or an object), whose forward
                # (`__call__`) runs; an instance attribute shadows a method of that name
                held = _held_instance(ctx, func)
                edge_only = True
                bound_methods, outside = _instance_methods(ctx, held, _CALLED[held.kind])
            elif recv.kind in (V.MODULE, V.OBJECT) and recv.cls:
                # a method of an in-file class or another module's (of each class it may be)
                bound_methods, outside = _instance_methods(ctx, recv, func.attr.value)
                if recv.kind == V.OBJECT and type(func.value) is cst.Name:
                    ctx.record_instance_call(func.value.value, func.attr.value, *_arg_values(ctx, node))
            elif ref_target(recv):  # `m = Meter(); m.update(x)`, Meter from another module
                outside = [(f"{ref_target(recv)}().{func.attr.value}", 1)]
            else:
                v = ctx.infer(func)
                edge_only = not v.cls  # (the items of a container)
                v = called_instance(v)
                if v is not None:  # `self.encoder(x)`, `self.loss_scaler(loss)`
                    bound_methods, outside = _instance_methods(ctx, v, _CALLED[v.kind])
            timing = func.attr.value == "elapsed_time" or q in L.TIMING_NAMES
        if edge_only:
            ctx.calls.extend((caller, "@" + o[0], hot) for o in outside if o[0].split(".", 1)[0] not in L.LIBRARY_ROOTS)
            ctx.calls.extend((caller, k, hot) for k in bound_methods)
            bound_methods, outside = (), []
        if len(bound_methods) == 1 and not outside and type(func) is cst.Attribute:
            callee = (bound_methods[0], 1)  # one in-file method: `self.f(...)` calls reach subclasses
        collate = _collate_fn(ctx, node)
        if collate:  # `DataLoader(..., collate_fn=self.collate)`: runs once per batch
            ctx.calls.extend((caller, k, True) for k in collate)
        # `solve_ivp(ode_func, ...)`: runs at every solver step; a forward hook at every forward
        ctx.calls.extend((caller, k, True) for k in _repeated_callback(ctx, node, q) + _per_step_hook(ctx, node))
        outside = [o for o in outside if o[0].split(".", 1)[0] not in L.LIBRARY_ROOTS]
        ctx.calls.extend((caller, "@" + o[0], hot) for o in outside)
        ctx.calls.extend((caller, k, hot) for k in bound_methods)
        targets = [(k, 1, True) for k in bound_methods] + [(k, skip, False) for k, skip in outside]
        if callee is not None and not bound_methods:
            targets = [(callee[0], callee[1], True)]
        if targets:
            pos, kws = _arg_values(ctx, node)
            for key, skip, in_file in targets:
                if in_file:
                    ctx.call_args.setdefault(key, []).append((caller, skip, pos, kws))
                else:
                    ctx.calls_out.append((key, skip, pos, kws))
            if callee is not None and type(func) is cst.Attribute and type(func.value) is cst.Name \
                    and func.value.value == "self":
                ctx.self_calls.append((callee[0], pos, kws))
        if not ctx.puts_on_cuda and puts_on_cuda(ctx, node):
            ctx.puts_on_cuda = True
        if nonblocking_d2h(ctx, node):
            if f is not None:
                f.started_d2h = True
            else:
                ctx.module_started_d2h = True
        if timing:
            if f is not None:
                f.timing = True
            else:
                ctx.timing_funcs.add(None)  # a script that times things at module level
        if (hot is True or hot is False) and callee is None and not bound_methods:
            _handed_methods(ctx, node, caller, hot)
        if len(ctx.calls) > first_edge:
            ctx.site_rates.update(dict.fromkeys(range(first_edge, len(ctx.calls)), site_rate(ctx)))
        compile_sites.note_call(ctx, node, lambda e, in_place=False: _compiled_targets(ctx, e, in_place))
        array_of = _array_read(ctx, node)
        if array_of is not None:
            # `labels.numpy()` raises on a GPU tensor: from here on, `labels` is on the CPU
            v = ctx.infer(array_of)
            ctx.bind_target(array_of, V.tensor(V.CPU) if v.kind == V.UNKNOWN else v.with_(device=V.CPU))
        mapped = _mapped_lambda(ctx, node)
        if mapped is None:
            self.children(node)
            return
        # `text, images = map(lambda t: t.cuda(), (text, images))`: the lambda's parameter is
        # each item, bound while its body is walked (and the name's own binding put back)
        lam, item = mapped
        before = ctx.snapshot()
        ctx.bind(lam.params.params[0].name.value, item)
        self.children(node)
        ctx.restore(before)


# --------------------------------------------------------------------- helpers
def _array_read(ctx: SemanticModel, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The receiver of `x.numpy()` (not `force=True`, which copies a GPU tensor first): a
    name or `self.x` whose value is unknown or a tensor of unknown device."""
    func = call.func
    if not (type(func) is cst.Attribute and func.attr.value == "numpy" and not call.args):
        return None
    recv = func.value
    if not (type(recv) is cst.Name or type(recv) is cst.Attribute and type(recv.value) is cst.Name
            and recv.value.value == "self"):
        return None
    v = ctx.infer(recv)
    if v.kind == V.UNKNOWN and v.cls is None and not v.elems or v.kind == V.TENSOR and v.device is None:
        return recv
    return None


def _mapped_lambda(ctx: SemanticModel, call: cst.Call) -> Optional[Tuple[cst.Lambda, Val]]:
    """`map(lambda t: ..., items)` with the builtin `map`: the lambda and what each item is."""
    func = call.func
    if not (type(func) is cst.Name and func.value == "map" and len(call.args) == 2
            and not ctx.is_local("map") and "map" not in ctx.aliases):
        return None
    lam = call.args[0].value
    if not (type(lam) is cst.Lambda and len(all_params(lam.params)) == 1 and lam.params.params):
        return None
    return lam, V.element_of(ctx.infer(call.args[1].value))


def _arg_values(ctx: SemanticModel, call: cst.Call) -> Tuple[List[Val], Dict[str, Val]]:
    """The values a call passes: positional (up to a `*args`) and by keyword."""
    pos = []
    for a in call.args:
        if a.star or a.keyword is not None:
            break
        pos.append(ctx.infer(a.value))  # positions after a `*args` are unknown
    kws = {a.keyword.value: ctx.infer(a.value) for a in call.args if a.keyword is not None}
    if any(a.star for a in call.args):
        kws[STARRED] = V.UNKNOWN_VAL
    return pos, kws


# the method that calling an instance runs: a module's `forward`, another object's `__call__`
_CALLED = {V.MODULE: "forward", V.OBJECT: "__call__"}


def _held_instance(ctx: SemanticModel, attr: cst.Attribute) -> Optional[Val]:
    """The instance an attribute of an instance holds (`self.model = Net(cfg)` in `__init__`),
    when it is known to be one and no class of the receiver defines a method of that name."""
    v = called_instance(ctx.infer(attr))
    if v is None:
        return None
    recv = ctx.infer(attr.value)
    if any(_defines(ctx, k, attr.attr.value) for k in V.classes_of(recv)):
        return None
    return v


def called_instance(v: Val) -> Optional[Val]:
    """The instance whose `forward` (`__call__`) calling `v` runs: a module or an object of a
    known class, or the items of an `nn.Sequential` of known classes."""
    if v.kind in (V.MODULE, V.OBJECT) and v.cls:
        return v
    if v.kind == V.MODULE and v.elems and v.elems[0].cls:
        return v.elems[0]
    return None


def _instance_methods(ctx: SemanticModel, v: Val, method: str) -> Tuple[Tuple[str, ...], List[Tuple[str, int]]]:
    """The methods `obj.<method>(...)` may call, for an instance of one class or of several
    (`"A|B"`, made on two paths): (in-file method keys, another module's methods)."""
    here, there = [], []
    for k in V.classes_of(v):
        if ctx.defined_class(k) is not None:
            here.append(f"{k}.{method}")
            base = ctx.inherited_from(k, method)
            if base is not None:  # a method an in-file class takes from another module's class
                there.append((f"{base}.{method}", 1))
        else:
            there.append((f"{k}.{method}", 1))
    return tuple(here), there


def _compiled_targets(ctx: SemanticModel, e: cst.BaseExpression,
                      in_place: bool = False) -> List[Tuple[str, Optional[str]]]:
    """What `torch.compile(e)` compiles, as call-graph keys: a function (this file's, or
    "@" + another module's) or the `forward` of a module (`__call__` of another object).
    `in_place`: what `e.compile()` compiles, nn.Module's own, for a class that defines no
    `compile` of its own (LightGlue's `compile` compiles its layers): each key with the key of
    a `compile` another module's base class may define, which voids it (else None)."""
    if in_place:
        v = ctx.infer(e)
        if v.kind != V.MODULE or not v.cls:
            return []
        out: List[Tuple[str, Optional[str]]] = []
        for k in V.classes_of(v):
            if ctx.defined_class(k) is None:
                out.append((f"@{k}.forward", f"@{k}.compile"))
            elif not _defines(ctx, k, "compile"):
                base = ctx.inherited_from(k, "compile")
                out.extend((key, f"@{base}.compile" if base else None) for key in _instance_methods(
                    ctx, Val(V.MODULE, cls=k), "forward")[0])
        return out
    return [(k, None) for k in _compiled_functions(ctx, e)]


def _defines(ctx: SemanticModel, cls: str, method: str, depth: int = 0) -> bool:
    """An in-file class, or one of its in-file bases, defines `method`."""
    info = ctx.classes_by_name.get(cls)
    if info is None or depth > 8:
        return False
    return method in info.methods or any(_defines(ctx, b, method, depth + 1) for b in info.bases)


def _compiled_functions(ctx: SemanticModel, e: cst.BaseExpression) -> List[str]:
    if type(e) is cst.Name:
        q = ctx.qualname(e)
        if q is not None:
            return [] if q.split(".", 1)[0] in L.LIBRARY_ROOTS else ["@" + q]
        fn = ctx.lookup(e.value)
        if fn == V.FUNCTION_VAL:
            return [e.value]
        keys = V.function_keys(fn)
        if keys:
            return [("@" + k) if "." in k else k for k in keys]
    v = ctx.infer(e)
    if v.kind in (V.MODULE, V.OBJECT) and v.cls:
        here, there = _instance_methods(ctx, v, _CALLED[v.kind])
        return list(here) + ["@" + q for q, _ in there if q.split(".", 1)[0] not in L.LIBRARY_ROOTS]
    if V.methods_of(v):  # `torch.compile(self.step)`
        return list(V.methods_of(v))
    if type(e) is cst.Attribute:
        # a bound method of an instance: `torch.compile(env.predict_next_obs)`, `env` of a class
        # of another module; `self.model.forward = torch.compile(self.model.forward)`
        recv = ctx.infer(e.value)
        if recv.kind in (V.MODULE, V.OBJECT) and recv.cls:
            here, there = _instance_methods(ctx, recv, e.attr.value)
            return list(here) + ["@" + q for q, _ in there if q.split(".", 1)[0] not in L.LIBRARY_ROOTS]
    return []


def _handed_methods(ctx: SemanticModel, call: cst.Call, caller: Optional[str], site: bool) -> None:
    """A function, or a method of a project class, handed to a call that is not a function of
    this file: the library calls it there (`retry_call(model.train, tries=3)` in
    stylegan2-pytorch's loop, `checkpoint(self.block, x)`, `loss.register_hook(check)`), so
    it runs as often as that site: every step at a hot site (`site`), or in a function that
    the call graph finds hot (grad-cam's gradient hook, registered in a forward hook)."""
    for a in call.args:
        v = a.value
        if type(v) is cst.Name:  # a function: `loss.register_hook(raise_if_nan)`, run in backward
            fn = ctx.lookup(v.value)
            keys = (v.value,) if fn == V.FUNCTION_VAL else V.function_keys(fn)
            _add_edges(ctx, caller, [k for k in keys if "." not in k], [k for k in keys if "." in k], site)
            continue
        if not (type(v) is cst.Attribute and type(v.value) is cst.Name):
            continue
        obj = ctx.infer(v.value)
        if obj.kind in (V.MODULE, V.OBJECT) and obj.cls:
            here, there = _instance_methods(ctx, obj, v.attr.value)
            _add_edges(ctx, caller, here, [q for q, _ in there], site)


def _iteration_calls(ctx: SemanticModel, it: cst.BaseExpression) -> None:
    """`for state in val_mem:` over an instance of a class of the project: its `__next__`
    runs at every iteration (Rainbow's replay memory), with the heat of the loop's body."""
    v = ctx.infer(it)
    if v.kind != V.OBJECT or not v.cls:
        return
    hot = None if ctx.guard_depth or ctx.once_depth else ctx.site_hot()
    caller = ctx.func.qual if ctx.func else None
    here, there = _instance_methods(ctx, v, "__next__")
    first_edge = len(ctx.calls)
    _add_edges(ctx, caller, here, [q for q, _ in there], hot)
    ctx.site_rates.update(dict.fromkeys(range(first_edge, len(ctx.calls)), site_rate(ctx)))


def _add_edges(ctx: SemanticModel, caller: Optional[str], here: Sequence[str], qualified: Sequence[str],
               site: Optional[bool]) -> None:
    """Call edges from `caller` to in-file functions (`here`) and to other modules' by
    qualified name (a library's are left out: heat does not enter them)."""
    ctx.calls.extend((caller, k, site) for k in here)
    ctx.calls.extend((caller, "@" + q, site) for q in qualified if q.split(".", 1)[0] not in L.LIBRARY_ROOTS)


def _repeated_callback(ctx: SemanticModel, call: cst.Call, q: Optional[str]) -> Tuple[str, ...]:
    """The in-file function a library call runs over and over (`L.REPEAT_CALLERS`)."""
    where = L.REPEAT_CALLERS.get(q) if q else None
    if where is None:
        return ()
    pos, key = where
    fn = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == key), None)
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if fn is None and len(positional) > pos:
        fn = positional[pos]
    return _in_file_functions(ctx, fn) if type(fn) is cst.Name else ()


def _collate_fn(ctx: SemanticModel, call: cst.Call) -> Tuple[str, ...]:
    """The in-file function(s) a DataLoader call takes as `collate_fn`."""
    fn = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "collate_fn"), None)
    if fn is None:
        return ()
    q = ctx.qualname(call.func) or ""
    if not (q in L.LOADERS or q.endswith("DataLoader")):
        return ()
    return _in_file_functions(ctx, fn)


def _per_step_hook(ctx: SemanticModel, call: cst.Call) -> Tuple[str, ...]:
    """The in-file function(s) a module hook registration hands torch
    (`layer.register_forward_hook(self.save_activation)`): torch calls them at every forward
    or backward. A receiver known to be something else (another library's method of that
    name) hands nothing."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in L.PER_STEP_HOOKS or not call.args:
        return ()
    if ctx.infer(func.value).kind not in (V.TENSOR, V.MODULE, V.UNKNOWN):
        return ()
    return _in_file_functions(ctx, call.args[0].value)


def _in_file_functions(ctx: SemanticModel, fn: cst.BaseExpression) -> Tuple[str, ...]:
    """The keys of the in-file functions or methods `fn` names (`f`, `self.method`)."""
    if type(fn) is cst.Name:
        keys = tuple(k for k in V.function_keys(ctx.lookup(fn.value)) if k in ctx.all_funcs)
        if keys or fn.value in ctx.all_funcs:
            return keys or (fn.value,)
    return V.methods_of(ctx.infer(fn))  # `self.collate`, or a name holding a bound method


def _declare_param(info: FuncInfo, p: cst.Param, double_star: bool = False) -> None:
    """Record a parameter's name, position (`**name` for the keywords' dict) and whether it
    has a default."""
    name = p.name.value
    info.params.add(name)
    info.param_order.append("**" + name if double_star else name)
    if p.default is not None:
        info.defaults.add(name)


def _decorator_is_no_grad(ctx: SemanticModel, d: cst.BaseExpression) -> bool:
    if type(d) is cst.Call:
        d = d.func
    return ctx.qualname(d) in L.NO_GRAD_CONTEXTS


def _is_module_base(ctx: SemanticModel, b: cst.BaseExpression) -> bool:
    q = ctx.qualname(b)
    if q is not None:
        return q.endswith(L.MODULE_SUFFIXES) or q.rsplit(".", 1)[-1] in L.MODULE_BASE_NAMES or ctx.is_module_class(q)
    if type(b) is cst.Name:
        return ctx.is_module_class(b.value) or b.value in L.MODULE_BASE_NAMES
    if type(b) is cst.Attribute:
        return b.attr.value in L.MODULE_BASE_NAMES
    return False


def _leaves(node: cst.If) -> bool:
    """Whether a branch of `node` may leave the block (`return`, `raise`, `break`,
    `continue`): then what follows is not simply the path that fell through."""
    return any(type(n) in (cst.Return, cst.Raise, cst.Break, cst.Continue) for n in descendants(node))


def _narrow(ctx: SemanticModel, test: cst.BaseExpression, negated: bool = False) -> None:
    """In the body of `if isinstance(x, int):`, x is an int (`torch.Tensor`: a tensor).
    `negated`: where the test is false (the else path, or the code after an `if` without
    one): past `if isinstance(v, Tensor): v = v.item()`, v is no tensor on either path."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        # Past `if not isinstance(x, Tensor): raise`, x is a tensor, but that is not used: the
        # check guards an input's type (Lightning's XLA strategies), and the callers' values
        # made evident by it fed the receiver guesses of rules (6 wrong SYN103 findings)
        if not negated:
            _narrow(ctx, test.expression, True)
        return
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        if not negated:  # (`not (a and b)` says nothing of either alone)
            _narrow(ctx, test.left)
            _narrow(ctx, test.right)
        return
    if not (type(test) is cst.Call and type(test.func) is cst.Name and test.func.value == "isinstance"
            and len(test.args) == 2 and type(test.args[0].value) is cst.Name):
        return
    kinds = test.args[1].value
    names = [el.value for el in kinds.elements] if type(kinds) is cst.Tuple else [kinds]
    vals = [annotation_val(ctx, n) for n in names]
    if negated:
        name = test.args[0].value.value
        if vals and all(v is not None and v.kind == V.TENSOR for v in vals) and ctx.infer(
                test.args[0].value).kind == V.TENSOR:
            ctx.bind(name, V.UNKNOWN_VAL, ctx.assigned(name))  # not a tensor: what it is, is not known
        return
    if vals and all(v is not None for v in vals):
        joined = vals[0]
        for v in vals[1:]:
            joined = V.join(joined, v)
        if joined.kind == V.PY and joined.py in ("list", "tuple", "dict", "set", None):
            old = ctx.infer(test.args[0].value)
            if old.kind == V.TENSORS or old.elems is not None or old.kind == V.PY and old.py == joined.py:
                return  # `assert isinstance(tensors, (list, tuple))`: it stays the list of tensors it was
        if joined.kind == V.TENSOR and joined.device is None:
            old = ctx.infer(test.args[0].value)
            if old.kind == V.TENSOR:
                joined = old.with_(assumed=False)
            elif old.kind == V.PY and (old.py in V.NUMBERS or old.py == "str"):
                # known not to be a tensor on any path (a tensor joined with a number is a
                # tensor): a dead branch, as when every caller passes a number
                return
        ctx.bind(test.args[0].value.value, joined, ctx.assigned(test.args[0].value.value))


# Methods whose result is a model's or a dict's contents: a loop over them visits items,
# it is not a training step (`for k, v in model.state_dict().items(): v.cpu()`).
_CONTAINER_METHODS = frozenset((
    "items", "keys", "values", "parameters", "named_parameters", "buffers", "named_buffers",
    "modules", "named_modules", "children", "named_children", "state_dict",
))


def _container_loop(it: cst.BaseExpression) -> bool:
    """`for x in <it>` walks a container's items: a method above, possibly under
    enumerate/zip/sorted/reversed/list."""
    while type(it) is cst.Call:
        f = it.func
        if type(f) is cst.Attribute:
            return f.attr.value in _CONTAINER_METHODS
        if type(f) is cst.Name and f.value in ("enumerate", "zip", "sorted", "reversed", "list", "tuple") and it.args:
            it = it.args[0].value
            continue
        return False
    return False


# A loop's own statements: not those of a function, class or loop inside it.
_OWN_LOOP_STOPS = SCOPE_TYPES | {cst.For, cst.While}


def _runs_once(loop) -> bool:
    """A loop whose body ends in `break` that nothing skips (no `continue` of its own): one
    iteration at most (`for batch in eval_loader: x = batch.cuda(); ...; break`)."""
    body = loop.body
    if type(body) is not cst.IndentedBlock or not body.body:
        return False
    last = body.body[-1]
    if type(last) is not cst.SimpleStatementLine or type(last.body[-1]) is not cst.Break:
        return False
    return not any(type(n) is cst.Continue for n in descendants(body, _OWN_LOOP_STOPS))


def _in_constructor(ctx: SemanticModel) -> bool:
    f = ctx.func
    return f is not None and f.cls is not None and f.name == "__init__"


def _epoch_loop(ctx: SemanticModel, node: cst.For) -> bool:
    """A loop whose body loops over a DataLoader's batches (`for epoch in range(n): for x in
    loader:`) or hands a loader to a function that does (`acc = train(epoch, train_loader)`),
    and that does not itself iterate one."""
    if _batchy(ctx, node.iter, {}):
        return False
    if type(node.body) is cst.IndentedBlock and any(
            _takes_loader(ctx, small.value) for line in node.body.body if type(line) is cst.SimpleStatementLine
            for small in line.body if type(small) in (cst.Expr, cst.Assign)):
        return True
    assigned: Dict[str, cst.BaseExpression] = {}
    inner: List[cst.For] = []
    todo: List[cst.CSTNode] = [node.body]
    while todo:
        n = todo.pop()
        if type(n) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(n) is cst.For:
            inner.append(n)
        elif type(n) is cst.Assign and len(n.targets) == 1 and type(n.targets[0].target) is cst.Name:
            assigned[n.targets[0].target.value] = n.value
        if type(n) in _STATEMENT_HOLDERS:
            todo.extend(c for c in child_nodes(n) if type(c) in _STATEMENT_PARTS)
    return any(_batchy(ctx, f.iter, assigned) for f in inner)


# What `_epoch_loop` looks into for inner loops: statements and their blocks, not expressions
_STATEMENT_HOLDERS = COMPOUND_STATEMENTS | {cst.IndentedBlock, cst.SimpleStatementLine, cst.Else,
                                            cst.ExceptHandler, cst.Finally}
_STATEMENT_PARTS = STATEMENTS | SMALL_STATEMENTS | SUITES | {cst.Else, cst.ExceptHandler, cst.Finally}


def _takes_loader(ctx: SemanticModel, e: cst.BaseExpression) -> bool:
    """A call, in a statement of its own, of a function that is given a loader itself (not
    an iterator over one, not a builtin, not a per-step function): it runs an epoch."""
    if type(e) is not cst.Call:
        return False
    f = e.func
    name = last_name(f)
    if name is None or hot_name(name) or type(f) is cst.Name and name in _BUILTINS:
        return False
    for a in e.args:
        v = a.value
        kind = ctx.infer(v).kind
        if kind == V.LOADER or (kind != V.ITER and type(v) in (cst.Name, cst.Attribute) and _batchy(ctx, v, {})):
            return True
    return False


_BUILTINS = frozenset(dir(builtins))


def _batchy(ctx: SemanticModel, it: cst.BaseExpression, assigned: Dict[str, cst.BaseExpression], depth: int = 0) -> bool:
    """`loader`, `enumerate(tqdm(train_loader))`, `pbar` assigned one of those: batches."""
    while type(it) is cst.Call and it.args and (
        type(it.func) is cst.Name and it.func.value in ("enumerate", "zip", *L.PASSTHROUGH)
        or type(it.func) is cst.Attribute and it.func.attr.value in L.PASSTHROUGH_METHODS
    ):
        it = it.args[0].value
    if type(it) is cst.Name and it.value in assigned and depth < 3:
        return _batchy(ctx, assigned[it.value], assigned, depth + 1)
    if ctx.infer(it).kind == V.LOADER:
        return True
    name = it.value if type(it) is cst.Name else it.attr.value if type(it) is cst.Attribute else ""
    return name.endswith(L.LOADER_NAME_SUFFIXES) or name in L.LOADER_NAMES


def _bind_loop_target(ctx: SemanticModel, target: cst.BaseExpression, it: cst.BaseExpression) -> None:
    """Bind a loop target part by part where the iterable says which part is what:
    `for i, (x, y) in enumerate(tqdm(loader))`, `for a, b in zip(xs, ys)`, `for k, v in batch.items()`."""
    if type(target) in (cst.Tuple, cst.List) and type(it) is cst.Call and not any(
        type(el) is cst.StarredElement for el in target.elements
    ):
        els = [el.value for el in target.elements]
        pos = [a.value for a in it.args if a.keyword is None and not a.star]
        fname = it.func.value if type(it.func) is cst.Name and not ctx.is_local(it.func.value) else None
        if fname == "enumerate" and len(els) == 2 and pos and "enumerate" not in ctx.aliases:
            ctx.bind_target(els[0], V.py("int"))
            _bind_loop_target(ctx, els[1], pos[0])
            return
        if fname == "zip" and len(els) == len(pos) == len(it.args) and "zip" not in ctx.aliases:
            for el, src in zip(els, pos):
                _bind_loop_target(ctx, el, src)
            return
        if type(it.func) is cst.Attribute and it.func.attr.value == "items" and not it.args and len(els) == 2:
            recv = ctx.infer(it.func.value)
            if recv.kind in (V.TENSORS, V.TENSOR) or V.is_dict_of(recv):
                # (a "tensor" with `.items()` is a dict of them: a collated batch of dicts,
                # DETR's targets; a model's output dict)
                if V.is_dict_of(recv):
                    value = recv.elems[0]
                elif recv.kind == V.TENSORS:
                    value = V.element_of(recv)
                else:
                    value = V.tensor(recv.device, pinned=recv.pinned, assumed=recv.assumed)
                ctx.bind_target(els[0], V.py("str"))
                ctx.bind_target(els[1], value)
                return
    ctx.bind_target(target, ctx.iter_item(it))

