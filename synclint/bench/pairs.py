"""Benchmark pairs: which rules carry one, and how a pair becomes two callables.

Nothing here imports torch at module level; `build_side` takes the torch module as an
argument so that importing `synclint.bench.*` stays cheap and works without torch.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from synclint.rule import BenchPair

SIDES = ("flagged", "fixed")


@dataclass(frozen=True)
class Pair:
    """One rule's benchmark pair."""

    code: str
    name: str
    bench: BenchPair

    @property
    def label(self) -> str:
        return f"{self.code} {self.name}"


class PairError(Exception):
    """A pair that cannot be built: bad setup, missing function, unknown parameter."""


def pairs_of(rules: Sequence[type]) -> List[Pair]:
    """The pairs of the given rule classes (rules without BENCH are left out)."""
    out = []
    for r in rules:
        bench = getattr(r, "BENCH", None)
        if isinstance(bench, BenchPair):
            out.append(Pair(r.CODE, r.NAME, bench))
    return sorted(out, key=lambda p: p.code)


def select_pairs(selectors: Sequence[str] = ()) -> Tuple[List[Pair], List[str]]:
    """Pairs of the rules matching `selectors` (codes, prefixes, names; all when empty).

    Returns (pairs, notes) where notes name selected rules that have no pair.
    Raises `synclint.registry.SelectionError` for a selector that matches no rule.
    """
    from synclint.registry import all_rules, match

    if selectors:
        chosen: Dict[str, type] = {}
        for s in selectors:
            for r in match(s):
                chosen[r.CODE] = r
        rules = [chosen[c] for c in sorted(chosen)]
    else:
        rules = list(all_rules())
    pairs = pairs_of(rules)
    with_pair = {p.code for p in pairs}
    notes = [f"{r.CODE} {r.NAME}: no benchmark pair" for r in rules if r.CODE not in with_pair and selectors]
    runnable = []
    for p in pairs:
        missing = missing_modules(p.bench)
        if missing:
            notes.append(f"{p.label}: skipped, its pair needs {', '.join(missing)} (not installed)")
        else:
            runnable.append(p)
    return runnable, notes


def missing_modules(bench: BenchPair) -> List[str]:
    """The modules a pair requires that cannot be imported here."""
    return [m for m in bench.requires if importlib.util.find_spec(m) is None]


def rule_modules() -> List[Tuple[str, Any]]:
    """Every module in synclint.rules, imported one by one: (module name, rule classes | exception).

    Unlike `registry.all_rules()`, one broken module does not hide the others; tests use it
    to report a helper's half-written rule as one failing case instead of a collection error.
    """
    import synclint.rules as pkg
    from synclint.rule import Rule

    out: List[Tuple[str, Any]] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        modname = f"synclint.rules.{info.name}"
        try:
            mod = importlib.import_module(modname)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            out.append((modname, e))
            continue
        classes = [
            obj
            for obj in vars(mod).values()
            if isinstance(obj, type)
            and issubclass(obj, Rule)
            and obj.__module__ == modname
            and not obj.__dict__.get("ABSTRACT")
        ]
        out.append((modname, sorted(classes, key=lambda r: r.CODE)))
    return out


def setup_globals(torch: Any, device: str, sizes: Dict[str, int]) -> Dict[str, Any]:
    g: Dict[str, Any] = {"__name__": "__synclint_bench__", "__builtins__": __builtins__}
    g["torch"] = torch
    g["device"] = device
    g.update(sizes)
    return g


def run_setup(bench: BenchPair, torch: Any, device: str, sizes: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """Run a pair's setup; the namespace it leaves (with torch, device and sizes bound)."""
    ns = setup_globals(torch, device, dict(bench.sizes if sizes is None else sizes))
    try:
        exec(compile(bench.setup, "<bench setup>", "exec"), ns)
    except Exception as e:
        raise PairError(f"setup raised {type(e).__name__}: {e}") from e
    return ns


def define(bench: BenchPair, side: str, ns: Dict[str, Any]) -> Callable:
    """Execute the `flagged` or `fixed` source in `ns` and return the function it defines."""
    src = getattr(bench, side)
    try:
        exec(compile(src, f"<bench {side}>", "exec"), ns)
    except Exception as e:
        raise PairError(f"{side} code raised {type(e).__name__}: {e}") from e
    fn = ns.get(side)
    if not callable(fn):
        raise PairError(f"{side} code does not define a function named {side!r}")
    return fn


def arguments(fn: Callable, ns: Dict[str, Any], side: str) -> Tuple[list, dict]:
    """Bind each parameter of `fn` to the setup name it is called after."""
    args: list = []
    kwargs: dict = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in ns:
            value = ns[p.name]
        elif p.default is not p.empty:
            continue
        else:
            raise PairError(f"{side}() parameter {p.name!r} is not a name that setup defines")
        if p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


def build_side(
    bench: BenchPair, side: str, torch: Any, device: str, sizes: Optional[Dict[str, int]] = None
) -> Tuple[Callable[[], Any], Dict[str, Any]]:
    """Fresh setup plus one side: a zero-argument callable and the namespace behind it."""
    ns = run_setup(bench, torch, device, sizes)
    fn = define(bench, side, ns)
    args, kwargs = arguments(fn, ns, side)

    def call() -> Any:
        return fn(*args, **kwargs)

    call.__name__ = side
    return call, ns


def parameter_names(bench: BenchPair, side: str) -> List[str]:
    """Parameter names of a side's function, read from its source without running it."""
    import ast

    tree = ast.parse(getattr(bench, side))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == side:
            a = node.args
            return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    raise PairError(f"{side} code does not define a function named {side!r}")
