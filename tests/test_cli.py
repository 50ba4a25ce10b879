"""The command line as users meet it: exit codes, selection, noqa, config, errors, cache."""

import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.frontends.cli import main
from synclint.testing import run_cli as run

HAZARD = textwrap.dedent(
    """\
    import torch

    x = torch.ones(3, device="cuda")
    for _ in range(3):
        v = x.sum().item()
    """
)
CLEAN = "import torch\nx = torch.ones(3)\nprint(x.shape)\n"




def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def findings_json(result):
    return json.loads(result.stdout)


def test_clean_tree_exits_0(tmp_path):
    write(tmp_path / "ok.py", CLEAN)
    r = run(["check", "."], tmp_path)
    assert r.exit_code == 0
    assert "All checks passed" in r.stdout


def test_findings_exit_1_with_compiler_style_text(tmp_path):
    write(tmp_path / "train.py", HAZARD)
    r = run(["check", "train.py", "--select", "SYN101"], tmp_path)
    assert r.exit_code == 1
    first = r.stdout.splitlines()[0]
    assert first.startswith("train.py:5:9: SYN101 [hot]")
    assert "^" in r.stdout  # caret under the flagged code
    assert "Found 1 finding (1 hot, 0 cold)" in r.stdout


def test_exit_zero(tmp_path):
    write(tmp_path / "train.py", HAZARD)
    assert run(["check", "train.py", "--exit-zero"], tmp_path).exit_code == 0


def test_json_contract(tmp_path):
    write(tmp_path / "train.py", HAZARD)
    r = run(["check", "train.py", "--select", "SYN101", "--output-format", "json"], tmp_path)
    assert r.exit_code == 1
    (f,) = findings_json(r)
    assert set(f) >= {"code", "name", "message", "filename", "location", "end_location", "hot", "fix", "url"}
    assert f["code"] == "SYN101" and f["name"] == "tensor-item"
    assert f["location"] == {"row": 5, "column": 9}
    assert f["end_location"] == {"row": 5, "column": 23}
    assert f["hot"] is True and f["fix"] is None
    assert f["filename"] == "train.py"


def test_bad_files_report_one_line_each_and_others_are_checked(tmp_path):
    write(tmp_path / "a_syntax.py", "import torch\ndef f(:\n")
    (tmp_path / "b_latin1.py").write_bytes(b"import torch\nname = '\xe9'\n")
    write(tmp_path / "c_train.py", HAZARD)
    r = run(["check", ".", "--select", "SYN101", "--output-format", "json"], tmp_path)
    assert r.exit_code == 2
    errors = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(errors) == 2
    assert any("a_syntax.py: cannot parse" in e and "line 2" in e for e in errors)
    assert any("b_latin1.py: not UTF-8" in e for e in errors)
    assert "Traceback" not in r.output
    assert [f["filename"] for f in findings_json(r)] == ["c_train.py"]


def test_syntax_error_in_file_without_torch_is_still_reported(tmp_path):
    write(tmp_path / "util.py", "def f(:\n")
    r = run(["check", "util.py"], tmp_path)
    assert r.exit_code == 2
    assert "util.py: cannot parse" in r.stderr


def test_missing_path_is_a_usage_error(tmp_path):
    r = run(["check", "nope.py"], tmp_path)
    assert r.exit_code == 2
    assert "nope.py: no such file or directory" in r.stderr


@pytest.mark.parametrize("selector", ["SYN101", "SYN1", "tensor-item", "syn101"])
def test_select_by_code_prefix_or_name(tmp_path, selector):
    write(tmp_path / "train.py", HAZARD)
    r = run(["check", "train.py", "--select", selector, "--output-format", "json"], tmp_path)
    assert [f["code"] for f in findings_json(r)] == ["SYN101"]


def test_ignore_removes_rule(tmp_path):
    write(tmp_path / "train.py", HAZARD)
    r = run(["check", "train.py", "--select", "SYN1", "--ignore", "tensor-item"], tmp_path)
    assert r.exit_code == 0


def test_unknown_selector_is_a_clear_usage_error(tmp_path):
    write(tmp_path / "train.py", HAZARD)
    r = run(["check", "train.py", "--select", "SYN999"], tmp_path)
    assert r.exit_code == 2
    assert "unknown rule selector 'SYN999'" in r.stderr


@pytest.mark.parametrize(
    "comment,suppressed",
    [("# noqa", True), ("# noqa: SYN101", True), ("# noqa:SYN1", True),
     ("# noqa: SYN2", False), ("# noqa: E501", False), ("# NOQA: syn101", True)],
)
def test_noqa(tmp_path, comment, suppressed):
    src = HAZARD.replace("v = x.sum().item()", f"v = x.sum().item()  {comment}")
    write(tmp_path / "train.py", src)
    r = run(["check", "train.py", "--select", "SYN101"], tmp_path)
    assert (r.exit_code == 0) is suppressed


def test_noqa_on_first_or_last_line_of_multiline_statement(tmp_path):
    for where in ("first", "last"):
        src = textwrap.dedent(
            """\
            import torch
            x = torch.ones(3, device="cuda")
            for _ in range(3):
                v = max(  {first}
                    1.0,
                    x.sum().item(),
                )  {last}
            """
        ).format(first="# noqa: SYN101" if where == "first" else "", last="# noqa: SYN101" if where == "last" else "")
        write(tmp_path / "m.py", src)
        r = run(["check", "m.py", "--select", "SYN101"], tmp_path)
        assert r.exit_code == 0, (where, r.stdout)


def test_pyproject_config(tmp_path):
    write(tmp_path / "pyproject.toml", textwrap.dedent(
        """\
        [tool.synclint]
        select = ["SYN1"]
        exclude = ["generated/"]
        per-file-ignores = { "scripts/*.py" = ["SYN101"] }
        """
    ))
    write(tmp_path / "src" / "train.py", HAZARD)
    write(tmp_path / "generated" / "train.py", HAZARD)
    write(tmp_path / "scripts" / "one.py", HAZARD)
    r = run(["check", ".", "--output-format", "json"], tmp_path)
    assert sorted(f["filename"] for f in findings_json(r)) == ["src/train.py"]


def test_pyproject_hot_only(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.synclint]\nhot-only = true\n")
    write(tmp_path / "t.py", "import torch\nx = torch.ones(3, device='cuda')\nv = x.item()\n")
    assert run(["check", "."], tmp_path).exit_code == 0
    write(tmp_path / "pyproject.toml", "[tool.synclint]\n")
    assert run(["check", "."], tmp_path).exit_code == 1


def test_hot_only_flag(tmp_path):
    write(tmp_path / "t.py", "import torch\nx = torch.ones(3, device='cuda')\nv = x.item()\n")
    assert run(["check", "t.py", "--hot-only"], tmp_path).exit_code == 0


def test_unknown_config_key_is_an_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.synclint]\nselekt = ['SYN1']\n")
    write(tmp_path / "t.py", CLEAN)
    r = run(["check", "."], tmp_path)
    assert r.exit_code == 2
    assert "unknown key 'selekt'" in r.stderr


def test_explicit_config_file(tmp_path):
    write(tmp_path / "cfg.toml", "[tool.synclint]\nignore = ['SYN101']\n")
    write(tmp_path / "t.py", HAZARD)
    assert run(["check", "t.py", "--config", "cfg.toml"], tmp_path).exit_code == 0


def test_gitignore_is_respected(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "ignored/\n*_gen.py\n")
    write(tmp_path / "ignored" / "t.py", HAZARD)
    write(tmp_path / "x_gen.py", HAZARD)
    write(tmp_path / "kept.py", HAZARD)
    r = run(["check", ".", "--select", "SYN101", "--output-format", "json"], tmp_path)
    assert [f["filename"] for f in findings_json(r)] == ["kept.py"]


def test_cache_gives_same_output_and_sees_changes(tmp_path):
    p = write(tmp_path / "t.py", HAZARD)
    first = run(["check", "t.py", "--output-format", "json"], tmp_path)
    assert (tmp_path / ".synclint_cache").is_dir()
    second = run(["check", "t.py", "--output-format", "json"], tmp_path)
    assert first.stdout == second.stdout
    p.write_text(CLEAN)
    assert run(["check", "t.py"], tmp_path).exit_code == 0


def test_statistics(tmp_path):
    write(tmp_path / "t.py", HAZARD + "w = x.item()\n")
    r = run(["check", "t.py", "--select", "SYN101", "--statistics"], tmp_path)
    assert r.exit_code == 1
    assert "2  SYN101  tensor-item" in r.stdout
    assert "1 hot" in r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("Found 2 findings (1 hot, 1 cold) in 1 file")


def test_parallel_run_matches_serial(tmp_path):
    for i in range(12):
        write(tmp_path / f"m{i}.py", HAZARD)
    serial = run(["check", ".", "--no-cache", "-j", "1", "--output-format", "json"], tmp_path)
    parallel = run(["check", ".", "--no-cache", "-j", "2", "--output-format", "json"], tmp_path)
    assert serial.stdout == parallel.stdout
    assert len(findings_json(serial)) >= 12


def test_rules_json_lists_every_rule():
    from synclint.registry import all_rules

    r = CliRunner().invoke(main, ["rules", "--output-format", "json"])
    rows = json.loads(r.stdout)
    assert [x["code"] for x in rows] == [r.CODE for r in all_rules()]
    for row in rows:
        assert {"code", "name", "family", "summary", "default", "fix"} <= set(row)
        assert isinstance(row["default"], bool)


def test_explain_shows_the_rule_page():
    r = CliRunner().invoke(main, ["explain", "SYN101"])
    assert r.exit_code == 0
    assert "# tensor-item (SYN101)" in r.stdout
    assert "## Why is this bad?" in r.stdout and "## Example" in r.stdout
    bad = CliRunner().invoke(main, ["explain", "SYN000"])
    assert bad.exit_code == 2
    # a FILE:LINE whose file is not there says so, not "unknown rule"
    missing = CliRunner().invoke(main, ["explain", "nowhere/train.py:12"])
    assert missing.exit_code == 2 and "nowhere/train.py: no such file" in missing.stderr


def test_explain_shows_each_measured_figure_with_its_interval():
    import re

    from synclint.bench.report import ci_label, measured

    m = measured("SYN101")
    if m is None:
        pytest.skip("no shipped bench results")
    line = next(ln for ln in CliRunner().invoke(main, ["explain", "SYN101"]).stdout.splitlines()
                if ln.startswith("Measured on"))
    lo, hi = m["ci"]
    label = ci_label(m["regimes"].get(m["regime"]) or m)  # "95% CI" in one run, "99% over 3 runs" across runs
    assert f"({m['speedup']:.2f}x, {label} {lo:.2f}–{hi:.2f}x, {m['verdict']})" in line
    for regime in m.get("regimes", {}):  # both loops are shown, each with its interval
        assert re.search(rf"{regime}: [\d.]+x \((95% CI|\d+% over \d+ runs) [\d.]+–[\d.]+x", line) or regime == m["regime"]


def test_help_teaches():
    r = CliRunner().invoke(main, ["check", "--help"])
    assert "Exit status" in r.stdout and "--select" in r.stdout and "Examples" in r.stdout


FIXABLE = textwrap.dedent(
    """\
    import torch

    device = "cuda"
    for _ in range(2):
        buf = torch.zeros(8).to(device)
        noise = torch.randn(8).to(device)
    """
)


def test_diff_shows_safe_fixes_and_writes_nothing(tmp_path):
    p = write(tmp_path / "f.py", FIXABLE)
    r = run(["check", "f.py", "--select", "SYN301", "--diff"], tmp_path)
    assert r.exit_code == 1
    assert "+    buf = torch.zeros(8, device=device)" in r.stdout
    assert "randn" not in "".join(l for l in r.stdout.splitlines(True) if l.startswith("+"))  # unsafe: not without --unsafe-fixes
    assert p.read_text() == FIXABLE


def test_fix_applies_safe_then_unsafe_fixes(tmp_path):
    p = write(tmp_path / "f.py", FIXABLE)
    r = run(["check", "f.py", "--select", "SYN301", "--fix"], tmp_path)
    assert r.exit_code == 1  # the unsafe one remains
    text = p.read_text()
    assert "torch.zeros(8, device=device)" in text and "torch.randn(8).to(device)" in text
    r = run(["check", "f.py", "--select", "SYN301", "--fix", "--unsafe-fixes"], tmp_path)
    assert r.exit_code == 0
    assert "torch.randn(8, device=device)" in p.read_text()


def test_fix_never_writes_code_that_does_not_parse(tmp_path, monkeypatch):
    import synclint.fixes as fixes

    p = write(tmp_path / "f.py", FIXABLE)
    real = fixes.apply_edits
    monkeypatch.setattr(fixes, "apply_edits", lambda text, f, unsafe: (real(text, f, unsafe)[0] + "def (:\n", 1))
    r = run(["check", "f.py", "--select", "SYN301", "--fix"], tmp_path)
    assert r.exit_code == 2
    assert "does not parse" in r.stderr
    assert p.read_text() == FIXABLE


def test_named_files_are_checked_unless_force_exclude(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.synclint]\nexclude = ["generated/"]\n')
    write(tmp_path / "generated" / "t.py", HAZARD)
    assert run(["check", "generated/t.py"], tmp_path).exit_code == 1
    r = run(["check", "--force-exclude", "generated/t.py"], tmp_path)
    assert r.exit_code == 0 and "0 files checked" in r.stdout


def test_cold_findings_in_tests_are_left_out_unless_asked(tmp_path):
    """A test asserts on values (`.item()` once) on purpose: in test files (pytest's names)
    only hot findings are reported, unless `tests-hot-only = false`."""
    body = ("import torch\ndef test_mean():\n    x = torch.ones(3, device='cuda')\n    assert x.mean().item() == 1\n"
            "    for _ in range(3):\n        assert x.sum().item() == 3\n")
    write(tmp_path / "tests" / "test_model.py", body)
    write(tmp_path / "train.py", "import torch\nx = torch.ones(3, device='cuda')\nv = x.mean().item()\n")
    write(tmp_path / "pyproject.toml", "[tool.synclint]\n")
    out = json.loads(run(["check", ".", "--no-cache", "--output-format", "json"], tmp_path).output)
    got = sorted((Path(d["filename"]).name, d["location"]["row"], d["hot"], d["rate"]) for d in out)
    # the test's line 4 (once) is left out; its loop runs per test, not per training step
    assert got == [("test_model.py", 6, False, "test-loop"), ("train.py", 3, False, "once")]
    write(tmp_path / "pyproject.toml", "[tool.synclint]\ntests-hot-only = false\n")
    out = json.loads(run(["check", ".", "--no-cache", "--output-format", "json"], tmp_path).output)
    assert sorted((Path(d["filename"]).name, d["location"]["row"]) for d in out) == [
        ("test_model.py", 4), ("test_model.py", 6), ("train.py", 3)]


def test_test_code_is_never_a_training_step(tmp_path):
    """A toy module's `forward` in a test, a training loop a test runs: per test, tagged cold
    with rate `test-loop` however the file is read (the package, the file alone, stdin); the
    product code the test calls keeps its own rate."""
    write(tmp_path / "model.py", "import torch\ndef helper(x):\n    return x.sum().item()\n")
    write(tmp_path / "tests" / "test_train.py", (
        "import torch\nfrom model import helper\n"
        "class Toy(torch.nn.Module):\n    def forward(self, x):\n        return x[x > 0]\n"
        "def test_train():\n    x = torch.ones(3, device='cuda')\n    for _ in range(5):\n"
        "        helper(x)\n        print(x.sum().item())\n"))
    write(tmp_path / "pyproject.toml", "[tool.synclint]\n")

    def found(args, **kw):
        out = json.loads(run(["check", *args, "--no-cache", "--output-format", "json"], tmp_path, **kw).output)
        return sorted((Path(d["filename"]).name, d["location"]["row"], d["hot"], d["rate"]) for d in out)

    in_test = [("test_train.py", 5, False, "test-loop"), ("test_train.py", 10, False, "test-loop")]
    assert found(["."]) == [("model.py", 3, False, "once"), *in_test]
    assert found(["tests/test_train.py"]) == in_test
    text = (tmp_path / "tests" / "test_train.py").read_text()
    assert found(["--stdin-filename", "tests/test_train.py", "-"], input=text) == [
        ("test_train.py", r, False, rate) for _, r, _, rate in in_test]


@pytest.mark.parametrize("main, reported", [
    # faster-rcnn's `test_net.py`: a script that evaluates a model, named like a test
    ("if __name__ == '__main__':\n    run()\n", True),
    # TCN's `add_test.py`: arguments parsed at module level, the script runs on import
    ("import argparse\nargs = argparse.ArgumentParser().parse_args()\nrun()\n", True),
    ("args, _ = parser.parse_known_args()\nrun()\n", True),
    # nothing pytest would collect, though parsed only when called, or with no entry at all
    # (SlowFast's `tools/test_net.py`, imported by `run_net.py`)
    ("def options():\n    return parser.parse_args()\nrun()\n", True),
    ("run()\n", True),
    # a function named just `test` evaluates a model (TCN's `def test():`)
    ("def test(cfg):\n    run()\n", True),
    # arguments parsed at import: a script, whatever it defines
    ("import argparse\nargs = argparse.ArgumentParser().parse_args()\ndef test_run():\n    run()\n", True),
    # near-misses: a test module, with or without a `__main__` block
    ("def test_run():\n    run()\nif __name__ == '__main__':\n    test_run()\n", False),
    ("import unittest\nif __name__ == '__main__':\n    unittest.main()\n", False),
    ("class TestRun:\n    pass\n", False),
])
def test_a_script_named_like_a_test_is_not_a_test(tmp_path, main, reported):
    write(tmp_path / "test_net.py", "import torch\nx = torch.ones(3, device='cuda')\ndef run():\n    print(x.mean().item())\n" + main)
    write(tmp_path / "pyproject.toml", "[tool.synclint]\n")
    out = json.loads(run(["check", ".", "--no-cache", "--output-format", "json"], tmp_path).output)
    assert bool(out) is reported


def test_synclints_own_cache_is_not_counted_as_a_skipped_folder(tmp_path):
    (tmp_path / "train.py").write_text(CLEAN)
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "x.py").write_text(CLEAN)
    first = run(["check", "."], tmp_path)
    assert (tmp_path / ".synclint_cache").is_dir()
    again = run(["check", "-v", "."], tmp_path)
    assert "1 skipped" in first.output and "1 skipped" in again.output  # venv/, counted and named
    assert ".synclint_cache" not in again.output + (again.stderr if again.stderr_bytes is not None else "")


def test_a_word_for_a_rules_page_points_at_explain():
    r = CliRunner().invoke(main, ["rule", "SYN105"])
    assert r.exit_code == 2 and "`synclint explain SYN105`" in r.output
    r = CliRunner().invoke(main, ["chek", "."])  # other typos: click's nearest command
    assert r.exit_code == 2 and "Did you mean 'check'?" in r.output


def test_a_checks_process_ends_without_teardown_and_another_commands_with_it(tmp_path):
    """`check` ends with os._exit once its output is flushed (the interpreter's teardown of
    LibCST's classes costs more than a small check); the flag is the run's, not a module's."""
    import subprocess
    import sys

    (tmp_path / "ok.py").write_text("x = 1\n")
    prog = ("import atexit, sys; atexit.register(lambda: print('TEARDOWN', file=sys.stderr)); "
            "sys.argv = ['synclint'] + sys.argv[1:]; from synclint.frontends.cli import main; main()")
    env = {**os.environ, "SYNCLINT_NO_DAEMON": "1"}
    check = subprocess.run([sys.executable, "-c", prog, "check", "--no-cache", "ok.py"], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert check.returncode == 0 and "All checks passed" in check.stdout and "TEARDOWN" not in check.stderr
    listing = subprocess.run([sys.executable, "-c", prog, "rules"], cwd=tmp_path, env=env, capture_output=True,
                             text=True)
    assert listing.returncode == 0 and "TEARDOWN" in listing.stderr
