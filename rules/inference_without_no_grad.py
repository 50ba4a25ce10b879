import re
from dataclasses import dataclass, field
from typing import List, Optional, Set, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.model import GRAD_MODE_CONTEXTS
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short
from synclint.semantic.syntax import last_name
from synclint.rules._overhead import dotted_name
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
# Code that wants gradients (or manages grad mode itself): never flagged.
GRAD_CALLS = {
    "torch.autograd.grad", "torch.autograd.backward", "torch.set_grad_enabled",
    "torch.autograd.set_grad_enabled", "torch.enable_grad", "torch.autograd.enable_grad",
    "torch.func.grad", "torch.func.grad_and_value", "torch.func.vjp", "torch.func.jvp",
    "torch.func.jacrev", "torch.func.jacfwd", "torch.func.hessian",
}
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


@dataclass
class _Frame:
    name: str
    eval_named: bool
    needs_grad: bool = False  # also: a Lightning hook or a test function (never flagged)
    calls: Set[str] = field(default_factory=set)
    cand: Optional[Tuple[cst.Call, Site, str]] = None


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
    The function is judged alone: a caller in another file that wraps it in `no_grad` is
    not seen (callers in the same file are). Lightning hooks (`validation_step`, `test_step`,
    `predict_step`, ...) and pytest functions (`test_*`) are skipped; files that freeze
    parameters with `requires_grad_(False)` are skipped too, since a frozen model records no
    graph for inputs that do not require grad.
    """

    CODE = "SYN502"
    NAME = "inference-without-no-grad"
    MESSAGE = "`{call}` in `{func}` runs with autograd on, keeping activations for a backward that never runs"
    FIX_TITLE = "Run inference under `torch.inference_mode()` or `torch.no_grad()`"
    CATALOGUE = ()
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
        self._frames: List[_Frame] = []
        self._pending: List[Tuple[str, cst.Call, Site, str]] = []
        self._nograd_callees: Set[str] = set()  # called from inside no_grad in this file
        self._grad_callees: Set[str] = set()  # called from training code in this file
        self._skip_file = False  # global `set_grad_enabled(False)` or frozen parameters

    # ------------------------------------------------------------- scopes
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        frame = _Frame(name, eval_named(name))
        frame.needs_grad = bool(LIGHTNING_HOOK.match(name) or TEST_FUNCTION.match(name))
        for d in node.decorators:
            dec = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
            if self.ctx.qualname(dec) in GRAD_MODE_CONTEXTS:
                frame.needs_grad = True
        self._frames.append(frame)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        frame = self._frames.pop()
        if frame.needs_grad or (not frame.eval_named and TRAINING_NAMES.search(frame.name)):
            self._grad_callees |= frame.calls
        elif frame.cand is not None:
            call, where, recv = frame.cand
            self._pending.append((frame.name, call, where, recv))

    # ------------------------------------------------------------- calls
    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        frame = self._frames[-1] if self._frames else None
        func = node.func
        q = ctx.qualname(func)
        if q in GRAD_CALLS or (q or "").startswith("torch.autograd.functional."):
            if frame is not None:
                frame.needs_grad = True
            elif q in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled"):
                self._skip_file = True
            return
        callee = last_name(func)
        if callee is not None:
            if ctx.in_no_grad or ctx.in_grad_mode_block:
                self._nograd_callees.add(callee)
            if frame is not None:
                frame.calls.add(callee)
        if type(func) is cst.Attribute:
            m = func.attr.value
            if m == "backward":
                if frame is not None:
                    frame.needs_grad = True
                return
            if m == "requires_grad_":
                if node.args and type(node.args[0].value) is cst.Name and node.args[0].value.value == "False":
                    self._skip_file = True
                elif frame is not None:
                    frame.needs_grad = True
                return
            if m in ("eval", "train"):
                return  # the mode switch itself (the model records it on the module's value)
        if frame is None or frame.cand is not None or ctx.in_no_grad or ctx.in_grad_mode_block:
            return
        if self._is_module_call(frame, func):
            frame.cand = (node, ctx.site(), short(node))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        t = node.target
        if type(t) is cst.Attribute and t.attr.value == "requires_grad":
            self._skip_file = True  # `p.requires_grad = False`: frozen parameters

    def _is_module_call(self, frame: _Frame, func: cst.BaseExpression) -> bool:
        """A call of a module in eval mode (`model.eval()` before it), or of any module in
        a function named for evaluation."""
        if type(func) is cst.Attribute and func.attr.value == "forward":
            func = func.value
        if dotted_name(func) is None:
            return False
        v = self.ctx.infer(func)
        return v.kind == V.MODULE and (v.py == "eval" or frame.eval_named)

    def leave_Module(self, node: cst.Module) -> None:
        if self._skip_file:
            return
        for fname, call, where, text in self._pending:
            if fname in self._nograd_callees or fname in self._grad_callees:
                continue
            self.report_at(where, call, call=text, func=fname)
