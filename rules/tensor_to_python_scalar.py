import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import positional, short
from synclint.rules._host_readback import is_builtin
from synclint.semantic import EVIDENT


class TensorToPythonScalar(Rule):
    """
    ## What it does
    Flags `float(t)`, `int(t)`, `bool(t)` and `complex(t)` of a tensor that lives on the GPU,
    and the `math` functions of one (`math.isnan(grad_norm)`, `math.sqrt(t)`), which convert
    their arguments to Python numbers first.

    ## Why is this bad?
    Converting a tensor to a Python number reads it back like `.item()` does
    (`Tensor.__float__`/`__int__`/`__bool__` -> `_local_scalar_dense_cuda` ->
    `memcpy_and_sync`): the CPU waits until every kernel queued before it has finished.
    In a training loop the CPU can no longer run ahead of the GPU.

    ## Use instead
    Keep the value on the GPU: accumulate metrics in a GPU tensor
    (`total += loss.detach()`) and read it back once per N steps or per epoch. Sizes and
    counts that must be Python ints are better taken from shapes (`t.shape[0]`,
    `t.numel()`), which live on the host. `torch.isnan(t)`, `torch.sqrt(t)` and the other
    torch functions compute on the GPU without reading anything back.
    """

    CODE = "SYN104"
    NAME = "tensor-to-python-scalar"
    MESSAGE = "`{call}` converts a GPU tensor to a Python number, which waits for all queued GPU work"
    FIX_TITLE = "Keep the value on the GPU and read it back once per N steps"
    CATALOGUE = ("A1", "A2")
    VALID = [
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    n = int(x.shape[0])\n    m = int(len(x))\n    k = float(x.numel())\n    j = int(x.size(0))\n"),
        Valid("import torch\nimport numpy as np\na = np.ones(3)\nfor _ in range(3):\n    v = float(a.sum())\n"),
        Valid("import torch\nx = torch.ones(3)\nfor _ in range(3):\n    v = float(x.sum())\n"),
        Valid("import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, scale, n):\n        return x[: int(n)] * float(scale)\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = float(x.sum().item())\n    s = int('3')\n"),
        # `math` of host numbers and shapes; torch's own isnan stays on the GPU; a local
        # `math` that is not the module
        Valid(
            "import math\nimport torch\nx = torch.ones(3, device='cuda')\n"
            "for step in range(3):\n    a = math.sqrt(x.shape[0])\n    b = math.cos(step / 3)\n"
            "    c = torch.isnan(x.sum())\n    d = math.isclose(x.numel(), 3)\n"
        ),
        Valid("import torch\nimport numpy as math\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = math.isnan(x.sum())\n"),
        Valid("import torch\nfrom numpy import float64 as float\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = float(x.sum())\n"),
        Valid(
            "import torch\n"
            "def max_len(lengths):\n"
            "    return lengths.max()\n"
            "lengths = torch.tensor([3, 5])\n"
            "for _ in range(3):\n"
            "    n = int(max_len(lengths))\n",
        ),
        Valid(
            "import torch\n"
            "class Stats:\n"
            "    def __init__(self):\n"
            "        self.loss_sum = 0.0\n"
            "    def add(self, loss):\n"
            "        self.loss_sum += loss.detach().item()\n"
            "        return float(self.loss_sum)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    n = int(y.max())\n"
            "    return x[:, :n]\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return float(x.sum())\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = float(x.sum())\n",
            line=4,
            hot=True,
            message="`float(x.sum())` converts a GPU tensor to a Python number, which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, lengths):\n        n = int(lengths.max())\n        return x[:, :n]\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\ndef count(mask: torch.Tensor):\n    return int(mask.sum())\n",
            line=3,
            hot=False,
        ),
        Invalid(
            "import torch\n"
            "def max_len(lengths):\n"
            "    return lengths.max()\n"
            "lengths = torch.tensor([3, 5], device='cuda')\n"
            "for _ in range(3):\n"
            "    n = int(max_len(lengths))\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Stats:\n"
            "    def __init__(self):\n"
            "        self.loss_sum = torch.zeros((), device='cuda')\n"
            "    def add(self, loss):\n"
            "        self.loss_sum += loss.detach()\n"
            "        return float(self.loss_sum)\n",
            line=7,
        ),
        # NVIDIA tacotron2: the gradient norm checked with `math`, from another function
        Invalid(
            "import math\nimport torch\n"
            "def clip(model):\n    return torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "model = torch.nn.Linear(2, 2).cuda()\n"
            "for _ in range(3):\n    grad_norm = clip(model)\n    is_overflow = math.isnan(grad_norm)\n",
            line=8,
            hot=True,
            message="`math.isnan(grad_norm)` converts a GPU tensor to a Python number, which waits for all queued GPU work",
        ),
        Invalid(
            "from math import log\nimport torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = log(x.mean(), 2)\n",
            line=5,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(256, 256, device=device)\n"
            "xs = torch.randn(steps, 64, 256, device=device)\n"
        ),
        flagged=(
            "def flagged(w: torch.Tensor, xs: torch.Tensor):\n"
            "    total = 0.0\n"
            "    for x in xs:\n"
            "        loss = (x @ w).relu().mean()\n"
            "        total += float(loss)\n"
            "    return total\n"
        ),
        fixed=(
            "def fixed(w: torch.Tensor, xs: torch.Tensor):\n"
            "    total = torch.zeros((), device=w.device)\n"
            "    for x in xs:\n"
            "        loss = (x @ w).relu().mean()\n"
            "        total += loss.detach()\n"
            "    return total.item()\n"
        ),
        sizes={"steps": 50},
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = is_builtin(self.ctx, node.func, ("float", "int", "bool", "complex"))
        if name is None:
            q = self.ctx.qualname(node.func)
            if q is not None and q.startswith("math.") and any(
                    self.ctx.gpu(a.value, EVIDENT) is not None for a in positional(node)):
                self.report(node, call=short(node))  # `math.isnan(t)`: `Tensor.__float__` first
            return
        pos = positional(node)
        if len(pos) != 1 or len(node.args) != 1:  # int(s, base) is a string parse
            return
        if self.ctx.gpu(pos[0].value, EVIDENT) is not None:
            self.report(node, call=short(node))
