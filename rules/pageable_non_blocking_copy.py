import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.semantic.syntax import is_true
from synclint.rules._helpers import kwarg, method_call, positional, receiver, short
from synclint.semantic.library import SIZE_FACTORIES
from synclint.semantic.moves import MOVE_METHODS


class PageableNonBlockingCopy(Rule):
    """
    ## What it does
    Flags `.to(device, non_blocking=True)`, `.cuda(non_blocking=True)` and
    `gpu.copy_(src, non_blocking=True)` when the source is known to be in pageable
    host memory: a CPU factory result without `pin_memory=True`, `torch.from_numpy(...)`, or a
    batch from a `DataLoader` built in the file without `pin_memory=True`.

    ## Why is this bad?
    An asynchronous copy needs page-locked memory. From pageable memory the CUDA driver first
    stages the data through a small pool of pinned buffers, and when the copy is large or the
    pool is still busy with earlier copies, the call returns only after the GPU has drained the
    queue (catalogue B5). Measured on an H200 with 50 ms of GPU work queued: a single 2 MB
    copy returned at once, a 4 MB copy blocked the host for the full 50 ms, and back-to-back
    256 KB copies blocked at the third. The code reads as overlapped but is not, and
    `torch.cuda.set_sync_debug_mode` does not see it: torch issues a plain `cudaMemcpyAsync`.

    ## Use instead
    Pin the source once, where the data is produced:
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    ```
    For a hand-made staging buffer: `buf = torch.empty(n, pin_memory=True)`, filled each step
    (only after the previous copy from it has finished).

    ## Known problems
    Only sources whose provenance is visible in the file are checked; a tensor of unknown
    origin is left alone. A one-time copy at setup costs little (reported `[cold]`). The
    size is not known statically: an occasional copy of a few hundred KB may not block.
    """

    CODE = "SYN303"
    NAME = "pageable-non-blocking-copy"
    CALLS = frozenset({"copy_", *MOVE_METHODS})
    MESSAGE = "`{expr}` copies from pageable memory, so `non_blocking=True` can still block the host"
    FIX_TITLE = "Pin the source: `DataLoader(..., pin_memory=True)` or a tensor created with `pin_memory=True`"
    CATALOGUE = ("B5",)
    SETUP_EXEMPT = True
    VALID = [
        # pinned through a dict of the loader's keywords
        Valid(
            "import torch\n"
            "kwargs = dict(batch_size=64, num_workers=4, pin_memory=True)\n"
            "loader = torch.utils.data.DataLoader(ds, **kwargs)\n"
            "for images, target in loader:\n"
            "    images = images.cuda(non_blocking=True)\n"
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(range(8), batch_size=4, pin_memory=True)\n"
            "for x in loader:\n    x = x.to('cuda', non_blocking=True)\n"
        ),
        Valid("import torch\nbuf = torch.empty(8, pin_memory=True)\nfor _ in range(3):\n    y = buf.to('cuda', non_blocking=True)\n"),
        Valid("import torch\nsrc = torch.randn(8)\nfor _ in range(3):\n    y = src.pin_memory().cuda(non_blocking=True)\n"),
        Valid("import torch\ndef step(loader):\n    for x in loader:\n        x = x.to('cuda', non_blocking=True)\n"),
        Valid("import torch\ng = torch.randn(8, device='cuda')\nfor _ in range(3):\n    h = g.to('cpu', non_blocking=True)\n"),
        Valid("import torch\nt = torch.randn(8)\nh = t.to('cuda', non_blocking=True)\n", cold=True),
        Valid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "def to_gpu(x):\n"
            "    return x.to('cuda', non_blocking=True)\n"
            "loader = DataLoader(range(8), batch_size=4, pin_memory=True)\n"
            "for x in loader:\n"
            "    x = to_gpu(x)\n",
        ),
        Valid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "class Trainer:\n"
            "    def __init__(self, ds):\n"
            "        self.loader = DataLoader(ds, batch_size=8, pin_memory=True)\n"
            "    def fit(self):\n"
            "        for x, y in self.loader:\n"
            "            x = x.cuda(non_blocking=True)\n",
        ),
        # `.to(device=..., non_blocking=True)` of a Module is not a pageable tensor copy
        Valid(
            "import torch\n"
            "model = torch.nn.Linear(4, 4)\n"
            "for epoch in range(3):\n"
            "    model.to(device='cuda', non_blocking=True)\n",
        ),
    ]
    INVALID = [
        Invalid(  # `cat` of a pinned batch's parts makes a new, pageable tensor (SupContrast)
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, batch_size=4, pin_memory=True)\n"
            "for images, labels in loader:\n"
            "    images = torch.cat([images[0], images[1]], dim=0)\n"
            "    images = images.cuda(non_blocking=True)\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(range(8), batch_size=4)\n"
            "for i, (x, y) in enumerate(loader):\n    x = x.to('cuda', non_blocking=True)\n",
            line=5,
            hot=True,
            message="`x.to('cuda', non_blocking=True)` copies from pageable memory, so `non_blocking=True` can still block the host",
        ),
        Invalid(
            "import torch\nimport numpy as np\narrs = [np.ones(4)]\nfor a in arrs:\n    t = torch.from_numpy(a).cuda(non_blocking=True)\n",
            line=5,
        ),
        Invalid(
            "import torch\ndst = torch.empty(8, device='cuda')\nsrc = torch.randn(8)\nfor _ in range(2):\n    dst.copy_(src, non_blocking=True)\n",
            line=5,
        ),
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "def to_gpu(x):\n"
            "    return x.to('cuda', non_blocking=True)\n"
            "loader = DataLoader(range(8), batch_size=4)\n"
            "for x in loader:\n"
            "    x = to_gpu(x)\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "class Trainer:\n"
            "    def __init__(self, ds):\n"
            "        self.loader = DataLoader(ds, batch_size=8)\n"
            "    def fit(self):\n"
            "        for x, y in self.loader:\n"
            "            x = x.cuda(non_blocking=True)\n",
            line=8,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "raw = bytearray(4 * n)\n"
            "torch.frombuffer(raw, dtype=torch.float32).copy_(torch.randn(n))\n"
            "src_pinned = torch.frombuffer(raw, dtype=torch.float32).clone().pin_memory()\n"
        ),
        flagged=(
            "def flagged(raw):\n"
            "    host = torch.frombuffer(raw, dtype=torch.float32)  # pageable, like torch.from_numpy\n"
            "    return host.to(device, non_blocking=True)\n"
        ),
        fixed=(
            "def fixed(src_pinned):\n"
            "    return src_pinned.to(device, non_blocking=True)\n"
        ),
        sizes={"n": 4 * 1024 * 1024},
        debug_mode_sees=False,
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, ("copy_",)):
            args = positional(node)
            if not args or not is_true(kwarg(node, "non_blocking")) or ctx.in_cuda_less:
                return
            if ctx.gpu(receiver(node)) is None:
                return
            src = args[0].value
        else:
            move = ctx.gpu_move(node)
            if move is None or move.non_blocking is not True:
                return
            src = receiver(node)
            found = ctx.factory_under(src)
            if found is not None and found[1].split("~")[0] in SIZE_FACTORIES:
                return  # SYN301 reports `torch.zeros(n).to(...)`
        v = ctx.infer(src)
        if v.kind in (V.TENSOR, V.TENSORS) and V.on_host(v) and v.pinned is False:
            self.report(node, expr=short(node))
