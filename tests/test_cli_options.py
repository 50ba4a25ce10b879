"""The `check` options a Ruff or flake8 user reaches for (issue 38): --exclude and
--extend-exclude, --output-file, --quiet, --silent, --show-settings, --watch; paths printed
without `./`; help examples that are true; and the configuration's errors and edge cases of
issue 37 that the bad-input matrix (docs/reliability.md) does not show."""

import json
import os
import re
import shlex
import sys
import textwrap
import threading
from pathlib import Path

import click
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
        y = torch.zeros(3).cuda()
    """
)


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def files_reported(r):
    return sorted({f["filename"] for f in json.loads(r.stdout)})


@pytest.fixture
def tree(tmp_path):
    """src/a.py, src/gen/g.py (excluded by the configuration) and other/o.py."""
    write(tmp_path / "pyproject.toml", '[tool.synclint]\nexclude = ["gen/"]\n')
    for f in ("src/a.py", "src/gen/g.py", "other/o.py"):
        write(tmp_path / f, HAZARD)
    return tmp_path


# --exclude, --extend-exclude: as Ruff's


def test_exclude_replaces_the_configured_list_and_extend_exclude_adds(tree):
    json_out = ["--output-format", "json", "--no-cache"]
    assert files_reported(run(["check", ".", *json_out], tree)) == ["other/o.py", "src/a.py"]
    assert files_reported(run(["check", ".", "--exclude", "other", *json_out], tree)) == ["src/a.py", "src/gen/g.py"]
    assert files_reported(run(["check", ".", "--extend-exclude", "other", *json_out], tree)) == ["src/a.py"]
    assert files_reported(run(["check", ".", "--exclude", "other,gen/", *json_out], tree)) == ["src/a.py"]


def test_command_line_patterns_are_relative_to_the_current_folder(tree):
    # anchored (a slash inside): relative to src/, where the command runs, not to the config's folder
    r = run(["check", ".", "--extend-exclude", "a.py/", "--extend-exclude", "/a.py", "--output-format", "json"],
            tree / "src")
    assert r.exit_code == 0, r.output  # a.py excluded; gen/ by the configuration
    r = run(["check", ".", "--extend-exclude", "/src/a.py", "--output-format", "json"], tree / "src")
    assert files_reported(r) == ["a.py"]  # (no src/ below src/)


def test_an_invalid_command_line_pattern_is_a_usage_error(tree):
    r = run(["check", ".", "--exclude", "gen/[z-a]"], tree)
    assert (r.exit_code, r.stderr) == (2, "synclint: error: --exclude: invalid pattern 'gen/[z-a]': bad character range z-a\n")


def test_baseline_takes_the_same_exclusions(tree):
    r = run(["baseline", ".", "--extend-exclude", "other", "-o", "b.json"], tree)
    assert r.exit_code == 0, r.output
    assert {f["file"] for f in json.loads((tree / "b.json").read_text())["findings"]} == {"src/a.py"}


# --output-file, --quiet, --silent


def test_output_file_holds_the_report_and_stdout_nothing(tree):
    (tree / "out.txt").write_text("an old report\n")
    r = run(["check", "src", "-o", "out.txt", "--no-source"], tree)
    assert (r.exit_code, r.stdout) == (1, "")
    text = (tree / "out.txt").read_text()
    assert text.startswith("src/a.py:5:9: SYN101 [hot]") and "Found 2 findings" in text and "\x1b[" not in text
    assert not [p for p in os.listdir(tree) if p.startswith(".synclint-")]  # no temp file left
    r = run(["check", "src", "--output-file", "out.json", "--output-format", "json"], tree)
    assert [f["code"] for f in json.loads((tree / "out.json").read_text())] == ["SYN101", "SYN301"]


def test_an_output_file_that_cannot_be_written_is_one_line(tree):
    r = run(["check", "src", "-o", "missing/out.json"], tree)
    assert r.exit_code == 2
    assert r.stderr == "synclint: error: missing/out.json: cannot write the report: No such file or directory\n"


def test_quiet_prints_the_findings_only(tree):
    r = run(["check", "src", "-q", "--no-source"], tree)
    assert r.exit_code == 1
    assert r.stdout.splitlines() == [l for l in r.stdout.splitlines() if l.startswith("src/a.py:")] != []
    assert run(["check", "other", "--ignore", "SYN", "--quiet"], tree).stdout == ""  # not "All checks passed!"
    fixed = run(["check", "src/a.py", "--fix", "-q", "--no-source"], tree)
    assert fixed.stderr == "" and fixed.stdout.startswith("src/a.py:5:9: SYN101")  # no "Fixed 1 finding."


def test_silent_prints_nothing_and_the_exit_code_tells(tree):
    write(tree / "src" / "broken.py", "import torch\nx = (\n")
    r = run(["check", "src", "--silent"], tree)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", "")
    r = run(["check", "other", "-s", "--exit-zero"], tree)
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")


# --show-settings


def test_show_settings_names_the_file_and_each_resolved_setting(tree):
    write(tree / "pyproject.toml", '[tool.synclint]\nselect = ["SYN1", "SYN3"]\nexclude = ["gen/"]\nfile-timeout = 60\n')
    r = run(["check", "src", "--show-settings", "--ignore", "SYN301", "--extend-exclude", "other"], tree)
    assert r.exit_code == 0, r.output
    out = r.stdout.splitlines()
    assert out[:2] == ["Resolved settings for: src", f"Settings path: {(tree / 'pyproject.toml').resolve()}"]
    assert 'select = ["SYN1", "SYN3"]' in out and 'ignore = ["SYN301"]' in out and "file-timeout = 60.0" in out
    assert f'exclude = ["gen/"]  # relative to {tree.resolve()}' in out
    assert '    "SYN101",  # tensor-item' in out and '    "SYN302",  # tensor-from-host-data-in-hot-path' in out
    assert '    "SYN301",  # cpu-factory-then-move' not in out
    assert not (tree / ".synclint_cache").exists()  # nothing was checked


def test_show_settings_without_a_configuration(tmp_path):
    r = run(["check", "--show-settings", "--file-timeout", "inf"], tmp_path)
    assert "Settings path: none (no [tool.synclint] found: the defaults)" in r.stdout
    assert "file-timeout = inf  # no limit" in r.stdout


# --watch


def test_watch_checks_again_after_each_change_until_ctrl_c(tmp_path):
    from synclint.frontends.watch import poll, watch

    a = write(tmp_path / "a.py", HAZARD)
    write(tmp_path / ".synclint_cache" / "x.py", "")
    runs = []

    def check_once():
        runs.append(a.read_text().count("\n"))
        if len(runs) == 1:  # a save after the first check; a cache write is no change
            threading.Timer(0.2, lambda: (write(tmp_path / ".synclint_cache" / "x.py", "1"),
                                          a.write_text(HAZARD + "w = 1\n"))).start()
        elif len(runs) == 2:
            raise KeyboardInterrupt  # Ctrl-C
        return 1

    changes = poll([str(tmp_path)], 0.05, roots=[str(tmp_path)])
    assert watch(check_once, [str(tmp_path)], changes=changes, quiet=True) == 0
    assert runs == [6, 7]


def test_watch_hears_a_save_through_watchfiles(tmp_path):
    pytest.importorskip("watchfiles")
    from synclint.frontends.watch import _changes

    a = write(tmp_path / "a.py", "x = 1\n")
    changes = _changes([str(tmp_path)], roots=[str(tmp_path)], extra=set(), say=None)

    def save():
        write(tmp_path / "notes.txt", "not Python")
        a.write_text("x = 2\n")

    threading.Timer(0.3, save).start()
    assert next(changes) == {str(a)}


def test_only_changes_that_can_change_a_check_count(tmp_path):
    from synclint.frontends.watch import relevant

    root = str(tmp_path / "build" / "proj")  # a project may live under a folder named like a tool's
    assert relevant(f"{root}/src/a.py", [root]) and relevant(f"{root}/pyproject.toml", [root])
    assert relevant(f"{root}/.gitignore", [root]) and relevant("/etc/synclint.toml", [root], {"/etc/synclint.toml"})
    assert not relevant(f"{root}/notes.md", [root]) and not relevant(f"{root}/.venv/lib/x.py", [root])
    assert not relevant(f"{root}/.synclint_cache/a.py", [root]) and not relevant("/elsewhere/a.py", [root])


@pytest.mark.parametrize("argv", [["check", "--watch", "."], ["check", "-vw", "src"]])
def test_a_watch_session_runs_here_not_in_a_daemon(argv):
    from synclint.frontends.client import daemon_may_run

    assert not daemon_may_run(argv) and daemon_may_run(["check", "-v", "src"])


def test_watch_refuses_what_cannot_repeat(tmp_path):
    r = CliRunner().invoke(main, ["check", "--watch", "-"], input="")
    assert (r.exit_code, r.stderr) == (2, "synclint: error: --watch cannot be combined with `-` (stdin)\n")


# Paths as printed


def test_paths_print_without_dot_slash(tree):
    r = run(["check", ".", "--no-source"], tree)
    assert "src/a.py:5:9: SYN101" in r.stdout and "./" not in r.stdout
    r = run(["check", "./src//a.py", "--diff"], tree)
    assert r.stdout.startswith("--- a/src/a.py\n+++ b/src/a.py\n")
    write(tree / "venv" / "v.py", HAZARD)
    assert "synclint: skipped venv: a tool or environment folder" in run(["check", "-v", "."], tree).stderr


# Help


def _examples(help_text: str):
    """The command lines in `help_text` (up to a pipe, without the comment after them)."""
    return [shlex.split(l.strip().split("  ")[0].split("|")[0]) for l in help_text.splitlines()
            if l.strip().startswith("synclint ")]


@pytest.mark.parametrize("command", [[], ["check"], ["baseline"], ["rules"]])
def test_help_examples_parse_and_name_what_they_say(command):
    """Each example in --help is a valid command line, and an `--extend-select` example
    adds a rule that is off by default (SYN115, the old example, is on)."""
    from synclint.registry import match

    examples = _examples(CliRunner().invoke(main, [*command, "--help"]).stdout)
    assert examples
    for ex in examples:
        assert ex[0] == "synclint"
        name, *args = ex[1:]
        cmd = main.get_command(click.Context(main), name)
        if cmd is None or name in ("bench", "trace", "lsp"):  # optional commands: their own tests
            continue
        ctx = cmd.make_context(name, list(args), resilient_parsing=False)
        for selector in (s for v in ctx.params.get("extend_select") or () for s in v.split(",")):
            assert all(not r.DEFAULT_ON for r in match(selector)), (ex, selector)
        for key in ("select", "ignore"):
            for v in ctx.params.get(key) or ():
                assert all(match(s) for s in v.split(","))


def test_the_rules_help_says_what_the_listing_shows():
    text = CliRunner().invoke(main, ["--help"]).stdout
    assert "synclint rules                    every rule, its family and default" in text


# torch's warnings (bench, trace)


def test_torch_is_imported_without_its_numpy_warning(tmp_path, monkeypatch, recwarn):
    """A torch built with NumPy support and no NumPy installed warns at import; that line
    came before bench's and trace's own output. Other warnings still pass."""
    from synclint.torch_import import import_torch

    write(tmp_path / "torch.py", textwrap.dedent(
        """\
        import warnings
        warnings.warn("Failed to initialize NumPy: No module named 'numpy' (Triggered internally at x.cpp:84.)",
                      UserWarning)
        warnings.warn("something else", UserWarning)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert import_torch().__file__ == str(tmp_path / "torch.py")
    assert [str(w.message) for w in recwarn] == ["something else"]


# Issue 37: the configuration


def test_select_empty_selects_no_rule_and_is_not_served_from_the_cache(tree):
    assert run(["check", "src"], tree).exit_code == 1  # the default rules (cached)
    write(tree / "pyproject.toml", "[tool.synclint]\nselect = []\n")
    r = run(["check", "src"], tree)
    assert r.exit_code == 0 and "no rule is selected" in r.stderr
    write(tree / "pyproject.toml", '[tool.synclint]\nselect = []\nextend-select = ["SYN301"]\n')
    r = run(["check", "src/a.py", "--output-format", "json"], tree)
    assert [f["code"] for f in json.loads(r.stdout)] == ["SYN301"] and "no rule" not in r.stderr


def test_an_unknown_selector_is_named_with_where_it_was_written(tree):
    write(tree / "pyproject.toml", '[tool.synclint]\nper-file-ignores = { "tests/*" = ["SYN101", "SYN9x"] }\n')
    r = run(["check", "src"], tree)
    assert r.stderr.startswith(f"synclint: error: {(tree / 'pyproject.toml').resolve()}: [tool.synclint] "
                               "per-file-ignores 'tests/*': unknown rule selector 'SYN9x'")
    r = run(["check", "src", "--extend-select", "SYN999"], tree)
    assert r.stderr.startswith("synclint: error: --extend-select: unknown rule selector 'SYN999'")


@pytest.mark.parametrize("toml", ["[tool]\nsynclint.select = ['SYN3']\n", "tool = { synclint = { select = ['SYN3'] } }\n"])
def test_a_configuration_spelled_without_its_table_header_is_found(tree, toml):
    write(tree / "pyproject.toml", toml)
    r = run(["check", "src/a.py", "--output-format", "json"], tree)
    assert [f["code"] for f in json.loads(r.stdout)] == ["SYN301"]


def test_a_pyproject_that_only_mentions_synclint_is_passed_over(tree):
    write(tree / "src" / "pyproject.toml", '[project]\ndependencies = ["synclint"]\n')
    r = run(["check", "src/a.py", "--show-settings"], tree)
    assert f"Settings path: {(tree / 'pyproject.toml').resolve()}" in r.stdout


@pytest.mark.parametrize("value, budget", [("1e10", "inf"), ("999999", "999999.0"), ("inf", "inf")])
def test_a_budget_beyond_what_timers_hold_is_no_budget(tmp_path, value, budget):
    r = run(["check", "--show-settings", "--file-timeout", value], tmp_path)
    assert f"file-timeout = {budget}" in r.stdout


def test_a_named_unreadable_file_does_not_stop_baseline(tmp_path, monkeypatch):
    import synclint.parse.source

    write(tmp_path / "good.py", HAZARD)
    write(tmp_path / "bad.py", HAZARD)
    real_open = open

    def open_(path, *a, **k):
        if os.path.basename(os.fspath(path)) == "bad.py":
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "access", lambda p, m, *a, **k: os.path.basename(os.fspath(p)) != "bad.py")
    monkeypatch.setattr(synclint.parse.source, "open", open_, raising=False)
    r = run(["baseline", "bad.py", "good.py", "-o", "b.json"], tmp_path)
    assert r.exit_code == 2
    assert "synclint: error: bad.py: cannot read: Permission denied" in r.stderr.splitlines()
    assert {f["file"] for f in json.loads((tmp_path / "b.json").read_text())["findings"]} == {"good.py"}
