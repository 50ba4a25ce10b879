"""The pre-commit hooks as the README configures them: a project's .pre-commit-config.yaml
names a clone of synclint and pins one of its commits (or a tag the team made), and
`pre-commit run` installs synclint from it and runs the hooks.

Offline: the clone is a local git repository built from this working tree
(pyproject.toml, README.md, synclint/, rules/ and .pre-commit-hooks.yaml, committed, so that
the files are tested as they are, committed or not), and pip installs synclint's
dependencies (and setuptools, which builds it) from wheels packed from this environment's
own installed copies, with no index."""

import base64
import hashlib
import importlib.metadata as metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")
yaml = pytest.importorskip("yaml")  # (pre-commit's own dependency)

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
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A clone of synclint, as a team's copy of the repository is: a git repository with
    no release tag."""
    repo = tmp_path_factory.mktemp("synclint-clone")
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


def _requirement_closure(name):
    """The installed distributions `name` needs at run time, itself left out."""
    from packaging.requirements import Requirement

    seen, todo = {}, [name]
    while todo:
        dist = metadata.distribution(todo.pop())
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            key = re.sub(r"[-_.]+", "-", req.name).lower()
            if key not in seen:
                seen[key] = metadata.distribution(req.name)
                todo.append(req.name)
    return list(seen.values())


def _pack(dist, into):
    """An installed distribution packed back into a wheel that pip can install."""
    wheel_info = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel_info.splitlines() if line.startswith("Tag:")]
    if not tags or not dist.files:
        pytest.skip(f"{dist.metadata['Name']} was not installed from a wheel: cannot pack it offline")
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    files = [f for f in dist.files if not str(f).startswith("..") and "__pycache__" not in str(f)
             and not str(f).endswith(".dist-info/RECORD")]
    record_path = next(str(f) for f in dist.files if str(f).endswith(".dist-info/RECORD"))
    rows = []
    with zipfile.ZipFile(into / f"{name}-{dist.version}-{tags[0]}.whl", "w") as z:
        for f in files:
            data = Path(f.locate()).read_bytes()
            z.writestr(str(f), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{f},sha256={digest},{len(data)}")
        z.writestr(record_path, "\n".join(rows + [f"{record_path},,"]) + "\n")


@pytest.fixture(scope="module")
def offline_env(tmp_path_factory):
    """The environment pre-commit runs in: its own store, and pip with no index (a wheel
    of each dependency, packed from this environment) that compiles nothing ahead (the
    hooks import a small part of what it installs)."""
    wheels = tmp_path_factory.mktemp("wheels")
    for dist in _requirement_closure("synclint") + [metadata.distribution("setuptools")]:
        _pack(dist, wheels)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")),
               PRE_COMMIT_COLOR="never", NO_COLOR="1", PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels),
               PIP_CONFIG_FILE=os.devnull, PIP_COMPILE="0", VIRTUALENV_NO_DOWNLOAD="1")
    env.pop("VIRTUAL_ENV", None)
    env.pop("PIP_CONSTRAINT", None)
    return env


def _remote_config(doc="README.md"):
    """The configuration in `doc` for pre-commit to install synclint itself (the block
    that pins a `rev`), as written."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "rev:" in b]
    assert len(blocks) == 1, f"one pre-commit block with a rev in {doc}"
    return yaml.safe_load(textwrap.dedent(blocks[0]))


def _pointed_at(config, clone, rev=None):
    """`config` with its repository (ORG: wherever a team hosts synclint) the clone, and
    `rev` in place of the one written (None: as written)."""
    (repo,) = config["repos"]
    assert repo["repo"] == "https://github.com/ORG/synclint"
    repo["repo"] = str(clone)
    if rev is not None:
        repo["rev"] = rev
    return repo


def _project(tmp_path, text, config):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(text, encoding="utf-8")
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    _git("init", "-q", cwd=project)
    _git("add", "-A", cwd=project)
    _git("commit", "-q", "-m", "init", cwd=project)
    return project


def _run(project, env):
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color=never", "--verbose"],
                          cwd=project, capture_output=True, text=True, env=env, timeout=900)
    return proc.returncode, proc.stdout + proc.stderr


def _sections(out):
    """hook id -> that hook's part of pre-commit's output."""
    parts = out.split("- hook id: ")[1:]
    return {p.split("\n", 1)[0].strip(): p for p in parts}


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


def test_readme_and_ci_md_give_the_same_configuration():
    assert _remote_config("README.md") == _remote_config("docs/ci.md")


def test_the_readmes_config_pinned_to_a_commit_installs_and_runs_both_hooks(clone, offline_env, tmp_path):
    """The README's block pinned to a commit of the clone (what it says to do without a
    tag): `synclint` fails and names the line, `synclint-fix` rewrites the fixable file;
    with the hazard fixed by hand, both pass (the second run reuses the environment
    pre-commit installed)."""
    config = _remote_config()
    repo = _pointed_at(config, clone, _git("rev-parse", "HEAD", cwd=clone))
    assert [h["id"] for h in repo["hooks"]] == ["synclint"]
    repo["hooks"].append({"id": "synclint-fix"})  # the one the README leaves commented out
    project = _project(tmp_path, HAZARD, config)
    fixable = _fixable_case()
    if fixable is not None:
        from synclint.engine import lint_source
        from synclint.fixes import fix_text
        from synclint.registry import default_rules

        expected_fix, _, _ = fix_text(fixable, lambda s: lint_source(s, "x.py", default_rules()))
        (project / "fixme.py").write_text(fixable, encoding="utf-8")
        _git("add", "-A", cwd=project)
        _git("commit", "-q", "-m", "fixable", cwd=project)

    code, out = _run(project, offline_env)
    assert code == 1, out
    sections = _sections(out)
    assert "train.py:6:14: SYN101" in sections["synclint"], out  # names the line (and column)
    if fixable is not None:
        assert "files were modified by this hook" in sections["synclint-fix"], out
        assert (project / "fixme.py").read_text(encoding="utf-8") == expected_fix
        assert "train.py:6:14: SYN101" in sections["synclint-fix"], out  # no fix: still reported

    (project / "train.py").write_text(FIXED, encoding="utf-8")
    code, out = _run(project, offline_env)
    assert code == 0 and out.count("Passed") == 2, out


def test_the_readmes_tag_pins_once_the_team_has_made_it(clone, offline_env, tmp_path):
    """The README's block as written (`rev: v0.1.0`) fails on a clone without that tag
    (what a new user hit); once the tag is made with the README's command, it runs the hook.
    (Run as `language: system`, from this environment: installing is the test above's.)"""
    config = _remote_config()
    repo = _pointed_at(config, clone)
    (hook,) = repo["hooks"]
    hook.update(language="system", entry=f"{sys.executable} -m synclint check --force-exclude")
    project = _project(tmp_path, HAZARD, config)
    code, out = _run(project, offline_env)
    assert code != 0 and f"pathspec '{repo['rev']}' did not match" in out and "SYN101" not in out, out
    # the tag, made by the README's own command (where the team hosts synclint, then pushed)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (make_tag,) = re.findall(r"`(git tag [^`&]+?)\s*(?:&&[^`]*)?`", readme)
    assert repo["rev"] in make_tag
    _git(*shlex.split(make_tag)[1:], cwd=clone)
    code, out = _run(project, offline_env)
    assert code == 1 and "train.py:6:14: SYN101" in out, out
