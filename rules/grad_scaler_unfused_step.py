import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short
from synclint.rules._helpers import arg
from synclint.semantic import library as L
from synclint.semantic import values as V

# Optimizers whose `fused=True` implementation takes `found_inf` from the scaler as a GPU
# tensor (`_step_supports_amp_scaling`, torch/optim/{adam,adamw,sgd,adagrad}.py).
_FUSABLE = {"Adam", "AdamW", "SGD", "Adagrad"}
_ANY = "torch.optim.Optimizer"  # the class an annotation gives: any optimizer
_OPTIMIZER_BASES = frozenset({_ANY, "torch.optim.optimizer.Optimizer"})
# An optimizer with no fused step has no `fused=True` to pass
_NO_FUSED_FIX = ("`{opt}` has no fused step: bfloat16 autocast needs no `GradScaler`, or the optimizer "
            "can take `found_inf` itself (`_step_supports_amp_scaling = True`)")

class GradScalerUnfusedStep(Rule):
    """
    ## What it does
    Flags `scaler.step(optimizer)` where `scaler` is a CUDA `GradScaler` the model knows (made
    in the file, an attribute, a parameter every caller passes one to), or a call of timm's
    `NativeScaler` (`loss_scaler(loss, optimizer)`, which steps one inside), and `optimizer` is an
    `Adam`, `AdamW`, `SGD` or `Adagrad` made without `fused=True`, or an optimizer made where
    the model cannot see (a builder in a library, `create_optimizer(args, model)`): only an
    optimizer made with an explicit `fused=True` skips the read-back. Also flags an optimizer
    that has no fused step at all (`RMSprop`, a LARS class of the project), which reads back
    on every step whatever its options.

    ## Why is this bad?
    For an optimizer without fused AMP support, `GradScaler.step` decides on the host whether
    to skip the step: `torch/amp/grad_scaler.py::_maybe_opt_step` runs
    `sum(v.item() for v in found_inf_per_device.values())`, a read-back that waits for the
    whole backward pass and unscale on every step. Fused optimizers set
    `_step_supports_amp_scaling`; the scaler then hands them `found_inf` and `grad_scale` as
    GPU tensors and the skip happens inside the fused kernel, with no read-back. Measured on
    an H200 with torch 2.11: `scaler.step` with a foreach `Adam` is caught by
    `torch.cuda.set_sync_debug_mode`, with `Adam(fused=True)` it is not. `synclint bench`
    (8 Linear layers of 256, 20 steps; H100, torch 2.11, 2026-11-26): 1.11x faster with
    `fused=True` when the host has work between steps (95% interval 1.08-1.15x).

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    scaler = torch.amp.GradScaler("cuda")
    ...
    scaler.step(optimizer)   # no host round trip
    ```

    `fused=True` needs every parameter on a supported device with a floating-point dtype,
    and it rounds slightly differently from the foreach implementation.

    ## Known problems
    The model must know the scaler (a `GradScaler` made where it cannot see is never
    flagged). An optimizer whose origin it cannot see is reported with "unless `opt` is a
    fused optimizer": on the corpus (docs/evaluation.md) every such site was a real per-step
    read-back, but a fused optimizer made by a builder would be a false finding (`# noqa:
    SYN115`). For an optimizer with no fused step there is no switch to flip: the hint is
    bfloat16 autocast, which needs no scaler, or a project optimizer that takes `found_inf`
    itself (`_step_supports_amp_scaling = True`, as torch's fused ones do); a project class
    that declares it is not flagged.
    """

    CODE = "SYN115"
    NAME = "grad-scaler-unfused-step"
    MESSAGE = "`{call}` reads the inf/NaN check back to the host {why}"
    FIX_TITLE = "Create `{opt}` with `fused=True` so that `GradScaler` skips bad steps on the GPU"
    DEFAULT_ON = True
    CATALOGUE = ("F1",)
    VALID = [
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n"
            "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n"
            "scaler = torch.amp.GradScaler('cuda')\nfor _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4, device='cuda')).sum()).backward()\n"
            "    scaler.step(opt)\n    scaler.update()\n"
        ),
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n"
            "opt = torch.optim.Adam(model.parameters())\nscaler = torch.amp.GradScaler('cuda')\n"
            "def train(model, opt, scaler, xs):\n    for x in xs:\n"
            "        scaler.scale(model(x).sum()).backward()\n        scaler.step(opt)\n        scaler.update()\n"
        ),
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "scaler = torch.amp.GradScaler('cpu')\nfor _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4)).sum()).backward()\n    scaler.step(opt)\n    scaler.update()\n"
        ),
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.Adam(model.parameters())\n"
            "scaler = torch.amp.GradScaler('cuda', enabled=False)\nfor _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4, device='cuda')).sum()).backward()\n    scaler.step(opt)\n"
        ),
        Valid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n"
            "opt = torch.optim.Adam(model.parameters(), fused=torch.cuda.is_available())\n"
            "scaler = torch.amp.GradScaler()\nfor _ in range(3):\n    scaler.step(opt)\n"
        ),
        Valid(  # a project optimizer that takes the scaler's `found_inf` itself
            "import torch\nfrom torch import optim\n"
            "class LARS(optim.Optimizer):\n    _step_supports_amp_scaling = True\n"
            "    def step(self, closure=None, grad_scaler=None):\n        pass\n"
            "def train(model, xs):\n    opt = LARS(model.parameters())\n    scaler = torch.amp.GradScaler()\n"
            "    for x in xs:\n        scaler.scale(model(x).sum()).backward()\n        scaler.step(opt)\n"
        ),
        Valid(
            "import torch\n"
            "def make_optimizer(model):\n"
            "    return torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "opt = make_optimizer(model)\n"
            "scaler = torch.amp.GradScaler('cuda')\n"
            "for _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4, device='cuda')).sum()).backward()\n"
            "    scaler.step(opt)\n"
            "    scaler.update()\n",
        ),
        Valid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self, model):\n"
            "        self.opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)\n"
            "        self.scaler = torch.amp.GradScaler('cuda')\n"
            "    def train_step(self, loss):\n"
            "        self.scaler.scale(loss).backward()\n"
            "        self.scaler.step(self.opt)\n"
            "        self.scaler.update()\n",
        ),
        # timm's NativeScaler with a fused optimizer; a project's own callable scaler
        Valid(
            "import torch\nfrom timm.utils import NativeScaler\n"
            "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\nloss_scaler = NativeScaler()\n"
            "for x in xs:\n    loss_scaler(model(x).sum(), opt)\n"
        ),
        Valid(
            "import torch\nclass Scaler:\n    def __call__(self, loss, opt):\n        loss.backward()\n        opt.step()\n"
            "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\nloss_scaler = Scaler()\n"
            "for x in xs:\n    loss_scaler(model(x).sum(), opt)\n"
        ),
        Valid(  # the same through a parameter annotated as any `Optimizer`: its caller's is fused
            "import torch\n"
            "def step(scaler, loss, optimizer: torch.optim.Optimizer):\n"
            "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n"
            "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\nscaler = torch.amp.GradScaler('cuda')\n"
            "for x in xs:\n    step(scaler, model(x).sum(), opt)\n"
        ),
        Valid(  # built disabled by its defaults: bf16 autocast needs no scaler, and its step never syncs
            "import torch\ndtype = 'bfloat16'\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.Adam(model.parameters())\n"
            "scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))\nfor _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4, device='cuda')).sum()).backward()\n    scaler.step(opt)\n"
        ),
    ]
    INVALID = [
        # vicreg and barlowtwins: the project's LARS, defined below the training loop
        Invalid(
            "import torch\nfrom torch import optim\n"
            "def train(model, xs):\n    opt = LARS(model.parameters())\n    scaler = torch.cuda.amp.GradScaler()\n"
            "    for x in xs:\n        scaler.scale(model(x).sum()).backward()\n        scaler.step(opt)\n"
            "        scaler.update()\n"
            "class LARS(optim.Optimizer):\n    def step(self):\n        pass\n",
            line=8,
            hot=True,
            message="`scaler.step(opt)` reads the inf/NaN check back to the host because `opt` (`LARS`) has no fused step",
        ),
        Invalid(  # torch's optimizers without a fused implementation
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.RMSprop(model.parameters())\n"
            "scaler = torch.amp.GradScaler()\nfor _ in range(3):\n    scaler.step(opt)\n",
            line=6,
            hot=True,
        ),
        # deit: timm's NativeScaler handed to the training function, the optimizer made by
        # timm's `create_optimizer` (annotated as any `Optimizer`)
        Invalid(
            "import torch\nfrom timm.optim import create_optimizer\nfrom timm.utils import NativeScaler\n"
            "def train_one_epoch(model, loader, optimizer: torch.optim.Optimizer, loss_scaler):\n"
            "    for x in loader:\n"
            "        loss_scaler(model(x).sum(), optimizer, clip_grad=None, parameters=model.parameters())\n"
            "optimizer = create_optimizer(args, model)\n"
            "train_one_epoch(model, loader, optimizer, NativeScaler())\n",
            line=6,
            hot=True,
        ),
        # mae: the scaler's class takes a parameter annotated as any `Optimizer`, and the one
        # caller passes an unfused AdamW
        Invalid(
            "import torch\n"
            "class ScalerWithNorm:\n"
            "    def __init__(self):\n        self._scaler = torch.cuda.amp.GradScaler()\n"
            "    def __call__(self, loss, optimizer: torch.optim.Optimizer):\n"
            "        self._scaler.scale(loss).backward()\n"
            "        self._scaler.step(optimizer)\n        self._scaler.update()\n"
            "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\nscaler = ScalerWithNorm()\n"
            "for x in xs:\n    scaler(model(x).sum(), opt)\n",
            line=7,
            hot=True,
        ),
        Invalid(  # an optimizer the model cannot see into (one path's LARS is another
            # module's class): no fused optimizer is made without `fused=True`, so this syncs
            "import torch\nimport torch.optim as optim\nfrom torch.cuda import amp\nfrom lars import LARS\n"
            "def train(model, adam, xs):\n"
            "    if adam:\n        opt = optim.Adam(model.parameters())\n"
            "    else:\n        opt = LARS(model.parameters())\n"
            "    scaler = amp.GradScaler(enabled=True)\n"
            "    for x in xs:\n        scaler.scale(model(x).sum()).backward()\n"
            "        scaler.step(opt)\n        scaler.update()\n",
            line=13,
            hot=True,
            message="`scaler.step(opt)` reads the inf/NaN check back to the host unless `opt` is a fused optimizer",
        ),
        Invalid(
            "import torch\nimport torch.optim as optim\nfrom torch.cuda import amp\n"
            "def train(model, adam, xs):\n"
            "    if adam:\n        opt = optim.Adam(model.parameters())\n"
            "    else:\n        opt = optim.SGD(model.parameters(), lr=0.1)\n"
            "    scaler = amp.GradScaler(enabled=True)\n"
            "    for x in xs:\n        scaler.scale(model(x).sum()).backward()\n"
            "        scaler.step(opt)\n        scaler.update()\n",
            line=12,
            hot=True,
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.Adam(model.parameters(), lr=1e-3)\n"
            "scaler = torch.amp.GradScaler('cuda')\nfor _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4, device='cuda')).sum()).backward()\n"
            "    scaler.step(opt)\n    scaler.update()\n",
            line=7,
            hot=True,
            message="`scaler.step(opt)` reads the inf/NaN check back to the host because `opt` is not fused",
        ),
        Invalid(
            "import torch\nfrom torch.cuda.amp import GradScaler\nfrom torch.optim import SGD\n"
            "class Trainer:\n    def __init__(self, model):\n"
            "        self.opt = SGD(model.parameters(), lr=0.1, foreach=True)\n        self.scaler = GradScaler()\n"
            "    def train_step(self, loss):\n        self.scaler.scale(loss).backward()\n"
            "        self.scaler.step(self.opt)\n        self.scaler.update()\n",
            line=10,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def make_optimizer(model):\n"
            "    return torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "opt = make_optimizer(model)\n"
            "scaler = torch.amp.GradScaler('cuda')\n"
            "for _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4, device='cuda')).sum()).backward()\n"
            "    scaler.step(opt)\n"
            "    scaler.update()\n",
            line=9,
            hot=True,
        ),
        Invalid(  # the same script with a float16 default: the scaler is on
            "import torch\ndtype = 'float16'\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.Adam(model.parameters())\n"
            "scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))\nfor _ in range(3):\n"
            "    scaler.scale(model(torch.ones(2, 4, device='cuda')).sum()).backward()\n    scaler.step(opt)\n",
            line=8, hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(depth)]).to(device)\n"
            "xs = [torch.randn(32, width, device=device) for _ in range(steps)]\n"
            "state = {k: v.clone() for k, v in model.state_dict().items()}\n"
        ),
        flagged=(
            "def flagged(model, state, xs):\n"
            "    model.load_state_dict(state)\n"
            "    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
            "    scaler = torch.amp.GradScaler(device)\n"
            "    for x in xs:\n"
            "        scaler.scale(model(x).square().mean()).backward()\n"
            "        scaler.step(opt)\n"
            "        scaler.update()\n"
            "        opt.zero_grad(set_to_none=True)\n"
            "    return torch.cat([p.detach().flatten() for p in model.parameters()])\n"
        ),
        fixed=(
            "def fixed(model, state, xs):\n"
            "    model.load_state_dict(state)\n"
            "    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n"
            "    scaler = torch.amp.GradScaler(device)\n"
            "    for x in xs:\n"
            "        scaler.scale(model(x).square().mean()).backward()\n"
            "        scaler.step(opt)\n"
            "        scaler.update()\n"
            "        opt.zero_grad(set_to_none=True)\n"
            "    return torch.cat([p.detach().flatten() for p in model.parameters()])\n"
        ),
        sizes={"width": 256, "depth": 8, "steps": 20},
        condition="every parameter is a floating-point tensor on a device with fused AdamW",
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        ctx = self.ctx
        if type(func) is cst.Attribute and func.attr.value == "step":
            opt = arg(node, 0, "optimizer")
            if opt is None:
                return
            scaler = ctx.infer(func.value)
            if scaler.kind != V.OBJECT or scaler.cls != L.GRAD_SCALER or scaler.device == V.CPU:
                return
        elif ctx.is_native_scaler_call(node):  # `loss_scaler(loss, optimizer)`: timm's NativeScaler
            opt = arg(node, *L.SCALER_CALLABLES[L.NATIVE_SCALER])
            if opt is None:
                return
        else:
            return
        o = ctx.infer(opt)
        classes = V.classes_of(o)  # one per path that creates it
        if o.kind == V.OPTIM and o.py == "unfused" and classes and all(c.rsplit(".", 1)[-1] in _FUSABLE for c in classes):
            self.report(node, call=short(node), why=f"because `{short(opt)}` is not fused", opt=short(opt))
        elif o.kind in (V.OPTIM, V.OBJECT) and o.py != "fused" and classes and all(
                _without_fused_step(ctx, o, c) for c in classes):
            self.report(node, call=short(node), why=f"because `{short(opt)}` (`{classes[0].rsplit('.', 1)[-1]}`) "
                        "has no fused step", opt=short(opt), fix_title=_NO_FUSED_FIX)
        elif o.kind == V.UNKNOWN or _any_or_fusable(o, classes):
            # made where the model cannot see (a builder, a parameter): fused optimizers are
            # made with an explicit `fused=True`, every other one syncs here
            self.report(node, call=short(node), why=f"unless `{short(opt)}` is a fused optimizer", opt=short(opt))


def _without_fused_step(ctx, o: V.Val, cls: str) -> bool:
    """An optimizer class with no fused step, for which `GradScaler.step` always reads the
    inf check back before calling `step`: one of torch's other optimizers (`RMSprop`), or a
    project class deriving from torch's `Optimizer` that does not declare
    `_step_supports_amp_scaling` (vicreg's and barlowtwins' LARS)."""
    if o.kind == V.OPTIM:
        return cls.startswith("torch.optim.") and cls != _ANY and cls.rsplit(".", 1)[-1] not in _FUSABLE
    if ctx.library_base(cls, _OPTIMIZER_BASES.__contains__) is None:
        return False
    return ctx.attribute_of(cls, "_step_supports_amp_scaling").kind == V.UNKNOWN


def _any_or_fusable(o: V.Val, classes) -> bool:
    """An optimizer annotated as any `Optimizer` (a parameter, a builder's return), alone or
    joined with fusable ones that are not known to be fused (mae's `loss_scaler(loss,
    optimizer)` with the AdamW its caller makes, through a parameter annotated `Optimizer`)."""
    if o.kind != V.OPTIM or o.py == "fused" or _ANY not in classes:
        return False
    return all(c == _ANY or c.rsplit(".", 1)[-1] in _FUSABLE for c in classes)

