"""LibCST nodes made fast, for trees that come from a parser (or from data a parser's tree
gave): without `__init__` and without each node validating itself. Nodes made anywhere else
(rule fixes) are LibCST's own, validated."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Tuple

import libcst as cst
from libcst import CSTNode

set_field = object.__setattr__  # LibCST's nodes are frozen dataclasses: set one just made


@contextmanager
def without_validation():
    """Build LibCST nodes without each checking itself in `__post_init__`: redundant for a
    tree made from source a parser accepted (LibCST's own parser says so of its trees), and
    a sixth of its parse. Nodes built anywhere else (rule fixes) are still validated. Once
    per file, not per node or expression: setting the hook on `CSTNode` empties the type
    caches of every node class."""
    hook = CSTNode.__dict__.get("__post_init__")
    if hook is None:  # pragma: no cover - another LibCST layout: validate as usual
        yield
        return
    CSTNode.__post_init__ = _no_validation
    try:
        yield
    finally:
        CSTNode.__post_init__ = hook


def _no_validation(self) -> None:
    pass


class _Makers:
    """`make.Call(func=..., args=...)`: a LibCST node made without `__init__`. Every field
    not given gets its default, and a default made by a factory (whitespace, empty
    brackets) is made once and shared, which nothing can change (the nodes are frozen):
    that is most of the objects LibCST's own constructors would make."""

    def __getattr__(self, name: str):  # a node type's first use: make its maker, keep it
        maker = _maker(getattr(cst, name))
        setattr(self, name, maker)
        return maker


make = _Makers()


def _maker(cls: type):
    """A function that fills a new `cls` node's slots directly (keyword arguments, each
    field's default as the parameter's default)."""
    fields = field_defaults(cls)
    scope = {"_alloc": object.__new__, "_cls": cls}
    params, sets = [], []
    for i, (name, default) in enumerate(fields):
        scope[f"_d{i}"] = default
        scope[f"_s{i}"] = getattr(cls, name).__set__
        params.append(f"{name}=_d{i}")
        sets.append(f"    _s{i}(node, {name})\n")
    exec(f"def make({', '.join(params)}):\n    node = _alloc(_cls)\n{''.join(sets)}    return node\n", scope)
    return scope["make"]


def field_defaults(cls: type) -> Tuple[Tuple[str, object], ...]:
    """(field, what `make` gives it when not named), for each field of a node type."""
    out = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
            if isinstance(value, list):
                value = tuple(value)
        else:
            value = None  # a required field: always given
        out.append((f.name, value))
    return tuple(out)
