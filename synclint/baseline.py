"""Baselines: record today's findings so that CI fails only on new ones.

A finding is matched by a fingerprint that does not contain its line number, so that
code moving up or down (lines inserted or removed above it) keeps it matched:

    (file path relative to the baseline file's folder, rule code,
     the flagged line's text with whitespace collapsed,
     occurrence index among the findings of that file with the same code and text)

The occurrence index tells apart identical lines in one file; with it, matching behaves
like counting: fixing one of two identical findings leaves the other matched, and adding
a third identical one is new.

    synclint baseline src/ --output .synclint-baseline.json
    synclint check src/ --baseline .synclint-baseline.json

(The `baseline` command is in synclint/frontends/cli.py; recording runs through synclint/run/pipeline.py.)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from synclint.build import VERSION
from synclint.findings import Finding
from synclint.parse.source import finding_line

FORMAT_VERSION = 1

Fingerprint = Tuple[str, str, str, int]  # (relative path, code, normalized line, occurrence)


class BaselineError(Exception):
    """The baseline file cannot be read or is not a synclint baseline."""


def normalize(line: str) -> str:
    """The line's text with leading/trailing whitespace dropped and runs collapsed."""
    return " ".join(line.split())


def relative_path(filename: str, root: Path) -> str:
    """`filename` relative to `root`, with forward slashes (absolute if on another drive)."""
    absolute = os.path.abspath(filename)
    try:
        rel = os.path.relpath(absolute, os.path.abspath(root))
    except ValueError:
        rel = absolute
    return rel.replace(os.sep, "/")


def fingerprints(findings: Sequence[Finding], root: Path) -> List[Fingerprint]:
    """One fingerprint per finding, in the order given."""
    cache: Dict[str, List[str]] = {}
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key())
    seen: Dict[Tuple[str, str, str], int] = {}
    out: List[Optional[Fingerprint]] = [None] * len(findings)
    for i in order:
        f = findings[i]
        text = normalize(finding_line(f, cache) or "")
        key = (relative_path(f.filename, root), f.code, text)
        n = seen.get(key, 0)
        seen[key] = n + 1
        out[i] = (*key, n)
    return out  # type: ignore[return-value]


def fingerprint_hash(fp: Fingerprint) -> str:
    """A stable short hash of a fingerprint (used in SARIF partialFingerprints too)."""
    return hashlib.sha256("\x00".join(map(str, fp)).encode("utf-8")).hexdigest()[:32]


def baseline_json(findings: Sequence[Finding], root: Path) -> dict:
    entries = []
    for f, (path, code, text, n) in zip(findings, fingerprints(findings, root)):
        entries.append({
            "file": path, "code": code, "name": f.name, "line_text": text, "occurrence": n,
            "row": f.row,  # where it was when recorded; not used for matching
            "message": f.message,
        })
    entries.sort(key=lambda e: (e["file"], e["row"], e["code"], e["occurrence"]))

    return {
        "synclint_baseline": FORMAT_VERSION,
        "synclint_version": VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "findings": entries,
    }


def write_baseline(findings: Sequence[Finding], path: Path) -> None:
    from synclint.atomic import write_text_atomic

    data = baseline_json(findings, path.resolve().parent)
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def load_baseline(path: Path) -> set:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline file (record one with `synclint baseline`)") from None
    except OSError as e:
        raise BaselineError(f"{path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise BaselineError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(data, dict) or "findings" not in data or "synclint_baseline" not in data:
        raise BaselineError(f"{path}: not a synclint baseline (record one with `synclint baseline`)")
    if data["synclint_baseline"] != FORMAT_VERSION:
        raise BaselineError(f"{path}: baseline format {data['synclint_baseline']!r} is not supported (expected {FORMAT_VERSION})")
    out = set()
    try:
        for e in data["findings"]:
            out.add((e["file"], e["code"], e["line_text"], int(e["occurrence"])))
    except (TypeError, KeyError, ValueError) as e:
        raise BaselineError(f"{path}: malformed entry ({type(e).__name__}: {e})") from None
    return out


def filter_new(findings: Sequence[Finding], path: Path) -> List[Finding]:
    """The findings that are not in the baseline at `path`."""
    return without_known(findings, load_baseline(path), Path(path).resolve().parent)


def without_known(findings: Sequence[Finding], known: set, root: Path) -> List[Finding]:
    """The findings whose fingerprints (paths relative to `root`) are not in `known`."""
    return [f for f, fp in zip(findings, fingerprints(findings, root)) if fp not in known]
