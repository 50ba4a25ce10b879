from typing import Optional

import libcst as cst

from synclint.rule import Invalid, Valid
from synclint.rules._compiled import CompiledRule
from synclint.rules._helpers import kwarg, method_call, positional, receiver, short
from synclint.semantic import NOT_MODULE
from synclint.semantic import values as V


class CompiledHostCopy(CompiledRule):
    """
    ## What it does
    Flags a copy of a GPU tensor to the host (`.cpu()`, `.to("cpu")`) inside code that runs
    under `torch.compile` with CUDA graphs (`mode="reduce-overhead"` or `"max-autotune"`).

    ## Why is this bad?
    Dynamo traces the copy into the graph without a break, so in a plain compiled function it
    costs what it costs in eager code (the host waits for the copy: the eager rule, SYN103,
    says so, and this rule says nothing). Under CUDA graphs it costs more: a graph with a CPU
    tensor in it cannot be captured whole, so inductor splits it at the copy (or, without
    graph partitioning, skips CUDA graphs for it: "skipping cudagraphs due to cpu device"),
    and the launches CUDA graphs were meant to save come back.

    ## Use instead
    Return the tensor from the compiled function and copy it to the host outside, once per N
    steps; keep metrics on the GPU inside.

    ## Known problems
    A function also called outside compiled code is reported as compiled.
    """

    CODE = "SYN605"
    NAME = "compiled-host-copy"
    CALLS = frozenset({"cpu", "to"})
    MESSAGE = "`{expr}` copies a tensor to the host inside compiled code"
    VALID = [
        # compiled without CUDA graphs: no more than in eager code (SYN103's)
        Valid(
            "import torch\n"
            "@torch.compile\n"
            "def step(x: torch.Tensor):\n"
            "    y = x.relu()\n"
            "    return y, y.sum().cpu()\n"
        ),
        # under CUDA graphs, the copy outside the compiled function
        Valid(
            "import torch\n"
            "@torch.compile(mode='reduce-overhead')\n"
            "def step(x: torch.Tensor):\n"
            "    return x.relu().sum()\n"
            "def train(xs):\n"
            "    return [step(x).cpu() for x in xs]\n"
        ),
        # a tensor already on the host, and a non-blocking copy's sibling: `.to(device)`
        Valid(
            "import torch\n"
            "@torch.compile(mode='reduce-overhead')\n"
            "def step(x: torch.Tensor, device: torch.device):\n"
            "    table = torch.arange(4, device='cpu')\n"
            "    return x.to(device), table.cpu()\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "class Net(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        y = x.relu()\n"
            "        stats = y.mean(0).cpu()\n"
            "        return y, stats\n"
            "net = torch.compile(Net().cuda(), mode='reduce-overhead')\n",
            line=5,
            message="`y.mean(0).cpu()` copies a tensor to the host inside compiled code: no graph break, but "
                    "CUDA graphs (mode=\"reduce-overhead\") are split or skipped at this CPU op in `Net.forward` "
                    "and the host waits for the GPU",
        ),
        Invalid(
            "import torch\n"
            "@torch.compile(mode='max-autotune')\n"
            "def step(x: torch.Tensor):\n"
            "    return x.to('cpu')\n",
            line=4,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        m = method_call(node, ("cpu", "to"))
        if m is None or self.ctx.qualname(node.func) is not None:
            return
        recv = receiver(node)
        if m == "to" and not self._to_cpu(node):
            return
        if m == "cpu" and positional(node):
            return
        v = self.ctx.graph_tensor(recv, NOT_MODULE)
        if v is not None and v.device != V.CPU:
            self.report_event(node, "host-copy", recv, NOT_MODULE, expr=short(node))

    def _to_cpu(self, node: cst.Call) -> bool:
        pos = positional(node)
        dev: Optional[cst.BaseExpression] = kwarg(node, "device") or (pos[0].value if pos else None)
        is_dev, where = self.ctx.device_of_arg(dev)
        return is_dev and where == V.CPU
