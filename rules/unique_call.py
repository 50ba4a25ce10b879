import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._data_dependent import arg
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import RECEIVER

_NAMES = ("unique", "unique_consecutive")


class UniqueCall(Rule):
    """
    ## What it does
    Flags `torch.unique`, `torch.unique_consecutive` and their tensor methods on GPU
    tensors.

    ## Why is this bad?
    The number of distinct values sizes the output, and only the GPU knows it: the CUDA
    implementation sorts, counts, then reads the count back
    (`cuda/Unique.cu`: `num_out_tensor.item() // synchronization happens here`). Every
    kernel queued before it must finish, and the CPU cannot queue more work meanwhile.
    Measured with `synclint bench` on an H200 (torch 2.11, 2026-11-26):
    counts of 1e6 values in `range(1000)`, `unique(return_counts=True)` 171 us against 63 us
    for `index_add_`.

    ## Use instead
    There is no general replacement. When the values come from a known domain
    `range(K)` and what you need is counts or presence, keep a fixed size:

    ```python
    counts = torch.zeros(K, dtype=torch.long, device=x.device).index_add_(0, x, torch.ones_like(x))
    present = counts > 0                      # a mask instead of the list of unique values
    ```

    Otherwise compute the unique values once, outside the loop.

    ## Known problems
    Every site is reported, tagged hot or cold: a one-time `unique` at setup (a vocabulary,
    the label set) costs one sync and has no alternative worth the change, so `--hot-only`
    leaves it out. Cold sites are kept because the hot/cold tag can be wrong where a framework
    calls the code every step (detectron2's `_log_classification_stats`, reached from a loss
    that the model only reaches through its trainer, is such a case). The `.unique()` method is
    flagged only on values known to be tensors, since pandas and TorchScript graph values
    share the name.
    """

    CODE = "SYN205"
    NAME = "unique-call"
    CALLS = frozenset(_NAMES)
    MESSAGE = "`{call}` has a data-dependent size, so the host waits for the GPU to count the unique values"
    FIX_TITLE = "Count into a fixed-size tensor (`zeros(K).index_add_`) when values lie in `range(K)`, or hoist the call out of the loop"
    CATALOGUE = ("C4",)
    VALID = [
        Valid("import torch\nlabels = torch.randint(0, 5, (100,), device='cuda')\nclasses = torch.unique(labels)\n", cold=True),
        Valid("import torch\nx = torch.randint(0, 5, (10,))\nfor _ in range(3):\n    u = x.unique()\n"),
        Valid("import pandas as pd\nfor df in [pd.DataFrame({'a': [1]})]:\n    u = df['a'].unique()\n"),
        Valid("import torch\ndef rename(graph):\n    for v in graph.outputs():\n        name = f'out_{v.unique()}'\n"),
        Valid(
            "import torch\nx = torch.randint(0, 5, (10,), device='cuda')\nfor _ in range(3):\n"
            "    c = torch.zeros(5, dtype=torch.long, device='cuda').index_add_(0, x, torch.ones_like(x))\n"
        ),
        Valid(
            "import torch\n"
            "def labels_of(batch):\n"
            "    return batch[1]\n"
            "for batch in torch.utils.data.DataLoader(ds, batch_size=8):\n"
            "    classes = labels_of(batch).unique()\n",
        ),
        Valid(
            "import torch\n"
            "class Counter(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ids = torch.randint(0, 5, (10,))\n"
            "    def forward(self, x):\n"
            "        return torch.unique(self.ids)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return torch.unique(y)\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return torch.unique(x)\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randint(0, 5, (10,), device='cuda')\nfor _ in range(3):\n"
            "    vals, counts = torch.unique(x, return_counts=True)\n",
            line=4,
            hot=True,
            message="`torch.unique(x, return_counts=True)` has a data-dependent size, so the host waits for the GPU to count the unique values",
        ),
        Invalid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, ids):\n        return ids.unique_consecutive()\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def labels_of(batch):\n"
            "    return batch[1].cuda()\n"
            "for batch in torch.utils.data.DataLoader(ds, batch_size=8):\n"
            "    classes = labels_of(batch).unique()\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Counter(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ids = torch.randint(0, 5, (10,), device='cuda')\n"
            "    def forward(self, x):\n"
            "        return torch.unique(self.ids)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "x = torch.cat([torch.arange(k, device=device), torch.randint(0, k, (n,), device=device)])\n"
        ),
        flagged="def flagged(x):\n    return torch.unique(x, return_counts=True)[1]\n",
        fixed=(
            "def fixed(x, k):\n"
            "    return torch.zeros(k, dtype=torch.long, device=x.device).index_add_(0, x, torch.ones_like(x))\n"
        ),
        sizes={"n": 1_000_000, "k": 1000},
        condition="the values lie in range(k) and every value occurs (unique omits absent values); only counts are needed",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, _NAMES) and ctx.qualname(node.func) is None:
            # `.unique()` is a common name (pandas, TorchScript graph values): known tensors only.
            recv = receiver(node)
            if ctx.is_tensor(recv) and ctx.gpu(recv, RECEIVER) is not None:
                self.report(node, call=short(node))
        elif ctx.torch_name(node.func) in _NAMES:
            x = arg(node, 0, "input")
            if x is not None and ctx.gpu(x, RECEIVER) is not None:
                self.report(node, call=short(node))
