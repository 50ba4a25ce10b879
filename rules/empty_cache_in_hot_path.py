import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import last_names

EMPTY_CACHE = {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"}


class EmptyCacheInHotPath(Rule):
    """
    ## What it does
    Flags `torch.cuda.empty_cache()` where it runs every step: in a loop body, a `forward`, a
    `*_step`, or a function called from them (in any module). Called once, between phases,
    it costs nothing worth a finding, and is not reported.

    ## Why is this bad?
    It hands every fully free cached segment back to the driver. `cudaFree` synchronizes the
    device, and the allocator first waits for the events of blocks used on other streams, so
    the host stalls behind queued GPU work (catalogue G5; on an H200 the host waited for all
    50 ms of queued work, and `set_sync_debug_mode` did not report it). The next step's allocations then go back to
    `cudaMalloc`, which the caching allocator exists to avoid. It does not lower the memory
    your tensors use, only what the process reserves.

    ## Use instead
    Call it once between phases (after training, before evaluation), or under a guard such as
    `if step % 1000 == 0:`. For fragmentation, try
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` instead of emptying the cache each step.
    """

    CODE = "SYN403"
    NAME = "empty-cache-in-hot-path"
    CALLS = last_names(EMPTY_CACHE)
    MESSAGE = "`torch.cuda.empty_cache()` synchronizes and discards the allocator cache that later steps reuse"
    FIX_TITLE = "Call it between phases (or under `if step % N == 0:`), not every step"
    CATALOGUE = ("G5",)
    HOT_ONLY = True
    VALID = [
        Valid("import torch\nfor _ in range(3):\n    y = torch.ones(3, device='cuda')\ntorch.cuda.empty_cache()\n", cold=True),
        Valid("import torch\nfor step in range(100):\n    if step % 50 == 0:\n        torch.cuda.empty_cache()\n", cold=True),
        Valid("import torch\nclass Cache:\n    def empty_cache(self):\n        pass\nc = Cache()\nfor _ in range(3):\n    c.empty_cache()\n"),
        Valid(
            "import torch\n"
            "def free():\n"
            "    torch.cuda.empty_cache()\n"
            "for _ in range(3):\n"
            "    y = torch.ones(3, device='cuda')\n"
            "free()\n",
            cold=True,
        ),
        Valid(
            "import torch\n"
            "class Trainer:\n"
            "    def _cleanup(self):\n"
            "        torch.cuda.empty_cache()\n"
            "    def training_step(self, batch):\n"
            "        return batch\n"
            "    def on_train_end(self):\n"
            "        self._cleanup()\n",
            cold=True,
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfor _ in range(3):\n    y = torch.ones(3, device='cuda')\n    torch.cuda.empty_cache()\n",
            line=4,
            hot=True,
            message="`torch.cuda.empty_cache()` synchronizes and discards the allocator cache that later steps reuse",
        ),
        Invalid("from torch.cuda import empty_cache\ndef training_step(batch):\n    empty_cache()\n", line=3),
        Invalid(
            "import torch\n"
            "def free():\n"
            "    torch.cuda.empty_cache()\n"
            "for _ in range(3):\n"
            "    y = torch.ones(3, device='cuda')\n"
            "    free()\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Trainer:\n"
            "    def _cleanup(self):\n"
            "        torch.cuda.empty_cache()\n"
            "    def training_step(self, batch):\n"
            "        self._cleanup()\n"
            "        return batch\n",
            line=4,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="xs = [torch.randn(1024, 1024, device=device) for _ in range(steps)]\n",
        flagged=(
            "def flagged(xs):\n"
            "    out = []\n"
            "    for x in xs:\n"
            "        out.append((x * 2).sum())\n"
            "        torch.cuda.empty_cache()\n"
            "    return torch.stack(out)\n"
        ),
        fixed=(
            "def fixed(xs):\n"
            "    out = []\n"
            "    for x in xs:\n"
            "        out.append((x * 2).sum())\n"
            "    return torch.stack(out)\n"
        ),
        sizes={"steps": 20},
        debug_mode_sees=False,
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.cuda_less_depth and self.ctx.qualname(node.func) in EMPTY_CACHE:
            self.report(node)
