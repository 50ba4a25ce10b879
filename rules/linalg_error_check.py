from typing import Optional

import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import last_names, short
from synclint.rules._helpers import arg, gpu_number, has_star, literal_bool, one_line, torch_alias
from synclint.semantic import RECEIVER

# torch name -> (`_ex` twin under torch.linalg, field of its result that the plain form returns).
# Only functions measured to sync on CUDA (H200, torch 2.11) through `_linalg_check_errors`.
_TWINS = {
    "linalg.inv": ("inv_ex", "inverse"),
    "linalg.cholesky": ("cholesky_ex", "L"),
    "linalg.solve": ("solve_ex", "result"),
    "linalg.lu_factor": ("lu_factor_ex", None),  # returns (LU, pivots): no field to pick
    "linalg.ldl_factor": ("ldl_factor_ex", None),
    "inverse": ("inv_ex", "inverse"),
    "cholesky": ("cholesky_ex", "L"),
}
_EX = {"linalg.inv_ex", "linalg.cholesky_ex", "linalg.solve_ex", "linalg.lu_factor_ex", "linalg.ldl_factor_ex"}
_METHODS = {"inverse": "inverse", "cholesky": "cholesky"}


class LinalgErrorCheck(Rule):
    """
    ## What it does
    Flags `torch.linalg.inv`, `cholesky`, `solve`, `lu_factor`, `ldl_factor`, `torch.inverse`,
    `torch.cholesky` (and the `Tensor.inverse()`/`Tensor.cholesky()` methods) on GPU tensors
    and the `_ex` forms called with `check_errors=True`.

    ## Why is this bad?
    After the factorization these functions call `_linalg_check_errors`
    (`aten/src/ATen/native/BatchLinearAlgebra.cpp`), which reads the LAPACK `info` tensor back
    with `infos.any().item<bool>()` to raise `LinAlgError` on a singular or non-positive-definite
    input. The CPU waits until every queued kernel has finished, on every call. Measured on an
    H200 with torch 2.11: each form flagged here is caught by `torch.cuda.set_sync_debug_mode`,
    and its `_ex` twin is not.

    ## Use instead
    The `_ex` forms return the same result plus the `info` tensor and do not check it; check
    it lazily (once per N steps, or with `torch._assert_async`):

    ```python
    A_inv, info = torch.linalg.inv_ex(A)            # not torch.linalg.inv(A)
    L, info = torch.linalg.cholesky_ex(K)           # not torch.linalg.cholesky(K)
    X, info = torch.linalg.solve_ex(A, B)           # not torch.linalg.solve(A, B)
    bad_steps += (info != 0).sum()                  # read back once per epoch
    ```

    ## Fix safety
    The fix (`torch.linalg.inv(A)` -> `torch.linalg.inv_ex(A).inverse`, likewise `cholesky_ex(...).L`
    and `solve_ex(...).result`) is unsafe: the values are the same for valid inputs, but a
    singular or non-positive-definite input no longer raises; it yields inf/NaN silently
    unless `info` is checked.

    ## Known problems
    `eigh`, `eigvalsh`, `eig`, `svd`, `svdvals`, `lstsq`, `pinv`, `matrix_rank`, `cond`,
    `matrix_exp`, `tensorinv` and `tensorsolve` also sync on CUDA (measured), but have no
    non-syncing twin, so they are not flagged.
    """

    CODE = "SYN112"
    NAME = "linalg-error-check"
    CALLS = last_names(_EX, _TWINS, _METHODS)
    MESSAGE = "`{call}` checks for errors on the host, which waits for all queued GPU work"
    FIX_TITLE = "Use `torch.linalg.{ex}` and check `info` lazily"
    FIX = "sometimes"
    CATALOGUE = ("E4",)
    VALID = [
        Valid(
            "import torch\nA = torch.randn(4, 8, 8, device='cuda')\nfor _ in range(3):\n"
            "    A_inv, info = torch.linalg.inv_ex(A)\n    L, _ = torch.linalg.cholesky_ex(A @ A.mT)\n"
            "    d = torch.linalg.det(A)\n    Q, R = torch.linalg.qr(A)\n"
        ),
        Valid("import torch\nA = torch.randn(8, 8)\nfor _ in range(3):\n    B = torch.linalg.inv(A)\n"),
        Valid("import torch\nA = torch.randn(8, 8, device='cuda')\nB = torch.linalg.inv(A)\n", cold=True),
        Valid(
            "import torch\nclass Cam(torch.nn.Module):\n    def forward(self, x, pose):\n"
            "        return pose.inverse().transform_points(x)\n"
        ),
        Valid(
            "import numpy as np\nimport torch\nA = np.eye(3)\nfor _ in range(3):\n    B = np.linalg.inv(A)\n"
        ),
        Valid(
            "import torch\n"
            "def gram(x):\n"
            "    return x @ x.mT + torch.eye(x.shape[-1], device=x.device)\n"
            "x = torch.randn(8, 8)\n"
            "for _ in range(3):\n"
            "    L = torch.linalg.cholesky(gram(x))\n",
        ),
        Valid(
            "import torch\n"
            "class Whiten(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.cov = torch.eye(4, device='cuda')\n"
            "    def forward(self, x):\n"
            "        inv, info = torch.linalg.inv_ex(self.cov)\n"
            "        return x @ inv\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return torch.linalg.inv(x) @ y\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nA = torch.randn(4, 8, 8, device='cuda')\nfor _ in range(3):\n"
            "    B = torch.linalg.inv(A)\n",
            line=4,
            hot=True,
            message="`torch.linalg.inv(A)` checks for errors on the host, which waits for all queued GPU work",
            fixed="import torch\nA = torch.randn(4, 8, 8, device='cuda')\nfor _ in range(3):\n"
            "    B = torch.linalg.inv_ex(A).inverse\n",
        ),
        Invalid(
            "import torch\nclass GP(torch.nn.Module):\n    def forward(self, K: torch.Tensor, y):\n"
            "        L = K.cholesky()\n        return torch.cholesky_solve(y, L)\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\nimport torch.linalg as LA\nA = torch.randn(8, 8, device='cuda')\nb = torch.randn(8, 1, device='cuda')\n"
            "for _ in range(3):\n    x = LA.solve(A, b)\n    y = LA.lu_factor_ex(A, check_errors=True)\n",
            line=6,
            fixed="import torch\nimport torch.linalg as LA\nA = torch.randn(8, 8, device='cuda')\nb = torch.randn(8, 1, device='cuda')\n"
            "for _ in range(3):\n    x = LA.solve_ex(A, b).result\n    y = LA.lu_factor_ex(A, check_errors=True)\n",
        ),
        Invalid(
            "import torch\n"
            "def gram(x):\n"
            "    return x @ x.mT + torch.eye(x.shape[-1], device=x.device)\n"
            "x = torch.randn(8, 8, device='cuda')\n"
            "for _ in range(3):\n"
            "    L = torch.linalg.cholesky(gram(x))\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Whiten(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.cov = torch.eye(4, device='cuda')\n"
            "    def forward(self, x):\n"
            "        return x @ torch.linalg.inv(self.cov)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "A = torch.randn(batch, dim, dim, device=device) + dim * torch.eye(dim, device=device)\n"
        ),
        flagged=(
            "def flagged(A: torch.Tensor):\n"
            "    return torch.linalg.inv(A)\n"
        ),
        fixed=(
            "def fixed(A: torch.Tensor):\n"
            "    A_inv, info = torch.linalg.inv_ex(A)\n"
            "    return A_inv\n"
        ),
        sizes={"batch": 256, "dim": 32},
        condition="every matrix is invertible (or `info` is checked later)",
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if has_star(node):
            return
        ctx = self.ctx
        func = node.func
        tn = ctx.torch_name(func)
        if tn in _EX:
            matrix = arg(node, 0, "A")
            if literal_bool(arg(node, 99, "check_errors")) and (matrix is None or ctx.gpu(matrix, RECEIVER) is not None):
                self.report(node, call=short(node), ex=tn.split(".", 1)[1] + "(..., check_errors=False)")
            return
        if tn in _TWINS:
            matrix = arg(node, 0, "A") or arg(node, 0, "input")
            if matrix is None or ctx.gpu(matrix, RECEIVER) is None:
                return
        elif tn is None and type(func) is cst.Attribute and func.attr.value in _METHODS and not node.args:
            matrix = func.value
            if not gpu_number(ctx, matrix):  # a known GPU tensor, not `pose.inverse()`
                return
            tn = _METHODS[func.attr.value]
        else:
            return
        ex, field = _TWINS[tn]
        self.report(node, self._fix(node, tn, ex, field, matrix), safe=False, call=short(node), ex=ex)

    def _fix(self, node: cst.Call, tn: str, ex: str, field: Optional[str], matrix) -> Optional[cst.BaseExpression]:
        if field is None or not one_line(node) or any(a.keyword is not None and a.keyword.value == "out" for a in node.args):
            return None
        func = node.func
        if tn.startswith("linalg.") and type(func) is cst.Attribute:
            call = node.with_changes(func=func.with_changes(attr=cst.Name(ex)))
        else:  # torch.inverse / torch.cholesky / method forms: spell torch.linalg.<ex>
            if node.args and not (tn in ("inverse", "cholesky") and len(node.args) == 1 and node.args[0].keyword is None):
                return None  # torch.cholesky(A, upper=True): keep it for a human
            alias = torch_alias(self.ctx)
            if alias is None:
                return None
            ex_func = cst.Attribute(cst.Attribute(cst.Name(alias), cst.Name("linalg")), cst.Name(ex))
            call = cst.Call(ex_func, [cst.Arg(matrix)])
        return cst.Attribute(call, cst.Name(field))
