import libcst as cst

from synclint.semantic import RECEIVER
from synclint.semantic import values as V

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import method_call, positional, receiver, short


class TensorEqualityCheck(Rule):
    """
    ## What it does
    Flags `torch.equal(a, b)`, `torch.allclose(a, b)`, `a.equal(b)` and `a.allclose(b)` on
    GPU tensors.

    ## Why is this bad?
    Both return a Python bool, so they read their answer back to the host:
    `cuda/Equal.cpp::cuda_equal` is `eq(...).all().item()` and `TensorCompare.cpp::allclose`
    is `isclose(...).all().item()`. The CPU waits until every kernel queued before the
    check has finished.

    ## Use instead
    Keep the answer on the GPU and look at it lazily (once per N steps, or fold it into
    the computation):

    ```python
    same = (a == b).all()                 # instead of torch.equal(a, b)
    close = torch.isclose(a, b).all()     # instead of torch.allclose(a, b)
    unchanged += same                     # a GPU counter, read once per epoch
    ```

    `torch.equal` is also False when the shapes differ, where `(a == b)` broadcasts or
    raises; `torch.isclose(a, b, rtol, atol).all()` is exactly what `allclose` computes.

    ## Known problems
    Checks outside hot code (one-time validation) are not reported. Operands of unknown
    device are assumed to be on the GPU, except inside test files and `test*` functions,
    where comparing in a loop over cases is the point.
    """

    CODE = "SYN107"
    NAME = "tensor-equality-check"
    CALLS = frozenset({"equal", "allclose"})
    MESSAGE = "`{call}` reads its answer back to the host and waits for all queued GPU work"
    FIX_TITLE = "Keep `(a == b).all()` / `torch.isclose(a, b).all()` on the GPU and check it lazily"
    CATALOGUE = ("E1", "E2")
    VALID = [
        # point 7: a script that never mentions a device, CUDA or an accelerator
        Valid(
            "import torch\nfrom data import batches\ndef step(x: torch.Tensor, y: torch.Tensor):\n"
            "    if torch.equal(x, y):\n        return x\n    return x + y\nfor x, y in batches():\n    step(x, y)\n"
        ),
        Valid("import torch\na = torch.ones(3, device='cuda')\nb = torch.ones(3, device='cuda')\nassert torch.allclose(a, b)\nok = torch.equal(a, b)\n", cold=True),
        Valid("import torch\na = torch.ones(3)\nb = torch.ones(3)\nfor _ in range(3):\n    ok = torch.equal(a, b) and a.allclose(b)\n"),
        Valid("import torch\ndef test_ops(cases, f):\n    for x, ref in cases:\n        assert torch.allclose(f(x), ref)\n"),
        Valid("import torch\nimport numpy as np\na = np.ones(3)\nfor _ in range(3):\n    ok = np.allclose(a, a) and np.array_equal(a, a)\n"),
        Valid("import torch\na = torch.ones(3, device='cuda')\nb = torch.ones(3, device='cuda')\nfor _ in range(3):\n    same = (a == b).all()\n    close = torch.isclose(a, b).all()\n    e = a.eq(b)\n"),
        Valid(
            "import torch\n"
            "def forward_twice(model, x):\n"
            "    return model(x), model(x)\n"
            "model = torch.nn.Linear(4, 4)\n"
            "for _ in range(3):\n"
            "    a, b = forward_twice(model, torch.ones(2, 4))\n"
            "    same = torch.equal(a, b)\n",
        ),
        Valid(
            "import torch\n"
            "class Check(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ref = torch.zeros(4, device='cuda')\n"
            "    def forward(self, x):\n"
            "        return torch.where(torch.isclose(x, self.ref), x, x - self.ref)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return torch.allclose(x, x.flip(0))\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\na = torch.ones(3, device='cuda')\nfor _ in range(3):\n    b = a * 1\n    if torch.equal(a, b):\n        pass\n",
            line=5,
            hot=True,
            message="`torch.equal(a, b)` reads its answer back to the host and waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, ref):\n        ok = x.allclose(ref, atol=1e-3)\n        return x\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def forward_twice(model, x):\n"
            "    return model(x), model(x)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "for _ in range(3):\n"
            "    a, b = forward_twice(model, torch.ones(2, 4, device='cuda'))\n"
            "    same = torch.equal(a, b)\n",
            line=7,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Check(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ref = torch.zeros(4, device='cuda')\n"
            "    def forward(self, x):\n"
            "        if not torch.allclose(x, self.ref):\n"
            "            x = x - self.ref\n"
            "        return x\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(512, 512, device=device)\n"
            "xs = torch.randn(steps, 256, 512, device=device)\n"
        ),
        flagged=(
            "def flagged(w: torch.Tensor, xs: torch.Tensor):\n"
            "    unchanged = 0\n"
            "    prev = (xs[0] @ w).argmax(1)\n"
            "    for x in xs:\n"
            "        labels = (x @ w).argmax(1)\n"
            "        unchanged += torch.equal(labels, prev)\n"
            "        prev = labels\n"
            "    return unchanged\n"
        ),
        fixed=(
            "def fixed(w: torch.Tensor, xs: torch.Tensor):\n"
            "    unchanged = torch.zeros((), dtype=torch.long, device=w.device)\n"
            "    prev = (xs[0] @ w).argmax(1)\n"
            "    for x in xs:\n"
            "        labels = (x @ w).argmax(1)\n"
            "        unchanged += (labels == prev).all()\n"
            "        prev = labels\n"
            "    return unchanged.item()\n"
        ),
        sizes={"steps": 50},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        tn = ctx.torch_name(node.func)
        if tn in ("equal", "allclose"):
            operands = [a.value for a in positional(node)[:2]]
        elif tn is None and positional(node) and method_call(node, ("equal", "allclose")):
            operands = [receiver(node), positional(node)[0].value]
        else:
            return
        if self._on_gpu(operands):
            self.report(node, call=short(node))

    def _on_gpu(self, operands) -> bool:
        """Both operands are tensors by contract; flag unless one is known to live on the
        CPU (they share a device) or the code is CUDA-less."""
        ctx = self.ctx
        if any(ctx.gpu(e, RECEIVER) is None for e in operands):
            return False  # one on the CPU (they share a device), not a tensor, or no GPU at all
        known_gpu = any(ctx.infer(e).kind == V.TENSOR for e in operands)
        # Unit tests loop over cases and compare with allclose on purpose (often on the CPU).
        return known_gpu or not ctx.in_test_code()
