import libcst as cst

from synclint.rule import Invalid, Rule, Valid
from synclint.rules._helpers import kwarg, last_names, short

SCALE_LOSS = {"apex.amp.scale_loss", "apex.amp.handle.scale_loss"}


class ApexAmpScaleLoss(Rule):
    """
    ## What it does
    Flags `with amp.scale_loss(loss, optimizer) as scaled_loss:` of NVIDIA apex's `amp`
    (`apex.amp.scale_loss`), unless the block defers the check (`delay_unscale=True`,
    `delay_overflow_check=True`) or the file sets up `amp.initialize` with a static loss
    scale (a number for `loss_scale=`, or opt level `O0`/`O3` without one).

    ## Why is this bad?
    When the block ends, apex unscales the gradients and checks them for inf/NaN. With
    dynamic loss scaling, the default of opt levels `O1` and `O2`, that check ends in
    `LossScaler.update_scale`, which runs `self._has_overflow = self._overflow_buf.item()`
    (`apex/amp/scaler.py`, called from `scale_loss` in `apex/amp/handle.py`; NVIDIA/apex
    before commit cb65b8e, which removed `amp` from apex). That is a blocking read-back of a
    GPU flag at every training step: the host waits for the whole backward pass before it
    can queue the optimizer step.

    ## Use instead
    PyTorch's own mixed precision. bfloat16 autocast needs no loss scaling, so nothing is
    read back:
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    ```
    With float16, `torch.amp.GradScaler("cuda")` and an optimizer made with `fused=True`
    skip bad steps on the GPU, without a read-back (see SYN115).

    ## Known problems
    Not benchmarked: apex's `amp` is no longer in apex, and the benchmark machine does not
    have it. The finding rests on apex's source, quoted above. A static loss scale set up
    in another module than the `scale_loss` call is not seen (`# noqa: SYN118`).
    """

    CODE = "SYN118"
    NAME = "apex-amp-scale-loss"
    CALLS = last_names(SCALE_LOSS)
    MESSAGE = "`{call}` reads apex's inf/NaN flag back to the host when the block ends (dynamic loss scaling)"
    FIX_TITLE = "Use `torch.autocast` with bfloat16 (no loss scaling), or `torch.amp.GradScaler` with a fused optimizer"
    CATALOGUE = ("A1",)
    VALID = [
        # the check deferred to a later block, a static loss scale, O0/O3's static default,
        # a project's own `amp` module
        Valid(
            "import torch\nfrom apex import amp\n"
            "model, opt = amp.initialize(model, opt, opt_level='O1')\n"
            "for x in xs:\n"
            "    with amp.scale_loss(model(x).sum(), opt, delay_unscale=True) as scaled:\n"
            "        scaled.backward()\n"
        ),
        Valid(
            "import torch\nfrom apex import amp\n"
            "model, opt = amp.initialize(model, opt, opt_level='O2', loss_scale=128.0)\n"
            "for x in xs:\n"
            "    with amp.scale_loss(model(x).sum(), opt) as scaled:\n"
            "        scaled.backward()\n"
        ),
        Valid(
            "import torch\nimport apex\n"
            "model, opt = apex.amp.initialize(model, opt, opt_level='O3')\n"
            "for x in xs:\n"
            "    with apex.amp.scale_loss(model(x).sum(), opt) as scaled:\n"
            "        scaled.backward()\n"
        ),
        Valid(
            "import torch\nfrom utils import amp\n"
            "for x in xs:\n"
            "    with amp.scale_loss(model(x).sum(), opt) as scaled:\n"
            "        scaled.backward()\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom apex import amp\n"
            "model, opt = amp.initialize(model, opt, opt_level='O1')\n"
            "for x in xs:\n"
            "    with amp.scale_loss(model(x).sum(), opt) as scaled:\n"
            "        scaled.backward()\n"
            "    opt.step()\n",
            line=5,
            hot=True,
            message="`amp.scale_loss(model(x).sum(), opt)` reads apex's inf/NaN flag back to the host "
                    "when the block ends (dynamic loss scaling)",
        ),
        # across a function: a step function the loop calls (NVIDIA tacotron2, waveglow)
        Invalid(
            "import torch\nfrom apex import amp\n"
            "def step(model, opt, x):\n"
            "    loss = model(x).sum()\n"
            "    with amp.scale_loss(loss, opt) as scaled_loss:\n"
            "        scaled_loss.backward()\n"
            "    opt.step()\n"
            "model, opt = amp.initialize(model, opt, opt_level=args.opt_level)\n"
            "for x in xs:\n"
            "    step(model, opt, x)\n",
            line=5,
            hot=True,
        ),
        # through an attribute: a trainer holding the optimizer (swav's `apex.amp`)
        Invalid(
            "import torch\nimport apex\n"
            "class Trainer:\n"
            "    def __init__(self, model, opt):\n"
            "        self.model, self.opt = apex.amp.initialize(model, opt, opt_level='O1')\n"
            "    def training_step(self, x):\n"
            "        with apex.amp.scale_loss(self.model(x).sum(), self.opt) as scaled:\n"
            "            scaled.backward()\n",
            line=7,
            hot=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in SCALE_LOSS:
            return
        for deferred in ("delay_unscale", "delay_overflow_check"):
            flag = kwarg(node, deferred)
            if type(flag) is cst.Name and flag.value == "True":
                return
        if not self.ctx.amp_static_scale():
            self.report(node, call=short(node, 60))
