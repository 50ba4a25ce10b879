import json, inspect, time, statistics, torch, math
B = json.load(open(".tmp_syn10x/bench.json"))
dev = "cuda"
def load(b):
    g = {"torch": torch, "device": dev}; g.update(b["sizes"]); exec(b["setup"], g)
    fns = {}
    for side in ("flagged", "fixed"):
        exec(b[side], g); fn = g[side]
        fns[side] = (fn, [g[p] for p in inspect.signature(fn).parameters])
    return fns
def norm(x):
    if isinstance(x, torch.Tensor): return x.detach().cpu()
    return torch.as_tensor(x)
import sys
for code, b in B.items():
    if len(sys.argv) > 1 and code not in sys.argv[1:]: continue
    fns = load(b)
    res = {s: fn(*a) for s, (fn, a) in fns.items()}
    if isinstance(res["flagged"], list) and res["flagged"] and isinstance(res["flagged"][0], str):
        same = res["flagged"] == res["fixed"]
    else:
        a, c = norm(res["flagged"]), norm(res["fixed"])
        same = torch.equal(a, c) if b["compare"] == "equal" else torch.allclose(a.double(), c.double(), rtol=1e-4, atol=1e-5)
    times = {}
    for s, (fn, args) in fns.items():
        for _ in range(3): fn(*args)
        torch.cuda.synchronize()
        reps = []
        for _ in range(7):
            n = 10
            t0 = time.perf_counter()
            for _ in range(n): fn(*args)
            torch.cuda.synchronize()
            reps.append((time.perf_counter() - t0) / n * 1e6)
        times[s] = statistics.median(reps)
    print(f"{code}: flagged {times['flagged']:.1f} us  fixed {times['fixed']:.1f} us  speedup {times['flagged']/times['fixed']:.2f}  same={same}")
