"""The training mode a compiled module is called in, and the `if self.training:` branches
that mode never takes.

An nn.Module's `self.training` is a Python bool that Dynamo guards on: it traces only the
branch the mode selects, so the `else` of `if self.training:` (TabICL's whole inference path)
is not in a region whose every call is in training mode. `.train()` and `.eval()` are
recursive, so the root module's mode is every submodule's.

The walk records (`Compiled`, `semantic.mode_sites`): the call edges made in such a branch (`modal`), where a compile
result is kept (`holders`: `self.model = torch.compile(model)`, or through a local and a
wrapper, `self.model = DDP(model)`), the mode sets (`self.model.train()`), the calls of held
modules and of the class's own methods with the modes set by statements that dominate them
(`mode_sites`), and what lets a held value leave its class (`escapes`). The linker then
(`root_modes`) asks, for each compile root kept in an attribute, the mode at every call of
that attribute: the last dominating `.train()`/`.eval()` in the calling method when nothing
it calls sets another, else the mode at every call of that method from its own class.
Anything else (a value passed away, a call from outside the class, a submodule's own mode
set, a mode not a literal) leaves the mode unknown, and regions as before.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple


Incoming = Dict[Tuple[str, str], List[Tuple[str, Optional[str]]]]


class _File:
    """One file's mode facts, indexed."""

    def __init__(self, c) -> None:
        self.sets: Dict[str, List[Tuple[str, Optional[bool]]]] = {}
        for func, recv, mode in c.mode_sets:
            self.sets.setdefault(func, []).append((recv, mode))
        self.sites = c.mode_sites
        self.calls: Dict[str, List[str]] = {}
        for func, kind, target, _ in c.mode_sites:
            if kind == "self":
                self.calls.setdefault(func, []).append(target)
        self.escapes = set(map(tuple, c.escapes))


def root_modes(files: Dict[str, object], incoming: Incoming) -> Dict[Tuple[str, int], Optional[bool]]:
    """(path, index of a root in that file's `Compiled.roots`) -> the training mode at every
    call of the compiled value, where known (absent: not known)."""
    out: Dict[Tuple[str, int], Optional[bool]] = {}
    for path, c in files.items():
        if not c.holders:
            continue
        facts = _File(c)
        by_root: Dict[int, List[Tuple[str, str]]] = {}
        for i, cls, attr in c.holders:
            by_root.setdefault(i, []).append((cls, attr))
        for held in by_root.values():  # (an attribute that holds what a holder holds holds it too)
            grew = True
            while grew:
                grew = False
                for cls, alias, of in c.aliases:
                    if (cls, of) in held and (cls, alias) not in held:
                        held.append((cls, alias))
                        grew = True
        for i, held in by_root.items():
            if ("", str(i)) in facts.escapes:
                continue
            # (the attributes holding one value are one receiver: `self.raw_model.eval()` is
            # `self.model`'s mode too)
            recvs = frozenset(f"self.{attr}" for _, attr in held)
            modes = set().union(*(_held_modes(path, facts, cls, attr, recvs, incoming) for cls, attr in held))
            if len(modes) == 1 and None not in modes:
                out[(path, i)] = modes.pop()
    return out


def _held_modes(path: str, facts: _File, cls: str, attr: str, recvs: frozenset,
                incoming: Incoming) -> Set[Optional[bool]]:
    """The modes at the calls of `self.<attr>` in its class (none: never called there; None
    among them: not known)."""
    if (cls, attr) in facts.escapes:
        return {None}
    prefix = cls + "."
    if any(func.startswith(prefix) and r.startswith(recv + ".") for func, sets in facts.sets.items()
           for r, _ in sets for recv in recvs):
        return {None}  # a submodule's own mode set: not the root's everywhere
    sites = [s for s in facts.sites if s[0].startswith(prefix) and s[1] == "held" and s[2] == attr]
    return {_site_mode(path, facts, s, recvs, cls, incoming, set()) for s in sites}


def _site_mode(path, facts: _File, site, recvs: frozenset, cls: str, incoming: Incoming,
               seen: Set[str]) -> Optional[bool]:
    func, _, _, known = site
    modes = _sets_reached(facts, func, recvs)
    dominating = {known[r] for r in recvs if r in known}
    if dominating:
        mode = dominating.pop() if len(dominating) == 1 else None
        return mode if mode is not None and modes <= {mode} else None
    if modes:
        return None
    return _entry_mode(path, facts, func, recvs, cls, incoming, seen)


def _sets_reached(facts: _File, func: str, recvs: frozenset) -> Set[Optional[bool]]:
    """The modes `func`, and the methods of its class it calls, set on the receivers."""
    out: Set[Optional[bool]] = set()
    todo, seen = [func], {func}
    while todo:
        g = todo.pop()
        out.update(m for r, m in facts.sets.get(g, ()) if r in recvs)
        for h in facts.calls.get(g, ()):
            if h not in seen:
                seen.add(h)
                todo.append(h)
    return out


def _entry_mode(path, facts: _File, func: str, recvs: frozenset, cls: str, incoming: Incoming,
                seen: Set[str]) -> Optional[bool]:
    """The mode at every call of the method `func` (each from a method of its class)."""
    callers = incoming.get((path, func), [])
    if func in seen or not callers:
        return None
    seen = seen | {func}
    modes: Set[Optional[bool]] = set()
    for caller_path, caller in callers:
        if caller_path != path or caller is None or not caller.startswith(cls + "."):
            return None
        sites = [s for s in facts.sites if s[0] == caller and s[1] == "self" and s[2] == func]
        if not sites:
            return None  # called some other way (through an object, a bound method)
        modes.update(_site_mode(path, facts, s, recvs, cls, incoming, seen) for s in sites)
    return modes.pop() if len(modes) == 1 else None
