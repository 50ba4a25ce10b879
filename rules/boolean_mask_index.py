from typing import Optional, Set

import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._data_dependent import mask_index
from synclint.rules._helpers import code, short


class BooleanMaskIndex(Rule):
    """
    ## What it does
    Flags reading a GPU tensor through a boolean GPU mask, `x[mask]`.

    ## Why is this bad?
    The result has as many elements as the mask has `True`s, and the host must know
    that count to allocate it: indexing with a bool tensor turns the mask into indices
    with `nonzero` (`native/IndexingUtils.h::expandTensors`), whose CUDA kernel copies the
    count back and waits for the stream (`Nonzero.cu::nonzero_cuda_out_impl` ->
    `memcpy_and_sync`). Every queued kernel must finish first, and the CPU stops running
    ahead. On an H200, 1e7 elements: `x[mask]` 99.7 us against 39.1 us for `x[ids]`.

    ## Use instead
    Keep the shape and let the mask zero out what is not selected:

    ```python
    total = torch.where(mask, x, 0).sum()   # instead of x[mask].sum()
    loss = (per_item * mask).sum() / mask.sum().clamp(min=1)
    ```

    When the mask does not change between iterations, turn it into indices once, outside
    the loop, and gather with them: `ids = mask.nonzero().squeeze(1)` then `x[ids]` or
    `x.index_select(0, ids)`.

    ## Known problems
    Only masks known to be boolean are flagged: comparisons, `isnan`/`isfinite`/`bool()`
    and other bool-returning ops, `~m`, `m1 & m2`, and factories with `dtype=torch.bool`.
    A mask that arrives as a function argument is not recognised. `x[m] = ...` is left to
    SYN202, and so is a read `y[m]` inside the value of a masked write with the same mask.
    """

    CODE = "SYN201"
    NAME = "boolean-mask-index"
    MESSAGE = "`{expr}` indexes with a boolean mask, so the host waits for the GPU to count the selected elements"
    FIX_TITLE = "Keep the shape with `torch.where({mask}, ..., 0)`, or index with precomputed ids if the mask is static"
    CATALOGUE = ("C2",)
    VALID = [
        Valid("import numpy as np\narr = np.arange(10)\nfor _ in range(3):\n    pos = arr[arr > 3]\n"),
        Valid("import torch\nx = torch.rand(10)\nfor _ in range(3):\n    pos = x[x > 0.5]\n"),
        Valid(
            "import torch\nx = torch.rand(10, device='cuda')\nids = torch.arange(5, device='cuda')\n"
            "for _ in range(3):\n    y = x[ids]\n    z = x[2:5]\n    w = x[0]\n"
        ),
        Valid("import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    x[x > 0.5] = 0.0\n"),
        Valid("import torch\ndef pick(x, mask):\n    return x[mask]\nfor _ in range(3):\n    pick(torch.rand(3), None)\n"),
        Valid(
            "import torch\ndef f(x: torch.Tensor):\n    m = x > 0\n    return torch.where(m, x, 0).sum()\n"
            "for _ in range(3):\n    f(torch.rand(3, device='cuda'))\n"
        ),
        Valid(
            "import torch\n"
            "def valid_mask(depth):\n"
            "    return depth > 0\n"
            "depth = torch.rand(64, device='cuda').cpu()\n"
            "for _ in range(3):\n"
            "    d = depth[valid_mask(depth)]\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def masked_mean(x, mask):\n"
            "    return x[mask].mean()\n"
            "x = torch.rand(64)\n"
            "for _ in range(3):\n"
            "    masked_mean(x, x > 0.5)\n",
        ),
        Valid(
            "import torch\n"
            "class Rays:\n"
            "    def __init__(self, n):\n"
            "        self.depth = torch.rand(n)\n"
            "        self.valid = self.depth > 0.5\n"
            "def render(rays):\n"
            "    return rays.depth[rays.valid]\n"
            "rays = Rays(8)\n"
            "for _ in range(3):\n"
            "    render(rays)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "def keep_positive(x):\n"
            "    return x[x > 0]\n"
            "print(keep_positive(torch.rand(8) - 0.5))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    m = torch.isnan(x)\n    y = x[~m]\n",
            line=5,
            hot=True,
            message="`x[~m]` indexes with a boolean mask, so the host waits for the GPU to count the selected elements",
        ),
        Invalid(
            "import torch\nclass Head(torch.nn.Module):\n    def forward(self, logits, labels):\n"
            "        keep = (labels >= 0) & (labels < 10)\n        return logits[keep, :]\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\nx = torch.rand(10, device='cuda')\nmask = x > 0.5\nprint(x[mask].sum())\n",
            line=4,
            hot=False,
        ),
        Invalid(
            "import torch\n"
            "def valid_mask(depth):\n"
            "    return depth > 0\n"
            "depth = torch.rand(64, device='cuda')\n"
            "for _ in range(3):\n"
            "    d = depth[valid_mask(depth)]\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def masked_mean(x, mask):\n"
            "    return x[mask].mean()\n"
            "x = torch.rand(64, device='cuda')\n"
            "for _ in range(3):\n"
            "    masked_mean(x, x > 0.5)\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Rays:\n"
            "    def __init__(self, n):\n"
            "        self.depth = torch.rand(n, device='cuda')\n"
            "        self.valid = self.depth > 0.5\n"
            "def render(rays):\n"
            "    return rays.depth[rays.valid]\n"
            "rays = Rays(8)\n"
            "for _ in range(3):\n"
            "    render(rays)\n",
            line=7,
        ),
    ]
    BENCH = BenchPair(
        setup="x = torch.rand(n, device=device)\nmask = x > 0.5\nids = mask.nonzero().squeeze(1)\n",
        flagged="def flagged(x, mask):\n    return x[mask]\n",
        fixed="def fixed(x, ids):\n    return x[ids]\n",
        sizes={"n": 10_000_000},
        condition="the mask is static, so ids can be computed once",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._skip: Set[int] = set()  # ids of subscripts that are stores or owned by SYN202

    def _store_targets(self, targets) -> Optional[str]:
        """Mark subscript targets as stores; the code of the mask of a masked write, if any."""
        found = None
        for t in targets:
            if type(t) is cst.Subscript:
                self._skip.add(id(t))
                mask = mask_index(self.ctx, t)
                if mask is not None and found is None:
                    found = code(mask)
        return found

    def visit_Assign(self, node: cst.Assign) -> None:
        mask_code = self._store_targets([t.target for t in node.targets])
        if mask_code is not None:
            # `x[m] = y[m] * 2`: one fix (`torch.where(m, y * 2, x)`) covers read and write,
            # and SYN202 reports the statement.
            _collect_same_mask(node.value, mask_code, self._skip)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store_targets([node.target])  # `x[m] += v` is a masked write: SYN202

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store_targets([node.target])

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if id(node) in self._skip:
            return
        mask = mask_index(self.ctx, node)
        if mask is not None:
            self.report(node, expr=short(node), mask=short(mask, 20))


def _collect_same_mask(e: cst.CSTNode, mask_code: str, out: Set[int]) -> None:
    """Ids of subscripts inside `e` indexed by the expression `mask_code`."""
    stack = [e]
    while stack:
        n = stack.pop()
        if type(n) is cst.Subscript and any(
            type(el.slice) is cst.Index and code(el.slice.value) == mask_code for el in n.slice
        ):
            out.add(id(n))
        stack.extend(n.children)
