"""The results document of `synclint bench`: its schema, validation and an atomic writer."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

from synclint.atomic import write_text_atomic as write_atomic  # noqa: F401 - the project's one atomic writer

META_KEYS = {
    "gpu": (str, type(None)),
    "torch": (str,),
    "cuda": (str, type(None)),
    "date": (str,),
    "host": (str,),
    "device": (str,),
    "timed": (bool,),
}

NUM = (int, float)
OPT_NUM = (int, float, type(None))
OPT_INT = (int, type(None))
OPT_STR = (str, type(None))
OPT_BOOL = (bool, type(None))

RESULT_KEYS = {
    "code": (str,),
    "name": (str,),
    "sizes": (dict,),
    "expect": (str,),
    "condition": OPT_STR,
    "compare": (str,),
    "debug_mode_sees": (bool,),
    "same_result": OPT_BOOL,
    "flagged_us": OPT_NUM,
    "fixed_us": OPT_NUM,
    "spread": OPT_NUM,
    "speedup": OPT_NUM,
    "syncs_flagged": OPT_INT,
    "syncs_fixed": OPT_INT,
    "peak_mem_flagged": OPT_INT,
    "peak_mem_fixed": OPT_INT,
    "verdict": (str,),
    "error": OPT_STR,
}

# What every regime of a timed result carries (the top level repeats its headline regime's).
REGIME_KEYS = {
    "flagged_us": NUM,
    "fixed_us": NUM,
    "speedup": NUM,
    "ci": (list,),
    "spread": NUM,
    "saved_us": NUM,
    "passes": (int,),
    "samples": (dict,),
    "speedups_by_pass": (list,),
    "verdict": (str,),
}
REGIMES = ("back-to-back", "host-work")
TIME_VERDICTS = ("faster", "no measurable gain", "slower", "undecided")  # undecided: runs.py

VERDICTS = ("faster", "memory", "fewer syncs", "no measurable gain", "slower", "undecided", "not timed", "failed",
            "error")


def validate(data: Any) -> List[str]:
    """Problems with a results document (empty list: it is well formed)."""
    errs: List[str] = []
    if not isinstance(data, dict) or not isinstance(data.get("meta"), dict) or not isinstance(data.get("results"), list):
        return ["expected an object with 'meta' (object) and 'results' (list)"]
    meta = data["meta"]
    for k, types in META_KEYS.items():
        if k not in meta:
            errs.append(f"meta: missing {k!r}")
        elif not isinstance(meta[k], types):
            errs.append(f"meta.{k}: {type(meta[k]).__name__} is not {'/'.join(t.__name__ for t in types)}")
    timed = meta.get("timed") is True
    seen = set()
    for i, r in enumerate(data["results"]):
        where = f"results[{i}]" + (f" ({r.get('code')})" if isinstance(r, dict) else "")
        if not isinstance(r, dict):
            errs.append(f"{where}: not an object")
            continue
        for k, types in RESULT_KEYS.items():
            if k not in r:
                errs.append(f"{where}: missing {k!r}")
            elif not isinstance(r[k], types) or (isinstance(r[k], bool) and bool not in types):
                errs.append(f"{where}.{k}: {type(r[k]).__name__} is not {'/'.join(t.__name__ for t in types)}")
        if r.get("code") in seen:
            errs.append(f"{where}: duplicate code")
        seen.add(r.get("code"))
        v = r.get("verdict")
        if v not in VERDICTS:
            errs.append(f"{where}.verdict: {v!r} is not one of {VERDICTS}")
        ok = not r.get("error") and r.get("same_result") is not False
        if timed and ok:
            errs.extend(_timed_problems(r, where))
        if r.get("debug_mode_sees") is False and (r.get("syncs_flagged") is not None or r.get("syncs_fixed") is not None):
            errs.append(f"{where}: syncs reported although the debug mode cannot see them")
    return errs


def _regime_problems(g: Any, where: str) -> List[str]:
    if not isinstance(g, dict):
        return [f"{where}: not an object"]
    errs = []
    for k, types in REGIME_KEYS.items():
        if not isinstance(g.get(k), types) or isinstance(g.get(k), bool):
            errs.append(f"{where}.{k}: a timed result needs {'/'.join(t.__name__ for t in types)}")
    ci = g.get("ci")
    if isinstance(ci, list) and not (len(ci) == 2 and all(isinstance(v, NUM) for v in ci) and ci[0] <= ci[1]):
        errs.append(f"{where}.ci: expected [low, high] with low <= high, got {ci!r}")
    elif isinstance(ci, list):
        # the verdict rule: faster / slower only when the interval excludes 1.0
        if g.get("verdict") == "faster" and not ci[0] > 1.0:
            errs.append(f"{where}: 'faster' but the interval {ci} does not exclude 1.0")
        if g.get("verdict") == "slower" and not ci[1] < 1.0:
            errs.append(f"{where}: 'slower' but the interval {ci} does not exclude 1.0")
    if isinstance(g.get("passes"), int) and isinstance(g.get("speedups_by_pass"), list) and len(g["speedups_by_pass"]) != g["passes"]:
        errs.append(f"{where}: {g['passes']} passes but {len(g['speedups_by_pass'])} speedups by pass")
    loops = g.get("loops_us")
    if loops is not None:
        n = [[len(p) for p in loops.get(s) or []] for s in ("flagged", "fixed")] if isinstance(loops, dict) else None
        if not n or n[0] != n[1] or len(n[0]) != g.get("passes") or (isinstance(g.get("samples"), dict) and sum(n[0]) != g["samples"].get("flagged")):
            errs.append(f"{where}.loops_us: expected the same loops per pass on both sides, one list per pass, as many as samples")
    return errs


def _timed_problems(r: Dict[str, Any], where: str) -> List[str]:
    """A timed result: its regimes well formed, its top level equal to its headline regime."""
    errs: List[str] = []
    regimes = r.get("regimes")
    if not isinstance(regimes, dict) or not regimes:
        return [f"{where}.regimes: a timed result needs at least one regime"]
    for name, g in regimes.items():
        if name not in REGIMES:
            errs.append(f"{where}.regimes: unknown regime {name!r}")
        errs.extend(_regime_problems(g, f"{where}.regimes[{name!r}]"))
        if isinstance(g, dict) and g.get("verdict") not in TIME_VERDICTS:
            errs.append(f"{where}.regimes[{name!r}].verdict: {g.get('verdict')!r} is not one of {TIME_VERDICTS}")
    head = r.get("regime")
    if head not in regimes:
        errs.append(f"{where}.regime: {head!r} is not one of its regimes {sorted(regimes)}")
    else:
        for k in REGIME_KEYS:
            if k != "verdict" and r.get(k) != regimes[head].get(k):
                errs.append(f"{where}.{k}: {r.get(k)!r} differs from its headline regime's {regimes[head].get(k)!r}")
        if r.get("verdict") in TIME_VERDICTS and r.get("verdict") != regimes[head].get("verdict"):
            errs.append(f"{where}.verdict: {r.get('verdict')!r} but its regime {head!r} says {regimes[head].get('verdict')!r}")
    if r.get("debug_mode_sees") and (r.get("syncs_flagged") is None or r.get("syncs_fixed") is None):
        errs.append(f"{where}: syncs missing although the debug mode sees them")
    return errs


_NUMBER_LIST = re.compile(r"\[\s*(-?[0-9][-+0-9.eE]*(?:,\s*-?[0-9][-+0-9.eE]*)*)\s*\]")


def dumps(data: Dict[str, Any]) -> str:
    """Indented JSON, with lists of numbers (the per-loop samples) kept on one line."""
    text = json.dumps(data, indent=2, sort_keys=False)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text) + "\n"


def shipped_document(name: str) -> Optional[Dict[str, Any]]:
    """A results document shipped as package data (`synclint/<name>`), or None when it is
    absent or unreadable (then the pages say "not measured")."""
    try:
        from importlib.resources import files

        ref = files("synclint").joinpath(name)
        if not ref.is_file():
            return None
        return json.loads(ref.read_text(encoding="utf-8"))
    except (OSError, ValueError, ModuleNotFoundError):
        return None
