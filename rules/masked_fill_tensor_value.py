from typing import Optional

import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short
from synclint.rules._helpers import arg, gpu_number, has_star, one_line, torch_alias


class MaskedFillTensorValue(Rule):
    """
    ## What it does
    Flags `x.masked_fill(mask, k)`, `x.masked_fill_(mask, k)` and `torch.masked_fill(x, mask, k)`
    where the fill value `k` is a tensor on the GPU (not a Python scalar).

    ## Why is this bad?
    The CUDA kernel takes the fill value as a host scalar: `masked_fill__cuda`
    (`aten/src/ATen/native/cuda/Indexing.cu`, Tensor-value overload) calls `value.item()`,
    which copies it to the host and waits until every kernel queued before it has finished.
    Measured on an H200 with torch 2.11: caught by `torch.cuda.set_sync_debug_mode`, while
    a Python scalar or a CPU 0-d tensor value does not sync.

    ## Use instead
    Select on the device; nothing is read back:

    ```python
    y = torch.where(mask, k.to(x.dtype), x)   # not x.masked_fill(mask, k)
    ```

    If `k` is really a constant, pass it as a Python number (`x.masked_fill(mask, -1e4)`).

    ## Fix safety
    The fix rewrites out-of-place `masked_fill` to `torch.where(mask, k.to(x.dtype), x)` and
    is unsafe: the values and dtype are the same, but the result may not keep `x`'s memory
    layout, and a `k` that is not 0-d raises in `masked_fill` but broadcasts in `where`.
    It is offered only when `x` is a plain name or attribute (it is written twice).
    The in-place `masked_fill_` gets no fix.
    """

    CODE = "SYN111"
    NAME = "masked-fill-tensor-value"
    CALLS = frozenset({"masked_fill", "masked_fill_"})
    MESSAGE = "`{call}` reads the GPU fill value `{value}` back to the host, which waits for all queued GPU work"
    FIX_TITLE = "Use `torch.where(mask, {value}.to(x.dtype), x)`, which stays on the GPU"
    FIX = "sometimes"
    CATALOGUE = ("A6",)
    VALID = [
        Valid(
            "import torch\nx = torch.randn(8, device='cuda')\nm = x > 0\nfor _ in range(3):\n"
            "    y = x.masked_fill(m, 0.0)\n    z = x.masked_fill(m, float('-inf'))\n"
            "    w = x.masked_fill(m, torch.finfo(x.dtype).min)\n"
        ),
        Valid(
            "import torch\nx = torch.randn(8, device='cuda')\nk = torch.tensor(2.5)\nfor _ in range(3):\n"
            "    y = x.masked_fill(x > 0, k)\n"
        ),
        Valid(
            "import torch\nx = torch.randn(8, device='cuda')\nk = x.max()\nfor _ in range(3):\n"
            "    y = torch.where(x > 0, k, x)\n"
        ),
        Valid(
            "import torch\nclass Attn(torch.nn.Module):\n    def forward(self, scores, mask, fill):\n"
            "        return scores.masked_fill(mask, fill)\n"
        ),
        Valid(
            "import torch\nx = torch.randn(8, device='cuda')\nfill = -1e9\nfor _ in range(3):\n"
            "    y = x.masked_fill(x > 0, fill)\n"
        ),
        Valid(
            "import torch\n"
            "def neg_inf_like(x):\n"
            "    return torch.finfo(x.dtype).min\n"
            "x = torch.randn(8, device='cuda')\n"
            "for _ in range(3):\n"
            "    y = x.masked_fill(x > 0, neg_inf_like(x))\n",
        ),
        Valid(
            "import torch\n"
            "class Attn(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pad_value = -1e4\n"
            "    def forward(self, scores, mask):\n"
            "        return scores.masked_fill(mask, self.pad_value)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return x.masked_fill(y > 0, x.min())\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return x.masked_fill(x > 0, x.max())\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randn(8, device='cuda')\nfor _ in range(3):\n"
            "    k = x.mean()\n    y = x.masked_fill(x < 0, k)\n",
            line=5,
            hot=True,
            message="`x.masked_fill(x < 0, k)` reads the GPU fill value `k` back to the host, "
            "which waits for all queued GPU work",
            fixed="import torch\nx = torch.randn(8, device='cuda')\nfor _ in range(3):\n"
            "    k = x.mean()\n    y = torch.where(x < 0, k.to(x.dtype), x)\n",
        ),
        Invalid(
            "import torch\nclass Attn(torch.nn.Module):\n    def forward(self, scores, mask):\n"
            "        scores.masked_fill_(mask, scores.min())\n        return scores\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch as th\nx = th.zeros(4, 4, device='cuda')\nv = x.sum()\n"
            "y = th.masked_fill(x, x == 0, v)\n",
            line=4,
            hot=False,
            fixed="import torch as th\nx = th.zeros(4, 4, device='cuda')\nv = x.sum()\n"
            "y = th.where(x == 0, v.to(x.dtype), x)\n",
        ),
        Invalid(
            "import torch\n"
            "def neg_inf_like(x):\n"
            "    return x.min()\n"
            "x = torch.randn(8, device='cuda')\n"
            "for _ in range(3):\n"
            "    y = x.masked_fill(x > 0, neg_inf_like(x))\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Attn(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pad_value = torch.tensor(-1e4, device='cuda')\n"
            "    def forward(self, scores, mask):\n"
            "        return scores.masked_fill(mask, self.pad_value)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "x = torch.randn(n, device=device)\n"
            "m = x > 1.0\n"
            "k = x.mean()\n"
        ),
        flagged=(
            "def flagged(x: torch.Tensor, m: torch.Tensor, k: torch.Tensor):\n"
            "    return x.masked_fill(m, k)\n"
        ),
        fixed=(
            "def fixed(x: torch.Tensor, m: torch.Tensor, k: torch.Tensor):\n"
            "    return torch.where(m, k.to(x.dtype), x)\n"
        ),
        sizes={"n": 1_000_000},
        compare="equal",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if has_star(node):
            return
        ctx = self.ctx
        func = node.func
        tn = ctx.torch_name(func)
        if tn == "masked_fill":
            x, offset = arg(node, 0, "input"), 1
        elif type(func) is cst.Attribute and tn is None and func.attr.value in ("masked_fill", "masked_fill_"):
            x, offset = func.value, 0
            if ctx.infer(x).kind not in (V.TENSOR, V.UNKNOWN):
                return
        else:
            return
        mask, value = arg(node, offset, "mask"), arg(node, offset + 1, "value")
        if x is None or mask is None or value is None or not gpu_number(ctx, value):
            return
        replacement = None
        if tn == "masked_fill" or (type(func) is cst.Attribute and func.attr.value == "masked_fill"):
            replacement = self._where(func, x, mask, value)
        self.report(node, replacement, safe=False, call=short(node), value=short(value))

    def _where(self, func, x, mask, value) -> Optional[cst.Call]:
        if not _plain(x) or not one_line(mask) or not one_line(value):
            return None
        if self.ctx.torch_name(func) == "masked_fill" and type(func) is cst.Attribute:
            where = func.with_changes(attr=cst.Name("where"))  # keep the module spelling
        else:
            alias = torch_alias(self.ctx)
            if alias is None:
                return None
            where = cst.Attribute(cst.Name(alias), cst.Name("where"))
        value_to = cst.Call(
            cst.Attribute(_parens_if_needed(value), cst.Name("to")),
            [cst.Arg(cst.Attribute(x, cst.Name("dtype")))],
        )
        return cst.Call(where, [cst.Arg(mask), cst.Arg(value_to), cst.Arg(x)])


def _plain(e: cst.BaseExpression) -> bool:
    """A name or attribute chain: cheap and side-effect free to write twice."""
    while type(e) is cst.Attribute:
        e = e.value
    return type(e) is cst.Name


def _parens_if_needed(e: cst.BaseExpression) -> cst.BaseExpression:
    if type(e) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript) or e.lpar:
        return e
    return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
