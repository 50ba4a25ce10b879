"""How often a loop's body runs, read from the loop and what it iterates: a loop over a
DataLoader's batches repeats every step; an epoch loop (whose body loops over batches, or
hands a loader to a function that does) runs its own statements once per epoch; a loop
over a container's items (a model's parameters, a dict's values) runs where it is; a loop
that ends in `break` runs once; a constructor's loops run once per object.

Names carry much of this (`train_loader`, `pbar`): the suffixes and names are data in
`library.toml` (`LOADER_NAME_SUFFIXES`, `LOADER_NAMES`, `PASSTHROUGH`)."""

from __future__ import annotations

import builtins
from typing import Dict, List, TYPE_CHECKING, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.callgraph import hot_name
from synclint.semantic.syntax import (COMPOUND_STATEMENTS, SCOPE_TYPES, SMALL_STATEMENTS, STATEMENTS, SUITES,
                                      child_nodes, descendants, last_name, statements)

if TYPE_CHECKING:
    from synclint.semantic.model import SemanticModel

__all__ = ["repeats_per_step", "walks_container", "walks_items", "runs_once", "epoch_loop", "iterates_batches"]


def repeats_per_step(ctx: "SemanticModel", loop) -> Tuple[bool, bool]:
    """Whether a `for` or `while` loop's body repeats every step where the loop is, and
    whether it is an epoch loop instead (its statements run once per epoch, the batch loop
    inside is hot). Neither in a constructor (it runs once per object: pytorch-YOLOv4 builds
    one grid per output layer in `__init__`); a loop that runs once does not repeat."""
    if in_constructor(ctx):
        return False, False
    if type(loop) is cst.For and epoch_loop(ctx, loop):
        return False, True
    if type(loop) is cst.While and passes_loop(ctx, loop):
        return False, True
    return not runs_once(loop), False


def passes_loop(ctx: "SemanticModel", node: cst.While) -> bool:
    """A `while` loop whose body holds a loop that steps wherever it is: over a loader's
    batches, or a decoding loop that feeds a model's output back into it (`heat.feeds_back`:
    a token, a denoising step). Each of its passes is an epoch, or one request of a serving
    loop (Wan2.1's `while True: item = in_q.get(); ...; for t in timesteps: ...`): its own
    statements run once per pass."""
    from synclint.semantic.heat import feeds_back  # (heat's site rates need this module's loops)

    inner, assigned = _inner_fors(node)
    return any(iterates_batches(ctx, f.iter, assigned) or feeds_back(ctx, f) for f in inner) or (
        calls_a_looper(ctx, node.body))


# Methods whose result is a model's or a dict's contents: a loop over them visits items,
# it is not a training step (`for k, v in model.state_dict().items(): v.cpu()`).
_CONTAINER_METHODS = frozenset((
    "items", "keys", "values", "parameters", "named_parameters", "buffers", "named_buffers",
    "modules", "named_modules", "children", "named_children", "state_dict",
))


def walks_container(it: cst.BaseExpression) -> bool:
    """`for x in <it>` walks a container's items: a method above, possibly under
    enumerate/zip/sorted/reversed/list; or a list, tuple or set written out in the code
    (`for channels in [1, 16, 64]:`): a fixed handful of passes, at the rate around it."""
    while type(it) is cst.Call:
        f = it.func
        if type(f) is cst.Attribute:
            return f.attr.value in _CONTAINER_METHODS
        if type(f) is cst.Name and f.value in ("enumerate", "zip", "sorted", "reversed", "list", "tuple") and it.args:
            it = it.args[0].value
            continue
        return False
    return type(it) in (cst.List, cst.Tuple, cst.Set)


def walks_items(ctx: "SemanticModel", loop: cst.For) -> bool:
    """`walks_container`, a loop of one pass (`range(1)`), or a loop over one dimension of a
    tensor (`for i in range(images.shape[0])`, `range(x.size(1))`) whose body does not step
    an optimizer: the items of one result (each image of a generated batch saved), at the
    rate around it. A loop that trains on each row (`loss.backward(); opt.step()`) is a step
    loop."""
    if walks_container(loop.iter):
        return True
    it = loop.iter
    if not (type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range" and len(it.args) == 1
            and ctx.is_builtin("range")):
        return False
    n = it.args[0].value
    if type(n) is cst.Integer and n.evaluated_value <= 1:
        return True  # `for _ in range(1):` (a warm-up pass): one pass at most, where it is
    dim = (type(n) is cst.Subscript and type(n.value) is cst.Attribute and n.value.attr.value == "shape"
           or type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "size" and len(n.args) == 1)
    return dim and not _steps_itself(ctx, loop.body)


# A loop's own statements: not those of a function, class or loop inside it.
_OWN_LOOP_STOPS = SCOPE_TYPES | {cst.For, cst.While}


def runs_once(loop) -> bool:
    """A loop whose body ends in `break` that nothing skips (no `continue` of its own): one
    iteration at most (`for batch in eval_loader: x = batch.cuda(); ...; break`). Or a retry
    loop, whose body ends in a `try` whose own block ends in `return` or `break` that
    nothing there skips (`for _ in range(retry): try: ...; return path except OSError:
    continue`): the loop goes round again only after an error."""
    body = loop.body
    if type(body) is not cst.IndentedBlock or not body.body:
        return False
    last = body.body[-1]
    if type(last) is cst.Try and type(last.body) is cst.IndentedBlock and last.handlers:
        body, last = last.body, last.body.body[-1]
        if type(last) is cst.SimpleStatementLine and type(last.body[-1]) is cst.Return:
            return not any(type(n) is cst.Continue for n in statements(body, _OWN_LOOP_STOPS))
    if type(last) is not cst.SimpleStatementLine or type(last.body[-1]) is not cst.Break:
        return False
    return not any(type(n) is cst.Continue for n in statements(body, _OWN_LOOP_STOPS))


def in_constructor(ctx: "SemanticModel") -> bool:
    f = ctx.func
    return f is not None and f.cls is not None and f.name == "__init__"


def epoch_loop(ctx: "SemanticModel", node: cst.For) -> bool:
    """A loop whose body loops over a DataLoader's batches (`for epoch in range(n): for x in
    loader:`) or hands a loader to a function that does (`acc = train(epoch, train_loader)`),
    and that does not itself iterate one; one whose body runs a decoding loop and is not
    itself a step (`for prompt in prompts: ...; for t in range(n): idx = cat(idx, model(idx))`:
    once per request); or a loop whose variable names epochs (`for epoch
    in range(self.epoch, epochs + 1): self.run_epoch()`) and whose body is not itself one
    optimizer step (full-batch training: `for epoch in range(200): loss.backward();
    opt.step()`)."""
    if iterates_batches(ctx, node.iter, {}):
        return False
    if _names_epochs(node.target) and not _steps_itself(ctx, node.body):
        return True
    if type(node.body) is cst.IndentedBlock and any(
            epoch_call(ctx, small.value) for line in node.body.body if type(line) is cst.SimpleStatementLine
            for small in line.body if type(small) in (cst.Expr, cst.Assign)):
        return True
    from synclint.semantic.heat import feeds_back  # (heat's site rates need this module's loops)

    inner, assigned = _inner_fors(node)
    return any(iterates_batches(ctx, f.iter, assigned) for f in inner) or (
        not _steps_itself(ctx, node.body) and (any(feeds_back(ctx, f) for f in inner)
                                               or calls_a_looper(ctx, node.body)))


def calls_a_looper(ctx: "SemanticModel", body: cst.CSTNode) -> bool:
    """A statement of the loop's own block (not under a condition) calls a function or
    method, of this file or another module, that runs its own loop over batches or decoding
    loop (`for prompt in prompts: img = denoise(model, prompt)`, with `denoise` in
    sampling.py): each pass is then an epoch or one request, not a step."""
    if type(body) is not cst.IndentedBlock:
        return False
    for line in body.body:
        if type(line) is not cst.SimpleStatementLine:
            continue
        for small in line.body:
            value = getattr(small, "value", None) if type(small) in (cst.Expr, cst.Assign, cst.AnnAssign) else None
            if type(value) is cst.Await:
                value = value.expression
            if type(value) is cst.Call and _is_looper(ctx, value.func):
                return True
    return False


def _is_looper(ctx: "SemanticModel", f: cst.BaseExpression) -> bool:
    if type(f) is cst.Name:
        info = ctx.all_funcs.get(f.value)
        if info is not None:
            return info.runs_steps
    elif type(f) is cst.Attribute and type(f.value) is cst.Name and f.value.value == "self" and ctx.cls is not None:
        info = ctx.all_funcs.get(f"{ctx.cls.name}.{f.attr.value}")
        if info is not None:
            return info.runs_steps
    q = ctx.qualname(f)
    if q is not None and ctx.project.loops_itself(q):
        return True
    if type(f) is cst.Attribute:
        for key in V.classes_of(ctx.infer(f.value)):
            info = ctx.all_funcs.get(f"{key}.{f.attr.value}")
            if (info.runs_steps if info is not None else ctx.project.loops_itself(f"{key}.{f.attr.value}")):
                return True
    return False


def _inner_fors(node) -> Tuple[List[cst.For], Dict[str, cst.BaseExpression]]:
    """The `for` loops in a loop's body (not in a function defined there), and the names its
    statements assign (name -> value), for `iterates_batches`."""
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
    return inner, assigned


def _names_epochs(target: cst.BaseExpression) -> bool:
    """`epoch`, `epoch_idx`, `i_epoch`, or one of a tuple (`for i, epoch in enumerate(...)`)."""
    if type(target) in (cst.Tuple, cst.List):
        return any(_names_epochs(e.value) for e in target.elements)
    return type(target) is cst.Name and "epoch" in target.value.lower().split("_")


def _steps_itself(ctx: "SemanticModel", body: cst.CSTNode) -> bool:
    """The loop's own statements (not an inner loop's) run a training step: `backward()`,
    an optimizer's `step()` (not a learning-rate scheduler's), `next()` of a loader's
    iterator, or a call of a function of
    this file that steps one outside any loop of its own or is a step by its name
    (`train_step(model, x)`)."""
    for n, name in ctx.once(("own named calls", id(body)), lambda: _own_named_calls(body)):
        if name == "step" and type(n.func) is cst.Attribute:
            classes = V.classes_of(ctx.infer(n.func.value))
            if not (classes and all(c.startswith("torch.optim.lr_scheduler.") for c in classes)) \
                    and "sched" not in (last_name(n.func.value) or "").lower():
                return True
            continue
        if name == "backward" or hot_name(name):
            return True
        if name == "next" and type(n.func) is cst.Name and n.args and iterates_batches(ctx, n.args[0].value, {}):
            return True  # one batch a pass (`x = next(it)`): a step loop whatever its name
        info = ctx.all_funcs.get(name) if type(n.func) is cst.Name else (
            ctx.all_funcs.get(f"{ctx.cls.name}.{name}") if ctx.cls is not None else None)
        if info is not None and info.steps_optimizer and info.node is not None and not any(
                type(x) in (cst.For, cst.While) for x in statements(info.node)):
            return True  # (one that loops over steps itself runs an epoch)
    return False


def _own_named_calls(body: cst.CSTNode) -> Tuple[Tuple[cst.Call, str], ...]:
    """The calls in a loop's own statements, with the names they call by (a fact of the tree
    that every walk asks of every loop)."""
    calls = (n for n in descendants(body, _OWN_LOOP_STOPS) if type(n) is cst.Call)
    return tuple((n, name) for n in calls if (name := last_name(n.func)) is not None)


# What `epoch_loop` looks into for inner loops: statements and their blocks, not expressions
_STATEMENT_HOLDERS = COMPOUND_STATEMENTS | {cst.IndentedBlock, cst.SimpleStatementLine, cst.Else,
                                            cst.ExceptHandler, cst.Finally}
_STATEMENT_PARTS = STATEMENTS | SMALL_STATEMENTS | SUITES | {cst.Else, cst.ExceptHandler, cst.Finally}


def epoch_call(ctx: "SemanticModel", e: cst.BaseExpression) -> bool:
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
        if kind == V.LOADER or (kind != V.ITER and type(v) in (cst.Name, cst.Attribute) and iterates_batches(ctx, v, {})):
            return True
    return False


_BUILTINS = frozenset(dir(builtins))


def iterates_batches(ctx: "SemanticModel", it: cst.BaseExpression, assigned: Dict[str, cst.BaseExpression], depth: int = 0) -> bool:
    """`loader`, `enumerate(tqdm(train_loader))`, `pbar` assigned one of those: batches."""
    while type(it) is cst.Call and it.args and (
        type(it.func) is cst.Name and it.func.value in ("enumerate", "zip", *L.PASSTHROUGH)
        or type(it.func) is cst.Attribute and it.func.attr.value in L.PASSTHROUGH_METHODS
    ):
        it = it.args[0].value
    if type(it) is cst.Name and it.value in assigned and depth < 3:
        return iterates_batches(ctx, assigned[it.value], assigned, depth + 1)
    if ctx.infer(it).kind == V.LOADER:
        return True
    name = it.value if type(it) is cst.Name else it.attr.value if type(it) is cst.Attribute else ""
    return name.endswith(L.LOADER_NAME_SUFFIXES) or name in L.LOADER_NAMES

