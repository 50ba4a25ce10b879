"""Setup code: what runs once per program run while the program sets itself up.

A host-to-device transfer there runs once and has no fix worth making (issue 34, point 5:
transfers are findings where they repeat; eval/README.md's `[[setup]]`), so the rules that
report transfers (`Rule.SETUP_EXEMPT`) drop their findings there, where the line's rate is
once. Setup is:

- building and initialising a model: an nn.Module class's constructor and its
  weight-initialisation hooks (library.toml `[modules] initialisers`), a LightningModule's
  once-per-fit hooks (`lightning_setup_hooks`), and a memoised function, which runs once per
  distinct argument (`seeds`);
- what only setup code calls, in any module and through overrides (`self._init_custom()`
  in a base's `__init__` runs the subclass's), and the constructor of a class that only
  setup code or the program's entry builds (`trainer = Trainer(cfg)` in a script);
- the straight-line module-level code (outside loops and branches that run once) of a
  script, a module no other module of the project imports: the program's entry. Not what it
  calls (a `main()`'s sampling or captioning is the program's work, an `evaluate()` after
  training runs once per evaluation), nor a library module's `__main__` block (its own test
  or demo);
- a block that runs on the first call or step only (`SiteRate.first`: a cache filled on
  first use, `if step == 0:`, a move stored back on its attribute).

A per-step, per-epoch or per-request caller anywhere keeps a function out; so does a method
name the project calls on what it cannot resolve (`Graph.unknown_calls`), and a function that
loops over batches or decodes itself (`Graph.per_epoch`: a `train()` that a trainer's
constructor runs is the program's work, not its setup). No LibCST here:
the project linker runs `setup_functions` on cached call graphs.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple, TypeVar

T = TypeVar("T")

ONCE = "once"  # `rates.Rate.ONCE`'s label (not imported: a warm run's `drops` loads no other module)
SETUP = "setup"  # a function that runs at setup as a whole
ENTRY = "entry"  # a script's module-level code: its straight-line code runs at setup
MODULE_CODE = ""  # the name of a module's own code, as a caller and as a key of a file's map
FIRST = "first"  # a site in a block that runs on the first call or step only
STRAIGHT = "straight"  # a site outside loops, guards and once-only branches


def seeds(model, memo: Iterable[str]) -> List[str]:
    """The in-file functions that run at setup whoever calls them: the constructors and
    weight-initialisation hooks of nn.Module classes, the hooks a LightningModule's trainer
    calls once per fit before the steps (`configure_optimizers`, `on_train_start`), and the
    memoised functions (`memo`: `rarity.memoised`)."""
    from synclint.semantic import library as L  # (not at import: a warm run's `drops` reads no table)

    out = set(memo)
    for q, info in model.all_funcs.items():
        if info.cls is None or not info.cls.is_module:
            continue
        if info.name in L.INITIALISERS or info.name in L.LIGHTNING_SETUP_HOOKS and model.library_base(
                info.cls.name, L.lightning_module_base) is not None:
            out.add(q)
    return sorted(out)


def setup_functions(incoming: Dict[T, List[Tuple[T, object]]], seeded: Set[T], barred: Set[T],
                    is_entry: Callable[[T], bool] = lambda caller: False) -> Set[T]:
    """The functions that run at setup, from `incoming` (callee -> its call sites: (caller,
    the site's heat: True in a loop); module-level code calls as MODULE_CODE), the `seeded`
    ones and the `barred` ones (a framework calls them, their name says they run every
    step, or a call the project cannot resolve may run them): the greatest set whose every
    member is seeded or called only from members, a constructor also from the program's
    entry outside loops (`is_entry`: a script's module-level code, and a `main()` only it
    calls: the objects a program builds before its work are its setup, though the work of
    `main()` itself is not)."""
    starts = {t for t, sites in incoming.items()
              if t not in barred and sites and all(is_entry(c) and hot is not True for c, hot in sites)}
    inside = set(seeded) | {t for t, sites in incoming.items() if sites and t not in barred}
    changed = True
    while changed:  # (removing one may remove its callees: to the greatest fixpoint)
        changed = False
        for t in list(inside):
            if t in seeded:
                continue
            builds = _constructor(t)
            if not all(c in inside or builds and hot is not True and (is_entry(c) or c in starts)
                       for c, hot in incoming[t]):
                inside.discard(t)
                changed = True
    return inside


def _constructor(node) -> bool:
    qual = node[1] if isinstance(node, tuple) else node
    return qual.endswith(".__init__")


def file_setup(graph) -> Dict[str, str]:
    """`setup_functions` over one file's call graph (`engine.Graph`), for a file linted alone:
    its calls of its own functions, its seeds, and what its framework hooks and unresolved
    calls bar. No module of a project imports it as far as it knows: a script (a library
    module's `__main__` block linted alone is taken for one)."""
    incoming: Dict[str, List[Tuple[str, object]]] = {}
    for caller, callee, hot in graph.calls:
        if not callee.startswith("@"):
            incoming.setdefault(callee, []).append((caller if caller is not None else MODULE_CODE, hot))
    unknown = set(graph.unknown_calls) - {"__init__"}  # (`super().__init__()`)
    barred = set(graph.entries) | set(graph.per_epoch) | {q for q in incoming if _barred_name(q, unknown)}
    got = setup_functions(incoming, set(graph.setup), barred, lambda caller: caller == MODULE_CODE)
    return {MODULE_CODE: ENTRY, **{q: SETUP for q in got}}


def _barred_name(qual: str, unknown: Set[str]) -> bool:
    from synclint.semantic.callgraph import hot_name

    name = qual.rsplit(".", 1)[-1]
    return hot_name(name) or name in unknown


def site_kind(site) -> Optional[str]:
    """FIRST, STRAIGHT or None for a site's `rates.SiteRate`."""
    if site.first:
        return FIRST
    return STRAIGHT if site.entry is None and site.once is None and site.guard is None else None


def drops(finding, scopes: Dict[str, str]) -> bool:
    """Whether a finding is a one-time transfer at setup that its rule leaves alone: its rule
    says so (`setup_exempt`), its line runs once, and it is setup code: a first-call block, a
    function of `scopes` (`setup_functions`) that runs at setup, or the straight-line code of
    a script's entry."""
    if not finding.setup_exempt or finding.rate != ONCE:
        return False
    kind = scopes.get(finding.scope if finding.scope is not None else MODULE_CODE)
    return finding.setup_site == FIRST or kind == SETUP or kind == ENTRY and finding.setup_site == STRAIGHT
