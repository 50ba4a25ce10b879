from typing import Iterator

import libcst as cst

from synclint.rule import Invalid, Valid
from synclint.rules._compiled import SIZE_FUNCTIONS, SIZE_METHODS, CompiledRule
from synclint.rules._helpers import method_call, positional, receiver, short
from synclint.rules._host_readback import is_builtin
from synclint.semantic import EVIDENT, RECEIVER
from synclint.semantic import values as V


class CompiledScalarRead(CompiledRule):
    """
    ## What it does
    Flags a tensor's value read into Python inside code that runs under `torch.compile`:
    `.item()`, `int(t)`, `float(t)`, `bool(t)`, `.tolist()`, and a tensor used as a size
    (`torch.zeros(n)`, `x.view(n, -1)`, `x[:n]`, `range(n)`).

    ## Why is this bad?
    Dynamo traces tensors as graph values without their data; a Python number made from one
    needs the data. By default it breaks the graph there (registry id GB0124, "Unsupported
    Tensor.item() call with capture_scalar_outputs=False"; a tensor as a size: GB0033, "Data
    dependent operator"; `.tolist()` of a non-integer tensor: GB0109): the compiled function
    runs as two graphs with this line in Python between them, and on a GPU the host waits for
    the first graph to finish before it can launch the second. Under CUDA graphs
    (`mode="reduce-overhead"`) each part is a CUDA graph of its own, replayed with a wait
    between them.

    `torch._dynamo.config.capture_scalar_outputs = True` (and `fullgraph=True`, which turns
    it on) capture the read as an unbacked value instead: no graph break, but the host still
    waits for the GPU to produce the value at every call, and inductor cannot keep that read
    inside a CUDA graph (it splits the graph around it, or skips CUDA graphs). `.tolist()` of
    a floating-point tensor is not captured: under `fullgraph=True` it fails to compile.

    The finding says which of these happens, from the options of the `torch.compile` that
    reaches the line and the Dynamo flags the project sets (see
    [compiled code](../compiled.md)).

    ## Use instead
    Keep the value a tensor: `torch.where(loss > 0, a, b)`, tensor arithmetic, a tensor
    returned from the compiled function and read by the caller once per N steps. For a size,
    prefer one known statically (a `.shape`, a constant); where it must come from the data,
    read it with `capture_scalar_outputs = True` and tell the compiler what it is
    (`n = t.item(); torch._check_is_size(n)`), knowing that the host still waits.

    ## Known problems
    A function also called outside compiled code is reported as compiled (its eager calls
    still pay the eager sync). A value whose kind is unknown is taken for a tensor where only
    a tensor fits (`.item()`), in a file that names torch.
    """

    CODE = "SYN601"
    NAME = "compiled-scalar-read"
    CALLS = frozenset({"item", "tolist", "int", "float", "bool", "range"} | SIZE_FUNCTIONS | SIZE_METHODS)
    MESSAGE = "`{expr}` {what} inside compiled code"
    VALID = [
        # the same read in eager code: the eager rule's (SYN101), not a graph break
        Valid("import torch\ndef step(x):\n    loss = x.pow(2).mean()\n    return loss.item()\n"),
        # a helper that `torch.compiler.disable` keeps out of the graph runs eagerly
        Valid(
            "import torch\n"
            "@torch.compiler.disable\n"
            "def log_loss(loss):\n"
            "    return loss.item()\n"
            "@torch.compile\n"
            "def step(x):\n"
            "    loss = x.pow(2).mean()\n"
            "    log_loss(loss)\n"
            "    return loss\n"
        ),
        # sizes from shapes and Python numbers are static; `int()` of a string parses it
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x, n: int):\n"
            "    y = torch.zeros(x.shape[0], n)\n"
            "    z = x.view(int(x.shape[0] / 2), -1)\n"
            "    return y.sum() + z.sum() + int('3')\n"
        ),
        # the caller reads the compiled function's result outside it
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x):\n"
            "    return x.pow(2).mean()\n"
            "def train(xs):\n"
            "    for x in xs:\n"
            "        print(step(x).item())\n"
        ),
        # captured, and on the CPU: no break and nothing to wait for
        Valid(
            "import torch\n"
            "torch._dynamo.config.capture_scalar_outputs = True\n"
            "@torch.compile\n"
            "def step(x):\n"
            "    n = x.sum().long().item()\n"
            "    return torch.zeros(n)\n"
            "step(torch.ones(3, device='cpu'))\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "@torch.compile\n"
            "def train_step(model, x):\n"
            "    loss = model(x).pow(2).mean()\n"
            "    if_finite = loss.item()\n"
            "    return loss\n",
            line=5,
            message="`loss.item()` reads a tensor's value into Python inside compiled code: a graph break "
                    "(GB0124) splits `train_step` here into two graphs; this line runs in Python and the host "
                    "waits for the GPU",
        ),
        # a helper of the compiled function is traced with it
        Invalid(
            "import torch\n"
            "def count(mask):\n"
            "    return int(mask.sum())\n"
            "@torch.compile(fullgraph=True)\n"
            "def step(x: torch.Tensor):\n"
            "    return x * count(x > 0)\n",
            line=3,
            message="`int(mask.sum())` reads a tensor's value into Python inside compiled code: no graph break "
                    "(fullgraph=True captures it), but the host still waits for the GPU at every call",
        ),
        # a compiled module's forward, under CUDA graphs
        Invalid(
            "import torch\n"
            "class Pad(torch.nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        return x[:, : lengths.max()]\n"
            "model = torch.compile(Pad(), mode='reduce-overhead')\n",
            line=4,
            message="`x[:, : lengths.max()]` takes a size from a tensor inside compiled code: a graph break "
                    "(GB0033) splits `Pad.forward` here into two CUDA graphs; this line runs in Python and the "
                    "host waits for the GPU",
        ),
        Invalid(
            "import torch\n"
            "@torch.compile(fullgraph=True)\n"
            "def ids(logits):\n"
            "    return logits.softmax(-1).tolist()\n",
            line=4,
            message="`logits.softmax(-1).tolist()` reads a tensor's value into Python inside compiled code: "
                    "a compile error under fullgraph=True (GB0109): `ids` cannot be one graph",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.may_compile():
            return
        m = method_call(node, ("item", "tolist"))
        if m is not None and not node.args:
            recv = receiver(node)
            v = ctx.graph_tensor(recv, RECEIVER)
            if v is None:
                return
            kind = "item" if m == "item" else ("tolist-int" if v.dtype == V.INT else "tolist")
            self.report_event(node, kind, recv, RECEIVER, expr=short(node), what=_READS)
            return
        name = is_builtin(ctx, node.func, ("int", "float", "bool", "range"))
        if name in ("int", "float", "bool"):
            pos = positional(node)
            if len(pos) == 1 and len(node.args) == 1 and ctx.graph_tensor(pos[0].value, EVIDENT) is not None:
                self.report_event(node, "item", pos[0].value, EVIDENT, expr=short(node), what=_READS)
            return
        for size in self._sizes(node, name):
            if _tensor_size(ctx, size):
                self.report_event(node, "size", size, EVIDENT, expr=short(node), what=_SIZE)
                return

    def visit_Subscript(self, node: cst.Subscript) -> None:
        ctx = self.ctx
        if not any(type(el.slice) is cst.Slice for el in node.slice) or not ctx.may_compile() \
                or ctx.graph_tensor(node.value, RECEIVER) is None:
            return
        for el in node.slice:
            if type(el.slice) is cst.Slice and any(
                    b is not None and _tensor_size(ctx, b) for b in (el.slice.lower, el.slice.upper, el.slice.step)):
                self.report_event(node, "size", node.value, RECEIVER, expr=short(node), what=_SIZE)
                return

    def _sizes(self, node: cst.Call, builtin) -> Iterator[cst.BaseExpression]:
        """The arguments of `node` that are sizes: of `range`, of torch's size factories,
        of a tensor's size methods."""
        ctx = self.ctx
        if builtin == "range":
            yield from (a.value for a in positional(node))
            return
        tn = ctx.torch_name(node.func)
        if tn in SIZE_FUNCTIONS:
            args = [a.value for a in positional(node)] + [a.value for a in node.args if a.keyword is not None
                                                            and a.keyword.value in ("size", "end", "start", "steps", "n")]
        elif tn is None and method_call(node, SIZE_METHODS) and ctx.graph_tensor(receiver(node), RECEIVER) is not None:
            args = [a.value for a in positional(node)]
        else:
            return
        for a in args:
            if type(a) in (cst.Tuple, cst.List):
                yield from (el.value for el in a.elements if type(el) is not cst.StarredElement)
            else:
                yield a


_READS = "reads a tensor's value into Python"
_SIZE = "takes a size from a tensor"


def _tensor_size(ctx, e: cst.BaseExpression) -> bool:
    """A tensor where a size goes: a 0-d one, or one whose shape is not known (a 1-d
    `torch.Size`-like tensor is a size list too)."""
    v = ctx.graph_tensor(e, EVIDENT)
    return v is not None and v.ndim in (0, None)
