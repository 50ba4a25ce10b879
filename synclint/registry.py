"""Find the rules (one module per rule in synclint.rules) and select among them."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Sequence, Tuple


class SelectionError(ValueError):
    """A --select/--ignore value that matches no rule."""


@lru_cache(maxsize=None)
def all_rules() -> Tuple[type, ...]:
    import synclint.rules as pkg
    from synclint.rule import Rule

    found: Dict[str, type] = {}
    names: Dict[str, str] = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"synclint.rules.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == mod.__name__ and not obj.__dict__.get("ABSTRACT"):
                if obj.CODE in found:
                    raise RuntimeError(f"duplicate rule code {obj.CODE}: {found[obj.CODE].__name__} and {obj.__name__}")
                if obj.NAME in names:
                    raise RuntimeError(f"duplicate rule name {obj.NAME}")
                found[obj.CODE] = obj
                names[obj.NAME] = obj.CODE
    return tuple(sorted(found.values(), key=lambda r: r.CODE))


def default_rules() -> Tuple[type, ...]:
    return tuple(r for r in all_rules() if r.DEFAULT_ON)


def rule_by_key(key: str) -> Optional[type]:
    key_u = key.upper()
    for r in all_rules():
        if r.CODE == key_u or r.NAME == key.lower():
            return r
    return None


def match(selector: str) -> List[type]:
    """Rules matching a code, a code prefix (`SYN1`, `SYN`, `ALL`) or a name."""
    s = selector.strip()
    if not s:
        return []
    if s.upper() == "ALL":
        return list(all_rules())
    su = s.upper()
    hits = [r for r in all_rules() if r.CODE.startswith(su) or r.NAME == s.lower()]
    if not hits:
        raise SelectionError(f"unknown rule selector {selector!r} (expected a code like SYN101, a prefix like SYN1, or a rule name)")
    return hits


def select(
    select: Optional[Sequence[str]] = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
) -> List[type]:
    """Ruff semantics: `select` replaces the default set (an empty one selects nothing),
    `extend_select` adds, `ignore` removes."""
    if select is not None:
        chosen = {r for s in select for r in match(s)}
    else:
        chosen = set(default_rules())
    for s in extend_select:
        chosen.update(match(s))
    for s in ignore:
        chosen.difference_update(match(s))
    return sorted(chosen, key=lambda r: r.CODE)
