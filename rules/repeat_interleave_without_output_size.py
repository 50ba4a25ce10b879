import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import arg, has_star
from synclint.rules._helpers import kwarg, method_call, receiver, short
from synclint.semantic import RECEIVER


class RepeatInterleaveWithoutOutputSize(Rule):
    """
    ## What it does
    Flags `torch.repeat_interleave(x, repeats)` and `x.repeat_interleave(repeats)` on the
    GPU when `repeats` is a tensor and `output_size=` is not given; also the one-argument
    form `torch.repeat_interleave(repeats)`.

    ## Why is this bad?
    The output length is `repeats.sum()`, a number on the GPU. To allocate the output the
    host reads it back (`native/Repeat.h::repeat_interleave_common`:
    `cumsum[-1].item()`, plus a `(repeats >= 0).all().item()` check), waiting for every
    queued kernel. On an H200: 82.2 us against 28.8 us with `output_size=`.
    With an integer `repeats` the size is known and nothing syncs.

    ## Use instead
    Pass the output length when the host already knows it, for example from sizes kept
    as Python ints:

    ```python
    out = torch.repeat_interleave(x, counts, output_size=total)
    ```

    `output_size` must be exact: a wrong value fires a device-side assert
    (`Repeat.cu: result_size == cumsum_ptr[size - 1]`), so no automatic fix is offered.
    """

    CODE = "SYN206"
    NAME = "repeat-interleave-without-output-size"
    CALLS = frozenset({"repeat_interleave"})
    MESSAGE = "`{call}` without `output_size=` reads the total repeat count back to the host"
    FIX_TITLE = "Pass `output_size=` (the exact total of `repeats`) when the host knows it"
    CATALOGUE = ("C5",)
    VALID = [
        Valid("import torch\nx = torch.rand(10, device='cuda')\nfor _ in range(3):\n    y = torch.repeat_interleave(x, 2)\n    z = x.repeat_interleave(3, dim=0)\n"),
        Valid(
            "import torch\nx = torch.rand(4, device='cuda')\nr = torch.tensor([1, 2, 1, 2], device='cuda')\n"
            "for _ in range(3):\n    y = torch.repeat_interleave(x, r, output_size=6)\n"
        ),
        Valid("import torch\nx = torch.rand(4)\nr = torch.tensor([1, 2, 1, 2])\nfor _ in range(3):\n    y = x.repeat_interleave(r)\n"),
        Valid("import torch\ndef f(x, n):\n    return x.repeat_interleave(n)\nfor _ in range(3):\n    f(torch.rand(3, device='cuda'), 2)\n"),
        Valid(
            "import torch\n"
            "def counts_of(lengths):\n"
            "    return lengths.clamp(min=1)\n"
            "x = torch.rand(4)\n"
            "r = torch.randint(1, 3, (4,))\n"
            "for _ in range(3):\n"
            "    y = x.repeat_interleave(counts_of(r))\n",
        ),
        Valid(
            "import torch\n"
            "class Expand(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.repeats = torch.tensor([1, 2, 1, 2], device='cuda')\n"
            "    def forward(self, x):\n"
            "        return torch.repeat_interleave(x, self.repeats, dim=0, output_size=6)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return x.repeat_interleave(y, dim=0)\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.rand(4, device='cuda')\nr = torch.randint(1, 3, (4,), device='cuda')\n"
            "for _ in range(3):\n    y = torch.repeat_interleave(x, r)\n",
            line=5,
            hot=True,
            message="`torch.repeat_interleave(x, r)` without `output_size=` reads the total repeat count back to the host",
        ),
        Invalid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, feats, counts):\n"
            "        batch = torch.repeat_interleave(counts)\n        return feats.repeat_interleave(counts, dim=0), batch\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def counts_of(lengths):\n"
            "    return lengths.clamp(min=1)\n"
            "x = torch.rand(4, device='cuda')\n"
            "r = torch.randint(1, 3, (4,), device='cuda')\n"
            "for _ in range(3):\n"
            "    y = x.repeat_interleave(counts_of(r))\n",
            line=7,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Expand(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.repeats = torch.tensor([1, 2, 1, 2], device='cuda')\n"
            "    def forward(self, x):\n"
            "        return torch.repeat_interleave(x, self.repeats, dim=0)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "x = torch.rand(n, device=device)\n"
            "r = torch.randint(1, 4, (n,), device=device)\n"
            "total = int(r.sum())\n"
        ),
        flagged="def flagged(x, r):\n    return torch.repeat_interleave(x, r)\n",
        fixed="def fixed(x, r, total):\n    return torch.repeat_interleave(x, r, output_size=total)\n",
        sizes={"n": 100_000},
        condition="the output length is known on the host without reading it back (here computed once in setup)",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if has_star(node) or kwarg(node, "output_size") is not None:
            return
        if method_call(node, ("repeat_interleave",)) and ctx.qualname(node.func) is None:
            x = receiver(node)
            repeats = arg(node, 0, "repeats")
            if repeats is None or ctx.gpu(x, RECEIVER) is None:
                return
        elif ctx.torch_name(node.func) == "repeat_interleave":
            first = arg(node, 0, "input")
            repeats = arg(node, 1, "repeats")
            if repeats is None:
                # One argument: `repeat_interleave(repeats)` (a tensor by signature).
                if first is None or kwarg(node, "dim") is not None or ctx.gpu(first, RECEIVER) is None:
                    return
                self.report(node, call=short(node))
                return
            if first is None or ctx.gpu(first, RECEIVER) is None:
                return
        else:
            return
        # Only a repeats known to be a tensor: an unknown value may be a Python int.
        if ctx.infer(repeats).kind == V.TENSOR:
            self.report(node, call=short(node))
