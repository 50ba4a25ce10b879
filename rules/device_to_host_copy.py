from typing import Optional

import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import is_true, kwarg, method_call, positional, receiver, short
from synclint.semantic import KNOWN, NOT_MODULE


# the methods that may copy to the host (`torch.save` of a GPU tensor too)
_READ_BACKS = ("cpu", "to", "numpy", "save", "type", "type_as")


class DeviceToHostCopy(Rule):
    """
    ## What it does
    Flags blocking device-to-host copies of GPU tensors: `.cpu()`, `.to("cpu")` (or to a
    CPU `torch.device`) without `non_blocking=True`, `.numpy(force=True)`, and
    `torch.save` of a GPU tensor in hot code.

    ## Why is this bad?
    A device-to-host copy with `non_blocking=False` goes through
    `Copy.cu::copy_kernel_cuda` -> `memcpy_and_sync`: the CPU waits until every kernel
    queued before the copy has finished, then copies. `torch.save` of a CUDA tensor copies
    its storage to the host the same way. In a training or inference loop this drains
    the launch queue every step.

    ## Use instead
    Keep per-step results on the GPU and move them once, after the loop or under a
    logging guard:

    ```python
    outs = []
    for x in loader:
        outs.append(model(x).detach())
    result = torch.cat(outs).cpu()            # one copy
    ```

    Or overlap the copy with later work: `y = t.to("cpu", non_blocking=True)`, record an
    event, and read `y` only after `event.synchronize()` (reading it earlier gives wrong
    values).

    ## Known problems
    A receiver whose type cannot be inferred counts as a tensor unless its name reads like
    a model (`model.cpu()` is a one-time setup step, not a hazard). Plain `.numpy()` is
    not flagged: on a CUDA tensor it raises, so code that runs calls it on CPU tensors.
    `torch.save` is flagged only where the call itself is hot (a loop, `forward`,
    `*_step`), not in helpers called from a loop.
    """

    CODE = "SYN103"
    NAME = "device-to-host-copy"
    CALLS = frozenset(_READ_BACKS)
    MESSAGE = "`{expr}` copies a GPU tensor to the host and waits for all queued GPU work"
    FIX_TITLE = "Move results to the host once, outside the hot loop, or copy with `non_blocking=True` and synchronize before reading"
    CATALOGUE = ("B1", "B3")
    VALID = [
        # a model offloaded under `--offload`: loaded as an `nn.Module` on one path, a
        # TensorRT engine wrapper from a dict annotated with its class on the other (flux)
        Valid(
            "import torch\n"
            "class BaseEngine:\n"
            "    def to(self, device) -> 'BaseEngine':\n"
            "        return self\n"
            "class Manager:\n"
            "    def load_engines(self, names) -> dict[str, BaseEngine]:\n"
            "        engines = {}\n"
            "        for n in names:\n"
            "            engines[n] = BaseEngine()\n"
            "        return engines\n"
            "class AE(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        return x\n"
            "def main(trt, offload, prompts):\n"
            "    if trt:\n"
            "        engines = Manager().load_engines(['vae'])\n"
            "        ae = engines['vae'].to(device='cpu' if offload else 'cuda')\n"
            "        dec = engines['vae'].to('cpu')\n"
            "    else:\n"
            "        ae = AE().to('cuda')\n"
            "    for p in prompts:\n"
            "        out = ae(p)\n"
            "        if offload:\n"
            "            ae = ae.cpu()\n"
        ),
        # a branch that runs only while exporting an ONNX graph, never on the GPU
        Valid(
            "import torch\n"
            "class Head(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        y = self.proj(x.cuda())\n"
            "        if torch.onnx.is_in_onnx_export():\n"
            "            return y.cpu()\n"
            "        return y\n"
        ),
        Valid(  # the same cast of host data, or to a CUDA type: no copy back
            "import torch\nfrom torchvision import datasets\nds = datasets.MNIST('.', download=False)\n"
            "x = torch.unsqueeze(ds.data, dim=1).type(torch.FloatTensor)[:100].cuda()\n"
            "y = torch.ones(8, device='cuda').type(torch.cuda.HalfTensor)\n"
        ),
        # torch_xla code: tensors of unknown device are XLA (TPU) tensors, not CUDA ones
        Valid("import torch\nimport torch_xla.core.xla_model as xm\ndef gather(t: torch.Tensor):\n    return t.cpu()\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    y = x.to('cpu', non_blocking=True)\n"),
        Valid("import torch\nmodel = torch.nn.Linear(3, 3).cuda()\nmodel.cpu()\nm2 = model.to('cpu')\n"),
        Valid("import torch\ndef offload(text_encoder, ema_model, self_net):\n    for m in (text_encoder, ema_model, self_net):\n        pass\n    text_encoder.cpu()\n    ema_model.to('cpu')\n    self_net.cpu()\n"),
        Valid("import torch\nx = torch.ones(3)\nfor _ in range(3):\n    y = x.cpu().numpy()\n    z = x.to('cpu')\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    y = x.to(torch.float16)\n    z = x.to(x.device)\n"),
        Valid("import torch\ndef train(model, loader, opt):\n    for x in loader:\n        loss = model(x).sum()\n    model.cpu()\n    self_model = model\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\ntorch.save(x, 'x.pt')\nfor _ in range(2):\n    torch.save({'step': 1}, 'meta.pt')\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nif not torch.cuda.is_available():\n    y = x.cpu()\n"),
        Valid(
            "import torch\n"
            "def embed(model, x):\n"
            "    return model(x)\n"
            "model = torch.nn.Linear(4, 4)\n"
            "for x in [torch.ones(2, 4)]:\n"
            "    e = embed(model, x).cpu()\n",
        ),
        Valid(
            "import torch\n"
            "class Buffer:\n"
            "    def __init__(self):\n"
            "        self.states = torch.zeros(64, 4)\n"
            "    def sample(self):\n"
            "        return self.states.cpu().numpy()\n",
        ),
        # `.to(device=...)` of a Module moves its parameters; it is not a device-to-host copy
        Valid(
            "import torch\n"
            "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "model = torch.nn.Linear(4, 4)\n"
            "model.to(device=device)\n"
            "for _ in range(3):\n"
            "    model.to(device=device)\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return x.cpu()\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # a library's `device="cpu"` default that no caller in the project keeps: its users
        # pick the device (segmentation_models.pytorch's `Epoch._to_device`)
        Valid(
            "import torch\n"
            "class Epoch:\n"
            "    def __init__(self, loss, device='cpu'):\n"
            "        self.loss = loss\n"
            "        self.device = device\n"
            "    def to_device(self):\n"
            "        self.loss.to(self.device)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return x.cpu()\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
        # offloading a model (diffusers-style pipelines) moves parameters, it reads back no result
        Valid(
            "import torch\nfrom transformers import CLIPTextModel\nclass Pipe:\n    def __init__(self):\n"
            "        self.text_encoder = CLIPTextModel.from_pretrained('x').to('cuda')\n"
            "        self.unet = torch.nn.Linear(3, 3).cuda()\n    def __call__(self, ids):\n"
            "        e = self.text_encoder(ids)[0]\n        self.text_encoder.cpu()\n        self.unet.to('cpu')\n"
            "        return e\n"
        ),
    ]
    INVALID = [
        Invalid(  # the items of a dict annotated as tensors are tensors, whatever fills it
            "import torch\n"
            "def outputs(names) -> dict[str, torch.Tensor]:\n"
            "    out = {}\n"
            "    for n in names:\n"
            "        out[n] = torch.ones(2, device='cuda')\n"
            "    return out\n"
            "for batch in loader:\n"
            "    o = outputs(batch)\n"
            "    print(o['loss'].cpu())\n",
            line=9,
            hot=True,
        ),
        Invalid(  # trl's `get_global_statistics`: called without `device`, its "cpu" default holds
            "import torch\n"
            "def stats(accelerator, xs, device='cpu'):\n"
            "    total = accelerator.reduce(xs.sum())\n"
            "    return total.to(device)\n"
            "for xs in batches:\n"
            "    stats(acc, xs)\n",
            line=4,
            hot=True,
        ),
        Invalid(  # the default is kept: the one caller passes no device
            "import torch\n"
            "def fetch(x, device='cpu'):\n"
            "    return x.to(device)\n"
            "x = torch.ones(3, device='cuda')\n"
            "for _ in range(3):\n"
            "    fetch(x)\n",
            line=3,
            hot=True,
        ),
        Invalid(  # old-style cast to a CPU tensor type: a copy back from the GPU
            "import torch\npred = torch.ones(8, device='cuda')\nfor _ in range(3):\n"
            "    acc = (pred > 0).sum().type(torch.FloatTensor) / 8\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    y = (x * 2).cpu().numpy()\n",
            line=4,
            hot=True,
            message="`(x * 2).cpu()` copies a GPU tensor to the host and waits for all queued GPU work",
        ),
        Invalid(
            "import torch\ncpu = torch.device('cpu')\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    y = x.to(cpu)\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\ndef predict(model: torch.nn.Module, x):\n    out = model(x)\n    return out.to('cpu')\n",
            line=4,
            hot=False,
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        y = x.relu()\n        torch.save(y, 'act.pt')\n        return y\n",
            line=5,
            hot=True,
            message="`torch.save(y, ...)` copies a GPU tensor to the host and waits for all queued GPU work",
        ),
        Invalid(
            "import torch\ndef collect(model_output):\n    return model_output.cpu()\n",
            line=3,
            hot=False,
        ),
        Invalid(
            "import torch\ndef step_outputs(out):\n    return out.detach().numpy(force=True)\n",
            line=3,
            hot=False,
        ),
        Invalid(
            "import torch\n"
            "def embed(model, x):\n"
            "    return model(x.cuda())\n"
            "model = torch.nn.Linear(4, 4).cuda()\n"
            "for x in torch.ones(8, 2, 4):\n"
            "    e = embed(model, x).cpu()\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Buffer:\n"
            "    def __init__(self):\n"
            "        self.states = torch.zeros(64, 4, device='cuda')\n"
            "    def sample(self):\n"
            "        return self.states.cpu().numpy()\n",
            line=6,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(512, 512, device=device)\n"
            "xs = torch.randn(steps, 256, 512, device=device)\n"
        ),
        flagged=(
            "def flagged(w: torch.Tensor, xs: torch.Tensor):\n"
            "    outs = []\n"
            "    for x in xs:\n"
            "        h = torch.tanh(x @ w) @ w\n"
            "        outs.append(h.sum(1).cpu())\n"
            "    return torch.cat(outs).tolist()\n"
        ),
        fixed=(
            "def fixed(w: torch.Tensor, xs: torch.Tensor):\n"
            "    outs = []\n"
            "    for x in xs:\n"
            "        h = torch.tanh(x @ w) @ w\n"
            "        outs.append(h.sum(1))\n"
            "    return torch.cat(outs).tolist()\n"
        ),
        sizes={"steps": 50},
        # (the two run the same matmuls apart, and a CPU BLAS under load may split them
        # across threads differently: float32 sums equal to rounding, not bit for bit)
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        m = method_call(node, _READ_BACKS)
        if m is None:
            return
        if m == "save":
            if ctx.qualname(node.func) == "torch.save" and node.args and ctx.site_hot():
                obj = node.args[0].value
                if node.args[0].keyword is None and ctx.gpu(obj) is not None:
                    self.report(node, expr=f"torch.save({short(obj)}, ...)")
            return
        if ctx.qualname(node.func) is None:  # `torch.Tensor.cpu(t)` and module functions aside
            recv = receiver(node)
            if m == "cpu" and not positional(node):
                if ctx.gpu(recv, NOT_MODULE) is not None:
                    self.report(node, expr=f"{short(recv)}.cpu()")
            elif m == "to" and (policy := self._to_cpu_blocking(node)) and ctx.gpu(recv, policy) is not None:
                self.report(node, expr=short(node))
            elif m == "numpy" and is_true(kwarg(node, "force")) is True and self._numpy_source(recv):
                self.report(node, expr=short(node))
            elif m in ("type", "type_as") and ctx.host_type_move(node) and ctx.infer(recv).device == V.CUDA:
                # `.type(torch.FloatTensor)`: old code's dtype cast, mostly of host data, so
                # only a receiver known to be on the GPU
                self.report(node, expr=short(node))

    def _to_cpu_blocking(self, node: cst.Call) -> Optional[str]:
        """`.to(<cpu device>, ...)` whose `non_blocking` is absent or literally False: the
        policy the receiver is asked under (None: not such a call). A CPU device that is only
        a parameter's default (`device="cpu"`, no caller known to pass it) wants a receiver
        known to be on the GPU: the library's users pick the device."""
        pos = positional(node)
        dev_arg: Optional[cst.BaseExpression] = kwarg(node, "device")
        if dev_arg is None and pos:
            dev_arg = pos[0].value
        is_dev, dev = self.ctx.device_of_arg(dev_arg)
        if not is_dev or dev != V.CPU:
            return None
        nb = kwarg(node, "non_blocking")
        if nb is None and len(pos) >= 3:  # to(device, dtype, non_blocking)
            nb = pos[2].value
        if is_true(nb) is not False:  # not absent nor literally False
            return None
        return KNOWN if self.ctx.infer(dev_arg).assumed else NOT_MODULE

    def _numpy_source(self, recv: cst.BaseExpression) -> bool:
        # Only tensors have `.numpy(force=...)`; an unknown receiver is a tensor whose
        # device the author did not know either.
        if self.ctx.in_cuda_less:
            return False
        v = self.ctx.infer(recv)
        return (v.kind == V.TENSOR and v.device != V.CPU) or v.kind == V.UNKNOWN
