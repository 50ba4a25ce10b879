import libcst as cst

from synclint.rule import Invalid, Valid
from synclint.rules._compiled import CompiledRule
from synclint.rules._helpers import method_call, positional, receiver, short
from synclint.semantic import EVIDENT


class CompiledTensorBranch(CompiledRule):
    """
    ## What it does
    Flags Python control flow that depends on a tensor's value inside code that runs under
    `torch.compile`: a tensor as the test of `if`, `elif`, `while`, a conditional expression
    or a comprehension filter, an operand of `and`/`or`/`not`, `torch.equal`/`allclose`, and
    `x in t`.

    ## Why is this bad?
    Dynamo traces one path through the code; which one a tensor's value picks is not known
    while tracing. It breaks the graph at the branch (registry id GB0170, "Data-dependent
    branching"; `torch.equal`/`allclose`: GB0033, "Data dependent operator"; `x in t`:
    GB0124): the compiled function runs as two graphs, and on a GPU the host waits for the
    first to finish to learn which way to go. No Dynamo flag captures a branch
    (`capture_scalar_outputs` only moves the failure to the guard on the captured value), so
    under `fullgraph=True` the function fails to compile, and under CUDA graphs
    (`mode="reduce-overhead"`) each part is replayed as a CUDA graph of its own with the wait
    between them.

    `assert <tensor>` is not reported: Dynamo turns it into `torch._assert_async`, which
    neither breaks the graph nor waits (the eager finding on it, SYN105, is withdrawn there).

    ## Use instead
    Make both branches data: `torch.where(cond, a, b)`, or `torch.cond(pred, true_fn,
    false_fn, (x,))` when the branches compute different things; compare with tensor
    operations and keep the result a tensor (`(a == b).all()` used as a mask, not as a bool).
    A check that only guards against bad input belongs before the compiled call, or in an
    `assert`.

    ## Known problems
    Only values known to be tensors are checked (an unannotated parameter is not taken for
    one). A function also called outside compiled code is reported as compiled.
    """

    CODE = "SYN602"
    NAME = "compiled-tensor-branch"
    CALLS = frozenset({"equal", "allclose"})
    MESSAGE = "`{expr}` {what} inside compiled code"
    VALID = [
        # eager code: the eager rule's (SYN105)
        Valid("import torch\ndef step(x: torch.Tensor):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n"),
        # an assert becomes torch._assert_async under Dynamo: no break, no wait
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    assert (x >= 0).all(), 'negative input'\n"
            "    return x.sqrt()\n"
        ),
        # tests on Python values, shapes and None are decided while tracing
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor, scale=None, training: bool = True):\n"
            "    if scale is None or not training:\n"
            "        return x\n"
            "    if x.shape[0] > 4 and x.dim() == 2:\n"
            "        x = x * scale\n"
            "    return x\n"
        ),
        # the branch on the GPU: torch.where
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    return torch.where(x.sum() > 0, x * 2, x)\n"
        ),
        # a helper excluded from the graph
        Valid(
            "import torch\n"
            "@torch.compiler.disable\n"
            "def clip_if_large(x):\n"
            "    return x / 2 if torch.isnan(x).any() else x\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    return clip_if_large(x * 2)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    if x.sum() > 0:\n"
            "        x = x * 2\n"
            "    return x\n",
            line=4,
            message="`x.sum() > 0` branches on a tensor's value inside compiled code: a graph break (GB0170) "
                    "splits `step` here into two graphs; this line runs in Python and the host waits for the GPU",
        ),
        Invalid(
            "import torch\n"
            "class Block(torch.nn.Module):\n"
            "    def forward(self, x, ref: torch.Tensor):\n"
            "        return x if torch.allclose(x, ref) else ref\n"
            "block = torch.compile(Block(), fullgraph=True)\n",
            line=4,
            message="`torch.allclose(x, ref)` compares tensors into a Python bool inside compiled code: a "
                    "compile error under fullgraph=True (GB0033): `Block.forward` cannot be one graph",
        ),
        Invalid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    while x.abs().max() > 1:\n"
            "        x = x / 2\n"
            "    return x\n",
            line=4,
        ),
    ]

    # ------------------------------------------------------------ bool contexts
    def _bool_context(self, e: cst.BaseExpression) -> None:
        """`e` is evaluated as a Python bool: an event if it is a tensor."""
        if type(e) is cst.BooleanOperation:
            self._bool_context(e.left)
            self._bool_context(e.right)
        elif type(e) is cst.UnaryOperation and type(e.operator) is cst.Not:
            self._bool_context(e.expression)
        elif self.ctx.graph_tensor(e, EVIDENT) is not None:
            self.report_event(e, "branch", e, EVIDENT, expr=short(e), what=_BRANCHES)

    def visit_If(self, node: cst.If) -> None:
        self._bool_context(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._bool_context(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._bool_context(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._bool_context(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._bool_context(node.left)  # `a and b` asks for bool(a); b only in a bool context

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if type(node.operator) is cst.Not:
            self._bool_context(node.expression)

    def visit_Assert(self, node: cst.Assert) -> None:
        # Dynamo's `torch._assert_async` for a tensor test: nothing happens (withdraws SYN105).
        # A compound test is left alone: the rewrite is of the assert's own jump only.
        test = node.test
        if type(test) not in (cst.BooleanOperation, cst.UnaryOperation) and \
                self.ctx.graph_tensor(test, EVIDENT) is not None:
            self.report_event(test, "assert", test, EVIDENT, expr=short(test), what=_BRANCHES)

    # ------------------------------------------------------------ comparisons
    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        tn = ctx.torch_name(node.func)
        if tn in ("equal", "allclose"):
            operands = [a.value for a in positional(node)[:2]]
        elif tn is None and method_call(node, ("equal", "allclose")):
            operands = [receiver(node)] + [a.value for a in positional(node)[:1]]
        else:
            return
        tensor = next((o for o in operands if ctx.graph_tensor(o, EVIDENT) is not None), None)
        if tensor is not None:
            self.report_event(node, "equal", tensor, EVIDENT, expr=short(node), what=_COMPARES)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for target in node.comparisons:
            if type(target.operator) in (cst.In, cst.NotIn) and \
                    self.ctx.graph_tensor(target.comparator, EVIDENT) is not None:
                self.report_event(node, "member", target.comparator, EVIDENT, expr=short(node), what=_MEMBER)
                return


_BRANCHES = "branches on a tensor's value"
_COMPARES = "compares tensors into a Python bool"
_MEMBER = "tests membership in a tensor"
