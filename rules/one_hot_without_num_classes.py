import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import arg, has_star
from synclint.rules._data_dependent import number
from synclint.rules._helpers import short
from synclint.semantic import RECEIVER


class OneHotWithoutNumClasses(Rule):
    """
    ## What it does
    Flags `torch.nn.functional.one_hot(x)` on a GPU tensor without `num_classes` (or with
    `num_classes=-1`).

    ## Why is this bad?
    Without `num_classes` the width of the output is `x.max() + 1`, read back to the host
    (`native/Onehot.cpp`: `self.max().item<int64_t>()`), which waits for every queued
    kernel. With `num_classes` given, CUDA checks the labels with device-side asserts and
    nothing syncs. Measured with `synclint bench` on an H200 (torch 2.11, 2026-11-26):
    1e5 labels, 64 classes, 58.8 us against 22.3 us with `num_classes`.

    ## Use instead
    Pass the number of classes, which the model almost always knows:

    ```python
    y = F.one_hot(labels, num_classes=10)
    ```

    The output width no longer depends on the batch: a batch whose largest label is below
    `num_classes - 1` gets zero columns instead of a narrower tensor, which is usually
    what the code wanted in the first place.
    """

    CODE = "SYN209"
    NAME = "one-hot-without-num-classes"
    CALLS = frozenset({"one_hot"})
    MESSAGE = "`{call}` without `num_classes` reads the largest label back to the host"
    FIX_TITLE = "Pass `num_classes=`"
    CATALOGUE = ("C8",)
    VALID = [
        Valid(
            "import torch\nimport torch.nn.functional as F\ny = torch.randint(0, 5, (8,), device='cuda')\n"
            "for _ in range(3):\n    a = F.one_hot(y, 5)\n    b = F.one_hot(y, num_classes=5)\n"
        ),
        Valid("import torch\nimport torch.nn.functional as F\ny = torch.randint(0, 5, (8,))\nfor _ in range(3):\n    a = F.one_hot(y)\n"),
        Valid("import torch\ndef one_hot(x):\n    return x\ny = torch.randint(0, 5, (8,), device='cuda')\nfor _ in range(3):\n    a = one_hot(y)\n"),
        Valid("import torch\nimport torch.nn.functional as F\nk = 5\ny = torch.randint(0, 5, (8,), device='cuda')\nfor _ in range(3):\n    a = F.one_hot(y, k)\n"),
        Valid(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "def labels_of(batch):\n"
            "    return batch[1]\n"
            "for batch in torch.utils.data.DataLoader(ds, batch_size=8):\n"
            "    y = F.one_hot(labels_of(batch))\n",
        ),
        Valid(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "class Smooth(torch.nn.Module):\n"
            "    def __init__(self, num_classes):\n"
            "        super().__init__()\n"
            "        self.num_classes = num_classes\n"
            "        self.targets = torch.randint(0, 5, (8,), device='cuda')\n"
            "    def forward(self, logits):\n"
            "        return F.one_hot(self.targets, self.num_classes).float() * 0.9 + 0.02\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return torch.nn.functional.one_hot(y)\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return torch.nn.functional.one_hot(x.long())\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nimport torch.nn.functional as F\ny = torch.randint(0, 5, (8,), device='cuda')\n"
            "for _ in range(3):\n    a = F.one_hot(y)\n",
            line=5,
            hot=True,
            message="`F.one_hot(y)` without `num_classes` reads the largest label back to the host",
        ),
        Invalid(
            "import torch\nfrom torch.nn.functional import one_hot\nclass M(torch.nn.Module):\n"
            "    def forward(self, labels):\n        return one_hot(labels, num_classes=-1).float()\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "def labels_of(batch):\n"
            "    return batch[1].cuda()\n"
            "for batch in torch.utils.data.DataLoader(ds, batch_size=8):\n"
            "    y = F.one_hot(labels_of(batch))\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "class Smooth(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.targets = torch.randint(0, 5, (8,), device='cuda')\n"
            "    def forward(self, logits):\n"
            "        return F.one_hot(self.targets).float() * 0.9 + 0.02\n",
            line=8,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="x = torch.randint(0, k, (n,), device=device)\nx[0] = k - 1\n",
        flagged="def flagged(x):\n    return torch.nn.functional.one_hot(x)\n",
        fixed="def fixed(x, k):\n    return torch.nn.functional.one_hot(x, k)\n",
        sizes={"n": 100_000, "k": 64},
        condition="the number of classes is known (here the largest label is k - 1)",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.qualname(node.func) != "torch.nn.functional.one_hot" or has_star(node):
            return
        x = arg(node, 0, "tensor")
        if x is None or ctx.gpu(x, RECEIVER) is None:
            return
        k = arg(node, 1, "num_classes")
        if k is None or number(k) == -1:
            self.report(node, call=short(node))
