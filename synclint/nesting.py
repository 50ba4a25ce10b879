"""How deeply a source nests, measured with Python's own tokenizer before LibCST parses it.

LibCST's native parser recurses once per level of nesting and a deep enough nest
overflows its stack and kills the process (a segfault, not an exception we could catch):
about 1,500 nested brackets, calls or lists; 4,000 nested lambdas; 10,000 unary minus
signs or `**`. A chain of binary operators or attribute accesses is not deep for the
parser but makes a left-deep tree whose parse time grows with the square of its length
(4,000 `+` terms: 3.4 s; 100,000: many minutes). None of this is real code: CPython itself
refuses more than 200 nested brackets ("too many nested parentheses"). A file beyond the
limits below is refused with one line before the parser sees it.

Measuring every token is a tenth of a cold check, so the usual file is cleared first with
Python's own parser (`ast`, C, twice as fast as `tokenize`): where it accepts the file and
no logical line of it is long enough to hold a nest or chain near the limits, no token is
measured. Anything else is measured as before.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from itertools import accumulate
from typing import Dict, List, Optional, Tuple

from synclint.lines import source_lines

MAX_BRACKETS = 200  # CPython's own limit (MAXLEVEL in its tokenizer)
# Brackets plus right-nested operators (`-`, `~`, `not`, `**`, `lambda`, `x if c else`,
# `await`) open at once: a third of the smallest nest that crashed the parser.
MAX_NESTING = 1000
# Binary operators or attribute accesses chained at one level of one expression. LibCST
# parses 1,000 in 0.1-1.5 s and 4,000 in 3-4 s (quadratic in the length), and 4,900 chained
# method calls crashed a later pass; no file of the installed torch chains more than 300.
# Generated algebra goes beyond (sympy's resolvent_lookup.py: 4,563 terms) but mentions no
# tensor, so it is only syntax-checked by Python's own parser, never refused here.
MAX_CHAIN = 1000

_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
# Tokens after which the operands start again (the chain is cut without nesting).
_SEPARATORS = frozenset({",", ":", ";", "=", "->", ":=", "+=", "-=", "*=", "/=", "//=", "%=", "@=",
                         "&=", "|=", "^=", ">>=", "<<=", "**="})
_UNARY = frozenset({"-", "+", "~"})
_PREFIX_WORDS = frozenset({"not", "await"})
# These nest until the expression ends: `a if c else b if d else ...`, `lambda: lambda: ...`.
_OPEN_ENDED_WORDS = frozenset({"lambda", "if"})
_LEFT_WORDS = frozenset({"and", "or", "in", "is"})


class _Level:
    """One open bracket (or the statement itself): what is chained and nested in it."""

    __slots__ = ("chain", "prefix", "open_ended", "lambdas")

    def __init__(self) -> None:
        self.chain = 0  # binary operators since the last separator
        self.prefix = 0  # unary operators, `not`, `**` in a row: a binary operator ends them
        self.open_ended = 0  # conditional expressions and lambdas since the last separator
        self.lambdas = 0  # lambdas whose `:` is still to come (that `:` cuts nothing)

    @property
    def right(self) -> int:
        return self.prefix + self.open_ended


def nesting_problem(source: str) -> Optional[str]:
    """Why LibCST must not parse `source` (too deep a nest or too long a chain), or None.

    Tokenizer errors are not reported here: the parser reports its own syntax errors."""
    return checked(source)[0]


def checked(source: str) -> Tuple[Optional[str], Optional[ast.Module]]:
    """(`nesting_problem(source)`, Python's own tree of the source where that tree cleared
    it): the positions of findings come from that tree too, so it is parsed once."""
    tree = _surely_shallow(source)
    return (None, tree) if tree is not None else (_measured_problem(source), None)


# Whatever a token the measure counts can be (a bracket, an operator, a separator, `.`, a
# keyword that nests or chains) matches at least once: an upper bound on what it counts.
_COUNTED = re.compile(r"[^\w\s]|\b(?:not|await|lambda|if|and|or|in|is)\b")
# Grouping brackets before a statement's first node lie outside its `ast` position (and so
# in the span before it); Python's parser accepted at most MAX_BRACKETS of them.
_SPAN_LIMIT = min(MAX_NESTING, MAX_CHAIN) - MAX_BRACKETS


def _surely_shallow(source: str) -> Optional[ast.Module]:
    """Python's tree of `source` when no limit can be reached, known without measuring a
    token (None: measure them): Python's parser accepts the source (so no more than
    MAX_BRACKETS nested brackets: CPython's own limit, the same count), and every run of
    lines between two statement boundaries holds fewer countable characters than
    _SPAN_LIMIT (a nest or chain lies within one logical line)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None  # newer syntax, an error, or too deep for Python itself: measure it
    starts = [0, *accumulate(map(len, source_lines(source, keepends=True)))]  # line r: starts[r - 1]
    edges = _statement_edges(tree)
    rows = sorted(edges)
    for first, last in zip([0, *rows], [*rows, len(starts) - 1]):
        lo, hi = starts[first], starts[last]
        if hi - lo > _SPAN_LIMIT and len(_COUNTED.findall(source, lo, hi)) - sum(
                len(_COUNTED.findall(source, max(lo, s), min(hi, e)))
                for s, e in _string_insides(edges.get(first), starts)) > _SPAN_LIMIT:
            return None
    return tree


def _statement_edges(tree: ast.Module) -> Dict[int, Optional[ast.AST]]:
    """Lines after which a logical line surely ends: the line before each statement (and
    each `except`, each `case`), with a statement that starts on the next line, and the
    last line of each simple statement."""
    edges: Dict[int, Optional[ast.AST]] = {}
    todo: List[ast.AST] = list(tree.body)
    for node in todo:  # grows as it goes
        edges[(getattr(node, "lineno", 0) or node.pattern.lineno) - 1] = node  # a match_case has no position
        if isinstance(node, ast.Match):
            todo += node.cases
        elif isinstance(getattr(node, "body", None), list):
            todo += node.body
            todo += getattr(node, "orelse", ())
            todo += getattr(node, "handlers", ())
            todo += getattr(node, "finalbody", ())
        elif node.end_lineno not in edges:
            edges[node.end_lineno] = None
    return edges


def _string_insides(node: Optional[ast.AST], starts: List[int]):
    """(start, end) offsets of the lines wholly inside a string of three lines or more in
    `node` (docstrings, the text of `_add_docstr(f, r"...")`): nothing there is a token the
    measure counts. f-strings are left whole (their parts' positions are not theirs in 3.11)."""
    todo = [node] if node is not None else []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            if node.end_lineno - node.lineno >= 2:
                yield starts[node.lineno], starts[node.end_lineno - 1]
        elif not isinstance(node, ast.JoinedStr):
            todo.extend(ast.iter_child_nodes(node))


def _measured_problem(source: str) -> Optional[str]:
    """`nesting_problem`, measured token by token.

    Tokenizer errors are not reported here: the parser reports its own syntax errors, and
    what was measured up to the error is still checked."""
    levels: List[_Level] = [_Level()]
    nested = 0  # brackets and right-nested operators open now
    operand_next = True  # the next token starts an operand (so `-` there is unary)
    tokens = tokenize.generate_tokens(io.StringIO(source, newline=None).readline)
    try:
        for tok in tokens:
            kind, s = tok.type, tok.string
            level = levels[-1]
            if kind == tokenize.OP and s in _OPEN:
                levels.append(_Level())
                nested += 1
                if len(levels) - 1 > MAX_BRACKETS:
                    return _deep(f"more than {MAX_BRACKETS} nested brackets", tok)
                operand_next = True
            elif kind == tokenize.OP and s in _CLOSE:
                if len(levels) > 1:
                    nested -= 1 + levels.pop().right
                operand_next = False
            elif kind == tokenize.NEWLINE or (kind == tokenize.OP and s in _SEPARATORS):
                if level.lambdas and s in (":", ",", "="):  # a lambda's parameters or its `:`
                    level.lambdas -= s == ":"
                else:
                    nested -= level.right
                    level.chain = level.prefix = level.open_ended = 0
                operand_next = True
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
                    return _deep(f"an expression chains more than {MAX_CHAIN} operators", tok)
                operand_next = True
            elif kind not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                operand_next = False
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return None


def _deep(what: str, tok: tokenize.TokenInfo) -> str:
    return f"too deeply nested to analyse ({what} at line {tok.start[0]})"
