"""The results document of `synclint bench`: its schema, validation and an atomic writer."""

from __future__ import annotations

import json
from typing import Any, Dict, List

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

VERDICTS = ("faster", "memory", "fewer syncs", "no measurable gain", "slower", "not timed", "failed", "error")


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
            for k in ("flagged_us", "fixed_us", "speedup", "spread"):
                if not isinstance(r.get(k), NUM) or isinstance(r.get(k), bool):
                    errs.append(f"{where}.{k}: a timed result needs a number")
            if r.get("debug_mode_sees") and (r.get("syncs_flagged") is None or r.get("syncs_fixed") is None):
                errs.append(f"{where}: syncs missing although the debug mode sees them")
            if isinstance(r.get("speedup"), NUM) and isinstance(r.get("fixed_us"), NUM) and r["fixed_us"] > 0:
                want = r["flagged_us"] / r["fixed_us"]
                if abs(want - r["speedup"]) > 0.01 * want + 1e-3:
                    errs.append(f"{where}.speedup: {r['speedup']} but flagged_us/fixed_us = {want:.4f}")
        if r.get("debug_mode_sees") is False and (r.get("syncs_flagged") is not None or r.get("syncs_fixed") is not None):
            errs.append(f"{where}: syncs reported although the debug mode cannot see them")
    return errs


def dumps(data: Dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


