import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short
from synclint.semantic import EVIDENT


class TensorMembership(Rule):
    """
    ## What it does
    Flags `v in t` and `v not in t` where `t` is a GPU tensor.

    ## Why is this bad?
    `Tensor.__contains__` is `bool((element == self).any().item())` (`torch/_tensor.py`):
    the answer is read back to the host, and the CPU waits until every kernel queued
    before it has finished.

    ## Use instead
    Keep the answer on the GPU and use it as data:

    ```python
    present = (t == v).any()                  # a GPU bool tensor
    x = torch.where(present, x_if, x_else)
    ```

    For many queries at once, `torch.isin(values, t)` answers them all in one kernel.

    ## Known problems
    Membership tests outside hot code (setup, tests) are not reported.
    """

    CODE = "SYN109"
    NAME = "tensor-membership"
    MESSAGE = "`{expr}` tests membership in a GPU tensor, which waits for all queued GPU work"
    FIX_TITLE = "Keep `(t == v).any()` on the GPU"
    CATALOGUE = ("A3",)
    VALID = [
        Valid(  # a key held in a name: the container is a mapping (a model's output dict)
            "import torch\nmodel = torch.nn.Linear(2, 2).cuda().eval()\nkey = 'text_features'\n"
            "for x in [torch.ones(2, device='cuda')]:\n    out = model(x)\n    paired = key in out\n"
        ),
        Valid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x\nm = M()\nfor b in range(2):\n    out = m(torch.ones(2, device='cuda'))\n    if \"loss\" not in out:\n        pass\n"),
        Valid("import torch\nt = torch.arange(5, device='cuda')\nd = {'a': 1}\nfor _ in range(3):\n    a = 'a' in d\n    b = 3 in [1, 2]\n    c = 5 in t.shape\n"),
        Valid("import torch\nt = torch.arange(5)\nfor _ in range(3):\n    a = 3 in t\n"),
        Valid("import torch\nimport numpy as np\na = np.arange(5)\nfor _ in range(3):\n    b = 3 in a\n"),
        Valid("import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, keep):\n        if 3 in keep:\n            x = x * 2\n        return x\n"),
        Valid("import torch\nt = torch.arange(5, device='cuda')\nfor x in t:\n    y = x * 2\nfound = 3 in t\n", cold=True),
        Valid(
            "import torch\n"
            "def seen_ids(batch):\n"
            "    return set(batch.flatten().tolist())\n"
            "ids = torch.randint(0, 9, (4, 4), device='cuda')\n"
            "for step in range(3):\n"
            "    if step in seen_ids(ids):\n"
            "        pass\n",
        ),
        Valid(
            "import torch\n"
            "class Vocab:\n"
            "    def __init__(self):\n"
            "        self.special = {0, 1, 2}\n"
            "    def is_special(self, tok):\n"
            "        return tok in self.special\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    if 0 in y:\n"
            "        x = x * 2\n"
            "    return x\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return 3 in x\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
        # a list of strings is no tensor
        Valid(
            "import torch\ndef train(model, loader):\n    for x in loader:\n        loss = model(x.cuda()).sum()\n"
            "        words = [f'tok{i}' for i in range(3)]\n        if 'cat' in words:\n            print(loss)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nt = torch.arange(5, device='cuda')\nfor i in range(3):\n    if i not in t:\n        pass\n",
            line=4,
            hot=True,
            message="`i not in t` tests membership in a GPU tensor, which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, labels: torch.Tensor):\n        has_pad = 0 in labels\n        return x\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def seen_ids(batch):\n"
            "    return batch.flatten()\n"
            "ids = torch.randint(0, 9, (4, 4), device='cuda')\n"
            "for step in range(3):\n"
            "    if step in seen_ids(ids):\n"
            "        pass\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Vocab:\n"
            "    def __init__(self):\n"
            "        self.special = torch.tensor([0, 1, 2], device='cuda')\n"
            "    def is_special(self, tok):\n"
            "        return tok in self.special\n",
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
            "    hits = 0\n"
            "    for x in xs:\n"
            "        labels = (x @ w).argmax(1)\n"
            "        hits += 0 in labels\n"
            "    return hits\n"
        ),
        fixed=(
            "def fixed(w: torch.Tensor, xs: torch.Tensor):\n"
            "    hits = torch.zeros((), dtype=torch.long, device=w.device)\n"
            "    for x in xs:\n"
            "        labels = (x @ w).argmax(1)\n"
            "        hits += (labels == 0).any()\n"
            "    return hits.item()\n"
        ),
        sizes={"steps": 50},
    )

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for comp in node.comparisons:
            # `"loss" in outputs`: a string key means a mapping (a model's output dict), not a tensor
            lv = self.ctx.infer(left)
            is_key = lv.kind == V.PY and lv.py == "str"  # a literal or a name holding a str
            left = comp.comparator
            if is_key:
                continue
            if type(comp.operator) in (cst.In, cst.NotIn) and self.ctx.gpu(comp.comparator, EVIDENT) is not None:
                self.report(node, expr=short(node))
                return
