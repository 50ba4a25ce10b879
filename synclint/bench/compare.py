"""Do the two sides of a pair compute the same result?"""

from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple

# Tolerances for compare="close", by dtype family. GPU reductions in a different order
# differ in the last bits; accumulations over a loop compound that.
CLOSE_TOL = {
    "float32": (1e-4, 1e-5),
    "low": (1e-2, 1e-3),  # float16 / bfloat16
}


def _to_host(torch: Any, x: Any) -> Any:
    """Tensors to CPU, NumPy arrays and Python numbers to tensors, containers recursively."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    if isinstance(x, bool):
        return torch.tensor(x)
    if isinstance(x, numbers.Integral):
        return torch.tensor(int(x), dtype=torch.int64)
    if isinstance(x, numbers.Real):
        return torch.tensor(float(x), dtype=torch.float64)
    if type(x).__module__ == "numpy" and hasattr(x, "dtype"):
        try:
            return torch.as_tensor(x.copy() if hasattr(x, "copy") else x)
        except Exception:  # noqa: BLE001 - object arrays etc.
            return x
    if isinstance(x, (list, tuple)):
        return [_to_host(torch, v) for v in x]
    if isinstance(x, dict):
        return {k: _to_host(torch, v) for k, v in x.items()}
    return x


def _as_tensor(torch: Any, x: Any) -> Any:
    """A list of 0-d tensors / nested lists (from `.tolist()`) as one tensor, if it is one."""
    if isinstance(x, list):
        try:
            parts = [_as_tensor(torch, v) for v in x]
            if all(isinstance(p, torch.Tensor) for p in parts):
                return torch.stack(parts) if parts else torch.tensor([])
        except Exception:  # noqa: BLE001 - ragged: not a tensor
            return x
    return x


def _tol(torch: Any, a: Any, b: Any) -> Tuple[float, float]:
    dts = {a.dtype, b.dtype}
    if dts & {torch.float16, torch.bfloat16}:
        return CLOSE_TOL["low"]
    # Python floats arrive as float64 but were usually computed in float32 on the device:
    # float32 tolerances unless told otherwise.
    return CLOSE_TOL["float32"]


def same_result(torch: Any, a: Any, b: Any, mode: str = "equal") -> Tuple[Optional[bool], str]:
    """(same, reason). mode "equal": exact values (NaN equals NaN, dtype may differ);
    "close": float tolerance; "none": not compared (returns None)."""
    if mode == "none":
        return None, "not compared (compare='none')"
    if mode not in ("equal", "close"):
        return False, f"unknown compare mode {mode!r}"
    return _same(torch, _to_host(torch, a), _to_host(torch, b), mode == "close", "result")


def _same(torch: Any, a: Any, b: Any, close: bool, where: str) -> Tuple[bool, str]:
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        a, b = _as_tensor(torch, a), _as_tensor(torch, b)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            if a.numel() == b.numel() == 1:
                a, b = a.reshape(()), b.reshape(())
            else:
                return False, f"{where}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        return _same_tensor(torch, a, b, close, where)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False, f"{where}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            ok, why = _same(torch, x, y, close, f"{where}[{i}]")
            if not ok:
                return ok, why
        return True, "same"
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return False, f"{where}: keys {sorted(map(str, a))} vs {sorted(map(str, b))}"
        for k in a:
            ok, why = _same(torch, a[k], b[k], close, f"{where}[{k!r}]")
            if not ok:
                return ok, why
        return True, "same"
    if a is None or b is None:
        return (a is None and b is None), ("same" if a is None and b is None else f"{where}: {a!r} vs {b!r}")
    try:
        ok = bool(a == b)
    except Exception as e:  # noqa: BLE001
        return False, f"{where}: cannot compare {type(a).__name__} with {type(b).__name__} ({e})"
    return ok, "same" if ok else f"{where}: {a!r} vs {b!r}"[:300]


def _same_tensor(torch: Any, a: Any, b: Any, close: bool, where: str) -> Tuple[bool, str]:
    """Values equal (NaN equals NaN), dtypes promoted; with `close`, float tolerance.

    (torch.testing.assert_close would do, but its first call imports torch.distributed.)"""
    floating = a.is_floating_point() or b.is_floating_point() or a.is_complex() or b.is_complex()
    if a.dtype == torch.bool and b.dtype == torch.bool:
        x, y = a, b
    else:
        common = torch.promote_types(a.dtype, b.dtype)
        if floating and not common.is_floating_point and not common.is_complex:
            common = torch.float64
        x, y = a.to(common), b.to(common)
    if a.numel() == 0:
        return True, "same"
    if floating:
        rtol, atol = _tol(torch, a, b) if close else (0.0, 0.0)
        ok = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = x == y
    if bool(ok.all()):
        return True, "same"
    bad = int((~ok).sum())
    idx = int((~ok).reshape(-1).nonzero()[0])
    xv, yv = x.reshape(-1)[idx].item(), y.reshape(-1)[idx].item()
    tol = f" (rtol {rtol:g}, atol {atol:g})" if floating and close else ""
    return False, f"{where}: {bad} of {a.numel()} elements differ{tol}; first at flat index {idx}: {xv!r} vs {yv!r}"
