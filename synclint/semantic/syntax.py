"""Small facts about syntax nodes that need no bindings: arguments, literals, dotted names."""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from synclint.parse.builder import BUILT


def kwarg(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def code_of(node: cst.CSTNode) -> str:
    """A node's code: the file's own text where the tree was built from Python's parse
    (`parse.builder`), else LibCST's code for it."""
    built = BUILT.get()
    if built is not None:
        text = built.text(node)
        if text is not None:
            return text
    return _EMPTY_MODULE.code_for_node(node)


_EMPTY_MODULE = cst.Module(body=[])


def string_value(e: Optional[cst.BaseExpression]) -> Optional[str]:
    if type(e) is cst.SimpleString:
        v = e.value
        if v[0] in "'\"" and "\\" not in v and "\r" not in v:  # no prefix, escape or CR: the text between the quotes
            q = 3 if len(v) >= 6 and v[:3] in ('"""', "'''") else 1
            return v[q:-q]
        try:
            v = e.evaluated_value
        except Exception:  # pragma: no cover - odd prefixes
            return None
        return v if isinstance(v, str) else None
    return None


def is_true(e: Optional[cst.BaseExpression]) -> Optional[bool]:
    """True/False for a literal, False when absent, None when not a literal."""
    if type(e) is cst.Name and e.value in ("True", "False"):
        return e.value == "True"
    return None if e is not None else False


def dotted(node: cst.BaseExpression) -> str:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def dotted_path(e: cst.BaseExpression) -> Optional[str]:
    """`self.model.encoder` -> "self.model.encoder"; None for anything but a plain dotted name
    (`f().x`, `a[0].b`), where `dotted` gives a partial name."""
    parts = []
    while type(e) is cst.Attribute:
        parts.append(e.attr.value)
        e = e.value
    if type(e) is not cst.Name:
        return None
    parts.append(e.value)
    return ".".join(reversed(parts))


def is_none(e: Optional[cst.BaseExpression]) -> bool:
    """The literal `None`."""
    return type(e) is cst.Name and e.value == "None"


def generic_origin(e: cst.BaseExpression) -> cst.BaseExpression:
    """The class a base or annotation names through a generic made concrete (`TrainingSAE[Cfg]`
    is TrainingSAE); `e` itself otherwise, and for typing's own `Generic[T]`/`Protocol[T]`."""
    if type(e) is cst.Subscript and last_name(e.value) not in ("Generic", "Protocol"):
        return e.value
    return e


def self_attr(e: cst.BaseExpression) -> Optional[str]:
    """`self.model` -> "model"; None for anything else."""
    if type(e) is cst.Attribute and type(e.value) is cst.Name and e.value.value == "self":
        return e.attr.value
    return None


def isinstance_test(test: cst.BaseExpression) -> Optional[Tuple[cst.Name, cst.BaseExpression]]:
    """(the name tested, the type or tuple of types) of `isinstance(x, T)` on a plain name."""
    if (type(test) is cst.Call and type(test.func) is cst.Name and test.func.value == "isinstance"
            and len(test.args) == 2 and type(test.args[0].value) is cst.Name):
        return test.args[0].value, test.args[1].value
    return None


def always_leaves(block: cst.BaseSuite) -> bool:
    """A block whose last statement raises or returns: no path through it falls through
    (a `raise` under a condition inside it may, but the last one always runs)."""
    if type(block) is cst.SimpleStatementSuite:  # `if x.is_cuda: raise ValueError(...)`
        return type(block.body[-1]) in (cst.Raise, cst.Return)
    last = block.body[-1] if type(block) is cst.IndentedBlock and block.body else None
    return type(last) is cst.SimpleStatementLine and type(last.body[-1]) in (cst.Raise, cst.Return)


def last_name(e: cst.BaseExpression) -> Optional[str]:
    """`n` of `n` or of `a.b.n`; None for any other expression."""
    if type(e) is cst.Name:
        return e.value
    return e.attr.value if type(e) is cst.Attribute else None


def literal_ndim(e: cst.BaseExpression) -> Optional[int]:
    """Dimensions of `torch.tensor(<literal>)` data: 0 for a number, 1 + inner for a list."""
    if type(e) is cst.UnaryOperation and type(e.operator) in (cst.Minus, cst.Plus):
        e = e.expression
    if type(e) in (cst.Integer, cst.Float):
        return 0
    if type(e) in (cst.List, cst.Tuple) and e.elements:
        first = e.elements[0]
        if type(first) is cst.StarredElement:
            return None
        inner = literal_ndim(first.value)
        return None if inner is None else inner + 1
    return None


def all_params(params: cst.Parameters) -> List[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    if type(params.star_arg) is cst.Param:
        out.append(params.star_arg)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def is_property_getter(node: cst.CSTNode) -> bool:
    """`@property def name(self)`: reading `obj.name` runs it (a `cached_property` runs once)."""
    return type(node) is cst.FunctionDef and any(
        type(d.decorator) is cst.Name and d.decorator.value == "property" for d in node.decorators)


def target_names(t: cst.BaseExpression):
    """Plain names bound by an assignment target."""
    if type(t) is cst.Name:
        yield t.value
    elif type(t) in (cst.Tuple, cst.List):
        for el in t.elements:
            yield from target_names(el.value)
    elif type(t) is cst.StarredElement:
        yield from target_names(t.value)


# --------------------------------------------------------------------- fast child iteration
# LibCST's `children` property rebuilds each node's children through a visitor (about twice
# the cost of the parse); reading the dataclass fields directly is far cheaper. The walker
# uses the same tables.
import dataclasses  # noqa: E402
from typing import AbstractSet, Dict, Iterator, Sequence, Set  # noqa: E402

SKIP_TYPES = (
    cst.BaseParenthesizableWhitespace, cst.Comma, cst.Dot, cst.LeftParen, cst.RightParen,
    cst.Newline, cst.EmptyLine, cst.TrailingWhitespace, cst.Semicolon, cst.Colon,
    cst.AssignEqual, cst.Comment, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.BaseBinaryOp, cst.BaseBooleanOp,
    cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp, cst.ImportStar, cst.Asynchronous,
)
_SKIP_FIELDS = {"leading_lines", "lines_after_decorators", "header", "footer", "whitespace",
                "lpar", "rpar", "comma", "semicolon", "trailing_whitespace", "default_newline",
                "default_indent", "encoding", "has_trailing_newline", "indent", "newline"}
SKIP, NODE, SEQ = 0, 1, 2
FIELD_KINDS: Dict[type, int] = {}  # type -> what `field_kind` decided for it (read directly in hot loops)
_fields_cache: Dict[type, Tuple[str, ...]] = {}


def field_kind(t: type) -> int:
    """What a walk does with a value of type t: skip it, walk it, or walk its items.

    Decided once per concrete type: isinstance() against LibCST's abstract base classes goes
    through ABCMeta.__instancecheck__, which was about a sixth of the whole lint time."""
    k = FIELD_KINDS.get(t)
    if k is None:
        if issubclass(t, cst.CSTNode):
            k = SKIP if issubclass(t, SKIP_TYPES) else NODE
        else:
            k = SEQ if issubclass(t, (tuple, list)) else SKIP
        FIELD_KINDS[t] = k
    return k


def node_fields(t: type) -> Tuple[str, ...]:
    """The fields of a node type that may hold nodes: not formatting, nor text (`Name.value`,
    typed `str`: a name, a number or a string is a leaf, which a walk need not open)."""
    names = _fields_cache.get(t)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(t)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace") and f.type is not str
        )
        _fields_cache[t] = names
    return names


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    kinds = FIELD_KINDS  # (read directly, `field_kind` only for a type not seen yet: a hot loop)
    names = _fields_cache.get(type(node)) or node_fields(type(node))
    for fname in names:
        v = getattr(node, fname)
        k = kinds.get(type(v))
        if k is None:
            k = field_kind(type(v))
        if k == NODE:
            yield v
        elif k == SEQ:
            for c in v:
                kc = kinds.get(type(c))
                if kc == NODE or (kc is None and field_kind(type(c)) == NODE):
                    yield c


SCOPE_TYPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def concrete(base: type) -> frozenset:
    """LibCST's node classes under an abstract one, for `type(n) in ...` in hot code:
    isinstance() against any LibCST class that `n` is not goes through ABCMeta (see
    `field_kind`), twice as slow as the rest of most checks."""
    out, todo = set(), [base]
    while todo:
        t = todo.pop()
        todo.extend(t.__subclasses__())
        if not t.__subclasses__():
            out.add(t)
    return frozenset(out)


STATEMENTS = concrete(cst.BaseStatement)
COMPOUND_STATEMENTS = concrete(cst.BaseCompoundStatement)
SMALL_STATEMENTS = concrete(cst.BaseSmallStatement)
SUITES = concrete(cst.BaseSuite)
EXPRESSIONS = concrete(cst.BaseExpression)


def descendants(node: cst.CSTNode, stop: AbstractSet[type] = SCOPE_TYPES) -> Iterator[cst.CSTNode]:
    """Every node under `node`, not entering nodes of the (concrete) types `stop`: by
    default nested function or class bodies. Compared by type, not isinstance(), which goes
    through ABCMeta for LibCST's classes (see `field_kind`)."""
    stack = list(child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if type(n) not in stop:
            stack.extend(child_nodes(n))


# what holds statements: a statement, a block, and the clauses of compound statements
_STATEMENT_PARTS = STATEMENTS | SMALL_STATEMENTS | SUITES | frozenset(
    {cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.MatchCase})
_NO_STATEMENTS_BELOW = SMALL_STATEMENTS | SCOPE_TYPES


def statements(node: cst.CSTNode, stop: AbstractSet[type] = SCOPE_TYPES) -> Iterator[cst.CSTNode]:
    """Every statement under `node`, compound or small (`x = 1` of `x = 1; y = 2`), not
    entering nested function or class bodies (their definitions are yielded, as `descendants`
    yields them; `stop` empty: entering them too) nor any expression: a search for
    assignments or returns meets a tenth of the nodes `descendants` meets, and finds the
    same ones."""
    leaves = _NO_STATEMENTS_BELOW if stop is SCOPE_TYPES else SMALL_STATEMENTS | stop
    stack = [c for c in child_nodes(node) if type(c) in _STATEMENT_PARTS]
    while stack:
        n = stack.pop()
        t = type(n)
        if t in STATEMENTS or t in SMALL_STATEMENTS:
            yield n
        if t not in leaves:
            stack.extend(c for c in child_nodes(n) if type(c) in _STATEMENT_PARTS)


def read_first(node: cst.CSTNode, names: AbstractSet[str]) -> Set[str]:
    """The names among `names` that running `node` reads before it binds them: a loop body
    that reads `it` above the `it = iter(loader)` that rebinds it. In the order Python runs
    the code (an assignment's value before its targets, a loop's iterable before its
    target); nested functions and classes are not entered."""
    first: Dict[str, bool] = {}  # name -> its first occurrence is a read

    def visit(n: cst.CSTNode, store: bool = False) -> None:
        if len(first) == len(names):
            return
        t = type(n)
        if t is cst.Name:
            if n.value in names and n.value not in first:
                first[n.value] = not store
        elif t in SCOPE_TYPES:
            return
        elif t is cst.Assign:
            visit(n.value)
            for target in n.targets:
                visit(target.target, True)
        elif t is cst.AnnAssign or t is cst.NamedExpr:
            if n.value is not None:
                visit(n.value)
            visit(n.target, True)
        elif t is cst.AugAssign:  # `x += 1` reads x first
            visit(n.value)
            visit(n.target)
        elif t is cst.For or t is cst.CompFor:
            visit(n.iter)
            visit(n.target, True)
            for rest in ((n.body, n.orelse) if t is cst.For else (*n.ifs, n.inner_for_in)):
                if rest is not None:
                    visit(rest)
        elif t is cst.AsName:
            visit(n.name, True)
        elif t in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            visit(n.for_in)  # its targets first: they are bound before the items are made
            for part in ((n.key, n.value) if t is cst.DictComp else (n.elt,)):
                visit(part)
        else:
            keep = store and t in (cst.Tuple, cst.List, cst.StarredElement, cst.Element)
            for child in child_nodes(n):
                visit(child, keep)

    visit(node)
    return {name for name, read in first.items() if read}


def every_item_of(store: cst.Subscript, loops: Sequence[cst.CSTNode]) -> bool:
    """`xs[i] = ...` in the body of `for i in range(len(xs)):` (the innermost loop): a store
    into every item of `xs`, not into some."""
    if not loops or type(loops[-1]) is not cst.For or type(store.value) is not cst.Name or len(store.slice) != 1:
        return False
    loop, index = loops[-1], store.slice[0].slice
    return (type(index) is cst.Index and type(index.value) is cst.Name and type(loop.target) is cst.Name
            and loop.target.value == index.value.value and indices_of(loop.iter) == store.value.value)


def indices_of(it: cst.BaseExpression) -> Optional[str]:
    """`xs` of `range(len(xs))`: a loop over every index of the list `xs` (none when it is empty)."""
    if not (type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range" and len(it.args) == 1):
        return None
    n = it.args[0].value
    if (type(n) is cst.Call and type(n.func) is cst.Name and n.func.value == "len" and len(n.args) == 1
            and type(n.args[0].value) is cst.Name):
        return n.args[0].value.value
    return None
