"""The entries of an `nn.ModuleDict` held in an attribute, read from the syntax that builds it.

nanoGPT's layout, which many compiled models keep: `self.transformer = nn.ModuleDict(dict(
wte=nn.Embedding(...), h=nn.ModuleList([Block(config) for _ in range(n)]), ln_f=LayerNorm(...)))`,
then `for block in self.transformer.h: x = block(x)` in `forward`. The value domain has no
keyed containers, so `self.transformer.h` is found where it is read: the expression the class
gives that entry (a dict literal's string key, or a keyword of `dict(...)`), which the
evaluator then infers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic.syntax import string_value

if TYPE_CHECKING:
    from synclint.semantic.scopes import ClassInfo

MAX_BASES = 8


def entries(env, holder: cst.BaseExpression, key: str) -> List[cst.BaseExpression]:
    """The expressions the class of the method being walked (or an in-file base) assigns to
    entry `key` of the ModuleDict `holder` (`self.<attr>`); empty when none is known."""
    if not (type(holder) is cst.Attribute and type(holder.value) is cst.Name and holder.value.value == "self"):
        return []
    out: List[cst.BaseExpression] = []
    for info in _classes(env, env.cls):
        for made in info.pending.get(holder.attr.value, ()):
            entry = _entry(env, made, key)
            if entry is not None:
                out.append(entry)
        if out:
            break  # (the class's own assignment hides a base's)
    return out


def _classes(env, info: Optional["ClassInfo"]) -> Iterator["ClassInfo"]:
    """The class and its in-file bases, nearest first."""
    seen = 0
    while info is not None and seen < MAX_BASES:
        yield info
        seen += 1
        info = next((env.classes_by_name[b] for b in info.bases if b in env.classes_by_name), None)


def _entry(env, made, key: str) -> Optional[cst.BaseExpression]:
    """`nn.ModuleDict({"h": e})` or `nn.ModuleDict(dict(h=e))`: `e`."""
    if type(made) is not cst.Call or not made.args or env.qualname(made.func) not in _MODULE_DICTS:
        return None
    arg = made.args[0].value
    if type(arg) is cst.Dict:
        return next((el.value for el in arg.elements
                     if type(el) is cst.DictElement and string_value(el.key) == key), None)
    if type(arg) is cst.Call and type(arg.func) is cst.Name and arg.func.value == "dict" \
            and not env.is_local("dict"):
        return next((a.value for a in arg.args if a.keyword is not None and a.keyword.value == key), None)
    return None


_MODULE_DICTS = frozenset("torch." + d for d in L.MODULE_DICTS)
