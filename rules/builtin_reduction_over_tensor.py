from typing import Optional

import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import is_python_scalar, kwarg, positional, short
from synclint.rules._host_readback import is_builtin, torch_alias
from synclint.semantic import EVIDENT, RECEIVER
from synclint.semantic import values as V


_REDUCTIONS = ("max", "min", "sorted", "any", "all")


class BuiltinReductionOverTensor(Rule):
    """
    ## What it does
    Flags the Python builtins `max`, `min`, `sorted`, `any` and `all` iterating over a GPU
    tensor (`max(t)`), and `max`/`min` comparing a GPU tensor with another value
    (`max(a, b)`, `max(loss, 1e-8)`).

    ## Why is this bad?
    The builtins iterate the tensor from Python and compare elements with `>`/`<` or
    test their truth: every comparison is a `Tensor.__bool__` -> `.item()` ->
    `memcpy_and_sync`. `max(t)` over n elements syncs n-1 times and launches a kernel per
    element; `max(a, b)` syncs once. (Builtin `sum(t)` only adds, so it does not sync.)

    ## Use instead
    The tensor methods, which reduce on the GPU:

    ```python
    m = t.max()                        # instead of max(t)
    s = t.sort().values                # instead of sorted(t)
    hi = torch.maximum(a, b)           # instead of max(a, b)
    safe = torch.clamp(loss, min=1e-8) # instead of max(loss, 1e-8)
    ```

    ## Fix safety
    The fixes for `max`/`min` are unsafe. `t.max()` propagates NaN where the builtin
    returns whichever element won the comparisons; for a tensor with more than one
    dimension the builtin compares rows (or raises) and the method reduces everything.
    `torch.maximum(a, b)` and `torch.clamp` return a new tensor (the builtin returns one
    of its arguments, possibly a Python number) and follow type promotion.
    """

    CODE = "SYN108"
    NAME = "builtin-reduction-over-tensor"
    CALLS = frozenset(_REDUCTIONS)
    MESSAGE = "Builtin `{call}` compares GPU tensor values one by one on the host, syncing each time"
    FIX_TITLE = "Use the tensor reduction (`t.max()`, `t.sort()`, `torch.maximum`) instead"
    FIX = "sometimes"
    CATALOGUE = ("A4",)
    VALID = [
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    s = sum(x)\n    m = torch.max(x)\n    n = max(x.shape)\n    k = max(x.size(0), 1)\n"),
        Valid("import torch\nx = torch.ones(3)\nfor _ in range(3):\n    m = max(x)\n    s = sorted(x)\n"),
        Valid("import torch\nimport numpy as np\na = np.ones(3)\nfor _ in range(3):\n    m = max(a)\n    n = min(1, 2)\n    o = max([1, 2], key=abs)\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    m = max(x.tolist())\n    n = x.max()\n"),
        Valid(
            "import torch\n"
            "def scores(model, x):\n"
            "    return model(x).squeeze(1).tolist()\n"
            "model = torch.nn.Linear(4, 1)\n"
            "for _ in range(3):\n"
            "    best = max(scores(model, torch.ones(8, 4)))\n",
        ),
        Valid(
            "import torch\n"
            "class Clipper:\n"
            "    def __init__(self):\n"
            "        self.floor = 1e-8\n"
            "    def __call__(self, norm: float):\n"
            "        return max(norm, self.floor)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return max(x.sum(), y.sum())\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return max(x)\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
        # indices a custom collate hands out as a list of ints, and strings made from them
        Valid(
            "import torch\ndef collate(batch):\n    return torch.stack([b[0] for b in batch]), [b[1] for b in batch]\n"
            "def train(model, ds):\n    loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=collate)\n"
            "    for x, idx in loader:\n        model(x.cuda())\n        names = [str(i) for i in idx]\n"
            "        print(max(names), sorted(idx))\n"
        ),
        # a list of CPU values, of Python numbers read back once, of lengths
        Valid(
            "import torch\nms = [dict(acc=torch.ones(())) for _ in range(3)]\n"
            "gs = [torch.ones((), device='cuda') for _ in range(3)]\nfor _ in range(3):\n"
            "    a = max([m['acc'] for m in ms])\n    b = max([g.item() for g in gs])\n"
            "    c = max([len(m) for m in ms])\n    d = sorted(gs, key=lambda g: g.ndim)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.rand(8, device='cuda')\nfor _ in range(3):\n    m = max(x)\n",
            line=4,
            hot=True,
            message="Builtin `max(x)` compares GPU tensor values one by one on the host, syncing each time",
            fixed="import torch\nx = torch.rand(8, device='cuda')\nfor _ in range(3):\n    m = x.max()\n",
        ),
        Invalid(
            "import torch\ndef train(model, xs):\n    for x in xs:\n        loss = model(x)\n        a = torch.rand((), device='cuda')\n        b = max(a, loss.new_ones(()))\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\nx = torch.rand((), device='cuda')\nfor _ in range(3):\n    y = min(x, 0.5)\n",
            line=4,
            hot=True,
            fixed="import torch\nx = torch.rand((), device='cuda')\nfor _ in range(3):\n    y = torch.clamp(x, max=0.5)\n",
        ),
        Invalid(
            "import torch\nscores = torch.rand(8, device='cuda')\nranked = sorted(scores)\n",
            line=3,
            hot=False,
        ),
        Invalid(
            "import torch\n"
            "def scores(model, x):\n"
            "    return model(x).squeeze(1)\n"
            "model = torch.nn.Linear(4, 1).cuda()\n"
            "for _ in range(3):\n"
            "    best = max(scores(model, torch.ones(8, 4, device='cuda')))\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Clipper:\n"
            "    def __init__(self):\n"
            "        self.floor = torch.tensor(1e-8, device='cuda')\n"
            "    def __call__(self, norm):\n"
            "        return max(norm, self.floor)\n",
            line=6,
        ),
        Invalid(  # per-epoch metric dicts of CUDA values, best of the heads (vjepa2's eval)
            "import torch\nclass Recall:\n    def __init__(self, device):\n"
            "        self.tp = torch.zeros(4, device=device)\n"
            "    def __call__(self, logits):\n        return dict(accuracy=self.tp.sum() / 4, recall=self.tp.mean())\n"
            "def evaluate(heads, loader, device):\n    meters = [Recall(device) for _ in heads]\n"
            "    for x in loader:\n        metrics = [m(h(x.to(device))) for h, m in zip(heads, meters)]\n"
            "    return max([a['accuracy'] for a in metrics])\n"
            "evaluate([], [], torch.device('cuda'))\n",
            line=11,
            hot=False,
        ),
    ]
    BENCH = BenchPair(
        setup="scores = torch.rand(n, device=device)\n",
        flagged="def flagged(scores: torch.Tensor):\n    return max(scores)\n",
        fixed="def fixed(scores: torch.Tensor):\n    return scores.max()\n",
        sizes={"n": 256},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = is_builtin(ctx, node.func, _REDUCTIONS)
        if name is None:
            return
        pos = [a.value for a in positional(node)]
        if any(a.star for a in node.args):
            return
        if len(pos) == 1:
            if ctx.gpu(pos[0], EVIDENT) is None:
                if not self._gpu_items(pos[0]) or kwarg(node, "key") is not None:
                    return  # (`sorted(ts, key=len)` compares what the key gives)
                self._report(node, None)  # (a list has no `.max()`)
                return
            replacement = None
            if name in ("max", "min") and len(node.args) == 1:
                replacement = cst.Call(func=cst.Attribute(_paren(pos[0]), cst.Name(name)))
            self._report(node, replacement)
        elif len(pos) >= 2 and name in ("max", "min") and any(ctx.gpu(p, EVIDENT) is not None for p in pos):
            self._report(node, self._pairwise_fix(node, name, pos))

    def _gpu_items(self, e: cst.BaseExpression) -> bool:
        """`e` is a list of GPU tensors whose device is known (`[m["acc"] for m in metrics]`):
        comparing two of them reads a bool back."""
        v = self.ctx.infer(e)
        return v.kind == V.TENSORS and not v.assumed and self.ctx.gpu(e, RECEIVER) is not None

    def _report(self, node: cst.Call, replacement: Optional[cst.BaseExpression]) -> None:
        call = short(node)
        if replacement is None:
            self.report(node, call=call)
        else:
            alt = short(replacement)
            self.report(node, replacement, safe=False, fix_title=f"Use `{alt}` (NaN and result type may differ)", call=call)

    def _pairwise_fix(self, node: cst.Call, name: str, pos) -> Optional[cst.BaseExpression]:
        torch = torch_alias(self.ctx)
        if torch is None or len(pos) != 2 or len(node.args) != 2:
            return None
        a, b = pos
        if self.ctx.gpu(a, EVIDENT) is not None and self.ctx.gpu(b, EVIDENT) is not None:
            fn = "maximum" if name == "max" else "minimum"
            return cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name(fn)), args=[cst.Arg(a), cst.Arg(b)])
        t, k = (a, b) if self.ctx.gpu(a, EVIDENT) is not None else (b, a)
        if not is_python_scalar(k):
            return None
        bound = "min" if name == "max" else "max"
        return cst.Call(
            func=cst.Attribute(cst.Name(torch), cst.Name("clamp")),
            args=[cst.Arg(t), cst.Arg(k, keyword=cst.Name(bound), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))],
        )


def _paren(e: cst.BaseExpression) -> cst.BaseExpression:
    """Parenthesise a receiver that would bind wrongly before `.max()` (`a + b`)."""
    if type(e) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript) or e.lpar:
        return e
    return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
