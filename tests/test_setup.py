"""Setup transfers (`semantic.setup`, issue 34 point 5): a transfer that runs once while the
program sets itself up (a module's constructor and its initialisation hooks, what only they
call in any module, a memoised table, a first-call cache, the entry's straight-line code) is
no finding; the same transfer where it repeats (per step, per evaluation, per request, the
first ten steps) is. tests/data/setup: a rate in brackets after `#` is the finding a line must give."""

from __future__ import annotations

import shutil
from pathlib import Path

from synclint.engine import lint_source
from synclint.run.pipeline import configure, run
from synclint.semantic.setup import setup_functions
from synclint.testing import marked_rates

DATA = Path(__file__).parent / "data" / "setup"
FILES = ("model.py", "engine.py", "llama.py", "train.py")


def _project(tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(DATA, tmp_path / "proj")
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    monkeypatch.setattr("synclint.run.cache.SETTLED_NS", 0)  # (files just made: their stamps vouch for them)
    monkeypatch.chdir(tmp_path)


def test_setup_transfers_are_no_findings_where_they_repeat_they_are(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch)
    out = run(configure(start=tmp_path), ["proj"])
    for name in FILES:
        got = {f.row: f.rate for f in out.findings if f.filename.endswith(name)}
        assert got == marked_rates((DATA / name).read_text()), name


def test_a_file_checked_alone_with_the_cache_keeps_the_packages_verdicts(tmp_path, monkeypatch):
    # (the override in llama.py is setup only because engine.py's constructor calls it)
    _project(tmp_path, monkeypatch)
    run(configure(start=tmp_path), ["proj"])
    for name in ("llama.py", "model.py"):
        out = run(configure(start=tmp_path), [f"proj/{name}"])
        got = {f.row: f.rate for f in out.findings}
        assert got == marked_rates((DATA / name).read_text()), name


def test_a_file_linted_alone_knows_its_own_setup_code():
    # (the flake8 plugin and the rule examples: no project, the file's own call graph)
    source = (DATA / "model.py").read_text()
    rows = {f.row for f in lint_source(source, "model.py")}
    setup_rows = {i for i, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith(": setup")}
    assert setup_rows and not rows & setup_rows
    assert {62, 65} <= rows  # the per-step moves stay


def test_the_greatest_set_called_only_from_setup():
    # a seed, what only it calls, a chain through two helpers; a helper also called per step
    # stays out, as does what only it calls; what the entry calls is not setup, but a
    # constructor it or a main() only it calls builds outside loops is
    incoming = {
        "A.__init__": [("", False)],
        "T.__init__": [("main", False)],
        "A.build": [("A.__init__", False)],
        "A.table": [("A.build", True)],  # (a loop in setup code is still setup)
        "A.shift": [("A.__init__", False), ("A.forward", True)],
        "A.pad": [("A.shift", False)],
        "main": [("", None)],
        "B.__init__": [("", True)],  # (built in a module-level loop)
        "Seeded.__init__": [("A.forward", True)],
    }
    got = setup_functions(incoming, {"Seeded.__init__"}, {"A.forward"}, is_entry=lambda c: c == "")
    assert got == {"A.__init__", "A.build", "A.table", "T.__init__", "Seeded.__init__"}
    # a library module has no entry: what its `__main__` block runs is its own test
    assert setup_functions(incoming, {"Seeded.__init__"}, {"A.forward"}) == {"Seeded.__init__"}


LIGHTNING = '''
import torch
import lightning as L


class NeRF(L.LightningModule):
    def __init__(self, ds):
        super().__init__()
        self.ds = ds
        self.net = torch.nn.Linear(3, 3)

    def configure_optimizers(self):
        self.register_buffer("poses", torch.from_numpy(self.ds.poses).cuda())  # once per fit: setup
        return torch.optim.Adam(self.parameters())

    def on_train_start(self):
        self.k = torch.tensor(self.ds.K).cuda()  # once per fit: setup

    def on_validation_start(self):
        self.v = torch.tensor(self.ds.K).cuda()  # [once] per validation: not setup

    def training_step(self, batch, i):
        scale = torch.tensor([1.0, 2.0, 3.0]).cuda()  # [per-step]
        return self.net(batch * scale).sum()


class Plain(torch.nn.Module):
    def configure_optimizers(self):
        return torch.tensor([0.1]).cuda()  # [once] near miss: no Lightning module, no such hook
'''


def test_a_lightning_modules_once_per_fit_hooks_are_setup():
    got = {f.row: f.rate for f in lint_source(LIGHTNING, "lit.py")}
    assert got == marked_rates(LIGHTNING)
