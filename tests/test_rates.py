"""Execution rates: how often each finding's line runs, and the chain that says why.

`tests/data/rates/train.py` marks each finding's line with the rate it must get
(`# [per-step]`); each rate sits beside its near miss (a periodic guard and an accumulation
guard in one loop, a helper of the per-epoch code and one of the batch loop, a decoding
loop and a recurrent loop that hands its state back). `hot` stays the old boolean: per step
or faster."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from synclint.engine import lint_source
from synclint.findings import Finding
from synclint.run.pipeline import configure, run
from synclint.semantic import rates
from synclint.semantic.rates import Rate, is_hot, join
from synclint.testing import marked_rates, rates_at_marks, run_cli

DATA = Path(__file__).parent / "data" / "rates" / "train.py"
SOURCE = DATA.read_text()


def _row_of(text: str) -> int:
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def _findings():
    return lint_source(SOURCE, "train.py")


def test_the_lattice_orders_rates_by_frequency_and_hot_is_per_step_or_faster():
    assert join(Rate.ONCE, Rate.PER_EPOCH) == Rate.PER_EPOCH
    assert join(Rate.PER_STEP, Rate.EVERY_N) == Rate.PER_STEP
    assert join(Rate.PER_MICRO_STEP, Rate.PER_TOKEN) == Rate.PER_TOKEN
    assert [r for r in Rate if is_hot(r)] == [Rate.PER_STEP, Rate.PER_MICRO_STEP, Rate.PER_TOKEN]


def test_each_finding_runs_at_the_rate_its_line_is_marked_with(monkeypatch):
    # the safety net that makes a rate agree with `hot` must stay unused: rates follow heat
    disagreements = []

    def settled(rate, hot):
        if is_hot(rate) != hot:
            disagreements.append((rate, hot))
        return rate

    monkeypatch.setattr(rates, "settled", settled)
    expected = marked_rates(SOURCE)
    got = {f.row: f.rate for f in _findings()}
    assert got == expected
    assert not disagreements
    assert all(f.hot == is_hot(rates.parse(f.rate)) for f in _findings())


def test_the_chain_names_the_loop_that_gives_the_rate_and_the_calls_from_it():
    chains = {f.row: f.rate_chain for f in _findings()}
    loop = _row_of("for i, x in enumerate(loader):")
    assert chains[_row_of("print(out.max().item())")] == (f"train() loops over enumerate(loader) (train.py:{loop})",
                                                           "loss_of")
    # a guarded line names the loop, then the guard
    assert chains[_row_of("print(loss.item())")][-1] == "a periodic guard in train() holds it"
    epoch = _row_of("for epoch in range(10):")
    assert chains[_row_of("print(x.mean().item())")] == (
        f"main() loops over range(10), once per epoch (train.py:{epoch})", "train", "epoch_summary")


def test_declared_heat_names_its_glob_and_the_project_names_another_module(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text(textwrap.dedent("""\
        import torch


        def norm(x):
            return x.cuda().sum().item()


        def tick(x):
            return x.cuda().mean().item()


        def setup(x):
            return x.cuda().max().item()
        """))
    (pkg / "train.py").write_text(textwrap.dedent("""\
        from pkg.util import norm


        def fit(loader):
            for x in loader:
                norm(x)
        """))
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nhot-functions = ["pkg.util.tick"]\n'
                                             'cold-functions = ["pkg.util.setup"]\n')
    monkeypatch.chdir(tmp_path)
    out = run(configure(start=tmp_path, no_cache=True), ["pkg"])
    by_row = {f.row: f for f in out.findings if f.filename.endswith("util.py") and f.code == "SYN101"}
    assert (by_row[5].rate, by_row[5].hot) == ("per-step", True)
    # (the chain from where the project's heat starts: `fit`'s loop over the loader, in train.py)
    assert by_row[5].rate_chain == ("norm() (util.py) is called every step by fit() (train.py)",)
    assert (by_row[9].rate, by_row[9].rate_chain) == ("per-step", ("tick() is declared hot (hot-functions 'pkg.util.tick')",))
    assert (by_row[13].rate, by_row[13].hot) == ("once", False)
    assert by_row[13].rate_chain == ("setup() is declared cold (cold-functions 'pkg.util.setup')",)


def test_json_sarif_and_the_cache_carry_the_rate(tmp_path):
    shutil.copy(DATA, tmp_path / "train.py")
    r = run_cli(["check", "train.py", "--output-format", "json", "--no-cache"], tmp_path)
    found = json.loads(r.stdout)
    assert found and all(d["hot"] == is_hot(rates.parse(d["rate"])) for d in found)
    sarif = json.loads(run_cli(["check", "train.py", "--output-format", "sarif", "--no-cache"], tmp_path).stdout)
    assert [x["properties"]["rate"] for x in sarif["runs"][0]["results"]] == [d["rate"] for d in found]
    f = next(f for f in _findings() if f.rate_chain)
    again = Finding.from_json(f.to_cache())
    assert (again.rate, again.rate_chain) == (f.rate, f.rate_chain)


def test_show_rate_and_explain_file_line_print_the_chain(tmp_path):
    shutil.copy(DATA, tmp_path / "train.py")
    loop, row = _row_of("for i, x in enumerate(loader):"), _row_of("print(out.max().item())")
    chain = f"per step: train() loops over enumerate(loader) (train.py:{loop}) -> loss_of"
    text = run_cli(["check", "train.py", "--no-cache", "--show-rate"], tmp_path).stdout
    assert f"= rate: {chain}" in text
    plain = run_cli(["check", "train.py", "--no-cache"], tmp_path).stdout
    assert "rate:" not in plain
    concise = run_cli(["check", "train.py", "--no-cache", "--show-rate", "--output-format", "concise"], tmp_path).stdout
    assert f"(rate: {chain})" in concise
    r = run_cli(["explain", f"train.py:{row}"], tmp_path)
    assert r.exit_code == 0
    assert r.stdout.splitlines()[1] == f"  rate: {chain}"
    empty = run_cli(["explain", "train.py:1"], tmp_path)
    assert empty.exit_code == 0 and "no finding on this line" in empty.stdout


ASSIGNER = """\
import torch
from mmdet.models.task_modules.assigners import SimOTAAssigner


class PoseAssigner(SimOTAAssigner):
    def assign(self, cost, valid):
        return self._match(cost, valid)

    def _match(self, cost, valid):
        matching = torch.zeros_like(cost)
        ks = cost.topk(3, dim=0)[0].sum(0).int()
        for g in range(cost.shape[1]):
            matching[:, g][cost[:, g].topk(ks[g].item())[1]] = 1
        if (matching.sum(1) > 1).sum() > 0:  # [per-step] an mmdet head assigns every image of every step
            matching *= 0
        return matching


class TableAssigner:
    def assign(self, n):
        cost = torch.rand(n, n, device="cuda")
        if (cost.sum(1) > 1).sum() > 0:  # [once] near miss: nothing here calls it, and no framework does
            cost *= 0
        return cost
"""


def test_an_mmdet_assigners_assign_runs_every_step():
    # (mmdet's heads call `self.assigner.assign(...)` per image in `get_targets`, inside the
    # library: the assigner's own module sees no caller)
    found, expected = rates_at_marks(ASSIGNER, "pose_assigner.py")
    assert found == expected


SERVE = (Path(__file__).parent / "data" / "rates" / "serve.py").read_text()


def test_a_while_loop_around_a_denoising_loop_runs_once_per_pass():
    # (Wan2.1's `mp_worker`: `while True:` takes a request, denoises it step by step, sends
    # the video back: what is outside the step loop runs once per request, as an epoch loop's)
    found, expected = rates_at_marks(SERVE, "serve.py")
    assert found == expected


REQUESTS = Path(__file__).parent / "data" / "rates" / "requests"


def _package(tmp_path: Path, monkeypatch, data: Path, name: str) -> None:
    """`data`'s files as the package `name` of a project at `tmp_path`, the current folder."""
    shutil.copytree(data, tmp_path / name)
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    monkeypatch.chdir(tmp_path)


def test_a_loop_that_calls_another_modules_decoding_loop_runs_once_per_request(tmp_path, monkeypatch):
    # (flux's CLI: `while opts is not None:` makes one image a pass through `denoise` of
    # sampling.py; the module summary says which functions run their own loop)
    _package(tmp_path, monkeypatch, REQUESTS, "requests_pkg")
    expected = marked_rates((REQUESTS / "cli.py").read_text())
    for paths in (["requests_pkg"], ["requests_pkg/cli.py"]):  # the package, and the file alone with its cache
        out = run(configure(start=tmp_path), paths)
        got = {f.row: f.rate for f in out.findings if f.filename.endswith("cli.py") and f.code == "SYN101"}
        assert got == expected, paths


STATE_CLASS = Path(__file__).parent / "data" / "rates" / "stateclass"


def test_an_instance_of_the_class_a_class_attribute_names_runs_its_methods(tmp_path, monkeypatch):
    # (lightllm's models: `infer_state_class = InferStateInfo`, imported from another module,
    # then `self.infer_state_class().init_some_extra_state(...)` every forward; subclasses name
    # their own state class, whose override runs); a class only listed, and another class's
    # method of the same name, stay once
    _package(tmp_path, monkeypatch, STATE_CLASS, "stateclass_pkg")
    out = run(configure(start=tmp_path, no_cache=True), ["stateclass_pkg"])
    for name in ("model.py", "state.py"):
        expected = marked_rates((STATE_CLASS / name).read_text())
        got = {f.row: f.rate for f in out.findings if f.filename.endswith(name) and f.code == "SYN101"}
        assert got == expected, name


FLAGS = Path(__file__).parent / "data" / "rates" / "flags"


def test_a_periodic_flag_keeps_its_period_through_returns_arguments_and_attributes(tmp_path, monkeypatch):
    # (OLMo: `should_log_optim_metrics_this_step()` returns `global_step % n == 0` or False;
    # the trainer passes it to the optimizer, which tests it and stores it on `self`)
    _package(tmp_path, monkeypatch, FLAGS, "flags_pkg")
    out = run(configure(start=tmp_path, no_cache=True), ["flags_pkg"])
    for name in ("optim.py", "train.py"):
        expected = marked_rates((FLAGS / name).read_text())
        got = {f.row: ("cold" if expected.get(f.row) == "cold" and not f.hot else f.rate)
               for f in out.findings if f.filename.endswith(name) and f.code == "SYN101"}
        assert got == expected, name


PIPELINE = (Path(__file__).parent / "data" / "rates" / "pipeline.py").read_text()


def test_a_pipelines_call_runs_its_own_code_once_per_request():
    # (LTX-Video's `LTXVideoPipeline.__call__`: `__call__` is hot by its name, but its
    # denoising loop is the step; a module's `forward` that decodes stays hot, and the
    # pipeline's transformer is known from `register_modules` and diffusers' `ModelMixin`)
    found, expected = rates_at_marks(PIPELINE, "pipeline.py")
    assert found == expected


ITEMS = (Path(__file__).parent / "data" / "rates" / "items.py").read_text()


def test_a_loop_over_a_tensors_dimension_runs_at_the_rate_around_it():
    found, expected = rates_at_marks(ITEMS, "items.py")
    assert found == expected


INFERENCER = Path(__file__).parent / "data" / "rates" / "inferencer"


def test_an_inferencers_methods_run_once_per_request(tmp_path, monkeypatch):
    # (mmagic's inferencers: mmengine's `BaseInferencer.__call__` runs `preprocess`, `forward`,
    # `visualize`, `postprocess` once per call; `__call__` and `forward` are hot by their
    # names elsewhere; library.toml `request_hooks`)
    _package(tmp_path, monkeypatch, INFERENCER, "infer_pkg")
    # the package, and the file alone with its cache
    # (a facade's `__call__`, hot by its name, hands a request to one: `facade.py`)
    for paths, names in ((["infer_pkg"], ("inferencer.py", "model.py", "facade.py")),
                         (["infer_pkg/inferencer.py"], ("inferencer.py",))):
        out = run(configure(start=tmp_path), paths)
        for name in names:
            expected = marked_rates((INFERENCER / name).read_text())
            got = {f.row: f.rate for f in out.findings if f.filename.endswith(name)}
            assert got == expected, (paths, name)
