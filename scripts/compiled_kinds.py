"""Check what synclint says Dynamo does with each kind of compiled event
(`synclint.semantic.compiled.KINDS`) against what the installed torch does, on the CPU:
for one example of each kind, whether Dynamo breaks the graph and with which registry id,
whether the flag the kind names captures it instead, and whether `fullgraph=True`
captures it or fails to compile. Run it after a torch upgrade; docs/compiled.md has the
last run's table.

    python scripts/compiled_kinds.py            # a table; exit 1 on a disagreement
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch._dynamo as dynamo

from synclint.semantic.compiled import KINDS

logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
warnings.filterwarnings("ignore")
log = logging.getLogger("kinds")


def _branch(y):
    if y.sum() > 0:
        return y + 1
    return y - 1


def _assert(y):
    assert (y >= -100).all(), "out of range"
    return y + 1


def _print(y):
    print(y.sum())
    return y


def _logging(y):
    log.info("sum %s", y.sum())
    return y


def _fill(y):
    y = y.clone()
    y[y > 0] = y.mean()
    return y


# one example of each kind: a function of a tensor `y` (the result of a graph op), whose
# output is used by more graph ops, so that a break has graphs on both sides
EXAMPLES: Dict[str, Callable] = {
    "item": lambda y: y.sum().item() * y,
    "size": lambda y: torch.zeros(y.abs().sum().long()).sum() + y,
    "tolist": lambda y: len(y.tolist()) * y,
    "tolist-int": lambda y: len(y.long().tolist()) * y,
    "branch": _branch,
    "equal": lambda y: y * (1 if torch.equal(y, y) else 2),
    "member": lambda y: y * (1 if 0.5 in y else 2),
    "print": _print,
    "str": lambda y: (str(y.sum()), y)[1],
    "repr": lambda y: (repr(y.sum()), y)[1],
    "percent": lambda y: ("%s" % y.sum(), y)[1],
    "logging": _logging,
    "shape": lambda y: y[y > 0].sum() * y,
    "one-hot": lambda y: torch.nn.functional.one_hot(y.abs().long()).sum() * y,
    "host-copy": lambda y: y.cpu() * 2,
    "assert": _assert,
    "fill": _fill,
}


def _registry() -> Dict[str, str]:
    path = Path(dynamo.__file__).parent / "graph_break_registry.json"
    out: Dict[str, str] = {}
    for gb, entries in json.loads(path.read_text()).items():
        for e in entries:
            out.setdefault(e.get("Gb_type", ""), gb)
    return out


def _breaks(fn: Callable, flags: Dict[str, bool]) -> List[str]:
    """The graph-break types Dynamo reports for `fn`."""
    def f(x):
        y = x * 2
        return fn(y) + 1

    dynamo.reset()
    with dynamo.config.patch(**flags):
        e = dynamo.explain(f)(torch.randn(8))
    out = []
    for r in e.break_reasons:
        lines = [ln.strip() for ln in r.reason.splitlines() if ln.strip()]
        expl = next((i for i, ln in enumerate(lines) if ln.startswith("Explanation:")), None)
        out.append(lines[expl - 1] if expl else lines[0])
    return out


def _fullgraph_ok(fn: Callable) -> bool:
    def f(x):
        return fn(x * 2) + 1

    dynamo.reset()
    try:
        torch.compile(f, fullgraph=True, backend="eager")(torch.randn(8))
    except Exception:  # noqa: BLE001 - Unsupported, UserError: a compile error either way
        return False
    return True


def check() -> Tuple[List[Tuple[str, ...]], int]:
    gb_of = _registry()
    rows, bad = [], 0
    for name, kind in KINDS.items():
        plain = _breaks(EXAMPLES[name], {})
        # (a branch also logs its resumption, "generic_jump TensorVariable()", under no id)
        ids = sorted({gb_of[t] for t in plain if t in gb_of}) or (["?"] if plain else [])
        lifted: Optional[bool] = None
        if kind.lifted_by is not None:
            lifted = not _breaks(EXAMPLES[name], {kind.lifted_by: True})
        full = _fullgraph_ok(EXAMPLES[name])
        expect_ids = [kind.gb] if kind.breaks and kind.gb else []
        ok = (bool(plain) == kind.breaks and (not expect_ids or expect_ids == ids)
              and (lifted in (None, True)) and (not kind.breaks or full == kind.fullgraph_captures))
        bad += not ok
        rows.append((name, ",".join(ids) or "no break", kind.gb or "-", kind.lifted_by or "-",
                     "-" if lifted is None else str(lifted), "captured" if full else "compile error",
                     "ok" if ok else "DIFFERS"))
    return rows, bad


def main() -> int:
    rows, bad = check()
    head = ("kind", "Dynamo's break", "synclint says", "flag", "flag captures", "fullgraph=True", "")
    print(f"torch {torch.__version__}")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
