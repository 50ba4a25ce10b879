"""What a function's parameters hold on entry: what its annotation says, what every call in
the project passes, its default; else what the function's role tells (`self`, `cls`, a
module's `forward` input, a training step's batch and index, Lightning's step hooks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.annotations import annotation_val
from synclint.semantic.callgraph import hot_name
from synclint.semantic.scopes import FuncInfo
from synclint.semantic.syntax import all_params, is_none
from synclint.semantic.values import Val

if TYPE_CHECKING:
    from synclint.semantic.model import SemanticModel

__all__ = ["bind_params", "declare_param"]


def bind_params(ctx: "SemanticModel", info: FuncInfo, node: cst.FunctionDef) -> None:
    """Declare and bind each parameter of `node` in its scope (`info`, on top of the stack)."""
    params = all_params(node.params)
    is_method = info.cls is not None
    forward_like = info.name in ("forward", "__call__") and (not is_method or info.cls.is_module) or (
        info.name == "forward"
    )
    step_like = hot_name(info.name) and info.name.endswith("_step")

    def called_in_project() -> bool:
        """Some call the project resolves passes this function an argument."""
        return any(ctx.param_from_callers(info.qual, q.name.value) is not None for q in params[is_method:])

    for i, p in enumerate(params):
        pname = p.name.value
        declare_param(info, p, double_star=p is node.params.star_kwarg)
        val = None
        callers = ctx.param_from_callers(info.qual, pname)
        if is_method and info.name in L.HOST_PARAMETER_METHODS and ctx.library_base(
                info.cls.name, lambda b: f"{info.name}.{pname}" in L.HOST_PARAMETERS.get(b, ())) is not None:
            # filled by the framework with data it moved to the host (mmengine's metric results)
            val = Val(V.PY, py="list", elems=(V.HOST_OBJECT,))
        elif is_method and f"{info.name}.{pname}" in _registry_host_parameters(ctx, info):
            # the loader's batch, handed over by the framework that built the class (detectron2)
            val = Val(V.PY, py="list", elems=(Val(V.PY, py="dict", elems=(V.tensor(V.CPU),)),))
        elif callers is not None and V.is_none(callers) and not _has_default(p):
            val = callers  # every call passes None, or leaves it to its default None (`d: Optional[Tensor]`)
        elif p.annotation is not None:
            # An annotation we cannot read (a user type) is still not a tensor by
            # default: trust the author over the forward() heuristic, but not over what
            # the callers pass (`scaler: amp.GradScaler`, given a `torch.amp.GradScaler`).
            val = annotation_val(ctx, p.annotation.annotation)
            if val is None:
                val = callers if callers is not None and callers.kind != V.UNKNOWN else V.UNKNOWN_VAL
            elif callers is not None and callers.kind == val.kind != V.UNKNOWN:
                val = callers  # `optimizer: Optimizer`, and every caller passes an AdamW
            elif callers is not None and callers.kind == V.TENSOR and not callers.assumed \
                    and val.kind == V.PY and val.py in V.NUMBERS:
                val = callers  # `cfg_scale: float`, and a caller passes `torch.tensor(cfg_scale)`
            elif callers is not None and callers.kind == V.TENSORS and val.kind == V.PY and val.py in (
                    "dict", "list", "tuple") and not val.elems:
                val = callers  # `batch: dict`, and every caller passes a loader's batch (a dict of tensors)
        elif i == 0 and is_method and (pname == "cls" or _is_classmethod(node)):
            val = V.class_value(info.cls.name)  # `return cls(...)` makes an instance
        elif i == 0 and is_method and pname == "self":
            val = Val(V.MODULE, cls=info.cls.name) if info.cls.is_module else Val(V.OBJECT, cls=info.cls.name)
        elif callers is not None and callers.kind != V.UNKNOWN:
            val = callers  # every in-file call passes this
        elif _has_default(p):
            val = ctx.infer(p.default)
            if val.kind == V.PY and val.py == "false" and callers is not None:
                val = V.py("bool")  # off by default, but a call passes a value not known: either
            elif val.kind == V.PY and val.py in ("true", "false") and not called_in_project():
                # no call the project resolves (none, or one through `**kwargs`: vector-quantize's
                # `codebook_class(**codebook_kwargs)`): the default is what it holds where nothing
                # passes it, not a value to choose a branch by. A call that passes the others
                # and leaves it (`super().__init__(hidden=4)`) keeps it.
                val = val.with_(assumed=True)
            elif val.kind == V.UNKNOWN:
                val = V.PY_VAL if type(p.default) in (cst.Integer, cst.Float, cst.SimpleString) else val
            elif val.device == V.CPU and val.kind in (V.DEVICE, V.PY) and not called_in_project():
                # `device="cpu"` of a function nothing in the project calls: a library's
                # default, whose users choose the device (`assumed`, as a forward's input).
                # Called without it (trl's `get_global_statistics`), the default holds.
                val = Val(val.kind, V.CPU, py=val.py, assumed=True)
        elif forward_like:
            val = V.tensor(None, assumed=True)
        elif step_like:
            if is_method and info.name in L.LIGHTNING_STEP_HOOKS and i >= 2:
                val = V.py("int")  # Lightning: (self, batch, batch_idx[, dataloader_idx])
            elif is_method and info.name in L.LIGHTNING_STEP_HOOKS and i == 1 and ctx.in_lightning_module():
                # Lightning moves the batch to the module's device before the hook runs
                # (`transfer_batch_to_device`): the GPU, on a GPU run
                val = Val(V.TENSORS, V.CUDA)
            elif pname in L.BATCH_PARAM_NAMES or "batch" in pname and not pname.endswith(("idx", "size", "_nb")):
                val = Val(V.TENSORS, None)
            elif pname.endswith(("idx", "_nb")):
                val = V.py("int")
        ctx.bind(pname, val if val is not None else V.UNKNOWN_VAL)


def _registry_host_parameters(ctx: "SemanticModel", info: FuncInfo) -> frozenset:
    """The "method.parameter"s a framework fills with a loader's batch, for the class of
    `info`, by the registries its decorators put it in (`@META_ARCH_REGISTRY.register()`)."""
    node = info.cls.node
    out: frozenset = frozenset()
    for d in node.decorators if node is not None else ():
        call = d.decorator
        if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value in L.REGISTRY_REGISTERS:
            out |= L.REGISTRY_HOST_PARAMETERS.get(ctx.qualname(call.func.value) or "", frozenset())
    return out


def _has_default(p: cst.Param) -> bool:
    """A default other than None."""
    return p.default is not None and not is_none(p.default)


def declare_param(info: FuncInfo, p: cst.Param, double_star: bool = False) -> None:
    """Record a parameter's name, position (`**name` for the keywords' dict) and whether it
    has a default."""
    name = p.name.value
    info.params.add(name)
    info.param_order.append("**" + name if double_star else name)
    if p.default is not None:
        info.defaults.add(name)


def _is_classmethod(node: cst.FunctionDef) -> bool:
    return any(type(d.decorator) is cst.Name and d.decorator.value == "classmethod" for d in node.decorators)

