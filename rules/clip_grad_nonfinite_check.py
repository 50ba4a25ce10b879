import libcst as cst

from synclint.semantic import RECEIVER
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import last_names, short
from synclint.rules._helpers import arg, literal_bool

# Qualified name -> positional index of `error_if_nonfinite`.
_FUNCS = {
    "torch.nn.utils.clip_grad_norm_": 3,
    "torch.nn.utils.clip_grad_norm": 3,
    "torch.nn.utils.clip_grad.clip_grad_norm_": 3,
    "torch.nn.utils.clip_grad.clip_grad_norm": 3,
    "torch.nn.utils.get_total_norm": 2,
    "torch.nn.utils.clip_grad.get_total_norm": 2,
    "torch.nn.utils.clip_grad._get_total_norm": 2,
}


class ClipGradNonfiniteCheck(Rule):
    """
    ## What it does
    Flags `torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True)` (and
    `clip_grad_norm`, `get_total_norm`) on parameters that may live on the GPU.

    ## Why is this bad?
    To raise on a NaN or infinite norm, `torch/nn/utils/clip_grad.py` evaluates
    `if error_if_nonfinite and torch.logical_or(total_norm.isnan(), total_norm.isinf()):`,
    which reads a GPU boolean back and waits for all queued GPU work (the backward pass,
    usually) on every step. Measured on an H200 with torch 2.11: caught by
    `torch.cuda.set_sync_debug_mode`; the default (`error_if_nonfinite=False`) is not.

    ## Use instead
    Leave the default and check the returned norm lazily, or let `GradScaler` skip
    non-finite steps:

    ```python
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    nonfinite += ~norm.isfinite()            # a GPU tensor; read back once per N steps
    ```

    Removing the argument changes error behaviour (a NaN norm no longer stops training at
    that step), so there is no automatic fix.
    """

    CODE = "SYN114"
    NAME = "clip-grad-nonfinite-check"
    CALLS = last_names(_FUNCS)
    MESSAGE = "`{func}(..., error_if_nonfinite=True)` checks the norm for NaN/inf on the host, which waits for all queued GPU work"
    FIX_TITLE = "Drop `error_if_nonfinite=True` and check the returned norm lazily"
    CATALOGUE = ("E6",)
    VALID = [
        # point 7: a script that never mentions a device: the module stays on the CPU
        Valid(
            "import torch\ndef build():\n    return torch.nn.Linear(4, 4)\nmodel = build()\nfor _ in range(3):\n"
            "    model(torch.ones(2, 4)).sum().backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n"
        ),
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nfor _ in range(3):\n"
            "    model(torch.ones(2, 4, device='cuda')).sum().backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=False)\n"
        ),
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).to('cpu')\nfor _ in range(3):\n"
            "    model(torch.ones(2, 4)).sum().backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n"
        ),
        Valid(
            "import torch\nfrom lightning import Trainer\ntrainer = Trainer(gradient_clip_val=1.0)\n"
            "def clip(model, error_if_nonfinite=True):\n    return model.clip_grad_norm_(1.0)\n"
        ),
        Valid(
            "import torch\n"
            "def build():\n"
            "    return torch.nn.Linear(4, 4).to('cpu')\n"
            "model = build()\n"
            "for _ in range(3):\n"
            "    model(torch.ones(2, 4)).sum().backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n",
        ),
        Valid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.model = torch.nn.Linear(4, 4).to('cpu')\n"
            "    def step(self, x):\n"
            "        self.model(x).sum().backward()\n"
            "        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, error_if_nonfinite=True)\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch.nn.utils import clip_grad_norm_\nmodel = torch.nn.Linear(4, 4).cuda()\n"
            "for _ in range(3):\n    model(torch.ones(2, 4, device='cuda')).sum().backward()\n"
            "    clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n",
            line=6,
            hot=True,
            message="`clip_grad_norm_(..., error_if_nonfinite=True)` checks the norm for NaN/inf on the host, "
            "which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nfrom torch import nn\ndef train_step(model, batch):\n    model(batch).sum().backward()\n"
            "    nn.utils.clip_grad_norm_(model.parameters(), 1.0, 2.0, True)\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def build():\n"
            "    return torch.nn.Linear(4, 4).cuda()\n"
            "model = build()\n"
            "for _ in range(3):\n"
            "    model(torch.ones(2, 4, device='cuda')).sum().backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n",
            line=7,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.model = torch.nn.Linear(4, 4).cuda()\n"
            "    def step(self, x):\n"
            "        self.model(x).sum().backward()\n"
            "        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, error_if_nonfinite=True)\n",
            line=7,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "params = [torch.randn(512, 512, device=device, requires_grad=True) for _ in range(n_params)]\n"
            "for p in params:\n"
            "    p.grad = torch.randn_like(p)\n"
        ),
        flagged=(
            "def flagged(params):\n"
            "    return torch.nn.utils.clip_grad_norm_(params, 1e9, error_if_nonfinite=True)\n"
        ),
        fixed=(
            "def fixed(params):\n"
            "    return torch.nn.utils.clip_grad_norm_(params, 1e9)\n"
        ),
        sizes={"n_params": 50},
        condition="the gradients are finite (or the norm is checked later)",
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        index = _FUNCS.get(q or "")
        if index is None or literal_bool(arg(node, index, "error_if_nonfinite")) is not True:
            return
        params = arg(node, 0, "parameters") or arg(node, 0, "tensors")
        if params is not None and self.ctx.gpu(params, RECEIVER) is None:
            return  # parameters known to be on the CPU (or a script that never uses a GPU)
        self.report(node, func=short(node.func))
