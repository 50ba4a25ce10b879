"""Values from type annotations: `x: Tensor`, `Optional[Tensor]`, `np.ndarray`, `int`, a class;
and whether a value passes an `isinstance` test of such types (`type_test_holds`)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.parse.builder import build_expression
from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.syntax import string_value
from synclint.semantic.values import Val

_PY = {"int": "int", "float": "float", "bool": "bool", "str": "str", "list": "list", "dict": "dict",
       "tuple": "tuple", "bytes": "str", "complex": "float", "List": "list", "Dict": "dict",
       "Tuple": "tuple", "Sequence": "list", "Mapping": "dict"}


def annotation_val(model, ann: cst.BaseExpression) -> Optional[Val]:
    """The value an annotation promises, or None if it says nothing we use. `model` resolves
    imported names and in-file classes (None: read the annotation syntactically)."""
    if type(ann) is cst.SimpleString:
        # (parsed once per tree: every walk binds every parameter, `def f(x: "Tensor")`)
        got = model.once(("annotation", id(ann)), lambda: _parsed(ann)) if model is not None else _parsed(ann)
        if got is None:
            return None
        ann = got
    if type(ann) is cst.Subscript:
        base = _name(model, ann.value)
        last = base.rsplit(".", 1)[-1]
        if last == "Optional" and ann.slice:
            inner = ann.slice[0].slice
            if type(inner) is cst.Index:
                return annotation_val(model, inner.value)
        if last in ("List", "list", "Tuple", "tuple", "Sequence", "Iterable") and ann.slice:
            inner = ann.slice[0].slice
            if type(inner) is cst.Index:
                v = annotation_val(model, inner.value)
                if v is not None and v.kind == V.TENSOR:
                    return Val(V.TENSORS, None)
            return V.py(_PY.get(last, "list"))
        if last in ("Dict", "dict", "Mapping", "MutableMapping") and len(ann.slice) == 2:
            # `dict[ModuleName, BaseEngine]`: its items are known where they are not plain data
            inner = ann.slice[1].slice
            v = annotation_val(model, inner.value) if type(inner) is cst.Index else None
            if v is not None and v.kind != V.PY:
                return Val(V.PY, py="dict", elems=(v,))
        if last in _PY:
            return V.py(_PY[last])
        if model is not None:  # a generic class of the project made concrete: `TrainingSAE[Any]`
            v = annotation_val(model, ann.value)
            if v is not None and v.kind in (V.MODULE, V.OBJECT) and v.cls:
                return v
        return None
    if type(ann) is cst.BinaryOperation and type(ann.operator) is cst.BitOr:  # Tensor | None
        for side in (ann.left, ann.right):
            v = annotation_val(model, side)
            if v is not None and v.kind != V.PY:
                return v
        return None
    name = _name(model, ann)
    last = name.rsplit(".", 1)[-1]
    q = model.qualname(ann) if model is not None else None
    # `Variable`: every tensor is one since torch 0.4 (`isinstance(t, Variable)` is true)
    if (last in ("Tensor", "FloatTensor", "LongTensor", "BoolTensor") and (q is None or q.startswith("torch"))) or q in (
            "torch.autograd.Variable", "torch.autograd.variable.Variable"):
        v = V.tensor(None)
        if last == "LongTensor":
            v.dtype = V.INT
        elif last == "BoolTensor":
            v.dtype = V.BOOL
        return v
    if last in ("ndarray", "NDArray") or (q or "").startswith("numpy"):
        return Val(V.NUMPY)
    if name in _PY:
        return V.py(_PY[name])
    if last in ("Module", "LightningModule"):
        return Val(V.MODULE)
    if L.pretrained_model_class(q):
        return Val(V.MODULE, cls=last)  # `text_encoder: T5EncoderModel`: as its `from_pretrained` makes
    if q is not None and L.tokenizer_class(q):
        return Val(V.OBJECT, cls=L.TOKENIZER)  # `tokenizer: T5Tokenizer`: its encodings are on the host
    if last == "DataLoader":
        return Val(V.LOADER, V.CPU)
    if (q or "").startswith("torch.optim.") and last[:1].isupper() and ".lr_scheduler" not in q or (
            q is None and last == "Optimizer"):
        return Val(V.OPTIM, cls=q)  # fused-ness unknown
    if last == "device":
        return Val(V.DEVICE)
    if model is not None:
        key = ann.value if type(ann) is cst.Name and ann.value in model.classes_by_name else q
        if key is None and type(ann) is cst.Name:  # `DecodeCache = util.DecodeCache`: a class's alias
            b = model.binding(ann.value)
            key = model.qualname(b.expr) if b is not None and b.expr is not None else None
        v = model.class_val(key) if key else None
        if v is not None:
            return v
    return None


def _parsed(ann: cst.SimpleString) -> Optional[cst.BaseExpression]:
    """The expression a string annotation spells, or None."""
    try:
        return build_expression((string_value(ann) or "").strip())
    except Exception:  # noqa: BLE001 - not an expression: says nothing
        return None


def annotation_val_syntactic(ann: cst.BaseExpression) -> Optional[Val]:
    return annotation_val(None, ann)


def _name(model, e: cst.BaseExpression) -> str:
    q = model.qualname(e) if model is not None else None
    if q:
        return q
    if type(e) is cst.Name:
        return e.value
    if type(e) is cst.Attribute:
        return e.attr.value
    return ""


def type_test_holds(ctx, v: Val, kinds: cst.BaseExpression) -> Optional[bool]:
    """Whether `isinstance(x, kinds)` holds of a value `v`, where its kind decides: a tensor is
    a `torch.Tensor` and no ndarray, number, string or list; a Python number or string is no
    tensor. None where the values do not tell."""
    names = [el.value for el in kinds.elements] if type(kinds) is cst.Tuple else [kinds]
    vals = [annotation_val(ctx, n) for n in names]
    if not vals or any(t is None for t in vals):
        return None
    tensor_type = [t.kind == V.TENSOR for t in vals]
    if v.kind == V.TENSOR:
        if any(tensor_type):
            return True
        if all(t.kind == V.NUMPY or t.kind == V.PY and t.py is not None for t in vals):
            return False
    elif v.kind == V.PY and (v.py in V.NUMBERS or v.py == "str") and all(tensor_type):
        return False
    return None
