"""The pre-commit hooks, run by the real `pre-commit try-repo` in a throwaway git repo.

try-repo installs synclint from a git repository into a fresh virtualenv (pip, from PyPI
for libcst/click/rich/pathspec), so the test builds that repository from this working
tree: pyproject.toml, README.md, synclint/, rules/ and .pre-commit-hooks.yaml, committed
in a temporary git repo. That way it tests the files as they are, committed or not."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")

ROOT = Path(__file__).resolve().parent.parent
SHIP = ["pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml", "synclint", "rules"]

HAZARD = (
    "import torch\n"
    "\n"
    "w = torch.ones(8, device='cuda')\n"
    "total = torch.zeros((), device='cuda')\n"
    "for step in range(10):\n"
    "    total += w.sum().item()\n"
)
FIXED = HAZARD.replace("    total += w.sum().item()\n", "    total += w.sum()\n")

pytestmark = pytest.mark.slow


def _git(*args, cwd):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("synclint-src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SHIP:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, repo / name)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "synclint", cwd=repo)
    return repo


@pytest.fixture(scope="module")
def precommit_home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


def _try_repo(hook_repo, project, hook, home):
    """`pre-commit try-repo REPO [HOOK] --all-files --verbose` (no hook: every hook)."""
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), *([hook] if hook else []),
         "--all-files", "--color=never", "--verbose"],
        cwd=project, capture_output=True, text=True, env=env, timeout=900,
    )


def _project(tmp_path, text):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(text, encoding="utf-8")
    _git("init", "-q", cwd=project)
    _git("add", "-A", cwd=project)
    _git("commit", "-q", "-m", "init", cwd=project)
    return project


def _fixable_case():
    """Source from a rule's own example whose findings all have safe fixes."""
    from synclint.engine import lint_source
    from synclint.registry import default_rules

    for rule in default_rules():
        if rule.FIX == "never":
            continue
        for case in rule.INVALID:
            found = lint_source(case.code, "x.py", default_rules())
            if found and all(f.fix is not None and f.fix.applicability == "safe" for f in found):
                return case.code
    return None


def _sections(out):
    """hook id -> that hook's part of pre-commit's output."""
    parts = out.split("- hook id: ")[1:]
    return {p.split("\n", 1)[0].strip(): p for p in parts}


def test_hooks_catch_hazard_then_pass(hook_repo, precommit_home, tmp_path):
    """Both hooks in one try-repo run (each run installs synclint into a fresh virtualenv,
    so fewer runs is faster): `synclint` fails and names the line, `synclint-fix` rewrites
    the fixable file; with the hazard fixed by hand, both pass."""
    project = _project(tmp_path, HAZARD)
    fixable = _fixable_case()
    if fixable is not None:
        from synclint.engine import lint_source
        from synclint.fixes import fix_text
        from synclint.registry import default_rules

        expected_fix, _, _ = fix_text(fixable, lambda s: lint_source(s, "x.py", default_rules()))
        (project / "fixme.py").write_text(fixable, encoding="utf-8")
        _git("add", "-A", cwd=project)
        _git("commit", "-q", "-m", "fixable", cwd=project)

    proc = _try_repo(hook_repo, project, None, precommit_home)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    sections = _sections(out)
    assert "train.py:6:14: SYN101" in sections["synclint"], out  # names the line (and column)
    if fixable is not None:
        assert "files were modified by this hook" in sections["synclint-fix"], out
        assert (project / "fixme.py").read_text(encoding="utf-8") == expected_fix
        assert "train.py:6:14: SYN101" in sections["synclint-fix"], out  # no fix: still reported

    (project / "train.py").write_text(FIXED, encoding="utf-8")
    proc = _try_repo(hook_repo, project, None, precommit_home)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.count("Passed") == 2, out
