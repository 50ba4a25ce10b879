import string
from typing import Iterable, List, Optional

import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import method_call, positional, receiver, short
from synclint.rules._host_readback import LOG_METHODS, is_builtin, is_logging_call, only_on_error_path, string_literal
from synclint.semantic import EVIDENT
from synclint.semantic import values as V
from synclint.semantic.syntax import string_value


class TensorFormatting(Rule):
    """
    ## What it does
    Flags printing or formatting a GPU tensor: `print(t)`, `f"{t}"`,
    `f"{t:.3f}"`, `"%s" % t`, `"{}".format(t)`, `str(t)`, `repr(t)`, `format(t, spec)` and
    logging calls such as `logger.info("loss %s", t)`; also a GPU tensor a format string
    reaches through an attribute (`"{top1.avg:.3f}".format(top1=meter)`, a meter fed the
    accuracy tensor every step). A meter instance given only Python numbers is not
    reported, though its class also holds tensors elsewhere.

    ## Why is this bad?
    Formatting reads the values back to the host. `Tensor.__format__` of a 0-d tensor
    calls `.item()`; `str(t)` goes through `torch/_tensor_str.py::_Formatter`, which runs
    `masked_select`, per-element comparisons and `tolist()`, several blocking copies.
    Each waits for every kernel queued before it, on every step that formats.

    ## Use instead
    Print shapes and dtypes (host metadata), or keep the values on the GPU and format
    them once per N steps under a logging guard:

    ```python
    losses.append(loss.detach())
    if step % log_every == 0:
        print(f"loss {torch.stack(losses).mean().item():.4f}")
        losses.clear()
    ```

    Lightning's `self.log("loss", loss)` takes the tensor without formatting it and is
    not flagged.

    ## Known problems
    Only values known to be tensors are checked. Messages of `raise` and `assert` are
    built only when the check fails, so they are not reported. Logging calls are recognised by the
    `logging` module or a receiver named like a logger (`logger`, `log`, `self.logger`);
    a call below the logger's level formats nothing and does not sync.
    """

    CODE = "SYN106"
    NAME = "tensor-formatting"
    MESSAGE = "Formatting GPU tensor `{recv}` copies it to the host and waits for all queued GPU work"
    FIX_TITLE = "Print shapes, or format values once per N steps under a logging guard"
    CATALOGUE = ("B2", "A1")
    VALID = [
        Valid(  # this meter was given plain numbers only; another instance holds tensors
            "import torch\nclass Meter:\n    def update(self, val):\n        self.val = val\n"
            "top1, clock = Meter(), Meter()\nfor _ in range(3):\n"
            "    top1.update(torch.ones(1, device='cuda').sum())\n    clock.update(0.5)\n"
            "    s = 'clock {c.val:.2f}'.format(c=clock)\n    t = f'{clock.val:.2f}'\n"
        ),
        # point 7: below the level the file configures, a logging call formats nothing
        Valid(
            "import logging\nimport torch\nlogging.basicConfig(level=logging.INFO)\nlog = logging.getLogger(__name__)\n"
            "x = torch.ones(3, device='cuda')\nfor _ in range(3):\n    log.debug('x %s', x)\n"
        ),
        Valid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n"
            "    print(x.shape, x.dtype, len(x), x.device)\n    s = f'{x.shape} {x.size(0)} {x.ndim}'\n"
        ),
        Valid("import torch\nx = torch.ones(3)\nfor _ in range(3):\n    print(x)\n    s = f'{x.sum():.3f}'\n"),
        Valid(
            "import torch\nimport lightning as L\nclass M(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n        loss = batch[0].sum()\n"
            "        self.log('loss', loss)\n        return loss\n"
        ),
        Valid("import torch\nimport numpy as np\na = np.ones(3)\nfor _ in range(3):\n    print(a, f'{a.sum():.2f}', '%s' % a)\n"),
        Valid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor step in range(100):\n    y = x * step\n"
            "    if step % 10 == 0:\n        print(f'y {y.sum():.3f}')\nprint(x)\n", 
        cold=True),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    print(f'{x.sum().item():.3f}', str(x.dtype), 'x' % ())\n"),
        Valid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        y = x.relu()\n"
            "        if y.shape[0] != 3:\n            raise ValueError(f'bad {y}')\n        assert y.ndim == 2, f'got {y}'\n        return y\n"
        ),
        Valid(
            "import torch\n"
            "def step(model, x):\n"
            "    return model(x).sum().item()\n"
            "model = torch.nn.Linear(4, 1).cuda()\n"
            "for _ in range(3):\n"
            "    loss = step(model, torch.ones(2, 4, device='cuda'))\n"
            "    print(f'loss {loss:.4f}')\n",
        ),
        Valid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.running = torch.zeros(())\n"
            "    def train(self, losses):\n"
            "        for loss in losses:\n"
            "            self.running += loss\n"
            "            print('running', self.running)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    print('mean', x.mean())\n"
            "    return x\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    print('x', x.mean())\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
        Valid(  # a ModuleDict's names are strings, not submodules called (`items` is its method)
            "import torch\nfrom torch import nn\n"
            "advs = nn.ModuleDict({'a': nn.Linear(2, 2)}).cuda()\n"
            "for step in range(10):\n"
            "    for name, adv in advs.items():\n"
            "        print(f'adv_{name}')\n"
            "    for name in advs.keys():\n"
            "        print(f'{name}')\n"
            "    for name, m in advs.named_children():\n"
            "        print(f'{name}')\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    print('x =', x)\n",
            line=4,
            hot=True,
            message="Formatting GPU tensor `x` copies it to the host and waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        y = x.relu()\n        msg = f'mean {y.mean():.3f}'\n        return y\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import logging\nimport torch\nlogger = logging.getLogger(__name__)\ndef train_step(batch):\n"
            "    loss = batch[0].sum()\n    logger.info('loss %s', loss)\n    return loss\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    s = 'x: %s' % (x,)\n    t = '{}'.format(x)\n    r = repr(x)\n",
            line=4,
            hot=True,
        ),
        Invalid(  # a meter's fields named in the format string (swav's `{top1.avg:.3f}`)
            "import torch\nclass Meter:\n    def update(self, val):\n        self.val = val\n"
            "top1, clock = Meter(), Meter()\nfor _ in range(3):\n"
            "    top1.update(torch.ones(1, device='cuda').sum())\n    clock.update(0.5)\n"
            "    s = 'clock {c.val:.2f} acc {t.val:.3f}'.format(c=clock, t=top1)\n",
            line=9,
            hot=True,
            message="Formatting GPU tensor `top1.val` copies it to the host and waits for all queued GPU work",
        ),
        Invalid(
            "import torch\n"
            "def step(model, x):\n"
            "    return model(x).sum()\n"
            "model = torch.nn.Linear(4, 1).cuda()\n"
            "for _ in range(3):\n"
            "    loss = step(model, torch.ones(2, 4, device='cuda'))\n"
            "    print(f'loss {loss:.4f}')\n",
            line=7,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.running = torch.zeros((), device='cuda')\n"
            "    def train(self, losses):\n"
            "        for loss in losses:\n"
            "            self.running += loss\n"
            "            print('running', self.running)\n",
            line=8,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(256, 256, device=device)\n"
            "xs = torch.randn(steps, 64, 256, device=device)\n"
        ),
        flagged=(
            "def flagged(w: torch.Tensor, xs: torch.Tensor):\n"
            "    logs = []\n"
            "    for x in xs:\n"
            "        y = (x @ w).relu()\n"
            "        logs.append(str(y[0, :4]))\n"
            "    return logs\n"
        ),
        fixed=(
            "def fixed(w: torch.Tensor, xs: torch.Tensor):\n"
            "    kept = []\n"
            "    for x in xs:\n"
            "        y = (x @ w).relu()\n"
            "        kept.append(y[0, :4].detach())\n"
            "    return str(torch.stack(kept).cpu())  # one batched log block after the loop\n"
        ),
        sizes={"steps": 50},
        compare="none",
        condition=(
            "the values are logged once after the loop as one batched block (one host copy) instead "
            "of one line per step: same numbers, different layout, so results are not compared"
        ),
    )

    def _check(self, exprs: Iterable[cst.BaseExpression], at: Optional[cst.CSTNode] = None) -> None:
        """Report each GPU tensor among `exprs`, at itself or at the formatting operation `at`."""
        if only_on_error_path(self.ctx):
            return
        for e in exprs:
            if self.ctx.gpu(e, EVIDENT) is not None:
                self.report(at if at is not None else e, recv=short(e))

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self._check([node.expression])

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is not cst.Modulo:
            return
        if not string_literal(node.left):  # `("%10s" * 2 + "%10.4g" * 6) % (...)`: a built format string
            left = self.ctx.infer(node.left)
            if not (left.kind == V.PY and left.py == "str"):
                return
        # reported at the `%` operation (the sync), which may span lines: `fmt % (\n ..., *mloss)`
        right = node.right
        if type(right) is cst.Tuple:
            self._check((el.value for el in right.elements), node)
        elif type(right) is cst.Dict:
            self._check((el.value for el in right.elements if type(el) is cst.DictElement), node)
        else:
            self._check([right], node)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = is_builtin(ctx, node.func, ("print", "str", "repr", "format", "ascii"))
        if name == "print":
            self._check(a.value for a in positional(node))
            return
        if name is not None:
            pos = positional(node)
            if pos:
                self._check([pos[0].value])
            return
        m = method_call(node, LOG_METHODS | {"format"})
        if m == "format":
            if string_literal(receiver(node)):
                # at the `.format(...)` call (the sync), which may span lines, as `%` is
                self._check((a.value for a in node.args if not a.star), node)
                self._check(_attribute_fields(_literal_text(receiver(node)), node), node)
            return
        if m is not None and is_logging_call(ctx, node.func):
            if ctx.logging_below_level(m):
                return  # `log.debug(...)` under a configured INFO level formats nothing
            pos = positional(node)
            if m == "log":
                pos = pos[1:]  # logger.log(level, msg, *args)
            self._check(a.value for a in pos)


def _literal_text(e: cst.BaseExpression) -> Optional[str]:
    """The text of a string literal, also of `"a" "b"` written over several lines."""
    if type(e) is cst.ConcatenatedString:
        v = e.evaluated_value
        return v if isinstance(v, str) else None
    return string_value(e)


def _attribute_fields(fmt: Optional[str], call: cst.Call) -> List[cst.BaseExpression]:
    """`"{top1.avg:.3f}".format(top1=top1)`: the attributes the fields read (`top1.avg`), as
    expressions over the call's arguments (a meter's fields are what hold the tensors)."""
    if fmt is None:
        return []
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(fmt) if f]
    except ValueError:
        return []
    pos = [a.value for a in call.args if a.keyword is None and not a.star]
    kws = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    out: List[cst.BaseExpression] = []
    auto = 0
    for f in fields:
        head, *attrs = f.split(".")
        if "[" in f:
            continue
        if head == "":
            arg, auto = (pos[auto] if auto < len(pos) else None), auto + 1
        elif head.isdigit():
            arg = pos[int(head)] if int(head) < len(pos) else None
        else:
            arg = kws.get(head)
        if arg is None or not attrs or not all(a.isidentifier() for a in attrs):
            continue
        for a in attrs:
            arg = cst.Attribute(value=arg, attr=cst.Name(a))
        out.append(arg)
    return out
