"""SemanticModel: everything the rules know about one file, built by the engine's one walk.

The walker keeps it current as it descends (imports, scopes and bindings, loops, `no_grad`,
function and class nesting, CUDA-less branches, periodic guards); rules only ask it:
what does this name resolve to (`qualname`), what value is this expression (`infer`),
is it a GPU tensor under a named policy (`gpu`), what was this name assigned
(`assigned`), is this site hot. Rules never keep bindings or device policies of their own.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
import os
import re
from contextlib import contextmanager
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from synclint.semantic import export, gradmode
from synclint.semantic.gradmode import CallOf, GradFacts
from synclint.semantic import library as L
from synclint.semantic import ownership
from synclint.semantic import values as V
from synclint.semantic.facts import ANY_OPTION, FileFacts, ModuleSummary, ProjectFacts, join_call, moved, ref_target
from synclint.semantic.helpers import HelperBody
from synclint.semantic.syntax import every_item_of, generic_origin, is_property_getter
from synclint.semantic.instances import fed_attributes, instance_value
from synclint.semantic.callgraph import hot_name
from synclint.semantic.dispatch import dispatched_methods
from synclint.semantic import compile_sites, mode_sites
from synclint.semantic.heat import hook_alias, periodic_test, rate_here
from synclint.semantic.annotations import annotation_val, annotation_val_syntactic
from synclint.semantic.compiled import Compiled, Options, in_mode
from synclint.semantic.export import all_values
from synclint.semantic.infer import Evaluator
from synclint.semantic.syntax import (COMPOUND_STATEMENTS, EXPRESSIONS, SMALL_STATEMENTS, code_of, descendants,
                                      dotted, is_true, kwarg, last_name, read_first, statements, string_value)
from synclint.semantic.ownership import Fresh
from synclint.semantic.scopes import Binding, ClassInfo, FuncInfo
from synclint.semantic.sink import FindingSink, PendingFinding, Site
from synclint.semantic.values import Val


# Policies for values whose device or type is not known, named so each rule says which it takes.
KNOWN = "known"  # only tensors the model can place on the GPU (or on no known device)
EVIDENT = "evident"  # KNOWN, and a tensor for a better reason than an unannotated parameter
RECEIVER = "receiver"  # KNOWN, or an unknown value used where only tensors fit (a torch arg)
# KNOWN, or an unknown name, attribute or item whose name is not a model's (`out.cpu()`, not
# `text_encoder.cpu()`): the receiver of `.cpu()`, which only tensors and modules answer
NOT_MODULE = "not-module"

# torch, torchvision, torchmetrics..., CUDA: what a file of a PyTorch program names. Not
# "tensor": sympy's modules speak of tensors (`from sympy.tensor.array import NDimArray`)
_TORCH_WORDS = re.compile(r"\b(?:torch|cuda)")
_GPU_WORDS = re.compile(r"cuda|device|\.to\(|gpu|accelerat|lightning|fabric|distributed|\.half\(\)|\bamp\b")


def _pipeline_entry(model: "SemanticModel", f: FuncInfo) -> bool:
    """A function a DataLoader runs in its workers: a collate function, a Dataset-style
    `__getitem__`/`__iter__` (not of an nn.Module), an override of a library method that a
    data pipeline calls (`library.toml` [iteration] host_side_methods)."""
    if "collate" in f.name:
        return True
    if f.cls is None:
        return False
    if f.name in ("__getitem__", "__getitems__", "__iter__", "__next__", "__len__"):
        return not f.cls.is_module
    return f.name in L.HOST_SIDE_METHOD_NAMES and \
        model.library_base(f.cls.name, lambda b: L.is_host_side_method(f"{b}.{f.name}")) is not None


def _test_named(filename: str) -> bool:
    """A test module by its name (`test_*.py`, `*_test.py`: pytest's)."""
    base = os.path.basename(filename)
    return base.startswith("test_") or base.endswith("_test.py")


class SemanticModel:
    def __init__(
        self,
        source: str,
        filename: str = "<string>",
        facts: Optional[FileFacts] = None,
        project: Optional[ProjectFacts] = None,
        module_name: Optional[str] = None,
        tree_memo: Optional[Dict[tuple, object]] = None,
        builds_graph: bool = True,
    ) -> None:
        self.facts = facts or FileFacts()
        # Whether this walk's call graph is made (`engine.lint_analysis`): then the walk notes
        # what only that graph carries: each call site's rate (`site_rates`, which its heat
        # reads), the compile sites (`compile_sites`: `Compiled`), where compile results go
        # and the training modes they are called in (`mode_sites`). A first walk, whose
        # summaries have no place for them, skips that work
        self.builds_graph = builds_graph
        # What the syntax tree alone tells (a function's replayable body, the file's names
        # in use), by key (`once`): one table for every walk of one tree, held beside the tree
        # (the engine's `Analysis`), so each is worked out once per file, not once per walk
        self.tree_memo: Dict[tuple, object] = {} if tree_memo is None else tree_memo
        self.project = project or ProjectFacts()
        # dotted name of this module, for relative imports; a package's `__init__` ends in
        # ".__init__" so that `from . import x` stays inside the package
        self.module_name = module_name
        self.imported: List[str] = []  # modules imported, qualified
        self.stars: List[str] = []  # modules imported with `from m import *`
        self.source = source
        self.filename = filename
        self.aliases: Dict[str, str] = {}  # local name -> qualified name
        self._qualnames: Dict[int, tuple] = {}  # id(node) -> (node, qualified name or None)
        self.module_scope: Dict[str, Binding] = {}
        self.funcs: List[FuncInfo] = []
        self.classes: List[ClassInfo] = []
        self.classes_by_name: Dict[str, ClassInfo] = {}
        # in-file function name / (class, method) -> returned value; a second walk starts
        # from what the first one found, so a call above the definition is known too
        self.func_returns: Dict[str, Val] = dict(self.facts.func_returns)
        self.one_liners: Dict[str, Tuple[List[str], cst.BaseExpression]] = dict(self.facts.one_liners)
        self.helpers: Dict[str, HelperBody] = dict(self.facts.helpers)  # replayed at each call
        self.module_instance_calls: Dict[str, List[tuple]] = {}  # (`record_instance_call`)
        # a call met an in-file function or method before its definition was walked: its
        # return was not known yet (the engine walks such a file once more before linting)
        self.forward_refs: Set[object] = set()  # function names and (class, method) keys
        self.forward_globals: Set[str] = set()  # names a function read before any module-level binding
        self.early_globals: Dict[str, Val] = {}  # such names the last walk's module values answered
        # command-line options that hold a device (`arguments.device_option`): the last walk's,
        # and those met so far; options read before this walk met them
        self.device_options: Dict[str, str] = dict(self.facts.device_options)
        # `batch["h"] = t`: what a constant key of a container of tensors holds since, by
        # the container's binding (its other items stay where they were)
        self.item_writes: Dict[int, Tuple[Binding, Dict[str, Val]]] = {}
        # command-line options with a bool default (dest -> it; None: not a bool constant) and
        # the options the file may set (`arguments.bool_option`, `option_writes`)
        self.options: Dict[str, Optional[bool]] = {}
        self.options_set: Set[str] = set()
        self.loop_carried: Dict[int, Dict[str, Val]] = {}  # this walk's (`FileFacts.loop_carried`)
        self.early_options: Set[str] = set()
        # function name -> what a call above its definition took from the last walk; the
        # same for (class, attribute) read before this walk reached an assignment of it
        self.early_returns: Dict[str, Val] = {}
        self.early_attrs: Dict[Tuple[str, str], Val] = {}
        # (function key, parameter) -> what its callers gave when its body was walked: for a
        # function above its callers, the last walk's values (`stale_reads`)
        self.early_params: Dict[Tuple[str, str], Optional[Val]] = {}
        self.method_returns: Dict[Tuple[str, str], Val] = dict(self.facts.method_returns)
        # (callee key, positional values, keyword values) of calls to in-file functions
        # (calling function, callee key, skipped params, positional, keyword values) of calls
        # to in-file functions, by callee key
        self.call_args: Dict[str, List[Tuple[Optional[str], int, List[Val], Dict[str, Val]]]] = {}
        self.loop_depth = 0  # for/while bodies (comprehensions count in comp_depth)
        # of those, loops over a container's items (`state_dict().items()`, `parameters()`):
        # repeated, but not a step of training, so not hot by themselves
        self.container_loop_depth = 0
        self.comp_depth = 0
        self.no_grad_depth = 0
        # inside `with torch.enable_grad()` / `torch.set_grad_enabled(...)` (its items too):
        # code that sets its grad mode itself
        self.grad_mode_depth = 0
        self.cuda_less_depth = 0  # inside `if not torch.cuda.is_available():`
        self.guard_depth = 0  # inside `if step % every == 0:` (a logging guard: cold)
        # inside a block that runs once at most (`if step == 0:`, `if x is None: x = ...`,
        # a branch that exits): cold, loops inside it too
        self.once_depth = 0
        # ... of those, a block that runs on the first call or step only (a cache filled on
        # first use, `if step == 0:`, a move stored back): setup (`semantic.setup`)
        self.first_depth = 0
        self.failing_depth = 0  # inside an assert's message: built only when the assert fails
        self.default_device = V.CUDA if self.project.makes_cuda_default() or self.facts.cuda_default else V.CPU
        self.uses_xla = False  # torch_xla imported: unknown-device tensors are not CUDA ones
        # A script that never mentions a device, CUDA or an accelerator runs on the CPU
        # (a library module that does not is still used on the GPU). Set by `set_module`.
        self.gpu_evident = True
        # The file names torch (or a torch library) or CUDA somewhere. One that never does (it
        # passed the prefilter on `.tolist()`, `.item()`...) holds no tensor of its own: an
        # unknown receiver there is a memoryview, an array, a sympy Matrix, and `x.detach()`
        # is a weakref.finalize's; only what the project tells it (a caller's CUDA tensor) is.
        self.names_torch = _TORCH_WORDS.search(source) is not None
        self.stmt_index = -1
        self.stmt_stack: List[cst.CSTNode] = []
        self.sink = FindingSink()
        self.findings: List[PendingFinding] = self.sink.findings  # (what the engine reads)
        # call graph for "called from a loop": (caller qual or None, callee key, in loop);
        # a callee in another module is "@" + its qualified name
        self.calls: List[Tuple[Optional[str], str, Optional[bool]]] = []  # (caller, callee, site: see `_call`)
        self.no_grad_calls: Set[int] = set()  # indices of `calls` made under no_grad / inference_mode
        self.unknown_calls: Set[str] = set()  # methods called with autograd on, on values of unknown kind
        # calls to other modules' functions: (qualified callee, skipped params, positional, keyword)
        self.calls_out: List[Tuple[str, int, List[Val], Dict[str, Val]]] = []
        # calls of a name whose value the file does not know (a parameter: `model(batch, device)`)
        # that pass a loader's batch: (the positional arguments' names, their values, keyword
        # values), for the project's modules whose `forward` takes parameters of those names
        self.opaque_calls: List[Tuple[List[str], List[Val], Dict[str, Val]]] = []
        # `self.m(...)` calls: (method qual, positional, keyword values), for subclasses elsewhere
        self.self_calls: List[Tuple[str, List[Val], Dict[str, Val]]] = []
        self.timing_funcs: Set[Optional[str]] = set()
        self.module_started_d2h = False
        # the file puts something on a CUDA device (`.cuda()`, a "cuda" string, a `.to()` or
        # `device=` that resolves to CUDA); known once the walk is over (`leave_Module`)
        self.puts_on_cuda = False
        self.module: Optional[cst.Module] = None
        self.property_names: FrozenSet[str] = frozenset()  # (`set_module`)
        self.dispatched: Dict[str, Tuple[str, ...]] = {}  # (`set_module`)
        self._module_escaped: Optional[Set[str]] = None
        self.loop_nodes: List[cst.CSTNode] = []  # enclosing for/while loops of this function
        self.loop_rates: Dict[int, object] = {}  # id(loop) -> (rate, entry) of its body (`heat.loop_rate`)
        self.loop_breaks: Dict[int, str] = {}  # id(loop) -> its every-iteration compiled event (`compile_sites`)
        self.site_rates: Dict[int, object] = {}  # index in `calls` -> that call site's rate (`heat.rate_here`)
        self.recovery_branches: Dict[int, object] = {}  # id(if body) -> why it runs after an error only (`rarity.recovery_branch`)
        self._log_level: Optional[int] = None  # the lowest logging level the file configures (0: none)  # `FuncInfo.started_d2h` for module-level code
        self.all_funcs: Dict[str, FuncInfo] = {}
        self._resolving: Set[Tuple[str, str]] = set()
        self._registry_base: Optional[str] = None  # `registry_base`, once asked ("": none)
        self._validate_args_off: Optional[bool] = None  # `validate_args_off`, once asked
        self._amp_static: Optional[bool] = None  # `amp_static_scale`, once asked
        self._grad_facts: Optional[GradFacts] = None  # `grad_facts`, once asked
        # compile roots, disabled functions and Dynamo flags met (`compile_sites`), and the
        # flags each enclosing `torch._dynamo.config.patch` sets
        self.compile_facts = Compiled()
        self.patched_flags: List[Dict[str, bool]] = []
        # mode sets met, with the statements that hold them (`mode_sites`: what dominates a call),
        # and compile results kept in locals: (function, name) -> their roots' indices
        self.mode_marks: List[Tuple[str, str, Optional[bool], Tuple[int, ...]]] = []
        self.compiled_locals: Dict[Tuple[str, str], List[int]] = {}
        self.if_truth: Dict[int, bool] = {}  # id(if) -> its test's known value (`compile_sites.note_if`)
        # The evaluator reads this model as its `Env`. What the walker and the model's own
        # queries ask of it is bound here once (about a hundred thousand times on a large
        # tree); rules reach it through `RuleContext`.
        self.evaluator = ev = Evaluator(self)
        self.infer = ev.infer
        self.device_of_arg = ev.device_of_arg
        self.combine = ev.combine
        self.iter_item = ev.iter_item
        self.forget = ev.forget

    def once(self, key: tuple, make: Callable[[], object]) -> object:
        """`make()`, a fact of the syntax tree alone (`key` names it, with the ids of the
        tree's nodes it is about), worked out at the first walk of the tree that asks."""
        memo = self.tree_memo
        if key in memo:
            return memo[key]
        got = memo[key] = make()
        return got

    def set_module(self, module: cst.Module) -> None:
        """Facts about the whole file, before the walk: is it a script or a test module that
        never mentions a GPU (`if __name__ == "__main__":` or a module-level loop, or a
        `test_*.py`, and no device anywhere): such code runs on the CPU."""
        self.module = module
        # names the file's classes define as `@property` getters (`callsites.record_property_read`
        # asks about an attribute read only when its name is one): a cheap text test first
        self.property_names = frozenset(
            d.name.value for c in module.body if type(c) is cst.ClassDef for d in c.body.body
            if is_property_getter(d)) if "@property" in self.source else frozenset()
        # methods a class of the file calls by a name held in a variable (`dispatch`)
        self.dispatched = dispatched_methods(module) if "getattr(self," in self.source else {}
        script = _test_named(self.filename) or any(
            type(s) in (cst.For, cst.While)
            or (type(s) is cst.If and "__name__" in code_of(s.test))
            for s in module.body
        )
        self.gpu_evident = not script or bool(_GPU_WORDS.search(self.source))

    # ----------------------------------------------------------------- names
    def add_import(self, node: cst.CSTNode) -> None:
        self._qualnames.clear()  # the alias table is about to change
        if type(node) is cst.Import:
            for alias in node.names:
                full = dotted(alias.name)
                if alias.asname is not None:
                    self.aliases[dotted(alias.asname.name)] = full
                else:
                    head = full.split(".", 1)[0]
                    self.aliases[head] = head
                self._note_module(full)
        elif type(node) is cst.ImportFrom:
            mod = self._absolute(node)
            if mod is None:
                return
            self._note_module(mod)
            if type(node.names) is cst.ImportStar:
                self.stars.append(mod)
                for name, q in self.project.star_names().items():  # what the project says it brings
                    if q.startswith(mod + "."):
                        self.aliases.setdefault(name, q)
                for name, q in self.project.star_imports_of(mod).items():  # and the libraries it imports
                    self.aliases.setdefault(name, q)
                return
            for alias in node.names:
                name = dotted(alias.name)
                local = dotted(alias.asname.name) if alias.asname else name
                self.aliases[local] = f"{mod}.{name}"

    def _absolute(self, node: cst.ImportFrom) -> Optional[str]:
        """The module `from <module> import ...` names, relative imports made absolute."""
        mod = dotted(node.module) if node.module is not None else ""
        level = len(node.relative)
        if not level:
            return mod or None
        if not self.module_name:
            return None
        parts = self.module_name.split(".")
        if len(parts) < level:
            return None
        base = ".".join(parts[:-level])
        return f"{base}.{mod}" if base and mod else (base or mod or None)

    def _note_module(self, mod: str) -> None:
        self.imported.append(mod)
        if mod.split(".", 1)[0] == "torch_xla":
            self.uses_xla = True

    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """`th.cuda.synchronize` -> 'torch.cuda.synchronize' when `th` is an import alias.

        Every rule asks about the same call nodes, so answers are kept per node (the entry
        holds the node, so an id is never reused while it is cached) until an import changes
        the alias table. A name bound locally shadows the import.
        """
        hit = self._qualnames.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1]
        node = expr
        parts: List[str] = []
        while type(node) is cst.Attribute:  # exact types: cheaper than ABC isinstance
            parts.append(node.attr.value)
            node = node.value
        result = None
        if type(node) is cst.Name:
            head = self.aliases.get(node.value)
            if head is not None and not self.is_local(node.value):
                parts.append(head)
                result = ".".join(reversed(parts))
        self._qualnames[id(expr)] = (expr, result)
        return result

    def torch_name(self, expr: cst.BaseExpression) -> Optional[str]:
        """The qualified name if it is inside torch, without the 'torch.' prefix."""
        q = self.qualname(expr)
        if q and q.startswith("torch."):
            return q[6:]
        return None

    # ----------------------------------------------------------------- scopes and bindings
    @property
    def func(self) -> Optional[FuncInfo]:
        return self.funcs[-1] if self.funcs else None

    @property
    def cls(self) -> Optional[ClassInfo]:
        return self.classes[-1] if self.classes else None

    def _scope_for(self, name: str) -> Dict[str, Binding]:
        f = self.func
        if f is None or name in f.globals:
            return self.module_scope
        return f.scope

    def binding(self, name: str) -> Optional[Binding]:
        """The innermost binding of `name`: this function's, an enclosing one's, the module's;
        in a function, a module-level one further down (the last walk's, all its values)."""
        for f in reversed(self.funcs):
            b = f.scope.get(name)
            if b is not None:
                return b
        b = self.module_scope.get(name)
        if b is None and self.funcs and name not in self.aliases:
            later = self.facts.module_values.get(name)
            if later is not None:
                self.early_globals[name] = later
                return Binding(later)
            self.forward_globals.add(name)  # bound further down, perhaps: known next walk
        return b

    def is_local(self, name: str) -> bool:
        """Bound in a function scope (a parameter or assignment shadows a module name)."""
        if name in self.module_scope:
            return True
        for f in self.funcs:  # (a loop, not any() over a generator: asked for every alias a walk meets)
            if name in f.scope:
                return True
        return False

    def module_level(self, name: str) -> bool:
        """A name of the module's top level where the walk is: not bound in a function scope
        (bound at the top level, or further down: `MODELS = Registry(...)` below a helper)."""
        return not any(name in f.scope for f in self.funcs)

    def lookup(self, name: str) -> Val:
        b = self.binding(name)
        if b is not None:
            return b.val
        q = self.aliases.get(name)
        if q is not None:
            if q in L.PASSTHROUGH:
                return V.PASSTHROUGH_VAL  # `tqdm`: iterating what it wraps yields its items
            # an imported module, function or class (not a tensor), or a module-level value
            return self.project.value(q, V.PY_VAL)
        if name in L.PASSTHROUGH:
            return V.PASSTHROUGH_VAL  # the builtins `iter`, `reversed`
        return V.UNKNOWN_VAL

    def assigned(self, name: str) -> Optional[cst.BaseExpression]:
        """The expression `name` was last assigned here, if one is known."""
        b = self.binding(name)
        return b.expr if b is not None else None

    def bind(self, name: str, val: Val, expr: Optional[cst.BaseExpression] = None) -> None:
        self.forget()
        scope = self._scope_for(name)
        # evaluated now, while `name` still holds its old value (`x = x * 2`)
        fresh = ownership.fresh(self, expr) if expr is not None and val.kind == V.TENSOR else None
        scope[name] = Binding(val, expr, scope.get(name), fresh)

    def bind_target(self, target: cst.BaseExpression, val: Val, expr: Optional[cst.BaseExpression] = None) -> None:
        """Bind an assignment, loop, `with` or walrus target, unpacking tuples."""
        t = type(target)
        if t is cst.Name:
            self.bind(target.value, val, expr)
        elif t in (cst.Tuple, cst.List):
            els = target.elements
            starred = [i for i, el in enumerate(els) if type(el) is cst.StarredElement]
            if val.elems is not None and not starred and len(val.elems) == len(els):
                for el, v in zip(els, val.elems):
                    self.bind_target(el.value, v)
                return
            elem = V.element_of(val)
            for el in els:
                if type(el) is cst.StarredElement:
                    rest = Val(V.TENSORS, elem.device, dtype=elem.dtype) if elem.kind == V.TENSOR else V.py("list")
                    self.bind_target(el.value, rest if elem.kind != V.UNKNOWN else V.UNKNOWN_VAL)
                else:
                    self.bind_target(el.value, elem)
        elif t is cst.Subscript:
            # `images[0] = images[0].cuda()`: an item of the container now holds `val`
            if type(target.value) is cst.Name and val.kind == V.TENSOR:
                b = self.binding(target.value.value)
                key = _constant_key(target)
                if b is not None and b.val.kind == V.TENSORS and key is not None and b.val.elems is None:
                    # `batch["hidden_states"] = h`: that item only (`item_written`)
                    held = self.item_writes.get(id(b))
                    if held is None or held[0] is not b:
                        held = self.item_writes[id(b)] = (b, {})
                    held[1][key] = val
                elif b is not None and b.val.kind == V.TENSORS and b.val.device != val.device:  # not a tensor's slice
                    # (every item, in `for i in range(len(xs)): xs[i] = ...`: what they now hold)
                    device = val.device if every_item_of(target, self.loop_nodes) else V.join_device(
                        b.val.device, val.device)
                    self.bind(target.value.value, b.val.with_(device=device, pinned=None, elems=None), b.expr)
                elif b is not None and b.val.kind == V.PY and b.val.py == "dict":
                    # `loss_dict["ce"] = loss`: a dict of tensors (its values, joined)
                    old = b.val.elems[0] if V.is_dict_of(b.val) else None
                    self.bind(target.value.value, Val(V.PY, py="dict", elems=(V.join(old, val) if old else val,)),
                              b.expr)
        elif t is cst.Attribute:
            if type(target.value) is cst.Name and target.value.value == "self" and self.cls is not None:
                self.bind_self_attr(target.attr.value, val, expr)
            elif type(target.value) is cst.Name and val.kind == V.DEVICE and val.device in (V.CUDA, V.EITHER):
                base = self.lookup(target.value.value)
                if base.kind == V.OBJECT and base.cls == L.ARG_NAMESPACE:
                    # `args.device = torch.device("cuda", args.gpu_id)` after parsing: every
                    # `args.device` of the file (`train(args, ...)`), as a device option is
                    self.device_options[target.attr.value] = val.device
        elif t is cst.StarredElement:
            self.bind_target(target.value, val)

    def item_written(self, name: str, key: str) -> Optional[Val]:
        """What `name[key]` holds where the code wrote that constant key of the container
        `name` now holds (`bind_target`); None where it did not."""
        b = self.binding(name)
        held = self.item_writes.get(id(b)) if b is not None else None
        return held[1].get(key) if held is not None and held[0] is b else None

    def bind_self_attr(self, name: str, val: Val, expr: Optional[cst.BaseExpression]) -> None:
        """`self.<name> = expr` (of value `val`) in a method of the class the walk is in."""
        attrs = self.cls.attrs
        f = self.func
        val = self._as_attribute(self.cls, expr, val)
        # Attributes are joined over every assignment in the class: any method may run
        # first; except `__init__`, which runs before them all: what it leaves counts
        # (`end_init`), not each of its intermediate assignments.
        if f is None or f.name != "__init__":
            attrs[name] = self._declared_if_unknown(self.cls, name, V.join(attrs.get(name), val) if name in attrs else val)
        if f is not None:
            # ... but later in this method, `self.x` is what was just assigned (kept
            # in the function's scope as "self.x", so branches join it like a local)
            self.bind("self." + name, val, expr)

    def _as_attribute(self, info: ClassInfo, expr: Optional[cst.BaseExpression], val: Val) -> Val:
        """What `self.x = expr` leaves in `x`: `self.weight = nn.Parameter(torch.empty(n, m))`
        in a module is made on the CPU but registered, so it moves with `model.cuda()`; where
        the module lives is not known here."""
        if (val.kind == V.TENSOR and val.device == V.CPU and info.is_module and type(expr) is cst.Call
                and self.torch_name(expr.func) in L.REGISTERED_TENSORS):
            return val.with_(device=None)
        return val

    def end_init(self, info: FuncInfo) -> None:
        """After `__init__`: each `self.x` holds what it was last assigned there (joined over
        its branches), joined with what other methods assign."""
        if info.cls is None:
            return
        attrs = info.cls.attrs
        for key, b in info.scope.items():
            if key.startswith("self."):
                name = key[5:]
                attrs[name] = self._declared_if_unknown(
                    info.cls, name, V.join(attrs.get(name), b.val) if name in attrs else b.val)

    def _declared_if_unknown(self, info: ClassInfo, name: str, val: Val) -> Val:
        """What `self.<name>` holds where its assignments leave it unknown (`self.sae =
        TrainingSAE.from_dict(cfg)`, a registry's class): the project class its class body
        declares for it (`sae: TrainingSAE[Any]`, PEP 526), which the program states; else `val`."""
        if val.kind != V.UNKNOWN:
            return val
        for e in info.pending.get(name, ()):
            if type(e) is _Annotated:
                declared = annotation_val(self, e.annotation)
                if declared is not None and declared.kind in (V.MODULE, V.OBJECT) and declared.cls:
                    return declared
        return val

    def snapshot(self) -> Dict[str, Binding]:
        return dict(self._scope_for(""))

    def merge(self, branches: List[Dict[str, Binding]]) -> None:
        """After an if/else, try/except or loop: each name holds the join of its branches."""
        self.forget()
        scope = self._scope_for("")
        names = set().union(*branches)
        for name in names:
            bs = [b.get(name) for b in branches]
            if all(x is bs[0] for x in bs):
                scope[name] = bs[0]
                continue
            val: Optional[Val] = None
            for b in bs:
                val = V.join(val, b.val if b is not None else None) if val is not None else (b.val if b else None)
            exprs = {id(b.expr) if b is not None else None for b in bs}
            expr = bs[0].expr if len(exprs) == 1 and bs[0] is not None else None
            fresh = bs[0].fresh if bs[0] is not None else None
            for b in bs[1:]:
                fresh = ownership.join(fresh, b.fresh if b is not None else None)
            scope[name] = Binding(val if val is not None else V.UNKNOWN_VAL, expr, None, fresh)

    def enter_loop(self, node: cst.CSTNode) -> Dict[str, Binding]:
        """At a loop's head: a name the body binds only further down holds, from the second
        iteration on, what the last walk saw at the end of the body (`it = iter(loader)` in
        an `except` below the `next(it)` that reads it). Returns the head's scope, from which
        `leave_loop` tells what the body changed.

        Only names unbound before the loop: the last walk knew less than this one (the
        project's facts come later), and its value joined into one this walk knows would
        only blur it (a list of CPU grids whose items the first walk could not place)."""
        carried = self.facts.loop_carried.get(id(node))
        unbound = {name for name in carried or () if name not in self._scope_for(name)}
        if unbound:
            # only a name the body reads before it binds it: one the body binds before any
            # read of it (`x, y = next(it)`) starts afresh in each iteration
            for name in sorted(read_first(node, unbound)):
                v = self.resolve(carried[name])
                if v.kind != V.UNKNOWN:
                    self.bind(name, v)
        return self.snapshot()

    def leave_loop(self, node: cst.CSTNode, head: Dict[str, Binding]) -> None:
        """At the end of a loop's body: what each name the body rebound holds now."""
        self.loop_carried[id(node)] = {name: b.val for name, b in self._scope_for("").items()
                                       if head.get(name) is not b}

    def restore(self, snap: Dict[str, Binding]) -> None:
        self.forget()
        scope = self._scope_for("")
        scope.clear()
        scope.update(snap)

    # ----------------------------------------------------------------- the evaluator's env
    @contextmanager
    def replaying(self, scope: FuncInfo, foreign_aliases: Optional[Dict[str, str]],
                  owner: Optional[str] = None) -> Iterator[None]:
        """A helper's body evaluated for one call (`Evaluator._infer_in_scope`): in its own
        scope, and for another module's helper with that module's imports and none of this
        file's names. A method's (`owner`, its class) reads `self.x` of that class (of this
        file's: its attributes; of another module's: through `self`'s value)."""
        saved = (self.funcs, self.aliases, self.module_scope, self.one_liners, self.helpers,
                 self.func_returns, self.classes_by_name, self.forward_refs, self.classes)
        self.funcs = [scope]
        if owner is not None:
            info = self.classes_by_name.get(owner) if foreign_aliases is None else None
            self.classes = [info] if info is not None else []
        if foreign_aliases is not None:
            self.aliases, self.module_scope, self.one_liners, self.helpers, self.func_returns = \
                dict(foreign_aliases), {}, {}, {}, {}
            self.classes_by_name, self.forward_refs = {}, set()
        try:
            yield
        finally:
            (self.funcs, self.aliases, self.module_scope, self.one_liners, self.helpers,
             self.func_returns, self.classes_by_name, self.forward_refs, self.classes) = saved

    def note_forward_ref(self, key: object) -> None:
        """A call met an in-file function (a name) or method (class, name) before its
        definition was walked: known next walk (`forward_refs_known`)."""
        self.forward_refs.add(key)

    def note_early_return(self, name: str, v: Val) -> None:
        """A call above `name`'s definition took the last walk's return (`stale_reads`)."""
        self.early_returns.setdefault(name, v)

    def note_early_option(self, option: str) -> None:
        """`args.<option>` was read before the parser that defines it was walked."""
        self.early_options.add(option)

    def note_per_epoch(self) -> None:
        """The function the walk is in draws batches from a loader itself: it runs once per epoch."""
        f = self.func
        if f is not None:
            f.iterates_loader = True

    def note_decodes(self) -> None:
        """The function the walk is in runs a decoding loop: its own code runs once per request,
        unless it is a hook of an `nn.Module` (a seq2seq `forward` that feeds its output back
        runs every training step: a framework calls it; a callable object's `__call__` is hot
        by its name only, which its decoding loop overrules)."""
        f = self.func
        if f is not None:
            f.iterates_loader = True
            f.per_request = not (f.entry and f.cls is not None and f.cls.is_module)

    # ----------------------------------------------------------------- classes
    def add_class(self, node: cst.ClassDef, is_module: bool) -> ClassInfo:
        info = ClassInfo(node.name.value, is_module, node=node)
        for b in node.bases:
            if b.keyword is None:
                e = generic_origin(b.value)
                name = self.qualname(e) or (e.value if type(e) is cst.Name else None)
                if name:
                    info.bases.append(name)
        pending = self.facts.class_pending.get(info.name)
        info.pending = pending if pending is not None else _collect_attrs(node)
        body = node.body.body if type(node.body) is cst.IndentedBlock else ()
        info.methods = {s.name.value for s in body if type(s) is cst.FunctionDef}
        info.prior = dict(self.facts.class_attrs.get(info.name, {}))
        self.classes_by_name[info.name] = info
        return info

    def attribute_of(self, cls_name: str, attr: str, _depth: int = 0) -> Val:
        """`self.<attr>` / `obj.<attr>`: for an in-file class, what was assigned so far, else
        what any method assigns (inferred without that method's locals), else what a base
        class holds; for a class of another module, what the project says."""
        if "|" in cls_name:  # one of several classes: what each holds, joined
            return self._each_class(cls_name, lambda k: self.attribute_of(k, attr, _depth)) or V.UNKNOWN_VAL
        info = self.classes_by_name.get(cls_name)
        if info is None:
            if cls_name in self.facts.class_attrs:  # defined further down: the last walk's view
                v = self.facts.class_attrs[cls_name].get(attr, V.UNKNOWN_VAL)
                self.early_attrs.setdefault((cls_name, attr), v)
                return self.resolve(v)
            v = self.project.class_member(cls_name, attr, method=False)
            return self.resolve(v) if v is not None else V.UNKNOWN_VAL
        v = info.attrs.get(attr)
        if v is None:
            v = info.prior.get(attr)
        if v is not None:
            return self.resolve(v)
        exprs = info.pending.get(attr)
        if not exprs or (cls_name, attr) in self._resolving:
            return self._base_member(info, attr, _depth, method=False)
        self._resolving.add((cls_name, attr))
        saved_funcs, saved_classes = self.funcs, self.classes
        self.funcs = [FuncInfo("<attr>", "<attr>", info)]
        self.classes = [info]
        try:
            with self.evaluator.another_scope():
                out: Optional[Val] = None
                for e in exprs:
                    if type(e) is _Annotated:
                        v = annotation_val(self, e.annotation) or V.UNKNOWN_VAL
                    else:
                        v = self._as_attribute(info, e, self.evaluator.value(e)) if type(e) in EXPRESSIONS else e
                    out = v if out is None else V.join(out, v)
        finally:
            self.funcs, self.classes = saved_funcs, saved_classes
            self._resolving.discard((cls_name, attr))
        return self._declared_if_unknown(info, attr, out if out is not None else V.UNKNOWN_VAL)

    def method_return(self, cls_name: str, method: str, _depth: int = 0) -> Optional[Val]:
        """What `obj.<method>(...)` returns, for an in-file class (or its bases) or one of
        another module; None when nothing is known."""
        if "|" in cls_name:
            return self._each_class(cls_name, lambda k: self.method_return(k, method, _depth))
        v = self.method_returns.get((cls_name, method))
        if v is not None:
            return self.resolve(v)
        info = self.classes_by_name.get(cls_name)
        if info is not None:
            v = self._base_member(info, method, _depth, method=True)
            return v if v.kind != V.UNKNOWN else None
        v = self.project.class_member(cls_name, method, method=True)
        return self.resolve(v) if v is not None else None

    def in_lightning_module(self) -> bool:
        """Whether the code walked is a method of a LightningModule subclass (its `self.log`
        turns Python numbers into tensors on the module's device)."""
        info = self.cls
        return info is not None and self.library_base(info.name, L.lightning_module_base) is not None

    def is_entry(self, info: FuncInfo) -> bool:
        """Whether a framework calls this function every step: hot by name (`forward`,
        `*_step`), set as such a hook by its class (`self.forward = self.forward_ckpt`:
        `heat.hook_alias`), or a method a framework base of its class (in any module of the
        project) calls at every batch (`framework_hooks`: an mmengine head's `loss_by_feat`)."""
        if info.cls is not None and self.project.never_built(info.cls.name):
            return False  # (a registered class no config or code builds: `ProjectFacts.unbuilt`)
        if self.request_base(info) is not None:
            return False  # (an inferencer's `__call__`: once per request, `rarity.rare_functions`)
        if hot_name(info.name) or info.cls is not None and hook_alias(info.cls, info.name) is not None:
            return True
        return info.cls is not None and info.name in L.FRAMEWORK_HOOK_NAMES and self.library_base(
            info.cls.name, lambda b: L.framework_calls(b, info.name)) is not None

    def request_base(self, info: FuncInfo) -> Optional[str]:
        """The library class whose framework calls the method `info` once per request
        (`library.toml` request_hooks: an mmengine inferencer's `__call__`), if one does."""
        if info.cls is None or info.name not in L.REQUEST_HOOK_NAMES:
            return None
        return self.library_base(info.cls.name, lambda b: L.request_calls(b, info.name))

    def distribution_base(self, cls_name: str) -> Optional[str]:
        """The `torch.distributions` class (`"Categorical"`) an in-file or project class
        derives from (`class FixedCategorical(torch.distributions.Categorical)`), if any."""
        base = self.library_base(cls_name, lambda b: b.startswith("torch.distributions."))
        return base.rsplit(".", 1)[-1] if base is not None else None

    def library_base(self, cls_name: str, wanted: Callable[[str], bool], _depth: int = 0) -> Optional[str]:
        """The qualified name of a library class that an in-file or project class derives
        from and that `wanted` accepts (`class Tacotron2Logger(SummaryWriter)`), if any."""
        info = self.classes_by_name.get(cls_name)
        if info is not None:
            bases = info.bases
        elif cls_name in self.facts.class_bases:  # defined further down this file
            bases = self.facts.class_bases[cls_name]
        else:
            ext = self.project.class_facts(cls_name)
            bases = ext.bases if ext is not None else []
        for b in bases:
            if wanted(b):
                return b
            if _depth < 4 and b != cls_name:
                got = self.library_base(b, wanted, _depth + 1)
                if got is not None:
                    return got
        return None

    def class_fed(self, cls_name: str) -> dict:
        """The attributes of a class made only from its methods' parameters (`instances`)."""
        info = self.classes_by_name.get(cls_name)
        if info is None:
            own = self.facts.class_fed.get(cls_name)  # defined further down this file
            if own is not None:
                return own
            ext = self.project.class_facts(cls_name)
            return ext.fed if ext is not None else {}
        if info.fed is None:
            # a subclass's attributes may come from its bases' methods too: not followed
            plain = info.node is not None and all(b == "object" for b in info.bases)
            info.fed = fed_attributes(info.node) if plain else {}
        return info.fed

    def _instance_calls(self) -> Dict[str, List[tuple]]:
        """This scope's calls on the instances its names hold (`record_instance_call`)."""
        f = self.func
        return f.instance_calls if f is not None else self.module_instance_calls

    def record_instance_call(self, name: str, method: str, pos: list, kws: dict) -> None:
        """`meter.update(x, n)` on the instance a local name holds."""
        self._instance_calls().setdefault(name, []).append((method, pos, kws))

    def instance_attribute(self, name: str, cls_name: str, attr: str) -> Optional[Val]:
        """`name.attr` when what this instance was given says more than its class: a plain
        value when every call on it passed plain values for what `attr` is made from."""
        calls = self._instance_calls().get(name)
        if calls and instance_value(self.class_fed(cls_name), attr, calls):
            return V.PY_VAL
        return None

    @staticmethod
    def _each_class(keys: str, ask) -> Optional[Val]:
        """The join of what each of the classes `"A|B"` answers; None when none knows."""
        out: Optional[Val] = None
        for k in keys.split("|"):
            v = ask(k)
            if v is not None and v.kind != V.UNKNOWN:
                out = v if out is None else V.join(out, v)
        return out

    def inherited_from(self, cls_name: str, method: str, _depth: int = 0) -> Optional[str]:
        """The other module's class (qualified) that an in-file class takes `method` from,
        when neither it nor an in-file base defines it (`class ImageSoftmaxEngine(Engine)`
        calling `self.parse_data_for_train(data)`, defined in `Engine`'s module); None when
        defined here or no base is another module's."""
        info = self.classes_by_name.get(cls_name)
        if info is None or method in info.methods or _depth > 8:
            return None
        for b in info.bases:
            if b in self.classes_by_name:
                got = self.inherited_from(b, method, _depth + 1)
                if got is not None:
                    return got
                if method in self.classes_by_name[b].methods:
                    return None
            elif "." in b:
                return b
        return None

    def _base_member(self, info: ClassInfo, name: str, depth: int, method: bool) -> Val:
        if depth > 8:
            return V.UNKNOWN_VAL
        for b in info.bases:
            key = b if b in self.classes_by_name or self.project.class_facts(b) is not None else None
            if key is None:
                continue
            if method:
                v = self.method_return(key, name, depth + 1)
            else:
                v = self.attribute_of(key, name, depth + 1)
            if v is not None and v.kind != V.UNKNOWN:
                return v
        return V.UNKNOWN_VAL

    def defined_class(self, name: str) -> Optional[bool]:
        """Whether `name` is a class this file defines, walked already or further down (the
        first walk saw it): None if not, else whether it is an nn.Module."""
        info = self.classes_by_name.get(name)
        if info is not None:
            return info.is_module
        return self.facts.classes.get(name)

    def registry_base(self) -> Optional[str]:
        """The class that every class this module defines derives from (or is): what
        `globals()[name]` gives in a module of one family of classes (DomainBed's
        `get_algorithm_class`: any `Algorithm`, whose methods calls reach through their
        overrides). None when the module's classes are not one family."""
        if self._registry_base is None:
            parents: Dict[str, List[str]] = {}
            for stmt in self.module.body if self.module is not None else ():
                if type(stmt) is cst.ClassDef:
                    parents[stmt.name.value] = [b.value.value for b in stmt.bases
                                                if type(b.value) is cst.Name and b.keyword is None]

            def lineage(name: str, depth: int = 0) -> Set[str]:
                out = {name}
                for b in parents.get(name, ()):
                    if b in parents and depth < 20:
                        out |= lineage(b, depth + 1)
                return out

            common = set.intersection(*(lineage(c) for c in parents)) if len(parents) > 1 else set()
            # the most derived of the common ancestors (each is an ancestor of it)
            base = next((c for c in common if lineage(c) >= common), None)
            self._registry_base = base or ""
        return self._registry_base or None

    def instance_of(self, keys: str) -> Val:
        """What calling a class value makes: an instance of each class it may be."""
        kinds = set()
        for k in keys.split("|"):
            if V.registry_of(k) is not None:  # a class of a registry (`R.get(name)`): as it builds
                registry = self.project.registry(V.registry_of(k))
                kinds.add(None if registry is None else registry[1])
            elif "." in k:
                c = self.project.class_facts(k)
                kinds.add(None if c is None else c.is_module)
            else:
                kinds.add(self.defined_class(k))
        if len(kinds) != 1 or None in kinds:
            return V.UNKNOWN_VAL
        return Val(V.MODULE if kinds.pop() else V.OBJECT, cls=keys)

    def is_module_class(self, name: str) -> bool:
        """An in-file or imported class that is an nn.Module."""
        info = self.classes_by_name.get(name)
        if info is not None:
            return info.is_module
        ext = self.project.class_facts(name)
        return ext is not None and ext.is_module

    def class_val(self, name: str) -> Optional[Val]:
        """An instance of the in-file or imported class `name`."""
        info = self.classes_by_name.get(name)
        if info is not None:
            return Val(V.MODULE if info.is_module else V.OBJECT, cls=info.name)
        ext = self.project.class_facts(name)
        if ext is not None:
            return Val(V.MODULE if ext.is_module else V.OBJECT, cls=ext.key)
        return None

    def resolve(self, v: Val) -> Val:
        """A value the first walk could only name (`@pkg.mod.f`): what the project says."""
        q = ref_target(v)
        if q is None:
            return v
        got = self.project.call_val(q)
        if got is None:
            return v  # still only a name (the first walk's view)
        return moved(got, v.device) if v.device is not None else got

    def param_from_callers(self, qual: str, name: str) -> Optional[Val]:
        """The join of the values every call passes for this parameter, in this file and
        (from the project) in others."""
        got = self._joined_params(qual, name)
        self.early_params.setdefault((qual, name), got)
        return got

    def _joined_params(self, qual: str, name: str) -> Optional[Val]:
        """`param_from_callers`: this walk's calls met so far, the last walk's others."""
        info = self.all_funcs.get(qual)
        fresh = self.params_by_caller(qual, info) if info is not None else {}
        earlier = self.facts.params.get(qual, {})
        here: Optional[Val] = None
        # (in a fixed order: joins of three or more values are not associative, and a set's
        # order changes from run to run with the hash seed)
        for caller in sorted(set(fresh) | set(earlier), key=lambda c: c or ""):
            v = (fresh[caller] if caller in fresh else earlier[caller]).get(name)
            if v is not None:
                v = self.resolve(v)
                here = v if here is None else V.join(here, v)
        there = self.project.param(qual, name)
        if here is None or there is None:
            return here if there is None else there
        return V.join(here, there)

    def params_by_caller(self, key: str, info: FuncInfo) -> Dict[Optional[str], Dict[str, Val]]:
        """caller -> parameter -> join of what this walk's calls from it pass to `key`."""
        out: Dict[Optional[str], Dict[str, Val]] = {}
        for caller, skip, pos, kws in self.call_args.get(key, ()):
            # (a call through `self` skips `self`, except into a static method)
            join_call(out.setdefault(caller, {}), info.param_order[0 if info.is_static else skip:], info.defaults,
                      pos, kws)
        return out

    def release(self) -> None:
        """Nothing asks this model again (its walk's results are taken): drop what it holds.
        It and its evaluator refer to each other, so without this its bindings, values and
        tables (most of what a walk makes) waited for the collector, which had to scan them."""
        self.evaluator.__dict__.clear()
        self.__dict__.clear()

    def summary(self) -> FileFacts:
        """What the second walk of this file starts from (`export.file_facts`)."""
        facts = export.file_facts(self)
        facts.host_side, facts.host_side_here = self.host_side()
        return facts

    def host_side(self) -> Tuple[FrozenSet[str], FrozenSet[str]]:
        """After a walk: the functions of this file that run on the host side of a DataLoader,
        and those whose calls in this file (if any) all run there.

        The first: a data pipeline's entry (`_pipeline_entry`), and, to a fixpoint, a function
        every call of which in this file is made from one (audiocraft's `collater` ->
        `mix_samples` -> `snr_mixer`). Whether another module calls it too is asked when it is
        walked (`in_data_pipeline`): there, the second set, with the project's word that every
        other module's call runs on the host side too, makes a function host side (the
        constructor of mmyolo's `Keypoints`, made by a transform in another module)."""
        callers: Dict[str, Set[Optional[str]]] = {}
        for caller, callee, _ in self.calls:
            if callee in self.all_funcs:
                callers.setdefault(callee, set()).add(caller)
        side = {q for q, f in self.all_funcs.items() if _pipeline_entry(self, f)}
        grew = True
        while grew:
            grew = False
            for q, cs in callers.items():
                if q not in side and all(c is not None and c in side for c in cs):
                    side.add(q)
                    grew = True
        here = frozenset(q for q in self.all_funcs if all(c is not None and c in side for c in callers.get(q, ())))
        return frozenset(side), here

    def host_only_calls(self) -> List[str]:
        """The other modules' functions and classes (qualified, as `calls_out` names them)
        that this file calls only from the host side of a DataLoader."""
        side, _ = self.host_side()
        callers: Dict[str, Set[Optional[str]]] = {}
        for caller, callee, _ in self.calls:
            if callee.startswith("@"):
                callers.setdefault(callee[1:], set()).add(caller)
        return sorted(q for q, cs in callers.items() if all(c is not None and c in side for c in cs))

    def module_summary(self, name: str) -> ModuleSummary:
        """What this module offers the rest of the project, after a walk (`export.module_summary`)."""
        return export.module_summary(self, name)

    # ----------------------------------------------------------------- questions rules ask
    def is_tensor(self, e: cst.BaseExpression) -> bool:
        return self.infer(e).kind == V.TENSOR

    def gpu(self, e: cst.BaseExpression, policy: str = KNOWN) -> Optional[Val]:
        """The value of `e` if it is a GPU tensor under `policy`, else None.

        A tensor of unknown device counts (a GPU program's tensors are on the GPU) except in
        a script that never mentions a device, CUDA or an accelerator, and in a file that
        never names torch or CUDA (there only a tensor known to be on the GPU does). KNOWN takes any tensor
        the model placed there; EVIDENT also wants a reason better than an unannotated
        parameter (`if use_cache:`); RECEIVER also takes a value of unknown kind, for
        positions where only a tensor fits.
        """
        if self.cuda_less_depth:
            return None
        v = self.infer(e)
        if v.kind == V.TENSORS and policy == RECEIVER:
            v = V.element_of(v)  # `parameters=`: a tensor or tensors, fit the same
        if v.kind == V.TENSOR:
            if v.device == V.CPU or (v.device is None and not self._unplaced_ok()):
                return None
            if policy == EVIDENT and v.assumed:
                return None
            return v
        if v.kind != V.UNKNOWN or v.device == V.CPU or not self._unplaced_ok():
            return None  # (what another module's call returned, moved to the host: `f(x).to("cpu")`)
        if policy == RECEIVER or policy == NOT_MODULE and not _named_like_module(e):
            return V.tensor(None, assumed=True)
        return None

    def _unplaced_ok(self) -> bool:
        """A tensor of unknown device may be on the GPU here. DataLoader workers run
        data-pipeline code on the CPU: only a tensor known to be on the GPU is there."""
        return self.gpu_evident and self.names_torch and not self.in_data_pipeline()

    def gpu_mask(self, e: cst.BaseExpression) -> bool:
        """A boolean tensor (a comparison, a bool method, dtype=torch.bool) on the GPU."""
        v = self.gpu(e)
        return v is not None and v.mask

    def is_int(self, e: cst.BaseExpression) -> bool:
        """A Python int for sure: a literal, a range() variable, len(...), x.size(0), x.shape[0]."""
        v = self.infer(e)
        return v.kind == V.PY and v.py == "int"

    def is_int_for_any_caller(self, e: cst.BaseExpression) -> bool:
        """`is_int`, without trusting what this file's callers pass to parameters (a fix
        marked safe must hold for every value its inputs can take)."""
        if not self.is_int(e):
            return False
        params = set().union(*(f.params for f in self.funcs)) if self.funcs else set()
        todo, seen = [e], 0
        while todo and seen < 32:
            x = todo.pop()
            seen += 1
            for n in [x] if type(x) is cst.Name else [d for d in descendants(x) if type(d) is cst.Name]:
                b = self.binding(n.value)
                if b is None:
                    continue
                if b.expr is None and n.value in params:
                    return False
                if b.expr is not None and b.expr is not x:
                    todo.append(b.expr)
        return not todo

    def is_host_number(self, e: cst.BaseExpression) -> bool:
        """A Python number or bool (what `x[i] = v` turns into a CPU scalar tensor)."""
        v = self.infer(e)
        return v.kind == V.PY and (v.py in V.NUMBERS or v.py is None and type(e) not in (
            cst.List, cst.Set, cst.Dict, cst.ListComp, cst.Lambda, cst.Imaginary))

    def is_int_index(self, e: cst.BaseExpression) -> bool:
        """An integer (not bool) index tensor: nonzero(), argsort(), topk(k)[1], .long(), ..."""
        v = self.infer(e)
        return v.kind == V.TENSOR and v.dtype == V.INT

    def is_numpy_array(self, e: cst.BaseExpression) -> bool:
        """Surely a NumPy array (a NumPy scalar indexes like an int)."""
        v = self.infer(e)
        return v.kind == V.NUMPY and bool(v.ndim)

    def periodic(self, test: cst.BaseExpression) -> bool:
        """`test` holds every N steps (`step % N == 0`, `heat.periodic_test`)."""
        return periodic_test(test, self)

    def origin(self, e: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The expression a name was assigned, followed through plain renames (`a = b`);
        `e` itself when it is not a name, None when no single expression is known."""
        seen: Set[str] = set()
        while type(e) is cst.Name:
            if e.value in seen or len(seen) > 8:
                return None
            seen.add(e.value)
            b = self.binding(e.value)
            if b is None or b.expr is None:
                return None
            e = b.expr
        return e

    def escaped(self, name: str) -> bool:
        """`name`'s tensor may be reachable from elsewhere in its function (or module)."""
        f = self.func
        if f is not None and f.node is not None:
            if f.escaped is None:
                f.escaped = ownership.escaped_names(self, f.node)
            return name in f.escaped
        if self._module_escaped is None:
            self._module_escaped = ownership.escaped_names(self, self.module) if self.module is not None else set()
        return name in self._module_escaped

    @property
    def compiled(self) -> bool:
        """Inside a function under torch.compile / torch.jit."""
        f = self.func
        return f is not None and f.compiled

    def compiled_region(self) -> Optional[Options]:
        """The options of the compile root this function is by its own decorator
        (`@torch.compile(mode="reduce-overhead")`), else None. Whether code is compiled
        because something else compiles it (`torch.compile(model)` in another module, a
        compiled caller) is known only once the project's call graph is linked: rules report
        compiled events (`CompiledRule`) and `compiled.settle` keeps those in a region."""
        f = self.func
        return f.region if f is not None else None

    def option_value(self, option: str) -> Optional[Val]:
        """A command-line option's value in the program as written: its bool default, where
        the project (this file alone, when checked alone) sets it nowhere else."""
        on = self.project.option(option)
        if on is None and not self.project.options_known():
            on = self.options.get(option) if not ({option, ANY_OPTION} & self.options_set) else None
        return None if on is None else V.py("true" if on else "false")

    def training_branch(self) -> Optional[bool]:
        """The training mode the enclosing `if self.training:` branch needs (`mode_sites`)."""
        return mode_sites.branch_mode(self)

    def may_compile(self) -> bool:
        """This code may run under Dynamo: it is in a function (module-level code never is)
        that no `torch.compiler.disable` excludes, and not in a data pipeline's worker code."""
        return bool(self.funcs) and not any(f.disabled for f in self.funcs) and not self.in_data_pipeline() \
            and not compile_sites.eager_only(self, self.stmt_stack)

    def graph_tensor(self, e: cst.BaseExpression, policy: str = KNOWN) -> Optional[Val]:
        """The value of `e` if it is a tensor, on any device: inside compiled code every
        tensor is a graph value, and reading it breaks the graph wherever it lives. `policy`
        as for `gpu` (RECEIVER: also a value of unknown kind where only a tensor fits, in a
        file that names torch); EVIDENT: not merely an unannotated parameter."""
        v = self.infer(e)
        if v.kind == V.TENSORS and policy == RECEIVER:
            v = V.element_of(v)
        if v.kind == V.TENSOR:
            return None if policy == EVIDENT and v.assumed else v
        if v.kind == V.UNKNOWN and self.names_torch and (
                policy == RECEIVER or policy == NOT_MODULE and not _named_like_module(e)):
            return V.tensor(None, assumed=True)
        return None

    def forward_refs_known(self) -> bool:
        """After a walk: a function or method called before its definition turned out to
        return something worth knowing (so a second walk would see more)."""
        for k in self.forward_refs:
            v = self.method_returns.get(k) if isinstance(k, tuple) else self.func_returns.get(k)
            if v is not None and v.kind not in (V.UNKNOWN, V.PY):
                return True
        return (any(name in self.module_scope and all_values(self.module_scope[name]).kind not in (V.UNKNOWN, V.PY)
                    for name in self.forward_globals)
                or any(o in self.device_options for o in self.early_options))

    def stale_reads(self) -> bool:
        """After a walk: a read above a definition (a function's return, an attribute of a
        class defined further down) took the last walk's value, which this walk, knowing
        more (the project's facts, its callers' values), has since changed."""
        if any(self.func_returns.get(name) != v for name, v in self.early_returns.items()):
            return True
        if any(name in self.module_scope and all_values(self.module_scope[name]) != v
               for name, v in self.early_globals.items()):
            return True
        for (cls_name, attr), v in self.early_attrs.items():
            info = self.classes_by_name.get(cls_name)
            if info is not None and info.attrs.get(attr, v) != v:
                return True
        # a function above its callers took their values from the last walk; this walk's
        # calls (knowing the project's values) may pass others (G40)
        return any(self._joined_params(qual, name) != v for (qual, name), v in self.early_params.items())

    def is_counter(self, e: cst.BaseExpression) -> bool:
        """A step counter: a name this function increments (`n += 1`) or loops over a
        `range`/`enumerate` with, or `self.x` that the class increments."""
        f = self.func
        if type(e) is cst.Name and f is not None and f.node is not None:
            if f.counters is None:
                f.counters = self.once(("counted", id(f.node), False), lambda: _counted(f.node, attrs=False))
            return e.value in f.counters
        if (type(e) is cst.Attribute and type(e.value) is cst.Name and e.value.value == "self"
                and self.cls is not None and self.cls.node is not None):
            if self.cls.counters is None:
                node = self.cls.node
                self.cls.counters = self.once(("counted", id(node), True), lambda: _counted(node, attrs=True))
            return e.attr.value in self.cls.counters
        return False

    def logging_below_level(self, method: str) -> bool:
        """A logging call (`log.debug`) below every level this file configures
        (`logging.basicConfig(level=...)`, `logger.setLevel(...)`): it formats nothing."""
        level = L.LOG_LEVELS.get(method.upper() if method != "warn" else "WARNING")
        if level is None:
            return False
        if self._log_level is None:
            self._log_level = _configured_log_level(self)
        return self._log_level > level

    def after_nonblocking_d2h(self) -> bool:
        """This function (or module-level code) has started a non-blocking device-to-host
        copy before this point: a synchronize here is what makes reading the result safe."""
        f = self.func
        return f.started_d2h if f is not None else self.module_started_d2h

    def assumed_param(self, e: cst.BaseExpression) -> bool:
        """`e` is a tensor only by assumption (an unannotated `forward` parameter)."""
        v = self.infer(e)
        return v.kind == V.TENSOR and v.assumed

    def in_data_pipeline(self) -> bool:
        """Inside code that runs in DataLoader workers, on the CPU: a Dataset-style
        `__getitem__`/`__iter__` (not of an nn.Module), a collate function, a library data
        mapper's or transform's method, or a function of this file called only from those
        (`host_side`) and from no other module."""
        f = self.func
        if f is None:
            return False
        if _pipeline_entry(self, f):
            return True
        if f.qual in self.facts.host_side and not self.project.called_elsewhere(f.qual):
            return True
        # called in other modules by their data-pipeline code only, and here (if at all) too
        return f.qual in self.facts.host_side_here and self.project.called_from_host_only(f.qual)

    @property
    def in_loop(self) -> bool:
        """Inside a loop or comprehension body: evaluated repeatedly."""
        return self.loop_depth > 0 or self.comp_depth > 0

    @property
    def in_no_grad(self) -> bool:
        return self.no_grad_depth > 0

    def site_hot(self, guarded: bool = False, loops: int = 0) -> bool:
        """Runs every step: a for/while body, or a framework hook, outside periodic guards
        (`guarded`: or inside them); `loops` more loops deep than the walk is. Functions
        called from hot code are added after the walk (`heat.hot_functions`)."""
        if self.guard_depth and not guarded or self.once_depth:
            return False
        if self.loop_depth + loops > self.container_loop_depth:
            return True
        f = self.func
        return f is not None and f.entry and not f.per_request  # (a hook that decodes: once per request)

    # ----------------------------------------------------------------- findings
    def add_finding(self, rule, node, message, *, replacement, target, safe, fix_title,
                    compiled: Optional[str] = None) -> None:
        """A finding at the site the walk is at."""
        if compiled is not None:
            if compile_sites.in_assert_message(self, node):
                return  # (runs only when the assertion fails)
            compiled = in_mode(compile_sites.in_broken_frame(self, compiled), self.training_branch())
        self.sink.add(self.site(), rule, node, message, replacement=replacement, target=target, safe=safe,
                      fix_title=fix_title, compiled=compiled)

    def site(self, loop_test: bool = False) -> Site:
        """Where a finding reported now would be placed (its heat, function and statement),
        for a rule that decides later (`add_finding_at`). With `loop_test`: the test of the
        `while` loop the walk is at (rules visit a loop before the walk enters it), which runs
        at every iteration, so one loop deeper."""
        f = self.func
        return Site(hot=self.site_hot(loops=1 if loop_test else 0), func=f.qual if f else None,
                    stmt_index=self.stmt_index, stmt=self.stmt_stack[-1] if self.stmt_stack else None,
                    guarded=self.guard_depth > 0 or self.once_depth > 0,
                    rate=rate_here(self, loops=1 if loop_test else 0))

    def add_finding_at(self, where: Site, rule, node, message, *, replacement, target, safe, fix_title,
                       compiled: Optional[str] = None) -> None:
        """`add_finding`, placed at a site the walk met earlier (`site`)."""
        self.sink.add(where, rule, node, message, replacement=replacement, target=target, safe=safe,
                      fix_title=fix_title, compiled=compiled)

    # ----------------------------------------------------------------- names, as rules ask
    def is_imported(self, name: str) -> bool:
        """`name` is bound by an import of this file."""
        return name in self.aliases

    def is_builtin(self, name: str) -> bool:
        """`name` is Python's builtin here: no import, module-level binding or binding of the
        current function rebinds it."""
        if name not in _BUILTINS or name in self.aliases or name in self.module_scope:
            return False
        f = self.func
        return not (f is not None and name in f.scope)

    def import_alias(self, module: str) -> Optional[str]:
        """The local name an import binds to `module` (`import torch as th`: "th"), if any."""
        if self.aliases.get(module) == module:
            return module
        for local, full in self.aliases.items():
            if full == module and "." not in local:
                return local
        return None

    def in_test_code(self) -> bool:
        """In a test file (`test_*.py`, `*_test.py`) or in a function named `test*`."""
        return _test_named(self.filename) or any(f.name.startswith("test") for f in self.funcs)

    def fresh_tensor(self, name: str) -> Optional[Fresh]:
        """What `name` holds, if a tensor it alone owns (`ownership.fresh`): new storage,
        no autograd history."""
        b = self.binding(name)
        return b.fresh if b is not None else None

    # ----------------------------------------------------------------- file facts, as rules ask
    def reads_grads(self) -> bool:
        """The file reads a `.grad` somewhere."""
        return ".grad" in self.source

    def validate_args_off(self) -> bool:
        """The file turns distribution argument validation off by default
        (`Distribution.set_default_validate_args(False)`, anywhere)."""
        if self._validate_args_off is None:
            self._validate_args_off = "set_default_validate_args" in self.source and any(
                type(n) is cst.Call and type(n.func) is cst.Attribute
                and n.func.attr.value == "set_default_validate_args" and n.args and is_true(n.args[0].value) is False
                for n in descendants(self.module, stop=frozenset()))
        return self._validate_args_off

    def grad_facts(self) -> GradFacts:
        """Grad mode over the whole file (`gradmode.grad_facts`), read the first time it is asked."""
        if self._grad_facts is None:
            self._grad_facts = gradmode.grad_facts(self.qualname, self.module) if self.module is not None else GradFacts()
        return self._grad_facts

    def function_wants_grad(self) -> bool:
        """The function the walk is in computes gradients or sets its grad mode itself: it
        calls `.backward()`, `torch.autograd.grad`, `torch.func.vjp`, `requires_grad_()`, ...,
        or is decorated with `torch.enable_grad()` / `set_grad_enabled(...)`."""
        f = self.func
        return f is not None and f.node is not None and self.grad_facts().wants_grad.get(id(f.node), False)

    def calls_of(self, name: str) -> Tuple[CallOf, ...]:
        """Each call in this file of a function named `name` (by the last part of the called
        name): its caller, whether that caller wants gradients, whether autograd is off there."""
        return tuple(self.grad_facts().calls.get(name, ()))

    def grad_mode_set_in_file(self) -> bool:
        """The file sets the grad mode for all of its code (`torch.set_grad_enabled(...)` at
        module level) or freezes parameters (`requires_grad_(False)`, `p.requires_grad = ...`)."""
        return self.grad_facts().set_in_file

    def amp_static_scale(self) -> bool:
        """The file sets NVIDIA apex's amp up (`amp.initialize` at module level), each time
        with a static loss scale (`loss_scale=<number>`, or an opt level whose default is)."""
        if self._amp_static is None:
            calls = [n for n in descendants(self.module) if type(n) is cst.Call
                     and self.qualname(n.func) in _APEX_AMP_INITIALIZE]
            self._amp_static = bool(calls) and all(_static_loss_scale(c) for c in calls)
        return self._amp_static


_BUILTINS = frozenset(vars(builtins))
_APEX_AMP_INITIALIZE = frozenset({"apex.amp.initialize", "apex.amp.frontend.initialize"})
# opt levels whose default loss scale is a static 1.0 (apex/amp/frontend.py): no overflow check
_STATIC_SCALE_LEVELS = frozenset({"O0", "O3"})


def _static_loss_scale(call: cst.Call) -> bool:
    """`amp.initialize(...)` with a number for `loss_scale`, or an opt level of static scale."""
    scale = kwarg(call, "loss_scale")
    if scale is not None:
        return type(scale) in (cst.Integer, cst.Float)
    level = kwarg(call, "opt_level")
    return level is not None and string_value(level) in _STATIC_SCALE_LEVELS




@dataclass(frozen=True)
class _Annotated:
    """A field's annotation (`optim: Optimizer` in a dataclass), read with the file's names
    and the project's classes when the attribute is asked for (`attribute_of`)."""

    annotation: cst.BaseExpression


def _collect_attrs(node: cst.ClassDef) -> Dict[str, List]:
    """Attribute assignments of a class, found syntactically: `self.x = ...` in any method,
    `self.register_buffer("x", ...)`, class-level `x: Tensor` / `x = ...` (dataclass,
    NamedTuple and TypedDict fields)."""
    out: Dict[str, List] = {}
    body = node.body.body if type(node.body) is cst.IndentedBlock else ()
    for stmt in body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.AnnAssign and type(small.target) is cst.Name:
                    ann = annotation_val_syntactic(small.annotation.annotation)
                    if small.value is not None and ann is None:
                        entry = small.value
                    elif ann is not None and not (ann.kind == V.OPTIM and ann.cls is None):
                        entry = ann
                    else:  # a class the syntax cannot place (`optim: Optimizer`, the project's own)
                        entry = _Annotated(small.annotation.annotation)
                    out.setdefault(small.target.value, []).append(entry)
                elif type(small) is cst.Assign:
                    for t in small.targets:
                        if type(t.target) is cst.Name:
                            out.setdefault(t.target.value, []).append(small.value)
        elif type(stmt) is cst.FunctionDef:
            _collect_self_assigns(stmt.body, out)
    return out


def _collect_self_assigns(node: cst.CSTNode, out: Dict[str, List]) -> None:
    """`self.x = ...` and `self.register_buffer("x", ...)` statements under `node`; only
    statements are visited (never expressions, which hold no assignment statements)."""
    todo = [node]
    while todo:
        n = todo.pop()
        if type(n) is cst.SimpleStatementLine:
            for small in n.body:
                _note_self_assign(small, out)
        elif type(n) in (cst.IndentedBlock, cst.SimpleStatementSuite):
            todo.extend(n.body)
        elif type(n) in SMALL_STATEMENTS:
            _note_self_assign(n, out)
        elif type(n) in (cst.FunctionDef, cst.ClassDef):
            continue  # a nested scope's `self` is not this one
        elif type(n) in COMPOUND_STATEMENTS:
            for f in ("body", "orelse", "finalbody"):
                part = getattr(n, f, None)
                if part is not None:
                    todo.append(part)
            todo.extend(getattr(n, "handlers", ()))
            todo.extend(getattr(n, "cases", ()))
        elif type(n) in (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase):
            todo.append(n.body)


def _note_self_assign(n: cst.CSTNode, out: Dict[str, List]) -> None:
    if type(n) in (cst.Assign, cst.AnnAssign):
        targets = [t.target for t in n.targets] if type(n) is cst.Assign else [n.target]
        for t in targets:
            if (type(t) is cst.Attribute and type(t.value) is cst.Name
                    and t.value.value == "self" and n.value is not None):
                out.setdefault(t.attr.value, []).append(n.value)
    elif type(n) is cst.Expr and type(n.value) is cst.Call:
        call = n.value
        if type(call.func) is cst.Attribute and call.func.attr.value in ("register_buffer", "register_parameter"):
            args = call.args
            name = string_value(args[0].value) if args else None
            if name is not None:
                out.setdefault(name, []).append(V.tensor(None))


def _named_like_module(e: cst.BaseExpression) -> bool:
    """`model`, `self.text_encoder`, `Net`: a value whose name (its last snake_case word) is a
    model's; anything that is not a plain name, attribute or item counts too."""
    while type(e) is cst.Subscript:
        e = e.value
    name = last_name(e)
    if name is None or name == "self" or name[:1].isupper():
        return True
    last = re.split(r"_+", name.lower().strip("_"))[-1].rstrip("0123456789")
    return last in L.MODULE_NAME_WORDS or last.endswith(L.MODULE_NAME_ENDINGS)


def _configured_log_level(model) -> int:
    """The lowest level any `basicConfig(level=...)` / `.setLevel(...)` of the file sets;
    0 (every level on) when the file sets none, or one it cannot read."""
    if "setLevel" not in model.source and "basicConfig" not in model.source:
        return 0
    levels = []
    for n in descendants(model.module, stop=frozenset()):
        if type(n) is not cst.Call or type(n.func) not in (cst.Attribute, cst.Name):
            continue
        name = n.func.attr.value if type(n.func) is cst.Attribute else n.func.value
        arg = None
        if name == "basicConfig":
            arg = next((a.value for a in n.args if a.keyword is not None and a.keyword.value == "level"), None)
            if arg is None:
                continue
        elif name == "setLevel" and n.args:
            arg = n.args[0].value
        else:
            continue
        levels.append(_level_value(arg))
    return min(levels) if levels else 0


def _level_value(e: cst.BaseExpression) -> int:
    """`logging.INFO`, `"INFO"`, `20`; 0 for anything else (a variable: maybe DEBUG)."""
    if type(e) is cst.Integer:
        return int(e.value)
    name = e.attr.value if type(e) is cst.Attribute else string_value(e) if type(e) is cst.SimpleString else None
    return L.LOG_LEVELS.get((name or "").upper(), 0)


def _counted(root: cst.CSTNode, attrs: bool) -> Set[str]:
    """Names (or, with `attrs`, `self.` attributes) incremented by a constant under `root`,
    and loop variables over `range(...)` / the index of `enumerate(...)`."""
    out: Set[str] = set()
    for n in statements(root, stop=frozenset()):  # (both are statements: no expression is entered)
        kind = type(n)
        if kind is cst.AugAssign and type(n.operator) is cst.AddAssign and type(n.value) is cst.Integer:
            t = n.target
            if not attrs and type(t) is cst.Name:
                out.add(t.value)
            elif attrs and type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self":
                out.add(t.attr.value)
        elif not attrs and kind is cst.For:
            it = _unwrapped(n.iter)
            if not (type(it) is cst.Call and type(it.func) is cst.Name):
                continue
            if it.func.value == "range" and type(n.target) is cst.Name:
                out.add(n.target.value)
            elif (it.func.value == "enumerate" and type(n.target) is cst.Tuple and n.target.elements
                  and type(n.target.elements[0].value) is cst.Name):
                out.add(n.target.elements[0].value.value)
    return out


# progress bars that yield what they wrap: `tqdm(enumerate(loader), total=n)`
_PROGRESS_BARS = frozenset(("tqdm", "trange", "track", "progress_bar"))


def _unwrapped(it: cst.BaseExpression) -> cst.BaseExpression:
    """The iterable a progress bar wraps (`tqdm(enumerate(loader))`: the enumerate)."""
    while type(it) is cst.Call and it.args and it.args[0].keyword is None:
        f = it.func
        name = last_name(f)
        if name not in _PROGRESS_BARS:
            break
        it = it.args[0].value
    return it


def _constant_key(target: cst.Subscript) -> Optional[str]:
    """The string constant of `x["key"]`, else None."""
    if len(target.slice) != 1 or type(target.slice[0].slice) is not cst.Index:
        return None
    return string_value(target.slice[0].slice.value)
