"""Time and peak memory of `synclint check` on generated files of growing size (issue 9:
cost must grow linearly). Not a test: run `python tests/measure_size.py [MB ...]`; each size
runs in a fresh process (peak RSS from the kernel), the cache off.

The generated file repeats a block with a read-back, a fixable CPU factory and an in-place
candidate in a loop, so every block has findings and fixes (the per-finding costs are what
went quadratic); `--plus-chain N` times one N-term `+` chain instead."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

BLOCK = '''
def step_{i}(model, batch, device):
    x = torch.ones(8, device="cuda")
    for _ in range(3):
        y = torch.zeros(8).cuda()
        x = x.mul(2)
        loss = model(batch).sum()
        print(loss.item())
    return x
'''


def generate(megabytes: float) -> str:
    parts = ["import torch\n"]
    size, i = 0, 0
    while size < megabytes * 1_000_000:
        b = BLOCK.format(i=i)
        parts.append(b)
        size += len(b)
        i += 1
    return "".join(parts)


def measure(path: str, *args: str):
    t = time.perf_counter()
    p = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "synclint", "check", "--no-cache", "--no-source",
         "--select", "ALL", *args, path], capture_output=True, text=True)
    wall = time.perf_counter() - t
    peak_kb = int(p.stderr.strip().splitlines()[-1])
    return wall, peak_kb / 1024, p.returncode, p.stdout.strip().splitlines()[-1:] or p.stderr.strip().splitlines()[:1]


def main(argv) -> None:
    if argv[:1] == ["--plus-chain"]:
        n = int(argv[1])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "chain.py")
            with open(path, "w") as fh:
                fh.write("import torch\nx = " + "+".join(["a"] * n) + "\n")
            wall, mb, rc, last = measure(path)
            print(f"{n}-term + chain: {wall:.2f} s, {mb:.0f} MB peak, exit {rc}: {last}")
        return
    for size in [float(a) for a in argv] or [0.5, 1, 2, 5]:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "big.py")
            text = generate(size)
            with open(path, "w") as fh:
                fh.write(text)
            wall, mb, rc, last = measure(path)
            lines = text.count("\n")
            print(f"{size:>4} MB ({lines} lines): {wall:6.2f} s, {mb:5.0f} MB peak, exit {rc}, {last[0] if last else ''}")


if __name__ == "__main__":
    main(sys.argv[1:])
