import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short


class HostScalarIndexPut(Rule):
    """
    ## What it does
    Flags `x[idx] = 0.0` where `x` is a GPU tensor, `idx` an integer index tensor on the GPU
    (from `nonzero`, `argsort`, `topk(...).indices`, `randperm(..., device=)`, ...) and the
    value a Python number.

    ## Why is this bad?
    The Python number becomes a 0-d CPU tensor, and `_index_put_impl_` moves it to the device
    with `value.to(self.device())`: a blocking host-to-device copy that waits for all queued GPU
    work (catalogue D3). With a boolean mask instead of an integer index the same line takes
    the `masked_fill` fast path and does not sync (D4), so masks are not flagged.

    ## Use instead
    ```python
    x.index_fill_(0, idx, 0.0)            # a 1-D index on dim 0: no copy
    zero = torch.zeros((), device=x.device)  # or a device scalar made once, outside the loop
    x[idx] = zero
    ```

    ## Known problems
    Only indices with visible integer provenance are checked: a tensor of unknown dtype might
    be a boolean mask, whose write does not sync. No automatic fix: `index_fill_` differs for
    multi-dimensional or negative indices.
    """

    CODE = "SYN307"
    NAME = "host-scalar-index-put"
    MESSAGE = "`{lhs} = {value}` with a GPU index tensor copies the Python scalar to the GPU with a blocking transfer"
    FIX_TITLE = "Use `{base}.index_fill_(0, {idx}, {value})`, or assign a device scalar created once"
    CATALOGUE = ("D3",)
    SETUP_EXEMPT = True
    VALID = [
        Valid("import torch\nx = torch.randn(10, device='cuda')\nm = x > 0\nx[m] = 0.0\n"),
        Valid("import torch\ndef forward(self, x, m):\n    x[m] = 0.0\n    return x\n"),
        Valid("import torch\nx = torch.randn(10, device='cuda')\nidx = x.argsort()[:3]\nx.index_fill_(0, idx, 0.0)\n"),
        Valid("import torch\nx = torch.randn(10, device='cuda')\nidx = x.argsort()[:3]\nx[idx] = x[idx] * 2\n"),
        Valid("import torch\nx = torch.randn(10, device='cuda')\nidx = x.argsort()[:3]\nz = torch.zeros((), device='cuda')\nx[idx] = z\n"),
        Valid("import torch\nx = torch.randn(10)\nidx = x.argsort()[:3]\nx[idx] = 0.0\n"),
        Valid(
            "import torch\n"
            "def worst(scores, k):\n"
            "    return scores.topk(k).indices\n"
            "x = torch.randn(10)\n"
            "for _ in range(3):\n"
            "    x[worst(x, 3)] = 0.0\n",
        ),
        Valid(
            "import torch\n"
            "class Dropper(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.drop = torch.randperm(8, device='cuda')[:2]\n"
            "    def forward(self, x):\n"
            "        return x.index_fill(0, self.drop, 0.0)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    x[y.topk(3).indices] = 0.0\n"
            "    return x\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    x[x.argsort()[:2]] = 0.0\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randn(10, device='cuda')\nfor _ in range(3):\n    idx = (x < 0).nonzero().squeeze(1)\n    x[idx] = 0.0\n",
            line=5,
            hot=True,
            message="`x[idx] = 0.0` with a GPU index tensor copies the Python scalar to the GPU with a blocking transfer",
        ),
        Invalid(
            "import torch\ndef forward(self, scores):\n    top = scores.topk(3).indices\n    scores[top] = -1e9\n    return scores\n",
            line=4,
        ),
        Invalid(
            "import torch\ndef mark():\n    x = torch.randn(8, 4, device='cuda')\n"
            "    rows = torch.randperm(8, device='cuda')[:2]\n    x[rows, 0] = 1\n",
            line=5,
        ),
        Invalid(
            "import torch\n"
            "def worst(scores, k):\n"
            "    return scores.topk(k).indices\n"
            "x = torch.randn(10, device='cuda')\n"
            "for _ in range(3):\n"
            "    x[worst(x, 3)] = 0.0\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Dropper(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.drop = torch.randperm(8, device='cuda')[:2]\n"
            "    def forward(self, x):\n"
            "        x[self.drop] = 0.0\n"
            "        return x\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="scores = torch.randn(n, device=device)\n",
        flagged=(
            "def flagged(scores: torch.Tensor):\n"
            "    out = scores.clone()\n"
            "    top = scores.topk(k).indices\n"
            "    out[top] = 0.0\n"
            "    return out\n"
        ),
        fixed=(
            "def fixed(scores: torch.Tensor):\n"
            "    out = scores.clone()\n"
            "    top = scores.topk(k).indices\n"
            "    out.index_fill_(0, top, 0.0)\n"
            "    return out\n"
        ),
        sizes={"n": 1_000_000, "k": 1000},
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not any(type(t.target) is cst.Subscript for t in node.targets) or not self.ctx.is_host_number(value):
            return
        for t in node.targets:
            target = t.target
            if type(target) is not cst.Subscript or self.ctx.gpu(target.value) is None:
                continue
            idx = self._gpu_int_index(target)
            if idx is not None:
                self.report(node, lhs=short(target), value=short(value), base=short(target.value), idx=short(idx))

    def _gpu_int_index(self, target: cst.Subscript):
        found = None
        for el in target.slice:
            if type(el.slice) is not cst.Index:
                continue
            e = el.slice.value
            v = self.ctx.infer(e)
            if v.kind == V.TENSOR and v.mask:
                return None  # a mask write: the masked_fill path
            if self.ctx.is_int_index(e) and v.kind == V.TENSOR and v.device != V.CPU:
                found = found or e
        return found
