"""A fix never breaks a user's file (issue 37): each fixed text compiles where the original
did, on this Python and as the project's declared oldest; a file that changed after it was
read is not overwritten; a file this user may not write is left alone."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from synclint.findings import Edit, Finding, Fix
from synclint.fixcheck import FixCheck, declared_minimum, lowest_python, pep701_fstring
from synclint.fixes import fix_source
from synclint.testing import run_cli as run

# (in a loop: a one-time transfer at module level is setup, no finding)
FIXABLE = 'import torch\nfor _ in range(2):\n    y = torch.zeros(4).cuda()\n'
FIXED = 'import torch\nfor _ in range(2):\n    y = torch.zeros(4, device="cuda")\n'


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def compiles(text: str) -> bool:
    try:
        compile(text, "t", "exec", dont_inherit=True)
        return True
    except SyntaxError:
        return False


# ------------------------------------------------------------------ 1. fixes that would not compile
def test_a_fix_inside_an_fstrings_braces_takes_the_other_quote(tmp_path):
    """`device="cuda"` inside `f"{...}"` is a syntax error before Python 3.12 (the fix broke
    the file on 3.11, and `--diff` showed the same): the new string takes the other quote."""
    src = 'import torch\nfor _ in range(2):\n    print(f"{torch.zeros(3).cuda()}")\n'
    want = "import torch\nfor _ in range(2):\n    print(f\"{torch.zeros(3, device='cuda')}\")\n"
    write(tmp_path / "a.py", src)
    diff = run(["check", "a.py", "--no-cache", "--diff"], tmp_path)
    assert "+    print(f\"{torch.zeros(3, device='cuda')}\")" in diff.stdout, diff.stdout
    r = run(["check", "a.py", "--no-cache", "--fix"], tmp_path)
    assert "Fixed 1 finding." in r.stderr and "error" not in r.stderr
    assert (tmp_path / "a.py").read_text() == want and compiles(want)


def test_a_fix_that_cannot_compile_is_withheld_and_says_why(tmp_path):
    """Nested f-strings take both quotes, so no string fits inside: that fix is withheld (one
    line; the finding stays and says why), the file's other fix is applied."""
    src = "import torch\nfor _ in range(2):\n    print(f\"{f'{torch.zeros(3).cuda()}'}\")\n" + FIXABLE.split("\n", 1)[1]
    write(tmp_path / "a.py", src)
    r = run(["check", "a.py", "--no-cache", "--fix", "--select", "SYN301", "--output-format", "json"], tmp_path)
    assert r.exit_code == 2
    text = (tmp_path / "a.py").read_text()
    assert compiles(text) and text == src.replace("torch.zeros(4).cuda()", 'torch.zeros(4, device="cuda")')
    [line] = [x for x in r.stderr.splitlines() if "error" in x]
    assert line.startswith("synclint: error: a.py:3: SYN301's fix not applied: the fixed code ")
    [left] = json.loads(r.stdout)  # the finding stays, says why, and offers no fix
    assert left["location"]["row"] == 3 and left["fix"] is None and "(not applied: the fixed code" in left["fix_title"]
    diff = run(["check", "a.py", "--no-cache", "--diff", "--select", "SYN301"], tmp_path)
    assert diff.exit_code == 2 and "SYN301's fix not applied" in diff.stderr and diff.stdout == ""


def _offering(replacement: str):
    """A lint that offers one safe fix: line 2 becomes `replacement` (until it is)."""
    def lint(text):
        line = text.split("\n")[1]
        if line == replacement:
            return []
        fix = Fix("safe", "m", (Edit((2, 1), (2, len(line) + 1), replacement),))
        return [Finding("SYN301", "cpu-factory-then-move", "m", "a.py", 2, 1, 2, 2, False, "title", fix)]
    return lint


def test_a_fix_that_needs_a_newer_python_than_the_project_declares_is_withheld(tmp_path):
    """Parsing as the oldest Python `requires-python` admits is checked too (a walrus on 3.7)."""
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\nrequires-python = ">=3.7, <4"\n')
    minimum = declared_minimum(str(tmp_path / "src" / "a.py"), {})
    assert minimum is not None and minimum[0] == (3, 7) and "requires-python '>=3.7, <4'" in minimum[1]
    src = "import torch\nx = 1\n"
    fixed = fix_source(src, _offering("x = (y := 1)"), minimum=minimum)
    assert fixed.text == src and fixed.count == 0
    [(finding, why)] = fixed.withheld
    assert why.startswith("the fixed code does not parse as Python 3.7 (requires-python '>=3.7, <4'")
    assert finding.fix is None and "not applied" in finding.fix_title
    assert fix_source(src, _offering("x = (y := 1)"), minimum=((3, 8), "")).text == "import torch\nx = (y := 1)\n"


@pytest.mark.parametrize("spec, lowest", [
    (">=3.8", (3, 8)), (">=3.8,<4", (3, 8)), ("~=3.10", (3, 10)), ("==3.11.*", (3, 11)),
    (">3.7", (3, 7)), (">= 3.9.2, != 3.9.5", (3, 9)), ("<3.12", None), ("", None), (">=2.7", None),
])
def test_the_lowest_python_a_specifier_admits(spec, lowest):
    assert lowest_python(spec) == lowest


def test_a_file_that_did_not_compile_is_not_held_to_it():
    """A file with newer syntax than this Python's (LibCST parses it) is fixed as before:
    only what the original passed is checked."""
    check = FixCheck("x = (\n")
    assert check.problem("import torch\n") is None
    assert FixCheck("x = 1\n").problem("x = (\n").startswith("the fixed code does not compile on Python")


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 701's tokens (FSTRING_START) come with Python 3.12")
@pytest.mark.parametrize("src, before_312", [
    ('f"{x.to(device="cuda")}"\n', False),
    ("f\"{x.to(device='cuda')}\"\n", True),
    ('f"{x!r:>{w}} {x:#x}"\n', True),
    ("f\"{'#'}\"\n", True),
    ("f\"{'\\\\n'.join(a)}\"\n", False),
    ('f"{x # c\n}"\n', False),
    ('f"""{x\n}"""\n', True),
    ('f"{x\n}"\n', False),
    ('f"""{"a"}"""\n', True),
    ("f\"{f'{x}'}\"\n", True),
    ("f\"{f'{\"x\"}'}\"\n", False),
    ('f"{ {1: 2}[1] }"\n', True),
])
def test_fstrings_only_python_312_reads_are_told_apart(src, before_312):
    """(Each `before_312` is what Python 3.11 compiles.)"""
    assert (pep701_fstring(src) is None) == before_312


# ------------------------------------------------------------------ 2. a file changed meanwhile
def test_a_file_changed_while_it_is_fixed_is_not_overwritten(tmp_path, monkeypatch):
    """An editor saves a.py (or another run fixes it) after --fix read it: the save is kept,
    one line says so; b.py is fixed."""
    from synclint.run import pipeline

    saved = FIXABLE + "z = 1  # saved in the editor\n"
    real = pipeline.lint_fixed

    def lint_fixed(setup, name):
        if name.endswith("a.py"):
            write(tmp_path / "a.py", saved)
        return real(setup, name)

    monkeypatch.setattr(pipeline, "lint_fixed", lint_fixed)
    write(tmp_path / "a.py", FIXABLE)
    write(tmp_path / "b.py", FIXABLE)
    r = run(["check", "a.py", "b.py", "--no-cache", "--fix"], tmp_path)
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "Fixed 1 finding.",
        "synclint: error: a.py: changed while synclint was fixing it (another run or an editor); "
        "not overwritten: run --fix again",
    ]
    assert (tmp_path / "a.py").read_text() == saved and (tmp_path / "b.py").read_text() == FIXED


@pytest.mark.parametrize("links", [1, 2], ids=["replaced", "hard-linked"])
def test_an_atomic_write_replaces_only_what_was_read(tmp_path, links):
    from synclint.atomic import FileChanged, write_text_atomic

    p = write(tmp_path / "a.py", "old\n")
    if links == 2:
        os.link(p, tmp_path / "b.py")
    p.write_text("someone else's\n")
    with pytest.raises(FileChanged):
        write_text_atomic(p, "ours\n", replacing=b"old\n")
    assert p.read_text() == "someone else's\n" and sorted(q.name for q in tmp_path.iterdir())[0] == "a.py"
    write_text_atomic(p, "ours\n", replacing=b"someone else's\n")
    assert p.read_text() == "ours\n"


# ------------------------------------------------------------------ 3. files this user may not write
def test_fix_leaves_a_read_only_file_alone(tmp_path):
    a = write(tmp_path / "a.py", FIXABLE)
    write(tmp_path / "b.py", FIXABLE)
    os.chmod(a, 0o444)
    r = run(["check", "a.py", "b.py", "--no-cache", "--fix"], tmp_path)
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "Fixed 1 finding.",
        "synclint: error: a.py: cannot write the fixes: the file is read-only (mode 0444); the file is unchanged",
    ]
    assert a.read_text() == FIXABLE and oct(os.stat(a).st_mode & 0o777) == oct(0o444)
    assert (tmp_path / "b.py").read_text() == FIXED


def test_fix_leaves_a_file_this_user_may_not_write_alone(tmp_path, monkeypatch):
    """Another user's file (mode 0644): the rename needs only the folder, the check is the
    file's own (as the kernel would answer for a user who is not its owner)."""
    a = write(tmp_path / "a.py", FIXABLE)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(a) else real(p, mode, **kw))
    r = run(["check", "a.py", "--no-cache", "--fix"], tmp_path)
    assert r.exit_code == 2 and a.read_text() == FIXABLE
    assert r.stderr.strip() == (f"synclint: error: a.py: cannot write the fixes: no permission to write the file "
                                f"(owner uid {os.getuid()}, mode 0644); the file is unchanged")


AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]


def _can_run_as_nobody() -> bool:
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("setpriv"):
        return False
    return subprocess.run([*AS_NOBODY, "-c", "import synclint.frontends.cli"], capture_output=True, cwd="/").returncode == 0


def test_fix_leaves_another_users_file_alone():
    """Run as `nobody` in a folder anyone may write: the file is root's (mode 0644)."""
    if not _can_run_as_nobody():
        pytest.skip("needs root, setpriv and a Python that `nobody` may run")
    with tempfile.TemporaryDirectory() as folder:  # (pytest's tmp_path is behind a folder only root may enter)
        tmp = Path(folder)
        tmp.chmod(0o777)
        a = write(tmp / "a.py", FIXABLE)
        os.chmod(a, 0o644)
        r = subprocess.run([*AS_NOBODY, "-m", "synclint", "check", "a.py", "--no-cache", "--fix", "--no-source"],
                           cwd=tmp, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": folder})
        assert r.returncode == 2, r.stderr
        assert ("synclint: error: a.py: cannot write the fixes: no permission to write the file (owner uid 0, "
                "mode 0644); the file is unchanged") in r.stderr.splitlines()
        assert a.read_text() == FIXABLE and os.stat(a).st_uid == 0
