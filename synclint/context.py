"""FileContext: what a rule needs to know about the code around a node.

It is updated by the walker as it descends (imports, scopes, loops, `no_grad`, function
and class nesting) and answers: what does this name resolve to (`qualname`), what kind
of value is this expression (`infer`), is it a tensor on the GPU (`on_gpu`), is this
site hot (`hot`). Inference is deliberately simple and local: assignments in source
order, `self.<attr>` per class, in-file function returns, loop targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from synclint import values as V
from synclint.values import Val

# torch factories; the first group is deterministic (an auto-safe `device=` fix).
DETERMINISTIC_FACTORIES = {
    "zeros", "ones", "empty", "full", "arange", "eye", "linspace", "logspace",
    "zeros_like", "ones_like", "empty_like", "full_like", "tril_indices", "triu_indices",
}
RANDOM_FACTORIES = {
    "rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like",
    "randint_like", "bernoulli", "multinomial",
}
DATA_FACTORIES = {"tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "scalar_tensor"}
FACTORIES = DETERMINISTIC_FACTORIES | RANDOM_FACTORIES | DATA_FACTORIES

# torch.* callables that do not return a tensor.
TORCH_NON_TENSOR = {
    "is_tensor", "is_floating_point", "is_complex", "is_grad_enabled", "numel",
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "manual_seed",
    "seed", "save", "load", "compile", "device", "dtype", "Size", "get_default_dtype",
    "set_default_dtype", "set_default_device", "set_printoptions", "equal", "allclose",
    "use_deterministic_algorithms", "set_float32_matmul_precision", "get_num_threads",
    "set_num_threads", "typename", "finfo", "iinfo", "result_type", "promote_types",
    "can_cast", "broadcast_shapes", "autocast", "jit", "is_nonzero",
    "sym_min", "sym_max", "sym_int", "sym_float", "sym_not", "sym_ite", "sym_sum",
    "get_device_module", "get_default_device", "is_storage",
}
BOOL_METHODS = {
    "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "isneginf",
    "isposinf", "isreal", "logical_and", "logical_or", "logical_not", "logical_xor",
    "bool", "any", "all", "isclose", "signbit", "greater", "less", "greater_equal",
    "less_equal", "not_equal", "isin",
}
# Reshaping/reordering methods: a bool tensor stays a bool tensor.
MASK_PRESERVING_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "flatten", "ravel", "squeeze", "unsqueeze",
    "expand", "expand_as", "t", "transpose", "permute", "movedim", "flip", "roll", "repeat",
    "narrow", "select", "index_select", "gather", "tril", "triu",
}
HOST_METHODS = {  # tensor methods whose result lives on the host (no device work)
    "size", "dim", "ndimension", "numel", "nelement", "stride", "element_size",
    "data_ptr", "is_contiguous", "get_device", "storage_offset", "is_pinned",
    "is_floating_point", "is_complex", "type", "untyped_storage", "dim_order",
    "sparse_dim", "dense_dim", "_nnz", "is_coalesced", "is_shared", "is_inference", "is_signed",
}
HOST_ATTRS = {
    "shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "requires_grad",
    "is_leaf", "layout", "names", "is_sparse", "is_quantized", "is_meta", "itemsize", "nbytes",
}
SAME_TENSOR_ATTRS = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
MODULE_SUFFIXES = (".Module", ".LightningModule", ".Sequential", ".ModuleList", ".ModuleDict")
MODULE_BASE_NAMES = {"Module", "LightningModule", "Sequential"}
HOT_FUNCTION_NAMES = {"forward", "step", "training_step", "validation_step", "test_step",
                      "predict_step", "train_step", "eval_step", "__call__"}
NO_GRAD_CONTEXTS = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"}
TIMING_NAMES = {"time.perf_counter", "time.time", "time.monotonic", "time.perf_counter_ns",
                "time.process_time", "timeit.default_timer"}
BATCH_PARAM_NAMES = {"batch", "inputs", "data", "sample", "samples"}


@dataclass
class FuncInfo:
    name: str
    qual: str
    cls: Optional["ClassInfo"]
    scope: Dict[str, Val] = field(default_factory=dict)
    no_grad: bool = False
    timing: bool = False
    returns: Optional[Val] = None
    # unannotated `forward` parameters: tensors by assumption only (name -> the assumed Val)
    assumed: Dict[str, Val] = field(default_factory=dict)


@dataclass
class ClassInfo:
    name: str
    is_module: bool
    attrs: Dict[str, Val] = field(default_factory=dict)


@dataclass
class PendingFinding:
    rule: object
    node: cst.CSTNode
    message: str
    replacement: Optional[cst.CSTNode]
    target: cst.CSTNode
    safe: bool
    fix_title: Optional[str]
    hot: bool
    func: Optional[str]
    stmt_index: int
    stmt: Optional[cst.CSTNode]
    guarded: bool = False


class FileContext:
    def __init__(self, source: str, filename: str = "<string>") -> None:
        self.source = source
        self.filename = filename
        self.aliases: Dict[str, str] = {}  # local name -> qualified name
        self._qualnames: Dict[int, tuple] = {}  # id(node) -> (node, qualified name or None)
        self.module_scope: Dict[str, Val] = {}
        self.funcs: List[FuncInfo] = []
        self.classes: List[ClassInfo] = []
        self.module_classes: Set[str] = set()  # in-file nn.Module subclasses
        self.plain_classes: Set[str] = set()  # other in-file classes: instances are not tensors
        self.func_returns: Dict[str, Val] = {}  # in-file function name -> returned value
        self.loop_depth = 0
        self.no_grad_depth = 0
        self.cuda_less_depth = 0  # inside `if not torch.cuda.is_available():`
        self.guard_depth = 0  # inside `if step % every == 0:` (a logging guard: cold)
        self.default_device = V.CPU
        self.uses_numpy = False  # numpy/pandas imported: `.item()` on an unknown may be NumPy
        self.uses_xla = False  # torch_xla imported: unknown-device tensors are not CUDA ones
        self.stmt_index = -1
        self.stmt_stack: List[cst.CSTNode] = []
        self.findings: List[PendingFinding] = []
        # call graph for "called from a loop": (caller qual or None, callee key, in loop)
        self.calls: List[Tuple[Optional[str], str, bool]] = []
        self.timing_funcs: Set[str] = set()
        self._all_funcs: Set[str] = set()

    # ----------------------------------------------------------------- names
    def add_import(self, node: cst.CSTNode) -> None:
        self._qualnames.clear()  # the alias table is about to change
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _dotted(alias.name)
                if alias.asname is not None:
                    local = _dotted(alias.asname.name)
                    self.aliases[local] = full
                else:
                    head = full.split(".", 1)[0]
                    self.aliases[head] = head
                self._note_module(full)
        elif isinstance(node, cst.ImportFrom):
            if node.relative or node.module is None:
                return
            mod = _dotted(node.module)
            self._note_module(mod)
            if isinstance(node.names, cst.ImportStar):
                return
            for alias in node.names:
                name = _dotted(alias.name)
                local = _dotted(alias.asname.name) if alias.asname else name
                self.aliases[local] = f"{mod}.{name}"

    def _note_module(self, mod: str) -> None:
        if mod.split(".", 1)[0] == "torch_xla":
            self.uses_xla = True
        if mod.split(".", 1)[0] in ("numpy", "pandas", "jax", "cupy", "tensorflow"):
            self.uses_numpy = True

    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """`th.cuda.synchronize` -> 'torch.cuda.synchronize' when `th` is an import alias.

        Every rule asks about the same call nodes, so answers are kept per node (the entry
        holds the node, so an id is never reused while it is cached) until an import changes
        the alias table.
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
            if head is not None:
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

    # ----------------------------------------------------------------- scopes
    @property
    def func(self) -> Optional[FuncInfo]:
        return self.funcs[-1] if self.funcs else None

    @property
    def cls(self) -> Optional[ClassInfo]:
        return self.classes[-1] if self.classes else None

    def lookup(self, name: str) -> Val:
        if self.funcs:
            v = self.funcs[-1].scope.get(name)
            if v is not None:
                return v
        v = self.module_scope.get(name)
        if v is not None:
            return v
        q = self.aliases.get(name)
        if q is not None:
            return V.Val(V.PY)  # an imported module or function, not a tensor
        return V.UNKNOWN_VAL

    def bind(self, name: str, val: Val) -> None:
        scope = self.funcs[-1].scope if self.funcs else self.module_scope
        scope[name] = val

    def bind_target(self, target: cst.BaseExpression, val: Val) -> None:
        """Bind an assignment or loop target, unpacking tuples of tensors."""
        if isinstance(target, cst.Name):
            self.bind(target.value, val)
        elif isinstance(target, (cst.Tuple, cst.List)):
            if val.elems is not None and len(val.elems) == len(target.elements):
                for el, v in zip(target.elements, val.elems):
                    self.bind_target(el.value, v)
                return
            elem = _element_of(val)
            for el in target.elements:
                self.bind_target(el.value, elem)
        elif isinstance(target, cst.Attribute):
            if (
                isinstance(target.value, cst.Name)
                and target.value.value == "self"
                and self.cls is not None
            ):
                self.cls.attrs[target.attr.value] = val
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, V.PY_VAL if val.kind != V.TENSORS else val)

    # ----------------------------------------------------------------- inference
    def infer(self, e: cst.BaseExpression) -> Val:
        try:
            v = self._infer(e)
        except RecursionError:  # pathological nesting: know nothing
            return V.UNKNOWN_VAL
        if self.uses_xla and v.kind == V.TENSOR and v.device is None:
            # A torch_xla file: tensors of unknown device are XLA tensors, not CUDA ones.
            return v.with_(device=V.CPU)
        return v

    def _infer(self, e: cst.BaseExpression) -> Val:
        if isinstance(e, cst.Name):
            if e.value in ("True", "False", "None"):
                return V.PY_VAL
            return self.lookup(e.value)
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                          cst.ConcatenatedString, cst.FormattedString, cst.Dict,
                          cst.DictComp, cst.Set, cst.SetComp, cst.Lambda)):
            return V.PY_VAL
        if isinstance(e, (cst.List, cst.Tuple)):
            elems = [self._infer(el.value) for el in e.elements]
            tensors = [v for v in elems if v.kind == V.TENSOR]
            out = Val(V.TENSORS, tensors[0].device) if tensors else Val(V.PY)
            if not any(isinstance(el, cst.StarredElement) for el in e.elements):
                out.elems = elems  # `return x, (h, w)`: unpacking keeps each element's kind
            return out
        if isinstance(e, (cst.ListComp, cst.GeneratorExp)):
            return V.UNKNOWN_VAL
        if isinstance(e, cst.Attribute):
            return self._infer_attribute(e)
        if isinstance(e, cst.Subscript):
            base = self._infer(e.value)
            if base.kind == V.TENSOR:
                return V.tensor(base.device, mask=base.mask)  # any index of a bool tensor is bool
            if base.kind == V.TENSORS:
                if base.elems is not None and len(e.slice) == 1:
                    idx = e.slice[0].slice
                    if isinstance(idx, cst.Index) and isinstance(idx.value, cst.Integer):
                        i = int(idx.value.value, 0)
                        if i < len(base.elems):
                            return base.elems[i]
                return V.tensor(base.device, pinned=base.pinned)
            if base.kind == V.NUMPY:
                return base
            return V.UNKNOWN_VAL
        if isinstance(e, cst.UnaryOperation):
            v = self._infer(e.expression)
            if isinstance(e.operator, cst.Not):
                return V.PY_VAL
            if v.kind == V.TENSOR:
                return v.with_(mask=v.mask and isinstance(e.operator, cst.BitInvert), ndim=v.ndim)
            return v
        if isinstance(e, cst.BinaryOperation):
            return self._combine(
                [self._infer(e.left), self._infer(e.right)],
                mask_op=isinstance(e.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)),
            )
        if isinstance(e, cst.Comparison):
            ops = [c.operator for c in e.comparisons]
            if any(isinstance(o, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for o in ops):
                return V.PY_VAL
            vals = [self._infer(e.left)] + [self._infer(c.comparator) for c in e.comparisons]
            t = [v for v in vals if v.kind == V.TENSOR]
            if t:
                return V.tensor(_device_of(t), mask=True)
            if any(v.kind == V.NUMPY for v in vals):
                return Val(V.NUMPY)
            return V.PY_VAL
        if isinstance(e, cst.BooleanOperation):
            return V.UNKNOWN_VAL
        if isinstance(e, cst.IfExp):
            a, b = self._infer(e.body), self._infer(e.orelse)
            return a if a.kind == V.TENSOR else b
        if isinstance(e, cst.Call):
            return self._infer_call(e)
        if isinstance(e, cst.Await):
            return self._infer(e.expression)
        if isinstance(e, cst.NamedExpr):
            return self._infer(e.value)
        return V.UNKNOWN_VAL

    def _combine(self, vals: List[Val], mask_op: bool = False) -> Val:
        t = [v for v in vals if v.kind == V.TENSOR]
        if t:
            return V.tensor(_device_of(t), mask=mask_op and all(v.mask for v in t))
        if any(v.kind == V.NUMPY for v in vals):
            return Val(V.NUMPY)
        if all(v.kind == V.PY for v in vals):
            return V.PY_VAL
        return V.UNKNOWN_VAL

    def _infer_attribute(self, e: cst.Attribute) -> Val:
        attr = e.attr.value
        q = self.qualname(e)
        if q is not None:
            return V.PY_VAL  # a module attribute: torch.float32, np.pi, ...
        if isinstance(e.value, cst.Name) and e.value.value == "self" and self.cls is not None:
            v = self.cls.attrs.get(attr)
            if v is not None:
                return v
            return V.UNKNOWN_VAL
        base = self._infer(e.value)
        if base.kind == V.TENSOR:
            if attr in HOST_ATTRS:
                return Val(V.DEVICE, base.device) if attr == "device" else V.PY_VAL
            if attr in SAME_TENSOR_ATTRS:
                return V.tensor(base.device)
            return V.UNKNOWN_VAL
        if base.kind == V.NUMPY:
            return base if attr in ("T", "real", "imag", "flat") else V.PY_VAL
        if base.kind == V.TENSORS and attr in ("indices", "values"):  # topk/sort/max(dim) results
            return V.tensor(base.device)
        if base.kind == V.MODULE:
            if attr in ("weight", "bias"):
                return V.tensor(base.device)
            return V.UNKNOWN_VAL
        return V.UNKNOWN_VAL

    def _tensor_args(self, call: cst.Call) -> List[Val]:
        out = []
        for a in call.args:
            v = self._infer(a.value)
            if v.kind == V.TENSOR:
                out.append(v)
            elif v.kind == V.TENSORS:
                out.append(V.tensor(v.device))
        return out

    def device_of_arg(self, arg: Optional[cst.BaseExpression]) -> Tuple[bool, Optional[str]]:
        """(is it a device, which) for a `device=`/`.to()` argument."""
        if arg is None:
            return False, None
        s = _string_value(arg)
        if s is not None:
            if s.startswith("cuda") or s == "gpu":
                return True, V.CUDA
            if s.split(":")[0] in ("cpu", "mps", "meta", "xpu"):
                return True, V.CPU
            return False, None
        if isinstance(arg, cst.IfExp):
            a = self.device_of_arg(arg.body)
            b = self.device_of_arg(arg.orelse)
            if V.CUDA in (a[1], b[1]):
                return True, V.CUDA
            return a[0] or b[0], a[1] if a[0] else b[1]
        if isinstance(arg, cst.Call):
            tn = self.torch_name(arg.func)
            if tn == "device":
                return self.device_of_arg(arg.args[0].value if arg.args else None)
            if tn in ("cuda.current_device",):
                return True, V.CUDA
        if isinstance(arg, cst.Integer):
            return True, V.CUDA  # .to(0): a CUDA ordinal
        tn = self.torch_name(arg)
        if tn is not None:
            # torch.float16 and friends: a dtype, not a device
            return False, None
        v = self._infer(arg)
        if v.kind == V.DEVICE:
            return True, v.device
        if v.kind == V.TENSOR:
            return True, v.device  # .to(other): other's device
        if isinstance(arg, (cst.Name, cst.Attribute)):
            name = arg.value if isinstance(arg, cst.Name) else arg.attr.value
            if "device" in name.lower() or name in ("dev", "rank", "local_rank", "gpu"):
                return True, None
        return False, None

    def _factory_val(self, name: str, call: cst.Call) -> Val:
        dev_arg = _kwarg(call, "device")
        if dev_arg is not None:
            _, device = self.device_of_arg(dev_arg)
        elif name.endswith("_like") and call.args:
            device = self._infer(call.args[0].value).device
        elif name == "from_numpy":
            device = V.CPU
        elif name in ("bernoulli", "multinomial", "normal", "poisson") and self._tensor_args(call):
            device = _device_of(self._tensor_args(call))  # sampled on the input's device
        else:
            device = self.default_device
        pinned = _is_true(_kwarg(call, "pin_memory"))
        ndim = None
        if name in ("zeros", "ones", "empty", "rand", "randn", "full"):
            pos = [a for a in call.args if a.keyword is None]
            if name == "full":
                pos = pos[:1]
            if len(pos) == 1 and isinstance(pos[0].value, (cst.Tuple, cst.List)):
                ndim = len(pos[0].value.elements)
            elif pos and all(isinstance(a.value, (cst.Integer, cst.Name, cst.Attribute, cst.BinaryOperation)) for a in pos):
                if len(pos) > 1 or not isinstance(pos[0].value, cst.Name) or self._infer(pos[0].value).kind == V.PY:
                    ndim = len(pos)
            if len(pos) == 1 and isinstance(pos[0].value, cst.Attribute) and pos[0].value.attr.value == "shape":
                ndim = None  # torch.zeros(x.shape): as many dims as x
        elif name in ("arange", "linspace", "logspace", "randperm"):
            ndim = 1
        elif name == "eye":
            ndim = 2
        elif name in ("tensor", "as_tensor", "asarray") and call.args and call.args[0].keyword is None:
            data = call.args[0].value
            ndim = _literal_ndim(data)
            if dev_arg is None:  # no device=: the result stays where a tensor argument is
                d = self._infer(data)
                if d.kind == V.TENSOR:
                    device = d.device
                    if name != "tensor":  # as_tensor(t) is t itself; tensor(t) is a fresh copy
                        pinned = d.pinned
                elif d.kind == V.UNKNOWN and name != "tensor":
                    pinned = None  # as_tensor(t) may return a pinned t itself
        return V.tensor(device, pinned=pinned, ndim=ndim,
                        mask=_string_value(_kwarg(call, "dtype")) == "bool" or self.qualname(_kwarg(call, "dtype") or cst.Name("_")) == "torch.bool")

    def _infer_call(self, call: cst.Call) -> Val:
        func = call.func
        q = self.qualname(func)
        if q is not None:
            return self._infer_qualified_call(q, call)
        if isinstance(func, cst.Attribute):
            recv = self._infer(func.value)
            return self._infer_method(recv, func.attr.value, call)
        if isinstance(func, cst.Name):
            name = func.value
            if name in ("len", "int", "float", "str", "bool", "range", "list", "dict", "tuple",
                        "set", "sorted", "repr", "format", "round", "abs", "isinstance", "type",
                        "enumerate", "zip", "id", "hash", "open", "print"):
                return V.PY_VAL
            if name in ("max", "min", "sum"):
                t = self._tensor_args(call)
                return V.tensor(_device_of(t)) if t else V.PY_VAL
            if name in self.module_classes:
                return Val(V.MODULE)
            if name in self.plain_classes:
                return V.PY_VAL
            callee = self.lookup(name)
            if callee.kind == V.MODULE:
                return V.tensor(callee.device)
            if name in self.func_returns:
                return self.func_returns[name]
            return V.UNKNOWN_VAL
        return V.UNKNOWN_VAL

    def _infer_qualified_call(self, q: str, call: cst.Call) -> Val:
        if q.startswith("torch."):
            t = q[6:]
            last = t.rsplit(".", 1)[-1]
            if t in FACTORIES:
                return self._factory_val(t, call)
            if t == "device":
                is_dev, d = self.device_of_arg(call.args[0].value if call.args else None)
                return Val(V.DEVICE, d)
            if t in ("cuda.Event", "cuda.streams.Event", "Event"):
                return Val(V.EVENT)
            if t in ("cuda.Stream", "cuda.current_stream", "cuda.default_stream", "cuda.streams.Stream",
                     "cuda.ExternalStream", "Stream", "accelerator.current_stream"):
                return Val(V.STREAM)
            if t == "utils.data.DataLoader" or t.endswith(".DataLoader"):
                return Val(V.LOADER, pinned=_is_true(_kwarg(call, "pin_memory")))
            if t.startswith("optim.") and last[:1].isupper():
                return Val(V.OPTIM)
            if t.startswith("nn.") and last[:1].isupper() and not t.startswith("nn.functional"):
                if last == "Parameter":
                    ts = self._tensor_args(call)
                    return V.tensor(_device_of(ts) if ts else None)
                return Val(V.MODULE)
            if t.startswith("distributions.") and last[:1].isupper():
                return Val(V.DIST)
            if t in TORCH_NON_TENSOR or t.startswith(("cuda.", "backends.", "utils.", "distributed.", "jit.", "_dynamo.", "compiler.", "amp.", "cuda", "profiler.", "testing.", "hub.", "onnx.", "fx.", "export.")):
                if t in ("cuda.FloatTensor", "cuda.LongTensor"):
                    return V.tensor(V.CUDA)
                return V.PY_VAL
            if last in ("where",) and len(call.args) == 1:
                return Val(V.TENSORS, _device_of(self._tensor_args(call)))
            ts = self._tensor_args(call)
            dev_arg = _kwarg(call, "device")
            if dev_arg is not None:
                device = self.device_of_arg(dev_arg)[1]
            elif ts:
                device = _device_of(ts)
            elif any(self._infer(a.value).kind == V.UNKNOWN for a in call.args if a.keyword is None):
                device = None  # `torch.tanh(x)` with `x` unknown: x's device, not the default
            else:
                device = self.default_device
            mask = last in BOOL_METHODS
            if last in ("split", "chunk", "unbind", "sort", "max", "min", "topk", "broadcast_tensors",
                        "meshgrid", "tensor_split", "unique", "std_mean", "var_mean", "aminmax", "nonzero_static"):
                if last in ("max", "min") and len(call.args) == 1:
                    return V.tensor(device)
                return Val(V.TENSORS, device)
            return V.tensor(device, mask=mask)
        root = q.split(".", 1)[0]
        if root in ("numpy", "pandas", "scipy", "cupy", "jax"):
            return Val(V.NUMPY)
        if q in TIMING_NAMES or root in ("math", "random", "os", "time", "json", "re", "logging"):
            return V.PY_VAL
        last = q.rsplit(".", 1)[-1]
        if last.endswith("DataLoader"):
            return Val(V.LOADER, pinned=_is_true(_kwarg(call, "pin_memory")))
        if last in self.module_classes:
            return Val(V.MODULE)
        return V.UNKNOWN_VAL

    def _infer_method(self, recv: Val, m: str, call: cst.Call) -> Val:
        k = recv.kind
        if k == V.TENSOR:
            if m == "cuda":
                return V.tensor(V.CUDA, ndim=recv.ndim, mask=recv.mask)
            if m == "cpu":
                return V.tensor(V.CPU, ndim=recv.ndim, mask=recv.mask)
            if m in ("to", "type_as", "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"):
                if m == "to":
                    arg = _kwarg(call, "device")
                    if arg is None and call.args and call.args[0].keyword is None:
                        arg = call.args[0].value
                    is_dev, dev = self.device_of_arg(arg)
                    if any(self.qualname(a.value) == "torch.bool" for a in call.args):
                        return V.tensor(dev if is_dev else recv.device, ndim=recv.ndim, mask=True)
                    if is_dev:
                        return V.tensor(dev, ndim=recv.ndim, mask=recv.mask)
                    return recv.with_(pinned=None) if _kwarg(call, "dtype") is None else V.tensor(recv.device, ndim=recv.ndim)
                return V.tensor(recv.device)
            if m == "numpy":
                return Val(V.NUMPY)
            if m in ("item", "tolist", "equal", "allclose", "is_nonzero", "is_same_size") or m in HOST_METHODS:
                return V.PY_VAL
            if m == "pin_memory":
                return V.tensor(V.CPU, pinned=True, ndim=recv.ndim)
            if m in BOOL_METHODS:
                return V.tensor(recv.device, mask=True)
            if m in ("split", "chunk", "unbind", "sort", "topk", "tensor_split", "unique", "aminmax"):
                return Val(V.TENSORS, recv.device)
            if m in ("max", "min") and (call.args or _kwarg(call, "dim") is not None):
                return Val(V.TENSORS, recv.device)
            if m in ("clone", "detach", "contiguous", "float", "half", "double", "long", "int",
                     "bfloat16", "requires_grad_", "share_memory_"):
                keep_mask = m in ("clone", "detach", "contiguous")
                return V.tensor(recv.device, ndim=recv.ndim, mask=recv.mask and keep_mask, pinned=recv.pinned if keep_mask else None)
            if recv.mask and m in MASK_PRESERVING_METHODS:
                return V.tensor(recv.device, mask=True)
            return V.tensor(recv.device)
        if k == V.TENSORS:
            if m in ("to", "cuda", "cpu"):
                return Val(V.TENSORS, V.CPU if m == "cpu" else V.CUDA)
            if m in ("values", "items", "keys"):
                return Val(V.TENSORS, recv.device) if m == "values" else V.UNKNOWN_VAL
            if m in ("get", "pop"):
                return V.tensor(recv.device)
            return V.UNKNOWN_VAL
        if k == V.MODULE:
            if m in ("to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16",
                     "requires_grad_", "to_empty"):
                return Val(V.MODULE, self._module_device_after(recv, m, call))
            if m in ("parameters", "buffers"):
                return Val(V.TENSORS, recv.device)
            if m in ("forward", "__call__"):
                return V.tensor(recv.device)
            if m in ("state_dict", "named_parameters", "named_buffers"):
                return V.UNKNOWN_VAL
            return V.UNKNOWN_VAL
        if k == V.NUMPY:
            if m in ("item", "tolist"):
                return V.PY_VAL
            return recv
        if k == V.DIST:
            if m in ("sample", "rsample", "log_prob", "entropy", "cdf", "icdf"):
                return V.tensor(None)
            return V.UNKNOWN_VAL
        if k == V.UNKNOWN and m in ("cpu", "numpy"):
            # whatever it was, the result of `.cpu()` lives on the host (a module's too)
            return V.tensor(V.CPU) if m == "cpu" else Val(V.NUMPY)
        if k == V.PY and m in ("item", "items", "keys", "values", "get", "format", "join",
                               "split", "strip", "lower", "upper", "copy"):
            return V.PY_VAL if m != "get" else V.UNKNOWN_VAL
        return V.UNKNOWN_VAL

    def _module_device_after(self, recv: Val, m: str, call: cst.Call) -> Optional[str]:
        if m == "cuda":
            return V.CUDA
        if m == "cpu":
            return V.CPU
        if m == "to":
            arg = _kwarg(call, "device") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
            is_dev, dev = self.device_of_arg(arg)
            if is_dev:
                return dev
        return recv.device

    # ----------------------------------------------------------------- questions rules ask
    def is_tensor(self, e: cst.BaseExpression) -> bool:
        return self.infer(e).kind == V.TENSOR

    def on_gpu(self, e: cst.BaseExpression, unknown_ok: bool = False) -> bool:
        """Is `e` a tensor that is (or, device unknown, is assumed to be) on the GPU?

        With `unknown_ok`, a value of unknown kind counts too, unless this file uses
        NumPy-like libraries (where `.item()` and friends may be theirs).
        """
        if self.cuda_less_depth:
            return False
        v = self.infer(e)
        if v.kind == V.TENSOR:
            return v.device != V.CPU
        if unknown_ok and v.kind == V.UNKNOWN and not self.uses_numpy:
            return True
        return False

    def assumed_param(self, e: cst.BaseExpression) -> bool:
        """`e` is a bare `forward` parameter, unannotated and not rebound: a tensor only by
        assumption (it may as well be an int or a flag)."""
        f = self.func
        if f is None or not isinstance(e, cst.Name):
            return False
        v = f.assumed.get(e.value)
        return v is not None and f.scope.get(e.value) is v

    def gpu_tensor_val(self, e: cst.BaseExpression) -> Optional[Val]:
        """The inferred value if `e` is a tensor on (or assumed on) the GPU, else None."""
        if self.cuda_less_depth:
            return None
        v = self.infer(e)
        if v.kind == V.TENSOR and v.device != V.CPU:
            return v
        return None

    @property
    def in_loop(self) -> bool:
        return self.loop_depth > 0

    @property
    def in_no_grad(self) -> bool:
        return self.no_grad_depth > 0

    def site_hot(self) -> bool:
        if self.guard_depth:
            return False
        if self.loop_depth:
            return True
        f = self.func
        return f is not None and _hot_name(f.name)

    # ----------------------------------------------------------------- findings
    def add_finding(self, rule, node, message, *, replacement, target, safe, fix_title) -> None:
        f = self.func
        self.findings.append(
            PendingFinding(
                rule=rule, node=node, message=message, replacement=replacement,
                target=target, safe=safe, fix_title=fix_title, hot=self.site_hot(),
                func=f.qual if f else None, stmt_index=self.stmt_index,
                stmt=self.stmt_stack[-1] if self.stmt_stack else None,
                guarded=self.guard_depth > 0,
            )
        )

    def hot_functions(self) -> Set[str]:
        """In-file functions that run hot: hot by name, or called from a loop or hot code."""
        hot: Set[str] = set()
        frontier = [callee for caller, callee, in_loop in self.calls if in_loop]
        frontier += [q for q in self._all_funcs if _hot_name(q.rsplit(".", 1)[-1])]
        edges: Dict[Optional[str], List[str]] = {}
        for caller, callee, _ in self.calls:
            edges.setdefault(caller, []).append(callee)
        while frontier:
            q = frontier.pop()
            if q in hot:
                continue
            hot.add(q)
            frontier.extend(edges.get(q, ()))
        return hot


# --------------------------------------------------------------------- helpers
def _hot_name(name: str) -> bool:
    return name in HOT_FUNCTION_NAMES or name.endswith("_step")


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _device_of(vals: List[Val]) -> Optional[str]:
    devs = {v.device for v in vals}
    if V.CUDA in devs:
        return V.CUDA
    if None in devs:
        return None
    return V.CPU


def _element_of(val: Val) -> Val:
    if val.kind in (V.TENSORS, V.TENSOR):
        return V.tensor(val.device, pinned=val.pinned)
    if val.kind == V.LOADER:
        return V.tensor(V.CPU, pinned=val.pinned)
    if val.kind == V.NUMPY:
        return val
    if val.kind == V.PY:
        return V.PY_VAL
    return V.UNKNOWN_VAL


def _literal_ndim(e: cst.BaseExpression) -> Optional[int]:
    """Dimensions of `torch.tensor(<literal>)` data: 0 for a number, 1 + inner for a list."""
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        e = e.expression
    if isinstance(e, (cst.Integer, cst.Float)):
        return 0
    if isinstance(e, (cst.List, cst.Tuple)) and e.elements:
        first = e.elements[0]
        if isinstance(first, cst.StarredElement):
            return None
        inner = _literal_ndim(first.value)
        return None if inner is None else inner + 1
    return None


def _kwarg(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def _string_value(e: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(e, cst.SimpleString):
        try:
            v = e.evaluated_value
        except Exception:  # pragma: no cover - odd prefixes
            return None
        return v if isinstance(v, str) else None
    return None


def _is_true(e: Optional[cst.BaseExpression]) -> Optional[bool]:
    if isinstance(e, cst.Name) and e.value in ("True", "False"):
        return e.value == "True"
    return None if e is not None else False


kwarg = _kwarg
string_value = _string_value
is_true = _is_true
element_of = _element_of
hot_name = _hot_name
