"""Source positions for the few nodes that have findings.

LibCST's PositionProvider regenerates the whole module and costs more than the parse.
Findings are rare, so instead: `ast` (cheap, C) gives the line and column of every
statement; statements are numbered in the same pre-order by the walker, so the k-th
LibCST statement is the k-th `ast` statement. Only the statement holding a finding is
regenerated with position tracking, starting from the place `ast` gives for it.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from itertools import accumulate
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from synclint.parse.lines import source_lines

QUOTED_LINE_MAX = 1000  # characters of a row that a finding carries (`PositionIndex.line`)

Span = Tuple[int, int, int, int]  # row, col (0-based), end row, end col (0-based, exclusive)


class _Recorder:
    """Stands in for the provider: LibCST's codegen state writes into `_computed`."""

    def __init__(self) -> None:
        self._computed: Dict[cst.CSTNode, CodeRange] = {}


# Where Python's parser puts a statement: line, column (bytes), end line, and the line of
# its first decorator (None: it has none).
Row = Tuple[int, int, int, Optional[int]]


def statement_rows(tree: ast.AST) -> List[Row]:
    """Every statement's `Row`, in the order `cst_statements` lists LibCST's (pre-order).
    Iterative: a recursive closure would be a reference cycle, garbage only the collector
    frees (a worker freezes the tree this comes with: `workers.serve`)."""
    out: List[Row] = []
    todo: List[Iterator[ast.stmt]] = [iter(tree.body)]
    while todo:
        s = next(todo[-1], None)
        if s is None:
            todo.pop()
            continue
        decorators = getattr(s, "decorator_list", None)
        out.append((s.lineno, s.col_offset, s.end_lineno or s.lineno, decorators[0].lineno if decorators else None))
        blocks = []
        for fname in ("body", "handlers", "orelse", "finalbody", "cases"):
            sub = getattr(s, fname, None)
            if not sub:
                continue
            if fname in ("handlers", "cases"):
                blocks.extend(h.body for h in sub)
            else:
                blocks.append(sub)
        todo.extend(iter(b) for b in reversed(blocks))
    return out


def cst_statements(module: cst.Module) -> List[cst.CSTNode]:
    """LibCST's statements in the order `statement_rows` lists Python's (small statements one
    by one; a block's statements after the statement that holds them). Iterative: the
    nesting is Python's (at most 100 blocks), but no recursion is cheaper still."""
    out: List[cst.CSTNode] = []
    todo: List[cst.CSTNode] = list(reversed(module.body))
    while todo:
        s = todo.pop()
        if type(s) in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
            todo.extend(reversed(s.body))
            continue
        out.append(s)
        if isinstance(s, cst.BaseCompoundStatement):
            todo.extend(reversed(_inner_statements(s)))
    return out


def _inner_statements(stmt: cst.BaseCompoundStatement) -> List[cst.CSTNode]:
    """The statements of a compound statement's blocks, in source order (`elif`: the If)."""
    blocks: List[cst.CSTNode] = []
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.BaseSuite):
        blocks.append(body)
    blocks.extend(h.body for h in getattr(stmt, "handlers", ()))
    blocks.extend(c.body for c in getattr(stmt, "cases", ()))
    out: List[cst.CSTNode] = []
    for block in blocks:
        out.extend(block.body)
    orelse = getattr(stmt, "orelse", None)
    if type(orelse) is cst.If:
        out.append(orelse)
    elif orelse is not None:
        out.extend(orelse.body.body)
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        out.extend(final.body.body)
    return out


class PositionIndex:
    def __init__(self, module: cst.Module, source: str, rows: Optional[List[Row]] = None,
                 spans: Optional[dict] = None) -> None:
        """`rows`: the statements' `statement_rows`, where a parse of the source made them;
        `spans`: where each node lies, for a tree `parse.builder` built (its code is not the
        file's, so it cannot be regenerated to find them)."""
        self.module = module
        self.spans = spans
        self._line_starts: Optional[List[int]] = None
        self.source = source
        self.lines = source_lines(source, keepends=True)
        self._stmts: Optional[List[Row]] = rows
        self._cache: Dict[int, Dict[cst.CSTNode, CodeRange]] = {}
        # every node of the statements regenerated so far: a statement holds the statements of
        # its blocks, and an `elif` chain regenerated per finding was quadratic in its length
        self._known: Dict[cst.CSTNode, CodeRange] = {}
        self._full: Optional[Dict[cst.CSTNode, CodeRange]] = None
        self._numbers: Optional[Dict[int, int]] = None  # id(LibCST statement) -> its number

    def stmt_number(self, stmt: Optional[cst.CSTNode], walked: int) -> int:
        """The number of `stmt` among the statements (what `statement_rows` indexes). The
        walker's count (`walked`) is the last statement it entered, which is not `stmt` for
        an expression visited after a nested block (a `case ... if guard:`)."""
        if stmt is None:
            return walked
        if self._numbers is None:
            self._numbers = {id(s): i for i, s in enumerate(cst_statements(self.module))}
        return self._numbers.get(id(stmt), walked)

    def _rows(self) -> List[Row]:
        if self._stmts is None:
            try:
                self._stmts = statement_rows(ast.parse(self.source))
            except (SyntaxError, ValueError, RecursionError):
                self._stmts = []
        return self._stmts

    def _char_col(self, row: int, byte_col: int) -> int:
        line = self.lines[row - 1] if 0 < row <= len(self.lines) else ""
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def span(self, node: cst.CSTNode, stmt: Optional[cst.CSTNode], stmt_index: int) -> Span:
        if self.spans is not None:
            where = self.spans.get(id(node)) or self.spans.get(id(stmt))
            return self._built_span(where) if where is not None else (1, 0, 1, 0)
        r = self._known.get(node)  # regenerated with an earlier finding's statement (an `elif` of its `if`)
        if r is None:
            ranges = self._ranges_for(stmt, stmt_index)
            r = ranges.get(node) if ranges is not None else None
        if r is None:
            r = self._full_ranges().get(node)
        if r is None:  # pragma: no cover - every node reaches codegen
            return (1, 0, 1, 0)
        return (r.start.line, r.start.column, r.end.line, r.end.column)

    def _built_span(self, where) -> Span:
        """A `parse.builder` span (Python's node, or a tuple), in characters."""
        if isinstance(where, tuple):
            return self._row_col(where[0]) + self._row_col(where[1])
        row, col, end_row, end_col = where.lineno, where.col_offset, where.end_lineno, where.end_col_offset
        return row, self._char_col(row, col), end_row, self._char_col(end_row, end_col)

    def _row_col(self, offset: int) -> Tuple[int, int]:
        """(line, column) of a character offset in the source."""
        if self._line_starts is None:
            self._line_starts = [0, *accumulate(map(len, self.lines))]
        row = bisect_right(self._line_starts, offset)
        return row, offset - self._line_starts[row - 1]

    def line(self, row: int) -> Optional[str]:
        """The text of a row without its line ending, for a finding to quote; None outside
        the file and for a row longer than QUOTED_LINE_MAX (each finding keeps its own copy,
        in memory and in the cache: the 100,000 findings of a 300 KB one-line f-string took
        21 GB; a report reads such a row from the file)."""
        if not 0 < row <= len(self.lines) or len(self.lines[row - 1]) > QUOTED_LINE_MAX + 2:  # (+ its ending)
            return None
        text = self.lines[row - 1].rstrip("\r\n")
        return text if len(text) <= QUOTED_LINE_MAX else None

    def indent(self, row: int) -> str:
        """The leading blanks of a line (a fix's continuation lines keep them)."""
        line = self.lines[row - 1] if 0 < row <= len(self.lines) else ""
        return line[: len(line) - len(line.lstrip(" \t"))]

    def stmt_rows(self, stmt_index: int) -> Tuple[int, int]:
        stmts = self._rows()
        if 0 <= stmt_index < len(stmts):
            return stmts[stmt_index][0], stmts[stmt_index][2]
        return (0, 0)

    def _ranges_for(self, stmt, stmt_index) -> Optional[Dict[cst.CSTNode, CodeRange]]:
        if stmt is None:
            return None
        cached = self._cache.get(stmt_index)
        if cached is not None:
            return cached
        stmts = self._rows()
        if not (0 <= stmt_index < len(stmts)):
            return None
        lineno, col_offset, _, decorated = stmts[stmt_index]
        rec = _Recorder()
        state = PositionProvidingCodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            provider=rec,
        )
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        state.indent_tokens = [indent] if indent else []
        if isinstance(stmt, cst.BaseSmallStatement):
            state.line = lineno
            state.column = self._char_col(lineno, col_offset)
        else:
            first = lineno
            decorators = getattr(stmt, "decorators", ())
            if decorators and decorated is not None:
                first = decorated - len(decorators[0].leading_lines)
            state.line = first - len(stmt.leading_lines)
            state.column = 0
        if type(stmt) is cst.If and line.lstrip().startswith("elif"):
            stmt._codegen(state, is_elif=True)
        else:
            stmt._codegen(state)
        # Sanity check: the statement must start where ast says; otherwise fall back.
        r = rec._computed.get(stmt)
        if r is None or r.start.line != lineno:
            return None
        self._cache[stmt_index] = rec._computed
        self._known.update(rec._computed)
        return rec._computed

    def _full_ranges(self) -> Dict[cst.CSTNode, CodeRange]:
        if self._full is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._full = dict(wrapper.resolve(PositionProvider))
        return self._full
