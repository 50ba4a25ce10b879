"""The flake8 plugin, run through the real flake8: `flake8 --select=SYN PATHS` reports what
`synclint check PATHS` reports (the same files, rows, columns and codes, cross-module
findings included), with `[tool.synclint]` honoured and flake8's own options on top."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("flake8")

from synclint.testing import run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SAMPLE = ROOT / "tests" / "data" / "sample"
# path:row:col: CODE message  (flake8's default format)
LINE_RE = re.compile(r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>SYN\d{3}) (?P<msg>.*)$")


@pytest.fixture
def flake8(monkeypatch, tmp_path):
    """flake8 in this process (its start and imports are most of a small run), in a folder:
    returns {(path, row, column, code)}. Its options are the plugin's class state: each
    run replaces them and the test's end puts back what was there."""
    from flake8.main import cli

    from synclint.frontends.flake8_plugin import Plugin

    monkeypatch.setattr(Plugin, "flake8_run", None, raising=False)
    out = tmp_path / "flake8.out"

    def run(cwd, *args):
        monkeypatch.chdir(cwd)
        # --isolated: no [flake8] configuration of the machine's; -j1: no worker processes
        code = cli.main(["--isolated", "-j1", f"--output-file={out}", *args])
        assert code in (0, 1), out.read_text()
        got = set()
        for line in out.read_text().splitlines():
            m = LINE_RE.match(line)
            if m:
                got.add((os.path.normpath(m["path"]), int(m["row"]), int(m["col"]), m["code"]))
        return got

    return run


def _check(cwd, *args):
    r = run_cli(["check", "--output-format", "json", *args], cwd)
    assert r.exit_code in (0, 1), r.output
    return {(os.path.normpath(d["filename"]), d["location"]["row"], d["location"]["column"], d["code"])
            for d in json.loads(r.stdout)}


FIXTURE_CONFIG = """\
[tool.synclint]
extend-select = ["SYN901"]
ignore = ["SYN501", "tensor-tolist"]
exclude = ["fixtures/projects/unique-call"]

[tool.synclint.per-file-ignores]
"fixtures/projects/tensor-item/*" = ["SYN1"]
"""


def test_flake8_agrees_with_check_on_the_fixtures_with_the_projects_configuration(tmp_path, flake8):
    """All of fixtures/, the multi-module projects included: what crosses modules (a
    helper's GPU return, a caller's GPU argument, heat from another module's loop) is
    found by flake8 too, and nothing check leaves out appears. flake8 runs after check,
    on check's cache of module summaries (the files a project forces past the prefilter
    keep their findings)."""
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    (tmp_path / "pyproject.toml").write_text(FIXTURE_CONFIG)
    expected = _check(tmp_path, "fixtures")
    got = flake8(tmp_path, "--select=SYN", "fixtures")
    assert sorted(got ^ expected) == []
    codes = {c for *_, c in expected}
    assert "SYN901" in codes and not codes & {"SYN501", "SYN102"}  # extend-select, ignore (a code, a name)
    assert not [p for p, *_ in expected if "unique-call" in p]  # exclude
    assert not [c for p, *_, c in expected if "tensor-item" in p and c.startswith("SYN1")]  # per-file-ignores
    # found only with the project's other modules: shapes.py's helper is given CUDA
    # lengths by train.py; a forced file (it never names torch) gets its findings
    assert ("fixtures/projects/tensor-as-python-number/shapes.py", 13, 12, "SYN110") in got
    assert ("fixtures/projects/apex-amp-scale-loss/steps.py", 5, 10, "SYN118") in got


STALE = textwrap.dedent("""\
    import torch

    x = torch.ones(3, device="cuda")
    for _ in range(3):
        a = x.sum().item()
        b = x.sum()  # noqa: SYN101
        c = x.nonzero()
        torch.cuda.synchronize()
""")


@pytest.mark.parametrize("config, flake8_args, check_args", [
    ("", [], []),  # flake8's defaults: synclint's (SYN901 is off by default)
    ("", ["--select=SYN"], []),  # turning the plugin on chooses no rules
    ("", ["--extend-select=SYN901"], ["--extend-select", "SYN901"]),
    ("", ["--select=SYN1"], ["--select", "SYN1"]),
    ("", ["--select=SYN", "--extend-ignore=SYN101"], ["--ignore", "SYN101"]),
    ("", ["--ignore=E501"], []),  # replaces flake8's default ignore list: no opt-in rule comes on
    ("select = ['SYN2', 'SYN901']", ["--select=SYN"], []),
    ("select = ['SYN2']", ["--extend-select=SYN101"], ["--extend-select", "SYN101"]),
    ("ignore = ['SYN203']", ["--select=SYN2,SYN101"], ["--select", "SYN2,SYN101"]),  # the config's ignore wins
])
def test_flake8_options_go_on_top_of_the_configuration_as_checks_command_line_does(
        tmp_path, flake8, config, flake8_args, check_args):
    (tmp_path / "train.py").write_text(STALE)
    if config:
        (tmp_path / "pyproject.toml").write_text(f"[tool.synclint]\n{config}\n")
    expected = _check(tmp_path, "--no-cache", *check_args, ".")
    assert expected and flake8(tmp_path, *flake8_args, ".") == expected


def test_a_broken_configuration_is_one_line_per_file(tmp_path, flake8):
    (tmp_path / "train.py").write_text(STALE)
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\nselect = ['SYN999']\n")
    assert flake8(tmp_path, "--select=SYN", "train.py") == {("train.py", 1, 1, "SYN000")}


def test_stdin_is_checked_as_the_file_it_stands_for(tmp_path, monkeypatch, flake8):
    """An editor's buffer (`--stdin-display-name`): its text, with the modules it imports."""
    import io

    helpers = "import torch\n\ndef gpu_ones(n):\n    return torch.ones(n, device='cuda')\n"
    buffer = "from helpers import gpu_ones\n\nfor _ in range(3):\n    v = gpu_ones(3).sum().item()\n"
    saved = tmp_path / "saved"  # the buffer saved: what it is checked as
    saved.mkdir()
    (saved / "helpers.py").write_text(helpers)
    (saved / "train.py").write_text(buffer)
    expected = _check(saved, "--no-cache", "train.py")
    assert [c for *_, c in expected] == ["SYN101"]  # found through helpers.py's return
    editing = tmp_path / "editing"
    editing.mkdir()
    (editing / "helpers.py").write_text(helpers)
    (editing / "train.py").write_text("")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(buffer.encode())))
    assert flake8(editing, "--stdin-display-name=train.py", "-") == expected


def test_hot_only_option_from_flake8_config(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nsynclint-hot-only = true\nselect = SYN\n")
    src = (SAMPLE / "train.py").read_text(encoding="utf-8")
    (tmp_path / "train.py").write_text(src, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "flake8", "-j1", "train.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    got = {(int(m["row"]), int(m["col"])) for m in map(LINE_RE.match, proc.stdout.splitlines()) if m}
    expected = {(r, c) for _, r, c, _ in _check(tmp_path, "--no-cache", "--hot-only", "train.py")}
    assert got == expected and got  # hot ones only
    assert len(got) < len(_check(tmp_path, "--no-cache", "train.py"))


def test_unparsable_file_is_flake8s_e999(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\nx = torch.ones(3, device='cuda')\ndef f(:\n    x.item()\n")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "-j1", "--select=SYN,E999", "bad.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "E999" in proc.stdout and "SYN" not in proc.stdout, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_plugin_is_registered():
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True, timeout=120)
    assert "synclint" in proc.stdout
