import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.library import LEGACY_CTORS
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import dict_values, kwarg, lightning_logged, method_call, receiver, short
from synclint.semantic.library import COPYING_DATA_FACTORIES as DATA_FACTORIES


class TensorFromHostDataInHotPath(Rule):
    """
    ## What it does
    Flags GPU tensors built from host data: `torch.tensor(data, device=device)`,
    `torch.as_tensor(list_or_array, device=device)`, `x.new_tensor(data)` on a GPU `x`,
    `torch.tensor(data).cuda()`, a legacy CUDA tensor type called on host data
    (`torch.cuda.FloatTensor(ndarray)`), and a LightningModule's `self.log(name, number)` /
    `self.log_dict({...: number})`, which Lightning turns into
    `torch.tensor(number, device=self.device)`.

    ## Why is this bad?
    The data is first converted into a CPU tensor, which is then copied to the device with
    `non_blocking=False` (`torch/csrc/utils/tensor_new.cpp::internal_new_from_data` ->
    `tensor.to(device, ..., /*non_blocking=*/false)`): a blocking host-to-device copy that also
    waits for all queued GPU work (catalogue B7), once per step when it sits in a loop or a
    `forward`. It happens even for a single number (`torch.tensor(0.5, device="cuda")`).

    ## Use instead
    Hoist constants out of the hot path, or build the tensor on the device:
    ```python
    scale = torch.tensor([0.5, 2.0], device=device)   # once, at setup
    for x in batches:
        y = x * scale
    # values that change: device-side factories do not copy
    t = torch.full((), step_size, device=device)
    pos = torch.arange(seq_len, device=device)
    ```
    Data that really comes from the host each step: `torch.tensor(data).pin_memory().to(device,
    non_blocking=True)`, or a DataLoader with `pin_memory=True`. In a LightningModule, log the
    tensor itself (`self.log("loss", loss)`, not `loss.item()`): Lightning keeps it on the
    device and reads it back only when it reduces or shows it.

    ## Known problems
    `torch.tensor(x, device=...)` of a value whose type is unknown is assumed to be host data
    (`torch.tensor` of a GPU tensor is discouraged and rare); `torch.as_tensor` is flagged only
    for data known to live on the host (lists, numbers, NumPy arrays, CPU tensors).
    """

    CODE = "SYN302"
    NAME = "tensor-from-host-data-in-hot-path"
    MESSAGE = "`{expr}` copies host data to the GPU with a blocking transfer on every call"
    FIX_TITLE = "Hoist the constant out of the hot path, or build it on the device (`torch.full/arange/zeros(..., device=)`)"
    CATALOGUE = ("B7",)
    SETUP_EXEMPT = True
    VALID = [
        Valid(  # the tensor itself stays on the device; a `log` that is not Lightning's
            "import torch\nimport pytorch_lightning as pl\nclass Model(pl.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n        loss = self.net(batch).mean()\n"
            "        self.log('loss', loss)\n        self.log('phase', 'train')\n        return loss\n"
            "class Tracker:\n    def step(self, loss):\n        self.log('loss', loss.item())\n"
        ),
        Valid(  # the CPU tensor type: no copy
            "import numpy as np\nimport torch\nTensor = torch.FloatTensor\n"
            "for _ in range(3):\n    z = Tensor(np.random.normal(0, 1, (4, 8)))\n"
        ),
        Valid("import torch\nscale = torch.tensor([0.5, 2.0], device='cuda')\nfor x in range(3):\n    y = x * scale\n", cold=True),
        Valid("import torch\nfor i in range(3):\n    t = torch.tensor([1, 2, 3])\n    u = torch.tensor(0.5, device='cpu')\n"),
        Valid("import torch\ndef forward(self, x):\n    return torch.as_tensor(x, device=x.device)\n"),
        Valid("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    y = torch.tensor(x, device='cuda')\n    z = x.new_zeros(3)\n"),
        Valid("import torch\nfor _ in range(3):\n    t = torch.full((), 0.5, device='cuda')\n    p = torch.arange(4, device='cuda')\n"),
        Valid(  # the chosen type called with sizes: allocated where it lives, no copy
            "import torch\nTensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor\n"
            "for n in range(3):\n    t = Tensor(n, 4)\n"
        ),
        Valid(  # a size, not data: allocated on the GPU directly
            "import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\nfor n in range(3):\n    t = torch.Tensor(n, 4)\n"
        ),
        Valid("import torch\nfor d in [[1, 2]]:\n    t = torch.tensor(d).pin_memory().to('cuda', non_blocking=True)\n"),
        Valid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if self.scale is None:  # lazy init: runs once\n"
            "            self.scale = torch.tensor([0.5, 2.0], device=x.device)\n        return x * self.scale\n", 
        cold=True),
        Valid(
            "import torch\n"
            "def class_weights(device):\n"
            "    return torch.tensor([0.1, 0.9], device=device)\n"
            "for step in range(10):\n"
            "    w = class_weights('cpu')\n",
        ),
        Valid(
            "import torch\n"
            "class Loss(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.w = torch.tensor([0.1, 0.9], device='cuda')\n"
            "    def forward(self, logits, y):\n"
            "        return torch.nn.functional.cross_entropy(logits, y, weight=self.w)\n",
            cold=True,
        ),
        # normalisation constants copied once at setup: cold, so `--hot-only` is silent
        Valid(
            "import torch\ndevice = 'cuda'\nmean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1).to(device)\n"
            "def train(model, loader):\n    for x in loader:\n        model((x.to(device, non_blocking=True) - mean))\n",
            cold=True,
        ),
    ]
    INVALID = [
        Invalid(  # Lightning logs a number as `torch.tensor(value, device=self.device)`
            "import torch\nimport pytorch_lightning as pl\nclass Model(pl.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n        loss = self.net(batch).mean()\n"
            "        self.log_dict({k: v.item() for k, v in {'loss': loss}.items()})\n        return loss\n",
            line=6,
            hot=True,
        ),
        Invalid(  # a metric's number, computed in another method (`x.item() * 100`)
            "import torch\nimport pytorch_lightning as pl\nclass Model(pl.LightningModule):\n"
            "    def accuracy(self, logits, y):\n        return (logits.argmax(1) == y).float().mean().item() * 100\n"
            "    def validation_step(self, batch, batch_idx):\n        x, y = batch\n"
            "        self.log('acc', self.accuracy(self.net(x), y))\n",
            line=8,
            hot=True,
        ),
        Invalid(  # the type chosen by whether CUDA is there: the GPU path is the one to flag
            "import numpy as np\nimport torch\ncuda = torch.cuda.is_available()\n"
            "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
            "def sample(n):\n    return Tensor(np.random.normal(0, 1, (n, 8)))\n"
            "for i in range(3):\n    z = sample(4)\n",
            line=6,
            hot=True,
        ),
        Invalid(  # the PyTorch-GAN idiom: a CUDA tensor type in a variable, called on an array
            "import numpy as np\nimport torch\nTensor = torch.cuda.FloatTensor\n"
            "for _ in range(3):\n    z = Tensor(np.random.normal(0, 1, (4, 8)))\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\ndevice = 'cuda'\nfor step in range(10):\n    w = torch.tensor([0.1, 0.9], device=device)\n",
            line=4,
            hot=True,
            message="`torch.tensor([0.1, 0.9], device=device)` copies host data to the GPU with a blocking transfer on every call",
        ),
        Invalid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x * x.new_tensor([1.0, 2.0])\n",
            line=4,
            hot=True,
        ),
        Invalid("import torch\nimport numpy as np\ndef train_step(a):\n    return torch.as_tensor(np.ones(3), device='cuda')\n", line=4),
        Invalid("import torch\ndef make():\n    for lst in [[1, 2]]:\n        t = torch.tensor(lst).cuda()\n", line=4),
        Invalid("import torch\ndef train_step(n, device):\n    return torch.LongTensor([n]).to(device)\n", line=3),
        # CUDA made the default tensor type by the script (after the definition: it runs first)
        Invalid(
            "import numpy as np\nimport torch\ndef train(images):\n    for i in range(9):\n"
            "        target = torch.Tensor(np.asarray(images[i])).to('cuda')\n"
            "if __name__ == '__main__':\n    torch.set_default_tensor_type('torch.cuda.FloatTensor')\n    train([])\n",
            line=5, hot=True,
        ),
        Invalid(
            "import torch\n"
            "def class_weights(device):\n"
            "    return torch.tensor([0.1, 0.9], device=device)\n"
            "for step in range(10):\n"
            "    w = class_weights('cuda')\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Loss(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.device = torch.device('cuda')\n"
            "    def forward(self, logits, y):\n"
            "        w = torch.tensor([0.1, 0.9], device=self.device)\n"
            "        return torch.nn.functional.cross_entropy(logits, y, weight=w)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "xs = [torch.randn(256, 4, device=device) for _ in range(steps)]\n"
            "scale = torch.tensor([0.5, 2.0, 1.5, 1.0], device=device)\n"
        ),
        flagged=(
            "def flagged(xs):\n"
            "    out = []\n"
            "    for x in xs:\n"
            "        scale = torch.tensor([0.5, 2.0, 1.5, 1.0], device=device)\n"
            "        out.append(x * scale)\n"
            "    return torch.stack(out)\n"
        ),
        fixed=(
            "def fixed(xs, scale):\n"
            "    out = []\n"
            "    for x in xs:\n"
            "        out.append(x * scale)\n"
            "    return torch.stack(out)\n"
        ),
        sizes={"steps": 50},
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.in_cuda_less:
            return
        if self._lightning_logs_number(node):
            # `self.log("loss", loss.item())` in a LightningModule: Lightning makes the number
            # a tensor on the module's device, `torch.tensor(value, device=self.device)`
            self.report(node, expr=short(node), fix_title="Log the tensor itself (no `.item()`): Lightning keeps it on the device")
            return
        tn = ctx.torch_name(node.func)
        ctor = ctx.infer(node.func)
        if ctor.kind == V.PY and ctor.py == "typestr" and ctor.device in (V.CUDA, V.EITHER) \
                and _host_array(ctx, _data(node)):
            # `Tensor = torch.cuda.FloatTensor` ... `Tensor(ndarray)`: built from host data,
            # then copied to the GPU with a blocking transfer. `torch.cuda.FloatTensor if
            # cuda else torch.FloatTensor` is a device choice: the GPU path is the one to flag.
            self.report(node, expr=short(node))
            return
        if tn in LEGACY_CTORS and ctx.default_device == V.CUDA and _host_array(ctx, _data(node)):
            # `torch.Tensor(ndarray)` with CUDA as the default tensor type: built on the host,
            # then copied to the GPU with a blocking transfer
            self.report(node, expr=short(node))
            return
        if tn in DATA_FACTORIES:
            if not _data(node) or ctx.infer(node).device == V.CPU:
                return
            if kwarg(node, "device") is None and ctx.default_device == V.CPU:
                return  # on the device of a tensor argument, not a host copy
            if ctx.host_data(_data(node), strict=tn != "tensor"):
                self.report(node, expr=short(node))
            return
        if method_call(node, ("new_tensor",)):
            recv = receiver(node)
            dev = kwarg(node, "device")
            if dev is not None:
                is_dev, d = ctx.device_of_arg(dev)
                if is_dev and d == V.CPU:
                    return
            elif ctx.gpu(recv) is None:
                return
            if _data(node) is not None and ctx.host_data(_data(node), strict=False):
                self.report(node, expr=short(node))
            return
        move = ctx.gpu_move(node)
        if move is None or move.non_blocking is not False:
            return  # a non_blocking copy of pageable data is SYN303's
        found = ctx.factory_under(receiver(node))
        if found is None or found[1] not in DATA_FACTORIES or ctx.infer(found[0]).device != V.CPU:
            return
        data = _data(found[0])
        if data is not None and ctx.host_data(data, strict=found[1] != "tensor"):
            self.report(node, expr=short(node))

    def _lightning_logs_number(self, node: cst.Call) -> bool:
        """`self.log(name, <Python number>)` or `self.log_dict({...: <number>})` in a
        LightningModule's method."""
        found = lightning_logged(self.ctx, node)
        if found is None:
            return False
        method, logged = found
        values = dict_values(logged) if method == "log_dict" else [logged]
        return any(self._number(v) for v in values or ())

    def _number(self, e: cst.BaseExpression) -> bool:
        v = self.ctx.infer(e)
        return v.kind == V.PY and v.py in V.NUMBERS


def _host_array(ctx, data) -> bool:
    """Data (not a size) for a legacy constructor: a list, tuple or NumPy array on the host."""
    if data is None:
        return False
    if type(data) in (cst.List, cst.Tuple, cst.ListComp):
        return True
    v = ctx.infer(data)
    return v.kind == V.NUMPY or (v.kind == V.PY and v.py in ("list", "tuple")) or (
        v.kind == V.TENSOR and V.on_host(v)
    )


def _data(call: cst.Call):
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    d = kwarg(call, "data")
    return d if d is not None else kwarg(call, "obj")
