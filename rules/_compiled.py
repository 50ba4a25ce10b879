"""The SYN6xx family: what an operation does inside code that runs under `torch.compile`.

A compiled rule reports a compiled event (`report_event`) wherever the code may be compiled
(a function no `torch.compiler.disable` excludes): which functions are compiled, and with
which options, is known once the project's call graph is linked, and
`synclint.semantic.compiled.settle` then keeps the events inside a compiled region, appends
what happens there under its options (graph break, compile error under `fullgraph=True`,
CUDA graphs split, whether the host still waits) and the compiled-code fix, and withdraws the
eager finding at the same place. Inside compiled code a tensor is a graph value whatever its
device, so these rules ask `ctx.graph_tensor`, not `ctx.gpu`; the device only decides whether
the host waits.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.rule import Rule
from synclint.semantic import KNOWN
from synclint.semantic import library as L
from synclint.semantic.compiled import tag


class CompiledRule(Rule):
    ABSTRACT = True

    def report_event(self, node: cst.CSTNode, kind: str, value: Optional[cst.BaseExpression],
                     policy: str = KNOWN, **fmt: object) -> None:
        """Report `node` as a compiled event of `kind` (`compiled.KINDS`) about the tensor
        `value` (whose device says whether the host waits; `policy` as it was accepted)."""
        ctx = self.ctx
        if not ctx.may_compile():
            return
        gpu = value is not None and ctx.gpu(value, policy) is not None
        ctx.report(self, node, self.MESSAGE.format(**fmt), replacement=None, target=node, safe=False,
                   fix_title=None, compiled=tag(kind, gpu))



_D = L._DATA["compiled"]
SIZE_FUNCTIONS = frozenset(_D["size_functions"])  # torch.* functions whose positional arguments are sizes
SIZE_METHODS = frozenset(_D["size_methods"])  # tensor methods whose arguments are sizes
