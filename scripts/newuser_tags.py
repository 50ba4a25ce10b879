"""Re-judge the tags of a new-user read (eval/newuser/*.toml) with today's synclint.

    python scripts/newuser_tags.py eval/newuser/2026-12-07b-Wan2.1.toml [...] --trees /tmp/newuser2

Runs `synclint check <name> --output-format json --exit-zero --no-cache` from `--trees` (the
toml's `command` without the cache, so that no earlier run's facts answer), matches each
finding judged right to today's by (path, line, code), and counts the judged wrong tags now
right (`fixed`), the right ones now wrong (`lost`), and the findings no longer reported
(`gone`), each listed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reads", nargs="+", type=Path)
    ap.add_argument("--trees", type=Path, required=True, help="the folder the read's `command` ran from")
    args = ap.parse_args()
    total: Counter = Counter()
    for read in args.reads:
        data = tomllib.loads(read.read_text())
        name = data["command"].split()[2]  # `synclint check <name> ...`
        proc = subprocess.run([sys.executable, "-m", "synclint", "check", name, "--output-format", "json",
                               "--exit-zero", "--no-cache"], cwd=args.trees, capture_output=True, text=True)
        now = defaultdict(list)
        for f in json.loads(proc.stdout or "[]"):
            now[(os.path.relpath(f["filename"], name), f["location"]["row"], f["code"])].append(f)
        c: Counter = Counter()
        for j in data["finding"]:
            if not j["right"]:
                continue
            found = now.get((j["path"], j["line"], j["code"]))
            where = f"{name}/{j['path']}:{j['line']} {j['code']}"
            if not found:
                c["gone"] += 1
                print(f"  gone  {where}")
                continue
            truth = j["hot"] == j["tag_right"]  # the hot a right tag has
            if found[0]["hot"] == truth:
                c["right"] += 1
                if not j["tag_right"]:
                    c["fixed"] += 1
                    print(f"  fixed {where} ({j.get('cause')})")
            else:
                c["wrong"] += 1
                if j["tag_right"]:
                    c["lost"] += 1
                    print(f"  lost  {where}")
        print(f"{name}: tags right {c['right']}/{c['right'] + c['wrong']} (fixed {c['fixed']}, lost {c['lost']}, "
              f"gone {c['gone']})")
        total.update(c)
    print(f"all: tags right {total['right']}/{total['right'] + total['wrong']} (fixed {total['fixed']}, "
          f"lost {total['lost']}, gone {total['gone']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
