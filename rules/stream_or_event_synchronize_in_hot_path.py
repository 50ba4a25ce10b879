import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import method_call, receiver, short


class StreamOrEventSynchronizeInHotPath(Rule):
    """
    ## What it does
    Flags `event.synchronize()` on a `torch.cuda.Event` and `stream.synchronize()` on a CUDA
    stream (including `torch.cuda.current_stream().synchronize()`).

    ## Why is this bad?
    `Event.synchronize()` calls `cudaEventSynchronize` (`c10/cuda/CUDAEvent.h`) and
    `Stream.synchronize()` calls `cudaStreamSynchronize` (`CUDAStream::synchronize`): the host
    stops until the GPU reaches that point, and cannot queue the next kernels meanwhile
    (catalogue G2, G3). `torch.cuda.set_sync_debug_mode` does not see `Event.synchronize()`.

    ## Use instead
    Make the *device* wait instead of the host, or poll:
    ```python
    torch.cuda.current_stream().wait_event(done)   # the GPU waits, the CPU runs on
    if done.query():                               # non-blocking check
        ...
    ```

    ## Known problems
    Not flagged in functions (or scripts) that time things, nor after a non-blocking
    device-to-host copy in the same function (the documented way to make its result valid).
    `event.query()`, `stream.wait_event(e)`, `e.record()` and `elapsed_time` never sync.
    """

    CODE = "SYN402"
    NAME = "stream-or-event-synchronize-in-hot-path"
    CALLS = frozenset({"synchronize"})
    MESSAGE = "`{expr}` blocks the host until {what}"
    FIX_TITLE = "Wait on the device instead (`torch.cuda.current_stream().wait_event(event)`), or poll `event.query()`"
    TIMING_EXEMPT = True
    CATALOGUE = ("G2", "G3")
    VALID = [
        Valid(
            "import torch\ndone = torch.cuda.Event()\ns = torch.cuda.Stream()\nfor _ in range(3):\n"
            "    done.record()\n    s.wait_event(done)\n    ok = done.query()\n"
        ),
        Valid(
            "import torch\nimport time\ndef bench(f):\n    e = torch.cuda.Event()\n    for _ in range(3):\n"
            "        t0 = time.perf_counter()\n        f()\n        e.record()\n        e.synchronize()\n"
            "        print(time.perf_counter() - t0)\n"
        ),
        Valid("import threading\nimport torch\nev = threading.Event()\nfor _ in range(3):\n    ev.synchronize()\n"),
        Valid(
            "import torch\ng = torch.ones(8, device='cuda')\ndone = torch.cuda.Event()\nfor _ in range(3):\n"
            "    h = g.to('cpu', non_blocking=True)\n    done.record()\n    done.synchronize()\n    print(h.sum())\n"
        ),
        Valid("import torch\ndone = torch.cuda.Event()\ndone.record()\ndone.synchronize()\n", cold=True),
        Valid(
            "import threading\n"
            "def wait(ev):\n"
            "    ev.synchronize()\n"
            "done = threading.Event()\n"
            "for _ in range(3):\n"
            "    wait(done)\n",
        ),
        Valid(
            "import torch\n"
            "class Copier:\n"
            "    def __init__(self):\n"
            "        self.done = torch.cuda.Event()\n"
            "    def step(self, x):\n"
            "        y = x.to('cuda', non_blocking=True)\n"
            "        self.done.record()\n"
            "        torch.cuda.current_stream().wait_event(self.done)\n"
            "        return y\n",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ndone = torch.cuda.Event()\nfor _ in range(3):\n    done.record()\n    done.synchronize()\n",
            line=5,
            hot=True,
            message="`done.synchronize()` blocks the host until the GPU reaches the event",
        ),
        Invalid(
            "import torch\ndef train_step(x):\n    torch.cuda.current_stream().synchronize()\n",
            line=3,
            message="`torch.cuda.current_stream().synchronize()` blocks the host until the stream's queued work is done",
        ),
        Invalid(
            "import torch\nclass Prefetcher:\n    def __init__(self):\n        self.stream = torch.cuda.Stream()\n"
            "    def __call__(self, x):\n        self.stream.synchronize()\n        return x\n",
            line=6,
        ),
        Invalid(
            "import torch\n"
            "def wait(ev):\n"
            "    ev.synchronize()\n"
            "done = torch.cuda.Event()\n"
            "for _ in range(3):\n"
            "    done.record()\n"
            "    wait(done)\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Copier:\n"
            "    def __init__(self):\n"
            "        self.done = torch.cuda.Event()\n"
            "    def step(self, x):\n"
            "        y = x.to('cuda', non_blocking=True)\n"
            "        self.done.record()\n"
            "        self.done.synchronize()\n"
            "        return y\n",
            line=8,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "x = torch.randn(n, n, device=device)\n"
            "w = torch.randn(n, n, device=device) / n ** 0.5\n"
            "side = torch.cuda.Stream()\n"
        ),
        flagged=(
            "def flagged(x: torch.Tensor, w: torch.Tensor, side):\n"
            "    done = torch.cuda.Event()\n"
            "    side.wait_stream(torch.cuda.current_stream())  # the side work depends on queued work\n"
            "    with torch.cuda.stream(side):\n"
            "        h = (x @ w).relu()\n"
            "        done.record()\n"
            "    done.synchronize()\n"
            "    if device == 'cuda':\n"
            "        h.record_stream(torch.cuda.current_stream())\n"
            "    return h @ w\n"
        ),
        fixed=(
            "def fixed(x: torch.Tensor, w: torch.Tensor, side):\n"
            "    done = torch.cuda.Event()\n"
            "    side.wait_stream(torch.cuda.current_stream())  # the side work depends on queued work\n"
            "    with torch.cuda.stream(side):\n"
            "        h = (x @ w).relu()\n"
            "        done.record()\n"
            "    torch.cuda.current_stream().wait_event(done)\n"
            "    if device == 'cuda':\n"
            "        h.record_stream(torch.cuda.current_stream())\n"
            "    return h @ w\n"
        ),
        sizes={"n": 1024},
        compare="close",
        debug_mode_sees=False,
    )

    def visit_Call(self, node: cst.Call) -> None:
        if node.args or not method_call(node, ("synchronize",)) or self.ctx.in_cuda_less:
            return
        kind = self.ctx.infer(receiver(node)).kind
        if kind not in (V.EVENT, V.STREAM) or self.ctx.after_nonblocking_d2h():
            return
        what = "the GPU reaches the event" if kind == V.EVENT else "the stream's queued work is done"
        self.report(node, expr=short(node, 60), what=what)
