import glob, inspect, json, os, re, statistics, sys, time, warnings
import torch

OUT = os.environ.get("OUT", "/tmp")
dev = "cuda"
print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}

# ---------------------------------------------------------------- A: fixtures
fx = {}
for path in sorted(glob.glob("fixtures/SYN2*.py")):
    if path.endswith(".fixed.py"):
        continue
    src = open(path).read()
    marked = {i for i, l in enumerate(src.splitlines(), 1) if re.search(r"#\s*error:\s*SYN[1-4]", l)}
    unflag = {i for i, l in enumerate(src.splitlines(), 1) if "unflagged-sync:" in l}
    allmarks = {i for i, l in enumerate(src.splitlines(), 1) if re.search(r"#\s*error:", l)}
    full = os.path.abspath(path)
    torch.cuda.set_sync_debug_mode("warn")
    err = None
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            exec(compile(src, full, "exec"), {"__name__": "__main__"})
            torch.cuda.synchronize()
        except Exception as e:
            err = repr(e)
    torch.cuda.set_sync_debug_mode("default")
    synced = sorted({w.lineno for w in ws if "synchroniz" in str(w.message) and os.path.abspath(w.filename) == full})
    others = sorted({(os.path.basename(w.filename), w.lineno) for w in ws if "synchroniz" in str(w.message) and os.path.abspath(w.filename) != full})
    r = dict(synced=synced, unmarked_sync=sorted(set(synced) - marked - unflag),
             marked_no_sync=sorted(allmarks - set(synced)), unflagged_no_sync=sorted(unflag - set(synced)), error=err, other_files=others[:5])
    fx[path] = r
    print(path, r, flush=True)
res["fixtures"] = fx

# ---------------------------------------------------------------- B: probes (sleep oracle + debug mode)
def probe(name, fn):
    fn(); torch.cuda.synchronize()
    torch.cuda._sleep(int(1e8))
    t0 = time.perf_counter(); fn(); dt = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn(); caught = False
    except RuntimeError as e:
        caught = "synchroniz" in str(e)
    torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    print(f"probe {name}: host {dt:.2f} ms caught={caught}", flush=True)
    return dict(host_ms=dt, caught=caught)

x = torch.rand(1000, device=dev); y = torch.rand(1000, device=dev); m = x > 0.5
A = torch.rand(64, 64, device=dev)
k0 = y.mean()
r = torch.arange(1, 5, device=dev); x4 = torch.rand(4, device=dev)
lab = torch.randint(0, 5, (100,), device=dev)
probes = {
 "x[m]": lambda: x[m],
 "x[m]=0.0": lambda: x.__setitem__(m, 0.0),
 "x[m]=y[m]": lambda: x.__setitem__(m, y[m]),
 "x[m]=k0(cuda0d)": lambda: x.__setitem__(m, k0),
 "x[m]=cpu0d": lambda: x.__setitem__(m, torch.tensor(0.5)),
 "x[m]+=1": lambda: x.__setitem__(m, x.__getitem__(m) + 1),
 "index_put_((m,),k0)": lambda: x.index_put_((m,), k0),
 "masked_scatter_": lambda: x.masked_scatter_(m, y),
 "where3": lambda: torch.where(m, y, x),
 "nonzero_static": lambda: torch.nonzero_static(m, size=10),
 "to_sparse": lambda: A.to_sparse(),
 "to_sparse_csr": lambda: A.to_sparse_csr(),
 "to_sparse_csc": lambda: A.to_sparse_csc(),
 "to_sparse_coo": lambda: A.to_sparse_coo() if hasattr(A, "to_sparse_coo") else None,
 "histc_explicit": lambda: torch.histc(x, 10, 0.0, 1.0),
 "histc_default": lambda: torch.histc(x, 10),
 "one_hot_K": lambda: torch.nn.functional.one_hot(lab, 5),
 "one_hot": lambda: torch.nn.functional.one_hot(lab),
 "repeat_interleave_out": lambda: torch.repeat_interleave(x4, r, output_size=10),
 "repeat_interleave": lambda: torch.repeat_interleave(x4, r),
 "repeat_interleave_1arg": lambda: torch.repeat_interleave(r),
 "bincount": lambda: torch.bincount(lab, minlength=5),
 "index_add_count": lambda: torch.zeros(5, dtype=torch.long, device=dev).index_add_(0, lab, torch.ones_like(lab)),
 "unique": lambda: torch.unique(lab),
 "masked_select": lambda: torch.masked_select(x, m),
 "count_nonzero": lambda: torch.count_nonzero(m),
}
res["probes"] = {k: probe(k, f) for k, f in probes.items()}

# ---------------------------------------------------------------- C: bench pairs
def bind(src, name, ns):
    exec(src, ns)
    fn = ns[name]
    args = [ns[p] for p in inspect.signature(fn).parameters]
    return lambda: fn(*args)

def timeit(call, n=50, reps=7, warm=5):
    for _ in range(warm): call()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n): call()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(ts), min(ts), max(ts)

def count_syncs(call):
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        call()
    torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in ws)

benches = {}
for b in json.load(open(".syn2xx_gpu/bench.json")):
    rec = {}
    for side in ("flagged", "fixed"):
        ns = {"torch": torch, "device": dev, **b["sizes"]}
        exec(b["setup"], ns)
        call = bind(b[side], side, ns)
        rec[side + "_us"] = timeit(call)
        rec[side + "_syncs"] = count_syncs(call)
        rec[side + "_out"] = call()
    a, c = rec.pop("flagged_out"), rec.pop("fixed_out")
    if b["compare"] == "equal":
        rec["same"] = bool(a.shape == c.shape and torch.equal(a, c))
    elif b["compare"] == "close":
        rec["same"] = bool(torch.allclose(a.double(), c.double(), rtol=1e-4, atol=1e-3))
    rec["speedup"] = rec["flagged_us"][0] / rec["fixed_us"][0]
    benches[b["code"]] = rec
    print(b["code"], rec, flush=True)
res["bench"] = benches
json.dump(res, open(os.path.join(OUT, "syn2xx_gpu.json"), "w"), indent=1, default=str)
