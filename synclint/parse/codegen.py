"""LibCST's code for a node that is not in a module: a fix's replacement, written where the
node it replaces starts. LibCST generates code for whole modules only (`Module.code`,
`code_for_node` at no indentation); a replacement inside a block must continue its lines at
the block's indentation, so the node's own code generation runs with the block's indent."""

from __future__ import annotations

import libcst as cst
from libcst._nodes.internal import CodegenState


def code_for(module: cst.Module, node: cst.CSTNode, indent: str) -> str:
    """Code for `node`, in `module`'s indentation and line endings; continuation lines keep
    `indent` (the block's)."""
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens = [indent] if indent else []
    node._codegen(state)
    return "".join(state.tokens)
