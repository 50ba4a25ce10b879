"""Execution rates: how often a function or a statement runs, and the chain that says so.

A rate is one of six, ordered from the rarest to the most frequent:

    once < per-epoch < every-N-steps < per-step < per-micro-step < per-token

- once: at most once in a run as far as the analysis sees (setup code, module-level code, a
  branch that runs once, a function no repeated code calls, a function declared cold);
  debug and visualisation code too (a branch under a debug flag, a debug helper and what
  only debug code calls: `rare`), which a normal run does not reach or reaches rarely;
- per-epoch: the straight-line code of a function that loops over batches itself, the body of
  an epoch loop, and what they call;
- every-N-steps: under a periodic guard (`if step % log_every == 0:`) in code that would
  otherwise run every step. It sits above per-epoch because a guard's period is a number of
  steps, usually shorter than an epoch (a guard in per-epoch or run-once code takes that
  rarer rate instead: the meet of the two);
- per-step: a loop over a loader or any other repeated loop, a framework hook
  (`library.toml`'s `hot_functions` and `framework_hooks`), a `hot-functions` glob, and what
  they call. A guard whose body steps the optimizer (`if (i + 1) % accum == 0:
  opt.step()`) is not periodic: it runs every optimizer step;
- per-micro-step: a loop that runs `backward()` in a region whose optimizer step is outside
  that loop (the micro-batches of gradient accumulation): several runs a step;
- per-token: a loop whose body feeds a model's output back into that model (a decoding loop:
  `logits = model(idx); idx = torch.cat([idx, sample(logits)], 1)`).

Per-token is put above per-micro-step by convention: the two rarely meet in one program
(decoding is inference, micro-steps are training), and a decode step is one forward pass.

The join of two rates is the more frequent one: a function called both from setup and from
the batch loop runs per step. `is_hot` is the old boolean (per-step or faster), which every
output keeps. No LibCST here: the project linker and the reports import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from synclint.semantic.declared import TEST_CODE, TEST_LOOP


class Rate(IntEnum):
    ONCE = 0
    PER_EPOCH = 1
    EVERY_N = 2
    TEST_LOOP = 3  # a loop in test code: as often as a test runs it, never a training step
    PER_STEP = 4
    PER_MICRO_STEP = 5
    PER_TOKEN = 6

    @property
    def label(self) -> str:
        """The name in outputs (`"per-step"`)."""
        return _LABELS[self]

    @property
    def words(self) -> str:
        """The name in prose (`"per step"`)."""
        return _LABELS[self].replace("-", " ")


_LABELS = {
    Rate.ONCE: "once", Rate.PER_EPOCH: "per-epoch", Rate.EVERY_N: "every-n-steps", Rate.TEST_LOOP: TEST_LOOP,
    Rate.PER_STEP: "per-step", Rate.PER_MICRO_STEP: "per-micro-step", Rate.PER_TOKEN: "per-token",
}
LABELS = tuple(_LABELS[r] for r in Rate)


def join(a: Rate, b: Rate) -> Rate:
    """The more frequent of two rates (code reached two ways runs as often as the busier)."""
    return a if a >= b else b


def is_hot(rate: Rate) -> bool:
    """The `hot` boolean of every output: per step, per micro-step or per token."""
    return rate >= Rate.PER_STEP


def parse(label: Optional[str]) -> Optional[Rate]:
    return next((r for r in Rate if _LABELS[r] == label), None)


@dataclass(frozen=True)
class Entry:
    """Where a rate starts: a loop (`stmt`: its statement, whose line the report finds), a
    framework hook, a configuration glob, a guard or a once-only branch. `text` is a
    sentence with `{at}` where the line goes (`"train() loops over train_loader ({at})"`)."""

    text: str
    stmt: object = field(default=None, compare=False, repr=False)

    def render(self, where: Callable[[object], str]) -> str:
        return self.text.replace("{at}", where(self.stmt)) if self.stmt is not None else self.text


@dataclass(frozen=True)
class SiteRate:
    """A site's rate as the walk sees it: the join of the loops around it (`loop`, from
    `entry`; ONCE and no entry outside loops), and whether a periodic guard (`guard`) or a
    once-only branch (`once`; `debug`: a debug flag's; `first`: one that runs on the first
    call or step only) holds it. The function's own rate
    joins in after the walk. `steps` (from `steps_entry`) is the join of the loops around it
    that repeat per step wherever they are (over a loader's batches, decoding, micro-batches):
    in a function that runs rarely (`FunctionRates.rare`) only these raise the rate, as a
    loop over a list's items runs as often as its function."""

    loop: Rate = Rate.ONCE
    entry: Optional[Entry] = None
    guard: Optional[Entry] = None
    once: Optional[Entry] = None
    steps: Rate = Rate.ONCE
    steps_entry: Optional[Entry] = None
    debug: bool = False
    first: bool = False  # the once-only branch runs on the first call or step (setup: `semantic.setup`)

    def stepping(self) -> "SiteRate":
        """This site in a function that runs rarely: its step loops only."""
        return SiteRate(self.steps, self.steps_entry, self.guard, self.once, self.steps, self.steps_entry, self.debug,
                        self.first)


OUTSIDE = SiteRate()


@dataclass(frozen=True)
class Reason:
    """Why a function has its rate: an entry of its own (`own`: a hook, a glob), or a call
    from `caller` (None: module-level code), where `entry` is a loop around the call that
    raised the rate (None: the caller's own rate, whose reason continues the chain)."""

    entry: Optional[Entry] = None
    caller: Optional[str] = None
    own: bool = False


@dataclass(frozen=True)
class FunctionRates:
    """Each in-file function's rate and the reason for it (functions absent: once), the
    functions that run rarely (`rare`: debug code, whose own loops are not step loops), and
    those that run once whatever calls them (`cold`: declared cold, memoised)."""

    rates: Dict[str, Rate]
    reasons: Dict[str, Reason]
    rare: FrozenSet[str] = frozenset()
    cold: FrozenSet[str] = frozenset()

    def of(self, func: Optional[str]) -> Rate:
        return self.rates.get(func, Rate.ONCE) if func is not None else Rate.ONCE

    def chain(self, func: Optional[str], where: Callable[[object], str]) -> List[str]:
        """The chain from the entry that gave `func` its rate, entry first, then each
        function called (`["train() loops over train_loader (train.py:41)", "train_step",
        "compute_loss"]`); without an entry (module-level code called it), the calls only."""
        names: List[str] = []
        while func is not None and func not in names:
            r = self.reasons.get(func)
            if r is None:
                break
            if r.own:
                return [r.entry.render(where), *reversed(names)] if r.entry else list(reversed(names))
            names.append(func)
            if r.entry is not None:
                return [r.entry.render(where), *reversed(names)]
            func = r.caller
        return list(reversed(names))


# A call edge: (caller, callee, the site's rate as the walk saw it, whether heat crosses it
# (`callgraph.crosses`), whether it starts heat: a hot site, in a loop or a hook).
Edge = Tuple[Optional[str], str, SiteRate, bool, bool]


def propagate(edges: Iterable[Edge], seeds: Dict[str, Entry], per_epoch: Set[str],
              cold: Dict[str, Entry], rare: Optional[Dict[str, Optional[Entry]]] = None) -> FunctionRates:
    """Rates along the call graph, by the rules heat spreads by (`heat.hot_functions`): a
    callee runs as often as the busiest of its call sites, a site as often as its loops and
    its function (a periodic guard caps it at every-N, a once-only branch at once). Seeds
    (framework hooks, `hot-functions` globs) run per step. A function that loops over
    batches itself (`per_epoch`) runs its own code per epoch at most; one declared cold
    (`cold`) once, and so do its calls. A rare function (`rare`: debug code, with the entry
    that says why, or None where it is rare because only rare code calls it) runs as often
    as its callers make it, once where none does, and its loops other than step loops add
    nothing (`SiteRate.stepping`). A join to a fixpoint: a function's rate only rises, at
    most once per level of the lattice."""
    rare = rare or {}
    out_edges: Dict[Optional[str], List[Edge]] = {}
    for e in edges:
        out_edges.setdefault(e[0], []).append(e)
    rates: Dict[str, Rate] = {}
    reasons: Dict[str, Reason] = {}
    work: List[Optional[str]] = []

    def offer(q: str, rate: Rate, reason: Reason) -> None:
        if q in cold:
            rate, reason = Rate.ONCE, Reason(cold[q], own=True)
        elif q in per_epoch and rate > Rate.PER_EPOCH:
            rate = Rate.PER_EPOCH  # its own code runs once per epoch; its batch loop more
        if q in rates and rates[q] >= rate:
            if rates[q] == rate and reasons[q] == Reason():
                reasons[q] = reason  # a caller says more than "runs at least once"
            return
        rates[q], reasons[q] = rate, reason
        work.append(q)

    for q, entry in seeds.items():
        offer(q, Rate.PER_STEP, Reason(entry, own=True))
    for q in cold:
        offer(q, Rate.ONCE, Reason(cold[q], own=True))
    for q, entry in rare.items():
        if entry is not None:
            offer(q, Rate.ONCE, Reason(entry, own=True))
    for q in out_edges:  # every caller runs at least once (`main`, which nothing here calls)
        if q is not None:
            offer(q, Rate.ONCE, Reason())
    work.append(None)  # module-level code: once
    while work:
        caller = work.pop()
        rate = rates.get(caller, Rate.ONCE) if caller is not None else Rate.ONCE
        for _, callee, site, crosses, starts in out_edges.get(caller, ()):
            if caller in rare:
                site, starts = site.stepping(), starts and is_hot(site.steps)
            offered, entry = _offered(caller in cold, rate, site, crosses, starts)
            offer(callee, offered, Reason(entry, caller))
    return FunctionRates(rates, reasons, frozenset(rare), frozenset(cold))


def _offered(cold_caller: bool, rate: Rate, site: SiteRate, crosses: bool, starts: bool) -> Tuple[Rate, Optional[Entry]]:
    """What one call site offers its callee, from a caller of `rate`. Heat's rules decide
    which side of per-step it lands on: hot exactly where `heat.hot_functions` spreads."""
    if cold_caller:
        return Rate.ONCE, None  # a cold function's loops run rarely too
    offered, entry = rate_in_function(site, rate, steps=crosses)
    if crosses and starts:
        return join(offered, Rate.PER_STEP), entry  # a hot site (its loops, or a hook)
    if crosses and is_hot(rate):
        return offered, entry  # the straight-line code of a hot function
    if is_hot(offered):  # a constructor's call in a loop, which heat does not cross
        return (rate, None) if crosses else (Rate.EVERY_N, site.guard)
    return offered, entry


def rate_in_function(site: SiteRate, func_rate: Rate, steps: bool = False) -> Tuple[Rate, Optional[Entry]]:
    """The rate of a site in a function of `func_rate`, and the loop that raised it above the
    function's (None: the function's own). `steps`: a periodic guard that holds a call into
    what steps an optimizer does not slow it (every optimizer step)."""
    base, entry = func_rate, None
    if site.loop > func_rate:
        base, entry = site.loop, site.entry
    if site.once is not None:
        return Rate.ONCE, site.once
    if site.guard is not None and not steps:
        return (Rate.EVERY_N, site.guard) if base > Rate.EVERY_N else (base, entry)
    return base, entry


def in_test_code(rate: Rate, chain: List[str]) -> Tuple[Rate, List[str]]:
    """A rate in a test file (`declared.TEST_CODE`): `test-loop` where it would be hot."""
    return (Rate.TEST_LOOP, [*chain, TEST_CODE]) if is_hot(rate) else (rate, chain)


def settled(rate: Rate, hot: bool) -> Rate:
    """`rate` made to agree with the `hot` the analysis decided (the old boolean is the
    contract): a hot finding with a cold rate is per-step, a cold one with a hot rate is
    every-N. Rates follow heat's own rules, so this is a safety net that tests keep unused."""
    if hot and not is_hot(rate):
        return Rate.PER_STEP
    if not hot and is_hot(rate):
        return Rate.EVERY_N
    return rate


def finding_rate(site: SiteRate, func: Optional[str], functions: FunctionRates, cold: bool,
                 where: Callable[[object], str]) -> Tuple[Rate, List[str]]:
    """A finding's rate and its chain: its site's loops joined with its function's rate (the
    chain of whichever is busier), then a periodic guard or a once-only branch around it
    (named last in the chain). In a function declared cold (`cold`): once."""
    if cold:
        return Rate.ONCE, functions.chain(func, where)
    if func in functions.rare:
        site = site.stepping()
    func_rate = functions.of(func)
    base, loop = rate_in_function(SiteRate(site.loop, site.entry), func_rate)
    chain = [loop.render(where)] if loop is not None else functions.chain(func, where)
    rate, held = rate_in_function(site, func_rate)
    if held is not None and held in (site.guard, site.once):
        chain.append(held.render(where))
    return rate, chain


def described(rate: Optional[str], chain: Sequence[str]) -> str:
    """`"per step: train() loops over train_loader (train.py:41) -> train_step"`."""
    words = rate.replace("-", " ") if rate else "unknown rate"
    return f"{words}: {' -> '.join(chain)}" if chain else words


def project_reason(scope: str, module: Optional[str], declared, hot: bool = True, chain: Optional[str] = None) -> str:
    """Why the project makes `scope` (a function of `module`) run every step (`hot`) where
    its own file did not: a `hot-functions` glob, else the chain of calls from where the
    project's heat starts (`chain`: `Project.hot_scopes`); or why it runs once (not `hot`):
    a `cold-functions` glob."""
    from synclint.semantic.declared import qualified

    name = qualified(module, scope) if module is not None else scope
    if not hot:
        return f"{scope}() is declared cold (cold-functions '{declared.cold_glob(name)}')"
    glob = declared.hot_glob(name) if module is not None and declared.hot else None
    if glob is not None:
        return f"{scope}() is declared hot (hot-functions '{glob}')"
    if chain:
        return chain
    return f"{scope}() is called every step from another module of the project"
