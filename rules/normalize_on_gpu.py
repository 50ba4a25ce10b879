import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import arg, short
from synclint.semantic import KNOWN
from synclint.semantic import library as L
from synclint.semantic import values as V


class NormalizeOnGpu(Rule):
    """
    ## What it does
    Flags torchvision's `Normalize` (v1 and v2 transforms, and the functional
    `normalize`) applied to a GPU tensor: in a training step, a perceptual loss, an
    evaluation loop.

    ## Why is this bad?
    For a tensor input, torchvision's `normalize` makes `mean` and `std` from Python lists
    at each call, with `torch.as_tensor(..., device=tensor.device)`: two small host-to-device
    copies from pageable memory, which wait for every kernel queued before them. The v1
    transform then also checks `if (std == 0).any():` on the host, a read-back
    (`transforms/_functional_tensor.py` and `transforms/v2/functional/_misc.py`, read in
    torchvision 0.29.1). On an H100 (torch 2.11, torchvision 0.26, 2026-11-27,
    `scripts/library_syncs.py`), behind about 20 ms of queued matmuls, `T.Normalize`
    held the host 19.2 ms and `v2.Normalize` 16.5 ms, as `x.sum().item()` did (18.8 ms),
    where `(img - mean) / std` with device buffers took 0.06 ms. A VGG content loss that
    normalizes its two inputs pays it twice per step. The pair below (`synclint bench`, same
    H100, 7 passes): 4.24x (4.19-4.30x) back-to-back and 1.63x (1.63-1.64x) per step with
    host work, 3 sync warnings to 0 (`docs/evidence/bench-SYN120-h100-2026-11-27.json`).

    ## Use instead
    Keep `mean` and `std` as buffers on the device, made once, and normalize with arithmetic:

    ```python
    self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
    self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))
    ...
    x = (x - self.mean) / self.std
    ```

    ## Known problems
    A `Normalize` inside a `Compose` is not followed. On CPU images (a dataset's
    transform) nothing waits, so only a tensor known to be on the GPU is reported, not one
    of unknown device as most rules take it.
    """

    CODE = "SYN120"
    NAME = "normalize-on-gpu"
    MESSAGE = "`{call}` copies `mean` and `std` from Python lists to the GPU at each call (torchvision's `normalize`), so the CPU waits for all queued GPU work"
    FIX_TITLE = "Keep mean and std as device buffers and normalize with `(x - mean) / std`"
    CATALOGUE = ("A2",)
    VALID = [
        # a dataset transform on host images (v1 and v2)
        Valid("import torch\nfrom torchvision import transforms\nnorm = transforms.Normalize([0.5] * 3, [0.5] * 3)\n"
              "for _ in range(3):\n    x = norm(torch.rand(3, 8, 8))\n"),
        Valid("import torch\nfrom torchvision.transforms import v2\nnorm = v2.Normalize([0.5] * 3, [0.5] * 3)\n"
              "for _ in range(3):\n    x = norm(torch.rand(3, 8, 8))\n"),
        # a project's own normalize, and buffers on the device
        Valid("import torch\ndef normalize(x, mean, std):\n    return (x - mean) / std\n"
              "m = torch.zeros(3, 1, 1, device='cuda')\nfor _ in range(3):\n"
              "    y = normalize(torch.rand(3, 8, 8, device='cuda'), m, m + 1)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nimport torchvision.transforms as T\nnorm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])\n"
            "for _ in range(10):\n    y = norm(torch.rand(8, 3, 32, 32).cuda())\n",
            line=5,
            hot=True,
            message="`norm(torch.rand(8, 3, 32, 32).cuda())` copies `mean` and `std` from Python lists to the GPU at each call "
                    "(torchvision's `normalize`), so the CPU waits for all queued GPU work",
        ),
        # through an attribute: SRGAN's content loss normalizes both images every step
        Invalid(
            "import torch\nfrom torchvision import transforms\n"
            "class ContentLoss(torch.nn.Module):\n"
            "    def __init__(self, mean, std):\n        super().__init__()\n"
            "        self.normalize = transforms.Normalize(mean, std)\n"
            "    def forward(self, sr, gt):\n"
            "        return (self.normalize(sr) - self.normalize(gt)).abs().mean()\n"
            "loss_fn = ContentLoss([0.5] * 3, [0.5] * 3)\n"
            "for _ in range(10):\n    loss_fn(torch.rand(2, 3, 8, 8, device='cuda'), torch.rand(2, 3, 8, 8, device='cuda'))\n",
            line=8,
            hot=True,
        ),
        # crosses a function: the functional form, with the caller's GPU batch
        Invalid(
            "import torch\nimport torchvision.transforms.functional as TF\n"
            "def prep(img):\n    return TF.normalize(img, [0.5] * 3, [0.5] * 3)\n"
            "model = torch.nn.Conv2d(3, 3, 1).cuda()\n"
            "for _ in range(10):\n    model(prep(torch.rand(2, 3, 8, 8).cuda()))\n",
            line=4,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "import torchvision.transforms as T\n"
            "x = torch.rand(b, 3, s, s, device=device)\n"
            "norm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])\n"
            "mean = torch.tensor([0.485, 0.456, 0.406], device=device).view(1, -1, 1, 1)\n"
            "std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, -1, 1, 1)\n"
        ),
        flagged="def flagged(x, norm):\n    return norm(x * 2)\n",
        fixed="def fixed(x, mean, std):\n    return (x * 2 - mean) / std\n",
        sizes={"b": 16, "s": 224},
        compare="close",
        requires=("torchvision",),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.qualname(node.func) not in L.NORMALIZER_FUNCTIONS:
            t = ctx.infer(node.func)
            if not (t.kind == V.OBJECT and t.cls == L.TRANSFORM and t.py == L.NORMALIZES):
                return
        tensor = arg(node, 0, "tensor")
        if tensor is not None and ctx.gpu(tensor, KNOWN) is not None:
            self.report(node, call=short(node))
