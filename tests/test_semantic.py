"""The semantic model on its own, without any rule: what it infers, binds and joins."""
import textwrap

import libcst as cst
import pytest

from synclint.engine import _parse_module
from synclint.semantic import SemanticModel
from synclint.semantic import values as V
from synclint.semantic.heat import hot_functions
from synclint.walker import Walker


class _Probe:
    """Records the value of every `probe(expr)` argument where the walk meets it."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.seen = []

    def visit_Call(self, node):
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.seen.append((self.ctx.infer(node.args[0].value), self.ctx.site_hot()))


def probe(source: str):
    module = _parse_module(source)
    first = SemanticModel(source)
    first.set_module(module)
    Walker(first, ()).walk(module)
    ctx = SemanticModel(source, facts=first.summary())
    ctx.set_module(module)
    p = _Probe(ctx)
    Walker(ctx, [p]).walk(module)
    return p.seen, ctx


def val(source: str) -> V.Val:
    seen, _ = probe(source)
    assert len(seen) == 1
    return seen[0][0]


HEAD = "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"


def test_branches_join_and_cuda_if_available_is_a_gpu_device():
    v = val(HEAD + "x = torch.zeros(3, device=device)\nprobe(x)\n")
    assert v.kind == V.TENSOR and v.device == V.CUDA
    # the CPU on one path and CUDA on the other: a GPU value for the read-back rules, and a
    # host value for the copy rules (the CPU path is the one that copies)
    v = val("import torch\nif c:\n    d = 'cpu'\nelse:\n    d = 'cuda'\nx = torch.ones(2).to(d)\nprobe(x)\n")
    assert v.device == V.EITHER and V.on_host(v)
    v = val("import torch\nx = torch.ones(2)\nif c:\n    x = x.cuda()\nprobe(x)\n")
    assert v.device == V.EITHER


def test_optional_then_tensor_is_a_tensor():
    assert val(HEAD + "best = None\nfor i in range(3):\n    best = torch.ones(1, device=device)\nprobe(best)\n").kind == V.TENSOR


def test_unknown_operands_keep_results_unknown():
    assert val("import torch\ndef f(a, b):\n    probe(a > b)\n").kind == V.UNKNOWN
    assert val("import torch\ndef f(a, b):\n    probe([a, b])\n").kind == V.UNKNOWN
    assert val("import torch\ndef f(a, b):\n    probe(sum([a, b]))\n").kind == V.UNKNOWN
    assert val("import torch\ndef f(a, b):\n    probe(torch.cat([a, b]))\n").device is None


def test_running_sum_and_appended_list_hold_tensors():
    src = HEAD + "x = torch.ones(2, device=device)\ntotal = 0\nfor _ in range(3):\n    total += x.sum()\nprobe(total)\n"
    assert val(src).kind == V.TENSOR
    src = HEAD + "x = torch.ones(2, device=device)\nlosses = []\nfor _ in range(3):\n    losses.append(x.sum())\nprobe(sum(losses))\n"
    assert val(src).kind == V.TENSOR and val(src).device == V.CUDA


def test_joining_a_list_of_values_the_model_does_not_know_is_not_host_data():
    # trl's `entropy_from_logits`: chunks appended in a loop, then `torch.cat(entropies)`;
    # a list `cat` joins holds tensors, so its device is theirs (unknown), not the CPU's
    src = "import torch\nfrom lib import helper\ndef f(xs):\n    out = []\n    for x in xs:\n        out.append(helper(x))\n    probe(torch.cat(out, dim=0))\n"
    v = val(src)
    assert v.kind == V.TENSOR and v.device is None
    # near-miss: appended CPU tensors stay on the CPU, and `torch.tensor` of a list is host data
    src = "import torch\nout = []\nfor i in range(3):\n    out.append(torch.ones(2))\nprobe(torch.stack(out))\n"
    assert val(src).device == V.CPU
    assert val("import torch\ndef f(a, b):\n    probe(torch.tensor([a, b]))\n").device == V.CPU


def test_a_module_wrapped_and_moved_on_one_path_is_a_cuda_module_after_the_join():
    # 3D-ResNets' `make_data_parallel`: the model unchanged on one path, `nn.DataParallel(
    # model).cuda()` on the other (DataParallel gathers outputs on the GPU from CPU inputs);
    # here the other path's module is one the model knows without the project
    src = ("import torch\ndef f(model, gpu, loader):\n    if gpu:\n"
           "        model = torch.nn.Linear(4, 4).cuda()\n"
           "    for x, y in loader:\n        probe(model(x))\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CUDA
    # near-miss: without the module path, an unknown callable's output on CPU inputs is not known
    src = "import torch\ndef f(model, loader):\n    for x, y in loader:\n        probe(model(x))\n"
    assert val(src).device != V.CUDA


BALANCED = """\
import torch
from torch.utils.data import DataLoader
from lib import make


class Balanced:
    def __init__(self, datasets):
        self.iters = []
        self.others = []
        for d in datasets:
            self.iters.append(iter(DataLoader(d, batch_size=4)))
            self.others.append(make(d))

    def get_batch(self):
        images = []
        for it in self.iters:
            image, text = next(it)
            images.append(image)
        probe(torch.cat(images, 0))
        for it in self.others:
            probe(next(it))
"""


def test_a_list_attribute_of_loader_iterators_yields_their_batches():
    # deep-text-recognition-benchmark's Batch_Balanced_Dataset: `self.dataloader_iter_list`
    # filled with `iter(DataLoader(...))` in `__init__`, `next(...)` of each item per step:
    # CPU batches, then `torch.cat` of them is a CPU tensor (the caller's `.to(device)` copies)
    seen, _ = probe(BALANCED)
    batch, other = seen[0][0], seen[1][0]
    assert batch.kind == V.TENSOR and batch.device == V.CPU
    # near-miss: a list filled with values the model does not know tells nothing about them
    assert other.device is None


def test_a_shape_made_a_tensor_and_a_list_gather_are_one_dimensional():
    # PyTorch-YOLOv3's `gain[2:6] = torch.tensor(p[i].shape)[[3, 2, 3, 2]]`: a 1-D CPU tensor
    src = "import torch\nx = torch.ones(2, 3, device='cuda')\nprobe(torch.tensor(x.shape)[[1, 0, 1, 0]])\n"
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU and v.ndim == 1
    # near-miss: a nested list index (`t[[[3, 2]]]`) is not a 1-D gather; its rank is not guessed
    assert val("import torch\nprobe(torch.arange(4)[[[3, 2]]])\n").ndim is None


def test_boolness_survives_stack_transpose_and_unpacking():
    src = HEAD + "x = torch.ones(2, 2, device=device)\na, b = (x > 0).T\nprobe(a)\n"
    assert val(src).mask
    assert val(HEAD + "x = torch.ones(2, device=device)\nprobe(torch.stack([x > 0, x < 1]))\n").mask


def test_binary_max_is_a_tensor_and_dim_max_a_pair():
    assert val(HEAD + "a = torch.ones(2, device=device)\nprobe(torch.max(a, a))\n").kind == V.TENSOR
    assert val(HEAD + "a = torch.ones(2, device=device)\nprobe(torch.max(a, 0))\n").kind == V.TENSORS


def test_type_as_and_to_other_tensor_move_devices():
    src = HEAD + "g = torch.ones(2, device=device)\nc = torch.ones(2)\nprobe(c.type_as(g))\n"
    assert val(src).device == V.CUDA
    assert val(HEAD + "g = torch.ones(2, device=device)\nprobe(torch.ones(2).to(g))\n").device == V.CUDA


def test_class_attributes_from_any_method_and_buffers():
    src = (
        "import torch\nclass M(torch.nn.Module):\n"
        "    def forward(self, x):\n        probe(self.scale)\n        probe(self.buf)\n        probe(self.lin(x))\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = torch.nn.Linear(2, 2)\n"
        "        self.scale = torch.ones(1, device='cuda')\n        self.register_buffer('buf', torch.zeros(2))\n"
    )
    seen, _ = probe(src)
    assert [s[0].kind for s in seen] == [V.TENSOR, V.TENSOR, V.TENSOR]
    assert seen[0][0].device == V.CUDA


def test_instance_attributes_of_an_in_file_class():
    src = (
        "import torch\nfrom typing import NamedTuple\n"
        "class Rays(NamedTuple):\n    depth: torch.Tensor\n    valid: torch.Tensor\n"
        "def render(rays: Rays):\n    probe(rays.depth)\n"
    )
    assert val(src).kind == V.TENSOR


def test_parameters_take_values_from_their_call_sites():
    src = "import torch\ndef f(x):\n    probe(x)\nf(torch.ones(2))\nf(torch.zeros(3))\n"
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU  # every caller passes a CPU tensor
    src = "import torch\ndef f(x):\n    probe(x)\nf(torch.ones(2, device='cuda'))\nf(1)\n"
    assert val(src).kind == V.TENSOR  # a tensor on some path


def test_a_lightning_step_hooks_batch_is_on_the_gpu():
    """Lightning moves the batch to the module's device before `training_step` runs; a
    `*_step` method of any other class keeps a batch of unknown device."""
    src = ("import torch\nimport pytorch_lightning as pl\nclass M(pl.LightningModule):\n"
           "    def training_step(self, batch, batch_idx):\n        x, y = batch\n        probe(x)\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CUDA
    assert val(src.replace("(pl.LightningModule)", "")).device is None


def test_a_dict_of_loaders_keeps_them():
    """`dataloaders = {x: DataLoader(...) for x in ["train", "val"]}` (torchvision's
    transfer-learning tutorial): `dataloaders[phase]` is a loader, its batches CPU tensors."""
    src = ("import torch\ndataloaders = {x: torch.utils.data.DataLoader(sets[x]) for x in ['train', 'val']}\n"
           "for phase in ['train', 'val']:\n    for inputs, labels in dataloaders[phase]:\n        probe(inputs)\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU
    src = ("import torch\nloaders = {'train': torch.utils.data.DataLoader(a), 'val': torch.utils.data.DataLoader(b)}\n"
           "for x, y in loaders['val']:\n    probe(x)\n")
    assert val(src).device == V.CPU


def test_an_annotation_it_cannot_read_gives_way_to_what_the_callers_pass():
    """`scaler: amp.GradScaler` (an alias the model does not resolve) given a GradScaler by
    every caller is that GradScaler; with no caller it stays unknown, not a tensor."""
    src = ("import torch\nfrom somewhere import amp\ndef train(scaler: amp.GradScaler):\n    probe(scaler)\n"
           "train(torch.amp.GradScaler())\n")
    v = val(src)
    assert v.kind == V.OBJECT and v.cls == "torch.amp.GradScaler"
    assert val(src.replace("train(torch.amp.GradScaler())\n", "")).kind == V.UNKNOWN


def test_after_a_cuda_availability_test_the_gpu_paths_values_hold():
    """On a GPU run only the CUDA path of `if torch.cuda.is_available():` (or of a name bound
    to it) is taken: what follows sees its values. A configuration flag keeps both paths."""
    for test in ("torch.cuda.is_available()", "use_gpu"):
        src = ("import torch\nuse_gpu = torch.cuda.is_available()\nx = torch.ones(2)\n"
               f"if {test}:\n    x = x.cuda()\nprobe(x)\n")
        assert val(src).device == V.CUDA, test
    src = "import torch\nx = torch.ones(2)\nif args.gpu:\n    x = x.cuda()\nprobe(x)\n"
    assert val(src).device == V.EITHER
    # a branch that may leave the block: what follows is not simply the fall-through
    src = ("import torch\ndef f(x):\n    if torch.cuda.is_available():\n        return x.cuda()\n"
           "    probe(x)\nf(torch.ones(2))\n")
    assert val(src).device == V.CPU


def test_arithmetic_of_numbers_of_different_kinds_is_a_number():
    assert val("import torch\nx = torch.ones(2, device='cuda')\nprobe(x.sum().item() * 100)\n").py == "number"
    assert val("probe(len(a) * 0.5)\n").kind == V.PY


def test_function_defined_after_use_returns_are_known():
    assert val("import torch\nprobe(make())\ndef make():\n    return torch.ones(2, device='cuda')\n").device == V.CUDA


def test_batches_pass_through_wrappers_and_prepare():
    src = "import torch\nfrom tqdm import tqdm\nloader = torch.utils.data.DataLoader(ds)\nfor i, (x, y) in enumerate(tqdm(loader)):\n    probe(x)\n"
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU
    src = ("import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\n"
           "loader = torch.utils.data.DataLoader(ds)\nmodel, loader = acc.prepare(model, loader)\n"
           "for x in loader:\n    probe(x)\n")
    assert val(src).device == V.CUDA
    assert val("import torch\nit = iter(torch.utils.data.DataLoader(ds))\nprobe(next(it))\n").device == V.CPU
    # every spelling of tqdm's bar (EfficientDet's `from tqdm.autonotebook import tqdm`)
    for where in ("tqdm.auto", "tqdm.autonotebook", "tqdm.rich"):
        src = (f"import torch\nfrom {where} import tqdm\nloader = torch.utils.data.DataLoader(ds)\n"
               "for x in tqdm(loader):\n    probe(x)\n")
        assert val(src).device == V.CPU, where


def test_isinstance_narrows():
    assert val("import torch\ndef f(n):\n    if isinstance(n, int):\n        probe(n)\n").kind == V.PY


def test_isinstance_narrows_the_else_path_and_after_an_assert():
    gpu = "import torch\nv = torch.ones((), device='cuda')\n"
    # past `if isinstance(v, Tensor): v = v.item()`, v is a tensor on neither path
    assert val(gpu + "if isinstance(v, torch.Tensor):\n    v = v.item()\nprobe(v)\n").kind != V.TENSOR
    assert val(gpu + "if not isinstance(v, torch.Tensor):\n    probe(v)\n").kind != V.TENSOR
    assert val(gpu + "if not isinstance(v, torch.Tensor):\n    pass\nelse:\n    probe(v)\n").kind == V.TENSOR
    assert val(gpu + "if isinstance(v, torch.Tensor):\n    pass\nprobe(v)\n").kind == V.TENSOR  # (it may be)
    assert val("def f(v):\n    assert isinstance(v, (float, int))\n    probe(v)\n").kind == V.PY
    # a list of tensors asserted to be a list stays the list of tensors it was
    src = "import torch\nts = [torch.ones(2, device='cuda')]\nassert isinstance(ts, (list, tuple))\nprobe(ts[0])\n"
    assert val(src).device == V.CUDA


@pytest.mark.parametrize("check, device", [
    # OLMo-core's ring attention: past a test that raises unless the tensor is on the host
    ("if lens.device.type != 'cpu':\n        raise RuntimeError('expected on CPU')\n", V.CPU),
    ("if lens.is_cuda: raise ValueError('host only')\n", V.CPU),
    ("assert lens.device.type == 'cpu'\n", V.CPU),
    ("assert not lens.is_cuda\n", V.CPU),
    ("if not lens.is_cpu:\n        return None\n", V.CPU),
    # near misses: a test that may fall through, one that moves the tensor, an unrelated test
    ("if lens.device.type != 'cpu':\n        print('moving')\n", V.CUDA),
    ("if lens.device.type != 'cpu':\n        lens = lens.cuda()\n", V.CUDA),
    ("if lens.ndim != 1:\n        raise RuntimeError('1D')\n", V.CUDA),
    ("if lens.device.type == 'cpu':\n        raise RuntimeError('on the GPU only')\n", V.CUDA),
])
def test_a_device_check_that_leaves_places_the_tensor(check, device):
    src = f"import torch\ndef shard(lens: torch.Tensor):\n    {check}    probe(lens)\n"
    src = src.replace("def shard(lens: torch.Tensor):", "lens0 = torch.ones(3, device='cuda')\ndef shard(lens=lens0):")
    got = val(src)
    assert (got.kind, got.device) == (V.TENSOR, device)


def test_a_class_used_above_its_definition_is_known():
    src = ("import torch\nimport torch.nn as nn\n"
           "class Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.gen = Gen()\n"
           "    def forward(self, x):\n        probe(self.gen)\n        return self.gen.build(x)\n"
           "class Gen(nn.Module):\n    def build(self, x):\n        probe(x)\n        return x\n")
    seen, ctx = probe(src)
    assert seen[0][0].kind == V.MODULE and seen[0][0].cls == "Gen"
    assert "Gen.build" in hot_functions(ctx)  # called from Outer.forward, which runs every step


def test_a_dict_filled_with_tensors_holds_tensors():
    src = ("import torch\nx = torch.randn(4, device='cuda')\nlosses = {}\nlosses['ce'] = x.sum()\n"
           "losses['l1'] = x.abs().mean()\nfor k, v in losses.items():\n    probe(v)\nprobe(losses['ce'])\n")
    seen, _ = probe(src)
    assert [(v.kind, v.device) for v, _ in seen] == [(V.TENSOR, V.CUDA)] * 2


def test_accelerate_collectives_keep_the_device():
    src = ("import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\n"
           "model, loader = acc.prepare(model, torch.utils.data.DataLoader(ds))\n"
           "for x, y in loader:\n    preds, labels = acc.gather_for_metrics((x.argmax(-1), y))\n    probe(preds)\n")
    assert val(src).device == V.CUDA


def test_pin_memory_through_a_dict_of_keywords():
    def pinned(kw):
        src = f"import torch\nkw = {kw}\nloader = torch.utils.data.DataLoader(ds, **kw)\nfor x in loader:\n    probe(x)\n"
        return val(src).pinned

    assert pinned("dict(batch_size=4, pin_memory=True)") is True
    assert pinned("{'batch_size': 4, 'pin_memory': True}") is True
    assert pinned("dict(batch_size=4)") is False  # the dict says all it passes
    assert pinned("make_kwargs()") is None  # keys unknown: pinned or not, not known


def test_a_generator_over_a_loader_yields_its_batches():
    src = ("import torch\nloader = torch.utils.data.DataLoader(ds)\n"
           "def sample_data(loader):\n    while True:\n        for batch in loader:\n            yield batch\n"
           "def cycle(dl):\n    while True:\n        yield from dl\n"
           "it = sample_data(loader)\nprobe(next(it))\nprobe(next(cycle(loader)))\n")
    seen, _ = probe(src)
    assert [(v.kind in (V.TENSOR, V.TENSORS), v.device) for v, _ in seen] == [(True, V.CPU), (True, V.CPU)]


def test_numpy_values_are_numpy_whatever_the_imports():
    assert val("import numpy as np\nimport torch\na = np.zeros(3)\nprobe(a)\n").kind == V.NUMPY
    v = val("import numpy as np\nimport torch\nx = torch.ones(2, device='cuda')\nprobe(x)\n")
    assert v.kind == V.TENSOR and v.device == V.CUDA


def test_a_cpu_script_that_never_mentions_a_gpu():
    _, ctx = probe("import torch\ndef f(x):\n    return x\nfor i in range(3):\n    pass\n")
    assert not ctx.gpu_evident
    _, ctx = probe("import torch\ndef f(x):\n    return x\n")
    assert ctx.gpu_evident  # a library module: its callers decide
    # minimalRL's scripts: `sample()`, `clamp` and `example` hold no AMP, and no GPU
    _, ctx = probe("import torch\nfor i in range(3):\n    a = m.sample().clamp(0, 1)  # an example\n")
    assert not ctx.gpu_evident
    _, ctx = probe("import torch\nfrom torch import amp\nfor i in range(3):\n    pass\n")
    assert ctx.gpu_evident


@pytest.mark.parametrize("guard, hot", [
    ("if step % 100 == 0:", False),
    ("if step % 100 == 0 and rank == 0:", False),
    # `not step % every` (audiolm's trainers): the same guard; near-miss: its complement
    ("if not (step % 100):", False),
    ("if not (step % 100 == 0):", True),
    ("if (step + 1) % accum == 0:\n        opt.step()\n   ", True),
    # a list the body fills runs it a bounded number of times (pytorch-segmentation keeps
    # 15 validation images to show, then stops)
    ("if len(shown) < 15:\n        shown.append(step)", False),
    ("if len(shown) <= 15:\n        shown.extend([step])", False),
    # near-misses: the body does not fill the list the test measures, or the test is no bound
    ("if len(other) < 15:\n        shown.append(step)", True),
    ("if len(shown) > 15:\n        shown.append(step)", True),
    ("if (step + 1) % args.gradient_accumulation_steps == 0:\n        shown.append(step)", True),
    # every so many seconds: a clock reading minus a time the body sets again (vicreg)
    ("if time.time() - last > 30:\n        last = time.time()", False),
    ("if rank == 0 and time.perf_counter() - last >= 30:\n        last = time.perf_counter()", False),
    # near-misses: never reset, the test stays true once it holds; not a clock
    ("if time.time() - start > 30:\n        shown.append(step)", True),
    ("if step - last > 30:\n        last = step", True),
])
def test_periodic_and_bounded_guards_and_accumulation(guard, hot):
    src = ("import time\nimport torch\nshown, other = [], []\nlast = start = time.time()\nrank = 0\n"
           f"for step in range(100):\n    {guard}\n        probe(step)\n")
    seen, _ = probe(src)
    assert seen[0][1] is hot


def test_an_instance_called_where_it_is_made_runs_its_call_method():
    # LightGlue's `img, scales = ImagePreprocessor(**conf)(img)`: `__call__`'s annotated return
    src = """\
import torch
from typing import Tuple
class Prep:
    def __init__(self, **conf):
        self.conf = conf
    def __call__(self, img: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return img, torch.ones(2).to(img)
class Plain:
    pass
def extract(img: torch.Tensor):
    a, b = Prep(x=1)(img)
    probe(a)
    probe(Plain()(img))
"""
    seen, _ = probe(src)
    assert seen[0][0].kind == V.TENSOR
    assert seen[1][0].kind == V.UNKNOWN  # near-miss: a class with no `__call__` of its own


def test_a_generator_that_yields_a_parameters_items_iterates_what_each_call_passes():
    # audiolm's `cycle(dl)` over an accelerate-prepared loader and over a plain one: each
    # call's batches are its own loader's, not the two joined
    src = """\
import torch
from accelerate import Accelerator
acc = Accelerator()
def cycle(dl):
    while True:
        for data in dl:
            yield data
def twice(dl, other):
    for data in dl:
        yield data
    for x in other:
        yield x
cpu_dl = torch.utils.data.DataLoader(ds)
dl = acc.prepare(torch.utils.data.DataLoader(ds))
it = cycle(dl)
probe(next(it))
it2 = cycle(cpu_dl)
probe(next(it2))
probe(next(twice(dl, cpu_dl)))
"""
    seen, _ = probe(src)
    assert [v.device for v, _ in seen[:2]] == [V.CUDA, V.CPU]
    # near-miss: a generator that yields the items of two parameters: what every call passes
    assert seen[2][0].device == V.EITHER


def test_the_sum_of_a_containers_values_of_unknown_kind_is_not_a_number():
    # DETR: `losses_reduced_scaled = sum(loss_dict_reduced_scaled.values())`, then `.item()`
    src = """\
import torch
def f(x, w, n):
    d = {k: v * w[k] for k, v in x.items()}
    probe(sum(d.values()))
    probe(sum([1, 2]))
    probe(sum(range(n)))
    probe(sum([len(a) for a in x]))
"""
    seen, _ = probe(src)
    assert seen[0][0].kind == V.UNKNOWN
    # near-misses: a literal of numbers, a range, a comprehension of numbers
    assert [v.kind for v, _ in seen[1:]] == [V.PY, V.PY, V.PY]


def test_a_tensor_with_dict_methods_is_a_dict_of_tensors():
    # DETR: `outputs = model(samples)` is its output dict, `targets` a collated list of dicts:
    # `.items()` gives string keys and tensor values; `.keys()` no tensor at all
    src = """\
import torch
loader = torch.utils.data.DataLoader(ds)
model = torch.nn.Linear(2, 2).cuda()
for samples, targets in loader:
    outputs = model(samples.cuda())
    for k, v in outputs.items():
        probe(k)
        probe(v)
    probe(sorted(outputs.keys()))
    for t in targets:
        for k, v in t.items():
            probe(v)
"""
    seen, _ = probe(src)
    key, value, keys, batch_value = (v for v, _ in seen)
    assert key.kind == V.PY and value.kind == V.TENSOR and value.device == V.CUDA
    assert keys.kind != V.TENSOR
    assert batch_value.kind == V.TENSOR and batch_value.device == V.CPU  # near-miss: still a tensor


def test_a_period_that_defaults_to_one_and_no_caller_changes_is_every_step():
    # audiolm's trainers: `log_losses = ... not (steps % self.log_losses_every)`, from
    # `log_losses_every: int = 1` in `__init__`, logs at every step
    src = """\
import torch
class Trainer:
    def __init__(self, model, log_every: int = 1, save_every: int = 1, eval_every: int = 10):
        self.log_every = log_every
        self.save_every = save_every
        self.eval_every = eval_every
    def train(self, loader):
        for step, x in enumerate(loader):
            if step % self.log_every == 0:
                probe(x)
            if step % self.save_every == 0:
                probe(x)
            if step % self.eval_every == 0:
                probe(x)
Trainer(None, save_every=100)
"""
    seen, _ = probe(src)
    # near-misses: a caller passes another period; a default other than 1
    assert [hot for _, hot in seen] == [True, False, False]


def test_comprehension_alone_is_not_hot_and_epoch_functions_are_not_hot():
    seen, _ = probe("import torch\nxs = [probe(i) for i in range(3)]\n")
    assert seen[0][1] is False
    src = ("import torch\nloader = torch.utils.data.DataLoader(ds)\n"
           "def train_one_epoch():\n    for x in loader:\n        pass\n    summary = 1\n"
           "def step_fn():\n    pass\n"
           "for it in range(3):\n    step_fn()\ntrain_one_epoch()\n")
    _, ctx = probe(src)
    hot = hot_functions(ctx)
    assert "step_fn" in hot and "train_one_epoch" not in hot
    # a loop whose variable names epochs is an epoch loop: what it calls runs once an epoch
    _, ctx = probe(src.replace("for it in", "for epoch in"))
    assert "step_fn" not in hot_functions(ctx)
    # so is one that calls a function running its own loop over batches, whatever its name
    _, ctx = probe(src.replace("    step_fn()\ntrain_one_epoch()", "    train_one_epoch()\n    step_fn()"))
    assert not {"step_fn", "train_one_epoch"} & hot_functions(ctx)


@pytest.mark.parametrize("body, hot", [
    # RepDistiller's `main`: the epoch loop hands the loader to a function that loops over it
    ("acc = train(epoch, train_loader, model)\n    probe(acc)", False),
    ("train(epoch, train_loader, model)\n    probe(epoch)", False),
    # near-misses: a step loop that takes one batch a step, or fetches it through a
    # `*_step` function, or evaluates only under a periodic guard, stays per step
    ("x = next(it)\n    probe(x)", True),
    ("loss = train_step(model, train_loader)\n    probe(loss)", True),
    # a loop whose variable names epochs, with no step of its own, runs once an epoch
    ("if epoch % 10 == 0:\n        evaluate(val_loader)\n    probe(epoch)", False),
    ("acc = log(epoch, model)\n    probe(acc)", False),
])
def test_an_epoch_loop_may_hand_the_loader_to_a_function(body, hot):
    src = ("import torch\ntrain_loader = torch.utils.data.DataLoader(ds)\nit = iter(train_loader)\n"
           f"for epoch in range(10):\n    {body}\n")
    seen, _ = probe(src)
    assert seen[-1][1] is hot


def test_a_passthrough_held_in_a_variable_yields_the_loaders_batches():
    src = ("import torch\nfrom tqdm import tqdm\ndef run(main, train_loader):\n"
           "    bar = tqdm if main else iter\n    for x in bar(train_loader):\n        probe(x)\n")
    v = val(src)
    assert v.kind == V.TENSORS and v.device == V.CPU
    # a callable of unknown origin is not assumed to pass anything through
    src = "import torch\ndef run(wrap, train_loader):\n    for x in wrap(train_loader):\n        probe(x)\n"
    assert val(src).kind == V.UNKNOWN


def test_type_and_type_as_move_to_the_other_tensors_device():
    src = HEAD + "ref = torch.ones(2, device=device)\nx = torch.zeros(3).type(ref.type())\nprobe(x)\n"
    assert val(src).device == V.CUDA
    src = "import torch\nx = torch.zeros(3).type(torch.cuda.FloatTensor)\nprobe(x)\n"
    assert val(src).device == V.CUDA
    src = "import torch\nx = torch.zeros(3).type(torch.float16)\nprobe(x)\n"  # a dtype: no move
    assert val(src).device == V.CPU
    src = HEAD + "ref = torch.ones(2, device=device)\nprobe(torch.zeros(3).type_as(ref))\n"
    assert val(src).device == V.CUDA


def test_shapes_sizes_and_lengths_are_ints():
    _, ctx = probe(HEAD + "x = torch.ones(2, 3, device=device)\nprobe(x)\n")
    for expr in ("x.shape[0]", "x.size(1)", "len(x) * 2", "x.ndim", "x.numel() // 2", "max(x.shape[0], 4)"):
        assert ctx.is_int(cst.parse_expression(expr)), expr
    for expr in ("x.shape", "x.shape[0] / 2", "x.sum()", "x.shape[:1]"):
        assert not ctx.is_int(cst.parse_expression(expr)), expr


def test_numpy_arrays_are_told_from_numpy_scalars():
    src = ("import numpy as np\nperm = np.random.permutation(8)\nidx = np.where(perm > 3)[0]\n"
           "k = np.argmax(np.ones(3))\nfor i in np.arange(3):\n    probe(i)\n")
    seen, ctx = probe(src)
    assert ctx.is_numpy_array(cst.parse_expression("perm")) and ctx.is_numpy_array(cst.parse_expression("idx"))
    assert not ctx.is_numpy_array(cst.parse_expression("k"))  # an argmax: a NumPy scalar
    assert seen[0][0].kind == V.NUMPY and not seen[0][0].ndim  # an element of an array


def test_int_index_tensors_are_known_by_dtype():
    _, ctx = probe(HEAD + "m = torch.ones(4, device=device) > 0\nidx = m.nonzero().squeeze(1)\n"
                   "top = torch.ones(4, device=device).topk(2)[1]\nprobe(idx)\n")
    assert ctx.is_int_index(cst.parse_expression("idx"))
    assert ctx.is_int_index(cst.parse_expression("top"))
    assert not ctx.is_int_index(cst.parse_expression("m"))  # a bool mask is not an int index


def test_grad_scaler_and_optimizer_fusedness_are_values():
    src = ("import torch\nopt = torch.optim.AdamW([], lr=1e-3)\nfused = torch.optim.AdamW([], fused=True)\n"
           "scaler = torch.amp.GradScaler('cuda')\noff = torch.amp.GradScaler(enabled=False)\n"
           "probe((opt, fused, scaler, off))\n")
    opt, fused, scaler, off = val(src).elems
    assert (opt.kind, opt.py) == (V.OPTIM, "unfused") and fused.py == "fused"
    assert scaler.cls == "torch.amp.GradScaler" and scaler.device == V.CUDA and off.device == V.CPU


def test_self_attributes_are_flow_sensitive_in_a_method_and_init_sets_what_it_leaves():
    src = ("import torch\nclass D:\n    def __init__(self, preload):\n        self.poses = torch.zeros(4, 4)\n"
           "        probe(self.poses)\n        if preload:\n            self.poses = self.poses.cuda()\n"
           "    def get(self, i):\n        probe(self.poses[i])\n")
    seen, _ = probe(src)
    assert seen[0][0].device == V.CPU  # just assigned in this method
    assert seen[1][0].device == V.EITHER  # on the CPU unless preloaded


def test_a_bound_method_in_a_variable_is_a_call_of_that_method():
    src = ("import torch\nclass R(torch.nn.Module):\n    def run(self, x):\n        probe(x)\n"
           "    def run_cuda(self, x):\n        probe(x)\n"
           "    def render(self, x, fast):\n        go = self.run_cuda if fast else self.run\n        return go(x)\n"
           "r = R()\nfor _ in range(3):\n    r.render(torch.ones(2), True)\n")
    seen, ctx = probe(src)
    assert {"R.run", "R.run_cuda"} <= hot_functions(ctx)


def test_module_dict_members_are_submodules_and_their_outputs_tensors():
    src = ("import torch\nclass GPT(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.t = torch.nn.ModuleDict(dict(ln=torch.nn.LayerNorm(4), h=torch.nn.ModuleList([])))\n"
           "    def forward(self, x):\n        for block in self.t.h:\n            x = block(x)\n"
           "        probe(self.t.ln(x))\n")
    assert val(src).kind == V.TENSOR


def test_distributions_remember_whether_they_validate():
    src = ("import torch\nfrom torch.distributions import Normal\n"
           "probe((Normal(0.0, 1.0), Normal(0.0, 1.0, validate_args=False), Normal(0.0, 1.0, validate_args=True)))\n")
    a, b, c = val(src).elems
    assert (a.py, b.py, c.py) == ("validating", None, "validating")


def test_a_one_line_helper_is_inferred_from_each_calls_arguments():
    src = ("import torch\ndef batch_loss(pred, target):\n    return (pred - target).pow(2).mean()\n"
           "probe(batch_loss(torch.ones(3, device='cuda'), torch.zeros(3, device='cuda')))\n"
           "probe(batch_loss(torch.ones(3), target=torch.zeros(3)))\n")
    seen, _ = probe(src)
    assert [v.device for v, _ in seen] == [V.CUDA, V.CPU]  # not the join over both callers


def test_a_short_helper_is_replayed_from_each_calls_arguments():
    # trl's `pad`: the result is made on `tensors[0].device`, after a loop and a branch
    src = """\
import torch
def pad(tensors, value=0, side="right"):
    shape = [max(t.shape[0] for t in tensors)]
    if side == "left":
        shape = [shape[0] + 1]
    out = torch.full((len(tensors), *shape), value, device=tensors[0].device)
    for i, t in enumerate(tensors):
        out[i, : t.shape[0]] = t
    return out
def to_gpu(x):
    x = x.contiguous()
    if torch.cuda.is_available():
        x = x.cuda(non_blocking=True)
    return x
def lengths_of(batch):
    res = []
    for b in batch:
        res.append(b.sum())
    return res
probe(pad([torch.tensor([1, 2]), torch.tensor([3])]))
probe(pad([torch.ones(2, device="cuda")]))
probe(to_gpu(torch.ones(2)))
probe(lengths_of([torch.ones(2, device="cuda")]))
"""
    (cpu, _), (gpu, _), (moved, _), (listed, _) = probe(src)[0]
    assert (cpu.kind, cpu.device) == (V.TENSOR, V.CPU)  # not the join over both calls
    assert (gpu.kind, gpu.device) == (V.TENSOR, V.CUDA)
    assert moved.device == V.EITHER  # moved under a branch: either
    # appends are not replayed: the walked return (a list of tensors), not "a plain list"
    assert listed.kind != V.PY
    # trl's entropy_from_logits: chunks appended, then `torch.cat`: not "a CPU tensor"
    v = val("import torch\ndef ent(logits):\n    parts = []\n    for c in logits.split(2):\n"
            "        parts.append(c.sum(-1))\n    parts = torch.cat(parts, dim=0)\n    return parts\n"
            "probe(ent(torch.ones(4, 3, device='cuda')))\n")
    assert v.device != V.CPU


def test_what_a_helper_binds_in_ways_the_replay_does_not_follow_is_unknown():
    from synclint.semantic.helpers import helper_body

    def body(src):
        return helper_body(cst.parse_module(src).body[0])

    b = body("def f(xs, d):\n    for i, x in enumerate(xs):\n        y = x\n    (a, b), c = d\n    return y\n")
    assert [(names, e is None, cond) for names, e, cond in b.steps] == [
        (("i", "x"), True, True), (("y",), False, True), (("a", "b", "c"), True, False)]
    # a nested def (LLaVA's `insert_separator`) binds a local the replay does not follow
    b = body("def f(x):\n    def g():\n        pass\n    y = g(x)\n    return y\n")
    assert [(names, e is None, cond) for names, e, cond in b.steps] == [(("g",), True, False), (("y",), False, False)]
    # not straight-line code: a nested class, `global`, a generator, `*args`, no value returned
    for src in ("def f(x):\n    class G:\n        pass\n    return x\n",
                "def f(x):\n    global y\n    y = x\n    return y\n",
                "def f(x):\n    yield x\n    return x\n",
                "def f(*x):\n    y = x\n    return y\n",
                "def f(x):\n    y = x\n"):
        assert body(src) is None, src


def test_a_helpers_returns_carry_the_type_tests_of_parameters_their_paths_pass():
    from synclint.semantic.helpers import HelperBody, helper_body

    def guards(src):
        b = helper_body(cst.parse_module(src).body[0])
        assert b is not None, src
        again = HelperBody.from_data(b.params, b.to_data())  # (as a module summary carries it)
        got = [[(name, cst.Module([]).code_for_node(t), holds) for name, t, holds in again.guards_of(i)]
               for i in range(len(again.returns))]
        assert got == [[(name, cst.Module([]).code_for_node(t), holds) for name, t, holds in b.guards_of(i)]
                       for i in range(len(b.returns))]
        return got

    assert guards("def f(x):\n    if isinstance(x, torch.Tensor):\n        return x.item()\n    return x\n") == [
        [("x", "torch.Tensor", True)], [("x", "torch.Tensor", False)]]
    # elif and else: each branch past the tests above it, which fail there
    assert guards("def f(x, m):\n    if isinstance(x, np.ndarray):\n        return x\n"
                  "    elif m:\n        return x.numpy()\n    else:\n        return x.cpu()\n") == [
        [("x", "np.ndarray", True)], [("x", "np.ndarray", False)], [("x", "np.ndarray", False)]]
    # near misses: a test of a local, a test whose body falls through, no test at all
    assert guards("def f(x):\n    y = x\n    if isinstance(y, int):\n        return y\n    return x\n") == [[], []]
    assert guards("def f(x):\n    if isinstance(x, int):\n        x2 = x\n    return x\n") == [[]]
    # a test of a parameter's value against a literal is a guard too; one against a name is not
    assert guards("def f(x, m):\n    if m == 1:\n        return x\n    elif m == 2:\n        return x * 2\n"
                  "    return x.cpu()\n") == [[("m", "m == 1", True)], [("m", "m == 1", False), ("m", "m == 2", True)], []]
    assert guards("def f(x, m):\n    if m == k:\n        return x\n    return x.cpu()\n") == [[], []]
    # LLaVA's `tokenizer_image_token`: past a test whose body always leaves, the test fails
    assert guards("def f(ids, rt=None):\n    if rt is not None:\n        if rt == 'pt':\n"
                  "            return torch.tensor(ids)\n        raise ValueError(rt)\n    return ids\n") == [
        [("rt", "rt is not None", True), ("rt", "rt == 'pt'", True)], [("rt", "rt is not None", False)]]


def test_a_helpers_return_behind_a_literal_test_counts_only_where_the_calls_argument_passes_it():
    # LLaVA's `tokenizer_image_token(prompt, tokenizer, return_tensors='pt')`: a CPU tensor
    # only where the call asks for one, a list of ids where it passes nothing
    src = """\
import torch
def tok(prompt, tokenizer, return_tensors=None):
    ids = [tokenizer(c).input_ids for c in prompt.split("<image>")]
    def sep(xs):
        return xs
    out = []
    for x in sep(ids):
        out.extend(x)
    if return_tensors is not None:
        if return_tensors == 'pt':
            return torch.tensor(out, dtype=torch.long)
        raise ValueError(return_tensors)
    return out
probe(tok(p, t, return_tensors='pt'))
probe(tok(p, t, 'pt'))
probe(tok(p, t))
probe(tok(p, t, return_tensors=None))
probe(tok(p, t, return_tensors="np"))
"""
    (pt, _), (positional, _), (default, _), (none, _), (np_, _) = probe(src)[0]
    assert (pt.kind, pt.device) == (V.TENSOR, V.CPU)
    assert (positional.kind, positional.device) == (V.TENSOR, V.CPU)
    # near misses: no tensor asked for; another kind (the path that raises)
    assert default.kind != V.TENSOR and none.kind != V.TENSOR and np_.kind != V.TENSOR


def test_a_conditional_expressions_branch_holds_the_type_its_isinstance_test_names():
    # (mmagic's `self.unet = unet if isinstance(unet, nn.Module) else MODELS.build(unet)`, its
    # callers passing config dicts: a module on either branch); near misses: a test of another
    # name, a body that is not the tested name, a type the evaluator does not place
    head = "import torch\nimport torch.nn as nn\n"
    tail = "f(dict(type='UNet'), dict(type='UNet'))\n"

    def made(expr):
        return val(head + f"def f(u, w):\n    m = {expr}\n    probe(m)\n" + tail).kind

    assert made("u if isinstance(u, nn.Module) else nn.Linear(2, 2)") == V.MODULE
    assert made("u if isinstance(w, nn.Module) else nn.Linear(2, 2)") != V.MODULE
    assert made("[u] if isinstance(u, nn.Module) else nn.Linear(2, 2)") != V.MODULE
    assert made("u if isinstance(u, str) else nn.Linear(2, 2)") != V.MODULE


def test_an_item_stored_into_a_batch_moves_it_and_a_cuda_module_computes_on_cuda():
    src = ("import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n"
           "def train(steps, gpu):\n    for _ in range(steps):\n        images = [torch.ones(2, 4), torch.ones(2, 4)]\n"
           "        if gpu is not None:\n            images[0] = images[0].cuda(gpu, non_blocking=True)\n"
           "        probe(images[0])\n        probe(model(images[0]))\n")
    seen, _ = probe(src)
    assert seen[0][0].device == V.EITHER  # moved on one path
    assert seen[1][0].device == V.CUDA  # the module is on CUDA: so is its output


def test_an_epoch_loop_runs_its_own_statements_once_per_epoch():
    src = ("import torch\ndef fit(model, train_loader, epochs):\n    for epoch in range(epochs):\n"
           "        total = torch.zeros((), device='cuda')\n        pbar = enumerate(train_loader)\n"
           "        for i, (x, y) in pbar:\n            probe(x)\n        probe(total)\n")
    seen, _ = probe(src)
    assert [hot for _, hot in seen] == [True, False]  # the batch loop is hot, the epoch's tail cold


def test_first_steps_and_exits_run_once_even_with_a_loop_inside():
    src = ("import sys\nimport torch\ndef run(batches):\n    seen = 0\n    for x in batches:\n"
           "        seen += 1\n        if seen < 10:\n            for k in range(4):\n                probe(x)\n"
           "        if not torch.isfinite(x).all():\n            probe(x)\n            sys.exit(1)\n"
           "        if seen % 100 == 0:\n            for k in range(4):\n                probe(x)\n")
    seen, _ = probe(src)
    # the first steps and the exit: cold; a loop under a periodic guard still repeats: hot
    assert [hot for _, hot in seen] == [False, False, True]


def test_a_chain_of_methods_defined_below_their_callers_is_known():
    from synclint.engine import analyse

    src = ("import torch\nclass Head(torch.nn.Module):\n    def loss(self, x):\n        m = self.assign(x)\n"
           "        return x[m]\n    def assign(self, x):\n        return self.geometry(x) > 0\n"
           "    def geometry(self, x):\n        return torch.rand(4, device='cuda')\n")
    a = analyse(src, "head.py", "head")
    # two walks before linting: `assign` knows `geometry`, so `loss` knows `assign`'s mask
    assert a.facts.method_returns[("Head", "assign")].device == V.CUDA
    assert a.facts.method_returns[("Head", "assign")].mask


def test_a_lightning_step_hooks_second_parameter_is_the_batch_index():
    src = ("import torch\nclass M(torch.nn.Module):\n    def validation_step(self, batch, batch_nb):\n"
           "        probe(batch)\n        probe(batch_nb)\n")
    seen, _ = probe(src)
    assert seen[0][0].kind == V.TENSORS and (seen[1][0].kind, seen[1][0].py) == (V.PY, "int")


def test_a_long_chain_is_inferred_in_linear_work(monkeypatch):
    """Every link of `x.abs().abs()...` is asked about (by the walk and the rules, for its
    value and its ownership): each is computed once per statement, not once per question."""
    from synclint.engine import lint_source
    from synclint.registry import default_rules
    from synclint.semantic.infer import Evaluator

    counted = {"n": 0}
    real = Evaluator._infer_node

    def counting(self, e):
        counted["n"] += 1
        return real(self, e)

    monkeypatch.setattr(Evaluator, "_infer_node", counting)
    work = []
    for n in (100, 400):
        counted["n"] = 0
        src = "import torch\nx = torch.ones(3, device='cuda')\ny = x" + ".abs()" * n + "\nv = y.item()\n"
        assert [f.code for f in lint_source(src, "chain.py", default_rules())] == ["SYN101"]
        work.append(counted["n"])
    assert work[1] < 5 * work[0]  # four times the chain, about four times the work


@pytest.mark.parametrize("expr", [
    "torch.get_float32_matmul_precision()",  # a str
    "torch.autograd._profiler_enabled()",  # a bool
    "torch.initial_seed()",  # an int
    "mp.get_all_start_methods()",  # `import torch.multiprocessing as mp`: a list of str
    "mp.start_processes(f, nprocs=2, join=False).join()",
    "torch.nn.init._calculate_fan_in_and_fan_out(w)[0]",  # ints
    "torch.is_autocast_enabled()",
])
def test_torch_functions_that_return_python_values_are_not_tensors(expr):
    # (Lightning had each of these flagged as a GPU tensor in `if`/`in`/an f-string.)
    v = val(HEAD + "import torch.multiprocessing as mp\nw = torch.ones(2, 3, device=device)\n"
            f"probe({expr})\n")
    assert v.kind != V.TENSOR, v


def test_torch_tensor_functions_stay_tensors_near_those():
    assert val(HEAD + "x = torch.ones(2, device=device)\nprobe(torch.isfinite(x))\n").kind == V.TENSOR
    assert val(HEAD + "x = torch.ones(2, device=device)\nprobe(torch.nn.init.normal_(x))\n").kind == V.TENSOR


METER = """
class Meter:
    def update(self, **kwargs):
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
                probe(v)
            probe(kwargs[k])
"""


def test_keywords_reach_a_double_star_parameter_from_every_caller():
    # every caller passes Python floats: the isinstance branch is dead, the values floats
    seen, _ = probe(HEAD + METER + "m = Meter()\nloss = torch.ones(1, device=device)\n"
                    "m.update(loss=loss.item(), lr=0.1)\nm.update(acc=float(loss))\n")
    assert [v.kind for v, _ in seen] == [V.PY, V.PY]
    # near-miss: one caller passes the GPU tensor itself, which `.item()` then reads back
    seen, ctx = probe(HEAD + METER + "m = Meter()\nloss = torch.ones(1, device=device)\n"
                      "m.update(loss=loss, lr=0.1)\n")
    assert seen[1][0].kind == V.TENSOR and seen[1][0].device == V.CUDA
    # and `f(**options)` passes keys and values nobody knows
    seen, _ = probe(HEAD + METER + "m = Meter()\nopts = make()\nm.update(**opts)\n")
    assert seen[-1][0].kind == V.UNKNOWN


def test_a_meter_fed_floats_is_silent_and_one_fed_the_tensor_is_flagged():
    from synclint.engine import lint_source
    from synclint.registry import default_rules

    meter = METER.replace("                probe(v)\n", "").replace("            probe(kwargs[k])\n", "")
    loop = "m = Meter()\nfor _ in range(10):\n    loss = torch.ones(1, device=device).sum()\n"
    floats = lint_source(HEAD + meter + loop + "    m.update(loss=loss.item(), lr=0.1)\n", "t.py", default_rules())
    assert [f.row for f in floats if f.code == "SYN101"] == [12]  # the caller's `loss.item()` only
    tensors = lint_source(HEAD + meter + loop + "    m.update(loss=loss, lr=0.1)\n", "t.py", default_rules())
    assert [f.row for f in tensors if f.code == "SYN101"] == [8]  # inside the meter


def test_a_meter_defined_below_its_users_holds_what_each_instance_is_fed():
    # pretrained-models' imagenet_eval: `train()` feeds one meter tensors, `validate()` feeds
    # another floats, and the class comes last in the file; each instance holds its own
    meter = ("class AverageMeter:\n    def __init__(self):\n        self.val = self.sum = self.count = 0\n"
             "    def update(self, val, n=1):\n        self.val = val\n        self.sum += val * n\n"
             "        self.count += n\n        self.avg = self.sum / self.count\n")
    src = (HEAD + "def train(xs):\n    m = AverageMeter()\n    for x in xs:\n"
           "        m.update(x.cuda().sum(), 2)\n    probe(m.avg)\n"
           "def validate(xs):\n    m = AverageMeter()\n    for x in xs:\n"
           "        m.update(x.cuda().sum().item(), 2)\n    probe(m.avg)\n" + meter)
    seen, _ = probe(src)
    assert seen[0][0].kind != V.PY and seen[1][0].kind == V.PY


def test_an_optimizers_hyperparameters_are_numbers_and_its_params_tensors():
    seen, _ = probe("import torch\nfrom torch.optim import Optimizer\n"
                    "def f(opt: Optimizer, sched: torch.optim.lr_scheduler.StepLR):\n"
                    "    probe(opt.param_groups[0]['lr'])\n"
                    "    for g in opt.param_groups:\n        probe(max(0.0, g['lr']))\n        probe(g['params'])\n"
                    "    probe(sched)\n")
    assert [(v.kind, v.py) for v, _ in seen] == [(V.PY, "number"), (V.PY, "number"), (V.TENSORS, None),
                                                 (V.UNKNOWN, None)]


def test_a_loop_over_a_containers_items_is_not_a_training_step():
    # saving a checkpoint: once, though it loops; the same loop inside a step loop is hot
    src = (HEAD + "model = torch.nn.Linear(2, 2).to(device)\n"
           "def save(model):\n    for k, v in model.state_dict().items():\n        probe(v)\n"
           "    for i, p in enumerate(model.parameters()):\n        probe(p)\n"
           "def train(loader):\n    for x in loader:\n        for p in model.parameters():\n            probe(p)\n"
           "    for i in range(3):\n        probe(i)\n")
    seen, _ = probe(src)
    assert [hot for _, hot in seen] == [False, False, True, True]


def test_a_periodic_guard_that_steps_only_a_learning_rate_scheduler_is_a_guard():
    # validation every N steps, then `scheduler.step(val_score)`: not gradient accumulation
    # (which steps the optimizer, with or without a scheduler beside it)
    body = ("import torch\nfrom torch import optim\ndef train(model, loader, n):\n"
            "    opt = optim.SGD(model.parameters(), lr=0.1)\n"
            "    sched = optim.lr_scheduler.ReduceLROnPlateau(opt, 'max')\n"
            "    for step, x in enumerate(loader):\n        if step % n == 0:\n            probe(x)\n{}")
    seen, _ = probe(body.format("            sched.step(0.5)\n"))
    assert [hot for _, hot in seen] == [False]
    seen, _ = probe(body.format("            opt.step()\n            sched.step(0.5)\n"))
    assert [hot for _, hot in seen] == [True]


def test_a_container_loop_under_a_periodic_guard_stays_guarded():
    # Pytorch-UNet's weight histograms every N steps: the loop over the parameters runs
    # where it is; a step loop under the same guard (validation) still repeats its body
    src = ("import torch\ndef train(model, loader, val_loader, n):\n    for step, x in enumerate(loader):\n"
           "        if step % n == 0:\n            for name, p in model.named_parameters():\n                probe(p)\n"
           "            for v in val_loader:\n                probe(v)\n")
    seen, _ = probe(src)
    assert [hot for _, hot in seen] == [False, True]


class _GpuProbe(_Probe):
    """Records `ctx.gpu(arg, RECEIVER)` for every `probe(arg)`."""

    def visit_Call(self, node):
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            from synclint.semantic import RECEIVER

            self.seen.append(self.ctx.gpu(node.args[0].value, RECEIVER))


def _gpu(source: str):
    module = _parse_module(source)
    ctx = SemanticModel(source)
    ctx.set_module(module)
    p = _GpuProbe(ctx)
    Walker(ctx, [p]).walk(module)
    return p.seen


def test_a_file_that_never_names_torch_holds_no_tensor_of_its_own():
    # CPython's re/_compiler.py and tempfile.py passed the prefilter on `.tolist()` and
    # `.detach()`: a memoryview and a weakref.finalize were taken for GPU tensors
    plain = ("def codes(b):\n    a = memoryview(b).cast('I')\n    probe(a)\n"
             "def close(self):\n    probe(self._finalizer.detach())\n")
    assert _gpu(plain) == [None, None]
    # sympy speaks of tensors without being a torch program
    assert _gpu("from sympy.tensor.array import NDimArray\n" + plain) == [None, None]
    # the same code in a module that names torch: an unknown receiver where only a tensor
    # fits, and `.detach()`'s result, are taken for tensors (a library: its callers decide)
    assert all(v is not None for v in _gpu("import torch\n" + plain))
    assert all(v is not None for v in _gpu("import torchvision.transforms as T\n" + plain))


def test_an_instance_made_on_two_paths_is_of_both_classes():
    src = """\
import torch
class CTC:
    def __init__(self):
        self.blank = torch.zeros(1, device="cuda")
    def decode(self, t):
        return t.argmax(-1)
class Attn:
    def __init__(self):
        self.blank = torch.zeros(1, device="cuda")
    def decode(self, t):
        return t.max(-1).indices
def run(opt, x):
    conv = CTC() if opt.ctc else Attn()
    probe(conv)
    probe(conv.blank)
    probe(conv.decode(torch.ones(2, device="cuda")))
"""
    (obj, _), (attr, _), (ret, _) = probe(src)[0]
    assert obj.kind == V.OBJECT and V.classes_of(obj) == ("Attn", "CTC")
    assert attr.kind == V.TENSOR and attr.device == V.CUDA  # what both classes hold
    assert ret.kind == V.TENSOR
    # an instance of a class on one path and an unknown on the other: used as that class
    # (`test_an_instance_on_one_path_and_an_unknown_on_the_other_is_the_instance`)
    assert val("import torch\nclass A:\n    pass\nif c:\n    a = A()\nelse:\n    a = make()\nprobe(a)\n").cls == "A"


def test_a_nested_function_a_factory_returns_is_known_by_its_key():
    src = """\
import torch
def make_step(scale):
    def step(x):
        return x * scale
    return step
def train(loader):
    f = make_step(2.0)
    for x in loader:
        probe(f(torch.ones(2, device="cuda")))
probe(make_step(1.0))
"""
    seen, ctx = probe(src)
    assert seen[1][0] == V.function("step")
    assert seen[0][0].kind == V.TENSOR
    assert "step" in hot_functions(ctx)  # called every step through `f`


def test_an_instance_called_gives_what_its_call_method_returns():
    src = """\
import torch
class Scaler:
    def __call__(self, loss):
        return loss.detach()
def train(loader):
    s = Scaler()
    for x in loader:
        probe(s(torch.ones(2, device="cuda")))
"""
    seen, ctx = probe(src)
    assert seen[0][0].kind == V.TENSOR
    assert "Scaler.__call__" in hot_functions(ctx)  # called every step


def test_an_annotated_parameter_takes_its_callers_more_precise_value():
    src = """\
import torch
def step(opt: torch.optim.Optimizer, x: torch.Tensor):
    probe(opt)
    probe(x)
model = torch.nn.Linear(2, 2)
step(torch.optim.AdamW(model.parameters()), torch.ones(2))
"""
    seen, _ = probe(src)
    assert seen[0][0].cls == "torch.optim.AdamW" and seen[1][0].device == V.CPU
    # a caller passing something of another kind leaves the annotation's value
    src = src.replace("torch.ones(2))", "[1.0])")
    seen, _ = probe(src)
    assert seen[1][0].kind == V.TENSOR


def test_a_function_a_solver_calls_at_every_step_is_hot():
    src = """\
import torch
from scipy import integrate
def get_sampler(model):
    def ode_func(t, x):
        return model(torch.from_numpy(x).cuda()).cpu().numpy()
    def sampler(x):
        return integrate.solve_ivp(ode_func, (1.0, 0.0), x, rtol=1e-5)
    return sampler
def helper(x):
    return x
def once(x):
    return integrate.solve_ivp(fun=helper, t_span=(1.0, 0.0), y0=x)
"""
    _, ctx = probe(src)
    assert {"ode_func", "helper"} <= hot_functions(ctx)
    assert "sampler" not in hot_functions(ctx) and "once" not in hot_functions(ctx)



def test_a_loaders_collate_function_runs_once_per_batch():
    # named directly, a method of the object that makes the loader, or a name holding one
    src = """\
import torch
def pad(batch):
    return batch
class Data:
    def collate(self, batch):
        return batch
    def stack(self, batch):
        return batch
    def make(self, ds):
        a = torch.utils.data.DataLoader(ds, collate_fn=pad)
        b = torch.utils.data.DataLoader(ds, collate_fn=self.collate)
        fn = self.stack
        c = torch.utils.data.DataLoader(ds, collate_fn=fn)
        return a, b, c
    def unused(self, batch):
        return batch
"""
    _, ctx = probe(src)
    assert {"pad", "Data.collate", "Data.stack"} <= hot_functions(ctx)
    assert "Data.unused" not in hot_functions(ctx)  # near-miss: a method no loader is given


def test_a_function_a_module_or_tensor_hook_runs_is_hot():
    # grad-cam's `ActivationsAndGradients`: torch calls a registered hook at every forward
    # or backward, though no loop in the project calls it
    src = """\
import torch
class Recorder:
    def __init__(self, layer):
        layer.register_forward_hook(self.save)
        layer.register_forward_hook(self.save_grad)
    def save(self, module, inp, out):
        return out
    def save_grad(self, module, inp, out):
        def store(grad):
            return grad
        out.register_hook(store)
    def setup(self):
        return 0
class Events:
    def register_forward_hook(self, fn):
        return fn
def later():
    return 1
events = Events()
events.register_forward_hook(later)
"""
    _, ctx = probe(src)
    # `store`: a gradient hook registered in hot code (the forward hook)
    assert {"Recorder.save", "Recorder.save_grad", "store"} <= hot_functions(ctx)
    # near-misses: a method no hook names; a method of that name on a receiver known to be
    # neither a module nor a tensor
    assert "Recorder.setup" not in hot_functions(ctx) and "later" not in hot_functions(ctx)

AVERAGE_METER = """\
class AverageMeter:
    def __init__(self):
        self.reset()
    def reset(self):
        self.val = 0
        self.sum = 0
        self.count = 0
        self.avg = 0
    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count
"""


def test_an_instance_fed_plain_numbers_holds_plain_numbers_though_its_class_also_holds_tensors():
    src = "import time\nimport torch\n" + AVERAGE_METER + """\
def train(loader, crit):
    batch_time, top1, losses = AverageMeter(), AverageMeter(), AverageMeter()
    end = time.time()
    for x in loader:
        out = torch.ones(2, device="cuda")
        top1.update(out[0], x.size(0))
        losses.update(crit(out).item())
        batch_time.update(time.time() - end)
    probe(top1.avg)
    probe(batch_time.avg)
    probe(losses.val)
"""
    (top1, _), (batch_time, _), (losses, _) = probe(src)[0]
    assert top1.kind == V.TENSOR and top1.device == V.CUDA  # the class's value
    assert batch_time.kind == V.PY and losses.kind == V.PY  # what this instance was given


def test_which_attributes_are_made_from_method_parameters():
    from synclint.semantic.instances import fed_attributes

    fed = fed_attributes(cst.parse_module(AVERAGE_METER + "    def merge(self, other):\n        self.last = len(other)\n").body[0])
    assert fed["avg"] == [("update", "n", 1, True), ("update", "val", 0, False)]
    assert "last" not in fed  # a call's result: not made from parameters only
    # an attribute made from one that is also assigned a call's result is not either
    fed = fed_attributes(cst.parse_module(AVERAGE_METER + "    def merge(self, other):\n        self.count = len(other)\n").body[0])
    assert "count" not in fed and "avg" not in fed and fed["val"] == [("update", "val", 0, False)]


def test_sizes_dimensions_and_batch_sampler_indices():
    # one argument that is a shape, not a size: the rank is not known
    assert val("import torch\nshape = (4,)\nprobe(torch.zeros((3,) + shape))\n").ndim is None
    assert val("import torch\nn = 3\nprobe(torch.zeros(n))\n").ndim == 1
    # an element picked with Python ints is 0-d: an index the host reads, not a copy
    v = val("import torch\nperm = torch.randperm(8)\nfor i in range(4):\n    probe(perm[i + 1])\n")
    assert v.ndim == 0 and v.device == V.CPU
    # a BatchSampler yields lists of Python ints
    v = val("import torch\nfrom torch.utils.data import BatchSampler, SequentialSampler\n"
            "for idx in BatchSampler(SequentialSampler(range(8)), 4, False):\n    probe(idx)\n")
    assert v.py == "list" and v.elems[0].py == "int"


def test_a_project_subclass_of_a_torch_distribution_is_known_as_one():
    src = """\
import torch
class FixedNormal(torch.distributions.Normal):
    def log_probs(self, actions):
        probe(super())
        return super().log_prob(actions).sum(-1, keepdim=True)
class Deeper(FixedNormal):
    pass
class Plain:
    pass
"""
    seen, ctx = probe(src)
    assert seen[0][0].kind == V.DIST and seen[0][0].py == "validating"
    assert ctx.distribution_base("Deeper") == "Normal" and ctx.distribution_base("Plain") is None


def test_a_list_of_instances_appended_on_several_paths_holds_each_class():
    # whisper's DecodingTask: `self.logit_filters.append(SuppressBlank())` under one option,
    # `SuppressTokens()` under another, then `for f in self.logit_filters: f.apply(...)`
    src = """\
import torch
class SuppressBlank:
    def apply(self, logits):
        return logits
class SuppressTokens:
    def apply(self, logits):
        return logits
class Task:
    def __init__(self, opts):
        self.filters = []
        if opts.blank:
            self.filters.append(SuppressBlank())
        if opts.tokens:
            self.filters.append(SuppressTokens())
    def run(self, logits):
        for i in range(10):
            for f in self.filters:
                probe(f)
                f.apply(logits)
"""
    seen, ctx = probe(src)
    assert V.classes_of(seen[0][0]) == ("SuppressBlank", "SuppressTokens")
    assert {"SuppressBlank.apply", "SuppressTokens.apply"} <= hot_functions(ctx)
    # a literal list of values of other kinds keeps no such element
    assert V.element_of(val("x = []\nif c:\n    x.append(1)\nprobe(x)\n")).kind != V.OBJECT


def test_functions_that_give_back_the_model_they_are_given():
    from synclint.semantic.helpers import returned_parameter

    def given_back(src):
        return returned_parameter(cst.parse_module(src).body[0])

    # tacotron2's apply_gradient_allreduce: hooks defined inside, the module returned
    assert given_back("def f(module):\n    def hook():\n        return 1\n    module.x = 1\n    return module\n") == "module"
    assert given_back("def f(m):\n    m = m.cuda()\n    return m\n") is None  # rebound
    assert given_back("def f(m, c):\n    if c:\n        return c\n    return m\n") is None
    src = """\
import torch
from apex import amp
def load_checkpoint(path, model, optimizer):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    it = state["iteration"]
    print("loaded", it)
    return model, optimizer, it
def load_model():
    model = torch.nn.Linear(2, 2).cuda()
    return model
model = load_model()
opt = torch.optim.Adam(model.parameters())
model, opt = amp.initialize(model, opt, opt_level="O2")
model, opt, it = load_checkpoint("c.pt", model, opt)
probe(model)
probe(opt)
"""
    (m, _), (o, _) = probe(src)[0]
    assert m.kind == V.MODULE and m.device == V.CUDA and o.kind == V.OPTIM


def test_a_tuple_returned_beside_an_early_bare_tensor_keeps_its_parts():
    # SSD's box_utils.nms: `return keep` when there are no boxes, `return keep, count` after
    src = ("import torch\ndef nms(s):\n    keep = torch.ones(3, device='cuda').long()\n    if s:\n        return keep\n"
           "    count = 0\n    return keep, count\nids, count = nms(1)\nprobe(count)\nprobe(ids)\n")
    seen, _ = probe(src)
    assert seen[0][0].kind == V.PY and seen[0][0].py == "int"
    assert seen[1][0].kind == V.TENSOR and seen[1][0].device == V.CUDA
    # near-miss: a tuple of tensors only (a tensor unpacks into tensors just the same)
    src = ("import torch\ndef f(s):\n    a = torch.ones(3, device='cuda')\n    if s:\n        return a\n"
           "    return a, a\nx, y = f(1)\nprobe(y)\n")
    assert val(src).kind == V.TENSOR


def test_a_dict_literal_of_arrays_or_of_tensors_keeps_its_values():
    # EfficientDet's postprocess: a list of dicts of arrays, one per image
    src = ("import numpy as np\nimport torch\nout = []\nx = torch.ones(3, device='cuda')\n"
           "for i in range(2):\n    out.append({'rois': x.cpu().numpy(), 'scores': np.zeros(3)})\n"
           "probe(out[0]['rois'])\n")
    assert val(src).kind == V.NUMPY
    src = "import torch\nx = torch.ones(3, device='cuda')\nd = {'loss': x.sum(), 'aux': x.mean()}\nprobe(d['loss'])\n"
    assert val(src).kind == V.TENSOR and val(src).device == V.CUDA
    # near-miss: a loss beside a learning rate is not a dict of tensors
    src = "import torch\nx = torch.ones(3, device='cuda')\nd = {'loss': x.sum(), 'lr': 0.1}\nprobe(d['lr'])\n"
    assert val(src).kind != V.TENSOR


def test_iterating_a_dict_gives_its_keys_and_values_gives_its_values():
    # nerf-pytorch: `for k in ret: ... print(f"{k} ...")` over a dict of tensors
    head = "import torch\nx = torch.ones(3, device='cuda')\nret = {'rgb': x, 'acc': x.sum()}\n"
    assert val(head + "for k in ret:\n    probe(k)\n").kind == V.PY
    assert val(head + "for v in ret.values():\n    probe(v)\n").kind == V.TENSOR
    assert val(head + "for k, v in ret.items():\n    probe(v)\n").kind == V.TENSOR


def test_loops_in_a_constructor_run_once_per_object():
    # pytorch-YOLOv4's Yolo_loss builds one grid per output layer in `__init__`
    src = ("import torch\nclass Loss(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        for i in range(3):\n            probe(i)\n"
           "    def forward(self, x):\n        for i in range(3):\n            probe(i)\n        return x\n")
    seen, _ = probe(src)
    assert [hot for _, hot in seen] == [False, True]  # near-miss: the same loop in forward


def test_data_parallel_of_a_model_the_model_does_not_know_is_a_module():
    # pytorch-semseg: `nn.DataParallel(get_model(cfg).to(device))`, a model built by name
    src = ("import torch\nfrom models import get_model\nmodel = get_model('fcn').cuda()\n"
           "model = torch.nn.DataParallel(model)\nx = torch.ones(2, device='cuda')\nprobe(model)\nprobe(model(x))\n")
    seen, _ = probe(src)
    assert seen[0][0].kind == V.MODULE and seen[0][0].device == V.CUDA
    assert seen[1][0].kind == V.TENSOR and seen[1][0].device == V.CUDA
    # near-miss: torch.compile of the same returns what it was given, whatever that is
    src = "import torch\nfrom models import get_model\nprobe(torch.compile(get_model('fcn')))\n"
    assert val(src).kind != V.MODULE


LOADER_WRAPPER = HEAD + '''
class Infinite:
    def __init__(self, dataset):
        self._it = iter(torch.utils.data.DataLoader(dataset, batch_size=4))

    def __iter__(self):
        while True:
            yield next(self._it)

loaders = [Infinite(d) for d in ("a", "b")]
probe(loaders[0])
batches = zip(*loaders)
for step in range(10):
    for x, y in next(batches):
        probe(x)
    moved = [(x.to(device), y.to(device)) for x, y in next(batches)]
    for a, b in moved:
        probe(a)
for x in Infinite("c"):
    probe(x)
names = [str(d) for d in ("a", "b")]
for n in zip(*names):
    probe(n)
'''


def test_a_loader_wrapper_yields_batches_through_a_comprehension_and_zip_star():
    # DomainBed's `zip(*[InfiniteDataLoader(...) for ...])`, one batch of each loader per step
    seen, _ = probe(LOADER_WRAPPER)
    wrapper, from_zip, moved, iterated, names = (v for v, _ in seen)
    assert wrapper.kind == V.OBJECT and wrapper.cls == "Infinite"  # the list keeps its items
    assert from_zip.kind == V.TENSOR and from_zip.device == V.CPU  # `__iter__` yields batches
    assert moved.kind == V.TENSOR and moved.device == V.CUDA  # a list of moved pairs keeps them
    assert iterated.kind == V.TENSORS and iterated.device == V.CPU  # a batch
    # near-miss: zip over a list of strings tells nothing about tensors
    assert names.kind != V.TENSOR


CLASS_VALUES = HEAD + '''
class Net(torch.nn.Module):
    scale = 2.0

class Meter:
    pass

def pick(name):
    return globals()[name]

def net_class():
    return Net

probe(net_class()())
probe(pick("Net")())
probe(Net.scale)
probe(globals()["Meter"]())
'''


def test_a_class_as_a_value_makes_instances_when_called():
    seen, _ = probe(CLASS_VALUES)
    made, picked, attr, meter = (v for v, _ in seen)
    assert made.kind == V.MODULE and made.cls == "Net"
    # `globals()[name]` with the name known only at run time: Net and Meter are no one
    # family, so nothing is known
    assert picked.kind == V.UNKNOWN
    assert attr.kind == V.UNKNOWN  # a class's own attributes are not followed (as before)
    assert meter.kind == V.OBJECT and meter.cls == "Meter"  # named by a literal


DEFAULTED_EVERY_CALL = HEAD + '''
_cache = {}

class Attn(torch.nn.Module):
    def forward(self, x, mask=None):
        if mask is None:
            mask = torch.ones(4, 4)
            probe(mask)
        if self.buf is None:
            self.buf = torch.ones(4)
            probe(self.buf)
        if not len(self.q):
            self.q = torch.ones(4)
            probe(self.q)
        t = _cache.get(x.shape)
        if t is None:
            t = torch.ones(4)
            probe(t)
            _cache[x.shape] = t
        return x

def evaluate(loader):
    for batch in loader:
        probe(batch)
        break
    for batch in loader:
        if batch is None:
            continue
        probe(batch)
        break
'''


def test_a_parameter_defaulted_per_call_is_hot_and_a_loop_that_breaks_runs_once():
    seen, _ = probe(DEFAULTED_EVERY_CALL)
    heat = [hot for _, hot in seen]
    # `if mask is None: mask = ...` on a parameter runs at every call of `forward` (Informer's
    # TriangularCausalMask); an attribute (DomainBed's `if not len(self.q):` too), or a value
    # fetched from a cache it then fills, once
    assert heat[:4] == [True, False, False, False]
    # vits' `evaluate`: one batch, then `break`; near-miss: a `continue` may skip the break
    assert heat[4:] == [False, True]



def test_a_cache_check_is_once_only_where_its_body_stores_under_the_checked_key():
    # hifi-gan's `if fmax not in mel_basis: mel_basis[str(fmax) + "_" + ...] = ...` never finds
    # what it stored: the body runs at every call
    seen, _ = probe("""\
import torch
mel_basis = {}
def mel(y, fmax, steps):
    for _ in steps:
        if fmax not in mel_basis:
            mel_basis[str(fmax) + "_" + str(y.device)] = probe(y)
        if fmax not in mel_basis:
            mel_basis[fmax] = probe(y)
""")
    assert [hot for _, hot in seen] == [True, False]

def test_rank_survives_arithmetic_with_numbers_and_slicing():
    # DomainBed's `shuffle_indices = torch.randperm(n) + ex` and `idx1, idx2 = perm[:2]`: an item
    # is a 0-d CPU tensor, which indexes on the host (no copy to the GPU)
    seen, _ = probe("import torch\nperm = torch.randperm(5) + 3\nprobe(perm)\nprobe(perm[1])\n"
                    "a, b = perm[:2]\nprobe(perm[:2])\nprobe(a)\nprobe(perm @ perm)\n"
                    "def f(k):\n    probe(torch.randperm(5) + k)\n")
    shifted, item, sliced, unpacked, matmul, unknown_operand = (v.ndim for v, _ in seen)
    assert (shifted, item, sliced, unpacked) == (1, 0, 1, 0)
    # near-misses: a matrix product's rank is not broadcast; an operand of unknown kind (a
    # tensor of any rank?) leaves the rank unknown
    assert matmul is None and unknown_operand is None


def test_getattr_may_return_anything():
    # Lightning's pruning `dst = getattr(new, name)` is a parameter: not a plain Python value,
    # so its `.device` is not taken for the host's
    v = val("import torch\nm = torch.nn.Linear(2, 2)\nprobe(getattr(m, 'weight'))\n")
    assert v.kind == V.UNKNOWN


@pytest.mark.parametrize("main, expect", [
    # a script's globals are made under `__main__`, below the functions that use them
    ("if __name__ == '__main__':\n    writer = SummaryWriter()\n    dev = torch.device('cuda')\n", ("object", V.CUDA)),
    ("writer = SummaryWriter()\ndev = 'cuda'\n", ("object", V.CUDA)),
    # assigned twice: either value
    ("writer = SummaryWriter()\ndev = 'cuda'\nif cpu:\n    dev = 'cpu'\n", ("object", V.EITHER)),
    # near-misses: never bound at module level, or bound to the CPU
    ("pass\n", ("unknown", None)),
    ("writer = SummaryWriter()\ndev = 'cpu'\n", ("object", V.CPU)),
])
def test_a_function_reads_a_module_global_bound_further_down(main, expect):
    src = ("import torch\nfrom torch.utils.tensorboard import SummaryWriter\n"
           "def log(x):\n    probe(writer)\n    probe(torch.ones(2).to(dev))\n" + main)
    seen, _ = probe(src)
    (w, _), (t, _) = seen
    assert (w.kind, t.device if t.kind == V.TENSOR else None) == expect


@pytest.mark.parametrize("option, expect", [
    # BLIP's `--device` option, read in `main` above the parser: the GPU it defaults to
    ("parser.add_argument('--device', default='cuda')", V.CUDA),
    ("group = parser.add_argument_group('run')\n    group.add_argument('--gpu-device', dest='device', default='cuda:0')", V.CUDA),
    # a CPU default: either (a GPU run passes `--device cuda`)
    ("parser.add_argument('--device', default='cpu')", V.EITHER),
    # near-misses: no device default, another option
    ("parser.add_argument('--device')", None),
    ("parser.add_argument('--output', default='cuda_runs')", None),
])
def test_a_command_line_option_that_defaults_to_a_device(option, expect):
    src = ("import argparse\nimport torch\n"
           "def main(args):\n    probe(torch.device(args.device))\n"
           "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
           f"    {option}\n    args = parser.parse_args()\n    main(args)\n")
    assert val(src).device == expect


def test_type_with_a_type_of_unknown_device_is_a_move_to_an_unknown_device():
    """YOLOX's `grid.type(dtype)` with `dtype = xin[0].type()` from its caller: a type string
    that may name a CUDA type, so the grid's device is not known (it was the CPU)."""
    src = "import torch\ndef grid(dtype):\n    probe(torch.zeros(3).type(dtype))\n"
    assert val(src).device is None
    assert val("import torch\nprobe(torch.zeros(3).type(torch.float16))\n").device == V.CPU  # near-miss: a dtype


@pytest.mark.parametrize("expr, expect", [
    # BLIP: a tokenizer's encoding is CPU tensors, `.input_ids` one of them
    ("tok(caption, padding='longest', return_tensors='pt')", (V.TENSORS, V.CPU)),
    ("tok(caption, return_tensors='pt').input_ids", (V.TENSOR, V.CPU)),
    ("tok.encode(caption, return_tensors='pt')", (V.TENSOR, V.CPU)),
    ("proc(images=imgs, text=caption, return_tensors='pt')['input_ids']", (V.TENSOR, V.CPU)),
    # near-misses: without `return_tensors="pt"`, Python lists; `decode` gives a string
    ("tok(caption)", (V.PY, None)),
    ("tok.decode(ids)", (V.PY, None)),
])
def test_a_tokenizers_encoding_is_cpu_tensors(expr, expect):
    src = ("import torch\nfrom transformers import BertTokenizer, AutoProcessor\n"
           "tok = BertTokenizer.from_pretrained('bert-base-uncased')\n"
           "proc = AutoProcessor.from_pretrained('m')\n"
           f"probe({expr})\n")
    v = val(src)
    assert (v.kind, v.device) == expect


@pytest.mark.parametrize("expr, expect", [
    # BLIP's `evaluation(model, ...)`: `model.tokenizer(text, return_tensors="pt")` of a model
    # handed in; imagen's tokenizer kept in a dict of configurations
    ("model.tokenizer(text, padding='max_length', return_tensors='pt')", (V.TENSORS, V.CPU)),
    ("model.tokenizer(text, return_tensors='pt').input_ids", (V.TENSOR, V.CPU)),
    ("CONFIGS[name]['tokenizer'].batch_encode_plus(texts, return_tensors='pt').attention_mask", (V.TENSOR, V.CPU)),
    ("model.tokenizer.encode(text, return_tensors='pt')", (V.TENSOR, V.CPU)),
    # near misses: no tensors asked for, NumPy's, a kind spelled elsewhere; a project
    # function whose return is known keeps it
    ("model.tokenizer(text, padding='max_length')", (V.UNKNOWN, None)),
    ("model.tokenizer(text, return_tensors='np')", (V.UNKNOWN, None)),
    ("model.tokenizer(text, return_tensors=kind)", (V.UNKNOWN, None)),
    ("encode(text, return_tensors='pt')", (V.TENSOR, V.CUDA)),
])
def test_return_tensors_pt_of_a_callable_the_project_cannot_name_is_cpu_tensors(expr, expect):
    src = ("import torch\ndef encode(text, return_tensors=None):\n    return torch.ones(3, device='cuda')\n"
           f"def evaluation(model, text, texts, kind):\n    probe({expr})\n")
    v = val(src)
    assert (v.kind, v.device) == expect


@pytest.mark.parametrize("expr, expect", [
    # sgm's `FrozenOpenCLIPEmbedder.forward`: `tokens = open_clip.tokenize(text)`, then `.to(self.device)`
    ("open_clip.tokenize(text)", (V.TENSOR, V.CPU)),
    ("clip.tokenize(texts, truncate=True)", (V.TENSOR, V.CPU)),
    ("tokenize(text)", (V.TENSOR, V.CPU)),
    # near misses: another function of the package; a tokenize of the file's own
    ("open_clip.create_model_and_transforms(name)", (V.UNKNOWN, None)),
    ("own.tokenize(text)", (V.UNKNOWN, None)),
])
def test_clips_tokenize_gives_token_ids_on_the_host(expr, expect):
    src = ("import torch\nimport open_clip\nimport clip\nfrom open_clip import tokenize\n"
           f"class Own:\n    pass\nown = Own()\ndef forward(text, texts, name):\n    probe({expr})\n")
    v = val(src)
    assert (v.kind, v.device) == expect


def test_a_pretrained_models_generate_gives_token_ids_where_its_inputs_are():
    # LLaVA's `model.generate(input_ids, ...)`, BLIP's `self.text_decoder.generate(...)` of a
    # project class derived from a transformers model
    src = """\
import torch
from transformers import AutoModelForCausalLM, AutoModel, PreTrainedModel
lm = AutoModelForCausalLM.from_pretrained('m').cuda()
enc = AutoModel.from_pretrained('m').cuda()
class Base(PreTrainedModel):
    pass
class Decoder(Base):
    pass
class Own(torch.nn.Module):
    def generate(self, ids):
        return ids.tolist()
class Mine(torch.nn.Module):
    pass
def run(n):
    ids = torch.ones(1, n, dtype=torch.long).cuda()
    probe(lm.generate(ids, max_new_tokens=8))
    probe(Decoder().generate(input_ids=ids))
    probe(lm.generate(ids, return_dict_in_generate=True))
    probe(enc.generate(ids))
    probe(Own().generate(ids))
    probe(Mine().generate(ids))
"""
    (lm, _), (derived, _), (as_dict, _), (enc, _), (own, _), (mine, _) = probe(src)[0]
    assert (lm.kind, lm.device, lm.dtype) == (V.TENSOR, V.CUDA, V.INT)
    assert (derived.kind, derived.device) == (V.TENSOR, V.CUDA)
    # near misses: a GenerateOutput; a model class not named as one that generates; a
    # project module's own `generate`, or one that derives from no transformers class
    assert as_dict.kind != V.TENSOR and enc.kind != V.TENSOR and own.kind != V.TENSOR and mine.kind != V.TENSOR


def test_a_lightning_modules_counters_are_ints_and_its_optimizers_have_param_groups():
    # sgm's `self.log("global_step", self.global_step, prog_bar=True)` and
    # `self.log("lr_abs", self.optimizers().param_groups[0]["lr"])`: numbers Lightning makes
    # a device tensor of
    src = """\
import torch
import pytorch_lightning as pl
class Engine(pl.LightningModule):
    def training_step(self, batch, i):
        probe(self.global_step)
        probe(self.current_epoch)
        probe(self.optimizers().param_groups[0]["lr"])
class Plain(torch.nn.Module):
    def forward(self, x):
        probe(self.global_step)
        probe(self.optimizers())
class Own(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.global_step = torch.zeros(1, device="cuda")
    def training_step(self, batch, i):
        probe(self.global_step)
"""
    (step, _), (epoch, _), (lr, _), (plain, _), (plain_opt, _), (own, _) = probe(src)[0]
    assert (step.kind, step.py) == (V.PY, "int") and (epoch.kind, epoch.py) == (V.PY, "int")
    assert (lr.kind, lr.py) == (V.PY, "number")
    # near misses: an nn.Module that is no LightningModule; a class that sets its own
    assert plain.kind == V.UNKNOWN and plain_opt.kind == V.UNKNOWN and own.kind == V.TENSOR


def test_a_custom_optimizers_own_param_groups_hold_its_parameters_and_numbers():
    # GaLore's Adafactor.step: `for p in group["params"]: grad = p.grad`, then
    # `torch.zeros(grad_shape[:-1]).to(grad)`
    src = """\
import torch
class Adafactor(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            probe(group["lr"])
            for p in group["params"]:
                probe(p.grad)
class Sched(torch.optim.lr_scheduler.LambdaLR):
    def step(self):
        probe(self.param_groups)
class Holder:
    def step(self):
        probe(self.param_groups)
"""
    (lr, _), (grad, _), (sched, _), (holder, _) = probe(src)[0]
    assert (lr.kind, lr.py) == (V.PY, "number") and grad.kind == V.TENSOR
    # near misses: a scheduler subclass; a class that derives from no optimizer
    assert sched.kind == V.UNKNOWN and holder.kind == V.UNKNOWN


def test_super_forward_of_a_torch_layer_subclass_is_the_layers_output():
    # CLIP's fp16 `class LayerNorm(nn.LayerNorm)`: `super().forward(x.type(torch.float32))`
    src = """\
import torch
from torch import nn
class LayerNorm(nn.LayerNorm):
    def forward(self, x):
        orig_type = x.dtype
        ret = super().forward(x.type(torch.float32))
        probe(ret)
        probe(super().forward(torch.ones(2, 4, device="cuda")))
        return ret.type(orig_type)
class Plain(nn.Module):
    def forward(self, x):
        probe(super().forward(x))
class Base:
    def forward(self, x):
        return x.tolist()
class Derived(Base):
    def forward(self, x):
        probe(super().forward(x))
class Other(nn.LayerNorm):
    def forward(self, x):
        probe(super(Other, self).extra_repr())
"""
    (ret, _), (gpu, _), (plain, _), (derived, _), (other, _) = probe(src)[0]
    assert ret.kind == V.TENSOR and (gpu.kind, gpu.device) == (V.TENSOR, V.CUDA)
    # near misses: nn.Module has no forward of its own; a project base's forward; another method
    assert plain.kind != V.TENSOR and derived.kind != V.TENSOR and other.kind != V.TENSOR


@pytest.mark.parametrize("expr, kind", [
    ("lm", V.MODULE), ("lm.to('cuda')", V.MODULE), ("vl", V.MODULE), ("unet", V.MODULE),
    ("cfg", V.OBJECT), ("sched", V.OBJECT), ("pipe", V.OBJECT), ("flax", V.OBJECT),
    # near misses: a tokenizer stays one; another library's from_pretrained says nothing
    ("tok", V.OBJECT), ("other", V.UNKNOWN),
])
def test_a_hugging_face_from_pretrained_builds_a_model_or_an_object_never_a_tensor(expr, kind):
    """`AutoModelForCausalLM.from_pretrained(...)` is an nn.Module (Wan2.1's prompt extender
    moves one to the GPU and back: `self.model.to("cpu")` is an offload, not a read-back); a
    configuration, a scheduler or a pipeline is an object; neither is a tensor."""
    src = ("import torch\nfrom transformers import AutoModelForCausalLM, AutoConfig, AutoTokenizer\n"
           "from transformers import Qwen2_5_VLForConditionalGeneration\n"
           "from diffusers import UNet2DConditionModel, DDIMScheduler, StableDiffusionPipeline\n"
           "import somelib\n"
           "lm = AutoModelForCausalLM.from_pretrained('m')\n"
           "vl = Qwen2_5_VLForConditionalGeneration.from_pretrained('m', device_map='cpu')\n"
           "unet = UNet2DConditionModel.from_pretrained('m', subfolder='unet')\n"
           "cfg = AutoConfig.from_pretrained('m')\n"
           "sched = DDIMScheduler.from_pretrained('m')\n"
           "pipe = StableDiffusionPipeline.from_pretrained('m')\n"
           "tok = AutoTokenizer.from_pretrained('m')\n"
           "other = somelib.Thing.from_pretrained('m')\n"
           "from transformers import FlaxBertForMaskedLM\nflax = FlaxBertForMaskedLM.from_pretrained('m')\n"
           f"probe({expr})\n")
    assert val(src).kind == kind


def test_a_hugging_face_model_moved_back_to_the_host_is_no_read_back():
    from synclint.engine import lint_source

    src = ("import torch\nfrom transformers import AutoModelForCausalLM\n"
           "class Expander:\n"
           "    def __init__(self, name, device=0):\n"
           "        self.device = device\n"
           "        self.model = AutoModelForCausalLM.from_pretrained(name)\n"
           "    def extend(self, inputs):\n"
           "        self.model = self.model.to(self.device)\n"
           "        out = self.model.generate(**inputs)\n"
           "        self.model = self.model.to('cpu')\n"
           "        return out\n")
    assert [f.code for f in lint_source(src, "expand.py")] == []


def test_a_lambda_mapped_over_items_sees_each_item():
    """`text, images = map(lambda t: t.cuda(), (text, images))` (DALLE-pytorch): `t` is each
    batch tensor while the lambda is walked; the name's own binding outside is untouched."""
    src = ("import torch\nt = 3\nfor text, images in torch.utils.data.DataLoader(ds):\n"
           "    out = map(lambda t: probe(t), (text, images))\nprobe(t)\n")
    (inside, _), (outside, _) = probe(src)[0]
    assert (inside.kind, inside.device) == (V.TENSOR, V.CPU)
    assert outside.kind == V.PY


def test_an_instance_on_one_path_and_an_unknown_on_the_other_is_the_instance():
    """Rainbow's `mem = load_memory(path)` (a pickle) or `mem = ReplayMemory(...)`: used as
    a `ReplayMemory`, so `mem.sample()` reaches its method. Near-miss: a plain value on the
    other path keeps the join a join."""
    head = ("import torch, pickle\nclass Memory:\n    def sample(self):\n        return torch.ones(2, device='cuda')\n"
            "def load(p):\n    return pickle.load(open(p, 'rb'))\n")
    v = val(head + "if c:\n    mem = load(p)\nelse:\n    mem = Memory()\nprobe(mem.sample())\n")
    assert (v.kind, v.device) == (V.TENSOR, V.CUDA)
    v = val(head + "if c:\n    mem = 3\nelse:\n    mem = Memory()\nprobe(mem)\n")
    assert v.kind != V.OBJECT


def test_literal_sequences_added_and_repeated_keep_their_items():
    # HRNet's OHEM loss: `functions = [self._ce_forward] * (n - 1) + [self._ohem_forward]`,
    # then `func(x, target)` over them in `forward`: both methods run at every step
    src = ("import torch\nclass Loss(torch.nn.Module):\n"
           "    def _ce(self, x):\n        return x\n"
           "    def _ohem(self, x):\n        probe(x)\n        return x\n"
           "    def forward(self, xs):\n        fs = [self._ce] * (len(xs) - 1) + [self._ohem]\n"
           "        return sum(f(x) for x, f in zip(xs, fs))\n")
    _, ctx = probe(src)
    assert {"Loss._ohem", "Loss._ce"} <= hot_functions(ctx)
    v = val("import torch\nx = torch.ones(2, device='cuda')\nprobe([x] + [x])\n")
    assert v.kind == V.TENSORS and v.device == V.CUDA and len(v.elems) == 2
    v = val("import torch\nprobe([1] * 3)\n")
    assert v.kind == V.PY and v.py == "list"
    # near-misses: a list times a value the model does not know, and a tuple added to a
    # value of unknown kind, stay unknown; a string repeated is a string
    assert val("import torch\ndef f(a, n):\n    probe([a] * n)\n").kind == V.UNKNOWN
    assert val("import torch\ndef f(a, t):\n    probe((1, 2) + t)\n").kind != V.PY
    assert val("import torch\nprobe('-' * 3)\n").py == "str"


def test_a_loader_wrapped_two_ways_yields_its_batches():
    # BigGAN: `pbar = utils.progress(loader)` (the project's generator) or `tqdm(loader)`
    src = ("import torch\nfrom tqdm import tqdm\nloader = torch.utils.data.DataLoader(ds)\n"
           "def progress(items):\n    for item in items:\n        yield item\n"
           "pbar = progress(loader) if fancy else tqdm(loader)\n"
           "for x, y in pbar:\n    probe(x)\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU
    # near-miss: an iterator of unknown items joined with a loader is not the loader's batches
    src = ("import torch\nfrom lib import stream\nloader = torch.utils.data.DataLoader(ds)\n"
           "pbar = stream() if fancy else loader\nfor x, y in pbar:\n    probe(x)\n")
    assert val(src).device != V.CPU


def test_a_name_the_loop_body_binds_below_its_read_holds_the_last_iterations_value():
    # stargan-v2: `try: x = next(it)` / `except: it = iter(loader)`, `it` bound nowhere else
    src = ("import torch\nloader = torch.utils.data.DataLoader(ds)\nfor i in range(3):\n"
           "    try:\n        probe(next(it))\n    except StopIteration:\n        it = iter(loader)\n")
    v = val(src)
    assert v.kind == V.TENSORS and v.device == V.CPU
    src = "import torch\nwhile True:\n    probe(prev)\n    prev = torch.ones(2, device='cuda')\n"
    assert val(src).device == V.CUDA
    # near-misses: a name bound before the loop keeps what it holds there (the earlier walk
    # knew less); one the body binds before reading it starts afresh
    src = ("import torch\nprev = None\nfor i in range(3):\n    probe(prev)\n    prev = torch.ones(2, device='cuda')\n")
    assert val(src).kind == V.PY
    src = ("import torch\nfor name in ['a', 'b']:\n    try:\n        x = next(it)\n    except StopIteration:\n"
           "        if name == 'a':\n            x = 1\n    probe(x)\n    x = torch.ones(2, device='cuda')\n")
    assert val(src).kind != V.TENSOR


def test_read_first_follows_the_order_python_runs_the_code():
    from synclint.semantic.syntax import read_first

    def reads(code, *names):
        return read_first(cst.parse_module(code), set(names))

    assert reads("y = next(it)\nit = iter(xs)\n", "it") == {"it"}
    assert reads("it = iter(xs)\ny = next(it)\n", "it") == set()
    assert reads("x = x + 1\n", "x") == {"x"}  # the value runs before the target is bound
    assert reads("x += 1\n", "x") == {"x"}
    assert reads("for x in xs:\n    y = x\n", "x") == set()
    assert reads("[x for x in xs]\n", "x") == set()
    assert reads("def f():\n    return x\nx = 1\n", "x") == set()  # a nested function is not run here
    assert reads("(a, b), c = t\nprint(a)\n", "a", "c") == set()
    assert reads("a.b = 1\n", "a") == {"a"}


def test_tuples_of_one_length_joined_keep_each_position():
    # whisper's decoders: `return tokens, completed` (a CUDA bool tensor for the greedy one,
    # `all(...)` for beam search) through one `self.decoder.update(...)`
    src = ("import torch\nclass Greedy:\n    def update(self, t):\n        return t, (t[:, -1] == 0).all()\n"
           "class Beam:\n    def update(self, t):\n        return t, all(len(s) > 2 for s in t)\n"
           "d = Greedy() if c else Beam()\ntokens = torch.ones(2, 3, device='cuda')\n"
           "tokens, completed = d.update(tokens)\nprobe(completed)\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.dtype == V.BOOL
    a = V.Val(V.TENSORS, elems=(V.tensor(V.CUDA), V.py("int")))
    b = V.Val(V.TENSORS, elems=(V.tensor(V.CUDA), V.py("float")))
    assert V.join(a, b).elems == (V.tensor(V.CUDA), V.py("number"))
    # near-miss: a list's items are any of them, not positions
    lst = V.join(V.Val(V.PY, py="list", elems=(V.py("int"), V.py("str"))), V.Val(V.PY, py="list", elems=(V.py("str"), V.py("int"))))
    assert lst.elems is None


def test_isinstance_variable_is_a_tensor_test():
    # pytorch-playground's quantizer: `if isinstance(v, Variable): v = float(v.data.cpu())`;
    # every tensor is a Variable, so past the `if` v is no tensor on either path
    src = ("import math\nimport torch\nfrom torch.autograd import Variable\ndef f(x):\n    v = x.sum().cuda()\n"
           "    if isinstance(v, Variable):\n        v = float(v.data.cpu())\n    probe(v)\n")
    assert val(src).kind != V.TENSOR


def test_a_loop_over_an_instance_runs_its_next_at_every_iteration():
    # Rainbow: `for state in val_mem:` over its replay memory, whose `__next__` makes a tensor
    src = ("import torch\nclass Memory:\n    def __iter__(self):\n        return self\n"
           "    def __next__(self):\n        return torch.ones(2)\n"
           "    def stats(self):\n        return 1\n"
           "def evaluate(mem):\n    for state in mem:\n        pass\n    mem.stats()\n"
           "evaluate(Memory())\n")
    _, ctx = probe(src)
    hot = hot_functions(ctx)
    assert "Memory.__next__" in hot
    assert "Memory.stats" not in hot  # near-miss: called once after the loop


def test_a_name_holding_one_function_or_another_calls_either():
    # vits' `spline_fn = rational_quadratic_spline` or `unconstrained_...` by `tails`, then
    # `spline_fn(inputs=inputs, ...)` in a flow's forward: both run at every step, with its tensors
    src = ("import torch\n"
           "def transform(inputs, tails=None):\n"
           "    if tails is None:\n        spline_fn = plain\n    else:\n        spline_fn = unconstrained\n"
           "    return spline_fn(inputs=inputs)\n"
           "def plain(inputs):\n    return inputs\n"
           "def unconstrained(inputs):\n    probe(inputs)\n    return inputs\n"
           "def unused(inputs):\n    return inputs\n"
           "class Flow(torch.nn.Module):\n    def forward(self, x):\n"
           "        return transform(torch.ones(2, device='cuda') * x, tails='linear')\n")
    seen, ctx = probe(src)
    hot = hot_functions(ctx)
    assert {"plain", "unconstrained"} <= hot and "unused" not in hot
    assert seen[0][0].kind == V.TENSOR and seen[0][0].device == V.CUDA
    # a function defined above the caller as well as below it
    assert val("import torch\ndef g():\n    return 1\ndef f():\n    h = g\n    probe(h)\n").cls == "g"


def test_the_first_batch_of_a_progress_bar_over_enumerate_is_once():
    # YOLOP's validation: `for batch_i, (...) in tqdm(enumerate(val_loader), total=n):`, then
    # `if batch_i == 0:` plots the first batch's images
    src = ("import torch\nfrom tqdm import tqdm\nloader = torch.utils.data.DataLoader(ds)\n"
           "def validate(model):\n    for batch_i, (img, target) in tqdm(enumerate(loader), total=9):\n"
           "        out = model(img.cuda())\n        if batch_i == 0:\n            probe(out)\n"
           "        if batch_i > 0:\n            probe(out)\n")
    seen, _ = probe(src)
    assert [hot for _, hot in seen] == [False, True]  # near-miss: every later batch


def test_a_method_handed_to_a_library_call_in_a_loop_runs_there():
    # stylegan2-pytorch's cli: `retry_call(model.train, tries=3)` at every step
    src = ("import torch\nfrom retry.api import retry_call\n"
           "class Trainer:\n    def train(self):\n        return 1\n    def save(self):\n        return 2\n"
           "def main():\n    model = Trainer()\n    while True:\n        retry_call(model.train, tries=3)\n"
           "    retry_call(model.save)\n")
    _, ctx = probe(src)
    hot = hot_functions(ctx)
    assert "Trainer.train" in hot and "Trainer.save" not in hot  # near-miss: handed over once
    # a function: a gradient hook registered at every step runs in every backward
    src = ("import torch\ndef check(g):\n    return g\ndef once(g):\n    return g\n"
           "for x in xs:\n    loss = x.sum()\n    loss.register_hook(check)\nx.register_hook(once)\n")
    _, ctx = probe(src)
    assert "check" in hot_functions(ctx) and "once" not in hot_functions(ctx)


def test_a_custom_autograd_functions_apply_gives_tensors():
    # ijepa: `loss = AllReduce.apply(loss)`, then `float(loss)` at every step
    src = ("import torch\nclass AllReduce(torch.autograd.Function):\n    @staticmethod\n"
           "    def forward(ctx, x):\n        return x\n"
           "class Plain:\n    @staticmethod\n    def apply(x):\n        return 1\n"
           "x = torch.ones(2, device='cuda')\nprobe(AllReduce.apply(x.sum()))\nprobe(Plain.apply(x))\n")
    seen, _ = probe(src)
    assert seen[0][0].kind == V.TENSOR and seen[0][0].device == V.CUDA
    assert seen[1][0].kind != V.TENSOR  # near-miss: another class's own `apply`


def test_indexing_an_instance_returns_what_its_getitem_returns():
    # RAFT's evaluation: `image1, image2, flow_gt, _ = val_dataset[val_id]` of a project
    # Dataset whose `__getitem__` builds CPU tensors with `torch.from_numpy` (three items in
    # test mode, four otherwise), then `image1[None].cuda()`
    src = ("import numpy as np\nimport torch\nclass Flow(torch.utils.data.Dataset):\n"
           "    def __getitem__(self, i):\n        a = torch.from_numpy(np.ones(3)).float()\n"
           "        if self.is_test:\n            return a, a, self.info[i]\n"
           "        return a, a, a, (a > 0).float()\n"
           "class Chairs(Flow):\n    pass\n"
           "ds = Chairs()\nimage1, image2, flow, _ = ds[0]\nprobe(image1)\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU
    # near-miss: an instance without `__getitem__` (a dict-like config) tells nothing
    src = "import torch\nclass Cfg:\n    pass\ncfg = Cfg()\nprobe(cfg['device'])\n"
    assert val(src).kind == V.UNKNOWN
    # tuples of two lengths: the longer's positions, joined where the shorter has one
    a = V.Val(V.TENSORS, elems=(V.tensor(V.CPU), V.py("int")))
    b = V.Val(V.TENSORS, elems=(V.tensor(V.CPU), V.py("float"), V.tensor(V.CUDA)))
    assert V.join(a, b).elems == (V.tensor(V.CPU), V.py("number"), V.tensor(V.CUDA))


def test_a_modules_registered_parameter_moves_with_the_module():
    # modded-nanogpt: `self.weight = nn.Parameter(torch.empty(n, m))`, then
    # `x @ self.weight.type_as(x)` in forward, after `model.cuda()`: not a CPU tensor
    src = ("import torch\nfrom torch import nn\nclass Lin(nn.Module):\n    def __init__(self):\n"
           "        super().__init__()\n        self.weight = nn.Parameter(torch.empty(3, 3))\n"
           "    def forward(self, x):\n        probe(self.weight)\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.device is None
    # near-misses: a plain tensor attribute is not moved by `model.cuda()`, nor is what
    # `.to()` makes of a parameter (a new, unregistered tensor)
    for made in ("torch.ones(3)", "nn.Parameter(torch.ones(3)).to('cpu')"):
        src = ("import torch\nfrom torch import nn\nclass Lin(nn.Module):\n    def __init__(self):\n"
               f"        super().__init__()\n        self.scale = {made}\n"
               "    def forward(self, x):\n        probe(self.scale)\n")
        assert val(src).device == V.CPU, made
    # and outside a module a Parameter is where its data is
    assert val("import torch\np = torch.nn.Parameter(torch.ones(3))\nprobe(p)\n").device == V.CPU


def test_a_tensor_of_unknown_device_computing_with_gpu_tensors_is_on_the_gpu():
    # pyGAT: `torch.exp(-self.leakyrelu(self.a.mm(edge_h)))` with `self.a` a parameter
    src = ("import torch\ndef f(a: torch.Tensor):\n    h = torch.ones(3, 3, device='cuda')\n"
           "    probe(a.mm(h))\n")
    assert val(src).device == V.CUDA
    # near-misses: a CPU argument may be a 0-d scalar; a move sets its own device
    src = "import torch\ndef f(a: torch.Tensor):\n    probe(a.add(torch.tensor(1.0)))\n"
    assert val(src).device is None
    src = "import torch\ndef f(a: torch.Tensor):\n    h = torch.ones(3, device='cuda')\n    probe(a.new_zeros(3))\n"
    assert val(src).device is None


def test_einops_shape_functions_keep_a_tensor_where_it_is():
    src = HEAD + "from einops import rearrange, repeat\nx = torch.ones(2, 3, device=device)\n"
    v = val(src + "probe(rearrange(x, 'b n -> n b'))\n")
    assert v.kind == V.TENSOR and v.device == V.CUDA
    assert val(src + "import einops\nprobe(einops.reduce(x.cpu(), 'b n -> b', 'sum'))\n").device == V.CPU
    # NumPy in, NumPy out: not a tensor
    assert val(src + "import numpy as np\nprobe(repeat(np.zeros((2, 3)), 'b n -> b n c', c=2))\n").kind != V.TENSOR


def test_the_product_of_two_masks_is_a_mask_and_a_mask_times_a_number_is_not():
    src = HEAD + "u = torch.rand(8, device=device)\nl = torch.rand(8, device=device)\n"
    assert val(src + "probe((u > 0) * (l == u))\n").mask
    assert not val(src + "probe((u > 0) * 0.5)\n").mask
    assert not val(src + "probe((u > 0) * l)\n").mask


def test_legacy_sparse_constructors_place_their_tensors():
    # pygcn: `torch.sparse.FloatTensor(indices, values, shape)` is a CPU tensor that the
    # script moves with `.cuda()`; the `torch.cuda.sparse` spelling is born on the GPU
    src = "import torch\ni, v = load()\nprobe(torch.sparse.FloatTensor(i, v, torch.Size([4, 4])))\n"
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU
    v = val(src.replace("torch.sparse.", "torch.cuda.sparse."))
    assert v.kind == V.TENSOR and v.device == V.CUDA


def test_per_batch_framework_hooks_are_hot():
    # Lightning calls a callback's `on_train_batch_end` after every batch (its
    # `WeightAveraging` updates the average there); `on_train_epoch_end` once an epoch
    src = ("import torch\nimport lightning as L\nclass Ema(L.Callback):\n"
           "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n        probe(batch_idx)\n"
           "    def on_train_epoch_end(self, trainer, pl_module):\n        probe(trainer)\n")
    seen, _ = probe(src)
    assert [hot for _, hot in seen] == [True, False]


def test_a_function_whose_while_loop_steps_the_optimizer_runs_once_an_epoch():
    # ESRGAN's `train()`: a `while` over its batches steps the optimizer through the scaler;
    # what comes before that loop runs once per call, that is once per epoch
    from synclint.engine import lint_source
    from synclint.registry import default_rules

    src = ("import torch\nscaler = torch.amp.GradScaler('cuda')\n"
           "def train(model, source, opt):\n    w = torch.ones(3, device='cuda').sum().item()\n"
           "    batch = source.get()\n    while batch is not None:\n"
           "        scaler.scale(model(batch).sum()).backward()\n        scaler.step(opt)\n        scaler.update()\n"
           "        batch = source.get()\n"
           "for stage in range(10):\n    train(m, s, o)\n")
    heat = lambda text: [f.hot for f in lint_source(text, "t.py", default_rules()) if f.code == "SYN101"]  # noqa: E731
    assert heat(src) == [False]
    # a `for` loop of a few inner passes (PPO's update) leaves its function hot
    assert heat(src.replace("    while batch is not None:\n", "    for _ in range(4):\n")) == [True]


def test_a_gradient_accumulation_guard_around_the_scalers_step_runs_every_optimizer_step():
    src = ("import torch\nscaler = torch.amp.GradScaler('cuda')\nfor i, x in enumerate(loader):\n"
           "    scaler.scale(model(x).sum()).backward()\n    if (i + 1) % 4 == 0:\n"
           "        scaler.step(opt)\n        probe(i)\n")
    seen, _ = probe(src)
    assert seen[0][1] is True


@pytest.mark.parametrize("skip, hot", [
    # an early exit unless the step is the Nth: the rest of the block runs every N steps
    ("if step % 100 != 0:\n        continue", False),
    ("if not step % 100 == 0:\n        continue", False),
    ("if step % 100:\n        continue", False),
    ("if rank != 0 or step % 100 != 0:\n        continue", False),
    # near-misses: the exit is not the only statement, the test is no periodic one, an else
    ("if step % 100 != 0:\n        print(step)\n        continue", True),
    ("if step != 100:\n        continue", True),
    ("if step % 100 != 0:\n        continue\n    else:\n        pass", True),
    # a count of micro-batches per optimizer step: every optimizer step (Lightning's lr_finder)
    ("if (step + 1) % trainer.accumulate_grad_batches != 0:\n        continue", True),
])
def test_an_early_exit_unless_periodic_guards_the_rest_of_its_block(skip, hot):
    src = (f"import torch\nrank = 0\nfor step in range(1000):\n    {skip}\n    probe(step)\n")
    seen, _ = probe(src)
    assert seen[-1][1] is hot


def test_an_early_exit_before_the_optimizer_step_is_gradient_accumulation():
    # `if (i + 1) % accum != 0: continue`, then the step: every optimizer step, hot
    src = ("import torch\nopt = torch.optim.SGD([], lr=0.1)\nfor i in range(1000):\n"
           "    if (i + 1) % 4 != 0:\n        continue\n    opt.step()\n    probe(i)\n")
    seen, _ = probe(src)
    assert seen[-1][1] is True


@pytest.mark.parametrize("src", ['"a"', "'b'", '"""c\nd"""', "''", '""""""', "'''x'''", 'r"x\\d"', '"a\\nb"',
                                 "u'\\u00e9'", '"tab\\there"', '"""a\r\nb"""'])
def test_string_value_is_the_strings_value(src):
    """`string_value` reads plain literals without LibCST's `evaluated_value` (which parses
    each one with `ast`): the same value, prefixes, escapes and line ends included."""
    from synclint.semantic.syntax import string_value

    e = cst.parse_expression(src)
    assert string_value(e) == e.evaluated_value
    assert string_value(cst.parse_expression('b"x"')) is None


def test_a_helper_made_of_its_parameters_returns_what_this_call_passed():
    """`default(val, d)` (lucidrains' idiom) is called with GPU tensors somewhere and with
    sizes elsewhere: the join over every caller says nothing about one call (imagen's
    `init_dim = default(init_dim, dim)` was a GPU tensor)."""
    src = HEAD + (
        "def exists(v):\n    return v is not None\n"
        "def default(val, d):\n    if exists(val):\n        return val\n    return d() if callable(d) else d\n"
        "noise = default(torch.randn(3, device=device), 0)\n"
        "def make(dim, init_dim=None):\n    init_dim = default(init_dim, dim)\n    probe(init_dim)\n"
        "make(64)\n"
    )
    v = val(src)
    assert v.kind != V.TENSOR, v


def test_cls_in_a_classmethod_is_the_class_and_calling_it_makes_an_instance():
    src = HEAD + (
        "import torch.nn as nn\n"
        "class Anchors(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.n = n\n"
        "    @classmethod\n    def from_config(cls, config):\n        a = cls(config.n)\n        probe(a)\n"
        "        return a\n"
    )
    v = val(src)
    assert v.kind == V.MODULE and v.cls and v.cls.endswith("Anchors"), v


def test_numpy_of_a_value_places_it_on_the_cpu():
    """`x.numpy()` raises on a GPU tensor: a value read that way is on the CPU afterwards
    (siamese-triplet's `self.test_labels[i].item()` in a Dataset's `__init__`)."""
    src = HEAD + (
        "class D:\n    def __init__(self, ds):\n        self.labels = ds.test_labels\n"
        "        s = set(self.labels.numpy())\n        probe(self.labels[0])\n"
    )
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU, v
    # `force=True` copies a GPU tensor first: no evidence
    assert val(HEAD + "def f(x):\n    a = x.numpy(force=True)\n    probe(x)\n").device != V.CPU


def test_arrays_appended_to_an_attribute_list_are_its_elements():
    src = HEAD + (
        "class E:\n    def __init__(self):\n        self.preds = []\n"
        "    def add(self, dets):\n        dets = dets.cpu().numpy()\n"
        "        for d in dets:\n            self.preds.append(d)\n"
        "    def out(self):\n        for p in self.preds:\n            probe(p)\n"
    )
    assert val(src).kind == V.NUMPY


def test_an_old_style_iterator_next_method_yields_a_batch():
    src = HEAD + (
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=4)\n"
        "it = iter(loader)\nfor step in range(10):\n    x, y = it.next()\n    probe(x)\n"
    )
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU, v


def test_an_option_with_a_number_default_is_a_device_only_where_named_for_one():
    # FlowNet's `--div-flow` (default 20) scales a GPU tensor: not the ordinal of a device
    src = ("import argparse, torch\nparser = argparse.ArgumentParser()\n"
           "parser.add_argument('--div-flow', default=20)\nparser.add_argument('--gpu', default=0)\n"
           "args = parser.parse_args()\nx = torch.ones(2, device='cuda')\n"
           "probe(args.div_flow * x.sum())\nprobe(torch.ones(2).to(args.gpu))\n")
    seen, _ = probe(src)
    assert seen[0][0].kind != V.PY
    assert seen[1][0].kind == V.TENSOR and seen[1][0].device == V.CUDA


def test_a_device_stored_on_the_parsed_arguments_is_read_back_in_other_functions():
    """FixMatch: `args.device = torch.device('cuda', args.gpu_id)` in main, and
    `x.to(args.device)` in `train(args, ...)`, defined above it."""
    src = (
        "import argparse, torch\n"
        "def train(args, loader):\n    for x, y in loader:\n        probe(x.to(args.device))\n"
        "def main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--gpu-id', type=int, default=0)\n"
        "    args = parser.parse_args()\n    args.device = torch.device('cuda', args.gpu_id)\n"
        "    train(args, torch.utils.data.DataLoader(ds))\n"
    )
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CUDA, v


def _batch_moved(store: str) -> str:
    """A loader's batch that may be a list of tensors (one per pathway) or one tensor: each
    item moved with `store`, the lone tensor moved to the GPU."""
    return f"""\
import torch
def run(dataset):
    for inputs, labels in torch.utils.data.DataLoader(dataset, batch_size=8):
        if isinstance(inputs, (list,)):
            for i in range(len(inputs)):
                inputs[i] = {store}
            probe(inputs)
"""


def test_a_store_into_every_item_of_a_list_is_what_the_list_holds():
    """Issue 34 item 2 (containers): `for i in range(len(xs)): xs[i] = xs[i].cuda()` rewrites
    every item, so the list holds GPU tensors after the loop (not host ones joined with GPU
    ones); the host batch narrowed to a list by `isinstance` is a list of host tensors."""
    assert val(_batch_moved("inputs[i].cuda(non_blocking=True)")).device == V.CUDA
    host = val(_batch_moved("inputs[i].float()"))
    assert (host.kind, host.device) == (V.TENSORS, V.CPU)


def test_a_store_into_some_items_of_a_list_joins_with_what_they_held():
    """The near-miss: a loop that skips the first item (or stores into another list's index)
    leaves host items beside the GPU ones."""
    partial = _batch_moved("inputs[i].cuda()").replace("range(len(inputs))", "range(1, len(inputs))")
    assert val(partial).device == V.EITHER
    other = _batch_moved("inputs[i].cuda()").replace("range(len(inputs))", "range(len(labels))")
    assert val(other).device == V.EITHER


def test_a_distribution_of_python_numbers_samples_on_the_host():
    """`Beta(alpha, alpha).sample()` with float parameters (mixup's mixing ratio): torch
    builds the parameters as CPU tensors, so the sample is a host tensor (`int(lam)` waits for
    nothing); parameters on the GPU sample there."""
    host = val("import torch\nfrom torch.distributions import Beta\n"
               "def mix(alpha: float = 0.2):\n    probe(Beta(alpha, alpha).sample())\n")
    assert (host.kind, host.device) == (V.TENSOR, V.CPU)
    gpu = val("import torch\nfrom torch.distributions import Beta\n"
              "def mix():\n    a = torch.ones(1, device='cuda')\n    probe(Beta(a, a).sample())\n")
    assert (gpu.kind, gpu.device) == (V.TENSOR, V.CUDA)


def test_a_metrics_results_are_host_data_that_mmengine_moved_there():
    # mmengine's evaluator moves the collected results to the CPU (`_to_cpu`) before it calls
    # `compute_metrics(results)`; `process`, per batch, still sees the model's GPU outputs
    src = (
        "import torch\nfrom mmengine.evaluator import BaseMetric\n"
        "class AP(BaseMetric):\n"
        "    def compute_metrics(self, results):\n"
        "        stacked = torch.stack([r['pred'] for r in results])\n"
        "        probe(stacked)\n"
        "        for r in results:\n"
        "            probe(r['gt'])\n"
        "    def process(self, data_batch, data_samples):\n"
        "        probe(data_samples)\n"
        "class Other:\n"
        "    def compute_metrics(self, results):\n"
        "        probe(results)\n"
    )
    stacked, item, batch, other = (v for v, _ in probe(src)[0])
    assert stacked.kind == V.TENSOR and stacked.device == V.CPU
    assert item == V.HOST_OBJECT
    assert batch.device != V.CPU and other.device != V.CPU


def test_an_mmengine_base_module_is_an_nn_module_whose_predict_runs_without_autograd():
    src = (
        "import torch\nfrom mmengine.model import BaseModule\n"
        "class Head(BaseModule):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "    def predict(self, feats):\n"
        "        probe(self(feats))\n"
        "probe(Head())\n"
    )
    (out, _), (head, _) = probe(src)[0]
    assert head.kind == V.MODULE and out.kind == V.TENSOR
    from synclint.engine import lint_source

    assert not [f for f in lint_source(src.replace("probe(self(feats))", "return self(feats)"), "head.py")
                if f.code == "SYN502"]


@pytest.mark.parametrize("body, hot", [
    # mmdet's heads: `multi_apply(self._get_targets_single, ...)` runs it once per image,
    # where the call is and as often; the builtin `map` alike
    ("multi_apply(self.single, xs)", True),
    ("list(map(self.single, xs))", True),
    ("multi_apply(func=self.single, *xs)", True),
    ("sorted(xs, key=self.single)", True),
    # near misses: a map handed something else, a function only referenced
    ("multi_apply(self.other, xs)", False),
    ("[self.single, xs]", False),
])
def test_a_map_runs_its_function_at_the_callers_rate(body, hot):
    src = ("import torch\nfrom mmdet.core import multi_apply\n"
           "class Head(torch.nn.Module):\n"
           f"    def forward(self, xs):\n        return {body}\n"
           "    def single(self, x):\n        return x\n"
           "    def other(self, x):\n        return x\n"
           "    def setup(self, xs):\n        return multi_apply(self.single, xs)\n")
    _, ctx = probe(src)
    assert ("Head.single" in hot_functions(ctx)) is hot


def test_a_map_in_setup_code_does_not_make_its_function_hot():
    src = ("import torch\nfrom mmdet.core import multi_apply\n"
           "def single(x):\n    return x\n"
           "def setup(xs):\n    return list(map(single, xs))\n"
           "def local(xs):\n    map = dict\n    for x in xs:\n        map(single, x)\n")
    _, ctx = probe(src)
    assert "single" not in hot_functions(ctx)


def test_to_a_batch_moves_to_the_batchs_device():
    """`.to(img)` takes `img`'s device; a loader's batch (a tensor or a container of tensors)
    moved to the GPU is a tensor there (mmtracking's `torch.from_numpy(...).to(img)`)."""
    from synclint.engine import lint_source

    src = textwrap.dedent("""\
        import numpy as np
        import torch


        def step(img, cpu_img):
            boxes = torch.from_numpy(np.zeros(4)).to(img)
            print(boxes.sum().item())
            kept = torch.from_numpy(np.zeros(4)).to(cpu_img)
            print(kept.sum().item())


        def train(loader):
            for x in loader:
                step(x.cuda(), x)
        """)
    found = {(f.row, f.code) for f in lint_source(src, "t.py")}
    assert (6, "SYN304") in found and (7, "SYN101") in found
    assert not {(8, "SYN304"), (9, "SYN101")} & found


def test_a_parameters_default_does_not_choose_a_branch_when_no_call_tells_it():
    """vector-quantize's codebook: `self.sample_fn = distributed if use_ddp else local`, with
    `use_ddp=False` the default and the codebook built by `codebook_class(**kwargs)`, a call
    the project does not resolve: the default is not the value, so the distributed sampler
    stays reachable and its syncs run at the rate of the calls. Near miss: a call that passes
    the other arguments and leaves the flag off (`Codebook(dim=4)`) keeps the default."""
    from synclint.engine import lint_source

    src = textwrap.dedent("""\
        import torch
        from torch import nn


        def distributed(x):
            return x.sum().item()


        def local(x):
            return x


        class Codebook(nn.Module):
            def __init__(self, dim, use_ddp=False):
                super().__init__()
                self.sample_fn = distributed if use_ddp else local

            def forward(self, x):
                return self.sample_fn(x)


        class CosineCodebook(Codebook):
            pass


        def build(cosine, kwargs):
            codebook_class = CosineCodebook if cosine else Codebook
            return codebook_class(**kwargs)
        """)
    hot = {f.row: f.hot for f in lint_source(src, "t.py") if f.code == "SYN101"}
    assert hot == {6: True}
    called = src.replace("codebook_class(**kwargs)", "Codebook(dim=4)")
    assert not [f for f in lint_source(called, "t.py") if f.code == "SYN101" and f.hot]


def test_a_walk_without_a_call_graph_notes_neither_site_rates_nor_compile_sites():
    """A first walk makes no call graph (`builds_graph=False`): what only the graph reads,
    its call sites' rates and the compile sites, is not noted; what its summaries carry
    (the calls themselves, the values passed) is, alike."""
    source = textwrap.dedent("""
        import torch

        def step(x):
            return x * 2

        def train(loader, model):
            torch._dynamo.config.capture_scalar_outputs = True
            fast = torch.compile(step)
            for x in loader:
                y = fast(x)
                model(y)
    """)
    module = _parse_module(source)
    walked = {}
    for graph in (True, False):
        ctx = SemanticModel(source, builds_graph=graph)
        ctx.set_module(module)
        Walker(ctx, ()).walk(module)
        walked[graph] = ctx
    with_graph, without = walked[True], walked[False]
    assert with_graph.site_rates and with_graph.compile_facts.roots and with_graph.compile_facts.flags
    assert not without.site_rates and not without.compile_facts
    assert without.calls == with_graph.calls and without.call_args.keys() == with_graph.call_args.keys()
    assert without.module_summary("m").to_json() == with_graph.module_summary("m").to_json()


def test_a_dict_call_with_keywords_keeps_its_values_as_a_literal_does():
    """`dict(recall=r, accuracy=a)` of CUDA values (vjepa2's metric loggers) is a dict of
    them, as `{"recall": r, ...}` is; values of mixed kinds, positional pairs and `**kw` of
    unknown keys keep no item value."""
    head = "import torch\nr = torch.ones((), device='cuda')\n"
    v = val(head + "d = dict(recall=r, accuracy=r * 2)\nprobe(d['recall'])\n")
    assert v.kind == V.TENSOR and v.device == V.CUDA
    assert val(head + "d = dict(recall=r, lr=0.1)\nprobe(d['recall'])\n").kind != V.TENSOR
    assert val(head + "d = dict(pairs)\nprobe(d['recall'])\n").kind != V.TENSOR
    assert val(head + "d = dict(recall=r, **extra)\nprobe(d['recall'])\n").kind != V.TENSOR


def test_a_comprehension_asked_before_the_walk_binds_its_target_reads_its_items():
    """A rule asks of `max([m["acc"] for m in metrics])` before the walk has bound `m`: the
    comprehension's own targets hold the items of what they iterate (unpacked through `zip`
    and `enumerate`), not what an outer `m` holds."""
    head = ("import torch\nms = [dict(acc=torch.ones((), device='cuda'))]\n"
            "cpu = [dict(acc=torch.ones(()))]\nm = 3\n")
    v = val(head + "probe(max([m['acc'] for m in ms]))\n")
    assert v.kind == V.TENSOR and v.device == V.CUDA
    v = val(head + "probe([x['acc'] for i, (x, n) in enumerate(zip(ms, names))])\n")
    assert v.kind == V.TENSORS and v.device == V.CUDA
    assert val(head + "probe(max([m['acc'] for m in cpu]))\n").device == V.CPU
    assert val(head + "probe([len(m) for m in ms])\n").kind == V.PY


def test_a_list_repeated_by_a_tensor_count_is_still_a_list():
    """`[IGNORE_ID] * lens[i]` reads the 0-d tensor as a count (`__index__`): a list, which
    `torch.tensor` makes a CPU tensor of, whatever device `lens` is on."""
    head = "import torch\nlens = torch.ones(3, device='cuda').long()\n"
    v = val(head + "probe(torch.tensor([0] * (2 + lens[0]) + [1]))\n")
    assert v.kind == V.TENSOR and v.device == V.CPU
    assert val(head + "probe(lens[0] * 2)\n").device == V.CUDA


def test_a_tokenizers_encoding_without_return_tensors_holds_lists():
    """`tokenizer([prompt]).input_ids` (no `return_tensors`): lists of ids, which
    `torch.as_tensor` makes a CPU tensor of (EAGLE's prompts, moved with `.cuda()`)."""
    head = ("import torch\nfrom transformers import AutoTokenizer\n"
            "tok = AutoTokenizer.from_pretrained('gpt2')\n")
    v = val(head + "probe(tok(['hi'], add_special_tokens=False).input_ids)\n")
    assert v.kind == V.PY and v.py == "list"
    v = val(head + "probe(torch.as_tensor(tok(['hi']).input_ids))\n")
    assert v.kind == V.TENSOR and v.device == V.CPU
    v = val(head + "probe(tok(['hi'], return_tensors='pt').input_ids)\n")
    assert v.kind == V.TENSOR and v.device == V.CPU



def test_a_progress_bar_bound_to_a_name_yields_the_loaders_batches():
    """`with tqdm(loader) as it: for x, y in it:` (smp's `Epoch.run`), as `for x, y in
    tqdm(loader)`; a bar over a count (`tqdm(total=n)`) is no loader."""
    head = "import torch\nfrom tqdm import tqdm\n"
    src = head + "def run(dataloader):\n    with tqdm(dataloader, desc='train') as it:\n        for x, y in it:\n            probe(x)\n"
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU
    assert val(head + "bar = tqdm(total=10)\nprobe(bar)\n").kind != V.LOADER


def test_a_dict_comprehension_over_a_batchs_items_keeps_its_values():
    """`data = {k: v for k, v in data.items()}` of a loader's batch (LoRA's NLG scripts),
    asked before the walk binds `k` and `v`: still the batch's CPU tensors."""
    src = ("import torch\ndef run(valid_loader):\n    for data in valid_loader:\n"
           "        probe({key: value for key, value in data.items()}['input'])\n")
    v = val(src)
    assert v.kind == V.TENSOR and v.device == V.CPU


def test_a_list_extended_with_plus_equals_holds_what_it_was_given():
    """`scalers += [torch.cuda.amp.GradScaler()]` (vjepa2's `init_opt`) adds items as
    `scalers.append(...)` does; a list of numbers stays a plain list."""
    src = ("import torch\nscalers, sizes = [], []\nfor _ in range(2):\n"
           "    scalers += [torch.cuda.amp.GradScaler()]\n    sizes += [1, 2]\nprobe(scalers)\nprobe(sizes)\n")
    seen, _ = probe(src)
    (scalers, _), (sizes, _) = seen
    assert scalers.elems and scalers.elems[0].kind == V.OBJECT
    assert sizes.kind == V.PY and not sizes.elems
