import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._data_dependent import arg
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import RECEIVER


class MaskedSelect(Rule):
    """
    ## What it does
    Flags `torch.masked_select(x, m)` and `x.masked_select(m)` on GPU tensors.

    ## Why is this bad?
    The result holds one element per `True` in the mask, so its size is only known once
    the GPU has counted them: `masked_select` goes through the same `nonzero` as `x[m]`
    (`native/IndexingUtils.h::expandTensors` -> `Nonzero.cu`, a `memcpy_and_sync` of the
    count). The host waits for every queued kernel before it can continue.
    Measured with `synclint bench` on an H200 (torch 2.11, 2026-11-26):
    1e7 elements, `masked_select(x, m).sum()` 117 us against 62 us for `where(m, x, 0).sum()`.

    ## Use instead
    Keep the shape, zeroing what is not selected; most uses feed a reduction, where the
    zeros are neutral:

    ```python
    total = torch.where(m, x, 0).sum()          # instead of x.masked_select(m).sum()
    mean = total / m.sum().clamp(min=1)
    ```

    If the mask is static, compute `ids = m.nonzero().squeeze(1)` once and gather with
    `x.index_select(0, ids)` in the loop.
    """

    CODE = "SYN204"
    NAME = "masked-select"
    CALLS = frozenset({"masked_select"})
    MESSAGE = "`{call}` has a data-dependent size, so the host waits for the GPU to count the selected elements"
    FIX_TITLE = "Keep the shape with `torch.where(mask, x, 0)` when the result feeds a reduction"
    CATALOGUE = ("C2",)
    VALID = [
        Valid("import torch\nx = torch.rand(10)\nfor _ in range(3):\n    y = torch.masked_select(x, x > 0.5)\n"),
        Valid("import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    y = x.masked_fill(x > 0.5, 0.0)\n    z = torch.where(x > 0.5, x, 0)\n"),
        Valid("import numpy as np\nimport torch\ndef f(a, m):\n    return a.masked_select(m)\nfor _ in range(3):\n    f(None, None)\n"),
        Valid("import torch\nx = torch.rand(10, device='cuda')\nif not torch.cuda.is_available():\n    y = x.masked_select(x > 0)\n"),
        Valid(
            "import torch\n"
            "def logits_of(model, x):\n"
            "    return model(x)\n"
            "model = torch.nn.Linear(4, 4)\n"
            "for _ in range(3):\n"
            "    out = logits_of(model, torch.ones(2, 4))\n"
            "    sel = out.masked_select(out > 0)\n",
        ),
        Valid(
            "import torch\n"
            "class Head(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.valid = torch.ones(4, dtype=torch.bool, device='cuda')\n"
            "    def forward(self, x):\n"
            "        return x.masked_fill(~self.valid, 0.0)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return x.masked_select(y > 0)\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return x.masked_select(x > 0)\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    s = torch.masked_select(x, x > 0.5).sum()\n",
            line=4,
            hot=True,
            message="`torch.masked_select(x, x > 0.5)` has a data-dependent size, so the host waits for the GPU to count the selected elements",
        ),
        Invalid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, logits, valid):\n        return logits.masked_select(valid).mean()\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def logits_of(model, x):\n"
            "    return model(x)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "for _ in range(3):\n"
            "    out = logits_of(model, torch.ones(2, 4, device='cuda'))\n"
            "    sel = out.masked_select(out > 0)\n",
            line=7,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Head(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.valid = torch.ones(4, dtype=torch.bool, device='cuda')\n"
            "    def forward(self, x):\n"
            "        return torch.masked_select(x, self.valid)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="x = torch.rand(n, device=device)\nm = x > 0.5\n",
        flagged="def flagged(x, m):\n    return torch.masked_select(x, m).sum()\n",
        fixed="def fixed(x, m):\n    return torch.where(m, x, 0).sum()\n",
        sizes={"n": 10_000_000},
        compare="close",
        condition="the selected values only feed a reduction (here a sum), where zeros in unselected places are neutral",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, ("masked_select",)) and ctx.qualname(node.func) is None:
            if ctx.gpu(receiver(node), RECEIVER) is not None:
                self.report(node, call=short(node))
        elif ctx.torch_name(node.func) == "masked_select":
            x = arg(node, 0, "input")
            if x is not None and ctx.gpu(x, RECEIVER) is not None:
                self.report(node, call=short(node))
