"""`synclint baseline` + `check --baseline`: old findings pass, new ones fail, and the
match survives lines moving; fixing a finding removes it."""

import json
import os

import pytest

from synclint.baseline import BaselineError, filter_new, normalize
from synclint.testing import run_cli as run

OLD = (
    "import torch\n"
    "\n"
    "w = torch.ones(8, device='cuda')\n"
    "for step in range(10):\n"
    "    a = w.sum().item()\n"
    "    b = w.sum().item()\n"
    "    b = w.sum().item()\n"
    "print(w.mean().item())\n"
)




def check(cwd, *extra):
    r = run(["check", "--no-cache", "--output-format", "json", "--baseline", "baseline.json", *extra, "."], cwd)
    return r.exit_code, json.loads(r.stdout) if r.stdout.strip() else []


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(OLD, encoding="utf-8")
    r = run(["baseline", "--no-cache", ".", "--output", "baseline.json"], tmp_path)
    assert r.exit_code == 0, r.output
    assert "Recorded 4 findings" in r.output
    return tmp_path


def test_old_findings_pass(project):
    assert check(project) == (0, [])


def test_new_finding_fails(project):
    (project / "train.py").write_text(OLD + "x = w.max().item()\n", encoding="utf-8")
    code, found = check(project)
    assert code == 1 and [(f["location"]["row"], f["code"]) for f in found] == [(9, "SYN101")]


def test_new_file_fails(project):
    (project / "other.py").write_text(OLD, encoding="utf-8")
    code, found = check(project)
    assert code == 1 and {os.path.normpath(f["filename"]) for f in found} == {"other.py"} and len(found) == 4


def test_moving_lines_keeps_them_matched(project):
    moved = "# a new header\n\n\n" + OLD.replace("for step", "# a comment\nfor step")
    moved = moved.replace("    a = w.sum().item()", "    a  =  w.sum().item()   ")  # whitespace only
    (project / "train.py").write_text(moved, encoding="utf-8")
    assert check(project) == (0, [])


def test_identical_lines_count(project):
    """Two identical findings were recorded; a third identical one is new."""
    text = OLD.replace("    b = w.sum().item()\n    b = w.sum().item()\n",
                       "    b = w.sum().item()\n    b = w.sum().item()\n    b = w.sum().item()\n")
    (project / "train.py").write_text(text, encoding="utf-8")
    code, found = check(project)
    assert code == 1 and len(found) == 1 and found[0]["location"]["row"] == 8  # the last of three


def test_fixing_one_removes_it(project):
    fixed = OLD.replace("    a = w.sum().item()\n", "    a = w.sum()\n")
    (project / "train.py").write_text(fixed, encoding="utf-8")
    assert check(project) == (0, [])
    # fixed and then reintroduced elsewhere in the file: it still matches the record
    # (same code, same line text), which is what a line-independent baseline means
    r = run(["baseline", "--no-cache", ".", "-o", "baseline.json"], project)
    assert "Recorded 3 findings" in r.output
    (project / "train.py").write_text(OLD, encoding="utf-8")
    code, found = check(project)
    assert code == 1 and [f["location"]["row"] for f in found] == [5]


def test_baseline_paths_are_relative_to_the_baseline_file(project):
    data = json.loads((project / "baseline.json").read_text())
    assert {e["file"] for e in data["findings"]} == {"train.py"}
    assert data["findings"][0]["line_text"] == normalize("    a = w.sum().item()\n")
    sub = project / "sub"
    sub.mkdir()
    # run from another directory, naming the file and the baseline by other relative paths
    r = run(["check", "--no-cache", "--baseline", "../baseline.json", "../train.py"], sub)
    assert r.exit_code == 0, r.output


def test_selection_options(tmp_path):
    (tmp_path / "train.py").write_text(OLD, encoding="utf-8")
    r = run(["baseline", "--no-cache", "--ignore", "SYN101", ".", "-o", "b.json"], tmp_path)
    assert r.exit_code == 0 and "Recorded 0 findings" in r.output
    r = run(["baseline", "--no-cache", "--select", "NOPE", "."], tmp_path)
    assert r.exit_code == 2 and "unknown rule selector" in r.output


@pytest.mark.parametrize("content, message", [
    (None, "no such baseline file"),
    ("{not json", "not valid JSON"),
    ('{"findings": []}', "not a synclint baseline"),
    ('{"synclint_baseline": 99, "findings": []}', "not supported"),
    ('{"synclint_baseline": 1, "findings": [{"file": "x"}]}', "malformed entry"),
])
def test_bad_baseline_is_a_usage_error(tmp_path, content, message):
    (tmp_path / "train.py").write_text(OLD, encoding="utf-8")
    if content is not None:
        (tmp_path / "baseline.json").write_text(content)
    r = run(["check", "--no-cache", "--baseline", "baseline.json", "."], tmp_path)
    assert r.exit_code == 2 and message in r.output
    with pytest.raises(BaselineError):
        filter_new([], tmp_path / "baseline.json")
