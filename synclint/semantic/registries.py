"""Registries: how a library-style package (mmengine's, detectron2's or fvcore's `Registry`,
or a project's own) builds its components from a config.

A class is put in a registry where it is defined (`@TASK_UTILS.register_module()`,
`@ROI_HEADS_REGISTRY.register()`) or by a call (`R.register(C)`, `R.register_module(module=C)`),
in any module of the project; `R.build(cfg)` (`build_from_cfg(cfg, R)`) then gives an instance
of one of the classes registered in R, and so does calling what `R.get(name)` gives. A method
called on that instance (`self.assigner.assign(...)`, the instance kept on `self` in
`__init__`) runs that method of each class registered in R.

This module reads the syntax of both ends: the registrations a module makes (kept in its
summary, `registrations`), and the registry a call builds through (`built_through`). Which
names are registries, and what is registered in each, is the project's to say
(`Project.registries`: a name is a registry where some class of the project is registered in
it); the file asks it through `ProjectFacts.registry`.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic.syntax import string_value

__all__ = ["registrations", "registered_as", "type_names", "built_through"]

# (the expression a registry is named by) -> how the file spells it: a qualified name
# (`pkg.registry.MODELS`, imported) or a module-level name of the file (`MODELS`), else None
Spell = Callable[[cst.BaseExpression], Optional[str]]


def registrations(module: Optional[cst.Module], spell: Spell) -> List[Tuple[str, str]]:
    """(registry, class) of each registration at the top level of `module`, both as the file
    spells them: a class's decorator (`@MODELS.register_module()`, `@MODELS.register_module(name=...)`,
    `@R.register()`, `@R.register`) or a call (`R.register(C)`, `R.register_module(module=C)`)."""
    out: List[Tuple[str, str]] = []
    for stmt in module.body if module is not None else ():
        if type(stmt) is cst.ClassDef:
            for d in stmt.decorators:
                e = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
                registry = _registry_of(e, spell)
                if registry is not None:
                    out.append((registry, stmt.name.value))
        elif type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.Expr and type(small.value) is cst.Call:
                    found = _registered_by_call(small.value, spell)
                    if found is not None:
                        out.append(found)
    return out


def registered_as(module: Optional[cst.Module], spell: Spell) -> Dict[str, List[str]]:
    """class -> the names a decorator registers it under instead of its own
    (`@MODELS.register_module(name="Setup")`, `@METRICS.register_module('MS_SSIM')`, a list of
    names); "*" where the name is not written out. Classes registered under their own name are left out."""
    out: Dict[str, List[str]] = {}
    for stmt in module.body if module is not None else ():
        if type(stmt) is not cst.ClassDef:
            continue
        for d in stmt.decorators:
            if type(d.decorator) is not cst.Call or _registry_of(d.decorator.func, spell) is None:
                continue
            args = d.decorator.args
            given = next((a.value for a in args if a.keyword is not None and a.keyword.value == "name"), None)
            if given is None and args and args[0].keyword is None and not args[0].star:
                given = args[0].value  # (`register_module('MS_SSIM')`: the name comes first)
            if given is None:
                continue
            items = [e.value for e in given.elements] if type(given) in (cst.List, cst.Tuple) else [given]
            names = [string_value(e) or "*" for e in items]
            out.setdefault(stmt.name.value, []).extend(names)
    return out


# The name a config gives a component's class: `type='MonoFlexHead'`, `"type": "MonoFlexHead"`,
# or the class itself in mmengine's new-style configs (`type=MonoFlexHead`)
# (found from the literal `type`, its left side checked apart: a pattern that starts with a
# word boundary or a choice is tried at every position of every file, 18 times slower)
_TYPE_NAME = re.compile(r"""type(?:\s*=\s*|["']\s*:\s*)["']?([A-Za-z_][\w.]*)""")


def type_names(text: str) -> List[str]:
    """The class names a file's configs or code build components by (`dict(type="X")`),
    read from its text: a config folder's files are plain dicts that no parse is spent on.
    A dotted name (`mmdet.RandomSampler`) counts by its last part."""
    return sorted(type_name_counts(text))


def type_name_counts(text: str) -> Counter:
    """`type_names`, each with the number of times the text names it."""
    out: Counter = Counter()
    for m in _TYPE_NAME.finditer(text):
        start = m.start()
        before = text[start - 1] if start else " "
        quoted = m.group(0)[4] in "\"'"  # `"type": ...` wants a quote before too
        if (before in "\"'") if quoted else not (before.isalnum() or before == "_"):
            out[m.group(1).rsplit(".", 1)[-1]] += 1
    return out


def _registry_of(e: cst.BaseExpression, spell: Spell) -> Optional[str]:
    """The registry `e` (`R.register_module`) registers in, as the file spells it."""
    if type(e) is not cst.Attribute or e.attr.value not in L.REGISTRY_REGISTERS:
        return None
    return spell(e.value)


def _registered_by_call(call: cst.Call, spell: Spell) -> Optional[Tuple[str, str]]:
    """`R.register(C)`, `R.register_module(module=C)` (`R.register_module(C)` in old mmcv):
    (registry, class) as the file spells them. A string first argument is a name, not a
    class (nn.Module's own `register_module("name", m)`)."""
    registry = _registry_of(call.func, spell)
    if registry is None:
        return None
    given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("module", "obj")), None)
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if given is None and len(positional) == 1:
        given = positional[0]
    if type(given) not in (cst.Name, cst.Attribute):
        return None
    cls = spell(given)
    return (registry, cls) if cls is not None else None


def built_through(call: cst.Call, qualname: Optional[str], spell: Spell) -> Optional[Tuple[str, bool]]:
    """The registry a call builds through, as the file spells it, and whether the call gives
    a class of it (`R.get(name)`) rather than an instance (`R.build(cfg)`,
    `build_from_cfg(cfg, R)`); None for any other call. `qualname`: the call's function's."""
    func = call.func
    if type(func) is cst.Attribute:
        m = func.attr.value
        if m in L.REGISTRY_BUILDS or m in L.REGISTRY_LOOKUPS:
            registry = spell(func.value)
            if registry is not None:
                return registry, m in L.REGISTRY_LOOKUPS
    where = L.REGISTRY_BUILD_FUNCTIONS.get(qualname) if qualname else None
    if where is not None:
        pos, key = where
        arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == key), None)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if arg is None and len(positional) > pos:
            arg = positional[pos]
        registry = spell(arg) if arg is not None else None
        if registry is not None:
            return registry, False
    return None
