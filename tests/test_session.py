"""What a long-lived process (the daemon, --watch, the LSP worker) keeps between its runs is
a store it owns and hands to each run, not a module's state: with it, an edit that changes
no module summary makes no whole-project table again; without it, a run makes its own."""

from __future__ import annotations

from synclint.project import Project
from synclint.registry import default_rules
from synclint.run.runner import check_files

LIB = "import torch\n\n\ndef scale(x):\n    return x * 2\n"
MAIN = ("import torch\nfrom lib import scale\n\n\ndef train(xs):\n    for x in xs:\n"
        "        y = scale(x.cuda())\n        print(y.sum().item())\n")


def _runs(tmp_path, monkeypatch, kept):
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    lib, main = tmp_path / "lib.py", tmp_path / "main.py"
    lib.write_text(LIB)
    main.write_text(MAIN)
    files = [str(lib), str(main)]
    made = []
    whole = Project._whole
    monkeypatch.setattr(Project, "_whole", lambda self, make: made.append(make) or whole(self, make))
    first = check_files(files, default_rules(), cache_dir=tmp_path / ".cache", jobs=1, kept=kept).findings
    before = len(made)
    # an edit that changes no summary (a comment): most edits in an editor or under --watch
    main.write_text(MAIN.replace("print(y.sum().item())", "print(y.sum().item())  # the step's loss"))
    second = check_files(files, default_rules(), cache_dir=tmp_path / ".cache", jobs=1, kept=kept).findings
    return first, second, before, len(made) - before


def test_a_processes_store_spares_an_edit_the_whole_project_tables(tmp_path, monkeypatch):
    kept: dict = {}
    first, second, made_first, made_again = _runs(tmp_path, monkeypatch, kept)
    assert made_first > 0 and kept
    assert made_again == 0
    assert [(f.code, f.row) for f in first] == [(f.code, f.row) for f in second] and first


def test_without_a_store_each_run_makes_its_own(tmp_path, monkeypatch):
    first, second, made_first, made_again = _runs(tmp_path, monkeypatch, None)
    assert made_again == made_first > 0
