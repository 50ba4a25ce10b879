from typing import Optional

import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._data_dependent import arg, mask_index, torch_alias
from synclint.rules._helpers import code, method_call, receiver, short
from synclint.semantic import RECEIVER


class MaskedWriteTensorValue(Rule):
    """
    ## What it does
    Flags writes through a boolean GPU mask whose value is a tensor: `x[m] = y[m]`,
    `x[m] = k` with `k` a GPU tensor, `x[m] += v`, and `x.index_put_((m,), v)`.

    ## Why is this bad?
    `index_put_` can take the `masked_fill` fast path only when the value is a single
    element on the CPU (`TensorAdvancedIndexingUtils.h::canDispatchToMaskedFill`). With a
    GPU tensor as the value it turns the mask into indices with `nonzero`, which copies the
    count back to the host and waits for every queued kernel
    (`TensorAdvancedIndexing.cpp::_index_put_impl_` -> `Nonzero.cu`). `x[m] = y[m]` pays
    twice: once for the read `y[m]`, once for the write. `x[m] += v` reads `x[m]` and
    writes a tensor back, so it syncs even when `v` is a Python number.
    Measured with `synclint bench` on an H200 (torch 2.11, 2026-11-26):
    1e6 elements, `x[m] = y[m]` 95.8 us against 8.4 us for `torch.where(m, y, x)`.

    ## Use instead
    Select with the mask instead of compacting through it:

    ```python
    x = torch.where(m, y, x)        # instead of x[m] = y[m]
    x = torch.where(m, k, x)        # instead of x[m] = k (k a GPU 0-d tensor)
    x.masked_scatter_(m, src)       # instead of x[m] = src (src holds the values in order)
    x.masked_fill_(m, 0.5)          # a Python scalar value takes the fast path
    ```

    `x[m] = 0.0` with a Python scalar is not flagged: it takes the `masked_fill` path
    and does not sync.

    ## Fix safety
    `x[m] = y[m]` (the same mask on both sides, the only index) is rewritten to
    `x.copy_(torch.where(m, y, x))`, which keeps the write in place. The fix is unsafe:
    it is equivalent only when `m` has as many dimensions as `x` and `y` broadcasts to
    `x`; a mask over the leading dimensions (`m.shape == x.shape[:1]`) needs
    `m.unsqueeze(-1)`, and the linter cannot see shapes.

    ## Known problems
    Only masks known to be boolean are recognised (see SYN201), and only values known to
    be GPU tensors: `x[m] = v` with `v` a function argument of unknown type is not flagged.
    """

    CODE = "SYN202"
    NAME = "masked-write-tensor-value"
    CALLS = frozenset({"index_put_", "index_put"})
    MESSAGE = "`{expr}` writes a tensor through a boolean mask, so the host waits for the GPU to count the mask"
    FIX_TITLE = "Write with `torch.where({mask}, value, {x})` or `{x}.masked_scatter_({mask}, src)` instead"
    FIX = "sometimes"
    CATALOGUE = ("C3", "D4")
    VALID = [
        Valid("import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    x[x > 0.5] = 0.0\n    x[torch.isnan(x)] = -1\n"),
        Valid("import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    x[x < 0] = float('inf')\n"),
        Valid("import numpy as np\na = np.zeros(4)\nb = np.ones(4)\nfor _ in range(3):\n    a[a == 0] = b[a == 0]\n"),
        Valid("import torch\nx = torch.zeros(4)\ny = torch.ones(4)\nfor _ in range(3):\n    x[x == 0] = y[x == 0]\n"),
        Valid(
            "import torch\nx = torch.rand(10, device='cuda')\nids = torch.arange(3, device='cuda')\n"
            "for _ in range(3):\n    x[ids] = x[ids] * 2\n    x = torch.where(x > 0.5, x * 2, x)\n"
        ),
        Valid("import torch\ndef f(x, m, v):\n    x[m] = v\nfor _ in range(3):\n    f(torch.rand(3), None, 1)\n"),
        Valid(
            "import torch\n"
            "def invalid(x):\n"
            "    return ~torch.isfinite(x)\n"
            "x = torch.rand(8)\n"
            "for _ in range(3):\n"
            "    x[invalid(x)] = x.mean()\n",
        ),
        Valid(
            "import torch\n"
            "class Normalizer(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.fill = 0.0\n"
            "    def forward(self, x):\n"
            "        x[torch.isnan(x)] = self.fill\n"
            "        return x\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    x[y > 0] = x.mean()\n"
            "    return x\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    x[x > 0] = x.mean()\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.rand(10, device='cuda')\ny = torch.rand(10, device='cuda')\n"
            "for _ in range(3):\n    m = x > 0.5\n    x[m] = y[m]\n",
            line=6,
            hot=True,
            message="`x[m] = y[m]` writes a tensor through a boolean mask, so the host waits for the GPU to count the mask",
            fixed="import torch\nx = torch.rand(10, device='cuda')\ny = torch.rand(10, device='cuda')\n"
            "for _ in range(3):\n    m = x > 0.5\n    x.copy_(torch.where(m, y, x))\n",
        ),
        Invalid(
            "import torch as th\nclass M(th.nn.Module):\n    def forward(self, x):\n        bad = ~th.isfinite(x)\n"
            "        x[bad] = x.mean()\n        return x\n",
            line=5,
            hot=True,
        ),
        Invalid("import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    x[x > 0.5] += 1\n", line=4),
        Invalid(
            "import torch\nx = torch.rand(10, device='cuda')\nv = torch.rand(10, device='cuda')\nm = x > 0.5\n"
            "for _ in range(3):\n    x.index_put_((m,), v[m])\n",
            line=6,
        ),
        Invalid(
            "import torch\n"
            "def invalid(x):\n"
            "    return ~torch.isfinite(x)\n"
            "x = torch.rand(8, device='cuda')\n"
            "for _ in range(3):\n"
            "    x[invalid(x)] = x.mean()\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Normalizer(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.fill = torch.zeros((), device='cuda')\n"
            "    def forward(self, x):\n"
            "        x[torch.isnan(x)] = self.fill\n"
            "        return x\n",
            line=7,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "x = torch.rand(n, device=device)\n"
            "y = torch.rand(n, device=device)\n"
            "m = x > 0.5\n"
        ),
        flagged="def flagged(x, y, m):\n    x[m] = y[m]\n    return x\n",
        fixed="def fixed(x, y, m):\n    return torch.where(m, y, x)\n",
        sizes={"n": 1_000_000},
        condition="`x` may be rebound to the result (no other reference relies on the in-place write)",
    )

    # ------------------------------------------------------------- assignments
    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if type(target) is not cst.Subscript:
                continue
            mask = mask_index(self.ctx, target)
            if mask is None or self.ctx.gpu(node.value) is None:
                continue
            expr = f"{short(target, 30)} = {short(node.value, 30)}"
            fix = self._fix(node, target, mask) if len(node.targets) == 1 else None
            if fix is not None:
                self.report(target, fix, target=node, safe=False, fix_title="Rewrite as `{rewrite}`",
                            expr=expr, rewrite=short(fix, 80))
            else:
                self.report(target, expr=expr, mask=short(mask, 20), x=short(target.value, 20))
            return

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = node.target
        if type(target) is cst.Subscript:
            mask = mask_index(self.ctx, target)
            if mask is not None:
                op = code(node.operator).strip()
                x = short(target.value, 20)
                self.report(target, fix_title="Select instead: `{x} = torch.where({mask}, {x} {binop} value, {x})`",
                            expr=f"{short(target, 30)} {op} ...", mask=short(mask, 20), x=x, binop=op[:-1])

    def _fix(self, node: cst.Assign, target: cst.Subscript, mask: cst.BaseExpression) -> Optional[cst.CSTNode]:
        """`x[m] = y[m]` -> `x.copy_(torch.where(m, y, x))` (unsafe: shapes unseen)."""
        value = node.value
        if len(target.slice) != 1 or type(value) is not cst.Subscript or len(value.slice) != 1:
            return None
        vidx = value.slice[0].slice
        if type(vidx) is not cst.Index or code(vidx.value) != code(mask):
            return None
        torch_name = torch_alias(self.ctx)
        if torch_name is None:
            return None
        where = cst.Call(
            func=cst.Attribute(cst.Name(torch_name), cst.Name("where")),
            args=[cst.Arg(mask), cst.Arg(value.value), cst.Arg(target.value)],
        )
        call = cst.Call(func=cst.Attribute(target.value, cst.Name("copy_")), args=[cst.Arg(where)])
        return cst.Expr(call)

    # ------------------------------------------------------------- index_put
    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, ("index_put_", "index_put")):
            recv = receiver(node)
            if ctx.gpu(recv, RECEIVER) is None:
                return
            indices, values = arg(node, 0, "indices"), arg(node, 1, "values")
        elif (ctx.torch_name(node.func) or "") in ("index_put_", "index_put"):
            recv = arg(node, 0, "input")
            if recv is None or ctx.gpu(recv, RECEIVER) is None:
                return
            indices, values = arg(node, 1, "indices"), arg(node, 2, "values")
        else:
            return
        if type(indices) not in (cst.Tuple, cst.List) or values is None:
            return
        mask = next((el.value for el in indices.elements if ctx.gpu_mask(el.value)), None)
        if mask is None:
            return
        v = ctx.infer(values)
        if v.kind == V.TENSOR and v.device == V.CPU:
            return  # a CPU value of one element takes the masked_fill path
        self.report(node, expr=short(node), mask=short(mask, 20), x=short(recv, 20))
