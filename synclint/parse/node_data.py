"""LibCST nodes as JSON data, and back: a module summary carries a helper's expressions this
way, so an importing file replays them without parsing code again.

A node is a dict: its type's name under "" and each field the analysis reads (none of the
whitespace, commas or comments, which only formatting decides) whose value is not its
default; a sequence of nodes is a list. Nodes made from data are those the tree builder
makes from the same code: LibCST's default whitespace, the same brackets (`lpar`).
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import libcst as cst

from synclint.parse.nodes import field_defaults, make

# Fields only formatting decides: whitespace, commas, colons, comments, line breaks.
FORMATTING = frozenset({
    "leading_lines", "lines_after_decorators", "header", "footer", "comma", "semicolon", "trailing_whitespace",
    "newline", "indent", "default_indent", "default_newline", "encoding", "has_trailing_newline", "equal",
    "colon", "dot", "first_colon", "second_colon", "whitespace"})


def formatting(name: str) -> bool:
    return name in FORMATTING or name.startswith("whitespace")


# node type -> its (field, default) pairs that are no formatting: made once per type, not at
# every node (`dataclasses.fields` and each default factory were a fiftieth of a check).
# Defaults of their own, not `make`'s: a field is compared with it by identity first.
_COMPARED: Dict[type, Tuple[Tuple[str, Any], ...]] = {}


def _compared(t: type) -> Tuple[Tuple[str, Any], ...]:
    pairs = _COMPARED.get(t)
    if pairs is None:
        pairs = _COMPARED[t] = tuple((name, default) for name, default in field_defaults(t) if not formatting(name))
    return pairs


def node_data(node: cst.CSTNode) -> dict:
    """`node` as JSON data (`node_from_data` makes it again)."""
    out: dict = {"": type(node).__name__}
    for name, default in _COMPARED.get(type(node)) or _compared(type(node)):
        value = getattr(node, name)
        if not _same(value, default):
            out[name] = _value_data(value)
    return out


def _same(value: Any, default: Any) -> bool:
    """Whether a field holds what `make` gives it when not named, as the analysis reads it
    (a bracket of the default kind, whatever its whitespace)."""
    if value is default:
        return True
    if isinstance(value, str):
        return value == default
    if isinstance(value, cst.CSTNode):
        return type(value) is type(default) and len(node_data(value)) == 1  # (its type's name only)
    if isinstance(value, (tuple, list)):
        return isinstance(default, tuple) and len(value) == len(default) and all(map(_same, value, default))
    return False


_DEFAULT = "MaybeSentinel.DEFAULT"  # (no node type is called so)


def _value_data(value: Any) -> Any:
    if isinstance(value, cst.CSTNode):
        return node_data(value)
    if isinstance(value, (tuple, list)):
        return [_value_data(v) for v in value]
    if isinstance(value, str) or value is None:
        return value
    if value is cst.MaybeSentinel.DEFAULT:
        return {"": _DEFAULT}
    raise TypeError(f"no data for {type(value).__name__}")  # pragma: no cover - LibCST's fields are the above


def node_from_data(data: dict) -> cst.CSTNode:
    """The node `node_data` gave `data` for. Raises (KeyError, TypeError, AttributeError) on
    data that is not such."""
    if data[""] == _DEFAULT:
        return cst.MaybeSentinel.DEFAULT
    maker = getattr(make, data[""])
    return maker(**{k: _value(v) for k, v in data.items() if k})


def _value(data: Any) -> Any:
    if isinstance(data, dict):
        return node_from_data(data)
    if isinstance(data, list):
        return tuple(_value(v) for v in data)
    return data
