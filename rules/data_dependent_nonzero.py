import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import arg, has_star
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import RECEIVER


class DataDependentNonzero(Rule):
    """
    ## What it does
    Flags `torch.nonzero`, `torch.argwhere`, one-argument `torch.where(c)` and the
    `.nonzero()`/`.argwhere()` methods on GPU tensors.

    ## Why is this bad?
    The number of rows in the result is the number of nonzero elements, which only the
    GPU knows. The CUDA kernel counts them with cub, copies the count to the host and
    waits for the stream (`Nonzero.cu::nonzero_cuda_out_impl` -> `memcpy_and_sync`), so
    every kernel queued before it must finish. One-argument `where(c)` is
    `nonzero(c, as_tuple=True)`. On an H200, 1e6 elements: `where(c)` 40.4 us against
    14.4 us for a 3-argument `where`, and (`synclint bench`, torch 2.11, 2026-11-26)
    `nonzero` 37.0 us against 21.3 us for `nonzero_static`.

    ## Use instead
    Keep the mask and select with it, or compact with a known bound:

    ```python
    y = torch.where(c, x, 0)                                  # instead of x[torch.where(c)]
    n = torch.count_nonzero(c)                                # a GPU tensor, no sync
    idx = torch.nonzero_static(c, size=K, fill_value=-1)     # K: a bound known on the host
    ```

    `nonzero_static` pads with `fill_value` (or truncates) to exactly `K` rows; it is
    equivalent only when at most `K` elements are nonzero and the padding is handled.
    Its CUDA kernel needs a recent torch (2.6 or later).
    """

    CODE = "SYN203"
    NAME = "data-dependent-nonzero"
    CALLS = frozenset({"nonzero", "argwhere", "where"})
    MESSAGE = "`{call}` has a data-dependent size, so the host waits for the GPU to count the nonzero elements"
    FIX_TITLE = "Keep the mask (3-argument `torch.where`), or use `torch.nonzero_static(..., size=K)` when a bound `K` is known"
    CATALOGUE = ("C1",)
    VALID = [
        Valid("import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    y = torch.where(x > 0.5, x, 0.0)\n"),
        Valid("import numpy as np\nm = np.arange(5) > 2\nfor _ in range(3):\n    (i,) = np.where(m)\n    j = np.nonzero(m)\n    k = m.nonzero()\n"),
        Valid(
            "import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    n = torch.count_nonzero(x)\n"
            "    i = torch.nonzero_static(x, size=4)\n"
        ),
        Valid("import torch\nx = torch.rand(10)\nfor _ in range(3):\n    i = x.nonzero()\n    j = torch.where(x > 0.5)\n"),
        Valid(
            "import torch\nclass DS(torch.utils.data.Dataset):\n    def __getitem__(self, i):\n"
            "        return torch.nonzero(self.labels[i])\n"
        ),
        Valid(
            "import torch\n"
            "def positives(scores):\n"
            "    return scores > 0.5\n"
            "scores = torch.rand(16)\n"
            "for _ in range(3):\n"
            "    idx = positives(scores).nonzero()\n",
        ),
        Valid(
            "import torch\n"
            "class Anchors(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.iou = torch.rand(8, 4, device='cuda')\n"
            "    def forward(self):\n"
            "        return torch.where(self.iou > 0.5, self.iou, 0.0)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return (x > 0).nonzero()\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return x.nonzero()\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    (i,) = torch.where(x > 0.5)\n",
            line=4,
            hot=True,
            message="`torch.where(x > 0.5)` has a data-dependent size, so the host waits for the GPU to count the nonzero elements",
        ),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return (x > 0).nonzero(as_tuple=True)\n", line=4, hot=True),
        Invalid("import torch\nx = torch.rand(10, device='cuda')\nidx = torch.argwhere(x)\n", line=3, hot=False),
        Invalid(
            "import torch\n"
            "def positives(scores):\n"
            "    return scores > 0.5\n"
            "scores = torch.rand(16, device='cuda')\n"
            "for _ in range(3):\n"
            "    idx = positives(scores).nonzero()\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Anchors(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.iou = torch.rand(8, 4, device='cuda')\n"
            "    def forward(self):\n"
            "        return torch.nonzero(self.iou > 0.5)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="x = torch.rand(n, device=device)\nmask = x > 0.5\nk = int(mask.sum())\n",
        flagged="def flagged(mask):\n    return torch.nonzero(mask)\n",
        fixed="def fixed(mask, k):\n    return torch.nonzero_static(mask, size=k)\n",
        sizes={"n": 1_000_000},
        condition="the number of nonzero elements (or a bound, with padding handled) is known on the host",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, ("nonzero", "argwhere")) and ctx.qualname(node.func) is None:
            if ctx.gpu(receiver(node), RECEIVER) is not None:
                self.report(node, call=short(node))
            return
        tn = ctx.torch_name(node.func)
        if tn in ("nonzero", "argwhere"):
            x = arg(node, 0, "input")
        elif tn == "where" and not has_star(node) and len(node.args) == 1:
            x = arg(node, 0, "condition")
        else:
            return
        if x is not None and ctx.gpu(x, RECEIVER) is not None:
            self.report(node, call=short(node))
