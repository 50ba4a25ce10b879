import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import RECEIVER
from synclint.semantic import library as L
from synclint.semantic import values as V


class TensorItem(Rule):
    """
    ## What it does
    Flags `.item()` on a tensor that lives on the GPU, and a CUDA `GradScaler`'s
    `get_scale()`, which calls `.item()` on its scale.

    ## Why is this bad?
    `.item()` copies one element to the host and blocks until every kernel queued
    before it has finished (`_local_scalar_dense_cuda` -> `memcpy_and_sync`). In a
    training loop the CPU can no longer run ahead of the GPU: each iteration pays a
    round trip and the launch queue drains. `GradScaler.get_scale()` returns
    `self._scale.item()` of its CUDA scale tensor (`torch/amp/grad_scaler.py`): logging the
    scale every step is the same read-back.

    ## Use instead
    Keep the value on the GPU: accumulate metrics in a GPU tensor (`total += loss.detach()`)
    and call `.item()` once per N steps or per epoch, or under a logging guard
    (`if step % log_every == 0:`).

    ## Known problems
    Receivers whose type cannot be inferred are assumed to be tensors only in files that
    import no NumPy-like library (NumPy scalars have `.item()` too).
    """

    CODE = "SYN101"
    NAME = "tensor-item"
    CALLS = frozenset({"item"} | L.SCALER_READ_METHODS)
    MESSAGE = "`{recv}.item()` copies a GPU value to the host and waits for all queued GPU work{inside}"
    FIX_TITLE = "Accumulate on the GPU (`total += x.detach()`) and read it once per N steps or after the loop"
    CATALOGUE = ("A1",)
    VALID = [
        # a helper called with CPU tensors here (and with CUDA ones elsewhere): this call's
        # result follows this call's arguments
        Valid(
            "import torch\ndef batch_loss(pred, target):\n    return (pred - target).pow(2).mean()\n"
            "for _ in range(3):\n    a = batch_loss(torch.ones(3, device='cuda'), torch.zeros(3, device='cuda'))\n"
            "    c = batch_loss(torch.ones(3), torch.zeros(3)).item()\n"
        ),
        Valid("import numpy as np\nx = np.float32(3.0)\nv = x.item()\n"),
        Valid("import torch\nx = torch.zeros(3)\nv = x.sum().item()\n"),
        Valid("import torch\nd = {}\nfor k, v in d.items():\n    pass\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nf = x.item\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda').cpu()\nv = x[0].item()\n"),
        # whatever `obj` is, the result of `.cpu()` is on the host (that copy is SYN103's)
        Valid("import torch\ndef pad(obj):\n    host = obj.cpu()\n    return [v.item() for v in host]\n"),
        Valid(
            "import torch\n"
            "def batch_loss(pred, target):\n"
            "    return (pred - target).pow(2).mean()\n"
            "pred = torch.rand(8, device='cuda').cpu()\n"
            "for _ in range(3):\n"
            "    v = batch_loss(pred, torch.zeros(8)).item()\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def log_loss(loss):\n"
            "    return loss.item()\n"
            "model = torch.nn.Linear(4, 1).cuda()\n"
            "for _ in range(3):\n"
            "    log_loss(model(torch.ones(2, 4, device='cuda')).sum().cpu())\n"
            "    log_loss(torch.zeros(()))\n",
        ),
        Valid(
            "import torch\n"
            "class Meter:\n"
            "    def __init__(self):\n"
            "        self.total = torch.zeros(())\n"
            "    def update(self, loss):\n"
            "        self.total += loss.detach().cpu()\n"
            "        print(self.total.item())\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "def mean_value(x):\n"
            "    return x.mean().item()\n"
            "print(mean_value(torch.rand(8)))\n",
        ),
        # the branch of another accelerator (MPS) never runs on a CUDA machine
        Valid(
            "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'mps'\nmps = device == 'mps'\n"
            "def train(model, loader):\n    for x in loader:\n        loss = model(x.to(device)).sum()\n"
            "        if mps:\n            print(loss.item())\n        if device == 'mps':\n            print(loss.item())\n"
            "        if torch.backends.mps.is_available():\n            print(loss.item())\n"
        ),
        # a disabled scaler keeps no tensor; a project class's own `get_scale`; the scaler's
        # state_dict (it reads the scale too, once per checkpoint: not flagged)
        Valid(
            "import torch\nscaler = torch.cuda.amp.GradScaler(enabled=False)\n"
            "class Sched:\n    def get_scale(self):\n        return 2.0\n"
            "def train(model, opt, loader):\n    sched = Sched()\n    for x in loader:\n"
            "        scaler.scale(model(x.cuda()).sum()).backward()\n        scaler.step(opt)\n        scaler.update()\n"
            "        print(scaler.get_scale(), sched.get_scale())\n    torch.save(scaler.state_dict(), 'ckpt.pt')\n"
        ),
    ]
    INVALID = [
        # VAR's AmpOptimizer: the scale logged at every optimizer step
        Invalid(
            "import torch\nscaler = torch.cuda.amp.GradScaler(init_scale=2. ** 11)\n"
            "def train(model, opt, loader):\n    for x in loader:\n"
            "        scaler.scale(model(x.cuda()).sum()).backward()\n        scaler.step(opt)\n        scaler.update()\n"
            "        scale = scaler.get_scale()\n",
            line=8,
            hot=True,
            message="`scaler._scale.item()` copies a GPU value to the host and waits for all queued GPU work "
                    "(inside `scaler.get_scale()`: a GradScaler reads its scale with `.item()`)",
        ),
        # a dict filled with the step's losses, read back in one comprehension per step
        Invalid(
            "import torch\n"
            "def losses(x):\n"
            "    out = {}\n"
            "    out['ce'] = x.sum()\n"
            "    out['l1'] = x.abs().mean()\n"
            "    return out\n"
            "w = torch.randn(8, device='cuda')\n"
            "for step in range(10):\n"
            "    logged = {k: v.item() for k, v in losses(w).items()}\n",
            line=9,
            hot=True,
        ),
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = x.sum().item()\n",
            line=4,
            hot=True,
            message="`x.sum().item()` copies a GPU value to the host and waits for all queued GPU work",
        ),
        Invalid(
            "import torch\ndef train(model, loader):\n    for x, y in loader:\n        loss = model(x).sum()\n    print(loss.item())\n",
            line=5,
            hot=False,
        ),
        Invalid(
            "import torch\n"
            "def batch_loss(pred, target):\n"
            "    return (pred - target).pow(2).mean()\n"
            "pred = torch.rand(8, device='cuda')\n"
            "for _ in range(3):\n"
            "    v = batch_loss(pred, torch.zeros(8, device='cuda')).item()\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def log_loss(loss):\n"
            "    return loss.item()\n"
            "model = torch.nn.Linear(4, 1).cuda()\n"
            "for _ in range(3):\n"
            "    log_loss(model(torch.ones(2, 4, device='cuda')).sum())\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Meter:\n"
            "    def __init__(self):\n"
            "        self.total = torch.zeros((), device='cuda')\n"
            "    def update(self, loss):\n"
            "        self.total += loss\n"
            "        print(self.total.item())\n",
            line=7,
        ),
        # the CUDA side of the same test is the path that runs
        Invalid(
            "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'mps'\nmps = device == 'mps'\n"
            "def train(model, loader):\n    for x in loader:\n        loss = model(x.to(device)).sum()\n"
            "        if not mps:\n            print(loss.item())\n",
            line=8, hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(256, 256, device=device)\n"
            "xs = [torch.randn(64, 256, device=device) for _ in range(steps)]\n"
        ),
        flagged=(
            "def flagged(w, xs):\n"
            "    total = 0.0\n"
            "    for x in xs:\n"
            "        loss = (x @ w).relu().mean()\n"
            "        total += loss.item()\n"
            "    return total\n"
        ),
        fixed=(
            "def fixed(w, xs):\n"
            "    total = torch.zeros((), device=w.device)\n"
            "    for x in xs:\n"
            "        loss = (x @ w).relu().mean()\n"
            "        total += loss.detach()\n"
            "    return total  # read once, after the loop, by the caller\n"
        ),
        sizes={"steps": 50},
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args and method_call(node, L.SCALER_READ_METHODS):
            scaler = self.ctx.infer(receiver(node))
            if scaler.kind == V.OBJECT and scaler.cls == L.GRAD_SCALER and scaler.device == V.CUDA:
                self.report(node, recv=f"{short(receiver(node))}._scale",
                            inside=f" (inside `{short(node)}`: a GradScaler reads its scale with `.item()`)")
            return
        if node.args or not method_call(node, ("item",)):
            return
        recv = receiver(node)
        if self.ctx.gpu(recv, RECEIVER) is not None:
            self.report(node, recv=short(recv), inside="")
