"""Project-wide facts: what one module learns from the others (synclint.project), checked
through `check_files` on small multi-file projects, as `synclint check src/` sees them.

Each case has a near-miss beside it: the same code where the other module says the value
is on the CPU, or the call is not in a loop, must stay silent (or cold)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from synclint.registry import default_rules
from synclint.run.runner import check_files


def _project(tmp_path: Path, files: dict) -> list:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    paths = []
    for name, src in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
        paths.append(str(p))
    return paths


def _found(paths, **kw):
    r = check_files(paths, default_rules(), **kw)
    assert not r.errors, r.errors
    return {(Path(f.filename).name, f.row, f.code, f.hot) for f in r.findings}


SAMPLER = """\
    import torch

    class Rays:
        def __init__(self, n):
            self.depth = torch.rand(n, device="cuda")
            self.valid = self.depth > 0.5

    class HostRays:
        def __init__(self, n):
            self.depth = torch.rand(n)
            self.valid = self.depth > 0.5

    def make_rays(n):
        return Rays(n)
    """


# a training loop indexing with a mask that pkg/sampler.py's `make_rays` puts on the GPU
TRAIN = """\
    import torch
    from pkg.sampler import make_rays

    def train(steps):
        for _ in range(steps):
            rays = make_rays(10)
            d = rays.depth[rays.valid]
    """


def test_attribute_of_a_class_defined_in_another_module(tmp_path):
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sampler.py": SAMPLER,
        "train.py": """\
            import torch
            from pkg.sampler import make_rays, HostRays
            from pkg import sampler

            def train(steps):
                for _ in range(steps):
                    rays = make_rays(10)
                    d = rays.depth[rays.valid]
                    r2 = sampler.Rays(4)
                    e = r2.depth[r2.valid]
                    h = HostRays(4)
                    f = h.depth[h.valid]
            """,
    })
    found = _found(paths)
    assert ("train.py", 8, "SYN201", True) in found  # through a function's return
    assert ("train.py", 10, "SYN201", True) in found  # through `module.Class(...)`
    assert not any(row == 12 for _, row, _, _ in found)  # a CPU mask on a CPU tensor: no sync


def test_parameters_take_values_from_callers_in_other_modules(tmp_path):
    paths = _project(tmp_path, {
        "losses.py": """\
            def loss_value(pred, target):
                return (pred - target).abs().mean().item()

            def host_value(pred, target):
                return (pred - target).abs().mean().item()
            """,
        "train.py": """\
            import torch
            from losses import loss_value, host_value

            def train(loader):
                model = torch.nn.Linear(3, 3).cuda()
                for x, y in loader:
                    x, y = x.cuda(), y.cuda()
                    l = loss_value(model(x), y)
                    h = host_value(torch.zeros(3), torch.ones(3))
            """,
    })
    found = _found(paths)
    # every caller passes CUDA tensors, from a training loop in another module: hot
    assert ("losses.py", 2, "SYN101", True) in found
    # every caller passes CPU tensors: `.item()` of a CPU tensor does not sync
    assert not any(name == "losses.py" and row == 5 for name, row, _, _ in found)


def test_heat_follows_calls_across_modules(tmp_path):
    util = """\
        import torch

        def stats(x):
            return x.sum().item()
        """
    loop = _project(tmp_path / "a", {
        "util.py": util,
        "train.py": """\
            import torch
            from util import stats

            def train(steps):
                x = torch.ones(3, device="cuda")
                for _ in range(steps):
                    s = stats(x)
            """,
    })
    once = _project(tmp_path / "b", {
        "util.py": util,
        "train.py": """\
            import torch
            from util import stats

            def report():
                x = torch.ones(3, device="cuda")
                return stats(x)
            """,
    })
    assert ("util.py", 4, "SYN101", True) in _found(loop)
    assert ("util.py", 4, "SYN101", False) in _found(once)  # called once: cold
    # called from hot code, but under a periodic guard: every tenth step, cold (here and
    # through a method of another module's class, YOLOX's `self.exp.random_resize`)
    guarded = _project(tmp_path / "c", {
        "util.py": util + """\

        class Exp:
            def resize(self, x):
                return x.max().item()
        """,
        "train.py": """\
            import torch
            from util import stats, Exp

            class Trainer:
                def __init__(self):
                    self.exp = Exp()

                def after_iter(self, step, x):
                    if (step + 1) % 10 == 0:
                        stats(x)
                        self.exp.resize(x)

                def train(self, steps):
                    x = torch.ones(3, device="cuda")
                    for step in range(steps):
                        self.after_iter(step, x)
            """,
    })
    found = {(n, row, hot) for n, row, code, hot in _found(guarded) if code == "SYN101"}
    assert found == {("util.py", 4, False), ("util.py", 8, False)}


def test_relative_and_star_imports_and_cuda_default_from_the_entry_script(tmp_path):
    paths = _project(tmp_path, {
        "pkg/__init__.py": "from .helpers import *\n",
        "pkg/helpers.py": """\
            import torch
            to_psnr = lambda x: -10. * torch.log(x) / torch.log(torch.Tensor([10.]))

            def pose(t):
                return torch.Tensor([[1, 0, 0, t]])
            """,
        "run.py": """\
            import torch
            from pkg.helpers import *

            def train(steps):
                for _ in range(steps):
                    psnr = to_psnr(torch.ones(1))

            if __name__ == "__main__":
                torch.set_default_tensor_type("torch.cuda.FloatTensor")
                train(10)
            """,
    })
    found = _found(paths)
    # run.py makes CUDA the default tensor type: helpers' `torch.Tensor([...])` copies host
    # data to the GPU; in the lambda called every step it is hot, in `pose` (never called) cold
    assert ("helpers.py", 2, "SYN302", True) in found
    assert ("helpers.py", 5, "SYN302", False) in found


def test_a_single_file_check_reads_its_imports_from_disk(tmp_path):
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sampler.py": SAMPLER,
        "train.py": TRAIN,
    })
    train = [p for p in paths if p.endswith("train.py")]
    assert ("train.py", 7, "SYN201", True) in _found(train)


def test_an_edit_reanalyses_the_files_that_depend_on_it(tmp_path):
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sampler.py": SAMPLER,
        "train.py": TRAIN,
    })
    cache = tmp_path / ".cache"
    assert ("train.py", 7, "SYN201", True) in _found(paths, cache_dir=cache)
    sampler = tmp_path / "pkg" / "sampler.py"
    sampler.write_text(sampler.read_text().replace("return Rays(n)", "return HostRays(n)"))
    assert not any(name == "train.py" for name, *_ in _found(paths, cache_dir=cache))
    sampler.write_text(sampler.read_text().replace("return HostRays(n)", "return Rays(n)"))
    assert ("train.py", 7, "SYN201", True) in _found(paths, cache_dir=cache)


def test_an_edit_relints_only_the_files_that_asked_about_what_changed(tmp_path, monkeypatch):
    """train.py asks about `Rays.depth`/`Rays.valid`; an edit that changes only another
    attribute of the class leaves its lint as it was (no second walk), while one that
    changes what it asked about lints it again."""
    from synclint.run.workers import Worker

    linted = []
    real = Worker._lint
    monkeypatch.setattr(Worker, "_lint", lambda self, path, *a: linted.append(Path(path).name) or real(self, path, *a))
    sampler = SAMPLER.replace("self.valid = self.depth > 0.5\n", "self.valid = self.depth > 0.5\n            self.extra = None\n", 1)
    paths = _project(tmp_path, {"pkg/__init__.py": "", "pkg/sampler.py": sampler, "train.py": TRAIN})
    cache = tmp_path / ".cache"
    assert ("train.py", 7, "SYN201", True) in _found(paths, cache_dir=cache, jobs=1)
    assert "train.py" in linted
    path = tmp_path / "pkg" / "sampler.py"
    linted.clear()
    path.write_text(path.read_text().replace("self.extra = None", "self.extra = torch.zeros(2, device='cuda')"))
    assert ("train.py", 7, "SYN201", True) in _found(paths, cache_dir=cache, jobs=1)
    assert linted and "train.py" not in linted  # sampler.py itself is linted again
    linted.clear()
    path.write_text(path.read_text().replace('self.depth = torch.rand(n, device="cuda")', "self.depth = torch.rand(n)", 1))
    assert not any(name == "train.py" for name, *_ in _found(paths, cache_dir=cache, jobs=1))
    assert "train.py" in linted


def test_an_edit_two_modules_away_reaches_a_file_whose_facts_were_not_remade(tmp_path, monkeypatch):
    """The edit path skips making a file's facts when no summary they read changed
    (`Project.facts_unchanged`): what `train.py` is told comes through a re-export in
    `api.py` from `impl.py`, so an edit of `impl.py` must still reach it, while an edit of
    an unrelated module leaves it alone (not even its facts are made again)."""
    from synclint.project import Project

    remade = []
    real = Project.facts_for
    monkeypatch.setattr(Project, "facts_for", lambda self, path: remade.append(Path(path).name) or real(self, path))
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/impl.py": "import torch\n\ndef make(n):\n    return torch.rand(n, device='cuda')\n",
        "pkg/api.py": "from pkg.impl import make\n",
        "pkg/other.py": "import torch\n\ndef host(n):\n    return torch.rand(n)\n",
        "train.py": "from pkg.api import make\n\nfor _ in range(10):\n    print(make(4).sum().item())\n",
    })
    cache = tmp_path / ".cache"
    assert ("train.py", 4, "SYN101", True) in _found(paths, cache_dir=cache, jobs=1)
    other = tmp_path / "pkg" / "other.py"
    for i in range(2):  # (the first edit after a cold run remakes the facts its second round changed)
        other.write_text(other.read_text() + f"\nx{i} = 1\n")
        remade.clear()
        assert ("train.py", 4, "SYN101", True) in _found(paths, cache_dir=cache, jobs=1)
    assert "train.py" not in remade and "other.py" in remade
    impl = tmp_path / "pkg" / "impl.py"
    impl.write_text(impl.read_text().replace(", device='cuda'", ""))
    assert not any(name == "train.py" for name, *_ in _found(paths, cache_dir=cache, jobs=1))
    impl.write_text(impl.read_text().replace("torch.rand(n)", "torch.rand(n, device='cuda')"))
    assert ("train.py", 4, "SYN101", True) in _found(paths, cache_dir=cache, jobs=1)


def test_a_one_line_helper_of_another_module_follows_each_calls_arguments(tmp_path):
    """G2: `doubled(cuda_tensor)` is a CUDA tensor at the call site, `doubled(cpu_tensor)` a
    CPU one (not the join over callers), with the helper's own imports (`F` there, not here)."""
    paths = _project(tmp_path, {
        "lib.py": """\
            import torch
            import torch.nn.functional as F

            def doubled(lengths):
                return lengths * 2

            def probs(logits):
                return F.softmax(logits, dim=-1)
            """,
        "train.py": """\
            import torch
            from lib import doubled, probs

            F = None  # this module's own `F`: not the helper's

            def train(steps):
                for _ in range(steps):
                    b = float(doubled(torch.ones(2, device="cuda")).sum())
                    c = float(doubled(torch.ones(2)).sum())
                    d = float(probs(torch.ones(2, device="cuda")).max())
                    e = float(probs(torch.ones(2)).max())
            """,
    })
    found = _found(paths)
    assert {(n, row) for n, row, code, _ in found if code == "SYN104"} == {("train.py", 8), ("train.py", 10)}


def test_a_short_helper_of_another_module_follows_each_calls_arguments(tmp_path):
    """G2 beyond one line (trl's `pad`): `pad([torch.tensor(ids) ...]).to(device)` copies a
    CPU tensor every step; the same helper given GPU tensors returns a GPU tensor, so its
    `.to(device)` is no copy (the near-miss), and its `.item()` is a read-back."""
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": """\
            import numpy as np
            import torch

            def pad(tensors, padding_value=0):
                shape = np.max([t.shape for t in tensors], 0).tolist()
                out = torch.full((len(tensors), *shape), padding_value, device=tensors[0].device)
                for i, t in enumerate(tensors):
                    out[i][: t.shape[0]] = t
                return out
            """,
        "pkg/train.py": """\
            import torch
            from pkg.utils import pad

            def train(batches, device):
                for ids in batches:
                    x = pad([torch.tensor(i) for i in ids]).to(device)
                    y = pad([x[0], x[1]]).to(device)
                    n = pad([x[0]]).sum().item()
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths) if n == "train.py"}
    assert found == {("train.py", 6, "SYN304"), ("train.py", 8, "SYN101")}
    # checked as `synclint check pkg/` in a tree with no project marker: the files' common
    # folder is the package itself, and `pkg.utils` is still found
    (tmp_path / "pyproject.toml").unlink()
    assert {(n, row, code) for n, row, code, _ in _found([p for p in paths if "/pkg/" in p]) if n == "train.py"} == found


def test_an_update_loop_over_another_modules_cuda_model_in_a_file_that_never_says_cuda(tmp_path):
    """G8: SYN503 asks where the parameters are, not whether the file mentions CUDA; the
    near-miss is the same loop over a model the other module leaves on the CPU."""
    paths = _project(tmp_path, {
        "optim.py": """\
            import torch

            class Trainer:
                def __init__(self):
                    self.model = torch.nn.Linear(4, 4).cuda()
                    self.host = torch.nn.Linear(4, 4)
            """,
        "train.py": """\
            import torch
            from optim import Trainer

            def train(steps):
                t = Trainer()
                for _ in range(steps):
                    for p in t.model.parameters():
                        p.data.add_(p.grad, alpha=-0.1)
                    for p in t.host.parameters():
                        p.data.add_(p.grad, alpha=-0.1)
            """,
    })
    assert {(n, row) for n, row, code, _ in _found(paths) if code == "SYN503"} == {("train.py", 7)}


def test_a_file_that_never_names_torch_sees_the_gpu_tensors_other_modules_give_it(tmp_path):
    """G4: `train.py` only uses what `logs.py` returns; the prefilter would skip it (no
    torch, tensor or cuda in it), but it imports a project module with tensors. The
    near-miss is a file that imports only the standard library: still not parsed."""
    paths = _project(tmp_path, {
        "logs.py": """\
            import torch

            class Running:
                def __init__(self):
                    self.total = torch.zeros((), device="cuda")

            def step_loss(n):
                return torch.rand(n, device="cuda").mean()
            """,
        "train.py": """\
            from logs import Running, step_loss

            def train(steps):
                running = Running()
                for _ in range(steps):
                    loss = step_loss(8)
                    print(f"loss {loss:.4f}")
                    print("running", running.total)
            """,
        "util.py": """\
            import os

            def show(x):
                print(f"{x}")
            """,
    })
    found = _found(paths)
    assert {(n, row, code) for n, row, code, _ in found} == {("train.py", 7, "SYN106"), ("train.py", 8, "SYN106")}
    cache = tmp_path / ".cache"
    assert _found(paths, cache_dir=cache) == found == _found(paths, cache_dir=cache)  # cached alike
    # another selection (a findings cache of its own) over the same cached summaries: a file
    # forced by the first run stays forced
    assert _found(paths, cache_dir=cache, selection_key="another") == found


def test_a_batchs_device_read_as_a_tensors_reaches_a_helper_that_never_names_torch(tmp_path):
    """`img` is a loader's batch moved with `.cuda()` (a batch may be a tuple of tensors, but
    `img.device` is read only of a tensor): what `.to(img.device)` makes is on the GPU, and
    the helper module that never names torch is told so. Near miss: the same helper given a
    host tensor reports nothing."""
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/loop.py": """\
            from pkg.mid import step, host_step

            def train(loader):
                for x in loader:
                    step(x.cuda())
                    host_step(x)
            """,
        "pkg/mid.py": """\
            import numpy as np
            import torch
            from pkg.util import summarize, describe

            def step(img):
                boxes = torch.from_numpy(np.zeros(4)).to(img.device)
                return summarize(boxes)

            def host_step(img):
                return describe(torch.from_numpy(np.zeros(4)))
            """,
        "pkg/util.py": """\
            def summarize(x):
                print(x.sum().item())

            def describe(x):
                print(x.sum().item())
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths)}
    assert ("util.py", 2, "SYN101") in found
    assert ("util.py", 5, "SYN101") not in found


def test_a_helper_of_another_module_returns_a_parameter_only_where_its_type_test_says(tmp_path):
    """`to_scalar` gives `value.item()` for a tensor and `value` for anything else: at a call
    with a CUDA tensor the second return is never reached, so the result is a Python number,
    also where the helper comes from another module's summary and from the cache. Near miss:
    `to_host` returns its parameter where the test says it is a tensor."""
    paths = _project(tmp_path, {
        "util.py": """\
            import torch

            def to_scalar(value):
                if isinstance(value, torch.Tensor):
                    return value.item()
                return value

            def to_host(value):
                if isinstance(value, (int, float)):
                    return value
                return value.detach()
            """,
        "train.py": """\
            import torch
            from util import to_scalar, to_host

            def train(xs):
                for batch in xs:
                    loss = batch.cuda().pow(2).mean()
                    print(f"loss {to_scalar(loss):.4f}")
                    print(to_host(loss))
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths)}
    assert ("train.py", 8, "SYN106") in found and ("train.py", 7, "SYN106") not in found
    cache = tmp_path / ".cache"
    assert _found(paths, cache_dir=cache) == _found(paths, cache_dir=cache) == _found(paths)


def test_a_helper_of_another_module_returns_a_host_tensor_only_where_the_call_asks_for_one(tmp_path):
    """LLaVA's `tokenizer_image_token(prompt, tokenizer, return_tensors='pt')` (mm_utils.py)
    gives `torch.tensor(ids)` only behind `if return_tensors == 'pt'` (a list of ids
    otherwise), beside a nested function: the call that asks for a tensor moves a CPU tensor,
    also from the summary and the cache. Near misses: the call that passes nothing, and one
    whose helper makes the tensor on the GPU."""
    paths = _project(tmp_path, {
        "mm_utils.py": """\
            import torch

            def tokenizer_image_token(prompt, tokenizer, image_token_index=-200, return_tensors=None):
                chunks = [tokenizer(c).input_ids for c in prompt.split("<image>")]

                def insert_separator(xs, sep):
                    return [e for pair in zip(xs, [sep] * len(xs)) for e in pair][:-1]

                input_ids = []
                for x in insert_separator(chunks, [image_token_index]):
                    input_ids.extend(x)
                if return_tensors is not None:
                    if return_tensors == "pt":
                        return torch.tensor(input_ids, dtype=torch.long)
                    raise ValueError(return_tensors)
                return input_ids

            def on_device(ids, return_tensors=None):
                if return_tensors == "pt":
                    return torch.tensor(ids, device="cuda")
                return ids
            """,
        "run.py": """\
            import torch
            from mm_utils import tokenizer_image_token, on_device

            def run(model, tokenizer, prompts):
                for p in prompts:
                    a = tokenizer_image_token(p, tokenizer, return_tensors="pt").unsqueeze(0).cuda()
                    b = tokenizer_image_token(p, tokenizer)
                    c = on_device(b, return_tensors="pt").unsqueeze(0).cuda()
                    model(a, torch.tensor(b).cuda(), c)
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths) if n == "run.py" and code.startswith("SYN3")}
    assert {row for _, row, _ in found} == {6, 9}  # (row 9: `torch.tensor(b).cuda()`, the list's copy)
    cache = tmp_path / ".cache"
    assert _found(paths, cache_dir=cache) == _found(paths, cache_dir=cache) == _found(paths)


def test_a_numpy_script_that_never_names_torch_gives_its_loop_heat_to_the_project_code_it_calls(tmp_path):
    """A detectron2-style demo (`demo.py`: NumPy and OpenCV, no torch) runs the predictor of
    `predictor.py` once per input image: the prefilter reads it (it names NumPy) but only
    a file that names torch was linted, so its loop gave no heat. The near miss: the same
    call made once, outside the loop."""
    paths = _project(tmp_path, {
        "predictor.py": """\
            import torch

            class Demo:
                def __init__(self):
                    self.model = torch.nn.Linear(2, 2).cuda()

                def run_on_image(self, image):
                    out = self.model(image)
                    return out.cpu()

                def run_once(self, image):
                    out = self.model(image)
                    return out.cpu()
            """,
        "demo.py": """\
            import sys
            import numpy as np
            from predictor import Demo

            if __name__ == "__main__":
                demo = Demo()
                demo.run_once(np.zeros(2))
                for path in sys.argv[1:]:
                    predictions = demo.run_on_image(np.load(path))
            """,
    })
    assert {(n, row, hot) for n, row, code, hot in _found(paths) if code == "SYN103"} == {
        ("predictor.py", 9, True), ("predictor.py", 13, False)}


def test_a_local_alias_of_imported_functions_calls_them_where_it_is_called(tmp_path):
    """Open-Sora's training script picks `prepare = prepare_causal if ... else
    prepare_uncausal` (both imported from the package) and calls the alias from the per-step
    `prepare_inputs`: both helpers run every step. The near miss: an imported helper the
    script only names (kept in a list it never calls through)."""
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": """\
            import torch

            def prepare_causal(x):
                return x.sum().item()

            def prepare_uncausal(x):
                return x.max().item()

            def listed(x):
                return x.min().item()
            """,
        "train.py": """\
            import torch
            from pkg.helpers import prepare_causal, prepare_uncausal, listed

            def main(cfg, loader, model, opt):
                if cfg.causal:
                    prepare = prepare_causal
                else:
                    prepare = prepare_uncausal
                names = [listed]

                def prepare_inputs(batch):
                    return prepare(batch.cuda())

                for batch in loader:
                    loss = model(prepare_inputs(batch))
                    loss.backward()
                    opt.step()
            """,
    })
    assert {(n, row, hot) for n, row, code, hot in _found(paths) if code == "SYN101"} == {
        ("helpers.py", 4, True), ("helpers.py", 7, True), ("helpers.py", 10, False)}


def test_summaries_survive_json_and_references_resolve():
    from synclint.engine import analyse
    from synclint.semantic.facts import ModuleSummary

    a = analyse("import torch\nfrom other import build\nclass C:\n    def __init__(self):\n"
                "        self.h = build()\n        self.x = torch.zeros(2, device='cuda')\n", "m.py", "m")
    s = a.summary
    again = ModuleSummary.from_json(s.to_json())
    assert again == s
    assert s.classes["C"].attrs["h"].cls == "@other.build"  # a reference the linker resolves
    assert s.classes["C"].attrs["x"].device == "cuda"


def test_a_base_class_call_reaches_the_override_in_another_module(tmp_path):
    paths = _project(tmp_path, {
        "renderer.py": """\
            import torch

            class Renderer(torch.nn.Module):
                def color(self, x, mask):
                    raise NotImplementedError()

                def render(self, x, fast):
                    go = self.run_fast if fast else self.run
                    return go(x)

                def run(self, x):
                    mask = x.sum(-1) > 0
                    return self.color(x, mask=mask.reshape(-1))

                def run_fast(self, x):
                    return self.color(x, mask=torch.ones(x.shape[0], dtype=torch.bool))
            """,
        "network.py": """\
            import torch
            from renderer import Renderer

            class Network(Renderer):
                def color(self, x, mask=None):
                    if mask is not None:
                        x = x[mask]
                    return x
            """,
        "train.py": """\
            import torch
            from network import Network

            def train(steps):
                model = Network().cuda()
                for _ in range(steps):
                    out = model.render(torch.rand(8, 3, device="cuda"), steps > 4)
            """,
    })
    found = _found(paths)
    # `self.color(...)` in the base class runs the subclass's color, every step, with a
    # CUDA mask from `run` (a CPU one from `run_fast`: the join still holds a GPU path)
    assert ("network.py", 7, "SYN201", True) in found


def test_a_mask_from_the_base_class_on_the_cpu_is_not_a_sync(tmp_path):
    paths = _project(tmp_path, {
        "renderer.py": """\
            import torch

            class Renderer:
                def run(self, x):
                    return self.color(x, torch.zeros(4, dtype=torch.bool))
            """,
        "network.py": """\
            import torch
            from renderer import Renderer

            class Network(Renderer):
                def color(self, x, mask):
                    return x[mask]
            """,
    })
    assert not any(name == "network.py" for name, *_ in _found(paths))


def test_star_imported_classes_and_methods_of_other_modules_instances(tmp_path):
    paths = _project(tmp_path, {
        "utils.py": """\
            import torch

            class Meter:
                def update(self, loss):
                    self.total = loss.item()

            class Trainer:
                def __init__(self, model):
                    self.model = model

                def train_step(self, x):
                    return self.model.forward_loss(x)
            """,
        "model.py": """\
            import torch

            class Net(torch.nn.Module):
                def forward_loss(self, x):
                    return x.sum().item()
            """,
        "main.py": """\
            import torch
            from utils import *
            from model import Net

            meter = Meter()
            trainer = Trainer(Net().cuda())
            for step in range(10):
                x = torch.ones(3, device="cuda")
                meter.update(x.sum())
            """,
    })
    found = _found(paths)
    assert ("utils.py", 5, "SYN101", True) in found  # `meter.update` called every step
    # `Trainer(...)` through the star import: its model is a Net, so train_step (hot by
    # name) runs Net.forward_loss
    assert ("model.py", 5, "SYN101", True) in found


def test_the_flake8_plugin_and_the_lsp_see_what_check_sees(tmp_path):
    from synclint.frontends.flake8_plugin import Plugin
    from synclint.frontends.lsp_analysis import lint_document

    paths = _project(tmp_path, {"pkg/__init__.py": "", "pkg/sampler.py": SAMPLER, "train.py": TRAIN})
    train = next(p for p in paths if p.endswith("train.py"))
    text = Path(train).read_text()
    assert ("train.py", 7, "SYN201", True) in _found([train])  # the mask comes from pkg/sampler.py
    flake8 = [(row, msg.split()[0]) for row, _, msg, _ in Plugin(None, text.splitlines(True), train).run()]
    assert (7, "SYN201") in flake8
    findings, error, _ = lint_document(text, train)
    assert error is None and [(f.row, f.code, f.hot) for f in findings] == [(7, "SYN201", True)]
    # an unsaved edit in the editor is what the LSP lints: the mask now comes from HostRays
    edited = text.replace("make_rays(10)", "HostRays(10)").replace("import make_rays", "import make_rays, HostRays")
    assert lint_document(edited, train)[:2] == ([], None)


def test_a_method_call_on_an_instance_of_one_of_two_classes_reaches_both(tmp_path):
    # deep-text-recognition-benchmark: `converter = CTCLabelConverter(...) if ... else
    # AttnLabelConverter(...)` in train.py, the classes in utils.py; `converter.decode(preds)`
    # every step passes the GPU predictions to both classes' `decode`, which run hot
    paths = _project(tmp_path, {
        "utils.py": """\
            import torch

            class CTCConverter:
                def decode(self, t):
                    return [i for i in range(t.shape[0]) if t[i] != 0]

            class AttnConverter:
                def decode(self, t):
                    return t.argmax(-1).tolist()
            """,
        "train.py": """\
            import torch
            from utils import AttnConverter, CTCConverter

            def main(opt, loader):
                converter = CTCConverter() if opt.ctc else AttnConverter()
                model = torch.nn.Linear(4, 4).cuda()
                for x in loader:
                    preds = model(x.cuda(non_blocking=True))
                    converter.decode(preds)
            """,
    })
    found = {(n, row, code, hot) for n, row, code, hot in _found(paths) if code.startswith("SYN1")}
    assert ("utils.py", 5, "SYN105", True) in found
    assert ("utils.py", 9, "SYN102", True) in found


def test_a_function_a_factory_of_another_module_returns_runs_where_it_is_called(tmp_path):
    """score_sde: `train_step_fn = losses.get_step_fn(...)` once, then `train_step_fn(state,
    batch)` every step: the closure `step_fn` is hot (not the factory), and its return, the
    loss, is a tensor where the loop reads it."""
    paths = _project(tmp_path, {
        "losses.py": """\
            import torch

            def get_step_fn(sde):
                print(torch.ones(1, device="cuda").item())

                def step_fn(state, batch):
                    loss = torch.mean(state["model"](batch))
                    print(loss.item())
                    return loss
                return step_fn
            """,
        "run.py": """\
            import torch
            import losses

            def train(loader):
                state = {"model": torch.nn.Linear(4, 4).cuda()}
                train_step_fn = losses.get_step_fn(None)
                for batch in loader:
                    loss = train_step_fn(state, batch.cuda(non_blocking=True))
                    if loss.isnan():
                        break
            """,
    })
    found = {(n, row, code, hot) for n, row, code, hot in _found(paths) if code in ("SYN101", "SYN105")}
    assert found == {("losses.py", 4, "SYN101", False), ("losses.py", 8, "SYN101", True),
                     ("run.py", 9, "SYN105", True)}


def test_a_meter_in_a_module_that_never_names_torch_holds_the_gpu_tensors_it_is_given(tmp_path):
    """swav/Swin: `top1.update(acc1[0], n)` every step, `AverageMeter` in a utils.py that
    never names torch, and its fields formatted in a log line (f-string or `.format` with
    attribute fields). The near-miss: `batch_time`, fed floats, formatted beside it."""
    paths = _project(tmp_path, {
        "utils.py": """\
            class AverageMeter:
                def __init__(self):
                    self.val = self.sum = self.count = self.avg = 0

                def update(self, val, n=1):
                    self.val = val
                    self.sum += val * n
                    self.count += n
                    self.avg = self.sum / self.count
            """,
        "train.py": """\
            import logging
            import time
            import torch
            from utils import AverageMeter

            logger = logging.getLogger(__name__)

            def train(loader, model):
                top1, batch_time = AverageMeter(), AverageMeter()
                end = time.time()
                for i, x in enumerate(loader):
                    out = model(x.cuda(non_blocking=True))
                    top1.update((out.argmax(1) == 0).float().mean(), x.size(0))
                    batch_time.update(time.time() - end)
                    if i % 50 == 0:
                        logger.info("Time {bt.avg:.3f} Prec {top1.avg:.3f}".format(bt=batch_time, top1=top1))
                        logger.info(f"time {batch_time.avg:.3f}")
                print(f"acc {top1.avg:.3f}")
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths) if code == "SYN106"}
    assert found == {("train.py", 16, "SYN106"), ("train.py", 18, "SYN106")}


def test_every_kind_of_summary_fact_reads_back_from_the_cache_as_itself():
    """The summary cache keeps an entry only if it reads back as exactly what was written
    (`cache._summary`): a field that changes shape on the way (a tuple read back as a list)
    would make every run summarise that file again."""
    import json

    from synclint.engine import analyse
    from synclint.semantic.facts import ModuleSummary

    src = textwrap.dedent("""\
        import torch

        class Meter:
            def update(self, val, n=1):
                self.val = val
                self.sum = val * n

        def pad(tensors):
            out = torch.zeros(len(tensors), device=tensors[0].device)
            return out

        def doubled(x):
            return x * 2

        def make_step():
            def step(x):
                return x.sum()
            return step

        conv = Meter() if torch.cuda.is_available() else Meter()

        def run(model, train_loader, device):
            for batch in train_loader:
                model(batch, device)

        class Model:
            step = doubled

        MODELS.register_module(module=Model)
        """)
    s = analyse(src, "m.py", "m").summary
    assert s.registered == [("MODELS", "Model")]
    assert s.classes["Meter"].fed and "pad" in s.one_liners and "doubled" in s.one_liners
    assert s.library_aliases == {"torch": "torch"} and s.classes["Model"].method_aliases == {"step": "doubled"}
    assert [names for names, _, _ in s.opaque_calls] == [["batch", "device"]]
    stored = json.loads(json.dumps(s.to_json()))
    assert ModuleSummary.from_json(stored).to_json() == stored


def test_rollout_storage_moved_once_then_filled_every_step(tmp_path):
    """pytorch-a2c-ppo-acktr-gail: a storage object's CPU buffers are moved with
    `self.obs = self.obs.to(device)` once (a setup move, as `model.to(device)`), then filled
    every step; copies between two of its own slices stay on one device; minibatches are
    taken with the lists a BatchSampler yields (a host index, copied every time) and with a
    0-d CPU element of `randperm` (a select read on the host, no copy)."""
    paths = _project(tmp_path, {
        "storage.py": """\
            import torch
            from torch.utils.data.sampler import BatchSampler, SubsetRandomSampler

            class Storage:
                def __init__(self, n):
                    self.obs = torch.zeros(n + 1, 4)

                def to(self, device):
                    self.obs = self.obs.to(device)

                def after_update(self):
                    self.obs[0].copy_(self.obs[-1])

                def batches(self, n):
                    for indices in BatchSampler(SubsetRandomSampler(range(n)), 2, drop_last=True):
                        yield self.obs[indices]
                    perm = torch.randperm(n)
                    for i in range(n):
                        yield self.obs[:, perm[i]]
            """,
        "main.py": """\
            import torch
            from storage import Storage

            def main(args):
                device = torch.device("cuda:0" if args.cuda else "cpu")
                rollouts = Storage(8)
                rollouts.to(device)
                for _ in range(10):
                    for b in rollouts.batches(8):
                        pass
                    rollouts.after_update()
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths) if code.startswith("SYN3")}
    assert found == {("storage.py", 16, "SYN305")}


def test_classes_a_package_reexports_are_known_through_the_package(tmp_path):
    # a2c-ppo: `from a2c_ppo_acktr import algo`, then `agent = algo.A2C_ACKTR(...)` or
    # `algo.PPO(...)` by the arguments; the package's `__init__` imports both classes. The
    # update runs every iteration, so both classes' `.item()` calls are hot.
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/algo/__init__.py": "from .a2c import A2C\nfrom .ppo import PPO\n",
        "pkg/algo/a2c.py": """\
            class A2C:
                def update(self, loss):
                    return loss.item()
            """,
        "pkg/algo/ppo.py": """\
            class PPO:
                def update(self, loss):
                    return loss.item()
            """,
        "main.py": """\
            import torch
            from pkg import algo

            def main(kind, updates):
                if kind == "a2c":
                    agent = algo.A2C()
                else:
                    agent = algo.PPO()
                for _ in range(updates):
                    agent.update(torch.ones(3, device="cuda").sum())
            """,
    })
    found = _found(paths)
    assert ("a2c.py", 3, "SYN101", True) in found
    assert ("ppo.py", 3, "SYN101", True) in found


def test_a_method_a_class_inherits_runs_hot_from_the_subclass_forward(tmp_path):
    # a2c-ppo's model.py: `CNNBase(NNBase).forward` calls `self._forward_gru(...)`, which
    # only NNBase defines (here in another module); near-miss: a method no caller reaches
    # stays cold
    paths = _project(tmp_path, {
        "base.py": """\
            import torch

            class NNBase(torch.nn.Module):
                def _forward_gru(self, x, masks):
                    return (masks == 0).nonzero()

                def unused(self, masks):
                    return (masks == 0).nonzero()
            """,
        "model.py": """\
            import torch
            from base import NNBase

            class CNNBase(NNBase):
                def forward(self, x, masks):
                    return self._forward_gru(x, masks)

            class Local(torch.nn.Module):
                def helper(self, m):
                    return (m == 0).nonzero()

            class LocalSub(Local):
                def forward(self, x):
                    return self.helper(x)
            """,
    })
    found = _found(paths)
    assert ("base.py", 5, "SYN203", True) in found
    assert ("base.py", 8, "SYN203", False) in found
    assert ("model.py", 10, "SYN203", True) in found


def test_a_library_base_class_step_runs_the_subclass_step_async_and_step_wait(tmp_path):
    # a2c-ppo's envs.py: `VecPyTorch(VecEnvWrapper)` defines `step_async`/`step_wait`;
    # the training loop calls `envs.step(action)`, which baselines' and stable-baselines3's
    # VecEnvWrapper turn into those two calls (library.toml `template_methods`). Near-miss:
    # a base the library table does not name tells nothing, so its subclass stays cold.
    paths = _project(tmp_path, {
        "envs.py": """\
            import torch
            from stable_baselines3.common.vec_env import VecEnvWrapper
            from other_lib import Wrapper

            class VecPyTorch(VecEnvWrapper):
                def step_async(self, actions):
                    self.venv.step_async(actions.cpu().numpy())

                def step_wait(self):
                    obs, reward, done, info = self.venv.step_wait()
                    return torch.from_numpy(obs).float().to(self.device), reward, done, info

            class Unknown(Wrapper):
                def step_async(self, actions):
                    self.venv.step_async(actions.cpu().numpy())

            def make_envs(venv, device):
                return VecPyTorch(venv, device)
            """,
        "main.py": """\
            import torch
            from envs import Unknown, make_envs

            def main(venv, steps):
                envs = make_envs(venv, torch.device("cuda"))
                other = Unknown(venv)
                for _ in range(steps):
                    action = torch.zeros(4, device="cuda")
                    envs.step(action)
                    other.step(action)
            """,
    })
    found = _found(paths)
    assert ("envs.py", 7, "SYN103", True) in found
    assert ("envs.py", 11, "SYN304", True) in found
    assert ("envs.py", 15, "SYN103", False) in found


def test_a_star_import_brings_the_libraries_the_module_imports(tmp_path):
    # the SSD tutorial's model.py: `from torch import nn; from utils import *`, and uses
    # `torch` (which only utils imports) for every tensor it makes each step. Near-miss:
    # a name utils keeps private (`_np`) is not brought, so nothing is said about it.
    paths = _project(tmp_path, {
        "utils.py": """\
            import torch
            import numpy as _np

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            """,
        "model.py": """\
            from torch import nn
            from utils import *

            class Loss(nn.Module):
                def forward(self, scores, n):
                    labels = torch.zeros((n,), dtype=torch.long).to(device)
                    other = _np.zeros(n)
                    return scores + labels
            """,
    })
    found = _found(paths)
    assert ("model.py", 6, "SYN301", True) in found
    assert not any(row == 7 for name, row, _, _ in found if name == "model.py")


def test_a_value_passed_along_a_chain_of_five_modules_reaches_the_last(tmp_path):
    # each module passes on the parameter it gets from the one before
    files = {"a.py": """\
        import torch
        from b import f

        def main():
            f(torch.ones(3, device="cuda"))
        """}
    for here, there, name, nxt in (("b", "c", "f", "g"), ("c", "d", "g", "h"), ("d", "e", "h", "k")):
        files[f"{here}.py"] = f"import torch\nfrom {there} import {nxt}\n\ndef {name}(x):\n    return {nxt}(x)\n"
    files["e.py"] = "import torch\n\ndef k(x):\n    return x.sum().item()\n"
    paths = _project(tmp_path, files)
    assert ("e.py", 4, "SYN101", False) in _found(paths)


def test_a_method_bound_to_another_modules_function_in_the_class_body(tmp_path):
    # whisper: `from .decoding import decode as decode_function`, then `decode =
    # decode_function` in `class Whisper`; transcribe's per-segment loop calls
    # `model.decode(segment)`. Near-miss: `detect = detect_function`, called once, stays cold.
    paths = _project(tmp_path, {
        "decoding.py": """\
            import torch

            def decode(model, mel):
                return mel.sum().item()

            def detect(model, mel):
                return mel.sum().item()
            """,
        "model.py": """\
            import torch
            from decoding import decode as decode_function
            from decoding import detect as detect_function

            class Whisper(torch.nn.Module):
                decode = decode_function
                detect = detect_function
            """,
        "transcribe.py": """\
            import torch
            from model import Whisper

            def transcribe(mel):
                model = Whisper().cuda()
                model.detect(mel.cuda())
                for segment in mel.split(3000):
                    model.decode(segment.cuda())
            """,
    })
    found = _found(paths)
    assert ("decoding.py", 4, "SYN101", True) in found
    assert ("decoding.py", 7, "SYN101", False) in found


DETERMINISM = """\
import torch


def matrix(x, device=None):
    assert device is None or device == x.device
    return x


def a():
    t = torch.ones(3, device="cuda")
    return matrix(t, device=t.device)


def b(d):
    t = torch.ones(3, device="cuda")
    return matrix(t, device=d)


def c():
    t = torch.ones(3, device="cuda")
    return matrix(t, device=t[0])
"""


def test_the_findings_do_not_depend_on_the_hash_seed(tmp_path):
    # stylegan2-ada's `matrix(*rows, device=None)`: its callers pass a device, an unknown and
    # a tensor; joins of three values are not associative, and the callers were joined in a
    # set's order, which Python's hash seed changes from run to run
    import os
    import subprocess
    import sys

    (tmp_path / "m.py").write_text(DETERMINISM)
    outputs = set()
    for seed in range(1, 7):
        env = dict(os.environ, PYTHONHASHSEED=str(seed), NO_COLOR="1")
        proc = subprocess.run([sys.executable, "-m", "synclint", "check", "--no-cache", "--exit-zero",
                               "--output-format", "concise", "m.py"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True)
        outputs.add(proc.stdout)
    assert len(outputs) == 1, outputs


def test_a_helper_defined_below_its_call_returns_what_the_project_tells(tmp_path):
    # CutMix's train.py: `err1, err5 = accuracy(output, target)` is called above `def
    # accuracy`, and `output` is on the GPU only because of the model class another module
    # defines; the first walk of the file (without the project) took the CPU for it
    net = """\
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x)
        """
    train = """\
        import torch
        import net as N

        def main(loader):
            model = N.Net()
            model = torch.nn.DataParallel(model).cuda()
            train(loader, model)

        def train(loader, model):
            model.train()
            for x, y in loader:
                out = model(x)
                err, = accuracy(out, y)
                print(err.item())

        def accuracy(output, target):
            res = []
            wrong = (output.argmax(1) != target).float().sum()
            res.append(wrong)
            return res
        """
    found = _found(_project(tmp_path / "gpu", {"net.py": net, "train.py": train}))
    assert ("train.py", 14, "SYN101", True) in found
    # near-miss: the same model left on the CPU, so its output (and the error) is too
    cpu = train.replace("torch.nn.DataParallel(model).cuda()", "model")
    found = _found(_project(tmp_path / "cpu", {"net.py": net, "train.py": cpu}))
    assert not {f for f in found if f[0] == "train.py" and f[2] == "SYN101"}


def test_a_meter_class_defined_below_its_use_holds_what_its_updates_put_there(tmp_path):
    # simsiam's main_lincls.py: `return top1.avg` in validate(), with `class AverageMeter`
    # at the bottom of the file; its `update(acc1[0])` is given CUDA accuracies
    train = """\
        import torch

        def validate(loader, model):
            top1 = AverageMeter()
            for x in loader:
                out = model(x.cuda())
                top1.update(out.sum())
            return top1.avg

        def main(loader):
            model = torch.nn.DataParallel(build()).cuda()
            best = 0
            acc = validate(loader, model)
            best = max(acc, best)

        def build():
            return MODELS["resnet"]()

        class AverageMeter(object):
            def __init__(self):
                self.reset()

            def reset(self):
                self.avg = 0
                self.sum = 0
                self.count = 0

            def update(self, val, n=1):
                self.sum += val * n
                self.count += n
                self.avg = self.sum / self.count
        """
    found = _found(_project(tmp_path / "gpu", {"train.py": train}))
    assert ("train.py", 14, "SYN108", False) in found
    # near-miss: the meter is given Python numbers
    host = train.replace("top1.update(out.sum())", "top1.update(out.sum().item())")
    found = _found(_project(tmp_path / "host", {"train.py": host}))
    assert not {f for f in found if f[1] == 14}


ALGORITHMS = """\
    import torch

    def get_algorithm_class(name):
        return globals()[name]

    class Algorithm(torch.nn.Module):
        def update(self, minibatches):
            raise NotImplementedError

    class ERM(Algorithm):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 2)

        def update(self, minibatches):
            x = torch.cat([x for x, y in minibatches])
            return {"loss": self.net(x).sum().item()}

    class Mixup(ERM):
        def update(self, minibatches):
            x = torch.cat([x for x, y in minibatches])
            return {"loss": x.mean().item()}

    def summary(minibatches):
        return {"loss": minibatches[0][0].sum().item()}
"""

REGISTRY_TRAIN = """\
    import torch
    from pkg import algorithms

    device = "cuda"
    algorithm_class = algorithms.get_algorithm_class("ERM")
    algorithm = algorithm_class()
    algorithm.to(device)
    for step in range(1000):
        minibatches = [(torch.rand(8, 4, device=device), torch.rand(8, device=device))]
        vals = algorithm.update(minibatches)
"""


def test_a_class_chosen_by_name_from_globals_runs_its_family_overrides_hot(tmp_path):
    # DomainBed: `algorithms.get_algorithm_class(args.algorithm)` returns `globals()[name]`,
    # any class of the module, all `Algorithm`s; `algorithm.update(...)` every step runs
    # whichever `update` overrides `Algorithm.update`, the grandchild's included
    paths = _project(tmp_path, {"pkg/__init__.py": "", "pkg/algorithms.py": ALGORITHMS,
                                "train.py": REGISTRY_TRAIN})
    found = {(n, row, hot) for n, row, code, hot in _found(paths) if code == "SYN101"}
    assert ("algorithms.py", 17, True) in found and ("algorithms.py", 22, True) in found
    # near-miss: a function of the module that no step calls stays cold
    assert ("algorithms.py", 25, False) in found


def test_globals_of_a_module_of_two_families_is_not_followed(tmp_path):
    # a module whose classes are not one family: `globals()[name]` may be any, so nothing is
    # known and no `update` is made hot by the loop
    two = ALGORITHMS.replace("class Mixup(ERM):", "class Mixup:")
    paths = _project(tmp_path, {"pkg/__init__.py": "", "pkg/algorithms.py": two, "train.py": REGISTRY_TRAIN})
    found = {(n, row, hot) for n, row, code, hot in _found(paths) if code == "SYN101"}
    assert ("algorithms.py", 17, False) in found and ("algorithms.py", 22, False) in found


SCALER = """\
    import numpy as np
    import torch

    class StandardScaler:
        def fit(self, data):
            self.mean = data.mean(0)

        def transform(self, data):
            mean = torch.from_numpy(self.mean).type_as(data).to(data.device) if torch.is_tensor(data) else self.mean
            return data - mean

        def inverse_transform(self, data):
            mean = torch.from_numpy(self.mean).type_as(data).to(data.device) if torch.is_tensor(data) else self.mean
            return data + mean
"""

SCALER_USE = """\
    import numpy as np
    import torch
    from scaler import StandardScaler

    scaler = StandardScaler()
    raw = np.random.rand(100, 3)
    scaler.fit(raw)
    data = scaler.transform(raw)
    model = torch.nn.Linear(3, 3).cuda()
    for step in range(100):
        out = model(torch.rand(8, 3, device="cuda"))
        pred = scaler.inverse_transform(out)
"""


def test_the_device_of_an_array_is_the_host_and_getattr_is_not_a_python_value(tmp_path):
    # Informer's StandardScaler: `transform` only ever gets NumPy data, whose `.device` is the
    # CPU (the tensor branch does not run for it); `inverse_transform` gets CUDA outputs
    paths = _project(tmp_path, {"scaler.py": SCALER, "train.py": SCALER_USE})
    found = {(n, row) for n, row, code, hot in _found(paths) if code == "SYN304"}
    assert ("scaler.py", 13) in found
    assert ("scaler.py", 9) not in found


TIMER = """\
    import time

    class Timer:
        def tic(self):
            self.start = time.time()

        def toc(self):
            self.diff = time.time() - self.start

    class MetricLogger:
        def log_every(self, iterable):
            start = time.time()
            for obj in iterable:
                yield obj
            print(time.time() - start)
"""

BENCHMARK = """\
    import torch
    from timer import Timer

    def compute_time(model, inputs):
        timer = Timer()
        for it in range(100):
            timer.tic()
            model(inputs)
            torch.cuda.synchronize()
            timer.toc()

    def train(model, inputs):
        for it in range(100):
            model(inputs)
            torch.cuda.synchronize()

    def train_logged(model, loader):
        from timer import MetricLogger
        for x in MetricLogger().log_every(loader):
            model(x)
            torch.cuda.synchronize()
"""


def test_a_sync_timed_with_another_modules_clock_is_left_alone(tmp_path):
    # pycls' benchmark: `timer.tic()` ... `torch.cuda.synchronize()` ... `timer.toc()`, with
    # `Timer` reading `time.time()` in timer.py: the sync is there to time the step
    paths = _project(tmp_path, {"timer.py": TIMER, "bench.py": BENCHMARK})
    rows = {row for n, row, code, hot in _found(paths) if code == "SYN401"}
    assert 9 not in rows
    assert 15 in rows  # near-miss: the same sync in a function that times nothing
    # near-miss: a logger that times the batches it yields (mae's `log_every`) is no clock
    assert 21 in rows


AGENT = """\
    import torch

    class Agent:
        def __init__(self, net, env):
            self.net, self.env = net, env
            self.opt = torch.optim.Adam(net.parameters())
            self.sched = torch.optim.lr_scheduler.StepLR(self.opt, 10)

        def learn(self, batch):
            loss = self.net(batch).mean()
            print(loss.item())
            loss.backward()
            self.opt.step()

        def report(self, batch):
            print(self.net(batch).mean().item())

        def decay(self, batch):
            print(self.net(batch).sum().item())
            self.sched.step()

        def act(self, batch):
            print(self.net(batch).max().item())
            self.env.step(0)
"""

AGENT_LOOP = """\
    import torch
    from agent import Agent

    def main(net, env, loader):
        agent = Agent(net.cuda(), env)
        for i, batch in enumerate(loader):
            if i % 4 == 0:
                agent.learn(batch.cuda())
            if i % 100 == 0:
                agent.report(batch.cuda())
                agent.decay(batch.cuda())
                agent.act(batch.cuda())
"""


def test_a_periodic_guard_around_a_call_that_steps_an_optimizer_is_every_optimizer_step(tmp_path):
    """Rainbow's `if T % replay_frequency == 0: dqn.learn(mem)`: `learn` ends in the
    optimizer's `step()`, so it runs every optimizer step (hot), as a gradient-accumulation
    guard's body does, in another module too. Near-misses under the same guard: a report,
    a learning-rate scheduler's `step()`, an environment's `env.step()`: cold."""
    paths = _project(tmp_path, {"agent.py": AGENT, "train.py": AGENT_LOOP})
    found = {(n, row, hot) for n, row, code, hot in _found(paths) if code == "SYN101"}
    assert found == {("agent.py", 11, True), ("agent.py", 16, False), ("agent.py", 19, False), ("agent.py", 23, False)}
    # the same in one file
    one = _project(tmp_path / "one", {"both.py": textwrap.dedent(AGENT) + textwrap.dedent(AGENT_LOOP).replace("from agent import Agent\n", "")})
    found = {(row, hot) for n, row, code, hot in _found(one) if code == "SYN101"}
    assert found == {(11, True), (16, False), (19, False), (23, False)}


def test_a_global_bound_under_main_from_another_modules_function_is_known_in_the_functions_above(tmp_path):
    """`where = get_device()` (another module's function, which returns a CUDA device) under
    `__main__`, read by a function above it: the tensor it moves there is a GPU tensor. The
    first walk sees only a reference to `get_device`; the lint walk, knowing the project,
    walks again with its value. Near-miss: a CPU device, nothing."""
    for device, found in (('"cuda"', {("train.py", 5, "SYN301", False), ("train.py", 6, "SYN101", False)}),
                          ('"cpu"', set())):
        paths = _project(tmp_path / device.strip('"'), {
            "utils.py": f"""\
                import torch

                def get_device():
                    return torch.device({device})
            """,
            "train.py": """\
                import torch
                from utils import get_device

                def log():
                    y = torch.ones(3).to(where)
                    print(y.sum().item())

                if __name__ == "__main__":
                    where = get_device()
                    log()
            """,
        })
        assert _found(paths) == found


def test_a_projects_own_logging_wrapper_yields_the_loaders_batches(tmp_path):
    """BLIP's `metric_logger.log_every(data_loader, 50, header)`, a generator of its own
    utils.py that yields what it iterates: the batches of the pinned loader, whose blocking
    `.to(device)` is reported."""
    paths = _project(tmp_path, {
        "utils.py": """\
            from somewhere import timed

            class MetricLogger:
                def log_every(self, iterable, print_freq, header=None):
                    for obj in timed(iterable):  # what this yields, the project cannot tell
                        yield obj
        """,
        "train.py": """\
            import torch
            import utils

            def train(model, device):
                loader = torch.utils.data.DataLoader([], pin_memory=True)
                metric_logger = utils.MetricLogger()
                for image, caption in metric_logger.log_every(loader, 50, "train"):
                    image = image.to(device)
                    model(image)

            train(torch.nn.Linear(3, 3).cuda(), torch.device("cuda"))
        """,
    })
    assert ("train.py", 8, "SYN304", True) in _found(paths)


def test_pair_of_torch_utils_is_a_tuple_not_a_tensor(tmp_path):
    """dinov2's point generator: `self.strides = [_pair(s) for s in strides]` holds tuples of
    ints, so `x.new_full((n,), stride_w)` reads no tensor and `prioris.to(device)` of a tensor
    of unknown device is no reported copy."""
    paths = _project(tmp_path, {"gen.py": """\
        import torch
        from torch.nn.modules.utils import _pair

        class Gen:
            def __init__(self, strides):
                self.strides = [_pair(s) for s in strides]

            def grid(self, idx, n, device="cuda"):
                stride_w, stride_h = self.strides[idx]
                shift = torch.arange(0, n, device=device) * stride_w
                out = shift.new_full((n,), stride_w)
                return out.to(device)
    """})
    assert _found(paths) == set()


def test_a_dataloader_subclass_of_another_module_yields_cpu_batches(tmp_path):
    # YOLOP's `DataLoaderX(DataLoader)` in lib/utils, re-exported by the package
    paths = _project(tmp_path, {
        "lib/__init__.py": "",
        "lib/utils/__init__.py": "from .utils import DataLoaderX, Prefetcher\n",
        "lib/utils/utils.py": (
            "from torch.utils.data import DataLoader\n"
            "class DataLoaderX(DataLoader):\n    def __iter__(self):\n        return super().__iter__()\n"
            "class Prefetcher:\n    def __init__(self, loader):\n        self.loader = loader\n"
        ),
        "train.py": (
            "import torch\nfrom lib.utils import DataLoaderX, Prefetcher\n"
            "loader = DataLoaderX(ds, batch_size=2)\nother = Prefetcher(ds)\n"
            "for x, y in loader:\n    x = x.cuda()\n"
            "for x, y in other:\n    x = x.cuda()\n"
        ),
    })
    found = _found(paths)
    assert ("train.py", 6, "SYN304", True) in found
    assert not any(f[1] == 8 for f in found)  # near-miss: a class that is no loader


# a base class whose training loop calls a step the subclass defines
ENGINE = """\
    class Engine:
        def parse(self, data):
            imgs = data["img"]
            return imgs, data["pid"]

        def step(self, data):
            raise NotImplementedError

        def train(self, loader):
            for data in loader:
                self.step(data)
    """


def test_a_subclass_calling_a_method_it_inherits_from_another_module_passes_its_arguments(tmp_path):
    # deep-person-reid: `ImageSoftmaxEngine(Engine).forward_backward(data)` calls
    # `self.parse_data_for_train(data)`, defined only in `Engine` (engine.py), with the
    # loader's CPU batch; `imgs.cuda()` of what it returns is a blocking copy every step
    paths = _project(tmp_path, {
        "engine.py": ENGINE,
        "softmax.py": """\
            import torch
            from engine import Engine

            class SoftmaxEngine(Engine):
                def step(self, data):
                    imgs, pids = self.parse(data)
                    imgs = imgs.cuda()
                    return imgs

            def main(ds):
                SoftmaxEngine().train(torch.utils.data.DataLoader(ds))
            """,
    })
    found = _found(paths)
    assert ("softmax.py", 7, "SYN304", True) in found
    # near-miss: the subclass overrides the method, so the base's is not what runs
    paths = _project(tmp_path / "own", {
        "engine.py": ENGINE,
        "softmax.py": """\
            import torch
            from engine import Engine

            class SoftmaxEngine(Engine):
                def parse(self, data):
                    return torch.ones(2, device="cuda"), None

                def step(self, data):
                    imgs, pids = self.parse(data)
                    imgs = imgs.cuda()
                    return imgs

            def main(ds):
                SoftmaxEngine().train(torch.utils.data.DataLoader(ds))
            """,
    })
    assert not any(f[2] == "SYN304" for f in _found(paths))


def test_a_function_above_its_caller_takes_the_value_another_module_gives_the_caller(tmp_path):
    """G40: `train(loaders)` is defined above `main`, which passes loaders another module
    makes; the file's own first walk could not know them, the lint walk learns them at the
    call, after `train` was walked, and walks again (adarnn's `zip(*train_loader_list)`)."""
    paths = _project(tmp_path, {
        "data.py": """\
            import torch

            def make_loaders(sets):
                return [torch.utils.data.DataLoader(s) for s in sets], None
            """,
        "train.py": """\
            import torch
            from data import make_loaders

            def train(model, loaders):
                for batches in zip(*loaders):
                    for batch in batches:
                        x = batch[0].cuda()
                        model(x).sum().backward()

            def main(sets):
                model = torch.nn.Linear(3, 3).cuda()
                loaders, _ = make_loaders(sets)
                for epoch in range(10):
                    train(model, loaders)
            """,
    })
    assert ("train.py", 7, "SYN304", True) in _found(paths)


def test_a_base_class_method_reads_what_only_its_subclasses_set(tmp_path):
    # pytorch_GAN_zoo: the base trainer's loop calls `self.model.optimizeParameters(batch)`,
    # and only each trainer subclass (another module) makes `self.model`
    paths = _project(tmp_path, {
        "gan.py": """\
            import torch

            class GAN:
                def __init__(self):
                    self.device = torch.device("cuda")

                def optimize(self, batch):
                    x = batch.to(self.device)
                    loss = (x * 2).mean()
                    return loss.item()

                def sample(self):
                    return torch.randn(4, 8).to(self.device)
            """,
        "trainer.py": """\
            from torch.utils.data import DataLoader

            class Trainer:
                def __init__(self, dataset):
                    self.loader = DataLoader(dataset, batch_size=8)

                def train_epoch(self):
                    for batch in self.loader:
                        self.model.optimize(batch)
                    return self.model.sample()
            """,
        "pgan.py": """\
            from gan import GAN
            from trainer import Trainer

            class PGANTrainer(Trainer):
                def init_model(self):
                    self.model = GAN()
            """,
    })
    found = _found(paths)
    # the batch of the base class's loop reaches the subclass's model, every step
    assert {("gan.py", 8, "SYN304", True), ("gan.py", 10, "SYN101", True)} <= found
    assert ("gan.py", 13, "SYN301", False) in found  # once, after the loop
    # without the subclass, nothing says what `self.model` is
    assert not {f for f in _found(paths[:2]) if f[0] == "gan.py" and f[3]}
    # an edit of the subclass reaches the base class's loop through the cache
    cache = tmp_path / ".cache"
    assert ("gan.py", 8, "SYN304", True) in _found(paths, cache_dir=cache)
    pgan = tmp_path / "pgan.py"
    pgan.write_text(pgan.read_text().replace("self.model = GAN()", "self.model = None"))
    assert not {f for f in _found(paths, cache_dir=cache) if f[0] == "gan.py" and f[3]}
    pgan.write_text(pgan.read_text().replace("self.model = None", "self.model = GAN()"))
    assert ("gan.py", 8, "SYN304", True) in _found(paths, cache_dir=cache)


def test_an_abstract_method_returns_what_its_overrides_in_other_modules_return(tmp_path):
    # DPR: `tensorizer: Tensorizer` (an abstract base) whose one subclass, in another
    # module, makes `torch.tensor(token_ids)` on the CPU: reading it back does not sync
    base = """\
        import torch

        class Tensorizer:
            def text_to_tensor(self, text):
                raise NotImplementedError
    """
    use = """\
        import torch
        from pkg.base import Tensorizer

        def span(text, tensorizer: Tensorizer, id: int):
            t = tensorizer.text_to_tensor(text)
            return (t == id).nonzero()[0, 0].item()

        def pick(x):
            for _ in range(3):
                x = x.cuda()
            return x
    """
    cpu = """\
        import torch
        from pkg.base import Tensorizer

        class BertTensorizer(Tensorizer):
            def text_to_tensor(self, text):
                return torch.tensor([1, 2, 3])
    """
    paths = _project(tmp_path / "a", {"pkg/__init__.py": "", "pkg/base.py": base, "pkg/use.py": use, "pkg/bert.py": cpu})
    assert not any(name == "use.py" and row == 6 for name, row, _, _ in _found(paths))
    # near-miss: another override returns a GPU tensor: the join is on either device
    other = """\
        import torch
        from pkg.base import Tensorizer

        class Other(Tensorizer):
            def text_to_tensor(self, text):
                return torch.ones(3, device="cuda")
    """
    paths = _project(tmp_path / "b", {"pkg/__init__.py": "", "pkg/base.py": base, "pkg/use.py": use,
                                      "pkg/bert.py": cpu, "pkg/other.py": other})
    assert {code for name, row, code, _ in _found(paths) if name == "use.py" and row == 6} >= {"SYN101"}


def test_an_edit_that_adds_an_override_reaches_the_callers_of_the_abstract_method(tmp_path):
    """A method added to an existing subclass in another module (no module or class appears)
    changes what the abstract base's method returns: a file that asked about it is told again,
    as a fresh check would tell it."""
    base = "class Tensorizer:\n    def text_to_tensor(self, text):\n        raise NotImplementedError\n"
    use = ("from pkg.base import Tensorizer\n\n"
           "def span(text, tensorizer: Tensorizer, id: int):\n"
           "    t = tensorizer.text_to_tensor(text)\n"
           "    return (t == id).nonzero()[0, 0].item()\n")
    cpu = ("import torch\nfrom pkg.base import Tensorizer\n\nclass BertTensorizer(Tensorizer):\n"
           "    def text_to_tensor(self, text):\n        return torch.tensor([1, 2, 3])\n")
    other = "import torch\nfrom pkg.base import Tensorizer\n\nclass Other(Tensorizer):\n    size = 3\n"
    paths = _project(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": base, "pkg/use.py": use,
                                "pkg/bert.py": cpu, "pkg/other.py": other})
    cache = tmp_path / ".cache"
    assert not any(name == "use.py" and row == 5 for name, row, _, _ in _found(paths, cache_dir=cache))
    path = tmp_path / "pkg" / "other.py"
    path.write_text(path.read_text() + "\n    def text_to_tensor(self, text):\n"
                    "        return torch.ones(3, device='cuda')\n")
    fresh = _found(paths)
    assert {code for name, row, code, _ in fresh if name == "use.py" and row == 5} >= {"SYN101"}
    assert _found(paths, cache_dir=cache) == fresh


def test_a_default_tensor_type_restored_to_the_cpu(tmp_path):
    """llm.c's `from_pretrained_llama3_hf` sets `torch.cuda.BFloat16Tensor` as the default to
    load, then restores a CPU type (`torch.tensor([], dtype=..., device="cpu").type()`): a tensor
    made after it is on the host, and writing a Python number into it is no transfer. Near miss:
    without the restore the default stays CUDA."""
    src = """\
        import torch

        def load():
            torch.set_default_tensor_type(torch.cuda.BFloat16Tensor)
            m = torch.nn.Linear(2, 2)
            torch.set_default_tensor_type(torch.tensor([], dtype=torch.float32, device="cpu").type())
            return m

        def write(n: int):
            header = torch.zeros(256, dtype=torch.int32)
            header[2] = n
            return header
        """
    paths = _project(tmp_path, {"a.py": src, "b.py": src.replace("            torch.set_default_tensor_type(torch.tensor([], dtype=torch.float32, device=\"cpu\").type())\n", "")})
    found = {(f, row, code) for f, row, code, _ in _found(paths)}
    assert ("b.py", 10, "SYN306") in found
    assert ("a.py", 11, "SYN306") not in found


def _long_helper() -> str:
    """A helper of more straight-line steps than a one-screen utility (`box_stats`: 32
    assignments), each derived from its parameter."""
    steps = "\n".join(f"    s{i} = s{i - 1} * 2 + 1" for i in range(1, 32))
    return f"import torch\n\n\ndef box_stats(boxes):\n    s0 = boxes[:, 2:] - boxes[:, :2]\n{steps}\n    return s31\n"


def test_a_long_helper_returns_each_callers_own_device(tmp_path):
    """Issue 34 item 2: what a call of another module's helper returns comes from that call's
    arguments, also for a helper longer than a few lines: the caller that passes host boxes
    gets host statistics back (their `.cpu()` is no copy: the near-miss), the caller that
    passes GPU boxes gets GPU statistics (their `.cpu()` is a read-back every step), though
    the join over both callers says neither."""
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/boxes.py": _long_helper(),
        "pkg/host.py": """\
            import torch
            from pkg.boxes import box_stats

            def summarise(steps):
                for _ in range(steps):
                    stats = box_stats(torch.rand(8, 4)).cpu()
            """,
        "pkg/device.py": """\
            import torch
            from pkg import boxes

            def train(steps):
                for _ in range(steps):
                    stats = boxes.box_stats(torch.rand(8, 4, device="cuda")).cpu()
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths) if n in ("host.py", "device.py")}
    assert found == {("device.py", 6, "SYN103")}


def test_a_long_helper_of_this_module_returns_each_callers_own_device(tmp_path):
    """The same within one module: each call of the long helper takes its own caller's device."""
    paths = _project(tmp_path, {"run.py": _long_helper() + textwrap.dedent("""\


        def train(steps):
            for _ in range(steps):
                host = box_stats(torch.rand(8, 4)).cpu()
                gpu = box_stats(torch.rand(8, 4, device="cuda")).cpu()
        """)})
    found = {(row, code) for n, row, code, _ in _found(paths)}
    assert found == {(43, "SYN103")}, found


def test_a_staticmethod_called_through_self_passes_no_self(tmp_path):
    """`self.rep(sub, ids, mask, self.fix)` of a `@staticmethod`: the first argument is
    `sub`, not `self`; taking it for a bound call shifted every argument one parameter on and
    made the flag `fix_encoder` the GPU mask (DPR's BiEncoder.get_representation: SYN105)."""
    paths = _project(tmp_path, {"bi.py": '''
        import torch
        from torch import nn

        class Bi(nn.Module):
            def __init__(self, q: nn.Module, fix: bool = False):
                super().__init__()
                self.q = q
                self.fix = fix

            @staticmethod
            def rep(sub: nn.Module, ids, mask, fix_encoder: bool = False, scale: float = 1.0):
                if fix_encoder:
                    return sub(ids, mask)
                if scale > 1:
                    return sub(ids, mask)
                return sub(ids, mask) * scale

            def forward(self, ids):
                mask = torch.ones(ids.shape, device="cuda")
                return self.rep(self.q, ids, mask, self.fix, mask.sum())

        def train(model, loader):
            for ids in loader:
                model(ids).backward()
        '''})
    found = _found(paths)
    assert not any(code == "SYN105" and row == 13 for _, row, code, _ in found), found
    assert ("bi.py", 15, "SYN105", True) in found, found  # `scale` is the GPU sum: the near miss's twin


def test_a_staticmethod_called_from_another_module_passes_no_self(tmp_path):
    """`Bi.rep(model, ids, seg, mask)` from another module: four arguments for the first
    four parameters (DPR's dense_retriever calling BiEncoder.get_representation); the
    method's first parameter was skipped as if it were `self`, which put the GPU mask in
    the flag `fix_encoder`."""
    paths = _project(tmp_path, {
        "bi.py": '''
        import torch
        from torch import nn

        class Bi(nn.Module):
            @staticmethod
            def rep(sub: nn.Module, ids, seg, mask, fix_encoder: bool = False):
                if fix_encoder:
                    return sub(ids, seg, mask)
                return sub(ids, seg, mask)
        ''',
        "run.py": '''
        import torch
        from bi import Bi

        def encode(model, batches):
            for ids in batches:
                mask = torch.ones(ids.shape, device="cuda")
                Bi.rep(model, ids, ids, mask)
        '''})
    assert not any(code == "SYN105" for _, _, code, _ in _found(paths)), _found(paths)


METER = """\
    import torch
    import torchmetrics


    class Meter(torchmetrics.Metric):
        def update(self, preds: torch.Tensor, sizes: torch.Tensor):
            for i in range(preds.shape[0]):
                self.total += int(sizes[i].item())
    """


def _evaluation(sizes: str) -> str:
    """A solver whose metric comes from a builder in another module, moved with `.to()`, and
    is fed sizes made by `sizes` every evaluation step."""
    return f"""\
        import typing as tp
        import torch
        from pkg import builders, metric


        class Solver:
            def evaluate(self, loader):
                meter: tp.Optional[metric.Meter] = None
                if loader is not None:
                    meter = builders.get_meter().to("cuda")
                for x in loader:
                    sizes = {sizes}
                    if meter is not None:
                        meter.update(x.cpu(), sizes)
        """


def test_a_metric_moved_with_to_is_still_the_metric_its_callers_feed(tmp_path):
    """Issue 34 item 2: `builder().to(device)` of an object whose class has a library base
    (a torchmetrics `Metric`) is that object still, on every walk: its `update` takes what this
    caller passes. Host sizes (`torch.tensor([...])` of Python ints) read back with `.item()`
    wait for nothing (the near-miss); the same sizes made on the GPU are a read-back."""
    files = {"pkg/__init__.py": "", "pkg/metric.py": METER,
             "pkg/builders.py": "from pkg import metric\n\n\ndef get_meter():\n    return metric.Meter()\n"}
    host = _found(_project(tmp_path / "host", {
        **files, "pkg/solver.py": _evaluation("torch.tensor([len(r) for r in x])")}))
    assert not any(n == "metric.py" for n, _, _, _ in host), host
    gpu = _found(_project(tmp_path / "gpu", {
        **files, "pkg/solver.py": _evaluation('torch.tensor([len(r) for r in x], device="cuda")')}))
    assert ("metric.py", 8, "SYN101", True) in gpu, gpu


def test_a_builder_annotated_with_the_class_it_picks_from_a_table_returns_an_instance(tmp_path):
    """`def get_meter() -> metric.Meter: return table[name]()`: the body's value is a class
    picked from a dict, unknown; the annotation names the class, so the metric's `update`
    takes what its caller passes (host sizes: no read-back; GPU sizes: one)."""
    builders = """\
        from pkg import metric


        def get_meter() -> metric.Meter:
            table = {"plain": metric.Meter}
            klass = table["plain"]
            return klass()
        """
    files = {"pkg/__init__.py": "", "pkg/metric.py": METER, "pkg/builders.py": builders}
    host = _found(_project(tmp_path / "host", {
        **files, "pkg/solver.py": _evaluation("torch.tensor([len(r) for r in x])")}))
    assert not any(n == "metric.py" for n, _, _, _ in host), host
    gpu = _found(_project(tmp_path / "gpu", {
        **files, "pkg/solver.py": _evaluation('torch.tensor([len(r) for r in x], device="cuda")')}))
    assert ("metric.py", 8, "SYN101", True) in gpu, gpu


def test_a_call_of_an_abstract_method_passes_its_arguments_to_the_overrides(tmp_path):
    """A metric known only as its base class (the builder's annotation), whose `update` only
    raises NotImplementedError: the call runs a subclass's `update` (in another module), which
    takes the call's values: host sizes, no read-back; GPU sizes, one."""
    base = """\
        import torch
        import torchmetrics


        class Meter(torchmetrics.Metric):
            def update(self, preds: torch.Tensor, sizes: torch.Tensor) -> None:
                raise NotImplementedError("subclasses count")
        """
    counting = METER.replace("import torchmetrics", "from pkg.metric import Meter").replace(
        "class Meter(torchmetrics.Metric):", "class CountingMeter(Meter):")
    builders = """\
        from pkg import counting, metric


        def get_meter() -> metric.Meter:
            return {"count": counting.CountingMeter}["count"]()
        """
    files = {"pkg/__init__.py": "", "pkg/metric.py": base, "pkg/counting.py": counting, "pkg/builders.py": builders}
    host = _found(_project(tmp_path / "host", {
        **files, "pkg/solver.py": _evaluation("torch.tensor([len(r) for r in x])")}))
    assert not any(n == "counting.py" for n, _, _, _ in host), host
    gpu = _found(_project(tmp_path / "gpu", {
        **files, "pkg/solver.py": _evaluation('torch.tensor([len(r) for r in x], device="cuda")')}))
    assert ("counting.py", 8, "SYN101", True) in gpu, gpu


def _decorated_helper(decorator: str) -> str:
    return f"""\
        import functools
        import torch


        def logged(function):
            @functools.wraps(function)
            def wrapper(*args, **kwargs):
                print("calling", function.__name__)
                return function(*args, **kwargs)
            return wrapper


        def timed(function):
            def wrapper(*args, **kwargs):
                return 0.0
            return wrapper


        {decorator}
        def normalised(boxes):
            scale = boxes.max()
            out = boxes / scale
            return out


        def train(steps):
            for _ in range(steps):
                host = normalised(torch.rand(8, 4)).cpu()
                gpu = normalised(torch.rand(8, 4, device="cuda")).cpu()
        """


def test_a_helper_behind_a_decorator_that_passes_the_call_through_is_inferred_per_call(tmp_path):
    """Issue 34 item 2: `@torch.no_grad()`, `@functools.lru_cache` and a project decorator whose
    wrapper (`functools.wraps`) returns the wrapped function's call give back what the
    function returns, so each call takes its own arguments' device: the host caller's
    `.cpu()` copies nothing, the GPU caller's is a read-back. The near-miss: a decorator whose
    wrapper returns something else is not looked through (both calls stay as they were)."""
    for decorator in ("@torch.no_grad()", "@functools.lru_cache(maxsize=None)", "@logged"):
        found = {(row, code) for _, row, code, _ in _found(_project(
            tmp_path / decorator.strip("@()=").replace(".", "_"), {"run.py": _decorated_helper(decorator)}))}
        assert (29, "SYN103") in found and (28, "SYN103") not in found, (decorator, found)
    other = {(row, code) for _, row, code, _ in _found(_project(tmp_path / "timed", {
        "run.py": _decorated_helper("@timed")}))}
    assert (28, "SYN103") in other, other


BOX_CODER = """\
    import torch


    class BoxCoder:
        def __init__(self, scale):
            self.scale = scale

        def normalised(self, boxes):
            top = boxes.max()
            out = boxes / top * self.scale
            return out
    """


def test_a_method_is_inferred_per_call_with_self_bound_to_the_receiver(tmp_path):
    """Issue 34 item 2: `coder.normalised(boxes)`, a method of a class of this module or of
    another, returns what this call's boxes give: the caller passing host boxes gets host
    boxes back (`.cpu()` copies nothing), the one passing GPU boxes gets GPU boxes (a
    read-back every step), though the join over both callers says neither."""
    loop = """\
        def train(steps):
            coder = BoxCoder(2.0)
            for _ in range(steps):
                host = coder.normalised(torch.rand(8, 4)).cpu()
                gpu = coder.normalised(torch.rand(8, 4, device="cuda")).cpu()
        """
    here = _found(_project(tmp_path / "here", {"run.py": BOX_CODER + "\n\n" + loop}))
    assert {(row, code) for _, row, code, _ in here} == {(18, "SYN103")}, here
    there = _found(_project(tmp_path / "there", {
        "pkg/__init__.py": "", "pkg/coder.py": BOX_CODER,
        "pkg/run.py": "import torch\nfrom pkg.coder import BoxCoder\n\n\n" + textwrap.dedent(loop)}))
    assert {(n, row, code) for n, row, code, _ in there} == {("run.py", 9, "SYN103")}, there


IOU = """\
    import torch


    def iou(a, b):
        tl = torch.max(a[:, None, :2], b[:, :2])
        br = torch.min(a[:, None, 2:], b[:, 2:])
        inside = {inside}.prod(dim=2)
        return torch.prod(br - tl, 2) * inside


    class Head(torch.nn.Module):
        def forward(self, boxes, gt):
            if boxes.shape[0] > 100:
                boxes = boxes.cpu()
                gt = gt.cpu()
            return iou(boxes, gt)


    def train(loader):
        head = Head().cuda()
        for boxes, gt in loader:
            head(boxes.cuda(), gt.cuda())
    """


def test_a_cast_to_the_type_of_a_tensor_the_receiver_is_computed_from_copies_nothing(tmp_path):
    """`(tl < br).type(tl.type())` (YOLOX's and pytorch-YOLOv4's `bboxes_iou`, whose boxes
    are on the host for one caller and on the GPU for another): the comparison is computed
    where `tl` is, so its type names the device the receiver is already on. The near-miss:
    a host tensor made here (`torch.ones`) cast to `tl`'s type is copied to the GPU when
    `tl` is there."""
    same = _found(_project(tmp_path / "same", {"run.py": IOU.format(inside="(tl < br).type(tl.type())")}))
    assert not any(row == 7 and code == "SYN304" for _, row, code, _ in same), same
    other = _found(_project(tmp_path / "other", {"run.py": IOU.format(inside="torch.ones(3, 3, 2).type(tl.type())")}))
    assert any(row == 7 and code in ("SYN301", "SYN304") for _, row, code, _ in other), other


def test_the_outputs_of_a_module_on_the_gpu_are_there_when_a_wrapper_scatters_host_batches(tmp_path):
    """CSAIL's segmentation module: host batches go to `model(batch)`, where a DataParallel
    subclass from another module scatters them to the GPUs; the forward, evaluated with
    the host batch its callers pass, returns `loss, acc`, each on the GPU where the model is."""
    dp = (
        "import torch.nn as nn\n\n\n"
        "class Scattered(nn.DataParallel):\n"
        "    def scatter(self, inputs, kwargs, device_ids):\n"
        "        return inputs, kwargs\n"
    )
    train = (
        "import torch\nimport torch.nn as nn\nfrom pkg.dp import Scattered\n\n\n"
        "class Seg(nn.Module):\n"
        "    def __init__(self, enc, crit):\n"
        "        super().__init__()\n"
        "        self.enc, self.crit = enc, crit\n\n"
        "    def forward(self, feed):\n"
        "        pred = self.enc(feed['img'])\n"
        "        return self.crit(pred, feed['label']), (pred.argmax(1) == feed['label']).float().mean()\n\n\n"
        "def main(gpus, loader):\n"
        "    seg = Seg(nn.Linear(3, 3), nn.NLLLoss())\n"
        "    if len(gpus) > 1:\n"
        "        seg = Scattered(seg, device_ids=gpus)\n"
        "    seg.cuda()\n"
        "    for batch in loader:\n"
        "        loss, acc = seg(batch)\n"
        "        loss.backward()\n"
        "        print(loss.item(), acc.item())\n"
    )
    paths = _project(tmp_path, {"pkg/__init__.py": "", "pkg/dp.py": dp, "pkg/train.py": train})
    found = check_files(paths, default_rules()).findings
    assert sorted((f.row, f.column, f.code) for f in found if f.filename.endswith("train.py")) == [
        (24, 15, "SYN101"), (24, 28, "SYN101")]


# A library-style package (mmengine, detectron2): components built from a config through a
# registry. `@TASK_UTILS.register_module()` puts a class in the registry, `TASK_UTILS.build(cfg)`
# gives an instance of one of its classes (detectron2: `@R.register()`, `R.register(C)`, then
# `R.get(name)(cfg)`), so a method called on what it built runs that method of each class
# registered in it, and runs as often as that call site does.
REGISTRY_FILES = {
    "pkg/__init__.py": "",
    "pkg/registry.py": """\
        from mmengine.registry import Registry

        TASK_UTILS = Registry("task util")
        MODELS = Registry("model")
        """,
    "pkg/assigners.py": """\
        import torch
        from pkg.registry import MODELS, TASK_UTILS


        @TASK_UTILS.register_module()
        class SimOTAAssigner:
            def assign(self, pred, gt):
                return pred.sum().item()  # hot: built by TASK_UTILS, assigned every step


        @MODELS.register_module()
        class ModelAssigner:
            def assign(self, pred, gt):
                return pred.max().item()  # cold: in another registry, not built by TASK_UTILS


        class LooseAssigner:
            def assign(self, pred, gt):
                return pred.min().item()  # cold: registered nowhere


        @TASK_UTILS.register_module(name="Setup")
        class SetupCoder:
            def prepare(self, x):
                return x.mean().item()  # cold: its instance's method is called in __init__ only
        """,
    "pkg/head.py": """\
        import torch
        from pkg.registry import TASK_UTILS


        class Head(torch.nn.Module):
            def __init__(self, assigner, coder):
                super().__init__()
                self.assigner = TASK_UTILS.build(assigner)
                self.coder = TASK_UTILS.build(coder)
                self.coder.prepare(torch.zeros(3, device="cuda"))

            def forward(self, pred, gt):
                return self.targets(pred, gt)

            def targets(self, pred, gt):
                return self.assigner.assign(pred, gt)
        """,
    "pkg/roi_heads.py": """\
        import torch
        from fvcore.common.registry import Registry

        ROI_HEADS_REGISTRY = Registry("ROI_HEADS")


        @ROI_HEADS_REGISTRY.register()
        class StandardROIHeads:
            def __init__(self, cfg):
                self.cfg = cfg

            def label_and_sample(self, x):
                return x.sum().item()  # hot: `R.get(name)(cfg)` built it, called every step


        class CascadeROIHeads(StandardROIHeads):
            def label_and_sample(self, x):
                return x.max().item()  # hot: registered by a call, `R.register(C)`


        ROI_HEADS_REGISTRY.register(CascadeROIHeads)


        class Sampler:
            def label_and_sample(self, x):
                return x.min().item()  # cold: registered nowhere


        def build_roi_heads(cfg):
            return ROI_HEADS_REGISTRY.get(cfg.NAME)(cfg)
        """,
    "train.py": """\
        import torch
        from pkg.head import Head
        from pkg.roi_heads import build_roi_heads


        def train(loader, cfg):
            head = Head(dict(type="SimOTAAssigner"), dict(type="Setup")).cuda()
            roi_heads = build_roi_heads(cfg)
            for x in loader:
                x = x.cuda()
                head(x, x)
                roi_heads.label_and_sample(x)
        """,
}


def test_a_method_of_what_a_registry_built_runs_each_registered_class_method(tmp_path):
    found = {(n, row, hot) for n, row, code, hot in _found(_project(tmp_path, REGISTRY_FILES)) if code == "SYN101"}
    assert ("assigners.py", 8, True) in found, found  # SimOTAAssigner.assign, through TASK_UTILS.build
    # near-misses: the same method name in a class of another registry, or of no registry
    assert ("assigners.py", 14, False) in found and ("assigners.py", 19, False) in found, found
    # a method of a registry-built object called only in `__init__`: once
    assert ("assigners.py", 25, False) in found, found
    # detectron2: `@R.register()` and `R.register(C)`, built by `R.get(name)(cfg)` in a helper
    assert ("roi_heads.py", 13, True) in found and ("roi_heads.py", 18, True) in found, found
    assert ("roi_heads.py", 26, False) in found, found


# A registry whose classes the tree's configs name (`type="UsedHead"` in configs/*.py): the
# classes registered in it that no config and no code outside tests names, and whose
# subclasses are not named either, are never built: their hooks do not run (mmdetection3d's
# MonoFlexHead, whose config folder holds only a README).
CONFIG_FILES = {
    "pkg/__init__.py": "",
    "pkg/registry.py": """\
        from mmengine.registry import Registry

        MODELS = Registry("model")
        LOSSES = Registry("loss")
        """,
    "pkg/heads.py": """\
        import torch
        from pkg.registry import MODELS


        @MODELS.register_module()
        class UsedHead(torch.nn.Module):
            def forward(self, x):
                return x.sum().item()  # hot: configs/model.py names it


        @MODELS.register_module()
        class UnusedHead(torch.nn.Module):
            def __init__(self, loss=dict(type="L2")):
                super().__init__()

            def forward(self, x):
                return x.max().item()  # once: no config or code builds it

            def get_targets(self, boxes):
                for box in boxes:
                    print(box.sum().item())  # once: its loops do not make it run (as a debug helper's)


        @MODELS.register_module()
        class BaseHead(torch.nn.Module):
            def forward(self, x):
                return x.min().item()  # hot: SubHead, which a config names, inherits it


        @MODELS.register_module()
        class SubHead(BaseHead):
            pass


        @MODELS.register_module(name="Renamed")
        class RenamedHead(torch.nn.Module):
            def forward(self, x):
                return x.mean().item()  # hot: registered under a name of its own, which a config names


        @MODELS.register_module()
        class TestedHead(torch.nn.Module):
            def forward(self, x):
                return x.std().item()  # once: only a test builds it


        @MODELS.register_module("Aliased")
        @MODELS.register_module()
        class AliasedHead(torch.nn.Module):
            def forward(self, x):
                return x.var().item()  # hot: registered under a name given first, which a config names
        """,
    "pkg/losses.py": """\
        import torch
        from pkg.registry import LOSSES, MODELS


        @LOSSES.register_module()
        class L1(torch.nn.Module):
            def forward(self, x):
                return x.abs().sum().item()  # hot: no config names any class of LOSSES (built from code)


        @MODELS.register_module()
        class L2(torch.nn.Module):
            def forward(self, x):
                return x.abs().max().item()  # once: only UnusedHead, never built, names it
        """,
    "configs/model.py": """\
        model = dict(type="UsedHead", aux=dict(type="SubHead"), extra=dict(type="Renamed"), more=dict(type="Aliased"))
        """,
    "tests/test_heads.py": """\
        from pkg.registry import MODELS

        def test_head():
            MODELS.build(dict(type="TestedHead"))
        """,
    "train.py": """\
        import torch
        from pkg.registry import MODELS


        def train(cfg, loader):
            model = MODELS.build(cfg.model).cuda()
            for x in loader:
                model(x.cuda())
        """,
}


def test_a_registered_class_that_no_config_or_code_names_is_never_built(tmp_path, monkeypatch):
    found = {(n, row, hot) for n, row, code, hot in _found(_project(tmp_path, CONFIG_FILES)) if code == "SYN101"}
    assert found == {("heads.py", 8, True), ("heads.py", 17, False), ("heads.py", 21, False), ("heads.py", 27, True),
                     ("heads.py", 38, True), ("heads.py", 44, False), ("heads.py", 51, True), ("losses.py", 8, True),
                     ("losses.py", 14, False)}, found
    # the same tags when heads.py is checked alone, from the cache of the package check
    from synclint.run import cache as cache_module

    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)  # (files just made: their stamps vouch for them)
    paths = _project(tmp_path / "again", CONFIG_FILES)
    cache = tmp_path / ".cache"
    _found(paths, cache_dir=cache)
    for name in ("heads.py", "losses.py"):
        alone = {(n, row, hot) for n, row, code, hot in _found([p for p in paths if p.endswith(name)],
                                                                 cache_dir=cache) if code == "SYN101"}
        assert alone == {f for f in found if f[0] == name}, alone


def test_a_registration_added_or_removed_by_an_edit_retags_what_the_registry_builds(tmp_path):
    # with the cache: head.py, unchanged, builds through TASK_UTILS, which no class is
    # registered in at first (so it is no registry, and `assign` is cold); registering the
    # assigners makes it one (head.py is linted again: what it asked the project changed)
    assigners = textwrap.dedent(REGISTRY_FILES["pkg/assigners.py"])
    bare = assigners.replace('@TASK_UTILS.register_module(name="Setup")\n', "").replace(
        "@TASK_UTILS.register_module()\n", "")
    paths = _project(tmp_path, {**REGISTRY_FILES, "pkg/assigners.py": bare})
    cache = tmp_path / ".cache"

    def tags(n):
        return {(row, hot) for name, row, code, hot in _found(paths, cache_dir=cache) if name == n and code == "SYN101"}

    assert (7, False) in tags("assigners.py")  # (a line up without the decorator)
    (tmp_path / "pkg" / "assigners.py").write_text(assigners)
    assert (8, True) in tags("assigners.py") and (14, False) in tags("assigners.py")
    # a class registered in a registry that already had classes: the same facts, new heat
    roi = tmp_path / "pkg" / "roi_heads.py"
    assert (26, False) in tags("roi_heads.py")
    roi.write_text(roi.read_text() + "\n\nROI_HEADS_REGISTRY.register(Sampler)\n")
    assert (26, True) in tags("roi_heads.py")
    roi.write_text(roi.read_text().replace("\n\nROI_HEADS_REGISTRY.register(Sampler)\n", ""))
    assert (26, False) in tags("roi_heads.py")


def test_a_library_registry_is_known_by_its_last_name_and_build_from_cfg_builds_through_it(tmp_path):
    # a project built on a library's registry (mmengine's MODELS, imported from the library
    # in two spellings): its classes are reached from `build_from_cfg(cfg, MODELS)`; a class
    # registered by a call (`register_module(module=C)`, C imported) too. The near-miss: the
    # project's own registry of the same last name, resolved to pkg.registry.MODELS, is
    # another registry, and `compute` of its class is not reached.
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/registry.py": """\
            from mmengine.registry import Registry

            MODELS = Registry("own models")
            """,
        "pkg/parts.py": """\
            import torch
            from mmengine.registry import MODELS
            from pkg import registry


            @MODELS.register_module()
            class LibraryPart:
                def compute(self, x):
                    return x.sum().item()  # hot: in mmengine's MODELS, built every step


            class CalledPart:
                def compute(self, x):
                    return x.max().item()  # hot: registered below by a call


            @registry.MODELS.register_module()
            class OwnPart:
                def compute(self, x):
                    return x.min().item()  # cold: in the project's own MODELS, not mmengine's
            """,
        "pkg/more.py": """\
            from mmengine import registry as mmreg
            from pkg.parts import CalledPart

            mmreg.MODELS.register_module(module=CalledPart)
            """,
        "train.py": """\
            import torch
            from mmengine.registry import build_from_cfg
            from mmengine.registry.root import MODELS


            def train(loader, cfg):
                for x in loader:
                    part = build_from_cfg(cfg, MODELS)
                    part.compute(x.cuda())
            """,
    })
    found = {(n, row, hot) for n, row, code, hot in _found(paths) if code == "SYN101"}
    assert ("parts.py", 9, True) in found and ("parts.py", 14, True) in found, found
    assert ("parts.py", 20, False) in found, found


def test_a_builder_helper_handed_on_by_a_star_import_builds_through_its_registry(tmp_path):
    # mmrotate 0.x: `build_bbox_coder(cfg)` returns `build_from_cfg(cfg, ROTATED_BBOX_CODERS)`
    # (an alias of mmdet's registry) in core/bbox/builder.py; core/bbox/__init__.py imports
    # it, core/__init__.py hands it on with `from .bbox import *`, and a head imports it from
    # `pkg.core`. Near misses: a helper that builds nothing, a coder of no registry.
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/core/__init__.py": "from .bbox import *  # noqa: F401,F403\n",
        "pkg/core/bbox/__init__.py": """\
            from .builder import build_bbox_coder, make_plain

            __all__ = ["build_bbox_coder", "make_plain"]
            """,
        "pkg/core/bbox/builder.py": """\
            from mmcv.utils import build_from_cfg
            from mmdet.core.bbox.builder import BBOX_CODERS

            ROTATED_BBOX_CODERS = BBOX_CODERS


            def build_bbox_coder(cfg, **default_args):
                return build_from_cfg(cfg, ROTATED_BBOX_CODERS, default_args)


            def make_plain(cfg):
                return dict(cfg)
            """,
        "pkg/core/bbox/coder.py": """\
            import torch
            from .builder import ROTATED_BBOX_CODERS


            @ROTATED_BBOX_CODERS.register_module()
            class DeltaCoder:
                def encode(self, x):
                    return x.sum().item()  # hot: the head's coder, every step


            class PlainCoder:
                def encode(self, x):
                    return x.max().item()  # cold: in no registry
            """,
        "pkg/head.py": """\
            import torch
            from pkg.core import build_bbox_coder, make_plain


            class Head(torch.nn.Module):
                def __init__(self, coder, other):
                    super().__init__()
                    self.coder = build_bbox_coder(coder)
                    self.other = make_plain(other)

                def forward(self, x):
                    return self.coder.encode(x) + self.other.encode(x)
            """,
    })
    found = {(n, row, hot) for n, row, code, hot in _found(paths) if code == "SYN101"}
    assert ("coder.py", 8, True) in found and ("coder.py", 13, False) in found, found


def test_calling_what_a_registry_built_runs_each_registered_modules_forward_or_objects_call(tmp_path):
    # `self.loss_cls(pred, target)` on what MODELS built: an edge to each registered class's
    # `forward` (an nn.Module) or `__call__` (another object); a class of no registry is not
    # among them. (Both names are hot anyway: the edges are what the call graph sees, for
    # compiled regions and rates.)
    from synclint.engine import analyse, lint_analysis
    from synclint.project import Project, module_name

    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/losses.py": """\
            import torch
            from mmengine.registry import MODELS


            @MODELS.register_module()
            class FocalLoss(torch.nn.Module):
                def forward(self, pred, target):
                    return (pred - target).abs().mean()


            @MODELS.register_module()
            class IoUCost:
                def __call__(self, pred, target):
                    return pred @ target.T


            class Unregistered(torch.nn.Module):
                def forward(self, pred, target):
                    return pred
            """,
        "pkg/head.py": """\
            import torch
            from mmengine.registry import MODELS


            class Head(torch.nn.Module):
                def __init__(self, loss):
                    super().__init__()
                    self.loss_cls = MODELS.build(loss)

                def loss(self, pred, target):
                    return self.loss_cls(pred, target)
            """,
    })
    project = Project(str(tmp_path))
    analyses = {p: analyse(Path(p).read_text(), p, module_name(p), force=True) for p in paths}
    for p, a in analyses.items():
        project.add(p, a.summary)
    head = next(p for p in paths if p.endswith("head.py"))
    _, graph, _ = lint_analysis(analyses[head], default_rules(), project.facts_for(head))
    edges = [callee for caller, callee, _ in graph.calls if caller == "Head.loss"]
    assert edges == ["@registry:?MODELS.__call__"], edges  # (not all are modules: `__call__`)
    targets = {qual for e in edges for _, qual in project._call_targets(head, e)}
    assert targets == {"FocalLoss.forward", "IoUCost.__call__"}, targets


def test_star_imports_that_import_one_another_are_each_followed_once(tmp_path, monkeypatch):
    # mmdetection3d's projects: packages whose modules `from .x import *` one another. A
    # name none of them defines was looked for down every path of stars (minutes for one
    # file checked alone); each (module, star, name) is followed once per resolution now.
    import synclint.project as project

    names = [f"m{i}" for i in range(6)]
    files = {"pkg/__init__.py": "".join(f"from .{n} import *  # noqa\n" for n in names)}
    for n in names:
        files[f"pkg/{n}.py"] = "".join(f"from .{o} import *  # noqa\n" for o in names if o != n)
    files["use.py"] = ("import torch\nfrom pkg import missing\n\n\ndef f(x):\n"
                       "    for _ in range(3):\n        print(missing(x).sum().item())\n")
    calls = []
    inner = project.Project._resolve

    def counted(self, *args):
        calls.append(args[0])
        assert len(calls) < 2000, "star imports followed down every path"  # (6 ** 8 before)
        return inner(self, *args)

    monkeypatch.setattr(project.Project, "_resolve", counted)
    found = _found(_project(tmp_path, files))
    assert ("use.py", 7, "SYN101", True) in found


def test_a_helper_of_another_module_made_of_its_parameters_is_never_the_callers_join(tmp_path):
    """`default(val, d)` imported from a util module, called with a tensor annotation in one
    module and with a size in another (generative-models' `n = default(self.n, z.shape[0])`,
    then `math.ceil(z.shape[0] / n)`): a replay that cannot tell the value leaves it unknown;
    the join over every caller (a tensor) says nothing about this call. The caller that
    passes a GPU tensor still gets one (its `.item()` is a read-back)."""
    paths = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": """\
            from inspect import isfunction

            def exists(x):
                return x is not None

            def default(val, d):
                if exists(val):
                    return val
                return d() if isfunction(d) else d
            """,
        "pkg/sampler.py": """\
            from typing import Optional
            import torch
            from .util import default

            class Sampler:
                def __call__(self, n: int, rand: Optional[torch.Tensor] = None) -> torch.Tensor:
                    return torch.zeros_like(default(rand, torch.randn((n,))))
            """,
        "pkg/model.py": """\
            import math
            import torch
            from .util import default

            class M(torch.nn.Module):
                def __init__(self, n=None):
                    super().__init__()
                    self.n = n

                def decode(self, z):
                    n = default(self.n, z.shape[0])
                    rounds = math.ceil(z.shape[0] / n)
                    for i in range(rounds):
                        z[i * n : (i + 1) * n].mul_(2)
                    return z

                def forward(self, x, y=None):
                    y = default(y, x * 2)
                    return y.sum().item()
            """,
    })
    found = {(n, row, code) for n, row, code, _ in _found(paths) if n == "model.py"}
    assert found == {("model.py", 19, "SYN101")}, found


DETECTRON2_ARCH = """\
    import torch
    from torch import nn
    from detectron2.modeling import META_ARCH_REGISTRY
    from pkg.registry import MODELS

    @{registry}.register()
    class MaskFormer(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("pixel_mean", torch.zeros(3, 1, 1), False)

        @property
        def device(self):
            return self.pixel_mean.device

        def forward(self, batched_inputs):
            images = [x["image"].to(self.device) for x in batched_inputs]
            if self.training:
                gt = [x["instances"].to(self.device) for x in batched_inputs]
            return images
    """


def test_a_detectron2_meta_architecture_is_given_the_loaders_host_dicts(tmp_path):
    """detectron2's trainer calls a META_ARCH_REGISTRY model with the data loader's batch, a
    list of dicts of CPU tensors (Mask2Former's `x["image"].to(self.device)`): each move is a
    blocking copy, every step. The same module registered in a project's own registry, or in
    none, is given whatever its callers pass (a forward's input: no evidence of the host)."""
    reg = {"pkg/__init__.py": "", "pkg/registry.py": "class Registry:\n    def register(self):\n        return lambda c: c\nMODELS = Registry()\n"}
    found = {(n, row, code, hot) for n, row, code, hot in _found(_project(tmp_path / "d2", {
        **reg, "pkg/arch.py": DETECTRON2_ARCH.replace("{registry}", "META_ARCH_REGISTRY")})) if n == "arch.py"}
    assert found == {("arch.py", 17, "SYN304", True), ("arch.py", 19, "SYN304", True)}, found
    for registry in ("MODELS", "nothing"):
        src = DETECTRON2_ARCH.replace("{registry}", registry).replace("    @nothing.register()\n", "")
        found = {f for f in _found(_project(tmp_path / registry, {**reg, "pkg/arch.py": src})) if f[0] == "arch.py"}
        assert not found, (registry, found)


MULTI_APPLY_LOSS = """\
    import numpy as np
    import torch
    from torch import nn
    from mmdet.models.utils import multi_apply

    class DBLoss(nn.Module):
        def forward(self, preds, data_samples):
            gt, gt_mask = self.get_targets(data_samples)
            gt = gt.to(preds.device)
            gt_mask = gt_mask.to(preds.device)
            return (preds - gt).abs().mean()

        def get_targets(self, data_samples):
            gt, gt_mask = multi_apply(self._get_target_single, data_samples)
            return torch.cat(gt), torch.cat(gt_mask)

        def _get_target_single(self, data_sample):
            kernel = np.zeros(data_sample.img_shape, dtype=np.float32)
            return {made}, torch.from_numpy(kernel > 0).float()
    """


def test_multi_apply_gives_lists_of_what_its_function_returns(tmp_path):
    """mmdet's `multi_apply(f, items)` maps `f` over the items and gives one list per value
    `f` returns (mmocr's DBNet targets, made on the host from each data sample, then
    `gt.to(preds.device)` every step). Where `f` makes its targets on the predictions'
    device, the move copies nothing (the near-miss)."""
    found = {(n, row, code, hot) for n, row, code, hot in _found(_project(tmp_path / "host", {
        "loss.py": MULTI_APPLY_LOSS.replace("{made}", "torch.from_numpy(kernel)")})) if n == "loss.py"}
    assert found == {("loss.py", 9, "SYN304", True), ("loss.py", 10, "SYN304", True)}, found
    found = {f for f in _found(_project(tmp_path / "gpu", {
        "loss.py": MULTI_APPLY_LOSS.replace("{made}", "torch.zeros(3, device='cuda')")
                                   .replace("torch.from_numpy(kernel > 0).float()", "torch.ones(3, device='cuda')")}))
             if f[0] == "loss.py"}
    assert not found, found


def test_a_write_to_one_key_of_a_batch_leaves_its_other_keys_where_they_were(tmp_path):
    """picotron's pipeline step writes one key of the loader's batch with a device tensor
    (`batch["hidden_states"] = recv.to(device)`), then moves the others, still on the
    host: each move is a blocking copy. What the written key holds is what was written (its
    move is no copy: the near-miss), and a key written from a variable index still makes
    every item either (no finding: the container's join)."""
    src = """\
        import torch

        def step(model, loader, device, grad_acc_steps):
            for _ in range(grad_acc_steps):
                batch = next(loader)
                recv = torch.zeros(3, device=device)
                batch["hidden_states"] = recv.to(device) if recv is not None else recv
                x = batch["input_ids"].to(device)
                h = batch["hidden_states"].to(device)
                out = model(x, h)
            return out

        def main(ds, model, use_cpu):
            device = torch.device("cpu") if use_cpu else torch.device("cuda", 0)
            loader = iter(torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True))
            for _ in range(100):
                step(model, loader, device, 4)
        """
    found = {(n, row, code) for n, row, code, _ in _found(_project(tmp_path / "a", {"train.py": src}))}
    assert found == {("train.py", 8, "SYN304")}, found
    src2 = src.replace('batch["hidden_states"] = ', 'batch[key] = ').replace(
        "def step(model, loader, device, grad_acc_steps):", "def step(model, loader, device, grad_acc_steps, key='h'):")
    found = {(n, row, code) for n, row, code, _ in _found(_project(tmp_path / "b", {"train.py": src2}))}
    assert found == set(), found


def test_a_module_passed_in_from_another_module_returns_what_its_class_says(tmp_path):
    """`Criterion(Matcher())` in a third module: the criterion's module never names the
    matcher's class, yet `self.matcher(scores)` returns the matcher's host index tensors
    (Mask2Former's `SetCriterion(matcher=HungarianMatcher(...))`); a criterion given a matcher
    of no class the project defines knows nothing of them."""
    files = {
        "matcher.py": """\
            import numpy as np
            import torch
            from torch import nn

            class Matcher(nn.Module):
                def forward(self, scores):
                    picks = [np.argsort(s) for s in scores.detach().cpu().numpy()]
                    return [(torch.as_tensor(p[:1]), torch.as_tensor(p[1:])) for p in picks]
            """,
        "criterion.py": """\
            import torch
            from torch import nn

            class Criterion(nn.Module):
                def __init__(self, matcher):
                    super().__init__()
                    self.matcher = matcher

                def forward(self, scores):
                    pairs = self.matcher(scores)
                    return torch.cat([s[j] for s, (_, j) in zip(scores, pairs)]).sum()
            """,
        "build.py": """\
            from criterion import Criterion
            from matcher import Matcher

            criterion = Criterion(Matcher())
            """,
    }
    found = _found(_project(tmp_path / "a", files))
    assert ("criterion.py", 11, "SYN305", True) in found
    files["build.py"] = "from criterion import Criterion\nfrom elsewhere import Matcher\n\ncriterion = Criterion(Matcher())\n"
    found = _found(_project(tmp_path / "b", files))
    assert not any(f[0] == "criterion.py" for f in found)
