"""What the model knows about a value: the small abstract domain the rules ask about.

A value has a kind (tensor, NumPy array, plain Python value, module, loader, ...), and for
tensors a device, a dtype class, pinned-ness, a rank and emptiness where known. `assumed` marks a
tensor that is one only by assumption (an unannotated `forward` parameter): rules that
treat a value as a number want more evidence than that; on a module, that where its tensors
live is not known (a submodule of a module of unknown device: its `weight` is no evidence). `join` is what a name holds after
two branches meet.
"""

from __future__ import annotations

from typing import Optional, Tuple

# Kinds of value.
TENSOR = "tensor"
TENSORS = "tensors"  # a container of tensors: a batch, a tuple of outputs, parameters()
NUMPY = "numpy"
PY = "py"  # a plain Python value: number, string, list, dict, shape
MODULE = "module"  # an nn.Module instance
LOADER = "loader"  # an iterable of batches (a DataLoader, a prepared loader)
OPTIM = "optim"
DEVICE = "device"
EVENT = "event"
STREAM = "stream"
DIST = "dist"  # a torch.distributions object
OBJECT = "object"  # an instance of a known class (`cls` names it)
ITER = "iter"  # an iterator whose items are `elems[0]` (`enumerate(loader)`, `zip(a, b)`)
UNKNOWN = "unknown"

CUDA = "cuda"
CPU = "cpu"
# On the CPU on one path and on the GPU on another (`x = x.to(dev)` under `if preload:`):
# a GPU value for the read-back rules, a host value for the host-to-device copy rules.
EITHER = "cpu|cuda"

# dtype classes
BOOL = "bool"
INT = "int"
FLOAT = "float"


class Val:
    """An abstract value. `device` is CUDA, CPU or None (unknown)."""

    __slots__ = ("kind", "device", "dtype", "pinned", "ndim", "elems", "assumed", "py", "cls", "empty")

    def __init__(
        self,
        kind: str,
        device: Optional[str] = None,
        mask: bool = False,
        pinned: Optional[bool] = None,
        ndim: Optional[int] = None,
        *,
        dtype: Optional[str] = None,
        assumed: bool = False,
        py: Optional[str] = None,
        cls: Optional[str] = None,
        elems: Optional[Tuple["Val", ...]] = None,
        empty: bool = False,
    ) -> None:
        self.kind = kind
        self.device = device
        self.dtype = BOOL if mask else dtype
        self.pinned = pinned
        self.ndim = ndim
        self.elems = elems  # per-element values of a tuple/list, when known
        self.assumed = assumed
        # for PY: "int", "float", "str", "list", "dict", "none", ... when known; for OPTIM
        # "fused"/"unfused", for DIST "validating", for MODULE its mode "eval"/"train"
        self.py = py
        self.cls = cls  # for OBJECT, LOADER items and MODULE: the class key, when known
        # a tensor known to hold no elements (a literal 0 in its size: `torch.zeros([0])`):
        # moving it copies nothing, so nothing waits
        self.empty = empty

    @property
    def mask(self) -> bool:
        return self.dtype == BOOL

    def with_(self, **kw) -> "Val":
        v = Val(self.kind, self.device, False, self.pinned, self.ndim, dtype=self.dtype,
                assumed=self.assumed, py=self.py, cls=self.cls, elems=self.elems, empty=self.empty)
        if "mask" in kw:
            m = kw.pop("mask")
            v.dtype = BOOL if m else (None if v.dtype == BOOL else v.dtype)
        for k, x in kw.items():
            setattr(v, k, x)
        return v

    @property
    def is_tensor(self) -> bool:
        return self.kind == TENSOR

    def __eq__(self, other) -> bool:
        # (every slot, written out: asked at every name the evaluator meets)
        return self is other or isinstance(other, Val) and (
            self.kind == other.kind and self.device == other.device and self.dtype == other.dtype
            and self.pinned == other.pinned and self.ndim == other.ndim and self.elems == other.elems
            and self.assumed == other.assumed and self.py == other.py and self.cls == other.cls
            and self.empty == other.empty)

    def __hash__(self) -> int:
        return hash((self.kind, self.device, self.dtype))

    def to_json(self) -> list:
        """A compact JSON form (module summaries are cached and sent between processes)."""
        out = [self.kind, self.device, self.dtype, self.pinned, self.ndim, self.assumed, self.py, self.cls,
               None if self.elems is None else [e.to_json() for e in self.elems]]
        return out + [1] if self.empty else out

    @staticmethod
    def from_json(d: list) -> "Val":
        kind, device, dtype, pinned, ndim, assumed, py_, cls, elems = d[:9]
        return Val(kind, device, pinned=pinned, ndim=ndim, dtype=dtype, assumed=assumed, py=py_, cls=cls,
                   elems=None if elems is None else tuple(Val.from_json(e) for e in elems), empty=len(d) > 9)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        extra = "".join(
            f" {k}={getattr(self, k)!r}"
            for k in ("device", "dtype", "pinned", "ndim", "assumed", "py", "cls", "empty")
            if getattr(self, k)
        )
        return f"Val({self.kind}{extra})"


assert set(Val.__slots__) == {"kind", "device", "dtype", "pinned", "ndim", "elems", "assumed", "py", "cls", "empty"}, \
    "Val.__eq__ compares each slot by name"


def tensor(device: Optional[str] = None, **kw) -> Val:
    return Val(TENSOR, device, **kw)


def method(key: str) -> Val:
    """A bound method of an in-file class (`self.run`), by its key ("Class.run")."""
    return Val(PY, py="method", cls=key)


def methods_of(v: Val) -> Tuple[str, ...]:
    """The in-file method keys a value may call: one, or each arm of a join."""
    if v.kind != PY or v.py != "method":
        return ()
    if v.cls is not None:
        return (v.cls,)
    return tuple(e.cls for e in v.elems or () if e.cls is not None)


UNKNOWN_VAL = Val(UNKNOWN)
FUNCTION_VAL = Val(PY, py="function")  # a name bound by `def`
# A callable that passes its argument's items through (`tqdm`, `iter`), also when held in a
# variable (`progress = tqdm if main else iter`).
PASSTHROUGH_VAL = Val(PY, py="passthrough")
PY_VAL = Val(PY)
# Whatever it is, it lives on the host, and so does all it holds: what a model moved to the
# CPU computes from host inputs, its items and fields (mmaction2's `base_model.to("cpu")`,
# then `base_model(x)[0].pred_score`).
HOST_OBJECT = Val(UNKNOWN, CPU)


def function(key: str) -> Val:
    """A function defined inside another (`def step_fn` in `get_step_fn`), by its key: what
    the factory returns and its caller then calls each step. A key with a dot is another
    module's (`pkg.losses.step_fn`, made by the linker)."""
    return Val(PY, py="function", cls=key)


def function_key(v: Val) -> Optional[str]:
    """The key of the function a value is (`function`), if it is one ("a|b": either)."""
    return v.cls if v.kind == PY and v.py == "function" else None


def function_keys(v: Val) -> Tuple[str, ...]:
    """Each function a value may be: `spline_fn = f if c else g` is either."""
    key = function_key(v)
    return tuple(key.split("|")) if key else ()


def class_value(key: str) -> Val:
    """A class itself, not an instance (`cls = ERM`, `return globals()[name]`): calling it
    makes an instance. `key` names the class, or each it may be ("A|B")."""
    return Val(PY, py="class", cls=key)


def class_key(v: Val) -> Optional[str]:
    """The key of the class a value is (`class_value`), if it is one."""
    return v.cls if v.kind == PY and v.py == "class" else None



# The class key of what a registry builds (`semantic.registries`): an instance of one of the
# classes registered in the registry `key` (as the project names it, `Project.registry_key`);
# a method called on it is a call of that method of each of them (`Project._call_runs`).
REGISTERED = "registry:"


def built_by(key: str, is_module: bool) -> Val:
    """What `R.build(cfg)` gives: an instance of a class registered in R, a module where every
    class registered in R is one."""
    return Val(MODULE if is_module else OBJECT, cls=REGISTERED + key)


def registry_of(cls: Optional[str]) -> Optional[str]:
    """The key of the registry whose classes a class key (`built_by`) stands for, if it is one."""
    return cls[len(REGISTERED):] if cls and cls.startswith(REGISTERED) else None

def py(kind: str) -> Val:
    return Val(PY, py=kind)


def join_device(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """The device after two paths meet: the same one, EITHER for the CPU on one and CUDA
    on the other, CUDA if one is CUDA and the other unknown (the GPU path is the one to
    flag), else unknown."""
    if a == b:
        return a
    if a is None or b is None:
        return CUDA if CUDA in (a, b) else EITHER if EITHER in (a, b) else None
    return EITHER


def on_host(v: "Val") -> bool:
    """A value that is (on some path) in host memory: the source of a host-to-device copy."""
    return v.device in (CPU, EITHER)


def is_none(v: Val) -> bool:
    """Python's None (`x = None`, a default None every call leaves)."""
    return v.kind == PY and v.py == "none"


def join(a: Optional[Val], b: Optional[Val]) -> Val:
    """The value of a name that holds `a` on one path and `b` on another.

    A tensor on one path and None or a plain number on the other (`best = None`, then
    `best = loss`) is a tensor where it is used as one; an unknown on either side keeps
    the result unknown unless the other side is a tensor.
    """
    if a is None:
        return b if b is not None else UNKNOWN_VAL
    if b is None or a is b:
        return a
    # An Optional value (`x = None`, later `x = tensor`): what it holds when it is used.
    if is_none(a) and b.kind != PY:
        return b
    if is_none(b) and a.kind != PY:
        return a
    if a.kind == b.kind:
        if a == b:
            return a
        if is_dict_of(a) and is_dict_of(b):  # two callers' `**kwargs`: their values joined
            return Val(PY, py="dict", elems=(join(a.elems[0], b.elems[0]),))
        if a.kind == PY and a.py == b.py == "method":  # `self.run_cuda if c else self.run`
            return Val(PY, py="method", elems=tuple(Val(PY, py="method", cls=k)
                                                    for k in dict.fromkeys(methods_of(a) + methods_of(b))))
        return Val(
            a.kind,
            join_device(a.device, b.device),
            pinned=a.pinned if a.pinned == b.pinned else None,
            ndim=a.ndim if a.ndim == b.ndim else None,
            dtype=a.dtype if a.dtype == b.dtype else None,
            assumed=a.assumed and b.assumed,
            py=_py_join(a.py, b.py),
            cls=a.cls if a.cls == b.cls else _either_class(a, b),
            elems=a.elems if a.elems == b.elems else _positional(a, b) or _appended(a, b),
            empty=a.empty and b.empty,
        )
    for t, other in ((a, b), (b, a)):
        if t.kind == MODULE and other.kind == UNKNOWN and other.cls is None:
            # `return model` unchanged on one path, `nn.DataParallel(model).cuda()` on the
            # other: a module either way, on CUDA where the GPU path put it
            return t.with_(device=join_device(t.device, None))
        if t.kind == MODULE and other.kind == OBJECT and other.cls:
            # `load_ae(...)` on one path, a TensorRT engine wrapper's `.to(device)` on the
            # other (flux's CLIs): a model either way, moved as a whole, called for outputs
            return t.with_(cls=_either_class(t, other))
        if t.kind == OBJECT and t.cls and other.kind == UNKNOWN and other.cls is None:
            # `mem = load_memory(path)` (a pickle) on one path, `ReplayMemory(args, n)` on the
            # other (Rainbow): an instance of that class where it is used as one
            return t
        if t.kind == ITER and t.elems and other.kind == LOADER:
            # `pbar = utils.progress(loader)` on one path, `tqdm(loader)` on the other
            # (BigGAN): either way the loop gets the loader's batches
            return Val(ITER, elems=(join(t.elems[0], element_of(other)),))
        if t.kind == TENSOR and other.kind == TENSORS and other.elems and any(e.kind != TENSOR for e in other.elems):
            # `return keep` on an early exit, `return keep, count` at the end (SSD's nms): the
            # callers unpack the tuple, whose parts are not all tensors
            return other
        if t.kind in (TENSOR, TENSORS) and other.kind in (PY, UNKNOWN, TENSOR, TENSORS):
            if t.empty:  # empty on one path only: what the other path holds may have elements
                t = t.with_(empty=False)
            if other.kind == PY and other.py in ("list", "tuple") and t.kind == TENSORS:
                return t.with_(elems=None)  # a list that tensors were appended to
            if other.kind == PY and other.py not in (None, "none") and other.py not in NUMBERS:
                continue  # a tensor or a str/dict: nothing to say
            if t.device == CPU and other.kind == UNKNOWN and (other.cls or "").startswith("@"):
                # `cat(parts) if len(parts) else torch.empty(0)` (Detic's gt_classes, with
                # detectron2's `cat`): a CPU fallback says nothing of where another module's
                # call put the other path's tensor
                return t.with_(device=None)
            return t
    return UNKNOWN_VAL


def _positional(a: Val, b: Val) -> Optional[Tuple[Val, ...]]:
    """Two tuples (a generator's `yield start, end, chunk` at two places): each position
    holds the join of its two values. Of two lengths (`__getitem__` returning three items
    in test mode, four otherwise), the longer's positions, joined where the shorter has one:
    unpacking either length reads the positions it can."""
    if not a.elems or not b.elems or min(len(a.elems), len(b.elems)) < 2:
        return None
    if any(v.kind == PY and v.py != "tuple" for v in (a, b)):
        return None  # a list's items are any of them, not positions
    if len(a.elems) < len(b.elems):
        a, b = b, a
    return tuple(join(x, b.elems[i]) if i < len(b.elems) else x for i, x in enumerate(a.elems))


def _appended(a: Val, b: Val) -> Optional[Tuple[Val, ...]]:
    """A list that instances (or loaders, or arrays) were appended to on one path (`if opts.blank:
    filters.append(SuppressBlank())`, a loop's body) and not on the other: what it may hold
    is what was appended."""
    if a.kind != PY or a.py != "list" or any(v.elems and len(v.elems) != 1 for v in (a, b)):
        return None  # (an empty list literal has no items: `()`)
    items = [v.elems[0] for v in (a, b) if v.elems]
    if not items or any(e.kind not in (OBJECT, MODULE, LOADER, NUMPY) and not is_dict_of(e) for e in items):
        return None
    return (items[0] if len(items) == 1 else join(items[0], items[1]),)


# `py` tags of Python numbers: two of them joined are still a number. A bool may say more:
# "false" (the literal), "true" (known true: a command-line option on by default, `x is None`
# of a known None), "periodic" (true every N steps: `step % N == 0`, `heat.periodic_test`)
NUMBERS = frozenset(("int", "float", "bool", "number", "false", "true", "periodic"))


def _py_join(a: Optional[str], b: Optional[str]) -> Optional[str]:
    if a == b:
        return a
    if {a, b} == {"periodic", "false"}:
        return "periodic"  # a flag that is off, or on every N steps (OLMo's metrics flag)
    return "number" if a in NUMBERS and b in NUMBERS else None


def _either_class(a: Val, b: Val) -> Optional[str]:
    """Instances of two classes on two paths (`VPSDE(...) if c else VESDE(...)`, `Adam if
    opt == "adam" else SGD`): both, as "A|B". A method call or an attribute read asks each
    class, and a rule asks whether every one of them fits (can every optimizer fuse)."""
    functions = a.kind == PY and a.py == b.py and a.py in ("function", "class")  # or classes themselves
    if (a.kind not in (OPTIM, OBJECT, MODULE) and not functions) or not a.cls or not b.cls:
        return None
    keys = sorted(set(a.cls.split("|")) | set(b.cls.split("|")))
    return "|".join(keys) if len(keys) <= MAX_PATH_CLASSES else None


# More classes than this on one name: too many to follow each. An engine picks one of a score
# of backends by its flags at start-up (lightllm's `init_model`), and each runs as often as
# the engine steps, so the bound is well above that.
MAX_PATH_CLASSES = 32


def classes_of(v: Val) -> Tuple[str, ...]:
    """The class keys an instance may have: one, or one per path that made it."""
    return tuple(v.cls.split("|")) if v.cls else ()


def item_values(recv: Val) -> Optional[Val]:
    """What `recv.items()` pairs with its keys where `recv` holds tensors: a dict of them, or
    a "tensor" read with `.items()` (a collated batch of dicts, DETR's targets, a model's
    output dict); None for any other receiver."""
    if is_dict_of(recv):
        return recv.elems[0]
    if recv.kind == TENSORS:
        return element_of(recv)
    if recv.kind == TENSOR:
        return tensor(recv.device, pinned=recv.pinned, assumed=recv.assumed)
    return None


def is_dict_of(val: Val) -> bool:
    """A dict whose values are known (joined): `**kwargs` from its callers."""
    return val.kind == PY and val.py == "dict" and bool(val.elems)


def is_registry(val: Val) -> bool:
    """A dict of functions or classes (`VQ_models = {"VQ-16": VQ_16, ...}`): calling an item
    makes what any of them makes."""
    return is_dict_of(val) and bool(function_keys(val.elems[0]) or class_key(val.elems[0]))


def element_of(val: Val) -> Val:
    """The value of one item when `val` is iterated, indexed or unpacked."""
    if val.kind == TENSOR:
        return tensor(val.device, pinned=val.pinned, dtype=val.dtype, assumed=val.assumed,
                      ndim=val.ndim - 1 if val.ndim else None)
    if val.kind == TENSORS:
        return tensor(val.device, pinned=val.pinned, dtype=val.dtype, assumed=val.assumed)
    if val.kind == LOADER:
        return Val(TENSORS, val.device, pinned=val.pinned)
    if val.kind == MODULE:  # only containers iterate: ModuleList, Sequential (their items, if known)
        return val.elems[0] if val.elems else Val(MODULE, val.device)
    if val.kind == ITER and val.elems:
        return val.elems[0]
    if val.kind == NUMPY:
        return Val(NUMPY, ndim=val.ndim - 1 if val.ndim else None)
    if is_dict_of(val):
        return PY_VAL  # a dict's keys (its values: `.values()`, `d[k]`)
    if val.kind in (PY, UNKNOWN) and val.elems:  # a literal `[(a, b), (c, d)]`: any of its items
        out = val.elems[0]
        for e in val.elems[1:]:
            out = join(out, e)
        return out
    if val.kind == PY and val.py == "param_groups":
        return py("param_group")
    if val.kind == PY:
        return PY_VAL if val.py not in ("list", "tuple", "dict", "set") else UNKNOWN_VAL
    return UNKNOWN_VAL
