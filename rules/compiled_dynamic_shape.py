from typing import Optional, Set

import libcst as cst

from synclint.rule import Invalid, Valid
from synclint.rules._compiled import CompiledRule
from synclint.rules._helpers import arg, has_star
from synclint.rules._data_dependent import number
from synclint.rules._helpers import kwarg, method_call, receiver, short
from synclint.semantic import EVIDENT, RECEIVER
from synclint.semantic import values as V

# ops whose output's shape depends on the data, as tensor methods and torch.* functions
_SHAPE_OPS = frozenset({"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount"})


class CompiledDynamicShape(CompiledRule):
    """
    ## What it does
    Flags operations whose output's shape depends on the data, inside code that runs under
    `torch.compile`: a boolean-mask read `x[mask]`, `nonzero`/`argwhere`, one-argument
    `torch.where`, `unique`, `masked_select`, `bincount`, `repeat_interleave` with tensor
    repeats and no `output_size`, and `one_hot` without `num_classes`.

    ## Why is this bad?
    A graph needs its shapes; these have none until the data is known. By default Dynamo
    breaks the graph there (registry id GB0036, "Dynamic shape operator"; `one_hot`: GB0246):
    the compiled function runs as two graphs, and on a GPU the host waits for the first to
    learn the size. Under CUDA graphs (`mode="reduce-overhead"`) each part is a CUDA graph of
    its own, with the wait between them.

    `torch._dynamo.config.capture_dynamic_output_shape_ops = True` (and `fullgraph=True`,
    which turns it on) keep the operation in the graph with an unbacked size: no graph break,
    but the host still waits for the GPU to produce the size at every call, and inductor
    cannot keep the operation inside a CUDA graph. `one_hot` without `num_classes` is not
    captured: under `fullgraph=True` it fails to compile.

    A masked write of one value (`x[mask] = t.mean()`, `x.masked_fill(mask, t.mean())`) is
    not reported: inductor turns it into `torch.where`, which neither breaks the graph nor
    waits (the eager finding on it, SYN202 or SYN111, is withdrawn there).

    ## Use instead
    Keep the shape static: `torch.where(mask, x, 0)` and a masked reduction instead of
    `x[mask]`, `torch.nonzero_static(mask, size=k)`, `repeat_interleave(..., output_size=n)`,
    `one_hot(y, num_classes=k)`, `bincount(..., minlength=k)` computed outside; or move the
    data-dependent step out of the compiled function.

    ## Known problems
    A mask is recognised by its dtype (a comparison, a bool method, `dtype=torch.bool`); a
    boolean parameter of unknown dtype is not. A function also called outside compiled code
    is reported as compiled.
    """

    CODE = "SYN604"
    NAME = "compiled-dynamic-shape"
    CALLS = _SHAPE_OPS | {"where", "repeat_interleave", "one_hot", "masked_fill"}
    MESSAGE = "`{expr}` {what} inside compiled code"
    VALID = [
        # eager code: the eager rules' (SYN201...)
        Valid("import torch\ndef step(x: torch.Tensor):\n    return x[x > 0].sum()\n"),
        # static shapes: three-argument where, an int repeat, output_size, num_classes
        Valid(
            "import torch\n"
            "import torch.nn.functional as F\n"
            "@torch.compile(fullgraph=True)\n"
            "def step(x: torch.Tensor, y: torch.Tensor, reps: torch.Tensor):\n"
            "    a = torch.where(x > 0, x, 0.0)\n"
            "    b = x.repeat_interleave(2)\n"
            "    c = torch.repeat_interleave(x, reps, output_size=2 * x.shape[0])\n"
            "    d = F.one_hot(y, num_classes=10)\n"
            "    return a, b, c, d\n"
        ),
        # a masked write of one value becomes torch.where: no break, no wait
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    x = x.clone()\n"
            "    x[x < 0] = 0.0\n"
            "    x[torch.isnan(x)] = x.mean()\n"
            "    return x.masked_fill(x > 1, x.mean())\n"
        ),
        # indexing with integer indices
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor, ids: torch.Tensor):\n"
            "    return x[ids.long()] + x[:, 0]\n"
        ),
        # a helper excluded from the graph
        Valid(
            "import torch\n"
            "@torch.compiler.disable\n"
            "def positives(x):\n"
            "    return x[x > 0]\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    return positives(x * 2)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "@torch.compile\n"
            "def masked_mean(x: torch.Tensor):\n"
            "    return x[x > 0].mean()\n",
            line=4,
            message="`x[x > 0]` has a shape that depends on the data inside compiled code: a graph break "
                    "(GB0036) splits `masked_mean` here into two graphs; this line runs in Python and the host "
                    "waits for the GPU",
        ),
        # a parameter's mask: whatever the device, a graph value
        Invalid(
            "import torch\n"
            "class Prune(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.weight = torch.nn.Parameter(torch.randn(8))\n"
            "    def forward(self, x):\n"
            "        keep = self.weight.abs() > 0.1\n"
            "        return x[:, keep]\n"
            "torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"
            "model = torch.compile(Prune(), mode='reduce-overhead')\n",
            line=8,
            message="`x[:, keep]` has a shape that depends on the data inside compiled code: no graph break "
                    "(`capture_dynamic_output_shape_ops` captures it), but the host still waits for the GPU at "
                    "every call, and CUDA graphs are split or skipped around its data-dependent value",
        ),
        Invalid(
            "import torch\n"
            "@torch.compile(fullgraph=True)\n"
            "def labels(y: torch.Tensor):\n"
            "    return torch.nn.functional.one_hot(y)\n",
            line=4,
            message="`torch.nn.functional.one_hot(y)` has a shape that depends on the data inside compiled "
                    "code: a compile error under fullgraph=True (GB0246): `labels` cannot be one graph",
        ),
        Invalid(
            "import torch\n"
            "@torch.compile\n"
            "def step(scores: torch.Tensor):\n"
            "    return torch.where(scores > 0.5)[0], scores.unique()\n",
            line=4,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._writes: Set[int] = set()  # assignment targets: writes, not reads

    # ------------------------------------------------------------ masks
    def _mask(self, node: cst.Subscript) -> Optional[cst.BaseExpression]:
        """The boolean tensor among the indices of `node`, when it indexes a tensor."""
        ctx = self.ctx
        for el in node.slice:
            if type(el.slice) is cst.Index and el.slice.star is None:
                v = ctx.graph_tensor(el.slice.value)
                if v is not None and v.mask:
                    base = ctx.infer(node.value)
                    return el.slice.value if base.kind in (V.TENSOR, V.TENSORS, V.UNKNOWN) else None
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if type(target) is not cst.Subscript:
                continue
            self._writes.add(id(target))
            mask = self._mask(target)
            if mask is not None and self._one_value(node.value):
                # inductor's masked fill: the eager SYN202 finding on the write goes
                self.report_event(target, "fill", node.value, EVIDENT, expr=short(target), what=_SHAPED)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if id(node) in self._writes or not self.ctx.may_compile():
            return
        mask = self._mask(node)
        if mask is not None:
            self.report_event(node, "shape", mask, EVIDENT, expr=short(node), what=_SHAPED)

    def _one_value(self, e: cst.BaseExpression) -> bool:
        """A tensor of one element: known 0-d, or a whole-tensor reduction (`x.mean()`)."""
        v = self.ctx.graph_tensor(e, EVIDENT)
        if v is None:
            return False
        return v.ndim == 0 or (type(e) is cst.Call and not e.args and method_call(e, _FULL_REDUCTIONS) is not None)

    # ------------------------------------------------------------ calls
    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if has_star(node) or not ctx.may_compile():
            return
        m = method_call(node, _SHAPE_OPS | {"repeat_interleave", "masked_fill"})
        if m is not None and ctx.qualname(node.func) is None:
            recv = receiver(node)
            if ctx.graph_tensor(recv, EVIDENT if m in ("unique", "unique_consecutive") else RECEIVER) is None:
                return
            if m == "masked_fill":
                # a tensor value is 0-d (masked_fill's contract): inductor's where
                value = arg(node, 1, "value")
                if value is not None and ctx.graph_tensor(value, EVIDENT) is not None:
                    self.report_event(node, "fill", value, EVIDENT, expr=short(node), what=_SHAPED)
            elif m != "repeat_interleave" or self._tensor_repeats(node, arg(node, 0, "repeats")):
                self.report_event(node, "shape", recv, RECEIVER, expr=short(node), what=_SHAPED)
            return
        q = ctx.qualname(node.func)
        tn = ctx.torch_name(node.func)
        if q == "torch.nn.functional.one_hot":
            x = arg(node, 0, "tensor")
            k = arg(node, 1, "num_classes")
            if x is not None and ctx.graph_tensor(x, RECEIVER) is not None and (k is None or number(k) == -1):
                self.report_event(node, "one-hot", x, RECEIVER, expr=short(node), what=_SHAPED)
            return
        if tn in _SHAPE_OPS:
            x = arg(node, 0, "input")
        elif tn == "where" and len(node.args) == 1:
            x = arg(node, 0, "condition")
        elif tn == "repeat_interleave":
            first, repeats = arg(node, 0, "input"), arg(node, 1, "repeats")
            x = first if repeats is None and kwarg(node, "dim") is None or self._tensor_repeats(node, repeats) else None
        else:
            return
        if x is not None and ctx.graph_tensor(x, RECEIVER) is not None:
            self.report_event(node, "shape", x, RECEIVER, expr=short(node), what=_SHAPED)

    def _tensor_repeats(self, node: cst.Call, repeats: Optional[cst.BaseExpression]) -> bool:
        """Repeats known to be a tensor, and no `output_size` (an int repeats is static)."""
        return (repeats is not None and kwarg(node, "output_size") is None
                and self.ctx.infer(repeats).kind == V.TENSOR)


_SHAPED = "has a shape that depends on the data"
# reductions that, called without arguments, give one element
_FULL_REDUCTIONS = ("sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "all", "any", "std", "var")
