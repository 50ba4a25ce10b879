#!/usr/bin/env python3
"""What `synclint trace`'s interception costs a training step, measured in one process.

Windows of --steps steps alternate between plain, traced (the trace's recorder with the
debug-mode cross-check, as `synclint trace` runs by default) and traced without the debug
mode; each window ends with a synchronize, and the median ms/step of each mode over
--rounds rounds is printed with the spread. A fourth mode adds the record of the lines
that ran (synclint/trace/lines.py), which `synclint trace` keeps by default. The loop is fixtures/trace/train_sites.py's
(about 12 syncs per step: the per-step sites there). Needs a CUDA device.

    python scripts/trace_overhead.py [--steps 50] [--rounds 7] [--width 4096]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args()
    import torch
    from torch import nn

    from synclint.trace.frames import UserCode
    from synclint.trace.intercept import acquire, release
    from synclint.trace.lines import LineRecorder
    from synclint.trace.record import Recorder

    dev = torch.device("cuda")
    w = args.width
    model = nn.Sequential(nn.Linear(512, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(), nn.Linear(w, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xs, ys = torch.randn(512, 512), torch.randint(0, 10, (512,))
    done = torch.cuda.Event()
    history = []

    def window(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for step in range(n):
            x = xs.to(dev)
            y = ys.to(dev, non_blocking=True)
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            out[out.amax(dim=1) > 0.5]
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()
            if loss > 100:
                pass
            f"{loss:.3f}"
            history.append(loss.detach())
            max(history[-5:])
            done.record()
            done.synchronize()
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3 / n

    window(10)  # warm-up: kernel loading, allocator
    user = UserCode([str(Path(__file__).resolve().parent)])
    times = {"plain": [], "traced": [], "traced-no-debug-mode": [], "traced-no-debug-mode-lines": []}
    syncs_per_step = None
    for _ in range(args.rounds):
        times["plain"].append(window(args.steps))
        for mode, debug, lines in (("traced", True, False), ("traced-no-debug-mode", False, False),
                                   ("traced-no-debug-mode-lines", False, True)):
            rec = Recorder((str(Path(__file__).resolve().parent),), debug_mode=debug)
            acquire(rec, user=user, debug_mode=debug)
            line_recorder = LineRecorder(user) if lines else None
            if line_recorder:
                line_recorder.start()
            try:
                times[mode].append(window(args.steps))
            finally:
                if line_recorder:
                    line_recorder.stop()
                release(rec)
            syncs_per_step = sum(s.count for s in rec.sites()) / args.steps
    plain = statistics.median(times["plain"])
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d", time.gmtime()), "steps": args.steps, "rounds": args.rounds,
           "syncs_per_step": syncs_per_step, "modes": {}}
    for mode, ts in times.items():
        med = statistics.median(ts)
        out["modes"][mode] = {"median_ms": round(med, 4), "min_ms": round(min(ts), 4), "max_ms": round(max(ts), 4),
                              "overhead_pct": round(100 * (med - plain) / plain, 2)}
        print(f"{mode:28s} {med:7.3f} ms/step (min {min(ts):.3f}, max {max(ts):.3f}) "
              f"{100 * (med - plain) / plain:+6.1f}%")
    print(f"{syncs_per_step} syncs per step; {out['gpu']}, torch {out['torch']}, {out['date']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
