"""LibCST's tree for the analysis, built from Python's own parse.

The rules and the semantic model read LibCST nodes, but they never read whitespace or
comments, and LibCST's parser spends most of a cold check's parse building exactly those
(about three quarters of its nodes). Python's parser (C, and already run once per file for
the nesting guard) gives the same syntax in a tenth of the time; this module turns its
tree into LibCST nodes of the same types and fields, with LibCST's default whitespace, and
keeps where each node is in the source (`Spans`), which LibCST would have to regenerate
the code to know.

Such a tree is only for reading. A file whose findings carry a fix, or land on a node
whose place is not known here, is checked again from LibCST's own parse (the engine
decides), so fixes keep the file's formatting and comments. Syntax not built here (`match`,
and any field of Python's tree the builder does not read, such as 3.12's type parameters:
`_READS`) raises `Unsupported`, and the file is parsed by LibCST as before.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from contextvars import ContextVar
from itertools import accumulate
from typing import Dict, List, Optional, Sequence, Tuple, Union

import libcst as cst

from synclint.parse.nodes import make, set_field
from synclint.parse.lines import source_lines

# Where a node lies: Python's node (its lineno, col_offset, end_lineno, end_col_offset, in
# UTF-8 bytes), or (start, end) offsets in the source's characters where Python's tree has no
# node of that extent.
Span = Union[ast.AST, Tuple[int, int]]


class Unsupported(Exception):
    """Syntax this module does not build: parse the file with LibCST."""


# Every node type of Python's tree that the builder reads, and the fields of it that it reads
# (`_fields`). A field not named here holds syntax the built tree would silently lack (3.12's
# `type_params`: `def f[T](x: T)`), so a node whose such field holds anything is
# `Unsupported` and its file is parsed by LibCST: a new Python's new field is refused
# without anyone having to foresee it (`_UNREAD`, computed from the running Python's `ast`).
_READS: Dict[type, str] = {
    ast.Module: "body",
    # statements
    ast.Expr: "value", ast.Assign: "targets value", ast.AugAssign: "target op value",
    ast.AnnAssign: "target annotation value simple",  # simple=0: `(x): int`, the target's brackets
    ast.Return: "value", ast.Delete: "targets", ast.Pass: "", ast.Break: "", ast.Continue: "",
    ast.Raise: "exc cause", ast.Global: "names", ast.Nonlocal: "names", ast.Import: "names",
    ast.ImportFrom: "module names level", ast.Assert: "test msg",
    ast.If: "test body orelse", ast.For: "target iter body orelse", ast.AsyncFor: "target iter body orelse",
    ast.While: "test body orelse", ast.With: "items body", ast.AsyncWith: "items body",
    ast.FunctionDef: "name args body decorator_list returns",
    ast.AsyncFunctionDef: "name args body decorator_list returns",
    ast.ClassDef: "name bases keywords body decorator_list",
    ast.Try: "body handlers orelse finalbody",
    # the parts of statements
    ast.alias: "name asname", ast.withitem: "context_expr optional_vars", ast.ExceptHandler: "type name body",
    ast.arguments: "posonlyargs args vararg kwonlyargs kw_defaults kwarg defaults", ast.arg: "arg annotation",
    ast.keyword: "arg value", ast.comprehension: "target iter ifs is_async",
    # expressions
    ast.Name: "id", ast.Constant: "value kind",  # kind: the `u` prefix, in the literal's text
    ast.JoinedStr: "values", ast.FormattedValue: "value conversion format_spec",
    ast.Attribute: "value attr", ast.Call: "func args keywords", ast.Subscript: "value slice",
    ast.Slice: "lower upper step", ast.Starred: "value",
    ast.BinOp: "left op right", ast.UnaryOp: "op operand", ast.BoolOp: "op values",
    ast.Compare: "left ops comparators", ast.IfExp: "test body orelse", ast.Lambda: "args body",
    ast.NamedExpr: "target value", ast.List: "elts", ast.Tuple: "elts", ast.Set: "elts",
    ast.Dict: "keys values", ast.ListComp: "elt generators", ast.SetComp: "elt generators",
    ast.GeneratorExp: "elt generators", ast.DictComp: "key value generators",
    ast.Await: "value", ast.Yield: "value", ast.YieldFrom: "value",
}
if hasattr(ast, "TryStar"):  # (3.11)
    _READS[ast.TryStar] = "body handlers orelse finalbody"
# Fields that hold no syntax of their own: `ctx` (load, store or delete: where the node is
# says it), type comments (comments: Python fills them only when asked to).
_NOT_SYNTAX = frozenset({"ctx", "type_comment", "type_ignores"})


def unread_fields(reads: Dict[type, str]) -> Dict[type, Tuple[str, ...]]:
    """Node type -> the fields of the running Python's `ast` that `reads` does not name (only
    types that have some)."""
    out = {}
    for t, names in reads.items():
        unread = tuple(f for f in t._fields if f not in names.split() and f not in _NOT_SYNTAX)
        if unread:
            out[t] = unread
    return out


_UNREAD = unread_fields(_READS)


def refuse_unread(tree: ast.AST, unread: Dict[type, Tuple[str, ...]]) -> None:
    """Raise `Unsupported` where a node of `tree` holds something in a field of `unread`. Where
    only statements have such fields (3.12 and 3.13: the definitions' `type_params`), only
    the statements are looked at (an expression holds none)."""
    if not unread:
        return
    nodes = _statements(tree) if all(issubclass(t, ast.stmt) for t in unread) else ast.walk(tree)
    for a in nodes:
        fields = unread.get(type(a))
        if fields:
            for f in fields:
                if getattr(a, f, None):
                    raise Unsupported(f"{type(a).__name__}.{f}")


def _statements(tree: ast.AST):
    """Every statement of `tree`, blocks included (nested definitions too)."""
    todo = list(tree.body) if isinstance(tree, ast.Module) else []
    while todo:
        s = todo.pop()
        yield s
        for name in ("body", "orelse", "finalbody"):
            block = getattr(s, name, None)
            if type(block) is list:
                todo.extend(block)
        for h in getattr(s, "handlers", ()):
            todo.extend(h.body)


# Operators are leaves with nothing but LibCST's default whitespace: one instance of each
# serves every node (nothing keys on an operator's identity).
_BINARY = {
    ast.Add: cst.Add(), ast.Sub: cst.Subtract(), ast.Mult: cst.Multiply(), ast.Div: cst.Divide(),
    ast.FloorDiv: cst.FloorDivide(), ast.Mod: cst.Modulo(), ast.Pow: cst.Power(),
    ast.LShift: cst.LeftShift(), ast.RShift: cst.RightShift(), ast.BitOr: cst.BitOr(),
    ast.BitAnd: cst.BitAnd(), ast.BitXor: cst.BitXor(), ast.MatMult: cst.MatrixMultiply(),
}
_AUGMENTED = {
    ast.Add: cst.AddAssign(), ast.Sub: cst.SubtractAssign(), ast.Mult: cst.MultiplyAssign(),
    ast.Div: cst.DivideAssign(), ast.FloorDiv: cst.FloorDivideAssign(), ast.Mod: cst.ModuloAssign(),
    ast.Pow: cst.PowerAssign(), ast.LShift: cst.LeftShiftAssign(), ast.RShift: cst.RightShiftAssign(),
    ast.BitOr: cst.BitOrAssign(), ast.BitAnd: cst.BitAndAssign(), ast.BitXor: cst.BitXorAssign(),
    ast.MatMult: cst.MatrixMultiplyAssign(),
}
_UNARY = {ast.UAdd: cst.Plus(), ast.USub: cst.Minus(), ast.Not: cst.Not(), ast.Invert: cst.BitInvert()}
_COMPARE = {
    ast.Eq: cst.Equal(), ast.NotEq: cst.NotEqual(), ast.Lt: cst.LessThan(), ast.LtE: cst.LessThanEqual(),
    ast.Gt: cst.GreaterThan(), ast.GtE: cst.GreaterThanEqual(), ast.Is: cst.Is(), ast.IsNot: cst.IsNot(),
    ast.In: cst.In(), ast.NotIn: cst.NotIn(),
}
_LEFT, _RIGHT = cst.LeftParen(), cst.RightParen()
_AND, _OR = cst.And(), cst.Or()
# An f-string's opening: its prefix and quotes (group 2: the quotes).
_FSTRING_START = re.compile("([rR]?[fF][rR]?)('''|\"\"\"|'|\")")
# Python 3.12's tokens for an f-string's opening and closing (before 3.12: one STRING token)
_FSTRING_START_TOKEN = getattr(tokenize, "FSTRING_START", -1)
_FSTRING_END_TOKEN = getattr(tokenize, "FSTRING_END", -1)
_BRACKETED_BY_DEFAULT = frozenset({ast.Tuple, ast.GeneratorExp})
_SMALL = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Delete, ast.Pass,
          ast.Break, ast.Continue, ast.Raise, ast.Global, ast.Nonlocal, ast.Import,
          ast.ImportFrom, ast.Assert)
# Two string literals side by side inside what Python's tree holds as one constant.
_ADJACENT_QUOTES = re.compile(r"""['"][\s\\]*(?:#[^\n]*\n[\s\\]*)*[rRbBuUfF]{0,2}['"]""")


class SourceOf:
    """The source text of a built tree's nodes (what LibCST's own tree would regenerate)."""

    def __init__(self, source: str, spans: Dict[int, Span]) -> None:
        self.source, self.spans = source, spans
        self._builder: Optional[_Builder] = None

    def text(self, node: cst.CSTNode) -> Optional[str]:
        if id(node) not in self.spans:
            return None
        if self._builder is None:
            self._builder = _Builder(self.source)
            self._builder.spans = self.spans
        lo, hi = self._builder.offsets(self._builder.outer(node))  # LibCST's code includes its brackets
        return self.source[lo:hi]


# The file whose built tree is being walked (None: a tree of LibCST's own parse).
BUILT: ContextVar[Optional[SourceOf]] = ContextVar("synclint_built_tree", default=None)


def build(source: str, tree: ast.Module) -> Tuple[cst.Module, Dict[int, Span]]:
    """(LibCST's tree of `source`, without whitespace or comments; id(node) -> `Span`).
    Its nodes are made without `__init__` (`parse.nodes.make`), so none validates itself. Raises
    `Unsupported` for syntax it does not build."""
    refuse_unread(tree, _UNREAD)
    return _Builder(source).module(tree)


def build_expression(code: str) -> cst.BaseExpression:
    """The expression `code` (a string annotation)."""
    tree = ast.parse(code.strip(), mode="eval")
    refuse_unread(tree.body, _UNREAD)
    return _Builder(code).expr(tree.body)


class _Builder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source_lines(source, keepends=True)
        self.ascii = source.isascii()
        self.spans: Dict[int, Span] = {}
        self._starts: Optional[List[int]] = None  # the offset of each line (in characters)

    # ------------------------------------------------------------------ positions
    def _offset(self, row: int, byte_col: int) -> int:
        """The character offset in the source of a (line, byte column) position."""
        if self._starts is None:
            starts, n = [0], 0
            for line in self.lines:
                n += len(line)
                starts.append(n)
            self._starts = starts
        if row - 1 >= len(self.lines):
            return len(self.source)
        line = self.lines[row - 1]
        col = byte_col if self._ascii(line) else len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
        return self._starts[row - 1] + col

    def _ascii(self, line: str) -> bool:
        """Whether a line's byte columns (Python's) are its character columns."""
        return self.ascii or line.isascii()

    def _text(self, a: ast.AST) -> str:
        lo, hi = self.offsets(a)
        return self.source[lo:hi]

    def _parens(self, a: ast.AST, owner: int = -1) -> int:
        """How many pairs of brackets enclose `a` in the source and are its own (LibCST's
        `lpar`): pairs right around it, up to the one opening at offset `owner`, which its
        parent's syntax owns (a call's brackets around its only argument)."""
        line = self.lines[a.lineno - 1] if a.col_offset else ""
        if line and self._ascii(line):  # the usual node: no bracket right before it on its line
            k = a.col_offset - 1
            while k and line[k] in " \t":
                k -= 1
            if line[k] not in " \t(":
                return 0
        pairs = 0
        for opening, _ in self._brackets_around(*self.offsets(a)):
            if opening == owner:
                break
            pairs += 1
        return pairs

    def _brackets_around(self, lo: int, hi: int):
        """The pairs of brackets right around source[lo:hi], innermost first, each as the
        offsets of its opening bracket and of what follows its closing one."""
        src = self.source
        while True:
            i, j = _back(src, lo), _forward(src, hi)
            if i < 0 or j >= len(src) or src[i] != "(" or src[j] != ")":
                return
            lo, hi = i, j + 1
            yield lo, hi

    def _paren(self, node: cst.CSTNode, count: int) -> cst.CSTNode:
        """Give a node just built here its brackets (LibCST's nodes are frozen once made)."""
        set_field(node, "lpar", (_LEFT,) * count)
        set_field(node, "rpar", (_RIGHT,) * count)
        return node

    # ------------------------------------------------------------------ module and statements
    def module(self, tree: ast.Module) -> Tuple[cst.Module, Dict[int, Span]]:
        body = self.statements(tree.body)
        return make.Module(body=body), self.spans

    def statements(self, stmts: Sequence[ast.stmt]) -> Tuple[cst.BaseStatement, ...]:
        """Compound statements one by one; small ones grouped by the line they share."""
        out: List[cst.BaseStatement] = []
        line: List[cst.BaseSmallStatement] = []
        last_row = None
        for s in stmts:
            if isinstance(s, _SMALL):
                small = self.small(s)
                if line and s.lineno == last_row:
                    line.append(small)
                else:
                    if line:
                        out.append(make.SimpleStatementLine(body=tuple(line)))
                    line = [small]
                last_row = s.end_lineno
                continue
            if line:
                out.append(make.SimpleStatementLine(body=tuple(line)))
                line = []
            out.append(self.compound(s))
        if line:
            out.append(make.SimpleStatementLine(body=tuple(line)))
        return tuple(out)

    def suite(self, stmts: Sequence[ast.stmt]) -> cst.BaseSuite:
        """A block: indented, or `if x: return` (the body on the header's line)."""
        first = stmts[0]
        text = self.lines[first.lineno - 1] if first.lineno - 1 < len(self.lines) else ""
        before = text[:first.col_offset] if self._ascii(text) else text.encode("utf-8")[:first.col_offset]
        if before.strip():
            return make.SimpleStatementSuite(body=tuple(self.small(s) for s in stmts))
        return make.IndentedBlock(body=self.statements(stmts))

    def _else(self, stmts: Sequence[ast.stmt]) -> Optional[cst.Else]:
        return make.Else(body=self.suite(stmts)) if stmts else None

    def small(self, s: ast.stmt) -> cst.BaseSmallStatement:
        if not isinstance(s, _SMALL):
            raise Unsupported(type(s).__name__)
        t = type(s)
        if t is ast.Expr:
            node = make.Expr(value=self.expr(s.value))
        elif t is ast.Assign:
            node = make.Assign(targets=tuple(make.AssignTarget(target=self.expr(x)) for x in s.targets),
                                value=self.expr(s.value))
        elif t is ast.AugAssign:
            node = make.AugAssign(target=self.expr(s.target), operator=_AUGMENTED[type(s.op)],
                                   value=self.expr(s.value))
        elif t is ast.AnnAssign:
            node = make.AnnAssign(target=self.expr(s.target),
                                   annotation=make.Annotation(annotation=self.expr(s.annotation)),
                                   value=self.expr(s.value) if s.value is not None else None)
        elif t is ast.Return:
            node = make.Return(value=self.expr(s.value) if s.value is not None else None)
        elif t is ast.Delete:
            targets = [self.expr(x) for x in s.targets]
            node = make.Del(target=targets[0] if len(targets) == 1 else
                             make.Tuple(elements=tuple(make.Element(value=x) for x in targets), lpar=(), rpar=()))
        elif t is ast.Pass:
            node = make.Pass()
        elif t is ast.Break:
            node = make.Break()
        elif t is ast.Continue:
            node = make.Continue()
        elif t is ast.Raise:
            node = make.Raise(exc=self.expr(s.exc) if s.exc is not None else None,
                               cause=make.From(item=self.expr(s.cause)) if s.cause is not None else None)
        elif t is ast.Global:
            node = make.Global(names=tuple(make.NameItem(name=make.Name(value=n)) for n in s.names))
        elif t is ast.Nonlocal:
            node = make.Nonlocal(names=tuple(make.NameItem(name=make.Name(value=n)) for n in s.names))
        elif t is ast.Import:
            node = make.Import(names=tuple(self._alias(a) for a in s.names))
        elif t is ast.ImportFrom:
            if len(s.names) == 1 and s.names[0].name == "*":
                names: Union[cst.ImportStar, List[cst.ImportAlias]] = make.ImportStar()
            else:
                names = tuple(self._alias(a) for a in s.names)
            node = make.ImportFrom(module=_dotted(s.module) if s.module else None, names=names,
                                  relative=(make.Dot(),) * (s.level or 0))
        else:  # ast.Assert
            node = make.Assert(test=self.expr(s.test), msg=self.expr(s.msg) if s.msg is not None else None)
        self.spans[id(node)] = s
        return node

    def _alias(self, a: ast.alias) -> cst.ImportAlias:
        return make.ImportAlias(name=_dotted(a.name), asname=make.AsName(name=make.Name(value=a.asname)) if a.asname else None)

    def compound(self, s: ast.stmt) -> cst.BaseCompoundStatement:
        t = type(s)
        if t is ast.If:
            node = self._if(s)
        elif t in (ast.For, ast.AsyncFor):
            node = make.For(target=self.expr(s.target), iter=self.expr(s.iter), body=self.suite(s.body),
                             orelse=self._else(s.orelse), asynchronous=make.Asynchronous() if t is ast.AsyncFor else None)
        elif t is ast.While:
            node = make.While(test=self.expr(s.test), body=self.suite(s.body), orelse=self._else(s.orelse))
        elif t in (ast.With, ast.AsyncWith):
            owner = self._with_bracket(s)
            items = tuple(make.WithItem(item=self.expr(i.context_expr, owner), asname=make.AsName(
                name=self.expr(i.optional_vars)) if i.optional_vars is not None else None) for i in s.items)
            node = make.With(items=items, body=self.suite(s.body),
                              asynchronous=make.Asynchronous() if t is ast.AsyncWith else None)
            if owner >= 0:
                set_field(node, "lpar", _LEFT)
                set_field(node, "rpar", _RIGHT)
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef):
            node = make.FunctionDef(
                name=make.Name(value=s.name), params=self.parameters(s.args), body=self.suite(s.body),
                decorators=tuple(make.Decorator(decorator=self.expr(d)) for d in s.decorator_list),
                returns=make.Annotation(annotation=self.expr(s.returns)) if s.returns is not None else None,
                asynchronous=make.Asynchronous() if t is ast.AsyncFunctionDef else None,
            )
        elif t is ast.ClassDef:
            node = make.ClassDef(
                name=make.Name(value=s.name), body=self.suite(s.body),
                bases=tuple(make.Arg(value=self.expr(b, self._class_bracket(s))) for b in s.bases),
                keywords=tuple(self._keyword(k) for k in s.keywords),
                decorators=tuple(make.Decorator(decorator=self.expr(d)) for d in s.decorator_list),
            )
        elif t is ast.Try or t.__name__ == "TryStar":
            star = t is not ast.Try
            handler = make.ExceptStarHandler if star else make.ExceptHandler
            handlers = tuple(handler(body=self.suite(h.body), type=self.expr(h.type) if h.type is not None else None,
                                     name=make.AsName(name=make.Name(value=h.name)) if h.name else None)
                             for h in s.handlers)
            final = make.Finally(body=self.suite(s.finalbody)) if s.finalbody else None
            node = (make.TryStar if star else make.Try)(body=self.suite(s.body), handlers=handlers,
                                                          orelse=self._else(s.orelse), finalbody=final)
        else:  # match, and anything newer
            raise Unsupported(t.__name__)
        self.spans[id(node)] = s
        return node

    def _with_bracket(self, s: ast.stmt) -> int:
        """The offset of the bracket opening `with (a as b, c):`, which LibCST gives to the
        statement (-1: none): the outermost pair around all the items, right after `with`
        and right before the colon."""
        src = self.source
        first, last = s.items[0], s.items[-1]
        end = last.optional_vars if last.optional_vars is not None else last.context_expr
        lo = self._offset(first.context_expr.lineno, first.context_expr.col_offset)
        hi = self._offset(end.end_lineno, end.end_col_offset)
        j = _forward(src, hi)
        if src[j:j + 1] == ",":  # `with (a, b,):`
            hi = j + 1
        pairs = list(self._brackets_around(lo, hi))
        if not pairs:
            return -1
        found, hi = pairs[-1]
        if src[_forward(src, hi):_forward(src, hi) + 1] != ":":
            return -1
        k = _back(src, found)
        return found if src[k - 3:k + 1] == "with" else -1

    def _class_bracket(self, s: ast.ClassDef) -> int:
        """The offset of the bracket opening a class's bases."""
        start = self._offset(s.lineno, s.col_offset)
        return self.source.find("(", start)

    def _if(self, s: ast.If) -> cst.If:
        orelse: Union[None, cst.If, cst.Else] = None
        if s.orelse:
            first = s.orelse[0]
            if len(s.orelse) == 1 and type(first) is ast.If and self._starts_with(first, "elif"):
                orelse = self._if(first)
                self.spans[id(orelse)] = first
            else:
                orelse = make.Else(body=self.suite(s.orelse))
        return make.If(test=self.expr(s.test), body=self.suite(s.body), orelse=orelse)

    def _starts_with(self, a: ast.AST, word: str) -> bool:
        text = self.lines[a.lineno - 1] if a.lineno - 1 < len(self.lines) else ""
        if not self._ascii(text):
            text = text.encode("utf-8")[a.col_offset:].decode("utf-8", "replace")
            return text.startswith(word)
        return text.startswith(word, a.col_offset)

    def parameters(self, args: ast.arguments, annotated: bool = True) -> cst.Parameters:
        positional = list(args.posonlyargs) + list(args.args)
        defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        params = [self._param(a, d) for a, d in zip(positional, defaults)]
        posonly, params = params[:len(args.posonlyargs)], params[len(args.posonlyargs):]
        if args.vararg is not None:
            star_arg: Union[cst.Param, cst.ParamStar, cst.MaybeSentinel] = self._param(args.vararg, None, "*")
        elif args.kwonlyargs:
            star_arg = make.ParamStar()
        else:
            star_arg = cst.MaybeSentinel.DEFAULT
        return make.Parameters(
            params=tuple(params), star_arg=star_arg,
            kwonly_params=tuple(self._param(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)),
            star_kwarg=self._param(args.kwarg, None, "**") if args.kwarg is not None else None,
            posonly_params=tuple(posonly), posonly_ind=make.ParamSlash() if posonly else cst.MaybeSentinel.DEFAULT,
        )

    def _param(self, a: ast.arg, default: Optional[ast.expr], star: str = "") -> cst.Param:
        node = make.Param(name=make.Name(value=a.arg),
                         annotation=make.Annotation(annotation=self.expr(a.annotation)) if a.annotation is not None else None,
                         default=self.expr(default) if default is not None else None,
                         star=star)
        return node

    def _keyword(self, k: ast.keyword) -> cst.Arg:
        if k.arg is None:
            node = make.Arg(value=self.expr(k.value), star="**")
        else:
            node = make.Arg(value=self.expr(k.value), keyword=make.Name(value=k.arg))
        self.spans[id(node)] = k
        return node

    # ------------------------------------------------------------------ expressions
    def expr(self, a: ast.expr, owner: int = -1) -> cst.BaseExpression:
        """LibCST's expression for `a`, with its own brackets (`owner`: the offset of a
        bracket around it that its parent's syntax owns)."""
        t = type(a)
        method = _EXPR.get(t)
        if method is None:
            raise Unsupported(t.__name__)
        node = method(self, a)
        count = self._parens(a, owner)
        where: Span = a
        if t in _BRACKETED_BY_DEFAULT:  # LibCST's Tuple() and GeneratorExp() come with brackets
            if t is ast.GeneratorExp or not a.elts or self._tuple_bracketed(a):
                # Python's place for it includes a pair of brackets (a generator that is a
                # call's only argument: the call's); LibCST's excludes them
                src = self.source
                where = (_forward(src, self._offset(a.lineno, a.col_offset) + 1),
                         _back(src, self._offset(a.end_lineno, a.end_col_offset) - 1) + 1)
                if t is ast.Tuple or owner < 0 or self._offset(a.lineno, a.col_offset) != owner:
                    count += 1
            node = self._paren(node, count)
        elif count:
            node = self._paren(node, count)
        self.spans[id(node)] = where
        return node

    def outer(self, node: cst.CSTNode) -> Span:
        """Where a node lies with its own brackets (the place of an argument or element that
        holds it, and the extent of LibCST's code for it)."""
        where = self.spans[id(node)]
        own = getattr(node, "lpar", ())
        if not own or not isinstance(own, (tuple, list)):
            return where
        lo, hi = self.offsets(where)
        for _ in own:
            lo, hi = _back(self.source, lo), _forward(self.source, hi) + 1
        return (lo, hi)

    def offsets(self, where: Span) -> Tuple[int, int]:
        if isinstance(where, tuple):
            return where
        return self._offset(where.lineno, where.col_offset), self._offset(where.end_lineno, where.end_col_offset)

    def _tuple_bracketed(self, a: ast.Tuple) -> bool:
        """Python's tree puts a tuple's own brackets inside its position, but `(a), b` also
        starts with a bracket: that one is its first element's."""
        src = self.source
        start = self._offset(a.lineno, a.col_offset)
        if src[start:start + 1] != "(":
            return False
        lo, hi = self.offsets(a.elts[0])
        for opening, _ in self._brackets_around(lo, hi):  # out through the first element's own
            if opening < start:
                break
            lo = opening
        return lo != start

    def _name(self, a: ast.Name) -> cst.Name:
        return make.Name(value=a.id)

    def _constant(self, a: ast.Constant) -> cst.BaseExpression:
        v = a.value
        if v is None or v is True or v is False:
            return make.Name(value=repr(v))
        if v is Ellipsis:
            return make.Ellipsis()
        if isinstance(v, (str, bytes)):
            return self._string(a)
        text = self._text(a)
        if isinstance(v, complex):
            return make.Imaginary(value=text)
        if isinstance(v, float):
            return make.Float(value=text)
        return make.Integer(value=text)

    def _string(self, a: ast.expr) -> cst.BaseExpression:
        """A string literal (`a`: a constant or an f-string), or several side by side
        (LibCST's ConcatenatedString). F-strings on lines of ASCII are cut where Python's
        tree puts the expressions inside them; anything else (`{x=}`, a string over lines
        with expressions inside, other text) is LibCST's parse of the text, with the
        expressions inside built here."""
        text = self._text(a)
        start = next((i for i, c in enumerate(text) if c in "'\""), 0)
        quotes = 3 if text[start:start + 3] in ('"""', "'''") and len(text) - start >= 6 else 1
        if not _ADJACENT_QUOTES.search(text, start + quotes, len(text) - quotes):
            pieces = [(text, a.lineno, a.col_offset)]
        else:
            pieces = self._literals(a, text)
        values = [v for v in a.values if type(v) is ast.FormattedValue] if type(a) is ast.JoinedStr else []
        built = [self._literal(*piece, values) for piece in pieces] if pieces is not None else [None]
        if None in built:
            return self._parsed_string(a, text)
        node = built[-1]
        for left in reversed(built[:-1]):
            node = make.ConcatenatedString(left=left, right=node)
        return node

    def _literals(self, a: ast.expr, text: str):
        """The literals side by side in `text`, each (its text, line, column), from Python's
        tokenizer; None where their lines are not ASCII (the columns would be bytes)."""
        if not all(self.lines[r - 1].isascii() for r in range(a.lineno, a.end_lineno + 1)):
            return None
        out = []
        bracketed = f"({text})"
        starts = [0, *accumulate(map(len, source_lines(bracketed, keepends=True)))]
        f_start, depth = None, 0  # Python 3.12 tokenizes an f-string in parts: its first one, how deep
        try:
            for tok in tokenize.generate_tokens(io.StringIO(bracketed).readline):
                if tok.type == _FSTRING_START_TOKEN:
                    f_start, depth = (f_start or tok.start), depth + 1
                    continue
                if tok.type == _FSTRING_END_TOKEN:
                    depth -= 1
                    if depth:
                        continue
                    start, f_start = f_start, None
                    (row, col), (end_row, end_col) = start, tok.end
                    string = bracketed[starts[row - 1] + col:starts[end_row - 1] + end_col]
                elif tok.type == tokenize.STRING and not depth:
                    (row, col), string = tok.start, tok.string
                else:
                    continue
                out.append((string, a.lineno + row - 1, a.col_offset + col - 1 if row == 1 else col))
        except (tokenize.TokenError, SyntaxError):  # pragma: no cover - Python's parser took it
            return None
        return out

    def _literal(self, text: str, row: int, col: int, values: Sequence[ast.FormattedValue]):
        """One literal: a SimpleString, or an f-string cut into its parts (None: not cut here)."""
        m = _FSTRING_START.match(text)
        if m is None:
            return make.SimpleString(value=text)
        if not self._ascii(self.lines[row - 1]):
            return None
        mine = [v for v in values if v.value.lineno == row and col <= v.value.col_offset < col + len(text)]
        parts = _FStringCutter(self, text, col).parts(m.end(), mine, len(text) - len(m.group(2)))
        if parts is None:
            return None
        return make.FormattedString(parts=parts, start=m.group(0), end=m.group(2))

    def _parsed_string(self, a: ast.expr, text: str) -> cst.BaseExpression:
        node = _parse_expression(text)
        if type(a) is not ast.JoinedStr:
            return node
        values: List[ast.expr] = []
        _formatted_values(a, values)
        it = iter(values)
        try:
            return _graft(node, lambda: self.expr(next(it).value))
        except StopIteration:
            return node

    def _attribute(self, a: ast.Attribute) -> cst.Attribute:
        attr = make.Name(value=a.attr)
        end = self._offset(a.end_lineno, a.end_col_offset)
        self.spans[id(attr)] = (end - len(a.attr), end)
        return make.Attribute(value=self.expr(a.value), attr=attr)

    def _call(self, a: ast.Call) -> cst.Call:
        items: List[Tuple[Tuple[int, int], cst.Arg]] = []
        func = self.expr(a.func)
        owner = -1
        if len(a.args) == 1 and not a.keywords and type(a.args[0]) is not ast.Starred:
            owner = self._call_bracket(a, func)
        for x in a.args:
            if type(x) is ast.Starred:
                arg = make.Arg(value=self.expr(x.value), star="*")
                self.spans[id(arg)] = x
            else:
                value = self.expr(x, owner)
                arg = make.Arg(value=value)
                self.spans[id(arg)] = self.outer(value)
            items.append(((x.lineno, x.col_offset), arg))
        for k in a.keywords:
            items.append(((k.lineno, k.col_offset), self._keyword(k)))
        if a.args and a.keywords:
            items.sort(key=lambda p: p[0])
        return make.Call(func=func, args=tuple(arg for _, arg in items))

    def _call_bracket(self, a: ast.Call, func: cst.BaseExpression) -> int:
        """The offset of the bracket that opens a call's arguments (after the callee's own)."""
        src = self.source
        hi = self._offset(a.func.end_lineno, a.func.end_col_offset)
        for _ in range(len(func.lpar)):
            hi = _forward(src, hi) + 1
        return _forward(src, hi)

    def _subscript(self, a: ast.Subscript) -> cst.Subscript:
        s = a.slice
        if type(s) is ast.Tuple and s.elts and not self._tuple_bracketed(s):
            elements = tuple(self._subscript_element(e) for e in s.elts)
        else:
            elements = (self._subscript_element(s),)
        return make.Subscript(value=self.expr(a.value), slice=elements)

    def _subscript_element(self, e: ast.expr) -> cst.SubscriptElement:
        if type(e) is ast.Slice:
            inner: cst.BaseSlice = make.Slice(
                lower=self.expr(e.lower) if e.lower is not None else None,
                upper=self.expr(e.upper) if e.upper is not None else None,
                step=self.expr(e.step) if e.step is not None else None,
                second_colon=make.Colon() if e.step is not None else cst.MaybeSentinel.DEFAULT,
            )
            self.spans[id(inner)] = e
        elif type(e) is ast.Starred:
            inner = make.Index(value=self.expr(e.value), star="*")
        else:
            inner = make.Index(value=self.expr(e))
        return make.SubscriptElement(slice=inner)

    def _binop(self, a: ast.BinOp) -> cst.BinaryOperation:
        return make.BinaryOperation(left=self.expr(a.left), operator=_BINARY[type(a.op)], right=self.expr(a.right))

    def _unaryop(self, a: ast.UnaryOp) -> cst.UnaryOperation:
        return make.UnaryOperation(operator=_UNARY[type(a.op)], expression=self.expr(a.operand))

    def _boolop(self, a: ast.BoolOp) -> cst.BooleanOperation:
        op = _AND if type(a.op) is ast.And else _OR
        node = self.expr(a.values[0])
        for v in a.values[1:]:
            node = make.BooleanOperation(left=node, operator=op, right=self.expr(v))
        return node

    def _compare(self, a: ast.Compare) -> cst.Comparison:
        return make.Comparison(left=self.expr(a.left), comparisons=tuple(
            make.ComparisonTarget(operator=_COMPARE[type(op)], comparator=self.expr(c))
            for op, c in zip(a.ops, a.comparators)))

    def _ifexp(self, a: ast.IfExp) -> cst.IfExp:
        return make.IfExp(test=self.expr(a.test), body=self.expr(a.body), orelse=self.expr(a.orelse))

    def _lambda(self, a: ast.Lambda) -> cst.Lambda:
        return make.Lambda(params=self.parameters(a.args), body=self.expr(a.body))

    def _namedexpr(self, a: ast.NamedExpr) -> cst.NamedExpr:
        return make.NamedExpr(target=self.expr(a.target), value=self.expr(a.value))

    def _elements(self, elts: Sequence[ast.expr]) -> List[cst.BaseElement]:
        out: List[cst.BaseElement] = []
        for e in elts:
            if type(e) is ast.Starred:
                el: cst.BaseElement = make.StarredElement(value=self.expr(e.value))
                self.spans[id(el)] = e
            else:
                value = self.expr(e)
                el = make.Element(value=value)
                self.spans[id(el)] = self.outer(value)
            out.append(el)
        return tuple(out)

    def _list(self, a: ast.List) -> cst.List:
        return make.List(elements=self._elements(a.elts))

    def _tuple(self, a: ast.Tuple) -> cst.Tuple:
        return make.Tuple(elements=self._elements(a.elts))

    def _set(self, a: ast.Set) -> cst.Set:
        return make.Set(elements=self._elements(a.elts))

    def _dict(self, a: ast.Dict) -> cst.Dict:
        out: List[cst.BaseDictElement] = []
        for k, v in zip(a.keys, a.values):
            if k is None:
                out.append(make.StarredDictElement(value=self.expr(v)))
            else:
                out.append(make.DictElement(key=self.expr(k), value=self.expr(v)))
        return make.Dict(elements=tuple(out))

    def _for_in(self, gens: Sequence[ast.comprehension]) -> cst.CompFor:
        inner = None
        for g in reversed(gens):
            inner = make.CompFor(target=self.expr(g.target), iter=self.expr(g.iter),
                                ifs=tuple(make.CompIf(test=self.expr(i)) for i in g.ifs), inner_for_in=inner,
                                asynchronous=make.Asynchronous() if g.is_async else None)
        return inner

    def _listcomp(self, a: ast.ListComp) -> cst.ListComp:
        return make.ListComp(elt=self.expr(a.elt), for_in=self._for_in(a.generators))

    def _setcomp(self, a: ast.SetComp) -> cst.SetComp:
        return make.SetComp(elt=self.expr(a.elt), for_in=self._for_in(a.generators))

    def _genexp(self, a: ast.GeneratorExp) -> cst.GeneratorExp:
        return make.GeneratorExp(elt=self.expr(a.elt), for_in=self._for_in(a.generators))

    def _dictcomp(self, a: ast.DictComp) -> cst.DictComp:
        return make.DictComp(key=self.expr(a.key), value=self.expr(a.value), for_in=self._for_in(a.generators))

    def _await(self, a: ast.Await) -> cst.Await:
        return make.Await(expression=self.expr(a.value))

    def _yield(self, a: ast.Yield) -> cst.Yield:
        return make.Yield(value=self.expr(a.value) if a.value is not None else None)

    def _yieldfrom(self, a: ast.YieldFrom) -> cst.Yield:
        return make.Yield(value=make.From(item=self.expr(a.value)))

    def _starred(self, a: ast.Starred) -> cst.StarredElement:
        return make.StarredElement(value=self.expr(a.value))


class _FStringCutter:
    """Cuts an f-string's text (one line) into LibCST's parts, at the places Python's tree
    gives for the expressions inside it."""

    def __init__(self, builder: _Builder, text: str, col: int) -> None:
        self.b, self.text, self.col = builder, text, col

    def parts(self, pos: int, values: Sequence[ast.expr], end: int):
        """The parts of text[pos:end] (None: not cut here); `values`: Python's parts."""
        text, out = self.text, []
        for v in values:
            if type(v) is not ast.FormattedValue:
                continue  # the literal text comes from between the expressions
            e = v.value.col_offset - self.col
            brace = text.rfind("{", pos, e)
            if brace < 0 or text[brace + 1:e].strip():
                return None
            if brace > pos:
                out.append(make.FormattedStringText(value=text[pos:brace]))
            expression = self.b.expr(v.value)
            j = v.value.end_col_offset - self.col
            while j < end and text[j] in " \t":
                j += 1
            conversion = None
            if text[j:j + 1] == "!":
                conversion, j = text[j + 1:j + 2], j + 2
                if conversion not in ("r", "s", "a"):
                    return None
            spec = None
            if text[j:j + 1] == ":":
                close = self._spec_end(j + 1, v.format_spec)
                if close is None:
                    return None
                spec = self.parts(j + 1, v.format_spec.values if v.format_spec is not None else (), close)
                if spec is None:
                    return None
                j = close
            if text[j:j + 1] != "}":
                return None  # `{x=}`, or anything unforeseen
            out.append(make.FormattedStringExpression(expression=expression, conversion=conversion,
                            format_spec=spec))
            pos = j + 1
        if pos < end:
            if "{" in text[pos:end].replace("{{", ""):
                return None
            out.append(make.FormattedStringText(value=text[pos:end]))
        return tuple(out)

    def _spec_end(self, pos: int, spec: Optional[ast.JoinedStr]) -> Optional[int]:
        """Where a format spec starting at pos ends (its `}`): the first `}` after its own
        `{...}` parts."""
        inner = [v for v in (spec.values if spec is not None else ()) if type(v) is ast.FormattedValue]
        if inner:
            last = inner[-1]
            after = self.text.find("}", last.value.end_col_offset - self.col)
            if after < 0:  # (a `{...}` inside a spec has no `{...}` of its own: Python refuses it)
                return None
            pos = after + 1
        close = self.text.find("}", pos)
        return close if close >= 0 else None


_EXPR = {
    ast.Name: _Builder._name, ast.Constant: _Builder._constant, ast.JoinedStr: _Builder._string,
    ast.Attribute: _Builder._attribute, ast.Call: _Builder._call, ast.Subscript: _Builder._subscript,
    ast.BinOp: _Builder._binop, ast.UnaryOp: _Builder._unaryop, ast.BoolOp: _Builder._boolop,
    ast.Compare: _Builder._compare, ast.IfExp: _Builder._ifexp, ast.Lambda: _Builder._lambda,
    ast.NamedExpr: _Builder._namedexpr, ast.List: _Builder._list, ast.Tuple: _Builder._tuple,
    ast.Set: _Builder._set, ast.Dict: _Builder._dict, ast.ListComp: _Builder._listcomp,
    ast.SetComp: _Builder._setcomp, ast.GeneratorExp: _Builder._genexp, ast.DictComp: _Builder._dictcomp,
    ast.Await: _Builder._await, ast.Yield: _Builder._yield, ast.YieldFrom: _Builder._yieldfrom,
    ast.Starred: _Builder._starred,
}



def _dotted(name: str) -> Union[cst.Name, cst.Attribute]:
    parts = name.split(".")
    node: Union[cst.Name, cst.Attribute] = make.Name(value=parts[0])
    for p in parts[1:]:
        node = make.Attribute(value=node, attr=make.Name(value=p))
    return node


def _back(src: str, i: int) -> int:
    """The index of the last character before `i` that is not blank or a line break."""
    i -= 1
    while i >= 0:
        c = src[i]
        if c in " \t\r\n\\\f":
            i -= 1
            continue
        if c != "\n":
            # a comment at the end of the previous line: skip back over it
            line_start = src.rfind("\n", 0, i) + 1
            hash_at = _comment_start(src, line_start, i + 1)
            if hash_at is not None:
                i = hash_at - 1
                continue
        return i
    return -1


def _comment_start(src: str, lo: int, hi: int) -> Optional[int]:
    """Where a comment starts in src[lo:hi] (a line's text up to hi), outside quotes."""
    if "#" not in src[lo:hi]:
        return None
    quote = None
    k = lo
    while k < hi:
        c = src[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            return k
        k += 1
    return None


def _forward(src: str, i: int) -> int:
    """The index of the first character at or after `i` that is not blank, a line break or a comment."""
    n = len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n\\\f":
            i += 1
        elif c == "#":
            j = src.find("\n", i)
            i = n if j < 0 else j
        else:
            return i
    return n


def _formatted_values(a: ast.AST, out: List[ast.FormattedValue]) -> None:
    """The `{...}` parts of an f-string (nested format specs included), in source order."""
    for v in a.values:
        if type(v) is ast.FormattedValue:
            out.append(v)
            if v.format_spec is not None:
                _formatted_values(v.format_spec, out)


def _graft(node: cst.CSTNode, next_expression) -> cst.CSTNode:
    """`node` with the expression of each `{...}` part replaced, in source order."""
    if type(node) is cst.FormattedStringExpression:
        expression = next_expression()
        spec = node.format_spec
        if spec is not None:
            spec = type(spec)(_graft(p, next_expression) for p in spec)
        return node.with_changes(expression=expression, format_spec=spec)
    if type(node) is cst.FormattedString:
        return node.with_changes(parts=type(node.parts)(_graft(p, next_expression) for p in node.parts))
    if type(node) is cst.ConcatenatedString:
        return node.with_changes(left=_graft(node.left, next_expression), right=_graft(node.right, next_expression))
    return node


def _parse_expression(text: str) -> cst.BaseExpression:
    """LibCST's parse of a string literal's text (in brackets: it may span lines)."""
    try:
        return cst.parse_expression(f"({text})").with_changes(lpar=[], rpar=[])
    except Exception as e:  # noqa: BLE001 - LibCST refuses what Python accepted: parse it whole
        raise Unsupported(f"string literal: {e}") from None
