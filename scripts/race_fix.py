"""Two `synclint check --fix` runs on the same files at once (issue 37): no run may lose the
other's edits. Not a test (it takes minutes): `python scripts/race_fix.py [FILES] [ROUNDS]
[BLOCKS]`, e.g. `20 10 30`.

Each round writes FILES files, each with BLOCKS functions that hold two fixable findings
on different lines (the more findings, the longer each file's fixing takes), starts
one run fixing the first (`--select SYN301`) and, 0-0.5 s later, one fixing the second
(`--select SYN501 --unsafe-fixes`), and reads every file afterwards. A run's fix is lost
where the file lacks it although the run did not name the file as changed under it
(`changed while synclint was fixing it`). Before files were checked under a lock right
before the rename, both runs said "Fixed" and many files held one run's fix only.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE = '''import torch


def step_{i}_{b}(model, batch):
    x = torch.ones(8, device="cuda")
    for _ in range(3):
        y = torch.zeros(8).cuda()
        x = x.mul(2)
        print(model(batch).sum().item())
    return x
'''
RUNS = {  # run -> (its options, what its fix writes)
    "A": (["--select", "SYN301"], 'torch.zeros(8, device="cuda")'),
    "B": (["--select", "SYN501", "--unsafe-fixes"], "x.mul_(2)"),
}
CHANGED = re.compile(r"synclint: error: (\S+): changed while synclint was fixing it")


def main(argv) -> None:
    n = int(argv[0]) if argv else 20
    rounds = int(argv[1]) if len(argv) > 1 else 10
    blocks = int(argv[2]) if len(argv) > 2 else 30
    totals = {"files": 0, "both fixes": 0, "one run named it changed": 0, "fixes lost": 0, "not compiling": 0,
              "runs": 0, "seconds per round": 0.0}
    work = tempfile.mkdtemp()
    try:
        for k in range(rounds):
            root = os.path.join(work, f"r{k}")
            os.makedirs(root)
            for i in range(n):
                with open(os.path.join(root, f"m{i}.py"), "w") as fh:
                    fh.write("".join(SOURCE.format(i=i, b=b) for b in range(blocks)))
            procs, started = {}, time.perf_counter()
            for name, (options, _) in RUNS.items():
                cmd = [sys.executable, "-m", "synclint", "check", "--fix", "--no-cache", "--no-source", *options, "."]
                procs[name] = subprocess.Popen(cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                               text=True)
                if name == "A":
                    time.sleep(random.uniform(0, 0.5))
            changed = {name: set(CHANGED.findall(p.communicate()[1])) for name, p in procs.items()}
            totals["runs"] += len(procs)
            totals["seconds per round"] += (time.perf_counter() - started) / rounds
            for i in range(n):
                rel = f"m{i}.py"
                with open(os.path.join(root, rel)) as fh:
                    text = fh.read()
                totals["files"] += 1
                named = {name for name in RUNS if rel in changed[name] or f"./{rel}" in changed[name]}
                has = {name for name, (_, fixed) in RUNS.items() if text.count(fixed) == blocks}
                totals["both fixes"] += has == set(RUNS)
                totals["one run named it changed"] += bool(named)
                totals["fixes lost"] += len(set(RUNS) - has - named)
                try:
                    compile(text, rel, "exec")
                except SyntaxError:
                    totals["not compiling"] += 1
            shutil.rmtree(root)
        totals["seconds per round"] = round(totals["seconds per round"], 1)
        print(f"{n} files of {blocks} blocks, {rounds} rounds: {totals}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
