import libcst as cst

from synclint.semantic import RECEIVER
from synclint.semantic import values as V
from synclint.semantic.syntax import last_name
from synclint.rule import BenchPair, Invalid, Rule, Valid
from synclint.rules._helpers import short
from synclint.rules._helpers import has_star, literal_bool, one_line

# torch.distributions classes whose constructor checks `arg_constraints` (torch 2.13).
# Independent, MixtureSameFamily and TransformedDistribution take distributions, not tensors.
_VALIDATING = {
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli",
    "Dirichlet", "Exponential", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric",
    "Gumbel", "HalfCauchy", "HalfNormal", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
    "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "Multinomial", "MultivariateNormal",
    "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "Poisson", "Uniform", "VonMises",
    "Weibull", "Wishart",
}


class DistributionValidation(Rule):
    """
    ## What it does
    Flags constructing a `torch.distributions` distribution from GPU tensors
    without `validate_args=False`, in a file that does not turn validation off with
    `Distribution.set_default_validate_args(False)`; and `d.log_prob(x)` (`cdf`, `icdf`) of
    such a distribution with a GPU `x`, which checks `x` against the support on each call.
    A class of the project that derives from one (`class FixedCategorical(Categorical)`,
    as RL code does) is one: its construction and its `super().log_prob(x)` are flagged
    (no fix: its own `__init__` may not take `validate_args`).

    ## Why is this bad?
    With validation on (the default: `Distribution._validate_args = __debug__`), the
    constructor checks every parameter against its constraint and raises if one fails:
    `torch/distributions/distribution.py` does `if not torch._is_all_true(valid): raise`,
    which reads a GPU boolean back and waits for all queued GPU work. `log_prob` then checks
    its argument the same way. Measured on an H200 with torch 2.11: `Normal`, `Categorical`,
    `Bernoulli`, `Uniform`, `Beta` and `MultivariateNormal` built from CUDA tensors are caught
    by `torch.cuda.set_sync_debug_mode`; with `validate_args=False` they are not.

    ## Use instead
    Validate while developing, not in the training loop:

    ```python
    dist = torch.distributions.Normal(mu, std, validate_args=False)
    # or once, at start-up:
    torch.distributions.Distribution.set_default_validate_args(False)
    ```

    ## Fix safety
    The fix adds `validate_args=False` and is unsafe: invalid parameters (a negative scale,
    probabilities that do not sum to one, NaNs) no longer raise; they produce NaN or wrong
    samples silently.

    ## Known problems
    Under `python -O`, `__debug__` is False and validation is off by default, so the sync
    is gone there; the rule does not know how the program is run. `MultivariateNormal` built
    from `covariance_matrix` or `precision_matrix` also syncs in its Cholesky factorization
    even with `validate_args=False`.
    """

    CODE = "SYN113"
    NAME = "distribution-validation"
    MESSAGE = "`{call}` validates {what} on the host, which waits for all queued GPU work"
    FIX_TITLE = "Pass `validate_args=False`, or call `Distribution.set_default_validate_args(False)` once"
    FIX = "sometimes"
    CATALOGUE = ("E5",)
    VALID = [
        Valid(  # a project class of the same name that is no distribution
            "import torch\nclass Categorical:\n    def __init__(self, logits):\n        self.logits = logits\n"
            "def act(net, batches):\n    for obs in batches:\n"
            "        d = Categorical(logits=net(obs.cuda(non_blocking=True)))\n"
        ),
        # point 7: a script that never mentions a device, CUDA or an accelerator
        Valid(
            "import torch\nfrom data import batches\ndef policy(x: torch.Tensor, y: torch.Tensor):\n"
            "    return torch.distributions.Normal(x, y.exp())\nfor x, y in batches():\n    policy(x, y)\n"
        ),
        Valid(
            "import torch\nfrom torch.distributions import Categorical\nlogits = torch.randn(4, 5, device='cuda')\n"
            "for _ in range(3):\n    d = Categorical(logits=logits, validate_args=False)\n"
            "    lp = d.log_prob(d.sample())\n"
        ),
        Valid(
            "import torch\nfrom torch.distributions import Normal\nmu = torch.zeros(8, device='cuda')\n"
            "for _ in range(3):\n    d = Normal(mu, mu.exp(), validate_args=False)\n    s = d.rsample()\n"
        ),
        Valid(
            "import torch\nfrom torch.distributions import Distribution, Normal\n"
            "mu = torch.zeros(8, device='cuda')\nfor _ in range(3):\n    d = Normal(mu, 1.0)\n"
            "def main():\n    Distribution.set_default_validate_args(False)\n"
        ),
        Valid("import torch\nfor _ in range(3):\n    d = torch.distributions.Normal(0.0, 1.0)\n"),
        Valid(
            "import torch\nmu = torch.zeros(8, device='cuda').cpu()\nfor _ in range(3):\n"
            "    d = torch.distributions.Normal(mu, 1.0)\n"
        ),
        Valid(
            "import torch\nfrom torch.distributions import Independent, Normal\nmu = torch.zeros(8, device='cuda')\n"
            "base = Normal(mu, 1.0, validate_args=False)\nfor _ in range(3):\n    d = Independent(base, 1)\n"
        ),
        Valid(
            "import torch\nmu = torch.zeros(8, device='cuda')\nd = torch.distributions.Normal(mu, 1.0)\n", 
        cold=True),
        Valid(
            "import torch\ndef noise(shape, sigma):\n    return torch.distributions.Normal(0.0, sigma).sample(shape)\n"
            "for _ in range(3):\n    n = noise((4,), 0.1)\n"
        ),
        Valid(
            "import torch\n"
            "def policy_params(net, obs):\n"
            "    return net(obs).chunk(2, -1)\n"
            "net = torch.nn.Linear(4, 4)\n"
            "for _ in range(3):\n"
            "    mu, log_std = policy_params(net, torch.ones(2, 4))\n"
            "    d = torch.distributions.Normal(mu, log_std.exp())\n",
        ),
        Valid(
            "import torch\n"
            "class Prior(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.loc = torch.zeros(8, device='cuda')\n"
            "    def forward(self, z):\n"
            "        return torch.distributions.Normal(self.loc, 1.0, validate_args=False).log_prob(z)\n",
        ),
    ]
    INVALID = [
        Invalid(  # a project subclass of a torch distribution (pytorch-a2c-ppo-acktr-gail)
            "import torch\nclass FixedCategorical(torch.distributions.Categorical):\n"
            "    def mode(self):\n"
            "        return self.probs.argmax(dim=-1, keepdim=True)\n"
            "def act(net, batches):\n    for obs in batches:\n"
            "        d = FixedCategorical(logits=net(obs.cuda(non_blocking=True)))\n"
            "        a = d.sample()\n",
            line=7,
            hot=True,
        ),
        Invalid(
            "import torch\nclass FixedCategorical(torch.distributions.Categorical):\n"
            "    def log_probs(self, actions):\n"
            "        return super().log_prob(actions.squeeze(-1)).unsqueeze(-1)\n"
            "def act(net, batches):\n    for obs in batches:\n"
            "        d = FixedCategorical(logits=net(obs.cuda(non_blocking=True)), validate_args=False)\n"
            "        lp = d.log_probs(torch.ones(2, device='cuda'))\n",
            line=4,
            hot=True,
        ),
        Invalid(
            "import torch\nfrom torch.distributions import Categorical\ndef score(probs, action):\n"
            "    return probs.log_prob(action)\n"
            "logits = torch.randn(4, 5, device='cuda')\nfor _ in range(3):\n"
            "    score(Categorical(logits=logits), torch.zeros(4, device='cuda'))\n",
            line=4,
            hot=True,
            message="`probs.log_prob(action)` validates the sample against the support on the host, which waits for all queued GPU work",
        ),
        Invalid(
            "import torch\nfrom torch.distributions import Normal\nclass Policy(torch.nn.Module):\n"
            "    def forward(self, x):\n        mu, log_std = self.net(x).chunk(2, -1)\n"
            "        return Normal(mu, log_std.exp())\n",
            line=6,
            hot=True,
            message="`Normal(mu, log_std.exp())` validates its parameters on the host, which waits for all queued GPU work",
            fixed="import torch\nfrom torch.distributions import Normal\nclass Policy(torch.nn.Module):\n"
            "    def forward(self, x):\n        mu, log_std = self.net(x).chunk(2, -1)\n"
            "        return Normal(mu, log_std.exp(), validate_args=False)\n",
        ),
        Invalid(
            "import torch\nimport torch.distributions as D\nlogits = torch.randn(4, 5, device='cuda')\n"
            "for _ in range(3):\n    a = D.Categorical(logits=logits).sample()\n",
            line=5,
            hot=True,
            fixed="import torch\nimport torch.distributions as D\nlogits = torch.randn(4, 5, device='cuda')\n"
            "for _ in range(3):\n    a = D.Categorical(logits=logits, validate_args=False).sample()\n",
        ),
        Invalid(
            "import torch\np = torch.rand(8, device='cuda')\nfor _ in range(3):\n"
            "    d = torch.distributions.Bernoulli(probs=p, validate_args=True)\n",
            line=4,
        ),
        Invalid(
            "import torch\n"
            "def policy_params(net, obs):\n"
            "    return net(obs).chunk(2, -1)\n"
            "net = torch.nn.Linear(4, 4).cuda()\n"
            "for _ in range(3):\n"
            "    mu, log_std = policy_params(net, torch.ones(2, 4, device='cuda'))\n"
            "    d = torch.distributions.Normal(mu, log_std.exp())\n",
            line=7,
            hot=True,
        ),
        Invalid(
            "import torch\n"
            "class Prior(torch.nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.loc = torch.zeros(8, device='cuda')\n"
            "    def forward(self, z):\n"
            "        return torch.distributions.Normal(self.loc, 1.0).log_prob(z)\n",
            line=7,
            hot=True,
        ),
    ]
    BENCH = BenchPair(
        setup=(
            "loc = torch.randn(batch, dim, device=device)\n"
            "scale = torch.rand(batch, dim, device=device) + 0.1\n"
            "x = torch.randn(batch, dim, device=device)\n"
        ),
        flagged=(
            "def flagged(loc: torch.Tensor, scale: torch.Tensor, x: torch.Tensor):\n"
            "    d = torch.distributions.Normal(loc, scale)\n"
            "    return d.log_prob(x).sum(-1)\n"
        ),
        fixed=(
            "def fixed(loc: torch.Tensor, scale: torch.Tensor, x: torch.Tensor):\n"
            "    d = torch.distributions.Normal(loc, scale, validate_args=False)\n"
            "    return d.log_prob(x).sum(-1)\n"
        ),
        sizes={"batch": 256, "dim": 64},
        condition="the parameters and samples are valid",
        compare="equal",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if has_star(node) or self.ctx.validate_args_off():
            return
        self._sample_check(node)
        q = self.ctx.qualname(node.func)
        subclass = not (q is not None and q.startswith("torch.distributions."))
        if not subclass:
            base = q.rsplit(".", 1)[-1]
        else:  # a class of the project deriving from one (`FixedCategorical(logits=x)`)
            cls = self.ctx.infer(node).cls if _may_construct(self.ctx, node.func) else None
            base = self.ctx.distribution_base(cls) if cls and "|" not in cls else None
        if base not in _VALIDATING:
            return
        validate = None
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "validate_args":
                validate = a
        if validate is not None and not _is_none(validate.value) and literal_bool(validate.value) is not True:
            return  # validate_args=False, or a variable: the author chose
        params = [a.value for a in node.args if a is not validate]
        if not any(self._gpu_param(p) for p in params):
            return
        replacement = None
        if subclass:
            pass  # its own `__init__` may not take `validate_args`: no fix offered
        elif one_line(node) and validate is None:
            replacement = node.with_changes(args=_append_kwarg(node.args, "validate_args", cst.Name("False")))
        elif one_line(node) and _is_none(validate.value):
            replacement = node.with_changes(
                args=[a.with_changes(value=cst.Name("False")) if a is validate else a for a in node.args]
            )
        self.report(node, replacement, safe=False, call=short(node), what="its parameters")

    def _sample_check(self, node: cst.Call) -> None:
        """`d.log_prob(x)` / `cdf` / `icdf` of a validating distribution checks `x` against
        the support (`_validate_sample`): another read-back, on every call."""
        f = node.func
        if not (type(f) is cst.Attribute and f.attr.value in ("log_prob", "cdf", "icdf") and node.args):
            return
        d = self.ctx.infer(f.value)
        if d.kind == V.DIST and d.py == "validating" and self._gpu_param(node.args[0].value):
            self.report(node, call=short(node), what="the sample against the support")

    def _gpu_param(self, e: cst.BaseExpression) -> bool:
        """A distribution parameter that is (or, computed, is likely) a GPU tensor."""
        ctx = self.ctx
        if ctx.gpu(e, RECEIVER) is None:
            return False  # on the CPU, not a tensor, or a script that never uses a GPU
        if ctx.infer(e).kind == V.TENSOR:
            return True
        # Unknown: a computed value (`self.actor(obs)`, `out[0]`) or a local bound to one is a
        # tensor in practice (NumPy arrays are rejected by distributions); a parameter or a
        # config attribute (`self.sigma`) is as often a float.
        if type(e) is cst.Name:
            e = ctx.origin(e)  # a parameter or loop variable has none
        return type(e) in (cst.Call, cst.Subscript)


def _is_none(e: cst.BaseExpression) -> bool:
    return type(e) is cst.Name and e.value == "None"


def _append_kwarg(args, name: str, value: cst.BaseExpression):
    """`args` plus `name=value` at the end, keeping a trailing comma."""
    args = list(args)
    new = cst.Arg(value=value, keyword=cst.Name(name),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        sep = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if type(last.comma) is cst.Comma:  # trailing comma: the new argument takes it over
            new = new.with_changes(comma=last.comma)
        args[-1] = last.with_changes(comma=sep)
    args.append(new)
    return args


def _may_construct(ctx, func: cst.BaseExpression) -> bool:
    """A call that may make an instance: a class's name (`FixedCategorical`, `dists.Normal`) or
    a name holding a class (`dist_cls = FixedCategorical`). Inferring every other call of the
    file only to ask for its class was a fiftieth of a cold check."""
    name = last_name(func)
    if name is None:
        return False
    return name[:1].isupper() or type(func) is cst.Name and V.class_key(ctx.infer(func)) is not None
