"""Session 41: what a compiled region reaches, decided by what the program states: a torch.nn
layer as a base class, a folder its files import relatively, an nn.ModuleDict's entries, a
registry of another module's classes, a flag left off, an abstract method's overrides. Each
test fails without its mechanism; each has its near miss."""

from pathlib import Path

from synclint.registry import all_rules
from synclint.run.runner import check_files


def _findings(tmp_path: Path, files: dict) -> list:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return check_files([str(tmp_path / n) for n in files], all_rules()).findings


def _rows(tmp_path: Path, files: dict, prefix: str = "SYN6") -> set:
    return {(Path(f.filename).name, f.row) for f in _findings(tmp_path, files) if f.code.startswith(prefix)}


_SKIPPABLE = (
    "import torch\n"
    "from torch import nn\n"
    "import torch.nn.functional as F\n"
    "class SkippableLinear(nn.Linear):\n"
    "    def forward(self, src):\n"
    "        out = F.linear(src, self.weight, self.bias)\n"
    "        skip = (src == -100.0).all(dim=-1)\n"
    "        if skip.any():\n"  # 8
    "            out[skip] = -100.0\n"
    "        return out\n"
    "class Scaled(torch.nn.LayerNorm):\n"
    "    def forward(self, x):\n"
    "        return super().forward(x) * x.max().item()\n"  # 13
)


def test_a_subclass_of_a_torch_layer_is_a_module(tmp_path):
    """TabICL's `SkippableLinear(nn.Linear)`, held as `self.in_linear`: a subclass of a torch.nn
    layer is an nn.Module, so calling it in a compiled forward runs its `forward`. Near miss: the
    other layer subclass, held but never called, stays eager."""
    got = _rows(tmp_path, {
        "layers.py": _SKIPPABLE,
        "model.py": "import torch\nfrom layers import SkippableLinear, Scaled\n"
                    "class Net(torch.nn.Module):\n"
                    "    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        self.in_linear = SkippableLinear(4, 4)\n"
                    "        self.norm = Scaled(4)\n"
                    "    def forward(self, x):\n"
                    "        return self.in_linear(x)\n"
                    "model = torch.compile(Net())\n",
    })
    assert got == {("layers.py", 8)}


def test_a_subclass_of_a_torch_parameter_is_no_module(tmp_path):
    """Near miss: `nn.Parameter` and `nn.functional` are under torch.nn but make no module: a
    class deriving from `nn.Parameter` held in an attribute is not called as a module."""
    got = _rows(tmp_path, {
        "m.py": "import torch\nfrom torch import nn\n"
                "class Gain(nn.Parameter):\n"
                "    def __call__(self, x):\n"
                "        return x * self\n"
                "    def forward(self, x):\n"
                "        return x[x > 0]\n"  # 7: never runs (no nn.Module call)
                "class Net(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.gain = Gain(torch.ones(4))\n"
                "    def forward(self, x):\n"
                "        return self.gain(x)\n"
                "model = torch.compile(Net())\n",
    })
    assert ("m.py", 7) not in got


def test_a_folder_its_files_import_from_relatively_is_a_package(tmp_path):
    """LLM-baselines' `src/models/` and `src/optim/` have no `__init__.py`; `models/utils.py`
    imports `from .base import GPTBase` and `main.py` `from models.utils import get_model`: it
    is a namespace package, so `models/base.py` is `models.base`, not a top-level `base` that
    `optim/base.py` shadows, and the model `optim.base.train` compiles is found. Near miss: a
    folder without `__init__.py` whose files import nothing relatively holds top-level modules
    (`optim/base.py` stays `base`: an absolute import from outside is not read)."""
    from synclint.project import module_names

    files = {
        "src/models/base.py": "import torch\nclass GPTBase(torch.nn.Module):\n    def forward(self, x):\n"
                              "        return x[x > 0]\n",  # 4
        "src/models/utils.py": "from .base import GPTBase\ndef get_model(args):\n    return GPTBase()\n",
        "src/optim/base.py": "import torch\ndef train(model, cfg):\n    if cfg.compile:\n"
                             "        model = torch.compile(model)\n    return model(torch.randn(3))\n",
        "src/main.py": "from models.utils import get_model\nfrom optim.base import train\n"
                       "def main(args):\n    train(model=get_model(args), cfg=args)\n",
        "scripts/helpers.py": "X = 1\n",
        "scripts/run.py": "import helpers\nprint(helpers.X)\n",
    }
    assert _rows(tmp_path, files) == {("base.py", 4)}
    names = module_names([str(tmp_path / p) for p in files])
    assert sorted(names.values()) == ["base", "helpers", "main", "models.base", "models.utils", "run"]


_GPT = (
    "import torch\n"
    "from torch import nn\n"
    "class Block(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x[x > 0]\n"  # 5
    "class Norm(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x / x.max().item()\n"  # 8
    "class Spare(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x.nonzero()\n"  # 11
    "class GPT(nn.Module):\n"
    "    def __init__(self, n):\n"
    "        super().__init__()\n"
    "        self.transformer = nn.ModuleDict(dict(\n"
    "            wte=nn.Embedding(10, 4),\n"
    "            h=nn.ModuleList([Block() for _ in range(n)]),\n"
    "            spare=Spare(),\n"
    "        ))\n"
    "        self.heads = nn.ModuleDict({'ln_f': Norm()})\n"
    "    def forward(self, x):\n"
    "        for block in self.transformer.h:\n"
    "            x = block(x)\n"
    "        return self.heads['ln_f'](x)\n"
    "model = torch.compile(GPT(2))\n"
)


def test_a_module_dicts_entries_are_its_submodules(tmp_path):
    """nanoGPT's layout, which LLM-baselines keeps: `self.transformer = nn.ModuleDict(dict(h=
    nn.ModuleList([Block(config) ...])))`, then `for block in self.transformer.h: x = block(x)`
    in the compiled forward: the entry `h` is that ModuleList, so each Block's forward is
    compiled; `self.heads["ln_f"](x)` runs the entry's forward too. Near miss: the entry the
    forward never reads (`spare`) stays eager."""
    got = _rows(tmp_path, {"gpt.py": _GPT})
    assert got == {("gpt.py", 5), ("gpt.py", 8)}


_BACKENDS = {
    "distributed/__init__.py": "from . import ddp, single\n"
                               "BACKENDS = {'nccl': ddp.DataParallelBackend, None: single.SingleNodeBackend}\n"
                               "def make_backend(args):\n"
                               "    return BACKENDS[args.backend](args)\n",
    "distributed/base.py": "class Backend:\n"
                           "    def __init__(self, args):\n"
                           "        self.args = args\n"
                           "    def transform_model(self, model):\n"
                           "        raise NotImplementedError\n"
                           "    def describe(self, model):\n"
                           "        return str(model)\n",
    "distributed/single.py": "from .base import Backend\n"
                             "class SingleNodeBackend(Backend):\n"
                             "    def transform_model(self, model):\n"
                             "        return model\n",
    "distributed/ddp.py": "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                          "from .base import Backend\n"
                          "class DataParallelBackend(Backend):\n"
                          "    def transform_model(self, model):\n"
                          "        return DDP(model, device_ids=[0])\n",
    "net.py": "import torch\n"
              "class Net(torch.nn.Module):\n"
              "    def forward(self, x):\n"
              "        return x[x > 0]\n",  # 4
}


def test_a_model_passed_through_a_backend_picked_from_a_registry(tmp_path):
    """LLM-baselines' `distributed_backend = distributed.make_backend_from_args(args)` (a dict
    of backend classes named through their modules, `ddp.DataParallelDistributedBackend`), then
    `model = distributed_backend.transform_model(model)`: whichever backend it is, the method
    gives the model back (as is, or wrapped in DDP), so compiling the result compiles the model.
    Near miss: a method of the same backends that returns something else makes no region."""
    files = dict(_BACKENDS)
    files["train.py"] = ("import torch\nimport distributed\nfrom net import Net\n"
                         "def main(args):\n"
                         "    backend = distributed.make_backend(args)\n"
                         "    model = backend.transform_model(Net())\n"
                         "    model = torch.compile(model)\n"
                         "    return model(torch.randn(3))\n")
    assert _rows(tmp_path / "a", files) == {("net.py", 4)}
    files["train.py"] = files["train.py"].replace("backend.transform_model(Net())", "backend.describe(Net())")
    assert _rows(tmp_path / "b", files) == set()


_EMBEDDING = (
    "import torch\n"
    "class WordEmbedding(torch.nn.Module):\n"
    "    def __init__(self, n, debug=False):\n"
    "        super().__init__()\n"
    "        self.emb = torch.nn.Embedding(n, 4)\n"
    "        self.debug = debug\n"
    "    def forward(self, inp):\n"
    "        if self.debug:\n"
    "            assert inp.min().item() >= 0\n"  # 9
    "        return self.emb(inp)\n"
)


def test_a_branch_on_a_flag_that_is_off_is_not_traced(tmp_path):
    """fms's `WordEmbedding(..., debug=False)`: `if self.debug:` guards two `.item()` asserts,
    and nothing in the program turns the flag on. Dynamo specialises on the Python value and
    never traces the branch: no compiled finding. Near misses: the same class built with
    `debug=True` somewhere, or with a flag the program reads at run time, is reported."""
    def rows(sub, made):
        return _rows(tmp_path / sub, {
            "emb.py": _EMBEDDING,
            "train.py": "import torch\nfrom emb import WordEmbedding\n"
                        f"def main(args):\n    model = torch.compile({made})\n"
                        "    return model(torch.zeros(3, dtype=torch.long))\n",
        })

    assert rows("off", "WordEmbedding(10)") == set()
    assert rows("on", "WordEmbedding(10, debug=True)") == {("emb.py", 9)}
    assert rows("args", "WordEmbedding(10, debug=args.debug)") == {("emb.py", 9)}


_STRATEGY = (
    "from abc import abstractmethod\n"
    "import torch\n"
    "from torch import nn\n"
    "from tp import apply_tp\n"
    "class Strategy:\n"
    "    @abstractmethod\n"
    "    def distribute_layer(self, block: nn.Module, layer: int) -> nn.Module:\n"
    "        \"\"\"Distribute each layer as appropriate.\"\"\"\n"
    "        pass\n"
    "class NotDistributed(Strategy):\n"
    "    def distribute_layer(self, block: nn.Module, layer: int) -> nn.Module:\n"
    "        return block\n"
    "class TensorParallel(Strategy):\n"
    "    def distribute_layer(self, block: nn.Module, layer: int) -> nn.Module:\n"
    "        return apply_tp(block)\n"
    "NoOp = NotDistributed()\n"
)


def _llama(block_source: str) -> dict:
    return {
        "tp.py": "import fairscale\ndef apply_tp(model, group=None):\n    return fairscale.parallelize(model, group)\n",
        "strategy.py": _STRATEGY,
        "llama.py": "import torch\nfrom torch import nn\nfrom strategy import Strategy, NoOp\n"
                    f"{block_source}"
                    "class LLaMA(nn.Module):\n"
                    "    def __init__(self, n, distributed_strategy: Strategy = NoOp):\n"
                    "        super().__init__()\n"
                    "        self.layers = []\n"
                    "        for i in range(n):\n"
                    "            block = LLaMABlock()\n"
                    "            block = distributed_strategy.distribute_layer(block, i)\n"
                    "            self.layers.append(block)\n"
                    "        self.layers = nn.ModuleList(self.layers)\n"
                    "    def forward(self, x):\n"
                    "        for layer in self.layers:\n"
                    "            x = layer(x)\n"
                    "        return x\n"
                    "model = torch.compile(LLaMA(2))\n",
    }


def test_an_abstract_method_returns_what_its_overrides_return(tmp_path):
    """fms's `block = self.distributed_strategy.distribute_layer(block, i)`: the base's method is
    `@abstractmethod` (a docstring and `pass`) annotated `-> nn.Module`, so the call runs an
    override, and the block it gives back (`NotDistributed` returns it as is; a tensor-parallel
    wrapper's class is not known) is a LLaMABlock: its forward is compiled. Near miss: with no
    override naming a class, the layers stay unknown."""
    block = ("class LLaMABlock(nn.Module):\n    def forward(self, x):\n"
             "        return x * x.max().item()\n")  # 6
    assert _rows(tmp_path / "a", _llama(block)) == {("llama.py", 6)}
    files = _llama(block)
    files["strategy.py"] = files["strategy.py"].replace("        return block\n", "        return apply_tp(block)\n")
    assert _rows(tmp_path / "b", files) == set()


def test_a_relative_import_that_climbs_into_a_source_root_does_not_rename_its_packages(tmp_path):
    """mmdetection3d's `projects/NeRF-Det/prepare_infos.py` imports `from ...tools.dataset_converters
    import ...`, three dots up to the tree's root, which holds the regular package `mmdet3d/`:
    that root is where absolute imports start, not a namespace package, so `mmdet3d/models/a.py`
    stays `mmdet3d.models.a` (named `mmdetection3d.mmdet3d.models.a`, no `from mmdet3d...`
    import of the project resolved). The folders below it that the import climbs through
    (`projects/NeRF-Det`, `projects`) are still packages."""
    from synclint.project import module_names

    files = {
        "mmdet3d/__init__.py": "",
        "mmdet3d/models/__init__.py": "",
        "mmdet3d/models/a.py": "X = 1\n",
        "projects/NeRF-Det/prepare_infos.py": "from ...tools.convert import run\n",
        "tools/convert.py": "def run():\n    pass\n",
    }
    for p, text in files.items():
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text(text)
    names = module_names([str(tmp_path / p) for p in files])
    assert names[str(tmp_path / "mmdet3d/models/a.py")] == "mmdet3d.models.a"
    assert names[str(tmp_path / "projects/NeRF-Det/prepare_infos.py")] == "projects.NeRF-Det.prepare_infos"
