from typing import List, Optional, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import kwarg, last_names, positional
from synclint.rules._overhead import Indentation, absolute_layout
from synclint.semantic.context import Site

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
PIN_MEMORY_POSITION = 7  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory)


def with_pin_memory(call: cst.Call) -> cst.Call:
    """`call` with `pin_memory=True` (replacing `pin_memory=False`, or appended)."""
    true = cst.Name("True")
    args = list(call.args)
    for i, a in enumerate(args):
        if a.keyword is not None and a.keyword.value == "pin_memory":
            args[i] = a.with_changes(value=true)
            return call.with_changes(args=args)
    new = cst.Arg(value=true, keyword=cst.Name("pin_memory"),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if type(last.comma) is cst.Comma:  # a trailing comma: keep the layout, one argument a line
        sep = args[-2].comma if len(args) > 1 and type(args[-2].comma) is cst.Comma else space
        args[-1] = last.with_changes(comma=sep)
        args.append(new.with_changes(comma=last.comma))
    else:
        args[-1] = last.with_changes(comma=space)
        args.append(new)
    return call.with_changes(args=args)


class DataloaderWithoutPinMemory(Rule):
    """
    ## What it does
    Flags a `torch.utils.data.DataLoader` built without `pin_memory=True` in a file that
    moves data to a CUDA device.

    ## Why is this bad?
    Batches from an unpinned loader live in pageable host memory. Copying them to the GPU
    with `.to(device)` is a blocking copy that waits for all queued GPU work
    (`Copy.cu::copy_kernel_cuda` -> `memcpy_and_sync`, catalogue B4), and
    `non_blocking=True` from pageable memory still blocks the host while the driver
    stages the data (B5, which `set_sync_debug_mode` does not see). With `pin_memory=True`
    the loader returns page-locked batches, and `.to(device, non_blocking=True)` becomes an
    asynchronous DMA that overlaps with compute (B6). Measured [H200, torch 2.11], a 16 MB
    batch: pageable `.to()` 1089.6 us, pinned `non_blocking` 293.0 us.

    ## Use instead
    ```python
    loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix safety
    The fix adds `pin_memory=True` and is unsafe: pinned memory is page-locked host memory
    (large batches with many workers can exhaust it), and a dataset that already yields
    CUDA tensors cannot be pinned. Pinning alone keeps the copy blocking; add
    `non_blocking=True` to the `.to()` calls to get the overlap.

    ## Known problems
    The device is judged per file: a file that mentions CUDA anywhere (`.cuda()`, a `"cuda"`
    string, a CUDA `torch.device`) is assumed to send its batches there. A `pin_memory`
    value that is not a literal (`pin_memory=torch.cuda.is_available()`) is trusted.
    """

    CODE = "SYN504"
    NAME = "dataloader-without-pin-memory"
    CALLS = last_names(DATALOADERS)
    MESSAGE = "`DataLoader` without `pin_memory=True` hands out pageable batches, so their copy to the GPU blocks"
    FIX_TITLE = "Pass `pin_memory=True` and copy batches with `.to(device, non_blocking=True)`"
    FIX = "always"
    CATALOGUE = ("B4", "B5", "B6")
    VALID = [
        # point 7: a Dataset whose items are CUDA tensors (pinning them would raise)
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass OnDevice(Dataset):\n"
            "    def __init__(self):\n        self.x = torch.randn(100, 4, device='cuda')\n"
            "    def __len__(self):\n        return 100\n    def __getitem__(self, i):\n        return self.x[i]\n"
            "loader = DataLoader(OnDevice(), batch_size=10)\nfor x in loader:\n    y = x * 2\n"
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=32, pin_memory=True)\n"
            "for x in loader:\n    x = x.to('cuda', non_blocking=True)\n"
        ),
        # Not a literal: trusted.
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, batch_size=32, pin_memory=torch.cuda.is_available())\nmodel = model.cuda()\n"
        ),
        # A CPU-only file.
        Valid("import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=32)\nfor x in loader:\n    pass\n"),
        # A dataset of CUDA tensors cannot be pinned.
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
            "x = torch.randn(100, 4, device='cuda')\nds = TensorDataset(x)\nloader = DataLoader(ds, batch_size=10)\n"
        ),
        # Not torch's DataLoader; keyword arguments passed through.
        Valid("import torch\nfrom mylib import DataLoader\nloader = DataLoader(ds)\nx = torch.ones(3).cuda()\n"),
        Valid("import torch.utils.data as tud\nloader = tud.DataLoader(ds, **loader_kwargs)\ndevice = 'cuda'\n"),
        Valid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "def make_loader(ds):\n"
            "    return DataLoader(ds, batch_size=32, shuffle=True)\n"
            "for x, y in make_loader(ds):\n"
            "    x = x.to(torch.float16)\n",
        ),
        Valid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "class Trainer:\n"
            "    def __init__(self, ds):\n"
            "        self.device = torch.device('cpu')\n"
            "        self.loader = DataLoader(ds, batch_size=32)\n"
            "    def fit(self):\n"
            "        for x in self.loader:\n"
            "            x = x.to(self.device)\n",
        ),
        # prompts: batches of strings have nothing to pin
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "def generate(pipe, path):\n    prompts = [f'a photo of {w}' for w in open(path).read().split()]\n"
            "    for batch in DataLoader(prompts, batch_size=4):\n        pipe(batch)\n"
            "x = torch.ones(2).cuda()\n"
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\nprompts = ['a cat', 'a dog']\n"
            "loader = DataLoader(prompts, batch_size=2)\nx = torch.ones(2).cuda()\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\n"
            "loader = DataLoader(ds, batch_size=32, shuffle=True)\nfor x, y in loader:\n    x = x.to(device)\n",
            line=4,
            hot=False,
            message="`DataLoader` without `pin_memory=True` hands out pageable batches, so their copy to the GPU blocks",
            fixed="import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\n"
            "loader = DataLoader(ds, batch_size=32, shuffle=True, pin_memory=True)\nfor x, y in loader:\n    x = x.to(device)\n",
        ),
        Invalid(
            "import torch.utils.data as tud\ndef make(ds):\n    return tud.DataLoader(\n        ds,\n        batch_size=8,\n"
            "        pin_memory=False,\n    )\nbatch = next(iter(make(ds)))[0].cuda()\n",
            line=3,
            fixed="import torch.utils.data as tud\ndef make(ds):\n    return tud.DataLoader(\n        ds,\n        batch_size=8,\n"
            "        pin_memory=True,\n    )\nbatch = next(iter(make(ds)))[0].cuda()\n",
        ),
        Invalid(
            "import torch\nloader = torch.utils.data.DataLoader(\n    ds,\n    batch_size=8,\n)\nmodel.to('cuda:0')\n",
            line=2,
            fixed="import torch\nloader = torch.utils.data.DataLoader(\n    ds,\n    batch_size=8,\n    pin_memory=True,\n)\nmodel.to('cuda:0')\n",
        ),
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "def make_loader(ds):\n"
            "    return DataLoader(ds, batch_size=32, shuffle=True)\n"
            "for x, y in make_loader(ds):\n"
            "    x = x.to('cuda')\n",
            line=4,
        ),
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "class Trainer:\n"
            "    def __init__(self, ds):\n"
            "        self.device = torch.device('cuda')\n"
            "        self.loader = DataLoader(ds, batch_size=32)\n"
            "    def fit(self):\n"
            "        for x in self.loader:\n"
            "            x = x.to(self.device)\n",
            line=6,
        ),
        # a list of numbers collates into tensors that are copied to the GPU
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\nvalues = [0.5, 1.5]\n"
            "loader = DataLoader(values, batch_size=2)\nx = torch.ones(2).cuda()\n",
            line=4,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "batches = [torch.randn(batch_elems) for _ in range(n_batches)]\n"
            "dev = device\n"
        ),
        flagged=(
            "def flagged(batches, dev):\n"
            "    loader = torch.utils.data.DataLoader(batches, batch_size=None)\n"
            "    total = torch.zeros((), device=dev)\n"
            "    for x in loader:\n"
            "        total += x.to(dev).sum()\n"
            "    return total\n"
        ),
        fixed=(
            "def fixed(batches, dev):\n"
            "    pin = dev == 'cuda'  # pinning needs an accelerator\n"
            "    loader = torch.utils.data.DataLoader(batches, batch_size=None, pin_memory=pin)\n"
            "    total = torch.zeros((), device=dev)\n"
            "    for x in loader:\n"
            "        total += x.to(dev, non_blocking=True).sum()\n"
            "    return total\n"
        ),
        sizes={"batch_elems": 4 * 1024 * 1024, "n_batches": 8},  # 16 MB float32 batches
        condition="the batches are CPU tensors (a loader over CUDA tensors cannot pin)",
        compare="close",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._indent = Indentation()
        self._pending: List[Tuple[cst.Call, Site, str]] = []

    def visit_Module(self, node: cst.Module) -> None:
        self._indent.enter_module(node.default_indent)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._indent.push(node)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._indent.pop()

    def _gpu_dataset(self, e: Optional[cst.BaseExpression]) -> bool:
        """Its items are already on the GPU: pinning them would raise."""
        if e is None:
            return False
        d = self.ctx.dataset_device(e)
        if d is None:  # a TensorDataset of tensors of unknown device: it may be the GPU's
            return self.ctx.infer(e).cls == "torch.utils.data.TensorDataset"
        return d != V.CPU

    def _strings(self, e: Optional[cst.BaseExpression]) -> bool:
        """Its items are strings (prompts, file names): batches of them are lists of
        strings, with nothing to pin or copy."""
        item = self.ctx.dataset_item(e) if e is not None else None
        return item is not None and item.kind == V.PY and item.py == "str"

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.qualname(node.func) not in DATALOADERS or ctx.in_cuda_less:
            return
        if any(a.star for a in node.args) or len(positional(node)) > PIN_MEMORY_POSITION:
            return
        pin = kwarg(node, "pin_memory")
        if pin is not None and not (type(pin) is cst.Name and pin.value == "False"):
            return
        dataset = kwarg(node, "dataset") or (node.args[0].value if node.args and node.args[0].keyword is None else None)
        if self._gpu_dataset(dataset) or self._strings(dataset):
            return
        self._pending.append((node, ctx.site(), self._indent.current))

    def leave_Module(self, node: cst.Module) -> None:
        if not self.ctx.puts_on_cuda:
            return
        for call, where, indent in self._pending:
            self.report_at(where, call, absolute_layout(with_pin_memory(call), indent), safe=False)
