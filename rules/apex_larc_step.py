import libcst as cst

from synclint.rule import Invalid, Rule, Valid
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import library as L
from synclint.semantic import values as V


class ApexLarcStep(Rule):
    """
    ## What it does
    Flags `optimizer.step()` where `optimizer` is NVIDIA apex's `LARC` wrapper
    (`apex.parallel.LARC.LARC`) on some path.

    ## Why is this bad?
    `LARC.step` computes the norm of each parameter and of its gradient on the GPU, then tests
    them as Python bools (`if param_norm != 0 and grad_norm != 0:`, `apex/parallel/LARC.py`):
    two read-backs for every parameter, every step. A ResNet-50 has 161 parameter tensors, so
    one step waits on the GPU 161 times before the wrapped optimizer runs.

    ## Use instead
    Compute the trust ratio on the GPU and let `torch.where` stand for the test, as timm's
    `timm.optim.Lars` and the LARS of MoCo v3 do:
    ```python
    trust = torch.where((w_norm > 0) & (g_norm > 0), coeff * w_norm / (g_norm + eps), 1.0)
    p.grad.mul_(trust)
    ```

    ## Known problems
    No benchmark pair of its own: its flagged side would need apex, which the benchmark
    machine does not have. The test inside `LARC.step` is SYN105's pattern (a GPU tensor used
    as a Python bool), whose pair measures it.
    """

    CODE = "SYN119"
    NAME = "apex-larc-step"
    CALLS = frozenset({"step"})
    MESSAGE = "`{call}` of apex's `LARC` tests each parameter's norm on the host, a read-back per parameter"
    FIX_TITLE = "Compute the trust ratio on the GPU with `torch.where` (timm's `Lars` does)"
    CATALOGUE = ("A2",)
    VALID = [
        # a plain optimizer; a project's own LARC class; a scheduler's step
        Valid("import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in xs:\n    opt.step()\n"),
        Valid(
            "import torch\nclass LARC:\n    def __init__(self, optimizer):\n        self.optim = optimizer\n"
            "    def step(self):\n        self.optim.step()\n"
            "opt = LARC(torch.optim.SGD(model.parameters(), lr=0.1))\nfor x in xs:\n    opt.step()\n"
        ),
        Valid(
            "import torch\nfrom apex.parallel.LARC import LARC\n"
            "opt = LARC(torch.optim.SGD(model.parameters(), lr=0.1))\n"
            "sched = torch.optim.lr_scheduler.StepLR(opt.optim, 10)\nfor x in xs:\n    sched.step()\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom apex.parallel.LARC import LARC\n"
            "opt = LARC(optimizer=torch.optim.SGD(model.parameters(), lr=0.1), trust_coefficient=0.001)\n"
            "for x in xs:\n    model(x).sum().backward()\n    opt.step()\n",
            line=6,
            hot=True,
            message="`opt.step()` of apex's `LARC` tests each parameter's norm on the host, a read-back per parameter",
        ),
        # on one path only (simsiam's `--lars`), and across a function
        Invalid(
            "import torch\n"
            "def build(model, lars):\n"
            "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    if lars:\n"
            "        from apex.parallel.LARC import LARC\n"
            "        opt = LARC(optimizer=opt, trust_coefficient=0.001, clip=False)\n"
            "    return opt\n"
            "optimizer = build(model, args.lars)\n"
            "for x in xs:\n    optimizer.step()\n",
            line=10,
            hot=True,
        ),
        # through an attribute
        Invalid(
            "import torch\nimport apex\n"
            "class Trainer:\n"
            "    def __init__(self, model):\n"
            "        self.opt = apex.parallel.LARC.LARC(torch.optim.SGD(model.parameters(), lr=0.1))\n"
            "    def training_step(self, batch):\n"
            "        self.opt.step()\n",
            line=7,
            hot=True,
        ),
    ]
    def visit_Call(self, node: cst.Call) -> None:
        if not method_call(node, ("step",)) or node.args:
            return
        opt = self.ctx.infer(receiver(node))
        if opt.kind == V.OPTIM and L.LARC in V.classes_of(opt):
            self.report(node, call=short(node))
