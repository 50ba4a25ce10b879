from typing import Optional

import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short, string_value
from synclint.rules._host_readback import torch_alias
from synclint.semantic import EVIDENT
from synclint.semantic.context import Site


class TensorTruthiness(Rule):
    """
    ## What it does
    Flags a GPU tensor used as a Python bool: the test of `if`, `elif`,
    `while`, `assert`, a conditional expression or a comprehension filter, an operand of
    `and`/`or`/`not`. This includes comparisons such as `if loss < best:` and reductions
    such as `if (x > 0).any():` or `if torch.isnan(x).any():`.

    ## Why is this bad?
    Python asks the tensor for its truth value: `Tensor.__bool__` -> `is_nonzero` ->
    `.item()` -> `_local_scalar_dense_cuda` -> `memcpy_and_sync`. The CPU waits until every
    kernel queued before it has finished, every time the test runs.

    ## Use instead
    Keep the decision on the GPU, so that both branches become data:

    ```python
    h = torch.where(torch.isnan(h), 0.0, h)      # instead of: if torch.isnan(h).any(): ...
    ```

    Check invariants lazily (accumulate a flag on the GPU, read it once per N steps), or
    assert on the device with `torch._assert_async(cond, "message")`.

    ## Fix safety
    `assert <gpu tensor>` can be rewritten to `torch._assert_async(<tensor>[, "msg"])`;
    the fix is unsafe. The check no longer stops the program on that line: a failure
    surfaces as a device-side assert at a later CUDA call and poisons the CUDA context
    (the process must restart), and `python -O` no longer removes the check. The
    message overload needs torch 2.1 or later.

    ## Known problems
    Only values known to be tensors are checked. Tests outside hot code (setup checks,
    unit tests) are not reported: one sync there costs nothing worth a finding.
    """

    CODE = "SYN105"
    NAME = "tensor-truthiness"
    MESSAGE = "`{expr}` is a GPU tensor used as a Python bool, which waits for all queued GPU work"
    FIX_TITLE = "Keep the decision on the GPU (`torch.where`, masking) or check it once per N steps"
    FIX = "sometimes"
    CATALOGUE = ("A2", "E3")
    VALID = [
        Valid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n"
            "    if x is None or x.shape[0] > 2 or len(x) or x.requires_grad or x.is_cuda:\n        pass\n"
            "    if x.numel() and x.dim() == 1 and x.dtype == torch.float32:\n        pass\n"
        ),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    m = torch.any(x > 0)\n    y = torch.where(m, x, 0.0)\n"),
        Valid("import numpy as np\nimport torch\na = np.ones(3)\nfor _ in range(3):\n    if (a > 0).any():\n        pass\n    assert (a > 0).all()\n"),
        Valid("import torch\nx = torch.ones(3)\nfor _ in range(3):\n    if (x > 0).any():\n        pass\n"),
        Valid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, use_cache, n_heads):\n"
            "        if use_cache and n_heads > 1:\n            x = x * 2\n        return x if not use_cache else x + 1\n"
        ),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nassert (x > 0).all()\nif torch.isnan(x).any():\n    raise ValueError('nan')\n", cold=True),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    if x.sum().item() > 0 and not x.is_cuda:\n        pass\n"),
        Valid(
            "import torch\n"
            "def has_nan(x):\n"
            "    return bool(torch.isnan(x).any().item())\n"
            "x = torch.rand(8, device='cuda').cpu()\n"
            "for _ in range(3):\n"
            "    if has_nan(x):\n"
            "        break\n",
        ),
        Valid(
            "import torch\n"
            "class EarlyStop:\n"
            "    def __init__(self):\n"
            "        self.best = float('inf')\n"
            "        self.history = []\n"
            "    def step(self, loss: float):\n"
            "        if self.history and loss < self.best:\n"
            "            self.best = loss\n"
            "        self.history.append(loss)\n",
        ),
        # a dict-key string and a Python list in `if`
        Valid(
            "import torch\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "for step in range(3):\n"
            "    out = {'loss': model(torch.ones(2, 4, device='cuda')).sum()}\n"
            "    losses = [out['loss']]\n"
            "    if 'loss' in out and losses:\n"
            "        pass\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    if (x > 0).any():\n"
            "        x = x - 1\n"
            "    return x\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    if x.isnan().any():\n"
            "        raise ValueError('nan')\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
        # another device backend's query is a Python bool, as `torch.cuda.is_available()` is
        Valid("import torch\nx = torch.ones(3, device='cuda')\nif torch.npu.is_available():\n    x = x.npu()\n"),
        # a float a helper of the file returns (a warm-up factor) and strings of a list
        Valid(
            "import torch\ndef warmup(step, total):\n    if step < total:\n        return 0.1 + 0.9 * step / total\n"
            "    return 1.0\ndef train(model, loader):\n    for step, x in enumerate(loader):\n"
            "        loss = model(x.cuda()).sum()\n        f = warmup(step, 100)\n        if f < 1.0:\n            print(f)\n"
            "        for w in [f'tok{i}' for i in range(3)]:\n            if w:\n                print(w)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    if (x > 0).any():\n        x = x - 1\n",
            line=4,
            hot=True,
            message="`(x > 0).any()` is a GPU tensor used as a Python bool, which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        assert (x >= 0).all(), 'negative input'\n        return x.sqrt()\n",
            line=4,
            hot=True,
            fixed="import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        torch._assert_async((x >= 0).all(), 'negative input')\n        return x.sqrt()\n",
        ),
        Invalid(
            "import torch\nbest = torch.full((), 1e9, device='cuda')\nfor step in range(10):\n    loss = torch.rand((), device='cuda')\n    if loss < best:\n        best = loss\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\ndef training_step(model, batch):\n    loss = batch[0].pow(2).mean()\n    return None if torch.isnan(loss) else loss\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nwhile x.sum() > 0:\n    x = x - 1\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def has_nan(x):\n"
            "    return torch.isnan(x).any()\n"
            "x = torch.rand(8, device='cuda')\n"
            "for _ in range(3):\n"
            "    if has_nan(x):\n"
            "        break\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class EarlyStop:\n"
            "    def __init__(self):\n"
            "        self.best = torch.full((), float('inf'), device='cuda')\n"
            "    def step(self, loss):\n"
            "        if loss < self.best:\n"
            "            self.best = loss\n",
            line=6,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(512, 512, device=device)\n"
            "xs = torch.randn(steps, 256, 512, device=device)\n"
        ),
        flagged=(
            "def flagged(w: torch.Tensor, xs: torch.Tensor):\n"
            "    outs = []\n"
            "    for x in xs:\n"
            "        h = torch.tanh(x @ w)\n"
            "        if torch.isnan(h).any():\n"
            "            h = torch.where(torch.isnan(h), 0.0, h)\n"
            "        outs.append(h.sum(0))\n"
            "    return torch.stack(outs)\n"
        ),
        fixed=(
            "def fixed(w: torch.Tensor, xs: torch.Tensor):\n"
            "    outs = []\n"
            "    for x in xs:\n"
            "        h = torch.tanh(x @ w)\n"
            "        h = torch.where(torch.isnan(h), 0.0, h)\n"
            "        outs.append(h.sum(0))\n"
            "    return torch.stack(outs)\n"
        ),
        sizes={"steps": 50},
    )

    # ------------------------------------------------------------ bool contexts
    def _bool_context(self, e: cst.BaseExpression, where: Optional[Site] = None) -> None:
        """`e` is evaluated as a Python bool: report it (at `where`, if given) if it is a GPU
        tensor."""
        if type(e) is cst.BooleanOperation:
            self._bool_context(e.left, where)
            self._bool_context(e.right, where)
        elif type(e) is cst.UnaryOperation and type(e.operator) is cst.Not:
            self._bool_context(e.expression, where)
        elif self.ctx.gpu(e, EVIDENT) is not None:
            if where is None:
                self.report(e, expr=short(e))
            else:
                self.report_at(where, e, expr=short(e))

    def visit_If(self, node: cst.If) -> None:
        self._bool_context(node.test)

    def visit_While(self, node: cst.While) -> None:
        # The test runs on every iteration: it is inside the loop (which the walk enters
        # after this visit).
        self._bool_context(node.test, self.ctx.site(loop_test=True))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._bool_context(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._bool_context(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # `a and b` / `a or b` always asks for bool(a); b only in a bool context.
        self._bool_context(node.left)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if type(node.operator) is cst.Not:
            self._bool_context(node.expression)

    def visit_Assert(self, node: cst.Assert) -> None:
        test = node.test
        if type(test) in (cst.BooleanOperation, cst.UnaryOperation) or self.ctx.gpu(test, EVIDENT) is None:
            self._bool_context(test)
            return
        torch = torch_alias(self.ctx)
        msg = node.msg
        if torch is None or (msg is not None and string_value(msg) is None):
            self.report(test, expr=short(test))
            return
        args = [cst.Arg(test)]
        if msg is not None:
            args.append(cst.Arg(msg))
        call = cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name("_assert_async")), args=args)
        self.report(
            test, call, target=node, safe=False,
            fix_title="Replace with `torch._assert_async` (asynchronous: a failure is fatal and surfaces later)",
            expr=short(test),
        )
