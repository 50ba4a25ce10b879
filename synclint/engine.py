"""Lint one source text: prefilter, parse once, a first walk that learns what the file
offers (`analyse`), a second walk with the rules that also knows what the project offers
(`lint_analysis`), then positions, noqa and in-file heat."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

from synclint.findings import Edit, Finding, Fix
from synclint.noqa import noqa_map, suppressing
from synclint.semantic.compiled import Compiled
from synclint.semantic.declared import DeclaredHeat
from synclint.semantic import rates

if TYPE_CHECKING:  # the semantic package imports LibCST: a cached run never loads it
    from synclint.semantic.facts import FileFacts, ModuleSummary, ProjectFacts

# A file that mentions none of these cannot hold a tensor we know about: skip the parse.
# (The read-back methods are here for helper modules that never name torch: their
# parameters may be tensors that other modules pass in.)
PREFILTER = ("torch", "Tensor", "tensor", "cuda", "forward", ".item()", ".cpu()", ".tolist()", ".numpy()")


def might_fire(source: str) -> bool:
    return any(word in source for word in PREFILTER)


def might_inform(source: str) -> bool:
    """A file worth summarising for others: one rules may fire in, or one whose functions
    may return NumPy arrays (a loader module `torch.Tensor(...)` is later applied to)."""
    return might_fire(source) or "numpy" in source


@dataclass
class Analysis:
    """One file parsed and walked once: what the project learns from it (`summary`) and what
    its own second walk starts from (`facts`). The tree is kept for that second walk."""

    source: str
    filename: str
    module_name: Optional[str]
    module: object  # libcst.Module
    facts: FileFacts
    summary: ModuleSummary
    rows: Optional[list] = None  # the statements' `positions.statement_rows`, when at hand
    spans: Optional[dict] = None  # a tree built from Python's parse: where its nodes are (`parse.builder`)
    tree_memo: dict = field(default_factory=dict)  # what the tree alone tells, for every walk (`SemanticModel.once`)


@dataclass
class Graph:
    """A file's part of the project's call graph, for heat across modules: (caller, callee,
    call is hot) with callees in other modules as "@" + qualified name; the functions that
    loop over batches themselves or decode (per epoch or request: callers' heat stops there;
    `heat.per_request_functions`)."""

    calls: List[Tuple[Optional[str], str, bool]] = field(default_factory=list)
    per_epoch: List[str] = field(default_factory=list)
    # functions that read a clock and do nothing longer (`_is_clock`): a caller of one times
    # what it runs (a `Timer`'s `tic`/`toc` in another module)
    timing: List[str] = field(default_factory=list)
    steppers: List[str] = field(default_factory=list)  # functions that step an optimizer (`heat.STEPS`)
    # functions a framework calls every step: by name (`forward`) or by their class's
    # framework base (a head's `loss_by_feat`: `SemanticModel.is_entry`)
    entries: List[str] = field(default_factory=list)
    # compile roots, disabled functions and Dynamo flags (`semantic.compiled`), for the
    # project's compiled regions
    compiled: Compiled = field(default_factory=Compiled)
    # the calls (indices into `calls`) made under `no_grad` / `inference_mode`: a function
    # whose every caller runs it so runs with autograd off (`Project.grad_off_scopes`)
    no_grad: List[int] = field(default_factory=list)
    # the names of methods called with autograd on, on values the file cannot resolve: a
    # function of that name may run with it on (`Project.grad_off_scopes`)
    unknown_calls: List[str] = field(default_factory=list)
    # functions that run at setup whoever calls them: module initialisers, memoised
    # functions (`semantic.setup.seeds`; `Project.setup_scopes` adds what only they call)
    setup: List[str] = field(default_factory=list)

    def to_json(self) -> list:
        out = [[list(c) for c in self.calls], self.per_epoch, self.timing, self.steppers, self.entries]
        if self.no_grad or self.unknown_calls or self.setup:
            return out + [self.compiled.to_json() if self.compiled else [], self.no_grad, self.unknown_calls,
                          self.setup]
        return out + [self.compiled.to_json()] if self.compiled else out

    @staticmethod
    def from_json(d: list) -> "Graph":
        return Graph([tuple(c) for c in d[0]], list(d[1]), list(d[2]), list(d[3]), list(d[4]),
                     Compiled.from_json(d[5] or None if len(d) > 5 else None), list(d[6]) if len(d) > 6 else [],
                     list(d[7]) if len(d) > 7 else [], list(d[8]) if len(d) > 8 else [])


def analyse(source: str, filename: str = "<string>", module_name: Optional[str] = None,
            force: bool = False, libcst_tree: bool = False,
            built: Optional[Callable[[], None]] = None) -> Optional[Analysis]:
    """Parse and walk a file once, without rules. None when the file cannot hold a tensor we
    know about (not parsed), unless `force` (it imports project modules that can). The tree
    is built from Python's own parse unless `libcst_tree` (LibCST's parse, for fixes);
    `built()` is called once it is, before it is walked (a worker freezes it there for its
    collector: `workers.serve`). Raises `LintError` on bad input."""
    if not force and not might_inform(source):
        _syntax_check(source)  # nothing to learn, but a file that does not parse is still an error
        return None
    from synclint.semantic import SemanticModel
    from synclint.walker import Walker

    from synclint.solver import walk_to_fixpoint

    module, rows, spans = _parse(source, libcst_tree)
    if built is not None:
        built()
    tree_memo: dict = {}

    def walk(last):
        """One walk without rules, from what the walk `last` learned."""
        facts = None
        if last is not None:
            facts = last.summary()
            last.release()
        model = SemanticModel(source, filename, facts=facts, module_name=module_name, tree_memo=tree_memo,
                              builds_graph=False)  # (no call graph of its own: see `SemanticModel`)
        model.set_module(module)
        walker = Walker(model, ())
        walker.walk(module)
        walker.close()
        return model

    with _deep_recursion(), _reading(source, spans):
        # calls above the functions they call: walked again from what a walk learned, so
        # that a chain (loss -> assign -> geometry) is known before linting
        model = walk_to_fixpoint(walk, SemanticModel.forward_refs_known)
    out = Analysis(source, filename, module_name, module, model.summary(), model.module_summary(module_name or ""),
                   rows, spans, tree_memo)
    model.release()
    return out


def lint_analysis(
    a: Analysis, rules: Sequence[type], project: Optional[ProjectFacts] = None,
    declared: DeclaredHeat = DeclaredHeat(),
) -> Tuple[List[Finding], Graph, "ModuleSummary"]:
    """The second walk, with the rules, from what the first walk and the project know.
    Findings carry the heat known in this file (with what `declared` says of its functions,
    the file a module named `a.module_name`); `Graph` lets the project add callers'; the
    summary is what this walk (knowing the project) tells the other modules."""
    with _reading(a.source, a.spans):
        return _lint_analysis(a, rules, project, declared)


def _lint_analysis(a: Analysis, rules: Sequence[type], project: Optional[ProjectFacts], declared: DeclaredHeat):
    from synclint.semantic import SemanticModel
    from synclint.walker import Walker

    from synclint.solver import walk_to_fixpoint

    source, module = a.source, a.module
    failed: dict = {}  # rule class -> statement index where it raised

    def walk(last):
        """One walk with the rules, from what the walk `last` learned (else the first walks')."""
        facts = a.facts
        if last is not None:
            facts = last.summary()
            last.release()
        ctx = SemanticModel(source, a.filename, facts=facts, project=project, module_name=a.module_name,
                            tree_memo=a.tree_memo)
        ctx.set_module(module)
        failed.clear()
        walker = Walker(ctx, _isolated_rules(rules, ctx, failed))
        walker.walk(module)
        walker.close()
        return ctx

    with _deep_recursion():
        # `err1, err5 = accuracy(output, target)` above `def accuracy`: its return was the
        # first walk's, made before the project said where `output` lives: walked again
        # from what this walk learned.
        ctx = walk_to_fixpoint(walk, SemanticModel.stale_reads)
    try:
        return _lint_results(a, rules, project, declared, ctx, failed)
    finally:
        ctx.release()


def _lint_results(a: Analysis, rules: Sequence[type], project: Optional[ProjectFacts], declared: DeclaredHeat,
                  ctx, failed: dict):
    """The findings, call graph and summary of the walk that left `ctx`."""
    from synclint.parse.positions import PositionIndex
    from synclint.semantic.heat import function_rates, per_request_functions
    from synclint.semantic.rarity import memoised, rare_functions
    from synclint.semantic.setup import seeds

    source, module = a.source, a.module
    memo = memoised(ctx)
    rare = rare_functions(ctx, memo)  # (a rare function's loops over items start no heat in other modules)
    calls = [(c, q, s if c not in rare or not s or rates.is_hot(ctx.site_rates[i].steps) else False)
             if i in ctx.site_rates else (c, q, s) for i, (c, q, s) in enumerate(ctx.calls)]
    graph = Graph(calls, sorted(per_request_functions(ctx)),
                  sorted(q for q in ctx.timing_funcs if q is not None and _is_clock(ctx.all_funcs.get(q))),
                  [q for q, f in ctx.all_funcs.items() if f.steps_optimizer],
                  [q for q, f in ctx.all_funcs.items() if f.entry], ctx.compile_facts, sorted(ctx.no_grad_calls),
                  sorted(ctx.unknown_calls), seeds(ctx, memo))
    summary = ctx.module_summary(a.module_name or "")
    # Rules about the comments themselves (unused `# noqa`) run after the others, from
    # which directive entries silenced something.
    comment_rules = [r for r in rules if r.READS_NOQA]
    if not ctx.findings and not failed and not comment_rules:
        return [], graph, summary
    if a.spans is not None and _needs_libcst_tree(ctx.findings, a.spans):
        try:
            again = analyse(source, a.filename, a.module_name, force=True, libcst_tree=True)
        except LintError:  # valid Python LibCST refuses (LibCST issue #1011): no fix then
            for p in ctx.findings:
                p.replacement = None
        else:
            return lint_analysis(again, rules, project, declared)
    func_rates = function_rates(ctx, declared, a.module_name or "", memo, rare)
    # (the rates follow heat's own edges and entries: the hot functions are the hot rates)
    hot_funcs = {q for q, r in func_rates.rates.items() if rates.is_hot(r)}
    in_tests = declared.in_tests(a.filename)
    positions = PositionIndex(module, source, a.rows, a.spans)
    noqa = noqa_map(source)
    used: set = set()  # the noqa directive entries that silenced something
    out: List[Finding] = []
    seen = set()
    for p in ctx.findings:
        rule = type(p.rule)
        if rule in failed:
            continue  # what a rule found before it raised is not trusted
        try:
            with _deep_recursion():  # positions and fixes regenerate code: as deep as the tree
                found = _finding(p, a, positions, noqa, hot_funcs, ctx, used, declared, func_rates, in_tests)
        except Exception:  # noqa: BLE001 - this rule's finding only: the error names it
            failed.setdefault(rule, p.stmt_index)
            continue
        if found is not None and (found.code, found.row, found.column) not in seen:
            seen.add((found.code, found.row, found.column))
            out.append(found)
    out = [f for f in out if f.code not in {r.CODE for r in failed}]
    for rule, stmt_index in failed.items():
        out.append(_internal_error(rule, a.filename, max(1, positions.stmt_rows(stmt_index)[0])))
    for r in comment_rules:
        out.extend(r.noqa_findings(source, a.filename, noqa, used, rules))
    out.sort(key=Finding.sort_key)
    return out, graph, summary


def _needs_libcst_tree(found, spans: dict) -> bool:
    """Whether a file's findings need LibCST's own tree: a fix (it must keep the file's
    formatting and comments), or a finding on a node whose place the built tree lacks."""
    return any(p.replacement is not None or id(p.node) not in spans for p in found)


def _is_clock(info) -> bool:
    """A function that reads a clock and does nothing longer (a `Timer`'s `tic`/`toc`: no
    loop, no `yield`): calling it times code. A logger that times the batches it yields
    (`metric_logger.log_every(loader)`) is no clock: the syncs of its loop are not timing."""
    import libcst as cst

    from synclint.semantic.syntax import descendants

    if info is None or info.node is None:
        return False
    return not any(type(n) in (cst.For, cst.While, cst.Yield) for n in descendants(info.node.body))


def _isolated_rules(rules: Sequence[type], ctx, failed: dict) -> list:
    """The rules as one object for the walker, whose every visit_/leave_ method calls each
    rule's in turn: a rule that raises is recorded in `failed` (with the statement it was
    on) and is silent for the rest of the file, while the other rules go on. (One call per
    node for all rules, not a wrapper per rule: 34 rules visit every Call.)"""
    from synclint.walker import rule_methods

    cls = _FANOUT.get(tuple(rules))
    if cls is None:
        names = sorted({f"{kind}_{t}" for r in rules for kind, t in rule_methods(r)})
        methods = {n: _fan_out(n) for n in names}
        if "visit_Call" in methods:
            methods["visit_Call"] = _IsolatedRules.calls_by_name
            # (names a call goes by) -> the rule classes whose visit_Call may act on it: the
            # same for every file of the rule set (`CALLS` is the class's)
            methods["_by_name"] = {}
        cls = _FANOUT[tuple(rules)] = type("IsolatedRules", (_IsolatedRules,), methods)
    return [cls(rules, ctx, failed)]


class _IsolatedRules:
    def __init__(self, rules: Sequence[type], ctx, failed: dict) -> None:
        from synclint.semantic.context import RuleContext
        from synclint.walker import rule_methods

        self.ctx, self.failed, self.rules = ctx, failed, rules
        self.table: dict = {}  # method name -> [(rule class, bound method)]
        facade = RuleContext(ctx)  # all a rule sees of the model
        for r in rules:
            try:
                rule = r(facade)
            except Exception:  # noqa: BLE001
                failed.setdefault(r, -1)
                continue
            for kind, t in rule_methods(r):
                name = f"{kind}_{t}"
                self.table.setdefault(name, []).append((r, getattr(rule, name)))
        self._calls: dict = {}  # (names a call goes by) -> the visit_Call methods it reaches
        self._call_visits: Optional[dict] = None  # rule class -> its visit_Call (`calls_by_name`)
        from synclint.semantic.syntax import last_name

        self._spelled = last_name  # (imported here: a cached run never imports LibCST)

    def drop(self, rule: type) -> None:
        self.failed.setdefault(rule, self.ctx.stmt_index)
        for name, methods in self.table.items():
            self.table[name] = [m for m in methods if m[0] is not rule]
        self._calls.clear()
        self._call_visits = None

    def calls_by_name(self, node) -> None:
        """`visit_Call` of the rules that may act on this call: those without `CALLS`, and
        those whose `CALLS` holds a name the call goes by (its function's own, and the last
        part of the qualified name its imports make of it). Of the 40 rules that visit
        calls, most act on a few names and returned at once from all other calls: a sixth
        of the second walk."""
        func = node.func
        spelled = self._spelled(func)
        q = self.ctx.qualname(func)
        key = (spelled, q[q.rfind(".") + 1:] if q else None)
        methods = self._calls.get(key)
        if methods is None:
            wanted = self._by_name.get(key)
            if wanted is None:  # (in the rules' order, the order of `table`)
                wanted = self._by_name[key] = tuple(
                    r for r in self.rules if r.CALLS is None or spelled in r.CALLS or key[1] in r.CALLS)
            visits = self._call_visits
            if visits is None:
                visits = self._call_visits = dict(self.table.get("visit_Call", ()))
            methods = self._calls[key] = [(r, visits[r]) for r in wanted if r in visits]
        for rule, method in methods:
            try:
                method(node)
            except Exception:  # noqa: BLE001 - as in `_fan_out`
                self.drop(rule)


def _fan_out(name: str):
    def call(self, node) -> None:
        for rule, method in self.table.get(name, ()):
            try:
                method(node)
            except Exception:  # noqa: BLE001 - RecursionError included: one rule, one file
                self.drop(rule)

    call.__name__ = name
    return call


_FANOUT: dict = {}  # rule classes -> their IsolatedRules class (the walker caches by class)


def _internal_error(rule: type, filename: str, row: int) -> Finding:
    """A rule that raised on this file, reported as one line for the file (not a finding:
    `Finding.internal`), so that the run and the other rules go on."""
    return Finding(
        code=rule.CODE, name=rule.NAME, message=f"internal error in {rule.CODE}; please report",
        filename=filename, row=row, column=1, end_row=row, end_column=1, hot=True, internal=True,
    )


def _finding(p, a: Analysis, positions, noqa, hot_funcs, ctx, used: set, declared: DeclaredHeat,
             func_rates, in_tests: bool) -> Optional[Finding]:
    """The finding a rule reported, placed; None when a timing function exempts it. One that
    a `# noqa` silences is kept, marked `suppressed` (counted, never shown), and the
    directive entries that silenced it go into `used` (for unused-noqa)."""
    from synclint.semantic.setup import site_kind

    rule = p.rule
    cold = declared.cold_scope(a.module_name or "", p.func)
    hot = (p.hot or (p.func in hot_funcs and not p.guarded)) and not cold
    rate, chain = rates.finding_rate(p.rate, p.func, func_rates, cold, lambda s: _line_of(a.filename, positions, s))
    info = ctx.all_funcs.get(p.func)
    if p.func in func_rates.rare or info is not None and info.per_request:
        # (only its step loops, not its loops over items, make it hot; a hook that decodes
        # runs its own code once per request, which the walk learnt only at its loop)
        hot = rates.is_hot(rate)
    if in_tests:
        rate, chain = rates.in_test_code(rates.settled(rate, hot), chain)
        hot = False
    if rule.TIMING_EXEMPT and p.func in ctx.timing_funcs:
        return None
    number = positions.stmt_number(p.stmt, p.stmt_index)
    row, col, end_row, end_col = positions.span(p.node, p.stmt, number)
    noqa_rows = {row, end_row}
    if p.stmt is not None and not _is_compound(p.stmt):
        noqa_rows.update(positions.stmt_rows(number))
    silenced_by = suppressing(noqa, noqa_rows, rule.CODE)
    used.update(silenced_by)
    fix = None
    if p.replacement is not None and not silenced_by and _comments(p.target) == _comments(p.replacement):
        # (A fix that would drop or repeat a comment is not offered: it must keep them.)
        from synclint.parse.codegen import code_for

        t = positions.span(p.target, p.stmt, number)
        content = code_for(a.module, p.replacement, positions.indent(t[0]))
        fix = Fix(
            "safe" if p.safe else "unsafe",
            p.fix_title or rule.FIX_TITLE or "",
            (Edit((t[0], t[1] + 1), (t[2], t[3] + 1), content),),
        )
    return Finding(
        code=rule.CODE, name=rule.NAME, message=p.message, filename=a.filename,
        row=row, column=col + 1, end_row=end_row, end_column=end_col + 1,
        hot=hot, fix_title=p.fix_title, fix=fix, noqa_rows=tuple(sorted(noqa_rows)),
        scope=p.func, guarded=p.guarded or p.func in func_rates.cold, suppressed="noqa" if silenced_by else None,
        timing_exempt=rule.TIMING_EXEMPT, hot_only=rule.HOT_ONLY, grad_mode_exempt=rule.GRAD_MODE_EXEMPT,
        setup_exempt=rule.SETUP_EXEMPT, setup_site=site_kind(p.rate) if rule.SETUP_EXEMPT else None,
        line=positions.line(row), compiled=p.compiled, rate=rates.settled(rate, hot).label, rate_chain=tuple(chain),
    )


def _line_of(filename: str, positions, stmt) -> str:
    """`train.py:41`: where a statement of this file (a loop a rate starts at) begins."""
    row = positions.stmt_rows(positions.stmt_number(stmt, -1))[0] if stmt is not None else 0
    name = os.path.basename(filename)
    return f"{name}:{row}" if row else name


def _comments(node) -> List[str]:
    """The comments inside a LibCST subtree, sorted (iterative: a long chain is deep)."""
    import libcst as cst

    out: List[str] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if type(n) is cst.Comment:
            out.append(n.value)
        else:
            todo.extend(n.children)
    return sorted(out)


def lint_source(
    source: str,
    filename: str = "<string>",
    rules: Optional[Sequence[type]] = None,
    *,
    hot_only: bool = False,
    project: Optional[ProjectFacts] = None,
    module_name: Optional[str] = None,
    declared: DeclaredHeat = DeclaredHeat(),
    max_chars: Optional[int] = None,
) -> List[Finding]:
    """Findings for one file's text, from what it and `project` say, with what `declared`
    says of how often its functions run; `max_chars`: see `source.size_problem`. Raises
    `LintError` on bad input."""
    from synclint.parse.source import size_problem

    problem = size_problem(source, max_chars)
    if problem is not None:
        raise LintError(problem)
    if rules is None:
        from synclint.registry import default_rules

        rules = default_rules()
    if not rules:
        _syntax_check(source)
        return []
    if declared and module_name is None:  # (the name a file on disk has in its package)
        from synclint.project import module_name as name_of

        module_name = name_of(filename) if os.path.isfile(filename) else os.path.splitext(os.path.basename(filename))[0]
    a = analyse(source, filename, module_name)
    if a is None or not might_fire(source):
        return []
    findings, graph, _ = lint_analysis(a, rules, project, declared)
    if any(f.compiled for f in findings):  # compiled events: in a region of this file's own?
        from synclint.semantic.compiled import file_regions, settle

        findings = settle(findings, file_regions(graph.compiled, graph.calls))
    if any(f.setup_exempt for f in findings):  # one-time transfers at setup: in this file's setup code?
        from synclint.semantic.setup import drops, file_setup

        scopes = file_setup(graph)
        findings = [f for f in findings if not drops(f, scopes)]
    return [f for f in findings if not f.suppressed and (f.hot or not (hot_only or f.hot_only))]


def _parse(source: str, libcst_tree: bool = False):
    """(LibCST's tree, the statements' `statement_rows` where Python's parse that cleared the
    source made them, else None, and the tree's `parse.builder` spans where it was built from
    that parse, else None)."""
    import libcst as cst

    from synclint.parse.builder import Unsupported, build
    from synclint.parse.nesting import checked, native_problem
    from synclint.parse.positions import statement_rows

    problem, tree = checked(source)  # deeper than this would kill the process in the parser
    if problem is not None:
        raise LintError(problem)
    with _deep_recursion():  # a long chain, an `elif` chain: a deep tree (the nesting guard bounds it)
        rows = statement_rows(tree) if tree is not None else None
        if tree is not None and not libcst_tree:
            try:
                module, spans = build(source, tree)
                return module, rows, spans
            except Unsupported:
                pass
    problem = native_problem(source)  # LibCST's parser holds the interpreter: no time budget stops it
    if problem is not None:
        raise LintError(problem)
    try:
        return _parse_module(source), rows, None
    except cst.ParserSyntaxError as e:
        import ast

        try:  # Python's message names the problem better than LibCST's "Syntax Error @ 2:1"
            ast.parse(source)
        except SyntaxError as better:
            raise LintError(f"cannot parse: {better.msg} (line {better.lineno}, column {better.offset or 0})") from None
        except (ValueError, RecursionError, MemoryError):
            pass
        else:  # valid Python LibCST's parser refuses, e.g. `(x): int = 1` (LibCST issue #1011)
            raise LintError(f"cannot parse: valid Python that LibCST's parser does not accept "
                            f"(line {e.raw_line}, column {e.raw_column + 1})") from None
        raise LintError(f"cannot parse: {_one_line(str(e))} (line {e.raw_line}, column {e.raw_column + 1})") from None
    except (RecursionError, MemoryError):
        raise LintError("cannot parse: nesting too deep") from None


@contextmanager
def _reading(source: str, spans: Optional[dict]):
    """While a tree built from Python's parse is walked, a node's code is the file's text
    (`syntax.code_of`)."""
    from synclint.parse.builder import BUILT, SourceOf

    token = BUILT.set(SourceOf(source, spans) if spans is not None else None)
    try:
        yield
    finally:
        BUILT.reset(token)


@contextmanager
def _deep_recursion():
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 20000))
    try:
        yield
    except RecursionError:
        raise LintError("cannot analyse: nesting too deep") from None
    finally:
        sys.setrecursionlimit(old_limit)


def _parse_module(source: str):
    """`cst.parse_module`, without re-validating each node the parser builds (see
    `parse.nodes.without_validation`)."""
    import libcst as cst

    from synclint.parse.nodes import without_validation

    with without_validation():
        return cst.parse_module(source)


def _syntax_check(source: str) -> None:
    """A file no rule can fire in must still parse. LibCST's grammar is the one that decides
    (every file that is analysed is parsed by it, and it knows newer syntax than the Python
    running us may); `ast` is only the fast path for the usual, valid file."""
    import ast

    from synclint.parse.nesting import DEEP, LONG

    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        try:
            _parse(source)  # newer syntax than this Python's is accepted here
        except LintError as refused:
            if not isinstance(e, SyntaxError) or str(refused).startswith((DEEP, LONG)):
                raise
            # Python's message names the problem better than LibCST's "Syntax Error @ 1:1".
            raise LintError(f"cannot parse: {e.msg} (line {e.lineno}, column {e.offset or 0})") from None


def _is_compound(stmt) -> bool:
    import libcst as cst

    return isinstance(stmt, cst.BaseCompoundStatement)


def _one_line(msg: str) -> str:
    first = msg.strip().splitlines()[0] if msg.strip() else "syntax error"
    return first.rstrip(".:")


class LintError(Exception):
    """The file cannot be checked; the message is the reason, in one line."""


