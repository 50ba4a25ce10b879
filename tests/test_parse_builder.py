"""The tree built from Python's parse must be LibCST's own tree, as the analysis reads it:
the same node types and fields, the same brackets (`lpar`), and the same places."""

import ast
import dataclasses
import json
import re
import sys
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.parse.node_data import formatting, node_data, node_from_data
from synclint.parse.builder import (_READS, BUILT, SourceOf, Unsupported, build, build_expression, refuse_unread,
                                   unread_fields)
from synclint.engine import analyse, lint_source
from synclint.parse.positions import PositionIndex
from synclint.semantic.syntax import child_nodes, code_of

ROOT = Path(__file__).resolve().parent.parent

def differences(real, built, path="module", out=None):
    """Where two trees differ as the analysis sees them (empty: the same)."""
    out = [] if out is None else out
    if type(real) is not type(built):
        out.append(f"{path}: {type(real).__name__} != {type(built).__name__}")
    elif isinstance(real, (list, tuple)):
        if len(real) != len(built):
            out.append(f"{path}: {len(real)} items != {len(built)}")
        for i, (x, y) in enumerate(zip(real, built)):
            differences(x, y, f"{path}[{i}]", out)
    elif isinstance(real, cst.CSTNode):
        for f in dataclasses.fields(real):
            name = f.name
            if formatting(name):
                continue
            x, y = getattr(real, name), getattr(built, name)
            if name in ("lpar", "rpar"):
                if type(real) not in (cst.ClassDef, cst.ImportFrom) and _brackets(x) != _brackets(y):
                    out.append(f"{path}.{name}: {_brackets(x)} != {_brackets(y)}")
                continue
            if isinstance(x, cst.BaseParenthesizableWhitespace):
                continue
            differences(x, y, f"{path}.{type(real).__name__}.{name}", out)
    elif real != built:
        out.append(f"{path}: {real!r} != {built!r}")
    return out


def _brackets(v) -> int:
    return len(v) if isinstance(v, (list, tuple)) else int(isinstance(v, (cst.LeftParen, cst.RightParen)))


def same_tree(source: str):
    built, spans = build(source, ast.parse(source))
    assert differences(cst.parse_module(source), built) == []
    return built, spans


# Each line is a case where a careless build goes wrong (see the comment on each).
SNIPPETS = [
    "f(x)\nf((x))\nf(((x)), y)\n(f)(x)\n",  # a call's brackets are not its only argument's
    "sum(x for x in y)\nsum((x for x in y))\ng = (x for x in y)\nf(a, (x for x in y))\n",  # generators
    "print((a, b))\nt = a, b\nu = (a), b\nv = ((a), b)\nw = (a,)\nz = ()\nfor k, v in d.items(): pass\n",  # tuples
    "x[a, b]\nx[(a, b)]\nx[()]\nx[a:b, c]\nx[::2]\nx[1:]\nx[...]\n",  # subscripts
    "with (a):\n    pass\nwith (a) as b:\n    pass\nwith (a as b, c):\n    pass\n"
    "with (\n    a,\n    b,\n):\n    pass\nwith (\n    a if c else b\n):\n    pass\n",  # with-statement brackets
    "class A(B): pass\nclass C((D)): pass\nclass E(): pass\nclass F(G, metaclass=M): pass\n",  # class bases
    "del a, b\ndel (a, b)\ndel a\n",  # del of several names is an unbracketed tuple
    'a = ("x"  # one\n     "y")\nb = "p" "q"\nc = ""\nd = f"{x!r:>{w}} and {y.item():.3f}"\ne = b"\\x00" rb"\\d"\n'
    'f = """multi\nline"""\ng = ("s" f"{z}")\n',  # strings
    'x = (\n    f"a {b} "  # c\n    "plain {no} "\n    f"d {len(e)!r:>3}"\n)\ny = f"{x=}"\nz = "p" \'q\'\n'
    'w = b"a" b"b"\nv = f"{{lit}} {d[\'{\']}" f"{x:{y}.{z}f}"\nu = f\'\'\'{t}\'\'\'\n',  # side by side, cut
    "if a:\n    pass\nelif b:\n    pass\nelse:\n    if c:\n        pass\n",  # elif is not else-if
    "if x: return\nif y: a = 1; b = 2\na = 1; b = 2\n",  # one-line bodies and semicolons
    "@dec\n@dec2(1)\ndef f(a, /, b: int = 1, *args, c, d=2, **kw) -> int:\n    return a\n"
    "def g(*, k): pass\ndef h(a, *, k=1): pass\nl = lambda a, *b, c=1, **d: a\n",  # parameters
    "f(*a, b=1, **k)\nf(a=1, *b)\n{**a, 'b': 1}\n[*a, b]\n*a, b = c\n",  # stars
    "async def f():\n    async for x in y:\n        await x\n    async with a as b:\n        pass\n"
    "    return [x async for x in y]\n",  # async
    "def g():\n    yield x\n    yield from y\n    z = yield\n",  # yield
    "from . import a\nfrom .b.c import (d as e, f)\nimport a.b as c, d\nfrom m import *\n",  # imports
    "try:\n    pass\nexcept (A, B) as e:\n    pass\nelse:\n    pass\nfinally:\n    pass\n"
    "while a:\n    break\nelse:\n    pass\nfor x in y:\n    continue\nelse:\n    pass\n",  # blocks with else
    "global a, b\nx: int\ny: int = 1\nz += 1\nz @= w\nz //= 2\nassert a, b\nraise A from B\nraise\n",  # small statements
    "a < b <= c\na not in b\na is not b\nnot a\n-a\n~a\n+a\na and b and c\na or b and c\n"
    "a if b else c\n(y := f(x))\n[y for x in z if x if y for y in x]\n{k: v for k, v in d}\n{a, b}\n",  # operators
    "x = 0x1F + 1_000 + 1e-3 + 2j + 1.5\n",  # numbers keep their spelling
    "é = 'ü'; x = f(é).item()\n",  # columns after non-ASCII text
]


@pytest.mark.parametrize("source", SNIPPETS)
def test_built_tree_is_libcsts_tree(source):
    same_tree(source)


# The fixed corpus every Python the CI has is checked on (`.ci/run`): the rules' fixtures, the
# projects and the examples, the code the analysis is written for.
CORPUS = sorted(p for folder in ("fixtures", "examples") for p in (ROOT / folder).rglob("*.py"))


def test_corpus_builds_libcsts_trees():
    assert len(CORPUS) > 100
    for path in CORPUS:
        source = path.read_text(encoding="utf-8")
        try:
            built, _ = build(source, ast.parse(source))
        except Unsupported:  # (`match`: LibCST parses the file)
            continue
        assert differences(cst.parse_module(source), built) == [], path


def test_own_source_files_build_libcsts_trees():
    """Every module of synclint and its rules: real code, with every construct they use."""
    files = sorted((ROOT / "synclint").rglob("*.py")) + sorted((ROOT / "rules").glob("*.py"))
    assert len(files) > 100
    for path in files:
        source = path.read_text(encoding="utf-8")
        built, _ = build(source, ast.parse(source))
        assert differences(cst.parse_module(source), built) == [], path


def _code_nodes(tree):
    """The nodes the walker visits (no whitespace, commas or brackets), in pre-order."""
    out, todo = [], [tree]
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(reversed(list(child_nodes(n))))
    return out


def test_places_are_libcsts_places():
    """Every node the built tree knows the place of is where LibCST's position provider
    puts the same node of its own tree (the trees are walked side by side)."""
    source = (ROOT / "synclint" / "semantic" / "binder.py").read_text(encoding="utf-8") + "\né = 'ü'; y = f(é).item()  # ü\n"
    real = cst.parse_module(source)
    built, spans = same_tree(source)
    positions = MetadataWrapper(real, unsafe_skip_copy=True).resolve(PositionProvider)
    index = PositionIndex(built, source, spans=spans)
    real_nodes = _code_nodes(real)
    assert len(real_nodes) == len(_code_nodes(built))
    checked = 0
    for r, b in zip(real_nodes, _code_nodes(built)):
        assert type(r) is type(b)
        if id(b) in spans:
            p = positions[r]
            assert index.span(b, None, 0) == (p.start.line, p.start.column, p.end.line, p.end.column), cst.Module([]).code_for_node(r)
            checked += 1
    assert checked > 3000


def _call(m):
    return m.body[0].body[0].value


def _receiver(m):
    return m.body[0].body[0].value.func.value


@pytest.mark.parametrize("source, pick, expected", [
    ("y = (x > 0).sum()\n", _receiver, "(x > 0)"),
    ("y = ((x > 0)).sum()\n", _receiver, "((x > 0))"),
    ("y = f(a,b ,  c)\n", _call, "f(a,b ,  c)"),
    ("y = torch.tensor(0, device=d)\n", _call, "torch.tensor(0, device=d)"),
    ("y = sum(x for x in z)\n", _call, "sum(x for x in z)"),
    ("y = sum(x for x in z)\n", lambda m: _call(m).args[0].value, "x for x in z"),
    ("y = g((x for x in z))\n", lambda m: _call(m).args[0].value, "(x for x in z)"),
    ("y = f((a, b))\n", lambda m: _call(m).args[0].value, "(a, b)"),
])
def test_code_of_a_built_node_is_the_files_text(source, pick, expected):
    """Messages quote the code as written, as LibCST's code for its own node does."""
    built, spans = same_tree(source)
    token = BUILT.set(SourceOf(source, spans))
    try:
        assert code_of(pick(built)) == expected == cst.Module([]).code_for_node(pick(cst.parse_module(source)))
    finally:
        BUILT.reset(token)


def test_match_statement_is_parsed_by_libcst():
    source = "match x:\n    case 1:\n        y = t.item()\n"
    with pytest.raises(Unsupported):
        build(source, ast.parse(source))
    a = analyse("import torch\n" + source, "m.py")
    assert a is not None and a.spans is None


def test_only_the_parse_layer_touches_libcsts_private_api():
    """LibCST's private modules and methods are used in synclint/parse/ alone (a LibCST
    release that changes them breaks one package, which the differential test checks)."""
    private = re.compile(r"\blibcst\._|\._codegen\(|CodegenState|\.__post_init__\b")
    files = sorted((ROOT / "synclint").rglob("*.py")) + sorted((ROOT / "rules").rglob("*.py"))
    outside = [f"{path.relative_to(ROOT)}:{n}" for path in files if (ROOT / "synclint" / "parse") not in path.parents
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if private.search(line)]
    assert outside == []
    assert any(private.search(p.read_text(encoding="utf-8")) for p in (ROOT / "synclint" / "parse").glob("*.py"))


def test_every_node_type_python_gives_is_in_the_table_of_fields_read():
    """What the builder reads of each node type is declared (`_READS`), so that a field it
    does not read can be refused; a node type missing from the table would go unchecked."""
    trees = [ast.parse(s) for s in SNIPPETS]
    trees += [ast.parse(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "synclint").rglob("*.py"))]
    leaves = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)  # no fields
    seen = {type(n) for tree in trees for n in ast.walk(tree)}
    assert {t for t in seen if not issubclass(t, leaves)} - set(_READS) == set()


@pytest.mark.parametrize("reads, refused, built", [
    ({ast.Call: "func args"}, "f(x, k=1)\n", "f(x)\n"),  # as if `keywords` were a newer Python's field
    ({ast.FunctionDef: "name args body decorator_list"}, "def f() -> int:\n    pass\n", "def f():\n    pass\n"),
    ({ast.keyword: "arg"}, "f(k=1)\n", "f(1)\n"),
])
def test_a_field_the_builder_does_not_read_is_refused_when_it_holds_anything(reads, refused, built):
    """A new Python's new field (3.12's `type_params`) is not dropped from the built tree: a
    node that holds anything in it is `Unsupported`, and the file goes to LibCST's parse."""
    unread = unread_fields({**_READS, **reads})
    with pytest.raises(Unsupported):
        refuse_unread(ast.parse(refused), unread)
    refuse_unread(ast.parse(built), unread)


_LOOP = "for b in loader:\n    print(f(b), C().g(b.cuda()))\n"


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameters (PEP 695) are Python 3.12 syntax")
@pytest.mark.parametrize("generic, plain", [
    ("def f[T](x: T):\n    return x.item()\n", "def f(x):\n    return x.item()\n"),
    ("class C[T]:\n    def g[U](self, y: U):\n        return y.cpu()\n", "class C:\n    def g(self, y):\n        return y.cpu()\n"),
    ("type X = int\n", "X = int\n"),
])
def test_type_parameters_are_analysed_from_libcsts_parse(generic, plain):
    """`def f[T](x: T)`, `class C[T]` and `type X = int`: not built without their type
    parameters but parsed by LibCST, with the findings the same code without them has."""
    generic, plain = (f"import torch\n\n\n{code}\n\n{_LOOP}" for code in (generic, plain))
    with pytest.raises(Unsupported):
        build(generic, ast.parse(generic))
    a = analyse(generic, "m.py")
    assert a is not None and a.spans is None
    found = [(f.code, f.row, f.column) for f in lint_source(generic, "m.py")]
    assert found and found == [(f.code, f.row, f.column) for f in lint_source(plain, "m.py")]


def test_analysis_uses_the_built_tree_unless_libcst_is_asked_for():
    source = "import torch\nx = torch.zeros(3, device='cuda')\nprint(x.item())\n"
    assert analyse(source, "m.py").spans is not None
    assert analyse(source, "m.py", libcst_tree=True).spans is None


def test_a_fix_is_made_from_libcsts_tree_and_keeps_the_files_formatting():
    """The built tree has no comments or original spacing: a file with a fix is checked
    again from LibCST's parse, so the fix is the same as before the built tree existed."""
    source = ("import torch\nfrom torch.utils.data import DataLoader\n"
              "loader = DataLoader(ds,   batch_size=4)  # keep\n"
              "for x in loader:\n    x = x.to('cuda')\n")
    fixes = [f.fix for f in lint_source(source, "m.py") if f.fix is not None]
    assert fixes, "the example must have a fix"
    edit = fixes[0].edits[0]
    assert "ds,   batch_size=4" in edit.content


def test_valid_python_libcst_refuses_is_checked_without_fixes():
    """`(pars): bool = True` (LibCST issue #1011): found from the built tree; the fix, which
    would need LibCST's own tree, is not offered rather than made from a tree without the
    file's formatting."""
    source = ("import torch\nfrom torch.utils.data import DataLoader\n(pars): bool = True\n"
              "loader = DataLoader(ds,   batch_size=4)  # keep\n"
              "for x in loader:\n    x = x.to('cuda')\n")
    with pytest.raises(cst.ParserSyntaxError):
        cst.parse_module(source)
    found = lint_source(source, "m.py")
    assert {(f.code, f.row) for f in found} >= {("SYN504", 4), ("SYN304", 6)}
    assert all(f.fix is None for f in found)


@pytest.mark.parametrize("code", ["x * 2", "torch.zeros(3, device=d).to(x)", "(a +\n b)", "'cuda' if c else 'cpu'",
                                  "Optional[Tensor]", "{k: v for k, v in d.items()}"])
def test_a_string_annotation_is_built_as_libcst_parses_it(code):
    real = cst.parse_expression(code)
    assert differences(real, build_expression(code)) == []


@pytest.mark.parametrize("source", SNIPPETS + [(ROOT / "synclint" / "semantic" / "binder.py").read_text(encoding="utf-8")])
def test_node_data_makes_the_same_tree_again(source):
    """A module summary carries a helper's expressions as JSON data (`parse.node_data`): made again,
    from LibCST's tree or the built one, they are the same tree, brackets included."""
    real = cst.parse_module(source)
    for tree in (real, same_tree(source)[0]):
        again = node_from_data(json.loads(json.dumps(node_data(tree))))
        assert differences(real, again) == []
