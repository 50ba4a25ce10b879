"""Kill `synclint check --fix` at random moments and check what it leaves (issue 9): every
file as it was or fully fixed, compiling, no temp file. Not a test (it takes minutes): run
`python tests/kill_fix.py [FILES] [KILLS] [SIGNAL]`, e.g. `500 50 KILL`.

Each round writes a fresh tree of FILES files (each with a safe fix and an unsafe one,
`--unsafe-fixes` on), starts the fix, kills it after a random delay drawn from the
length of a whole run, and inspects the tree."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SOURCE = '''import torch


def step_{i}(model, batch):
    x = torch.ones(8, device="cuda")
    for _ in range(3):
        y = torch.zeros(8).cuda()
        x = x.mul(2)
        print(model(batch).sum().item())
    return x
'''
CMD = [sys.executable, "-m", "synclint", "check", "--fix", "--unsafe-fixes", "--no-cache", "-j", "2", "."]


def make_tree(root: str, n: int) -> None:
    for i in range(n):
        d = os.path.join(root, f"pkg{i % 10}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"m{i}.py"), "w") as fh:
            fh.write(SOURCE.format(i=i))


def main(argv) -> None:
    n = int(argv[0]) if argv else 500
    kills = int(argv[1]) if len(argv) > 1 else 50
    sig = getattr(signal, "SIG" + (argv[2] if len(argv) > 2 else "KILL"))
    work = tempfile.mkdtemp()
    try:
        # The whole run once, for the fixed text and how long a run takes.
        ref = os.path.join(work, "ref")
        make_tree(ref, 1)
        t = time.perf_counter()
        make_tree(ref, n)
        subprocess.run(CMD, cwd=ref, capture_output=True, start_new_session=True)
        full = time.perf_counter() - t
        with open(os.path.join(ref, "pkg0", "m0.py")) as fh:
            fixed0 = fh.read()
        totals = {"as it was": 0, "fully fixed": 0, "other": 0, "temp files": 0, "not compiling": 0,
                  "runs that left workers": 0}
        for k in range(kills):
            root = os.path.join(work, f"r{k}")
            make_tree(root, n)
            p = subprocess.Popen(CMD, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
            time.sleep(random.uniform(0, full))
            p.send_signal(sig)
            p.wait()
            time.sleep(0.5)
            try:  # worker processes that outlived the killed main process
                os.killpg(p.pid, 0)
                totals["runs that left workers"] += 1
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for d, _dirs, files in os.walk(root):
                for name in files:
                    path = os.path.join(d, name)
                    if not name.endswith(".py"):
                        totals["temp files"] += 1
                        print("left behind:", os.path.relpath(path, root), file=sys.stderr)
                        continue
                    i = int(name[1:-3])
                    with open(path) as fh:
                        text = fh.read()
                    if text == SOURCE.format(i=i):
                        totals["as it was"] += 1
                    elif text == fixed0.replace("step_0", f"step_{i}"):
                        totals["fully fixed"] += 1
                    else:
                        totals["other"] += 1
                    try:
                        compile(text, path, "exec")
                    except SyntaxError:
                        totals["not compiling"] += 1
            shutil.rmtree(root)
        print(f"{n} files, {kills} kills (SIG{signal.Signals(sig).name[3:]}) in a {full:.1f} s run: {totals}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
