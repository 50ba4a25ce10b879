"""The bad-input matrix of issue 9, run through the CLI. docs/reliability.md holds the table
(input, command, exit code, the exact line the user sees); this test runs every row of it
and fails if a line or an exit code changes, or if a row and a setup here do not match."""

import os
import re
import shlex
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.frontends.cli import main

DOC = Path(__file__).resolve().parent.parent / "docs" / "reliability.md"

GOOD = textwrap.dedent(
    """\
    import torch

    x = torch.ones(3, device="cuda")
    for _ in range(3):
        v = x.sum().item()
    """
)
GOOD_LINE = "good.py:5:9: SYN101 [hot] `x.sum().item()` copies a GPU value to the host and waits for all queued GPU work"
HEAD = 'import torch\nx = torch.ones(3, device="cuda")\n'
MOVE = HEAD + "for i in range(3):\n    y = torch.zeros(3).cuda()\n"


def _w(p: Path, text, binary=False):
    p.parent.mkdir(parents=True, exist_ok=True)
    if binary:
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8", newline="")


def _match_in_loop(d, mp):
    _w(d / "bad.py", HEAD + textwrap.dedent(
        """\
        def step(model, kind, lr):
            for p in model.parameters():
                match kind:
                    case "sgd":
                        p -= lr * p.grad
                    case _:
                        p.grad = None
        """))


def _rule_raises(d, mp):
    from synclint.rules.tensor_item import TensorItem

    real = TensorItem.visit_Call

    def visit_Call(self, node):
        if self.ctx.filename.endswith("bad.py"):
            raise AttributeError("'Match' object has no attribute 'body'")
        return real(self, node)

    mp.setattr(TensorItem, "visit_Call", visit_Call)
    _w(d / "bad.py", GOOD)


def _cache_wrong_shape(d, mp):
    import json

    _w(d / "bad.py", GOOD)
    CliRunner().invoke(main, ["check", "bad.py", "good.py"])  # writes the cache files
    for f in (d / ".synclint_cache").glob("*.json"):
        data = json.loads(f.read_text())
        if "files" in data:
            for k in data["files"]:
                data["files"][k] = [data["files"][k][0], "", [{"code": 5}], [1], None, "x"]
        else:
            for k in data:
                data[k] = [data[k][0], {"n": []}, None]
        f.write_text(json.dumps(data))


def _slow_rule(d, mp):
    from synclint.testing import spin_on

    spin_on(mp, "bad.py")  # SYN101 runs past any budget there
    _w(d / "bad.py", GOOD)


def _slow_at_the_recursion_limit(d, mp):
    """SYN101 spins at the bottom of a recursion in bad.py: the budget's timer finds the stack
    full, so its exception comes as a RecursionError (which the rule passes on, as deep code
    does)."""
    from synclint.rules.tensor_item import TensorItem

    real = TensorItem.visit_Call
    spun = []

    def down():
        try:
            down()
        except RecursionError:
            if not spun:
                spun.append(1)
                i = 0
                while i < 10**9:  # (a minute at most; no call: there is no room for one)
                    i += 1
            raise

    def visit_Call(self, node):
        if self.ctx.filename.endswith("bad.py"):
            down()
        return real(self, node)

    mp.setattr(TensorItem, "visit_Call", visit_Call)
    _w(d / "bad.py", GOOD)


def _unreadable_dir(d, mp):
    _w(d / "locked" / "a.py", GOOD)
    real = os.scandir

    def scandir(path="."):
        if os.path.basename(os.path.normpath(path)) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    mp.setattr(os, "scandir", scandir)


def _full_disk(d, mp):
    import errno

    _w(d / "bad.py", MOVE)
    real = os.fsync

    def fsync(fd):
        where = os.readlink(f"/proc/self/fd/{fd}")  # a temp file: unnamed, or .synclint-*
        if where.startswith(str(d)) and ("(deleted)" in where or ".synclint-" in where):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    mp.setattr(os, "fsync", fsync)


def _unreadable_file(d, mp):
    """bad.py unreadable, as for a user without the right to read it (these tests may run
    as root, who may read anything): click's test (`os.access`) and the reading fail."""
    import builtins

    import synclint.parse.source

    _w(d / "bad.py", GOOD)
    real_access, real_open = os.access, builtins.open

    def access(path, mode, *a, **k):
        return False if os.path.basename(os.fspath(path)) == "bad.py" else real_access(path, mode, *a, **k)

    def open_(path, *a, **k):
        if os.path.basename(os.fspath(path)) == "bad.py":
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *a, **k)

    mp.setattr(os, "access", access)
    mp.setattr(synclint.parse.source, "open", open_, raising=False)


def _pyproject(text):
    return lambda d, mp: _w(d / "pyproject.toml", text)


SETUPS = {
    "match-in-loop": _match_in_loop,
    "rule-raises": _rule_raises,
    "slow-analysis": _slow_rule,
    "deep-brackets": lambda d, mp: _w(d / "bad.py", "import torch\nx = " + "(" * 3000 + ")" * 3000 + "\n"),
    "deep-brackets-plain": lambda d, mp: _w(d / "bad.py", "(" * 3000 + ")" * 3000 + "\n"),
    "deep-unary": lambda d, mp: _w(d / "bad.py", "import torch\nx = " + "-" * 20000 + "1\n"),
    "plus-chain": lambda d, mp: _w(d / "bad.py", "import torch\nx = " + "+".join(["a"] * 100_000) + "\n"),
    "method-chain": lambda d, mp: _w(d / "bad.py", HEAD + "for i in range(3):\n    y = x" + ".abs()" * 246 + ".item()\n"),
    "attribute-chain": lambda d, mp: _w(d / "bad.py", HEAD + "for i in range(3):\n    y = x.item()" + ".real" * 491 + "\n"),
    # issue 37: input limits
    "slow-at-recursion-limit": _slow_at_the_recursion_limit,
    "subscript-chain": lambda d, mp: _w(d / "bad.py", "import torch\nx = y" + "[0]" * 5000 + "\n"),
    "elif-chain": lambda d, mp: _w(d / "bad.py", HEAD + "for i in range(3):\n    if i == -1:\n        pass\n" + "".join(
        f"    elif i == {k}:\n        pass\n" for k in range(998)) + "    elif x.item() > 0:\n        pass\n"),
    "long-elif-chain": lambda d, mp: _w(d / "bad.py", HEAD + "if x:\n    pass\n" + "elif x:\n    pass\n" * 5000),
    "joined-strings": lambda d, mp: _w(d / "bad.py", "import torch\nx = (\n" + '    "a"\n' * 50_000 + ")\n"),
    "too-large": lambda d, mp: (_w(d / "pyproject.toml", "[tool.synclint]\nmax-file-size = 1000\n"),
                                _w(d / "bad.py", HEAD + "y = [" + "1, " * 400 + "]\n")),
    "utf-16": lambda d, mp: _w(d / "bad.py", GOOD.encode("utf-16"), True),
    "bom-and-cookie": lambda d, mp: _w(d / "bad.py", b"\xef\xbb\xbf# coding: latin-1\n" + GOOD.encode(), True),
    "backslash-continuation": lambda d, mp: _w(d / "bad.py", HEAD + "for i in range(3):\n    y = (x \\\n        + 1).item()\n"),
    "newline-in-name": lambda d, mp: _w(d / "new\nline.py", GOOD),
    "case-guard": lambda d, mp: _w(d / "bad.py", HEAD + "for i in range(3):\n    match i:\n        case 0 if x.sum().item() > 0:\n            pass\n"),
    "cr-only": lambda d, mp: _w(d / "bad.py", MOVE.replace("\n", "\r")),
    "mixed-endings": lambda d, mp: _w(d / "bad.py", MOVE.replace("\n", "\r\n", 2).replace("\n", "\r", 1)),
    "form-feed": lambda d, mp: _w(d / "bad.py", HEAD + "\x0c\nfor i in range(3):\n    v = x.item()  # noqa: SYN101\n    w = x.item()\n"),
    "line-separator": lambda d, mp: _w(d / "bad.py", HEAD + 'for i in range(3):\n    s = "a\u2028b"  # noqa: SYN101\n    w = x.item()\n'),
    "coding-cookie": lambda d, mp: _w(d / "bad.py", ("# coding: latin-1\n" + HEAD + 's = "caf\xe9"\nfor i in range(3):\n    w = x.item()\n').encode("latin-1"), True),
    "unknown-cookie": lambda d, mp: _w(d / "bad.py", "# coding: klingon\nimport torch\n"),
    "not-utf8": lambda d, mp: _w(d / "bad.py", b'import torch\ns = "caf\xe9"\n', True),
    "nul-byte": lambda d, mp: _w(d / "bad.py", b"import torch\x00\n", True),
    "syntax-error": lambda d, mp: _w(d / "bad.py", "import torch\nx = (\n"),
    "libcst-refuses": lambda d, mp: _w(d / "bad.py", "import torch\n(pars): bool = True\n"),
    "python-3.12-syntax": lambda d, mp: _w(d / "bad.py", "type Pair = tuple[int, int]\ndef first[T](p: tuple[T, T]) -> T:\n    return p[0]\n"),
    "tabs": lambda d, mp: _w(d / "bad.py", HEAD + "for i in range(3):\n\tif i:\n\t\tw = x.item()\n"),
    "cuda-device-fix": lambda d, mp: _w(d / "bad.py", "import torch\ndef f(device):\n    for i in range(3):\n        y = torch.zeros(3).cuda(device)\n"),
    "diff-parse-error": lambda d, mp: _w(d / "bad.py", "import torch\nx = (\n"),
    "symlink-fix": lambda d, mp: (_w(d / "real" / "a.py", MOVE), (d / "bad.py").symlink_to(d / "real" / "a.py")),
    "hardlink-fix": lambda d, mp: (_w(d / "bad.py", MOVE), os.link(d / "bad.py", d / "other.py")),
    "bom-fix": lambda d, mp: _w(d / "bad.py", b"\xef\xbb\xbf" + MOVE.encode(), True),
    "full-disk": _full_disk,
    "symlink-loop-walked": lambda d, mp: (_w(d / "pkg" / "a.py", GOOD), (d / "pkg" / "loop.py").symlink_to("loop.py")),
    "symlink-loop-named": lambda d, mp: (d / "bad.py").symlink_to("bad.py"),
    "fifo-named": lambda d, mp: os.mkfifo(d / "bad.py"),
    "dev-null": lambda d, mp: None,
    "missing-path": lambda d, mp: None,
    "tool-is-5": lambda d, mp: _w(d / "bad.toml", "tool = 5\n"),
    "toml-not-utf8": lambda d, mp: _w(d / "pyproject.toml", b"[tool.synclint]\n# caf\xe9\n", True),
    "cache-wrong-shape": _cache_wrong_shape,
    "ignored-dir-named": lambda d, mp: (_w(d / ".gitignore", "gen/\n"), _w(d / "gen" / "a.py", GOOD), (d / ".git").mkdir()),
    "venv-folder": lambda d, mp: _w(d / "venv" / "a.py", GOOD),
    "unreadable-dir": _unreadable_dir,
    "no-python-files": lambda d, mp: (d / "empty").mkdir(),
    "stdin": lambda d, mp: None,
    # issue 37: the command line and the configuration
    "unreadable-file-named": _unreadable_file,
    "unreadable-dir-named": _unreadable_dir,
    "file-timeout-huge": lambda d, mp: _w(d / "bad.py", GOOD),
    "file-timeout-huge-config": lambda d, mp: (_w(d / "bad.py", GOOD), _w(d / "pyproject.toml", "[tool.synclint]\nfile-timeout = 1e300\n")),
    "unknown-selector-in-config": _pyproject('[tool.synclint]\nselect = ["SYN1", "SYN999"]\n'),
    "tool-entry-is-5": _pyproject("[tool]\nsynclint = 5\n"),
    "two-unknown-keys": _pyproject("[tool.synclint]\nselekt = ['SYN1']\nignor = ['SYN101']\n"),
    "unclosed-bracket-exclude": _pyproject('[tool.synclint]\nexclude = ["build["]\n'),
    "bad-range-exclude": _pyproject('[tool.synclint]\nexclude = ["gen/[z-a].py"]\n'),
    "empty-select": _pyproject("[tool.synclint]\nselect = []\n"),
}
STDIN = {"stdin": GOOD}


# Issue 37, fixes (their own block of rows in docs/reliability.md)
def _saved_while_fixing(d, mp):
    """An editor saves bad.py after `--fix` read it (as another `--fix` run would)."""
    from synclint.run import pipeline

    real = pipeline.lint_fixed

    def lint_fixed(setup, name):
        if name.endswith("bad.py"):
            _w(d / "bad.py", MOVE + "z = 1\n")
        return real(setup, name)

    mp.setattr(pipeline, "lint_fixed", lint_fixed)
    _w(d / "bad.py", MOVE)


SETUPS.update({
    "fix-fstring-quote": lambda d, mp: _w(d / "bad.py", HEAD + 'for i in range(3):\n    print(f"{torch.zeros(3).cuda()}")\n'),
    "fix-file-changed": _saved_while_fixing,
    "fix-read-only": lambda d, mp: (_w(d / "bad.py", MOVE), os.chmod(d / "bad.py", 0o444)),
})


def _unescape(cell: str) -> str:
    cell = cell.strip().replace("\\|", "|")
    m = re.fullmatch(r"(`+)\s?(.*?)\s?\1", cell)
    return m.group(2) if m else cell


def matrix_rows():
    """(id, command, exit code, line) from the table in docs/reliability.md."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        if len(cells) == 5 and re.fullmatch(r"\s*`[a-z0-9.-]+`\s*", cells[0]):
            rows.append((_unescape(cells[0]), _unescape(cells[2]), int(cells[3]), _unescape(cells[4])))
    return rows


def test_every_row_has_a_setup_and_every_setup_a_row():
    assert sorted(r[0] for r in matrix_rows()) == sorted(SETUPS)


@pytest.mark.parametrize("case, command, code, line", matrix_rows(), ids=lambda v: v if isinstance(v, str) and "synclint" not in v and " " not in v else "")
def test_bad_input(tmp_path, monkeypatch, case, command, code, line):
    _w(tmp_path / "good.py", GOOD)
    SETUPS[case](tmp_path, monkeypatch)
    args = shlex.split(command)
    assert args[0] == "synclint"
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = CliRunner().invoke(main, args[1:], input=STDIN.get(case), catch_exceptions=False)
    finally:
        os.chdir(old)
    seen = r.stdout.splitlines() + r.stderr.splitlines()
    line = line.replace("{tmp}", str(tmp_path.resolve()))
    assert (r.exit_code, line in seen) == (code, True), "\n".join(seen)
    assert not any("Traceback" in s or "internal error: " in s for s in seen)
    if "good.py" in args:
        assert GOOD_LINE in seen  # the good file next to the bad input is still reported
