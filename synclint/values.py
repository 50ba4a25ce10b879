"""What the engine knows about a value: the small abstract domain the rules ask about."""

from __future__ import annotations

from typing import Optional

# Kinds of value.
TENSOR = "tensor"
TENSORS = "tensors"  # a container of tensors: a batch, a tuple of outputs, parameters()
NUMPY = "numpy"
PY = "py"  # a plain Python value: number, string, list, dict, shape
MODULE = "module"  # an nn.Module instance
LOADER = "loader"  # a DataLoader
OPTIM = "optim"
DEVICE = "device"
EVENT = "event"
STREAM = "stream"
DIST = "dist"  # a torch.distributions object
UNKNOWN = "unknown"

CUDA = "cuda"
CPU = "cpu"


class Val:
    """An abstract value. `device` is CUDA, CPU or None (unknown: assumed GPU)."""

    __slots__ = ("kind", "device", "mask", "pinned", "ndim", "elems")

    def __init__(
        self,
        kind: str,
        device: Optional[str] = None,
        mask: bool = False,
        pinned: Optional[bool] = None,
        ndim: Optional[int] = None,
    ) -> None:
        self.kind = kind
        self.device = device
        self.mask = mask
        self.pinned = pinned
        self.ndim = ndim
        self.elems = None  # per-element values of a tuple/list literal, when known

    def with_(self, **kw) -> "Val":
        v = Val(self.kind, self.device, self.mask, self.pinned, self.ndim)
        for k, x in kw.items():
            setattr(v, k, x)
        return v

    @property
    def is_tensor(self) -> bool:
        return self.kind == TENSOR

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        extra = "".join(
            f" {k}={getattr(self, k)!r}" for k in ("device", "mask", "pinned", "ndim") if getattr(self, k)
        )
        return f"Val({self.kind}{extra})"


def tensor(device: Optional[str] = None, **kw) -> Val:
    return Val(TENSOR, device, **kw)


UNKNOWN_VAL = Val(UNKNOWN)
PY_VAL = Val(PY)
