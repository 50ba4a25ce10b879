"""What a compiled region runs, decided by the program's state where the compiled
value is called: the module's training mode (`semantic.trainmode`). Each test fails without
its mechanism; each has its near misses."""

from pathlib import Path

from synclint.registry import all_rules
from synclint.run.runner import check_files


def _rows(tmp_path: Path, files: dict, prefix: str = "SYN6") -> set:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = check_files([str(tmp_path / n) for n in files], all_rules()).findings
    return {(Path(f.filename).name, f.row) for f in found if f.code.startswith(prefix)}


_MODEL = (
    "import torch\n"
    "from torch import nn\n"
    "class Head(nn.Module):\n"
    "    def forward(self, x):\n"
    "        if self.training:\n"
    "            return x * x.max().item()\n"  # 6: training only
    "        return self.infer(x)\n"
    "    def infer(self, x):\n"
    "        return x * x.min().item()\n"  # 9: eval only (reached from the else)
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.head = Head()\n"
    "    def forward(self, x):\n"
    "        if not self.training:\n"
    "            print(x.sum().item())\n"  # 16: eval only
    "        return self.head(x)\n"
)

_TRAINER = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from model import Net\n"
    "class Trainer:\n"
    "    def __init__(self, ddp):\n"
    "        model = Net()\n"
    "        model = torch.compile(model)\n"
    "        if ddp:\n"
    "            self.model = DDP(model)\n"
    "        else:\n"
    "            self.model = model\n"
    "    def step(self, x):\n"
    "        return self.model(x)\n"
    "    def run(self, xs):\n"
    "        SET\n"
    "        for x in xs:\n"
    "            self.step(x)\n"
)


def test_the_branch_of_self_training_the_callers_mode_never_takes(tmp_path):
    """TabICL's Trainer compiles the model into `self.model`, calls `self.model.train()` in
    `run_batch` and then the compiled model in `run_micro_batch`: `ICLearning.forward`'s `else`
    of `if self.training:` (its inference path, and everything only it calls) is never traced.
    Dynamo guards on `self.training`, and `.train()` is recursive. Near misses: in eval mode the
    other branches are the region; a mode set under a condition, one the trainer's other
    methods undo, a step called from outside the class, the model passed away (to a function
    of the project, in a list) or called another way in eval mode (its `forward`, through a
    library, through another attribute holding it) leave the mode unknown (every branch, as
    before)."""
    def rows(sub, set_line="self.model.train()", extra=""):
        return _rows(tmp_path / sub, {"model.py": _MODEL,
                                      "train.py": _TRAINER.replace("SET", set_line) + extra})

    everything = {("model.py", 6), ("model.py", 9), ("model.py", 16)}
    assert rows("train") == {("model.py", 6)}
    assert rows("train-false", "self.model.train(False)") == {("model.py", 9), ("model.py", 16)}
    assert rows("eval", "self.model.eval()") == {("model.py", 9), ("model.py", 16)}
    assert rows("cond", "if xs: self.model.train()") == everything
    assert rows("none", "pass") == everything
    assert rows("undone", extra="    def validate(self, x):\n        self.model.eval()\n"
                                "    def run2(self, xs):\n        self.model.train()\n"
                                "        self.validate(xs)\n        self.step(xs)\n") == everything
    assert rows("outside", extra="def main(x):\n    Trainer(False).step(x)\n") == everything
    assert rows("passed", extra="    def evaluate(self, x):\n        return score(self.model, x)\n"
                                "def score(m, x):\n    return m(x)\n") == everything
    assert rows("sub", extra="    def freeze(self):\n        self.model.head.eval()\n") == everything
    assert rows("forward", extra="    def infer(self, x):\n        self.model.eval()\n"
                                 "        return self.model.forward(x)\n") == everything
    assert rows("library", extra="    def infer(self, x):\n        self.model.eval()\n"
                                 "        return torch.utils.checkpoint.checkpoint(self.model, x)\n") == everything
    assert rows("alias", extra="    def infer(self, x):\n        self.raw = self.model.module\n"
                               "        self.raw.eval()\n        return self.raw(x)\n") == everything
    assert rows("listed", extra="    def models(self):\n        self.all = [self.model]\n") == everything


_CONFIG = (
    "import argparse\n"
    "def str2bool(v):\n"
    "    return v.lower() in ('true', '1')\n"
    "def build_parser():\n"
    "    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--ignore_d', OPTION)\n"
    "    parser.add_argument('--lr', default=1e-3, type=float)\n"
    "    return parser\n"
)

_NET = (
    "from typing import Optional\n"
    "import torch\n"
    "from torch import nn\n"
    "class Net(nn.Module):\n"
    "    def forward(self, x, d: Optional[torch.Tensor] = None):\n"
    "        return self._inner(x, d=d)\n"
    "    def _inner(self, x, d: Optional[torch.Tensor] = None):\n"
    "        if d is not None and len(d.unique()) == 1:\n"  # 8
    "            d = None\n"
    "        if d is None:\n"
    "            return x\n"
    "        else:\n"
    "            d = d + 1\n"
    "            return x * d.max().item()\n"  # 14
)

_TRAIN = (
    "import torch\n"
    "from config import build_parser\n"
    "from net import Net\n"
    "class Trainer:\n"
    "    def __init__(self, config):\n"
    "        self.config = config\n"
    "        self.model = torch.compile(Net())\n"
    "    def step(self, x, d):\n"
    "        model_d = None if self.config.ignore_d else d\n"
    "        return self.model(x, model_d)\n"
    "def main():\n"
    "    config = build_parser().parse_args()\n"
    "    EXTRA\n"
    "    Trainer(config).step(torch.zeros(3), torch.ones(3))\n"
)


def test_a_command_line_default_decides_an_argument_of_the_compiled_model(tmp_path):
    """TabICL's trainer passes `model_d = None if self.config.ignore_d else micro_d`, and
    `--ignore_d` defaults to True (`type=str2bool`): the compiled model's `d` is None, so
    `if d is not None and len(d.unique()) == 1:` is never traced past its first operand, and
    the `else` of `if d is None:` never runs (whatever the branch rebinds `d` to). Near misses:
    a False default, a default that is not a constant, two parsers that disagree, a program
    that sets the option itself, and another call that passes `d`, are reported as before."""
    def rows(sub, option="default=True, type=str2bool", extra="pass"):
        return _rows(tmp_path / sub, {"config.py": _CONFIG.replace("OPTION", option),
                                      "net.py": _NET, "train.py": _TRAIN.replace("EXTRA", extra)})

    everything = {("net.py", 8), ("net.py", 14)}
    assert rows("on") == set()
    assert rows("store-false", "action='store_false'") == set()
    assert rows("off", "default=False, type=str2bool") == everything
    assert rows("store-true", "action='store_true'") == everything
    assert rows("named", "default=bool(1), type=str2bool") == everything
    assert rows("two", "default=True, type=str2bool)\n    parser.add_argument('--ignore-d', default=False") == everything
    assert rows("set", extra="config.ignore_d = False") == everything
    assert rows("setattr", extra="setattr(config, 'ignore_d', False)") == everything
    assert rows("vars", extra="vars(config).update(ignore_d=False)") == everything
    assert rows("given", extra="net = Net(); net(torch.zeros(3), torch.ones(3))") == everything


_MOE = (
    "import torch\n"
    "from torch import nn\n"
    "class Config:\n"
    "    def __init__(self, hidden=8, use_moe=False, **kwargs):\n"
    "        self.hidden = hidden\n"
    "        self.use_moe = use_moe\n"
    "class FF(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x\n"
    "class MoE(nn.Module):\n"
    "    def forward(self, x):\n"
    "        mask = x > 0\n"
    "        if mask.any():\n"  # 13
    "            x = x * 2\n"
    "        return x\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, config: Config):\n"
    "        super().__init__()\n"
    "        self.mlp = MoE() if config.use_moe else FF()\n"
    "    def forward(self, x):\n"
    "        return self.mlp(x)\n"
    "class Net(nn.Module):\n"
    "    def __init__(self, config: Config = None):\n"
    "        super().__init__()\n"
    "        self.config = config or Config()\n"
    "        self.block = Block(self.config)\n"
    "    def forward(self, x):\n"
    "        return self.block(x)\n"
)


def test_a_flag_forwarded_through_a_subclass_constructor(tmp_path):
    """minimind-v's `self.mlp = FeedForward(config) if not config.use_moe else
    MOEFeedForward(config)`: `use_moe=False` is `MiniMindConfig.__init__`'s default, and the
    program passes `use_moe=bool(args.use_moe)` to its subclass `VLMConfig`, whose
    `super().__init__(**kwargs)` forwards it. A known test picks a conditional expression's
    branch, so the default alone would take the MoE (and its `if mask.any():`) out of the
    model: the forwarded keywords bind the base's parameters. Near miss: where no call passes
    `use_moe` (the subclass forwards only `hidden`), the flag is off and the MoE not built."""
    def rows(sub, made, forwards="**kwargs"):
        return _rows(tmp_path / sub, {
            "model.py": _MOE,
            "vlm.py": "from model import Config\nclass VLMConfig(Config):\n"
                      "    def __init__(self, image_ids=(1,), **kwargs):\n"
                      f"        self.image_ids = image_ids\n        super().__init__({forwards})\n",
            "train.py": "import torch\nfrom model import Net\nfrom vlm import VLMConfig\n"
                        f"def main(args):\n    model = torch.compile(Net({made}))\n"
                        "    return model(torch.zeros(3))\n",
        })

    assert rows("forwarded", "VLMConfig(hidden=8, use_moe=bool(args.use_moe))") == {("model.py", 13)}
    assert rows("on", "VLMConfig(use_moe=True)") == {("model.py", 13)}
    assert rows("off", "VLMConfig(hidden=8)", forwards="hidden=4") == set()


def test_a_flag_that_chooses_a_device_chooses_either(tmp_path):
    """`device = "cuda" if args.cuda else "cpu"` with `--cuda` a `store_true` option: its
    default is off, but a GPU run passes it (as a device option's CPU default, `arguments`):
    the tensors it makes may be on the GPU, and their syncs are reported (the flag choosing a
    None, `test_a_command_line_default_decides_an_argument_of_the_compiled_model`, is known)."""
    found = _rows(tmp_path, {"train.py": (
        "import argparse\n"
        "import torch\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--cuda', action='store_true')\n"
        "    args = parser.parse_args()\n"
        "    device = 'cuda' if args.cuda else 'cpu'\n"
        "    x = torch.zeros(3, device=device)\n"
        "    for _ in range(10):\n"
        "        print(x.sum().item())\n"  # 10
    )}, prefix="SYN1")
    assert ("train.py", 10) in found
