"""Helpers whose result is inferred at each call, from that call's own arguments.

A module-level function such as trl's `pad(tensors, ...)`, whose result is made on
`tensors[0].device`, returns a CPU tensor to the caller that passes CPU tensors and a GPU
tensor to the one that passes GPU tensors. Its walked return is the join over every caller,
which says neither. A helper of straight-line code (assignments to names, `if`/`for`
blocks of them, returns) is instead replayed at each call (`infer._infer_in_scope`): its
parameters bound to the call's values, each assignment inferred in order (one under a
branch or loop joined with what the name held before), and the returns joined. Names it
binds in ways the replay does not follow (loop targets, `with ... as`, containers filled
with `.append`, nested functions) are unknown. A return behind a test of a parameter (its type,
`isinstance(x, T)`, or its value against a literal, `return_tensors == "pt"`, `x is None`)
counts only at a call whose argument passes that test, or may. A longer function that gives back one of its parameters
unchanged (`def apply_gradient_allreduce(module): ...; return module`) returns, at each
call, what that call passed (`returned_parameter`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Dict, List, Optional, Tuple

import libcst as cst

from synclint.parse.node_data import node_data, node_from_data
from synclint.semantic.syntax import all_params, always_leaves, descendants, isinstance_test, statements, string_value

# Longer helpers are not replayed: their walked return is what callers get. (A replay's
# result is memoised by argument values, `infer.Evaluator._infer_in_scope`, so one long
# helper called at many sites with the same facts is evaluated once.)
MAX_STEPS = 80
# Decorators after which a call returns what the function returns (its device too): grad
# modes and caches
PASS_THROUGH_DECORATORS = frozenset((
    "torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
    "functools.lru_cache", "functools.cache",
))
# Names a return made of parameters may also hold: builtins that pick among them
_NEUTRAL_NAMES = frozenset({"None", "True", "False", "callable", "isinstance"})


@dataclass
class HelperBody:
    params: List[str]
    # (names bound, the expression, under a branch or loop): a single name, or the names
    # of a tuple target; expression None for a name bound in a way the replay does not follow
    steps: List[Tuple[Tuple[str, ...], Optional[cst.BaseExpression], bool]] = field(default_factory=list, repr=False)
    returns: List[cst.BaseExpression] = field(default_factory=list)
    # per return, the tests of parameters its path passes: (parameter, the type or tuple of
    # types, or the comparison, whether the test holds there) of `if isinstance(x,
    # torch.Tensor): return x.item()` then `return x` (the second only where x is no tensor),
    # of `if return_tensors == "pt": return torch.tensor(ids)`; empty: none
    guards: List[Tuple["Guard", ...]] = field(default_factory=list)
    # the literal defaults (a str, number, bool or None) of parameters a comparison tests: what
    # a call that does not pass one compares
    defaults: Dict[str, object] = field(default_factory=dict)
    node: Optional[cst.FunctionDef] = field(default=None, repr=False)  # the definition (its names' imports go in the module summary)

    def to_data(self) -> dict:
        """The steps and returns as JSON data, as a module summary carries them to the
        modules that import the helper (`from_data`)."""
        out: dict = {"r": [node_data(r) for r in self.returns]}
        if any(self.guards):
            out["g"] = [[[name, node_data(t), holds] for name, t, holds in g] for g in self.guards]
        if self.steps:
            out["s"] = [[list(names), None if e is None else node_data(e), cond] for names, e, cond in self.steps]
        if self.defaults:
            out["d"] = self.defaults
        return out

    @staticmethod
    def from_data(params: List[str], data: dict) -> "HelperBody":
        """The body `to_data` gave `data` for. Raises (KeyError, TypeError, AttributeError) on
        data that is not such."""
        steps = [(tuple(names), None if e is None else node_from_data(e), bool(cond)) for names, e, cond in data.get("s", ())]
        guards = [tuple((name, node_from_data(t), bool(holds)) for name, t, holds in g) for g in data.get("g", ())]
        return HelperBody(list(params), steps, [node_from_data(r) for r in data["r"]], guards, dict(data.get("d", {})))

    def guards_of(self, i: int) -> Tuple["Guard", ...]:
        """The type tests the path to return `i` passes (`guards`)."""
        return self.guards[i] if i < len(self.guards) else ()

    @property
    def one_line(self) -> bool:
        return not self.steps and len(self.returns) == 1

    @cached_property  # asked at every call of the helper
    def from_parameters(self) -> bool:
        """Every return is made of the parameters alone, none rebound (`def default(val, d):
        return val if exists(val) else d() if callable(d) else d`): a call's result is what
        that call passed, and the join over every caller says nothing about it."""
        params = set(self.params)
        if any(params.intersection(names) for names, _, _ in self.steps):
            return False
        return all(n.value in params or n.value in _NEUTRAL_NAMES
                   for r in self.returns for n in _value_names(r))


def _value_names(e: cst.BaseExpression):
    """The names an expression's value may be made of: a conditional's test only picks
    (`d() if isfunction(d) else d`), so its names are not among them."""
    if type(e) is cst.IfExp:
        yield from _value_names(e.body)
        yield from _value_names(e.orelse)
        return
    if type(e) is cst.Name:
        yield e
        return
    for n in descendants(e):
        if type(n) is cst.Name:
            yield n


# (parameter, the type or tuple of types tested or the comparison, whether the test holds on
# the path)
Guard = Tuple[str, cst.BaseExpression, bool]
# What a parameter's literal default is where it has none (`value_test_holds`)
NOT_LITERAL = object()


class _NotStraight(Exception):
    pass


def _plain_signature(node: cst.FunctionDef, see_through: bool = False) -> bool:
    """Undecorated (or `see_through`: every decorator passes the call through and gives back
    its result), and every argument a call passes lands in a named parameter."""
    return (see_through or not node.decorators) and type(node.params.star_arg) is not cst.Param \
        and node.params.star_kwarg is None


def wraps_call(node: cst.FunctionDef) -> bool:
    """`def verify_operation(function): @wraps(function) def wrapper(*args, **kwargs): ...;
    return function(*args, **kwargs); return wrapper`: a decorator whose wrapper gives back
    what the decorated function returns, at every `return`."""
    params = all_params(node.params)
    body = node.body.body if type(node.body) is cst.IndentedBlock else ()
    if len(params) != 1 or not body or type(body[-1]) is not cst.SimpleStatementLine:
        return False
    last = body[-1].body[0]
    if not (type(last) is cst.Return and type(last.value) is cst.Name):
        return False
    fn = params[0].name.value
    wrapper = next((s for s in body if type(s) is cst.FunctionDef and s.name.value == last.value.value), None)
    if wrapper is None or not any(_wraps(d.decorator, fn) for d in wrapper.decorators):
        return False
    returns = [n for n in statements(wrapper) if type(n) is cst.Return]
    return bool(returns) and all(type(r.value) is cst.Call and type(r.value.func) is cst.Name
                                 and r.value.func.value == fn for r in returns)


def _wraps(d: cst.BaseExpression, fn: str) -> bool:
    """`@wraps(fn)` or `@functools.wraps(fn)`."""
    return (type(d) is cst.Call and len(d.args) == 1 and type(d.args[0].value) is cst.Name
            and d.args[0].value.value == fn and (type(d.func) is cst.Name and d.func.value == "wraps"
                                                 or type(d.func) is cst.Attribute and d.func.attr.value == "wraps"))


def helper_body(node: cst.FunctionDef, see_through: bool = False) -> Optional[HelperBody]:
    """The replayable body of a function, or None (decorated, unless `see_through`,
    `*args`/`**kwargs`, a generator, nested definitions, imports, `global`, no value
    returned, too long)."""
    if not _plain_signature(node, see_through):
        return None
    body = HelperBody([p.name.value for p in all_params(node.params)])
    mutated: set = set()
    try:
        _block(node.body, body, False, mutated, ())
    except _NotStraight:
        return None
    if not body.returns or len(body.steps) > MAX_STEPS:
        return None
    compared = {name for g in body.guards for name, t, _ in g if type(t) is cst.Comparison}
    for p in all_params(node.params):
        if p.name.value in compared and p.default is not None:
            lit = literal(p.default)
            if lit is not NOT_LITERAL:
                body.defaults[p.name.value] = lit
    # `parts = []; ...; parts.append(t)`: what a container holds after calls on it is not
    # replayed, so a name mutated that way is unknown (not "an empty list")
    body.steps = [(names, None if mutated & set(names) else expr, cond) for names, expr, cond in body.steps]
    return body


def _block(block, out: HelperBody, cond: bool, mutated: set, tests: Tuple[Guard, ...]) -> None:
    """The steps and returns of `block`, whose path passes the type tests `tests`."""
    stmts = block.body if type(block) is cst.IndentedBlock else [block]
    for s in stmts:
        if type(s) is cst.SimpleStatementLine:
            for small in s.body:
                _small(small, out, cond, mutated, tests)
        elif type(s) is cst.SimpleStatementSuite:
            for small in s.body:
                _small(small, out, cond, mutated, tests)
        elif type(s) is cst.If:
            passed = tests  # (the tests of the `if`s above this branch, each false here)
            branch = s
            while True:
                test = _parameter_test(branch.test, out.params)
                _block(branch.body, out, True, mutated, passed + ((test[0], test[1], True),) if test else passed)
                if test is not None:
                    passed = passed + ((test[0], test[1], False),)
                if type(branch.orelse) is not cst.If:
                    break
                branch = branch.orelse  # (`elif`)
            if branch.orelse is not None:
                _block(branch.orelse.body, out, True, mutated, passed)
            test = _parameter_test(s.test, out.params)
            if test is not None and s.orelse is None and always_leaves(s.body):
                tests = tests + ((test[0], test[1], False),)  # past `if isinstance(x, T): return ...`
        elif type(s) in (cst.For, cst.While):
            if type(s) is cst.For:
                out.steps.append((_bound_names(s.target), None, True))
            _block(s.body, out, True, mutated, tests)
            if s.orelse is not None:
                _block(s.orelse.body, out, True, mutated, tests)
        elif type(s) is cst.With:
            for item in s.items:
                if item.asname is not None:
                    out.steps.append((_bound_names(item.asname.name), None, True))
            _block(s.body, out, cond, mutated, tests)
        elif type(s) is cst.Try:
            _block(s.body, out, True, mutated, tests)
            for h in s.handlers:
                _block(h.body, out, True, mutated, tests)
            for extra in (s.orelse, s.finalbody):
                if extra is not None:
                    _block(extra.body, out, True, mutated, tests)
        elif type(s) is cst.FunctionDef:  # (LLaVA's `insert_separator`): a local the replay does not follow
            out.steps.append(((s.name.value,), None, cond))
        else:  # a nested class, a match: not straight-line code
            raise _NotStraight


def _parameter_test(test: cst.BaseExpression, params: List[str]) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(parameter, the type or tuple of types) of `isinstance(p, T)` on a parameter;
    (parameter, the comparison) of `p == "pt"`, `p != 0`, `p is None`, `p is not None`."""
    tested = isinstance_test(test)
    if tested is not None:
        return (tested[0].value, tested[1]) if tested[0].value in params else None
    if (type(test) is cst.Comparison and type(test.left) is cst.Name and test.left.value in params
            and len(test.comparisons) == 1):
        c = test.comparisons[0]
        op = type(c.operator)
        if op in (cst.Equal, cst.NotEqual) and literal(c.comparator) is not NOT_LITERAL \
                or op in (cst.Is, cst.IsNot) and type(c.comparator) is cst.Name and c.comparator.value == "None":
            return test.left.value, test
    return None


def literal(e: cst.BaseExpression) -> object:
    """The value of a literal: a string, a number, True, False or None; else NOT_LITERAL."""
    t = type(e)
    if t is cst.Name and e.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[e.value]
    if t is cst.SimpleString or t is cst.ConcatenatedString:
        v = string_value(e)
        return NOT_LITERAL if v is None else v
    if t is cst.Integer or t is cst.Float:
        return e.evaluated_value
    return NOT_LITERAL


def value_test_holds(test: cst.Comparison, value: object) -> Optional[bool]:
    """Whether a comparison `_parameter_test` found holds of the parameter's literal value;
    None where the value is not a literal."""
    if value is NOT_LITERAL:
        return None
    c = test.comparisons[0]
    op = type(c.operator)
    if op in (cst.Is, cst.IsNot):
        return (value is None) == (op is cst.Is)
    other = literal(c.comparator)
    return (value == other) == (op is cst.Equal)


_MUTATORS = frozenset(("append", "extend", "insert", "add", "update", "setdefault"))


def _small(small: cst.BaseSmallStatement, out: HelperBody, cond: bool, mutated: set, tests: Tuple[Guard, ...]) -> None:
    if type(small) is cst.Return:
        if small.value is not None:
            out.returns.append(small.value)
            out.guards.append(tests)
    elif type(small) is cst.Assign:
        for t in small.targets:
            names = _bound_names(t.target)
            if names:  # `a, *rest = ...`, `(a, b), c = ...`: bound, but not followed
                out.steps.append((names, small.value if _followed(t.target) else None, cond))
    elif type(small) is cst.AnnAssign:
        if small.value is not None and type(small.target) is cst.Name:
            out.steps.append(((small.target.value,), small.value, cond))
    # `x += y`: x keeps what it is (a tensor stays one); item and attribute stores, calls
    # (`out.append(t)`), `raise`, `assert`: nothing the replay binds
    elif type(small) in (cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom, cst.Del):
        raise _NotStraight
    elif type(small) is cst.Expr and type(small.value) in (cst.Yield, cst.Await):
        raise _NotStraight
    elif type(small) is cst.Expr and type(small.value) is cst.Call:
        f = small.value.func
        if type(f) is cst.Attribute and f.attr.value in _MUTATORS and type(f.value) is cst.Name:
            mutated.add(f.value.value)


def _followed(target: cst.BaseExpression) -> bool:
    """A target the replay binds from the value: `x`, or `a, b` of plain names."""
    if type(target) in (cst.Tuple, cst.List):
        return all(type(el) is cst.Element and type(el.value) is cst.Name for el in target.elements)
    return type(target) is cst.Name


_TARGETED = frozenset({cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr})


def returned_parameter(node: cst.FunctionDef, see_through: bool = False) -> Optional[str]:
    """`def apply_gradient_allreduce(module): ...; return module`: the parameter every
    `return` gives back (never rebound in the function, nested functions aside), so a call's
    result is what that call passed. None otherwise."""
    if not _plain_signature(node, see_through):
        return None
    params = {p.name.value for p in all_params(node.params)}
    # the returns first, from the statements alone: most functions fail here, before the
    # walk of every node below for what rebinds the parameter returned
    given = {n.value.value if type(n.value) is cst.Name and n.value.value in params else None
             for n in statements(node) if type(n) is cst.Return}
    if len(given) != 1 or None in given:
        return None
    returned: set = set()
    bound: set = set()
    for n in descendants(node):  # (not into nested functions: their returns are theirs)
        kind = type(n)  # (by type: every node of every function, see `descendants`)
        if kind is cst.Return:
            if not (type(n.value) is cst.Name and n.value.value in params):
                return None
            returned.add(n.value.value)
        elif kind in _TARGETED:
            bound.update(_bound_names(n.target))
        elif kind is cst.AsName:
            bound.update(_bound_names(n.name))
    if len(returned) != 1 or returned & bound:
        return None
    return returned.pop()


def reyielded_parameter(node: cst.FunctionDef) -> Optional[int]:
    """`def cycle(dl): while True: for data in dl: yield data` (or `yield from dl`): the
    position of the parameter whose items a generator yields, when it yields nothing else and
    never rebinds it, so a call iterates what that call passes (not what every call passes,
    joined). None otherwise."""
    if not _plain_signature(node):
        return None
    params = [p.name.value for p in node.params.params]
    loop_of: Dict[str, str] = {}  # a `for` loop's target -> the name it iterates
    yielded: set = set()
    bound: set = set()
    for n in descendants(node):
        kind = type(n)
        if kind is cst.Yield:
            v = n.value
            if type(v) is cst.From:
                if type(v.item) is not cst.Name:
                    return None
                yielded.add(v.item.value)
            elif type(v) is cst.Name and v.value in loop_of:
                yielded.add(loop_of[v.value])
            else:
                return None
        elif kind is cst.For:
            if type(n.target) is cst.Name and type(n.iter) is cst.Name:
                if loop_of.get(n.target.value, n.iter.value) != n.iter.value:
                    return None  # one name looping over two things
                loop_of[n.target.value] = n.iter.value
            else:
                bound.update(_bound_names(n.target))
        elif kind in _TARGETED:
            bound.update(_bound_names(n.target))
        elif kind is cst.AsName:
            bound.update(_bound_names(n.name))
    if len(yielded) != 1 or yielded & bound or set(loop_of) & bound:
        return None
    name = yielded.pop()
    return params.index(name) if name in params else None


def abstract_body(node: cst.FunctionDef) -> bool:
    """A body that only says what subclasses must do: `raise NotImplementedError`, with at
    most a docstring, `pass` or `...` beside it (DPR's `Tensorizer.text_to_tensor`); or only
    those under `@abstractmethod` (fms's `DistributedStrategy.distribute_layer`)."""
    body = node.body.body if type(node.body) is cst.IndentedBlock else (node.body,)
    abstract = any(_names_abstractmethod(d.decorator) for d in node.decorators)
    for stmt in body:
        if type(stmt) not in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
            return False
        for small in stmt.body:
            if type(small) is cst.Pass or type(small) is cst.Expr and type(small.value) in (
                    cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis):
                continue
            exc = small.exc if type(small) is cst.Raise else None
            if type(exc) is cst.Call:
                exc = exc.func
            if type(exc) is not cst.Name or exc.value != "NotImplementedError":
                return False
            abstract = True
    return abstract


def _names_abstractmethod(d: cst.BaseExpression) -> bool:
    """`@abstractmethod`, `@abc.abstractmethod`."""
    return type(d) is cst.Name and d.value == "abstractmethod" or type(d) is cst.Attribute \
        and d.attr.value == "abstractmethod" and type(d.value) is cst.Name and d.value.value == "abc"


def _bound_names(target) -> Tuple[str, ...]:
    """The names a target binds, in order (item and attribute stores bind none)."""
    if type(target) is cst.Name:
        return (target.value,)
    if type(target) in (cst.Tuple, cst.List):
        return tuple(n for el in target.elements for n in _bound_names(el.value))
    if type(target) is cst.StarredElement:
        return _bound_names(target.value)
    return ()
