"""How deeply a source nests, measured with Python's own tokenizer before LibCST parses it.

LibCST's native parser recurses once per level of nesting and a deep enough nest
overflows its stack and kills the process (a segfault, not an exception we could catch):
about 1,500 nested brackets, calls or lists; 4,000 nested lambdas; 10,000 unary minus
signs or `**`. A chain of binary operators, attribute accesses, calls or subscripts is not
deep for the parser but makes a left-deep tree whose parse time grows with the square of
its length (4,000 `+` terms: 3.4 s; 5,000 subscripts `x[0][0]...`: 146 s), and no time
budget can stop that parse. Joined string literals and `elif` branches are flat in the
source and nested in the trees. None of this is real code: CPython itself refuses more
than 200 nested brackets ("too many nested parentheses"). A file beyond the limits below is
refused with one line before the parser sees it ("too deeply nested" for a nest, "too long"
for something flat that the trees nest).

Measuring every token is a tenth of a cold check, so the usual file is cleared first with
Python's own parser (`ast`, C, twice as fast as `tokenize`): where it accepts the file and
no logical line of it is long enough to hold a nest or chain near the limits, no token is
measured. Anything else is measured as before; a file the measure clears is built from
Python's tree all the same. Before LibCST's own parser runs (a fix needs its tree), every
token is measured, and the chains' lengths are added up too (`native_problem`).
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from itertools import accumulate
from typing import Dict, List, Optional, Tuple

from synclint.parse.lines import source_lines

MAX_BRACKETS = 200  # CPython's own limit (MAXLEVEL in its tokenizer)
# Brackets plus right-nested operators (`-`, `~`, `not`, `**`, `lambda`, `x if c else`,
# `await`) open at once: a third of the smallest nest that crashed the parser.
MAX_NESTING = 1000
# Links chained at one level of one expression: binary operators, attribute accesses, calls
# and subscripts. LibCST parses 1,000 in 0.1-1.5 s and 4,000 in 3-4 s (quadratic in the
# length; 2,000 subscripts `x[0][0]...`: 15 s, 5,000: 146 s, cubic), and 4,900 chained
# method calls crashed a later pass; no file of the installed torch chains more than 300.
# Generated algebra goes beyond (sympy's resolvent_lookup.py: 4,563 terms) but mentions no
# tensor, so it is only syntax-checked by Python's own parser, never refused here.
MAX_CHAIN = 1000
# String literals in a row, joined into one: LibCST nests each in the next and its parser
# refuses about 3,200 ("syntax error"); Python's own pydoc topics join 2,215.
MAX_STRINGS = 3000
# The squares of the chains' lengths, added over a file, for LibCST's own parser: its time
# per chain grows with the square of the length (per link: the same up to about 50, twice
# that at 100, six times at 400), so a file of many chains near MAX_CHAIN would parse for
# minutes where a file of short ones of the same size takes seconds. Ten chains of 1,000.
MAX_CHAIN_WORK = 10 * MAX_CHAIN * MAX_CHAIN
# `elif` branches of one `if`: each is nested in the one before, in Python's tree and in
# LibCST's; Python 3.11 itself cannot compile 3,000 (RecursionError).
MAX_ELIF = 1000

# The two kinds of refusal: a nest, and something long LibCST makes a nest of.
DEEP = "too deeply nested to analyse"
LONG = "too long to analyse"

_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
# Tokens after which the operands start again (the chain is cut without nesting).
_SEPARATORS = frozenset({",", ":", ";", "=", "->", ":=", "+=", "-=", "*=", "/=", "//=", "%=", "@=",
                         "&=", "|=", "^=", ">>=", "<<=", "**="})
_UNARY = frozenset({"-", "+", "~"})
_PREFIX_WORDS = frozenset({"not", "await"})
# These nest until the expression ends: `a if c else b if d else ...`, `lambda: lambda: ...`.
_OPEN_ENDED_WORDS = frozenset({"lambda", "if"})
_LEFT_WORDS = frozenset({"and", "or", "in", "is"})
# After these an operand starts (`return (x)` is no call); `None`, `True`, `False` are operands.
_KEYWORDS = frozenset(keyword.kwlist) - {"None", "True", "False"}
_LAYOUT = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})
# Python 3.12 tokenizes an f-string in parts (its replacement fields as tokens of their own)
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
_STRINGS = frozenset({tokenize.STRING, getattr(tokenize, "FSTRING_END", -2)})
_STRING_PARTS = frozenset({_FSTRING_START, getattr(tokenize, "FSTRING_MIDDLE", -3)})


class _Level:
    """One open bracket (or the statement itself): what is chained and nested in it."""

    __slots__ = ("chain", "prefix", "open_ended", "lambdas", "strings", "fstrings")

    def __init__(self) -> None:
        self.chain = 0  # binary operators, calls, subscripts, attributes since the last separator
        self.strings = 0  # string literals in a row (joined into one)
        self.fstrings = 0  # f-strings begun and not ended (Python 3.12 tokenizes their parts)
        self.prefix = 0  # unary operators, `not`, `**` in a row: a binary operator ends them
        self.open_ended = 0  # conditional expressions and lambdas since the last separator
        self.lambdas = 0  # lambdas whose `:` is still to come (that `:` cuts nothing)

    @property
    def right(self) -> int:
        return self.prefix + self.open_ended


def native_problem(source: str) -> Optional[str]:
    """Why LibCST's own parser must not parse `source`: `nesting_problem`, or chains whose
    parse, in sum, would take minutes (it holds the interpreter: no time budget can stop it).
    Every token is measured (a tenth of that parse's time)."""
    return _measured_problem(source, native=True)


def nesting_problem(source: str) -> Optional[str]:
    """Why LibCST must not parse `source` (too deep a nest or too long a chain), or None.

    Tokenizer errors are not reported here: the parser reports its own syntax errors."""
    return checked(source)[0]


def checked(source: str) -> Tuple[Optional[str], Optional[ast.Module]]:
    """(`nesting_problem(source)`, Python's own tree of the source where that tree cleared
    it): the positions of findings come from that tree too, so it is parsed once."""
    tree = _python_tree(source)
    if tree is not None and _surely_shallow(source, tree):
        return None, tree
    problem = _measured_problem(source)
    return problem, tree if problem is None else None


# Whatever a token the measure counts can be (a bracket, an operator, a separator, `.`, a
# keyword that nests or chains) matches at least once: an upper bound on what it counts.
_COUNTED = re.compile(r"[^\w\s]|\b(?:not|await|lambda|if|and|or|in|is)\b")
# Grouping brackets before a statement's first node lie outside its `ast` position (and so
# in the span before it); Python's parser accepted at most MAX_BRACKETS of them.
_SPAN_LIMIT = min(MAX_NESTING, MAX_CHAIN) - MAX_BRACKETS


def _python_tree(source: str) -> Optional[ast.Module]:
    """Python's own tree of `source`; None where its parser refuses it (newer syntax, an
    error, or too deep for Python itself)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _surely_shallow(source: str, tree: ast.Module) -> bool:
    """Whether no limit can be reached, known without measuring a token: Python's parser
    accepted the source (`tree`: so no more than MAX_BRACKETS nested brackets, CPython's own
    limit, the same count), no `if` statement has more than MAX_ELIF `elif` branches, and
    every run of lines between two statement boundaries holds fewer countable characters
    than _SPAN_LIMIT (a nest or chain lies within one logical line)."""
    statements = _statements(tree)
    if _longest_elif_chain(statements) > MAX_ELIF:
        return False
    lines = source_lines(source, keepends=True)
    starts = [0, *accumulate(map(len, lines))]  # line r: starts[r - 1]
    edges = _statement_edges(statements)
    rows = sorted(edges)
    for first, last in zip([0, *rows], [*rows, len(starts) - 1]):
        lo, hi = starts[first], starts[last]
        if hi - lo > _SPAN_LIMIT and len(_COUNTED.findall(source, lo, hi)) - sum(
                len(_COUNTED.findall(source, max(lo, s), min(hi, e)))
                for s, e in _string_insides(edges.get(first), source, lines, starts)) > _SPAN_LIMIT:
            return False
    return True


def _statements(tree: ast.Module) -> List[ast.AST]:
    """Every statement of the tree, each `except` and each `case` with them."""
    todo: List[ast.AST] = list(tree.body)
    for node in todo:  # grows as it goes
        if isinstance(node, ast.Match):
            todo += node.cases
        elif isinstance(getattr(node, "body", None), list):
            todo += node.body
            todo += getattr(node, "orelse", ())
            todo += getattr(node, "handlers", ())
            todo += getattr(node, "finalbody", ())
    return todo


def _statement_edges(statements: List[ast.AST]) -> Dict[int, Optional[ast.AST]]:
    """Lines after which a logical line surely ends: the line before each statement (and
    each `except`, each `case`), with a statement that starts on the next line, and the
    last line of each simple statement."""
    edges: Dict[int, Optional[ast.AST]] = {}
    for node in statements:
        edges[(getattr(node, "lineno", 0) or node.pattern.lineno) - 1] = node  # a match_case has no position
        if not isinstance(getattr(node, "body", None), list) and node.end_lineno not in edges:
            edges[node.end_lineno] = None
    return edges


def _longest_elif_chain(statements: List[ast.AST]) -> int:
    """The most `elif` branches of one `if` statement. An `elif` is an `if` alone in its
    parent's `orelse`, in the parent's column (an `if` in an `else:` block is indented)."""
    elifs: Dict[int, int] = {}  # id of an `if` -> the `elif`s below it
    longest = 0
    for node in reversed(statements):  # (an `elif` is listed after its parent)
        if type(node) is ast.If:
            below = node.orelse[0] if len(node.orelse) == 1 else None
            if type(below) is ast.If and below.col_offset == node.col_offset and below.lineno > node.lineno:
                elifs[id(node)] = n = elifs.get(id(below), 0) + 1
                longest = max(longest, n)
    return longest


# A string of three lines or more, alone (not joined with others): its lines between the
# first and the last are text. (Raw strings too: a backslash keeps a quote in them as well.)
_ONE_LONG_STRING = re.compile(r"[rRbBuU]{0,2}(?:" + "|".join(
    rf"{q}{q}{q}(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*{q}{q}{q}" for q in "\"'") + ")", re.S)


def _string_insides(node: Optional[ast.AST], source: str, lines: List[str], starts: List[int]):
    """(start, end) offsets of the lines wholly inside a string of three lines or more in
    `node` (docstrings, the text of `_add_docstr(f, r"...")`): nothing there is a token the
    measure counts. f-strings, and strings joined from several literals (whose lines may
    hold more of them), are left whole (their parts' positions are not theirs in 3.11)."""
    todo = [node] if node is not None else []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            if node.end_lineno - node.lineno >= 2:
                lo = starts[node.lineno - 1] + _chars(lines[node.lineno - 1], node.col_offset)
                hi = starts[node.end_lineno - 1] + _chars(lines[node.end_lineno - 1], node.end_col_offset)
                if _ONE_LONG_STRING.fullmatch(source, lo, hi):
                    yield starts[node.lineno], starts[node.end_lineno - 1]
        elif not isinstance(node, ast.JoinedStr):
            todo.extend(ast.iter_child_nodes(node))


def _chars(line: str, byte_col: int) -> int:
    """The characters of `line` in its first `byte_col` bytes of UTF-8 (`ast`'s columns)."""
    return byte_col if line.isascii() else len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _measured_problem(source: str, native: bool = False) -> Optional[str]:
    """`nesting_problem`, measured token by token; with `native`, also the chains' work in
    LibCST's own parser (`MAX_CHAIN_WORK`).

    Tokenizer errors are not reported here: the parser reports its own syntax errors, and
    what was measured up to the error is still checked."""
    work = 0  # the squares of the chains' lengths, so far
    levels: List[_Level] = [_Level()]
    nested = 0  # brackets and right-nested operators open now
    operand_next = True  # the next token starts an operand (so `-` there is unary, `(` no call)
    statement_next = True  # the next token starts a statement
    elifs: List[int] = [0]  # per indentation depth: the `elif`s of the `if` statement there so far
    tokens = tokenize.generate_tokens(io.StringIO(source, newline=None).readline)
    try:
        for tok in tokens:
            kind, s = tok.type, tok.string
            level = levels[-1]
            if kind in _LAYOUT:
                if kind == tokenize.INDENT:
                    elifs.append(0)
                elif kind == tokenize.DEDENT:
                    elifs.pop()
                continue
            if statement_next:
                statement_next = False
                if s == "elif":
                    elifs[-1] += 1
                    if elifs[-1] > MAX_ELIF:
                        return _long(f"an `if` statement has more than {MAX_ELIF} `elif` branches", tok)
                elif s != "else":
                    elifs[-1] = 0
            if kind in _STRINGS:  # (an f-string's end, from Python 3.12)
                level.fstrings -= kind != tokenize.STRING
                level.strings += 1
                if level.strings > MAX_STRINGS:
                    return _long(f"more than {MAX_STRINGS} string literals are joined into one", tok)
                operand_next = False
                continue
            if kind in _STRING_PARTS:
                level.fstrings += kind == _FSTRING_START
                continue
            if not level.fstrings:  # (a replacement field's brackets are inside a literal)
                level.strings = 0
            if kind == tokenize.OP and s in _OPEN:
                if not operand_next and s != "{":  # a call or a subscript: a link of the chain
                    level.chain += 1
                    if level.chain > MAX_CHAIN:
                        return _long(f"an expression chains more than {MAX_CHAIN} operations", tok)
                levels.append(_Level())
                nested += 1
                if len(levels) - 1 > MAX_BRACKETS:
                    return _deep(f"more than {MAX_BRACKETS} nested brackets", tok)
                operand_next = True
            elif kind == tokenize.OP and s in _CLOSE:
                if len(levels) > 1:
                    work += level.chain * level.chain
                    nested -= 1 + levels.pop().right
                operand_next = False
            elif kind == tokenize.NEWLINE or (kind == tokenize.OP and s in _SEPARATORS):
                if level.lambdas and s in (":", ",", "="):  # a lambda's parameters or its `:`
                    level.lambdas -= s == ":"
                else:
                    nested -= level.right
                    work += level.chain * level.chain
                    level.chain = level.prefix = level.open_ended = 0
                if native and work > MAX_CHAIN_WORK:
                    return _long(f"its chains of operations would take LibCST's parser minutes (the squares of "
                                 f"their lengths add up to more than {MAX_CHAIN_WORK:,})", tok)
                operand_next = True
                statement_next = kind == tokenize.NEWLINE or (s == ";" and len(levels) == 1)
            elif (kind == tokenize.OP and (s == "**" or (operand_next and s in _UNARY))) or (
                    kind == tokenize.NAME and s in _PREFIX_WORDS | _OPEN_ENDED_WORDS):
                if s in _OPEN_ENDED_WORDS:
                    level.open_ended += 1
                    level.lambdas += s == "lambda"
                else:
                    level.prefix += 1
                nested += 1
                if nested > MAX_NESTING:
                    return _deep(f"more than {MAX_NESTING} nested brackets and operators", tok)
                operand_next = True
            elif kind == tokenize.OP or (kind == tokenize.NAME and s in _LEFT_WORDS):
                nested -= level.prefix  # `-a * -b`: two operands, not a nest
                level.prefix = 0
                level.chain += 1
                if level.chain > MAX_CHAIN:
                    return _long(f"an expression chains more than {MAX_CHAIN} operations", tok)
                operand_next = True
            else:  # a name, a number, a keyword
                operand_next = kind == tokenize.NAME and s in _KEYWORDS
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return None


def _deep(what: str, tok: tokenize.TokenInfo) -> str:
    return f"{DEEP} ({what} at line {tok.start[0]})"


def _long(what: str, tok: tokenize.TokenInfo) -> str:
    return f"{LONG} ({what} at line {tok.start[0]})"
