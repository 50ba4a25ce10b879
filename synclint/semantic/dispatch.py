"""Methods called by a name held in a variable: `getattr(self, func_name)(*args)`.

A worker or RPC server often runs a loop that reads a method's name from a channel (shared
memory, a queue, a socket) and calls that method of itself. The call has no edge of its own:
which method runs, and how often, is told by the code that sends the name, a string literal
that names the method (`self.channel.write("prefill", (reqs,))` in the client's `prefill`).
So the call edge is the sender's: the function that passes the literal calls the method, at
the rate of that call site. The loop that dispatches adds nothing (it also runs `init_model`
once, when the client sends that name once).

Bounded by two facts: the class calls a method of `self` by a name that is not a literal,
and the literal is a method that class defines. A literal given to `getattr`/`hasattr`/
`setattr`/`delattr` reads or tests an attribute: no call.
"""

from __future__ import annotations

from typing import Dict, Tuple

import libcst as cst

from synclint.semantic.syntax import descendants, string_value

# Built-ins that take an attribute's name without calling it.
REFLECTION = frozenset(("getattr", "hasattr", "setattr", "delattr"))


def dispatched_methods(module: cst.Module) -> Dict[str, Tuple[str, ...]]:
    """method name -> the keys (`Class.method`) of the in-file methods of that name whose
    class calls a method of `self` by a name held in a variable."""
    out: Dict[str, Tuple[str, ...]] = {}
    for cls in module.body:
        if type(cls) is not cst.ClassDef or type(cls.body) is not cst.IndentedBlock:
            continue
        methods = [d.name.value for d in cls.body.body if type(d) is cst.FunctionDef]
        if methods and any(_dispatches(d) for d in cls.body.body if type(d) is cst.FunctionDef):
            for m in methods:
                out[m] = out.get(m, ()) + (f"{cls.name.value}.{m}",)
    return out


def _dispatches(func: cst.FunctionDef) -> bool:
    """Whether a method calls `getattr(self, name)(...)`, or binds `getattr(self, name)` to a
    local it calls, with `name` not a literal."""
    bound = set()
    called = set()
    for n in descendants(func):
        if type(n) is cst.Call:
            if _by_name(n.func):
                return True
            if type(n.func) is cst.Name:
                called.add(n.func.value)
        elif type(n) is cst.Assign and _by_name(n.value):
            bound.update(t.target.value for t in n.targets if type(t.target) is cst.Name)
    return bool(bound & called)


def _by_name(e: cst.BaseExpression) -> bool:
    """`getattr(self, <not a literal>)`."""
    return (type(e) is cst.Call and type(e.func) is cst.Name and e.func.value == "getattr"
            and len(e.args) == 2 and type(e.args[0].value) is cst.Name and e.args[0].value.value == "self"
            and string_value(e.args[1].value) is None and type(e.args[1].value) is not cst.FormattedString)


def named_methods(node: cst.Call, dispatched: Dict[str, Tuple[str, ...]]) -> Tuple[str, ...]:
    """The dispatched methods a call sends the name of (a string literal among its arguments)."""
    if type(node.func) is cst.Name and node.func.value in REFLECTION:
        return ()
    out: Tuple[str, ...] = ()
    for a in node.args:
        name = string_value(a.value)
        if name is not None and name in dispatched:
            out += dispatched[name]
    return out
