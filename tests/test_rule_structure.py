"""Rules keep no binding or dataflow table of their own: what a file binds, calls and computes
is the semantic model's, asked through `RuleContext` (tests/test_rule_context.py checks the
asking). A rule may remember only what the walk cannot give back later.

Read statically, for every class of rules/ that derives from `Rule`, a rule *keeps a table of
its own* when one of its instance attributes
- is assigned (`=`, `+=`, an annotated assignment) in a method other than `__init__`: state
  that the walk writes (a file flag such as `self._skip_file = True`, a scope counter, a
  stack rebound), or
- starts as a mutable container (a list, dict or set display or comprehension, `list()`,
  `dict()`, `set()`, `defaultdict()`, `Counter()`, `OrderedDict()`, `deque()`) and is filled
  anywhere: a mutating method (`add`, `append`, `update`, `setdefault`, `pop`, ...), an item
  store or delete, or the container handed to a function as an argument,

except two shapes, which are not tables:
- deferred findings: a list whose every write is `.append(<tuple>)` with a site of the rule
  context in it (`(node, ctx.site(), ...)`), reported at `leave_Module` with `report_at`;
- node marks: a set annotated `Set[int]` of `id(node)`s, syntax the rule has handled already
  (assignment targets, a subscript another rule owns).

Nor does rule code reach the model another way than its context (`own_analysis`):
- it imports of synclint only the rule contract, the rules' helpers and what holds no
  file's state (`IMPORTABLE`: the abstract domain, library tables, syntax helpers), never
  the model, the binder, the evaluator or the walker, so it cannot build a model of its own;
- it does not scan the whole file: the `Module` node a rule is handed at `visit_Module` /
  `leave_Module` is read for its layout only (`default_indent`, `default_newline`), and rule
  code reads no file (`open`, `read_text`, `tokenize`).

And every attribute a rule class sets in capitals is declared on `Rule` (`Rule` raises at
class creation otherwise; `test_an_undeclared_rule_attribute_is_refused`).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Set

import pytest

RULES = Path(__file__).resolve().parent.parent / "rules"

# What rule code may import of synclint, by module: None for any name, else the names.
IMPORTABLE: Dict[str, Optional[FrozenSet[str]]] = {
    "synclint.rule": None,  # the contract
    "synclint.semantic": frozenset({"KNOWN", "EVIDENT", "RECEIVER", "NOT_MODULE", "values", "library"}),
    "synclint.semantic.values": None,  # the abstract domain
    "synclint.semantic.library": None,  # library.toml's tables
    "synclint.semantic.syntax": None,  # what a node says by itself
    "synclint.semantic.context": frozenset({"Site"}),
    "synclint.semantic.moves": frozenset({"MOVE_METHODS"}),
    "synclint.semantic.ownership": frozenset({"INPLACE_TWINS"}),
    "synclint.semantic.gradmode": frozenset({"wants_grad_call"}),
    "synclint.semantic.compiled": frozenset({"tag"}),
    # the comment rule (`unused_noqa`) makes its findings from the file's noqa comments
    "synclint.findings": frozenset({"Edit", "Finding", "Fix"}),
    "synclint.noqa": frozenset({"Directive", "NoqaMap", "Use", "directives"}),
    "synclint.registry": frozenset({"all_rules"}),  # (which codes a noqa comment may name)
}
MODULE_LAYOUT = {"default_indent", "default_newline"}
FILE_READS = {"open", "read_text", "read_bytes", "tokenize", "generate_tokens"}

CONTAINER_CALLS = {"list", "dict", "set", "defaultdict", "Counter", "OrderedDict", "deque"}
CONTAINER_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
MUTATORS = {"add", "append", "appendleft", "extend", "insert", "update", "setdefault", "pop", "popitem",
            "popleft", "remove", "discard", "clear", "__setitem__", "__delitem__"}


def _self_attr(node: ast.AST) -> str:
    """`x` for `self.x`, else ""."""
    if type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self":
        return node.attr
    return ""


def _is_container(value: ast.AST) -> bool:
    if isinstance(value, CONTAINER_DISPLAYS):
        return True
    if type(value) is ast.Call:
        f = value.func
        name = f.id if type(f) is ast.Name else f.attr if type(f) is ast.Attribute else ""
        return name in CONTAINER_CALLS
    return False


def _node_marks(annotation: ast.AST) -> bool:
    return ast.unparse(annotation).replace("typing.", "") in ("Set[int]", "set[int]")


def _carries_site(arg: ast.AST) -> bool:
    """A tuple with `<...>ctx.site(...)` in it: a finding placed at a site, decided later."""
    return type(arg) is ast.Tuple and any(
        type(n) is ast.Call and type(n.func) is ast.Attribute and n.func.attr == "site"
        and (type(n.func.value) is ast.Name and n.func.value.id == "ctx"
             or type(n.func.value) is ast.Attribute and n.func.value.attr == "ctx")
        for n in ast.walk(arg))


def _rule_classes(tree: ast.Module) -> List[ast.ClassDef]:
    """Classes deriving from `Rule` (or from a class of the module that does, or a rules base)."""
    bases_ok = {"Rule", "CompiledRule"}
    out = []
    for node in tree.body:
        if type(node) is ast.ClassDef and any(ast.unparse(b).rsplit(".", 1)[-1] in bases_ok for b in node.bases):
            out.append(node)
            bases_ok.add(node.name)
    return out


def own_tables(source: str, filename: str = "<rule>") -> List[str]:
    """Each instance attribute by which a rule class keeps a table of its own, as "file:line: what"."""
    out: List[str] = []
    tree = ast.parse(source, filename)
    for cls in _rule_classes(tree):
        containers: Dict[str, ast.AST] = {}  # attribute -> where it is made a container
        marks: Set[str] = set()
        writes: Dict[str, List[ast.AST]] = {}  # container attribute -> each write
        for method in (n for n in cls.body if type(n) in (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(method):
                targets: List[ast.AST] = []
                value = None
                if type(node) is ast.Assign:
                    targets, value = node.targets, node.value
                elif type(node) in (ast.AugAssign, ast.AnnAssign):
                    targets, value = [node.target], node.value
                    if type(node) is ast.AnnAssign and _self_attr(node.target) and _node_marks(node.annotation):
                        marks.add(_self_attr(node.target))
                for t in targets:
                    name = _self_attr(t)
                    if not name:
                        continue
                    if method.name != "__init__":
                        out.append(f"{filename}:{t.lineno}: `{cls.name}` keeps walk state `self.{name}` "
                                   f"(assigned in `{method.name}`)")
                    elif value is not None and _is_container(value):
                        containers.setdefault(name, t)
                # writes into a container: `self.x.add(...)`, `self.x[k] = v`, `f(self.x)`
                if type(node) is ast.Call:
                    f = node.func
                    if type(f) is ast.Attribute and _self_attr(f.value) and f.attr in MUTATORS:
                        writes.setdefault(_self_attr(f.value), []).append(node)
                    for a in node.args:
                        if _self_attr(a):
                            writes.setdefault(_self_attr(a), []).append(a)
                elif type(node) in (ast.Subscript,) and type(node.ctx) in (ast.Store, ast.Del) and _self_attr(node.value):
                    writes.setdefault(_self_attr(node.value), []).append(node)
        for name, where in containers.items():
            if name in marks or not writes.get(name):
                continue
            deferred = all(type(w) is ast.Call and w.func.attr == "append" and len(w.args) == 1
                           and _carries_site(w.args[0]) for w in writes[name])
            if not deferred:
                out.append(f"{filename}:{where.lineno}: `{cls.name}` keeps a table `self.{name}` "
                           f"(filled at line {writes[name][0].lineno})")
    return out


def _importable(module: str, name: Optional[str]) -> bool:
    if module == "synclint.rules" or module.startswith("synclint.rules."):
        return True  # the rules' own helpers, checked as rule code
    if module.split(".", 1)[0] != "synclint":
        return True
    allowed = IMPORTABLE.get(module, frozenset())
    return allowed is None or name in allowed


def own_analysis(source: str, filename: str = "<rule>") -> List[str]:
    """Each place where rule code reaches past its context: an import of what holds a file's
    state, a scan of the whole file, a file read, as "file:line: what"."""
    out: List[str] = []
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if type(node) is ast.ImportFrom and node.level == 0:
            for a in node.names:
                if not _importable(node.module or "", a.name):
                    out.append(f"{filename}:{node.lineno}: imports `{a.name}` from `{node.module}`")
        elif type(node) is ast.Import:
            for a in node.names:
                if not _importable(a.name, None) or a.name.split(".", 1)[0] == "synclint" and a.name not in IMPORTABLE:
                    out.append(f"{filename}:{node.lineno}: imports `{a.name}`")
        elif type(node) is ast.Call:
            f = node.func
            name = f.id if type(f) is ast.Name else f.attr if type(f) is ast.Attribute else ""
            if name in FILE_READS:
                out.append(f"{filename}:{node.lineno}: reads a file (`{ast.unparse(f)}`)")
    for cls in _rule_classes(tree):
        for method in cls.body:
            if type(method) is not ast.FunctionDef or method.name not in ("visit_Module", "leave_Module"):
                continue
            params = [a.arg for a in method.args.args[1:]]
            if not params:
                continue
            module = params[0]
            parents = {c: p for p in ast.walk(method) for c in ast.iter_child_nodes(p)}
            for n in ast.walk(method):
                if type(n) is ast.Name and n.id == module and type(n.ctx) is ast.Load:
                    up = parents.get(n)
                    if not (type(up) is ast.Attribute and up.value is n and up.attr in MODULE_LAYOUT):
                        out.append(f"{filename}:{n.lineno}: `{cls.name}.{method.name}` scans the whole file "
                                   f"({ast.unparse(up) if up is not None else module})")
    return out


def test_no_rule_keeps_a_table_of_its_own():
    files = sorted(RULES.glob("*.py"))
    assert len(files) > 40
    found = [m for f in files for m in own_tables(f.read_text(encoding="utf-8"), f.name)]
    assert found == []


_HEAD = ("import libcst as cst\nfrom typing import List, Set\nfrom synclint.rule import Rule\n"
         "def helper(names, node):\n    names.add(node)\n"
         "class R(Rule):\n    def __init__(self, ctx):\n        super().__init__(ctx)\n")


@pytest.mark.parametrize("init, visit, what", [
    # inference_without_no_grad kept the names called under no_grad, and a stack of frames
    ("        self._nograd_callees: Set[str] = set()\n",
     "        self._nograd_callees.add(node.func.value)\n", "keeps a table `self._nograd_callees`"),
    ("        self._frames = []\n", "        self._frames.append(node)\n", "keeps a table `self._frames`"),
    ("        self._defs = {}\n", "        self._defs[node.func.value] = node\n", "keeps a table `self._defs`"),
    ("        self._seen = set()\n", "        helper(self._seen, node)\n", "keeps a table `self._seen`"),
    ("        self._uses = [x for x in ()]\n", "        del self._uses[0]\n", "keeps a table `self._uses`"),
    # a whole-file flag of its own (`requires_grad_(False)` seen somewhere)
    ("", "        self._skip_file = True\n", "keeps walk state `self._skip_file`"),
    ("        self._depth = 0\n", "        self._depth += 1\n", "keeps walk state `self._depth`"),
    # a list of findings that is not only findings
    ("        self._pending = []\n",
     "        self._pending.append((node, self.ctx.site()))\n        self._pending.append(node.func.value)\n",
     "keeps a table `self._pending`"),
])
def test_a_rule_keeping_its_own_table_is_caught(init, visit, what):
    source = _HEAD + init + "    def visit_Call(self, node):\n" + visit
    assert [m.split(": ", 1)[1].split("` ", 1)[1].split(" (")[0] for m in own_tables(source)] == [what]


def test_deferred_findings_and_node_marks_pass():
    source = (_HEAD +
              "        self._pending: List = []\n        self._stores: Set[int] = set()\n"
              "        self._layout = object()\n"
              "    def visit_Assign(self, node):\n        helper(self._stores, id(node.targets[0]))\n"
              "    def visit_Call(self, node):\n        ctx = self.ctx\n"
              "        self._pending.append((node, ctx.site(), 'text'))\n"
              "    def leave_Module(self, node):\n        for n, where, text in self._pending:\n"
              "            self.report_at(where, n, text=text)\n")
    assert own_tables(source) == []


def test_no_rule_analyses_the_file_itself():
    files = sorted(RULES.glob("*.py"))
    assert len(files) > 40
    found = [m for f in files for m in own_analysis(f.read_text(encoding="utf-8"), f.name)]
    assert found == []


@pytest.mark.parametrize("code, what", [
    # a model of its own, built from the file the rule cannot otherwise see
    ("from synclint.semantic.model import SemanticModel\n", "imports `SemanticModel` from `synclint.semantic.model`"),
    ("from synclint.semantic.infer import Evaluator\n", "imports `Evaluator` from `synclint.semantic.infer`"),
    ("from synclint.semantic.moves import gpu_move\n", "imports `gpu_move` from `synclint.semantic.moves`"),
    ("from synclint.semantic import SemanticModel\n", "imports `SemanticModel` from `synclint.semantic`"),
    ("import synclint.walker\n", "imports `synclint.walker`"),
    ("import synclint.semantic.scopes as S\n", "imports `synclint.semantic.scopes`"),
    # a whole-file scan: every call of the module, found by the rule itself
    ("class R(Rule):\n    def visit_Module(self, node):\n        for s in node.body:\n            pass\n",
     "`R.visit_Module` scans the whole file (node.body)"),
    ("class R(Rule):\n    def leave_Module(self, mod):\n        mod.visit(Finder())\n",
     "`R.leave_Module` scans the whole file (mod.visit)"),
    ("class R(Rule):\n    def visit_Module(self, node):\n        walk(node)\n",
     "`R.visit_Module` scans the whole file (walk(node))"),
    ("def f(path):\n    return open(path).read()\n", "reads a file (`open`)"),
])
def test_a_rule_analysing_the_file_itself_is_caught(code, what):
    source = "from synclint.rule import Rule\n" + code
    assert [m.split(": ", 1)[1] for m in own_analysis(source)] == [what]


def test_what_rule_code_may_import_and_read_passes():
    source = ("import libcst as cst\nfrom synclint.rule import Rule\nfrom synclint.semantic import values as V, RECEIVER\n"
              "from synclint.semantic.syntax import kwarg\nfrom synclint.rules._helpers import short\n"
              "from synclint.semantic.context import Site\n"
              "class R(Rule):\n    def visit_Module(self, node):\n        self._indent = node.default_indent\n")
    assert own_analysis(source) == []


def test_an_undeclared_rule_attribute_is_refused():
    """What the engine reads of a rule is declared on `Rule`: a capitalised attribute it does
    not declare (a side channel read with `getattr`) is refused when the class is made."""
    from synclint.rule import Invalid, Rule, Valid

    body = dict(CODE="SYN199", NAME="planted", MESSAGE="m", VALID=[Valid("x = 1\n")], INVALID=[Invalid("y\n")],
                __doc__="## What it does\nX.\n## Why is this bad?\nY.\n## Use instead\nZ.\n")
    type("Declared", (Rule,), dict(body))  # all of it declared
    with pytest.raises(TypeError, match="TIMING_EXEMPTED not declared on Rule"):
        type("Planted", (Rule,), dict(body, TIMING_EXEMPTED=True))
    with pytest.raises(TypeError, match="HOT_ONLY must be True or False"):
        type("Planted", (Rule,), dict(body, HOT_ONLY="yes"))
