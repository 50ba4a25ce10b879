"""One pipeline (synclint/run/pipeline.py) under `check`, `baseline` and the flake8 plugin: a
file's error is decided once and reads the same through each of them."""

import ast

import pytest

from synclint.testing import run_cli

GOOD = "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = x.sum().item()\n"
TIMEOUT = "analysis took longer than 1 s; skipped (raise `file-timeout` in [tool.synclint] to allow more)"


@pytest.fixture
def slow_bad_py(tmp_path, monkeypatch):
    """good.py and bad.py (the same code) in a project with `file-timeout = 1`; SYN101 spins
    on bad.py (for at most 30 s), an analysis past the budget."""
    from synclint.testing import spin_on

    spin_on(monkeypatch, "bad.py")
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\nfile-timeout = 1\n")
    for name in ("good.py", "bad.py"):
        (tmp_path / name).write_text(GOOD)
    return tmp_path


def test_a_file_error_reads_the_same_through_check_baseline_and_flake8(slow_bad_py, monkeypatch):
    d = slow_bad_py
    check = run_cli(["check", "--no-cache", "--no-source", "bad.py", "good.py"], d)
    assert check.exit_code == 2
    assert f"synclint: error: bad.py: {TIMEOUT}" in check.stderr.splitlines()
    assert "good.py:4:9: SYN101" in check.stdout

    baseline = run_cli(["baseline", "--no-cache", "bad.py", "good.py"], d)
    assert baseline.exit_code == 2
    assert f"synclint: error: bad.py: {TIMEOUT}" in baseline.stderr.splitlines()
    assert "Recorded 1 finding from 2 files" in baseline.stderr

    from synclint.frontends.flake8_plugin import Plugin

    monkeypatch.chdir(d)
    got = [(row, text) for row, _col, text, _t in Plugin(None, GOOD.splitlines(True), "bad.py").run()]
    assert got == [(1, f"SYN000 {TIMEOUT}")]
    got = [(row, text) for row, _col, text, _t in Plugin(None, GOOD.splitlines(True), "good.py").run()]
    assert [(row, text.split()[0]) for row, text in got] == [(4, "SYN101")]


def test_a_timeout_is_not_cached(slow_bad_py, monkeypatch):
    """The budget says how long this run allowed, not what the file is: the next run with
    more time analyses the file again."""
    d = slow_bad_py
    assert run_cli(["check", "--no-source", "bad.py", "good.py"], d).exit_code == 2
    (d / "pyproject.toml").write_text("[tool.synclint]\nfile-timeout = 100\n")
    monkeypatch.undo()  # bad.py analyses quickly now
    again = run_cli(["check", "--no-source", "bad.py", "good.py"], d)
    assert again.exit_code == 1, again.output
    assert "bad.py:4:9: SYN101" in again.stdout


@pytest.mark.parametrize("value", ["0", "-1", '"10"', "true"])
def test_file_timeout_must_be_a_positive_number(tmp_path, value):
    (tmp_path / "pyproject.toml").write_text(f"[tool.synclint]\nfile-timeout = {value}\n")
    (tmp_path / "good.py").write_text(GOOD)
    r = run_cli(["check", "good.py"], tmp_path)
    assert r.exit_code == 2
    assert r.stderr.strip() == (f"synclint: error: {(tmp_path / 'pyproject.toml').resolve()}: [tool.synclint] "
                                f"file-timeout must be a positive number of seconds (got {ast.literal_eval(value.replace('true', 'True'))!r})")


