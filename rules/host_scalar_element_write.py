import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short
from synclint.rules._helpers import side_effect_free


class HostScalarElementWrite(Rule):
    """
    ## What it does
    Flags writing a Python number into a single element of a GPU tensor: `x[3] = 1.0`,
    `A[0, 0] = 0.0`, `x[i] = v` with as many integer indices as the tensor has dimensions
    (known from the factory that made it).

    ## Why is this bad?
    For a CUDA `self`, `THPVariable_setitem` wraps the Python number in a *CPU* scalar tensor;
    when the target is 0-d, `ATen/TensorIndexing.h::copy_to` does `dst.copy_(src)`, a blocking
    host-to-device copy that waits for all queued GPU work (catalogue D1). A target that is not
    0-d (`x[:10] = 0.`, `A[0] = 0.` on a matrix) takes the `fill_` path instead and does not sync
    (D2), so it is not flagged.

    ## Use instead
    ```python
    x[3].fill_(1.0)        # a fill kernel, no copy
    ```

    ## Fix safety
    `x[3].fill_(v)` writes the same value through a view of the same element: same dtype
    conversion, same autograd behaviour, for integer indices on any device. The fix is safe
    when the indices and the value are literals, names or arithmetic of them; it is unsafe when
    they involve calls, because the value is then evaluated after the target instead of before.
    """

    CODE = "SYN306"
    NAME = "host-scalar-element-write"
    MESSAGE = "`{lhs} = {value}` copies a Python scalar to the GPU with a blocking transfer"
    FIX_TITLE = "Write it on the device: `{lhs}.fill_({value})`"
    FIX = "always"
    CATALOGUE = ("D1",)
    SETUP_EXEMPT = True
    VALID = [
        Valid("import torch\nx = torch.zeros(10, device='cuda')\nx[:5] = 1.0\n"),
        Valid("import torch\nA = torch.zeros(3, 3, device='cuda')\nA[0] = 0.0\n"),
        Valid("import torch\nx = torch.zeros(10, device='cuda')\nm = x > 0\nx[m] = 0.0\n"),
        Valid("import torch\nx = torch.zeros(10)\nx[3] = 1.0\n"),
        Valid("import torch\nx = torch.zeros(10, device='cuda')\nx[3] += 1.0\nx[3] = x[4]\n"),
        Valid("import torch\ndef f(x):\n    x[3] = 1.0\n"),
        Valid("import torch\nx = torch.zeros(10, device='cuda')\nidx = [0, 2]\nx[idx] = 1.0\n"),
        Valid("import torch\nx = torch.zeros(10, device='cuda')\nx = x.view(2, 5)\nx[0] = 1.0\n"),
        Valid(
            "import torch\n"
            "def make_mask(n):\n"
            "    return torch.ones(n)\n"
            "m = make_mask(8)\n"
            "m[0] = 0.0\n",
        ),
        Valid(
            "import torch\n"
            "class Schedule:\n"
            "    def __init__(self):\n"
            "        self.lrs = torch.zeros(10)\n"
            "    def set(self, i, lr: float):\n"
            "        self.lrs[3] = 0.5\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ndef mark():\n    x = torch.zeros(10, device='cuda')\n    x[3] = 1.0\n",
            line=4,
            hot=False,
            message="`x[3] = 1.0` copies a Python scalar to the GPU with a blocking transfer",
            fixed="import torch\ndef mark():\n    x = torch.zeros(10, device='cuda')\n    x[3].fill_(1.0)\n",
        ),
        Invalid(
            "import torch\nA = torch.eye(4, device='cuda')\nfor i in range(4):\n    A[i, i] = -2.0\n",
            line=4,
            hot=True,
            fixed="import torch\nA = torch.eye(4, device='cuda')\nfor i in range(4):\n    A[i, i].fill_(-2.0)\n",
        ),
        Invalid(
            "import torch\ndef mark():\n    w = torch.ones(5, device='cuda')\n    w[len(w) - 1] = float('inf')\n",
            fixed="import torch\ndef mark():\n    w = torch.ones(5, device='cuda')\n    w[len(w) - 1].fill_(float('inf'))\n",
        ),
        Invalid(
            "import torch\n"
            "def make_mask(n):\n"
            "    return torch.ones(n, device='cuda')\n"
            "def mark():\n"
            "    m = make_mask(8)\n"
            "    m[0] = 0.0\n",
            line=6,
        ),
        Invalid(
            "import torch\n"
            "class Schedule:\n"
            "    def __init__(self):\n"
            "        self.lrs = torch.zeros(10, device='cuda')\n"
            "    def set(self, i, lr: float):\n"
            "        self.lrs[3] = 0.5\n",
            line=6,
        ),
    ]
    BENCH = BenchPair(
        setup="x = torch.randn(64, 4, device=device)\n",
        flagged=(
            "def flagged(x: torch.Tensor):\n"
            "    weights = torch.ones(4, device=device)\n"
            "    weights[3] = 0.0\n"
            "    return x * weights\n"
        ),
        fixed=(
            "def fixed(x: torch.Tensor):\n"
            "    weights = torch.ones(4, device=device)\n"
            "    weights[3].fill_(0.0)\n"
            "    return x * weights\n"
        ),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if type(target) is not cst.Subscript or not (
                self.ctx.is_host_number(node.value)
            ):
                continue
            val = self.ctx.gpu(target.value)
            if val is None or val.ndim is None or len(target.slice) != val.ndim:
                continue
            indices = []
            for el in target.slice:
                if type(el.slice) is not cst.Index or el.slice.star is not None:
                    break
                indices.append(el.slice.value)
            else:
                if not all(self.ctx.is_int(i) for i in indices):
                    continue
                fix = None
                safe = False
                if len(node.targets) == 1:
                    fix = cst.Expr(
                        cst.Call(cst.Attribute(target, cst.Name("fill_")), [cst.Arg(node.value)])
                    )
                    safe = all(side_effect_free(e) for e in indices + [node.value])
                self.report(node, fix, safe=safe, lhs=short(target), value=short(node.value))

