"""Where heat starts when no loop in the project says it: the methods a framework calls
every step on the subclasses of its classes (`framework_hooks` in library.toml), and what
the configuration declares (`hot-functions`, `cold-functions`).

Each case sits beside its near miss: the same method in a class with no framework base,
the same name on another framework's class, a function the configuration does not name."""

from __future__ import annotations

import textwrap
from pathlib import Path

from synclint.run.pipeline import configure, run, run_text

# A library-style package (as mmdetection is): nothing in it calls `loss`; mmengine's
# runner calls `train_step`, which reaches the head's `loss` through an attribute made
# from a config. The base that says so is in another module of the package.
BASE = """\
    from mmengine.model import BaseModule


    class BaseHead(BaseModule):
        def loss(self, feats, targets):
            return self.loss_by_feat(feats, targets)
    """

HEAD = """\
    import torch
    from pkg.base import BaseHead


    class MyHead(BaseHead):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(3, device="cuda"))

        def loss_by_feat(self, feats, targets):
            w = self.weight * 2
            print(w.sum().item())  # [hot] every step: mmengine calls it through `loss`
            return w

        def init_weights(self):
            print(self.weight.sum().item())  # [cold] once: not a hook


    class Plain:  # the same method name, no framework base
        def __init__(self):
            self.weight = torch.zeros(3, device="cuda")

        def loss_by_feat(self, feats, targets):
            return self.weight.sum().item()  # [cold]


    class Other(torch.nn.Module):  # a hook of another framework's class (torchmetrics' `update`)
        def __init__(self):
            super().__init__()
            self.weight = torch.zeros(3, device="cuda")

        def update(self, x):
            return self.weight.sum().item()  # [cold]
    """

METRIC = """\
    import torch
    from torchmetrics import Metric


    class Hits(Metric):
        def __init__(self):
            super().__init__()
            self.total = torch.zeros((), device="cuda")

        def update(self, preds, target):
            self.total += (preds == target).sum()
            print(self.total.item())  # [hot] every batch: torchmetrics calls `update`

        def compute(self):
            return self.total.item()  # [cold] once per epoch
    """

# mmcv 1.x (mmdet 2.x, mmrotate 0.x): the runner's `train_step` runs `forward_train` of
# the model and its heads; evaluation runs `simple_test` and `get_bboxes`
MMCV1 = """\
    import torch
    from mmcv.runner import BaseModule


    class RotatedHead(BaseModule):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(3, device="cuda"))

        def forward_train(self, x):
            print(self.weight.sum().item())  # [hot] every step: mmcv's runner reaches it

        def get_bboxes(self, x):
            print(self.weight.max().item())  # [hot] every evaluation batch

        def init_weights(self):
            print(self.weight.min().item())  # [cold] once: not a hook


    class Plain:  # the same method name, no framework base
        def __init__(self):
            self.weight = torch.zeros(3, device="cuda")

        def forward_train(self, x):
            return self.weight.sum().item()  # [cold]
    """

UTIL = """\
    import torch


    def summarize(x):
        return x.cuda().sum().item()


    def evaluate(model, loader):
        for batch in loader:
            out = model(batch.cuda())
            print(out.mean().item())


    def step_all(x):
        return summarize(x)
    """

TRAIN = """\
    from pkg.util import step_all


    def tick(x):
        return step_all(x)
    """


def _write(root: Path, files: dict, config: str = "") -> None:
    (root / "pyproject.toml").write_text("[tool.synclint]\n" + textwrap.dedent(config))
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    for name, src in files.items():
        (root / "pkg" / name).write_text(textwrap.dedent(src))


def _tags(root: Path, monkeypatch, cache: bool = False) -> dict:
    monkeypatch.chdir(root)
    out = run(configure(start=root, no_cache=not cache), ["pkg"])
    assert not out.all_errors, out.all_errors
    return {(Path(f.filename).name, f.row): f.hot for f in out.findings}


def _expected(files: dict) -> dict:
    """(file, row) -> hot, from each row's `# [hot]` or `# [cold]` mark."""
    return {(name, row): "# [hot]" in line
            for name, src in files.items()
            for row, line in enumerate(textwrap.dedent(src).splitlines(), 1) if "# [hot]" in line or "# [cold]" in line}


def test_a_method_a_framework_calls_every_step_is_hot_through_a_base_in_another_module(tmp_path, monkeypatch):
    files = {"base.py": BASE, "head.py": HEAD, "metric.py": METRIC}
    _write(tmp_path, files)
    assert _tags(tmp_path, monkeypatch) == _expected(files)


def test_mmcv1_heads_are_hot_where_its_runner_calls_them(tmp_path, monkeypatch):
    files = {"head.py": MMCV1}
    _write(tmp_path, files)
    assert _tags(tmp_path, monkeypatch) == _expected(files)


def test_declared_hot_functions_spread_along_calls_and_cold_ones_stop_heat(tmp_path, monkeypatch):
    _write(tmp_path, {"util.py": UTIL, "train.py": TRAIN})
    before = _tags(tmp_path, monkeypatch)
    assert before[("util.py", 5)] is False  # nothing loops over `tick`
    assert before[("util.py", 10)] is True and before[("util.py", 11)] is True  # the eval loop
    _write(tmp_path, {}, """\
        hot-functions = ["pkg.train.tick"]
        cold-functions = ["pkg.util.eval*"]
        """)
    after = _tags(tmp_path, monkeypatch)
    assert after[("util.py", 5)] is True  # tick -> step_all (hot by the loop? no: declared) -> summarize
    assert after[("util.py", 10)] is False and after[("util.py", 11)] is False  # a loop in a cold function


def test_declared_heat_changes_what_a_cached_run_reports(tmp_path, monkeypatch):
    _write(tmp_path, {"util.py": UTIL, "train.py": TRAIN})
    assert _tags(tmp_path, monkeypatch, cache=True)[("util.py", 5)] is False
    _write(tmp_path, {}, 'hot-functions = ["pkg.train.*"]\n')
    assert _tags(tmp_path, monkeypatch, cache=True)[("util.py", 5)] is True
    _write(tmp_path, {}, "")
    assert _tags(tmp_path, monkeypatch, cache=True)[("util.py", 5)] is False


def test_a_file_checked_alone_takes_the_declared_heat_of_its_configuration(tmp_path, monkeypatch):
    _write(tmp_path, {"util.py": UTIL}, """\
        hot-functions = ["pkg.util.summarize"]
        cold-functions = ["pkg.util.evaluate"]
        """)
    monkeypatch.chdir(tmp_path)
    out = run_text(configure(start=tmp_path, no_cache=True), "pkg/util.py", (tmp_path / "pkg" / "util.py").read_text())
    tags = {f.row: f.hot for f in out.findings}
    assert tags[5] is True and tags[11] is False


def test_a_package_checked_whole_or_a_file_alone_tags_a_hook_the_same(tmp_path, monkeypatch):
    _write(tmp_path, {"base.py": BASE, "head.py": HEAD})
    whole = _tags(tmp_path, monkeypatch)
    out = run(configure(start=tmp_path, no_cache=True), ["pkg/head.py"])
    alone = {(Path(f.filename).name, f.row): f.hot for f in out.findings}
    assert alone == {k: v for k, v in whole.items() if k[0] == "head.py"}


def test_a_file_checked_alone_takes_its_callers_heat_from_the_last_check_of_its_package(tmp_path, monkeypatch):
    """`util.summarize` runs every step only because `loop.py` calls it in a loop. Checked
    alone (the command line, an editor's buffer), util.py learns that from the call graphs
    the last check of the package left in the cache; with no such check, it cannot."""
    loop = """\
        from pkg.util import summarize


        def train(loader):
            for x in loader:
                summarize(x)
        """
    _write(tmp_path, {"util.py": UTIL, "loop.py": loop})
    # files saved a while ago (not within the moment a save may still be under way), which
    # the cache vouches for by their stat
    monkeypatch.setattr("synclint.run.cache.SETTLED_NS", 0)
    monkeypatch.chdir(tmp_path)
    setup = configure(start=tmp_path)
    alone_first = {f.row: f.hot for f in run(setup, ["pkg/util.py"]).findings}
    assert alone_first[5] is False  # nothing known of loop.py yet
    whole = {(Path(f.filename).name, f.row): f.hot for f in run(configure(start=tmp_path), ["pkg"]).findings}
    assert whole[("util.py", 5)] is True
    alone = {f.row: f.hot for f in run(configure(start=tmp_path), ["pkg/util.py"]).findings}
    assert alone == {row: hot for (name, row), hot in whole.items() if name == "util.py"}
    from synclint.run.pipeline import run_editor

    edited = (tmp_path / "pkg" / "util.py").read_text() + "\n# an unsaved edit\n"
    outcome, _ = run_editor(str(tmp_path / "pkg" / "util.py"), edited)
    assert {f.row: f.hot for f in outcome.findings} == alone


def test_a_file_checked_alone_takes_its_callers_heat_through_a_package_reexport(tmp_path, monkeypatch):
    """The caller imports `summarize` from the package (`from pkg import summarize`), which
    re-exports it from util.py: a file checked alone neither imports nor summarises
    `pkg/__init__.py`, so the call resolves only through the summaries the package's check
    cached (mmpose's `filter_scores_and_topk`, from `mmpose.models.utils`)."""
    loop = "from pkg import summarize\n\n\ndef train(loader):\n    for x in loader:\n        summarize(x)\n"
    _write(tmp_path, {"util.py": UTIL, "loop.py": loop})
    (tmp_path / "pkg" / "__init__.py").write_text("from .util import summarize\n")
    monkeypatch.setattr("synclint.run.cache.SETTLED_NS", 0)
    monkeypatch.chdir(tmp_path)
    whole = {(Path(f.filename).name, f.row): f.hot for f in run(configure(start=tmp_path), ["pkg"]).findings}
    assert whole[("util.py", 5)] is True
    alone = {f.row: f.hot for f in run(configure(start=tmp_path), ["pkg/util.py"]).findings}
    assert alone == {row: hot for (name, row), hot in whole.items() if name == "util.py"}


def test_without_a_configuration_a_file_checked_from_a_subfolder_finds_its_repositorys_cache(tmp_path, monkeypatch):
    """A repository with no pyproject.toml: the package is checked from its root, then one
    file from inside the package (a terminal opened there, an editor): the project is rooted
    at the repository, not at the working folder, so the file finds its callers' heat."""
    loop = "from pkg.util import summarize\n\n\ndef train(loader):\n    for x in loader:\n        summarize(x)\n"
    _write(tmp_path, {"util.py": UTIL, "loop.py": loop})
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / ".git").mkdir()
    monkeypatch.setattr("synclint.run.cache.SETTLED_NS", 0)
    monkeypatch.chdir(tmp_path)
    whole = {(Path(f.filename).name, f.row): f.hot for f in run(configure(start=tmp_path), ["pkg"]).findings}
    assert whole[("util.py", 5)] is True
    monkeypatch.chdir(tmp_path / "pkg")
    alone = {f.row: f.hot for f in run(configure(start=Path("util.py")), ["util.py"]).findings}
    assert alone == {row: hot for (name, row), hot in whole.items() if name == "util.py"}
    assert (tmp_path / ".synclint_cache").is_dir() and not (tmp_path / "pkg" / ".synclint_cache").exists()


def test_a_hot_only_rule_reports_what_another_modules_loop_makes_hot_and_nothing_cold(tmp_path, monkeypatch):
    """SYN403 (`HOT_ONLY`): `empty_cache()` in a helper is a finding only where a loop of
    another module calls the helper; called once between phases, it costs nothing."""
    files = {
        "mem.py": """\
            import torch


            def free():
                torch.cuda.empty_cache()


            def free_between_phases():
                torch.cuda.empty_cache()
            """,
        "loop.py": """\
            import torch
            from pkg.mem import free, free_between_phases


            def train(loader):
                for x in loader:
                    y = x.cuda() * 2
                    free()
                free_between_phases()
            """,
    }
    _write(tmp_path, files)
    found = {(Path(f.filename).name, f.row, f.hot) for f in _outcome(tmp_path, monkeypatch).findings if f.code == "SYN403"}
    assert found == {("mem.py", 5, True)}


def _outcome(root: Path, monkeypatch):
    monkeypatch.chdir(root)
    return run(configure(start=root, no_cache=True), ["pkg"])


def test_a_file_of_a_namespace_folder_checked_alone_keeps_the_root_of_its_last_package_check(tmp_path, monkeypatch):
    """No marker anywhere (a tree unpacked from an archive) and a helper folder without
    `__init__.py` that the top-level script imports as `helpers.util` (FramePack's
    `diffusers_helper/memory.py`, called from `demo_gradio.py`): checked alone, the file's
    own folder would be its project, which holds none of its callers. The cache remembers
    the root the package's check used, and the file checked alone takes it."""
    repo = tmp_path / "repo"
    (repo / "helpers").mkdir(parents=True)
    (repo / "helpers" / "util.py").write_text(textwrap.dedent(UTIL))
    (repo / "loop.py").write_text("from helpers.util import summarize\n\n\ndef train(loader):\n"
                                  "    for x in loader:\n        summarize(x)\n")
    monkeypatch.setattr("synclint.run.cache.SETTLED_NS", 0)
    monkeypatch.chdir(tmp_path)
    first = {f.row: f.hot for f in run(configure(start=tmp_path), ["repo/helpers/util.py"]).findings}
    assert first[5] is False  # no package check yet: its own folder, no caller known
    whole = {(Path(f.filename).name, f.row): f.hot for f in run(configure(start=tmp_path), ["repo"]).findings}
    assert whole[("util.py", 5)] is True
    alone = {f.row: f.hot for f in run(configure(start=tmp_path), ["repo/helpers/util.py"]).findings}
    assert alone == {row: hot for (name, row), hot in whole.items() if name == "util.py"}
    again = {f.row: f.hot for f in run(configure(start=tmp_path), ["repo/helpers/util.py"]).findings}
    assert again == alone  # the file's own run leaves the wider root first


def test_a_root_remembered_from_a_check_does_not_override_a_marker(tmp_path):
    from synclint.paths import project_root

    inner = tmp_path / "outer" / "proj"
    (inner / "src").mkdir(parents=True)
    (inner / "pyproject.toml").write_text("")
    f = str(inner / "src" / "a.py")
    assert project_root([f], [str(tmp_path / "outer")]) == str(inner)
    assert project_root([f], [str(tmp_path / "elsewhere")]) == str(inner)
    (inner / "pyproject.toml").unlink()
    assert project_root([f], [str(tmp_path / "outer"), str(tmp_path / "elsewhere")]) == str(tmp_path / "outer")
    assert project_root([f], [str(inner / "src" / "deeper")]) == str(inner / "src")


def test_a_file_checked_alone_is_told_what_its_callers_pass_as_the_package_check_learnt_it(tmp_path, monkeypatch):
    """`mid.step` passes `summarize` a tensor made from its own parameter, which only its
    caller in `loop.py` puts on the GPU: mid.py's first walk cannot know that, its second
    walk, told by the project what `loop.py` passes, does. Checked alone after the package,
    util.py hears what the package's check heard (mmtracking's `outs2results`, given boxes
    moved to the device of the `img` the framework passes; Open-Sora's `get_batch_loss`)."""
    files = {
        "loop.py": ("from pkg.mid import step\n\n\ndef train(loader):\n"
                    "    for x in loader:\n        step(x.cuda())\n"),
        "mid.py": ("import numpy as np\nimport torch\nfrom pkg.util import summarize\n\n\ndef step(img):\n"
                   "    boxes = torch.from_numpy(np.zeros(4)).to(img)\n    return summarize(boxes)\n"),
        "util.py": "import torch\n\n\ndef summarize(x):\n    print(x.sum().item())\n",
    }
    _write(tmp_path, files)
    monkeypatch.setattr("synclint.run.cache.SETTLED_NS", 0)
    monkeypatch.chdir(tmp_path)
    whole = {(Path(f.filename).name, f.row, f.code): f.hot for f in run(configure(start=tmp_path), ["pkg"]).findings}
    assert whole.get(("util.py", 5, "SYN101")) is True
    alone = {(Path(f.filename).name, f.row, f.code): f.hot for f in run(configure(start=tmp_path), ["pkg/util.py"]).findings}
    assert alone == {k: v for k, v in whole.items() if k[0] == "util.py"}
