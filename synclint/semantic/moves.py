"""Device moves and factories: the one parser of `.to()`, `.cuda()`, `.type()` and `.type_as()`.

Rules ask `gpu_move(model, call)` whether a call moves its receiver to a (possibly) GPU
device and with which arguments, and `factory_under(model, e)` whether a tensor was built by
a torch factory on the host just before (`torch.zeros(n).long()`), so that no rule parses
these calls itself.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.syntax import is_true, kwarg, string_value


class Move:
    """A call that moves its receiver to a (possibly) GPU device."""

    __slots__ = ("call", "method", "device", "device_is_tensor", "dtype", "non_blocking", "extra", "nb_given")

    def __init__(self, call: cst.Call, method: str, device: Optional[cst.BaseExpression],
                 device_is_tensor: bool, dtype: Optional[cst.BaseExpression], non_blocking: Optional[bool],
                 extra: bool, nb_given: bool = False) -> None:
        self.call = call
        self.method = method  # "to", "cuda", "type" (a tensor type string) or "type_as"
        self.device = device  # None: `.cuda()` without argument
        # `.to(other)`, `.type_as(other)`, `.type(t.type())`: the dtype changes too, so
        # `device=` alone is not the same call
        self.device_is_tensor = device_is_tensor
        self.dtype = dtype
        self.non_blocking = non_blocking  # True / False (absent or literal False) / None (not a literal)
        self.extra = extra  # copy=, memory_format= or other arguments
        self.nb_given = nb_given  # non_blocking passed at all (keyword or positional)


# The methods `gpu_move` knows as moves
MOVE_METHODS = ("to", "cuda", "type", "type_as")


def _method(call: cst.Call) -> Optional[str]:
    f = call.func
    if type(f) is cst.Attribute and f.attr.value in MOVE_METHODS:
        return f.attr.value
    return None


def gpu_move(model, call: cst.Call) -> Optional[Move]:
    """The move if `call` is `x.to(<GPU device>, ...)`, `x.cuda(...)`, `x.type_as(gpu)` or
    `x.type(<CUDA tensor type>)`, else None. A tensor known to hold no elements
    (`torch.zeros([0]).to(device)`) is no move: its copy returns before any transfer."""
    m = _method(call)
    if m is None or model.cuda_less_depth or any(a.star for a in call.args):
        return None
    if model.infer(call.func.value).empty:
        return None
    pos = [a.value for a in call.args if a.keyword is None]
    kws = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    nb_expr = kws.get("non_blocking")
    if m == "type_as":
        if len(pos) != 1 or kws or model.infer(pos[0]).kind != V.TENSOR:
            return None
        is_dev, d = model.device_of_arg(pos[0])
        return None if d == V.CPU else Move(call, m, pos[0], True, None, False, False)
    if m == "type":
        arg = kws.get("dtype", pos[0] if pos else None)
        if arg is None:
            return None  # `.type()`: a query
        v = model.infer(arg)
        if v.kind == V.PY and v.py == "typestr":  # `.type(torch.cuda.FloatTensor)`, `.type(x.type())`
            if _computed_from(call.func.value, arg):
                return None  # `(tl < br).type(tl.type())`: already where `tl` is
            return Move(call, m, arg, True, None, is_true(kws.get("non_blocking")), False) if v.device != V.CPU else None
        if model.torch_name(arg) is not None:
            return None  # `.type(torch.float16)`: no move
        s = string_value(arg)
        if s is not None:
            return Move(call, m, arg, True, None, False, False) if s.startswith("torch.cuda.") else None
        return None
    if m == "cuda":
        if len(pos) > 2 or set(kws) - {"device", "non_blocking", "memory_format"}:
            return None
        dev = kws.get("device", pos[0] if pos else None)
        if nb_expr is None and len(pos) == 2:
            nb_expr = pos[1]
        if dev is not None:
            is_dev, d = model.device_of_arg(dev)
            if is_dev and d == V.CPU:
                return None
        return Move(call, m, dev, False, None, is_true(nb_expr), "memory_format" in kws, nb_expr is not None)
    dev = kws.get("device")
    rest = pos
    if dev is None and pos:
        dev, rest = pos[0], pos[1:]
    if dev is None:
        return None
    is_dev, d = model.device_of_arg(dev)
    if not is_dev or d == V.CPU:
        return None
    dev_is_tensor = model.infer(dev).kind == V.TENSOR
    dtype = kws.get("dtype")
    extra = bool(set(kws) - {"device", "dtype", "non_blocking"})
    if rest:
        if dtype is None and model.torch_name(rest[0]) is not None and not model.device_of_arg(rest[0])[0]:
            dtype, rest = rest[0], rest[1:]
        if rest and nb_expr is None:
            nb_expr, rest = rest[0], rest[1:]
        extra = extra or bool(rest)
    return Move(call, m, dev, dev_is_tensor, dtype, is_true(nb_expr), extra, nb_expr is not None)


def _computed_from(recv: cst.BaseExpression, arg: cst.BaseExpression) -> bool:
    """`arg` is `y.type()` and the receiver reads `y` through operators and indexing alone (no
    call that could move it): the receiver is on `y`'s device."""
    if not (type(arg) is cst.Call and not arg.args and type(arg.func) is cst.Attribute
            and arg.func.attr.value == "type" and type(arg.func.value) in (cst.Name, cst.Attribute)):
        return False
    y = arg.func.value
    stack, found = [recv], False
    while stack:
        n = stack.pop()
        if type(n) is cst.Call:
            return False
        if n.deep_equals(y):
            found = True
            continue
        stack.extend(c for c in n.children if isinstance(c, cst.CSTNode))
    return found


def moves_own_attribute(model, call: cst.Call) -> bool:
    """`self.obs = self.obs.to(device)`: state moved where it then stays. After the first
    time the attribute is already there and the move does nothing: a setup move (as
    `model.to(device)`), not a copy per step."""
    stmt = model.stmt_stack[-1] if model.stmt_stack else None
    if not (type(stmt) is cst.Assign and len(stmt.targets) == 1 and stmt.value is call):
        return False
    target, src = stmt.targets[0].target, call.func
    if type(target) is not cst.Attribute or type(src) is not cst.Attribute:
        return False
    src = src.value
    # `self.images = self.images.to(dtype).to(device)`: through casts of the same attribute
    while type(src) is cst.Call and type(src.func) is cst.Attribute and src.func.attr.value in _CASTS:
        src = src.func.value
    return target.deep_equals(src)


_CASTS = frozenset(("to", "float", "half", "double", "bfloat16", "long", "int", "contiguous", "type"))


def host_type_move(model, call: cst.Call) -> bool:
    """`x.type(torch.FloatTensor)`, `x.type("torch.LongTensor")` or `x.type_as(cpu_tensor)`:
    a move to the CPU (a copy back from the GPU when `x` is there)."""
    m = _method(call)
    pos = [a.value for a in call.args if a.keyword is None and not a.star]
    if m == "type_as":
        return len(pos) == 1 and model.infer(pos[0]).kind == V.TENSOR and model.device_of_arg(pos[0])[1] == V.CPU
    if m != "type":
        return False
    arg = kwarg(call, "dtype") or (pos[0] if pos else None)
    if arg is None:
        return False
    v = model.infer(arg)
    if v.kind == V.PY and v.py == "typestr":
        return v.device == V.CPU
    s = string_value(arg)
    return s is not None and s.startswith("torch.") and s.endswith("Tensor") and not s.startswith("torch.cuda.")


def factory_under(model, e: cst.BaseExpression) -> Optional[Tuple[cst.Call, str, bool]]:
    """(factory call, torch name, seen through casts/views) for `torch.zeros(n).long().view(...)`.

    The name is "tensor" for a legacy constructor of data (`torch.LongTensor([0])`), and gets a
    "~random" suffix when an in-place sampler sits in between (`torch.empty(n).normal_()`)."""
    through = False
    random = False
    while type(e) is cst.Call:
        tn = model.torch_name(e.func)
        if tn is not None:
            if tn in L.LEGACY_CTORS and e.args and type(e.args[0].value) in (cst.List, cst.Tuple, cst.ListComp):
                tn = "tensor"
            if tn not in L.SIZE_FACTORIES and tn not in L.COPYING_DATA_FACTORIES:
                return None
            return e, tn + ("~random" if random else ""), through
        f = e.func
        m = f.attr.value if type(f) is cst.Attribute else None
        if m is None or m not in L.CAST_OR_VIEW_METHODS and m not in L.RANDOM_INPLACE_METHODS and m != "to":
            return None
        if m == "to" and not _dtype_only_to(model, e):
            return None
        random = random or m in L.RANDOM_INPLACE_METHODS
        e = f.value
        through = True
    return None


def _dtype_only_to(model, call: cst.Call) -> bool:
    kws = {a.keyword.value for a in call.args if a.keyword is not None}
    pos = [a.value for a in call.args if a.keyword is None]
    if kws - {"dtype"} or len(pos) > 1:
        return False
    return all(model.torch_name(p) is not None and not model.device_of_arg(p)[0] for p in pos) and bool(pos or kws)


def host_data(model, data: cst.BaseExpression, strict: bool) -> bool:
    """Is `data` (of torch.tensor / as_tensor) host data whose copy to the GPU blocks?

    `strict`: unknown values do not count (as_tensor of a GPU tensor is free)."""
    if type(data) in (cst.List, cst.Tuple) and not data.elements:
        return False  # `torch.tensor([], device=d)`: no elements, nothing to copy
    if type(data) in (cst.List, cst.Tuple, cst.ListComp, cst.Integer, cst.Float, cst.GeneratorExp):
        v = model.infer(data)
        return not (v.kind == V.TENSORS and v.device != V.CPU)
    if type(data) is cst.UnaryOperation:
        return host_data(model, data.expression, strict)
    v = model.infer(data)
    if v.kind in (V.PY, V.NUMPY):
        return True
    if v.kind in (V.TENSOR, V.TENSORS):
        return V.on_host(v)
    return v.kind == V.UNKNOWN and not strict


def nonblocking_d2h(model, call: cst.Call) -> bool:
    """`x.to("cpu", non_blocking=True)` or `host.copy_(x, non_blocking=True)`: a device-to-host
    copy that returns before the data has arrived, so a later synchronize is required."""
    f = call.func
    m = f.attr.value if type(f) is cst.Attribute else None
    if m not in ("to", "copy_") or not is_true(kwarg(call, "non_blocking")):
        return False
    if m == "to":
        pos = [a.value for a in call.args if a.keyword is None]
        is_dev, d = model.device_of_arg(kwarg(call, "device") or (pos[0] if pos else None))
        return is_dev and d == V.CPU
    dst = model.infer(f.value)
    return dst.kind == V.TENSOR and dst.device == V.CPU


_CUDA_STRING = re.compile(r"^cuda(:\d+)?$")


def is_cuda_string(node: cst.SimpleString) -> bool:
    """"cuda" or "cuda:1"."""
    if "cuda" not in node.value:
        return False
    s = string_value(node)
    return s is not None and _CUDA_STRING.match(s) is not None


def puts_on_cuda(model, call: cst.Call) -> bool:
    """`.cuda()`, or a `.to()`/`device=`/`torch.device()` argument that resolves to CUDA."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "cuda":
        return True
    args = [kwarg(call, "device")]
    if type(func) is cst.Attribute and func.attr.value == "to" and call.args and call.args[0].keyword is None:
        args.append(call.args[0].value)
    if call.args and model.torch_name(func) == "device":
        args.append(call.args[0].value)
    return any(a is not None and model.device_of_arg(a) == (True, V.CUDA) for a in args)
