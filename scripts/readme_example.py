#!/usr/bin/env python3
"""Regenerate the README's example output from a real run over examples/classifier/.

    python scripts/readme_example.py [--check]

Runs `synclint check examples/classifier/` from the repository root (no cache, no colour)
and puts the command and its output between the README's `example-output` markers. With
--check nothing is written; the exit status says whether the README is current.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
COMMAND = ["synclint", "check", "examples/classifier/"]
START, END = "<!-- example-output:start -->", "<!-- example-output:end -->"


def example_output() -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    env["NO_COLOR"] = "1"
    proc = subprocess.run([sys.executable, "-m", "synclint", *COMMAND[1:], "--no-cache"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"synclint failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout.rstrip("\n")


def readme_with_example(readme: str, output: str) -> str:
    if START not in readme or END not in readme:
        raise SystemExit(f"{README.name}: the {START} ... {END} markers are missing")
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    block = f"{START}\n```text\n$ {' '.join(COMMAND)}\n{output}\n```\n{END}"
    return head + block + tail


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the README is stale")
    args = ap.parse_args()
    current = README.read_text(encoding="utf-8")
    wanted = readme_with_example(current, example_output())
    if args.check:
        if wanted != current:
            print("README.md's example output is stale: run python scripts/readme_example.py", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        README.write_text(wanted, encoding="utf-8")
        print("README.md updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
