"""Reliability under bad input and hostile code (issue 9): one file's trouble is one line
for that file, and every other file and rule is still reported."""

import textwrap
from pathlib import Path

import pytest

from synclint.engine import lint_source
from synclint.registry import all_rules
from synclint.testing import run_cli as run

HAZARD = textwrap.dedent(
    """\
    import torch

    x = torch.ones(3, device="cuda")
    for _ in range(3):
        v = x.sum().item()
        w = x.tolist()
    """
)


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def item_rule_raises_on_boom(monkeypatch):
    """SYN101 raises at `.item()` in the files that mention BOOM, bad.py and b.py (a stand-in
    for a rule's bug; a rule sees the file's name, not its text)."""
    from synclint.rules.tensor_item import TensorItem

    real = TensorItem.visit_Call

    def visit_Call(self, node):
        if Path(self.ctx.filename).name in ("bad.py", "b.py") and getattr(getattr(node.func, "attr", None), "value", "") == "item":
            raise AttributeError("'Match' object has no attribute 'body'")
        return real(self, node)

    monkeypatch.setattr(TensorItem, "visit_Call", visit_Call)


def test_a_rule_that_raises_is_one_line_for_that_file(tmp_path, item_rule_raises_on_boom):
    write(tmp_path / "bad.py", "# BOOM\n" + HAZARD)
    write(tmp_path / "good.py", HAZARD)
    r = run(["check", "bad.py", "good.py", "--no-cache", "--select", "SYN101,SYN102", "--no-source"], tmp_path)
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == ["synclint: error: bad.py:6: internal error in SYN101; please report"]
    out = r.stdout
    assert "good.py:5:9: SYN101" in out  # the other file: every rule
    assert "good.py:6:9: SYN102" in out
    assert "bad.py:7:9: SYN102" in out  # the same file: the other rules
    assert "bad.py:6:9: SYN101" not in out
    assert "Traceback" not in r.stdout + r.stderr


def test_internal_error_is_not_a_finding_in_json(tmp_path, item_rule_raises_on_boom):
    write(tmp_path / "bad.py", "# BOOM\n" + HAZARD)
    r = run(["check", "bad.py", "--no-cache", "--output-format", "json"], tmp_path)
    assert r.exit_code == 2
    import json

    codes = {f["code"] for f in json.loads(r.stdout)}
    assert "SYN101" not in codes and "SYN102" in codes


def test_match_in_a_loop_does_not_break_any_rule():
    """The crash of issue 9: SYN501/SYN503 assumed every compound statement has `.body`."""
    source = textwrap.dedent(
        """\
        import torch

        def step(model, kind, lr):
            for p in model.parameters():
                match kind:
                    case "sgd" if lr > 0:
                        p -= lr * p.grad
                    case {"x": y}:
                        p.grad = None
                    case _:
                        pass
            x = torch.ones(3, device="cuda")
            for i in range(3):
                match i:
                    case 0:
                        x = x.mul(2)
            return x
        """
    )
    findings = lint_source(source, "m.py", all_rules())
    assert not [f for f in findings if f.internal], [f.message for f in findings]
    assert {"SYN501", "SYN503"} <= {f.code for f in findings}


# ------------------------------------------------------------------ depth and size
DEEP = {
    "brackets": "x = " + "(" * 3000 + ")" * 3000 + "\n",
    "calls": "x = " + "f(" * 2000 + ")" * 2000 + "\n",
    "unary": "x = " + "-" * 20000 + "1\n",
    "lambdas": "x = " + "lambda: " * 5000 + "1\n",
    "plus-chain": "x = " + "+".join(["a"] * 100_000) + "\n",
    # issue 37: 146 s in LibCST's parser, which no time budget can stop
    "subscript-chain": "x = y" + "[0]" * 5000 + "\n",
    "call-chain": "x = f" + "(1)" * 5000 + "\n",
    "method-chain": "x = y" + ".f()" * 3000 + "\n",
    # issue 37: past 300 s, then an internal error
    "elif-chain": "if a:\n    pass\n" + "elif a:\n    pass\n" * 5000,
    # issue 37: LibCST's parser refuses them; was "nesting too deep"
    "joined-strings": "x = (\n" + '    "a"\n' * 50_000 + ")\n",
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_code_that_would_kill_the_parser_is_refused_in_one_line(tmp_path, kind):
    """Each of these segfaults LibCST's parser or parses for minutes: refused before parsing,
    the good file next to it still checked."""
    write(tmp_path / "deep.py", "import torch\n" + DEEP[kind])
    write(tmp_path / "good.py", HAZARD)
    r = run(["check", "deep.py", "good.py", "--no-cache", "--no-source"], tmp_path)
    assert r.exit_code == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(("synclint: error: deep.py: too deeply nested to analyse (",
                            "synclint: error: deep.py: too long to analyse ("))
    assert "good.py:5:9: SYN101" in r.stdout


def test_nesting_limits_leave_real_code_alone():
    from synclint.parse.nesting import nesting_problem

    ok = [
        "x = " + "(" * 200 + "1" + ")" * 200 + "\n",  # CPython's own limit
        "y = " + " + ".join(["-a ** -b"] * 900) + "\n",  # operands, not a nest
        "z = [" + ", ".join(["-1"] * 50_000) + "]\n",  # a long flat list
        "f = lambda a, b=1, *c, **d: lambda: a if b else c\n" * 2000,
        "w = (\r" + "a +\r" * 900 + "b)\r",  # CR-only line endings
        "v = x" + ".f()" * 490 + "[0]" * 10 + "\n",  # a method chain
        "s = (\n" + '    "a"\n' * 3000 + ")\n",  # Python's pydoc topics join 2,215 strings
        "if a:\n    pass\n" + "elif a:\n    pass\n" * 1000,
        "if a:\n    if b:\n        pass\n" + "    elif b:\n        pass\n" * 600 + "elif a:\n    pass\n" * 600,
        "return (x)\nprint (x)\nassert (x)\n" * 2000,  # keywords are no operands to call
    ]
    assert [nesting_problem(s) for s in ok] == [None] * len(ok)


# Nests and chains just past each limit, each hidden in a place where a statement-by-statement
# bound could lose track of it: spread over lines, around multi-line strings, behind
# grouping brackets on lines of their own, in headers, decorators, guards and handlers.
_NESTS = {
    "brackets": "(" * 201 + "1" + ")" * 201,
    "unary": "-" * 1010 + "1",
    "chain": "+".join(["a"] * 1002),
    "subscripts": "a" + "[0]" * 1001,
    "strings": '"a" ' * 3001,
    "lambdas": "lambda: " * 1001 + "1",
    "spread-chain": "(a\n" + "+ a\n" * 1001 + ")",
    "split-by-strings": ("lambda: " + '"""\n\n\n"""' + " if c else ") * 600 + "1",
    "grouped-first": "(\n" * 190 + "-" * 850 + "1" + ")" * 190,
}
_PLACES = [
    "x = {}\n",
    '"""A docstring\n\nover lines\n"""\nx = {}\n',
    "def f():\n    '''doc\n\n    '''\n    return {}\n",
    "if {}:\n    pass\n",
    "@d({})\ndef f():\n    pass\n",
    "match v:\n    case 1 if {}:\n        pass\n",
    "try:\n    pass\nexcept E({}):\n    pass\n",
    "a = 1; b = {}\n",
    'g("""\nstring\n""", {})\n',
    "# " + "." * 900 + "\nx = {}\n",  # a long run of lines before the first statement
]


@pytest.mark.parametrize("nest", sorted(_NESTS))
def test_fast_nesting_check_refuses_what_the_measure_refuses(nest):
    """The shortcut that skips measuring tokens (`_surely_shallow`) never clears a file
    the token measure refuses: the same answer, with the same line, wherever the nest is."""
    from synclint.parse.nesting import _measured_problem, nesting_problem

    for place in _PLACES:
        source = place.format(_NESTS[nest]) + "import torch\n"
        measured = _measured_problem(source)
        assert measured is not None, (nest, place)
        assert nesting_problem(source) == measured, (nest, place)


@pytest.mark.parametrize("chain", [".abs()" * 246 + ".item()", ".item()" + ".real" * 491])
def test_long_chains_get_positions(tmp_path, chain):
    """Positions regenerate the statement: these chains raised RecursionError there."""
    src = 'import torch\nx = torch.ones(3, device="cuda")\nfor i in range(3):\n    y = x' + chain + "\n"
    findings = lint_source(src, "c.py", all_rules())
    assert [(f.code, f.row, f.column, f.internal) for f in findings] == [("SYN101", 4, 9, False)]


# ------------------------------------------------------------------ fix safety
@pytest.mark.parametrize("call, safe", [
    ("torch.zeros(3).cuda(device)", False),  # device may be None: .cuda(None) is cuda:0
    ("torch.zeros(3).cuda()", True),
    ("torch.zeros(3).cuda(1)", True),
    ('torch.zeros(3).cuda("cuda:1")', True),
    ('torch.zeros(3).cuda(torch.device("cuda", 1))', True),
    ("torch.zeros(3).cuda(x.device)", True),
    ("torch.zeros(3).to(device)", True),  # .to(None) and device=None are both the CPU
])
def test_cuda_device_fix_is_safe_only_for_a_device_that_is_not_none(call, safe):
    src = f"import torch\ndef f(device):\n    x = torch.ones(2, device='cuda')\n    return {call}\n"
    [f] = [f for f in lint_source(src, "f.py", all_rules()) if f.code == "SYN301"]
    assert f.fix is not None and f.fix.applicability == ("safe" if safe else "unsafe")


def _comment_variants(src):
    """`src` with a comment and a line break after each `(`, `[` or `,` inside brackets."""
    import io
    import tokenize

    starts = [0]
    for line in src.splitlines(True):
        starts.append(starts[-1] + len(line))
    depth = 0
    for t in tokenize.generate_tokens(io.StringIO(src).readline):
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        if t.type == tokenize.OP and t.string in "([{," and depth > 0:
            i = starts[t.end[0] - 1] + t.end[1]
            if src[i:].split("\n", 1)[0].strip():
                yield src[:i] + "  # keep me\n" + " " * 8 + src[i:].lstrip(" ")


def _comments_of(src):
    import io
    import tokenize

    return sorted(t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT)


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.FIX != "never" and not hasattr(r, "noqa_findings")],
                         ids=lambda r: r.CODE)  # (SYN901's fix is about a comment: it edits it)
def test_fixes_keep_comments_and_add_no_trailing_whitespace(rule):
    """Every fixable rule's examples, with comments inside the flagged call: any fix applied
    (unsafe ones too) keeps each comment once and leaves no trailing blanks."""
    import libcst

    from synclint.testing import fixed_source

    tried = 0
    for example in rule.INVALID:
        for src in _comment_variants(example.code):
            try:
                compile(src, "v", "exec")
                libcst.parse_module(src)
            except (SyntaxError, libcst.ParserSyntaxError):
                continue
            new = fixed_source(all_rules(), src, unsafe=True)
            compile(new, "fixed", "exec")
            assert _comments_of(new) == _comments_of(src), new
            added = set(new.splitlines()) - set(src.splitlines())
            assert not [line for line in added if line != line.rstrip()], new
            tried += 1
    assert tried, "no example with a bracket to put a comment in"


# ------------------------------------------------------------------ positions
POS_BASE = 'import torch\nx = torch.ones(3, device="cuda")\n'


def test_finding_in_a_case_guard_has_the_guards_line(tmp_path):
    src = POS_BASE + (
        "for i in range(3):\n    match i:\n        case 0 if x.sum().item() > 0:\n            pass\n"
        "        case _:\n            y = x.item()\n"
    )
    write(tmp_path / "g.py", src)
    r = run(["check", "g.py", "--no-cache", "--select", "SYN101"], tmp_path)
    assert r.exit_code == 1
    assert "g.py:5:19: SYN101" in r.stdout and "g.py:8:17: SYN101" in r.stdout
    assert "5 |         case 0 if x.sum().item() > 0:" in r.stdout


@pytest.mark.parametrize("newline", ["\r", "\r\n", "mixed"])
def test_line_endings_are_kept_by_fix_and_diff(tmp_path, newline):
    src = POS_BASE + "for i in range(3):\n    y = torch.zeros(3).cuda()\n    z = x.item()\n"
    if newline == "mixed":
        lines = src.splitlines(True)
        src = "".join(line.replace("\n", "\r\n" if i % 2 else "\r") for i, line in enumerate(lines))
    else:
        src = src.replace("\n", newline)
    p = tmp_path / "e.py"
    p.write_bytes(src.encode())
    d = run(["check", "e.py", "--no-cache", "--diff"], tmp_path)
    assert d.exit_code == 1 and "+    y = torch.zeros(3, device=\"cuda\")" in d.stdout
    r = run(["check", "e.py", "--no-cache", "--fix"], tmp_path)
    assert r.exit_code == 1  # the .item() is left
    want = src.replace("torch.zeros(3).cuda()", 'torch.zeros(3, device="cuda")')
    assert p.read_bytes() == want.encode()


def test_form_feed_and_unicode_line_separators_do_not_shift_lines(tmp_path):
    src = POS_BASE + '\x0c\nfor i in range(3):\n    s = "a\u2028b\x85c"\n    z = x.item()  # noqa: SYN101\n    w = x.item()\n'
    write(tmp_path / "f.py", src)
    r = run(["check", "f.py", "--no-cache", "--select", "SYN101"], tmp_path)
    assert r.stdout.count(": SYN101 [") == 1  # the noqa on line 6 holds
    assert "f.py:7:9: SYN101" in r.stdout and "7 |     w = x.item()" in r.stdout
    from synclint.baseline import fingerprints

    [f] = lint_source(src, str(tmp_path / "f.py"), [r for r in all_rules() if r.CODE == "SYN101"])
    [fp] = fingerprints([f], tmp_path)
    assert "w = x.item()" in str(fp)


def test_coding_cookie_is_honoured_and_kept_by_fix(tmp_path):
    src = "# -*- coding: latin-1 -*-\n" + POS_BASE + 'name = "caf\xe9"\nfor i in range(3):\n    y = torch.zeros(3).cuda()\n'
    p = tmp_path / "l.py"
    p.write_bytes(src.encode("latin-1"))
    r = run(["check", "l.py", "--no-cache"], tmp_path)
    assert r.exit_code == 1 and "l.py:6:9: SYN301" in r.stdout, r.stderr
    run(["check", "l.py", "--no-cache", "--fix"], tmp_path)
    assert p.read_bytes() == src.replace("torch.zeros(3).cuda()", 'torch.zeros(3, device="cuda")').encode("latin-1")


def test_tabs_keep_columns_and_the_caret_lines_up(tmp_path):
    write(tmp_path / "t.py", POS_BASE + "for i in range(3):\n\tif i:\n\t\tz = x.item()\n")
    r = run(["check", "t.py", "--no-cache"], tmp_path)
    assert "t.py:5:7: SYN101" in r.stdout
    assert "  | \t\t    ^^^^^^^^" in r.stdout  # the caret's lead repeats the tabs


# ------------------------------------------------------------------ writing fixes
FIXABLE = POS_BASE + "for i in range(3):\n    y = torch.zeros(3).cuda()\n"
FIXED = FIXABLE.replace("torch.zeros(3).cuda()", 'torch.zeros(3, device="cuda")')


def test_fix_writes_through_a_symlink_to_its_target(tmp_path):
    target = write(tmp_path / "real" / "a.py", FIXABLE)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    r = run(["check", "link.py", "--no-cache", "--fix"], tmp_path)
    assert r.exit_code == 0, r.stderr
    assert link.is_symlink() and target.read_text() == FIXED


def test_fix_keeps_hardlinks_mode_and_bom(tmp_path):
    import os
    import stat

    p = tmp_path / "a.py"
    p.write_bytes(b"\xef\xbb\xbf" + FIXABLE.encode())
    os.chmod(p, 0o751)
    other = tmp_path / "b.py"
    os.link(p, other)
    r = run(["check", "a.py", "--no-cache", "--fix"], tmp_path)
    assert r.exit_code == 0, r.stderr
    assert p.read_bytes() == b"\xef\xbb\xbf" + FIXED.encode()
    assert os.path.samefile(p, other)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o751


def test_a_failed_write_is_one_line_for_that_file(tmp_path, monkeypatch):
    """A full disk while writing a.py: one line for it, ok.py still fixed, no temp file."""
    import errno
    import os

    real_fsync = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path / "full")):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write(tmp_path / "full" / "a.py", FIXABLE)
    write(tmp_path / "ok.py", FIXABLE)
    r = run(["check", "full/a.py", "ok.py", "--no-cache", "--fix"], tmp_path)
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "Fixed 1 finding.",
        "synclint: error: full/a.py: cannot write the fixes: No space left on device; the file is unchanged",
    ]
    assert (tmp_path / "full" / "a.py").read_text() == FIXABLE and (tmp_path / "ok.py").read_text() == FIXED
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["a.py"]  # no temp file left


# ------------------------------------------------------------------ stdin
def _stdin(args, text, cwd):
    import os

    from click.testing import CliRunner

    from synclint.frontends.cli import main

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args, input=text, catch_exceptions=False)
    finally:
        os.chdir(old)


def test_stdin_takes_config_and_per_file_ignores_from_its_name(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.synclint]\nper-file-ignores = { "gen/*.py" = ["SYN101"] }\n')
    r = _stdin(["check", "-", "--stdin-filename", "gen/x.py", "--no-cache"], HAZARD, tmp_path)
    assert r.exit_code == 1 and "gen/x.py:6:9: SYN102" in r.stdout and "SYN101" not in r.stdout
    assert "6 |     w = x.tolist()" in r.stdout  # the excerpt comes from stdin, not the disk


def test_stdin_fix_writes_the_fixed_text_to_stdout(tmp_path):
    r = _stdin(["check", "-", "--stdin-filename", "a.py", "--fix"], FIXABLE, tmp_path)
    assert r.exit_code == 0 and r.stdout == FIXED and not (tmp_path / "a.py").exists()
    bad = "import torch\nx = (\n"
    r = _stdin(["check", "-", "--fix"], bad, tmp_path)
    assert r.exit_code == 2 and r.stdout == bad  # a filter never swallows its input
    assert r.stderr.strip() == "synclint: error: -: cannot parse: '(' was never closed (line 2, column 5)"


# ------------------------------------------------------------------ flake8
def test_flake8_plugin_never_raises(monkeypatch, item_rule_raises_on_boom):
    from synclint import engine
    from synclint.frontends.flake8_plugin import Plugin

    src = "# BOOM\n" + HAZARD
    got = [(row, text) for row, _col, text, _t in Plugin(None, src.splitlines(True), "b.py").run()]
    assert (6, "SYN101 internal error in SYN101; please report") in got  # the rule's own code
    assert any(text.startswith("SYN102 ") for _row, text in got)  # the other rules still run

    def broken(*a, **k):
        raise TypeError("a bug outside the rules")

    monkeypatch.setattr(engine, "lint_source", broken)
    got = [(row, text) for row, _col, text, _t in Plugin(None, ["import torch\n"], "c.py").run()]
    assert got == [(1, "SYN000 internal error in synclint (TypeError); please report")]


# ------------------------------------------------------------------ cache
def test_cache_of_the_wrong_shape_is_discarded_and_rewritten(tmp_path):
    import json

    write(tmp_path / "t.py", HAZARD)
    first = run(["check", "t.py", "--output-format", "json"], tmp_path)
    files = sorted((tmp_path / ".synclint_cache").rglob("*.json"))  # (the large tables are in shard folders)
    assert files
    for f in files:  # valid JSON, every entry of the wrong shape
        data = json.loads(f.read_text())
        table = data["files"] if "files" in data else data
        for k in table:
            table[k] = [table[k][0], {"n": 5}, [{"code": 1}], 7, None, "x"][: len(table[k])]
        f.write_text(json.dumps(data))
    again = run(["check", "t.py", "--output-format", "json"], tmp_path)
    assert (again.exit_code, again.stdout) == (first.exit_code, first.stdout)
    from synclint.run.cache import _link_shaped, _result_shaped, _summary

    for f in files:  # rewritten in the right shape
        data = json.loads(f.read_text())
        if "files" in data:
            assert all(_result_shaped(e) for e in data["files"].values())
        elif f.parent.name.startswith("link-"):
            assert all(_link_shaped(e) for e in data.values())
        else:
            assert all(_summary(e) is not False for e in data.values())
    assert not list((tmp_path / ".synclint_cache").glob(".tmp-*"))


def test_cached_questions_of_another_shape_relint_the_file(tmp_path):
    """The questions a lint asked are checked only when asked again (the edit path reads
    them for a few files): a wrongly shaped list makes its file be linted again, no error."""
    import json

    write(tmp_path / "helpers.py", "import torch\n\ndef make():\n    return torch.zeros(3, device='cuda')\n")
    write(tmp_path / "train.py", "from helpers import make\n\nfor _ in range(3):\n    print(make().sum().item())\n")
    clean = run(["check", "--no-cache", ".", "--output-format", "concise"], tmp_path)
    assert "train.py:4:11: SYN101" in clean.stdout
    run(["check", ".", "--output-format", "concise"], tmp_path)
    for f in (tmp_path / ".synclint_cache").glob("link-*/*.json"):
        data = json.loads(f.read_text())
        for e in data.values():
            e[4] = [[5], "x", None]
        f.write_text(json.dumps(data))
    write(tmp_path / "helpers.py", "import torch\n\ndef make():\n    return torch.zeros(4, device='cuda')\n")
    again = run(["check", ".", "--output-format", "concise"], tmp_path)
    assert (again.exit_code, again.stdout) == (clean.exit_code, clean.stdout)


@pytest.mark.parametrize("unnamed", [True, False], ids=["O_TMPFILE", "named-temp"])
def test_atomic_write_leaves_only_the_file(tmp_path, monkeypatch, unnamed):
    import os

    from synclint import atomic

    if not unnamed:
        monkeypatch.setattr(atomic, "_linkat", lambda: None)
    p = write(tmp_path / "a.py", "old\n")
    os.chmod(p, 0o640)
    atomic.write_text_atomic(p, "new\n")
    assert p.read_text() == "new\n" and oct(os.stat(p).st_mode & 0o777) == oct(0o640)
    assert [q.name for q in tmp_path.iterdir()] == ["a.py"]
    stale = tmp_path / ".synclint-0123456789abcdef.tmp"  # left by a run killed mid-write
    stale.write_text("half")
    os.utime(stale, (0, 0))
    atomic.write_text_atomic(p, "newer\n")
    assert [q.name for q in tmp_path.iterdir()] == ["a.py"]


def test_stdin_with_force_exclude_passes_an_excluded_file_through(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.synclint]\nexclude = ["gen/"]\n')
    r = _stdin(["check", "-", "--stdin-filename", "gen/new.py", "--force-exclude", "--fix"], FIXABLE, tmp_path)
    assert (r.exit_code, r.stdout) == (0, FIXABLE)  # not checked, not changed
    r = _stdin(["check", "-", "--stdin-filename", "src/new.py", "--force-exclude"], HAZARD, tmp_path)
    assert r.exit_code == 1 and "src/new.py:5:9: SYN101" in r.stdout


# ------------------------------------------------------------------ issue 37: input limits
def test_a_change_that_keeps_size_and_modification_time_is_seen(tmp_path, monkeypatch):
    """`cp -p`, `touch -r`, `rsync -t` and `tar` restore a changed file's modification time:
    the cache took the file's unchanged size and time for its old content, and the file
    importing it kept its old finding. The inode and status change time say it changed."""
    import os

    from synclint.run import cache

    monkeypatch.setattr(cache, "SETTLED_NS", 0)  # files just written count as left alone
    write(tmp_path / "pyproject.toml", "[tool.synclint]\n")
    lib = write(tmp_path / "lib.py", "import torch\n\n\ndef make():\n    return torch.ones(3).cuda()\n")
    write(tmp_path / "train.py", "from lib import make\n\nx = make()\nfor _ in range(3):\n    print(x.sum().item())\n")
    assert "train.py:5:11: SYN101" in run(["check", "--no-source", "."], tmp_path).stdout
    st = lib.stat()
    lib.write_text(lib.read_text().replace(".cuda()", ".cpu() "))  # the same size
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (lib.stat().st_size, lib.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert "train.py:5" not in run(["check", "--no-source", "."], tmp_path).stdout


ELIF_HEAD = 'import torch\nx = torch.ones(3, device="cuda")\nfor i in range(3):\n    if i == -1:\n        pass\n'


def test_a_long_elif_chain_is_analysed():
    """1,000 `elif` branches (the most the limits let through; valid Python) raised
    RecursionError in the statement numbering, reported as an internal error."""
    src = ELIF_HEAD + "".join(f"    elif i == {k}:\n        pass\n" for k in range(998))
    src += "    elif x.item() > 0:\n        pass\n"
    findings = lint_source(src, "e.py", all_rules())
    assert [(f.code, f.row, f.column, f.internal) for f in findings] == [("SYN101", 2002, 10, False)]


def test_positions_regenerate_an_elif_chain_once(monkeypatch):
    """Each `elif` is a statement holding the rest of the chain: a finding in each made
    positions regenerate the rest of it again, quadratic (5,000 ran past 300 s)."""
    from synclint.engine import analyse, lint_analysis
    from synclint.parse.positions import PositionIndex

    regenerated = []
    real = PositionIndex._ranges_for
    monkeypatch.setattr(PositionIndex, "_ranges_for", lambda self, stmt, i: regenerated.append(i) or real(self, stmt, i))
    src = ELIF_HEAD + "".join(f"    elif x.item() > {k}:\n        pass\n" for k in range(300))
    a = analyse(src, "e.py", force=True, libcst_tree=True)  # LibCST's own tree, as for a fix
    findings = lint_analysis(a, all_rules())[0]
    assert [f.row for f in findings] == [6 + 2 * k for k in range(300)]
    assert len(regenerated) == 1


def test_max_file_size_holds_for_stdin_and_imported_modules(tmp_path, monkeypatch):
    """The size guard (a 1 MB one-line list took 27 s and 2.18 GB) applies to stdin, and a
    module too large is not summarised for the files that import it."""
    from click.testing import CliRunner

    from synclint.frontends.cli import main

    write(tmp_path / "pyproject.toml", f"[tool.synclint]\nmax-file-size = {len(HAZARD) - 1}\n")
    write(tmp_path / "big.py", HAZARD)
    write(tmp_path / "small.py", "from big import x\n\nfor _ in range(3):\n    print(x.item())\n")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["check", "-", "--stdin-filename", "big.py"], input=HAZARD)
    assert r.exit_code == 2
    assert r.stderr.strip() == (f"synclint: error: big.py: too large to analyse ({len(HAZARD)} characters; the "
                                f"limit is {len(HAZARD) - 1}: raise `max-file-size` in [tool.synclint])")
    assert run(["check", "small.py"], tmp_path).exit_code == 0  # `x` is nothing known: big.py was not read
    write(tmp_path / "pyproject.toml", "[tool.synclint]\n")
    assert "small.py:4:11: SYN101" in run(["check", "small.py"], tmp_path).stdout  # a CUDA tensor of big.py's


def test_an_imported_module_out_of_time_is_summarised_again(tmp_path, monkeypatch):
    """A timeout is never cached: an imported module whose summary ran out of time was kept
    as a module with nothing to say, and its importer's findings with it."""
    import time

    from synclint import engine

    write(tmp_path / "pyproject.toml", "[tool.synclint]\n")
    write(tmp_path / "big.py", HAZARD)
    write(tmp_path / "small.py", "from big import x\n\nfor _ in range(3):\n    print(x.item())\n")
    real = engine.analyse

    def slow(source, filename="<string>", *args, **kwargs):
        if filename.endswith("big.py"):
            end = time.monotonic() + 30
            while time.monotonic() < end:
                pass
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(engine, "analyse", slow)
    assert run(["check", "--file-timeout", "1", "small.py"], tmp_path).exit_code == 0  # `x`: nothing known
    monkeypatch.setattr(engine, "analyse", real)
    assert "small.py:4:11: SYN101" in run(["check", "small.py"], tmp_path).stdout


def test_a_newline_in_a_file_name_keeps_each_line_whole(tmp_path):
    """Names are quoted as git quotes them where they hold a character that would break a
    line or act on a terminal, in findings, error lines and skipped lines alike."""
    write(tmp_path / "bad\nname.py", "import torch\nx = (\n")
    write(tmp_path / "tab\there.py", HAZARD)
    (tmp_path / "esc\x1b[2J.py").symlink_to("esc\x1b[2J.py")  # a loop: skipped
    r = run(["check", "--no-source", "--output-format", "concise", "-v", "."], tmp_path)
    assert r.exit_code == 2
    assert '"tab\\there.py":5:9: SYN101 [hot] `x.sum().item()` copies a GPU value to the host and waits for ' \
           'all queued GPU work' in r.stdout.splitlines()
    assert set(r.stderr.splitlines()) == {
        "synclint: error: \"bad\\nname.py\": cannot parse: '(' was never closed (line 2, column 5)",
        'synclint: skipped "esc\\x1b[2J.py": symlink loop'}


def test_diff_headers_quote_a_name_that_would_break_the_line(tmp_path):
    """`--diff` names files as git does: a newline in a name would split the `---` header
    and make the patch unreadable by `git apply`/`patch`."""
    write(tmp_path / "d\nz.py", "import torch\nfor i in range(3):\n    y = torch.zeros(3).cuda()\n")
    r = run(["check", "--diff", "--unsafe-fixes", "--select", "ALL", "."], tmp_path)
    headers = [line for line in r.stdout.splitlines() if line.startswith(("--- ", "+++ "))]
    assert headers == ['--- "a/d\\nz.py"', '+++ "b/d\\nz.py"']


def _fuzz_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fuzz_script", Path(__file__).resolve().parent.parent / "scripts" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pathological_shapes_are_analysed_or_refused_in_one_line():
    """`scripts/fuzz.py --kind shapes` at small sizes, in this process: each program is
    analysed to its end (the finding after the shape is reported), fix included, or refused
    with one reason, as the generator expects; never an exception or an internal error.
    (The script runs them large, in fresh processes, and times them: docs/reliability.md.)"""
    from synclint.engine import LintError
    from synclint.parse.nesting import DEEP, LONG

    fuzz = _fuzz_script()
    rules = all_rules()
    got, want = {}, {}
    for name, (_, _, sizes, _) in fuzz.SHAPES.items():
        for n, analysed in sizes:
            program = fuzz.shape_program(name, n)
            try:
                findings = lint_source(program, "bad.py", rules)
            except LintError as e:
                assert str(e).startswith((DEEP, LONG)), (name, n, str(e))
                got[name, n] = False
            else:
                assert not [f for f in findings if f.internal], (name, n)
                got[name, n] = ("SYN101", fuzz.epilogue_row(program)) in {(f.code, f.row) for f in findings}
            want[name, n] = analysed
    assert got == want


def test_a_large_file_is_analysed_where_its_budget_can_stop_it(tmp_path, monkeypatch):
    """LibCST's own parser (a fix needs its tree) holds the interpreter: no timer signal
    gets through until it returns (a 2 MB one-line list: about a minute). A file larger
    than `runner.LOCAL_MAX_CHARS` is analysed in a worker process even alone, and the budget
    kills it there."""
    import time

    from synclint import engine

    from synclint.run import runner
    from synclint.run.workers import forks

    if not forks():
        pytest.skip("the stand-in below reaches workers only when they are forked")
    monkeypatch.setattr(engine, "_parse_module", lambda source: sum(range(2 * 10**9)))  # C: no signal gets in
    fixable = 'import torch\nfor i in range(3):\n    y = torch.zeros(3).cuda()\n'
    write(tmp_path / "big.py", fixable + "#" * runner.LOCAL_MAX_CHARS + "\n")
    start = time.monotonic()
    r = run(["check", "--no-cache", "--file-timeout", "1", "big.py"], tmp_path)
    assert time.monotonic() - start < 20  # (in this process: as long as the sum, a minute or more)
    assert r.stderr.splitlines() == ["synclint: error: big.py: analysis took longer than 1 s; skipped (raise "
                                     "`file-timeout` in [tool.synclint] to allow more)"]


def test_a_very_long_line_is_quoted_in_part():
    """A finding carried a copy of its row, and a report printed the row whole with each
    finding: a 300 KB one-line f-string (a finding every 3 characters) took 21 GB. A row
    over 1,000 characters is read from the file when a report needs it, and shown around
    the finding."""
    from synclint.report.render import EXCERPT_MAX, text_report

    src = 'import torch\nx = torch.ones(3, device="cuda")\ny = f"' + "{x}" * 2000 + '"\n'
    findings = lint_source(src, "long.py", all_rules())
    assert len(findings) == 2000 and all(f.row == 3 and f.line is None for f in findings)
    report = text_report(findings, sources={"long.py": src.splitlines()}, color=False).splitlines()
    assert max(len(line) for line in report) < EXCERPT_MAX + 20
    at = max(i for i, line in enumerate(report) if line.startswith("3 |"))  # the last finding's row
    assert report[at][report[at + 1].index("^"):].startswith('x}"')  # the caret under its field
