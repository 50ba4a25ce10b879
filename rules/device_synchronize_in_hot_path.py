import libcst as cst

from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import last_names
from synclint.semantic.syntax import code_of

SYNCHRONIZE = {"torch.cuda.synchronize", "torch.accelerator.synchronize"}


class DeviceSynchronizeInHotPath(Rule):
    """
    ## What it does
    Flags `torch.cuda.synchronize()` (and `torch.accelerator.synchronize()`): a
    loop body, a `forward`, a `*_step`, or a function called from them.

    ## Why is this bad?
    It calls `cudaDeviceSynchronize` (`CUDAFunctions.cpp::device_synchronize`): the host waits
    until every stream on the device is idle, so the CPU can no longer queue the next step's
    kernels while the GPU works (catalogue G1). On an H200 a small loop took 39.0 us per step
    with a synchronize against 25.5 us without. `torch.cuda.set_sync_debug_mode` does not see
    this call, so the runtime checker is silent about it.

    ## Use instead
    Remove it from the hot path. Order GPU work with streams and events
    (`torch.cuda.current_stream().wait_stream(s)`, `stream.wait_event(e)`), which wait on the
    device, not the host; read results back once per N steps.

    ## Known problems
    Not flagged where synchronizing is the point: in functions (or scripts) that time things
    (`time.perf_counter()`, `time.time()`, `Event.elapsed_time`), and after a non-blocking
    device-to-host copy in the same function (`.to("cpu", non_blocking=True)`), whose result is
    only valid after a sync.
    """

    CODE = "SYN401"
    NAME = "device-synchronize-in-hot-path"
    CALLS = last_names(SYNCHRONIZE)
    MESSAGE = "`{expr}` blocks the host until all work on the device has finished"
    FIX_TITLE = "Remove it from the hot path; order work with streams and events instead"
    TIMING_EXEMPT = True
    CATALOGUE = ("G1",)
    VALID = [
        Valid("import torch\nfor _ in range(3):\n    y = torch.ones(3, device='cuda') * 2\ntorch.cuda.synchronize()\n", cold=True),
        Valid(
            "import time\nimport torch\ndef bench(f):\n    for _ in range(3):\n        torch.cuda.synchronize()\n"
            "        t0 = time.perf_counter()\n        f()\n        torch.cuda.synchronize()\n"
            "        print(time.perf_counter() - t0)\n"
        ),
        Valid(
            "import torch\ndef bench(f):\n    s = torch.cuda.Event(enable_timing=True)\n    e = torch.cuda.Event(enable_timing=True)\n"
            "    for _ in range(3):\n        s.record()\n        f()\n        e.record()\n        torch.cuda.synchronize()\n"
            "        print(s.elapsed_time(e))\n"
        ),
        Valid(
            "import torch\ng = torch.ones(8, device='cuda')\nfor _ in range(3):\n"
            "    h = g.to('cpu', non_blocking=True)\n    torch.cuda.synchronize()\n    print(h.sum())\n"
        ),
        Valid("import torch\nfor step in range(100):\n    if step % 10 == 0:\n        torch.cuda.synchronize()\n", cold=True),
        Valid(
            "import torch\n"
            "def barrier():\n"
            "    torch.cuda.synchronize()\n"
            "for _ in range(3):\n"
            "    y = torch.ones(3, device='cuda') * 2\n"
            "barrier()\n",
            cold=True,
        ),
        Valid(
            "import torch\n"
            "class Net(torch.nn.Module):\n"
            "    def _barrier(self):\n"
            "        torch.cuda.synchronize()\n"
            "    def forward(self, x):\n"
            "        return x * 2\n"
            "    def close(self):\n"
            "        self._barrier()\n",
            cold=True,
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfor _ in range(3):\n    y = torch.ones(3, device='cuda') * 2\n    torch.cuda.synchronize()\n",
            line=4,
            hot=True,
            message="`torch.cuda.synchronize()` blocks the host until all work on the device has finished",
        ),
        Invalid(
            "from torch.cuda import synchronize\nclass M:\n    def forward(self, x):\n        synchronize()\n        return x\n",
            line=4,
        ),
        Invalid("import torch as th\ndef train_step(x):\n    th.accelerator.synchronize()\n", line=3),
        Invalid(
            "import torch\n"
            "def barrier():\n"
            "    torch.cuda.synchronize()\n"
            "for _ in range(3):\n"
            "    y = torch.ones(3, device='cuda') * 2\n"
            "    barrier()\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Net(torch.nn.Module):\n"
            "    def _barrier(self):\n"
            "        torch.cuda.synchronize()\n"
            "    def forward(self, x):\n"
            "        self._barrier()\n"
            "        return x * 2\n",
            line=4,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "w = torch.randn(256, 256, device=device)\n"
            "xs = [torch.randn(64, 256, device=device) for _ in range(steps)]\n"
        ),
        flagged=(
            "def flagged(w, xs):\n"
            "    out = []\n"
            "    for x in xs:\n"
            "        out.append((x @ w).relu())\n"
            "        torch.cuda.synchronize()\n"
            "    return torch.stack(out)\n"
        ),
        fixed=(
            "def fixed(w, xs):\n"
            "    out = []\n"
            "    for x in xs:\n"
            "        out.append((x @ w).relu())\n"
            "    return torch.stack(out)\n"
        ),
        sizes={"steps": 50},
        debug_mode_sees=False,
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.in_cuda_less or self.ctx.qualname(node.func) not in SYNCHRONIZE:
            return
        if not self.ctx.after_nonblocking_d2h():
            self.report(node, expr=code_of(node))
