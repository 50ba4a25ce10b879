import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import kwarg, method_call, positional, receiver, short
from synclint.rules._helpers import with_kwarg
from synclint.semantic.moves import MOVE_METHODS

_TRUE = cst.Name("True")
PINNED_TITLE = "Pass `non_blocking=True`: the source is pinned"


class BlockingHostToDeviceCopy(Rule):
    """
    ## What it does
    Flags blocking copies of CPU tensors to the GPU: `x.to(device)`, `x.cuda()` or
    `gpu_buf.copy_(cpu_x)` without `non_blocking=True`, where `x` is known to be on the CPU
    (typically a batch from a DataLoader inside the training loop).

    ## Why is this bad?
    A host-to-device copy with `non_blocking=False` goes through
    `Copy.cu::copy_kernel_cuda` -> `memcpy_and_sync`: `cudaMemcpyAsync` followed by
    `cudaStreamSynchronize`, so the host waits for the copy *and for all GPU work queued before
    it*, every step. It blocks even when the source is pinned (catalogue B4). On an H200,
    copying 16 MB this way took 1089.6 us against 293.0 us for a pinned non-blocking copy.

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
    ```

    ## Fix safety
    A fix adding `non_blocking=True` is offered only when the source is known to be pinned,
    and it is unsafe. On the device side it is exact: the copy is ordered on the current stream
    before every kernel that reads the result. On the host side, the pinned source must not be
    written until the copy has finished. DataLoader batches are fresh buffers (the pinned host
    allocator records the copy before reusing a block), but a pinned staging buffer that the
    code refills every step would be overwritten while the copy is in flight, and the linter
    cannot tell the two apart. Without pinned memory `non_blocking=True` does not help (SYN303).

    ## Known problems
    Only sources known to be CPU tensors are checked; tensors of unknown device are left alone.
    `.to()` of a custom batch object (a TENSORS value with a `.to` method) is flagged without a fix.
    """

    CODE = "SYN304"
    NAME = "blocking-host-to-device-copy"
    CALLS = frozenset({"copy_", *MOVE_METHODS})
    MESSAGE = "`{expr}` copies a CPU tensor to the GPU and blocks until all queued GPU work is done"
    FIX_TITLE = "Load into pinned memory (`DataLoader(..., pin_memory=True)`) and copy with `non_blocking=True`"
    FIX = "sometimes"
    CATALOGUE = ("B4",)
    SETUP_EXEMPT = True
    VALID = [
        Valid(  # a registered parameter moves with `model.cuda()`: `type_as` only casts it
            "import torch\nfrom torch import nn\nclass CastedLinear(nn.Module):\n    def __init__(self, n):\n"
            "        super().__init__()\n        self.weight = nn.Parameter(torch.empty(n, n, dtype=torch.bfloat16))\n"
            "    def forward(self, x):\n        return x @ self.weight.type_as(x)\n"
            "model = CastedLinear(4).cuda()\nfor _ in range(3):\n    y = model(torch.randn(2, 4, device='cuda'))\n"
        ),
        Valid(  # item stores of a 0-d CPU value into a slice (a fill), of GPU values, of a
            # Python number, and through a mask (SYN202's)
            "import torch\nbuf = torch.zeros(8, device='cuda')\nm = buf > 0\nfor step in range(3):\n"
            "    buf[2:6] = torch.tensor(1.0)\n    buf[2:6] = torch.arange(4.0, device='cuda')\n"
            "    buf[2:6] = 0.5\n    buf[m] = torch.arange(8.0)[:1]\n"
        ),
        Valid(  # state moved where it then stays (a setup move, as `model.to(device)`); later
            # calls find it there, and copies between its own slices stay on one device
            "import torch\nclass Buf:\n    def __init__(self):\n        self.x = torch.zeros(4, 3)\n"
            "    def to(self, device):\n        self.x = self.x.to(device)\n"
            "    def roll(self):\n        self.x[0].copy_(self.x[-1])\n"
            "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "b = Buf()\nb.to(device)\nfor _ in range(3):\n    b.roll()\n"
        ),
        # point 7: the batches of a loader over CUDA tensors are already on the device
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
            "ds = TensorDataset(torch.randn(100, 4, device='cuda'))\nfor (x,) in DataLoader(ds, batch_size=10):\n"
            "    x = x.to('cuda')\n"
        ),
        Valid("import torch\nmodel = torch.nn.Linear(4, 4)\nfor _ in range(3):\n    model.to('cuda')\n"),
        Valid(  # the tensor and the device follow the same choice: CPU and CPU, or CUDA and CUDA
            "import torch\ndef step(labels, features):\n"
            "    device = torch.device('cuda') if features.is_cuda else torch.device('cpu')\n"
            "    return torch.eq(labels, labels.T).float().to(device)\n"
            "for labels, x in torch.utils.data.DataLoader(ds, pin_memory=True):\n"
            "    if torch.cuda.is_available():\n"
            "        labels, x = labels.cuda(non_blocking=True), x.cuda(non_blocking=True)\n"
            "    step(labels, x)\n"
        ),
        Valid(  # a transform of a GPU tensor stays on the GPU (torchvision.transforms.v2)
            "import torch\nfrom torchvision.transforms import v2\nflip = v2.RandomHorizontalFlip()\n"
            "x = torch.rand(3, 8, 8, device='cuda')\nfor _ in range(3):\n    y = flip(x).to('cuda')\n"
        ),
        Valid("import torch\nx = torch.randn(4, 4)\ny = x.to('cuda')\n", cold=True),
        Valid("import torch\ng = torch.randn(4, device='cuda')\nfor _ in range(3):\n    h = g.to('cuda')\n    k = g.cuda()\n"),
        Valid("import torch\nfor x, y in loader:\n    x = x.to(torch.float16)\n    y = y.to('cpu')\n"),
        Valid("import torch\nfor x in loader:\n    x = x.to('cuda', non_blocking=True)\n"),
        Valid("import torch\ndef forward(self, x):\n    return x.to('cuda')\n"),
        Valid(
            "import torch\n"
            "def load_frame(i):\n"
            "    return torch.zeros(4, 4, device='cuda')\n"
            "for i in range(10):\n"
            "    x = load_frame(i).to('cuda')\n",
        ),
        Valid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "class Trainer:\n"
            "    def __init__(self, ds):\n"
            "        self.loader = DataLoader(ds, batch_size=8, pin_memory=True)\n"
            "        self.device = torch.device('cuda')\n"
            "    def fit(self):\n"
            "        for x, y in self.loader:\n"
            "            x = x.to(self.device, non_blocking=True)\n",
        ),
        # `accelerator.prepare(loader)` yields batches already on `accelerator.device`
        Valid(
            "import torch\n"
            "from accelerate import Accelerator\n"
            "accelerator = Accelerator()\n"
            "model, loader = accelerator.prepare(torch.nn.Linear(4, 4), torch.utils.data.DataLoader(ds, batch_size=8))\n"
            "for x, y in loader:\n"
            "    x = x.to(accelerator.device)\n",
        ),
        # `.to(device=...)` of a Module moves its parameters; it is not a tensor copy to report
        Valid(
            "import torch\n"
            "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "model = torch.nn.Linear(4, 4)\n"
            "for epoch in range(3):\n"
            "    model.to(device=device)\n"
            "    model.train()\n",
        ),
        # a whole dataset moved once at setup (no fix: it is copied once): cold
        Valid(
            "import numpy as np\nimport torch\ndevice = torch.device('cuda')\ndef setup(path):\n"
            "    xs = torch.from_numpy(np.load(path))\n    return xs.to(device)\n"
            "def train(model, xs):\n    for i in range(0, len(xs), 64):\n        model(xs[i:i + 64])\n",
            cold=True,
        ),
        Valid(  # the same trainer, built by the file itself with the default: CPU stays on the CPU
            "import torch\nclass Epoch:\n    def __init__(self, model, device='cpu'):\n"
            "        self.model, self.device = model, device\n    def run(self, loader):\n"
            "        for x, y in loader:\n            self.model(x.to(self.device))\n"
            "Epoch(torch.nn.Linear(2, 2)).run([])\n"
        ),
    ]
    INVALID = [
        Invalid(  # an item of a project Dataset, read in the loop: its `__getitem__` builds CPU tensors
            "import numpy as np\nimport torch\nclass Pairs(torch.utils.data.Dataset):\n"
            "    def __getitem__(self, i):\n        return torch.from_numpy(np.ones(3)), i\n"
            "def validate(model, ds):\n    for i in range(len(ds)):\n        x, _ = ds[i]\n"
            "        model(x[None].cuda())\n"
            "validate(None, Pairs())\n",
            line=9,
            hot=True,
        ),
        Invalid(  # an image transform's output is a CPU tensor (DeepLabV3Plus' predict.py)
            "import torch\nfrom PIL import Image\nimport torchvision.transforms as T\n"
            "transform = T.Compose([T.ToTensor(), T.Normalize(mean=[0.5], std=[0.5])])\n"
            "for path in paths:\n    img = transform(Image.open(path)).unsqueeze(0)\n    img = img.to('cuda')\n",
            line=7,
            hot=True,
        ),
        Invalid(  # an item store copies the value in (`gain[2:6] = torch.tensor(shape)[...]`)
            "import torch\nbuf = torch.zeros(8, device='cuda')\nfor step in range(3):\n    buf[2:6] = torch.arange(4.0)\n",
            line=4,
            hot=True,
            message="`buf[2:6] = torch.arange(4.0)` copies a CPU tensor to the GPU and blocks until all queued GPU work is done",
        ),
        Invalid(
            "import torch\ndef train(model, loader, device):\n    for x, y in loader:\n        x, y = x.to(device), y.to(device)\n",
            line=4,
            hot=True,
            message="`x.to(device)` copies a CPU tensor to the GPU and blocks until all queued GPU work is done",
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(range(8), batch_size=4, pin_memory=True)\n"
            "for batch in loader:\n    x = batch[0].cuda()\n",
            line=5,
            fixed="import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(range(8), batch_size=4, pin_memory=True)\n"
            "for batch in loader:\n    x = batch[0].cuda(non_blocking=True)\n",
        ),
        Invalid(
            "import torch\nbuf = torch.empty(8, device='cuda')\nfor step in range(3):\n    buf.copy_(torch.arange(8.0))\n",
            line=4,
        ),
        Invalid(
            "import numpy as np\n"
            "import torch\n"
            "def load_frame(i):\n"
            "    return torch.from_numpy(np.zeros((4, 4), dtype=np.float32))\n"
            "for i in range(10):\n"
            "    x = load_frame(i).to('cuda')\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "class Trainer:\n"
            "    def __init__(self, ds):\n"
            "        self.loader = DataLoader(ds, batch_size=8, pin_memory=True)\n"
            "        self.device = torch.device('cuda')\n"
            "    def fit(self):\n"
            "        for x, y in self.loader:\n"
            "            x = x.to(self.device)\n",
            line=9,
            hot=True,
        ),
        Invalid(  # `device="cpu"`: the default of a trainer its users build with their device (smp's `Epoch`)
            "import torch\nclass Epoch:\n    def __init__(self, model, device='cpu'):\n"
            "        self.model, self.device = model, device\n    def run(self, loader):\n"
            "        for x, y in loader:\n            self.model(x.to(self.device))\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "loader = [torch.randn(n).pin_memory() for _ in range(batches)]  # as from DataLoader(pin_memory=True)\n"
        ),
        flagged=(
            "def flagged(loader):\n"
            "    out = []\n"
            "    for x in loader:\n"
            "        out.append(x.to(device))\n"
            "    return torch.stack(out)\n"
        ),
        fixed=(
            "def fixed(loader):\n"
            "    out = []\n"
            "    for x in loader:\n"
            "        out.append(x.to(device, non_blocking=True))\n"
            "    return torch.stack(out)\n"
        ),
        sizes={"n": 1024 * 1024, "batches": 4},
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        """`gpu[2:6] = cpu_values`: the item store copies the value with `dst.copy_(src)` (or
        moves it for `index_put_`), a blocking host-to-device copy like `copy_` (B4). A 0-d
        source into a larger slice is a fill, and a mask index is SYN202's: both left out."""
        ctx = self.ctx
        if ctx.in_cuda_less or not any(type(t.target) is cst.Subscript for t in node.targets):
            return
        v = ctx.infer(node.value)
        if not (v.kind == V.TENSOR and v.device == V.CPU and v.ndim is not None and v.ndim >= 1):
            return
        for t in node.targets:
            target = t.target
            if type(target) is not cst.Subscript or ctx.gpu(target.value) is None:
                continue
            if any(type(el.slice) is cst.Index and ctx.gpu_mask(el.slice.value) for el in target.slice):
                continue
            self.report(node.value, expr=f"{short(target)} = {short(node.value)}")
            return

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if method_call(node, ("copy_",)):
            args = positional(node)
            if not args or kwarg(node, "non_blocking") is not None or len(args) > 1 or ctx.in_cuda_less:
                return
            if ctx.gpu(receiver(node)) is None:
                return
            src = args[0].value
            v = ctx.infer(src)
            if v.device == V.EITHER and ctx.infer(receiver(node)).device == V.EITHER:
                return  # both placed by the same choice of device (`rollouts.to(device)`): no crossing
            if v.kind == V.TENSOR and V.on_host(v):
                fix = with_kwarg(node, "non_blocking", _TRUE) if v.pinned else None
                self.report(node, fix, fix_title=PINNED_TITLE if fix else None, expr=short(node))
            return
        move = ctx.gpu_move(node)
        if move is None or move.non_blocking is not False or ctx.moves_own_attribute(node):
            return
        src = receiver(node)
        if ctx.factory_under(src) is not None:
            return  # SYN301 / SYN302 report `torch.zeros(n).cuda()` / `torch.tensor(data).cuda()`
        v = ctx.infer(src)
        if v.kind not in (V.TENSOR, V.TENSORS) or not V.on_host(v):
            return
        if v.device == V.EITHER and move.device is not None and ctx.device_of_arg(move.device)[1] == V.EITHER:
            return  # both placed by the same choice of device (SupContrast's `mask.to(device)`): no crossing
        fix = None
        if v.kind == V.TENSOR and v.pinned and not move.nb_given and not move.extra:
            fix = with_kwarg(node, "non_blocking", _TRUE)
        self.report(node, fix, fix_title=PINNED_TITLE if fix else None, expr=short(node))
