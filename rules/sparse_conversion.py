import libcst as cst

from synclint.rule import Invalid, Rule, Valid
from synclint.rules._helpers import method_call, receiver, short
from synclint.semantic import RECEIVER

_NAMES = ("to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc")


class SparseConversion(Rule):
    """
    ## What it does
    Flags dense-to-sparse conversions (`x.to_sparse()`, `to_sparse_csr/csc/bsr/bsc`) of
    GPU tensors.

    ## Why is this bad?
    A sparse tensor stores one entry per nonzero element, so the conversion must count
    them first: it runs `nonzero`, which copies the count to the host and waits for every
    queued kernel (`Nonzero.cu::nonzero_cuda_out_impl`). `set_sync_debug_mode` sees
    `to_sparse()`, but its documentation warns that `torch.sparse` is not covered in
    general.

    ## Use instead
    There is no sync-free conversion. Build the sparse structure once, outside the loop,
    when the sparsity pattern is static, and update only its `values()`; or keep the
    dense tensor when it is small enough.

    ## Known problems
    Only hot sites are reported: a one-time conversion at setup is the intended use.
    """

    CODE = "SYN210"
    NAME = "sparse-conversion"
    CALLS = frozenset(_NAMES)
    MESSAGE = "`{call}` counts the nonzero elements, so the host waits for the GPU"
    FIX_TITLE = "Convert once outside the loop when the sparsity pattern is static"
    CATALOGUE = ("C10",)
    HOT_ONLY = True
    VALID = [
        Valid("import torch\nadj = torch.rand(8, 8, device='cuda')\nsp = adj.to_sparse()\n", cold=True),
        Valid("import torch\nadj = torch.rand(8, 8)\nfor _ in range(3):\n    sp = adj.to_sparse_csr()\n"),
        Valid("import torch\nadj = torch.rand(8, 8, device='cuda')\nsp = adj.to_sparse()\nfor _ in range(3):\n    v = sp.values() * 2\n", cold=True),
        Valid("import scipy.sparse as sps\nimport numpy as np\nfor a in [np.eye(3)]:\n    m = sps.csr_matrix(a).tocsr()\n"),
        Valid(
            "import torch\n"
            "def adjacency(x):\n"
            "    return (x @ x.T > 0.5).float()\n"
            "x = torch.rand(8, 4)\n"
            "for _ in range(3):\n"
            "    a = adjacency(x).to_sparse()\n",
        ),
        Valid(
            "import torch\n"
            "class GCN(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.adj = torch.rand(8, 8, device='cuda').to_sparse()\n"
            "    def forward(self, x):\n"
            "        return torch.sparse.mm(self.adj, x)\n",
            cold=True,
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return x.to_sparse()\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return x.to_sparse()\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nadj = torch.rand(8, 8, device='cuda')\nfor _ in range(3):\n    sp = (adj > 0.5).float().to_sparse()\n",
            line=4,
            hot=True,
            message="`(adj > 0.5).float().to_sparse()` counts the nonzero elements, so the host waits for the GPU",
        ),
        Invalid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, a, x):\n        return torch.sparse.mm(a.to_sparse_csr(), x)\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "def adjacency(x):\n"
            "    return (x @ x.T > 0.5).float()\n"
            "x = torch.rand(8, 4, device='cuda')\n"
            "for _ in range(3):\n"
            "    a = adjacency(x).to_sparse()\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class GCN(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.adj = torch.rand(8, 8, device='cuda')\n"
            "    def forward(self, x):\n"
            "        return torch.sparse.mm(self.adj.to_sparse(), x)\n",
            line=7,
            hot=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if method_call(node, _NAMES) and self.ctx.qualname(node.func) is None:
            recv = receiver(node)
            # `x.to_sparse().to_sparse_csr()`: the second conversion starts from a sparse
            # tensor whose count is known; only the first one counts.
            if type(recv) is cst.Call and method_call(recv, _NAMES):
                return
            if self.ctx.gpu(recv, RECEIVER) is not None:
                self.report(node, call=short(node))
