"""Debug and visualisation code runs rarely (eval/README.md: "code that only runs under a
debug or visualisation flag, or in a debug helper, is cold"): a branch under a debug flag,
a debug or visualisation helper by its name or its class, and a helper only such code
calls, loops included. `tests/data/rates/debug.py` marks each finding's line with the rate
it must get, each beside its near miss: the same loop in a helper the batch loop calls, a
plot helper called every step, a check flag that defaults on, a threshold compared."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from synclint.engine import lint_source
from synclint.run.pipeline import configure, run
from synclint.semantic import rates
from synclint.semantic.rates import is_hot

DATA = Path(__file__).parent / "data" / "rates" / "debug.py"
SOURCE = DATA.read_text()
MARK = re.compile(r"# \[([a-z-]+)\]")


def _row_of(text: str) -> int:
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def test_debug_code_runs_once_and_its_near_misses_keep_their_rate(monkeypatch):
    disagreements = []

    def settled(rate, hot):
        if is_hot(rate) != hot:
            disagreements.append((rate, hot))
        return rate

    monkeypatch.setattr(rates, "settled", settled)
    found = lint_source(SOURCE, "debug.py")
    expected = {row: m.group(1) for row, line in enumerate(SOURCE.splitlines(), 1) for m in [MARK.search(line)] if m}
    got = {f.row: f.rate for f in found if f.row in expected}
    assert got == expected
    assert not disagreements
    assert all(f.hot == is_hot(rates.parse(f.rate)) for f in found)


def test_the_chain_names_the_debug_flag_or_the_debug_helper():
    chains = {f.row: f.rate_chain for f in lint_source(SOURCE, "debug.py")}
    assert chains[_row_of("print(y.mean().item())")][-1] == "a debug flag (self.debug) in Head.forward() holds it"
    assert chains[_row_of("print(p.sum().item())")] == ("debug_dump() is a debug or visualisation helper",)
    assert chains[_row_of("out.append(x[: s.item()])")] == (
        "debug_dump() is a debug or visualisation helper", "_split_levels")


GENERATE = (Path(__file__).parent / "data" / "rates" / "generate.py").read_text()


def test_a_function_that_decodes_runs_its_own_code_once_per_call():
    # (eval/README.md's convention: code before or after the token loop runs once per
    # generate() call, not per token nor per step)
    expected = {row: m.group(1) for row, line in enumerate(GENERATE.splitlines(), 1) for m in [MARK.search(line)] if m}
    found = lint_source(GENERATE, "generate.py")
    assert {f.row: f.rate for f in found if f.row in expected} == expected


SETUP = (Path(__file__).parent / "data" / "rates" / "setup.py").read_text()


def test_code_that_runs_once_by_construction_and_epoch_loops_by_name():
    # a helper only a once-only branch calls, the rest of a block after an early return on a
    # flag the function sets, a function memoised by lru_cache; an epoch loop by its variable
    # unless its body is itself one optimizer step
    expected = {row: m.group(1) for row, line in enumerate(SETUP.splitlines(), 1) for m in [MARK.search(line)] if m}
    found = lint_source(SETUP, "setup.py")
    assert {f.row: f.rate for f in found if f.row in expected} == expected


def test_another_modules_every_step_call_heats_a_debug_helper_but_not_a_memoised_function(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text(textwrap.dedent("""\
        import functools

        import torch


        @functools.lru_cache(maxsize=None)
        def index_table(n):
            return torch.tensor(list(range(n))).cuda()


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
