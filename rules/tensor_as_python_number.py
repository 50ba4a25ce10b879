from typing import Iterator, Optional, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import positional, short
from synclint.rules._helpers import gpu_number

# torch factories whose positional arguments are all sizes or bounds (Python ints/numbers).
_ALL_POSITIONAL = {"zeros", "ones", "empty", "rand", "randn", "arange", "linspace", "logspace", "eye",
                   "randperm", "randint"}
_SIZE_KWARGS = {"size", "start", "end", "step", "steps", "n", "m", "low", "high"}
# Tensor methods whose arguments are sizes (`x.view(k, -1)`, `x.new_zeros(k)`).
_SIZE_METHODS = {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty"}
# Tensor methods (and torch functions, tensor first) with one int argument at this index.
_INT_ARG_METHODS = {"topk": (0, "k"), "split": (0, "split_size"), "narrow": (1, "start")}

_SIZE_HINT = "Pass a Python number (from `.shape`, `len()` or the data pipeline), or read `{arg}` back once outside the hot path"
_FILL_HINT = "Fill on the GPU instead: `torch.empty(...).fill_({arg})` reads no value back"
_STACK_HINT = "Build the tensor on the GPU with `torch.stack([...])`"


class TensorAsPythonNumber(Rule):
    """
    ## What it does
    Flags a GPU tensor passed where Python needs an int or a number: `range(k)`, slice
    bounds `x[:k]`, sizes and bounds of `torch.arange/zeros/empty/full/...`, the fill value
    of `torch.full`/`full_like`/`new_full`, `x.view(k, -1)`/`reshape`/`expand`/`repeat`
    sizes, `topk(k)`/`split(k)`/`narrow`, `torch.tensor([s1, s2])` of GPU scalars, and an
    index into a NumPy array or a Python list (`matrix[gc, dc] += 1`), which asks the
    tensor for an int through `__index__`.

    ## Why is this bad?
    PyTorch's argument parser turns a tensor into a Python int or scalar with `.item()`
    (`__index__`, `_local_scalar_dense_cuda` -> `memcpy_and_sync`): the CPU waits until every
    kernel queued before it has finished, then copies the value to the host. Measured on an
    H200 with torch 2.11, every form above is caught by `torch.cuda.set_sync_debug_mode`.
    The call looks device-only, which makes the stall easy to miss in a training loop.

    ## Use instead
    Keep sizes as Python ints, taken from shapes (`x.shape[1]`) or carried from the data
    pipeline, or read the value back once outside the hot path. For values, stay on the GPU:

    ```python
    pair = torch.stack([s1, s2])                  # not torch.tensor([s1, s2])
    out = torch.empty_like(x).fill_(k)            # not torch.full_like(x, k)
    y = torch.where(mask, k, x)                   # not x.masked_fill(mask, k)
    mask = torch.arange(x.shape[1], device=x.device) < lengths[:, None]
    ```

    ## Known problems
    A bare parameter of `forward`, or a local copied from one (`n = sizes[0]`), is not
    assumed to be a tensor here (sizes are often ints); `lengths.max()` on such a parameter,
    or a `Tensor` annotation, is enough. Names ending in `dim`, `dims`, `shape` or `axis` are
    taken to be host values. Plain function parameters are of unknown type and not flagged.
    Indexing with a 0-d long tensor (`x[k]`) also syncs, but is not flagged: it cannot be
    told apart from a gather with an index tensor, which does not.
    """

    CODE = "SYN110"
    NAME = "tensor-as-python-number"
    MESSAGE = "`{site}` turns the GPU tensor `{arg}` into a Python number, which waits for all queued GPU work"
    FIX_TITLE = _SIZE_HINT
    CATALOGUE = ("A5",)
    VALID = [
        # an object of unknown kind with a method named like a tensor's (xFormers' attention
        # bias splits a batch back into sequences): the argument is no 0-d count
        Valid(
            "import torch\n"
            "def block(attn_bias, x_list):\n"
            "    x = torch.cat(x_list).cuda()\n"
            "    for _ in range(3):\n"
            "        x = x + x.relu()\n"
            "    return attn_bias.split(x)\n"
        ),
        Valid(
            "import torch\nx = torch.randn(8, 4, device='cuda')\nfor _ in range(3):\n"
            "    n = x.shape[0]\n    a = torch.arange(n, device='cuda')\n    y = x[: x.size(0) // 2]\n"
            "    z = torch.zeros(len(x), device='cuda')\n    w = x.view(x.size(0), -1)\n"
        ),
        Valid(
            "import torch\nk = torch.tensor(3)\nx = torch.randn(8, device='cuda')\nfor _ in range(3):\n"
            "    y = x[:k]\n    a = torch.arange(k, device='cuda')\n"
        ),
        Valid(
            "import torch\nx = torch.randn(8, device='cuda')\nidx = torch.tensor([1, 2], device='cuda')\n"
            "s1 = x.sum()\nfor _ in range(3):\n    y = x[idx]\n    z = torch.stack([s1, s1])\n"
            "    w = x.clone().fill_(s1)\n    v = torch.where(x > 0, s1, x)\n"
        ),
        Valid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, seq_len):\n"
            "        pos = torch.arange(seq_len, device=x.device)\n        return x[:, :seq_len] + pos\n"
        ),
        Valid("import numpy as np\nimport torch\na = np.arange(10)\nn = np.int64(3)\nfor i in range(n):\n    b = a[:n]\n"),
        Valid(
            "import torch\nx = torch.randn(8, device='cuda')\nfor _ in range(3):\n"
            "    y = x.view(torch.int32)\n    s = 'a b'.split(' ')\n"
        ),
        Valid(
            "import torch\n"
            "def longest(lengths):\n"
            "    return int(max(lengths))\n"
            "lengths = [3, 5]\n"
            "for _ in range(3):\n"
            "    pos = torch.arange(longest(lengths), device='cuda')\n",
        ),
        Valid(
            "import torch\n"
            "class Crop(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.keep = 4\n"
            "    def forward(self, x):\n"
            "        return x[:, :self.keep]\n",
        ),
        # a `torch.full` size under `isinstance(n, int)` is a Python int
        Valid(
            "import torch\n"
            "def pad_to(n, device):\n"
            "    if isinstance(n, int):\n"
            "        return torch.full((n,), 0.0, device=device)\n"
            "    return None\n"
            "for _ in range(3):\n"
            "    p = pad_to(8, 'cuda')\n",
        ),
        # a script that never mentions a device or CUDA: its tensors are on the CPU
        Valid(
            "import torch\n"
            "from data import batches\n"
            "def step(x: torch.Tensor, y: torch.Tensor):\n"
            "    return torch.arange(y.max())\n"
            "for x, y in batches():\n"
            "    step(x, y)\n",
        ),
        # every caller passes a CPU tensor
        Valid(
            "import torch\n"
            "def check(x):\n"
            "    return torch.arange(x.argmax(), device='cuda')\n"
            "for step in range(10):\n"
            "    check(torch.rand(8))\n",
        ),
        # host containers indexed by host ints; a dict keyed by a tensor hashes the object
        Valid(
            "import numpy as np\nimport torch\nm = np.zeros((3, 3))\nt = torch.ones(4, device='cuda').int()\n"
            "seen = {}\nfor i in range(3):\n    m[i, 0] += 1\n    seen[t] = i\n    n = m[t.shape[0] - 2, 1]\n"
        ),
    ]
    INVALID = [
        # yolov7 / YOLOP: a NumPy confusion matrix counted with the CUDA classes, in a method
        # the validation loop calls for every image
        Invalid(
            "import numpy as np\nimport torch\n"
            "class ConfusionMatrix:\n    def __init__(self, nc):\n        self.matrix = np.zeros((nc + 1, nc + 1))\n"
            "    def process_batch(self, labels):\n        for gc in labels[:, 0].int():\n            self.matrix[gc, 0] += 1\n"
            "cm = ConfusionMatrix(3)\nfor x in batches:\n    cm.process_batch(torch.ones(4, 5, device='cuda'))\n",
            line=8,
            hot=True,
            message="`self.matrix[gc, 0]` turns the GPU tensor `gc` into a Python number, which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x, lengths):\n"
            "        pos = torch.arange(lengths.max(), device=x.device)\n        return pos[None, :] < lengths[:, None]\n",
            line=4,
            hot=True,
            message="`torch.arange(...)` turns the GPU tensor `lengths.max()` into a Python number, "
            "which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nx = torch.randn(8, device='cuda')\nfor _ in range(3):\n    k = (x > 0).sum()\n    y = x[:k]\n",
            line=5,
            hot=True,
            message="`x[:k]` turns the GPU tensor `k` into a Python number, which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\ndef pair(a: torch.Tensor, b: torch.Tensor):\n    return torch.tensor([a.sum(), b.sum()])\n",
            line=3,
            hot=False,
        ),
        Invalid(
            "import torch\nx = torch.randn(8, device='cuda')\nfor _ in range(3):\n    m = x.max()\n    y = torch.full_like(x, m)\n",
            line=5,
        ),
        Invalid(
            "import torch\nx = torch.randn(8, 4, device='cuda')\nn = (x[:, 0] > 0).sum()\nfor i in range(n):\n    pass\n",
            line=4,
            hot=False,
        ),
        Invalid(
            "import torch\n"
            "def longest(lengths):\n"
            "    return lengths.max()\n"
            "lengths = torch.tensor([3, 5], device='cuda')\n"
            "for _ in range(3):\n"
            "    pos = torch.arange(longest(lengths), device='cuda')\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Crop(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.keep = torch.tensor(4, device='cuda')\n"
            "    def forward(self, x):\n"
            "        return x[:, :self.keep]\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "x = torch.randn(batch, seq, 64, device=device)\n"
            "lengths = torch.randint(1, seq + 1, (batch,), device=device)\n"
            "lengths[0] = seq\n"
        ),
        flagged=(
            "def flagged(x: torch.Tensor, lengths: torch.Tensor):\n"
            "    pos = torch.arange(lengths.max(), device=x.device)\n"
            "    mask = pos[None, :] < lengths[:, None]\n"
            "    return (x * mask[:, :, None]).sum(1)\n"
        ),
        fixed=(
            "def fixed(x: torch.Tensor, lengths: torch.Tensor):\n"
            "    pos = torch.arange(x.shape[1], device=x.device)\n"
            "    mask = pos[None, :] < lengths[:, None]\n"
            "    return (x * mask[:, :, None]).sum(1)\n"
        ),
        sizes={"batch": 64, "seq": 128},
        condition="the batch is padded to its longest sequence",
        compare="equal",
    )

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        for value, hint in self._number_args(node):
            if gpu_number(self.ctx, value):
                self.report(node, site=f"{short(node.func)}(...)", arg=short(value), fix_title=hint)
                return

    def visit_Subscript(self, node: cst.Subscript) -> None:
        host: Optional[bool] = None  # the receiver is a NumPy array or a Python sequence
        for el in node.slice:
            if type(el.slice) is not cst.Slice:
                if type(el.slice) is not cst.Index:
                    continue
                if host is None:
                    host = _host_sequence(self.ctx.infer(node.value))
                # `matrix[gc, dc] += 1` (a NumPy confusion matrix), `chars[t[i]]`: the GPU
                # item goes through `__index__`
                if host and gpu_number(self.ctx, el.slice.value) and self.ctx.infer(el.slice.value).ndim in (0, None):
                    self.report(node, site=short(node), arg=short(el.slice.value))
                    return
                continue
            for bound in (el.slice.lower, el.slice.upper, el.slice.step):
                if bound is not None and gpu_number(self.ctx, bound):
                    self.report(node, site=short(node), arg=short(bound))
                    return

    # ------------------------------------------------------------------ helpers
    def _number_args(self, node: cst.Call) -> Iterator[Tuple[cst.BaseExpression, str]]:
        """The arguments of `node` that Python converts to a number, with the fix hint."""
        ctx = self.ctx
        func = node.func
        if type(func) is cst.Name and func.value == "range" and ctx.is_builtin("range"):
            for a in positional(node):
                yield a.value, _SIZE_HINT
            return
        tn = ctx.torch_name(func)
        if tn is not None:
            yield from self._torch_args(tn, node)
            return
        if type(func) is not cst.Attribute:
            return
        m = func.attr.value
        if m not in _SIZE_METHODS and m not in _INT_ARG_METHODS and m != "new_full":
            return
        recv = ctx.infer(func.value)
        if recv.kind not in (V.TENSOR, V.UNKNOWN):
            return
        if m in _SIZE_METHODS or m == "new_full":
            pos = positional(node)
            sizes = pos[:1] if m == "new_full" else pos
            for a in sizes:
                yield from _size_elements(a.value)
            size_kw = _kw(node, "size")
            if size_kw is not None:
                yield from _size_elements(size_kw)
            if m == "new_full":
                fill = _arg(node, 1, "fill_value")
                if fill is not None:
                    yield fill, _FILL_HINT
            return
        index, kw = _INT_ARG_METHODS[m]
        value = _arg(node, index, kw)
        if value is not None and recv.kind == V.UNKNOWN and ctx.infer(value).ndim != 0:
            return  # `mask.split(x)` of an object of unknown kind (xFormers' BlockDiagonalMask): a tensor
            # argument that is not known to be a 0-d count says the method is not Tensor.split
        if value is not None:
            yield value, _SIZE_HINT
        if m == "narrow":
            length = _arg(node, 2, "length")
            if length is not None:
                yield length, _SIZE_HINT

    def _torch_args(self, tn: str, node: cst.Call) -> Iterator[Tuple[cst.BaseExpression, str]]:
        if tn in _ALL_POSITIONAL:
            for a in positional(node):
                yield from _size_elements(a.value)
            for a in node.args:
                if a.keyword is not None and a.keyword.value in _SIZE_KWARGS:
                    yield from _size_elements(a.value)
        elif tn == "full":
            size = _arg(node, 0, "size")
            if size is not None:
                yield from _size_elements(size)
            fill = _arg(node, 1, "fill_value")
            if fill is not None:
                yield fill, _FILL_HINT
        elif tn == "full_like":
            fill = _arg(node, 1, "fill_value")
            if fill is not None:
                yield fill, _FILL_HINT
        elif tn in ("tensor", "as_tensor"):
            data = _arg(node, 0, "data")
            if type(data) in (cst.List, cst.Tuple):
                for el in _flat_elements(data):
                    yield el, _STACK_HINT
        elif tn in _INT_ARG_METHODS:  # torch.topk(x, k), torch.split(x, k), torch.narrow(x, d, s, n)
            index, kw = _INT_ARG_METHODS[tn]
            value = _arg(node, index + 1, "split_size_or_sections" if tn == "split" else kw)
            if value is not None:
                yield value, _SIZE_HINT
            if tn == "narrow":
                length = _arg(node, 3, "length")
                if length is not None:
                    yield length, _SIZE_HINT


def _host_sequence(v: V.Val) -> bool:
    """A NumPy array or a Python list, tuple or str: indexed by a tensor, they ask it for an
    int (`__index__`). Not a dict, which hashes the tensor object and reads nothing."""
    return v.kind == V.NUMPY or (v.kind == V.PY and v.py in ("list", "tuple", "str"))


def _kw(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def _arg(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
    kw = _kw(call, name)
    if kw is not None:
        return kw
    pos = positional(call)
    return pos[index].value if index < len(pos) else None


def _size_elements(e: cst.BaseExpression) -> Iterator[Tuple[cst.BaseExpression, str]]:
    """A size argument: itself, or the elements of a literal tuple/list of sizes."""
    if type(e) in (cst.Tuple, cst.List):
        for el in e.elements:
            if type(el) is not cst.StarredElement:
                yield el.value, _SIZE_HINT
    else:
        yield e, _SIZE_HINT


def _flat_elements(e: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    for el in e.elements:
        if type(el) is cst.StarredElement:
            continue
        if type(el.value) in (cst.List, cst.Tuple):
            yield from _flat_elements(el.value)
        else:
            yield el.value
