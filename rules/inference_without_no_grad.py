import re
from typing import List, Set, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.gradmode import wants_grad_call
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short
from synclint.semantic.syntax import dotted_path
from synclint.semantic.context import Site

# Words that name evaluation code when they are a whole word of the function name
# (`evaluate_model`, `run_inference`, `predictTopK`), split on `_` and camelCase.
EVAL_WORDS = {"eval", "evaluate", "evaluation", "validate", "validation", "predict",
              "inference", "infer", "test"}
# ... unless the name says what is inferred or validated is not a prediction (`infer_shape`).
NOT_EVAL_WORDS = {"shape", "shapes", "size", "sizes", "dim", "dims", "dtype", "dtypes", "type",
                  "types", "device", "args", "config", "schema", "signature"}
# Lightning runs these under no_grad/inference_mode itself.
LIGHTNING_HOOK = re.compile(
    r"^(on_)?(validation|test|predict)_(step|step_end|epoch_start|epoch_end|batch_start|"
    r"batch_end|start|end|dataloader|model_eval)$"
)
# pytest/unittest test functions: test code, not inference code.
TEST_FUNCTION = re.compile(r"^test(_|[A-Z])")
# Functions whose callees run with gradients (a `predict` helper used while training).
TRAINING_NAMES = re.compile(r"(^|_)(train|training|forward|fit|loss|step)(_|$)")


CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def _words(name: str) -> List[str]:
    spaced = CAMEL.sub(r"\1_\2", name)
    return [w for w in spaced.lower().split("_") if w]


def eval_named(name: str) -> bool:
    if LIGHTNING_HOOK.match(name) or TEST_FUNCTION.match(name):
        return False
    words = _words(name)
    return any(w in EVAL_WORDS for w in words) and not any(w in NOT_EVAL_WORDS for w in words)


def runs_with_grad(name: str, wants_grad: bool) -> bool:
    """A function whose callees run with gradients: it computes them (or sets its grad mode),
    is a Lightning hook or a test, or is named for training (`train_step`, `compute_loss`)."""
    return wants_grad or bool(LIGHTNING_HOOK.match(name) or TEST_FUNCTION.match(name)) or (
        not eval_named(name) and bool(TRAINING_NAMES.search(name)))


class InferenceWithoutNoGrad(Rule):
    """
    ## What it does
    Flags evaluation or inference code that calls a model without `torch.no_grad()` or
    `torch.inference_mode()`: a module call in a function that called `model.eval()`, or in a
    function named for evaluation (`evaluate`, `validate`, `predict`, `run_inference`,
    `test`, ...), outside any no-grad block or decorator, in a function that never calls
    `.backward()` or `torch.autograd.grad`.

    ## Why is this bad?
    `model.eval()` only switches dropout and batch-norm behaviour; autograd still records
    every operation and keeps the activations that a backward pass would need, until the
    outputs are dropped. Evaluation that keeps its outputs (a list of predictions) keeps
    whole graphs alive. Measured [H200, torch 2.11]: 20 forward passes kept alive peaked at
    320 MiB with grad against 244 MiB under `no_grad`; time per forward was the same
    (165.9 vs 165.8 us). The gain is memory (room for larger evaluation batches), not speed.

    ## Use instead
    ```python
    @torch.inference_mode()
    def evaluate(model, loader):
        model.eval()
        return [model(x.to(device)) for x, _ in loader]
    ```
    or wrap the loop in `with torch.no_grad():`. `inference_mode` is stricter: its
    outputs cannot be used in autograd later.

    ## Known problems
    A function every caller of the project runs under `no_grad` (in a `with` block, a
    decorated function, or a function that itself runs so) is left alone, in its file and
    across modules; one that no code of the project calls is judged alone. Lightning hooks (`validation_step`, `test_step`,
    `predict_step`, ...) and pytest functions (`test_*`) are skipped; files that freeze
    parameters with `requires_grad_(False)` are skipped too, since a frozen model records no
    graph for inputs that do not require grad.
    """

    CODE = "SYN502"
    NAME = "inference-without-no-grad"
    MESSAGE = "`{call}` in `{func}` runs with autograd on, keeping activations for a backward that never runs"
    FIX_TITLE = "Run inference under `torch.inference_mode()` or `torch.no_grad()`"
    CATALOGUE = ()
    GRAD_MODE_EXEMPT = True
    VALID = [
        # Lightning already disables grad in its evaluation hooks.
        Valid(
            "import torch\nimport lightning as L\nclass M(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n        self.net = torch.nn.Linear(4, 2)\n"
            "    def validation_step(self, batch, batch_idx):\n        x, y = batch\n        return self.net(x)\n"
        ),
        # Under no_grad (block or decorator), or inference_mode.
        Valid(
            "import torch\ndef evaluate(model, loader):\n    model.eval()\n    with torch.no_grad():\n"
            "        for x in loader:\n            out = model(x)\n"
        ),
        Valid(
            "import torch\n@torch.inference_mode()\ndef predict(model, x):\n    model.eval()\n    return model(x)\n"
        ),
        # Gradients are wanted: saliency maps, adversarial examples.
        Valid(
            "import torch\ndef evaluate_saliency(model, x):\n    model.eval()\n    x.requires_grad_()\n"
            "    out = model(x)\n    out.sum().backward()\n    return x.grad\n"
        ),
        # The caller in the same file wraps it in no_grad.
        Valid(
            "import torch\ndef validate(model, xs):\n    model.eval()\n    return [model(x) for x in xs]\n"
            "def main(model, xs):\n    with torch.no_grad():\n        validate(model, xs)\n"
        ),
        # pytest functions are tests, not inference code.
        Valid(
            "import torch\ndef test_output_shape():\n    model = torch.nn.Linear(4, 2)\n    model.eval()\n"
            "    assert model(torch.zeros(3, 4)).shape == (3, 2)\n"
        ),
        # Shape inference with a dummy input.
        Valid(
            "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.features = torch.nn.Conv2d(3, 8, 3)\n    def _infer_flat_size(self):\n"
            "        return self.features(torch.zeros(1, 3, 32, 32)).numel()\n"
        ),
        # An eval-named function that calls nothing known to be a module.
        Valid("import torch\ndef evaluate(fn, x):\n    return fn(x)\n"),
        # A predict helper used by the training code in the same file.
        Valid(
            "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = torch.nn.Linear(4, 2)\n    def predict(self, x):\n        return self.fc(x)\n"
            "def train(net, opt, x, y):\n    loss = (net.predict(x) - y).pow(2).mean()\n    loss.backward()\n"
        ),
        # A frozen backbone kept in eval mode: `forward` is training code all the same.
        Valid(
            "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.backbone = torch.nn.Linear(4, 4)\n        self.backbone.eval()\n"
            "    def forward(self, x):\n        return self.backbone(x)\n"
        ),
        # Explicit grad mode.
        Valid(
            "import torch\ndef infer(model, x, grad):\n    model.eval()\n    with torch.set_grad_enabled(grad):\n"
            "        return model(x)\n"
        ),
        Valid(
            "import torch\n"
            "def build():\n"
            "    return torch.nn.Linear(8, 2).cuda()\n"
            "@torch.no_grad()\n"
            "def evaluate(loader):\n"
            "    model = build()\n"
            "    model.eval()\n"
            "    return [model(x) for x in loader]\n",
        ),
        Valid(
            "import torch\n"
            "class Evaluator:\n"
            "    def __init__(self, model):\n"
            "        self.model = model\n"
            "    def evaluate(self, loader):\n"
            "        self.model.eval()\n"
            "        with torch.inference_mode():\n"
            "            for x, y in loader:\n"
            "                out = self.model(x)\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ndef evaluate(model, loader):\n    model.eval()\n    preds = []\n    for x, y in loader:\n"
            "        preds.append(model(x.cuda()))\n    return preds\n",
            line=6,
            hot=True,
            message="`model(x.cuda())` in `evaluate` runs with autograd on, keeping activations for a backward that never runs",
        ),
        Invalid(
            "import torch\nclass Predictor:\n    def __init__(self):\n        self.model = torch.nn.Linear(8, 2).cuda()\n"
            "    def run_inference(self, x):\n        return self.model(x).softmax(-1)\n",
            line=6,
        ),
        Invalid(
            "import torch\nnet = torch.nn.Linear(8, 2)\ndef score(batch):\n    net.eval()\n    return net(batch)\n",
            line=5,
        ),
        Invalid(
            "import torch\n"
            "def build():\n"
            "    return torch.nn.Linear(8, 2).cuda()\n"
            "def evaluate(loader):\n"
            "    model = build()\n"
            "    model.eval()\n"
            "    return [model(x) for x in loader]\n",
            line=7,
        ),
        Invalid(
            "import torch\n"
            "class Evaluator:\n"
            "    def __init__(self, model):\n"
            "        self.model = model\n"
            "    def evaluate(self, loader):\n"
            "        self.model.eval()\n"
            "        for x, y in loader:\n"
            "            out = self.model(x)\n",
            line=8,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "layers = []\n"
            "for _ in range(depth):\n"
            "    layers += [torch.nn.Linear(width, width), torch.nn.GELU()]\n"
            "model = torch.nn.Sequential(*layers).to(device)\n"
            "xs = [torch.randn(batch, width, device=device) for _ in range(steps)]\n"
        ),
        flagged=(
            "def flagged(model, xs):\n"
            "    model.eval()\n"
            "    outs = [model(x) for x in xs]\n"
            "    return torch.stack(outs)\n"
        ),
        fixed=(
            "def fixed(model, xs):\n"
            "    model.eval()\n"
            "    with torch.no_grad():\n"
            "        outs = [model(x) for x in xs]\n"
            "    return torch.stack(outs)\n"
        ),
        sizes={"depth": 4, "width": 512, "batch": 256, "steps": 20},
        expect="memory",
        compare="close",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # (site, call, its text, function name): the first module call of each function
        # outside no_grad; whether it is reported is known once the whole file's calls are
        self._pending: List[Tuple[Site, cst.Call, str, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = ctx.function_name
        if name is None or ctx.in_no_grad or ctx.in_grad_mode_block:
            return
        func = node.func
        if wants_grad_call(ctx.qualname(func)):
            return
        if type(func) is cst.Attribute and func.attr.value in ("backward", "requires_grad_", "eval", "train"):
            return  # the mode switch itself (the model records it on the module's value)
        if LIGHTNING_HOOK.match(name) or TEST_FUNCTION.match(name) or not self._is_module_call(name, func):
            return
        if not runs_with_grad(name, ctx.function_wants_grad()):  # (`forward`, `train_step`: training code)
            self._pending.append((ctx.site(), node, short(node), name))

    def _is_module_call(self, fname: str, func: cst.BaseExpression) -> bool:
        """A call of a module in eval mode (`model.eval()` before it), or of any module in
        a function named for evaluation."""
        if type(func) is cst.Attribute and func.attr.value == "forward":
            func = func.value
        if dotted_path(func) is None:
            return False
        v = self.ctx.infer(func)
        return v.kind == V.MODULE and (v.py == "eval" or eval_named(fname))

    def leave_Module(self, node: cst.Module) -> None:
        ctx = self.ctx
        if not self._pending or ctx.grad_mode_set_in_file():  # (the file's grad facts: asked only when needed)
            return
        reported: Set[str] = set()
        for where, call, text, fname in self._pending:
            if where.func in reported:
                continue
            reported.add(where.func)
            calls = ctx.calls_of(fname)
            if any(c.grad_off or c.caller is not None and runs_with_grad(c.caller, c.caller_wants_grad)
                   for c in calls):
                continue  # called under no_grad, or from training code, in this file
            self.report_at(where, call, call=text, func=fname)
