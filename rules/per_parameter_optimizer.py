from typing import List, Tuple

import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import kwarg, short
from synclint.semantic.context import Site
from synclint.semantic import values as V

LOOP_TITLE = "Use a `torch.optim` optimizer (`fused=True` on CUDA) or `torch._foreach_*` ops over all parameters"
CTOR_TITLE = "Drop `foreach=False` (foreach is the CUDA default) or pass `fused=True`"


class PerParameterOptimizer(Rule):
    """
    ## What it does
    Flags optimizer updates that run one parameter at a time on a CUDA file: a
    `torch.optim` optimizer built with `foreach=False`, and hand-written update loops
    (`for p in model.parameters(): p.add_(p.grad, alpha=-lr)`, `p -= lr * p.grad`).

    ## Why is this bad?
    A per-parameter update launches a few small kernels for every parameter tensor, so a
    model with hundreds of tensors spends the optimizer step launching kernels. The
    `foreach` implementations (the CUDA default) batch each operation over all parameters
    with multi-tensor kernels, and `fused=True` does the whole Adam/AdamW/SGD update in one
    kernel per parameter group. Measured [H200, torch 2.11], Adam over 200 parameters:
    for-loop 12012 us per step, fused 493 us. With `GradScaler`, a fused optimizer also
    takes the inf check as a device tensor instead of reading it back (catalogue F1).

    ## Use instead
    ```python
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)  # or leave foreach default
    ```
    For a hand-written rule, use the multi-tensor ops:
    `torch._foreach_add_(params, grads, alpha=-lr)`.

    ## Known problems
    `foreach=False` is sometimes deliberate: the foreach path holds intermediates for all
    parameters at once, so its peak memory is higher. Loops are recognised by their body
    (an in-place update of the loop variable from its own `.grad`); updates that go through
    helper functions are not seen. Files that never mention a CUDA device are skipped.
    """

    CODE = "SYN503"
    NAME = "per-parameter-optimizer"
    MESSAGE = "`{what}` updates the parameters one tensor at a time, with kernel launches per parameter"
    FIX_TITLE = LOOP_TITLE
    CATALOGUE = ("F1", "F4")
    VALID = [
        Valid("import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.Adam(model.parameters(), lr=1e-3)\n"),
        Valid("import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.AdamW(model.parameters(), fused=True, foreach=False)\n"),
        # Freezing, zeroing, counting, clipping: not updates.
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nfor p in model.parameters():\n    p.requires_grad_(False)\n"
            "for p in model.parameters():\n    p.grad = None\nn = sum(p.numel() for p in model.parameters())\n"
            "for p in model.parameters():\n    if p.grad is not None:\n        p.grad.data.clamp_(-1, 1)\n"
        ),
        # Weight clipping (WGAN) and EMA: in-place, but not from the parameter's gradient.
        Valid(
            "import torch\nD = torch.nn.Linear(4, 1).cuda()\nfor p in D.parameters():\n    p.data.clamp_(-0.01, 0.01)\n"
        ),
        # Gradients accumulated into other buffers: not a parameter update.
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nacc = [torch.zeros_like(p) for p in model.parameters()]\n"
            "for p, a in zip(model.parameters(), acc):\n    a.add_(p.grad)\n"
        ),
        # A CPU-only file: foreach buys nothing there.
        Valid("import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)\n"),
        # Unknown value: not a literal False.
        Valid("import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=args.foreach)\n"),
        Valid(
            "import torch\n"
            "def make_optimizer(model):\n"
            "    return torch.optim.Adam(model.parameters(), lr=1e-3)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "opt = make_optimizer(model)\n",
        ),
        Valid(
            "import torch\n"
            "def sgd_step(params, lr):\n"
            "    with torch.no_grad():\n"
            "        torch._foreach_add_(params, [p.grad for p in params], alpha=-lr)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "for _ in range(10):\n"
            "    sgd_step(list(model.parameters()), 0.1)\n",
        ),
        # every caller passes a CPU model's parameters
        Valid(
            "import torch\n"
            "def sgd_step(params, lr):\n"
            "    with torch.no_grad():\n"
            "        for p in params:\n"
            "            p.add_(p.grad, alpha=-lr)\n"
            "model = torch.nn.Linear(4, 4)\n"
            "for _ in range(10):\n"
            "    sgd_step(list(model.parameters()), 0.1)\n",
        ),
        Valid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.model = torch.nn.Linear(4, 4).cuda()\n"
            "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
            "    def step(self):\n"
            "        self.opt.step()\n"
            "        for p in self.model.parameters():\n"
            "            p.grad = None\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)\n",
            line=3,
            hot=False,
            message="`Adam(..., foreach=False)` updates the parameters one tensor at a time, with kernel launches per parameter",
        ),
        Invalid(
            "import torch\ndef sgd_step(model, lr):\n    with torch.no_grad():\n        for p in model.parameters():\n"
            "            if p.grad is None:\n                continue\n            p -= lr * p.grad\n"
            "model = torch.nn.Linear(4, 4).to('cuda')\nfor _ in range(10):\n    sgd_step(model, 0.1)\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nfor step in range(3):\n"
            "    for name, p in model.named_parameters():\n        d_p = p.grad.data\n        p.data.add_(d_p, alpha=-0.1)\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def make_optimizer(model):\n"
            "    return torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "opt = make_optimizer(model)\n",
            line=3,
        ),
        Invalid(
            "import torch\n"
            "def sgd_step(params, lr):\n"
            "    with torch.no_grad():\n"
            "        for p in params:\n"
            "            p.add_(p.grad, alpha=-lr)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "for _ in range(10):\n"
            "    sgd_step(list(model.parameters()), 0.1)\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.model = torch.nn.Linear(4, 4).cuda()\n"
            "    def step(self, lr):\n"
            "        for p in self.model.parameters():\n"
            "            p.data.add_(p.grad, alpha=-lr)\n",
            line=6,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "params = [torch.randn(64, 64, device=device) for _ in range(n_params)]\n"
            "grads = [torch.randn_like(p) for p in params]\n"
            "fast = {'fused': True} if device == 'cuda' else {'foreach': True}\n"
        ),
        flagged=(
            "def flagged(params, grads, steps):\n"
            "    ps = [p.clone().requires_grad_() for p in params]\n"
            "    opt = torch.optim.Adam(ps, lr=1e-3, foreach=False)\n"
            "    for _ in range(steps):\n"
            "        for p, g in zip(ps, grads):\n"
            "            p.grad = g\n"
            "        opt.step()\n"
            "    return torch.cat([p.detach().flatten() for p in ps])\n"
        ),
        fixed=(
            "def fixed(params, grads, steps, fast):\n"
            "    ps = [p.clone().requires_grad_() for p in params]\n"
            "    opt = torch.optim.Adam(ps, lr=1e-3, **fast)\n"
            "    for _ in range(steps):\n"
            "        for p, g in zip(ps, grads):\n"
            "            p.grad = g\n"
            "        opt.step()\n"
            "    return torch.cat([p.detach().flatten() for p in ps])\n"
        ),
        sizes={"n_params": 200, "steps": 5},
        condition="all parameters are floating-point CUDA tensors (for `fused=True`)",
        compare="close",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # (node, site, what, fix title, whether its parameters are known to be on CUDA)
        self._pending: List[Tuple[cst.CSTNode, Site, str, str, bool]] = []

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.torch_name(node.func)
        if q is None or not q.startswith("optim."):
            return
        last = q.rsplit(".", 1)[-1]
        if not last[:1].isupper() or ".lr_scheduler" in q or ".swa_utils" in q:
            return
        foreach = kwarg(node, "foreach")
        if not (type(foreach) is cst.Name and foreach.value == "False"):
            return
        fused = kwarg(node, "fused")
        if type(fused) is cst.Name and fused.value == "True":
            return
        if not self.ctx.in_cuda_less:
            params = node.args[0].value if node.args and node.args[0].keyword is None else kwarg(node, "params")
            self._pending.append((node, self.ctx.site(), f"{last}(..., foreach=False)", CTOR_TITLE,
                                  self._on_cuda(params)))

    def visit_For(self, node: cst.For) -> None:
        if not self.ctx.reads_grads() or self.ctx.in_cuda_less:  # no update loop without a `.grad`
            return
        if self.ctx.updates_from_own_grad(node):
            what = f"for {short(node.target, 20)} in {short(node.iter, 30)}"
            self._pending.append((node, self.ctx.site(), what, LOOP_TITLE, self._on_cuda(node.iter)))

    def _on_cuda(self, params) -> bool:
        """The parameters are known to be on CUDA (another module's model moved there)."""
        return params is not None and self.ctx.infer(params).device == V.CUDA

    def leave_Module(self, node: cst.Module) -> None:
        # A file that puts something on CUDA, or parameters the model knows are there: a
        # CPU-only script's per-parameter loop costs nothing this rule is about.
        for n, where, what, title, on_cuda in self._pending:
            if on_cuda or self.ctx.puts_on_cuda:
                self.report_at(where, n, fix_title=title, what=what)
