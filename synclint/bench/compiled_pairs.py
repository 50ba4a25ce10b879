"""The compiled-code pairs: each SYN6xx pattern and the fix its rule offers, as one step of a
small network, for `synclint bench --compiled` (synclint/bench/compiled.py).

Every pair is the same step, a launch-bound inference of `depth` linear layers on a batch
of `batch` rows of `width` features, with the pattern (or its fix) between the first half
of the layers (`net.head`) and the second (`net.tail`): a graph break there splits the
compiled step into two graphs with Python between them. `build(torch, net, x)` returns the
sides as plain functions of `x`:

* `pattern`: the line as the rule flags it;
* `fixed`: the compiled-code fix the rule's page offers (`torch.where`, the read moved out
  of the step, a static size);
* `captured` (only where a Dynamo flag captures the pattern, `capture`): what the page says
  to write when the value must come from the data, run with those flags: no break, the
  host still waits. Without a `captured` function of its own, the pattern is run with the
  flags.

Nothing here imports torch: the builders take it as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

SIZES = {"batch": 64, "width": 256, "depth": 8}  # the step of issue 36's first measurement
SCALAR_FLAGS = ("capture_scalar_outputs",)
SHAPE_FLAGS = ("capture_dynamic_output_shape_ops",)


@dataclass(frozen=True)
class CompiledPair:
    code: str  # the SYN6xx rule that flags `pattern`
    case: str  # short and unique: names the pair in results and on the command line
    pattern: str  # the flagged line, as written in the step
    fix: str  # the compiled-code fix, as written in the step
    build: Callable[[Any, Any, Any], Dict[str, Callable]]
    breaks: bool = True  # the pattern breaks the graph under a plain torch.compile
    capture: Tuple[str, ...] = ()  # Dynamo flags that capture the pattern instead
    condition: Optional[str] = None  # when the fix computes what the pattern does, if not always

    @property
    def label(self) -> str:
        return f"{self.code} {self.case}"


class _Discard:
    """A file that drops what is printed to it: the print still formats the tensor (the
    host waits for its value), without filling the bench's output."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None


def _item(torch: Any, net: Any, x: Any) -> Dict[str, Callable]:
    def pattern(x):
        h = net.head(x)
        scale = h.abs().mean().item()
        return net.tail(h / (scale + 1.0))

    def fixed(x):
        h = net.head(x)
        scale = h.abs().mean()
        return net.tail(h / (scale + 1.0))

    return {"pattern": pattern, "fixed": fixed}


def _size(torch: Any, net: Any, x: Any) -> Dict[str, Callable]:
    lengths = torch.arange(x.shape[0], device=x.device) * 7 % x.shape[1] + 1  # sequence lengths, 1..width

    def pattern(x):
        h = net.head(x)
        n = int(lengths.max())
        return net.tail(h * h[:, :n].sum(1, keepdim=True))

    def fixed(x):
        h = net.head(x)
        keep = torch.arange(h.shape[1], device=h.device) < lengths.max()
        return net.tail(h * torch.where(keep, h, 0.0).sum(1, keepdim=True))

    def captured(x):
        h = net.head(x)
        n = lengths.max().item()
        torch._check(n >= 0)
        torch._check(n <= h.shape[1])
        return net.tail(h * h[:, :n].sum(1, keepdim=True))

    return {"pattern": pattern, "fixed": fixed, "captured": captured}


def _branch(torch: Any, net: Any, x: Any) -> Dict[str, Callable]:
    def pattern(x):
        h = net.head(x)
        if h.mean() > 0:
            h = h * 0.5
        else:
            h = h * 2.0
        return net.tail(h)

    def fixed(x):
        h = net.head(x)
        h = torch.where(h.mean() > 0, h * 0.5, h * 2.0)
        return net.tail(h)

    return {"pattern": pattern, "fixed": fixed}


def _print(torch: Any, net: Any, x: Any) -> Dict[str, Callable]:
    out = _Discard()

    def pattern(x):
        h = net.head(x)
        print("mean", h.mean(), file=out)
        return net.tail(h), h.mean()

    def fixed(x):
        h = net.head(x)
        return net.tail(h), h.mean()  # the caller prints it, once every N steps

    return {"pattern": pattern, "fixed": fixed}


def _mask(torch: Any, net: Any, x: Any) -> Dict[str, Callable]:
    def pattern(x):
        h = net.head(x)
        positive = h[h > 0].sum()
        return net.tail(h - positive / h.numel())

    def fixed(x):
        h = net.head(x)
        positive = torch.where(h > 0, h, 0.0).sum()
        return net.tail(h - positive / h.numel())

    return {"pattern": pattern, "fixed": fixed}


def _repeat(torch: Any, net: Any, x: Any) -> Dict[str, Callable]:
    repeats = torch.full((x.shape[0],), 2, device=x.device, dtype=torch.long)
    total = 2 * x.shape[0]  # known to the caller: every row twice

    def pattern(x):
        h = net.head(x)
        return net.tail(torch.repeat_interleave(h, repeats, dim=0))

    def fixed(x):
        h = net.head(x)
        return net.tail(torch.repeat_interleave(h, repeats, dim=0, output_size=total))

    return {"pattern": pattern, "fixed": fixed}


def _host_copy(torch: Any, net: Any, x: Any) -> Dict[str, Callable]:
    def pattern(x):
        h = net.head(x)
        stat = h.mean().cpu()
        return net.tail(h), stat

    def fixed(x):
        h = net.head(x)
        return net.tail(h), h.mean()  # the caller copies it to the host, once every N steps

    return {"pattern": pattern, "fixed": fixed}


PAIRS = (
    CompiledPair("SYN601", "item", "scale = h.abs().mean().item()", "scale = h.abs().mean()  (a tensor)",
                 _item, capture=SCALAR_FLAGS),
    CompiledPair("SYN601", "size", "n = int(lengths.max()); h[:, :n]",
                 "torch.where(arange(width) < lengths.max(), h, 0)  (a static shape)", _size, capture=SCALAR_FLAGS),
    CompiledPair("SYN602", "branch", "if h.mean() > 0: h = h * 0.5 else: h = h * 2.0",
                 "h = torch.where(h.mean() > 0, h * 0.5, h * 2.0)", _branch),
    CompiledPair("SYN603", "print", "print('mean', h.mean())", "return h.mean(); the caller prints it", _print),
    CompiledPair("SYN604", "mask", "h[h > 0].sum()", "torch.where(h > 0, h, 0.0).sum()", _mask, capture=SHAPE_FLAGS),
    CompiledPair("SYN604", "repeat", "torch.repeat_interleave(h, repeats, dim=0)",
                 "torch.repeat_interleave(h, repeats, dim=0, output_size=total)", _repeat, capture=SHAPE_FLAGS,
                 condition="output_size is the sum of the repeats"),
    CompiledPair("SYN605", "host-copy", "stat = h.mean().cpu()", "return h.mean(); the caller copies it",
                 _host_copy, breaks=False),
)


def select(names: Tuple[str, ...] = ()) -> Tuple[CompiledPair, ...]:
    """The pairs named by rule code (`SYN604`), prefix (`SYN60`) or case (`mask`); all when
    none. Raises ValueError naming a selector that matches no pair."""
    if not names:
        return PAIRS
    out = []
    for n in names:
        got = [p for p in PAIRS if p.case == n.lower() or p.code.startswith(n.upper())]
        if not got:
            raise ValueError(f"{n!r} names no compiled pair (codes {', '.join(sorted({p.code for p in PAIRS}))}; "
                             f"cases {', '.join(p.case for p in PAIRS)})")
        out += [p for p in got if p not in out]
    return tuple(p for p in PAIRS if p in out)


def codes() -> Tuple[str, ...]:
    """The rules that have compiled pairs."""
    return tuple(sorted({p.code for p in PAIRS}))


def make_net(torch: Any, device: str, batch: int, width: int, depth: int, seed: int = 0) -> Tuple[Any, Any]:
    """The step's network (inference: no gradients) and its input batch."""
    torch.manual_seed(seed)
    half = max(1, depth // 2)

    def layers(n: int) -> Any:
        mods = []
        for i in range(n):
            mods += [torch.nn.Linear(width, width)] + ([torch.nn.ReLU()] if i < n - 1 else [])
        return torch.nn.Sequential(*mods)  # no ReLU last: what the pattern reads has both signs

    net = torch.nn.Module()
    net.head = layers(half)
    net.tail = layers(max(1, depth - half))
    net = net.to(device).requires_grad_(False)
    x = torch.randn(batch, width, device=device)
    return net, x
