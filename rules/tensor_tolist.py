import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import arg, method_call, receiver, short
from synclint.semantic import EVIDENT, RECEIVER
from synclint.semantic import library as L
from synclint.semantic import values as V


class TensorTolist(Rule):
    """
    ## What it does
    Flags `.tolist()` on a tensor that lives on the GPU, and a Hugging Face tokenizer's
    `decode` / `batch_decode` of GPU token ids (which calls `.tolist()` on them).

    ## Why is this bad?
    `.tolist()` copies the whole tensor to the host with a blocking device-to-host copy
    (`torch/csrc/utils/tensor_list.cpp` -> `copy_kernel_cuda` -> `memcpy_and_sync`), so
    the CPU waits until every kernel queued before it has finished. Called once per batch
    (collecting predictions, logging per-class values) it drains the launch queue each
    step and the CPU can no longer run ahead of the GPU. A tokenizer's `decode` and
    `batch_decode` convert a tensor of ids with transformers' `to_py_obj`, which is
    `obj.tolist()` (`utils/generic.py`): decoding what `model.generate(...)` returned on the
    GPU is that read-back, once per sequence for `batch_decode`.

    ## Use instead
    Keep the per-step results on the GPU and convert once, at the end of the epoch or
    under a logging guard:

    ```python
    preds = []
    for x in loader:
        preds.append(model(x).argmax(1))      # stays on the GPU
    labels = torch.cat(preds).tolist()        # one transfer
    ```

    Decode the ids of a whole batch (or of every step) after one `.cpu()` of them all:

    ```python
    ids = model.generate(input_ids, max_new_tokens=64).cpu()   # one transfer
    texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
    ```

    ## Known problems
    Receivers whose type cannot be inferred are assumed to be tensors only in files that
    import no NumPy-like library (NumPy arrays and pandas objects have `.tolist()` too).
    Only a tokenizer the model knows (`AutoTokenizer.from_pretrained(...)`, a parameter its
    callers pass one to) is checked for `decode`.
    """

    CODE = "SYN102"
    NAME = "tensor-tolist"
    CALLS = frozenset({"tolist"} | L.TOKENIZER_DECODE)
    MESSAGE = "`{recv}.tolist()` copies a GPU tensor to the host and waits for all queued GPU work{inside}"
    FIX_TITLE = "Keep per-step results on the GPU and call `.tolist()` once on the concatenated result"
    CATALOGUE = ("B1",)
    VALID = [
        Valid("import numpy as np\nimport torch\na = np.arange(3)\nfor _ in range(3):\n    v = a.tolist()\n"),
        Valid("import torch\nx = torch.arange(3)\nfor _ in range(3):\n    v = x.tolist()\n"),
        Valid("import torch\nx = torch.arange(3, device='cuda')\nfor _ in range(3):\n    v = x.cpu().tolist()\n"),
        Valid("import torch\nx = torch.arange(3, device='cuda')\nfor _ in range(3):\n    v = list(x.shape)\n    s = x.size()\n"),
        Valid("import torch\nx = torch.arange(3, device='cuda')\nf = x.tolist\n"),
        Valid(
            "import torch\n"
            "def predict(logits):\n"
            "    return logits.argmax(-1).cpu()\n"
            "logits = torch.rand(4, 10, device='cuda')\n"
            "for _ in range(3):\n"
            "    labels = predict(logits).tolist()\n",
        ),
        Valid(
            "import torch\n"
            "class Tracker:\n"
            "    def __init__(self):\n"
            "        self.seen = torch.zeros(10)\n"
            "    def step(self, ids):\n"
            "        self.seen[ids] += 1\n"
            "        return self.seen.tolist()\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return x.argmax(-1).tolist()\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # arrays kept in a list of dicts (EfficientDet's postprocess): `.tolist()` of an array
        Valid(
            "import numpy as np\nimport torch\n"
            "def postprocess(x):\n"
            "    out = []\n"
            "    for i in range(x.shape[0]):\n"
            "        out.append({'rois': x[i].cpu().numpy(), 'scores': np.ones(3)})\n"
            "    return out\n"
            "x = torch.rand(4, 4, device='cuda')\n"
            "for step in range(10):\n"
            "    preds = postprocess(x)\n"
            "    for p in preds:\n"
            "        box = p['rois'][0, :]\n"
            "        b = box.tolist()\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return x.argsort().tolist()\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
        # a shape as a tensor is made on the host, whatever the device of what it measures
        Valid("import torch\nx = torch.ones(3, 4, device='cuda')\nfor _ in range(3):\n    dims = torch._shape_as_tensor(x).tolist()\n"),
        # `.astype` is an array's method (no tensor has it): what it returns is host data
        Valid("import torch\ndef boxes_of(det):\n    return det.astype(float).round().tolist()\n"),
        # a tokenizer decoding ids already on the host; a project class's `decode`; a string's
        Valid(
            "import torch\nfrom transformers import AutoTokenizer, AutoModelForCausalLM\n"
            "tok = AutoTokenizer.from_pretrained('m')\nmodel = AutoModelForCausalLM.from_pretrained('m').cuda()\n"
            "class Codec:\n    def decode(self, ids):\n        return ids\n"
            "def run(prompts):\n    codec = Codec()\n    for p in prompts:\n"
            "        ids = tok(p, return_tensors='pt').input_ids.cuda()\n"
            "        out = model.generate(ids, max_new_tokens=8).cpu()\n"
            "        text = tok.batch_decode(out, skip_special_tokens=True)\n"
            "        codec.decode(ids)\n        b'x'.decode()\n"
        ),
        # pycocotools' evaluator holds NumPy arrays
        Valid(
            "import torch\nfrom pycocotools.cocoeval import COCOeval\ndef evaluate(model, loader, gt, dt):\n"
            "    for x in loader:\n        model(x.cuda())\n    coco_eval = COCOeval(gt, dt, 'bbox')\n"
            "    coco_eval.evaluate()\n    coco_eval.accumulate()\n    return coco_eval.stats.tolist()\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.arange(3, device='cuda')\nfor _ in range(3):\n    v = (x * 2).tolist()\n",
            line=4,
            hot=True,
            message="`(x * 2).tolist()` copies a GPU tensor to the host and waits for all queued GPU work",
        ),
        # LLaVA's evaluation: the ids `generate` returned on the GPU, decoded per question
        Invalid(
            "import torch\nfrom transformers import AutoTokenizer, AutoModelForCausalLM\n"
            "tok = AutoTokenizer.from_pretrained('m')\nmodel = AutoModelForCausalLM.from_pretrained('m').cuda()\n"
            "def run(prompts):\n    for p in prompts:\n"
            "        ids = tok(p, return_tensors='pt').input_ids.cuda()\n"
            "        out = model.generate(ids, max_new_tokens=8)\n"
            "        text = tok.batch_decode(out, skip_special_tokens=True)[0]\n",
            line=9,
            hot=True,
            message="`out.tolist()` copies a GPU tensor to the host and waits for all queued GPU work "
                    "(inside `tok.batch_decode(out, skip_special_tokens=True)`: a tokenizer decodes a tensor "
                    "of ids with `.tolist()`)",
        ),
        Invalid(
            "import torch\ndef evaluate(model, loader):\n    for x in loader:\n        out = model(x)\n    return out.argmax(1).tolist()\n",
            line=5,
            hot=False,
        ),
        Invalid(
            "import torch\n"
            "def predict(logits):\n"
            "    return logits.argmax(-1)\n"
            "logits = torch.rand(4, 10, device='cuda')\n"
            "for _ in range(3):\n"
            "    labels = predict(logits).tolist()\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Tracker:\n"
            "    def __init__(self):\n"
            "        self.seen = torch.zeros(10, device='cuda')\n"
            "    def step(self, ids):\n"
            "        self.seen[ids] += 1\n"
            "        return self.seen.tolist()\n",
            line=7,
        ),
        # beside it, a tensor's `.tolist()` after a NumPy-looking chain is still a read-back
        Invalid("import torch\ndef boxes_of(det):\n    return det.float().round().tolist()\n", line=3),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(256, 10, device=device)\n"
            "xs = torch.randn(steps, 128, 256, device=device)\n"
        ),
        flagged=(
            "def flagged(w: torch.Tensor, xs: torch.Tensor):\n"
            "    preds = []\n"
            "    for x in xs:\n"
            "        preds.extend((x @ w).argmax(1).tolist())\n"
            "    return preds\n"
        ),
        fixed=(
            "def fixed(w: torch.Tensor, xs: torch.Tensor):\n"
            "    preds = []\n"
            "    for x in xs:\n"
            "        preds.append((x @ w).argmax(1))\n"
            "    return torch.cat(preds).cpu().tolist()\n"
        ),
        sizes={"steps": 50},
    )

    def visit_Call(self, node: cst.Call) -> None:
        if method_call(node, L.TOKENIZER_DECODE):
            self._decoded(node)
            return
        if node.args or not method_call(node, ("tolist",)):
            return
        recv = receiver(node)
        if self.ctx.gpu(recv, RECEIVER) is not None:
            self.report(node, recv=short(recv), inside="")

    def _decoded(self, node: cst.Call) -> None:
        """`tokenizer.decode(ids)` / `batch_decode(ids)` of a known tokenizer: `ids.tolist()`."""
        ids = arg(node, 0, "token_ids") or arg(node, 0, "sequences")
        tok = self.ctx.infer(receiver(node))
        if ids is None or not (tok.kind == V.OBJECT and tok.cls == L.TOKENIZER):
            return
        if self.ctx.gpu(ids, EVIDENT) is not None:
            self.report(node, recv=short(ids), inside=f" (inside `{short(node, 60)}`: a tokenizer decodes a tensor of ids with `.tolist()`)")
