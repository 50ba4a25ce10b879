from typing import Iterable

import libcst as cst

from synclint.rule import Invalid, Valid
from synclint.rules._compiled import CompiledRule
from synclint.rules._helpers import method_call, positional, short
from synclint.rules._host_readback import LOG_METHODS, is_builtin, is_logging_call, only_on_error_path, string_literal
from synclint.semantic import EVIDENT
from synclint.semantic import values as V


class CompiledTensorPrint(CompiledRule):
    """
    ## What it does
    Flags a tensor printed, logged or turned into text by `str`/`repr`/`%` inside code that
    runs under `torch.compile`.

    ## Why is this bad?
    Dynamo cannot put `print`, a logger call or the text of a tensor into a graph: it breaks
    the graph there (registry ids GB0059 for `print`/`str`, GB0569 for `repr`, GB0208 for
    `%`, GB0291 for a `logging.Logger` method). The compiled function runs as two graphs with
    the print in Python between them, and on a GPU the host waits for the value it prints. No
    flag captures it: under `fullgraph=True` the function fails to compile, and under CUDA
    graphs (`mode="reduce-overhead"`) each part is a CUDA graph of its own.

    An f-string or `str.format` of a tensor is not reported here: Dynamo builds that text after
    the graph, without a break (the host still waits to format the value: the eager finding,
    SYN106, says so).

    ## Use instead
    Return what you want to see from the compiled function and print or log it outside, once
    per N steps; or keep a running total on the GPU and log that.
    `torch._dynamo.config.reorderable_logging_functions` can move `print` and logging calls
    after the graph, where the host still waits to format the value.

    ## Known problems
    A logger call breaks the graph whatever it logs; only calls that log a tensor are
    reported.
    """

    CODE = "SYN603"
    NAME = "compiled-tensor-print"
    CALLS = frozenset({"print", "str", "repr"}) | LOG_METHODS
    MESSAGE = "`{expr}` {what} inside compiled code"
    VALID = [
        # eager code: the eager rule's (SYN106)
        Valid("import torch\ndef step(x: torch.Tensor):\n    print(x.sum())\n    return x\n"),
        # an f-string is built after the graph, without a break
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    y = x.relu()\n"
            "    msg = f'mean {y.mean():.3f}'\n"
            "    return y, msg\n"
        ),
        # printing Python values and shapes
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor, step: int):\n"
            "    print('step', step, x.shape)\n"
            "    return x * 2\n"
        ),
        # the caller prints the result
        Valid(
            "import logging\n"
            "import torch\n"
            "log = logging.getLogger(__name__)\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    return x.pow(2).mean()\n"
            "def train(xs):\n"
            "    for x in xs:\n"
            "        log.info('loss %s', step(x))\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    loss = x.pow(2).mean()\n"
            "    print(loss)\n"
            "    return loss\n",
            line=5,
            message="`loss` is printed inside compiled code: a graph break (GB0059) splits `step` "
                    "here into two graphs; this line runs in Python and the host waits for the GPU",
        ),
        Invalid(
            "import logging\n"
            "import torch\n"
            "logger = logging.getLogger(__name__)\n"
            "class Head(torch.nn.Module):\n"
            "    def forward(self, logits: torch.Tensor):\n"
            "        logger.info('max logit %s', logits.max())\n"
            "        return logits.softmax(-1)\n"
            "head = torch.compile(Head(), fullgraph=True)\n",
            line=6,
            message="`logits.max()` is logged inside compiled code: a compile error under "
                    "fullgraph=True (GB0291): `Head.forward` cannot be one graph",
        ),
        Invalid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    text = 'loss %.3f' % x.mean()\n"
            "    return x, text\n",
            line=4,
        ),
    ]

    def _check(self, exprs: Iterable[cst.BaseExpression], kind: str, at=None) -> None:
        if only_on_error_path(self.ctx):
            return  # a `raise`'s message: built when it fails, not at every call
        for e in exprs:
            if self.ctx.graph_tensor(e, EVIDENT) is not None:
                self.report_event(at if at is not None else e, kind, e, EVIDENT, expr=short(e), what=_WHAT[kind])

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is not cst.Modulo:
            return
        if not string_literal(node.left):
            left = self.ctx.infer(node.left)
            if not (left.kind == V.PY and left.py == "str"):
                return
        right = node.right
        if type(right) is cst.Tuple:
            self._check((el.value for el in right.elements), "percent", node)
        elif type(right) is cst.Dict:
            self._check((el.value for el in right.elements if type(el) is cst.DictElement), "percent", node)
        else:
            self._check([right], "percent", node)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = is_builtin(ctx, node.func, ("print", "str", "repr"))
        if name == "print":
            self._check((a.value for a in positional(node)), "print")
            return
        if name is not None:
            pos = positional(node)
            if pos:
                self._check([pos[0].value], "repr" if name == "repr" else "str")
            return
        m = method_call(node, LOG_METHODS)
        if m is not None and is_logging_call(ctx, node.func):
            pos = [a.value for a in positional(node)]
            self._check(pos[1:] if m == "log" else pos, "logging")


_WHAT = {"print": "is printed", "str": "is turned into text", "logging": "is logged", "repr": "is turned into text",
         "percent": "is turned into text"}
