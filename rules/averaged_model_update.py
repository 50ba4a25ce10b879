import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import arg, method_call, receiver, short
from synclint.semantic import library as L
from synclint.semantic import values as V


class AveragedModelUpdate(Rule):
    """
    ## What it does
    Flags `ema.update_parameters(model)` where `ema` is a `torch.optim.swa_utils.AveragedModel`
    (an EMA or SWA copy of the weights) in a program that runs on the GPU.

    ## Why is this bad?
    `AveragedModel` counts its updates in a tensor buffer, `n_averaged`, and `update_parameters`
    reads it on the host twice per call: `copy_param = bool(self.n_averaged == 0)` and
    `if self.n_averaged > 0:` (`torch/optim/swa_utils.py`, read in torch 2.13). With the
    buffer on the GPU (`AveragedModel(model, device=device)`, or the copy moved there) each is a
    read-back that waits for every kernel queued before it; with the buffer left on the CPU,
    the averaging instead copies it to the GPU (`self.n_averaged.to(device)`), a blocking
    host-to-device copy. Called after every optimizer step, as EMA training does, the host
    waits for the step's whole backward pass each time. On an H100 (torch 2.11, 2026-11-27),
    behind about 30 queued matmuls, one `update_parameters` held the host 11.9 ms with the
    count on the GPU and 12.7 ms with it on the CPU, where `torch._foreach_lerp_` over the
    same parameters took 0.11 ms; both fixture lines are in the GPU record. The pair below
    (`synclint bench`, same H100, 7 passes): 1.74x (1.72-1.79x) per step with host work,
    40 sync warnings to 0 (`docs/evidence/bench-SYN121-SYN115-h100-2026-11-27.json`).

    ## Use instead
    Keep the average yourself with one fused update and count steps in a Python int (timm's
    `ModelEmaV3` does this):

    ```python
    ema_params = [p.detach().clone() for p in model.parameters()]
    ...
    with torch.no_grad():
        torch._foreach_lerp_(ema_params, [p.detach() for p in model.parameters()], 1 - decay)
    ```

    ## Known problems
    Buffers (`use_buffers=True`) and an `avg_fn` other than the exponential or the running mean
    need their own update. On a machine without a GPU nothing waits; a script that never
    mentions a device or CUDA is not reported.
    """

    CODE = "SYN121"
    NAME = "averaged-model-update"
    CALLS = frozenset({"update_parameters"})
    MESSAGE = ("`{call}` reads `AveragedModel`'s step count (a tensor) back to the host, or copies it to the "
               "GPU, at each call, so the CPU waits for all queued GPU work")
    FIX_TITLE = "Average with `torch._foreach_lerp_` over the parameters and count steps in a Python int"
    CATALOGUE = ("A2", "B4")
    VALID = [
        # a script that never mentions a device: everything stays on the CPU
        Valid("import torch\nfrom torch.optim.swa_utils import AveragedModel\nmodel = torch.nn.Linear(4, 4)\n"
              "ema = AveragedModel(model)\nfor _ in range(3):\n    ema.update_parameters(model)\n"),
        # a project's own EMA class with a method of the same name
        Valid("import torch\nclass Ema:\n    def update_parameters(self, model):\n        pass\n"
              "model = torch.nn.Linear(4, 4).cuda()\nema = Ema()\nfor _ in range(3):\n    ema.update_parameters(model)\n"),
        # the fix: a fused lerp over the parameters
        Valid("import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nema = [p.detach().clone() for p in model.parameters()]\n"
              "for _ in range(3):\n    torch._foreach_lerp_(ema, [p.detach() for p in model.parameters()], 0.001)\n"),
    ]
    INVALID = [
        # SRGAN and ESRGAN: an EMA of the generator on the device, updated every step
        Invalid(
            "import torch\nfrom torch.optim.swa_utils import AveragedModel\n"
            "device = torch.device('cuda', 0)\nmodel = torch.nn.Linear(4, 4).to(device)\n"
            "ema = AveragedModel(model, device=device, avg_fn=lambda a, p, n: 0.999 * a + 0.001 * p)\n"
            "for _ in range(10):\n    ema.update_parameters(model)\n",
            line=7,
            hot=True,
        ),
        # through an attribute and a function: the trainer holds the EMA
        Invalid(
            "import torch\nfrom torch.optim import swa_utils\n"
            "class Trainer:\n    def __init__(self, model):\n        self.model = model.cuda()\n"
            "        self.ema = swa_utils.AveragedModel(self.model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.999))\n"
            "    def step(self):\n        self.ema.update_parameters(self.model)\n"
            "def fit(trainer, n):\n    for _ in range(n):\n        trainer.step()\n",
            line=8,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn\n"
            "model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(depth)]).to(device)\n"
            "xs = [torch.randn(64, width, device=device) for _ in range(steps)]\n"
            "ema = AveragedModel(model, device=device, multi_avg_fn=get_ema_multi_avg_fn(0.99))\n"
            "ema.update_parameters(model)\n"
            "start = [p.detach().clone() for p in ema.module.parameters()]\n"
            "ema_params = [p.detach().clone() for p in start]\n"
        ),
        flagged=(
            "def flagged(model, ema, start, xs):\n"
            "    torch._foreach_copy_([p.detach() for p in ema.module.parameters()], start)\n"
            "    for x in xs:\n"
            "        model(x).square().mean()\n"
            "        ema.update_parameters(model)\n"
            "    return torch.cat([p.detach().flatten() for p in ema.module.parameters()])\n"
        ),
        fixed=(
            "def fixed(model, ema_params, start, xs):\n"
            "    torch._foreach_copy_(ema_params, start)\n"
            "    for x in xs:\n"
            "        model(x).square().mean()\n"
            "        with torch.no_grad():\n"
            "            torch._foreach_lerp_(ema_params, [p.detach() for p in model.parameters()], 0.01)\n"
            "    return torch.cat([p.flatten() for p in ema_params])\n"
        ),
        sizes={"width": 512, "depth": 8, "steps": 20},
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, ("update_parameters",)) is None or ctx.in_cuda_less or not ctx.gpu_evident:
            return
        ema = ctx.infer(receiver(node))
        if ema.kind != V.MODULE or ema.cls != L.AVERAGED_MODEL:
            return
        model = arg(node, 0, "model")
        if ema.device == V.CPU and model is not None and ctx.infer(model).device == V.CPU:
            return  # an average of a model on the CPU, kept on the CPU
        self.report(node, call=short(node))
