import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._data_dependent import arg
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import RECEIVER


class BincountCall(Rule):
    """
    ## What it does
    Flags `torch.bincount(x)` and `x.bincount()` on GPU tensors, with or without `minlength`.

    ## Why is this bad?
    The output length is `max(x) + 1` (at least `minlength`), so the CUDA implementation
    copies the input's minimum and maximum to the host before it can allocate
    (`cuda/SummaryOps.cu::_bincount_cuda_template`: `self.min().cpu()`,
    `self.max().cpu()`). That waits for every queued kernel, and `minlength` does not
    avoid it: the maximum is read either way.
    Measured with `synclint bench` on an H200 (torch 2.11, 2026-11-26):
    1e6 values, 1000 bins, 87.7 us against 58.9 us for `index_add_`.

    ## Use instead
    When the values are known to lie in `range(K)`, count into a fixed-size tensor:

    ```python
    counts = torch.zeros(K, dtype=torch.long, device=x.device).index_add_(0, x, torch.ones_like(x))
    # weighted: torch.zeros(K, device=x.device).index_add_(0, x, w)
    ```

    Out-of-range values are then no longer reported on the host (`index_add_` checks
    indices with a device-side assert).
    """

    CODE = "SYN207"
    NAME = "bincount-call"
    CALLS = frozenset({"bincount"})
    MESSAGE = "`{call}` reads the input's minimum and maximum back to the host to size its output"
    FIX_TITLE = "Count into `torch.zeros(K, ...).index_add_(0, x, ones)` when values lie in `range(K)`"
    CATALOGUE = ("C6",)
    VALID = [
        Valid("import torch\nx = torch.randint(0, 5, (10,))\nfor _ in range(3):\n    c = torch.bincount(x, minlength=5)\n"),
        Valid("import numpy as np\nx = np.array([0, 1, 1])\nfor _ in range(3):\n    c = np.bincount(x)\n"),
        Valid(
            "import torch\nx = torch.randint(0, 5, (10,), device='cuda')\nfor _ in range(3):\n"
            "    c = torch.zeros(5, dtype=torch.long, device='cuda').scatter_add_(0, x, torch.ones_like(x))\n"
        ),
        Valid("import torch\nx = torch.randint(0, 5, (10,), device='cuda').cpu()\nfor _ in range(3):\n    c = x.bincount()\n"),
        Valid(
            "import torch\n"
            "def targets_of(batch):\n"
            "    return batch[1]\n"
            "for batch in torch.utils.data.DataLoader(ds, batch_size=8):\n"
            "    hist = targets_of(batch).bincount(minlength=10)\n",
        ),
        Valid(
            "import torch\n"
            "class ClassBalance(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.labels = torch.randint(0, 5, (10,), device='cuda')\n"
            "    def forward(self, x):\n"
            "        counts = torch.zeros(5, device=x.device).index_add_(0, self.labels, torch.ones(10, device=x.device))\n"
            "        return x / counts\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return torch.bincount(y)\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return torch.bincount(x.long())\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randint(0, 5, (10,), device='cuda')\nfor _ in range(3):\n    c = torch.bincount(x, minlength=5)\n",
            line=4,
            hot=True,
            message="`torch.bincount(x, minlength=5)` reads the input's minimum and maximum back to the host to size its output",
        ),
        Invalid(
            "import torch\ndef training_step(batch):\n    x, y = batch\n    hist = y.bincount()\n    return hist\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def targets_of(batch):\n"
            "    return batch[1].to('cuda')\n"
            "for batch in torch.utils.data.DataLoader(ds, batch_size=8):\n"
            "    hist = targets_of(batch).bincount(minlength=10)\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class ClassBalance(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.labels = torch.randint(0, 5, (10,), device='cuda')\n"
            "    def forward(self, x):\n"
            "        return x / torch.bincount(self.labels, minlength=5)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="x = torch.randint(0, k, (n,), device=device)\n",
        flagged="def flagged(x, k):\n    return torch.bincount(x, minlength=k)\n",
        fixed=(
            "def fixed(x, k):\n"
            "    return torch.zeros(k, dtype=torch.long, device=x.device).index_add_(0, x, torch.ones_like(x))\n"
        ),
        sizes={"n": 1_000_000, "k": 1000},
        condition="the values are known to lie in range(k)",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, ("bincount",)) and ctx.qualname(node.func) is None:
            if ctx.gpu(receiver(node), RECEIVER) is not None:
                self.report(node, call=short(node))
        elif ctx.torch_name(node.func) == "bincount":
            x = arg(node, 0, "input")
            if x is not None and ctx.gpu(x, RECEIVER) is not None:
                self.report(node, call=short(node))
