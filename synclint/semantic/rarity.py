"""Code that runs rarely, whatever loops it sits in: debug and visualisation code, memoised
functions, and code that runs on the first call or iteration only.

- a branch under a debug flag (`if self.save_debug:`, a `check=False` parameter), and a
  debug or visualisation helper (by its name, or a visualiser base: library.toml
  `[rarity]`);
- a function memoised by `functools.lru_cache`/`cache`: once per distinct argument;
- the rest of a block after `if self.inited: return` that the block then sets, a one-shot
  flag (`if first_batch: ...; first_batch = False`), a move stored back on the attribute it
  moves (`self.mask = self.mask.to(x.device)`): the first call or iteration only;
- a function that in its file only such code calls (`rare_functions`), and a method of a
  registered class that nothing builds (`ProjectFacts.unbuilt`);
- a recovery path: an exception handler (`except RuntimeError:`, an out-of-memory
  fallback), and a branch on a parameter compared with a constant (`if mode == "cpu":`)
  that only calls in such handlers select (`recovery_branch`): it runs after an error only.

eval/README.md's label definition takes all of these as cold. `heat.classify_test` and the
binder mark the branches; `rates.propagate` runs the rare functions as often as their
callers make them, their loops over items adding nothing (`SiteRate.stepping`).
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from synclint.paths import is_test_path, project_root
from synclint.semantic import library as L
from synclint.semantic.callgraph import debug_path, words
from synclint.semantic.rates import OUTSIDE, Entry, Rate, SiteRate
from synclint.semantic.syntax import child_nodes, code_of, descendants, is_none, last_name, self_attr, statements, string_value


def rare_functions(model, memo: Optional[Dict[str, Entry]] = None) -> Dict[str, Optional[Entry]]:
    """The in-file functions that run rarely (`rates.propagate`'s `rare`), whose loops over
    items do not make them run every step: debug and visualisation helpers (`debug_helper`),
    every function of a file that a folder or file name marks as a debug or visualisation
    tool (`callgraph.debug_path`), and memoised functions (`memoised`), with the entry that says so, and the functions that
    in this file only those call, or only calls under a debug flag or a once-only branch
    (None: their callers say why; `kmeans` called from a codebook's first-batch
    initialisation). Another module's every-step call still makes one hot (the project's
    heat)."""
    rare: Dict[str, Optional[Entry]] = dict(memoised(model) if memo is None else memo)
    folder = debug_path(model.filename, lambda: project_root([model.filename]))
    callers: Dict[str, List[Tuple[Optional[str], SiteRate]]] = {}
    for i, (caller, callee, _) in enumerate(model.calls):
        if callee in model.all_funcs:
            callers.setdefault(callee, []).append((caller, model.site_rates.get(i) or OUTSIDE))
    for q, info in model.all_funcs.items():
        if q in rare or info.entry:
            continue
        if folder is not None:
            rare[q] = Entry(f"{q}() is in {folder}, a debug or visualisation tool")
        elif debug_helper(model, info) is not None:
            rare[q] = Entry(f"{q}() is a debug or visualisation helper")
        elif info.cls is not None and model.project.never_built(info.cls.name):
            rare[q] = Entry(f"{info.cls.name} is registered, but no config or code of the tree builds it")
        elif (base := model.request_base(info)) is not None:
            rare[q] = Entry(f"{q}() runs once per request: {base} calls it once per call")
        elif self_test(info, callers.get(q, ())) and not _a_test_file(model.filename):
            rare[q] = Entry(f"{q}() is the module's own test: named like a test, run once by its module code")
    grew = True
    while grew:  # (a chain of helpers: one more level each round)
        grew = False
        for q, sites in callers.items():
            if q not in rare and not model.all_funcs[q].entry and all(
                    c in rare and c != q or site.once is not None for c, site in sites):
                rare[q] = None
                grew = True
    return rare


_TEST_NAME = re.compile(r"test(_\w+|\d*)")


def self_test(info, callers: Sequence[Tuple[Optional[str], SiteRate]]) -> bool:
    """A module's own test: a function (no method) named like a test (`test`, `test2`,
    `test_decode`) that takes no argument it must be given and that the module calls only
    from its own code outside loops (its `__main__` block), if at all: lightllm's Triton
    kernels test themselves against a torch reference. Not a script's `test(epoch)`, nor
    one an epoch loop calls."""
    if info.cls is not None or not _TEST_NAME.fullmatch(info.name) or set(info.params) - set(info.defaults):
        return False
    return all(caller is None and site.loop == Rate.ONCE for caller, site in callers)


def _a_test_file(filename: str) -> bool:
    """A test module by pytest's names: its tests are test code already (`test-loop`)."""
    return is_test_path(os.path.relpath(os.path.abspath(filename), project_root([filename])))


_MEMOISERS = frozenset(("functools.lru_cache", "functools.cache", "lru_cache", "cache"))


def memoised(model) -> Dict[str, Entry]:
    """Functions whose results `functools.lru_cache` or `cache` keeps, so that their bodies
    run once per distinct argument: decorated (`@lru_cache(maxsize=None)`), or a method
    its class wraps on its instances (`self._build = lru_cache(100)(self._build)` in
    `__init__` or a dataclass's `__post_init__`)."""
    out: Dict[str, Entry] = {}
    for q, info in model.all_funcs.items():
        node = info.node
        if type(node) is cst.FunctionDef and any(_memoiser(model, d.decorator) for d in node.decorators):
            out[q] = Entry(f"{q}() is memoised (functools.lru_cache): it runs once per distinct argument")
        if info.cls is not None and type(node) is cst.FunctionDef:  # (`__init__`, `__post_init__`, ...)
            for n in statements(node.body):
                if type(n) is cst.Assign and type(n.value) is cst.Call and _memoiser(model, n.value.func) \
                        and n.value.args and self_attr(n.value.args[0].value) is not None \
                        and any(self_attr(t.target) == self_attr(n.value.args[0].value) for t in n.targets):
                    m = f"{info.cls.name}.{self_attr(n.targets[0].target)}"
                    out[m] = Entry(f"{m}() is memoised (functools.lru_cache in {info.name}): it runs once per distinct argument")
    return out


def _memoiser(model, d: cst.BaseExpression) -> bool:
    """`lru_cache`, `functools.lru_cache(maxsize=8)`, `cache`, as a decorator or a wrapper."""
    f = d.func if type(d) is cst.Call else d
    return type(f) in (cst.Name, cst.Attribute) and model.qualname(f) in _MEMOISERS


def returns_until_set(node: cst.CSTNode, rest, model) -> bool:
    """`if self.inited: return` whose block goes on to set that flag (`self.inited = True`,
    `self.inited.data.copy_(...)`, `self.inited.fill_(1)`): what follows runs on the first
    call only (a codebook initialised from its first batch). Not where nothing there sets
    it (`if self.frozen: return x`: a switch, whatever its value)."""
    if type(node) is not cst.If or node.orelse is not None or not _only_return(node.body):
        return False
    flag = node.test
    if type(flag) not in (cst.Name, cst.Attribute):
        return False
    want = code_key(flag)
    for stmt in rest:
        for n in (stmt, *descendants(stmt)):
            if type(n) in (cst.Assign, cst.AugAssign, cst.AnnAssign) and any(code_key(t) == want for t in assigned_targets(n)):
                return True
            if type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value.endswith("_") \
                    and (code_key(n.func.value) == want or code_key(n.func.value).startswith(want + ".")):
                return True
    return False


def stores_own_move(model, node: cst.CSTNode) -> Optional[str]:
    """`self.attn_mask = self.attn_mask.to(device=x.device)` (possibly inside a conditional
    expression) in a method: the move is stored back, so later calls find the attribute on
    the device and the copy is a same-device no-op: the transfer runs on the first call
    only. Not where another method makes the attribute again (`self.grid = torch.arange(n)`
    at every forward, then `self.grid = self.grid.cuda()`). The attribute's code, or None."""
    f = model.func
    if not (type(node) is cst.Assign and len(node.targets) == 1 and f is not None and f.cls is not None
            and f.name != "__init__" and type(f.cls.node) is cst.ClassDef):
        return None
    attr = self_attr(node.targets[0].target)
    if attr is None or not _moves_back(node.value, attr):
        return None
    for d in f.cls.node.body.body:
        if type(d) is not cst.FunctionDef or d.name.value == "__init__":
            continue
        for n in statements(d.body):
            if type(n) in (cst.Assign, cst.AugAssign, cst.AnnAssign) and any(
                    self_attr(t) == attr for t in assigned_targets(n)) and not (
                    type(n) is cst.Assign and _moves_back(n.value, attr)):
                return None
    return f"self.{attr}"


def _moves_back(value: cst.BaseExpression, attr: str) -> bool:
    """`value` moves `self.<attr>` itself (`.to(...)`, `.cuda()`), inside it or as a whole."""
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in ("to", "cuda")
               and self_attr(n.func.value) == attr for n in (value, *descendants(value)))


def _only_return(body: cst.BaseSuite) -> bool:
    stmts = body.body if type(body) is cst.IndentedBlock else [body]
    return (len(stmts) == 1 and type(stmts[0]) in (cst.SimpleStatementLine, cst.SimpleStatementSuite)
            and len(stmts[0].body) == 1 and type(stmts[0].body[0]) is cst.Return)


def assigned_targets(n: cst.CSTNode) -> list:
    return [t.target for t in n.targets] if type(n) is cst.Assign else [n.target]


def debug_helper(model, info) -> Optional[str]:
    """Why a function is debug or visualisation code, if it is: its name has a debug word
    (`debug_second_stage`, `plot_grad_flow`; library.toml `[rarity]`), or its class derives
    from a visualiser (`debug_bases`: `ActionVisualizer.add_datasample`). Not by its class's
    name: Detic's `VisualizationDemo.run_on_video` runs the model on every frame. A framework
    hook is not one (a framework calls it)."""
    if info.entry:
        return None
    if words(info.name) & L.DEBUG_WORDS:
        return info.name
    if info.cls is not None:
        return model.library_base(info.cls.name, lambda b: b in L.DEBUG_BASES)
    return None



def debug_flag(model, test: cst.BaseExpression) -> Optional[str]:
    """The flag's code where an `if` test holds debug code: a name or attribute with a debug
    word (`if self.save_debug:`, `if cfg.VIS and ...:`), or a parameter with a check word
    that defaults to False (`def generate(..., check=False)`, then `if check:`; its callers
    may pass `**kwargs`, so who turns it on is not asked). Not a comparison
    (`if self.vis_thresh > 0.3:`) nor a negation."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return debug_flag(model, test.left) or debug_flag(model, test.right)
    if (type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.comparisons[0].operator) is cst.IsNot
            and is_none(test.comparisons[0].comparator)):
        # a debug option given a value (`if debug_percentile is not None:`, StyleGAN2-ADA's)
        name = last_name(test.left) if type(test.left) in (cst.Name, cst.Attribute) else None
        return code_of(test) if name and words(name) & L.DEBUG_WORDS else None
    if type(test) not in (cst.Name, cst.Attribute):
        return None
    name = last_name(test)
    said = words(name) if name else set()
    if said & L.DEBUG_WORDS:
        return code_of(test)
    f = model.func
    if not (said & L.CHECK_WORDS and type(test) is cst.Name and f is not None and name in f.params):
        return None
    node = f.node
    param = next((p for p in (*node.params.params, *node.params.kwonly_params) if p.name.value == name),
                 None) if type(node) is cst.FunctionDef else None
    off = param is not None and type(param.default) is cst.Name and param.default.value == "False"
    return name if off else None


def debug_flag_around(model) -> Optional[str]:
    """The debug flag of the innermost `if` whose body holds the statement the walk is at."""
    stack = model.stmt_stack
    for i in range(len(stack) - 2, -1, -1):
        s = stack[i]
        child = stack[i + 1]  # (a small statement's line is not on the stack)
        if type(s) is cst.If and type(s.body) is cst.IndentedBlock and any(
                c is child or type(c) is cst.SimpleStatementLine and any(x is child for x in c.body)
                for c in s.body.body):
            flag = debug_flag(model, s.test)
            if flag is not None:
                return flag
    return None


def one_shot(test: cst.BaseExpression, body: cst.CSTNode, model) -> bool:
    """`if first:` (alone or in an `and`) whose body sets `first = False`, where the function
    sets it True only outside the loop the test is in (`first_batch = True` before the
    batch loop): the body runs on one iteration at most."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return one_shot(test.left, body, model) or one_shot(test.right, body, model)
    f = model.func if model is not None else None
    if type(test) is not cst.Name or f is None or type(f.node) is not cst.FunctionDef or not model.loop_nodes:
        return False
    name = test.value

    def sets(n, value: str) -> bool:
        return type(n) is cst.Assign and type(n.value) is cst.Name and n.value.value == value and any(
            type(t.target) is cst.Name and t.target.value == name for t in n.targets)

    if not any(sets(n, "False") for n in statements(body)):
        return False
    loop = model.loop_nodes[-1]
    in_loop = {id(n) for n in statements(loop)}  # (of its assignments)
    assigned = [n for n in statements(f.node.body) if type(n) in (cst.Assign, cst.AugAssign, cst.AnnAssign)
                and any(type(t) is cst.Name and t.value == name for t in assigned_targets(n))]
    return all(sets(n, "False") or sets(n, "True") and id(n) not in in_loop for n in assigned)


def code_key(node: cst.CSTNode) -> str:
    """A node's code without whitespace, to compare two expressions."""
    return "".join(code_of(node).split())


# --------------------------------------------------------------------- recovery paths
# Exceptions that end an iteration rather than report an error: a handler of one restarts
# a loader (`except StopIteration: it = iter(loader)`), once per pass over it or more.
_ITERATION_ENDS = frozenset(("StopIteration", "StopAsyncIteration", "GeneratorExit"))


def error_handler(handler: cst.ExceptHandler, attempt: Optional[cst.BaseSuite] = None) -> Optional[str]:
    """The exception types of a handler that runs after an error only (`except RuntimeError
    as e:`, `except (OSError, ValueError):`), as written ("" for a bare `except:`); None for
    one that catches the end of an iterator, and for a bare `except:` where it or its `try`
    block (`attempt`; unknown: None) advances or restarts an iterator (`try: x = next(it)
    except: it = iter(loader)`: the end of a pass, control flow). A bare `except:` around
    anything else is a fallback (a compiled op that failed: MaskDINO's deformable attention)."""
    t = handler.type
    if t is None:
        return "" if attempt is not None and not _iterates(attempt) and not _iterates(handler.body) else None
    kinds = [e.value for e in t.elements] if type(t) is cst.Tuple else [t]
    if any(last_name(k) in _ITERATION_ENDS for k in kinds):
        return None
    return code_of(t)


def _iterates(block: cst.CSTNode) -> bool:
    """A call of `next`, `iter` or `__next__` in a block (not in a function defined there)."""
    return any(type(n) is cst.Call and last_name(n.func) in ("next", "iter", "__next__")
               for n in descendants(block))


def except_words(handler: str) -> str:
    """`except RuntimeError`, or `except` for a bare handler (`error_handler`'s "")."""
    return f"except {handler}" if handler else "except"


def handler_around(model) -> Optional[str]:
    """The exception types of the innermost error handler (`error_handler`) whose body holds
    the statement the walk is at, if any."""
    stack = model.stmt_stack
    for i in range(len(stack) - 2, -1, -1):
        s = stack[i]
        if type(s) is cst.ExceptHandler:
            owner = stack[i - 1] if i and type(stack[i - 1]) is cst.Try else None
            return error_handler(s, owner.body if owner is not None else None)
        if type(s) is cst.Try:
            child = stack[i + 1]
            for h in s.handlers:
                if _holds(h.body, child):
                    return error_handler(h, s.body)
            return None  # (the try body, `else` or `finally`: they run without an error)
        if type(s) in (cst.FunctionDef, cst.ClassDef):
            return None
    return None


def _holds(body: cst.BaseSuite, child: cst.CSTNode) -> bool:
    """`child` is a statement of the block `body` (a small statement: in one of its lines)."""
    stmts = body.body if type(body) is cst.IndentedBlock else (body,)
    return any(c is child or type(c) in (cst.SimpleStatementLine, cst.SimpleStatementSuite)
               and any(x is child for x in c.body) for c in stmts)


def recovery_around(model) -> Optional[Entry]:
    """Why the innermost `if` around the walk's statement runs on a recovery path only, if
    `recovery_branch` found that it does (`SemanticModel.recovery_branches`)."""
    stack = model.stmt_stack
    for i in range(len(stack) - 2, -1, -1):
        s = stack[i]
        if type(s) is cst.If and id(s.body) in model.recovery_branches and _holds(s.body, stack[i + 1]):
            return model.recovery_branches[id(s.body)]
        if type(s) in (cst.FunctionDef, cst.ClassDef):
            return None
    return None


def recovery_branch(model, test: cst.BaseExpression) -> Optional[Entry]:
    """Why an `if` body runs only on a recovery path, if it does: its test compares a
    parameter of the function with constants (`mode == "cpu"`, `mode in ("cpu", "meta")`),
    and every call in this file that may pass a matching value sits in an error handler
    (YOLOX's `get_assignments(..., "cpu")` after a CUDA out-of-memory error, while the
    every-step call passes nothing: the default "gpu"). Not where a call passes a value
    not known here, where the function is referred to other than by calling it (a
    callback), where another module passes it arguments, or where the function rebinds
    the parameter; nor for a framework hook (its caller is not in this file)."""
    f = model.func
    if f is None or f.entry or type(f.node) is not cst.FunctionDef:
        return None
    got = _parameter_test(model, test, f)
    if got is None:
        return None
    param, wanted = got
    if model.project.called_elsewhere(f.qual):
        return None
    sites = _uses_of(model).get(f.name, ())
    skip = 1 if f.cls is not None and not f.is_static else 0  # (`self.m(...)` passes `self`)
    handlers: List[str] = []
    for call, handler in sites:
        if call is None:
            return None  # (`fn = self.match`: called where this file does not see)
        if f.cls is None and type(call.func) is not cst.Name:
            continue  # (`x.match(...)`: a method of something else)
        value = _passed(call, f, param, skip)
        if value is _UNKNOWN or _literal(value) is None or _literal(value) in wanted:
            if handler is None:
                return None  # a call outside a handler may select it
            handlers.append(handler)
    if not handlers:
        return None  # (no call selects it: where else it is called from is not known)
    kinds = " or ".join(except_words(h) for h in dict.fromkeys(handlers))
    return Entry(f"{code_of(test)} in {f.qual}() holds it: only a call in an `{kinds}` handler selects it "
                 f"(a recovery path)")


_UNKNOWN = object()


def _parameter_test(model, test: cst.BaseExpression, f) -> Optional[Tuple[str, Set[tuple]]]:
    """(parameter, the constants that make the test true) for `p == C`, `C == p`, `p in (C1,
    C2)`, where `p` is a parameter the function never rebinds; else None."""
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return None
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    left = test.left
    if type(op) is cst.Equal and type(right) is cst.Name and type(left) is not cst.Name:
        left, right = right, left
    if type(left) is not cst.Name or left.value not in f.params:
        return None
    if type(op) is cst.Equal:
        wanted = {_literal(right)}
    elif type(op) is cst.In and type(right) in (cst.Tuple, cst.List, cst.Set):
        wanted = {_literal(e.value) for e in right.elements}
    else:
        return None
    if None in wanted or left.value in _rebound(model, f.node):
        return None
    return left.value, wanted


def _literal(e) -> Optional[tuple]:
    """A constant's value, comparable across spellings ('cpu' and "cpu"); None otherwise."""
    if e is None or e is _UNKNOWN:
        return None
    s = string_value(e)
    if s is not None:
        return ("str", s)
    if type(e) in (cst.Integer, cst.Float):
        return ("num", e.evaluated_value)
    if type(e) is cst.Name and e.value in ("True", "False", "None"):
        return ("const", e.value)
    return None


def _rebound(model, node: cst.FunctionDef) -> frozenset:
    """The names a function's body assigns (not in nested functions), worked out once per tree."""
    return model.once(("rebound", id(node)), lambda: _rebound_names(node))


def _rebound_names(node: cst.FunctionDef) -> frozenset:
    out = set()
    for n in descendants(node.body):
        targets = [t.target for t in n.targets] if type(n) is cst.Assign else \
            [n.target] if type(n) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr) else ()
        out.update(x.value for t in targets for x in (t, *descendants(t)) if type(x) is cst.Name)
    return frozenset(out)


def _passed(call: cst.Call, f, param: str, skip: int):
    """What `call` passes for `param`: an expression (the default where it passes nothing),
    `_UNKNOWN` where `*args`/`**kwargs` may hold it."""
    for a in call.args:
        if a.star:
            return _UNKNOWN
        if a.keyword is not None and a.keyword.value == param:
            return a.value
    order = f.param_order[skip:]
    i = order.index(param) if param in order else -1
    positional = [a for a in call.args if a.keyword is None]
    if 0 <= i < len(positional):
        return positional[i].value
    node = f.node
    p = next((p for p in (*node.params.params, *node.params.kwonly_params) if p.name.value == param), None)
    return p.default if p is not None and p.default is not None else _UNKNOWN


def _uses_of(model) -> Dict[str, List[Tuple[Optional[cst.Call], Optional[str]]]]:
    """name -> each use of that name in the file as a function: (the call, or None where the
    name is only referred to; the error handler around it, `error_handler`, or None). A
    name used as a variable counts as a reference too: a function with that name is then
    left alone. Built once per tree (`SemanticModel.once`)."""
    return model.once(("name uses",), lambda: _name_uses(model.module))


def _name_uses(module: cst.Module) -> Dict[str, List[Tuple[Optional[cst.Call], Optional[str]]]]:
    out: Dict[str, List[Tuple[Optional[cst.Call], Optional[str]]]] = {}
    stack: List[Tuple[cst.CSTNode, Optional[str]]] = [(module, None)]
    while stack:
        node, handler = stack.pop()
        t = type(node)
        if t is cst.Try:
            stack.extend((h, error_handler(h, node.body)) for h in node.handlers)
            stack.extend((c, handler) for c in child_nodes(node) if type(c) is not cst.ExceptHandler)
            continue
        if t in (cst.FunctionDef, cst.Lambda):
            handler = None  # (a function defined in a handler runs where it is called)
        if t is cst.Call:
            func = node.func
            name = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else None
            if name is not None:
                out.setdefault(name, []).append((node, handler))
                if type(func) is cst.Attribute:
                    stack.append((func.value, handler))
                stack.extend((c, handler) for c in child_nodes(node) if c is not func)
                continue
        elif t is cst.Name:
            out.setdefault(node.value, []).append((None, handler))
        elif t is cst.Attribute:
            out.setdefault(node.attr.value, []).append((None, handler))
            stack.append((node.value, handler))
            continue
        elif t is cst.FunctionDef:
            stack.extend((c, handler) for c in child_nodes(node) if c is not node.name)
            continue
        stack.extend((c, handler) for c in child_nodes(node))
    return out
