import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._data_dependent import arg
from synclint.rules._helpers import last_names, short
from synclint.semantic import RECEIVER

# torchvision's NMS entry points (each CUDA call ends in the kernel's mask read-back)
_NAMES = (
    "torchvision.ops.nms", "torchvision.ops.boxes.nms",
    "torchvision.ops.batched_nms", "torchvision.ops.boxes.batched_nms",
)


class NmsCall(Rule):
    """
    ## What it does
    Flags torchvision's `nms` and `batched_nms` on GPU boxes.

    ## Why is this bad?
    How many boxes survive is only known once the overlaps are compared in score order,
    and the host must know it to size the result: the call returns only when every kernel
    queued before it has finished. One NMS per class (or per image) in a loop pays that
    wait once per iteration. `torch.cuda.set_sync_debug_mode` does not report this wait,
    so a sync check that relies on it misses NMS. Measured on an H100 (torch 2.11, torchvision 0.26,
    2026-11-26): issued behind about 50 ms of queued matmuls, `nms` of 2,000 boxes held
    the host 53 ms, as `x.sum().item()` did (52 ms), where a plain `boxes * 2` took 0.02 ms.

    ## Use instead
    NMS itself cannot avoid the read-back, so call it once per step: one `batched_nms`
    over every class (and image, with a combined index) instead of one `nms` per class:

    ```python
    # instead of: for c in range(num_classes): keep_c = nms(boxes[c], scores[c], 0.5)
    labels = torch.arange(num_classes, device=boxes.device).repeat_interleave(boxes.shape[1])
    keep = batched_nms(boxes.flatten(0, 1), scores.flatten(), labels, 0.5)
    ```

    ## Known problems
    `batched_nms` on CUDA offsets the classes' boxes apart and runs one NMS for up to
    5,000 boxes (20,000 coordinates); above that it loops over the classes itself, with a
    `unique` and one NMS each. A single call per step has no sync-free replacement: the
    finding then tells where the step waits.
    """

    CODE = "SYN211"
    NAME = "nms-call"
    CALLS = last_names(_NAMES)
    MESSAGE = "`{call}` reads its overlap mask back to the host, so the CPU waits for all queued GPU work"
    FIX_TITLE = "Run NMS once per step: one `batched_nms` over every class instead of one `nms` per class"
    CATALOGUE = ()
    VALID = [
        # CPU boxes: the whole NMS runs on the host, nothing is copied
        Valid("import torch\nfrom torchvision.ops import nms\nb = torch.rand(8, 4)\ns = torch.rand(8)\n"
              "for _ in range(3):\n    keep = nms(b, s, 0.5)\n"),
        # a project's own `nms` (a NumPy one): not torchvision's
        Valid("import numpy as np\nimport torch\ndef nms(dets, thresh):\n    return np.arange(len(dets))\n"
              "x = torch.rand(8, 4, device='cuda')\nfor _ in range(3):\n    keep = nms(x.cpu().numpy(), 0.5)\n"),
        # every caller passes host boxes
        Valid(
            "import torch\nimport torchvision\n"
            "def suppress(boxes, scores):\n"
            "    return torchvision.ops.nms(boxes, scores, 0.5)\n"
            "for step in range(10):\n"
            "    suppress(torch.rand(8, 4), torch.rand(8))\n",
        ),
        # boxes a detector keeps on the host
        Valid(
            "import torch\nfrom torchvision.ops import batched_nms\n"
            "class Post:\n"
            "    def __init__(self):\n"
            "        self.anchors = torch.rand(100, 4)\n"
            "    def __call__(self, scores, labels):\n"
            "        return batched_nms(self.anchors, scores, labels, 0.5)\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torchvision.ops import nms\nboxes = torch.rand(20, 100, 4, device='cuda')\n"
            "scores = torch.rand(20, 100, device='cuda')\nfor c in range(20):\n    keep = nms(boxes[c], scores[c], 0.5)\n",
            line=6,
            hot=True,
            message="`nms(boxes[c], scores[c], 0.5)` reads its overlap mask back to the host, "
                    "so the CPU waits for all queued GPU work",
        ),
        # once, after the loop: reported cold
        Invalid(
            "import torch\nimport torchvision\nb = torch.rand(100, 4, device='cuda')\ns = torch.rand(100, device='cuda')\n"
            "labels = torch.zeros(100, dtype=torch.long, device='cuda')\n"
            "keep = torchvision.ops.batched_nms(b, s, labels, iou_threshold=0.5)\n",
            line=6,
            hot=False,
        ),
        # crosses a function: the boxes are a parameter its caller fills from the model
        Invalid(
            "import torch\nfrom torchvision.ops.boxes import batched_nms\n"
            "def postprocess(boxes, scores, labels):\n"
            "    return batched_nms(boxes, scores, labels, 0.5)\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "for x in torch.utils.data.DataLoader(ds):\n"
            "    out = model(x.cuda())\n"
            "    postprocess(out, out[:, 0], out[:, 1].long())\n",
            line=4,
            hot=True,
        ),
        # through an attribute: anchors a module keeps on the GPU
        Invalid(
            "import torch\nimport torchvision\n"
            "class Proposals(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.anchors = torch.rand(100, 4, device='cuda')\n"
            "    def forward(self, scores):\n"
            "        return torchvision.ops.nms(self.anchors, scores, 0.7)\n",
            line=8,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "import torchvision\n"
            # integer corners: the offsets batched_nms adds are exact, so both keep the same boxes
            "xy = torch.randint(0, 512, (k, n, 2), device=device).float()\n"
            "boxes = torch.cat([xy, xy + torch.randint(8, 64, (k, n, 2), device=device).float()], dim=2)\n"
            "scores = torch.rand(k, n, device=device)\n"
            "labels = torch.arange(k, device=device).repeat_interleave(n)\n"
        ),
        flagged=(
            "def flagged(boxes, scores, k, n):\n"
            "    keep = [torchvision.ops.nms(boxes[c], scores[c], 0.5) + c * n for c in range(k)]\n"
            "    return torch.cat(keep).sort().values\n"
        ),
        fixed=(
            "def fixed(boxes, scores, labels):\n"
            "    return torchvision.ops.batched_nms(boxes.flatten(0, 1), scores.flatten(), labels, 0.5).sort().values\n"
        ),
        sizes={"k": 20, "n": 200},
        condition="at most 5,000 boxes in all (torchvision's batched_nms loops over the classes itself above that)",
        requires=("torchvision",),
        fix_still_flagged=True,
        debug_mode_sees=False,
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.qualname(node.func) not in _NAMES:
            return
        boxes = arg(node, 0, "boxes")
        if boxes is not None and ctx.gpu(boxes, RECEIVER) is not None:
            self.report(node, call=short(node))
