"""Heat: which code runs every step.

A site is hot in a for/while body or in a framework hook (`forward`, `*_step`), unless it
sits under a periodic guard (`if step % log_every == 0`); a function is hot when hot code
calls it. A function that itself loops over batches runs once per epoch: calling it from
the epoch loop does not make its own straight-line code hot. A guard whose body steps an
optimizer (`if (i + 1) % accum == 0: opt.step()`) runs every optimizer step: not a guard.

The finer view, an execution rate (`semantic.rates`), follows the same edges and entries:
each loop's rate (`loop_rate`: per step, per micro-step, per token, per epoch), each site's
(`rate_here`), each function's (`function_rates`). Code that runs rarely whatever loops it
sits in (debug code, memoised functions, the first call only) is `semantic.rarity`'s.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic.callgraph import STEPS, crosses, hot_name, spread
from synclint.semantic.declared import DeclaredHeat, qualified
from synclint.semantic.rates import OUTSIDE, Entry, FunctionRates, Rate, SiteRate, propagate
from synclint.semantic import values as V
from synclint.semantic.syntax import (child_nodes, code_of, descendants, is_none, last_name, read_first, self_attr,
                                      statements, string_value)
from synclint.semantic.rarity import (assigned_targets, code_key, debug_flag, debug_flag_around, except_words,
                                      handler_around, memoised, one_shot, rare_functions, recovery_around, recovery_branch,
                                      stores_own_move)

def hot_functions(model, declared: DeclaredHeat = DeclaredHeat(), module: str = "") -> Set[str]:
    """In-file functions that run hot: hot by name, called by a framework, called from a
    loop or hot code, or declared hot (`declared`, the file a module named `module`)."""
    cold = {q for q in model.all_funcs if declared.cold_scope(module, q)}
    steppers = {q for q, f in model.all_funcs.items() if f.steps_optimizer}
    frontier = [callee for caller, callee, site in model.calls
                if site and crosses(site, callee in steppers) and caller not in cold]
    frontier += [q for q, info in model.all_funcs.items() if info.entry or declared.is_hot(qualified(module, q))]
    edges: Dict[Optional[str], List[str]] = {}
    for caller, callee, site in model.calls:
        if crosses(site, callee in steppers):  # (None: a guarded or run-once site, which heat skips)
            edges.setdefault(caller, []).append(callee)
    per_epoch = per_request_functions(model) | cold
    return spread(frontier, edges, per_epoch)


def function_rates(model, declared: DeclaredHeat = DeclaredHeat(), module: str = "",
                   memo: Optional[Dict[str, Entry]] = None, rare=None) -> FunctionRates:
    """Each in-file function's execution rate and the chain that gave it, along the edges and
    from the entries `hot_functions` uses (so `rates.is_hot` of a function's rate is exactly
    its membership there), with each call site's rate as the walk saw it. `memo`, `rare`:
    the file's `memoised` and `rare_functions`, where the caller has them already."""
    steppers = {q for q, f in model.all_funcs.items() if f.steps_optimizer}
    cold: Dict[str, Entry] = {}
    seeds: Dict[str, Entry] = {}
    for q, info in model.all_funcs.items():
        glob = declared.cold_glob(qualified(module, q)) if declared.cold else None
        if glob is not None:
            cold[q] = Entry(f"{q}() is declared cold (cold-functions '{glob}')")
        glob = declared.hot_glob(qualified(module, q)) if declared.hot else None
        if info.entry:
            seeds[q] = _hook_entry(model, info)
        elif glob is not None:
            seeds[q] = Entry(f"{q}() is declared hot (hot-functions '{glob}')")
    per_epoch = per_request_functions(model)
    edges = []
    for i, (caller, callee, site) in enumerate(model.calls):
        through = crosses(site, callee in steppers)
        edges.append((caller, callee, model.site_rates.get(i) or _walked_site(site), through, bool(site) and through))
    memo = memoised(model) if memo is None else memo
    cold.update((q, e) for q, e in memo.items() if q not in cold)
    return propagate(edges, seeds, per_epoch, cold, rare_functions(model, memo) if rare is None else rare)


def per_request_functions(model) -> Set[str]:
    """The in-file functions whose own code runs once per epoch or request: those that loop
    over batches or decode themselves (a framework's hook that does stays hot: it is called
    every step), and callable objects that decode (`FuncInfo.per_request`: a pipeline's
    `__call__` denoises once per request; its loop is per step)."""
    return {q for q, info in model.all_funcs.items() if info.iterates_loader and (info.per_request or not info.entry)}


def _hook_entry(model, info) -> Entry:
    """Why a framework calls `info` every step: its name, the hook its class sets it as, or a
    framework base of its class."""
    if info.per_request:
        return Entry(f"{info.qual}() runs its own decoding loop: what is outside it runs once per call")
    if hot_name(info.name):
        return Entry(f"{info.qual}() runs every step by its name (library.toml hot_functions, or *_step)")
    hook = hook_alias(info.cls, info.name) if info.cls is not None else None
    if hook is not None:
        return Entry(f"{info.qual}() is set as {info.cls.name}.{hook}, which runs every step")
    base = model.library_base(info.cls.name, lambda b: L.framework_calls(b, info.name)) if info.cls else None
    return Entry(f"{info.qual}() is called every batch by {base or 'its framework'} (library.toml framework_hooks)")


def hook_alias(cls, name: str) -> Optional[str]:
    """The hook hot by its name that a class sets its method `name` as, if it does:
    `self.forward = self.forward_ckpt` in any method (either arm of a conditional
    expression), or `forward = _forward` in the class body. `forward()` then runs `name`."""
    for attr, exprs in cls.pending.items():
        if attr == name or not hot_name(attr):
            continue
        for e in exprs:
            arms = [e]
            while arms:
                a = arms.pop()
                if type(a) is cst.IfExp:
                    arms += [a.body, a.orelse]
                elif self_attr(a) == name or type(a) is cst.Name and a.value == name:
                    return attr
    return None


def _walked_site(site) -> SiteRate:
    """A site the walk recorded no rate for, from its heat value alone."""
    if site is None or site == STEPS:
        return SiteRate(guard=Entry("under a periodic guard or a once-only branch"))
    return SiteRate(Rate.PER_STEP) if site else OUTSIDE


# --------------------------------------------------------------------- site rates
def loop_rate(model, node, per_step: int, container: int, epoch: bool,
              batches: bool = False) -> Optional[Tuple[Rate, Entry, bool]]:
    """The rate a loop's body runs at, its entry sentence, and whether it steps wherever it
    is (`SiteRate.steps`: over a loader's batches, `batches`, decoding or micro-batches),
    where the walk is at the loop (its iterable walked, its body not yet): per step for a
    repeated loop, per micro-step for a micro-batch loop, per token for a decoding loop, per
    epoch for an epoch loop; None for a loop that adds no rate of its own (over a
    container's items, in a constructor, one that runs once)."""
    if container or not (per_step or epoch):
        return None
    where = f"{model.func.qual}()" if model.func is not None else "module code"
    stmt = model.stmt_stack[-1] if model.stmt_stack else None
    what = f"loops over {_short(node.iter)}" if type(node) is cst.For else "runs a while loop"
    if epoch:
        return Rate.PER_EPOCH, Entry(f"{where} {what}, once per epoch ({{at}})", stmt), False
    if feeds_back(model, node):
        # (like a function that loops over batches, one that decodes runs its own code once
        # per call: the prompt before the token loop, the checks after it. Taking the caller's
        # rate instead, measured in session 39, lost ten cold labels (a loop over a CLI's
        # prompts, a few test samples per epoch) for three hot ones: the caller's loop is
        # itself per request there, which no rule says yet)
        model.note_decodes()
        return Rate.PER_TOKEN, Entry(f"{where} {what}, feeding a model's output back into it ({{at}})", stmt), True
    if micro_batches(model, node):
        return Rate.PER_MICRO_STEP, Entry(
            f"{where} {what}, running backward() where the optimizer steps outside the loop ({{at}})", stmt), True
    # (a loop over a loader's batches, `batches`, steps wherever it is; a loop over a list's
    # items repeats as often as its function runs: `SiteRate.steps`)
    return Rate.PER_STEP, Entry(f"{where} {what} ({{at}})", stmt), batches


def rate_here(model, loops: int = 0) -> SiteRate:
    """The rate of the site the walk is at: the join of the loops around it (`loops`: one more,
    a `while` loop whose test is being visited), under a periodic guard or a once-only branch
    if one holds it (`model.guard_depth`, `model.once_depth`)."""
    rate, entry = Rate.ONCE, None
    steps, steps_entry = Rate.ONCE, None
    for n in model.loop_nodes:
        got = model.loop_rates.get(id(n))
        if got is not None and got[0] >= rate:  # (the innermost of equals names the entry)
            rate, entry = got[:2]
        if got is not None and got[2] and got[0] >= steps:
            steps, steps_entry = got[:2]
    if loops and rate < Rate.PER_STEP:
        where = f"{model.func.qual}()" if model.func is not None else "module code"
        rate, entry = Rate.PER_STEP, Entry(f"{where} runs a while loop ({{at}})", model.stmt_stack[-1] if model.stmt_stack else None)
    if not (model.guard_depth or model.once_depth) and entry is None:
        return OUTSIDE
    where = f" in {model.func.qual}()" if model.func is not None else ""
    flag = debug_flag_around(model) if model.once_depth else None
    stored = stores_own_move(model, model.stmt_stack[-1]) if model.once_depth and model.stmt_stack else None
    first = bool(model.first_depth) and not model.failing_depth and flag is None
    once = None
    if model.failing_depth:
        once = Entry(f"an assert's message{where}: built only when the assert fails")
    elif flag is not None:
        once = Entry(f"a debug flag ({flag}){where} holds it")
    elif stored is not None:
        once = Entry(f"the move is stored back in {stored}{where}: later calls find it moved")
    elif model.once_depth and (recovery := recovery_around(model)) is not None:
        once = recovery
    elif model.once_depth and (handler := handler_around(model)) is not None:
        once = Entry(f"an `{except_words(handler)}` handler{where} holds it: it runs after an error only")
    elif model.once_depth:
        once = Entry(f"a branch that runs once{where} holds it")
    return SiteRate(rate, entry,
                    guard=Entry(f"a periodic guard{where} holds it") if model.guard_depth else None,
                    once=once, steps=steps, steps_entry=steps_entry, debug=flag is not None, first=first)


def _short(node: cst.CSTNode, limit: int = 40) -> str:
    text = " ".join(code_of(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def feeds_back(model, loop) -> bool:
    """A decoding loop: its body calls a model (an `nn.Module` value) and then rebinds a name
    that call took as input (or that its input was computed from earlier in the body: a
    cropped context) from what the call returned, through at least one more step
    (`logits = model(idx); nxt = logits[:, -1].argmax(-1); idx = torch.cat([idx, nxt], 1)`),
    so each iteration runs the model on its last output: one generated token. The input must
    be carried from the iteration before (read before the body binds it). A recurrent cell's
    state handed back as it came out (`out, h = rnn(x, h)`) is not one."""
    assigns = _own_assigns(loop.body, [])
    reads = [_names(value) for _, value in assigns]
    varying = _per_iteration(loop, assigns)
    for i, (targets, value) in enumerate(assigns):
        for call in (n for n in (value, *descendants(value)) if type(n) is cst.Call and n.args):
            if _roots(call.func) & varying:
                continue  # `self.layers[i](x)`, `layer(x)` over `self.layers`: a stack of layers
            inputs = set().union(*(_paths(a.value) for a in call.args))
            for (earlier, earlier_value) in reversed(assigns[:i]):
                if _touching(inputs, earlier) and not _layer_output(earlier_value, varying):
                    inputs |= _paths(earlier_value)  # `idx_cond = idx[:, -block:]`, then `model(idx_cond)`
            derived = {_root(t) for t in targets}  # names holding the output, then what is computed from it
            fed: Set[str] = set()
            for (later, _), used in zip(assigns[i + 1:], reads[i + 1:]):
                if used & derived:
                    fed.update(_root(p) for p in _touching(inputs, later))
                    derived.update(_root(t) for t in later)
            # the input the next iteration reads is the one fed back (not a name the body
            # binds before the call: `p = output; p = interp(p); p = p.transpose(...)`)
            if fed and read_first(loop.body, fed) and (_own_method(model, call.func)
                                                       or model.infer(call.func).kind == V.MODULE):
                return True  # (the module is asked last: it is the dear part)
    return False


def _per_iteration(loop, assigns) -> Set[str]:
    """The names a `for` loop binds anew each iteration from its own target: the target
    (`i`, `layer`) and what the body computes from it before use (`block = self.blocks[i]`).
    A model called through one of them is another module each iteration."""
    if type(loop) is not cst.For:
        return set()
    varying = set(_bound(loop.target))
    for targets, value in assigns:
        if _roots(value) & varying:
            varying.update(_root(t) for t in targets)
    return varying


def _layer_output(value: cst.BaseExpression, varying: Set[str]) -> bool:
    """`value` is what one of a stack's layers computed (`self.token_confidence[i](desc0)`):
    what a helper then does with it (LightGlue's pruning mask) feeds the next layer, not the
    same model's next step."""
    return any(type(n) is cst.Call and _roots(n.func) & varying for n in (value, *descendants(value)))


def _roots(node: cst.CSTNode) -> Set[str]:
    """The names `node` reads (`self.layers[i]` reads `self` and `i`; not `layers`)."""
    return {_root(p) for p in _paths(node)}


def _own_method(model, func: cst.BaseExpression) -> bool:
    """`self.sample_next(seq)` in a method of an `nn.Module` class that defines it: a step
    of the module itself (LMModel.generate's `self._sample_next_token`)."""
    cls = model.func.cls if model.func is not None else None
    if not (cls is not None and cls.is_module and type(cls.node) is cst.ClassDef and type(func) is cst.Attribute
            and type(func.value) is cst.Name and func.value.value == "self"):
        return False  # (the class's own body: a method defined below the loop counts too)
    return any(type(d) is cst.FunctionDef and d.name.value == func.attr.value for d in cls.node.body.body)


def _names(node: cst.CSTNode) -> Set[str]:
    return {n.value for n in (node, *descendants(node)) if type(n) is cst.Name}


def _paths(node: cst.CSTNode) -> Set[str]:
    """What `node` reads, an attribute of a name as its whole path: `next(self.loader)` reads
    `self.loader`, not all of `self` (so storing `self.q_loss` feeds nothing back into it)."""
    out: Set[str] = set()

    def visit(n: cst.CSTNode) -> None:
        path = _path(n)
        if path is not None:
            out.add(path)
        elif type(n) is cst.Attribute:
            visit(n.value)
        else:
            for c in child_nodes(n):
                visit(c)

    visit(node)
    return out


def _path(n: cst.CSTNode) -> Optional[str]:
    """`a.b.c` for a name or a chain of attributes on one; None for anything else."""
    parts: List[str] = []
    while type(n) is cst.Attribute:
        parts.append(n.attr.value)
        n = n.value
    return ".".join([n.value, *reversed(parts)]) if type(n) is cst.Name else None


def _root(path: str) -> str:
    return path.split(".", 1)[0]


def _touching(reads: Set[str], stores) -> Set[str]:
    """The paths in `reads` that a store to one of `stores` changes: the same path, a path
    inside it (`seq.data = t` changes what reading `seq` sees) or one it is inside."""
    return {r for r in reads for s in stores if r == s or s.startswith(r + ".") or r.startswith(s + ".")}


def _own_assigns(block: cst.CSTNode, out: List[Tuple[List[str], cst.BaseExpression]]):
    """`(target names, value)` of the assignments in a block, in order, entering `if`/`with`/
    `try` blocks but not nested loops or functions (`x = ...`, `a, b = ...`, `x += ...`)."""
    for c in (block.body if type(block) in (cst.IndentedBlock, cst.SimpleStatementLine) else ()):
        if type(c) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
            targets = [t.target for t in c.targets] if type(c) is cst.Assign else [c.target]
            if c.value is not None:
                out.append(([n for t in targets for n in _bound(t)], c.value))
        elif type(c) is cst.SimpleStatementLine:
            _own_assigns(c, out)
        elif type(c) in (cst.If, cst.With, cst.Try):
            _own_assigns(c.body, out)
    return out


def _bound(target: cst.BaseExpression) -> List[str]:
    """The names or attribute paths an assignment target rebinds or updates: `x`, `a, b`, the
    `seq` of `seq[..., i] = t`, `seq.data` of `seq.data = t` (`_touching` relates it to `seq`);
    not the indices (`scores[i, idx] = s` leaves `i`)."""
    if type(target) in (cst.Tuple, cst.List):
        return [n for e in target.elements for n in _bound(e.value)]
    if type(target) is cst.StarredElement:
        return _bound(target.value)
    while type(target) is cst.Subscript:
        target = target.value
    path = _path(target)
    if path is not None:
        return [path]
    while type(target) in (cst.Subscript, cst.Attribute):  # `xs[i].data = t`: xs
        target = target.value
    return [target.value] if type(target) is cst.Name else []


def micro_batches(model, loop) -> bool:
    """A micro-batch loop of gradient accumulation: its body runs `backward()` and steps no
    optimizer, while the region around it (the enclosing loop's body, else the function's)
    steps one outside it: several of its iterations make one optimizer step."""
    calls = model.once(("method calls", id(loop.body)), lambda: tuple(
        n for n in descendants(loop.body) if type(n) is cst.Call and type(n.func) is cst.Attribute))
    if not any(c.func.attr.value == "backward" for c in calls) or any(steps_optimizer(c, model) for c in calls):
        return False
    around = model.loop_nodes[-1].body if model.loop_nodes else (model.func.node.body if model.func is not None
                                                                    and model.func.node is not None else None)
    if around is None:
        return False
    inside = {id(n) for n in descendants(loop)}
    return any(type(n) is cst.Call and id(n) not in inside and n is not loop and steps_optimizer(n, model)
               for n in descendants(around))


# --------------------------------------------------------------------- `if` tests
def _moves_to_cuda(body: cst.CSTNode) -> bool:
    """A block that calls `.cuda()` or `.to("cuda...")`: it runs where CUDA is."""
    for n in descendants(body):
        if type(n) is cst.Call and type(n.func) is cst.Attribute:
            m = n.func.attr.value
            if m == "cuda" or m == "to" and n.args and (string_value(n.args[0].value) or "").startswith("cuda"):
                return True
    return False


def classify_test(model, test: cst.BaseExpression, body: cst.CSTNode) -> str:
    """"cpu-body" / "cpu-else" for a test that picks the CUDA-less path, "guard" for a
    periodic guard, "once" for a branch that runs once at most ("first": on the first call
    or step only), "" otherwise."""
    negated = False
    original = test
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        negated = True
        test = test.expression
    if type(test) is cst.Name:  # `use_gpu = torch.cuda.is_available()`, then `if use_gpu:`
        b = model.binding(test.value)  # (or `mps = device == "mps"`, then `if mps:`)
        if b is not None and b.prev is None and (
                type(b.expr) is cst.Call or type(b.expr) is cst.Comparison and _device_side(b.expr) is not None):
            test = b.expr
    if type(test) is cst.Call and model.torch_name(test.func) in ("cuda.is_available", "cuda.is_initialized"):
        return "cpu-body" if negated else "cpu-else"
    if type(test) is cst.Call and model.torch_name(test.func) in L.OTHER_ACCELERATOR_AVAILABLE:
        # `if torch.backends.mps.is_available():` is false on a CUDA machine
        return "cpu-else" if negated else "cpu-body"
    if type(test) is cst.Attribute and test.attr.value == "is_cuda":
        if negated and _moves_to_cuda(body):
            return ""  # `if not t.is_cuda: t = t.cuda()`: a host tensor where CUDA is (VAR's dist.allgather)
        return "cpu-body" if negated else "cpu-else"
    if type(test) is cst.Call and model.torch_name(test.func) in L.EXPORT_ONLY:
        # `if torch.onnx.is_in_onnx_export():` runs while exporting a graph, never in a
        # training or inference run: as the CUDA-less path, nothing there is reported
        return "cpu-else" if negated else "cpu-body"
    cpu_side = _device_side(test) if type(test) is cst.Comparison else None
    if cpu_side is not None:
        return "cpu-body" if cpu_side != negated else "cpu-else"
    if debug_flag(model, original) is not None:
        return "once"  # `if self.save_debug:`: debug code, which a normal run does not reach
    if tensor_test(model, test) is negated:
        return "once"  # `if not torch.is_tensor(t):` of a known tensor: a branch never taken
    # (`not step % every` is periodic too: the test as written is asked)
    if (periodic_test(original, model) or not negated and _clock_due(test, body, model)) \
            and not body_steps_optimizer(body, model):
        return "guard"
    if _exits(body):
        return "once"  # `if not math.isfinite(loss): print(...); sys.exit(1)`: at most once
    if not negated and _first_steps(test, model):
        # `if step == 0:`: the first step only; `if num_seen < 10:`: the first steps
        return "first" if type(test.comparisons[0].operator) is cst.Equal else "once"
    if not negated and _fills_up(test, body):
        return "once"  # `if len(shown) < 15: shown.append(...)`: at most 15 times
    if not negated and one_shot(test, body, model):
        return "first"  # `if first_batch: ...; first_batch = False`: the first iteration only
    recovery = recovery_branch(model, test) if not negated else None
    if recovery is not None:
        model.recovery_branches[id(body)] = recovery
        return "once"  # `if mode == "cpu":` that only an out-of-memory handler's call selects
    return ""


def tensor_test(model, test: cst.BaseExpression) -> Optional[bool]:
    """What `torch.is_tensor(e)` / `isinstance(e, torch.Tensor)` gives, where the model knows
    what `e` is: True for a tensor it made (not one only assumed: a `forward` parameter, a
    value of unknown device the callers passed), False for a Python number or string or a
    NumPy array; None otherwise (`t` of `for t in timesteps` over a tensor is a tensor)."""
    if type(test) is not cst.Call or not test.args or test.args[0].keyword is not None or test.args[0].star:
        return None
    q = model.qualname(test.func)
    if q in ("torch.is_tensor",) and len(test.args) == 1:
        pass
    elif q is None and type(test.func) is cst.Name and test.func.value == "isinstance" and len(test.args) == 2 \
            and model.qualname(test.args[1].value) in ("torch.Tensor", "torch.tensor.Tensor"):
        pass
    else:
        return None
    v = model.infer(test.args[0].value)
    if v.kind == V.TENSOR and not v.assumed:
        return True
    if v.kind == V.NUMPY or v.kind == V.PY and v.py in (*V.NUMBERS, "str"):
        return False
    return None


def _device_side(test: cst.Comparison) -> Optional[bool]:
    """For `device == "cpu"` / `args.device != "cuda"` / `x.device.type == "mps"`: whether the
    test is true where CUDA does not run the code (`== "cpu"`, `== "mps"`: the branch runs
    without CUDA); None for any other test."""
    if len(test.comparisons) != 1:
        return None
    comp = test.comparisons[0]
    left = test.left
    if type(comp.operator) not in (cst.Equal, cst.NotEqual):
        return None
    s = string_value(comp.comparator)
    is_dev = type(left) in (cst.Name, cst.Attribute) and (
        "device" in (left.value if type(left) is cst.Name else left.attr.value)
        or (type(left) is cst.Attribute and left.attr.value == "type")
    )
    if not is_dev or s is None:
        return None
    return s.startswith(L.NON_CUDA_DEVICES) != (type(comp.operator) is cst.NotEqual)


def _first_steps(test: cst.BaseExpression, model) -> bool:
    """`counter == 0` / `counter < 10`: a counter this code increments, against a literal. Not
    a name that holds a tensor where it is tested (a count is a Python number; `accept_length
    == 0` of a GPU max is data, however another path counts it)."""
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return False
    comp = test.comparisons[0]
    if type(comp.operator) not in (cst.Equal, cst.LessThan, cst.LessThanEqual):
        return False
    if type(comp.comparator) is not cst.Integer:
        return False
    return model.is_counter(test.left) and model.infer(test.left).kind != V.TENSOR


def _fills_up(test: cst.BaseExpression, body: cst.CSTNode) -> bool:
    """`len(xs) < N` (or `<=`) whose body appends to `xs`: each run brings it closer to N,
    so it runs at most N times."""
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) in (cst.LessThan, cst.LessThanEqual)
            and type(test.comparisons[0].comparator) is cst.Integer):
        return False
    left = test.left
    if not (type(left) is cst.Call and type(left.func) is cst.Name and left.func.value == "len"
            and len(left.args) == 1 and type(left.args[0].value) is cst.Name):
        return False
    name = left.args[0].value.value
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in ("append", "extend")
               and type(n.func.value) is cst.Name and n.func.value.value == name for n in descendants(body))


def periodic_test(test: cst.BaseExpression, model=None, depth: int = 0) -> bool:
    """`i % N == 0` (or `not i % N`), alone or inside `and`/`or`; with `or`, the other side
    may also be a one-step test (`step % every == 0 or step == last`, `... or last_step`) or a
    first-steps one (`step < 3 or ...`);
    a name assigned such a test (`is_metric_step = i % every == 0 or last`) is one too."""
    if model is not None and type(test) is cst.Name and depth < 4:
        origin = model.origin(test)
        if origin is not None and origin is not test and periodic_test(origin, model, depth + 1):
            return True
    if model is not None and type(test) in (cst.Name, cst.Attribute, cst.Call):
        # a flag made elsewhere: returned by a method, passed by the callers, stored on
        # `self` (OLMo's `collect_param_metrics`, from `global_step % interval == 0`)
        v = model.infer(test)
        return v.kind == V.PY and v.py == "periodic"
    if type(test) is cst.BooleanOperation:
        if type(test.operator) is cst.And:
            return periodic_test(test.left, model, depth) or periodic_test(test.right, model, depth)
        left, right = periodic_test(test.left, model, depth), periodic_test(test.right, model, depth)
        return (left or _one_step(test.left, model) or _first_few(test.left, model)) and (
            right or _one_step(test.right, model) or _first_few(test.right, model)) and (left or right)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _period(test.expression, model)
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        left = test.left
        op = test.comparisons[0].operator
        return _period(left, model) and type(op) is cst.Equal
    return False


def _period(e: cst.BaseExpression, model=None) -> bool:
    """`i % N`, N a period: not a count of micro-batches per optimizer step
    (`i % trainer.accumulate_grad_batches` is every optimizer step), nor a period of 1."""
    if not (type(e) is cst.BinaryOperation and type(e.operator) is cst.Modulo) or _a_size(e.left):
        return False
    return last_name(e.right) not in L.ACCUMULATION_STEPS and not _default_one(e.right, model)


_SIZE_METHODS = frozenset(("size", "numel", "dim", "nelement"))


def _a_size(e: cst.BaseExpression) -> bool:
    """`e` is a tensor's dimension (`x.size(1)`, `x.shape[0]`, `x.ndim`), no step count: `if
    lrs.size(1) % 2 == 0:` tests a shape's parity at every call. (Not `len(xs)`: a list that
    grows by one a step counts steps: `if len(self.losses) % every == 0:`.)"""
    if type(e) is cst.Call:
        return type(e.func) is cst.Attribute and e.func.attr.value in _SIZE_METHODS
    if type(e) is cst.Subscript:
        return type(e.value) is cst.Attribute and e.value.attr.value == "shape"
    return type(e) is cst.Attribute and e.attr.value in ("ndim", "shape")


def _default_one(e: cst.BaseExpression, model) -> bool:
    """`N` is a parameter whose default is 1 and that no caller passes (or an attribute
    `__init__` sets from one): audiolm's `steps % self.log_losses_every`, from
    `log_losses_every: int = 1`, holds at every step."""
    if model is None:
        return False
    if type(e) is cst.Attribute and type(e.value) is cst.Name and e.value.value == "self" and model.cls is not None:
        exprs = model.cls.pending.get(e.attr.value) or ()
        if len(exprs) != 1 or type(exprs[0]) is not cst.Name:
            return False
        qual, name = f"{model.cls.name}.__init__", exprs[0].value
    elif type(e) is cst.Name and model.func is not None and e.value in model.func.params:
        qual, name = model.func.qual, e.value
    else:
        return False
    info = model.all_funcs.get(qual)
    node = info.node if info is not None else None
    if type(node) is not cst.FunctionDef or name not in info.defaults:
        return False
    param = next((p for p in (*node.params.params, *node.params.kwonly_params) if p.name.value == name), None)
    default = param.default if param is not None else None
    return type(default) is cst.Integer and default.value == "1" and model.param_from_callers(qual, name) is None


def skips_unless_periodic(node: cst.If, model) -> bool:
    """`if step % N != 0: continue` (or `return`, or `if not step % N == 0:`, or such a test
    inside `or`): what follows it in its block runs once every N steps, as under
    `if step % N == 0:` (Lightning's `ModelCheckpoint.on_train_batch_end`)."""
    if node.orelse is not None or not _only_exit(node.body):
        return False
    return _not_periodic(node.test, model)


def _only_exit(body: cst.BaseSuite) -> bool:
    stmts = body.body if type(body) is cst.IndentedBlock else [body]
    if len(stmts) != 1 or type(stmts[0]) not in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
        return False
    small = stmts[0].body
    return len(small) == 1 and type(small[0]) in (cst.Continue, cst.Return)


def _not_periodic(test: cst.BaseExpression, model) -> bool:
    """True exactly when a periodic test is false: `i % N != 0`, `i % N` (truthy), `not
    <periodic>`; in an `or`, either side (the rest then needs both sides false)."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.Or:
        return _not_periodic(test.left, model) or _not_periodic(test.right, model)
    if type(test) is cst.BinaryOperation:
        return _period(test, model)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return periodic_test(test.expression, model)
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        left, comp = test.left, test.comparisons[0]
        return (_period(left, model) and type(comp.operator) is cst.NotEqual and type(comp.comparator) is cst.Integer
                and comp.comparator.evaluated_value == 0)
    return False


def _clock_due(test: cst.BaseExpression, body: cst.CSTNode, model) -> bool:
    """`now - last_log > every` (or `>=`), alone or inside `and`, where `now` is a clock
    reading and the body sets `last_log` again: it runs once every so many seconds (vicreg's
    `current_time - last_logging > args.log_freq_time`). Without the reset the test stays
    true once it holds (`time.time() - start > limit`), so it is not periodic."""
    if type(test) is cst.BooleanOperation:
        return type(test.operator) is cst.And and (
            _clock_due(test.left, body, model) or _clock_due(test.right, body, model))
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) in (cst.GreaterThan, cst.GreaterThanEqual)):
        return False
    diff = test.left
    if not (type(diff) is cst.BinaryOperation and type(diff.operator) is cst.Subtract
            and type(diff.right) is cst.Name):
        return False
    now = model.origin(diff.left)
    if not (type(now) is cst.Call and model.qualname(now.func) in L.TIMING_NAMES):
        return False
    last = diff.right.value
    return any(type(n) in (cst.Assign, cst.AnnAssign) and any(
        type(t) is cst.Name and t.value == last for t in assigned_targets(n)) for n in statements(body))


def _one_step(test: cst.BaseExpression, model) -> bool:
    """`step == last` (numbers compared for equality), or a name assigned one: true on one step."""
    if model is not None and type(test) is cst.Name:
        test = model.origin(test) or test
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) is cst.Equal):
        return False
    # beside a periodic test (`i % N == 0 or i == last`), an equality of numbers is a
    # one-step test; one with a string or a constant (`mode == "train"`) is not
    sides = (test.left, test.comparisons[0].comparator)
    return not any(string_value(x) is not None or type(x) is cst.Name and x.value in ("None", "True", "False")
                   for x in sides)


def _first_few(test: cst.BaseExpression, model) -> bool:
    """`step < 3` (or `<=`) against a literal: beside a periodic test (`step < 3 or step % 10
    == 0`, OLMo's system metrics), true on the first few steps only."""
    if model is not None and type(test) is cst.Name:
        test = model.origin(test) or test
    return (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) in (cst.LessThan, cst.LessThanEqual)
            and type(test.comparisons[0].comparator) is cst.Integer)


_EXITS = {"sys.exit", "exit", "quit", "os._exit"}


def _exits(body: cst.CSTNode) -> bool:
    """The block ends the program or raises: it runs at most once."""
    stmts = body.body if type(body) is cst.IndentedBlock else ()
    if not stmts or type(stmts[-1]) is not cst.SimpleStatementLine:
        return False
    last = stmts[-1].body[-1]
    if type(last) is cst.Raise:
        return True
    if type(last) is cst.Expr and type(last.value) is cst.Call:
        f = last.value.func
        name = f.value if type(f) is cst.Name else f"{f.value.value}.{f.attr.value}" if (
            type(f) is cst.Attribute and type(f.value) is cst.Name) else None
        return name in _EXITS
    return False


def body_steps_optimizer(body: cst.CSTNode, model=None) -> bool:
    """The guarded body calls `.step()` of something (an optimizer, a scaler, a scheduler
    next to one): gradient accumulation, which runs every optimizer step. A learning-rate
    scheduler stepped alone (`scheduler.step(val_score)` after a validation every N steps)
    is not one."""
    for n in descendants(body):
        if type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "step":
            if model is not None and _lr_scheduler(model.infer(n.func.value)):
                continue
            return True
    return False


def steps_optimizer(call: cst.Call, model) -> bool:
    """`opt.step()` of what is known to be an optimizer or a gradient scaler (not an
    environment's `env.step(action)`, nor a learning-rate scheduler): what makes a function
    a step of training for `callgraph.STEPS`."""
    func = call.func
    if not (type(func) is cst.Attribute and func.attr.value == "step"):
        return scaler_called(call, model)
    v = model.infer(func.value)
    if v.kind == V.OBJECT and v.cls == L.GRAD_SCALER:
        return True  # `scaler.step(optimizer)`: the optimizer's step, through the scaler
    return v.kind == V.OPTIM and not _lr_scheduler(v)


def scaler_called(call: cst.Call, model) -> bool:
    """`loss_scaler(loss, optimizer, ...)` of timm's `NativeScaler`, which runs a CUDA
    `GradScaler`'s `step(optimizer)` inside (`L.SCALER_CALLABLES` says where the optimizer is)."""
    func = call.func
    return len(call.args) >= 2 and type(func) in (cst.Name, cst.Attribute) \
        and V.classes_of(model.infer(func)) == (L.NATIVE_SCALER,)


def _lr_scheduler(v) -> bool:
    classes = V.classes_of(v)
    return v.kind == V.OPTIM and bool(classes) and all(c.startswith("torch.optim.lr_scheduler.") for c in classes)


def reads_lasting_state(model, test: cst.BaseExpression) -> bool:
    """Whether a first-use test reads state that outlives a call of its function, so that
    its body runs on the first call only (setup: `semantic.setup`): an attribute (`self.cos
    is None`, `not hasattr(self, "grid")`, `self.step == 0`) or a module's name (a cache
    dict, a `global` flag). Not a local flag or counter, which every call sets afresh (`if
    i == 0:` in a loop, `if first: ...; first = False`: every call's first iteration)."""
    f = model.func
    for n in (test, *descendants(test)):
        if type(n) is cst.Attribute or type(n) is cst.Call and type(n.func) is cst.Name \
                and n.func.value in ("hasattr", "getattr"):
            return True
        if type(n) is cst.Name and (f is None or n.value in f.globals or n.value not in f.params
                                    and n.value not in f.scope and model.module_scope.get(n.value) is not None):
            return True
    return False


def remakes_on_change(test: cst.BaseExpression) -> bool:
    """`if sizes != self.sizes:` (either side of an `and`): a lazy initialisation that runs
    again whenever what it stores changes (YOLOX's grids under multi-scale training), not
    on the first call only."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return remakes_on_change(test.left) or remakes_on_change(test.right)
    return type(test) is cst.Comparison and any(type(c.operator) is cst.NotEqual for c in test.comparisons)


def lazy_init(node: cst.If, model=None) -> bool:
    """`if self.buf is None: self.buf = ...`, `if len(state) == 0: state["step"] = ...`,
    `if sizes != self.sizes: self.sizes = sizes` (remade when a shape changes: `_stored_side`),
    `if not cache: cache = ...`, `if not len(q): q = ...`, `if k not in cache: cache[k] = ...`: a body
    that runs once (cold); not when it stores under another key, so that the check never
    holds (hifi-gan's `if fmax not in mel_basis: mel_basis[str(fmax) + "_" + ...] = ...`);
    also as one side of `and` (`if rank == 0 and features is None: features = ...`). A plain
    name must outlive the check (a loop's earlier iterations, a global): a parameter
    defaulted in a function's straight-line code (`if attn_mask is None: attn_mask =
    Mask(...)`) is made again at every call."""
    test = node.test
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        # `if(a and b):` needs no space after `if`; either side alone may (LibCST checks)
        space = cst.SimpleWhitespace(" ")
        return (lazy_init(node.with_changes(test=test.left, whitespace_before_test=space), model)
                or lazy_init(node.with_changes(test=test.right, whitespace_before_test=space), model))
    subject = key = None  # key: `k` of `if k not in cache:`, which the body must store under
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        c = test.comparisons[0]
        left = test.left
        if type(c.operator) is cst.Is and is_none(c.comparator):
            subject = left
        elif type(c.operator) is cst.NotIn:
            subject, key = c.comparator, code_key(left)
        elif type(c.operator) is cst.NotEqual:  # `if sizes != self.sizes: self.sizes = sizes; ...`
            subject = _stored_side(left, model) or _stored_side(c.comparator, model)
        elif (type(c.operator) is cst.Equal and type(c.comparator) is cst.Integer and c.comparator.value == "0"
              and type(left) is cst.Call and type(left.func) is cst.Name and left.func.value == "len"
              and len(left.args) == 1):
            subject = left.args[0].value
        if type(c.operator) is cst.Is and is_none(c.comparator):
            subject = _named_attribute(left, "getattr") or subject  # `getattr(self, "x", None) is None`
    elif type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        subject = test.expression
        if (type(subject) is cst.Call and type(subject.func) is cst.Name and subject.func.value == "len"
                and len(subject.args) == 1):
            subject = subject.args[0].value  # `if not len(self.q): self.q = ...`
        subject = _named_attribute(subject, "hasattr") or subject  # `if not hasattr(self, "x"): self.x = ...`
    if type(subject) not in (cst.Name, cst.Attribute, cst.Subscript) or type(node.body) is not cst.IndentedBlock:
        return False
    if type(subject) is cst.Name and model is not None and model.func is not None and not model.loop_nodes \
            and subject.value not in model.func.globals and not _stores(node.body, subject.value):
        return False
    want = code_key(subject)
    for stmt in node.body.body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) in (cst.Assign, cst.AnnAssign):
                targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]
                for t in targets:
                    if key is None and code_key(t) == want:
                        return True
                    if type(t) is cst.Subscript and code_key(t.value) == want and (
                            key is None or (len(t.slice) == 1 and code_key(t.slice[0].slice) == key)):
                        return True
            if key is None and type(small) is cst.Expr and model is not None and _setter_sets(model, small.value, subject):
                return True
    return False


def _named_attribute(e: cst.BaseExpression, builtin: str) -> Optional[cst.Attribute]:
    """`hasattr(obj, "x")` / `getattr(obj, "x", None)` (`builtin`) as the attribute it asks
    about, `obj.x`, which a lazily initialising body then sets; else None."""
    if not (type(e) is cst.Call and type(e.func) is cst.Name and e.func.value == builtin
            and len(e.args) == (2 if builtin == "hasattr" else 3) and not any(a.keyword or a.star for a in e.args)):
        return None
    name = string_value(e.args[1].value)
    if name is None or not name.isidentifier() or type(e.args[0].value) not in (cst.Name, cst.Attribute):
        return None
    if builtin == "getattr" and not is_none(e.args[2].value):
        return None
    return cst.Attribute(value=e.args[0].value, attr=cst.Name(name))


def _stored_side(e: cst.BaseExpression, model) -> Optional[cst.BaseExpression]:
    """Where one side of a `!=` test is kept across calls, if it is: an attribute of `self`
    or an item of one (`self.featmap_sizes`), also read through its shape or a local name
    (`grid = self.grids[k]`, then `grid.shape[2:4] != x.shape[2:4]`). A body that stores
    there again makes the test false until the other side changes: a cache remade when the
    input's shape changes (YOLOX's grids)."""
    while True:
        if type(e) is cst.Subscript:
            e = e.value
        elif type(e) is cst.Attribute and e.attr.value in ("shape", "dtype", "device"):
            e = e.value
        elif type(e) is cst.Call and type(e.func) is cst.Attribute and e.func.attr.value == "size":
            e = e.func.value
        else:
            break
    if type(e) is cst.Name and model is not None:
        e = model.origin(e)
    if type(e) not in (cst.Attribute, cst.Subscript) or not code_key(e).startswith("self."):
        return None
    return e


def _setter_sets(model, call: cst.BaseExpression, subject: cst.BaseExpression) -> bool:
    """`self._init_step_index(t)` under `if self.step_index is None:`, where a method of the
    class sets the attribute tested, or the one a property of that name returns
    (`@property def step_index(self): return self._step_index`; diffusers' schedulers): the
    method initialises it, so the branch runs on the first call only."""
    cls = model.func.cls if model.func is not None else None
    if not (cls is not None and type(cls.node) is cst.ClassDef and type(call) is cst.Call
            and type(call.func) is cst.Attribute and type(call.func.value) is cst.Name
            and call.func.value.value == "self" and type(subject) is cst.Attribute
            and type(subject.value) is cst.Name and subject.value.value == "self"):
        return False
    methods = {d.name.value: d for d in cls.node.body.body if type(d) is cst.FunctionDef}
    wanted = {subject.attr.value}
    prop = methods.get(subject.attr.value)
    if prop is not None and any(last_name(d.decorator) == "property" for d in prop.decorators):
        returned = [n.value for n in statements(prop.body) if type(n) is cst.Return and n.value is not None]
        wanted |= {r.attr.value for r in returned if type(r) is cst.Attribute and type(r.value) is cst.Name
                   and r.value.value == "self"}
    setter = methods.get(call.func.attr.value)
    return setter is not None and setter is not prop and any(
        type(n) in (cst.Assign, cst.AnnAssign) and any(
            type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self" and t.attr.value in wanted
            for t in assigned_targets(n)) for n in statements(setter.body))


def _stores(body: cst.IndentedBlock, name: str) -> bool:
    """The block keeps `name`'s new value where the next call finds it (`cache[key] = t`,
    `self.t = t`): the check was of a value fetched from there."""
    for stmt in body.body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.Assign and type(small.value) is cst.Name and small.value.value == name \
                        and any(type(t.target) in (cst.Subscript, cst.Attribute) for t in small.targets):
                    return True
    return False


