from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.library import HOST_ATTRS, HOST_METHODS
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import code, is_python_scalar, kwarg, positional, short, string_value

# Tensor methods (and torch.* functions) that have an in-place twin `<name>_`.
INPLACE_TWINS = {
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
    "neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "sigmoid", "tanh", "relu", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "floor", "ceil", "round", "trunc", "frac", "sign", "reciprocal", "square", "clamp", "clip",
    "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "erf", "erfc", "erfinv",
    "nan_to_num", "masked_fill", "atan2", "hypot", "logit",
}
# Results that are floating point whatever the (real) input dtype.
FLOAT_RESULT = {
    "div", "true_divide", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "rsqrt", "sigmoid", "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "reciprocal", "erf", "erfc", "erfinv", "logit", "atan2", "hypot", "lerp", "addcdiv",
    "softmax", "log_softmax", "mean", "std", "var", "norm", "gelu", "silu", "softplus",
    "logsumexp", "frac",
}
# Results with the receiver's dtype (for the ops below, combined with the other operand).
SAME_DTYPE = {"clone", "abs", "neg", "relu", "clamp", "clip", "clamp_min", "clamp_max", "floor",
              "ceil", "round", "trunc", "sign", "masked_fill", "square", "nan_to_num", "amax",
              "amin", "cumsum", "roll", "flip", "addcmul"}
BINARY = {"add", "sub", "mul", "pow", "remainder", "fmod", "floor_divide", "maximum", "minimum"}
# Ops whose result is a new tensor (never a view or the input itself): a value they make is
# owned by its name, and passing a tensor to them does not let it escape.
NEW_TENSOR_OPS = INPLACE_TWINS | FLOAT_RESULT | SAME_DTYPE | BINARY | {
    "sum", "prod", "max", "min", "argmax", "argmin", "all", "any", "cumprod", "matmul", "mm",
    "bmm", "einsum", "outer", "dot", "cat", "concat", "stack", "where", "eq", "ne", "lt", "le",
    "gt", "ge", "isnan", "isinf", "isfinite", "count_nonzero", "topk", "sort", "argsort",
    "index_select", "gather", "masked_select", "nonzero", "logical_not", "logical_and",
    "logical_or", "bitwise_not", "linear", "conv2d", "dropout", "cross_entropy", "mse_loss",
    "allclose", "equal", "isclose",
}
# In-place twins on an int tensor that keep it an int tensor (with int operands).
INT_OK = {"add", "sub", "mul", "floor_divide", "remainder", "fmod", "clamp", "clip",
          "clamp_min", "clamp_max", "relu", "abs", "neg"}
# torch factories that allocate fresh storage (not as_tensor/from_numpy: they may share it).
FACTORIES = {
    "zeros", "ones", "empty", "full", "arange", "eye", "linspace", "logspace", "rand", "randn",
    "randint", "randperm", "normal", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "randint_like", "tensor", "scalar_tensor",
}
FLOAT_FACTORIES = {"zeros", "ones", "empty", "rand", "randn", "eye", "linspace", "logspace", "normal"}
INT_FACTORIES = {"randint", "randperm"}
FLOAT_DTYPES = {"float", "float32", "float16", "half", "bfloat16", "float64", "double"}
INT_DTYPES = {"int", "int8", "int16", "int32", "int64", "long", "short", "uint8"}
COMPILERS = {"torch.compile", "torch.jit.script", "torch.jit.trace", "torch._dynamo.optimize"}
SAFE_BUILTINS = {"print", "len", "float", "int", "bool", "str", "repr", "isinstance", "format",
                 "round", "hash", "id", "type"}
AUG = {
    cst.Add: (cst.AddAssign, "add"), cst.Subtract: (cst.SubtractAssign, "sub"),
    cst.Multiply: (cst.MultiplyAssign, "mul"), cst.Divide: (cst.DivideAssign, "div"),
    cst.FloorDivide: (cst.FloorDivideAssign, "floor_divide"),
    cst.Modulo: (cst.ModuloAssign, "remainder"), cst.Power: (cst.PowerAssign, "pow"),
}
SAFE, ESC = 0, 1
# Methods whose result never shares the receiver's memory.
SAFE_METHODS = (HOST_METHODS - {"type", "untyped_storage"}) | {"item", "tolist"} | NEW_TENSOR_OPS


@dataclass(frozen=True)
class Fresh:
    """A tensor that its name alone owns: new storage, no autograd history (`nograd`)."""

    nograd: bool
    dtype: Optional[str]  # "float" | "int" | "bool" | None (unknown)


@dataclass
class _Frame:
    root: cst.CSTNode
    compiled: bool
    layers: List[Dict[str, Optional[Fresh]]] = field(default_factory=lambda: [{}])
    loops: List[cst.CSTNode] = field(default_factory=list)
    escaped: Optional[Set[str]] = None

    def get(self, name: str) -> Optional[Fresh]:
        for layer in reversed(self.layers):
            if name in layer:
                return layer[name]
        return None

    def bind(self, name: str, val: Optional[Fresh]) -> None:
        self.layers[-1][name] = val


# ----------------------------------------------------------------- escape analysis
class _Escapes:
    """Names whose tensor may be reachable from somewhere else: bound to another name,
    stored in a container or attribute, passed to an unknown function, captured by a
    nested scope, or read through a view (`x[0]`, `x.T`, `x.view(..)`). Making such a
    name's op in-place would change what the other reference sees."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.out: Set[str] = set()

    def names_in(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self.out.add(node.value)
        for c in node.children:
            self.names_in(c)

    def target(self, t: cst.BaseExpression) -> None:
        if isinstance(t, (cst.Tuple, cst.List)):
            for el in t.elements:
                self.target(el.value)
        elif isinstance(t, cst.StarredElement):
            self.target(t.value)
        elif isinstance(t, cst.Subscript):  # x[i] = v writes into x: no new reference
            self.scan(t.value, SAFE)
            for el in t.slice:
                self.scan(el.slice, SAFE)
        elif isinstance(t, cst.Attribute):
            self.scan(t.value, SAFE)

    def scan(self, n: cst.CSTNode, mode: int) -> None:  # noqa: C901 - one case per node type
        if isinstance(n, cst.Name):
            if mode == ESC:
                self.out.add(n.value)
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            self.names_in(n)  # closures: anything they mention may be kept
        elif isinstance(n, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Del)):
            pass
        elif isinstance(n, cst.Expr):
            self.scan(n.value, SAFE)
        elif isinstance(n, cst.Assign):
            for t in n.targets:
                self.target(t.target)
            self.scan(n.value, ESC)
        elif isinstance(n, cst.AugAssign):
            self.target(n.target)
            container = isinstance(n.value, (cst.List, cst.Tuple, cst.ListComp, cst.Set))
            self.scan(n.value, ESC if container else SAFE)
        elif isinstance(n, cst.AnnAssign):
            self.target(n.target)
            if n.value is not None:
                self.scan(n.value, ESC)
        elif isinstance(n, cst.Return):
            if n.value is not None:
                self.scan(n.value, SAFE)
        elif isinstance(n, (cst.If, cst.While)):
            self.scan(n.test, SAFE)
            self.scan(n.body, SAFE)
            if n.orelse is not None:
                self.scan(n.orelse, SAFE)
        elif isinstance(n, cst.For):
            self.target(n.target)
            self.scan(n.iter, ESC)
            self.scan(n.body, SAFE)
            if n.orelse is not None:
                self.scan(n.orelse, SAFE)
        elif isinstance(n, cst.With):
            for item in n.items:
                self.scan(item.item, ESC)
                if item.asname is not None:
                    self.target(item.asname.name)
            self.scan(n.body, SAFE)
        elif isinstance(n, cst.Assert):
            self.scan(n.test, SAFE)
        elif isinstance(n, cst.Attribute):
            self.scan(n.value, SAFE if n.attr.value in HOST_ATTRS else ESC)
        elif isinstance(n, cst.Call):
            self.call(n, mode)
        elif isinstance(n, (cst.BinaryOperation,)):
            self.scan(n.left, SAFE)
            self.scan(n.right, SAFE)
        elif isinstance(n, cst.UnaryOperation):
            self.scan(n.expression, SAFE)
        elif isinstance(n, cst.Comparison):
            self.scan(n.left, SAFE)
            for c in n.comparisons:
                self.scan(c.comparator, SAFE)
        elif isinstance(n, cst.BooleanOperation):  # `a or b` is one of them
            self.scan(n.left, mode)
            self.scan(n.right, mode)
        elif isinstance(n, cst.IfExp):
            self.scan(n.test, SAFE)
            self.scan(n.body, mode)
            self.scan(n.orelse, mode)
        elif isinstance(n, cst.Subscript):  # a view of the value
            self.scan(n.value, mode)
            for el in n.slice:
                self.scan(el.slice, SAFE)
        elif isinstance(n, (cst.List, cst.Tuple, cst.Set)):
            for el in n.elements:
                self.scan(el.value, mode)
        elif isinstance(n, cst.Dict):
            for el in n.elements:
                if isinstance(el, cst.DictElement):
                    self.scan(el.key, mode)
                self.scan(el.value, mode)
        elif isinstance(n, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            comp = n.for_in
            while comp is not None:
                self.target(comp.target)
                self.scan(comp.iter, ESC)
                for cond in comp.ifs:
                    self.scan(cond.test, SAFE)
                comp = comp.inner_for_in
            if isinstance(n, cst.DictComp):
                self.scan(n.key, mode)
                self.scan(n.value, mode)
            else:
                self.scan(n.elt, mode)
        elif isinstance(n, cst.FormattedStringExpression):
            self.scan(n.expression, SAFE)
        else:
            for c in n.children:
                self.scan(c, ESC)

    def call(self, n: cst.Call, mode: int) -> None:
        func = n.func
        args_mode = ESC
        if isinstance(func, cst.Attribute):
            m = func.attr.value
            if m in SAFE_METHODS:
                recv_mode = SAFE
            elif m.endswith("_") and not m.startswith("_"):
                recv_mode = mode  # an in-place method returns its receiver
            else:
                recv_mode = ESC
            self.scan(func.value, recv_mode)
            if m in NEW_TENSOR_OPS or (m.endswith("_") and (m[:-1] in NEW_TENSOR_OPS or m in (
                    "copy_", "fill_", "index_add_", "index_copy_", "index_put_", "scatter_",
                    "scatter_add_", "masked_scatter_", "masked_fill_"))):
                args_mode = SAFE
        else:
            q = self.ctx.qualname(func) or ""
            last = q.rsplit(".", 1)[-1]
            inplace = kwarg(n, "inplace")
            if (q.startswith("torch.") and last in NEW_TENSOR_OPS and kwarg(n, "out") is None
                    and not (isinstance(inplace, cst.Name) and inplace.value == "True")):
                args_mode = SAFE
            elif isinstance(func, cst.Name) and func.value in SAFE_BUILTINS and not q:
                args_mode = SAFE
            if not isinstance(func, cst.Name):
                self.scan(func, SAFE)
        for a in n.args:
            self.scan(a.value, args_mode)


def escaped_names(ctx, root: cst.CSTNode) -> Set[str]:
    scan = _Escapes(ctx)
    body = root.body if isinstance(root, (cst.FunctionDef, cst.ClassDef)) else root
    for c in (body.children if isinstance(body, cst.CSTNode) else body):
        scan.scan(c, SAFE)
    return scan.out


def _names_in(node: cst.CSTNode, out: Set[str]) -> Set[str]:
    if isinstance(node, cst.Name):
        out.add(node.value)
    elif isinstance(node, cst.Attribute):
        _names_in(node.value, out)  # not the attribute's own name
        return out
    elif isinstance(node, cst.Arg):
        _names_in(node.value, out)
        return out
    for c in node.children:
        _names_in(c, out)
    return out


def _bound_names(t: cst.CSTNode) -> Set[str]:
    if isinstance(t, cst.Name):
        return {t.value}
    if isinstance(t, (cst.Tuple, cst.List)):
        return set().union(*(_bound_names(el.value) for el in t.elements)) if t.elements else set()
    if isinstance(t, cst.StarredElement):
        return _bound_names(t.value)
    return set()


class OutOfPlaceRebind(Rule):
    """
    ## What it does
    Flags an out-of-place tensor op whose result is bound back to the same name
    (`x = x * 2`, `x = x.mul(2)`, `x = torch.clamp(x, 0, 1)`) in hot code, where the
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
    ]
    INVALID = [
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

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._frames: List[_Frame] = []
        self._pending: List[Tuple[str, Optional[Fresh]]] = []  # what the current Assign binds
        self._layered: List[bool] = []  # per block: did it open a layer
        self._unconditional: Set[int] = set()  # ids of blocks that always run (with-bodies)

    # ------------------------------------------------------------- scopes and blocks
    def visit_Module(self, node: cst.Module) -> None:
        self._frames.append(_Frame(node, False))

    def _push_frame(self, node, decorators=()) -> None:
        compiled = bool(self._frames) and self._frames[-1].compiled
        for d in decorators:
            dec = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if self.ctx.qualname(dec) in COMPILERS:
                compiled = True
        self._frames.append(_Frame(node, compiled))
        self._unconditional.add(id(node.body))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push_frame(node, node.decorators)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push_frame(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._frames.pop()

    def visit_With(self, node: cst.With) -> None:
        self._unconditional.add(id(node.body))
        for item in node.items:
            if item.asname is not None:
                for name in _bound_names(item.asname.name):
                    self._frames[-1].bind(name, None)

    def _open(self, node) -> None:
        """Blocks that may not run (branches, loop bodies, try) get their own layer; what they
        bind is unknown after them."""
        layered = id(node) not in self._unconditional
        self._layered.append(layered)
        if layered:
            self._frames[-1].layers.append({})

    def _close(self, node) -> None:
        if self._layered.pop():
            frame = self._frames[-1]
            layer = frame.layers.pop()
            for name in layer:
                frame.bind(name, None)
        self._unconditional.discard(id(node))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._open(node)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._close(node)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._open(node)

    def leave_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._close(node)

    def visit_For(self, node: cst.For) -> None:
        frame = self._frames[-1]
        for name in _bound_names(node.target):
            frame.bind(name, None)
        frame.loops.append(node)

    def leave_For(self, node: cst.For) -> None:
        self._frames[-1].loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self._frames[-1].loops.append(node)

    def leave_While(self, node: cst.While) -> None:
        self._frames[-1].loops.pop()

    # ------------------------------------------------------------- bindings
    def visit_Assign(self, node: cst.Assign) -> None:
        # Bound at leave_Assign (assignments do not nest), so the check sees the old value.
        frame = self._frames[-1]
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            self._check(frame, node, name)
            self._pending = [(name, self._fresh(node.value))]
        else:
            self._pending = [(n, None) for t in node.targets for n in _bound_names(t.target)]

    def leave_Assign(self, node: cst.Assign) -> None:
        for name, val in self._pending:
            self._frames[-1].bind(name, val)
        self._pending = []

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        val = self._fresh(node.value) if node.value is not None else None
        for name in _bound_names(node.target):
            self._frames[-1].bind(name, val if isinstance(node.target, cst.Name) else None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        for name in _bound_names(node.target):
            self._frames[-1].bind(name, None)

    # ------------------------------------------------------------- inference
    def _fresh(self, e: cst.BaseExpression) -> Optional[Fresh]:
        """`e` makes a new tensor that nothing else references: with or without history."""
        ctx = self.ctx
        if ctx.infer(e).kind != V.TENSOR:
            return None
        ng = ctx.in_no_grad
        if isinstance(e, cst.BinaryOperation):
            if isinstance(e.operator, cst.MatrixMultiply):
                return Fresh(ng or (self._nograd(e.left) and self._nograd(e.right)), None)
            return Fresh(ng or (self._nograd(e.left) and self._nograd(e.right)),
                         _promote(self._dtype(e.left), self._dtype(e.right), type(e.operator)))
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
            d = self._dtype(e.expression)
            return Fresh(ng or self._nograd(e.expression), d if d in ("float", "int") else None)
        if not isinstance(e, cst.Call):
            return None
        t = ctx.torch_name(e.func)
        if t is not None:
            if t in FACTORIES:
                rg = kwarg(e, "requires_grad")
                if rg is not None and not (isinstance(rg, cst.Name) and rg.value == "False"):
                    return None
                return Fresh(True, self._factory_dtype(t, e))
            if t.startswith("nn.functional."):
                t = t.rsplit(".", 1)[-1]
                inplace = kwarg(e, "inplace")
                if inplace is not None and not (isinstance(inplace, cst.Name) and inplace.value == "False"):
                    return None
            if t not in NEW_TENSOR_OPS or kwarg(e, "out") is not None:
                return None
            pos = positional(e)
            if not pos:
                return None
            return Fresh(ng or all(self._nograd(a.value) for a in e.args),
                         self._op_dtype(t, pos[0].value, e, skip_first=True))
        if isinstance(e.func, cst.Attribute) and e.func.attr.value in NEW_TENSOR_OPS:
            recv = e.func.value
            m = e.func.attr.value
            return Fresh(ng or (self._nograd(recv) and all(self._nograd(a.value) for a in e.args)),
                         self._op_dtype(m, recv, e, skip_first=False))
        return None

    def _nograd(self, e: cst.BaseExpression) -> bool:
        """`e` is a Python value or a tensor without autograd history."""
        if is_python_scalar(e) or string_value(e) is not None or (isinstance(e, cst.Name) and e.value == "None"):
            return True
        if isinstance(e, cst.Name):
            f = self._frames[-1].get(e.value)
            if f is not None:
                return f.nograd
        kind = self.ctx.infer(e).kind
        if kind == V.PY:
            return True
        if kind != V.TENSOR:
            return False
        f = self._fresh(e) if not isinstance(e, cst.Name) else None
        return f is not None and f.nograd

    def _dtype(self, e: cst.BaseExpression) -> Optional[str]:
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
            e = e.expression
        if isinstance(e, cst.Integer):
            return "pyint"
        if isinstance(e, cst.Float):
            return "pyfloat"
        if isinstance(e, cst.Name):
            f = self._frames[-1].get(e.value)
            return f.dtype if f is not None else None
        f = self._fresh(e)
        return f.dtype if f is not None else None

    def _op_dtype(self, m: str, recv: cst.BaseExpression, call: cst.Call, skip_first: bool) -> Optional[str]:
        if m in FLOAT_RESULT and not (m == "div" and kwarg(call, "rounding_mode") is not None):
            return "float"
        d = self._dtype(recv)
        if m in BINARY:
            others = positional(call)[1 if skip_first else 0:]
            return _promote(d, self._dtype(others[0].value), None) if others else None
        if m in SAME_DTYPE:
            return d if d in ("float", "int") else None
        return None

    def _factory_dtype(self, t: str, call: cst.Call) -> Optional[str]:
        dt = kwarg(call, "dtype")
        if dt is not None:
            name = (self.ctx.torch_name(dt) or "").rsplit(".", 1)[-1]
            return "float" if name in FLOAT_DTYPES else "int" if name in INT_DTYPES else "bool" if name == "bool" else None
        if t in FLOAT_FACTORIES or t in ("rand_like", "randn_like"):
            return "float" if t in FLOAT_FACTORIES else self._like_dtype(call)
        if t in INT_FACTORIES:
            return "int"
        pos = positional(call)
        if t == "arange":
            kinds = {self._dtype(a.value) for a in pos}
            return "float" if "pyfloat" in kinds else "int" if kinds == {"pyint"} else None
        if t in ("full", "full_like") and len(pos) >= 2:
            d = self._dtype(pos[1].value)
            return "float" if d == "pyfloat" else "int" if d == "pyint" and t == "full" else None
        if t in ("zeros_like", "ones_like", "empty_like", "randint_like"):
            return self._like_dtype(call)
        if t == "tensor" and pos:
            return _literal_dtype(pos[0].value)
        return None

    def _like_dtype(self, call: cst.Call) -> Optional[str]:
        pos = positional(call)
        return self._dtype(pos[0].value) if pos else None

    # ------------------------------------------------------------- the check
    def _rhs(self, name: str, value: cst.BaseExpression):
        """(op name, operands, in-place replacement) for `name = <value>`, else None."""
        if isinstance(value, cst.BinaryOperation):
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
        if not isinstance(value, cst.Call) or kwarg(value, "out") is not None or any(a.star for a in value.args):
            return None
        func = value.func
        if isinstance(func, cst.Attribute) and _is_name(func.value, name) and func.attr.value in INPLACE_TWINS:
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

    def _check(self, frame: _Frame, node: cst.Assign, name: str) -> None:
        ctx = self.ctx
        info = frame.get(name)
        if info is None or not info.nograd or frame.compiled:
            return
        rhs = self._rhs(name, node.value)
        if rhs is None:
            return
        op, operands, fix = rhs
        if not self._dtype_kept(info.dtype, op, operands):
            return
        for e in operands:
            if string_value(e) is not None or (isinstance(e, cst.Name) and e.value == "None"):
                continue
            if is_python_scalar(e):
                continue
            kind = ctx.infer(e).kind
            if kind == V.PY:
                continue
            if kind != V.TENSOR or not (ctx.in_no_grad or self._nograd(e)):
                return
        if frame.escaped is None:
            frame.escaped = escaped_names(ctx, frame.root)
        if name in frame.escaped:
            return
        if frame.loops and not self._loop_rebinds_ok(frame, frame.loops[0], name):
            return
        # The finding's span is the statement without its `;`, so the fix carries none either.
        self.report(node, fix, safe=False, stmt=short(node, 50).rstrip("; "), name=name, fix=code(fix))

    def _dtype_kept(self, dtype: Optional[str], op: str, operands) -> bool:
        if dtype == "float":  # real operands keep a float tensor floating (complex is not modelled)
            return True
        if dtype == "int":
            return op in INT_OK and all(
                isinstance(_strip_sign(e), cst.Integer) or (isinstance(e, cst.Name) and e.value == "None")
                or self._dtype(e) == "int" for e in operands
            )
        return False

    def _loop_rebinds_ok(self, frame: _Frame, loop: cst.CSTNode, name: str) -> bool:
        """Across iterations the value may come from any binding in the loop: each must make
        an owned tensor (and, outside no_grad, from grad-free operands only)."""
        for stmt in _loop_statements(loop):
            if isinstance(stmt, cst.For) and name in _bound_names(stmt.target):
                return False
            if isinstance(stmt, cst.With) and any(
                it.asname is not None and name in _bound_names(it.asname.name) for it in stmt.items
            ):
                return False
            if isinstance(stmt, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
                if not any(name in _bound_names(t) for t in targets):
                    continue
                if len(targets) != 1 or not isinstance(targets[0], cst.Name) or stmt.value is None:
                    return False
                if not self._makes_new(stmt.value):
                    return False
                if not self.ctx.in_no_grad:
                    for n in _names_in(stmt.value, set()) - {name}:
                        f = frame.get(n)
                        if not (f is not None and f.nograd) and self.ctx.lookup(n).kind != V.PY:
                            return False
        return True

    def _makes_new(self, e: cst.BaseExpression) -> bool:
        if isinstance(e, cst.BinaryOperation):
            return True
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
            return True
        if isinstance(e, cst.Call):
            t = self.ctx.torch_name(e.func)
            if t is not None:
                return t in FACTORIES or t in NEW_TENSOR_OPS
            return isinstance(e.func, cst.Attribute) and e.func.attr.value in NEW_TENSOR_OPS
        return False


def _is_name(e: cst.BaseExpression, name: str) -> bool:
    return isinstance(e, cst.Name) and e.value == name and not e.lpar


def _strip_sign(e: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        return e.expression
    return e


def _promote(a: Optional[str], b: Optional[str], op) -> Optional[str]:
    """Result dtype category of `a <op> b` for real operands (complex is not modelled):
    true division and anything with a float side is floating point."""
    if op is cst.Divide or "float" in (a, b) or "pyfloat" in (a, b):
        return "float"
    if a is None or b is None:
        return None
    if {a, b} <= {"int", "pyint"} and "int" in (a, b):
        return "int"
    return None


def _literal_dtype(e: cst.BaseExpression) -> Optional[str]:
    e = _strip_sign(e)
    if isinstance(e, cst.Float):
        return "float"
    if isinstance(e, cst.Integer):
        return "int"
    if isinstance(e, (cst.List, cst.Tuple)) and e.elements:
        kinds = {_literal_dtype(el.value) for el in e.elements}
        if kinds == {"int"}:
            return "int"
        if kinds <= {"int", "float"}:
            return "float"
    return None


def _loop_statements(loop: cst.CSTNode):
    """Statements inside a loop, compound ones included, not into nested scopes."""
    out = []

    def walk(block) -> None:
        for stmt in getattr(block, "body", ()):
            if isinstance(stmt, cst.SimpleStatementLine):
                out.extend(stmt.body)
            elif isinstance(stmt, cst.BaseSmallStatement):
                out.append(stmt)
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            elif isinstance(stmt, cst.BaseCompoundStatement):
                out.append(stmt)
                walk(getattr(stmt, "body", None))  # a `match` has no body of its own
                for case in getattr(stmt, "cases", ()):
                    walk(case.body)
                orelse = getattr(stmt, "orelse", None)
                while isinstance(orelse, cst.If):
                    out.append(orelse)
                    walk(orelse.body)
                    orelse = orelse.orelse
                if orelse is not None:
                    walk(orelse.body)
                for h in getattr(stmt, "handlers", ()):
                    walk(h.body)
                final = getattr(stmt, "finalbody", None)
                if final is not None:
                    walk(final.body)

    out.append(loop)
    walk(loop.body)
    return out
