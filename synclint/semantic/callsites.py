"""What a call site records in the model as the walk meets it: the call graph's edges, each
with the site's heat (`model.calls`, to in-file functions and, by qualified name, to other
modules'), the values it passes (`call_args`, `calls_out`, `self_calls`), the functions it
hands a library that runs them (a `collate_fn`, a hook, a callback), and what the call tells
of the function it is in (it times, steps an optimizer, starts a non-blocking copy)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from synclint.semantic import compile_sites, mode_sites
from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.arguments import bool_option, device_option, option_writes
from synclint.semantic.callgraph import STEPS
from synclint.semantic.dispatch import named_methods
from synclint.semantic.facts import STARRED, ref_target
from synclint.semantic.heat import rate_here, steps_optimizer
from synclint.semantic.moves import nonblocking_d2h, puts_on_cuda
from synclint.semantic.syntax import is_property_getter
from synclint.semantic.values import Val

if TYPE_CHECKING:
    from synclint.semantic.model import SemanticModel

__all__ = ["record_call", "record_property_read", "iteration_calls", "called_instance"]


def record_call(ctx: "SemanticModel", node: cst.Call) -> None:
    """Record what the call `node` tells the model, before its arguments are walked."""
    func = node.func
    f = ctx.func
    timing = False
    # per call edge: True when this site runs every step, None under a periodic guard or
    # in a block that runs once (heat does not spread from its caller), else False;
    # STEPS under a periodic guard in hot code
    hot = None if ctx.guard_depth or ctx.once_depth else ctx.site_hot()
    if ctx.guard_depth and ctx.site_hot(guarded=True):
        hot = STEPS  # hot if the callee steps an optimizer (`heat.STEPS`)
    first_edge = len(ctx.calls)  # (this site's edges get its rate: `heat.rate_here`)
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
                if v.kind in (V.UNKNOWN, V.MODULE) and not v.cls and ctx.is_local(func.value) \
                        and func.value not in ctx.all_funcs:
                    _opaque_call(ctx, node)  # a value, or a module, of no class it knows
        timing = q in L.TIMING_NAMES  # from time import perf_counter
    elif type(func) is cst.Attribute:
        _super_init(ctx, node, caller)
        q = ctx.qualname(func)
        recv = ctx.infer(func.value) if q is None else V.PY_VAL
        if func.attr.value in L.ARG_ADD_METHODS and recv.kind == V.OBJECT and recv.cls == L.ARG_PARSER:
            option = device_option(node, ctx)
            if option is not None:
                ctx.device_options[option[0]] = option[1]
            on = bool_option(node)
            if on is not None:  # (two parsers of one option with two defaults: neither)
                ctx.options[on[0]] = on[1] if ctx.options.get(on[0], on[1]) == on[1] else None
        held = ctx.infer(func) if q is None and recv.kind in (V.MODULE, V.OBJECT) else V.UNKNOWN_VAL
        held_functions = V.function_keys(held)
        if q is not None:
            outside = [(q, 0)]  # `utils.general.f(...)`
        elif V.methods_of(held) and not any(_defines(ctx, k, func.attr.value) for k in V.classes_of(recv)):
            # `self.act = self.activate` (or a `partial` of it) in __init__, then `self.act(x)`:
            # an edge only (a `partial`'s or a static method's parameters are not the call's)
            bound_methods, edge_only = V.methods_of(held), True
        elif held_functions:
            # `self.replace_fn = f if c else g` in __init__, then `self.replace_fn(x)`: either
            outside = [(k, 0) for k in held_functions if "." in k]
            ctx.calls.extend((caller, k, hot) for k in held_functions if "." not in k)
        elif recv.kind in (V.MODULE, V.OBJECT) and recv.cls and _held_instance(ctx, func) is not None:
            # `self.model(x)`: an attribute holding a module (or an object), whose forward
            # (`__call__`) runs; an instance attribute shadows a method of that name
            held = _held_instance(ctx, func)
            edge_only = True
            bound_methods, outside = _instance_methods(ctx, held, _CALLED[held.kind])
        elif recv.kind in (V.MODULE, V.OBJECT) and recv.cls:
            # a method of an in-file class or another module's (of each class it may be)
            bound_methods, outside = _instance_methods(ctx, recv, func.attr.value)
            if held.kind in (V.UNKNOWN, V.MODULE) and not held.cls and not outside and all(
                    ctx.defined_class(k) is not None and not _defines(ctx, k, func.attr.value)
                    for k in V.classes_of(recv)):
                _opaque_call(ctx, node)  # `self.model(batch)`: an attribute holding what the file does not know
            if recv.kind == V.OBJECT and type(func.value) is cst.Name:
                ctx.record_instance_call(func.value.value, func.attr.value, *_arg_values(ctx, node))
        elif V.class_key(recv) is not None:
            # `Cell.point(x)`: a method called through a class of this file (TiRex's static
            # `sLSTMCellTorch.slstm_forward_pointwise`); an edge only, its arguments not bound
            edge_only = True
            bound_methods, outside = _instance_methods(ctx, Val(V.OBJECT, cls=V.class_key(recv)), func.attr.value)
        elif ref_target(recv):  # `m = Meter(); m.update(x)`, Meter from another module
            outside = [(f"{ref_target(recv)}().{func.attr.value}", 1)]
        else:
            v = ctx.infer(func)
            edge_only = not v.cls  # (the items of a container)
            v = called_instance(v)
            if v is not None:  # `self.encoder(x)`, `self.loss_scaler(loss)`
                bound_methods, outside = _instance_methods(ctx, v, _CALLED[v.kind])
            elif recv.kind == V.UNKNOWN and not ctx.in_no_grad:
                # `build(cfg).forward_test(x)`: a method of what the file cannot resolve, called
                # with autograd on; any function of that name may be the one it runs
                ctx.unknown_calls.add(func.attr.value)
        timing = func.attr.value == "elapsed_time" or q in L.TIMING_NAMES
    elif type(func) is cst.Subscript:
        item = ctx.infer(func)
        v = called_instance(item)  # `self.heads["ln_f"](x)`: an entry of a ModuleDict
        if v is not None and v.kind == V.MODULE:
            edge_only = True
            bound_methods, outside = _instance_methods(ctx, v, _CALLED[v.kind])
        elif V.methods_of(item):  # `loss_map[loss](outputs, targets)`: any method of the table
            bound_methods = V.methods_of(item)
        elif V.function_keys(item):  # `table[name](x)`: any function of the table
            keys = V.function_keys(item)
            outside = [(k, 0) for k in keys if "." in k]
            ctx.calls.extend((caller, k, hot) for k in keys if "." not in k)
    if edge_only:
        ctx.calls.extend((caller, "@" + o[0], hot) for o in outside if o[0].split(".", 1)[0] not in L.LIBRARY_ROOTS)
        ctx.calls.extend((caller, k, hot) for k in bound_methods)
        _bind_none_only(ctx, node, caller, bound_methods, outside)
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
    written = option_writes(node, ctx.qualname)
    if written:
        ctx.options_set.update(written)
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
    if (hot is True or hot is False) and (callee is None or _builtin_caller(ctx, func)) and not bound_methods:
        _handed_methods(ctx, node, caller, hot)
    if ctx.dispatched:  # `self.chan.write("prefill", ...)`: it runs the method dispatched by that name
        ctx.calls.extend((caller, k, hot) for k in named_methods(node, ctx.dispatched))
    if not ctx.builds_graph:
        return  # (what follows only this walk's call graph reads)
    _rate_edges(ctx, first_edge)
    if len(ctx.calls) > first_edge:
        mode = mode_sites.branch_mode(ctx)
        if mode is not None:  # an edge Dynamo follows only in this training mode
            ctx.compile_facts.modal.update(dict.fromkeys(range(first_edge, len(ctx.calls)), mode))
    mode_sites.note_call(ctx, node)
    compile_sites.note_call(ctx, node, lambda e, in_place=False: _compiled_targets(ctx, e, in_place))


def _rate_edges(ctx: "SemanticModel", first: int) -> None:
    """The call edges from index `first` on run at the rate of the site the walk is at
    (`heat.rate_here`), which the call graph's heat reads: not noted where the walk makes no
    call graph (`SemanticModel.builds_graph`)."""
    if ctx.builds_graph and len(ctx.calls) > first:
        ctx.site_rates.update(dict.fromkeys(range(first, len(ctx.calls)), rate_here(ctx)))


def record_property_read(ctx: "SemanticModel", node: cst.Attribute) -> None:
    """`self.prior` where the class (or an in-file base) defines `prior` as a `@property`:
    reading it runs the getter, a call edge as `self.prior()` would be (RealNVP's prior,
    a distribution built on every read). A `cached_property` runs once per instance: no edge."""
    if node.attr.value not in ctx.property_names or type(node.value) is not cst.Name or ctx.func is None:
        return
    recv = ctx.infer(node.value) if node.value.value != "self" or ctx.func.cls is None else None
    classes = (ctx.func.cls.name,) if recv is None else V.classes_of(recv) if recv.kind in (V.MODULE, V.OBJECT) else ()
    getters = [k for k in (_property_getter(ctx, c, node.attr.value) for c in classes) if k is not None]
    if not getters:
        return
    hot = None if ctx.guard_depth or ctx.once_depth else ctx.site_hot()
    first_edge = len(ctx.calls)
    ctx.calls.extend((ctx.func.qual, k, hot) for k in getters)
    _rate_edges(ctx, first_edge)


def _property_getter(ctx: "SemanticModel", cls: str, name: str, depth: int = 0) -> Optional[str]:
    """The key of the `@property` getter `name` of an in-file class or its in-file bases."""
    info = ctx.classes_by_name.get(cls)
    if info is None or type(info.node) is not cst.ClassDef or depth > 8:
        return None
    for d in info.node.body.body:
        if type(d) is cst.FunctionDef and d.name.value == name:
            return f"{cls}.{name}" if is_property_getter(d) else None
    return next((k for b in info.bases if (k := _property_getter(ctx, b, name, depth + 1)) is not None), None)


def _super_init(ctx: "SemanticModel", node: cst.Call, caller: Optional[str]) -> None:
    """`super().__init__(**kwargs)` in a class's constructor passes its base's constructor
    what it passes (minimind-v's `VLMConfig(..., **kwargs)` forwards `use_moe` to
    `MiniMindConfig.__init__`, whose `use_moe=False` is then not the only value): its
    arguments bind the base's parameters (an edge it is not: heat and regions as before)."""
    func = node.func
    f = ctx.func
    if f is None or f.cls is None or not f.cls.bases or func.attr.value != "__init__" \
            or type(func.value) is not cst.Call or type(func.value.func) is not cst.Name \
            or func.value.func.value != "super" or func.value.args:
        return
    base = f.cls.bases[0]
    pos, kws = _arg_values(ctx, node)
    if ctx.defined_class(base) is not None:
        if f"{base}.__init__" in ctx.all_funcs:
            ctx.call_args.setdefault(f"{base}.__init__", []).append((caller, 1, pos, kws))
    elif base.split(".", 1)[0] not in L.LIBRARY_ROOTS:
        ctx.calls_out.append((f"{base}.__init__", 1, pos, kws))


def _bind_none_only(ctx: "SemanticModel", node: cst.Call, caller: Optional[str], bound_methods: Sequence[str],
                    outside: Sequence[Tuple[str, int]]) -> None:
    """A submodule's call (an edge only) passes its callee what it passes as None, and nothing
    else: that `forward`'s parameters are tensors is assumed, and what a caller passes for them
    (Python flags, configuration) is not (`record_call`); a None every call passes (TabICL's
    `d`, `None` by a command-line default) decides its `if d is not None:`."""
    pos, kws = _arg_values(ctx, node)
    if not any(V.is_none(v) for v in [*pos, *kws.values()]):
        return
    pos = [v if V.is_none(v) else V.UNKNOWN_VAL for v in pos]
    kws = {k: v if V.is_none(v) else V.UNKNOWN_VAL for k, v in kws.items()}
    for key in bound_methods:
        ctx.call_args.setdefault(key, []).append((caller, 1, pos, kws))
    ctx.calls_out.extend((q, skip, pos, kws) for q, skip in outside if q.split(".", 1)[0] not in L.LIBRARY_ROOTS)


def _opaque_call(ctx: "SemanticModel", node: cst.Call) -> None:
    """`model(batch, device)`, where the file does not know what `model` is (a helper's
    parameter: CosyVoice's `batch_forward`): when it passes a loader's batch (CPU tensors), the
    project binds it in each module's `forward` whose parameters have the arguments' names."""
    pos, kws = _arg_values(ctx, node)
    names = [a.value.value if type(a.value) is cst.Name else "" for a in node.args[:len(pos)]]
    if pos and all(names) and any(v.kind == V.TENSORS and v.device == V.CPU for v in pos):
        ctx.opaque_calls.append((names, pos, kws))


def _arg_values(ctx: "SemanticModel", call: cst.Call) -> Tuple[List[Val], Dict[str, Val]]:
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


def _held_instance(ctx: "SemanticModel", attr: cst.Attribute) -> Optional[Val]:
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


def _instance_methods(ctx: "SemanticModel", v: Val, method: str) -> Tuple[Tuple[str, ...], List[Tuple[str, int]]]:
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


def _compiled_targets(ctx: "SemanticModel", e: cst.BaseExpression,
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


def _defines(ctx: "SemanticModel", cls: str, method: str, depth: int = 0) -> bool:
    """An in-file class, or one of its in-file bases, defines `method`."""
    info = ctx.classes_by_name.get(cls)
    if info is None or depth > 8:
        return False
    return method in info.methods or any(_defines(ctx, b, method, depth + 1) for b in info.bases)


def _compiled_functions(ctx: "SemanticModel", e: cst.BaseExpression) -> List[str]:
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
        # a function of another module or of an imported class, named through it:
        # `torch.compile(utils.step)`, `torch.compile(sLSTMCellTorch.slstm_forward)` (TiRex)
        q = ctx.qualname(e)
        if q is not None:
            return [] if q.split(".", 1)[0] in L.LIBRARY_ROOTS else ["@" + q]
        recv = ctx.infer(e.value)
        cls = V.class_key(recv)
        if cls is not None:  # a static method of a class of this file: `torch.compile(Cell.scan)`
            here, there = _instance_methods(ctx, Val(V.OBJECT, cls=cls), e.attr.value)
            return list(here) + ["@" + q for q, _ in there if q.split(".", 1)[0] not in L.LIBRARY_ROOTS]
        # a bound method of an instance: `torch.compile(env.predict_next_obs)`, `env` of a class
        # of another module; `self.model.forward = torch.compile(self.model.forward)`
        if recv.kind in (V.MODULE, V.OBJECT) and recv.cls:
            here, there = _instance_methods(ctx, recv, e.attr.value)
            return list(here) + ["@" + q for q, _ in there if q.split(".", 1)[0] not in L.LIBRARY_ROOTS]
    return []


# Builtins that call the function they are handed, once per item (`map(self.single, xs)`,
# `sorted(xs, key=self.score)`)
_BUILTIN_CALLERS = frozenset(("map", "filter", "sorted", "min", "max"))


def _builtin_caller(ctx: "SemanticModel", func: cst.BaseExpression) -> bool:
    return (type(func) is cst.Name and func.value in _BUILTIN_CALLERS and func.value not in ctx.all_funcs
            and not ctx.is_local(func.value) and func.value not in ctx.aliases)


def _handed_methods(ctx: "SemanticModel", call: cst.Call, caller: Optional[str], site: bool) -> None:
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


def iteration_calls(ctx: "SemanticModel", it: cst.BaseExpression) -> None:
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
    _rate_edges(ctx, first_edge)


def _add_edges(ctx: "SemanticModel", caller: Optional[str], here: Sequence[str], qualified: Sequence[str],
               site: Optional[bool]) -> None:
    """Call edges from `caller` to in-file functions (`here`) and to other modules' by
    qualified name (a library's are left out: heat does not enter them)."""
    ctx.calls.extend((caller, k, site) for k in here)
    ctx.calls.extend((caller, "@" + q, site) for q in qualified if q.split(".", 1)[0] not in L.LIBRARY_ROOTS)


def _repeated_callback(ctx: "SemanticModel", call: cst.Call, q: Optional[str]) -> Tuple[str, ...]:
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


def _collate_fn(ctx: "SemanticModel", call: cst.Call) -> Tuple[str, ...]:
    """The in-file function(s) a DataLoader call takes as `collate_fn`."""
    fn = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "collate_fn"), None)
    if fn is None:
        return ()
    q = ctx.qualname(call.func) or ""
    if not (q in L.LOADERS or q.endswith("DataLoader")):
        return ()
    return _in_file_functions(ctx, fn)


def _per_step_hook(ctx: "SemanticModel", call: cst.Call) -> Tuple[str, ...]:
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


def _in_file_functions(ctx: "SemanticModel", fn: cst.BaseExpression) -> Tuple[str, ...]:
    """The keys of the in-file functions or methods `fn` names (`f`, `self.method`)."""
    if type(fn) is cst.Name:
        keys = tuple(k for k in V.function_keys(ctx.lookup(fn.value)) if k in ctx.all_funcs)
        if keys or fn.value in ctx.all_funcs:
            return keys or (fn.value,)
    return V.methods_of(ctx.infer(fn))  # `self.collate`, or a name holding a bound method

