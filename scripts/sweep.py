"""No-crash sweep: `synclint check --select ALL` over every .py file of a tree.

    python scripts/sweep.py TREE [TREE ...] [--jobs N] [--json OUT.json]

One `synclint check --select ALL --no-cache -v --output-format concise` run per tree, with
an empty configuration (the tree's own pyproject.toml, if any, is not applied). The walk
skips folders (`build/`, `site-packages/`, `venv/`, ignored ones); a named folder is always
checked, so the folders a run skipped that hold .py files are named in a second run (and
so on), until every .py file under the tree was reached. Counts, per tree: .py files on
disk, files checked, findings (by rule), error lines by kind, internal errors, tracebacks,
what was skipped and why, and time. Exit 1 when any internal error or traceback was seen.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

FINDING = re.compile(r"^.+?:\d+:\d+: (SYN\d{3}) ")
ERROR = re.compile(r"^synclint: error: (?P<path>.+?)(?::\d+)?: (?P<reason>.*)$")
SKIPPED = re.compile(r"^synclint: skipped (?P<path>.+): (?P<why>[^:]+)$")
CHECKED = re.compile(r"\((\d+) files? checked")
RENAMEABLE = ("a tool or environment folder", "ignored by .gitignore", "excluded by the configuration")
BATCH = 100  # folders named in one run


def error_kind(reason: str) -> str:
    """`internal error in SYN503; please report` -> `internal error in SYN503`; `cannot parse:
    '(' was never closed (line 2, ...)` -> `cannot parse`."""
    if reason.startswith("internal error"):
        return reason.split(";")[0]
    return re.split(r"[:(]", reason, maxsplit=1)[0].strip()


def py_files(tree: Path) -> int:
    return sum(name.endswith(".py") for _, _, names in os.walk(tree) for name in names)


def sweep(tree: Path, jobs: int, config: Path) -> dict:
    out = {
        "tree": str(tree), "py files on disk": py_files(tree), "files checked": 0, "findings": 0,
        "runs": 0, "exit codes": [], "time s": 0.0,
    }
    by_rule: Dict[str, int] = collections.Counter()
    errors: Dict[str, int] = collections.Counter()
    error_lines: List[str] = []
    skipped_why: Dict[str, int] = collections.Counter()
    left_out: List[str] = []  # skipped and never reached (no .py inside, a link, unreadable)
    named: List[str] = []  # skipped folders with .py files, named in a later run
    tracebacks = 0
    todo = [[str(tree)]]
    while todo:
        paths = todo.pop(0)
        cmd = [sys.executable, "-m", "synclint", "check", "--select", "ALL", "--no-cache", "-v",
               "--output-format", "concise", "--config", str(config), "-j", str(jobs), *paths]
        t0 = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", cwd=config.parent)
        out["time s"] += time.time() - t0
        out["runs"] += 1
        out["exit codes"].append(proc.returncode)
        again = []
        for line in (proc.stdout + proc.stderr).splitlines():
            if m := FINDING.match(line):
                by_rule[m.group(1)] += 1
            elif m := ERROR.match(line):
                errors[error_kind(m.group("reason"))] += 1
                error_lines.append(line)
            elif m := SKIPPED.match(line):
                why = m.group("why")
                skipped_why[why] += 1
                p = Path(m.group("path"))
                if why in RENAMEABLE and p.is_dir() and not p.is_symlink() and py_files(p):
                    again.append(str(p))
                else:
                    left_out.append(f"{p}: {why}")
            elif m := CHECKED.search(line):
                out["files checked"] += int(m.group(1))
            elif line.startswith("Traceback (most recent call last)"):
                tracebacks += 1
        named += again
        todo += [again[i:i + BATCH] for i in range(0, len(again), BATCH)]
    out["time s"] = round(out["time s"], 1)
    out["findings"] = sum(by_rule.values())
    out["findings by rule"] = dict(sorted(by_rule.items()))
    out["errors by kind"] = dict(errors.most_common())
    out["internal errors"] = sum(n for k, n in errors.items() if k.startswith(("internal error", "cannot analyse")))
    out["tracebacks"] = tracebacks
    out["skipped by why"] = dict(skipped_why)
    out["skipped, then named"] = named
    out["skipped, not reached"] = left_out
    out["error lines"] = error_lines
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", type=Path, help="write the full results here")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "empty.toml"
        config.write_text("")
        for tree in args.trees:
            r = sweep(tree.resolve(), args.jobs, config)
            results.append(r)
            brief = {k: v for k, v in r.items() if k not in ("error lines", "skipped, not reached", "findings by rule")}
            brief["skipped, not reached"] = len(r["skipped, not reached"])
            print(json.dumps(brief), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"python": sys.version.split()[0], "results": results}, indent=1) + "\n")
    return 1 if any(r["internal errors"] or r["tracebacks"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
