"""Debug and visualisation code runs rarely (eval/README.md: "code that only runs under a
debug or visualisation flag, or in a debug helper, is cold"): a branch under a debug flag,
a debug or visualisation helper by its name or its class, and a helper only such code
calls, loops included. `tests/data/rates/debug.py` marks each finding's line with the rate
it must get, each beside its near miss: the same loop in a helper the batch loop calls, a
plot helper called every step, a check flag that defaults on, a threshold compared."""

from __future__ import annotations

import textwrap
from pathlib import Path

from synclint.engine import lint_source
from synclint.testing import marked_rates, rates_at_marks
from synclint.run.pipeline import configure, run
from synclint.semantic import rates
from synclint.semantic.rates import is_hot

DATA = Path(__file__).parent / "data" / "rates" / "debug.py"  # (linted as heads.py: a debug.py is a debug tool by its name)
SOURCE = DATA.read_text()


def _row_of(text: str) -> int:
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def test_debug_code_runs_once_and_its_near_misses_keep_their_rate(monkeypatch):
    disagreements = []

    def settled(rate, hot):
        if is_hot(rate) != hot:
            disagreements.append((rate, hot))
        return rate

    monkeypatch.setattr(rates, "settled", settled)
    found = lint_source(SOURCE, "heads.py")
    expected = marked_rates(SOURCE)
    got = {f.row: f.rate for f in found if f.row in expected}
    assert got == expected
    assert not disagreements
    assert all(f.hot == is_hot(rates.parse(f.rate)) for f in found)


def test_the_chain_names_the_debug_flag_or_the_debug_helper():
    chains = {f.row: f.rate_chain for f in lint_source(SOURCE, "heads.py")}
    assert chains[_row_of("print(y.mean().item())")][-1] == "a debug flag (self.debug) in Head.forward() holds it"
    assert chains[_row_of("print(p.sum().item())")] == ("debug_dump() is a debug or visualisation helper",)
    assert chains[_row_of("out.append(x[: s.item()])")] == (
        "debug_dump() is a debug or visualisation helper", "_split_levels")


GENERATE = (Path(__file__).parent / "data" / "rates" / "generate.py").read_text()


def test_a_function_that_decodes_runs_its_own_code_once_per_call():
    # (eval/README.md's convention: code before or after the token loop runs once per
    # generate() call, not per token nor per step); a stack of layers is not a token loop
    found, expected = rates_at_marks(GENERATE, "generate.py")
    assert found == expected


SETUP = (Path(__file__).parent / "data" / "rates" / "setup.py").read_text()


def test_code_that_runs_once_by_construction_and_epoch_loops_by_name():
    # a helper only a once-only branch calls, the rest of a block after an early return on a
    # flag the function sets, a function memoised by lru_cache; an epoch loop by its variable
    # unless its body is itself one optimizer step
    found, expected = rates_at_marks(SETUP, "setup.py")
    assert found == expected


def test_another_modules_every_step_call_heats_a_debug_helper_but_not_a_memoised_function(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text(textwrap.dedent("""\
        import functools

        import torch


        @functools.lru_cache(maxsize=None)
        def index_table(n):
            return torch.arange(n, device="cuda").max().item()


        def plot_norms(xs):
            for x in xs:
                print(x.norm().item())
        """))
    (pkg / "train.py").write_text(textwrap.dedent("""\
        from pkg.util import index_table, plot_norms


        def fit(loader):
            for x in loader:
                index_table(8)
                plot_norms([x.cuda()])
        """))
    monkeypatch.chdir(tmp_path)
    out = run(configure(start=tmp_path, no_cache=True), ["pkg"])
    by_row = {f.row: f for f in out.findings if f.filename.endswith("util.py")}
    assert (by_row[8].rate, by_row[8].hot) == ("once", False)  # memoised: once per distinct n
    assert (by_row[13].rate, by_row[13].hot) == ("per-step", True)  # a plot helper the batch loop calls



def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")


_TRAINER = """\
    class Trainer:
        def train(self):
            for self.it in range(self.max_iter):
                self.train_one_iter()

        def train_one_iter(self):
            loss = self.model(self.batch())
            loss.backward()
    """
_HEAD = """\
    import torch


    def visualize_assign(n):
        boxes = torch.rand(n, 4, device="cuda")
        for b in boxes:
            print(b.sum().item())
        return boxes.cpu()
    """


def _override(cls: str) -> str:
    return f"""\
        import torch

        from pkg.head import visualize_assign
        from pkg.trainer import Trainer


        class {cls}(Trainer):
            def train_one_iter(self):
                visualize_assign(8)
                for b in torch.rand(8, 4, device="cuda"):
                    print(b.max().item())
        """


def _rates(tmp_path, monkeypatch, files):
    _tree(tmp_path, {"pkg/__init__.py": "", "pkg/trainer.py": _TRAINER, "pkg/head.py": _HEAD, **files})
    monkeypatch.chdir(tmp_path)
    out = run(configure(start=tmp_path, no_cache=True), ["pkg", "tools"])
    return {(f.filename.rsplit("/", 1)[-1], f.row): (f.rate, f.hot) for f in out.findings}


def test_a_visualisation_tool_runs_rarely_even_where_it_overrides_a_training_hook(tmp_path, monkeypatch):
    # tools/visualize_assign.py replaces the trainer's per-step hook to draw what a helper
    # assigns: the training loop runs the override only when the tool runs, and what a
    # visualisation tool runs is visualisation code (eval/README.md: cold)
    got = _rates(tmp_path, monkeypatch, {"tools/visualize_assign.py": _override("AssignVisualizer")})
    assert got[("head.py", 7)] == ("once", False)  # the drawing helper
    assert got[("head.py", 8)] == ("once", False)
    assert got[("visualize_assign.py", 11)] == ("once", False)  # the tool's own loop over items


def test_near_miss_a_training_scripts_override_still_runs_a_debug_helper_every_step(tmp_path, monkeypatch):
    # the same override in a training script (no visualisation word in its path): every
    # training step draws, as a plot helper the batch loop calls does
    got = _rates(tmp_path, monkeypatch, {"tools/train_assign.py": _override("AssignTrainer")})
    assert got[("head.py", 8)] == ("per-step", True)
    assert got[("train_assign.py", 11)] == ("per-step", True)


_LEVELS = """\
import torch


def draw_levels(n):
    feats = torch.rand(n, 4, device="cuda")
    for f in feats:
        print(f.any().item())
"""


def test_a_visualisation_modules_functions_are_debug_code_by_its_path():
    assert [f.rate for f in lint_source(_LEVELS, "projects/assigner_visualization/heads/levels.py")] == ["once"]
    assert [f.rate for f in lint_source(_LEVELS, "tools/vis_boxes.py")] == ["once"]
    # near misses: a demo (per-frame inference is its product), a vision module
    assert [f.rate for f in lint_source(_LEVELS, "demo/levels_demo.py")] == ["per-step"]
    assert [f.rate for f in lint_source(_LEVELS, "models/vision_levels.py")] == ["per-step"]
