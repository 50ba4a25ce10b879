"""Where a file makes code run under Dynamo, read from its syntax (`semantic.compiled` holds
the rest): the compile roots (`@torch.compile`, `@torch.compile(mode=...)`,
`torch.compile(f_or_model, ...)`, `torch._dynamo.optimize(...)(f)`, `model.compile()`), the
functions `torch.compiler.disable` excludes, and the Dynamo flags set by assignment
(`torch._dynamo.config.capture_scalar_outputs = True`), by `torch._dynamo.config.patch`
(a decorator or a `with`), or in the environment (`os.environ["TORCHDYNAMO_..."] = "1"`).

The walker calls these as it meets the syntax; what they find goes to the model's
`Compiled` (roots, disabled keys, the program's flags) and to the function's `FuncInfo`.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic import mode_sites
from synclint.semantic import values as V
from synclint.semantic.compiled import CUDA_GRAPH_MODES, FLAG_ENV, FLAGS, INDUCTOR, Options, after_break
from synclint.semantic.syntax import always_leaves, is_true, kwarg, string_value

_D = L._DATA["compiled"]
COMPILERS = frozenset(_D["compilers"])
OPTIMIZE = "torch._dynamo.optimize"
DISABLERS = frozenset(_D["disablers"])
CONFIG = _D["config"]
CONFIG_PATCH = frozenset(_D["config_patch"])
ENVIRON = frozenset(_D["environ"])
MODULE_COMPILE = _D["module_compile_method"]
IS_COMPILING = frozenset(_D["is_compiling"])

# what a compiled expression runs: call-graph keys, each with the key of a method whose
# existence in the project voids it (`e.compile()` of a class with a `compile` of its own)
Targets = Callable[..., List[Tuple[str, Optional[str]]]]


def options(ctx, call: Optional[cst.Call], optimize: bool = False) -> Options:
    """The options of `torch.compile(...)` (`call`; None: a bare `@torch.compile`) or of
    `torch._dynamo.optimize(backend, nopython=...)`, with the flags patched around it. A
    value that is not a literal is not known: its default is assumed."""
    merged: Dict[str, bool] = {}
    for flags in ctx.patched_flags:  # (outermost first: the innermost patch wins)
        merged.update(flags)
    patched = tuple(sorted(merged.items()))
    if call is None:
        return Options(flags=patched)
    pos = [a.value for a in call.args if a.keyword is None and not a.star]
    if optimize:
        fullgraph = is_true(kwarg(call, "nopython")) is True
        backend_expr = kwarg(call, "backend") or (pos[0] if pos else None)
        mode = None
    else:
        fullgraph = is_true(kwarg(call, "fullgraph")) is True
        backend_expr = kwarg(call, "backend")
        mode = string_value(kwarg(call, "mode"))
    backend = None if backend_expr is None else (string_value(backend_expr) or "<custom>")
    if backend == "inductor":
        backend = None
    dynamic = is_true(kwarg(call, "dynamic")) if kwarg(call, "dynamic") is not None else None
    cudagraphs = (backend in INDUCTOR and mode in CUDA_GRAPH_MODES) or backend == "cudagraphs" \
        or _asks_cudagraphs(kwarg(call, "options"))
    return Options(fullgraph, mode, dynamic, backend, cudagraphs, patched)


def _asks_cudagraphs(opts: Optional[cst.BaseExpression]) -> bool:
    """`options={"triton.cudagraphs": True}`."""
    if type(opts) is not cst.Dict:
        return False
    return any(type(el) is cst.DictElement and string_value(el.key) == "triton.cudagraphs"
               and is_true(el.value) is True for el in opts.elements)


def _decorator(ctx, d: cst.BaseExpression) -> Tuple[Optional[str], Optional[cst.Call]]:
    """(qualified name, the call when it has arguments) of a decorator."""
    call = d if type(d) is cst.Call else None
    return ctx.qualname(call.func if call is not None else d), call


def note_function(ctx, info, node: cst.FunctionDef) -> Dict[str, bool]:
    """A function's decorators: a compiler makes it a compile root, a disabler excludes it
    from compiled regions; returns the flags a `torch._dynamo.config.patch` decorator sets
    (they hold for the roots it is or defines)."""
    patched: Dict[str, bool] = {}
    for dec in node.decorators:
        q, call = _decorator(ctx, dec.decorator)
        if q in CONFIG_PATCH and call is not None:
            patched.update(patch_flags(call))
    ctx.patched_flags.append(patched)
    try:
        for dec in node.decorators:
            q, call = _decorator(ctx, dec.decorator)
            if q in COMPILERS and not (call is not None and q != OPTIMIZE and _positional(call)):
                info.region = options(ctx, call, optimize=q == OPTIMIZE)
                ctx.compile_facts.roots.append((info.qual, info.region))
            elif call is None and q not in DISABLERS and q not in CONFIG_PATCH:
                key = _function_key(ctx, dec.decorator)
                if key is not None:  # maybe a compile factory: `@torch_compile_lazy`
                    ctx.compile_facts.handed.append((key, 0, info.qual))
            elif q in DISABLERS:
                info.disabled = True
                if call is not None and is_true(kwarg(call, "recursive")) is False:
                    ctx.compile_facts.skipped.append(info.qual)  # only this frame runs eagerly
                else:
                    ctx.compile_facts.disabled.append(info.qual)
    finally:
        ctx.patched_flags.pop()
    return patched


def _positional(call: cst.Call) -> List[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def note_call(ctx, call: cst.Call, targets: Targets) -> None:
    """`torch.compile(f_or_model, ...)`, `torch._dynamo.optimize(...)(f)`,
    `torch.compile(mode=...)(f)`, `model.compile(...)`: compile roots; `torch.compiler.disable(f)`:
    `f` excluded; `os.environ.setdefault("TORCHDYNAMO_...", "1")`: a flag."""
    func = call.func
    facts = ctx.compile_facts
    if type(func) is cst.Call:  # a decorator factory applied: `torch.compile(mode=...)(f)`
        q = ctx.qualname(func.func)
        pos = _positional(call)
        if pos and (q in COMPILERS and not _positional(func) or q == OPTIMIZE) and not _discarded(ctx, call):
            found = targets(pos[0])
            facts.add_roots(found, options(ctx, func, optimize=q == OPTIMIZE))
            mode_sites.note_compiled(ctx, call, len(facts.roots) - len(found), len(found))
        elif pos and q in DISABLERS:
            skipped = is_true(kwarg(func, "recursive")) is False
            (facts.skipped if skipped else facts.disabled).extend(k for k, _ in targets(pos[0]))
        return
    q = ctx.qualname(func)
    if q in COMPILERS and q != OPTIMIZE:
        pos = _positional(call)
        if pos and not _discarded(ctx, call):
            found = targets(pos[0])
            facts.add_roots(found, options(ctx, call))
            mode_sites.note_compiled(ctx, call, len(facts.roots) - len(found), len(found))
            if not found:
                _note_factory(ctx, pos[0], options(ctx, call))
        return
    if q in DISABLERS:
        pos = _positional(call)
        if pos:
            facts.disabled.extend(k for k, _ in targets(pos[0]))
        return
    pos = _positional(call)
    if pos and type(pos[0]) in (cst.Name, cst.Attribute):
        callee = _function_key(ctx, func)
        if callee is not None:  # maybe a compile factory: `rms_norm = compile(rms_norm)`
            facts.handed.extend((callee, 0, k) for k, _ in targets(pos[0]))
    if type(func) is not cst.Attribute:
        return
    if func.attr.value == MODULE_COMPILE and q is None:
        # nn.Module.compile: on a value known to be a module (`re.compile` has a qualname)
        # whose class has no `compile` of its own
        found = targets(func.value, in_place=True)
        if found:
            facts.add_roots(found, options(ctx, call))
    elif func.attr.value == "setdefault" and ctx.qualname(func.value) in ENVIRON:
        pos = _positional(call)
        if len(pos) == 2:
            _env_flag(ctx, pos[0], pos[1])


def _function_key(ctx, e: cst.BaseExpression) -> Optional[str]:
    """The call-graph key of a function of the project named by `e` (this file's, or "@" +
    another module's qualified name); None for a library's or an unknown one."""
    q = ctx.qualname(e)
    if q is not None:
        return None if q.split(".", 1)[0] in L.LIBRARY_ROOTS else "@" + q
    if type(e) is cst.Name and ctx.lookup(e.value) == V.FUNCTION_VAL:
        return e.value
    return None


def _note_factory(ctx, arg: cst.BaseExpression, opts: Options) -> None:
    """`torch.compile(fn)` of a parameter of a plain function enclosing the call (moshi's
    `torch_compile_lazy(fun)` compiles `fun` in the wrapper it returns): that function is a
    compile factory, and what its callers hand it there is compiled (`Compiled.handed`)."""
    if type(arg) is not cst.Name:
        return
    for f in reversed(ctx.funcs):
        if arg.value in f.param_order:
            if f.cls is None:
                ctx.compile_facts.factories[f.qual] = (f.param_order.index(arg.value), opts)
            return


def _discarded(ctx, call: cst.Call) -> bool:
    """The call is a statement of its own, its value thrown away: `torch.compile(model)` returns
    a compiled wrapper and leaves `model` eager, so nothing is compiled (unlike nn.Module's
    in-place `model.compile()`)."""
    stmt = ctx.stmt_stack[-1] if ctx.stmt_stack else None
    if type(stmt) is cst.SimpleStatementLine:
        return any(type(s) is cst.Expr and s.value is call for s in stmt.body)
    return type(stmt) is cst.Expr and stmt.value is call


def note_assign(ctx, node: cst.Assign) -> None:
    """`torch._dynamo.config.<flag> = True` and `os.environ["TORCHDYNAMO_<FLAG>"] = "1"`."""
    for t in node.targets:
        target = t.target
        if type(target) is cst.Attribute:
            q = ctx.qualname(target)
            if q is not None and q.startswith(CONFIG + ".") and q[len(CONFIG) + 1:] in FLAGS:
                on = is_true(node.value)
                if on is not None:
                    ctx.compile_facts.flags[q[len(CONFIG) + 1:]] = on
        elif type(target) is cst.Subscript and ctx.qualname(target.value) in ENVIRON and len(target.slice) == 1:
            index = target.slice[0].slice
            if type(index) is cst.Index:
                _env_flag(ctx, index.value, node.value)


def _env_flag(ctx, name: cst.BaseExpression, value: cst.BaseExpression) -> None:
    flag = FLAG_ENV.get(string_value(name) or "")
    text = string_value(value)
    if flag is not None and text is not None:
        ctx.compile_facts.flags[flag] = text == "1"


def patch_flags(call: cst.Call) -> Dict[str, bool]:
    """The Dynamo flags `torch._dynamo.config.patch(...)` sets: keywords, a dict, or a name
    and a value."""
    out: Dict[str, bool] = {}
    for a in call.args:
        if a.keyword is not None and a.keyword.value in FLAGS and is_true(a.value) is not None:
            out[a.keyword.value] = bool(is_true(a.value))
    pos = _positional(call)
    if len(pos) == 1 and type(pos[0]) is cst.Dict:
        for el in pos[0].elements:
            if type(el) is cst.DictElement and string_value(el.key) in FLAGS and is_true(el.value) is not None:
                out[string_value(el.key)] = bool(is_true(el.value))
    elif len(pos) == 2 and string_value(pos[0]) in FLAGS and is_true(pos[1]) is not None:
        out[string_value(pos[0])] = bool(is_true(pos[1]))
    return out


def with_flags(ctx, node: cst.With) -> Dict[str, bool]:
    """The flags a `with torch._dynamo.config.patch(...):` sets for the roots in its body."""
    out: Dict[str, bool] = {}
    for item in node.items:
        if type(item.item) is cst.Call and ctx.qualname(item.item.func) in CONFIG_PATCH:
            out.update(patch_flags(item.item))
    return out


def eager_only(ctx, stmts) -> bool:
    """The innermost statement of `stmts` (the walk's statement stack, outermost first) is in
    code Dynamo does not trace: code that runs only when Dynamo is not tracing (the `else` of
    `if torch.compiler.is_compiling():`, the body of `if not torch.compiler.is_compiling():`,
    what follows, in the same block, an `if torch.compiler.is_compiling():` that returns), or
    the branch of an `if` on a Python value known on every path that it never takes."""
    for outer, inner in zip(stmts, stmts[1:]):
        block = getattr(getattr(outer, "body", None), "body", None)
        if type(block) not in (list, tuple):
            continue
        # (a small statement sits in a SimpleStatementLine of the block)
        at = next((i for i, s in enumerate(block) if inner is s or type(s) is cst.SimpleStatementLine
                   and any(inner is x for x in s.body)), None)
        if type(outer) is cst.If and _compiling_test(ctx, outer.test) is not None:
            if (at is not None) != _compiling_test(ctx, outer.test):
                return True  # the else of `if is_compiling()`, the body of `if not is_compiling()`
        if type(outer) is cst.If and ctx.if_truth.get(id(outer)) == (at is None):
            return True  # Dynamo specialises on a Python value: a branch it never takes is not traced
        if at is not None and any(type(s) is cst.If and _compiling_test(ctx, s.test) and s.orelse is None
                                  and always_leaves(s.body) for s in block[:at]):
            return True  # after `if torch.compiler.is_compiling(): return ...`
    return False


def note_if(ctx, node: cst.If) -> None:
    """Remember what an `if`'s test is known to be where the `if` is, before its branches run
    (`eager_only` asks inside them, where a name of the test may be rebound)."""
    known = _known(ctx, node.test)
    if known is not None:
        ctx.if_truth[id(node)] = known


def _known(ctx, test: cst.BaseExpression) -> Optional[bool]:
    """`test` is a Python value the model knows to be False (or True) wherever it comes from
    (fms's `if self.debug:`, `debug=False` in the constructor and no caller passing another;
    `if d is None:` where every call passes None): the tag survives a join only with itself
    (`values._py_join`). None: not known."""
    v = ctx.infer(test)
    return {"false": False, "true": True}.get(v.py) if v.kind == V.PY else None


def _compiling_test(ctx, test: cst.BaseExpression) -> Optional[bool]:
    """True for `torch.compiler.is_compiling()`, False for `not torch.compiler.is_compiling()`,
    None for any other test."""
    negated = type(test) is cst.UnaryOperation and type(test.operator) is cst.Not
    call = test.expression if negated else test
    if type(call) is not cst.Call or call.args or ctx.qualname(call.func) not in IS_COMPILING:
        return None
    return not negated


def in_broken_frame(ctx, compiled: str) -> str:
    """A compiled event's tag (`compiled.tag`), marked with the event that breaks the graph at
    every iteration of a loop of its function before it (`compiled.after_break`), when there is
    one: Dynamo then skips the whole frame ("graph break in a for/while loop"), so the rest of
    the loop runs eagerly. An event at the top level of a loop's body (not under a condition,
    in this function: a nested function is its own frame) is such a break for what follows it
    in that loop; `settle` decides, under the region's options, whether it does break."""
    loops = ctx.loop_nodes
    for loop in loops:
        first = ctx.loop_breaks.get(id(loop))
        if first is not None:
            return after_break(compiled, first)
    stmt = ctx.stmt_stack[-1] if ctx.stmt_stack else None
    if loops and stmt is not None and _directly_in(stmt, loops[-1]):
        ctx.loop_breaks.setdefault(id(loops[-1]), compiled)
    return compiled


def _directly_in(stmt: cst.CSTNode, loop: cst.CSTNode) -> bool:
    """`stmt` is a statement of `loop`'s body itself (it runs at every iteration), not of its
    `else` nor nested in another block."""
    body = getattr(getattr(loop, "body", None), "body", ())
    return any(s is stmt or type(s) is cst.SimpleStatementLine and any(x is stmt for x in s.body)
               for s in body)


def in_assert_message(ctx, node: cst.CSTNode) -> bool:
    """`node` is part of the message of the `assert` the walk is in: evaluated only when the
    assertion fails (and the program then raises), never by a passing step."""
    stmt = ctx.stmt_stack[-1] if ctx.stmt_stack else None
    msg = stmt.msg if type(stmt) is cst.Assert else None
    if msg is None:
        return False
    todo: list = [msg]
    while todo:
        n = todo.pop()
        if n is node:
            return True
        todo.extend(n.children)
    return False
