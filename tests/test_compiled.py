"""Compiled regions (issue 36): what runs under torch.compile, with which options, and what
the SYN6xx findings say there; nothing outside a region changes."""

from pathlib import Path

import pytest

from synclint.engine import analyse, lint_analysis, lint_source
from synclint.registry import all_rules, select
from synclint.run.runner import check_files
from synclint.semantic import compiled as C


def _compiled(source: str) -> C.Compiled:
    a = analyse(source, "m.py", "m")
    return lint_analysis(a, [])[1].compiled


# ------------------------------------------------------------------ compile sites
def test_compile_roots_with_their_options():
    got = _compiled(
        "import torch\n"
        "import torch._dynamo\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "@torch.compile\n"
        "def bare(x):\n    return x\n"
        "@torch.compile(fullgraph=True, mode='reduce-overhead', dynamic=False)\n"
        "def full(x):\n    return x\n"
        "@torch._dynamo.optimize('eager', nopython=True)\n"
        "def old(x):\n    return x\n"
        "def plain(x):\n    return x\n"
        "def other(x):\n    return x\n"
        "fast = torch.compile(plain, backend='aot_eager')\n"
        "net = torch.compile(Net(), options={'triton.cudagraphs': True})\n"
        "m = Net()\n"
        "m.compile(mode='max-autotune')\n"
        "wrapped = torch.compile(mode='max-autotune-no-cudagraphs')(other)\n"
    )
    roots = dict(got.roots)
    assert roots["bare"] == C.Options()
    assert roots["full"] == C.Options(fullgraph=True, mode="reduce-overhead", dynamic=False, cudagraphs=True)
    assert roots["old"] == C.Options(fullgraph=True, backend="eager")
    assert roots["plain"] == C.Options(backend="aot_eager")
    assert roots["other"] == C.Options(mode="max-autotune-no-cudagraphs")
    assert [o for k, o in got.roots if k == "Net.forward"] == [C.Options(cudagraphs=True),
                                                                C.Options(mode="max-autotune", cudagraphs=True)]


def test_disabled_functions_flags_and_patches():
    got = _compiled(
        "import os\n"
        "import torch\n"
        "import torch._dynamo.config as dcfg\n"
        "os.environ['TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS'] = '1'\n"
        "torch._dynamo.config.capture_scalar_outputs = True\n"
        "dcfg.capture_scalar_outputs = False\n"
        "@torch.compiler.disable\n"
        "def off(x):\n    return x\n"
        "@torch._dynamo.disable(recursive=False)\n"
        "def frame_only(x):\n    return x\n"
        "def helper(x):\n    return x\n"
        "helper = torch.compiler.disable(helper)\n"
        "@torch._dynamo.config.patch(capture_scalar_outputs=True)\n"
        "@torch.compile\n"
        "def patched(x):\n    return x\n"
        "def later(x):\n    return x\n"
        "with torch._dynamo.config.patch({'capture_dynamic_output_shape_ops': False}):\n"
        "    fast = torch.compile(later)\n"
    )
    assert got.disabled == ["off", "helper"] and got.skipped == ["frame_only"]
    assert got.flags == {C.SHAPES: True, C.SCALARS: False}  # the last assignment of each
    roots = dict(got.roots)
    assert roots["patched"].flags == ((C.SCALARS, True),)
    assert roots["later"].flags == ((C.SHAPES, False),)
    # a patch on the root wins over the program's flags
    assert C.region_of("patched", roots["patched"], got.flags).scalars
    assert not C.region_of("later", roots["later"], got.flags).shapes


def test_not_compile_sites():
    """`re.compile`, a compile method of something that is not a module, a module's own
    `compile` (LightGlue's compiles its layers, not its forward): not nn.Module.compile."""
    got = _compiled(
        "import re\n"
        "import torch\n"
        "pattern = re.compile('a+')\n"
        "class Builder:\n"
        "    def compile(self):\n        return self\n"
        "b = Builder()\n"
        "b.compile()\n"
        "torch.compile\n"
        "class Matcher(torch.nn.Module):\n"
        "    def layer(self, x):\n        return x\n"
        "    def compile(self, mode='reduce-overhead'):\n"
        "        self.fast = torch.compile(self.layer, mode=mode)\n"
        "    def forward(self, x):\n        return self.fast(x)\n"
        "m = Matcher()\n"
        "m.compile()\n"
    )
    assert [k for k, _ in got.roots] == ["Matcher.layer"]


def test_a_base_in_another_module_with_its_own_compile(tmp_path):
    (tmp_path / "base.py").write_text(
        "import torch\n"
        "class Base(torch.nn.Module):\n"
        "    def compile(self):\n        self.ready = True\n"
    )
    (tmp_path / "net.py").write_text(
        "import torch\n"
        "from base import Base\n"
        "class Net(Base):\n"
        "    def forward(self, x):\n        return x.sum().item()\n"
        "class Plain(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x.sum().item()\n"
        "net, plain = Net(), Plain()\n"
        "net.compile()\n"
        "plain.compile()\n"
    )
    found = check_files([str(tmp_path / "base.py"), str(tmp_path / "net.py")], all_rules()).findings
    assert sorted((f.row, f.code) for f in found) == [(5, "SYN101"), (8, "SYN601")]


# ------------------------------------------------------------------ regions
def test_regions_spread_join_and_stop():
    fast = C.Region("step")
    graphs = C.Region("fwd", cudagraphs=True, scalars=True)
    # (two paths from each root to `helper`: each root is counted once)
    edges = {"step": ["helper", "log", "frame", "mid"], "fwd": ["helper", "mid"], "mid": ["helper"],
             "log": ["deep"], "frame": ["inner"]}
    got = C.regions([("step", fast), ("fwd", graphs)], edges, disabled={"log"}, skipped={"frame"})
    assert set(got) == {"step", "fwd", "helper", "mid", "inner"}  # not the disabled one, nor what it calls
    assert got["helper"] == C.Region("fwd", cudagraphs=True, scalars=False, others=("step",),
                                     fullgraph_all=False)  # joined
    assert got["inner"] == fast  # traced below a skipped frame
    # fullgraph=True on one root of two: its compile errors are said, its captures are not
    both = C.Region("a", fullgraph=True).join(C.Region("b"))
    assert both.fullgraph and not both.captures
    assert "a compile error" in C.consequence("branch:gpu", both)[0]
    assert "a graph break (GB0124)" in C.consequence("item:gpu", both)[0]


@pytest.mark.parametrize("region,tag,says", [
    (C.Region("f"), "item:gpu", "a graph break (GB0124) splits `f` here into two graphs; this line runs in "
                                "Python and the host waits for the GPU"),
    (C.Region("f", cudagraphs=True), "shape", "a graph break (GB0036) splits `f` here into two CUDA graphs; "
                                              "this line runs in Python"),
    (C.Region("f", scalars=True), "item:gpu", "no graph break (`capture_scalar_outputs` captures it), but the "
                                              "host still waits for the GPU at every call"),
    (C.Region("f", scalars=True), "item", None),  # captured, and no GPU to wait for
    (C.Region("f", scalars=True), "shape:gpu", "a graph break (GB0036)"),  # the other flag
    (C.Region("f", fullgraph=True), "shape:gpu", "no graph break (fullgraph=True captures it)"),
    (C.Region("f", fullgraph=True, scalars=True), "branch:gpu", "a compile error under fullgraph=True (GB0170)"),
    (C.Region("f", fullgraph=True), "tolist:gpu", "a compile error under fullgraph=True (GB0109)"),
    (C.Region("f"), "host-copy:gpu", None),  # no CUDA graphs: what eager code costs
    (C.Region("f", cudagraphs=True), "host-copy:gpu", "CUDA graphs (mode=\"reduce-overhead\") are split or skipped"),
    (C.Region("f", cudagraphs=True, inductor=False), "host-copy:gpu", None),
    (C.Region("f"), "assert:gpu", C.WITHDRAWN),
    (C.Region("f"), "fill:gpu", C.WITHDRAWN),
    (C.Region("f", inductor=False), "fill:gpu", None),  # aten's index_put_ waits as in eager code
    (C.Region("f", others=("g", "h")), "print", "splits `f` (and 2 more compiled functions) here"),
])
def test_consequences(region, tag, says):
    got = C.consequence(tag, region)
    if says is None:
        assert got is None
    else:
        assert got is not None and says in got[0], got


# ------------------------------------------------------------------ findings
EAGER_AND_COMPILED = """import torch
@torch.compiler.disable
def log_value(x):
    return x.sum().item()
def helper(x):
    return x.sum().item()
@torch.compile
def step(x: torch.Tensor):
    n = helper(x)
    log_value(x)
    return x * n
def evaluate(x: torch.Tensor):
    return x.mean().item()
x = torch.ones(3, device='cuda')
for _ in range(3):
    step(x)
    evaluate(x)
"""


def test_compiled_finding_replaces_the_eager_one_in_its_region_only():
    got = {(f.row, f.code) for f in lint_source(EAGER_AND_COMPILED, "m.py", all_rules())}
    assert got == {(4, "SYN101"), (6, "SYN601"), (13, "SYN101")}
    eager = {(f.row, f.code) for f in lint_source(EAGER_AND_COMPILED, "m.py", select(ignore=["SYN6"]))}
    assert eager == {(4, "SYN101"), (6, "SYN101"), (13, "SYN101")}  # without SYN6xx: the eager findings


def test_outside_compiled_code_nothing_changes():
    """Without a compile root, every rule reports what the eager rules alone report."""
    source = EAGER_AND_COMPILED.replace("@torch.compile\n", "").replace("@torch.compiler.disable\n", "")
    with_compiled = [(f.row, f.code, f.message) for f in lint_source(source, "m.py", all_rules())]
    without = [(f.row, f.code, f.message) for f in lint_source(source, "m.py", select(ignore=["SYN6"]))]
    assert with_compiled == without and with_compiled


def _project(tmp_path: Path) -> list:
    tmp_path.mkdir()
    (tmp_path / "utils.py").write_text(
        "import torch\n"
        "def count(h):\n"
        "    return int((h > 0).sum())\n"
        "@torch.compiler.disable\n"
        "def report(h):\n"
        "    print(h.max().item())\n"
    )
    (tmp_path / "model.py").write_text(
        "import torch\n"
        "from utils import count, report\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        h = x.relu()\n"
        "        report(h)\n"
        "        return h * count(h)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "from model import Net\n"
        "model = torch.compile(Net().cuda(), mode='reduce-overhead')\n"
        "for _ in range(3):\n"
        "    model(torch.randn(4, device='cuda'))\n"
    )
    return [str(tmp_path / n) for n in ("utils.py", "model.py", "train.py")]


def test_regions_cross_modules_and_keep_in_the_cache(tmp_path):
    files = _project(tmp_path / "p")
    cache = tmp_path / "cache"

    def run():
        return sorted((Path(f.filename).name, f.row, f.code, f.message) for f in
                      check_files(files, all_rules(), cache_dir=cache).findings)

    first = run()
    assert [(n, r, c) for n, r, c, _ in first] == [("utils.py", 3, "SYN601"), ("utils.py", 6, "SYN101")]
    assert "splits `Net.forward` here into two CUDA graphs" in first[0][3]
    assert run() == first  # the second run takes the regions from the cache
    (tmp_path / "p" / "train.py").write_text("import torch\nfrom model import Net\nmodel = Net().cuda()\n"
                                             "for _ in range(3):\n    model(torch.randn(4, device='cuda'))\n")
    assert [(n, r, c) for n, r, c, _ in run()] == [("utils.py", 3, "SYN104"), ("utils.py", 6, "SYN101")]


FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "compiled-code"
# what each finding of the fixture project says happens there (the codes and rows are marked
# in the files themselves, tests/test_project_fixtures.py)
CONSEQUENCES = {
    ("helpers.py", 6): "no graph break (`capture_scalar_outputs` captures it), but the host still waits",
    ("model.py", 33): "a graph break (GB0036) splits `Scorer.forward` here into two CUDA graphs",
    ("model.py", 34): "CUDA graphs (mode=\"reduce-overhead\") are split or skipped at this CPU op in `Scorer.forward`",
    ("train.py", 19): "a graph break (GB0170) splits `train_step` here into two graphs; this line runs in Python "
                      "and the host waits for the GPU",
    ("train.py", 28): "a compile error under fullgraph=True (GB0059): `normalized` cannot be one graph",
    ("train.py", 35): "no graph break (`capture_dynamic_output_shape_ops` captures it), but the host still waits",
}


def test_fixture_project_says_each_consequence():
    found = check_files([str(p) for p in sorted(FIXTURE.glob("*.py"))], all_rules()).findings
    said = {(Path(f.filename).name, f.row): f.message for f in found if f.code.startswith("SYN6")}
    assert set(said) == set(CONSEQUENCES)
    for where, text in CONSEQUENCES.items():
        assert text in said[where], (where, said[where])


def _syn6_rows(tmp_path: Path, files: dict) -> set:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = check_files([str(tmp_path / n) for n in files], all_rules()).findings
    return {(Path(f.filename).name, f.row) for f in found if f.code.startswith("SYN6")}


_BLOCKS = (
    "import torch\n"
    "from torch import nn\n"
    "class Expert(nn.Module):\n"
    "    def forward(self, x):\n"
    "        if x.sum() > 0:\n"  # 5
    "            return x\n"
    "        return -x\n"
    "class Gate(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x[x > 0]\n"  # 10
    "class Head(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x.max().item()\n"  # 13
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.gate = Gate()\n"
    "        self.experts = nn.ModuleList([Expert() for _ in range(4)])\n"
    "        self.tail = nn.Sequential(Expert(), Expert())\n"
    "        self.head = Head()\n"
    "    def forward(self, x):\n"
    "        x = self.gate(x)\n"
    "        for e in self.experts:\n"
    "            x = e(x)\n"
    "        return self.tail(x)\n"
)


def test_regions_reach_submodules_held_in_attributes_and_containers(tmp_path):
    """A compiled module's forward runs its submodules' forward: `self.gate(x)`, the items of
    an `nn.ModuleList` it iterates and of an `nn.Sequential` it calls, across modules."""
    got = _syn6_rows(tmp_path, {
        "blocks.py": _BLOCKS,
        "train.py": "import torch\nfrom blocks import Net\nmodel = torch.compile(Net())\nmodel(torch.randn(4))\n",
    })
    assert got == {("blocks.py", 5), ("blocks.py", 10)}  # Head is never called: not compiled


def test_submodules_of_an_uncompiled_module_stay_eager(tmp_path):
    """Near miss: the same modules, the model not compiled (only a helper is)."""
    got = _syn6_rows(tmp_path, {
        "blocks.py": _BLOCKS,
        "train.py": "import torch\nfrom blocks import Net\nmodel = Net()\n"
                    "@torch.compile\ndef loss(y):\n    return y.pow(2).mean()\n"
                    "print(loss(model(torch.randn(4))).item())\n",
    })
    assert got == set()


def test_an_attribute_shadowed_by_a_method_is_the_method(tmp_path):
    """Near miss: `self.head(x)` where the class defines a method `head`: the method runs."""
    source = _BLOCKS.replace("        return self.tail(x)\n",
                             "        return self.tail(x)\n    def head(self, x):\n        return x\n") \
        .replace("        x = self.gate(x)\n", "        x = self.gate(x)\n        x = self.head(x)\n")
    got = _syn6_rows(tmp_path, {
        "blocks.py": source,
        "train.py": "import torch\nfrom blocks import Net\nmodel = torch.compile(Net())\nmodel(torch.randn(4))\n",
    })
    assert ("blocks.py", 13) not in got and ("blocks.py", 10) in got


_ENV = (
    "import torch\n"
    "class Env:\n"
    "    def predict(self, x):\n"
    "        if x.mean() > 0:\n"  # 4
    "            return x\n"
    "        return -x\n"
    "    def reward(self, x):\n"
    "        return x.sum().item()\n"  # 8
)


def test_a_compiled_bound_method_of_another_modules_instance(tmp_path):
    """`env.predict = torch.compile(env.predict)` compiles Env.predict (DIAMOND's world model);
    near miss: Env.reward, never compiled, stays eager."""
    got = _syn6_rows(tmp_path, {
        "env.py": _ENV,
        "train.py": "import torch\nfrom env import Env\nenv = Env()\n"
                    "env.predict = torch.compile(env.predict, mode='reduce-overhead')\n"
                    "print(env.reward(env.predict(torch.randn(4))))\n",
    })
    assert got == {("env.py", 4)}


def test_a_submodule_made_by_another_modules_class(tmp_path):
    """`self.block = layers.Block()` with Block of another module: its forward runs in the
    compiled forward (through nn.Module's `__call__`); a block the model never calls does not."""
    (tmp_path / "pkg").mkdir()
    files = {
        "pkg/__init__.py": "",
        "pkg/layers.py": "import torch\nfrom torch import nn\n"
                         "class Block(nn.Module):\n    def forward(self, x):\n"
                         "        return x[x > 0]\n"  # 5
                         "class Spare(nn.Module):\n    def forward(self, x):\n"
                         "        return x[x > 1]\n",  # 8
        "pkg/model.py": "import torch\nfrom torch import nn\nfrom . import layers\n"
                        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                        "        self.block = layers.Block()\n        self.spare = layers.Spare()\n"
                        "    def forward(self, x):\n        return self.block(x)\n"
                        "model = torch.compile(Net())\n",
    }
    assert _syn6_rows(tmp_path, files) == {("layers.py", 5)}


def test_a_namespace_package_inside_a_package(tmp_path):
    """timesfm's `timesfm/timesfm_2p5/` has no `__init__.py`: it is a namespace package inside
    `timesfm`, and its `from ..nn import dense` names `timesfm.nn.dense`. Near miss: a folder
    without `__init__.py` outside any package holds top-level modules."""
    from synclint.project import module_names

    for d in ("pkg", "pkg/nn", "pkg/v2", "scripts"):
        (tmp_path / d).mkdir()
    files = {
        "pkg/__init__.py": "", "pkg/nn/__init__.py": "",
        "pkg/nn/dense.py": "import torch\nclass Block(torch.nn.Module):\n    def forward(self, x):\n"
                           "        return x[x > 0]\n",  # 4
        "pkg/v2/model.py": "import torch\nfrom ..nn import dense\nclass Net(torch.nn.Module):\n"
                           "    def __init__(self):\n        super().__init__()\n        self.block = dense.Block()\n"
                           "    def forward(self, x):\n        return self.block(x)\n"
                           "model = torch.compile(Net())\n",
        "scripts/run.py": "print(1)\n",
    }
    assert _syn6_rows(tmp_path, files) == {("dense.py", 4)}
    names = module_names([str(tmp_path / p) for p in ("pkg/v2/model.py", "scripts/run.py")])
    assert sorted(names.values()) == ["pkg.v2.model", "run"]


def test_an_annotation_naming_a_class_through_a_module_level_alias(tmp_path):
    """`DecodeCache = util.DecodeCache`, then `decode_cache: DecodeCache | None` (timesfm): its
    tensor fields are tensors, so `x[:, start:end]` with `start = decode_cache.next_index[0]`
    takes a size from a tensor. Near miss: the same name bound to a call's result says nothing."""
    util = ("import dataclasses\nimport torch\n@dataclasses.dataclass\nclass DecodeCache:\n"
            "    next_index: torch.Tensor\n    key: torch.Tensor\n")
    layer = ("import torch\nfrom pkg import util\nDecodeCache = util.DecodeCache\n"
             "class A(torch.nn.Module):\n"
             "    def forward(self, x, *, decode_cache: DecodeCache | None = None):\n"
             "        start = decode_cache.next_index[0]\n"
             "        decode_cache.key[:, start:start + 3] = x\n"  # 7
             "        return x\n"
             "m = torch.compile(A())\n")
    (tmp_path / "pkg").mkdir()
    files = {"pkg/__init__.py": "", "pkg/util.py": util, "pkg/layer.py": layer}
    assert _syn6_rows(tmp_path, files) == {("layer.py", 7)}
    files["pkg/layer.py"] = layer.replace("DecodeCache = util.DecodeCache", "DecodeCache = util.make()")
    assert _syn6_rows(tmp_path, files) == set()



def test_a_model_picked_from_a_registry_of_factories(tmp_path):
    """LlamaGen's `vq_model = VQ_models[args.vq_model](...)`, `VQ_models = {'VQ-16': VQ_16, ...}`
    with `def VQ_16(**kw): return VQModel(...)` in the model's module: whichever key, the model is
    a VQModel, so its forward is compiled. Near misses: a class no factory of the registry makes
    stays eager, and so does the model of a registry that is not a literal of known values."""
    (tmp_path / "pkg").mkdir()
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": "import torch\nfrom torch import nn\n"
                         "class VQModel(nn.Module):\n    def forward(self, x):\n"
                         "        return x[x > 0]\n"  # 5
                         "class Other(nn.Module):\n    def forward(self, x):\n"
                         "        return x[x > 1]\n"  # 8
                         "def VQ_16(**kw):\n    return VQModel()\n"
                         "def VQ_8(**kw):\n    return VQModel()\n"
                         "VQ_models = {'VQ-16': VQ_16, 'VQ-8': VQ_8}\n"
                         "OTHER_models = dict(load_entry_points())\n",
        "pkg/train.py": "import sys\nimport torch\nfrom pkg.models import VQ_models, OTHER_models\n"
                        "vq_model = VQ_models[sys.argv[1]](codebook_size=8)\n"
                        "vq_model = torch.compile(vq_model)\n"
                        "other = OTHER_models[sys.argv[2]]()\n"
                        "other = torch.compile(other)\n",
    }
    assert _syn6_rows(tmp_path, files) == {("models.py", 5)}


def test_a_registry_of_classes_in_the_same_module(tmp_path):
    """`MODELS = {"a": NetA, "b": NetB}; model = torch.compile(MODELS[name]())`: either class's
    forward is compiled; a class not in the registry is not."""
    files = {
        "run.py": "import sys\nimport torch\nfrom torch import nn\n"
                  "class NetA(nn.Module):\n    def forward(self, x):\n        return x[x > 0]\n"  # 6
                  "class NetB(nn.Module):\n    def forward(self, x):\n        return x.nonzero()\n"  # 9
                  "class NetC(nn.Module):\n    def forward(self, x):\n        return x.nonzero()\n"  # 12
                  "MODELS = {'a': NetA, 'b': NetB}\n"
                  "model = torch.compile(MODELS[sys.argv[1]]())\n"
                  "print(NetC()(torch.randn(3)))\n",
    }
    assert _syn6_rows(tmp_path, files) == {("run.py", 6), ("run.py", 9)}


def test_a_float_annotated_parameter_given_a_tensor(tmp_path):
    """Zonos's `_decode_one_token(self, ids, params, cfg_scale: float)`, compiled through a local
    (`decode_one_token = self._decode_one_token; decode_one_token = torch.compile(...)`) and
    called with `cfg_scale = torch.tensor(cfg_scale)`: its `if cfg_scale == 1.0:` tests a tensor,
    annotation or not. Near miss: where every caller passes a float (`_prefill`) it is a float."""
    files = {
        "model.py": "import torch\n"
                    "class Zonos(torch.nn.Module):\n"
                    "    def _logits(self, h, cfg_scale: float):\n"
                    "        if cfg_scale != 1.0:\n"  # 4
                    "            h = h * cfg_scale\n"
                    "        return h\n"
                    "    def _prefill(self, h, cfg_scale: float):\n"
                    "        if cfg_scale != 1.0:\n"  # 8
                    "            h = h * 2\n"
                    "        return h\n"
                    "    def _decode_one_token(self, h, cfg_scale: float):\n"
                    "        if cfg_scale == 1.0:\n"  # 12
                    "            return h\n"
                    "        return self._logits(h, cfg_scale)\n"
                    "    def generate(self, h, cfg_scale: float = 2.0):\n"
                    "        decode_one_token = self._decode_one_token\n"
                    "        decode_one_token = torch.compile(decode_one_token, dynamic=True)\n"
                    "        h = self._prefill(h, cfg_scale)\n"
                    "        h = self._logits(h, cfg_scale)\n"
                    "        cfg_scale = torch.tensor(cfg_scale)\n"
                    "        for _ in range(4):\n"
                    "            h = decode_one_token(h, cfg_scale)\n"
                    "        return h\n",
    }
    assert _syn6_rows(tmp_path, files) == {("model.py", 4), ("model.py", 12)}


_LM = ("import torch\nfrom torch import nn\n"
       "class Rotary(nn.Module):\n    def forward(self, pos: torch.Tensor):\n"
       "        if pos.max() > 4:\n            return pos * 2\n        return pos\n"  # 5
       "class LanguageModel(nn.Module):\n    def __init__(self, cfg):\n        super().__init__()\n"
       "        self.rot = Rotary()\n"
       "    def forward(self, x):\n        return self.rot(x)\n"
       "    @classmethod\n    def from_pretrained(cls, cfg):\n        model = cls(cfg)\n"
       "        model.load_state_dict(torch.load(cfg))\n        return model\n"
       "    @classmethod\n    def from_file(cls, path):\n        return load_anything(path)\n")


def test_a_submodule_made_by_a_classmethod_constructor(tmp_path):
    """nanoVLM's `self.decoder = LanguageModel.from_pretrained(cfg)`, whose classmethod makes
    `cls(cfg)` and returns it: an instance of LanguageModel, whose forward the compiled model runs."""
    files = {
        "lm.py": _LM,
        "vlm.py": "import torch\nfrom torch import nn\nfrom lm import LanguageModel\n"
                  "class VLM(nn.Module):\n    def __init__(self, cfg):\n        super().__init__()\n"
                  "        self.decoder = LanguageModel.from_pretrained(cfg)\n"
                  "    def forward(self, x):\n        return self.decoder(x)\n",
        "train.py": "import torch\nfrom vlm import VLM\nmodel = torch.compile(VLM(None))\n",
        "alone.py": _LM.replace("> 4", "> 5") + "model = torch.compile(LanguageModel.from_pretrained(None))\n",
    }
    assert _syn6_rows(tmp_path, files) == {("lm.py", 5), ("alone.py", 5)}


def test_a_classmethod_returning_something_else_says_nothing(tmp_path):
    """Near miss: a classmethod whose return is not `cls(...)` (`from_file` returns whatever a
    loader gives) does not make an instance of the class."""
    files = {
        "lm.py": _LM,
        "vlm.py": "import torch\nfrom torch import nn\nfrom lm import LanguageModel\n"
                  "class VLM(nn.Module):\n    def __init__(self, cfg):\n        super().__init__()\n"
                  "        self.decoder = LanguageModel.from_file(cfg)\n"
                  "    def forward(self, x):\n        return self.decoder(x)\n",
        "train.py": "import torch\nfrom vlm import VLM\nmodel = torch.compile(VLM(None))\n",
    }
    assert _syn6_rows(tmp_path, files) == set()


def test_a_bound_method_compiled_through_a_local(tmp_path):
    """`fn = self.step; compiled = torch.compile(fn)`, then `compiled(x)` in a loop: `step` is
    compiled, and so is what it calls. Near miss: the method the local held before it was
    rebound (`fn = self.warmup`, then `fn = self.step`) is not compiled."""
    files = {
        "agent.py": "import torch\n"
                    "class Agent:\n"
                    "    def warmup(self, x):\n"
                    "        return x[x > 0]\n"  # 4
                    "    def helper(self, x):\n"
                    "        return x.nonzero()\n"  # 6
                    "    def step(self, x: torch.Tensor):\n"
                    "        if x.sum() > 0:\n"  # 8
                    "            return self.helper(x)\n"
                    "        return x\n"
                    "    def run(self, x):\n"
                    "        fn = self.warmup\n"
                    "        x = fn(x)\n"
                    "        fn = self.step\n"
                    "        compiled = torch.compile(fn)\n"
                    "        for _ in range(3):\n"
                    "            x = compiled(x)\n"
                    "        return x\n",
    }
    assert _syn6_rows(tmp_path, files) == {("agent.py", 6), ("agent.py", 8)}


def test_the_eager_branch_of_is_compiling(tmp_path):
    """aimnet2's `mol_sum`: `if torch.compiler.is_compiling(): n = int(idx[-1].item()) + 1` else
    the cached count. Under Dynamo `is_compiling()` is True, so the `else` (and the body of `if not
    torch.compiler.is_compiling():`) never runs compiled: no compiled finding there; the eager rule
    keeps its finding (the function also runs eagerly). Near miss: the compiling branch is compiled."""
    files = {
        "net.py": "import torch\n"
                  "def count(idx: torch.Tensor, data: dict):\n"
                  "    if torch.compiler.is_compiling():\n"
                  "        n = int(idx[-1].item()) + 1\n"  # 4
                  "    else:\n"
                  "        n = int(idx[-1].item()) + 2\n"  # 6
                  "    if not torch._dynamo.is_compiling():\n"
                  "        print(idx.sum().item())\n"  # 8
                  "    return n\n"
                  "def fast(idx: torch.Tensor):\n"
                  "    if torch.compiler.is_compiling():\n"
                  "        return int(idx[-1].item())\n"  # 12
                  "    return int(idx[-2].item())\n"  # 13
                  "class Net(torch.nn.Module):\n"
                  "    def forward(self, idx: torch.Tensor):\n"
                  "        return count(idx, {}) + fast(idx)\n"
                  "model = torch.compile(Net())\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = check_files([str(tmp_path / n) for n in files], all_rules()).findings
    rows = {(f.row, f.code[:4]) for f in found if f.row in (4, 6, 8, 12, 13)}
    assert (4, "SYN6") in rows and (12, "SYN6") in rows
    assert not any(code == "SYN6" for row, code in rows if row in (6, 8, 13))
    assert (6, "SYN1") in rows and (8, "SYN1") in rows and (13, "SYN1") in rows


_CELL = (
    "import torch\n"
    "class Cell:\n"
    "    @staticmethod\n"
    "    def scan(x: torch.Tensor):\n"
    "        if x.max() > 1:\n"  # 5
    "            return x\n"
    "        return x + 1\n"
    "    @staticmethod\n"
    "    def spare(x: torch.Tensor):\n"
    "        if x.min() < 0:\n"  # 10
    "            return x\n"
    "        return -x\n"
    "def step(x: torch.Tensor):\n"
    "    return x[x > 0]\n"  # 14
    "def other(x: torch.Tensor):\n"
    "    return x[x > 1]\n"  # 16
)


def test_a_function_compiled_through_its_class_or_its_module(tmp_path):
    """`torch.compile(Cell.scan)` compiles the static method Cell.scan (TiRex stores the result on
    each cell and calls it there); `torch.compile(cell.step)` the function `step` of module `cell`.
    Near misses: the class's other static method and the module's other function stay eager."""
    got = _syn6_rows(tmp_path, {
        "cell.py": _CELL,
        "run.py": "import torch\nimport cell\nfrom cell import Cell\n"
                  "scan = torch.compile(Cell.scan)\nstep = torch.compile(cell.step)\n"
                  "for _ in range(10):\n    scan(torch.randn(4)); step(torch.randn(4))\n"
                  "    Cell.spare(torch.randn(4)); cell.other(torch.randn(4))\n",
    })
    assert got == {("cell.py", 5), ("cell.py", 14)}


def test_a_function_compiled_through_its_class_in_the_same_file(tmp_path):
    """The same, with the class in the file that compiles it."""
    got = _syn6_rows(tmp_path, {
        "run.py": _CELL + "scan = torch.compile(Cell.scan, fullgraph=True)\n"
                          "for _ in range(10):\n    scan(torch.randn(4)); Cell.spare(torch.randn(4))\n",
    })
    assert got == {("run.py", 5)}


def test_a_discarded_compile_result_compiles_nothing(tmp_path):
    """`torch.compile(model)` returns a compiled wrapper and leaves `model` as it was: called
    alone, its result thrown away, it compiles nothing (DataDog's toto evaluation does this).
    Near misses: the result kept (`model = torch.compile(model)`) and nn.Module's in-place
    `model.compile()` compile the forward."""
    net = ("import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
           "        if x.sum() > 0:\n            return x\n        return -x\n")  # the branch: line 5
    run = "net = Net()\n{}\nfor _ in range(10):\n    net(torch.randn(4))\n"
    assert _syn6_rows(tmp_path, {"a.py": net + run.format("torch.compile(net, mode='max-autotune')")}) == set()
    assert _syn6_rows(tmp_path, {"b.py": net + run.format("torch.compile(mode='max-autotune')(net)")}) == set()
    assert _syn6_rows(tmp_path, {"c.py": net + run.format("net = torch.compile(net)")}) == {("c.py", 5)}
    assert _syn6_rows(tmp_path, {"d.py": net + run.format("net.compile()")}) == {("d.py", 5)}


def test_a_static_method_called_through_its_class_runs_in_the_region(tmp_path):
    """TiRex's compiled scan calls `sLSTMCellTorch.slstm_forward_pointwise(...)`, a static method
    called through its class: it runs compiled too. Near miss: a static method of the same class
    called only from eager code stays eager."""
    got = _syn6_rows(tmp_path, {
        "k.py": "import torch\nclass Cell:\n    @staticmethod\n    def scan(x: torch.Tensor):\n"
                "        return Cell.point(x)\n"
                "    @staticmethod\n    def point(x: torch.Tensor):\n"
                "        if x.sum() > 0:\n            return x\n        return -x\n"  # 8
                "    @staticmethod\n    def spare(x: torch.Tensor):\n"
                "        if x.sum() > 1:\n            return x\n        return -x\n"  # 13
                "scan = torch.compile(Cell.scan)\n"
                "for _ in range(10):\n    scan(torch.randn(3)); Cell.spare(torch.randn(3))\n",
    })
    assert got == {("k.py", 8)}


_FACTORY = (
    "import os\nimport torch\nfrom functools import wraps\n"
    "def compile(function, *args, **kwargs):\n"
    "    if os.environ.get('ENABLE_TORCH_COMPILE') == '1':\n"
    "        return torch.compile(function, *args, **kwargs)\n"
    "    return function\n"
    "def compile_lazy(fun):\n"
    "    compiled = None\n"
    "    @wraps(fun)\n"
    "    def wrapped(*args):\n"
    "        nonlocal compiled\n"
    "        if compiled is None:\n"
    "            compiled = torch.compile(fun, fullgraph=True)\n"
    "        return compiled(*args)\n"
    "    return wrapped\n"
    "def logged(fun):\n"
    "    def wrapped(*args):\n"
    "        print('call')\n"
    "        return fun(*args)\n"
    "    return wrapped\n"
)
_USES = (
    "import torch\nfrom utils import compile, compile_lazy, logged\n"
    "def norm(x: torch.Tensor):\n"
    "    if x.sum() > 0:\n"  # 4
    "        return x\n"
    "    return -x\n"
    "norm = compile(norm)\n"
    "@compile_lazy\n"
    "def gate(x: torch.Tensor):\n"
    "    return x.max().item()\n"  # 10
    "@logged\n"
    "def eager(x: torch.Tensor):\n"
    "    return x.max().item()\n"  # 13
    "def spare(x: torch.Tensor):\n"
    "    return x[x > 0]\n"  # 15
    "print(logged(spare)(torch.randn(3)))\n"
)


def test_functions_handed_to_a_compile_factory(tmp_path):
    """A function of the project that hands its parameter to `torch.compile` is a compile
    factory (stable-audio-tools' `compile(function)`, moshi's `torch_compile_lazy(fun)`, which
    compiles it in the wrapper it returns): what is passed to it, or decorated with it, is
    compiled, with the factory's options. Near misses: a decorator and a wrapper that do not
    compile (`logged`) leave their functions eager."""
    got = _syn6_rows(tmp_path, {"utils.py": _FACTORY, "model.py": _USES})
    assert got == {("model.py", 4), ("model.py", 10)}


def test_a_compile_factory_in_the_same_file(tmp_path):
    """The same, the factory and its uses in one file (and so when the file is checked alone)."""
    source = _FACTORY + _USES.split("\n", 2)[2]
    rows = {f.row for f in lint_source(source, "one.py", all_rules()) if f.code.startswith("SYN6")}
    base = _FACTORY.count("\n") - 2  # _USES's line n is line base + n here
    assert rows == {base + 4, base + 10}


def test_a_break_in_a_loop_sends_the_rest_of_its_frame_to_eager(tmp_path):
    """DIAMOND's sampler: a graph break that runs at every iteration of a loop (`g = a if s > 0
    else 0`, at the loop's top level) makes Dynamo skip the whole frame ("graph break in a
    for/while loop"): what follows it in the loop (`if s == 0:`) runs eagerly, so it gets no
    compiled finding (its eager one stays). Near misses: a break only under a condition in the
    loop (it may not happen), a break the program's flags capture (no break: `.item()` under
    `capture_scalar_outputs`), and code of another function called from the loop (its own
    frame, compiled on its own)."""
    files = {
        "net.py": "import torch\n"
                  "def helper(t: torch.Tensor):\n"
                  "    if t.sum() > 0:\n"  # 3: its own frame
                  "        return t\n"
                  "    return -t\n"
                  "def sample(x: torch.Tensor, sigmas: torch.Tensor):\n"
                  "    for s in sigmas:\n"
                  "        g = 2.0 if s > 0 else 0.0\n"  # 8: breaks at every iteration
                  "        x = x * g\n"
                  "        if s == 0:\n"  # 10: after it, in the skipped frame
                  "            x = x + 1\n"
                  "        x = helper(x)\n"
                  "    return x\n"
                  "def maybe(x: torch.Tensor, sigmas: torch.Tensor, flag: bool):\n"
                  "    for s in sigmas:\n"
                  "        if flag:\n"
                  "            x = x * (2.0 if s > 0 else 0.0)\n"  # 17: only under a condition
                  "        if s == 0:\n"  # 18: still compiled
                  "            x = x + 1\n"
                  "    return x\n"
                  "class Net(torch.nn.Module):\n"
                  "    def forward(self, x: torch.Tensor, sigmas: torch.Tensor):\n"
                  "        return sample(x, sigmas) + maybe(x, sigmas, True)\n"
                  "model = torch.compile(Net())\n",
        "captured.py": "import torch\n"
                       "torch._dynamo.config.capture_scalar_outputs = True\n"
                       "@torch.compile\n"
                       "def step(x: torch.Tensor, ws: torch.Tensor):\n"
                       "    for w in ws:\n"
                       "        n = w.item()\n"  # 6: captured, no break
                       "        if w > 0:\n"  # 7: compiled
                       "            x = x * n\n"
                       "    return x\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = check_files([str(tmp_path / n) for n in files], all_rules()).findings
    six = {(Path(f.filename).name, f.row) for f in found if f.code.startswith("SYN6")}
    assert ("net.py", 8) in six and ("net.py", 3) in six
    assert ("net.py", 10) not in six
    assert ("net.py", 17) in six and ("net.py", 18) in six
    assert ("captured.py", 7) in six


def test_an_assert_message_runs_only_when_the_assertion_fails(tmp_path):
    """fms's WordEmbedding: `assert inp.min().item() >= 0, f"... {inp.min().item()}"`. The
    message is evaluated only when the assertion fails (and then the program raises): its read
    is no graph break of the compiled step, so it gets no compiled finding. Near miss: the
    assertion's own test runs every time and is reported."""
    (tmp_path / "net.py").write_text(
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, inp: torch.Tensor):\n"
        "        assert (\n"
        "            inp.min().item() >= 0\n"  # 5: the test
        "        ), f\"negative index: {inp.min().item()}\"\n"  # 6: the message
        "        assert inp.dim() == 2, 'rank %d' % inp.sum().item()\n"  # 7: a message only
        "        return inp * 2\n"
        "model = torch.compile(Net())\n")
    found = check_files([str(tmp_path / "net.py")], all_rules()).findings
    six = {f.row for f in found if f.code.startswith("SYN6")}
    assert 5 in six
    assert 6 not in six and 7 not in six


_SAE = (
    "from abc import ABC, abstractmethod\n"
    "import torch\n"
    "from torch import nn\n"
    "REGISTRY = {}\n"
    "def register(name, cls):\n"
    "    REGISTRY[name] = cls\n"
    "class TrainingSAE(nn.Module, ABC):\n"
    "    def training_forward_pass(self, x, dead):\n"
    "        if x.sum() > 0:\n"  # 9
    "            x = -x\n"
    "        return x + self.aux_loss(x, dead)\n"
    "    @abstractmethod\n"
    "    def aux_loss(self, x, dead): ...\n"
    "    @classmethod\n"
    "    def from_dict(cls, d):\n"
    "        return REGISTRY[d['architecture']]()\n"
    "class TopKSAE(TrainingSAE):\n"
    "    def aux_loss(self, x, dead):\n"
    "        if int(dead.sum()) == 0:\n"  # 19
    "            return x.new_zeros(())\n"
    "        return x.mean()\n"
    "class Plain(nn.Module):\n"
    "    def training_forward_pass(self, x, dead):\n"
    "        return x[x > 0]\n"  # 24
    "register('topk', TopKSAE)\n"
)

_RUNNER = (
    "import torch\n"
    "from sae import TrainingSAE, Plain\n"
    "class Runner:\n"
    "{declared}"
    "    def __init__(self, cfg, override_sae: TrainingSAE | None = None):\n"
    "        if override_sae is None:\n"
    "            self.sae = {made}\n"
    "        else:\n"
    "            self.sae = override_sae\n"
    "    def run(self):\n"
    "        self.sae.training_forward_pass = torch.compile(self.sae.training_forward_pass)\n"
    "        for _ in range(10):\n"
    "            self.sae.training_forward_pass(torch.randn(4), torch.zeros(4) > 1)\n"
)


def test_an_attribute_declared_at_class_level_holds_its_class_where_its_assignments_say_nothing(tmp_path):
    """SAELens's runner declares `sae: TrainingSAE[Any]` in its class body and assigns
    `self.sae = TrainingSAE.from_dict(...)` (a classmethod whose class comes from a registry
    filled at import) or the caller's SAE: the assignments leave the value unknown, the
    declaration (PEP 526) says it is a TrainingSAE, so the compiled bound method is its
    `training_forward_pass` and the abstract `aux_loss` it calls runs each override.
    Near misses: without the declaration nothing is known (nothing compiled); an assignment
    of a known class is what the attribute holds, whatever the declaration says."""
    declared = "    sae: TrainingSAE\n"
    made = "TrainingSAE.from_dict(cfg)"
    files = {"sae.py": _SAE, "runner.py": _RUNNER.format(declared=declared, made=made)}
    assert _syn6_rows(tmp_path, files) == {("sae.py", 9), ("sae.py", 19)}
    files["runner.py"] = _RUNNER.format(declared="", made=made)
    assert _syn6_rows(tmp_path, files) == set()
    files["runner.py"] = _RUNNER.format(declared=declared, made="Plain()").replace(
        "override_sae: TrainingSAE | None", "override_sae: Plain | None")
    assert _syn6_rows(tmp_path, files) == {("sae.py", 24)}


def test_a_generic_class_of_the_project_made_concrete_in_an_annotation(tmp_path):
    """`sae: TrainingSAE[Any]` (SAELens's runner; TrainingSAE is `Generic`) promises a
    TrainingSAE as `sae: TrainingSAE` does. Near misses: `list[TrainingSAE]` is a list, and a
    subscripted class of no known kind (`Callable[..., T]`) says nothing."""
    sae = _SAE.replace("from abc import ABC, abstractmethod\n",
                       "from abc import ABC, abstractmethod\nfrom typing import Generic, TypeVar\nT = TypeVar('T')\n"
                       ).replace("class TrainingSAE(nn.Module, ABC):", "class TrainingSAE(nn.Module, Generic[T], ABC):")
    runner = _RUNNER.format(declared="    sae: TrainingSAE[Any]\n", made="TrainingSAE.from_dict(cfg)").replace(
        "import torch\n", "from typing import Any, Callable\nimport torch\n", 1)
    files = {"sae.py": sae, "runner.py": runner}
    assert _syn6_rows(tmp_path, files) == {("sae.py", 11), ("sae.py", 21)}
    files["runner.py"] = runner.replace("sae: TrainingSAE[Any]", "sae: list[TrainingSAE]").replace(
        "override_sae: TrainingSAE | None", "override_sae: Callable[..., TrainingSAE] | None")
    assert _syn6_rows(tmp_path, files) == set()


def test_a_subclass_of_a_generic_base_made_concrete(tmp_path):
    """`class TopKSAE(TrainingSAE[TopKConfig])` (SAELens's SAEs) is a TrainingSAE: the abstract
    `aux_loss` that the compiled `TrainingSAE.training_forward_pass` calls runs its override.
    Near miss: a class of the same module that only subclasses `Generic[T]` (line 30) is no
    TrainingSAE, and its `aux_loss` stays eager."""
    sae = _SAE.replace("from abc import ABC, abstractmethod\n",
                       "from abc import ABC, abstractmethod\nfrom typing import Generic, TypeVar\nT = TypeVar('T')\n"
                       ).replace("class TrainingSAE(nn.Module, ABC):", "class TrainingSAE(nn.Module, Generic[T], ABC):"
                                 ).replace("class TopKSAE(TrainingSAE):", "class TopKSAE(TrainingSAE[int]):")
    sae += ("class Loose(Generic[T]):\n    def aux_loss(self, x, dead):\n"
            "        return x[dead]\n")  # 30
    runner = _RUNNER.format(declared="", made="TopKSAE()").replace(
        "from sae import TrainingSAE, Plain", "from sae import TrainingSAE, TopKSAE, Plain")
    assert _syn6_rows(tmp_path, {"sae.py": sae, "runner.py": runner}) == {("sae.py", 11), ("sae.py", 21)}
