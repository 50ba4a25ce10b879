import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import last_names, short
from synclint.rules._helpers import arg, has_star, literal_bool

# Qualified name -> (positional index of the tensor input, positional index of enforce_sorted).
_FUNCS = {
    "torch.nn.utils.rnn.pack_padded_sequence": (0, 3),
    "torch.nn.utils.rnn.pack_sequence": (0, 1),
}


class PackPaddedUnsorted(Rule):
    """
    ## What it does
    Flags `pack_padded_sequence(x, lengths, enforce_sorted=False)` and
    `pack_sequence(seqs, enforce_sorted=False)` on GPU inputs.

    ## Why is this bad?
    With `enforce_sorted=False`, `torch/nn/utils/rnn.py` sorts `lengths` (which must be on
    the CPU) and moves the permutation to the input's device with
    `sorted_indices.to(input.device)`: a blocking host-to-device copy that waits for all queued
    GPU work. Unpacking the result costs a second sync: `pad_packed_sequence` reads the inverse
    permutation back with `unsorted_indices.cpu()`. Measured on an H200 with torch 2.11: the
    packing call is caught by `torch.cuda.set_sync_debug_mode`; with a sorted batch and
    `enforce_sorted=True` neither call is.

    ## Use instead
    Sort each batch by length, longest first, where it is built (the `collate_fn`, on the
    CPU), and keep the permutation if the original order matters:

    ```python
    def collate(items):
        items.sort(key=len, reverse=True)
        lengths = torch.tensor([len(s) for s in items])           # stays on the CPU
        return pad_sequence(items, batch_first=True), lengths

    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=True)
    ```

    ## Known problems
    Only hot code is checked: packing outside a loop or `forward` is usually a `collate_fn`
    working on CPU tensors, which does not sync. `lengths` on the GPU is not flagged:
    `pack_padded_sequence` rejects it ("'lengths' argument should be a 1D CPU int64 tensor")
    instead of syncing, and the usual workaround, `lengths.cpu()`, is a read-back reported by
    SYN103 (`device-to-host-copy`).
    """

    CODE = "SYN116"
    NAME = "pack-padded-unsorted"
    CALLS = last_names(_FUNCS)
    MESSAGE = (
        "`{func}(..., enforce_sorted=False)` copies the sort order to the GPU with a blocking copy, "
        "which waits for all queued GPU work"
    )
    FIX_TITLE = "Sort the batch by length when collating it and pass `enforce_sorted=True`"
    CATALOGUE = ("F2",)
    HOT_ONLY = True
    VALID = [
        Valid(
            "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
            "x = torch.randn(4, 6, 3, device='cuda')\nlengths = torch.tensor([6, 5, 3, 2])\nfor _ in range(3):\n"
            "    p = pack_padded_sequence(x, lengths, batch_first=True)\n"
            "    q = pack_padded_sequence(x, [6, 5, 3, 2], batch_first=True, enforce_sorted=True)\n"
        ),
        Valid(
            "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
            "x = torch.randn(4, 6, 3)\nlengths = torch.tensor([3, 6, 2, 5])\nfor _ in range(3):\n"
            "    p = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)\n"
        ),
        Valid(
            "import torch\nfrom torch.nn.utils.rnn import pack_sequence\n"
            "seqs = [torch.randn(n, 3, device='cuda') for n in (6, 5, 2)]\nfor _ in range(3):\n"
            "    p = pack_sequence(seqs)\n"
        ),
        Valid(
            "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
            "def pack(x, lengths, sort):\n    return pack_padded_sequence(x, lengths, enforce_sorted=sort)\n"
        ),
        Valid(
            "import torch\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "def embed(emb, tokens):\n"
            "    return emb(tokens)\n"
            "emb = torch.nn.Embedding(10, 4)\n"
            "tokens = torch.randint(0, 10, (3, 6))\n"
            "for _ in range(3):\n"
            "    p = pack_padded_sequence(embed(emb, tokens), [2, 6, 4], batch_first=True, enforce_sorted=False)\n",
        ),
        Valid(
            "import torch\n"
            "from torch.nn.utils.rnn import pack_sequence\n"
            "class Batcher:\n"
            "    def __init__(self):\n"
            "        self.seqs = [torch.randn(n, 3) for n in (2, 6, 5)]\n"
            "    def packed(self):\n"
            "        return pack_sequence(self.seqs, enforce_sorted=False)\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass Enc(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)\n"
            "        out, _ = self.rnn(packed)\n"
            "        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]\n",
            line=5,
            hot=True,
            message="`nn.utils.rnn.pack_padded_sequence(..., enforce_sorted=False)` copies the sort order "
            "to the GPU with a blocking copy, which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nimport torch.nn.utils.rnn as rnn_utils\n"
            "seqs = [torch.randn(n, 3, device='cuda') for n in (2, 6, 5)]\nfor _ in range(3):\n"
            "    p = rnn_utils.pack_sequence(seqs, False)\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "from torch.nn.utils.rnn import pack_padded_sequence\n"
            "def embed(emb, tokens):\n"
            "    return emb(tokens)\n"
            "emb = torch.nn.Embedding(10, 4).cuda()\n"
            "tokens = torch.randint(0, 10, (3, 6), device='cuda')\n"
            "for _ in range(3):\n"
            "    p = pack_padded_sequence(embed(emb, tokens), [2, 6, 4], batch_first=True, enforce_sorted=False)\n",
            line=8,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "from torch.nn.utils.rnn import pack_sequence\n"
            "class Batcher:\n"
            "    def __init__(self):\n"
            "        self.seqs = [torch.randn(n, 3, device='cuda') for n in (2, 6, 5)]\n"
            "    def packed(self):\n"
            "        return pack_sequence(self.seqs, enforce_sorted=False)\n"
            "b = Batcher()\nfor _ in range(3):\n    b.packed()\n",
            line=7,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "rnn = torch.nn.GRU(hidden, hidden, batch_first=True).to(device)\n"
            "lengths = torch.arange(seq, seq - batch, -1)\n"
            "x = torch.randn(batch, seq, hidden, device=device)\n"
        ),
        flagged=(
            "def flagged(rnn, x: torch.Tensor, lengths):\n"
            "    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)\n"
            "    out, _ = rnn(packed)\n"
            "    return torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]\n"
        ),
        fixed=(
            "def fixed(rnn, x: torch.Tensor, lengths):\n"
            "    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=True)\n"
            "    out, _ = rnn(packed)\n"
            "    return torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]\n"
        ),
        sizes={"batch": 64, "seq": 128, "hidden": 256},
        condition="the batch is already sorted by decreasing length",
        compare="close",
    )

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        spec = _FUNCS.get(q or "")
        if spec is None or has_star(node):
            return
        data_index, sorted_index = spec
        if literal_bool(arg(node, sorted_index, "enforce_sorted")) is not False:
            return
        data = arg(node, data_index, "input" if data_index == 0 and q.endswith("padded_sequence") else "sequences")
        if data is None or self.ctx.in_cuda_less:
            return
        v = self.ctx.infer(data)
        if v.kind in (V.TENSOR, V.TENSORS) and v.device == V.CPU:
            return
        if v.kind not in (V.TENSOR, V.TENSORS, V.UNKNOWN):
            return
        self.report(node, func=short(node.func))
