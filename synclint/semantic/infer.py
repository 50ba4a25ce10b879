"""The evaluator: the abstract value of an expression, from what the model binds and library.toml.

`Evaluator(env).infer(expr)` is the value of `expr` where the walk is. The evaluator reads
the file through its `Env` (the `SemanticModel`), whose protocol below names every fact it
reads, and binds nothing: binding is the binder's job, in source order. What it keeps of
its own is a memo of values, owned and emptied by it (`forget`), a memo of what helpers
return for given argument values (`_returns`, below), and the helpers it is inlining (a
recursion guard). What it learns that the next walk should know (a function
called above its definition, a loader drawn from) it tells the env through its `note_`
methods, never by writing the env's tables.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, ContextManager, Dict, Iterator, List, Optional, Protocol, Sequence, Set, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic import moduledicts
from synclint.semantic import values as V
from synclint.semantic.facts import ref, ref_target
from synclint.semantic.annotations import annotation_val, type_test_holds
from synclint.semantic.helpers import NOT_LITERAL, HelperBody, value_test_holds
from synclint.semantic.registries import built_through
from synclint.semantic.scopes import Binding, FuncInfo
from synclint.semantic.syntax import is_none, isinstance_test, is_true, kwarg, literal_ndim, string_value
from synclint.semantic.values import Val

if TYPE_CHECKING:  # pragma: no cover
    from synclint.semantic.facts import ProjectFacts
    from synclint.semantic.scopes import ClassInfo

__all__ = ["Env", "Evaluator", "infer"]


class Env(Protocol):
    """What evaluation reads of the file, the walk's place in it and the project."""

    # names and bindings, where the walk is
    func: Optional[FuncInfo]  # the innermost function the walk is in
    cls: Optional["ClassInfo"]  # the innermost class
    loop_depth: int

    def lookup(self, name: str) -> Val: ...
    def binding(self, name: str) -> Optional[Binding]: ...
    def is_local(self, name: str) -> bool: ...
    def module_level(self, name: str) -> bool: ...
    def assigned(self, name: str) -> Optional[cst.BaseExpression]: ...
    def origin(self, e: cst.BaseExpression) -> Optional[cst.BaseExpression]: ...
    def periodic(self, test: cst.BaseExpression) -> bool: ...  # true every N steps (`heat`)
    def qualname(self, expr: cst.BaseExpression) -> Optional[str]: ...
    def torch_name(self, expr: cst.BaseExpression) -> Optional[str]: ...

    # the file's classes and functions
    classes_by_name: Dict[str, "ClassInfo"]
    all_funcs: Dict[str, FuncInfo]
    func_returns: Dict[str, Val]
    one_liners: Dict[str, Tuple[List[str], cst.BaseExpression]]  # inlined at each call
    helpers: Dict[str, HelperBody]  # replayed at each call

    def defined_class(self, name: str) -> Optional[bool]: ...
    def attribute_of(self, cls_name: str, attr: str) -> Val: ...
    def instance_attribute(self, name: str, cls_name: str, attr: str) -> Optional[Val]: ...
    def method_return(self, cls_name: str, method: str) -> Optional[Val]: ...
    def instance_of(self, keys: str) -> Val: ...
    def library_base(self, cls_name: str, wanted: Callable[[str], bool]) -> Optional[str]: ...
    def distribution_base(self, cls_name: str) -> Optional[str]: ...
    def registry_base(self) -> Optional[str]: ...

    # file and project facts
    project: "ProjectFacts"
    default_device: str
    uses_xla: bool
    device_options: Dict[str, str]

    def resolve(self, v: Val) -> Val: ...

    # a helper's body evaluated for one call: its own scope (and another module's imports)
    def replaying(self, scope: FuncInfo, foreign_aliases: Optional[Dict[str, str]],
                  owner: Optional[str] = None) -> ContextManager[None]: ...

    # what this walk learnt that the next walk should know
    def note_forward_ref(self, key: object) -> None: ...
    def note_early_return(self, name: str, v: Val) -> None: ...
    def note_early_option(self, option: str) -> None: ...
    def option_value(self, option: str) -> Optional[Val]: ...
    def note_per_epoch(self) -> None: ...
    def item_written(self, name: str, key: str) -> Optional[Val]: ...


# torch functions that join a sequence of tensors into one
_JOINING = frozenset({"stack", "cat", "concat", "concatenate", "hstack", "vstack", "dstack"})



# what a dict's values may be, joined, for its items to be known (`d[k]`, `d.values()`)
_DICT_VALUE_KINDS = (V.NUMPY, V.TENSOR, V.LOADER)

# Containers whose items the expression shows (a literal, a comprehension): `sum()` of one is
# inferred from them, not from the container's value
_LITERAL_CONTAINERS = (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.SetComp, cst.GeneratorExp)

# Bounds on evaluating a callee's body for one call (`Evaluator._infer_in_scope`): how deep
# such evaluations nest (a helper calling a helper ...), and how many results one walk keeps.
MAX_REPLAY_DEPTH = 6
MAX_REPLAYED = 4096


def infer(expr: cst.BaseExpression, env: "Env") -> Val:
    """The value of `expr` in `env`, asked once (a walk keeps one `Evaluator`, whose memo
    serves every question until a binding changes)."""
    return Evaluator(env).infer(expr)


class Evaluator:
    """`infer(expr)` and the evaluations it is made of, over one `Env`."""

    def __init__(self, env: Env) -> None:
        self.env = env
        # node id -> (node, value): valid while no binding changes (`forget`); another
        # scope's evaluation (`another_scope`) has its own
        self.memo: Dict[object, tuple] = {}
        self._inlining: Set[str] = set()  # helpers being inlined (a call of one in its own body)
        # What a helper returns, by (function key, its parameters' values, the helpers being
        # inlined around it): a call is inferred from its own arguments, and a second call with
        # the same facts (at another site, in another helper's body) is not replayed again.
        # This file's helpers read this file's names, which change as the walk goes: theirs are
        # kept until `forget`; another module's read only that module's imports and the
        # project's facts (fixed for a walk): theirs are kept for the walk.
        self._returns_here: Dict[tuple, Val] = {}
        self._returns_foreign: Dict[tuple, Val] = {}
        self._foreign_helpers: Dict[str, HelperBody] = {}  # other modules' helpers, parsed once
        # what a comprehension's targets hold while its element is evaluated from outside it
        # (a rule asks of `max([a["acc"] for a in metrics])` before the walk binds `a`)
        self._comp_targets: List[Dict[str, Val]] = []

    def forget(self) -> None:
        """What names hold may change (a binding, a new statement, a scope): inferred values
        are inferred again."""
        self.memo = {}
        if self._returns_here:
            self._returns_here = {}

    @contextmanager
    def another_scope(self) -> Iterator[None]:
        """Evaluation somewhere else than where the walk is (a class attribute from the method
        that assigns it, a helper's body): what was inferred here does not hold there."""
        saved, self.memo = self.memo, {}
        try:
            yield
        finally:
            self.memo = saved

    # ------------------------------------------------------------------ entry point
    def infer(self, e: cst.BaseExpression) -> Val:
        try:
            v = self.value(e)
        except RecursionError:  # pathological nesting: know nothing
            return V.UNKNOWN_VAL
        if self.env.uses_xla and v.kind == V.TENSOR and v.device is None:
            # A torch_xla file: tensors of unknown device are XLA tensors, not CUDA ones.
            return v.with_(device=V.CPU)
        return v

    def value(self, e: cst.BaseExpression) -> Val:
        """`infer` without its guards: what other evaluations build on."""
        # Within one statement (no binding changes) each expression is inferred once: a
        # chain `a.b().c()...` whose every call a rule asks about stays linear, not quadratic.
        # The binder calls `forget` whenever what a name holds may change.
        memo = self.memo
        got = memo.get(id(e))
        if got is not None and got[0] is e:
            return got[1]
        v = self._infer_node(e)
        memo[id(e)] = (e, v)
        return v

    def _infer_node(self, e: cst.BaseExpression) -> Val:
        t = type(e)
        if t is cst.Name:
            if e.value in ("True", "False"):
                return V.py("bool" if e.value == "True" else "false")
            if e.value == "None":
                return V.py("none")
            for targets in reversed(self._comp_targets):
                if e.value in targets:
                    return targets[e.value]
            v = self.env.lookup(e.value)
            if v.kind == V.UNKNOWN and v.cls is None and not self.env.is_local(e.value) \
                    and self.env.defined_class(e.value) is not None:
                return V.class_value(e.value)  # `return ERM`: the class itself
            if v == V.FUNCTION_VAL:  # a module-level function as a value (`fn = f if c else g`), by its key
                return V.function(e.value)
            if v is V.PY_VAL and self.env.binding(e.value) is None:
                return self._imported_function(e) or v
            return v
        # (the node types exclude each other: the commonest are asked first)
        if t is cst.Call:
            v = self._infer_call(e)
            if v.kind == V.UNKNOWN and not v.cls and not v.elems and e.args:
                return _asked_for_tensors(e) or v
            return v
        if t is cst.Attribute:
            return self._infer_attribute(e)
        if t is cst.Subscript:
            return self._infer_subscript(e)
        if t is cst.Integer:
            return V.py("int")
        if t is cst.Float:
            return V.py("float")
        if t is cst.SimpleString:
            # A device string ("cuda", "cpu:0") carries its device, so `.to(device)` knows it.
            s = string_value(e) or ""
            dev = V.CUDA if s.startswith("cuda") else V.CPU if s.split(":")[0] in ("cpu", "mps") else None
            return Val(V.PY, dev, py="str")
        if t in (cst.ConcatenatedString, cst.FormattedString):
            return V.py("str")
        if t is cst.Dict:
            return self._infer_dict(e)
        if t is cst.DictComp:
            # `{name: p.cpu() for name, p in model.named_parameters()}` (llm.c): a dict of the
            # values it makes, when they are tensors, arrays or loaders (as `_infer_dict`)
            with self._comprehension(e.for_in):
                v = self.value(e.value)
            return Val(V.PY, py="dict", elems=(v,)) if v.kind in _DICT_VALUE_KINDS else V.py("dict")
        if t in (cst.Imaginary, cst.Set, cst.SetComp, cst.Lambda):
            return V.PY_VAL
        if t in (cst.List, cst.Tuple):
            return self._infer_sequence(e)
        if t in (cst.ListComp, cst.GeneratorExp):
            with self._comprehension(e.for_in):
                elt = self.value(e.elt)
            if elt.kind == V.TENSOR:
                return Val(V.TENSORS, elt.device, dtype=elt.dtype, assumed=elt.assumed)
            if elt.kind in (V.OBJECT, V.MODULE, V.LOADER, V.TENSORS) or V.is_dict_of(elt):
                # as a list they were appended to (a tuple of tensors each: `[(x.cuda(),
                # y.cuda()) for x, y in batches]`)
                return Val(V.PY, py="list", elems=(elt,))
            if elt.kind == V.PY:
                # strings are kept (prompts, file names: never a tensor when iterated)
                return Val(V.PY, py="list", elems=(elt,)) if elt.py == "str" else V.py("list")
            if elt == V.HOST_OBJECT:  # `[r["pred"] for r in results]` of host data
                return Val(V.PY, py="list", elems=(elt,))
            return V.UNKNOWN_VAL
        if t is cst.UnaryOperation:
            v = self.value(e.expression)
            if type(e.operator) is cst.Not:
                if v.kind == V.PY and v.py in _KNOWN_TRUTH:
                    return v.with_(py=_KNOWN_TRUTH[v.py])  # (a Python value Dynamo specialises on)
                return V.py("bool") if v.kind in (V.PY, V.NUMPY) else v if v.kind == V.UNKNOWN else V.py("bool")
            if v.kind == V.TENSOR:
                return v.with_(dtype=v.dtype if type(e.operator) is cst.BitInvert or v.dtype != V.BOOL else None)
            return v
        if t is cst.BinaryOperation:
            if type(e.operator) in (cst.Multiply, cst.Modulo):  # "%10s" * 2, "%g" % x: a str
                left = self.value(e.left)
                if left.kind == V.PY and left.py == "str":
                    return V.py("str")
            if type(e.operator) in (cst.Add, cst.Multiply):
                seq = self._sequence_arithmetic(e)
                if seq is not None:
                    return seq
            if type(e.operator) is cst.Divide:
                v = self.combine([self.value(e.left), self.value(e.right)])
                return V.py("float") if v.kind == V.PY and v.py == "int" else v
            left, right = self.value(e.left), self.value(e.right)
            return self.combine(
                [left, right],
                # (a product of two masks is their `&`: bool times bool stays bool in torch;
                # times a number it is a number)
                bitwise=type(e.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor)
                or (type(e.operator) is cst.Multiply and left.kind == right.kind == V.TENSOR
                    and left.mask and right.mask),
                elementwise=type(e.operator) is not cst.MatrixMultiply,
            )
        if t is cst.Comparison:
            ops = [c.operator for c in e.comparisons]
            if len(ops) == 1 and type(ops[0]) in (cst.Is, cst.IsNot) and is_none(e.comparisons[0].comparator):
                v = self.value(e.left)  # `d is None` of a known None
                if V.is_none(v):
                    return V.py("true" if type(ops[0]) is cst.Is else "false")
            if any(type(o) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for o in ops):
                return V.py("bool")
            vals = [self.value(e.left)] + [self.value(c.comparator) for c in e.comparisons]
            ts = [v for v in vals if v.kind in (V.TENSOR, V.TENSORS)]
            if ts:
                return V.tensor(_device_of(ts), mask=True, assumed=all(v.assumed for v in ts))
            if any(v.kind == V.NUMPY for v in vals):
                return Val(V.NUMPY)
            if self.env.periodic(e):
                return V.py("periodic")  # `step % N == 0`: a flag that says so wherever it goes
            if any(v.kind == V.UNKNOWN for v in vals):
                return V.UNKNOWN_VAL  # an unknown operand keeps the result unknown
            return V.py("bool")
        if t is cst.BooleanOperation:
            # `a or b` is one of its operands; `False and b` is the first (`b` is not evaluated)
            left = self.value(e.left)
            if left.kind == V.PY and left.py == ("false" if type(e.operator) is cst.And else "true") \
                    and not left.assumed:
                return left
            return V.join(left, self.value(e.right))
        if t is cst.IfExp:
            test = self.value(e.test)
            body, orelse = self._tested_value(e.test, e.body), self.value(e.orelse)
            if test.kind == V.PY and test.py in _KNOWN_TRUTH and not test.assumed and not (
                    body.device is not None and orelse.device is not None and body.device != orelse.device):
                # `None if args.ignore_d else d`, on by default. Not a choice of device (`"cuda" if
                # args.cuda else "cpu"`): a run on the GPU passes the flag, as for a device option
                return body if test.py == "true" else orelse
            return V.join(body, orelse)
        if t is cst.Await:
            return self.value(e.expression)
        if t is cst.NamedExpr:
            return self.value(e.value)
        return V.UNKNOWN_VAL

    def _tested_value(self, test: cst.BaseExpression, body: cst.BaseExpression) -> Val:
        """The value of a conditional expression's `body` where `test` holds: the name an
        `isinstance` test names is of the type tested (`unet if isinstance(unet, nn.Module) else
        MODELS.build(unet)`: a module either way)."""
        v = self.value(body)
        tested = isinstance_test(test)
        if tested is None or type(body) is not cst.Name or tested[0].value != body.value:
            return v
        typed = annotation_val(self.env, tested[1])
        if typed is None or typed.kind not in (V.MODULE, V.TENSOR) or typed.kind == v.kind:
            return v
        return typed

    def _infer_dict(self, e: cst.Dict) -> Val:
        """`{"rois": boxes.cpu().numpy(), "scores": ...}`: a dict whose values are all arrays,
        all tensors or all loaders (`{"train": DataLoader(...), "val": ...}`) keeps them
        (joined), as a dict filled by item stores does; values of mixed kinds (a loss beside
        a learning rate) are not joined into one."""
        return self._dict_of([el.value if type(el) is cst.DictElement else None for el in e.elements])

    def _dict_of(self, values: Sequence[Optional[cst.BaseExpression]]) -> Val:
        """A dict built of these value expressions (None: a `**` entry, whose values are not
        known): a literal's, or `dict(recall=r, accuracy=a)`'s keywords."""
        vals = [self._project_class(x) or self.value(x) for x in values if x is not None]
        if vals and len(vals) == len(values) and all(V.function_keys(v) or V.class_key(v) for v in vals):
            # a registry (`{"VQ-16": VQ_16, "VQ-8": VQ_8}`): calling an item makes what any of them
            # makes; a factory that returns an instance of a class stands for that class, which
            # other modules know (they are not told this module's functions)
            made = [self._returned_by(V.function_keys(v)) if V.function_keys(v) else v for v in vals]
            vals = [V.class_value(m.cls) if m.kind in (V.MODULE, V.OBJECT) and m.cls else v
                    for m, v in zip(made, vals)]
            joined = vals[0]
            for v in vals[1:]:
                joined = V.join(joined, v)
            return Val(V.PY, py="dict", elems=(joined,)) if V.function_keys(joined) or V.class_key(
                joined) else V.py("dict")
        if vals and len(vals) == len(values) and all(V.methods_of(v) for v in vals):
            # a dispatch table of bound methods (`{"labels": self.loss_labels, ...}`, DETR-style
            # criteria): calling an item runs any of them
            joined = vals[0]
            for v in vals[1:]:
                joined = V.join(joined, v)
            return Val(V.PY, py="dict", elems=(joined,))
        if not vals or len(vals) != len(values) or len({v.kind for v in vals}) != 1 \
                or vals[0].kind not in _DICT_VALUE_KINDS:
            return V.py("dict")
        joined = vals[0]
        for v in vals[1:]:
            joined = V.join(joined, v)
        return Val(V.PY, py="dict", elems=(joined,))

    def _imported_function(self, e: cst.Name) -> Optional[Val]:
        """A name imported from another module of the project, of which the project knows no
        value and no class (`from pkg.train import prepare_causal`), used as a value
        (`prepare = prepare_causal if c else prepare_uncausal`): that function, by its
        qualified name, so a call through the alias reaches it (the linker resolves the key;
        one that names no function reaches nothing)."""
        q = self.env.qualname(e)
        if q is None or "." not in q or q.split(".", 1)[0] in L.LIBRARY_ROOTS or self.env.project.class_facts(q):
            return None
        return V.function(q)

    def _project_class(self, e: cst.BaseExpression) -> Optional[Val]:
        """Another module's class named as a value (`ddp.DataParallelBackend`, or imported by
        name): the class itself, as a registry's items are; None for anything else."""
        q = self.env.qualname(e)
        if q is None or q.split(".", 1)[0] in L.LIBRARY_ROOTS:
            return None
        c = self.env.project.class_facts(q)
        return V.class_value(c.key) if c is not None else None

    def _held_class(self, e: cst.Attribute) -> Optional[str]:
        """The key of another module's class that `self.<attr>` names where the class body
        or a method assigns it a class by name (`infer_state_class = InferStateInfo`, imported),
        if one does."""
        cls = self.env.cls
        if cls is None or type(e.value) is not cst.Name or e.value.value != "self":
            return None
        for x in cls.pending.get(e.attr.value, ()):
            if type(x) in (cst.Name, cst.Attribute):
                made = self._project_class(x)
                if made is not None:
                    return V.class_key(made)
        return None

    def _infer_sequence(self, e) -> Val:
        if any(type(el) is cst.StarredElement for el in e.elements):
            vals = [self.value(el.value) for el in e.elements]
            ts = [v for v in vals if v.kind in (V.TENSOR, V.TENSORS)]
            return Val(V.TENSORS, _device_of(ts)) if ts else V.UNKNOWN_VAL if vals else V.py("list")
        return _sequence(tuple(self.value(el.value) for el in e.elements), "tuple" if type(e) is cst.Tuple else "list")

    def _sequence_arithmetic(self, e: cst.BinaryOperation) -> Optional[Val]:
        """`[a] + [b]` and `[f] * n` of literal sequences: a sequence of their items (HRNet's
        `[self._ce_forward] * (n - 1) + [self._ohem_forward]`, each then called), else None."""
        left, right = self.value(e.left), self.value(e.right)
        if type(e.operator) is cst.Add:
            if left.elems is not None and right.elems is not None and not V.is_dict_of(left) and not V.is_dict_of(right):
                kind = left.py if left.kind == V.PY else right.py if right.kind == V.PY else "list"
                return _sequence(left.elems + right.elems, kind or "list")
            return None
        for seq, n in ((left, right), (right, left)):
            if seq.elems and not V.is_dict_of(seq) and n.kind == V.PY and n.py == "int":
                return _sequence((V.element_of(seq),), seq.py if seq.kind == V.PY and seq.py else "list")
            if seq.elems and seq.kind == V.PY and seq.py in ("list", "tuple") and n.kind == V.TENSOR:
                # `[IGNORE_ID] * n_tokens[i]`: a 0-d tensor read as a count (`__index__`), still a list
                return _sequence((V.element_of(seq),), seq.py)
        return None

    def combine(self, vals: List[Val], bitwise: bool = False, elementwise: bool = True) -> Val:
        """Arithmetic of values: a tensor if any operand is; unknown if any is unknown. An
        elementwise operation of tensors whose ranks are known, and Python numbers, has the
        broadcast rank (`torch.randperm(n) + k` is 1-D, and so an item of it is 0-d)."""
        ts = [v for v in vals if v.kind == V.TENSOR]
        if ts:
            if bitwise and all(v.mask for v in ts):
                dtype = V.BOOL
            elif all(v.dtype == V.INT for v in ts):
                dtype = V.INT
            else:
                dtype = None
            ndim = None
            if elementwise and all(v.ndim is not None for v in ts) and all(
                    v.kind == V.TENSOR or (v.kind == V.PY and v.py in V.NUMBERS) for v in vals):
                ndim = max(v.ndim for v in ts)
            return V.tensor(_device_of(ts), dtype=dtype, assumed=all(v.assumed for v in ts), ndim=ndim)
        if any(v.kind == V.NUMPY for v in vals):
            return Val(V.NUMPY)
        if all(v.kind == V.PY for v in vals):
            kinds = {v.py for v in vals}
            if len(kinds) == 1:
                return V.py(kinds.pop())
            # `acc.item() * 100`: numbers of different kinds make a number
            return V.py("number") if kinds <= V.NUMBERS else V.PY_VAL
        return V.UNKNOWN_VAL

    def _registered(self, key: cst.BaseExpression) -> Val:
        """`globals()[key]`: the class named, or for a name only known when the program
        runs, any class of this module's one family (`registry_base`)."""
        name = string_value(key)
        if name is not None:
            return V.class_value(name) if self.env.defined_class(name) is not None else V.UNKNOWN_VAL
        base = self.env.registry_base()
        return V.class_value(base) if base is not None else V.UNKNOWN_VAL

    # ------------------------------------------------------------------ attributes, indexing
    def _infer_attribute(self, e: cst.Attribute) -> Val:
        env = self.env
        attr = e.attr.value
        q = env.qualname(e)
        if q is not None:
            if q.startswith("torch.") and q[6:] in L.LEGACY_CUDA_CTORS | L.LEGACY_CTORS:
                # `torch.cuda.HalfTensor` as a value: a tensor type that names its device
                return Val(V.PY, V.CUDA if q[6:] in L.LEGACY_CUDA_CTORS else V.CPU, py="typestr")
            return env.project.value(q, V.PY_VAL)  # torch.float32, np.pi, config.device
        base = self.value(e.value)
        if V.class_key(base):
            base = V.UNKNOWN_VAL  # `ERM.attr`: what a class holds is not followed
        if type(e.value) is cst.Name and e.value.value == "self" and env.cls is not None:
            if attr in env.cls.methods and attr not in env.cls.pending:
                return V.method(f"{env.cls.name}.{attr}")  # `run = self.run_cuda`: a bound method
            b = env.binding("self." + attr)
            if b is not None:
                return b.val
            v = env.attribute_of(env.cls.name, attr)
            if v.kind == V.UNKNOWN and attr in L.LIGHTNING_INT_ATTRS and env.library_base(
                    env.cls.name, L.lightning_module_base) is not None:
                return V.py("int")  # `self.global_step` of a LightningModule (its class sets none)
            if v.kind == V.UNKNOWN and attr == "param_groups" and env.library_base(env.cls.name, L.optimizer_base) is not None:
                return V.py("param_groups")  # in `step` of a custom optimizer: its groups (`group["params"]`)
            if v.kind == V.UNKNOWN:  # set only by subclasses (`self.model` of a trainer's base)
                return env.project.subclass_attr(env.cls.name, attr) or v
            return v
        k = base.kind
        if k == V.TENSORS and attr in L.HOST_ATTRS:
            base, k = base.with_(kind=V.TENSOR, elems=None), V.TENSOR  # (a batch read as a tensor is one: `x.device`)
        if k == V.TENSOR:
            if attr in L.HOST_ATTRS:
                if attr == "device":
                    return Val(V.DEVICE, base.device)
                return V.py("shape") if attr == "shape" else V.py("int") if attr == "ndim" else V.PY_VAL
            if attr in L.SAME_TENSOR_ATTRS:
                return base.with_(dtype=base.dtype if attr in ("T", "mT", "H", "mH", "data") else None,
                                  pinned=base.pinned if attr != "grad" else None)
            return V.UNKNOWN_VAL
        if k == V.NUMPY:
            return base if attr in ("T", "real", "imag", "flat") else V.PY_VAL
        if k == V.OPTIM and attr == "param_groups":
            return V.py("param_groups")
        if k == V.PY and base.cls == L.ENCODING and not attr.startswith("_"):
            return V.py("list")  # `tokenizer(texts).input_ids`: without `return_tensors`, lists
        if k == V.TENSORS:
            if base.cls == L.ENCODING and not attr.startswith("_"):  # `enc.input_ids`
                return V.tensor(base.device, dtype=V.INT if attr.endswith(("_ids", "_mask")) else None)
            if attr in ("indices", "values"):  # topk/sort/max(dim) results
                return V.tensor(base.device, dtype=V.INT if attr == "indices" else None)
            return V.UNKNOWN_VAL
        if k == V.OBJECT and type(e.value) is cst.Name and base.cls and "|" not in base.cls:
            v = env.instance_attribute(e.value.value, base.cls, attr)
            if v is not None:
                return v
        if k in (V.MODULE, V.OBJECT) and base.cls is not None:
            v = env.attribute_of(base.cls, attr)
            if v.kind != V.UNKNOWN:
                if v.kind in (V.TENSOR, V.MODULE) and v.device is None and base.device is not None:
                    return v.with_(device=base.device)
                return v
        if k == V.MODULE:
            if attr in ("weight", "bias"):
                return V.tensor(base.device) if not base.assumed else V.UNKNOWN_VAL
            if base.cls is not None and base.cls[6:] in L.MODULE_DICTS and attr not in L.MODULE_METHODS:
                # `self.transformer.h` of an nn.ModuleDict: the entry the class builds, if read
                made = self._module_dict_entry(e.value, attr)
                return made if made is not None else Val(V.MODULE, base.device)
            return V.UNKNOWN_VAL
        if k == V.OBJECT and base.cls in L.PREPARE_OWNERS and attr == "device":
            return Val(V.DEVICE, V.CUDA)
        if k == V.UNKNOWN and base.device == V.CPU:
            return V.HOST_OBJECT  # a field of what a model on the host computed
        if k == V.OBJECT and base.cls == L.ARG_NAMESPACE:  # `args.device`
            dev = env.device_options.get(attr)
            if dev is None:
                on = env.option_value(attr)
                if on is not None:
                    return on
                env.note_early_option(attr)  # the parser may be further down: known next walk
                return V.UNKNOWN_VAL
            return Val(V.PY, dev, py="str")
        return V.UNKNOWN_VAL

    def _module_dict_entry(self, holder: cst.BaseExpression, key: str) -> Optional[Val]:
        """What the entry `key` of the ModuleDict `holder` is, from the expressions the class
        builds it with (`moduledicts.entries`), inferred where the class's methods see them;
        None when it says no module."""
        out: Optional[Val] = None
        with self.another_scope():
            for entry in moduledicts.entries(self.env, holder, key):
                v = self.value(entry)
                out = v if out is None else V.join(out, v)
        return out if out is not None and out.kind == V.MODULE else None

    def _infer_subscript(self, e: cst.Subscript) -> Val:
        if type(e.value) is cst.Call and type(e.value.func) is cst.Name and e.value.func.value == "globals" \
                and not e.value.args and not self.env.is_local("globals") and len(e.slice) == 1 \
                and type(e.slice[0].slice) is cst.Index:
            return self._registered(e.slice[0].slice.value)
        base = self.value(e.value)
        if base.kind == V.TENSOR:
            idx = [self.value(s.slice.value) for s in e.slice if type(s.slice) is cst.Index]
            if any(i.kind == V.PY and i.py == "str" for i in idx):
                return V.UNKNOWN_VAL  # `img_metas[i]["img_key"]`: no tensor takes a string index
            if len(e.slice) == 1 and idx and idx[0].kind == V.TENSOR and idx[0].mask and base.ndim == 1:
                return base.with_(pinned=None)
            if base.ndim is not None and len(idx) == len(e.slice) <= base.ndim and all(
                    i.kind == V.PY and i.py in ("int", "number") for i in idx):
                # `perm[i]` with Python ints: one dimension fewer per index (a 0-d element)
                return base.with_(pinned=None, ndim=base.ndim - len(idx))
            if base.ndim == 1 and len(e.slice) == 1 and type(e.slice[0].slice) is cst.Index and literal_ndim(
                    e.slice[0].slice.value) == 1:
                return base.with_(pinned=None)  # `t[[3, 2, 3, 2]]`: a 1-D gather, 1-D again
            if all(type(s.slice) is cst.Slice for s in e.slice):
                return base.with_(pinned=None)  # `perm[:2]`: slices keep every dimension
            return base.with_(pinned=None, ndim=None)  # any index of a bool tensor is bool
        if base.kind == V.TENSORS:
            if type(e.value) is cst.Name and len(e.slice) == 1 and type(e.slice[0].slice) is cst.Index:
                key = string_value(e.slice[0].slice.value)
                written = self.env.item_written(e.value.value, key) if key is not None else None
                if written is not None:
                    return written
            if base.elems is not None and len(e.slice) == 1:
                idx = e.slice[0].slice
                if type(idx) is cst.Index and type(idx.value) is cst.Integer:
                    i = int(idx.value.value, 0)
                    if i < len(base.elems):
                        return base.elems[i]
                if type(idx) is cst.Slice:
                    return base
            if len(e.slice) == 1 and type(e.slice[0].slice) is cst.Slice:
                return base
            return V.element_of(base)
        if base.kind == V.PY and type(e.value) is cst.Attribute and e.value.attr.value in ("r_", "c_") and \
                self.env.qualname(e.value) in ("numpy.r_", "numpy.c_"):
            return Val(V.NUMPY, ndim=1 if e.value.attr.value == "r_" else 2)  # `np.r_[:2, 4:n]`: an array
        if base.kind == V.NUMPY:
            if all(type(x.slice) is cst.Slice for x in e.slice):
                return base
            if type(e.value) is cst.Call and len(e.slice) == 1 and self.env.qualname(e.value.func) in (
                    "numpy.where", "numpy.nonzero"):
                return Val(V.NUMPY, ndim=1)  # np.where(m)[0]: an index array
            return Val(V.NUMPY)  # an element, or fancy indexing: array-ness unknown
        if base.kind == V.MODULE and (base.cls or "")[6:] in L.MODULE_DICTS and len(e.slice) == 1 \
                and type(e.slice[0].slice) is cst.Index and string_value(e.slice[0].slice.value) is not None:
            made = self._module_dict_entry(e.value, string_value(e.slice[0].slice.value))  # `self.heads["ln_f"]`
            return made if made is not None else Val(V.MODULE, base.device)
        if V.is_dict_of(base):
            return base.elems[0]  # kwargs["loss"]: any of the values callers pass
        if base.kind == V.PY and base.py in ("param_groups", "param_group") and len(e.slice) == 1:
            if base.py == "param_groups":
                return V.py("param_group")
            key = e.slice[0].slice
            # an optimizer's group: its tensors under "params", hyperparameters (lr, betas,
            # weight_decay: Python numbers unless the user gave tensors) under the rest
            if type(key) is cst.Index and type(key.value) is cst.SimpleString:
                return Val(V.TENSORS) if string_value(key.value) == "params" else V.py("number")
        if base.kind in (V.PY, V.UNKNOWN) and base.elems is not None and len(e.slice) == 1:
            idx = e.slice[0].slice
            if type(idx) is cst.Index and type(idx.value) is cst.Integer:
                i = int(idx.value.value, 0)
                if i < len(base.elems):
                    return base.elems[i]
        if base.kind == V.UNKNOWN and len(e.slice) == 1 and type(e.slice[0].slice) is cst.Index:
            idx = self.value(e.slice[0].slice.value)
            if idx.kind == V.TENSOR and idx.mask:
                return V.tensor(idx.device, assumed=idx.assumed)  # only a tensor takes a tensor mask
        if base.kind == V.OBJECT and base.cls and len(e.slice) == 1:
            item = self.env.method_return(base.cls, "__getitem__")  # `val_dataset[i]`: what its `__getitem__` returns
            if item is not None:
                return item
        if base.kind == V.UNKNOWN and base.device == V.CPU:
            return V.HOST_OBJECT
        if base.kind == V.PY and base.py == "str":
            return V.py("str")
        if base.kind == V.PY and base.py == "shape" and len(e.slice) == 1:
            return V.py("shape") if type(e.slice[0].slice) is cst.Slice else V.py("int")
        return V.UNKNOWN_VAL

    def iter_item(self, it: cst.BaseExpression) -> Val:
        """The value of one item when `it` is iterated."""
        if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range" \
                and not self.env.is_local("range"):
            return V.py("int")
        v = self._loader_named(it, self.value(it))
        if v.kind == V.LOADER:
            self.env.note_per_epoch()
        return self._item_of(v)

    @contextmanager
    def _comprehension(self, comp: cst.CompFor) -> Iterator[None]:
        """A comprehension's targets bound, for-clause by for-clause, to the items of what
        they iterate, while its element is evaluated: its names are its own (Python 3), and a
        rule may ask before the walk has bound them."""
        targets: Dict[str, Val] = {}
        self._comp_targets.append(targets)
        try:
            node: Optional[cst.CompFor] = comp
            while node is not None:
                for name, v in self.loop_targets(node.target, node.iter):
                    targets[name] = v
                node = node.inner_for_in
            yield
        finally:
            self._comp_targets.pop()

    def loop_targets(self, target: cst.BaseExpression, it: cst.BaseExpression) -> List[Tuple[str, Val]]:
        """The names a loop target binds and what each holds, part by part where the iterable
        says which part is what (`for i, (x, y) in enumerate(loader)`, `for o, m in zip(a, b)`);
        names inside other targets (`self.x`, `xs[i]`) are left out."""
        t = type(target)
        if t is cst.Name:
            return [(target.value, self.iter_item(it))]
        if t not in (cst.Tuple, cst.List) or any(type(el) is cst.StarredElement for el in target.elements):
            return []
        els = [el.value for el in target.elements]
        if type(it) is cst.Call and type(it.func) is cst.Name and not self.env.is_local(it.func.value):
            pos = [a.value for a in it.args if a.keyword is None and not a.star]
            if it.func.value == "enumerate" and len(els) == 2 and pos:
                return [*self._unpacked(els[0], V.py("int")), *self.loop_targets(els[1], pos[0])]
            if it.func.value == "zip" and len(els) == len(pos) == len(it.args):
                return [b for el, src in zip(els, pos) for b in self.loop_targets(el, src)]
        if type(it) is cst.Call and type(it.func) is cst.Attribute and it.func.attr.value == "items" \
                and not it.args and len(els) == 2:
            value = V.item_values(self.value(it.func.value))
            if value is not None:
                return [*self._unpacked(els[0], V.py("str")), *self._unpacked(els[1], value)]
        return self._unpacked(target, self.iter_item(it))

    def _unpacked(self, target: cst.BaseExpression, v: Val) -> List[Tuple[str, Val]]:
        """The names a target binds to `v`, unpacked as an assignment unpacks it."""
        t = type(target)
        if t is cst.Name:
            return [(target.value, v)]
        if t not in (cst.Tuple, cst.List) or any(type(el) is cst.StarredElement for el in target.elements):
            return []
        els = target.elements
        if v.elems is not None and len(v.elems) == len(els):
            return [b for el, item in zip(els, v.elems) for b in self._unpacked(el.value, item)]
        item = V.element_of(v)
        return [b for el in els for b in self._unpacked(el.value, item)]

    def _item_of(self, v: Val) -> Val:
        """`V.element_of`, and for an instance of a class that defines `__iter__`, what
        that yields (a loader wrapper: `def __iter__(self): while True: yield next(self._it)`)."""
        if v.kind == V.OBJECT and v.cls:
            it = self.env.method_return(v.cls, "__iter__")
            if it is not None and it.kind == V.ITER:
                return V.element_of(it)
        return V.element_of(v)

    def _loader_named(self, it: cst.BaseExpression, v: Val) -> Val:
        """`train_loader` of unknown origin, iterated (also through `tqdm(...)`): a DataLoader."""
        while v.kind == V.UNKNOWN and type(it) is cst.Call and it.args and (
            (type(it.func) is cst.Name and it.func.value in L.PASSTHROUGH) or self.env.qualname(it.func) in L.PASSTHROUGH
            or self.value(it.func) == V.PASSTHROUGH_VAL
        ):
            it = it.args[0].value
        if v.kind == V.UNKNOWN and type(it) in (cst.Name, cst.Attribute):
            name = it.value if type(it) is cst.Name else it.attr.value
            if name.endswith(L.LOADER_NAME_SUFFIXES) or name in L.LOADER_NAMES:
                return Val(V.LOADER, V.CPU)
        return v

    def tensor_args(self, call: cst.Call) -> List[Val]:
        out = []
        for a in call.args:
            v = self.value(a.value)
            if v.kind == V.TENSOR:
                out.append(v)
            elif v.kind == V.TENSORS:
                out.append(V.element_of(v))
        return out

    def _distribution_device(self, call: cst.Call) -> Optional[str]:
        """Where a `torch.distributions` object's tensors are: its tensor parameters' device;
        the CPU when every parameter is a Python number (torch makes them CPU tensors)."""
        vals = [self.value(a.value) for a in call.args if a.keyword is None or a.keyword.value != "validate_args"]
        ts = [v for v in vals if v.kind == V.TENSOR]
        if ts:
            return _device_of(ts)
        return V.CPU if vals and all(v.kind == V.PY and v.py in V.NUMBERS for v in vals) else None

    # ------------------------------------------------------------------ devices
    def device_of_arg(self, arg: Optional[cst.BaseExpression]) -> Tuple[bool, Optional[str]]:
        """(is it a device, which) for a `device=`/`.to()` argument."""
        if arg is None:
            return False, None
        s = string_value(arg)
        if s is not None:
            if s.startswith("cuda") or s == "gpu":
                return True, V.CUDA
            if s.split(":")[0] in ("cpu", "mps", "meta", "xpu"):
                return True, V.CPU
            return False, None
        if type(arg) is cst.IfExp:
            a = self.device_of_arg(arg.body)
            b = self.device_of_arg(arg.orelse)
            if V.CUDA in (a[1], b[1]):
                return True, V.CUDA
            return a[0] or b[0], a[1] if a[0] else b[1]
        if type(arg) is cst.Call:
            tn = self.env.torch_name(arg.func)
            if tn == "device":
                return self.device_of_arg(arg.args[0].value if arg.args else None)
            if tn in L.CUDA_DEVICES:
                return True, V.CUDA
        if type(arg) is cst.Integer:
            return True, V.CUDA  # .to(0): a CUDA ordinal
        tn = self.env.torch_name(arg)
        if tn is not None:
            return False, None  # torch.float16 and friends: a dtype, not a device
        if type(arg) is cst.Attribute and arg.attr.value == "device" and self.value(arg.value).kind in (V.NUMPY, V.PY):
            # an array's `.device` is the CPU; a Python value has none, so that path does not
            # run for it (Informer's scaler: `... .to(data.device) if torch.is_tensor(data)`)
            return True, V.CPU
        v = self.value(arg)
        if v.kind in (V.DEVICE, V.PY) and v.assumed and v.device == V.CPU:
            # `device="cpu"`, the default of what nothing in the project calls: its users pass
            # theirs (`parameters.bind_params`), a device not known here
            return True, None
        if v.kind == V.DEVICE:
            return True, v.device
        if v.kind in (V.TENSOR, V.TENSORS):
            # .to(other): other's device (a batch that may be a tensor or a container of them
            # is a tensor here: no container is a `.to` argument)
            return True, v.device
        if v.kind == V.PY and v.py == "str":
            return True, v.device  # a device string ("cuda" or "cpu", or either after a branch)
        if type(arg) in (cst.Name, cst.Attribute):
            name = arg.value if type(arg) is cst.Name else arg.attr.value
            if "device" in name.lower() or name in ("dev", "rank", "local_rank", "gpu"):
                return True, None
        return False, None

    def _dtype_class(self, e: Optional[cst.BaseExpression]) -> Optional[str]:
        if e is None:
            return None
        name = self.env.torch_name(e) or string_value(e)
        if name is None:
            return None
        if name in L.BOOL_DTYPES:
            return V.BOOL
        if name in L.INT_DTYPES:
            return V.INT
        return V.FLOAT

    def _factory_val(self, name: str, call: cst.Call) -> Val:
        dev_arg = kwarg(call, "device")
        if dev_arg is not None:
            _, device = self.device_of_arg(dev_arg)
        elif name.endswith("_like") and call.args:
            device = self.value(call.args[0].value).device
        elif name == "from_numpy":
            device = V.CPU
        elif name in ("bernoulli", "multinomial", "normal", "poisson") and self.tensor_args(call):
            device = _device_of(self.tensor_args(call))  # sampled on the input's device
        else:
            device = self.env.default_device
        pinned = is_true(kwarg(call, "pin_memory"))
        ndim = None
        empty = False
        dtype = self._dtype_class(kwarg(call, "dtype"))
        if name in ("zeros", "ones", "empty", "rand", "randn", "full"):
            pos = [a for a in call.args if a.keyword is None]
            if name == "full":
                pos = pos[:1]
            empty = _zero_in_size(call, [a.value for a in pos])
            if len(pos) == 1 and type(pos[0].value) in (cst.Tuple, cst.List):
                ndim = len(pos[0].value.elements)
            elif pos and all(type(a.value) in (cst.Integer, cst.Name, cst.Attribute, cst.BinaryOperation, cst.Call)
                             for a in pos):
                one = pos[0].value
                if len(pos) > 1 or type(one) is cst.Integer or self.value(one).py in ("int", "number"):
                    ndim = len(pos)  # (one argument: a size, not a shape like `(n,) + low.shape`)
            if len(pos) == 1 and type(pos[0].value) is cst.Attribute and pos[0].value.attr.value == "shape":
                ndim = None  # torch.zeros(x.shape): as many dims as x
        elif name in ("arange", "linspace", "logspace", "randperm"):
            ndim = 1
            if name in ("arange", "randperm") and dtype is None:
                floats = any(type(a.value) is cst.Float for a in call.args if a.keyword is None)
                dtype = None if floats else V.INT
        elif name == "eye":
            ndim = 2
        elif name in ("randint", "tril_indices", "triu_indices") and dtype is None:
            dtype = V.INT
        elif name in ("tensor", "as_tensor", "asarray") and call.args and call.args[0].keyword is None:
            data = call.args[0].value
            empty = type(data) in (cst.List, cst.Tuple) and not data.elements  # `torch.tensor([])`
            ndim = literal_ndim(data)
            if ndim is None and self.value(data) == V.py("shape"):
                ndim = 1  # `torch.tensor(p.shape)`: one number per dimension
            if dtype is None and type(data) in (cst.List, cst.Tuple) and data.elements and all(
                type(el.value) is cst.Integer for el in data.elements
            ):
                dtype = V.INT
            if dev_arg is None:  # no device=: the result stays where a tensor argument is
                d = self.value(data)
                if d.kind == V.TENSOR:
                    device = d.device
                    if name != "tensor":  # as_tensor(t) is t itself; tensor(t) is a fresh copy
                        pinned = d.pinned
                elif d.kind == V.UNKNOWN and name != "tensor":
                    pinned = None  # as_tensor(t) may return a pinned t itself
        return V.tensor(device, pinned=pinned, ndim=ndim, dtype=dtype, empty=empty)

    # ------------------------------------------------------------------ calls
    def _infer_call(self, call: cst.Call) -> Val:
        env = self.env
        func = call.func
        q = env.qualname(func)
        built = self._built_by_registry(call, q)
        if built is not None:
            return built
        if q is not None:
            return self._infer_qualified_call(q, call)
        if type(func) is cst.Attribute:
            if func.attr.value == "forward" and _is_bare_super(func.value) and env.cls is not None \
                    and env.library_base(env.cls.name, L.library_layer) is not None:
                return self._module_output(Val(V.MODULE), call)  # `super().forward(x.type(torch.float32))`
            recv = self.value(func.value)
            if V.class_key(recv):
                if func.attr.value == "apply":  # `GradReverse.apply(x)`: a custom autograd Function
                    made = self._function_applied(V.class_key(recv), call)
                    if made is not None:
                        return made
                made = env.method_return(V.class_key(recv), func.attr.value)
                if made is not None and made.kind == V.MODULE and made.cls == V.class_key(recv):
                    return made  # a module's classmethod constructor (`LanguageModel.from_pretrained(cfg)`; see call_val)
                recv = V.UNKNOWN_VAL  # `ERM.build(...)`: a class's other methods are not followed
            if recv.kind in (V.MODULE, V.OBJECT):
                sub = self._infer_attribute(func)
                if sub.kind == V.MODULE:  # `self.norm(self.lin(x))`: a submodule's output
                    return self._module_output(sub, call)
                if sub.kind == V.OBJECT and sub.cls == L.TRANSFORM:  # `self.transform(img)`
                    return self._transformed(call)
                if sub.kind == V.OBJECT and sub.cls == L.TOKENIZER:  # `self.tokenizer(text, return_tensors="pt")`
                    return _encoded("__call__", call)
                if sub.kind == V.OBJECT and sub.cls:  # `self.loss_scaler(loss, opt)`
                    return env.method_return(sub.cls, "__call__") or V.UNKNOWN_VAL
                made = V.class_key(sub) or self._held_class(func)
                if made:  # `self.infer_state_class()`, the class a class attribute names
                    return env.instance_of(made)
            return self._infer_method(recv, func.attr.value, call, func.value)
        if type(func) is cst.Name:
            name = func.value
            bound = env.lookup(name)
            if (bound.kind == V.UNKNOWN or bound == V.PASSTHROUGH_VAL) and not env.is_local(name):
                builtin = self._infer_builtin(name, call)
                if builtin is not None:
                    return builtin
            if bound == V.PASSTHROUGH_VAL and call.args:  # `progress = tqdm if main else iter`
                inner = call.args[0].value
                return self._loader_named(inner, self.value(inner))
            if name == "super" and not call.args and env.cls is not None \
                    and env.distribution_base(env.cls.name) is not None:
                return Val(V.DIST, py="validating")  # `super().log_prob(x)` in a distribution subclass
            if bound.kind == V.PY and bound.py == "typestr":  # `Tensor = torch.cuda.FloatTensor ...; Tensor(x)`
                return V.tensor(bound.device)
            called = self._instance_called(bound, call)
            if called is not None:
                return called
            if V.class_key(bound):  # `algorithm_class(...)`: an instance
                return env.instance_of(V.class_key(bound))
            is_module = env.defined_class(name)
            if is_module is not None:
                return self._instance_made(Val(V.MODULE if is_module else V.OBJECT, cls=name), call)
            if name in env.one_liners and bound == V.FUNCTION_VAL and self._may_replay(name):
                return self._inlined(name, call)
            if name in env.helpers and bound == V.FUNCTION_VAL and self._may_replay(name):
                v = self._replayed(name, env.helpers[name], call, None)
                if v is not None:
                    return v
            info = env.all_funcs.get(name)
            if info is not None and info.reyields is not None and bound == V.FUNCTION_VAL:
                # `cycle(self.dl)`: what this call passes, iterated
                pos = [a.value for a in call.args if a.keyword is None]
                items = pos[info.reyields] if len(pos) > info.reyields and not any(a.star for a in call.args) else None
                if items is not None:
                    return Val(V.ITER, elems=(V.element_of(self._loader_named(items, self.value(items))),))
            keys = [k for k in V.function_keys(bound) if k != name]
            if keys:  # a function a factory made, or a name holding one or another: what it returns
                return self._returned_by(keys)
            ret = env.func_returns.get(name)
            if ret is not None:
                if name not in env.all_funcs:
                    env.note_early_return(name, ret)  # the last walk's: `stale_reads`
                return ret
            if name not in env.all_funcs:
                env.note_forward_ref(name)  # a function defined further down: known next walk
            return V.UNKNOWN_VAL
        callee = self.value(func)
        made = V.class_key(callee)  # `get_class(name)(...)`, `ROI_HEADS_REGISTRY.get(name)(cfg)`
        if made:
            return env.instance_of(made)
        if V.function_keys(callee):  # `MODELS[name](cfg)`: what any function of the registry returns
            return self._returned_by(V.function_keys(callee))
        called = self._instance_called(callee, call)  # LightGlue's `ImagePreprocessor(**conf)(img)`
        return called if called is not None else V.UNKNOWN_VAL

    def _built_by_registry(self, call: cst.Call, q: Optional[str]) -> Optional[Val]:
        """`TASK_UTILS.build(cfg)` (`build_from_cfg(cfg, R)`): an instance of one of the
        classes registered in the registry; `R.get(name)`: one of those classes (calling it
        makes the instance). None where the name is no registry of the project."""
        found = built_through(call, q, self._registry_spelled)
        if found is None:
            return None
        spelled, gives_class = found
        registry = self.env.project.registry(spelled)
        if registry is None:
            return None
        made = V.built_by(*registry)
        return V.class_value(made.cls) if gives_class else made

    def _registry_spelled(self, e: cst.BaseExpression) -> Optional[str]:
        """How this file spells a name that may be a registry: its qualified name, or a name
        of the module itself (not a local); None for anything else and for a library's names."""
        q = self.env.qualname(e)
        if q is not None:
            return q if q.split(".", 1)[0] not in L.LIBRARY_ROOTS else None
        if type(e) is cst.Name and self.env.module_level(e.value):
            return e.value
        return None

    def _returned_by(self, keys) -> Val:
        """What calling any of these functions returns (by key: this file's, or another module's)."""
        out: Optional[Val] = None
        for key in keys:
            got = self.env.project.call_val(key) if "." in key else self.env.func_returns.get(key)
            got = self.env.resolve(got) if got is not None else V.UNKNOWN_VAL
            out = got if out is None else V.join(out, got)
        return out if out is not None else V.UNKNOWN_VAL

    def _instance_called(self, v: Val, call: cst.Call) -> Optional[Val]:
        """What calling the instance `v` returns: a module's output, a transform's or a
        tokenizer's result, another class's `__call__`; None when `v` is no instance."""
        if v.kind == V.MODULE:
            return self._module_output(v, call)
        if v.kind == V.UNKNOWN and v.device == V.CPU:
            return V.HOST_OBJECT  # `model.to("cpu")` of a model the project cannot name, then called
        if v.kind != V.OBJECT or not v.cls:
            return None
        if v.cls == L.TRANSFORM:
            return self._transformed(call)
        if v.cls == L.TOKENIZER:
            return _encoded("__call__", call)
        return self.env.method_return(v.cls, "__call__") or V.UNKNOWN_VAL

    def _infer_builtin(self, name: str, call: cst.Call) -> Optional[Val]:
        if name in ("max", "min", "sum", "abs", "round"):
            args = [self.value(a.value) for a in call.args if a.keyword is None]
            ts = self.tensor_args(call)
            if ts:
                return V.tensor(_device_of(ts), assumed=all(v.assumed for v in ts))
            if name == "sum" and args and args[0].kind in (V.TENSORS,):
                return V.tensor(args[0].device)
            if any(v.kind == V.UNKNOWN for v in args):
                return V.UNKNOWN_VAL  # sum() over unknown values is not a plain number
            if name == "sum" and args and args[0].kind == V.PY and args[0].py in (None, "list", "tuple", "dict", "set") \
                    and not args[0].elems and type(call.args[0].value) not in _LITERAL_CONTAINERS:
                return V.UNKNOWN_VAL  # `sum(losses.values())`: a container of values not known
            if args and all(v.kind == V.PY and v.py == "int" for v in args):
                return V.py("int")
            if args and all(v.kind == V.PY and v.py in V.NUMBERS for v in args):
                return V.py("number")
            return V.PY_VAL
        if name in ("next", "iter") or name in L.PASSTHROUGH:
            arg = call.args[0].value if call.args else None
            if arg is None:
                return V.UNKNOWN_VAL
            v = self.value(arg)
            if name == "iter":
                return self._loader_named(arg, v)
            if name == "next" and v.kind == V.LOADER and self.env.loop_depth:
                self.env.note_per_epoch()  # `batch = next(it)` in a loop over steps
            return V.element_of(v) if name == "next" else v
        if name in ("list", "tuple"):
            if call.args:
                v = self.value(call.args[0].value)
                if v.kind in (V.TENSORS, V.TENSOR):
                    return Val(V.TENSORS, v.device, dtype=v.dtype)
                if v.kind == V.UNKNOWN:
                    return V.UNKNOWN_VAL
            return V.py(name)
        if name == "zip" and len(call.args) == 1 and call.args[0].star == "*":
            # `zip(*loaders)`: a batch of each loader, as many as there are loaders
            item = self.iter_item(call.args[0].value)
            if item.kind != V.UNKNOWN:
                return Val(V.ITER, elems=(Val(V.PY, py="list", elems=(self._item_of(item),)),))
        if name in ("enumerate", "zip"):
            items = [self.iter_item(a.value) for a in call.args if a.keyword is None and not a.star]
            if name == "enumerate":
                items = [V.py("int")] + items[:1]
            return Val(V.ITER, elems=(Val(V.UNKNOWN, elems=tuple(items)),))
        if name == "dict" and call.args and all(a.keyword is not None or a.star == "**" for a in call.args):
            # `dict(recall=r, accuracy=a)`: its keywords' values, as a literal's
            return self._dict_of([a.value if a.keyword is not None else None for a in call.args])
        if name in L.PYTHON_BUILTINS:
            return V.py({"len": "int", "int": "int", "float": "float", "str": "str", "bool": "bool",
                         "repr": "str", "format": "str", "dict": "dict", "sorted": "list",
                         "range": "range", "all": "bool", "any": "bool", "isinstance": "bool",
                         "issubclass": "bool", "hasattr": "bool", "callable": "bool"}.get(name, ""))
        return None

    def _transformed(self, call: cst.Call) -> Val:
        """An image transform's output: a CPU tensor made from host data, a tensor on the
        device of a tensor, else not known."""
        v = self.value(call.args[0].value) if call.args and not call.args[0].star else V.UNKNOWN_VAL
        if v.kind in (V.NUMPY, V.PY) and v.py != "none":
            return V.tensor(V.CPU)
        return V.tensor(v.device) if v.kind == V.TENSOR else V.UNKNOWN_VAL

    def _module_output(self, module: Val, call: cst.Call) -> Val:
        """`model(x)`: tensors on x's device, else on the module's (a module known to be on
        CUDA computes there: its inputs were moved, by it or on a path the model missed)."""
        ts = self.tensor_args(call)
        device = module.device if module.device == V.CUDA else _device_of(ts) if ts else module.device
        if device == V.CPU and module.device is None and not ts:
            device = None
        kind = L.pml_kind(module.cls or "")
        if kind:  # pytorch-metric-learning: a loss's value, a miner's indices (pairs or triplets)
            if kind == "pair_miners":
                return Val(V.TENSORS, device, cls=L.PML_PAIRS)
            return Val(V.TENSORS, device) if kind == "triplet_miners" else V.tensor(device)
        if module.cls is not None:
            ret = self.env.method_return(module.cls, "forward")
            if ret is not None and ret.kind != V.TENSOR:
                if ret.kind == V.UNKNOWN and module.device == device == V.CPU:
                    return V.HOST_OBJECT  # whatever a module on the host computes from host inputs
                if ret.kind == V.TENSORS:
                    ret = ret.with_(device=device)
                if device == V.CUDA and ret.elems and ret.kind in (V.TENSORS, V.PY):
                    # `loss, acc = model(batch)`: each output of a module on the GPU is there,
                    # whatever device its forward was evaluated with (CPU batches that a
                    # DataParallel wrapper scatters to the GPUs, CSAIL's segmentation module)
                    ret = ret.with_(elems=tuple(e.with_(device=V.CUDA) if e.kind in (V.TENSOR, V.TENSORS) else e
                                                for e in ret.elems))
                return ret
        return V.tensor(device)

    def _infer_qualified_call(self, q: str, call: cst.Call) -> Val:
        if q in L.PASSTHROUGH and call.args and call.args[0].keyword is None and not call.args[0].star:
            # `iterator = tqdm(loader)` (a `with ... as` target too): iterated, its items are the
            # loader's, as `for x in tqdm(loader)` (`iter_item`)
            inner = call.args[0].value
            return self._loader_named(inner, self.value(inner))
        if q in L.TRACKER_WRITERS:
            return Val(V.OBJECT, cls=L.WRITER)
        if q in L.METRIC_LOADERS:
            return Val(V.OBJECT, cls=L.METRIC)
        if q in L.TO_TENSOR:
            return self._transformed(call)
        if q in L.TOKENIZE_FUNCTIONS:  # `open_clip.tokenize(text)`: token ids on the host
            return V.tensor(V.CPU, dtype=V.INT)
        module, _, last = q.rpartition(".")
        if module in L.TRANSFORM_MODULES and last[:1].isupper():  # `T.Compose([...])`, `T.ToTensor()`
            return Val(V.OBJECT, cls=L.TRANSFORM, py=L.NORMALIZES if q in L.NORMALIZERS else None)
        if q in L.SAME_DEVICE_FUNCTIONS:
            ts = self.tensor_args(call)
            return V.tensor(_device_of(ts)) if ts else V.UNKNOWN_VAL
        if q in L.RETURNS_ARGUMENTS:  # `model, optimizer = amp.initialize(model, optimizer)`
            pos = [a.value for a in call.args if a.keyword is None and not a.star]
            if q in L.PARTIALS and len(pos) != 1:
                return V.UNKNOWN_VAL  # (arguments bound by position: a call's would not bind as written)
            got = tuple(self.value(pos[i]) if i < len(pos) else V.UNKNOWN_VAL for i in L.RETURNS_ARGUMENTS[q])
            return got[0] if len(got) == 1 else Val(V.PY, py="tuple", elems=got)
        if q in L.PER_ITEM_APPLY:  # `gt, mask = multi_apply(self._target_single, samples)`
            return self._applied_per_item(call)
        if q in L.HOST_DECIDING_OPTIMIZERS:  # `optimizer = LARC(optimizer=optimizer)`
            return Val(V.OPTIM, cls=L.LARC)
        if L.pml_class(q):  # `criterion = losses.ArcFaceLoss(...)`: known by its class
            return Val(V.MODULE, cls=L.pml_class(q))
        if q in L.SCALER_CALLABLES:  # `loss_scaler = NativeScaler()`: a CUDA GradScaler inside
            return Val(V.OBJECT, V.CUDA, cls=L.NATIVE_SCALER)
        if q in L.BATCH_SAMPLERS:  # `for indices in BatchSampler(...)`: lists of Python ints
            return Val(V.ITER, elems=(Val(V.PY, py="list", elems=(V.py("int"),)),))
        if q.startswith("torch."):
            return self._infer_torch_call(q[6:], call)
        root = q.split(".", 1)[0]
        if root in L.NUMPY_MODULES:
            return self._numpy_call(q.split(".", 1)[1] if "." in q else "", call)
        if q in L.TIMING_NAMES or root in L.PYTHON_MODULES:
            return V.PY_VAL
        if q in L.PASSTHROUGH:
            return self.value(call.args[0].value) if call.args else V.UNKNOWN_VAL
        if q in L.PREPARE_OWNERS:
            return Val(V.OBJECT, cls=q)
        if q in L.ARG_PARSERS:
            return Val(V.OBJECT, cls=L.ARG_PARSER)
        if L.tokenizer_class(q) or "." in q and L.tokenizer_class(q.rsplit(".", 1)[0]) \
                and q.rsplit(".", 1)[1] in L.TOKENIZER_MAKERS:
            return Val(V.OBJECT, cls=L.TOKENIZER)  # `BertTokenizer.from_pretrained("bert-base-uncased")`
        if root in L.PRETRAINED_PACKAGES and q.count(".") >= 2 and q.rsplit(".", 1)[1] in L.TOKENIZER_MAKERS:
            cls = q.rsplit(".", 2)[1]  # `AutoModelForCausalLM.from_pretrained(...)`: a model
            return Val(V.MODULE if L.pretrained_model(cls) else V.OBJECT, cls=cls)
        last = q.rsplit(".", 1)[-1]
        if q in L.LOADERS or last.endswith("DataLoader"):
            return self._loader(call)
        helper = self.env.project.one_liner(q) if self._may_replay(q) else None
        if helper is not None:
            v = self._inlined_foreign(q, helper, call)
            if v.kind != V.UNKNOWN or self._made_of_parameters(q):
                return v  # (one made of its parameters: the callers' join says nothing of this call)
            # (it names what its own module defines, `return Rays(n)`: what the module says)
        got = self.env.project.call_val(q)
        if got is not None:
            return self._instance_made(self.env.resolve(got), call)
        if last == "apply":  # `AllReduce.apply(loss)`, the Function defined in another module
            made = self._function_applied(q[: -len(".apply")], call)
            if made is not None:
                return made
        is_module = self.env.defined_class(last)
        if is_module is not None:
            return Val(V.MODULE if is_module else V.OBJECT, cls=last)
        if root in L.LIBRARY_ROOTS:
            return V.UNKNOWN_VAL
        return ref(q)  # another module's function or class: the project resolves it

    def _applied_per_item(self, call: cst.Call) -> Val:
        """`multi_apply(f, xs)`: one list per value `f` returns (a tensor's list: tensors on
        its device), as `f`'s walked return says."""
        pos = [a.value for a in call.args if a.keyword is None and not a.star]
        if not pos:
            return V.UNKNOWN_VAL
        f = self.value(pos[0])
        got: Optional[Val] = None
        for key in V.methods_of(f):
            cls, _, m = key.rpartition(".")
            r = self.env.method_return(cls, m) if cls else None
            got = r if got is None else V.join(got, r) if r is not None else got
        if not V.methods_of(f) and V.function_keys(f):
            got = self._returned_by(V.function_keys(f))
        elif f == V.FUNCTION_VAL and type(pos[0]) is cst.Name:  # a function of this module
            got = self.env.func_returns.get(pos[0].value)
        if got is None or not got.elems:
            return V.UNKNOWN_VAL
        return Val(V.PY, py="tuple", elems=tuple(
            Val(V.TENSORS, e.device, dtype=e.dtype) if e.kind == V.TENSOR else Val(V.PY, py="list", elems=(e,))
            for e in got.elems))

    def _instance_made(self, v: Val, call: cst.Call) -> Val:
        """An instance a call of a project class made; a loader when the class derives from
        torch's DataLoader (YOLOP's `DataLoaderX(dataset, pin_memory=...)`)."""
        if v.kind == V.OBJECT and v.cls and "|" not in v.cls and self.env.library_base(v.cls, _is_torch_loader) is not None:
            return self._loader(call)
        return v

    def _function_applied(self, cls: str, call: cst.Call) -> Optional[Val]:
        """`F.apply(x, ...)` of a project class deriving from `torch.autograd.Function`: what
        its `forward` returns, or else tensors on the device of the tensors it is given
        (ijepa's `AllReduce.apply(loss)`, a CUDA kernel's wrapper); None for another class."""
        if "|" in cls or self.env.library_base(cls, _is_autograd_function) is None:
            return None
        got = self.env.method_return(cls, "forward")
        if got is not None and got.kind != V.UNKNOWN and not got.assumed:  # (not merely its parameters)
            return got
        ts = self.tensor_args(call)
        return V.tensor(_device_of(ts)) if ts else V.UNKNOWN_VAL

    def _infer_torch_call(self, t: str, call: cst.Call) -> Val:
        last = t.rsplit(".", 1)[-1]
        if t in L.FACTORIES:
            return self._factory_val(t, call)
        if t == "device":
            _, d = self.device_of_arg(call.args[0].value if call.args else None)
            return Val(V.DEVICE, d)
        if t in L.CUDA_DEVICES:
            return Val(V.DEVICE, V.CUDA)
        if t in L.EVENTS:
            return Val(V.EVENT)
        if t in L.STREAMS:
            return Val(V.STREAM)
        if t in L.LEGACY_CUDA_CTORS:
            return V.tensor(V.CUDA)
        if t in L.LEGACY_CTORS:
            dtype = V.INT if t in ("LongTensor", "IntTensor", "ShortTensor", "ByteTensor", "CharTensor") else (
                V.BOOL if t == "BoolTensor" else V.FLOAT)
            return V.tensor(self.env.default_device, dtype=dtype)
        if t == "utils.data.DataLoader" or t.endswith(".DataLoader"):
            return self._loader(call)
        if t in L.TENSOR_DATASETS:  # its items are its tensors' slices, on their device
            return Val(V.OBJECT, _device_of(self.tensor_args(call)), cls="torch.utils.data.TensorDataset")
        if t in L.AVERAGED_MODELS:  # a module: `ema(x)` runs the averaged copy
            _, d = self.device_of_arg(kwarg(call, "device"))
            return Val(V.MODULE, d, cls=L.AVERAGED_MODEL)
        if t.startswith("optim.") and last[:1].isupper():
            # `py` says whether the optimizer is fused ("fused", "unfused"; None: not a literal)
            fused = kwarg(call, "fused")
            literal = None if fused is None else fused.value if type(fused) is cst.Name else ""
            state = {None: "unfused", "False": "unfused", "True": "fused"}.get(literal)
            return Val(V.OPTIM, cls="torch." + t, py=state)
        if t in L.GRAD_SCALERS:
            return Val(V.OBJECT, self._scaler_device(t, call), cls=L.GRAD_SCALER)
        if t in L.TORCH_RETURNS_ARGUMENT:
            v = self.value(call.args[0].value) if call.args else V.UNKNOWN_VAL
            if t in L.TORCH_WRAPS_MODULE and v.kind == V.UNKNOWN:
                v = self.env.resolve(v)  # (a model a factory returns, when the project knows it)
                if v.kind == V.UNKNOWN:
                    return Val(V.MODULE, v.device)
            return v
        if t.startswith("nn.") and last[:1].isupper() and not t.startswith("nn.functional"):
            if last in ("Parameter", "Buffer"):
                ts = self.tensor_args(call)
                return V.tensor(_device_of(ts) if ts else None)
            # Modules are built on the CPU and moved later, often elsewhere: unknown unless
            # `device=` says. A ModuleDict's attributes are its submodules; a ModuleList's or a
            # Sequential's items, when they are of known classes, what iterating it gives.
            return Val(V.MODULE, self.device_of_arg(kwarg(call, "device"))[1],
                       cls="torch." + t if t in L.MODULE_DICTS else None,
                       elems=self._submodules(call) if t in L.MODULE_SEQUENCES else None)
        if t.startswith("distributions.") and last[:1].isupper():
            # `py` says "validating" when the constructor does not turn validation off
            va = kwarg(call, "validate_args")
            off = type(va) is cst.Name and va.value == "False" or va is not None and type(va) is not cst.Name
            return Val(V.DIST, self._distribution_device(call), py=None if off else "validating")
        if t in L.TORCH_NON_TENSOR or t.startswith(L.TORCH_NON_TENSOR_PREFIXES) or (
                "." in t and last.startswith(L.TORCH_ACCESSOR_PREFIXES)):
            return V.PY_VAL
        if t in L.TORCH_CPU_RESULTS:
            return V.tensor(V.CPU)
        pos = [a.value for a in call.args if a.keyword is None and not a.star]
        if last == "where" and len(call.args) == 1:
            return Val(V.TENSORS, _device_of(self.tensor_args(call)), dtype=V.INT)
        ts = self.tensor_args(call)
        dev_arg = kwarg(call, "device")
        if dev_arg is not None:
            device = self.device_of_arg(dev_arg)[1]
        elif ts:
            device = _device_of(ts)
        else:
            device = None  # `torch.tanh(x)` with `x` unknown: x's device, not the default
            # (a list that `cat`/`stack` join holds tensors, never host numbers: a list
            # filled with `.append` of values the model does not know is not host data)
            if pos and last not in _JOINING and all(self.value(p).kind == V.PY for p in pos):
                device = self.env.default_device
            elif pos and last in _JOINING and V.element_of(self.value(pos[0])) == V.HOST_OBJECT:
                device = V.CPU  # `torch.stack([r["pred"] for r in results])` of host data
        assumed = bool(ts) and all(v.assumed for v in ts)
        if last in L.MULTI_OUTPUT:
            if last in L.ELEMENTWISE_WITH_TENSOR and (
                len(pos) == 1 and kwarg(call, "dim") is None
                or len(pos) >= 2 and self.value(pos[1]).kind == V.TENSOR
                or kwarg(call, "other") is not None
            ):
                return V.tensor(device, assumed=assumed)
            if last in L.VALUES_INDICES:
                return _values_indices(device, None, assumed, ts[0].ndim if last in _SHAPE_KEEPING and ts else None)
            return Val(V.TENSORS, device, assumed=assumed)
        if last in _JOINING:
            dtypes = {v.dtype for v in ts}
            # a new tensor in the default allocator's (pageable) memory, even when its parts
            # were pinned (SupContrast's `torch.cat([images[0], images[1]])` of a pinned batch)
            return V.tensor(device, dtype=dtypes.pop() if len(dtypes) == 1 else None, assumed=assumed,
                            pinned=False if device == V.CPU else None)
        if last in L.BOOL_METHODS:
            dtype = V.BOOL
        elif last in L.INT_RESULTS:
            dtype = V.INT
        else:
            dtype = self._dtype_class(kwarg(call, "dtype"))
        return V.tensor(device, dtype=dtype, assumed=assumed)

    def _passed_through(self, m: str, call: cst.Call) -> Optional[Val]:
        """`metric_logger.log_every(loader, 10)` yields the loader's batches."""
        if m in L.PASSTHROUGH_METHODS and call.args:
            v = self.value(call.args[0].value)
            if v.kind == V.LOADER:
                return v
        return None

    def _infer_method(self, recv: Val, m: str, call: cst.Call, recv_node: cst.BaseExpression) -> Val:
        env = self.env
        k = recv.kind
        if m in L.NUMPY_ONLY_METHODS and k in (V.TENSOR, V.UNKNOWN):
            return Val(V.NUMPY)  # no tensor has the method: the receiver was an array
        if k == V.TENSOR:
            return self._tensor_method(recv, m, call)
        if k == V.TENSORS:
            if m in ("to", "cuda", "cpu"):
                if m == "to":
                    is_dev, dev = self.device_of_arg(kwarg(call, "device") or (call.args[0].value if call.args else None))
                    return recv.with_(device=dev if is_dev else recv.device, elems=None)
                return recv.with_(device=V.CPU if m == "cpu" else V.CUDA, elems=None)
            if m in ("values", "items", "keys"):
                return recv.with_(elems=None) if m == "values" else V.UNKNOWN_VAL
            if m in ("get", "pop"):
                return V.element_of(recv)
            return V.UNKNOWN_VAL
        if k == V.MODULE:
            if m in L.MODULE_SELF_RETURNING:
                out = recv.with_(device=self._module_device_after(recv, m, call))
                if m in ("eval", "train"):  # the mode: `model.eval()`, `model.train(False)`
                    off = m == "eval" or call.args and type(call.args[0].value) is cst.Name \
                        and call.args[0].value.value == "False"
                    out = out.with_(py="eval" if off else "train")
                return out
            if m in ("parameters", "buffers"):
                return Val(V.TENSORS, recv.device)
            if m in L.SUBMODULE_METHODS or (
                    (recv.cls or "")[6:] in L.MODULE_DICTS and m in ("keys", "items", "values")):
                # a module's names (strings) and submodules (a project class's own `items` is
                # asked below: only a ModuleDict's are known here); where the module lives not
                # known, neither is where a submodule's tensors are (`assumed`: a weight-init
                # loop runs in `__init__`, on the host, as often as an offload on the GPU)
                sub = Val(V.MODULE, recv.device, assumed=recv.device is None)
                item = V.py("str") if m == "keys" else sub if m in ("values", "modules", "children") else Val(
                    V.PY, py="tuple", elems=(V.py("str"), sub))
                return Val(V.PY, py="list", elems=(item,))
            if m in ("forward", "__call__"):
                return self._module_output(recv, call)
            generates = m in L.GENERATE_METHODS and self._generates(recv.cls)
            if recv.cls is not None:
                replayed = self._method_replayed(recv, m, call)
                if replayed is not None:
                    return replayed
                ret = env.method_return(recv.cls, m)
                if ret is not None and not (generates and ret.kind == V.UNKNOWN):
                    return ret
                if f"{recv.cls}.{m}" not in env.all_funcs and recv.cls in env.classes_by_name:
                    env.note_forward_ref((recv.cls, m))  # a method defined further down: known next walk
            if m in L.LIGHTNING_OPTIMIZER_METHODS and recv.cls and "|" not in recv.cls \
                    and env.library_base(recv.cls, L.lightning_module_base) is not None:
                return Val(V.OPTIM)  # `self.optimizers()` of a LightningModule
            if generates and not is_true(kwarg(call, "return_dict_in_generate")):
                # `model.generate(input_ids, ...)`: token ids where the inputs are
                ts = self.tensor_args(call)
                return V.tensor(_device_of(ts) if ts else recv.device, dtype=V.INT)
            return V.UNKNOWN_VAL
        if k == V.OBJECT:
            if recv.cls in L.PREPARE_OWNERS and m in L.PREPARE_METHODS:
                return self._prepared(call)
            if recv.cls in L.PREPARE_OWNERS and m in L.COLLECTIVE_METHODS:  # gathered onto this device
                return self.value(call.args[0].value) if call.args and not call.args[0].star else V.UNKNOWN_VAL
            if recv.cls == L.TOKENIZER:
                return _encoded(m, call)
            if recv.cls == L.ARG_PARSER:
                if m in L.ARG_GROUP_METHODS:
                    return recv  # a group's options go to the parser's namespace
                if m in L.ARG_PARSE_METHODS:
                    ns = Val(V.OBJECT, cls=L.ARG_NAMESPACE)
                    return ns if m != "parse_known_args" else Val(V.PY, py="tuple", elems=(ns, V.py("list")))
            if recv.cls is not None:
                replayed = self._method_replayed(recv, m, call)
                if replayed is not None:
                    return replayed
                ret = env.method_return(recv.cls, m)
                if ret is not None and not (ret.kind == V.ITER and m in L.PASSTHROUGH_METHODS
                                            and all(e.kind == V.UNKNOWN for e in ret.elems or ())):
                    return ret
                if f"{recv.cls}.{m}" not in env.all_funcs and recv.cls in env.classes_by_name:
                    env.note_forward_ref((recv.cls, m))  # a method defined further down: known next walk
                if m in L.MODULE_SELF_RETURNING and f"{recv.cls}.{m}" not in env.all_funcs:
                    # `get_fad(cfg).to(device)`: an object whose class takes `.to()` from a
                    # library base (a torchmetrics `Metric` is a module torch does not name)
                    # is that object still, as the first walk's `ref().to()` said
                    return recv
            # a logging wrapper of the project's own (BLIP's `MetricLogger.log_every`, a
            # generator that yields its iterable's items): what the loader yields
            passed = self._passed_through(m, call)
            return passed if passed is not None else V.UNKNOWN_VAL
        if k == V.NUMPY:
            if m in ("item", "tolist"):
                return V.py("number") if m == "item" else V.PY_VAL
            if m in L.NUMPY_KEEP_METHODS:
                return recv
            pos = [a for a in call.args if a.keyword is None]
            if m in L.NUMPY_ARRAY_METHODS or m in L.NUMPY_SAMPLERS and (
                    len(pos) >= L.NUMPY_SAMPLERS[m] or kwarg(call, "size") is not None):
                return Val(V.NUMPY, ndim=1)
            return Val(V.NUMPY)
        if k == V.DIST:
            if m in ("sample", "rsample", "log_prob", "entropy", "cdf", "icdf"):
                return V.tensor(recv.device)
            return V.UNKNOWN_VAL
        if k == V.LOADER:
            if m in ("next", "__next__") and not call.args:  # `it.next()`, old DataLoader iterators' `next(it)`
                if env.loop_depth:
                    env.note_per_epoch()
                return V.element_of(recv)
            return V.UNKNOWN_VAL
        passed = self._passed_through(m, call)
        if passed is not None:
            return passed
        if k == V.UNKNOWN and m in L.MODULE_ONLY_METHODS and not ref_target(recv):
            return self._infer_method(Val(V.MODULE, recv.device), m, call, recv_node)  # only a module has them
        if k == V.UNKNOWN and m == "eval" and not call.args and not ref_target(recv):
            return Val(V.MODULE, py="eval")  # only modules switch to eval mode (tensors have no `eval`)
        if k == V.UNKNOWN and ref_target(recv) and m in L.MODULE_SELF_RETURNING:
            # `make_model().cuda()`: what the call returns, moved; the linker resolves it
            return recv.with_(device=self._module_device_after(recv, m, call))
        if k == V.UNKNOWN:
            if m in ("cpu", "numpy") or m == "to" and self._module_device_after(recv, m, call) == V.CPU:
                # whatever it was, the result of `.cpu()` or `.to("cpu")` lives on the host (a module's too)
                return V.tensor(V.CPU) if m != "numpy" else Val(V.NUMPY)
            if m in ("item", "tolist") and not call.args:  # whatever it was: a plain value
                return V.py("number") if m == "item" else V.PY_VAL
            if m in L.TENSOR_ONLY_METHODS:
                return V.tensor(recv.device, dtype=V.INT if m in ("argmax", "argmin") else None)
            return V.HOST_OBJECT if recv.device == V.CPU else V.UNKNOWN_VAL
        if k == V.PY:
            if V.is_dict_of(recv) and m in ("values", "get", "pop"):
                return Val(V.PY, py="list", elems=recv.elems) if m == "values" else recv.elems[0]
            if m in ("item", "items", "keys", "values", "format", "join", "split", "strip", "lower",
                     "upper", "copy", "startswith", "endswith", "replace"):
                return V.PY_VAL
        return V.UNKNOWN_VAL

    def _tensor_method(self, recv: Val, m: str, call: cst.Call) -> Val:
        if m in L.NOT_TENSOR_METHODS or m not in L.TENSOR_METHODS and not m.startswith("_"):
            # the receiver was no tensor after all (`proposals[0].has("scores")`: detectron2's
            # Instances): what it gives is not known
            return V.UNKNOWN_VAL
        # `lengths.max()`: a method that Python numbers and containers lack is evidence of a tensor
        assumed = recv.assumed and m in L.CONTAINER_METHODS
        if recv.device is None and m not in L.DEVICE_SETTING_METHODS:
            # `self.a.mm(edge_h)`: a parameter (wherever the module is) with the input's GPU
            # tensors computes there (a CPU argument may be a 0-d scalar: it tells nothing)
            ts = self.tensor_args(call)
            device = _device_of(ts) if ts else None
            if device in (V.CUDA, V.EITHER):
                recv = recv.with_(device=device)
        if m == "cuda":
            return recv.with_(device=V.CUDA, pinned=None, assumed=assumed)
        if m == "cpu":
            return recv.with_(device=V.CPU, pinned=None, assumed=assumed)
        if m in ("to", "type"):
            arg = kwarg(call, "device")
            if arg is None and call.args and call.args[0].keyword is None:
                arg = call.args[0].value
            is_dev, dev = self.device_of_arg(arg) if m == "to" else (False, None)
            dtype = self._dtype_class(kwarg(call, "dtype"))
            for a in call.args:
                if a.keyword is None and dtype is None:
                    dtype = self._dtype_class(a.value) if self.env.torch_name(a.value) else None
            if m == "type":
                if not call.args:  # "torch.cuda.FloatTensor": names the device too
                    return Val(V.PY, recv.device, py="typestr")
                # `.type(torch.cuda.FloatTensor)`, `.type(other.type())`, `.type("torch.cuda...")`
                s = string_value(arg) if arg is not None else None
                t = self.value(arg) if arg is not None and s is None else V.UNKNOWN_VAL
                if s is not None and s.startswith("torch."):
                    is_dev, dev = True, V.CUDA if s.startswith("torch.cuda.") else V.CPU
                elif t.kind == V.PY and t.py == "typestr":
                    is_dev, dev = True, t.device
                elif t.kind == V.UNKNOWN and arg is not None and self.env.torch_name(arg) is None:
                    # `.type(dtype)` of a parameter: a type that may name either device
                    # (YOLOX passes `xin[0].type()`, "torch.cuda.FloatTensor" in a GPU run)
                    is_dev, dev = True, None
            out = recv.with_(assumed=assumed)
            if is_dev:
                out = out.with_(device=dev, pinned=None)
            if dtype is not None:
                out = out.with_(dtype=dtype)
            return out
        if m == "type_as":
            other = self.value(call.args[0].value) if call.args else V.UNKNOWN_VAL
            return V.tensor(other.device if other.kind == V.TENSOR else recv.device,
                            dtype=other.dtype if other.kind == V.TENSOR else None)
        if m in ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"):
            pos = [a.value for a in call.args if a.keyword is None]
            if m == "new_tensor":
                empty = bool(pos) and type(pos[0]) in (cst.List, cst.Tuple) and not pos[0].elements
            else:
                empty = _zero_in_size(call, pos[:1] if m == "new_full" else pos)
            return V.tensor(recv.device, empty=empty)
        if m == "numpy":
            return Val(V.NUMPY)
        if m in ("item", "tolist", "equal", "allclose", "is_nonzero", "is_same_size") or m in L.HOST_METHODS:
            if m in ("size", "stride"):
                return V.py("int") if call.args else V.py("shape")
            if m == "item":
                return V.py("number")
            return V.py("int") if m in ("dim", "numel", "nelement", "ndimension") else V.PY_VAL
        if m == "pin_memory":
            return recv.with_(device=V.CPU, pinned=True, assumed=assumed)
        # a cast (`.long()`, `.bool()`) keeps every element, and so an empty tensor's emptiness
        empty = recv.empty and m in _CASTS
        if m in L.BOOL_METHODS:
            return V.tensor(recv.device, mask=True, assumed=assumed, empty=empty)
        if m in L.INT_METHODS:
            if m == "nonzero" and is_true(kwarg(call, "as_tuple")):
                return Val(V.TENSORS, recv.device, dtype=V.INT)
            return V.tensor(recv.device, dtype=V.INT, assumed=assumed, empty=empty)
        if m in ("unique", "unique_consecutive") and not any(
                a.keyword is not None and a.keyword.value in ("return_inverse", "return_counts") for a in call.args):
            return V.tensor(recv.device, dtype=recv.dtype, assumed=assumed)  # one tensor, without extras
        if m in L.MULTI_OUTPUT_METHODS or (m in ("max", "min") and (call.args or kwarg(call, "dim") is not None)):
            if m in ("max", "min") and call.args and self.value(call.args[0].value).kind == V.TENSOR:
                return V.tensor(recv.device, assumed=assumed)  # x.max(other): elementwise
            if m in ("sort", "unique", "split", "chunk", "unbind", "tensor_split") and m not in L.VALUES_INDICES:
                return Val(V.TENSORS, recv.device, dtype=recv.dtype, assumed=assumed)
            if m in L.VALUES_INDICES:  # (values, indices): `x.topk(k)[1]` is an int index
                return _values_indices(recv.device, recv.dtype, assumed, recv.ndim if m in _SHAPE_KEEPING else None)
            return Val(V.TENSORS, recv.device, assumed=assumed)
        if m in L.FLOAT_METHODS:
            return V.tensor(recv.device, ndim=recv.ndim, dtype=V.FLOAT, assumed=assumed, empty=empty)
        if m in L.DTYPE_PRESERVING_METHODS:
            keep_pin = m in ("clone", "detach", "contiguous")
            return recv.with_(pinned=recv.pinned if keep_pin else None,
                              ndim=recv.ndim if keep_pin else None, assumed=assumed, elems=None)
        return V.tensor(recv.device, assumed=assumed)

    def _submodules(self, call: cst.Call) -> Optional[Tuple[Val, ...]]:
        """The item of `nn.ModuleList([Block(c) for ...])` or `nn.Sequential(A(), B())` (joined),
        when every item is a module of a known class."""
        items = []
        for a in call.args:
            if a.keyword is not None or a.star == "**":
                return None
            v = self.value(a.value)
            items.append(V.element_of(v) if a.star == "*" or v.kind == V.PY and v.elems else v)
        if not items or not all(v.kind == V.MODULE and v.cls for v in items):
            return None
        out = items[0]
        for v in items[1:]:
            out = V.join(out, v)
        return (out,) if out.kind == V.MODULE and out.cls else None

    def _numpy_call(self, name: str, call: cst.Call) -> Val:
        """A NumPy call; `ndim` is set where it is surely an array (not a NumPy scalar)."""
        pos = [a.value for a in call.args if a.keyword is None]
        if name in L.NUMPY_ARRAY_FUNCTIONS:
            return Val(V.NUMPY, ndim=1)
        if name in ("array", "asarray") and pos:
            if type(pos[0]) in (cst.List, cst.ListComp):
                return Val(V.NUMPY, ndim=1)
            return self.value(pos[0]) if self.value(pos[0]).kind == V.NUMPY else Val(V.NUMPY)
        if name in ("where", "nonzero") and len(call.args) == 1:
            return Val(V.NUMPY, ndim=1)
        sampler = name.rsplit(".", 1)[-1]
        if name.startswith("random.") and sampler in L.NUMPY_SAMPLERS and (
                len(pos) >= L.NUMPY_SAMPLERS[sampler] or kwarg(call, "size") is not None):
            return Val(V.NUMPY, ndim=1)
        return Val(V.NUMPY)

    def _inlined(self, name: str, call: cst.Call) -> Val:
        """`def loss(p, t): return (p - t).abs().mean()` called here: its result from this
        call's arguments (not the join over every caller), in the function's own scope."""
        params, expr = self.env.one_liners[name]
        if any(a.star for a in call.args):
            return self.env.func_returns.get(name, V.UNKNOWN_VAL)
        return self._infer_in_scope(name, HelperBody(params, returns=[expr]), call, None)

    def _inlined_foreign(self, q: str, helper, call: cst.Call) -> Val:
        """Another module's helper (`facts.OneLiner`) called here: inferred from this call's
        arguments, with that module's imports and none of this file's names."""
        if any(a.star for a in call.args):
            return V.UNKNOWN_VAL
        body = self._foreign_helpers.get(q)
        if body is None:
            body = _foreign_body(helper)
            if body is None:
                return V.UNKNOWN_VAL
            self._foreign_helpers[q] = body
        if helper.whole:
            v = self._replayed(q, body, call, helper.aliases)
            return v if v is not None else V.UNKNOWN_VAL
        return self._infer_in_scope(q, body, call, helper.aliases)

    def _made_of_parameters(self, q: str) -> bool:
        """Another module's helper, replayed here, every return of which is made of its
        parameters (`HelperBody.from_parameters`)."""
        body = self._foreign_helpers.get(q)
        return body is not None and body.from_parameters

    def _method_replayed(self, recv: Val, m: str, call: cst.Call) -> Optional[Val]:
        """`obj.m(...)` of a method this file's class (or another module's) defines, inferred
        from this call's arguments with `self` bound to `obj`; None where that tells nothing
        more than the method's walked return."""
        key = f"{recv.cls}.{m}"
        env = self.env
        if "|" in recv.cls or not self._may_replay(key) or any(a.star for a in call.args):
            return None
        if recv.cls in env.classes_by_name:
            if key in env.one_liners:
                params, expr = env.one_liners[key]
                v = self._infer_in_scope(key, HelperBody(params, returns=[expr]), call, None, recv)
                return v if v.kind != V.UNKNOWN else None
            if key in env.helpers:
                return self._replayed(key, env.helpers[key], call, None, recv)
            return None
        helper = env.project.one_liner(key)
        if helper is None:
            return None
        body = self._foreign_helpers.get(key)
        if body is None:
            body = _foreign_body(helper)
            if body is None:
                return None
            self._foreign_helpers[key] = body
        if helper.whole:
            return self._replayed(key, body, call, helper.aliases, recv)
        v = self._infer_in_scope(key, body, call, helper.aliases, recv)
        return v if v.kind != V.UNKNOWN else None

    def _replayed(self, key: str, body: HelperBody, call: cst.Call, foreign_aliases,
                  bound: Optional[Val] = None) -> Optional[Val]:
        """A straight-line helper replayed for this call (`helpers`), when that tells more
        than its walked return: a tensor (or tensors) on a known device, or an instance of a
        known class. Anything else is None: the replay does not follow `res.append(t)`, so a
        list it returns may well hold tensors."""
        if any(a.star for a in call.args):
            return None
        v = self._infer_in_scope(key, body, call, foreign_aliases, bound)
        if body.from_parameters or v.kind in (V.TENSOR, V.TENSORS) and v.device is not None:
            return v
        if v.kind in (V.MODULE, V.OBJECT, V.OPTIM) and v.cls:  # `def load_model(h): ...; return model`
            return v
        if (v.kind == V.PY and v.py == "tuple" or v.kind == V.UNKNOWN) and v.elems and any(  # `return model, opt, lr, it`
                e.kind in (V.MODULE, V.OBJECT, V.OPTIM) and e.cls or e.kind == V.TENSOR and e.device
                for e in v.elems):
            return v
        return None

    def _may_replay(self, key: str) -> bool:
        """A helper's body may be evaluated for this call: not one being inlined (recursion),
        and not deeper than `MAX_REPLAY_DEPTH` helpers."""
        return key not in self._inlining and len(self._inlining) < MAX_REPLAY_DEPTH

    def _infer_in_scope(self, key: str, body: HelperBody, call: cst.Call, foreign_aliases,
                        bound: Optional[Val] = None) -> Val:
        """What `body` returns with its parameters bound to this call's argument values (and,
        for a method, its first to the receiver, `bound`)."""
        params = body.params
        given: dict = {}
        if bound is not None and params:
            given[params[0]] = bound
        for p, a in zip(params[bound is not None:], [a for a in call.args if a.keyword is None]):
            given[p] = self.value(a.value)
        for a in call.args:
            if a.keyword is not None and a.keyword.value in params:
                given[a.keyword.value] = self.value(a.value)
        args = tuple(given.get(p, V.UNKNOWN_VAL) for p in params)
        literals = self._compared_literals(body, call, bound is not None)
        if foreign_aliases is None:
            memo, memo_key = self._returns_here, (key, args, literals, frozenset(self._inlining))
        else:  # (what the walk's place may still tell another module's body)
            env = self.env
            memo, memo_key = self._returns_foreign, (key, args, literals, frozenset(self._inlining), env.default_device,
                                                     env.uses_xla, env.cls.name if env.cls is not None else None,
                                                     frozenset(env.device_options.items()))
        got = memo.get(memo_key)
        if got is None:
            got = self._evaluated_body(key, body, args, foreign_aliases, bound.cls if bound is not None else None,
                                       dict(literals))
            if len(memo) < MAX_REPLAYED:
                memo[memo_key] = got
        return got

    def _compared_literals(self, body: HelperBody, call: cst.Call, method: bool) -> Tuple[Tuple[str, object], ...]:
        """(parameter, the literal this call gives it) of each parameter a return's guard
        compares (`return_tensors == "pt"`): what the call passes, else its default."""
        compared = sorted({name for g in body.guards for name, t, _ in g if type(t) is cst.Comparison})
        if not compared:
            return ()
        params = body.params[1:] if method else body.params
        passed = dict(zip(params, [a.value for a in call.args if a.keyword is None]))
        passed.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None)
        out = []
        for name in compared:
            e = passed.get(name)
            if e is None:
                out.append((name, body.defaults.get(name, NOT_LITERAL)))
            elif type(e) is cst.Name and e.value == "None":
                out.append((name, None))
            else:
                c = self.constant(e)
                out.append((name, NOT_LITERAL if c is None else c))
        return tuple(out)

    def _evaluated_body(self, key: str, body: HelperBody, args: Tuple[Val, ...], foreign_aliases,
                        owner: Optional[str] = None, literals: Optional[Dict[str, object]] = None) -> Val:
        scope = FuncInfo(key, key, None)
        for p, v in zip(body.params, args):
            scope.scope[p] = Binding(v)
        for names, _, _ in body.steps:  # its locals shadow the module's names from the start
            for n in names:
                scope.scope.setdefault(n, Binding(V.UNKNOWN_VAL))
        self._inlining.add(key)
        try:
            with self.env.replaying(scope, foreign_aliases, owner), self.another_scope():
                for names, expr, cond in body.steps:
                    v = self.value(expr) if expr is not None else V.UNKNOWN_VAL
                    parts = v.elems if len(names) > 1 and v.elems and len(v.elems) == len(names) else None
                    for i, n in enumerate(names):
                        got = parts[i] if parts is not None else v if len(names) == 1 else \
                            V.element_of(v) if v.kind in (V.TENSOR, V.TENSORS) else V.UNKNOWN_VAL
                        if cond and expr is not None:  # under a branch or loop: either value
                            got = V.join(scope.scope[n].val, got)
                        scope.scope[n] = Binding(got)
                    self.memo = {}
                out: Optional[Val] = None
                rebound = {n for names, _, _ in body.steps for n in names}
                for i, r in enumerate(body.returns):
                    if any(name not in rebound and self._guard_holds(test, args[body.params.index(name)],
                                                                     (literals or {}).get(name, NOT_LITERAL)) is (not holds)
                           for name, test, holds in body.guards_of(i)):
                        continue  # a path these arguments never take (`return x` where x is no tensor)
                    v = self.value(r)
                    out = v if out is None else V.join(out, v)
                return out if out is not None else V.UNKNOWN_VAL
        finally:
            self._inlining.discard(key)

    def _guard_holds(self, test: cst.BaseExpression, given: Val, lit: object) -> Optional[bool]:
        """Whether a return's guard on a parameter holds of what a call gives it: a type test
        of its value, a comparison of its literal; None where they do not tell."""
        if type(test) is cst.Comparison:
            return value_test_holds(test, lit)
        return type_test_holds(self.env, given, test)

    def _generates(self, cls: Optional[str]) -> bool:
        """A model class with transformers' `generate`: a project class derived from a class of
        a pretrained package, or such a class itself (`from_pretrained`), named as one that
        generates (`LlamaForCausalLM`)."""
        if not cls or "|" in cls:
            return False
        env = self.env
        if env.defined_class(cls) is not None or env.project.class_facts(cls) is not None:
            return env.library_base(cls, _pretrained_package) is not None
        return cls.endswith(L.GENERATE_CLASS_SUFFIXES)

    def _loader(self, call: cst.Call) -> Val:
        """A DataLoader: CPU batches (pinned with `pin_memory=True`), unless its dataset's
        items are already on the GPU (a TensorDataset of CUDA tensors, a Dataset whose
        `__getitem__` returns them)."""
        ds = kwarg(call, "dataset") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
        device = self.dataset_device(ds) if ds is not None else None
        if device is not None and device != V.CPU:
            return Val(V.LOADER, device)
        known, pin = self.keyword(call, "pin_memory")
        return Val(V.LOADER, V.CPU, pinned=is_true(pin) if known else None)

    def keyword(self, call: cst.Call, name: str) -> Tuple[bool, Optional[cst.BaseExpression]]:
        """(known, value) of a keyword argument, also when it comes in `**kw` of a dict this
        scope built (`kw = dict(num_workers=4, pin_memory=True)`); not known when some `**`
        is a dict of unknown keys. (known, None): the call does not pass it."""
        got = kwarg(call, name)
        if got is not None:
            return True, got
        for a in call.args:
            if a.star != "**":
                continue
            d = self.env.assigned(a.value.value) if type(a.value) is cst.Name else None
            if (type(d) is cst.Call and type(d.func) is cst.Name and d.func.value == "dict"
                    and all(x.keyword is not None for x in d.args)):
                got = kwarg(d, name)
            elif type(d) is cst.Dict and all(type(el) is cst.DictElement for el in d.elements):
                got = next((el.value for el in d.elements if string_value(el.key) == name), None)
            else:
                return False, None
            if got is not None:
                return True, got
        return True, None

    def dataset_device(self, e: cst.BaseExpression) -> Optional[str]:
        """Where a dataset's items live, where known."""
        v = self.value(e)
        if v.kind != V.OBJECT:
            return None
        if v.device is not None:
            return v.device
        item = self.env.method_return(v.cls, "__getitem__") if v.cls else None
        if item is not None and item.kind in (V.TENSOR, V.TENSORS):
            return item.device
        return None

    def constant(self, e: cst.BaseExpression, depth: int = 0) -> object:
        """The value of an expression made of literals, names with one binding (followed to
        what they were assigned), `==` / `!=` between two such values and `not`: `None`
        (the literal) is returned as None too, so only a str, bool or number says anything."""
        if depth > 8:
            return None
        t = type(e)
        if t is cst.Name:
            if e.value in ("True", "False"):
                return e.value == "True"
            o = self.env.origin(e)
            return None if o is None or o is e else self.constant(o, depth + 1)
        if t in (cst.SimpleString, cst.ConcatenatedString):
            return string_value(e)
        if t is cst.Integer or t is cst.Float:
            return e.evaluated_value
        if t is cst.UnaryOperation and type(e.operator) is cst.Not:
            v = self.constant(e.expression, depth + 1)
            return None if v is None else not v
        if t is cst.Comparison and len(e.comparisons) == 1 and \
                type(e.comparisons[0].operator) in (cst.Equal, cst.NotEqual):
            a, b = self.constant(e.left, depth + 1), self.constant(e.comparisons[0].comparator, depth + 1)
            if a is None or b is None:
                return None
            return (a == b) == (type(e.comparisons[0].operator) is cst.Equal)
        return None

    def dataset_item(self, e: cst.BaseExpression) -> Val:
        """The value of one item of a dataset: a list's element (`["a cat", "a dog"]`: a
        string), what a Dataset class's `__getitem__` returns; unknown where not known."""
        v = self.value(e)
        if v.kind == V.PY and v.py in ("list", "tuple"):
            return V.element_of(v)
        if v.kind == V.OBJECT and v.cls:
            return self.env.method_return(v.cls, "__getitem__") or V.UNKNOWN_VAL
        return V.UNKNOWN_VAL

    def _scaler_device(self, t: str, call: cst.Call) -> Optional[str]:
        """Where a GradScaler keeps its scale: the CPU when disabled or built for the CPU."""
        enabled = kwarg(call, "enabled")
        if enabled is not None and self.constant(enabled) is False:
            return V.CPU  # `enabled=False`, or `enabled=(dtype == "float16")` with `dtype = "bfloat16"`
        if t.startswith("cuda."):
            return V.CUDA
        device = kwarg(call, "device") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
        if device is None:
            return V.CUDA  # torch.amp.GradScaler() defaults to "cuda"
        is_dev, d = self.device_of_arg(device)
        return d if is_dev and d is not None else V.CUDA

    def _prepared(self, call: cst.Call) -> Val:
        """`accelerator.prepare(model, opt, loader)`: each argument on the device."""
        out = []
        for a in call.args:
            v = self.value(a.value)
            if v.kind == V.LOADER:
                out.append(v.with_(device=V.CUDA, pinned=None))
            elif v.kind in (V.MODULE, V.TENSOR, V.TENSORS):
                out.append(v.with_(device=V.CUDA))
            else:
                out.append(v)
        if len(out) == 1:
            return out[0]
        return Val(V.UNKNOWN, elems=tuple(out))

    def _module_device_after(self, recv: Val, m: str, call: cst.Call) -> Optional[str]:
        if m == "cuda":
            return V.CUDA
        if m == "cpu":
            return V.CPU
        if m == "to":
            arg = kwarg(call, "device") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
            is_dev, dev = self.device_of_arg(arg)
            if is_dev:
                return dev
        return recv.device


# (values, indices) of the input's shape: `_, order = torch.sort(scores)` is as deep as `scores`
_SHAPE_KEEPING = frozenset({"sort", "topk", "cummax", "cummin"})


def _zero_in_size(call: cst.Call, sizes: List[cst.BaseExpression]) -> bool:
    """A factory's size (`sizes`, its positional size arguments, or `size=`) has a literal 0
    among its dimensions: `zeros(0)`, `empty(0, 4)`, `zeros([0])`, `new_zeros((0, 4))`. A
    0-d size (`zeros([])`) holds one element, and a size from a variable may be anything."""
    given = kwarg(call, "size")
    if given is not None:
        sizes = [given]
    if len(sizes) == 1 and type(sizes[0]) in (cst.Tuple, cst.List):
        sizes = [el.value for el in sizes[0].elements]
    return any(type(d) is cst.Integer and int(d.value, 0) == 0 for d in sizes)


# Methods that change a tensor's dtype and nothing else
_CASTS = L.FLOAT_METHODS | frozenset(("long", "int", "short", "bool"))


def _values_indices(device: Optional[str], dtype: Optional[str], assumed: bool, ndim: Optional[int] = None) -> Val:
    return Val(V.TENSORS, device, assumed=assumed,
               elems=(V.tensor(device, dtype=dtype, assumed=assumed, ndim=ndim),
                      V.tensor(device, dtype=V.INT, assumed=assumed, ndim=ndim)))


def _device_of(vals: List[Val]) -> Optional[str]:
    devs = {v.device for v in vals}
    if not devs:
        return None
    if V.CUDA in devs and (V.CPU in devs or V.EITHER in devs):
        return V.EITHER
    if V.CUDA in devs or V.EITHER in devs:
        return V.CUDA if V.CUDA in devs else V.EITHER
    if None in devs:
        return None
    return V.CPU


def _encoded(m: str, call: cst.Call) -> Val:
    """What a tokenizer's method gives: CPU tensors with `return_tensors="pt"` (`encode`: one
    tensor), else Python values (lists of ids, a string)."""
    if m not in L.TOKENIZER_ENCODE:
        return V.PY_VAL
    if string_value(kwarg(call, "return_tensors")) != "pt":
        # lists of ids (`encode`), or an encoding whose fields are lists (`.input_ids`)
        return V.py("list") if m == "encode" else Val(V.PY, py="dict", cls=L.ENCODING)
    if m == "encode":
        return V.tensor(V.CPU, dtype=V.INT)
    return Val(V.TENSORS, V.CPU, cls=L.ENCODING)


def _pretrained_package(base: str) -> bool:
    return base.split(".", 1)[0] in L.PRETRAINED_PACKAGES


def _is_bare_super(e: cst.BaseExpression) -> bool:
    """`super()`, without arguments."""
    return type(e) is cst.Call and type(e.func) is cst.Name and e.func.value == "super" and not e.args


def _asked_for_tensors(call: cst.Call) -> Optional[Val]:
    """What a call of an unknown callable gives when it passes `return_tensors="pt"`: a
    tokenizer's or processor's CPU encoding (one tensor for `encode`); None without it."""
    if string_value(kwarg(call, L.TENSORS_KEYWORD)) != L.TENSORS_VALUE:
        return None
    m = call.func.attr.value if type(call.func) is cst.Attribute else "__call__"
    return V.tensor(V.CPU, dtype=V.INT) if m == "encode" else Val(V.TENSORS, V.CPU, cls=L.ENCODING)


def _sequence(elems: Tuple[Val, ...], seq: str) -> Val:
    """A list or tuple of these items: tensors if any item is a tensor, unknown if any item is
    unknown, else a plain sequence."""
    tensors = [v for v in elems if v.kind == V.TENSOR]
    if tensors:
        dtypes = {v.dtype for v in tensors}
        return Val(V.TENSORS, _device_of(tensors), dtype=dtypes.pop() if len(dtypes) == 1 else None,
                   assumed=all(v.assumed for v in tensors), elems=elems)
    if any(v.kind in (V.UNKNOWN, V.TENSORS) for v in elems):
        return Val(V.UNKNOWN, elems=elems)  # `[a, b]` of unknowns is not a plain list
    return Val(V.PY, py=seq, elems=elems)


def _is_torch_loader(q: str) -> bool:
    return q.startswith("torch.") and q.endswith(".DataLoader")


def _is_autograd_function(q: str) -> bool:
    return q in ("torch.autograd.Function", "torch.autograd.function.Function")


def _foreign_body(helper) -> Optional[HelperBody]:
    """Another module's helper (`facts.OneLiner`), its nodes made from the summary's data."""
    try:
        return HelperBody.from_data(helper.params, helper.body)
    except (KeyError, TypeError, AttributeError, ValueError):  # a summary from another build: tells nothing
        return None


# the `py` tags of a bool known on every path, and their negation
_KNOWN_TRUTH = {"true": "false", "false": "true"}
