"""The binder: what each kind of node does to the model as the walk meets it.

It binds names in source order (assignments, parameters, loop targets, imports, `with ...
as`), opens and closes function and class scopes, narrows on `isinstance` tests, joins
branches where they meet (if/else, try/except, a loop body that ran zero or more times),
keeps the walk's depths (loops, periodic guards, `no_grad`, CUDA-less branches) and records
each call site (`callsites`). The walker (`synclint.walker`) traverses and calls the rules;
for a node kind with a handler here, the handler walks the node's children itself, through
the walker, in the order its bindings need (a loop's iterable, then its target, then its
body), so a rule's `visit_`/`leave_` sees the model as the binding left it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

import libcst as cst

from synclint.semantic import compile_sites, mode_sites
from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.annotations import annotation_val
from synclint.semantic.arguments import written_option
from synclint.semantic.callsites import iteration_calls, record_call, record_property_read
from synclint.semantic.facts import ref_target
from synclint.semantic.gradmode import GRAD_MODE_CONTEXTS
from synclint.semantic.heat import (body_steps_optimizer, classify_test, lazy_init, loop_rate, reads_lasting_state,
                                    remakes_on_change, skips_unless_periodic)
from synclint.semantic.rarity import error_handler, returns_until_set, stores_own_move
from synclint.semantic.rates import is_hot
from synclint.semantic.helpers import (PASS_THROUGH_DECORATORS, helper_body, returned_parameter,
                                       reyielded_parameter, wraps_call)
from synclint.semantic.loops import iterates_batches, repeats_per_step, walks_items
from synclint.semantic.moves import is_cuda_string
from synclint.semantic.narrowing import narrow
from synclint.semantic.ownership import COMPILERS, nograd
from synclint.semantic.parameters import bind_params, declare_param
from synclint.semantic.scopes import FuncInfo
from synclint.semantic.syntax import all_params, always_leaves, generic_origin, indices_of, statements, string_value
from synclint.semantic.values import Val

if TYPE_CHECKING:
    from synclint.semantic.model import SemanticModel

__all__ = ["Binder"]


class Binder:
    """Fills `model` as `walker` (anything with `walk(node)`, `children(node)` and
    `walk_field(value)`) traverses a module. `handlers` maps a node type to what it does
    at such a node, in place of the walker's plain walk of its children."""

    def __init__(self, model: "SemanticModel", walker) -> None:
        self.ctx = model
        self.walk = walker.walk
        self.children = walker.children
        self.walk_field = walker.walk_field
        self.handlers = {
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
        if model.property_names:  # (known before the walk, `set_module`: else no read runs a getter)
            self.handlers[cst.Attribute] = self._attribute

    def enter_statement(self, node: cst.CSTNode) -> None:
        """Statements are numbered in pre-order (`parse.positions` counts the same way); what
        the model remembers of the statement before is forgotten."""
        ctx = self.ctx
        ctx.stmt_index += 1
        ctx.stmt_stack.append(node)
        ctx.forget()

    def leave_statement(self) -> None:
        self.ctx.stmt_stack.pop()

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
        accessor = next((d.decorator.attr.value for d in node.decorators if cls is not None
                         and type(d.decorator) is cst.Attribute and d.decorator.attr.value in ("setter", "deleter")), None)
        if accessor is not None:
            # `@r.setter def r(...)`: runs on an assignment, not where `self.r` is read (the
            # getter, `callsites.record_property_read`); a key of its own keeps them apart
            qual = f"{qual}.{accessor}"
        info = FuncInfo(name=node.name.value, qual=qual, cls=cls, node=node)
        info.no_grad = any(_decorator_is_no_grad(ctx, d.decorator) for d in node.decorators) or cls is not None \
            and ctx.library_base(cls.name, lambda b: f"{b}.{info.name}" in L.NO_GRAD_METHODS) is not None
        info.compiled = (ctx.func is not None and ctx.func.compiled) or any(
            ctx.qualname(d.decorator.func if type(d.decorator) is cst.Call else d.decorator) in COMPILERS
            for d in node.decorators)
        info.entry = ctx.is_entry(info)
        ctx.all_funcs[qual] = info
        ctx.patched_flags.append(compile_sites.note_function(ctx, info, node))  # (for roots it defines)
        saved = (ctx.loop_depth, ctx.guard_depth, ctx.comp_depth, ctx.loop_nodes, ctx.once_depth,
                 ctx.first_depth, ctx.container_loop_depth)
        ctx.loop_depth = ctx.guard_depth = ctx.comp_depth = ctx.once_depth = ctx.first_depth = 0
        ctx.container_loop_depth = 0
        ctx.loop_nodes = []
        ctx.funcs.append(info)
        bind_params(ctx, info, node)
        if info.no_grad:
            ctx.no_grad_depth += 1
        # a kernel written in a kernel language (Triton, TileLang, CuTe, Numba, Taichi, Warp):
        # its body is compiled for the GPU, and nothing in it waits for the GPU on the host
        kernel = any(_is_kernel_decorator(ctx, d.decorator) for d in node.decorators)
        ctx.cuda_less_depth += kernel
        first_call = len(ctx.calls)
        self.walk_field(node.body)
        ctx.cuda_less_depth -= kernel
        if info.entry and info.per_request:
            _calls_once_per_request(ctx, info, first_call)
        if info.no_grad:
            ctx.no_grad_depth -= 1
        if info.name == "__init__":
            ctx.end_init(info)
        ctx.funcs.pop()
        ctx.patched_flags.pop()
        (ctx.loop_depth, ctx.guard_depth, ctx.comp_depth, ctx.loop_nodes, ctx.once_depth,
         ctx.first_depth, ctx.container_loop_depth) = saved
        if info.timing:
            ctx.timing_funcs.add(qual)
        if info.yields is not None:
            info.reyields = reyielded_parameter(node)
        ret = info.returns if info.yields is None else Val(V.ITER, elems=(info.yields,))
        if ret is None and node.returns is not None:
            ret = annotation_val(ctx, node.returns.annotation)
        elif ret is not None and ret.kind == V.UNKNOWN and not ref_target(ret) and node.returns is not None:
            # `def get_kldiv(cfg) -> metrics.KLDivergenceMetric: ...; return klass(**kwargs)`
            # (a class picked from a dict): an instance of the class it names (a tensor
            # annotation says no device, and is left to what the body returns)
            named = annotation_val(ctx, node.returns.annotation)
            if named is not None and named.kind in (V.MODULE, V.OBJECT) and named.cls:
                ret = named
        elif ret is not None and ret.kind == V.PY and ret.py == "dict" and not ret.elems and node.returns is not None:
            # `engines = {}; ...; return engines` under `-> dict[ModuleName, BaseEngine]`: what
            # the items are, which the body's filling loop does not say
            named = annotation_val(ctx, node.returns.annotation)
            if named is not None and V.is_dict_of(named):
                ret = named
        if ret is not None:
            if cls is not None:
                ctx.method_returns[(cls.name, node.name.value)] = ret
            else:
                ctx.func_returns[node.name.value] = ret
        if ctx.func is None and (cls is None or _replayable_method(node)):
            # a module-level function, or a method (key "Cls.m", `self` its first parameter)
            key = node.name.value if cls is None else qual
            see_through = all(_passes_call_through(ctx, d.decorator) for d in node.decorators)
            # `...; return model`: the call's argument; or a replayable helper (the tree's facts)
            given_back, body = ctx.once(("helper", id(node), see_through), lambda: _helper(node, see_through))
            if given_back is not None:
                ctx.one_liners[key] = ([p.name.value for p in all_params(node.params)], cst.Name(given_back))
            elif body is None:
                pass
            elif body.one_line:
                ctx.one_liners[key] = (body.params, body.returns[0])
            elif ret is None or ret.kind in (V.TENSOR, V.TENSORS, V.UNKNOWN):
                body.node = node
                ctx.helpers[key] = body
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
            declare_param(info, p, double_star=p is node.params.star_kwarg)
            callers = ctx.param_from_callers(name, p.name.value)
            ctx.bind(p.name.value, callers if callers is not None else V.UNKNOWN_VAL)
        self.walk(node.body)
        ctx.funcs.pop()

    def _class(self, node: cst.ClassDef) -> None:
        ctx = self.ctx
        for d in node.decorators:
            self.walk(d)
        for b in node.bases:
            self.walk(b.value)
        is_module = any(_is_module_base(ctx, generic_origin(b.value)) for b in node.bases)
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
        # (constructor calls spread no heat either: `loops.repeats_per_step`)
        repeats, epoch = repeats_per_step(ctx, node)
        per_step = 1 if repeats else 0
        container = per_step if walks_items(ctx, node) else 0
        ctx.loop_rates[id(node)] = loop_rate(ctx, node, per_step, container, epoch,
                                             batches=bool(per_step) and iterates_batches(ctx, node.iter, {}))
        _note_stepping_loop(ctx, node)
        # A loop under a periodic guard (validation every N steps) still repeats its body;
        # a loop over a container's items runs where it is, so the guard still holds there.
        ctx.loop_depth += per_step
        ctx.container_loop_depth += container
        ctx.loop_nodes.append(node)
        guard = ctx.guard_depth
        if not container:
            ctx.guard_depth = 0
        iteration_calls(ctx, node.iter)
        self.walk_field(node.body)
        ctx.leave_loop(node, head)
        ctx.guard_depth = guard
        ctx.loop_nodes.pop()
        ctx.loop_depth -= per_step
        ctx.container_loop_depth -= container
        after = ctx.snapshot()
        ctx.merge([before, after])  # the body ran zero or more times
        _keep_stored_items(ctx, node, before, after)
        if node.orelse is not None:
            self.walk(node.orelse)

    def _while(self, node: cst.While) -> None:
        ctx = self.ctx
        before = ctx.snapshot()
        head = ctx.enter_loop(node)
        repeats, passes = repeats_per_step(ctx, node)  # (passes: each runs a loop of steps)
        per_step = 1 if repeats else 0
        ctx.loop_rates[id(node)] = loop_rate(ctx, node, per_step, 0, passes)
        _note_stepping_loop(ctx, node)
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
        once = first = 0  # after `if self.inited: return` that the block then sets: the first call only
        for i, stmt in enumerate(body):
            self.walk(stmt)
            if not guarded and type(stmt) is cst.If and skips_unless_periodic(stmt, ctx) and not any(
                    body_steps_optimizer(rest, ctx) for rest in body[i + 1:]):
                guarded = 1
                ctx.guard_depth += 1
            if not once and returns_until_set(stmt, body[i + 1:], ctx):
                once = 1
                first = 1 if reads_lasting_state(ctx, stmt.test) else 0
                ctx.once_depth += 1
                ctx.first_depth += first
        ctx.guard_depth -= guarded
        ctx.once_depth -= once
        ctx.first_depth -= first

    def _if(self, node: cst.If) -> None:
        ctx = self.ctx
        self.walk(node.test)
        compile_sites.note_if(ctx, node)  # (its test's value as the `if` sees it, not as its branches rebind it)
        kind = classify_test(ctx, node.test, node.body)
        body_flags = orelse_flags = (0, 0)
        if kind == "cpu-body":
            body_flags = (1, 0)
        elif kind == "cpu-else":
            orelse_flags = (1, 0)
        elif kind == "guard":
            body_flags = (0, 1)
        elif kind == "first":
            body_flags = (0, 0, 1, 1 if reads_lasting_state(ctx, node.test) else 0)
        elif kind == "once":
            body_flags = (0, 0, 1)
        elif lazy_init(node, ctx):  # (filled on first use; remade when what it stores changes: once)
            body_flags = (0, 0, 1, 0 if remakes_on_change(node.test) or not reads_lasting_state(ctx, node.test) else 1)
        before = ctx.snapshot()
        narrow(ctx, node.test)
        self._with_flags(body_flags, node.body)
        after_body = ctx.snapshot()
        ctx.restore(before)
        narrow(ctx, node.test, negated=True)
        if node.orelse is not None:
            self._with_flags(orelse_flags, node.orelse)
        if kind in ("cpu-body", "cpu-else") and not _leaves(node):
            # `if use_gpu: x = x.cuda()`: on a GPU run only the CUDA path is taken, so what
            # follows sees its values, not a join with the CUDA-less path's ("either")
            if kind == "cpu-else":
                ctx.restore(after_body)
            return
        if node.orelse is None and always_leaves(node.body):
            return  # `if x.device.type != "cpu": raise ...`: only the test's false path goes on
        ctx.merge([after_body, ctx.snapshot()])

    def _assert(self, node: cst.Assert) -> None:
        ctx = self.ctx
        self.walk(node.test)
        if node.msg is not None:
            ctx.failing_depth += 1  # (the message is built only when the test fails)
            self._with_flags((0, 0, 1), node.msg)
            ctx.failing_depth -= 1
        narrow(ctx, node.test)  # past `assert isinstance(v, float)`, v is a float

    def _try(self, node: cst.Try) -> None:
        ctx = self.ctx
        before = ctx.snapshot()
        self.walk(node.body)
        ends = [ctx.snapshot()]
        for h in node.handlers:
            ctx.restore(before)
            # (a handler of an error runs after one only: an out-of-memory fallback)
            self._with_flags((0, 0, 1 if error_handler(h, node.body) is not None else 0), h)
            ends.append(ctx.snapshot())
        ctx.merge(ends)
        for part in (node.orelse, node.finalbody):
            if part is not None:
                self.walk(part)

    def _with_flags(self, flags, node) -> None:
        """(CUDA-less, under a periodic guard, runs once at most, on the first call or step
        only) for the block `node`."""
        ctx = self.ctx
        once = flags[2] if len(flags) > 2 else 0
        first = flags[3] if len(flags) > 3 else 0
        ctx.cuda_less_depth += flags[0]
        ctx.guard_depth += flags[1]
        ctx.once_depth += once
        ctx.first_depth += first
        self.walk(node)
        ctx.cuda_less_depth -= flags[0]
        ctx.guard_depth -= flags[1]
        ctx.once_depth -= once
        ctx.first_depth -= first

    # ------------------------------------------------------------- bindings
    def _assign(self, node: cst.Assign) -> None:
        ctx = self.ctx
        if (type(node.value) is cst.Lambda and ctx.func is None and not ctx.loop_depth and not ctx.classes
                and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name):
            self._module_lambda(node.targets[0].target.value, node.value)
        else:
            once = 1 if stores_own_move(ctx, node) else 0  # (a move stored back: the first call's)
            ctx.once_depth += once
            ctx.first_depth += once
            self.walk(node.value)
            ctx.once_depth -= once
            ctx.first_depth -= once
        for t in node.targets:
            self.walk(t.target)
        val = self.ctx.infer(node.value)
        for t in node.targets:
            self.ctx.bind_target(t.target, val, node.value if len(node.targets) == 1 else None)
        _note_option_writes(ctx, [t.target for t in node.targets])
        if ctx.builds_graph:
            compile_sites.note_assign(ctx, node)  # a Dynamo flag set in code or in the environment
            mode_sites.note_assign(ctx, node)  # a compile result kept in an attribute, or a held one passed on

    def _annassign(self, node: cst.AnnAssign) -> None:
        _note_option_writes(self.ctx, [node.target])
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
        _note_option_writes(self.ctx, [node.target])
        self.walk(node.value)
        self.walk(node.target)
        ctx = self.ctx
        if type(node.target) in (cst.Name, cst.Attribute):
            old = ctx.infer(node.target)
            added = ctx.infer(node.value)
            if type(node.operator) is cst.AddAssign and old.kind == V.PY and old.py == "list" and (
                    added.kind == V.PY and added.py in ("list", "tuple") and added.elems):
                # `scalers += [GradScaler()]` (vjepa2's `init_opt`): its items, as `extend` adds
                for item in added.elems:
                    _add_to_list(ctx, node.target, item)
                return
            new = ctx.combine([old, added])
            if old.kind == V.PY and old.py == "list":
                item = ctx.infer(node.value)
                new = Val(V.TENSORS, item.device) if item.kind == V.TENSORS else old
            if new.kind != old.kind or new.device != old.device:
                # `total = 0; total += loss`: now a tensor. Augmented assignment keeps no expression.
                ctx.bind_target(node.target, new)
            elif type(node.target) is cst.Name and not ctx.in_no_grad:
                b = ctx.binding(node.target.value)
                if b is not None and b.fresh is not None and b.fresh.nograd and not nograd(ctx, node.value):
                    # `ce += loss`: the tensor now carries the loss's autograd history (what it
                    # owns, and whether it is free of history, is no longer known)
                    ctx.bind_target(node.target, old)

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
            arg = call.args[0].value
            s = string_value(arg) or (ctx.qualname(arg) or "")
            if "cuda" in s:
                ctx.default_device = V.CUDA
            elif type(arg) is cst.Call and type(arg.func) is cst.Attribute and arg.func.attr.value == "type" \
                    and ctx.infer(arg.func.value).device == V.CPU:
                ctx.default_device = V.CPU  # restored: `torch.tensor([], device="cpu").type()` (llm.c)
        elif type(call.func) is cst.Attribute:
            m = call.func.attr.value
            recv = call.func.value
            if m in ("to", "cuda", "cpu", "eval", "train") and type(recv) in (cst.Name, cst.Attribute):
                moved = ctx.infer(call)
                if moved.kind == V.MODULE or moved.kind == V.UNKNOWN and moved.device == V.CPU:
                    # `model.to(device)`, `.eval()`: in place (only a module moves in place, so
                    # a model the project cannot name, moved to the host, computes there)
                    ctx.bind_target(recv, moved)
            elif m in L.PRETRAINED_ATTRIBUTE_SETTERS and type(recv) is cst.Name and recv.value == "self" \
                    and ctx.cls is not None and ctx.library_base(ctx.cls.name, _pretrained_package):
                # `self.register_modules(text_encoder=text_encoder)` in a diffusers pipeline:
                # each keyword is an attribute set, as `self.text_encoder = text_encoder`
                for a in call.args:
                    if a.keyword is not None and not a.star:
                        ctx.bind_target(cst.Attribute(value=recv, attr=a.keyword), ctx.infer(a.value))
            elif m in ("append", "extend", "insert") and type(recv) in (cst.Name, cst.Attribute) and call.args:
                item = ctx.infer(call.args[-1].value)
                _add_to_list(ctx, recv, V.element_of(item) if m == "extend" else item)

    def _return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        self.walk(node.value)
        if self.ctx.builds_graph:
            mode_sites.note_return(self.ctx, node)
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

    def _attribute(self, node: cst.Attribute) -> None:
        record_property_read(self.ctx, node)
        self.children(node)

    def _call(self, node: cst.Call) -> None:
        ctx = self.ctx
        first = len(ctx.calls)
        record_call(ctx, node)
        if ctx.in_no_grad:
            ctx.no_grad_calls.update(range(first, len(ctx.calls)))
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
def _array_read(ctx: "SemanticModel", call: cst.Call) -> Optional[cst.BaseExpression]:
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


def _mapped_lambda(ctx: "SemanticModel", call: cst.Call) -> Optional[Tuple[cst.Lambda, Val]]:
    """`map(lambda t: ..., items)` with the builtin `map`: the lambda and what each item is."""
    func = call.func
    if not (type(func) is cst.Name and func.value == "map" and len(call.args) == 2
            and not ctx.is_local("map") and "map" not in ctx.aliases):
        return None
    lam = call.args[0].value
    if not (type(lam) is cst.Lambda and len(all_params(lam.params)) == 1 and lam.params.params):
        return None
    return lam, V.element_of(ctx.infer(call.args[1].value))


def _pretrained_package(base: str) -> bool:
    return base.split(".", 1)[0] in L.PRETRAINED_PACKAGES


def _decorator_is_no_grad(ctx: "SemanticModel", d: cst.BaseExpression) -> bool:
    if type(d) is cst.Call:
        d = d.func
    return ctx.qualname(d) in L.NO_GRAD_CONTEXTS


def _helper(node: cst.FunctionDef, see_through: bool) -> tuple:
    """(the parameter a function gives back, else its replayable body, else None)."""
    given_back = returned_parameter(node, see_through)
    return given_back, helper_body(node, see_through) if given_back is None else None


def _replayable_method(node: cst.FunctionDef) -> bool:
    """A method whose result may be inferred per call with `self` bound to the receiver: a
    plain one (not a module's `forward`, whose output has its own rules, nor a constructor or
    other dunder), its first parameter `self`."""
    params = all_params(node.params)
    return (bool(params) and params[0].name.value == "self" and not node.name.value.startswith("__")
            and node.name.value != "forward")


def _passes_call_through(ctx: "SemanticModel", d: cst.BaseExpression) -> bool:
    """A decorator after which a call returns what the function returns: a grad mode, a
    cache (`L.PASS_THROUGH_DECORATORS`), or a function of this file whose `functools.wraps`
    wrapper returns the wrapped function's call."""
    f = d.func if type(d) is cst.Call else d
    if ctx.qualname(f) in PASS_THROUGH_DECORATORS:
        return True
    info = ctx.all_funcs.get(d.value) if type(d) is cst.Name else None
    return info is not None and type(info.node) is cst.FunctionDef and wraps_call(info.node)


def _is_kernel_decorator(ctx: "SemanticModel", d: cst.BaseExpression) -> bool:
    """`@triton.jit`, `@T.prim_func`, `@tilelang.jit(out_idx=...)`, `@cute.kernel`, ...
    (library.toml `[kernels] decorators`, by qualified name)."""
    q = ctx.qualname(d.func if type(d) is cst.Call else d)
    return q is not None and q in L.KERNEL_DECORATORS


def _is_module_base(ctx: "SemanticModel", b: cst.BaseExpression) -> bool:
    q = ctx.qualname(b)
    if q is not None:
        return q.endswith(L.MODULE_SUFFIXES) or q.rsplit(".", 1)[-1] in L.MODULE_BASE_NAMES or ctx.is_module_class(q) \
            or L.torch_layer(q)
    if type(b) is cst.Name:
        return ctx.is_module_class(b.value) or b.value in L.MODULE_BASE_NAMES
    if type(b) is cst.Attribute:
        return b.attr.value in L.MODULE_BASE_NAMES
    return False


def _leaves(node: cst.If) -> bool:
    """Whether a branch of `node` may leave the block (`return`, `raise`, `break`,
    `continue`): then what follows is not simply the path that fell through."""
    return any(type(n) in (cst.Return, cst.Raise, cst.Break, cst.Continue) for n in statements(node))


def _add_to_list(ctx: "SemanticModel", recv: cst.BaseExpression, item: Val) -> None:
    """`losses.append(loss)`, `xs.extend(ys)`, `xs += [y]`: the list now holds the item too."""
    lst = ctx.infer(recv)
    if lst.kind in (V.PY, V.TENSORS) and item.kind == V.TENSOR:
        if lst.kind == V.PY and lst.py not in (None, "list"):
            return
        merged = item if lst.kind == V.PY else V.join(V.element_of(lst), item)
        ctx.bind_target(recv, Val(V.TENSORS, merged.device, dtype=merged.dtype, assumed=merged.assumed))
    elif lst.kind == V.PY and lst.py == "list" and (
            item.kind in (V.OBJECT, V.MODULE) and item.cls or item.kind in (V.LOADER, V.NUMPY)
            or V.is_dict_of(item)):
        # `self.logit_filters.append(SuppressBlank(...))`: a list of instances, of each class
        # appended (iterating it calls every class's methods); of loaders or their iterators
        # (`self.iters.append(iter(loader))`); of arrays (`self.predictions.append(dets)`, dets
        # from `.cpu().numpy()`)
        merged = item if not lst.elems else V.join(lst.elems[0], item)
        ctx.bind_target(recv, Val(V.PY, py="list", elems=(merged,)))


def _bind_loop_target(ctx: "SemanticModel", target: cst.BaseExpression, it: cst.BaseExpression) -> None:
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
            value = V.item_values(ctx.infer(it.func.value))
            if value is not None:
                ctx.bind_target(els[0], V.py("str"))
                ctx.bind_target(els[1], value)
                return
    ctx.bind_target(target, ctx.iter_item(it))


def _keep_stored_items(ctx: "SemanticModel", node: cst.For, before: dict, after: dict) -> None:
    """After `for i in range(len(xs)): xs[i] = xs[i].cuda()`, the items of `xs` are what the
    body stored: the loop ran no time only if `xs` had no items, whose device tells nothing."""
    name = indices_of(node.iter)
    was, now = before.get(name), after.get(name)
    if was is not None and now is not None and was.val.kind == now.val.kind == V.TENSORS and was is not now:
        ctx.bind(name, now.val, now.expr)


def _calls_once_per_request(ctx: "SemanticModel", info: FuncInfo, first: int) -> None:
    """A hook that runs its own decoding loop (a pipeline's `__call__`) runs its code outside
    that loop once per request: the calls it made there, which the walk took for a hook's
    (hot) before it met the loop, do not make their callees hot."""
    for i in range(first, len(ctx.calls)):
        caller, callee, site = ctx.calls[i]
        got = ctx.site_rates.get(i)
        if caller == info.qual and site is True and got is not None and not is_hot(got.loop):
            ctx.calls[i] = (caller, callee, False)


def _note_stepping_loop(ctx, node) -> None:
    """The function the walk is in runs a loop that steps wherever it is (its rate's
    `steps`: over a loader's batches, decoding, micro-batches)."""
    got = ctx.loop_rates.get(id(node))
    if got is not None and got[2] and ctx.func is not None:
        ctx.func.runs_steps = True


def _note_option_writes(ctx, targets) -> None:
    """The command-line options an assignment may set (`args.x = v`): not their defaults then."""
    todo = list(targets)
    while todo:
        t = todo.pop()
        if type(t) in (cst.Tuple, cst.List):
            todo.extend(el.value for el in t.elements)
            continue
        name = written_option(t)
        if name is not None:
            ctx.options_set.add(name)
