from typing import Optional

import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short


class HostIndexIntoGpuTensor(Rule):
    """
    ## What it does
    Flags indexing a GPU tensor with an index that lives on the host: a Python list
    (`x[[0, 2, 5]]`), a `range`, a NumPy array or a CPU tensor (`x[cpu_ids]`), when reading or
    writing.

    ## Why is this bad?
    Advanced indexing needs the index on the tensor's device. Torch converts the host index into
    a CPU tensor and copies it over with a blocking host-to-device transfer, which also waits for
    all GPU work queued before it (`Copy.cu::copy_kernel_cuda` -> `memcpy_and_sync`), every time
    the line runs.

    ## Use instead
    Build the index on the device once, outside the hot path, and reuse it:
    ```python
    rows = torch.tensor([0, 2, 5], device=x.device)   # at setup
    for _ in range(steps):
        y = x[rows]
    ```
    For a CPU index tensor, create it on the device (`torch.randperm(n, device=device)`).

    ## Known problems
    Not flagged: basic indexing (`x[0]`, `x[1:3]`, `x[..., 0]`, `x[None]`, `x[(0, 1)]`), GPU
    index tensors, boolean masks (SYN2xx), NumPy values that might be scalars (a NumPy integer
    indexes like an int; only expressions known to be arrays count), and lists holding values
    of unknown type.
    """

    CODE = "SYN305"
    NAME = "host-index-into-gpu-tensor"
    MESSAGE = "indexing `{base}` with a host {what} copies the index to the GPU with a blocking transfer"
    FIX_TITLE = "Build the index on the GPU once, outside the hot path (`torch.tensor([...], device=...)`)"
    CATALOGUE = ()
    SETUP_EXEMPT = True
    VALID = [
        Valid(  # deep_sort's nms: a 0-d element of a CPU order indexes like an int, read on the host
            "import torch\nboxes = torch.rand(5, 7, device='cuda')\ndet = torch.zeros(len(boxes))\n"
            "_, order = torch.sort(det, descending=True)\nfor i in range(len(boxes)):\n    b = boxes[order[i]]\n"
        ),
        Valid(  # the helper's indices are already on the GPU
            "import torch\ndef keep_ids():\n    return torch.arange(3, device='cuda') * 2\n"
            "x = torch.randn(10, device='cuda')\nfor _ in range(3):\n    y = x[keep_ids()]\n"
        ),
        Valid(
            "import torch\nx = torch.randn(10, 4, device='cuda')\n"
            "a = x[0]\nb = x[1:3]\nc = x[..., 0]\nd = x[None]\ne = x[(0, 1)]\nf = x[0, 1]\n"
        ),
        Valid("import torch\nx = torch.randn(10, device='cuda')\nids = torch.tensor([0, 2], device='cuda')\ny = x[ids]\n"),
        Valid("import torch\nx = torch.randn(10)\ny = x[[0, 2, 5]]\nz = x[range(3)]\n"),
        Valid("import torch\nimport numpy as np\na = np.arange(10)\nb = a[[0, 2]]\n"),
        # `np.s_[:2]` is a slice, not an index array
        Valid("import torch\nimport numpy as np\nx = torch.randn(10, device='cuda')\nfor _ in range(2):\n    y = x[np.s_[:2]]\n"),
        Valid(
            "import torch\nimport numpy as np\nx = torch.randn(10, device='cuda')\n"
            "for i in np.arange(3):\n    y = x[i]\nk = np.argmax(np.ones(3))\nz = x[k]\n"
        ),
        Valid("import torch\nx = torch.randn(10, device='cuda')\nm = x > 0\ny = x[m]\nx[m] = 0.0\n"),
        Valid("import torch\nx = torch.randn(10, device='cuda')\ni = torch.tensor(3)\ny = x[i]\n"),
        Valid("import torch\ndef f(U: torch.Tensor, d):\n    nz = torch.where(abs(d) != 0.0)\n    return U[:, nz[0]]\n"),
        Valid(
            "import torch\n"
            "def keep_ids(n):\n"
            "    return torch.randperm(n, device='cuda')[:4]\n"
            "x = torch.randn(10, device='cuda')\n"
            "for _ in range(3):\n"
            "    y = x[keep_ids(10)]\n",
        ),
        Valid(
            "import torch\n"
            "class Gather(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ids = torch.tensor([0, 2, 5], device='cuda')\n"
            "    def forward(self, x):\n"
            "        return x.cuda()[:, self.ids]\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return x[:, [0, 2]]\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # the index is on the GPU wherever the GPU is used: CPU only on the CPU-only path
        Valid(
            "import torch\n"
            "def pick(n, use_cuda):\n"
            "    x = torch.randn(n, device='cuda')\n"
            "    idx = torch.randperm(n).cuda() if use_cuda else torch.randperm(n)\n"
            "    for _ in range(3):\n"
            "        y = x[idx]\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return x[[0, 2]]\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ndef keep_ids():\n    return [0, 2, 5]\nx = torch.randn(10, device='cuda')\n"
            "for _ in range(3):\n    y = x[keep_ids()]\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\nx = torch.randn(10, device='cuda')\nfor _ in range(3):\n    y = x[[0, 2, 5]]\n",
            line=4,
            hot=True,
            message="indexing `x` with a host list copies the index to the GPU with a blocking transfer",
        ),
        Invalid("import torch\ndef pick():\n    x = torch.randn(10, 3, device='cuda')\n    y = x[:, range(2)]\n", line=4, hot=False),
        Invalid(
            "import torch\nimport numpy as np\nx = torch.randn(10, device='cuda')\n"
            "perm = np.random.permutation(10)\nfor i in range(2):\n    y = x[perm[i * 5:(i + 1) * 5]]\n",
            line=6,
            message="indexing `x` with a host NumPy array copies the index to the GPU with a blocking transfer",
        ),
        Invalid(  # `np.r_` builds a NumPy index array (pytorch-YOLOv4's `output[..., np.r_[:2, 4:n_ch]]`)
            "import torch\nimport numpy as np\nout = torch.randn(4, 85, device='cuda')\n"
            "for _ in range(2):\n    out[..., np.r_[:2, 4:85]] = torch.sigmoid(out[..., np.r_[:2, 4:85]])\n",
            line=5,
        ),
        Invalid(
            "import torch\ndef drop():\n    x = torch.randn(10, device='cuda')\n    idx = torch.randperm(10)[:4]\n    x[idx] = 0.0\n",
            line=5,
            message="indexing `x` with a host CPU tensor copies the index to the GPU with a blocking transfer",
        ),
        Invalid(
            "import torch\n"
            "def keep_ids(n):\n"
            "    return torch.randperm(n)[:4]\n"
            "x = torch.randn(10, device='cuda')\n"
            "for _ in range(3):\n"
            "    y = x[keep_ids(10)]\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Gather(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ids = torch.tensor([0, 2, 5])\n"
            "    def forward(self, x):\n"
            "        return x.cuda()[:, self.ids]\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "x = torch.randn(n, 64, device=device)\n"
            "rows = torch.tensor([0, 3, 7, 11, 19, 42, 77, 123], device=device)\n"
        ),
        flagged="def flagged(x: torch.Tensor):\n    return x[[0, 3, 7, 11, 19, 42, 77, 123]]\n",
        fixed="def fixed(x: torch.Tensor, rows: torch.Tensor):\n    return x[rows]\n",
        sizes={"n": 100_000},
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self.ctx.gpu(node.value) is None:
            return
        for el in node.slice:
            if type(el.slice) is cst.Index:
                what = self._host_index(el.slice.value)
                if what is not None:
                    self.report(node, base=short(node.value), what=what)
                    return

    def _host_index(self, e: cst.BaseExpression) -> Optional[str]:
        ctx = self.ctx
        if type(e) is cst.List:
            if e.elements and all(_host_scalar(ctx, el) for el in e.elements):
                return "list"
            return None
        if type(e) is cst.ListComp:
            return "list" if ctx.infer(e.elt).kind in (V.PY, V.NUMPY) or _literal(e.elt) else None
        if type(e) is cst.Call and type(e.func) is cst.Name and e.func.value in ("range", "list"):
            if not ctx.is_imported(e.func.value):  # the builtins, not an imported namesake
                return e.func.value
        if type(e) is cst.Name:
            r = ctx.origin(e)
            if type(r) in (cst.List, cst.ListComp) or (
                type(r) is cst.Call and type(r.func) is cst.Name and r.func.value in ("range", "list")
            ):
                return self._host_index(r)
        if ctx.is_numpy_array(e):
            return "NumPy array"
        v = ctx.infer(e)
        if v.kind == V.PY and v.py == "list" and v.elems and all(x.kind == V.PY and x.py == "int" for x in v.elems):
            return "list"  # `keep_ids()` returning `[0, 2, 5]`: the model knows its items
        if v.kind == V.TENSOR and V.on_host(v) and not v.mask and v.ndim != 0 and not _zero_dim(ctx, e):
            if v.device == V.EITHER:
                return None  # on the GPU path, placed by the same choice of device as the rest (SSD's `suppress`)
            return "CPU tensor"
        return None


def _literal(e: cst.BaseExpression) -> bool:
    if type(e) is cst.UnaryOperation:
        e = e.expression
    return type(e) is cst.Integer or (type(e) is cst.Name and e.value in ("True", "False"))


def _host_scalar(ctx, el) -> bool:
    if type(el) is cst.StarredElement:
        return False
    return _literal(el.value) or ctx.infer(el.value).kind == V.PY


def _zero_dim(ctx, e: cst.BaseExpression) -> bool:
    """torch.tensor(3) / torch.tensor(k): a 0-d CPU index is read on the host, no copy."""
    r = ctx.origin(e)
    if type(r) is cst.Call and r.args:
        tn = ctx.torch_name(r.func)
        if tn in ("tensor", "as_tensor", "scalar_tensor"):
            d = r.args[0].value
            if type(d) is cst.UnaryOperation:
                d = d.expression
            if type(d) in (cst.Integer, cst.Float):
                return True
            if type(d) is cst.Name and ctx.infer(d).kind == V.PY:
                return type(ctx.origin(d)) not in (cst.List, cst.Tuple, cst.ListComp)
    return False
