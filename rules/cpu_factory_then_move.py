import libcst as cst

from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import receiver, short
from synclint.rules._helpers import with_kwarg
from synclint.semantic.library import DETERMINISTIC_FACTORIES, SIZE_FACTORIES
from synclint.semantic.moves import MOVE_METHODS

# A dtype moved into these gives bit-identical values (0, 1, the identity, or garbage for empty).
_EXACT_WITH_DTYPE = {"zeros", "ones", "empty", "eye", "zeros_like", "ones_like", "empty_like"}
# Float ranges are computed by a different kernel on each device and may differ in the last bit.
_FLOAT_RANGES = {"linspace", "logspace"}


class CpuFactoryThenMove(Rule):
    """
    ## What it does
    Flags a tensor built by a torch factory on the CPU and then moved to the GPU in the same
    expression: `torch.zeros(n).to(device)`, `torch.ones(k).cuda()`, `torch.arange(n).long().cuda()`.

    ## Why is this bad?
    The factory allocates and fills the tensor in host memory, then `.to()`/`.cuda()` copies it
    with a blocking host-to-device transfer (`Copy.cu::copy_kernel_cuda` -> `memcpy_and_sync`),
    which also waits for all GPU work queued before it. Creating the tensor on the device is one
    fill kernel and no transfer: on an H200, `torch.zeros(10**7).to("cuda")` took 7003 us against
    11.1 us for `torch.zeros(10**7, device="cuda")` (catalogue B8; also the profiler's
    `ExtraCUDACopyPattern`). This is flagged hot or cold because the fix costs nothing.

    ## Use instead
    ```python
    mask = torch.zeros(n, device=device)
    ids = torch.arange(n, device=x.device)
    ```

    ## Fix safety
    The fix moves the device (and a dtype given to `.to()`) into the factory call. It is safe for
    deterministic factories (`zeros`, `ones`, `empty`, `full`, `eye`, `arange` of known ints,
    `*_like`): the same values come out. It is unsafe for random factories (`rand`, `randn`,
    `randint`, `randperm`, `normal`: the CUDA generator draws a different stream, so the values
    change), for `linspace`/`logspace` and float `arange` (the device kernels may round the
    last bit differently: on an H200, float `arange` differed from the CPU result in 27 of 36
    cases and `logspace` in 280 of 480; `linspace` matched in all 480 but is not guaranteed to),
    when a dtype moves into `full`/`arange`, when the factory has
    `requires_grad=True` (the result becomes a leaf), and for `.cuda(dev)` unless `dev` is
    known not to be `None` (a literal, `torch.device(...)`, `t.device`): `.cuda(None)` is the
    current GPU but `device=None` is the CPU. No fix is offered when `.to()` also has
    `non_blocking`, `copy` or `memory_format`, when it takes a tensor (`.to(other)` also
    changes the dtype), or when the factory has `pin_memory` or `out`.

    ## Known problems
    `torch.tensor(data).to(device)` is not flagged here: `device=` alone buys nothing when the
    cost is converting a Python list (measured 13473 us vs 13346 us). SYN302 flags it.
    """

    CODE = "SYN301"
    NAME = "cpu-factory-then-move"
    CALLS = frozenset(MOVE_METHODS)
    MESSAGE = "`{expr}` fills the tensor on the CPU, then copies it to the GPU with a blocking transfer"
    FIX_TITLE = "Create it on the device: pass `device=` to `torch.{factory}`"
    FIX = "sometimes"
    CATALOGUE = ("B8",)
    SETUP_EXEMPT = True
    VALID = [
        Valid("import torch\nx = torch.zeros(10, device='cuda')\ny = torch.arange(5, device='cuda')\n"),
        Valid("import torch\nx = torch.zeros(10).to(torch.float16)\n"),
        Valid("import torch\nx = torch.zeros(10).to('cpu')\ny = torch.ones(3).cpu()\n"),
        Valid("import torch\ntorch.set_default_device('cuda')\nx = torch.zeros(10).to('cuda')\n"),
        Valid("import torch\nx = torch.tensor([1.0, 2.0]).cuda()\n"),
        Valid("import torch\nimport numpy as np\nx = np.zeros(10)\ny = torch.from_numpy(x).cuda()\n"),
        Valid("import torch\ndef f(x):\n    return torch.zeros_like(x).cuda()\n"),
        Valid("import torch\nif not torch.cuda.is_available():\n    x = torch.zeros(3).to('cuda')\n"),
        Valid("import torch\ng = torch.Generator().manual_seed(0)\nv = torch.rand(8, generator=g).cuda()\n"),
        Valid(
            "import torch\n"
            "def zeros_on(n, device):\n"
            "    return torch.zeros(n).to(device)\n"
            "for _ in range(3):\n"
            "    z = zeros_on(8, 'cpu')\n",
        ),
        Valid(
            "import torch\n"
            "class Head(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.device = torch.device('cuda')\n"
            "    def forward(self, x):\n"
            "        return x + torch.ones(x.shape[-1], device=self.device)\n",
        ),
        # one example input made at setup (to trace or warm a model up): cold
        Valid(
            "import torch\ndevice = 'cuda'\ndef export(model):\n    example = torch.randn(1, 3, 8, 8).to(device)\n"
            "    return torch.jit.trace(model, example)\n",
            cold=True,
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ndevice = 'cuda'\ndef make():\n    return torch.zeros(10).to(device)\n",
            line=4,
            hot=False,
            message="`torch.zeros(10).to(device)` fills the tensor on the CPU, then copies it to the GPU with a blocking transfer",
            fixed="import torch\ndevice = 'cuda'\ndef make():\n    return torch.zeros(10, device=device)\n",
        ),
        Invalid(
            "import torch\nfor _ in range(3):\n    m = torch.ones(4, 4).cuda()\n",
            line=3,
            hot=True,
            fixed='import torch\nfor _ in range(3):\n    m = torch.ones(4, 4, device="cuda")\n',
        ),
        Invalid(
            "import torch\ndef make():\n    return torch.arange(8).long().cuda(1)\n",
            fixed='import torch\ndef make():\n    return torch.arange(8, device="cuda:1").long()\n',
        ),
        Invalid(
            "import torch\ndef f(x):\n    return torch.zeros(3, dtype=torch.int64).to(x.device, torch.float16)\n",
            fixed="import torch\ndef f(x):\n    return torch.zeros(3, dtype=torch.int64).to(x.device, torch.float16)\n",
        ),
        Invalid(  # unsafe: `device` may be None, and `.cuda(None)` is not `device=None`
            "import torch\ndef f(device):\n    return torch.zeros(3).cuda(device)\n",
            fixed="import torch\ndef f(device):\n    return torch.zeros(3, device=device)\n",
        ),
        Invalid(
            "import torch\ndef f(dev):\n    return torch.randn(3, 3).to(dev)\n",
            fixed="import torch\ndef f(dev):\n    return torch.randn(3, 3, device=dev)\n",
        ),
        Invalid(
            "import torch\ndef make():\n    w = torch.empty(4, 4).normal_(0, 0.02).cuda()\n    b = torch.empty(4).fill_(0.5).cuda()\n",
            fixed='import torch\ndef make():\n    w = torch.empty(4, 4, device="cuda").normal_(0, 0.02)\n'
                  '    b = torch.empty(4, device="cuda").fill_(0.5)\n',
        ),
        Invalid(
            "import torch\n"
            "def zeros_on(n, device):\n"
            "    return torch.zeros(n).to(device)\n"
            "for _ in range(3):\n"
            "    z = zeros_on(8, 'cuda')\n",
            line=3,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Head(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.device = torch.device('cuda')\n"
            "    def forward(self, x):\n"
            "        return x + torch.ones(x.shape[-1]).to(self.device)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="",
        flagged="def flagged():\n    return torch.zeros(n).to(device)\n",
        fixed="def fixed():\n    return torch.zeros(n, device=device)\n",
        sizes={"n": 10_000_000},
    )

    def visit_Call(self, node: cst.Call) -> None:
        move = self.ctx.gpu_move(node)
        if move is None:
            return
        found = self.ctx.factory_under(receiver(node))
        if found is None:
            return
        fcall, name, through = found
        sampled = name.endswith("~random")
        name = name.split("~")[0]
        if name not in SIZE_FACTORIES or self.ctx.infer(fcall).device != V.CPU:
            return
        if name == "normal" and len([a for a in fcall.args if a.keyword is None]) < 3 and _kw(fcall, "size") is None:
            return  # normal(mean_tensor, std_tensor) samples on the inputs' device
        if _kw(fcall, "generator") is not None:
            return  # a CPU generator: sampling on the CPU is the point (reproducible streams)
        replacement, safe = self._fix(move, fcall, name, through)
        safe = safe and not sampled
        self.report(node, replacement, safe=safe, expr=short(node), factory=name)

    def _fix(self, move, fcall: cst.Call, name: str, through: bool):
        if move.extra or move.non_blocking is not False or move.device_is_tensor:
            return None, False
        if _kw(fcall, "pin_memory") is not None or _kw(fcall, "out") is not None:
            return None, False
        if move.device is None:
            dev = cst.SimpleString('"cuda"')
        elif type(move.device) is cst.Integer:
            dev = cst.SimpleString(f'"cuda:{move.device.value}"')
        else:
            dev = move.device
        new = with_kwarg(fcall, "device", dev)
        safe = name in DETERMINISTIC_FACTORIES and name not in _FLOAT_RANGES
        if name == "arange" and not all(self.ctx.is_int_for_any_caller(a.value) for a in fcall.args if a.keyword is None):
            safe = False  # a float range may round differently on the GPU
        if move.dtype is not None:
            if through or _kw(fcall, "dtype") is not None:
                return None, False
            new = with_kwarg(new, "dtype", move.dtype)
            safe = safe and name in _EXACT_WITH_DTYPE
        if move.method == "cuda" and move.device is not None and not _never_none(self.ctx, move.device):
            safe = False  # `.cuda(None)` is the current GPU, `device=None` the CPU
        rg = _kw(fcall, "requires_grad")
        if rg is not None and not (type(rg) is cst.Name and rg.value == "False"):
            safe = False
        replacement = new if not through else receiver(move.call).deep_replace(fcall, new)
        return replacement, safe


def _never_none(ctx, dev: cst.BaseExpression) -> bool:
    """`dev` is a device that cannot be None: a literal, `torch.device(...)`, `t.device`."""
    if type(dev) in (cst.SimpleString, cst.Integer):
        return True
    if type(dev) is cst.Call:
        return ctx.torch_name(dev.func) == "device"
    if type(dev) is cst.Attribute and dev.attr.value == "device":
        return ctx.infer(dev.value).kind == V.TENSOR
    return False


def _kw(call: cst.Call, name: str):
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None

