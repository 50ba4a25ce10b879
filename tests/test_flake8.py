"""The flake8 plugin, run through the real flake8: same findings, rows and columns as
`synclint check`, and flake8's own select/ignore semantics for off-by-default rules."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flake8")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SAMPLE = ROOT / "tests" / "data" / "sample"
# path:row:col: CODE message  (flake8's default format)
LINE_RE = re.compile(r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>SYN\d{3}) (?P<msg>.*)$")


def _targets():
    """Sets of files checked together: the single-file fixtures (not fixtures/projects,
    whose modules import each other: see test_a_project_file_as_check_sees_it), the sample."""
    out = [[SAMPLE]]
    fixtures = sorted(FIXTURES.glob("*.py"))
    if fixtures:
        out.insert(0, fixtures)
    return out


def _rel(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


def _flake8(*args, cwd=ROOT):
    # --isolated: no user or project [flake8] config; -j1: no worker processes.
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "-j1", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    got = set()
    for line in proc.stdout.splitlines():
        m = LINE_RE.match(line)
        if m:
            got.add((os.path.normpath(m["path"]), int(m["row"]), int(m["col"]), m["code"], m["msg"]))
    return got


def _synclint(*args, cwd=ROOT):
    proc = subprocess.run(
        [sys.executable, "-m", "synclint", "check", "--no-cache", "--output-format", "json", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1, 2), proc.stderr
    return {
        (os.path.normpath(d["filename"]), d["location"]["row"], d["location"]["column"], d["code"], d["message"])
        for d in json.loads(proc.stdout)
    }


@pytest.mark.parametrize("target", _targets(), ids=lambda p: p[0].parent.name)
def test_select_syn_matches_check_select_all(target):
    """An explicit `--select=SYN` overrides flake8's default ignore list, so it is
    compared with `--select ALL` (every rule, off-by-default ones included)."""
    rel = _rel(target)
    expected = _synclint(*rel, "--select", "ALL")
    assert expected, "the target should hold findings"
    got = _flake8("--select=SYN", *rel)
    assert sorted(got) == sorted(expected)


@pytest.mark.parametrize("target", _targets(), ids=lambda p: p[0].parent.name)
def test_plain_flake8_matches_default_check(target):
    """Without --select, rules that are off by default stay off (extend_default_ignore)."""
    rel = _rel(target)
    expected = _synclint(*rel)
    got = {t for t in _flake8(*rel) if t[3].startswith("SYN")}
    assert sorted(got) == sorted(expected)


def test_a_project_file_as_check_sees_it():
    """flake8 lints one file at a time; like `synclint check <file>`, it reads the project
    modules that file imports (their returns, classes, values). Each file of each
    two-module fixture project gets the same findings both ways."""
    projects = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir()) if (FIXTURES / "projects").is_dir() else []
    files = [f for p in projects for f in sorted(p.glob("*.py"))]
    if not files:
        pytest.skip("no fixture projects")
    from synclint.registry import all_rules
    from synclint.runner import check_files

    rels = [str(f.relative_to(ROOT)) for f in files]
    got = _flake8("--select=SYN", *rels)  # one flake8 run: it lints file by file anyway
    expected = set()
    for rel in rels:  # `synclint check <file>`, in this process (faster than 80 runs)
        for f in check_files([str(ROOT / rel)], all_rules()).findings:
            if not f.suppressed:
                expected.add((os.path.normpath(rel), f.row, f.column, f.code, f.message))
    assert expected, "the projects should hold findings"
    assert sorted(got) == sorted(expected)


def test_hot_only_option_from_flake8_config(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nsynclint-hot-only = true\nselect = SYN\n")
    src = (SAMPLE / "train.py").read_text(encoding="utf-8")
    (tmp_path / "train.py").write_text(src, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "flake8", "-j1", "train.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    got = {(int(m["row"]), int(m["col"])) for m in map(LINE_RE.match, proc.stdout.splitlines()) if m}
    expected = {(r, c) for _, r, c, _, _ in _synclint("--hot-only", "train.py", cwd=tmp_path)}
    assert got == expected and got  # hot ones only
    assert len(got) < len(_synclint("train.py", cwd=tmp_path))


def test_unparsable_file_is_flake8s_e999(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\nx = torch.ones(3, device='cuda')\ndef f(:\n    x.item()\n")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "-j1", "--select=SYN,E999", "bad.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "E999" in proc.stdout and "SYN" not in proc.stdout, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_plugin_is_registered():
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True, timeout=120)
    assert "synclint" in proc.stdout


def test_off_by_default_rules_use_flake8_default_ignore(monkeypatch, capsys):
    """Real flake8 option handling, in process, with SYN101 declared off by default."""
    from flake8.main import cli

    import synclint.flake8_plugin as plugin

    monkeypatch.setattr(plugin, "_off_by_default_codes", lambda: ["SYN101"])
    target = str(SAMPLE / "train.py")

    def run(*args):
        capsys.readouterr()
        cli.main(["--isolated", "-j1", *args, target])  # returns the exit code
        return [l for l in capsys.readouterr().out.splitlines() if " SYN101 " in l]

    assert run() == []  # default ignore
    assert run("--extend-select=SYN101")  # opted in
    assert run("--select=SYN")  # an explicit select wins over a default ignore
    assert run("--select=SYN", "--extend-ignore=SYN101") == []
