"""Small predicates shared by rules. Rules import them as synclint.rules._helpers."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

import libcst as cst

from synclint.semantic import EVIDENT
from synclint.semantic.library import LIGHTNING_LOG_METHODS
from synclint.semantic.syntax import code_of, is_true, kwarg, last_name, string_value  # noqa: F401 - re-exported for rules


def method_call(node: cst.Call, names) -> Optional[str]:
    """`recv.<name>(...)` with name in `names`: the name, else None.

    A call whose func is itself a call (`f(a)(b)`) is not a method call.
    """
    func = node.func
    if type(func) is cst.Attribute and func.attr.value in names:  # (by type: every rule asks, of every call)
        return func.attr.value
    return None


def last_names(*groups) -> frozenset:
    """The last part of each name (`torch.cuda.synchronize`: `synchronize`): a rule's
    `CALLS` from the qualified names it checks."""
    return frozenset(n.rsplit(".", 1)[-1] for g in groups for n in g)


def receiver(node: cst.Call) -> cst.BaseExpression:
    assert type(node.func) is cst.Attribute
    return node.func.value


def is_python_scalar(e: cst.BaseExpression) -> bool:
    """A literal number or bool (optionally negated): a value the host holds."""
    if type(e) is cst.UnaryOperation and type(e.operator) in (cst.Minus, cst.Plus):
        e = e.expression
    if type(e) in (cst.Integer, cst.Float):
        return True
    return type(e) is cst.Name and e.value in ("True", "False")


def positional(node: cst.Call):
    return [a for a in node.args if a.keyword is None and not a.star]


def code(e: cst.CSTNode) -> str:
    """Source text of a node (for messages)."""
    return code_of(e)


# A backslash that continues a line: no part of the code a message quotes on one line
_CONTINUATION = re.compile(r"\\(?:\r\n|\r|\n)")


def short(e: cst.CSTNode, limit: int = 40) -> str:
    s = " ".join(_CONTINUATION.sub(" ", code(e)).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def arg(call: cst.Call, pos: int, name: str) -> Optional[cst.BaseExpression]:
    """The argument at positional index `pos` or keyword `name` (None if absent; positions
    after a `*args` cannot be known, so None there too)."""
    i = 0
    for a in call.args:
        if a.star:
            return None
        if a.keyword is not None:
            if a.keyword.value == name:
                return a.value
            continue
        if i == pos:
            return a.value
        i += 1
    return None


def lightning_logged(ctx, node: cst.Call) -> Optional[Tuple[str, cst.BaseExpression]]:
    """`self.log(name, value, ...)` or `self.log_dict(values, ...)` in a LightningModule's
    method: ("log" or "log_dict", what is logged); else None."""
    func = node.func
    if not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"
            and func.attr.value in LIGHTNING_LOG_METHODS):
        return None
    logged = arg(node, *LIGHTNING_LOG_METHODS[func.attr.value])
    if logged is None or not ctx.in_lightning_module():
        return None
    return func.attr.value, logged


def dict_values(e: cst.BaseExpression) -> Optional[List[cst.BaseExpression]]:
    """The values of a dict written out (`{"loss": loss}`: its values; a comprehension: its
    value expression); None for anything else."""
    if type(e) is cst.DictComp:
        return [e.value]
    if type(e) is cst.Dict:
        return [el.value for el in e.elements if type(el) is cst.DictElement]
    return None


def torch_alias(ctx) -> Optional[str]:
    """The local name bound to the `torch` module, if any (for fixes that call torch.*)."""
    return ctx.import_alias("torch")


def side_effect_free(e: cst.BaseExpression) -> bool:
    """Literals, names, attributes and arithmetic of them: safe to evaluate in another order."""
    if type(e) in (cst.Integer, cst.Float, cst.Name, cst.SimpleString):
        return True
    if type(e) is cst.Attribute:
        return side_effect_free(e.value)
    if type(e) is cst.UnaryOperation:
        return side_effect_free(e.expression)
    if type(e) is cst.BinaryOperation:
        return side_effect_free(e.left) and side_effect_free(e.right)
    return False


def with_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended (or its value replaced)."""
    args = list(call.args)
    for i, a in enumerate(args):
        if a.keyword is not None and a.keyword.value == name:
            args[i] = a.with_changes(value=value)
            return call.with_changes(args=args)
    if args and type(args[-1].comma) is cst.Comma:  # a trailing comma: keep the layout
        last = args[-1]
        ws = last.comma.whitespace_after
        if type(ws) is cst.SimpleWhitespace and ws.value == "":
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
    no_space = cst.SimpleWhitespace("")
    args.append(cst.Arg(value=value, keyword=cst.Name(name),
                        equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space)))
    return call.with_changes(args=args)


def gpu_number(ctx, e: cst.BaseExpression) -> bool:
    """`e` is a tensor on (or assumed on) the GPU, with evidence beyond a parameter's name."""
    return ctx.gpu(e, EVIDENT) is not None and not _dim_or_shape_name(e)


_DIM_SUFFIXES = ("shape", "dim", "dims", "axis", "axes")


def _dim_or_shape_name(e: cst.BaseExpression) -> bool:
    """`start_dim`, `end_dim + 1`, `out_shape`: dimension indices and shapes are host values;
    a name like that inferred as a tensor is an inference miss (a helper's return value)."""
    if type(e) is cst.BinaryOperation:
        return _dim_or_shape_name(e.left) or _dim_or_shape_name(e.right)
    if type(e) is cst.UnaryOperation:
        return _dim_or_shape_name(e.expression)
    name = last_name(e)
    return name is not None and name.lower().endswith(_DIM_SUFFIXES)


def one_line(node: cst.CSTNode) -> bool:
    """The node's code has no line break. Fixes are offered only for these: the engine writes
    a replacement's later lines without the enclosing block's indentation."""
    return "\n" not in code_of(node)


def has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def literal_bool(e: Optional[cst.BaseExpression]) -> Optional[bool]:
    if type(e) is cst.Name and e.value in ("True", "False"):
        return e.value == "True"
    return None
