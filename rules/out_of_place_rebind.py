import libcst as cst

from synclint.semantic.ownership import INPLACE_TWINS
from synclint.semantic import values as V
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import code, is_python_scalar, kwarg, short, string_value

AUG = {
    cst.Add: (cst.AddAssign, "add"), cst.Subtract: (cst.SubtractAssign, "sub"),
    cst.Multiply: (cst.MultiplyAssign, "mul"), cst.Divide: (cst.DivideAssign, "div"),
    cst.FloorDivide: (cst.FloorDivideAssign, "floor_divide"),
    cst.Modulo: (cst.ModuloAssign, "remainder"), cst.Power: (cst.PowerAssign, "pow"),
}


class OutOfPlaceRebind(Rule):
    """
    ## What it does
    Flags an out-of-place tensor op whose result is bound back to the same name
    (`x = x * 2`, `x = x.mul(2)`, `x = torch.clamp(x, 0, 1)`), where the
    in-place twin is safe: the tensor is owned by that name alone and carries no autograd
    history.

    ## Why is this bad?
    The out-of-place op allocates a second tensor of the same size from the caching
    allocator and writes the result there, then drops the old one; the in-place op writes
    over the input. The kernel moves the same bytes either way: the saving is the
    allocation and, while both are alive, twice the memory. Measured [H200, torch 2.11],
    1e7 floats: `x.mul(2)` 22.1 us, `x.mul_(2)` 17.0 us alone; in the bench pair below,
    with other GPU work queued, 44.0 vs 42.8 us and a peak of 80 MB vs 40 MB.

    ## Use instead
    ```python
    with torch.no_grad():
        x = img - 0.5
        x.mul_(2.0)   # or: x *= 2.0
    ```

    ## Fix safety
    The fix (`x.mul_(2)`, `x *= 2`) is unsafe. The rule only fires where it can see that
    in-place is allowed: the name's value was made in this function by a torch factory
    (without `requires_grad`) or by an op that allocates (arithmetic, `clone()`,
    elementwise math) and is never aliased (bound to another name, stored, passed to an
    unknown function, viewed); outside `no_grad`/`inference_mode` every operand must be a
    Python number or such an owned, grad-free tensor; and the result dtype must stay the
    same (known floating point, or an int tensor with int operands). What it cannot see:
    a tensor operand that broadcasts the result to a larger shape (the in-place op then
    raises) or that has a wider dtype (`float32 *= float64` stays float32).

    ## Known problems
    Off under `torch.compile`/`torch.jit` (the compiler removes the allocation). Names
    passed to functions of other files are treated as escaping, so many real cases are not
    reported.
    """

    CODE = "SYN501"
    NAME = "out-of-place-rebind"
    MESSAGE = "`{stmt}` allocates a new tensor for `{name}` where the in-place `{fix}` would reuse its memory"
    FIX_TITLE = "Use the in-place op: `{fix}`"
    FIX = "always"
    CATALOGUE = ()
    VALID = [
        Valid(  # the attribute is a Parameter: the product has autograd history to keep
            "import torch\nclass Scale(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.scale = torch.nn.Parameter(torch.ones(8, device='cuda'))\ns = Scale()\n"
            "for _ in range(3):\n    n = torch.randn(8, device='cuda')\n    n = n * s.scale\n"
        ),
        Valid(  # the helper hands back a tensor kept elsewhere: `*=` would change it
            "import torch\nBUF = torch.randn(1000, device='cuda')\ndef noise(n):\n    return BUF\n"
            "for _ in range(10):\n    z = noise(1000)\n    z = z * 0.1\n"
        ),
        # Autograd needs the old value: forward activations outside no_grad.
        Valid(
            "import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = torch.nn.Linear(4, 4)\n    def forward(self, x):\n        x = self.fc(x)\n"
            "        x = x.relu()\n        x = x * 2\n        return x\n"
        ),
        # A parameter, or the caller's tensor: in-place would change it for them.
        Valid(
            "import torch\ndef normalize(x: torch.Tensor):\n    with torch.no_grad():\n        for _ in range(3):\n"
            "            x = x / x.norm()\n    return x\n"
        ),
        # An alias: `y` would change too.
        Valid(
            "import torch\nx = torch.zeros(4)\nfor _ in range(3):\n    y = x\n    x = x + 1\n"
        ),
        # Kept in a list: in-place would make every entry the same tensor.
        Valid(
            "import torch\nx = torch.zeros(4)\nhist = []\nfor _ in range(3):\n    x = x * 2\n    hist.append(x)\n"
        ),
        # Integer tensor divided: the result is float, in-place would raise.
        Valid("import torch\nx = torch.arange(10)\nfor _ in range(3):\n    x = x / 2\n"),
        # A view of another tensor, and NumPy.
        Valid(
            "import torch\nimport numpy as np\nbuf = torch.zeros(4, 4)\nfor _ in range(3):\n    row = buf[0]\n"
            "    row = row * 2\n    a = np.zeros(3)\n    a = a * 2\n"
        ),
        # Operand that may require grad (outside no_grad), and a conditional binding.
        Valid(
            "import torch\ndef f(w, xs, c):\n    for x in xs:\n        acc = torch.zeros(4)\n        acc = acc * w\n"
            "        h = w.clone()\n        if c:\n            h = torch.zeros(4)\n        h = h * 2\n"
        ),
        # Matrix product has no in-place twin; compiled code is left to the compiler.
        Valid(
            "import torch\n@torch.compile\ndef f(n):\n    for _ in range(3):\n        x = torch.rand(n)\n"
            "        x = x * 2\n        x = x @ x\n    return x\n"
        ),
        # Cold code (setup) is not worth a finding.
        Valid("import torch\nx = torch.rand(100)\nx = x * 2\n", cold=True),
        Valid(
            "import torch\n"
            "def weight_of(layer):\n"
            "    return layer.weight\n"
            "layer = torch.nn.Linear(4, 4).cuda()\n"
            "for _ in range(10):\n"
            "    w = weight_of(layer)\n"
            "    w = w * 0.1\n",
        ),
        Valid(
            "import torch\n"
            "class Augment(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.noise = torch.zeros(8, device='cuda')\n"
            "    @torch.no_grad()\n"
            "    def forward(self, img):\n"
            "        noise = self.noise\n"
            "        noise = noise * 0.1\n"
            "        return img + noise\n",
        ),
    ]
    INVALID = [
        Invalid(  # an operand that is an attribute of a local object, built by a factory
            "import torch\nclass Scale:\n    def __init__(self):\n"
            "        self.scale = torch.full((8,), 0.1, device='cuda')\ns = Scale()\n"
            "for _ in range(3):\n    n = torch.randn(8, device='cuda')\n    n = n * s.scale\n",
            line=8,
            hot=True,
        ),
        Invalid(  # a one-line helper's factory: each call makes a tensor the caller owns
            "import torch\ndef noise(n):\n    return torch.randn(n, device='cuda')\n"
            "for _ in range(10):\n    z = noise(1000)\n    z = z * 0.1\n",
            line=6,
            hot=True,
        ),
        Invalid(
            "import torch\nfor _ in range(10):\n    noise = torch.randn(1000, device='cuda')\n    noise = noise.mul(0.1)\n",
            line=4,
            hot=True,
            message="`noise = noise.mul(0.1)` allocates a new tensor for `noise` where the in-place `noise.mul_(0.1)` would reuse its memory",
            fixed="import torch\nfor _ in range(10):\n    noise = torch.randn(1000, device='cuda')\n    noise.mul_(0.1)\n",
        ),
        Invalid(
            "import torch\n@torch.no_grad()\ndef preprocess(img: torch.Tensor):\n    x = img - 0.5\n    x = 2 * x\n"
            "    x = torch.clamp(x, -1.0, 1.0)\n    return x\nfor img in imgs:\n    preprocess(img)\n",
            line=5,
            hot=True,
            fixed="import torch\n@torch.no_grad()\ndef preprocess(img: torch.Tensor):\n    x = img - 0.5\n    x *= 2\n"
            "    x.clamp_(-1.0, 1.0)\n    return x\nfor img in imgs:\n    preprocess(img)\n",
        ),
        Invalid(
            "import torch\ndef step(n):\n    idx = torch.randint(0, 10, (n,))\n    idx = idx + 1\n    return idx\n",
            line=4,
            fixed="import torch\ndef step(n):\n    idx = torch.randint(0, 10, (n,))\n    idx += 1\n    return idx\n",
        ),
        Invalid(
            "import torch\n"
            "@torch.no_grad()\n"
            "def jitter(img, sigma):\n"
            "    noise = torch.randn(img.shape, device=img.device)\n"
            "    noise = noise * sigma\n"
            "    return img + noise\n"
            "for _ in range(10):\n"
            "    jitter(torch.rand(3, 8, 8, device='cuda'), 0.1)\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Augment(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.sigma = 0.1\n"
            "    @torch.no_grad()\n"
            "    def forward(self, img):\n"
            "        noise = torch.randn(img.shape, device=img.device)\n"
            "        noise = noise * self.sigma\n"
            "        return img + noise\n",
            line=9,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup="x = torch.rand(n, device=device)\n",
        flagged=(
            "def flagged(x: torch.Tensor):\n"
            "    with torch.no_grad():\n"
            "        y = x - 0.5\n"
            "        y = y.mul(2.0)\n"
            "    return y\n"
        ),
        fixed=(
            "def fixed(x: torch.Tensor):\n"
            "    with torch.no_grad():\n"
            "        y = x - 0.5\n"
            "        y.mul_(2.0)\n"
            "    return y\n"
        ),
        sizes={"n": 10_000_000},
        expect="memory",
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        # The model binds at the end of the assignment: here `name` still holds its old value.
        if len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            self._check(node, node.targets[0].target.value)

    # ------------------------------------------------------------- the check
    def _rhs(self, name: str, value: cst.BaseExpression):
        """(op name, operands, in-place replacement) for `name = <value>`, else None."""
        if type(value) is cst.BinaryOperation:
            op = type(value.operator)
            if op not in AUG:
                return None
            aug, opname = AUG[op]
            if _is_name(value.left, name):
                other = value.right
            elif _is_name(value.right, name) and op in (cst.Add, cst.Multiply):
                other = value.left
            else:
                return None
            fix = cst.AugAssign(target=cst.Name(name), operator=aug(), value=other)
            return opname, [other], fix
        if type(value) is not cst.Call or kwarg(value, "out") is not None or any(a.star for a in value.args):
            return None
        func = value.func
        if type(func) is cst.Attribute and _is_name(func.value, name) and func.attr.value in INPLACE_TWINS:
            fix = value.with_changes(func=func.with_changes(attr=cst.Name(func.attr.value + "_")))
            return func.attr.value, [a.value for a in value.args], cst.Expr(fix)
        t = self.ctx.torch_name(func)
        if t in INPLACE_TWINS and value.args and value.args[0].keyword is None and _is_name(value.args[0].value, name):
            rest = list(value.args[1:])
            if rest:
                rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            fix = cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name(t + "_")), args=rest)
            return t, [a.value for a in rest], cst.Expr(fix)
        return None

    def _check(self, node: cst.Assign, name: str) -> None:
        ctx = self.ctx
        info = ctx.fresh_tensor(name)
        if info is None or not info.nograd or ctx.in_compiled:
            return
        rhs = self._rhs(name, node.value)
        if rhs is None:
            return
        op, operands, fix = rhs
        if not ctx.dtype_kept(info.dtype, op, operands):
            return
        for e in operands:
            if string_value(e) is not None or (type(e) is cst.Name and e.value == "None"):
                continue
            if is_python_scalar(e):
                continue
            kind = ctx.infer(e).kind
            if kind == V.PY:
                continue
            if kind != V.TENSOR or not (ctx.in_no_grad or ctx.grad_free(e)):
                return
        if ctx.escaped(name):
            return
        loops = ctx.enclosing_loops
        if loops and not ctx.loop_rebinds_ok(loops[0], name):
            return
        # The finding's span is the statement without its `;`, so the fix carries none either.
        self.report(node, fix, safe=False, stmt=short(node, 50).rstrip("; "), name=name, fix=code(fix))


def _is_name(e: cst.BaseExpression, name: str) -> bool:
    return type(e) is cst.Name and e.value == name and not e.lpar
