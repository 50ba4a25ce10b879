"""What a walked file exports: the facts its next walk starts from (`file_facts`) and what
it offers the rest of the project (`module_summary`).

Both read a `SemanticModel` after its walk (`model`: this module does not import the model,
which imports it) and write nothing into it; the model keeps `summary()` and
`module_summary()` as their names for the engine.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.facts import ClassFacts, FileFacts, ModuleSummary, OneLiner, ref_target
from synclint.semantic.helpers import HelperBody, abstract_body
from synclint.semantic.registries import registered_as, registrations, type_name_counts
from synclint.semantic.scopes import Binding, FuncInfo
from synclint.semantic.syntax import code_of, descendants
from synclint.semantic.values import Val

def file_facts(model) -> FileFacts:
    """What the second walk of this file starts from."""
    m = model
    facts = FileFacts(dict(m.func_returns), dict(m.method_returns),
                      {name: dict(c.attrs) for name, c in m.classes_by_name.items()},
                      cuda_default=m.default_device == V.CUDA,
                      class_pending={name: c.pending for name, c in m.classes_by_name.items()},
                      one_liners=dict(m.one_liners), helpers=dict(m.helpers),
                      classes={name: c.is_module for name, c in m.classes_by_name.items()},
                      class_fed={name: m.class_fed(name) for name in m.classes_by_name},
                      class_bases={name: list(c.bases) for name, c in m.classes_by_name.items()},
                      module_values={name: all_values(b) for name, b in m.module_scope.items()},
                      device_options=dict(m.device_options), loop_carried=dict(m.loop_carried))
    for key in m.call_args:
        info = m.all_funcs.get(key)
        if info is not None:
            facts.params[key] = m.params_by_caller(key, info)
    return facts


def all_values(b: Binding) -> Val:
    """The join of every value a binding and those it replaced held."""
    v = b.val
    while b.prev is not None:
        b = b.prev
        v = V.join(v, b.val)
    return v


def module_summary(model, name: str) -> ModuleSummary:
    """What this module offers the rest of the project (after a walk)."""
    m = model
    out = ModuleSummary(name=name, aliases={k: q for k, q in m.aliases.items()
                                            if q.split(".", 1)[0] not in L.LIBRARY_ROOTS},
                        library_aliases={k: q for k, q in m.aliases.items()
                                         if _star_exported(k, q)},
                        imports=sorted(set(m.imported)), cuda_default=m.default_device == V.CUDA,
                        stars=list(m.stars))
    for fname, v in m.func_returns.items():
        out.funcs[fname] = v
    for cname, info in m.classes_by_name.items():
        cf = ClassFacts(is_module=info.is_module, bases=list(info.bases), fed=m.class_fed(cname),
                        method_aliases=_method_aliases(m, info.node))
        for attr in sorted(set(info.attrs) | set(info.pending)):
            v = m.attribute_of(cname, attr)
            if v.kind != V.UNKNOWN or ref_target(v):
                cf.attrs[attr] = v
        # only what other modules can use: an unknown return tells them nothing (and
        # would make every change of it look like a change of the facts they depend on)
        cf.methods = {meth: v for (c, meth), v in m.method_returns.items()
                      if c == cname and (v.kind != V.UNKNOWN or ref_target(v))}
        # (also one whose return is annotated: a call of it runs an override, which takes
        # the call's arguments)
        cf.abstract = sorted(meth for meth in info.methods if _abstract(m.all_funcs.get(f"{cname}.{meth}")))
        out.classes[cname] = cf
    for vname, b in m.module_scope.items():
        if b.val.kind not in (V.UNKNOWN, V.PY) or ref_target(b.val) or V.is_registry(b.val):
            out.values[vname] = b.val
    for qual, info in m.all_funcs.items():
        # Another module's call of a method skips its first parameter (`self`, `cls`); a
        # static method has none, so an unnamed one stands in for it (no argument binds "")
        order = [""] + info.param_order if info.is_static else list(info.param_order)
        out.params[qual] = (order, sorted(info.defaults))
    out.calls_out = list(m.calls_out)
    out.opaque_calls = list(m.opaque_calls)
    out.host_calls = m.host_only_calls()
    out.loopers = sorted(q for q, info in m.all_funcs.items() if info.runs_steps)
    spell = lambda e: m.qualname(e) or (e.value if type(e) is cst.Name else None)  # noqa: E731
    out.registered = registrations(m.module, spell)
    out.registered_as = registered_as(m.module, spell)
    out.type_names, out.class_type_names = _type_names(m, {c for _, c in out.registered})
    made = {c[:-len(".__init__")] for _, c, _ in m.calls if c.endswith(".__init__")}
    out.made_here = sorted(made & set(m.classes_by_name))
    out.self_calls = list(m.self_calls)
    out.options = dict(m.options)
    out.options_set = sorted(m.options_set)
    for fname, (params, expr) in m.one_liners.items():
        out.one_liners[fname] = OneLiner(list(params), HelperBody(list(params), returns=[expr]).to_data(),
                                         _aliases_named(m, expr))
    for fname, body in m.helpers.items():
        if body.node is not None:  # (the body is the tree's, kept by `SemanticModel.once`: so is its data)
            out.one_liners[fname] = OneLiner(list(body.params), m.once(("data", id(body)), body.to_data),
                                             _aliases_named(m, body.node, m.once(("names", id(body.node)),
                                                                                 lambda: _names_in(body.node))), True)
    return out


def _method_aliases(model, node: Optional[cst.ClassDef]) -> Dict[str, str]:
    """`decode = decode_function` in a class body: the method is that function (imported:
    its qualified name; this module's: its name)."""
    out: Dict[str, str] = {}
    body = node.body.body if node is not None and type(node.body) is cst.IndentedBlock else ()
    for stmt in body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if (type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name
                    and type(small.value) is cst.Name):
                name = small.value.value
                q = model.aliases.get(name) or (name if name in model.all_funcs else None)
                if q is not None and q.split(".", 1)[0] not in L.LIBRARY_ROOTS:
                    out[small.targets[0].target.value] = q
    return out


def _aliases_named(model, node: cst.CSTNode, named: Optional[Set[str]] = None) -> Dict[str, str]:
    """The imports a piece of this file's code names (what another module needs to read it);
    `named`: the names in it, where known."""
    named = _names_in(node) if named is None else named
    return {n: model.aliases[n] for n in sorted(named) if n in model.aliases}


def _names_in(node: cst.CSTNode) -> Set[str]:
    return {n.value for n in [node, *descendants(node)] if type(n) is cst.Name}


def _star_exported(name: str, q: str) -> bool:
    """A library name this module imports that a `from it import *` would bring and that the
    model reads: torch's and NumPy's (the others only make every summary larger)."""
    root = q.split(".", 1)[0]
    return not name.startswith("_") and (root == "torch" or root in L.NUMPY_MODULES)


def _abstract(info: Optional[FuncInfo]) -> bool:
    return info is not None and type(info.node) is cst.FunctionDef and abstract_body(info.node)


def _type_names(m, registered) -> Tuple[List[str], Dict[str, List[str]]]:
    """The class names the module builds components by (`registries.type_names`): those in
    its registered classes by class (a default `dict(type="MonoFlexCoder")` in a head's
    signature builds it only where the head is built), and the rest."""
    counts = type_name_counts(m.source)
    inside: Dict[str, List[str]] = {}
    if registered and counts:
        for stmt in m.module.body:
            if type(stmt) is cst.ClassDef and stmt.name.value in registered:
                here = type_name_counts(code_of(stmt))
                if here:
                    inside[stmt.name.value] = sorted(here)
                    counts -= here  # (what is left is named outside the registered classes)
    return sorted(counts), inside

